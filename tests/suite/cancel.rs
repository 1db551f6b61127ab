//! `session/cancel`: a hung model call stops at once with `cancelled`, the
//! HTTP request is dropped, and the session keeps working with its history.

use super::common::ready;
use crate::support::{FakeModel, Reply, TIMEOUT};
use serde_json::json;
use std::time::{Duration, Instant};

/// The bound on cancel → response (typically ~1 ms).
const CANCEL_BOUND: Duration = Duration::from_millis(100);

#[tokio::test]
async fn cancel_mid_stream_answers_cancelled_fast_and_drops_the_request() {
    let model = FakeModel::start().await;
    // Role chunk and the first text piece, then nothing until the client leaves.
    model.push(Reply::text("partial answer that never ends").hang_after(2));
    let r = ready(&model).await;
    let pending = r.editor.start_prompt(&r.sid, "first question").await;
    // Wait until the model is streaming (the turn is running).
    r.editor
        .wait_for_update(&r.sid, |u| u["sessionUpdate"] == "agent_message_chunk")
        .await;
    let seen = r.editor.agent_text(&r.sid);
    assert!(!seen.is_empty());

    let started = Instant::now();
    r.editor.cancel(&r.sid).await;
    let response = pending.response().await;
    let latency = started.elapsed();
    eprintln!("cancel → cancelled response latency: {latency:?}");
    let result = response.unwrap_or_else(|e| r.editor.fail(&format!("prompt failed: {e}")));
    assert_eq!(result, json!({"stopReason": "cancelled"}));
    assert!(
        latency < CANCEL_BOUND,
        "cancel took {latency:?} (bound {CANCEL_BOUND:?})"
    );

    // The agent dropped the HTTP request.
    assert!(
        model.wait_for_disconnects(1, TIMEOUT).await,
        "the fake model never saw the connection dropped"
    );
    assert_eq!(model.completed_streams(), 0);

    // The session works afterwards, and remembers the cancelled exchange.
    model.push(Reply::text("second answer"));
    let before = r.editor.agent_text(&r.sid);
    let result = r.editor.prompt(&r.sid, "second question").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(
        r.editor.agent_text(&r.sid),
        format!("{before}second answer")
    );
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2);
    let msgs = requests[1].messages();
    let roles: Vec<&str> = msgs
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{msgs:#?}");
    assert_eq!(msgs[1]["content"], "first question");
    assert_eq!(
        msgs[2]["content"], seen,
        "the partial reply the user saw is kept"
    );
    assert_eq!(msgs[3]["content"], "second question");
}

#[tokio::test]
async fn cancel_while_the_model_has_not_answered_yet() {
    let model = FakeModel::start().await;
    // Slow first byte: the agent is still waiting for response headers.
    model.push(Reply::text("too late").first_byte_delay(Duration::from_secs(20)));
    let r = ready(&model).await;
    let pending = r.editor.start_prompt(&r.sid, "q").await;
    assert!(model.wait_for_chat_requests(1, TIMEOUT).await);
    let started = Instant::now();
    r.editor.cancel(&r.sid).await;
    let result = pending.response().await.expect("prompt result");
    let latency = started.elapsed();
    eprintln!("cancel (before headers) latency: {latency:?}");
    assert_eq!(result["stopReason"], "cancelled");
    assert!(latency < CANCEL_BOUND, "cancel took {latency:?}");
    assert_eq!(r.editor.agent_text(&r.sid), "");
}

#[tokio::test]
async fn cancel_right_after_the_prompt_request_is_not_lost() {
    // No reply is scripted: every model call fails with HTTP 500, so a lost
    // cancel shows up quickly as a failed prompt (after the retries) instead
    // of a hang.
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    // Nothing between the two frames: the cancel arrives while the prompt's
    // task may not have started yet. ACP: the cancel still applies to it.
    let pending = r.editor.start_prompt(&r.sid, "q").await;
    r.editor.cancel(&r.sid).await;
    let result = pending
        .response()
        .await
        .unwrap_or_else(|e| r.editor.fail(&format!("the cancel was lost: {e}")));
    assert_eq!(result["stopReason"], "cancelled");
}

#[tokio::test]
async fn cancel_while_idle_is_a_no_op() {
    let model = FakeModel::start().await;
    model.push(Reply::text("one"));
    model.push(Reply::text("two"));
    let r = ready(&model).await;
    // Before any turn.
    r.editor.cancel(&r.sid).await;
    assert_eq!(r.editor.prompt(&r.sid, "a").await["stopReason"], "end_turn");
    // After a finished turn.
    r.editor.cancel(&r.sid).await;
    // An unknown session: ignored too (a notification has no answer).
    r.editor
        .notify("session/cancel", json!({"sessionId": "sess_nope"}))
        .await;
    let count = r.editor.message_count();
    assert_eq!(r.editor.prompt(&r.sid, "b").await["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "onetwo");
    // Nothing answered the notifications: only this turn's updates and response.
    let later = r.editor.messages()[count..].to_vec();
    assert!(
        later
            .iter()
            .all(|m| m["method"] == "session/update" || m["result"]["stopReason"] == "end_turn"),
        "{later:#?}"
    );
    assert_eq!(model.chat_requests().len(), 2);
}
