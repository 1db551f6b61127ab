//! `acp-coder a2a` (issue 20) over raw HTTP: the agent card, auth, the
//! bounds (body size, idle expiry), every bad input, and the refusal to
//! listen publicly without a configured token.
use std::time::Duration;

use serde_json::{Value, json};

use super::a2a::{Served, serve, text_of};
use crate::support::{
    FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, agent_command, eventually,
    full_capabilities, get_json, http_client, wait_gone, wait_pid_file,
};

pub(super) async fn post(
    s: &Served,
    token: Option<&str>,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let mut req = http_client()
        .post(&s.url)
        .header("content-type", "application/json")
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or_else(|_| json!({"raw": text})),
    )
}

/// `acp-coder a2a -C WS ARGS…` with `home` as its home, not started yet.
fn a2a_command(
    model: &FakeModel,
    ws: &Workspace,
    home: &std::path::Path,
    args: &[&str],
) -> tokio::process::Command {
    let mut all = vec!["a2a", "-C", ws.path().to_str().unwrap()];
    all.extend_from_slice(args);
    let opts = SpawnOptions {
        args: all.iter().map(|s| (*s).to_owned()).collect(),
        envs: model.agent_env(),
        home: Some(home.to_owned()),
        cwd: None,
        program: None,
    };
    let mut cmd = agent_command(&opts, home);
    cmd.kill_on_drop(true);
    cmd
}

/// Writes `request` on a fresh connection and returns what comes back
/// before the server closes it or 5 s pass.
async fn raw_http(s: &Served, request: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = s.url.trim_start_matches("http://").trim_end_matches('/');
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _ = conn.write_all(request.as_bytes()).await;
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
        .await
        .expect("an answer within 5 s")
        .unwrap_or(0);
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

pub(super) fn rpc(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string()
}

#[tokio::test]
async fn agent_card_is_public_and_everything_else_needs_the_token() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    // The generated token is printed once, as `token: VALUE`.
    assert_eq!(s.token.len(), 64, "{}", s.stderr());
    assert_eq!(s.stderr().matches(&s.token).count(), 1, "{}", s.stderr());
    let card = get_json(&format!("{}.well-known/agent-card.json", s.url)).await;
    assert_eq!(card["name"], "acp-coder");
    assert_eq!(card["supportedInterfaces"][0]["url"], s.url.as_str());
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert!(card["skills"].as_array().unwrap().len() >= 4);
    assert!(!card.to_string().contains(&s.token));

    let list = rpc("ListTasks", json!({}));
    let (status, body) = post(&s, None, list.clone()).await;
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Bearer")
    );
    let (status, _) = post(&s, Some("wrong"), list.clone()).await;
    assert_eq!(status, 401);
    let almost = format!("{}x", &s.token[..63]);
    let (status, _) = post(&s, Some(&almost), list.clone()).await;
    assert_eq!(status, 401);
    let (status, body) = post(&s, Some(&s.token), list).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["tasks"], json!([]));
}

