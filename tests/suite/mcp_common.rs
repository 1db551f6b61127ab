//! Shared helpers of the MCP suites: the test server and the reference
//! servers, an agent with a config, sessions with `mcpServers`, and readers
//! of what a call looked like to the model and to the editor.
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{FakeEditor, FakeModel, Reply, Workspace, full_capabilities};

/// The test server binary. `cargo test` builds it as an example; a
/// filtered run (`cargo test --test all mcp`) does not, hence the checks.
pub(super) fn test_server() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir
        .join("examples")
        .join(format!("mcp_test_server{}", std::env::consts::EXE_SUFFIX));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp_test_server.rs");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    assert!(
        path.exists() && modified(&path) >= modified(&source),
        "{} is missing or older than its source: run `cargo test` (all targets) or \
         `cargo build --example mcp_test_server` first",
        path.display()
    );
    path
}

pub(super) fn stdio(name: &str, args: &[&str]) -> Value {
    json!({"name": name, "command": test_server(), "args": args, "env": []})
}

// The tests against the external reference servers are `#[ignore]`d: they
// need servers installed from npm and PyPI, which a test may not download.
// `scripts/test.sh` installs them and runs these tests with `--include-ignored`.

/// An external reference server from the environment (set by scripts/test.sh); an
/// ignored test run without it fails saying how to install it.
pub(super) fn external(var: &str, install: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set; install the server with `{install}` and set {var} (see .ci/run)"
        ),
    }
}

pub(super) fn everything() -> String {
    external(
        "ACP_CODER_MCP_EVERYTHING",
        "npm install --prefix DIR @modelcontextprotocol/server-everything; ACP_CODER_MCP_EVERYTHING=DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )
}

pub(super) async fn spawn(
    model: &FakeModel,
    config: Option<&str>,
) -> (FakeEditor, Option<tempfile::TempDir>) {
    let (args, dir) = match config {
        Some(text) => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("config.toml");
            std::fs::write(&path, text).unwrap();
            (
                vec!["--config".to_owned(), path.display().to_string()],
                Some(dir),
            )
        }
        None => (Vec::new(), None),
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let editor = FakeEditor::spawn(&args, model.agent_env());
    editor.initialize(full_capabilities()).await;
    (editor, dir)
}

/// `session/new` with these `mcpServers`; the session id and how long it took.
pub(super) async fn new_session(
    editor: &FakeEditor,
    cwd: &Path,
    servers: Value,
) -> (String, Duration) {
    let began = Instant::now();
    let result = editor
        .request_with_id(
            format!("new-{}", fastrand::u64(..)),
            "session/new",
            json!({"cwd": cwd, "mcpServers": servers}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("session/new failed: {e}")));
    (
        result["sessionId"].as_str().unwrap().to_owned(),
        began.elapsed(),
    )
}

/// Runs `/mcp` (a turn without a model call, which also flushes queued
/// notices) until the agent's text contains `needle`: waits for the event a
/// server's change ends in, instead of a fixed sleep.
pub(super) async fn wait_for_mcp_text(editor: &FakeEditor, sid: &str, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        editor.prompt(sid, "/mcp").await;
        if editor.agent_text(sid).contains(needle) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "`/mcp` never showed {needle:?}: {}",
            editor.agent_text(sid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The config of most tests here: MCP tools run without asking.
pub(super) const FULL_AUTO: &str = "default_mode = \"full-auto\"\n";

/// Whether chat request `request` offered the model `tool`.
/// The server announced `tool` (a list change): `/mcp` shows it, and the
/// next model request (the third) offers it.
pub(super) async fn offered_once_listed(
    model: &FakeModel,
    editor: &FakeEditor,
    sid: &str,
    tool: &str,
) {
    wait_for_mcp_text(editor, sid, &format!("`{tool}`")).await;
    model.push(Reply::text("ok"));
    editor.prompt(sid, "again").await;
    assert!(offers(model, 2, tool));
}

pub(super) fn offers(model: &FakeModel, request: usize, tool: &str) -> bool {
    model.chat_requests()[request]
        .tool_names()
        .iter()
        .any(|n| n == tool)
}

/// The `tool` messages of a chat request, by tool_call_id.
pub(super) fn tool_result(model: &FakeModel, request: usize, call_id: &str) -> String {
    let req = &model.chat_requests()[request];
    req.messages()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == call_id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| {
            panic!(
                "no tool result {call_id} in request {request}: {:?}",
                req.messages()
            )
        })
        .to_owned()
}

pub(super) fn tool_spec(model: &FakeModel, request: usize, name: &str) -> Value {
    model.chat_requests()[request].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("tool {name} not offered"))
}

/// The final `tool_call_update` (status completed/failed) of a call.
pub(super) fn final_update(editor: &FakeEditor, sid: &str, call_id: &str) -> Value {
    editor
        .updates_of_kind(sid, "tool_call_update")
        .into_iter()
        .rev()
        .find(|u| {
            u["toolCallId"] == call_id && (u["status"] == "completed" || u["status"] == "failed")
        })
        .unwrap_or_else(|| editor.fail(&format!("no final update for {call_id}")))
}

pub(super) fn first_call(editor: &FakeEditor, sid: &str, call_id: &str) -> Value {
    editor
        .updates_of_kind(sid, "tool_call")
        .into_iter()
        .find(|u| u["toolCallId"] == call_id)
        .unwrap_or_else(|| editor.fail(&format!("no tool_call {call_id}")))
}

/// Starts the test server (or another command) serving HTTP; returns the
/// child and the URL it printed.
pub(super) async fn http_server(
    cmd: &mut tokio::process::Command,
) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    cmd.stdout(std::process::Stdio::piped()).kill_on_drop(true);
    let mut child = cmd.spawn().expect("start HTTP test server");
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("the HTTP server did not say where it listens")
        .unwrap()
        .unwrap();
    let url = line
        .strip_prefix("listening ")
        .expect("listening line")
        .to_owned();
    (child, url)
}

pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(super) async fn wait_port(port: u16) {
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("nothing listens on port {port}");
}

/// Starts server-everything serving `transport` (`streamableHttp` or
/// `sse`) on a free port; the child and `http://127.0.0.1:PORT`.
pub(super) async fn everything_over(transport: &str) -> (tokio::process::Child, String) {
    let port = free_port();
    let child = tokio::process::Command::new("node")
        .args([everything().as_str(), transport])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the everything server");
    wait_port(port).await;
    (child, format!("http://127.0.0.1:{port}"))
}

/// The Python with the MCP SDK (`ACP_CODER_MCP_PYTHON`).
pub(super) fn mcp_python() -> String {
    external(
        "ACP_CODER_MCP_PYTHON",
        "python3 -m venv DIR && DIR/bin/pip install mcp; ACP_CODER_MCP_PYTHON=DIR/bin/python",
    )
}

/// An `mcpServers` entry `name` running the Python SDK server in
/// tests/fixtures/`fixture`.
pub(super) fn python_server(name: &str, fixture: &str) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(fixture);
    json!({"name": name, "command": mcp_python(), "args": [script], "env": []})
}

/// A full-auto agent with one session, on a fresh workspace, whose
/// `mcpServers` are `servers`.
pub(super) struct McpSession {
    pub(super) editor: FakeEditor,
    pub(super) sid: String,
    /// The session's cwd and the agent's config, kept while the test runs.
    _ws: Workspace,
    _config: Option<tempfile::TempDir>,
}

pub(super) async fn full_auto_session(model: &FakeModel, servers: Value) -> McpSession {
    let ws = Workspace::new();
    let (editor, config) = spawn(model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    McpSession {
        editor,
        sid,
        _ws: ws,
        _config: config,
    }
}

/// A turn ("go") in which the model calls `tool` with `args` as call `id`,
/// then says "done"; what the tool returned to the model.
pub(super) async fn call_tool(
    editor: &FakeEditor,
    model: &FakeModel,
    sid: &str,
    (id, tool, args): (&str, &str, Value),
) -> String {
    run_turn(editor, model, sid, [Reply::tool_call(id, tool, args)]).await;
    tool_result(model, model.chat_requests().len() - 1, id)
}

/// A turn ("go") in which the model sends `replies` (tool calls), then
/// says "done"; the turn must end normally.
pub(super) async fn run_turn(
    editor: &FakeEditor,
    model: &FakeModel,
    sid: &str,
    replies: impl IntoIterator<Item = Reply>,
) {
    for reply in replies {
        model.push(reply);
    }
    model.push(Reply::text("done"));
    let r = editor.prompt(sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
}
