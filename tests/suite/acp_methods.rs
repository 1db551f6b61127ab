//! Issue 17's newer methods: `logout` (item 2), `$/cancel_request` in both
//! directions (item 3), unstable `session/fork` (item 4), the turn's usage
//! and tool call names (item 7), and the small wire fixes (audio prompts,
//! replayed message ids). Every frame is schema-checked by the fake editor
//! (unstable parts against the schema crate's unstable features).

use super::common::{ready, spawn};
use super::tools_common::Harness;
use crate::support::{FakeModel, PermissionDecision, Reply, RpcId, Workspace, full_capabilities};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

#[tokio::test]
async fn logout_requires_authenticate_before_the_next_session_or_prompt() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["agentCapabilities"]["auth"]["logout"], json!({}));
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;

    let r = editor.request("logout", json!({})).await.unwrap();
    assert!(r.is_object(), "{r}");
    let err = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .expect_err("logged out");
    assert_eq!(err.code, -32000, "{err}");
    assert!(err.message.contains("authenticate"), "{err}");
    let err = editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await
        .expect_err("logged out");
    assert_eq!(err.code, -32000, "{err}");
    assert!(
        model.chat_requests().is_empty(),
        "nothing reached the model"
    );

    editor
        .request("authenticate", json!({"methodId": "openai-api-key"}))
        .await
        .unwrap();
    model.push(Reply::text("back"));
    assert_eq!(editor.prompt(&sid, "hi").await["stopReason"], "end_turn");
    editor.new_session(ws.path()).await;
}

#[tokio::test]
async fn logout_says_where_a_saved_key_stays() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    super::common::write_config(home.path(), "api_key = \"sk-saved-by-login\"\n");
    let dir = home.path().join(".config/acp-coder");
    let editor =
        super::common::spawn_in_home(&model, home.path().to_path_buf(), &[("OPENAI_API_KEY", "")]);
    editor.initialize(full_capabilities()).await;
    let r = editor.request("logout", json!({})).await.unwrap();
    let note = r["_meta"]["acp-coder/note"].as_str().unwrap_or_default();
    assert!(note.contains("config.toml"), "{r}");
    assert!(!note.contains("sk-saved-by-login"), "{r}");
    // The file is not edited behind the user's back.
    assert!(
        std::fs::read_to_string(dir.join("config.toml"))
            .unwrap()
            .contains("sk-saved-by-login")
    );
}

#[tokio::test]
async fn a_cancelled_turn_withdraws_its_permission_request() {
    let ws = Workspace::builder().file("a.txt", "old\n").build();
    let h = Harness::start(super::tools_common::Via::Editor, ws).await;
    h.editor.push_permission(PermissionDecision::NeverAnswer);
    h.model.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "a.txt", "content": "new\n"}),
    ));
    let pending = h.editor.start_prompt(&h.sid, "go").await;
    let asked = h
        .editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    // session/cancel alone (the fake editor's `cancel` would answer the dialog itself).
    h.editor
        .notify("session/cancel", json!({"sessionId": h.sid}))
        .await;
    assert_eq!(pending.response().await.unwrap()["stopReason"], "cancelled");
    let withdrawn = h.editor.wait_for_cancel_request().await;
    assert_eq!(Some(withdrawn), RpcId::from_json(&asked["id"]));
    assert_eq!(h.ws.read("a.txt"), "old\n");
}

#[tokio::test]
async fn an_incoming_cancel_request_aborts_a_slow_request_with_32800() {
    let model = FakeModel::start().await;
    // Listing models hangs, so session/new waits (up to the 3 s list timeout).
    model.set_models_reply(Reply::completion("x").first_byte_delay(Duration::from_secs(20)));
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let started = Instant::now();
    let pending = editor
        .send_request_with_id(
            "slow-new",
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": []}),
        )
        .await;
    // Cancelled once session/new is waiting on the model list.
    let listing = |m: &FakeModel| {
        m.requests()
            .iter()
            .any(|r| r.path.starts_with("/v1/models"))
    };
    assert!(model.wait_until(Duration::from_secs(10), listing).await);
    editor
        .notify("$/cancel_request", json!({"requestId": "slow-new"}))
        .await;
    let err = pending.response().await.expect_err("cancelled");
    assert_eq!(err.code, -32800, "{err}");
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "aborted at once, not after the model list timed out: {:?}",
        started.elapsed()
    );
    // Unknown and finished ids are ignored; the connection keeps working.
    editor
        .notify("$/cancel_request", json!({"requestId": 12345}))
        .await;
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert!(list["sessions"].is_array());
}