#[tokio::test]
async fn bad_input_gets_clear_errors_and_disturbs_nothing() {
    let model = FakeModel::with_replies([Reply::text("still here")]).await;
    let ws = Workspace::builder().dir("sub").build();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let t = Some(s.token.as_str());
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap_or(0);

    let (_, b) = post(&s, t, "{not json").await;
    assert_eq!(code(&b), -32700, "{b}");
    let (_, b) = post(&s, t, "[1,2]").await;
    assert_eq!(code(&b), -32600, "{b}");
    let (_, b) = post(&s, t, r#"{"id": 1, "method": "GetTask"}"#).await;
    assert_eq!(code(&b), -32600, "{b}");
    assert_eq!(b["id"], 1);
    let (_, b) = post(&s, t, rpc("tasks/frobnicate", json!({}))).await;
    assert_eq!(code(&b), -32601, "{b}");
    let (_, b) = post(
        &s,
        t,
        r#"{"jsonrpc":"2.0","id":2,"method":"GetTask","params":[1]}"#,
    )
    .await;
    assert_eq!(code(&b), -32602, "{b}");
    let (_, b) = post(&s, t, rpc("GetTask", json!({}))).await;
    assert_eq!(code(&b), -32602, "{b}");
    assert!(
        b["error"]["message"].as_str().unwrap().contains("id"),
        "{b}"
    );
    let (_, b) = post(&s, t, rpc("GetTask", json!({"id": "nope"}))).await;
    assert_eq!(code(&b), -32001, "{b}");
    let (_, b) = post(&s, t, rpc("CancelTask", json!({"id": "nope"}))).await;
    assert_eq!(code(&b), -32001, "{b}");
    let (_, b) = post(&s, t, rpc("SubscribeToTask", json!({"id": "nope"}))).await;
    assert_eq!(code(&b), -32001, "{b}");
    let (_, b) = post(
        &s,
        t,
        rpc(
            "SendMessage",
            json!({"message": {"role": "ROLE_USER", "parts": []}}),
        ),
    )
    .await;
    assert_eq!(code(&b), -32602, "{b}");
    // A subdirectory outside the served one is refused, through a symlink too.
    acp_coder::platform::fs::symlink(ws.path().parent().unwrap(), ws.join("escape")).unwrap();
    for outside in ["..", "/etc", "sub/../..", "escape", "escape/.."] {
        let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}],
                         "metadata": {"cwd": outside}}});
        let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
        assert_eq!(code(&b), -32602, "{outside}: {b}");
    }
    // Oversized bodies: 413 at once when declared (the body is never read),
    // and when streamed without a length.
    let head = raw_http(
        &s,
        &format!(
            "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{{",
            s.token,
            4 << 20
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let chunked = format!(
        "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{}\r\n",
        s.token,
        (1 << 20) + 10,
        "x".repeat((1 << 20) + 10)
    );
    let head = raw_http(&s, &chunked).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    // Wrong paths and verbs.
    let r = http_client()
        .get(&s.url)
        .bearer_auth(&s.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 405);
    let r = http_client()
        .get(format!("{}x", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    // Nothing disturbed: a real task in the subdirectory still works.
    let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "hi"}],
                     "metadata": {"cwd": "sub"}}});
    let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    assert_eq!(text_of(&b["result"]["task"]["artifacts"][0]), "still here");
}

#[tokio::test]
async fn a_configured_token_is_used_and_not_printed() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let secret = "configured-token-0123456789";
    let mut s = serve(&model, ws.path(), &[], &[("ACP_CODER_A2A_TOKEN", secret)]).await;
    assert!(!s.stderr().contains("token:"), "{}", s.stderr());
    let (status, _) = post(&s, Some(secret), rpc("ListTasks", json!({}))).await;
    assert_eq!(status, 200);
    // The token never reaches the log file (the redactor knows it), which
    // is complete once the server has exited.
    s.stop().await;
    let logs = s.home.path().join(".local/state/acp-coder/logs");
    for entry in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        assert!(!text.contains(secret), "{}", entry.path().display());
    }
}

#[tokio::test]
async fn on_every_address_the_card_names_the_address_the_client_used() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = serve(
        &model,
        ws.path(),
        &["--listen", "0.0.0.0:0"],
        &[("ACP_CODER_A2A_TOKEN", "configured-token-0123456789")],
    )
    .await;
    let port = s.url.rsplit(':').next().unwrap().trim_end_matches('/');
    let url = format!("http://127.0.0.1:{port}/");
    let card = get_json(&format!("{url}.well-known/agent-card.json")).await;
    assert_eq!(card["supportedInterfaces"][0]["url"], url.as_str());
    assert_eq!(card["url"], url.as_str());
    // A Host header that is not a plain host:port falls back to the bound address.
    let raw = raw_http(
        &s,
        "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: a/b<script>\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(!raw.contains("<script>"), "{raw}");
}

#[tokio::test]
async fn refuses_a_public_address_without_a_configured_token() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        a2a_command(&model, &ws, home.path(), &["--listen", "0.0.0.0:0"]).output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to listen on 0.0.0.0"), "{err}");
    assert!(err.contains("a2a_token"), "{err}");
    assert!(!err.lines().any(|l| l.starts_with("token: ")), "{err}");
}

