//! End of input: the agent exits 0 promptly, idle or mid-turn.

use super::common::{ready, spawn};
use crate::support::{FakeModel, Reply, TIMEOUT};
use std::time::{Duration, Instant};

const EXIT_BOUND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn eof_while_idle_exits_zero_promptly() {
    let model = FakeModel::start().await;
    let mut editor = spawn(&model, &[]);
    editor.initialize(crate::support::full_capabilities()).await;
    let started = Instant::now();
    editor.close_stdin().await;
    // wait_exit fails the test past the bound.
    let status = editor.wait_exit(EXIT_BOUND).await;
    let took = started.elapsed();
    eprintln!("idle EOF → exit: {took:?}");
    assert!(status.success(), "{status:?}\n{}", editor.stderr());
    assert_eq!(status.code(), Some(0));
    editor.wait_closed().await;
}

#[tokio::test]
async fn eof_before_anything_exits_zero() {
    let model = FakeModel::start().await;
    let mut editor = spawn(&model, &[]);
    editor.close_stdin().await;
    let status = editor.wait_exit(EXIT_BOUND).await;
    assert_eq!(status.code(), Some(0), "{}", editor.stderr());
}

#[tokio::test]
async fn eof_mid_turn_exits_zero_promptly_and_drops_the_model_request() {
    let model = FakeModel::start().await;
    model.push(Reply::text("a reply that hangs").hang_after(2));
    let mut r = ready(&model).await;
    let _pending = r.editor.start_prompt(&r.sid, "go").await;
    r.editor
        .wait_for_update(&r.sid, |u| u["sessionUpdate"] == "agent_message_chunk")
        .await;
    let started = Instant::now();
    r.editor.close_stdin().await;
    let status = r.editor.wait_exit(EXIT_BOUND).await;
    let took = started.elapsed();
    eprintln!("mid-turn EOF → exit: {took:?}");
    assert_eq!(status.code(), Some(0), "{}", r.editor.stderr());
    assert!(model.wait_for_disconnects(1, TIMEOUT).await);
}

#[tokio::test]
async fn eof_while_waiting_for_a_permission_exits_zero() {
    let model = FakeModel::start().await;
    model.push(Reply::tool_call(
        "call_w",
        "write_file",
        serde_json::json!({"path": "new.txt", "content": "x"}),
    ));
    let mut r = ready(&model).await;
    r.editor
        .push_permission(crate::support::PermissionDecision::NeverAnswer);
    let _pending = r.editor.start_prompt(&r.sid, "write").await;
    r.editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    r.editor.close_stdin().await;
    let status = r.editor.wait_exit(EXIT_BOUND).await;
    assert_eq!(status.code(), Some(0), "{}", r.editor.stderr());
    assert!(!r.ws.exists("new.txt"), "nothing was written");
}

/// The agent leaves the file status flags of its inherited stdin and stdout
/// alone (issue 15): a wrapper such as `npx` shares their description.
#[tokio::test]
async fn inherited_stdio_stays_blocking() {
    let model = crate::support::FakeModel::start().await;
    let editor = super::common::spawn(&model, &[]);
    editor.initialize(crate::support::full_capabilities()).await;
    let pid = editor.pid().expect("pid");
    for fd in [0, 1] {
        let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).expect("fdinfo");
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .expect("flags");
        assert_eq!(flags & 0o4000, 0, "fd {fd} was made non-blocking: {info}");
    }
}
