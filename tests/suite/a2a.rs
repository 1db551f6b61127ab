//! `acp-coder a2a` (issue 20): the A2A server driven by the official Python
//! SDK (`a2a-sdk`, tests/a2a/client.py) and by raw HTTP for the agent card,
//! auth and every bad input.
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::support::{
    FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, agent_command, chunk, http_client,
    no_capabilities,
};

/// A running `acp-coder a2a`.
struct Served {
    _child: Child,
    url: String,
    token: String,
    stderr: Arc<Mutex<String>>,
    home: tempfile::TempDir,
}

impl Served {
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

async fn serve(model: &FakeModel, ws: &Path, args: &[&str], envs: &[(&str, &str)]) -> Served {
    let home = tempfile::tempdir().unwrap();
    let mut all = vec!["a2a", "--listen", "127.0.0.1:0", "-C", ws.to_str().unwrap()];
    all.extend_from_slice(args);
    let mut env = model.agent_env();
    env.extend(envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let opts = SpawnOptions {
        args: all.iter().map(|s| (*s).to_owned()).collect(),
        envs: env,
        home: Some(home.path().to_owned()),
        cwd: None,
    };
    let mut child = agent_command(&opts, home.path())
        .spawn()
        .expect("spawn a2a");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut token = envs
        .iter()
        .find(|(k, _)| *k == "ACP_CODER_A2A_TOKEN")
        .map(|(_, v)| (*v).to_owned());
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(t) = line.strip_prefix("token: ") {
                token = Some(t.to_owned());
            }
            if let Some(rest) = line.split(" at ").nth(1) {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("a2a exited before serving:\n{}", stderr.lock().unwrap());
    })
    .await
    .expect("a2a did not start within 30 s");
    let sink = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    Served {
        _child: child,
        url,
        token: token.expect("a token"),
        stderr,
        home,
    }
}

/// The Python with `a2a-sdk` (ACP_CODER_A2A_PYTHON, installed by .ci/run);
/// required in CI, the tests say so and skip elsewhere (as the MCP ones do).
fn python() -> Option<String> {
    let var = "ACP_CODER_A2A_PYTHON";
    if let Ok(v) = std::env::var(var)
        && !v.is_empty()
    {
        return Some(v);
    }
    let msg = format!(
        "{var} is not set; install the SDK with `python3 -m venv DIR && DIR/bin/pip install a2a-sdk==1.3.0` and set {var}=DIR/bin/python (see .ci/run)"
    );
    if std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false") {
        panic!("{msg}");
    }
    eprintln!("\n*** SKIPPED (not in CI): {msg} ***\n");
    None
}

/// Runs a scenario of tests/a2a/client.py; its JSON output.
async fn sdk(python: &str, s: &Served, scenario: &str, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/client.py");
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(python)
            .arg(&script)
            .arg(scenario)
            .arg(&s.url)
            .args(args)
            .env("A2A_TOKEN", &s.token)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the SDK client did not finish within 90 s")
    .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client.py {scenario} failed\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn artifact<'a>(task: &'a Value, id: &str) -> Option<&'a Value> {
    task["artifacts"]
        .as_array()?
        .iter()
        .find(|a| a["artifactId"] == id)
}

fn text_of(v: &Value) -> String {
    v["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

// ------------------------------------------------------------ with the SDK

#[tokio::test]
async fn sdk_blocking_task_edits_a_file_and_returns_the_diff() {
    let Some(py) = python() else { return };
    let model = FakeModel::with_replies([
        Reply::tool_call(
            "c1",
            "write_file",
            json!({"path": "src/notes.txt", "content": "hello\nworld\n"}),
        ),
        Reply::text("Wrote the notes."),
    ])
    .await;
    let ws = Workspace::builder()
        .file("src/notes.txt", "hello\n")
        .build();
    let s = serve(&model, ws.path(), &["--mode", "accept-edits"], &[]).await;
    let out = sdk(&py, &s, "blocking", &["add world to the notes"]).await;
    let task = &out["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{out:#}");
    assert_eq!(ws.read("src/notes.txt"), "hello\nworld\n");
    assert_eq!(
        text_of(artifact(task, "answer").unwrap()),
        "Wrote the notes."
    );
    let diff = artifact(task, "diff").expect("diff artifact");
    assert_eq!(diff["metadata"]["files"], json!(["src/notes.txt"]));
    assert_eq!(
        text_of(diff),
        "--- a/src/notes.txt\n+++ b/src/notes.txt\n@@ -1 +1,2 @@\n hello\n+world\n"
    );
    // The prompt reached the model; the session is the editor's kind.
    let first = &model.chat_requests()[0];
    assert_eq!(
        first.last_message().unwrap()["content"],
        "add world to the notes"
    );
    let sid = task["contextId"].as_str().unwrap().to_owned();
    drop(s._child);
    let editor = FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(s.home.path().to_owned()),
        ..SpawnOptions::default()
    });
    editor.initialize(no_capabilities()).await;
    let list = editor.request("session/list", json!({})).await.unwrap();
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["sessionId"].as_str())
        .collect();
    assert!(ids.contains(&sid.as_str()), "{list:#}");
    editor
        .request(
            "session/load",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": []}),
        )
        .await
        .expect("an editor loads the A2A session");
}