#[tokio::test]
async fn a_task_left_waiting_for_input_expires() {
    let idle = [("ACP_CODER_A2A_IDLE_MS", "500")];
    let (model, ws, s, task) = task_asking_to_run("echo ran > out.txt", "back again", &idle).await;
    let t = Some(s.token.as_str());
    let id = task["id"].as_str().unwrap().to_owned();
    // Canceled once idle, then forgotten once idle again.
    let mut seen = Vec::new();
    for _ in 0..200 {
        let (_, b) = post(&s, t, rpc("GetTask", json!({"id": id}))).await;
        let state = b["result"]["status"]["state"]
            .as_str()
            .unwrap_or(if b["error"]["code"] == -32001 {
                "gone"
            } else {
                "?"
            })
            .to_owned();
        if seen.last() != Some(&state) {
            seen.push(state.clone());
        }
        if state == "gone" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        seen,
        ["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED", "gone"],
        "{}",
        s.stderr()
    );
    assert!(!ws.exists("out.txt"));
    // The idle context's session is closed in the agent (it stays on disk),
    // and a message naming it loads it again.
    let logs = s.home.path().join(".local/state/acp-coder/logs");
    let log_says = |needle: &str| {
        std::fs::read_dir(&logs)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(needle)))
    };
    eventually("the log says the idle context is closed", || {
        log_says("closing an idle context")
    })
    .await;
    let ctx = task["contextId"].clone();
    let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m2", "contextId": ctx,
                                 "parts": [{"text": "are you there?"}]}});
    let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    assert_eq!(b["result"]["task"]["contextId"], ctx);
    let second = &model.chat_requests()[1];
    assert!(
        second.messages().iter().any(|m| m["content"] == "run it"),
        "the reloaded session keeps the conversation"
    );
}

pub(super) fn user_message(text: &str) -> Value {
    json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": text}]}})
}

/// `acp-coder a2a` (with `envs`) whose model asks to run `command`, then
/// says `then`; its first task ("run it") waits for the permission answer.
async fn task_asking_to_run(
    command: &str,
    then: &str,
    envs: &[(&str, &str)],
) -> (FakeModel, Workspace, Served, Value) {
    let model = FakeModel::with_replies([
        Reply::tool_call("k1", "run_command", json!({"command": command})),
        Reply::text(then),
    ])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], envs).await;
    let t = Some(s.token.as_str());
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("run it"))).await;
    let task = b["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{b}");
    (model, ws, s, task)
}

