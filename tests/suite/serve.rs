//! `acp-coder serve` (issue 46): ACP over HTTP + SSE and WebSocket, per the
//! RFD "Streamable HTTP & WebSocket Transport". The real binary, the fake
//! editor through a network bridge (tests/support/remote.rs), the scripted
//! model.
use std::time::Duration;

use serde_json::{Value, json};

use super::tools_common::write_call;
use crate::support::remote::Served;
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, full_capabilities,
};

fn client() -> reqwest::Client {
    crate::support::http_client()
}

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": 1, "clientCapabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string()
}

/// POSTs `initialize` (no connection yet) → (status, connection id).
async fn raw_initialize(s: &Served, headers: &[(&str, &str)]) -> (u16, Option<String>) {
    let mut req = client()
        .post(s.url())
        .header("content-type", "application/json")
        .body(initialize_body());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.unwrap();
    let id = resp
        .headers()
        .get("acp-connection-id")
        .map(|v| v.to_str().unwrap().to_owned());
    (resp.status().as_u16(), id)
}

/// One write the agent asks permission for, then a closing text.
pub(super) fn script_write(model: &FakeModel, file: &str, text: &str) {
    model.push(Reply::tool_calls([write_call("w1", file, "remote\n")]));
    model.push(Reply::text(text));
}

/// A tool-using turn with a permission request on `editor` (initialized
/// with full fs/terminal capabilities, no opt-in): the agent writes on its
/// own disk, never through the client.
async fn permission_turn(editor: &FakeEditor, model: &FakeModel, ws: &Workspace) {
    editor.initialize(full_capabilities()).await;
    let new = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(new["_meta"]["acp-coder"]["disk"], "agent", "{new}");
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    script_write(model, "a.txt", "written");
    editor.push_permission(PermissionDecision::AllowOnce);
    let result = editor.prompt(&sid, "write a.txt").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(&sid), "written");
    assert_eq!(editor.permission_requests().len(), 1);
    assert_eq!(ws.read("a.txt"), "remote\n");
    // The client advertised fs and terminals, but the code lives beside the agent.
    assert!(editor.writes().is_empty(), "{:?}", editor.writes());
    assert!(
        !editor.updates_of_kind(&sid, "tool_call_update").is_empty(),
        "the tool's outcome arrives on the session stream"
    );
    editor.prompt(&sid, "/status").await;
    assert!(
        editor
            .agent_text(&sid)
            .contains("**Files and commands**: the agent's machine"),
        "{}",
        editor.agent_text(&sid)
    );
    editor.assert_no_errors();
}

#[tokio::test]
async fn serve_http_sse_turn_with_permission_uses_the_agents_disk() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = Served::start(&model, &[], &[]).await;
    let editor = s.http(None);
    permission_turn(&editor, &model, &ws).await;
}

#[tokio::test]
async fn serve_websocket_turn_with_permission() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = Served::start(&model, &[], &[]).await;
    let editor = s.websocket(None).await;
    permission_turn(&editor, &model, &ws).await;
}

#[tokio::test]
async fn serve_client_fs_opt_in_uses_the_clients_fs() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = Served::start(&model, &[], &[]).await;
    let editor = s.websocket(None).await;
    editor
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": full_capabilities(),
                   "_meta": {"acp-coder": {"clientFs": true}}}),
        )
        .await
        .unwrap();
    let new = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .unwrap();
    assert_eq!(new["_meta"]["acp-coder"]["disk"], "client", "{new}");
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    script_write(&model, "a.txt", "written");
    editor.push_permission(PermissionDecision::AllowOnce);
    editor.prompt(&sid, "write a.txt").await;
    assert_eq!(
        editor.writes().len(),
        1,
        "the write went through the client"
    );
    model.push(Reply::text("unused"));
    let status = editor.prompt(&sid, "/status").await;
    assert_eq!(status["stopReason"], "end_turn");
    assert!(
        editor
            .agent_text(&sid)
            .contains("**Files and commands**: the client's"),
        "{}",
        editor.agent_text(&sid)
    );
}

#[tokio::test]
async fn serve_refuses_a_public_address_without_a_token() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    let opts = crate::support::SpawnOptions {
        args: ["serve", "--listen", "0.0.0.0:0"]
            .map(str::to_owned)
            .to_vec(),
        envs: model.agent_env(),
        home: Some(home.path().to_owned()),
        ..Default::default()
    };
    let out = crate::support::agent_command(&opts, home.path())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ACP_CODER_SERVE_TOKEN") && err.contains("--token-file"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[tokio::test]
