//! MCP servers over streamable HTTP, and what becomes of a server when it
//! crashes, hangs, is cancelled or its session ends (issue 4).
use super::mcp_common::*;
use crate::support::{
    FakeModel, Reply, Workspace, process_alive, wait_for_text_in, wait_gone, wait_pid_file,
};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn streamable_http_server() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (_server, url) =
        http_server(tokio::process::Command::new(test_server()).args(["--http", "127.0.0.1:0"]))
            .await;
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([{"type": "http", "name": "web", "url": url,
                "headers": [{"name": "X-Api-Key", "value": "k"}, {"name": "Accept", "value": "text/html"}]}]),
    )
    .await;
    model.push(Reply::tool_calls([
        ("h1", "mcp__web__echo", json!({"text": "over http"})),
        ("h2", "mcp__web__toggle", json!({})),
    ]));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    assert_eq!(tool_result(&model, 1, "h1"), "over http");
    offered_once_listed(&model, &editor, &sid, "mcp__web__extra").await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_is_reported_and_removed() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([stdio("c", &[]), stdio("ok", &[])]),
    )
    .await;
    model.push(Reply::tool_call("x1", "mcp__c__crash", json!({})));
    model.push(Reply::text("it crashed"));
    editor.prompt(&sid, "crash it").await;
    let update = final_update(&editor, &sid, "x1");
    assert_eq!(update["status"], "failed");
    let result = tool_result(&model, 1, "x1");
    assert!(result.contains("is gone"), "{result}");
    // The notice comes during this turn or, if the server's exit is noticed
    // after the turn ended, at the start of the next one. `/mcp` starts a
    // turn without a model call, so it flushes a queued notice.
    wait_for_mcp_text(&editor, &sid, "`c` stopped unexpectedly").await;
    assert!(
        editor.agent_text(&sid).contains("exit status 7"),
        "{}",
        editor.agent_text(&sid)
    );
    model.push(Reply::text("still here"));
    editor.prompt(&sid, "go on").await;
    let names = model.chat_requests()[2].tool_names();
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__c__")),
        "{names:?}"
    );
    assert!(names.contains(&"mcp__ok__echo".to_owned()));
}

#[tokio::test]
async fn cancel_sends_notifications_cancelled_and_ends_the_turn() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let log = ws.join("server.log");
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([stdio("s", &["--log", log.to_str().unwrap()])]),
    )
    .await;
    model.push(Reply::tool_call(
        "long",
        "mcp__s__slow",
        json!({"ms": 20000}),
    ));
    let pending = editor.start_prompt(&sid, "wait").await;
    editor
        .wait_for_update(&sid, |u| {
            u["toolCallId"] == "long" && u["status"] == "in_progress"
        })
        .await;
    // The server has the call (it logs its start), so it can be cancelled.
    wait_for_text_in(&log, "started slow").await;
    editor.cancel(&sid).await;
    let result = pending.await.unwrap();
    assert_eq!(result["stopReason"], "cancelled");
    wait_for_text_in(&log, "cancelled slow").await;
}

#[tokio::test]
async fn a_call_past_the_timeout_fails_clearly() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(
        &model,
        Some("default_mode = \"full-auto\"\nmcp_tool_timeout_secs = 1\n"),
    )
    .await;
    let (sid, _) = new_session(&editor, ws.path(), json!([stdio("s", &[])])).await;
    model.push(Reply::tool_call("t1", "mcp__s__slow", json!({"ms": 5000})));
    model.push(Reply::text("too slow"));
    let began = Instant::now();
    editor.prompt(&sid, "wait").await;
    assert!(began.elapsed() < Duration::from_secs(4));
    assert_eq!(final_update(&editor, &sid, "t1")["status"], "failed");
    let text = tool_result(&model, 1, "t1");
    assert!(text.contains("did not answer within 1 s"), "{text}");
}

#[tokio::test]
async fn configured_servers_merge_with_the_editors() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let server = test_server();
    let config = format!(
        "default_mode = \"full-auto\"\n\
         [mcp_servers.shared]\ncommand = \"/nonexistent/loses\"\n\
         [mcp_servers.mine]\ncommand = {server:?}\nenv = {{ MCP_TEST_VALUE = \"from-config\" }}\n\
         [mcp_servers.off]\ncommand = \"/nonexistent/off\"\nenabled = false\n"
    );
    let (editor, _cfg) = spawn(&model, Some(&config)).await;
    let (sid, _) = new_session(&editor, ws.path(), json!([stdio("shared", &[])])).await;
    model.push(Reply::tool_call(
        "e1",
        "mcp__mine__env",
        json!({"name": "MCP_TEST_VALUE"}),
    ));
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "go").await;
    let names = model.chat_requests()[0].tool_names();
    assert!(
        names.contains(&"mcp__shared__echo".to_owned()),
        "the editor's entry wins"
    );
    assert!(names.contains(&"mcp__mine__echo".to_owned()));
    assert_eq!(tool_result(&model, 1, "e1"), "from-config");
    assert!(
        !editor.agent_text(&sid).contains("failed"),
        "{}",
        editor.agent_text(&sid)
    );
}

#[tokio::test]
async fn session_close_stops_the_server_group() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let pid_file = ws.join("server.pid");
    let (editor, _cfg) = spawn(&model, None).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([stdio("s", &["--pid-file", pid_file.to_str().unwrap()])]),
    )
    .await;
    let pid = wait_pid_file(&pid_file).await;
    assert!(process_alive(pid));
    editor
        .request("session/close", json!({"sessionId": sid}))
        .await
        .unwrap();
    wait_gone(pid, "the server, after session/close").await;
}

#[tokio::test]
async fn no_orphans_after_eof_even_through_a_shell_wrapper() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let pid_file = ws.join("server.pid");
    let (mut editor, _cfg) = spawn(&model, None).await;
    // `; true` keeps the shell alive as the server's parent (no exec).
    let script = format!("{:?} --pid-file {:?}; true", test_server(), pid_file);
    new_session(
        &editor,
        ws.path(),
        json!([{"name": "wrapped", "command": "sh", "args": ["-c", script], "env": []}]),
    )
    .await;
    let pid = wait_pid_file(&pid_file).await;
    assert!(process_alive(pid));
    editor.close_stdin().await;
    editor.wait_exit(Duration::from_secs(10)).await;
    wait_gone(pid, "the server, after the agent's exit").await;
}
