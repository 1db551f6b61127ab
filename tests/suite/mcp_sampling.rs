//! MCP sampling (issue 18 item 2): a server's `sampling/createMessage`
//! answered by the session's model after the user allows it, against the
//! reference server `@modelcontextprotocol/server-everything` (its
//! `trigger-sampling-request` tool) and a Python SDK server
//! (tests/fixtures/mcp_py_sampling.py) for what the reference server cannot
//! send: a read-only tool that samples, 10 MB of messages, a request outside
//! any tool call. Every ACP frame is validated by the support module.

use std::time::{Duration, Instant};

use super::mcp_common::{everything, new_session, python_server, spawn, tool_result};
use crate::support::{FakeEditor, FakeModel, PermissionDecision, Reply, Workspace};
use serde_json::{Value, json};

/// Full-auto, and servers get a minute to start: the tests need their tools
/// in the first turn, and `npx`/Python start slowly on a busy machine.
const FULL_AUTO: &str = "default_mode = \"full-auto\"\nmcp_startup_timeout_secs = 60\n";
const TOOL: &str = "mcp__everything__trigger-sampling-request";

/// The agent (full-auto), a session with the server, and the agent's
/// config directory (kept while the test runs).
type Started = (FakeEditor, String, Option<tempfile::TempDir>);

async fn with_everything(model: &FakeModel, ws: &Workspace) -> Started {
    let path = everything();
    let (editor, cfg) = spawn(model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([{"name": "everything", "command": "node", "args": [path, "stdio"], "env": []}]),
    )
    .await;
    (editor, sid, cfg)
}

async fn with_python(model: &FakeModel, ws: &Workspace) -> Started {
    let (editor, cfg) = spawn(model, Some(FULL_AUTO)).await;
    let servers = json!([python_server("py", "mcp_py_sampling.py")]);
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    (editor, sid, cfg)
}

/// The `tool_call` updates announcing sampling requests.
fn sampling_calls(editor: &FakeEditor, sid: &str) -> Vec<Value> {
    editor
        .updates_of_kind(sid, "tool_call")
        .into_iter()
        .filter(|u| {
            u["title"]
                .as_str()
                .is_some_and(|t| t.starts_with("Sampling request from "))
        })
        .collect()
}

