//! MCP servers handed to `session/new` (issue 4), against the rmcp-based
//! test server (examples/mcp_test_server.rs) over stdio: tools offered,
//! called and converted, modes, failures, concurrent start, list changes.
//! HTTP and a server's end are in mcp_lifecycle.rs, the official reference
//! servers in mcp_reference.rs, the shared helpers in mcp_common.rs.
use super::mcp_common::*;
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, full_capabilities,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test]
async fn initialize_advertises_both_http_transports() {
    let model = FakeModel::start().await;
    let editor = FakeEditor::spawn(&[] as &[&str], model.agent_env());
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(
        init["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": true, "acp": true})
    );
}

#[tokio::test]
async fn stdio_server_tools_are_offered_called_and_converted() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, None).await;
    let mut server = stdio("test srv", &[]);
    server["env"] = json!([{"name": "MCP_TEST_VALUE", "value": "from-editor"}]);
    let (sid, _) = new_session(&editor, ws.path(), json!([server])).await;
    model.push(Reply::tool_calls([
        (
            "c_echo",
            "mcp__test_srv__echo",
            json!({"text": "hello mcp"}),
        ),
        ("c_add", "mcp__test_srv__add", json!({"a": 2, "b": 3})),
        ("c_img", "mcp__test_srv__image", json!({})),
        ("c_res", "mcp__test_srv__resources", json!({})),
        ("c_fail", "mcp__test_srv__fail", json!({})),
        (
            "c_env",
            "mcp__test_srv__env",
            json!({"name": "MCP_TEST_VALUE"}),
        ),
        (
            "c_key",
            "mcp__test_srv__env",
            json!({"name": "OPENAI_API_KEY"}),
        ),
    ]));
    model.push(Reply::text("done"));
    editor.set_default_permission(Some(PermissionDecision::AllowOnce));
    let result = editor.prompt(&sid, "use the tools").await;
    assert_eq!(result["stopReason"], "end_turn");

    // Offered with descriptions and schemas passed through, after the built-ins.
    let names = model.chat_requests()[0].tool_names();
    assert!(names.contains(&"read_file".to_owned()));
    let echo = tool_spec(&model, 0, "mcp__test_srv__echo");
    assert_eq!(echo["function"]["description"], "Echoes the text back.");
    assert_eq!(
        echo["function"]["parameters"]["properties"]["text"]["type"],
        "string"
    );
    assert!(
        names
            .iter()
            .filter(|n| n.starts_with("mcp__test_srv__"))
            .count()
            >= 9
    );

    // Shown as tool calls: read-only → read, titled with server and tool.
    let call = first_call(&editor, &sid, "c_echo");
    assert_eq!(call["kind"], "read");
    assert_eq!(call["title"], "test srv: Echo");
    assert_eq!(first_call(&editor, &sid, "c_add")["kind"], "other");
    // Permission asked per call in ask mode (MCP tools are external), except
    // for the three read-only ones: readOnlyHint counts as a read (issue 18).
    assert_eq!(editor.permission_requests().len(), 4);

    assert_eq!(tool_result(&model, 1, "c_echo"), "hello mcp");
    let add = tool_result(&model, 1, "c_add");
    assert!(
        add.contains("the sum is 5") && add.contains("structuredContent: {\"sum\":5}"),
        "{add}"
    );
    assert_eq!(
        final_update(&editor, &sid, "c_add")["rawOutput"],
        json!({"sum": 5})
    );
    let img = tool_result(&model, 1, "c_img");
    assert!(img.starts_with("[image: image/png"), "{img}");
    let img_update = final_update(&editor, &sid, "c_img");
    assert_eq!(img_update["content"][0]["content"]["type"], "image");
    let res = tool_result(&model, 1, "c_res");
    assert!(
        res.contains("<resource uri=\"test://notes.txt\">\nembedded notes\n</resource>"),
        "{res}"
    );
    assert!(
        res.contains("[resource link: big.bin <test://big.bin>"),
        "{res}"
    );
    let res_update = final_update(&editor, &sid, "c_res");
    assert_eq!(res_update["content"][0]["content"]["type"], "resource");
    assert_eq!(res_update["content"][1]["content"]["type"], "resource_link");
    let fail = final_update(&editor, &sid, "c_fail");
    assert_eq!(fail["status"], "failed");
    assert!(tool_result(&model, 1, "c_fail").contains("it broke on purpose"));
    // The editor's env is given; the agent's secrets are not.
    assert_eq!(tool_result(&model, 1, "c_env"), "from-editor");
    assert_eq!(tool_result(&model, 1, "c_key"), "<unset>");
}