async fn serve_token_wrong_is_401_and_right_works() {
    let model = FakeModel::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "s3cret-token\n").unwrap();
    let s = Served::start(
        &model,
        &["--require-token", "--token-file", file.to_str().unwrap()],
        &[],
    )
    .await;
    let (status, id) = raw_initialize(&s, &[]).await;
    assert_eq!((status, id), (401, None));
    let (status, _) = raw_initialize(&s, &[("authorization", "Bearer s3cret-tokeN")]).await;
    assert_eq!(status, 401);
    let (status, _) = raw_initialize(&s, &[("authorization", "Bearer s3cret")]).await;
    assert_eq!(status, 401);
    // The WebSocket upgrade too.
    let resp = client()
        .get(s.url())
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let (status, id) = raw_initialize(&s, &[("authorization", "Bearer s3cret-token")]).await;
    assert_eq!(status, 200);
    assert!(id.is_some());
    let editor = s.websocket(Some("s3cret-token")).await;
    editor.initialize(full_capabilities()).await;
    // The health check needs no token.
    let health = client()
        .get(format!("http://{}/health", s.addr))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status().as_u16(), 200);
    let body: Value = health.json().await.unwrap();
    assert_eq!(body["status"], "ok");
}

#[tokio::test]
async fn serve_require_token_without_one_refuses_to_start() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    let opts = crate::support::SpawnOptions {
        args: ["serve", "--listen", "127.0.0.1:0", "--require-token"]
            .map(str::to_owned)
            .to_vec(),
        envs: model.agent_env(),
        home: Some(home.path().to_owned()),
        ..Default::default()
    };
    let out = crate::support::agent_command(&opts, home.path())
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ACP_CODER_SERVE_TOKEN"));
}

#[tokio::test]
async fn serve_bad_origin_is_403() {
    let model = FakeModel::start().await;
    let s = Served::start(
        &model,
        &["--allow-origin", "https://editor.example.com"],
        &[],
    )
    .await;
    let (status, _) = raw_initialize(&s, &[("origin", "https://evil.example.com")]).await;
    assert_eq!(status, 403);
    let resp = client()
        .get(s.url())
        .header("origin", "https://evil.example.com")
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status().as_u16(),
        403,
        "a page cannot open a socket either"
    );
    let (status, _) = raw_initialize(&s, &[("origin", "https://editor.example.com")]).await;
    assert_eq!(status, 200);
    // No Origin (not a browser): allowed.
    let (status, _) = raw_initialize(&s, &[]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn serve_body_over_the_limit_is_413() {
    let model = FakeModel::start().await;
    let s = Served::start(&model, &["--max-body", "2048"], &[]).await;
    let (status, conn) = raw_initialize(&s, &[]).await;
    assert_eq!(status, 200);
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "session/new",
        "params": {"cwd": "/", "mcpServers": [], "pad": "x".repeat(4096)}});
    let resp = client()
        .post(s.url())
        .header("content-type", "application/json")
        .header("acp-connection-id", conn.unwrap())
        .body(big.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    // Without a declared length (chunked) too.
    let chunks = futures::stream::iter(
        (0..8).map(|_| Ok::<_, std::io::Error>(bytes::Bytes::from(vec![b' '; 1024]))),
    );
    let resp = client()
        .post(s.url())
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
}

