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

/// The frames the agent wrote after the response to `id` and before the
/// response to `barrier` (a later request: everything the first one sent
/// after its response is queued before the barrier's answer).
fn between(editor: &FakeEditor, id: &str, barrier: &str) -> Vec<Value> {
    let messages = editor.messages();
    let answered = |want: &str| {
        messages
            .iter()
            .position(|m| m.get("method").is_none() && m["id"] == want)
            .unwrap_or_else(|| panic!("no response to {want}"))
    };
    messages[answered(id) + 1..answered(barrier)].to_vec()
}

fn update_kinds(frames: &[Value]) -> Vec<String> {
    frames
        .iter()
        .map(|m| {
            m["params"]["update"]["sessionUpdate"]
                .as_str()
                .unwrap_or_else(|| panic!("not a session/update: {m}"))
                .to_owned()
        })
        .collect()
}

/// A local model server found without configuration (no endpoint set): the
/// `session/new` response's `_meta` says so as before; a client that shows
/// notices also gets it as an info notice, strictly after the response. A
/// strict client (no opt-in) gets nothing but the commands after it.
#[tokio::test]
async fn a_found_local_model_is_a_notice_after_the_response_only_with_the_opt_in() {
    use crate::support::SpawnOptions;
    let model = FakeModel::start().await;
    model.set_models(&["qwen2.5-coder-1.5b-instruct"]);
    let servers = format!("Fake Ollama={}", model.base_url());
    for opt_in in [true, false] {
        let ws = Workspace::new();
        let editor = FakeEditor::spawn_with(SpawnOptions {
            envs: vec![
                ("ACP_CODER_LOCAL_SERVERS".into(), servers.clone()),
                ("ACP_CODER_LOCAL_PROBE_MS".into(), "20000".into()),
            ],
            ..SpawnOptions::default()
        });
        let session = if opt_in {
            json!({"notices": {}})
        } else {
            Value::Null
        };
        editor.initialize(caps(session)).await;
        let new = editor
            .request_with_id(
                "new",
                "session/new",
                json!({"cwd": ws.path(), "mcpServers": []}),
            )
            .await
            .unwrap();
        let sid = new["sessionId"].as_str().unwrap().to_owned();
        let meta = new["_meta"]["acp-coder"]["notice"].as_str().unwrap();
        assert!(meta.contains("Fake Ollama"), "{new}");
        editor
            .request_with_id("barrier", "session/list", json!({}))
            .await
            .unwrap();
        let after = between(&editor, "new", "barrier");
        let kinds = update_kinds(&after);
        if opt_in {
            assert_eq!(kinds, ["available_commands_update", "notice"], "{after:#?}");
            let notice = &after[1]["params"]["update"];
            assert_eq!(notice["severity"], "info");
            assert_eq!(notice["title"], "Using a local model server");
            assert_eq!(notice["description"], meta);
        } else {
            assert_eq!(kinds, ["available_commands_update"], "{after:#?}");
        }
        // Before the response: nothing for the session (it was unknown).
        let messages = editor.messages();
        let answered = messages
            .iter()
            .position(|m| m.get("method").is_none() && m["id"] == "new")
            .unwrap();
        assert!(
            messages[..answered]
                .iter()
                .all(|m| m["params"]["sessionId"] != sid.as_str())
        );
        // Only the first session says it as a notice; every session's
        // answer names the server it uses (issue 42 item 8).
        let again = editor.new_session_full(ws.path()).await;
        assert!(
            again["_meta"]["acp-coder"].get("notice").is_none(),
            "{again}"
        );
        assert!(
            again["_meta"]["acp-coder"]["localServer"]["url"].is_string(),
            "{again}"
        );
        assert!(
            editor
                .updates_of_kind(again["sessionId"].as_str().unwrap(), "notice")
                .is_empty()
        );
        editor.assert_no_errors();
    }
}

/// A strict client (nothing opted in): outside its turns it gets the
/// commands after `session/new` and nothing else, also after a turn that
/// retried the model and queued a prompt (both notices with the opt-in).
#[tokio::test]
async fn a_strict_client_gets_nothing_outside_a_turn_but_the_commands() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let editor = spawn(&model, &[]);
    editor.initialize(crate::support::no_capabilities()).await;
    let new = editor
        .request_with_id(
            "new",
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": []}),
        )
        .await
        .unwrap();
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    editor
        .request_with_id("barrier-1", "session/list", json!({}))
        .await
        .unwrap();
    assert_eq!(
        update_kinds(&between(&editor, "new", "barrier-1")),
        ["available_commands_update"]
    );
    model.push(Reply::error(500, "busy"));
    model.push(Reply::text("answer"));
    let turn = editor
        .request_with_id(
            "turn",
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await
        .unwrap();
    assert_eq!(turn["stopReason"], "end_turn");
    editor
        .request_with_id("barrier-2", "session/list", json!({}))
        .await
        .unwrap();
    let after = between(&editor, "turn", "barrier-2");
    assert!(after.is_empty(), "after the turn: {after:#?}");
    assert!(editor.updates_of_kind(&sid, "notice").is_empty());
    editor.assert_no_errors();
}