fn final_status(editor: &FakeEditor, sid: &str, id: &str) -> Option<String> {
    editor
        .updates_of_kind(sid, "tool_call_update")
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == id && u.get("status").is_some())
        .and_then(|u| u["status"].as_str().map(str::to_owned))
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn allowed_sampling_is_answered_by_the_model_and_counted() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_everything(&model, &ws).await;
    // The tool is offered because sampling is advertised.
    editor.push_permission(PermissionDecision::AllowOnce);
    model.push(
        Reply::tool_call(
            "s1",
            TOOL,
            json!({"prompt": "hello there", "maxTokens": 42}),
        )
        .with_usage(100, 10),
    );
    model.push(Reply::text("sampled answer").with_usage(7, 3));
    model.push(Reply::text("done").with_usage(120, 5));
    let result = editor.prompt(&sid, "go").await;

    // The server's messages, system prompt, maxTokens and temperature reach
    // the model; no tools, none of the session's conversation.
    let sample = &model.chat_requests()[1];
    assert_eq!(
        sample.body["messages"],
        json!([
            {"role": "system", "content": "You are a helpful test server."},
            {"role": "user", "content": "Resource trigger-sampling-request context: hello there"}
        ]),
        "{}",
        sample.body
    );
    assert_eq!(sample.body["max_tokens"], 42);
    assert!((sample.body["temperature"].as_f64().unwrap() - 0.7).abs() < 1e-6);
    assert!(sample.body.get("tools").is_none());

    // The tool result (what the server made of our answer).
    let text = tool_result(&model, 2, "s1");
    assert!(text.contains("sampled answer"), "{text}");
    assert!(text.contains("\"role\": \"assistant\""), "{text}");
    assert!(text.contains("\"stopReason\": \"endTurn\""), "{text}");
    assert!(text.contains("\"model\": \""), "{text}");

    // The user was asked, with the server named and the request shown.
    let calls = sampling_calls(&editor, &sid);
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    assert_eq!(call["title"], "Sampling request from everything");
    let shown = call["content"][0]["content"]["text"].as_str().unwrap();
    assert!(shown.contains("hello there"), "{shown}");
    assert!(shown.contains("You are a helpful test server."), "{shown}");
    assert!(shown.contains("at most 42 tokens"), "{shown}");
    let asked = editor.permission_requests();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0].params["toolCall"]["toolCallId"],
        call["toolCallId"]
    );
    let id = call["toolCallId"].as_str().unwrap();
    assert_eq!(
        final_status(&editor, &sid, id).as_deref(),
        Some("completed")
    );

    // Counted in the turn: both turn calls and the sampling call.
    assert_eq!(result["usage"]["inputTokens"], 227, "{result}");
    assert_eq!(result["usage"]["outputTokens"], 18, "{result}");
    assert_eq!(result["stopReason"], "end_turn");
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn always_allow_lasts_for_the_session_and_reject_is_an_error_for_the_server() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_everything(&model, &ws).await;
    editor.push_permission(PermissionDecision::RejectOnce);
    model.push(Reply::tool_call("r1", TOOL, json!({"prompt": "no"})));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let text = tool_result(&model, 1, "r1");
    assert!(text.contains("sampling refused"), "{text}");
    assert!(text.contains("rejected"), "{text}");
    assert_eq!(model.chat_requests().len(), 2, "the model was not called");
    let id = sampling_calls(&editor, &sid)[0]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(final_status(&editor, &sid, &id).as_deref(), Some("failed"));

    editor.push_permission(PermissionDecision::AllowAlways);
    for (call, answer) in [("a1", "first"), ("a2", "second")] {
        model.push(Reply::tool_call(call, TOOL, json!({"prompt": call})));
        model.push(Reply::text(answer));
        model.push(Reply::text("done"));
        editor.prompt(&sid, "go").await;
    }
    assert_eq!(
        editor.permission_requests().len(),
        2,
        "asked once more, then remembered"
    );
    assert!(tool_result(&model, 7, "a2").contains("second"));
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn cancel_ends_sampling_waiting_for_permission_or_for_the_model() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_everything(&model, &ws).await;

    // Waiting for the user.
    editor.push_permission(PermissionDecision::NeverAnswer);
    model.push(Reply::tool_call("c1", TOOL, json!({"prompt": "wait"})));
    let pending = editor.start_prompt(&sid, "go").await;
    editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    let began = Instant::now();
    editor.cancel(&sid).await;
    let result = pending.response().await.unwrap();
    assert_eq!(result["stopReason"], "cancelled");
    assert!(began.elapsed() < Duration::from_secs(10));
    let id = sampling_calls(&editor, &sid)[0]["toolCallId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(final_status(&editor, &sid, &id).as_deref(), Some("failed"));

    // Streaming from the model.
    editor.push_permission(PermissionDecision::AllowOnce);
    model.push(Reply::tool_call("c2", TOOL, json!({"prompt": "slow"})));
    model.push(Reply::text("never seen").first_byte_delay(Duration::from_secs(60)));
    let pending = editor.start_prompt(&sid, "again").await;
    editor
        .wait_for_update(&sid, |u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["status"] == "in_progress"
                && u["toolCallId"]
                    .as_str()
                    .is_some_and(|i| i.contains("_sampling_"))
        })
        .await;
    // The sampling call reached the endpoint (its reply is delayed).
    let deadline = Instant::now() + Duration::from_secs(20);
    while model.chat_requests().len() < 3 {
        assert!(
            Instant::now() < deadline,
            "the sampling call never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let began = Instant::now();
    editor.cancel(&sid).await;
    let result = pending.response().await.unwrap();
    assert_eq!(result["stopReason"], "cancelled");
    assert!(began.elapsed() < Duration::from_secs(10));

    // The session still works.
    model.push(Reply::text("fine"));
    let result = editor.prompt(&sid, "still there?").await;
    assert_eq!(result["stopReason"], "end_turn");
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn an_endpoint_that_refuses_the_key_is_a_clear_error_for_the_server() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_everything(&model, &ws).await;
    editor.push_permission(PermissionDecision::AllowOnce);
    model.push(Reply::tool_call("k1", TOOL, json!({"prompt": "x"})));
    model.push(Reply::error(401, "invalid api key"));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let text = tool_result(&model, 2, "k1");
    assert!(text.contains("sampling failed"), "{text}");
    assert!(
        text.contains("401") || text.to_lowercase().contains("key"),
        "{text}"
    );
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn read_only_mode_refuses_without_asking() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_python(&model, &ws).await;
    editor
        .request(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "read-only"}),
        )
        .await
        .unwrap();
    // A tool annotated read-only runs in read-only mode; its sampling does not.
    model.push(Reply::tool_call(
        "q1",
        "mcp__py__ask",
        json!({"text": "hi"}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let text = tool_result(&model, 1, "q1");
    assert!(text.contains("sampling error"), "{text}");
    assert!(text.contains("read-only"), "{text}");
    assert!(editor.permission_requests().is_empty());
    assert_eq!(model.chat_requests().len(), 2);
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn ten_megabytes_of_messages_are_refused_naming_the_limit() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_python(&model, &ws).await;
    model.push(Reply::tool_call(
        "b1",
        "mcp__py__ask",
        json!({"text": "big", "size": 10_000_000}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let text = tool_result(&model, 1, "b1");
    assert!(text.contains("sampling error"), "{text}");
    assert!(text.contains("1048576 bytes (1 MB)"), "{text}");
    assert!(editor.permission_requests().is_empty());
    // The session and the server still work.
    editor.push_permission(PermissionDecision::AllowOnce);
    model.push(Reply::tool_call(
        "b2",
        "mcp__py__ask",
        json!({"text": "small"}),
    ));
    model.push(Reply::text("tiny answer"));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "again").await;
    let text = tool_result(&model, 4, "b2");
    assert!(text.contains("sampled: tiny answer"), "{text}");
    assert!(text.contains("stop endTurn"), "{text}");
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn a_request_outside_any_tool_call_is_refused() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid, _cfg) = with_python(&model, &ws).await;
    let out = ws.path().join("late.txt");
    model.push(Reply::tool_call(
        "l1",
        "mcp__py__ask_later",
        json!({"path": out}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    assert!(tool_result(&model, 1, "l1").starts_with("scheduled"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let text = loop {
        if let Ok(t) = std::fs::read_to_string(&out)
            && !t.is_empty()
        {
            break t;
        }
        if Instant::now() > deadline {
            editor.fail(&format!("the server never wrote {out:?}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        text.contains("only available while the agent is running a tool"),
        "{text}"
    );
    assert!(editor.permission_requests().is_empty());
    assert_eq!(model.chat_requests().len(), 2, "the model was not called");
}
