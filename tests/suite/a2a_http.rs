//! `acp-coder a2a` (issue 20) over raw HTTP: the agent card, auth, the
//! bounds (body size, idle expiry), every bad input, and the refusal to
//! listen publicly without a configured token.
use std::time::Duration;

use serde_json::{Value, json};

use super::a2a::{Served, serve, text_of};
use crate::support::{FakeModel, Reply, SpawnOptions, Workspace, agent_command, http_client};

async fn post(s: &Served, token: Option<&str>, body: impl Into<reqwest::Body>) -> (u16, Value) {
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

fn rpc(method: &str, params: Value) -> String {
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
    let card: Value = http_client()
        .get(format!("{}.well-known/agent-card.json", s.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
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
    std::os::unix::fs::symlink(ws.path().parent().unwrap(), ws.join("escape")).unwrap();
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
    let s = serve(&model, ws.path(), &[], &[("ACP_CODER_A2A_TOKEN", secret)]).await;
    assert!(!s.stderr().contains("token:"), "{}", s.stderr());
    let (status, _) = post(&s, Some(secret), rpc("ListTasks", json!({}))).await;
    assert_eq!(status, 200);
    // The token never reaches the log file (the redactor knows it).
    tokio::time::sleep(Duration::from_millis(200)).await;
    let logs = s.home.path().join(".local/state/acp-coder/logs");
    for entry in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        assert!(!text.contains(secret), "{}", entry.path().display());
    }
}

#[tokio::test]
async fn refuses_a_public_address_without_a_configured_token() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let opts = SpawnOptions {
        args: [
            "a2a",
            "--listen",
            "0.0.0.0:0",
            "-C",
            ws.path().to_str().unwrap(),
        ]
        .map(str::to_owned)
        .to_vec(),
        envs: model.agent_env(),
        home: Some(home.path().to_owned()),
        cwd: None,
    };
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        agent_command(&opts, home.path()).output(),
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
    let model = FakeModel::with_replies([Reply::tool_call(
        "k1",
        "run_command",
        json!({"command": "echo ran > out.txt"}),
    )])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[("ACP_CODER_A2A_IDLE_MS", "500")]).await;
    let t = Some(s.token.as_str());
    let msg =
        json!({"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "run it"}]}});
    let (_, b) = post(&s, t, rpc("SendMessage", msg)).await;
    let task = &b["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{b}");
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
}