#[tokio::test]
async fn cancel_stops_a_running_command() {
    let (_model, ws, s, task) =
        task_asking_to_run("echo $$ > pid.txt; exec sleep 60", "stopped", &[]).await;
    let t = Some(s.token.as_str());
    let (id, ctx) = (task["id"].clone(), task["contextId"].clone());
    // Allowed, without waiting for the end: the command runs.
    let answer = json!({
        "message": {"role": "ROLE_USER", "messageId": "m2", "taskId": id, "contextId": ctx,
                    "parts": [{"text": "allow"}]},
        "configuration": {"returnImmediately": true},
    });
    let (_, b) = post(&s, t, rpc("SendMessage", answer)).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{b}"
    );
    let pid = wait_pid_file(&ws.join("pid.txt")).await;
    let (_, b) = post(&s, t, rpc("CancelTask", json!({"id": id}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
    // The command is gone (or a zombie awaiting its reaper), as with session/cancel.
    wait_gone(pid, "the command, after CancelTask").await;
    let (_, b) = post(&s, t, rpc("GetTask", json!({"id": id}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
}

/// A client that goes away in the middle of a blocking `SendMessage` does
/// not take the turn with it: the turn still ends its task (here on
/// `CancelTask`, with the turn's own "Canceled.", not the cancel's give-up
/// after 10 s).
#[tokio::test]
async fn a_blocking_send_whose_client_goes_away_still_ends_its_task() {
    use tokio::io::AsyncWriteExt;
    let model =
        FakeModel::with_replies([Reply::text("an answer that never ends").hang_after(2)]).await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let addr = s.url.trim_start_matches("http://").trim_end_matches('/');
    let body = rpc("SendMessage", user_message("take forever"));
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        s.token,
        body.len()
    );
    conn.write_all(request.as_bytes()).await.unwrap();
    assert!(
        model
            .wait_for_chat_requests(1, Duration::from_secs(30))
            .await,
        "the turn reached the model"
    );
    drop(conn);
    let t = Some(s.token.as_str());
    let (_, b) = post(&s, t, rpc("ListTasks", json!({}))).await;
    let task = b["result"]["tasks"][0].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{b}");
    let (_, b) = post(&s, t, rpc("CancelTask", json!({"id": task["id"]}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
    assert_eq!(
        text_of(&b["result"]["status"]["message"]),
        "Canceled.",
        "the turn itself ended the task: {b}"
    );
}

#[tokio::test]
async fn at_most_sixteen_tasks_wait_at_once() {
    let model =
        FakeModel::with_replies((0..16).map(|i| {
            Reply::tool_call(&format!("k{i}"), "run_command", json!({"command": "true"}))
        }))
        .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let t = Some(s.token.as_str());
    for _ in 0..16 {
        let (_, b) = post(&s, t, rpc("SendMessage", user_message("run it"))).await;
        assert_eq!(
            b["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{b}"
        );
    }
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("one more"))).await;
    assert_eq!(b["error"]["code"], -32004, "{b}");
    assert!(
        b["error"]["message"].as_str().unwrap().contains("limit"),
        "{b}"
    );
    assert_eq!(model.chat_requests().len(), 16);
    // Listing pages through them all.
    let (_, b) = post(&s, t, rpc("ListTasks", json!({"pageSize": 10}))).await;
    assert_eq!(b["result"]["totalSize"], 16, "{b}");
    assert_eq!(b["result"]["tasks"].as_array().unwrap().len(), 10);
    let next = b["result"]["nextPageToken"].clone();
    let (_, b) = post(
        &s,
        t,
        rpc("ListTasks", json!({"pageSize": 10, "pageToken": next})),
    )
    .await;
    assert_eq!(b["result"]["tasks"].as_array().unwrap().len(), 6, "{b}");
    assert_eq!(b["result"]["nextPageToken"], "", "{b}");
}

#[tokio::test]
async fn what_is_not_offered_says_so() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let t = Some(s.token.as_str());
    let code = |v: &Value| v["error"]["code"].as_i64().unwrap_or(0);
    for m in [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
    ] {
        let (_, b) = post(&s, t, rpc(m, json!({"taskId": "x"}))).await;
        assert_eq!(code(&b), -32003, "{m}: {b}");
    }
    for m in ["GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard"] {
        let (_, b) = post(&s, t, rpc(m, json!({}))).await;
        assert_eq!(code(&b), -32007, "{m}: {b}");
    }
    let (_, b) = post(
        &s,
        t,
        rpc("GetTask", json!({"id": "x", "historyLength": -1})),
    )
    .await;
    assert_eq!(code(&b), -32602, "{b}");
    let (_, b) = post(&s, t, rpc("ListTasks", json!({"pageSize": 0}))).await;
    assert_eq!(code(&b), -32602, "{b}");
    // A2A-Version: 1.0 and 0.3 are spoken, others refused by name.
    for (version, expected) in [("1.0", 0), ("0.3", 0), ("2.0", -32009)] {
        let b: Value = http_client()
            .post(&s.url)
            .bearer_auth(&s.token)
            .header("A2A-Version", version)
            .body(rpc("ListTasks", json!({})))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(code(&b), expected, "{version}: {b}");
        if expected != 0 {
            assert_eq!(b["id"], 7, "{b}");
            assert!(
                b["error"]["message"].as_str().unwrap().contains("1.0"),
                "{b}"
            );
        }
    }
}

#[tokio::test]
async fn modes_are_checked_at_start() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let spawn = |mode: &str| {
        let args = ["--listen", "127.0.0.1:0", "--mode", mode];
        a2a_command(&model, &ws, home.path(), &args)
            .spawn()
            .unwrap()
    };
    let out = tokio::time::timeout(Duration::from_secs(30), spawn("yolo").wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'yolo'") && err.contains("read-only, plan, ask, accept-edits, full-auto"),
        "{err}"
    );
    // full-auto: served only where the command sandbox confines commands.
    let mut child = spawn("full-auto");
    let mut lines =
        tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(child.stderr.take().unwrap()));
    let verdict = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("serving") || line.contains("needs the command sandbox") {
                return line;
            }
        }
        String::new()
    })
    .await
    .unwrap();
    assert!(
        verdict.contains("serving") || verdict.contains("use --mode ask"),
        "{verdict}"
    );
}

