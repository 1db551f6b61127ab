//! Model endpoint failures: retries (429 with Retry-After, 5xx, a cut
//! stream), exhaustion, 401 (key never leaked), 404.

use super::common::{ready, ready_with, spawn_args};
use crate::support::{FakeModel, Reply, Workspace, full_capabilities};
use std::time::{Duration, Instant};

/// The status lines the agent showed as thoughts.
fn status_notes(editor: &crate::support::FakeEditor, sid: &str) -> Vec<String> {
    editor
        .updates_of_kind(sid, "agent_thought_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .filter(|t| t.contains("Model endpoint"))
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn rate_limit_honours_retry_after_then_succeeds() {
    let model = FakeModel::start().await;
    model.push(Reply::rate_limited(1));
    model.push(Reply::text("after the wait"));
    let r = ready(&model).await;
    let started = Instant::now();
    let result = r.editor.prompt(&r.sid, "hi").await;
    let elapsed = started.elapsed();
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "after the wait");
    let notes = status_notes(&r.editor, &r.sid);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("Model endpoint: HTTP 429 — retrying in 1.0 s"),
        "{notes:?}"
    );
    // The backoff base is 20 ms here: only Retry-After explains a 1 s wait.
    assert!(
        elapsed >= Duration::from_secs(1),
        "Retry-After: 1 honoured, but the turn took {elapsed:?}"
    );
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body, requests[1].body,
        "the retry repeats the same request"
    );
}

#[tokio::test]
async fn server_errors_are_retried() {
    let model = FakeModel::start().await;
    model.push(Reply::error(500, "boom"));
    model.push(Reply::error(500, "boom again"));
    model.push(Reply::text("third time lucky"));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "hi").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "third time lucky");
    let notes = status_notes(&r.editor, &r.sid);
    assert_eq!(notes.len(), 2, "{notes:?}");
    for (i, note) in notes.iter().enumerate() {
        assert!(
            note.contains("Model endpoint: HTTP 500 — retrying in"),
            "{note}"
        );
        assert!(note.contains(&format!("attempt {} of 6", i + 2)), "{note}");
    }
    assert_eq!(model.chat_requests().len(), 3);
}

#[tokio::test]
async fn a_cut_stream_is_retried() {
    let model = FakeModel::start().await;
    // Only the role chunk, then the connection closes mid-body.
    model.push(Reply::text("lost").cut_after(1));
    model.push(Reply::text("complete reply"));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "hi").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "complete reply");
    let notes = status_notes(&r.editor, &r.sid);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("Model endpoint: connection dropped — retrying in"),
        "{notes:?}"
    );
    assert_eq!(model.chat_requests().len(), 2);
    // The history holds the reply once.
    model.push(Reply::text("next"));
    r.editor.prompt(&r.sid, "again").await;
    let msgs = model.chat_requests()[2].messages().to_vec();
    let assistant: Vec<_> = msgs.iter().filter(|m| m["role"] == "assistant").collect();
    assert_eq!(assistant.len(), 1, "{msgs:#?}");
    assert_eq!(assistant[0]["content"], "complete reply");
}

#[tokio::test]
async fn a_stream_cut_mid_text_is_retried_as_a_new_message() {
    let model = FakeModel::start().await;
    // Role and the first text piece ("par"), then the cut.
    model.push(Reply::text("partial").cut_after(2));
    model.push(Reply::text("whole answer"));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "hi").await;
    assert_eq!(result["stopReason"], "end_turn");
    // The retried reply is a message of its own (new messageId), complete.
    let chunks = r.editor.updates_of_kind(&r.sid, "agent_message_chunk");
    let last_id = chunks.last().expect("chunks")["messageId"].clone();
    let last_text: String = chunks
        .iter()
        .filter(|c| c["messageId"] == last_id)
        .filter_map(|c| c["content"]["text"].as_str())
        .collect();
    assert_eq!(last_text, "whole answer");
    assert_eq!(model.chat_requests().len(), 2);
}