#[tokio::test]
async fn read_only_and_full_auto_modes_decide_by_annotation() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, None).await;
    let (sid, _) = new_session(&editor, ws.path(), json!([stdio("t", &[])])).await;
    editor.set_mode(&sid, "read-only").await;
    model.push(Reply::tool_calls([
        ("r1", "mcp__t__echo", json!({"text": "ok"})),
        ("r2", "mcp__t__add", json!({"a": 1, "b": 1})),
    ]));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    assert!(editor.permission_requests().is_empty());
    assert_eq!(tool_result(&model, 1, "r1"), "ok");
    assert!(tool_result(&model, 1, "r2").contains("not marked read-only"));

    editor.set_mode(&sid, "full-auto").await;
    model.push(Reply::tool_call(
        "r3",
        "mcp__t__add",
        json!({"a": 1, "b": 1}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    assert!(editor.permission_requests().is_empty());
    assert!(tool_result(&model, 3, "r3").contains("the sum is 2"));
}

#[tokio::test]
async fn failed_servers_are_reported_and_the_others_work() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, None).await;
    let closed = free_port();
    let (sid, took) = new_session(
        &editor,
        ws.path(),
        json!([
            {"name": "missing", "command": "/nonexistent/mcp-server", "args": [], "env": []},
            stdio("exits", &["--exit", "3"]),
            {"type": "http", "name": "down", "url": format!("http://127.0.0.1:{closed}/mcp"), "headers": []},
            stdio("good", &[]),
        ]),
    )
    .await;
    assert!(took < Duration::from_secs(8), "session/new took {took:?}");
    model.push(Reply::text("hi"));
    editor.prompt(&sid, "hello").await;
    let text = editor.agent_text(&sid);
    assert!(
        text.contains("`missing` failed to start: cannot start `/nonexistent/mcp-server`"),
        "{text}"
    );
    assert!(
        text.contains("`exits` failed to start") && text.contains("exit status 3"),
        "{text}"
    );
    assert!(
        text.contains("configuration missing, exiting with 3"),
        "stderr quoted: {text}"
    );
    assert!(
        text.contains("`down` failed to start") && text.contains("Connection refused"),
        "{text}"
    );
    assert!(!text.contains("`good`"), "{text}");
    let names = model.chat_requests()[0].tool_names();
    assert!(names.contains(&"mcp__good__echo".to_owned()));
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("mcp__exits") || n.starts_with("mcp__missing"))
    );
    // Reported once.
    model.push(Reply::text("again"));
    editor.prompt(&sid, "hello").await;
    assert_eq!(editor.agent_text(&sid).matches("`missing`").count(), 1);
}

#[tokio::test]
async fn servers_start_concurrently_and_slow_ones_join_later() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some("mcp_startup_timeout_secs = 2\n")).await;

    let (_, one) = new_session(
        &editor,
        ws.path(),
        json!([stdio("a", &["--delay-ms", "500"])]),
    )
    .await;
    let five: Vec<Value> = (0..5)
        .map(|i| stdio(&format!("s{i}"), &["--delay-ms", "500"]))
        .collect();
    let (sid5, five_took) = new_session(&editor, ws.path(), json!(five)).await;
    eprintln!("session/new with 1 server of 500 ms: {one:?}; with 5 such servers: {five_took:?}");
    assert!(
        five_took < one + Duration::from_millis(1000),
        "5 servers took {five_took:?}, 1 took {one:?}: not concurrent"
    );
    model.push(Reply::text("ok"));
    editor.prompt(&sid5, "hi").await;
    let names = model.chat_requests()[0].tool_names();
    assert_eq!(
        names.iter().filter(|n| n.ends_with("__echo")).count(),
        5,
        "{names:?} {} (session/new took {five_took:?})",
        editor.agent_text(&sid5)
    );

    // A server slower than the bound: session/new returns at the bound, the
    // server keeps starting and its tools appear when it is ready.
    let (sid, took) = new_session(
        &editor,
        ws.path(),
        json!([stdio("fast", &[]), stdio("slow", &["--delay-ms", "6000"])]),
    )
    .await;
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_millis(5000),
        "{took:?}"
    );
    model.push(Reply::text("first"));
    editor.prompt(&sid, "hi").await;
    assert!(editor.agent_text(&sid).contains("`slow` is still starting"));
    let names = model.chat_requests()[1].tool_names();
    assert!(names.contains(&"mcp__fast__echo".to_owned()));
    assert!(!names.contains(&"mcp__slow__echo".to_owned()));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        model.push(Reply::text("again"));
        editor.prompt(&sid, "hi").await;
        let last = model.chat_requests().len() - 1;
        if model.chat_requests()[last]
            .tool_names()
            .contains(&"mcp__slow__echo".to_owned())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the slow server's tools never appeared"
        );
    }
    assert!(editor.agent_text(&sid).contains("`slow` is ready now"));
}