#[tokio::test]
async fn sdk_streaming_task_streams_text_and_tool_calls() {
    let Some(py) = python() else { return };
    let model = FakeModel::with_replies([
        Reply::tool_call("r1", "read_file", json!({"path": "a.txt"})),
        Reply::stream([
            chunk::role(),
            chunk::text("The file "),
            chunk::text("says hi."),
            chunk::finish("stop"),
        ]),
    ])
    .await;
    let ws = Workspace::builder().file("a.txt", "hi\n").build();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "stream", &["what does a.txt say?"]).await;
    let events = out["events"].as_array().unwrap();
    assert!(events[0]["task"].is_object(), "{out:#}");
    let pieces: Vec<String> = events
        .iter()
        .filter(|e| e["artifactUpdate"]["artifact"]["artifactId"] == "answer")
        .map(|e| text_of(&e["artifactUpdate"]["artifact"]))
        .collect();
    assert_eq!(pieces.concat(), "The file says hi.", "{out:#}");
    assert!(pieces.len() >= 2, "text streams in pieces: {pieces:?}");
    let tool_note = events.iter().any(|e| {
        text_of(&e["statusUpdate"]["status"]["message"]).starts_with("Tool")
            && e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    });
    assert!(tool_note, "tool calls as status messages: {out:#}");
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert_eq!(out["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        text_of(artifact(&out["task"], "answer").unwrap()),
        "The file says hi."
    );
}

#[tokio::test]
async fn sdk_input_required_round_trip_for_a_command() {
    let Some(py) = python() else { return };
    let model = FakeModel::with_replies([
        Reply::tool_call(
            "k1",
            "run_command",
            json!({"command": "echo ran > out.txt"}),
        ),
        Reply::text("Ran it."),
    ])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "ask", &["run the thing", "allow"]).await;
    let asked = &out["asked"];
    assert_eq!(
        asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{out:#}"
    );
    let question = text_of(&asked["status"]["message"]);
    assert!(question.contains("echo ran > out.txt"), "{question}");
    assert!(question.contains("allow"), "{question}");
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert_eq!(out["task"]["id"], asked["id"]);
    assert_eq!(ws.read("out.txt").trim(), "ran");
    // A message to the finished task is refused, saying how to go on.
    let again = &out["again"];
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("no more messages"),
        "{again}"
    );
}

#[tokio::test]
async fn sdk_rejecting_in_text_stops_the_command() {
    let Some(py) = python() else { return };
    let model = FakeModel::with_replies([
        Reply::tool_call(
            "k1",
            "run_command",
            json!({"command": "echo ran > out.txt"}),
        ),
        Reply::text("Understood, not running it."),
    ])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "ask", &["run the thing", "No."]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert!(!ws.exists("out.txt"));
}

#[tokio::test]
async fn sdk_follow_up_message_continues_the_conversation() {
    let Some(py) = python() else { return };
    let model =
        FakeModel::with_replies([Reply::text("First answer."), Reply::text("Second answer.")])
            .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "followup", &["one", "two"]).await;
    assert_eq!(out["first"]["contextId"], out["second"]["contextId"]);
    assert_ne!(out["first"]["id"], out["second"]["id"]);
    assert_eq!(
        text_of(artifact(&out["second"], "answer").unwrap()),
        "Second answer."
    );
    // The second request carries the first turn.
    let second = &model.chat_requests()[1];
    let contents: Vec<String> = second
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(contents.iter().any(|c| c == "one"), "{contents:?}");
    assert!(
        contents.iter().any(|c| c == "First answer."),
        "{contents:?}"
    );
    assert_eq!(
        out["listed"]["tasks"].as_array().unwrap().len(),
        2,
        "{out:#}"
    );
}

#[tokio::test]
async fn sdk_cancel_stops_the_model_stream() {
    let Some(py) = python() else { return };
    let model = FakeModel::with_replies([Reply::stream([
        chunk::role(),
        chunk::text("Thinking"),
        chunk::finish("stop"),
    ])
    .hang_after(2)])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "cancel", &["take forever"]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_CANCELED",
        "{out:#}"
    );
    assert!(
        out["again"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be canceled"),
        "{out:#}"
    );
}

#[tokio::test]
async fn sdk_errors_are_clear() {
    let Some(py) = python() else { return };
    let model = FakeModel::with_replies([Reply::text("Done.")]).await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "errors", &["hello"]).await;
    assert_eq!(out["unknown_task"]["type"], "TaskNotFoundError", "{out:#}");
    assert_eq!(
        out["unknown_cancel"]["type"], "TaskNotFoundError",
        "{out:#}"
    );
    assert_eq!(
        out["finished_message"]["type"], "UnsupportedOperationError",
        "{out:#}"
    );
    assert!(
        out["unknown_context"]["message"]
            .as_str()
            .unwrap()
            .contains("omit contextId"),
        "{out:#}"
    );
}

#[tokio::test]
async fn sdk_v03_compatibility_names() {
    let Some(py) = python() else { return };
    let model =
        FakeModel::with_replies([Reply::text("Old but gold."), Reply::text("Streamed too.")]).await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "v03", &["hi", "blocking"]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert_eq!(
        text_of(artifact(&out["task"], "answer").unwrap()),
        "Old but gold."
    );
    let out = sdk(&py, &s, "v03", &["hi", "stream"]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
}

// ------------------------------------------------------------ raw HTTP

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
