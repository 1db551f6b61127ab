//! MCP servers handed to `session/new` (issue 4), against real servers: the
//! rmcp-based test server (examples/mcp_test_server.rs) over stdio and
//! streamable HTTP, a hand-written 2026-07-28 server, and the official
//! reference servers (`@modelcontextprotocol/server-everything` over stdio,
//! streamable HTTP and legacy SSE; the Python SDK over stdio).
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, full_capabilities,
    wait_for_text_in,
};

// ---------------------------------------------------------------- helpers

/// The test server binary. `cargo test` builds it as an example; a
/// filtered run (`cargo test --test all mcp`) does not, hence the checks.
pub(super) fn test_server() -> PathBuf {
    let exe = std::env::current_exe().expect("test exe");
    let dir = exe.parent().and_then(Path::parent).expect("target dir");
    let path = dir.join("examples").join("mcp_test_server");
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
async fn wait_for_mcp_text(editor: &FakeEditor, sid: &str, needle: &str) {
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
const FULL_AUTO: &str = "default_mode = \"full-auto\"\n";

/// Whether chat request `request` offered the model `tool`.
/// The server announced `tool` (a list change): `/mcp` shows it, and the
/// next model request (the third) offers it.
async fn offered_once_listed(model: &FakeModel, editor: &FakeEditor, sid: &str, tool: &str) {
    wait_for_mcp_text(editor, sid, &format!("`{tool}`")).await;
    model.push(Reply::text("ok"));
    editor.prompt(sid, "again").await;
    assert!(offers(model, 2, tool));
}

fn offers(model: &FakeModel, request: usize, tool: &str) -> bool {
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

fn tool_spec(model: &FakeModel, request: usize, name: &str) -> Value {
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

fn pid_alive(pid: i32) -> bool {
    // A zombie (state Z) counts as gone: it runs no code and holds nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

async fn wait_gone(pid: i32, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !pid_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    !pid_alive(pid)
}

async fn read_pid(path: &Path) -> i32 {
    for _ in 0..200 {
        if let Ok(s) = std::fs::read_to_string(path)
            && let Ok(pid) = s.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no pid in {}", path.display());
}

/// Starts the test server (or another command) serving HTTP; returns the
/// child and the URL it printed.
async fn http_server(cmd: &mut tokio::process::Command) -> (tokio::process::Child, String) {
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

// ------------------------------------------------------------------ tests

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
    let pid = read_pid(&pid_file).await;
    assert!(pid_alive(pid));
    editor
        .request("session/close", json!({"sessionId": sid}))
        .await
        .unwrap();
    assert!(
        wait_gone(pid, Duration::from_secs(15)).await,
        "server {pid} still runs after session/close"
    );
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
    let pid = read_pid(&pid_file).await;
    assert!(pid_alive(pid));
    editor.close_stdin().await;
    editor.wait_exit(Duration::from_secs(10)).await;
    assert!(
        wait_gone(pid, Duration::from_secs(15)).await,
        "server {pid} outlived the agent"
    );
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn everything_server_over_stdio() {
    let path = everything();
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([{"name": "everything", "command": "node", "args": [path, "stdio"], "env": []}]),
    )
    .await;
    model.push(Reply::tool_calls([
        (
            "e1",
            "mcp__everything__echo",
            json!({"message": "hi from acp"}),
        ),
        ("e2", "mcp__everything__get-sum", json!({"a": 2, "b": 40})),
        ("e3", "mcp__everything__get-tiny-image", json!({})),
    ]));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    assert!(tool_result(&model, 1, "e1").contains("hi from acp"));
    assert!(tool_result(&model, 1, "e2").contains("42"));
    assert!(tool_result(&model, 1, "e3").contains("[image: image/png"));
    assert_eq!(
        first_call(&editor, &sid, "e1")["title"],
        "everything: Echo Tool"
    );
}

async fn everything_over_http(kind: &str, path_suffix: &str) {
    let path = everything();
    let port = free_port();
    let _server = tokio::process::Command::new("node")
        .args([
            path.as_str(),
            if kind == "sse" {
                "sse"
            } else {
                "streamableHttp"
            },
        ])
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start the everything server");
    wait_port(port).await;
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let url = format!("http://127.0.0.1:{port}{path_suffix}");
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([{"type": kind, "name": "ev", "url": url, "headers": []}]),
    )
    .await;
    model.push(Reply::tool_call(
        "e1",
        "mcp__ev__echo",
        json!({"message": format!("via {kind}")}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let text = tool_result(&model, 1, "e1");
    assert!(
        text.contains(&format!("via {kind}")),
        "{text}\n{}",
        editor.agent_text(&sid)
    );
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn everything_server_over_legacy_sse() {
    everything_over_http("sse", "/sse").await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn everything_server_over_streamable_http() {
    everything_over_http("http", "/mcp").await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn python_sdk_server_over_stdio() {
    let python = external(
        "ACP_CODER_MCP_PYTHON",
        "python3 -m venv DIR && DIR/bin/pip install mcp; ACP_CODER_MCP_PYTHON=DIR/bin/python",
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_py_server.py");
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = spawn(&model, Some(FULL_AUTO)).await;
    let (sid, _) = new_session(
        &editor,
        ws.path(),
        json!([{"name": "py", "command": python, "args": [script], "env": []}]),
    )
    .await;
    model.push(Reply::tool_call(
        "p1",
        "mcp__py__shout",
        json!({"text": "quiet"}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let text = tool_result(&model, 1, "p1");
    assert!(
        text.contains("QUIET"),
        "{text}\n{}",
        editor.agent_text(&sid)
    );
}
