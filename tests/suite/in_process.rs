//! The library entry point: `acp_coder::agent::serve` over an in-memory pipe.

use crate::support::{
    FAKE_MODEL_ID, FakeEditor, FakeModel, Reply, TIMEOUT, Workspace, full_capabilities,
    init_tracing,
};
use acp_coder::config::Settings;
use std::time::Duration;
use tokio::task::JoinHandle;

fn settings_for(model: &FakeModel) -> Settings {
    Settings {
        base_url: model.base_url(),
        model: Some(FAKE_MODEL_ID.into()),
        api_key: None,
        require_api_key: false,
        retry_base_delay: Duration::from_millis(20),
        ..Settings::default()
    }
}

/// `serve` on a task, talking to a fake editor over an in-memory pipe.
fn serve_in_process(model: &FakeModel) -> (FakeEditor, JoinHandle<()>) {
    let (editor_io, agent_io) = tokio::io::duplex(1 << 16);
    let (agent_read, agent_write) = tokio::io::split(agent_io);
    let (editor_read, editor_write) = tokio::io::split(editor_io);
    let agent = tokio::spawn(acp_coder::agent::serve(
        agent_read,
        agent_write,
        settings_for(model),
    ));
    (FakeEditor::connect(editor_read, editor_write), agent)
}

#[tokio::test]
async fn serve_runs_a_text_turn_over_a_duplex_pipe() {
    init_tracing();
    let model = FakeModel::start().await;
    model.push(Reply::reasoning_then_text("hmm", "in-process hello").with_usage(7, 3));
    let (editor, agent) = serve_in_process(&model);

    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentInfo"]["name"], "acp-coder");
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    let result = editor.prompt(&sid, "say hello").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(&sid), "in-process hello");
    assert_eq!(editor.thought_text(&sid), "hmm");
    assert_eq!(editor.updates_of_kind(&sid, "usage_update").len(), 1);
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].body["model"], FAKE_MODEL_ID);
    assert_eq!(requests[0].header("authorization"), None);

    // End of input ends serve.
    editor.close_stdin().await;
    tokio::time::timeout(TIMEOUT, agent)
        .await
        .expect("serve returns at end of input")
        .expect("serve did not panic");
    editor.wait_closed().await;
}

#[tokio::test]
async fn serve_ends_promptly_at_eof_mid_turn() {
    init_tracing();
    let model = FakeModel::start().await;
    model.push(Reply::text("hanging").hang_after(2));
    let (editor, agent) = serve_in_process(&model);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    let pending = editor.start_prompt(&sid, "go").await;
    editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "agent_message_chunk")
        .await;
    let started = std::time::Instant::now();
    editor.close_stdin().await;
    tokio::time::timeout(Duration::from_secs(1), agent)
        .await
        .expect("serve returns within 1 s of EOF")
        .expect("no panic");
    eprintln!(
        "in-process EOF mid-turn → serve returned: {:?}",
        started.elapsed()
    );
    // The running turn was cancelled and answered before the writer closed.
    let result = pending.response().await.expect("prompt answered");
    assert_eq!(result["stopReason"], "cancelled");
    assert!(model.wait_for_disconnects(1, TIMEOUT).await);
}