#[tokio::test]
async fn at_most_128_tools_are_offered() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, None).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([stdio("a", &[]), stdio("big", &["--many", "130"])]),
    )
    .await;
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "hi").await;
    let names = model.chat_requests()[0].tool_names();
    assert_eq!(names.len(), 128, "{}", editor.agent_text(&sid));
    assert!(
        names.contains(&"mcp__a__echo".to_owned()),
        "earlier servers keep theirs"
    );
    assert!(names.contains(&"read_file".to_owned()));
    assert!(!names.contains(&"mcp__big__many_129".to_owned()));
}

#[tokio::test]
async fn tool_list_changed_updates_the_offered_tools() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(&editor, ws.path(), json!([stdio("t", &[])])).await;
    model.push(Reply::tool_call("c1", "mcp__t__toggle", json!({})));
    model.push(Reply::text("toggled"));
    editor.prompt(&sid, "toggle").await;
    assert!(!offers(&model, 0, "mcp__t__extra"));
    wait_for_mcp_text(&editor, &sid, "`mcp__t__extra`").await;
    model.push(Reply::tool_call("c2", "mcp__t__extra", json!({})));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "use extra").await;
    assert!(offers(&model, 2, "mcp__t__extra"));
    assert_eq!(tool_result(&model, 3, "c2"), "extra ran");
}

#[tokio::test]
async fn newest_protocol_list_changes_arrive_on_a_subscription() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(&editor, ws.path(), json!([stdio("m", &["--modern"])])).await;
    model.push(Reply::tool_call("c1", "mcp__m__first", json!({})));
    model.push(Reply::text("ran"));
    editor.prompt(&sid, "go").await;
    assert_eq!(tool_result(&model, 1, "c1"), "first ran");
    assert!(!offers(&model, 0, "mcp__m__second"));
    offered_once_listed(&model, &editor, &sid, "mcp__m__second").await;
}

/// An answer over the 16 MiB line limit fails its tool call at once, saying
/// why (rmcp dropped the line and the call stayed `in_progress` until the
/// 300 s tool timeout); the server goes on answering.
#[tokio::test]
async fn an_over_long_answer_fails_its_call_at_once() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    // A tool timeout of 60 s, so that the old behaviour (waiting for it)
    // fails this test in a minute rather than five.
    let (editor, _cfg) = spawn(&model, Some("mcp_tool_timeout_secs = 60\n")).await;
    let server = stdio("big", &["--pad", &(17usize << 20).to_string()]);
    let (sid, _) = new_session(&editor, ws.path(), json!([server])).await;
    model.push(Reply::tool_calls([(
        "c_big",
        "mcp__big__echo",
        json!({"text": "hi"}),
    )]));
    model.push(Reply::text("done"));
    let started = Instant::now();
    let result = editor.prompt(&sid, "echo").await;
    let took = started.elapsed();
    assert_eq!(result["stopReason"], "end_turn");
    assert!(took < Duration::from_secs(50), "took {took:?}");
    let update = final_update(&editor, &sid, "c_big");
    assert_eq!(update["status"], "failed", "{update}");
    let said = tool_result(&model, 1, "c_big");
    assert!(
        said.contains("answered with one line of") && said.contains("over the 16777216-byte limit"),
        "{said}"
    );
}

/// `/mcp` shows each server's state, a failed one with its reason
/// (issue 45 item 7).
#[tokio::test]
async fn mcp_command_shows_why_a_server_failed() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, None).await;
    let missing = json!({"name": "gone", "command": "/nonexistent/acp-coder-no-such-server", "args": [], "env": []});
    let (sid, _) = new_session(&editor, ws.path(), json!([stdio("ok", &[]), missing])).await;
    wait_for_mcp_text(&editor, &sid, "**gone**: failed to start: ").await;
    let text = editor.agent_text(&sid);
    let line = text
        .lines()
        .rev()
        .find(|l| l.contains("**gone**: failed to start: "))
        .unwrap();
    assert!(
        line.len() > "- **gone**: failed to start: ".len() + 10,
        "{line}"
    );
    assert!(text.contains("**ok**: ready, "), "{text}");
}