#[tokio::test]
async fn serve_connection_limit_is_503_until_one_ends() {
    let model = FakeModel::start().await;
    let s = Served::start(&model, &["--max-connections", "1"], &[]).await;
    let (status, first) = raw_initialize(&s, &[]).await;
    assert_eq!(status, 200);
    let (status, second) = raw_initialize(&s, &[]).await;
    assert_eq!((status, second), (503, None));
    let ws = tokio_tungstenite::client_async(
        format!("ws://{}/acp", s.addr),
        tokio::net::TcpStream::connect(&s.addr).await.unwrap(),
    )
    .await;
    assert!(ws.is_err(), "the upgrade is refused at the limit too");
    let resp = client()
        .delete(s.url())
        .header("acp-connection-id", first.unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    let mut ok = false;
    for _ in 0..100 {
        if raw_initialize(&s, &[]).await.0 == 200 {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ok, "a new connection is accepted once the first ended");
}

#[tokio::test]
async fn serve_two_connections_never_see_each_others_frames() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = Served::start(&model, &[], &[]).await;
    let a = s.http(None);
    let b = s.websocket(None).await;
    a.initialize(full_capabilities()).await;
    b.initialize(full_capabilities()).await;
    let sa = a.new_session(ws.path()).await;
    let sb = b.new_session(ws.path()).await;
    model.push(Reply::text("ALPHA-REPLY"));
    a.prompt(&sa, "hello").await;
    model.push(Reply::text("BRAVO-REPLY"));
    b.prompt(&sb, "hello").await;
    let lines_a = a.raw_lines().join("\n");
    let lines_b = b.raw_lines().join("\n");
    assert_eq!(a.agent_text(&sa), "ALPHA-REPLY");
    assert_eq!(b.agent_text(&sb), "BRAVO-REPLY");
    assert_eq!(
        a.messages()
            .iter()
            .filter(|m| m["params"]["sessionId"] == sb.as_str())
            .count(),
        0
    );
    assert_eq!(
        b.messages()
            .iter()
            .filter(|m| m["params"]["sessionId"] == sa.as_str())
            .count(),
        0
    );
    assert!(!lines_a.contains(&sb), "a never hears of b's session");
    assert!(!lines_b.contains(&sa), "b never hears of a's session");
    // A session stream of another connection's session is not found.
    let (_, conn) = raw_initialize(&s, &[]).await;
    let resp = client()
        .get(s.url())
        .header("accept", "text/event-stream")
        .header("acp-connection-id", conn.clone().unwrap())
        .header("acp-session-id", &sa)
        .send()
        .await
        .unwrap();
    // Stored sessions may be opened for session/load; this one is, so the
    // stream opens, but nothing of a's live session reaches it.
    assert_eq!(resp.status().as_u16(), 200);
    drop(resp);
    let resp = client()
        .get(s.url())
        .header("accept", "text/event-stream")
        .header("acp-connection-id", conn.unwrap())
        .header("acp-session-id", "not-a-session")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    a.assert_no_errors();
    b.assert_no_errors();
}

#[tokio::test]
async fn serve_sigterm_cancels_a_running_turn_and_answers_it() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let mut s = Served::start(&model, &[], &[]).await;
    let editor = s.http(None);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    model.push(Reply::text("partial answer that never ends").hang_after(2));
    let pending = editor.start_prompt(&sid, "go").await;
    editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "agent_message_chunk")
        .await;
    let status = s.terminate().await;
    assert!(
        status.success() || cfg!(not(unix)),
        "{status}\n{}",
        s.stderr()
    );
    if cfg!(unix) {
        let result = pending.response().await.expect("the prompt is answered");
        assert_eq!(result["stopReason"], "cancelled");
        // The session was recorded.
        let log = s.data_dir().join("sessions").join(format!("{sid}.jsonl"));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(text.contains("go"), "{}: {text}", log.display());
    }
}

