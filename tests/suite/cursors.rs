//! Session cursors (unstable, schema 1.20): with `session.cursors` each turn
//! ends with a `cursor_update` that accepts `session/fork`; a fork at it has
//! the history up to it and puts the files back as they were there. Without
//! the capability nothing new is sent or stored.
use serde_json::{Value, json};

use super::common::spawn_in_home;
use crate::support::{FakeEditor, FakeModel, Reply, Workspace, no_capabilities};

fn cursors_capabilities() -> Value {
    let mut caps = no_capabilities();
    caps["session"] = json!({"cursors": {}});
    caps
}

async fn start(model: &FakeModel, home: &std::path::Path, caps: Value) -> FakeEditor {
    let editor = spawn_in_home(model, home.to_path_buf(), &[]);
    editor.initialize(caps).await;
    editor
}

/// A turn that writes `files` (path, content) and then answers `answer`.
async fn writing_turn(
    editor: &FakeEditor,
    model: &FakeModel,
    sid: &str,
    prompt: &str,
    files: &[(&str, &str)],
    answer: &str,
) {
    let ids: Vec<String> = (0..files.len()).map(|i| format!("{prompt}-{i}")).collect();
    model.push(Reply::tool_calls(files.iter().zip(&ids).map(
        |((path, content), id)| {
            (
                id.as_str(),
                "write_file",
                json!({"path": path, "content": content}),
            )
        },
    )));
    model.push(Reply::text(answer));
    let r = editor.prompt(sid, prompt).await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
}

fn cursor_updates(editor: &FakeEditor, sid: &str) -> Vec<Value> {
    editor.updates_of_kind(sid, "cursor_update")
}

#[tokio::test]
async fn a_fork_at_a_cursor_has_the_history_and_the_files_of_that_point() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder().file("a.txt", "one\n").build();
    let model = FakeModel::start().await;
    let editor = start(&model, home.path(), cursors_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.set_mode(&sid, "accept-edits").await;
    writing_turn(
        &editor,
        &model,
        &sid,
        "first",
        &[("a.txt", "two\n")],
        "answer one",
    )
    .await;
    writing_turn(
        &editor,
        &model,
        &sid,
        "second",
        &[("a.txt", "three\n"), ("b.txt", "new\n")],
        "answer two",
    )
    .await;
    assert_eq!(ws.read("a.txt"), "three\n");

    let cursors = cursor_updates(&editor, &sid);
    assert_eq!(cursors.len(), 2, "one cursor per turn: {cursors:?}");
    let first = &cursors[0];
    assert_eq!(first["capabilities"], json!({"fork": {}}));
    assert_eq!(first["anchor"]["type"], "agent_message");
    assert_eq!(first["anchor"]["position"], "after");
    // Anchored to the turn's answer, as the editor got it.
    let anchored: String = editor
        .updates_of_kind(&sid, "agent_message_chunk")
        .iter()
        .filter(|u| u["messageId"] == first["anchor"]["messageId"])
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(anchored, "answer one");

    let forked = editor
        .request(
            "session/fork",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": [], "cursorId": first["cursorId"]}),
        )
        .await
        .unwrap();
    let fork = forked["sessionId"].as_str().unwrap().to_owned();
    // The files as they were at the cursor: the second turn is undone.
    assert_eq!(ws.read("a.txt"), "two\n");
    assert!(!ws.exists("b.txt"), "the second turn created b.txt");

    model.push(Reply::text("fork answer"));
    editor.prompt(&fork, "in the fork").await;
    let request = model.chat_requests().pop().unwrap();
    let text = request.body["messages"].to_string();
    assert!(text.contains("answer one"), "{text}");
    assert!(
        !text.contains("answer two"),
        "the fork ends at the cursor: {text}"
    );
    // Its /undo has the checkpoint of the first turn.
    editor.prompt(&fork, "/undo").await;
    assert_eq!(ws.read("a.txt"), "one\n");

    // A cursor the agent never announced: -32602, no fork.
    let err = editor
        .request(
            "session/fork",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": [], "cursorId": "cur_nope"}),
        )
        .await
        .expect_err("unknown cursor");
    assert_eq!(err.code, -32602, "{err}");
    editor.shut_down().await;
}

#[tokio::test]
async fn without_the_capability_no_cursor_is_sent_or_kept() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder().file("a.txt", "one\n").build();
    let model = FakeModel::start().await;
    let editor = start(&model, home.path(), no_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.set_mode(&sid, "accept-edits").await;
    writing_turn(
        &editor,
        &model,
        &sid,
        "first",
        &[("a.txt", "two\n")],
        "answer one",
    )
    .await;
    assert!(cursor_updates(&editor, &sid).is_empty());
    let log = home
        .path()
        .join(format!(".local/share/acp-coder/sessions/{sid}.jsonl"));
    let log = std::fs::read_to_string(log).unwrap();
    assert!(!log.contains("\"cursor\""), "{log}");
    editor.shut_down().await;
}
