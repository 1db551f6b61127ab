//! MCP over ACP (unstable, `mcpCapabilities.acp`; issue 17 item 6): an MCP
//! server that lives in the editor (here the rmcp test server, bridged by the
//! fake editor) is reached through `mcp/connect`, `mcp/message` and
//! `mcp/disconnect`; its tools join the others as `mcp__<server>__<tool>`
//! with the same permission rules. Every frame is checked against the
//! official `schema.unstable.json`.
use std::time::Duration;

use serde_json::{Value, json};

use super::mcp_common::{test_server, tool_result};
use crate::support::{FakeEditor, FakeModel, PermissionDecision, Reply, Workspace};
use crate::support::{full_capabilities, no_capabilities};

async fn wait_log(editor: &FakeEditor, entry: &str) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !editor.mcp_over_acp_log().iter().any(|l| l == entry) {
        if tokio::time::Instant::now() > deadline {
            editor.fail(&format!(
                "no {entry:?} in the MCP-over-ACP log: {:?}",
                editor.mcp_over_acp_log()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn mcp_frames(editor: &FakeEditor) -> Vec<Value> {
    editor
        .messages()
        .into_iter()
        .filter(|m| m["method"].as_str().is_some_and(|x| x.starts_with("mcp/")))
        .collect()
}

#[tokio::test]
async fn an_editor_side_server_is_reached_over_the_acp_connection() {
    let model = FakeModel::start().await;
    let editor = FakeEditor::spawn(&[], model.agent_env());
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["agentCapabilities"]["mcpCapabilities"]["acp"], true);
    editor.serve_mcp_over_acp("srv-1", test_server(), Vec::new());
    let ws = Workspace::new();
    let result = editor
        .request(
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [{"type": "acp", "name": "ed", "serverId": "srv-1"}]}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("session/new failed: {e}")));
    let sid = result["sessionId"].as_str().unwrap().to_owned();
    // The test server (rmcp) speaks protocol 2026-07-28: discovery, no
    // `initialize`, and list changes on a `subscriptions/listen` stream.
    let log = editor.mcp_over_acp_log();
    assert_eq!(
        log[..4],
        [
            "connect srv-1",
            "agent request server/discover",
            "agent request tools/list",
            "agent request subscriptions/listen"
        ],
        "{log:?}"
    );
    let conn = editor.mcp_over_acp_open();
    assert_eq!(conn, ["conn-1"]);

    // Its tools are offered and called like any MCP tool, permission included
    // (`add` has no annotation, so `ask` asks; `echo` is a `readOnlyHint` read).
    model.push(Reply::tool_call(
        "c1",
        "mcp__ed__add",
        json!({"a": 2, "b": 3}),
    ));
    model.push(Reply::text("done"));
    editor.set_default_permission(Some(PermissionDecision::AllowOnce));
    assert_eq!(editor.prompt(&sid, "echo").await["stopReason"], "end_turn");
    assert!(
        model.chat_requests()[0]
            .tool_names()
            .contains(&"mcp__ed__echo".to_owned())
    );
    assert!(
        tool_result(&model, 1, "c1").contains("the sum is 5"),
        "{}",
        tool_result(&model, 1, "c1")
    );
    assert_eq!(
        editor.permission_requests().len(),
        1,
        "same rules as other MCP tools"
    );
    assert!(
        editor
            .mcp_over_acp_log()
            .contains(&"agent request tools/call".to_owned())
    );

    // The server's notification reaches the agent: the tool list is re-read.
    model.push(Reply::tool_call("c2", "mcp__ed__toggle", json!({})));
    model.push(Reply::text("toggled"));
    editor.prompt(&sid, "toggle").await;
    wait_log(
        &editor,
        "server notification notifications/tools/list_changed",
    )
    .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let n = editor
            .mcp_over_acp_log()
            .iter()
            .filter(|l| *l == "agent request tools/list")
            .count();
        if n >= 2 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "tools/list not re-read"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The request was sent; its answer may still be on its way: prompt until
    // the model is offered the new tool (bounded).
    let mut names = Vec::new();
    for _ in 0..100 {
        model.push(Reply::text("ok"));
        editor.prompt(&sid, "again").await;
        names = model.chat_requests().last().unwrap().tool_names();
        if names.contains(&"mcp__ed__extra".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(names.contains(&"mcp__ed__extra".to_owned()), "{names:?}");

    // The editor side may ask the agent's MCP client too (a server's `ping`).
    let pong = editor
        .request(
            "mcp/message",
            json!({"connectionId": "conn-1", "method": "ping"}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("ping failed: {e}")));
    assert_eq!(pong, json!({}));
    let err = editor
        .request(
            "mcp/message",
            json!({"connectionId": "conn-9", "method": "ping"}),
        )
        .await
        .expect_err("unknown connection");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("connectionId"), "{err}");
    // A client-side method sent as if from the server is refused, not run.
    let err = editor
        .request(
            "mcp/message",
            json!({"connectionId": "conn-1", "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}}}),
        )
        .await
        .expect_err("a server cannot call tools on its client");
    assert!(err.code == -32601 || err.code == -32602, "{err}");
    // Malformed and unknown-connection notifications are ignored.
    editor
        .notify(
            "mcp/message",
            json!({"connectionId": "conn-9", "method": "notifications/progress"}),
        )
        .await;
    let pong = editor
        .request(
            "mcp/message",
            json!({"connectionId": "conn-1", "method": "ping"}),
        )
        .await;
    assert_eq!(pong.unwrap(), json!({}), "still serving");

    // Closing the session disconnects.
    editor
        .request("session/close", json!({"sessionId": sid}))
        .await
        .unwrap();
    wait_log(&editor, "disconnect conn-1").await;
    assert!(editor.mcp_over_acp_open().is_empty());
    editor.assert_no_errors();
}

#[tokio::test]
async fn a_refused_connect_fails_that_server_only() {
    let model = FakeModel::start().await;
    let editor = FakeEditor::spawn(&[], model.agent_env());
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let result = editor
        .request(
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [{"type": "acp", "name": "gone", "serverId": "nope"}]}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("session/new failed: {e}")));
    let sid = result["sessionId"].as_str().unwrap().to_owned();
    model.push(Reply::text("still here"));
    editor.prompt(&sid, "hi").await;
    let text = editor.agent_text(&sid);
    assert!(text.contains("MCP server `gone` failed to start"), "{text}");
    assert!(text.contains("mcp/connect"), "{text}");
    assert!(text.contains("still here"), "{text}");
    assert_eq!(mcp_frames(&editor).len(), 1, "only the refused mcp/connect");
}

#[tokio::test]
async fn without_acp_servers_nothing_is_sent_over_mcp() {
    let model = FakeModel::start().await;
    let editor = FakeEditor::spawn(&[], model.agent_env());
    editor.initialize(no_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    model.push(Reply::text("plain"));
    editor.prompt(&sid, "hi").await;
    editor
        .request("session/close", json!({"sessionId": sid}))
        .await
        .unwrap();
    assert!(mcp_frames(&editor).is_empty(), "{:?}", mcp_frames(&editor));
    assert!(editor.mcp_over_acp_log().is_empty());
}

#[tokio::test]
async fn the_agent_exits_promptly_with_a_connection_open() {
    let model = FakeModel::start().await;
    let mut editor = FakeEditor::spawn(&[], model.agent_env());
    editor.initialize(full_capabilities()).await;
    editor.serve_mcp_over_acp("srv-1", test_server(), Vec::new());
    let ws = Workspace::new();
    editor
        .request(
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [{"type": "acp", "name": "ed", "serverId": "srv-1"}]}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("session/new failed: {e}")));
    assert_eq!(editor.mcp_over_acp_open(), ["conn-1"]);
    let began = std::time::Instant::now();
    editor.close_stdin().await;
    let status = editor.wait_exit(Duration::from_secs(10)).await;
    assert!(status.success(), "{status:?}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
}