#[tokio::test]
async fn serve_two_clients_on_one_session_see_everything_and_the_first_answer_wins() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let mut s = Served::start(&model, &[], &[]).await;
    let a = s.http(None);
    let b = s.websocket(None).await;
    let outsider = s.http(None);
    for e in [&a, &b, &outsider] {
        e.initialize(full_capabilities()).await;
    }
    let sid = a.new_session(ws.path()).await;
    model.push(Reply::text("first answer"));
    a.prompt(&sid, "hello from a").await;
    outsider.new_session(ws.path()).await;
    // b joins the live session: it sees the history...
    b.load_session(&sid, ws.path()).await;
    let replayed = b.updates_of_kind(&sid, "agent_message_chunk");
    assert!(
        !replayed.is_empty(),
        "the history is replayed to the new client"
    );
    // ...and from now on every prompt, update and permission request live.
    script_write(&model, "a.txt", "wrote it");
    a.push_permission(PermissionDecision::NeverAnswer);
    b.push_permission(PermissionDecision::AllowOnce);
    let from = b.message_count();
    let result = a.prompt(&sid, "write a.txt").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(ws.read("a.txt"), "remote\n", "b's allow was the answer");
    crate::support::eventually("b sees the answer live", || {
        b.agent_text(&sid).ends_with("wrote it")
    })
    .await;
    let b_saw = |kind: &str| {
        b.messages()[from..]
            .iter()
            .filter(|m| m["params"]["update"]["sessionUpdate"] == kind)
            .cloned()
            .collect::<Vec<_>>()
    };
    let prompts = b_saw("user_message_chunk");
    assert!(
        prompts
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "write a.txt"),
        "b sees a's prompt: {prompts:?}"
    );
    assert!(!b_saw("tool_call").is_empty());
    assert!(!b_saw("tool_call_update").is_empty(), "b sees the outcome");
    assert_eq!(a.permission_requests().len(), 1);
    assert_eq!(b.permission_requests().len(), 1);
    // a was asked too, and told the question was withdrawn once b answered.
    a.wait_for_cancel_request().await;
    assert!(!a.updates_of_kind(&sid, "tool_call_update").is_empty());
    assert_eq!(a.agent_text(&sid), "first answerwrote it");

    // b prompts the same session: a sees the prompt and the answer.
    model.push(Reply::text("answer to b"));
    let result = b.prompt(&sid, "hello from b").await;
    assert_eq!(result["stopReason"], "end_turn");
    a.wait_for(|m| {
        m["params"]["update"]["content"]["text"] == "hello from b"
            && m["params"]["update"]["sessionUpdate"] == "user_message_chunk"
    })
    .await;
    crate::support::eventually("a sees the answer to b", || {
        a.agent_text(&sid).ends_with("answer to b")
    })
    .await;
    // A question nobody answers is withdrawn from everyone when the turn
    // is cancelled.
    model.push(Reply::tool_calls([write_call("w2", "b.txt", "never\n")]));
    a.push_permission(PermissionDecision::NeverAnswer);
    b.push_permission(PermissionDecision::NeverAnswer);
    let (a_from, b_from) = (a.message_count(), b.message_count());
    let pending = a.start_prompt(&sid, "write b.txt").await;
    let asked = |m: &Value| m["method"] == "session/request_permission";
    a.wait_for_after(a_from, asked).await;
    b.wait_for_after(b_from, asked).await;
    b.cancel(&sid).await;
    let result = pending.response().await.unwrap();
    assert_eq!(result["stopReason"], "cancelled");
    b.wait_for_after(b_from, |m| m["method"] == "$/cancel_request")
        .await;
    assert!(!ws.exists("b.txt"));
    // The third connection never hears of the shared session.
    assert_eq!(
        outsider
            .messages()
            .iter()
            .filter(|m| m.to_string().contains(&sid))
            .count(),
        0
    );
    for e in [&a, &b, &outsider] {
        e.assert_no_errors();
    }
    // One writer: once stopped, the log has each turn once.
    let status = s.terminate().await;
    assert!(status.success() || cfg!(not(unix)), "{status}");
    if cfg!(not(unix)) {
        return; // killed, not stopped: nothing to check on disk
    }
    let log = s.data_dir().join("sessions").join(format!("{sid}.jsonl"));
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("\"hello from b\"").count(),
        2,
        "prompt and message: {text}"
    );
    assert_eq!(text.matches("answer to b").count(), 1, "{text}");
}

/// The Python with the official ACP SDK and its HTTP/WebSocket client
/// (`ACP_CODER_ACP_PYTHON`, set by scripts/test.sh); the tests that need it
/// are `#[ignore]`d in a plain `cargo test`, and fail saying how to install
/// it when run without it.
fn acp_python() -> String {
    let var = "ACP_CODER_ACP_PYTHON";
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set; install the SDK with `python3 -m venv DIR && DIR/bin/pip install 'agent-client-protocol[http]==0.12.1'` and set {var}=DIR/bin/python (scripts/test.sh does)"
        ),
    }
}

/// Checks every frame of one connection's transcript (in the order the
/// client saw them) against the ACP schema, both directions.
fn check_transcript(frames: &[Value]) {
    use crate::support::RpcId;
    use crate::support::schema::{check_agent_message, check_client_message};
    use std::collections::HashMap;
    let (mut ours, mut theirs) = (HashMap::new(), HashMap::new());
    for f in frames {
        let msg = &f["msg"];
        let id = msg.get("id").and_then(RpcId::from_json);
        let method = msg["method"].as_str().map(str::to_owned);
        if f["dir"] == "out" {
            check_client_message(msg, &theirs).unwrap_or_else(|e| panic!("client frame: {e}"));
            match (id, method) {
                (Some(id), Some(m)) => {
                    ours.insert(id, m);
                }
                (Some(id), None) => {
                    theirs.remove(&id);
                }
                _ => {}
            }
        } else {
            check_agent_message(msg, &ours).unwrap_or_else(|e| panic!("agent frame: {e}"));
            match (id, method) {
                (Some(id), Some(m)) => {
                    theirs.insert(id, m);
                }
                (Some(id), None) => {
                    ours.remove(&id);
                }
                _ => {}
            }
        }
    }
}

