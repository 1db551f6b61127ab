//! Session notices and compaction updates (schema 1.20), each sent only to a
//! client that opted in (`session.notices`, `session.compaction`); without
//! the opt-in the user sees what they saw before (status text) and nothing
//! new is sent. Every frame is schema-checked by the fake editor.

use super::common::spawn;
use crate::support::{FakeEditor, FakeModel, Reply, Workspace, full_capabilities};
use serde_json::{Value, json};

fn caps(session: Value) -> Value {
    let mut caps = full_capabilities();
    if !session.is_null() {
        caps["session"] = session;
    }
    caps
}

async fn started(model: &FakeModel, caps: Value) -> (FakeEditor, Workspace, String) {
    let ws = Workspace::new();
    let editor = spawn(model, &[]);
    editor.initialize(caps).await;
    let sid = editor.new_session(ws.path()).await;
    (editor, ws, sid)
}

fn thoughts(editor: &FakeEditor, sid: &str) -> String {
    editor.thought_text(sid)
}

/// A 500 then an answer, and `/compact` on a short conversation.
async fn retry_and_compact(editor: &FakeEditor, model: &FakeModel, sid: &str) {
    model.push(Reply::error(500, "busy"));
    model.push(Reply::text("answer"));
    assert_eq!(editor.prompt(sid, "hi").await["stopReason"], "end_turn");
    model.push(Reply::text("THE SUMMARY"));
    assert_eq!(
        editor.prompt(sid, "/compact").await["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn with_the_opt_ins_retries_are_notices_and_compaction_is_followed_by_id() {
    let model = FakeModel::start().await;
    let (editor, _ws, sid) = started(&model, caps(json!({"notices": {}, "compaction": {}}))).await;
    retry_and_compact(&editor, &model, &sid).await;

    let notices = editor.updates_of_kind(&sid, "notice");
    assert_eq!(notices.len(), 1, "{notices:#?}");
    assert_eq!(notices[0]["severity"], "warning");
    assert!(
        notices[0]["title"]
            .as_str()
            .unwrap()
            .contains("Retrying the model call"),
        "{notices:#?}"
    );
    assert!(
        notices[0]["description"]
            .as_str()
            .unwrap()
            .contains("HTTP 500")
    );

    let updates: Vec<Value> = editor
        .updates_for(&sid)
        .into_iter()
        .filter(|u| {
            u["sessionUpdate"]
                .as_str()
                .is_some_and(|k| k.starts_with("compaction"))
        })
        .collect();
    let kinds: Vec<(&str, &str)> = updates
        .iter()
        .map(|u| {
            (
                u["sessionUpdate"].as_str().unwrap(),
                u["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("compaction_update", "in_progress"),
            ("compaction_summary_chunk", ""),
            ("compaction_update", "completed")
        ]
    );
    let id = &updates[0]["compactionId"];
    assert!(updates.iter().all(|u| &u["compactionId"] == id));
    assert_eq!(updates[1]["content"]["text"], "THE SUMMARY");
    // The status text is not sent as well.
    let t = thoughts(&editor, &sid);
    assert!(!t.contains("retrying") && !t.contains("Compacting"), "{t}");
}

#[tokio::test]
async fn without_the_opt_ins_nothing_new_is_sent() {
    let model = FakeModel::start().await;
    // `session` present but without either key, and a null one.
    for session in [json!({}), json!({"notices": null, "compaction": null})] {
        let (editor, _ws, sid) = started(&model, caps(session)).await;
        retry_and_compact(&editor, &model, &sid).await;
        let kinds: Vec<String> = editor
            .updates_for(&sid)
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap().to_owned())
            .collect();
        assert!(
            kinds
                .iter()
                .all(|k| k != "notice" && !k.starts_with("compaction")),
            "{kinds:?}"
        );
        let t = thoughts(&editor, &sid);
        assert!(t.contains("retrying") && t.contains("Compacting"), "{t}");
    }
}