/// The `content` of chat messages of one request, by role.
fn contents(req: &crate::support::RecordedRequest, role: &str) -> Vec<String> {
    req.messages()
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test]
async fn fork_copies_the_history_and_leaves_the_source_alone() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    model.push(Reply::text("first answer"));
    r.editor.prompt(&r.sid, "first question").await;

    let forked = r
        .editor
        .request(
            "session/fork",
            json!({"sessionId": r.sid, "cwd": r.ws.path(), "mcpServers": []}),
        )
        .await
        .unwrap();
    let fork = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(fork, r.sid);
    assert!(forked["modes"]["currentModeId"].is_string(), "{forked}");
    assert!(forked["configOptions"].is_array(), "{forked}");

    model.push(Reply::text("fork answer"));
    r.editor.prompt(&fork, "fork question").await;
    model.push(Reply::text("source answer"));
    r.editor.prompt(&r.sid, "source question").await;

    let requests = model.chat_requests();
    let on_fork = &requests[1];
    assert!(
        contents(on_fork, "user")
            .iter()
            .any(|c| c.contains("first question")),
        "the fork has the source's history"
    );
    assert!(
        contents(on_fork, "assistant")
            .iter()
            .any(|c| c.contains("first answer"))
    );
    let on_source = &requests[2];
    assert!(
        !contents(on_source, "user")
            .iter()
            .any(|c| c.contains("fork question")),
        "the source is untouched by the fork"
    );
    // The fork has its own log: loading it replays the source's turn and its own.
    let err = r
        .editor
        .request(
            "session/fork",
            json!({"sessionId": "sess_nope", "cwd": r.ws.path()}),
        )
        .await
        .expect_err("unknown source");
    assert_eq!(err.code, -32002, "{err}");
}

#[tokio::test]
async fn the_prompt_response_carries_the_turns_usage_and_calls_name_their_tool() {
    let ws = Workspace::builder().file("a.txt", "x\n").build();
    let h = Harness::start(super::tools_common::Via::Editor, ws).await;
    h.model
        .push(Reply::tool_call("r1", "read_file", json!({"path": "a.txt"})).with_usage(10, 5));
    h.model.push(Reply::text("done").with_usage(20, 3));
    let result = h.editor.prompt(&h.sid, "read it").await;
    assert_eq!(
        result["usage"],
        json!({"totalTokens": 38, "inputTokens": 30, "outputTokens": 8}),
        "{result}"
    );
    let call = &h.editor.updates_of_kind(&h.sid, "tool_call")[0];
    assert_eq!(call["name"], "read_file");
    // A turn without reported usage has none in its response.
    h.model.push(Reply::text("plain"));
    let result = h.editor.prompt(&h.sid, "again").await;
    assert!(result.get("usage").is_none(), "{result}");
}

#[tokio::test]
async fn an_audio_prompt_is_refused_with_invalid_params() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    let err = r
        .editor
        .request(
            "session/prompt",
            json!({"sessionId": r.sid, "prompt": [
                {"type": "text", "text": "listen"},
                {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}
            ]}),
        )
        .await
        .expect_err("audio is not advertised");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("params.prompt[1]"), "{err}");
    assert!(err.message.contains("promptCapabilities.audio"), "{err}");
    assert!(model.chat_requests().is_empty());
}

/// An outside review: a `session/new` waiting for a slow MCP server held up
/// every other request (other sessions' too) until the server's start-up
/// timeout; aborted with `$/cancel_request`, it still created the session
/// (listed, on disk, unusable) and left the server running.
#[tokio::test]
async fn a_slow_session_new_holds_nothing_up_and_an_aborted_one_leaves_nothing() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let other = editor.new_session(ws.path()).await;
    let pidfile = ws.join("mcp.pid");
    let server = json!({
        "name": "slow",
        "command": "sh",
        "args": ["-c", format!("echo $$ > {}; exec sleep 1000", pidfile.display())],
        "env": []
    });
    let pending = editor
        .send_request_with_id(
            "slow-new",
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [server]}),
        )
        .await;
    let pid = crate::support::wait_pid_file(&pidfile).await;
    // While it waits for the server (10 s at most), the rest is answered; had
    // the queue waited for it, the cancel below would come too late.
    let list = editor.request("session/list", json!({})).await.unwrap();
    let ids: Vec<&Value> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["sessionId"])
        .collect();
    assert_eq!(ids, [&json!(other)]);
    editor
        .request(
            "session/set_mode",
            json!({"sessionId": other, "modeId": "read-only"}),
        )
        .await
        .unwrap();
    let err = editor
        .request("_probe/unknown", json!({}))
        .await
        .expect_err("unknown method");
    assert_eq!(err.code, -32601, "{err}");
    editor
        .notify("$/cancel_request", json!({"requestId": "slow-new"}))
        .await;
    let err = pending.response().await.expect_err("cancelled");
    assert_eq!(err.code, -32800, "{err}");
    crate::support::wait_gone(pid, "the aborted session's MCP server").await;
    // Its files go right after the aborted request is dropped.
    let mut listed = usize::MAX;
    for _ in 0..250 {
        let list = editor.request("session/list", json!({})).await.unwrap();
        listed = list["sessions"].as_array().unwrap().len();
        if listed == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(listed, 1, "the aborted session is still listed");
}