/// The official Python SDK's remote client (`tests/acp_py/client.py`).
async fn python_sdk_scenario(kind: &str) {
    let python = acp_python();
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = Served::start(&model, &[], &[]).await;
    script_write(&model, "a.txt", "written");
    model.push(Reply::text("slow slow slow slow slow slow").hang_after(2));
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp_py/client.py");
    let out = tokio::time::timeout(
        Duration::from_secs(120),
        tokio::process::Command::new(python)
            .arg(&script)
            .arg(kind)
            .arg(s.url())
            .arg(ws.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the SDK client finishes within 120 s")
    .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client.py {kind} failed\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr()
    );
    let r: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    check_sdk_scenario(&r, &ws);
}

/// What an official SDK's remote client reports after the scenario of
/// tests/acp_py/client.py (and tests/acp_rs): the permission was asked once
/// and allowed, the file written, the cancelled turn ended `cancelled`, the
/// session replayed after a reconnect, every frame valid per the schema.
pub(super) fn check_sdk_scenario(r: &Value, ws: &Workspace) {
    assert_eq!(r["first"], "end_turn", "{r}");
    assert_eq!(r["permissions"], 1, "{r}");
    assert!(r["toolUpdates"].as_u64().unwrap() >= 2, "{r}");
    assert_eq!(ws.read("a.txt"), "remote\n");
    assert_eq!(r["second"], "cancelled", "{r}");
    let replayed = r["replayed"].as_array().unwrap();
    assert!(
        replayed.iter().any(|u| u["text"] == "write a.txt"),
        "session/load after a reconnect replays the history: {r}"
    );
    for t in r["transcripts"].as_array().unwrap() {
        let frames = t.as_array().unwrap();
        assert!(frames.len() > 3);
        check_transcript(frames);
    }
}

#[tokio::test]
#[ignore = "needs ACP_CODER_ACP_PYTHON (scripts/test.sh installs agent-client-protocol[http]==0.12.1)"]
async fn serve_python_sdk_over_http_sse() {
    python_sdk_scenario("http").await;
}

#[tokio::test]
#[ignore = "needs ACP_CODER_ACP_PYTHON (scripts/test.sh installs agent-client-protocol[http]==0.12.1)"]
async fn serve_python_sdk_over_websocket() {
    python_sdk_scenario("ws").await;
}

#[tokio::test]
async fn serve_answers_every_malformed_request_as_the_rfd_says() {
    let model = FakeModel::start().await;
    let s = Served::start(&model, &[], &[]).await;
    let post = |conn: Option<&str>, content_type: &str, body: &str| {
        let mut r = client()
            .post(s.url())
            .header("content-type", content_type)
            .body(body.to_owned());
        if let Some(c) = conn {
            r = r.header("acp-connection-id", c);
        }
        r
    };
    let status = |r: reqwest::Response| r.status().as_u16();
    // Not JSON content, not JSON, a batch, not initialize first.
    assert_eq!(
        status(
            post(None, "text/plain", &initialize_body())
                .send()
                .await
                .unwrap()
        ),
        415
    );
    assert_eq!(
        status(
            post(None, "application/json", "{oops")
                .send()
                .await
                .unwrap()
        ),
        400
    );
    let batch = format!("[{}]", initialize_body());
    assert_eq!(
        status(post(None, "application/json", &batch).send().await.unwrap()),
        501
    );
    let list =
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}).to_string();
    assert_eq!(
        status(post(None, "application/json", &list).send().await.unwrap()),
        400
    );
    assert_eq!(
        status(
            post(Some("nope"), "application/json", &list)
                .send()
                .await
                .unwrap()
        ),
        404
    );
    let (_, conn) = raw_initialize(&s, &[]).await;
    let conn = conn.unwrap();
    assert_eq!(
        status(
            post(Some(&conn), "application/json", &list)
                .send()
                .await
                .unwrap()
        ),
        202
    );
    // Acp-Session-Id and params.sessionId must agree.
    let prompt = json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": "sess_a", "prompt": []}})
    .to_string();
    let resp = post(Some(&conn), "application/json", &prompt)
        .header("acp-session-id", "sess_b")
        .send()
        .await
        .unwrap();
    assert_eq!(status(resp), 400);
    // The ids the server makes for shared sessions are not the client's to use.
    let reserved = json!({"jsonrpc": "2.0", "id": "acp-coder-proxy-0", "method": "session/list", "params": {}})
        .to_string();
    assert_eq!(
        status(
            post(Some(&conn), "application/json", &reserved)
                .send()
                .await
                .unwrap()
        ),
        400
    );
    // Streams: Accept, the connection, one reader each.
    let get = |accept: &str, conn: Option<&str>| {
        let mut r = client().get(s.url()).header("accept", accept);
        if let Some(c) = conn {
            r = r.header("acp-connection-id", c);
        }
        r
    };
    assert_eq!(
        status(get("application/json", Some(&conn)).send().await.unwrap()),
        406
    );
    assert_eq!(
        status(get("text/event-stream", None).send().await.unwrap()),
        400
    );
    assert_eq!(
        status(get("text/event-stream", Some("nope")).send().await.unwrap()),
        404
    );
    let first = get("text/event-stream", Some(&conn)).send().await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    assert_eq!(
        status(get("text/event-stream", Some(&conn)).send().await.unwrap()),
        409
    );
    // The session/list answer waited on the stream.
    let mut events = sse_stream::SseStream::from_bytes_stream(first.bytes_stream());
    let event = futures::StreamExt::next(&mut events)
        .await
        .unwrap()
        .unwrap();
    let answer: Value = serde_json::from_str(&event.data.unwrap()).unwrap();
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(answer["result"]["sessions"].is_array(), "{answer}");
    // DELETE ends the connection and its stream.
    let resp = client()
        .delete(s.url())
        .header("acp-connection-id", &conn)
        .send()
        .await
        .unwrap();
    assert_eq!(status(resp), 202);
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(_)) = futures::StreamExt::next(&mut events).await {}
    })
    .await;
    assert!(rest.is_ok(), "the stream closes with the connection");
    assert_eq!(
        status(
            post(Some(&conn), "application/json", &list)
                .send()
                .await
                .unwrap()
        ),
        404
    );
    assert_eq!(
        status(
            client()
                .get(format!("http://{}/other", s.addr))
                .send()
                .await
                .unwrap()
        ),
        404
    );
}