/// A2A contexts are this server's conversations, in its directory: a
/// `contextId` naming an editor's session of another project (stored in the
/// same data directory) is refused, where it used to be loaded and its
/// conversation sent to the model with the A2A client's message.
#[tokio::test]
async fn a_context_id_of_another_projects_session_is_refused() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let t = Some(s.token.as_str());
    let other = Workspace::new();
    model.push(Reply::text("noted"));
    let mut editor = FakeEditor::spawn_with(SpawnOptions {
        args: Vec::new(),
        envs: model.agent_env(),
        home: Some(s.home.path().to_owned()),
        cwd: None,
        program: None,
    });
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(other.path()).await;
    editor
        .prompt(&sid, "the other project's private plan")
        .await;
    editor.close_stdin().await;
    editor.wait_exit(Duration::from_secs(30)).await;

    model.push(Reply::text("loaded it"));
    let before = model.chat_requests().len();
    let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m", "contextId": sid,
                                 "parts": [{"text": "what was the plan?"}]}});
    let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
    assert_eq!(b["error"]["code"], -32602, "{b}");
    let message = b["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not a conversation of this server") && message.contains("omit contextId"),
        "{message}"
    );
    assert_eq!(model.chat_requests().len(), before, "no turn ran");

    // A context of this server's own directory still continues.
    model.push(Reply::text("first"));
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("hello"))).await;
    let ctx = b["result"]["task"]["contextId"].clone();
    assert!(ctx.is_string(), "{b}");
    model.push(Reply::text("second"));
    let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m2", "contextId": ctx,
                                 "parts": [{"text": "again"}]}});
    let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
}

/// A `file://` part naming a file outside the served directory is refused
/// (a read-only server put that file's text into the model request); one
/// inside it is still read.
#[tokio::test]
async fn a_file_part_outside_the_served_directory_is_refused() {
    let model = FakeModel::start().await;
    let outside = Workspace::builder()
        .file("secret.txt", "OUTSIDE-SECRET-42")
        .build();
    let ws = Workspace::builder()
        .file("inside.txt", "INSIDE-TEXT-7")
        .build();
    acp_coder::platform::fs::symlink(outside.join("secret.txt"), ws.join("link.txt")).unwrap();
    let s = serve(&model, ws.path(), &["--mode", "read-only"], &[]).await;
    let t = Some(s.token.as_str());
    let url = |p: &std::path::Path| format!("file://{}", p.display());
    for target in [
        outside.join("secret.txt"),
        ws.join("link.txt"),
        ws.join("../x"),
    ] {
        model.push(Reply::text("read it"));
        let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [
            {"text": "summarise this"}, {"url": url(&target), "filename": "secret.txt"}]}});
        let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
        assert_eq!(b["error"]["code"], -32602, "{}: {b}", target.display());
        let message = b["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("message.parts[1]")
                && message.contains("outside the served directory"),
            "{message}"
        );
    }
    assert!(
        !model
            .chat_requests()
            .iter()
            .any(|r| r.raw_body.contains("OUTSIDE-SECRET-42")),
        "the outside file reached the model"
    );
    // Inside the served directory: read as before.
    model.push(Reply::text("read it"));
    let msg = json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [
        {"text": "summarise this"}, {"url": url(&ws.join("inside.txt")), "filename": "inside.txt"}]}});
    let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    let last = model.chat_requests().pop().expect("a request");
    assert!(last.raw_body.contains("INSIDE-TEXT-7"), "{}", last.raw_body);
}

/// A blank token (`ACP_CODER_A2A_TOKEN="  "`, `a2a_token = ""`) is no
/// token: a public address is refused, as without one.
#[tokio::test]
async fn a_blank_token_is_no_token() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    for (env, config) in [("   ", None), ("", Some("a2a_token = \"\"\n"))] {
        let home = tempfile::tempdir().unwrap();
        if let Some(toml) = config {
            super::common::write_config(home.path(), toml);
        }
        let mut cmd = a2a_command(&model, &ws, home.path(), &["--listen", "0.0.0.0:0"]);
        cmd.env("ACP_CODER_A2A_TOKEN", env);
        let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
            .await
            .expect("refused at start, not served")
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{env:?} {config:?}: {err}");
        assert!(err.contains("refusing to listen on 0.0.0.0"), "{err}");
    }
}