#[tokio::test]
async fn exhausted_retries_fail_the_prompt_naming_status_and_endpoint() {
    let model = FakeModel::start().await;
    for _ in 0..6 {
        model.push(Reply::error(503, "overloaded"));
    }
    let r = ready(&model).await;
    let err = r.editor.prompt_error(&r.sid, "hi").await;
    assert_eq!(err.code, -32603, "{err}");
    let endpoint = format!("{}/chat/completions", model.base_url());
    assert!(err.message.contains("503"), "{err}");
    assert!(err.message.contains(&endpoint), "{err}");
    assert!(err.message.contains("6 attempts"), "{err}");
    assert_eq!(model.chat_requests().len(), 6, "1 try + 5 retries");
    assert_eq!(status_notes(&r.editor, &r.sid).len(), 5);
    assert_eq!(model.unscripted_requests(), 0);

    // The session survives.
    model.push(Reply::text("back"));
    assert_eq!(
        r.editor.prompt(&r.sid, "hi").await["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn rejected_key_fails_with_auth_required_and_never_leaks_the_key() {
    const KEY: &str = "sk-test-SECRET123";
    let model = FakeModel::start().await;
    // Real servers echo (part of) the key back.
    model.push(Reply::error(
        401,
        &format!("Incorrect API key provided: {KEY}. You can find your API key at …"),
    ));
    let logs = tempfile::tempdir().expect("log dir");
    let log_file = logs.path().join("agent.log");
    let log_arg = log_file.to_str().expect("utf-8 path");
    let mut editor = spawn_args(
        &model,
        &["--log-file", log_arg, "--log-level", "trace"],
        &[("OPENAI_API_KEY", KEY)],
    );
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    let err = editor.prompt_error(&sid, "hi").await;
    assert_eq!(err.code, -32000, "{err}");
    assert!(err.message.contains("OPENAI_API_KEY"), "{err}");
    assert_eq!(model.chat_requests().len(), 1, "401 is not retried");
    assert_eq!(
        model.chat_requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key was sent to the model"
    );

    // Shut down so the log is flushed, then look everywhere.
    editor.close_stdin().await;
    let status = editor.wait_exit(Duration::from_secs(5)).await;
    assert!(status.success());
    let log = std::fs::read_to_string(&log_file).expect("log file written");
    assert!(!log.is_empty());
    let stderr = editor.stderr();
    let frames = editor.raw_lines().join("\n");
    for (what, text) in [("stderr", &stderr), ("log file", &log), ("frames", &frames)] {
        assert!(
            !text.contains("SECRET123"),
            "the key leaked into the {what}:\n{text}"
        );
    }
    assert!(
        log.contains("401"),
        "the log records the failure (but not the key)"
    );
}

#[tokio::test]
async fn forbidden_is_an_auth_error_too() {
    let model = FakeModel::start().await;
    model.push(Reply::error(403, "not allowed"));
    let r = ready(&model).await;
    let err = r.editor.prompt_error(&r.sid, "hi").await;
    assert_eq!(err.code, -32000, "{err}");
    assert!(err.message.contains("OPENAI_API_KEY"), "{err}");
}

#[tokio::test]
async fn unknown_model_names_the_model_and_base_url() {
    let model = FakeModel::start().await;
    model.push(Reply::error(
        404,
        "The model `no-such-model` does not exist",
    ));
    let r = ready_with(
        &model,
        &[("ACP_CODER_MODEL", "no-such-model")],
        Workspace::new(),
    )
    .await;
    let err = r.editor.prompt_error(&r.sid, "hi").await;
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("\"no-such-model\""), "{err}");
    assert!(err.message.contains(&model.base_url()), "{err}");
    assert_eq!(model.chat_requests().len(), 1, "404 is not retried");
    assert_eq!(model.chat_requests()[0].body["model"], "no-such-model");
}

#[tokio::test]
async fn a_silent_stream_times_out_and_is_retried() {
    let model = FakeModel::start().await;
    // The role chunk, then silence until the client gives up.
    model.push(Reply::text("never").hang_after(1));
    model.push(Reply::text("after the timeout"));
    let r = ready_with(
        &model,
        &[("ACP_CODER_STREAM_IDLE_SECS", "1")],
        Workspace::new(),
    )
    .await;
    let result = r.editor.prompt(&r.sid, "hi").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "after the timeout");
    let notes = status_notes(&r.editor, &r.sid);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("Model endpoint: no reply in time — retrying in"),
        "{notes:?}"
    );
    assert!(model.wait_for_disconnects(1, crate::support::TIMEOUT).await);
    assert_eq!(model.chat_requests().len(), 2);
}

#[tokio::test]
async fn an_overloaded_error_inside_the_stream_is_retried() {
    let model = FakeModel::start().await;
    model.push(
        Reply::stream([crate::support::chunk::role()])
            .raw("data: {\"error\":{\"message\":\"Model is overloaded, try again\",\"type\":\"server_error\"}}\n\n"),
    );
    model.push(Reply::text("recovered"));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "hi").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "recovered");
    let notes = status_notes(&r.editor, &r.sid);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("error in stream"), "{notes:?}");
}

#[tokio::test]
async fn a_malformed_stream_fails_the_prompt_without_retrying() {
    let model = FakeModel::start().await;
    model.push(Reply::stream([crate::support::chunk::role()]).raw("data: {not json\n\n"));
    let r = ready(&model).await;
    let err = r.editor.prompt_error(&r.sid, "hi").await;
    assert_eq!(err.code, -32603, "{err}");
    assert!(
        err.message.contains("not valid chat-completion JSON"),
        "{err}"
    );
    assert_eq!(model.chat_requests().len(), 1);
    // The session survives.
    model.push(Reply::text("fine now"));
    assert_eq!(
        r.editor.prompt(&r.sid, "again").await["stopReason"],
        "end_turn"
    );
}