#[tokio::test]
async fn serve_closes_an_http_connection_its_client_abandoned() {
    let model = FakeModel::start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let s = Served::start(
        &model,
        &[
            "--idle-timeout",
            "1",
            "--max-connections",
            "1",
            "--log-file",
            log.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    // A client that initializes and vanishes (no stream, no DELETE).
    let (status, conn) = raw_initialize(&s, &[]).await;
    assert_eq!(status, 200);
    crate::support::wait_for_text_in(&log, "closed an idle connection").await;
    let mut freed = false;
    for _ in 0..100 {
        if raw_initialize(&s, &[]).await.0 == 200 {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(freed, "its place under --max-connections is free again");
    let resp = client()
        .get(s.url())
        .header("accept", "text/event-stream")
        .header("acp-connection-id", conn.unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
}

#[tokio::test]
async fn serve_token_from_the_environment_is_required_and_never_logged() {
    let model = FakeModel::start().await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("serve.log");
    let s = Served::start(
        &model,
        &["--log-file", log.to_str().unwrap(), "--log-level", "debug"],
        &[("ACP_CODER_SERVE_TOKEN", "env-token-4711")],
    )
    .await;
    assert_eq!(raw_initialize(&s, &[]).await.0, 401);
    let (status, _) = raw_initialize(&s, &[("authorization", "Bearer env-token-4711")]).await;
    assert_eq!(status, 200);
    let editor = s.http(Some("env-token-4711"));
    editor.initialize(full_capabilities()).await;
    let text = crate::support::wait_for_text_in(&log, "ACP connection opened").await;
    assert!(!text.contains("env-token-4711"), "{text}");
    assert!(!s.stderr().contains("env-token-4711"));
}
