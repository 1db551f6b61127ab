//! `--trace FILE`: every frame in both directions, secrets redacted.

use super::cli_common::CliEnv;
use crate::support::{FakeEditor, FakeModel, Reply, Workspace, full_capabilities};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const API_KEY: &str = "sk-trace-test-0123456789abcdef";
const MCP_SECRET: &str = "mcp-env-secret-value-42";
const MCP_HEADER: &str = "Bearer mcp-header-token-77";

fn read_trace(path: &Path) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(path).expect("trace file");
    let lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    (text, lines)
}

fn check_shape(lines: &[Value]) {
    for l in lines {
        let ts = l["ts"].as_str().expect("ts");
        // 2026-01-02T03:04:05.678Z
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(
            ts.as_bytes()[10] == b'T' && ts.ends_with('Z') && ts.as_bytes()[19] == b'.',
            "{ts}"
        );
        assert!(l["dir"] == "in" || l["dir"] == "out", "{l}");
        assert!(l["msg"].is_object() || l["msg"].is_string(), "{l}");
    }
}

/// Waits until the trace holds a line matching `pred` (it is written by a
/// background thread).
async fn wait_for_line(path: &Path, pred: impl Fn(&Value) -> bool) {
    for _ in 0..200 {
        if path.exists() && read_trace(path).1.iter().any(&pred) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "trace never got the expected line:\n{}",
        std::fs::read_to_string(path).unwrap_or_default()
    );
}

#[tokio::test]
async fn agent_mode_traces_both_directions_without_secrets() {
    let model = FakeModel::with_replies([Reply::text(&format!(
        "I will not repeat {API_KEY} to anyone."
    ))])
    .await;
    let ws = Workspace::new();
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("logs/trace.jsonl");
    let mut env = model.agent_env();
    env.retain(|(k, _)| k != "OPENAI_API_KEY");
    env.push(("OPENAI_API_KEY".into(), API_KEY.into()));
    let mut editor = FakeEditor::spawn(&["--trace", trace.to_str().unwrap()], env);
    editor.initialize(full_capabilities()).await;
    // MCP servers carry secrets in env and headers. Whether the agent can
    // start them does not matter here, only what the trace keeps.
    let _ = editor
        .request_unchecked(
            "session/new",
            json!({
                "cwd": ws.path(),
                "mcpServers": [
                    {"name": "fs", "command": "/nonexistent/acp-coder-test-mcp", "args": [],
                     "env": [{"name": "SOME_VAR", "value": MCP_SECRET}]},
                    {"type": "http", "name": "api", "url": "http://127.0.0.1:9/mcp",
                     "headers": [{"name": "Authorization", "value": MCP_HEADER}]}
                ]
            }),
        )
        .await;
    let sid = editor.new_session(ws.path()).await;
    let result = editor
        .prompt(&sid, &format!("my key is {API_KEY}, keep it safe"))
        .await;
    assert_eq!(result["stopReason"], "end_turn");
    // The model's echo of the key reaches the editor redacted (SECURITY.md §3).
    let said = editor.agent_text(&sid);
    assert!(
        said.contains("I will not repeat [redacted] to anyone.") && !said.contains(API_KEY),
        "{said}"
    );
    editor.close_stdin().await;
    editor.wait_exit(Duration::from_secs(10)).await;

    let (text, lines) = read_trace(&trace);
    check_shape(&lines);
    for secret in [API_KEY, MCP_SECRET, MCP_HEADER, "mcp-header-token-77"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the trace:\n{text}"
        );
    }
    assert!(text.contains("[redacted]"));
    let find = |dir: &str, pred: &dyn Fn(&Value) -> bool| {
        lines.iter().any(|l| l["dir"] == dir && pred(&l["msg"]))
    };
    assert!(find("in", &|m| m["method"] == "initialize"));
    assert!(find("out", &|m| m["id"] == 1
        && m["result"]["protocolVersion"] == 1));
    assert!(find("in", &|m| m["method"] == "session/prompt"));
    assert!(find("out", &|m| m["method"] == "session/update"));
    assert!(find("out", &|m| m["result"]["stopReason"] == "end_turn"));
    let mcp = lines
        .iter()
        .find(|l| l["msg"]["params"]["mcpServers"].is_array())
        .expect("the session/new with MCP servers");
    let servers = &mcp["msg"]["params"]["mcpServers"];
    assert_eq!(servers[0]["env"][0]["name"], "SOME_VAR");
    assert_eq!(servers[0]["env"][0]["value"], "[redacted]");
    assert_eq!(servers[1]["headers"][0]["value"], "[redacted]");
    // The prompt is there, with the key cut out.
    assert!(
        text.contains("my key is [redacted], keep it safe"),
        "{text}"
    );
}

#[tokio::test]
async fn trace_is_written_while_the_agent_runs() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    let editor = FakeEditor::spawn(
        &["--trace", trace.to_str().unwrap()],
        [("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")],
    );
    editor.initialize(full_capabilities()).await;
    // Not only at exit: the writer flushes when it has caught up.
    wait_for_line(&trace, |l| l["dir"] == "out" && l["msg"]["id"] == 1).await;
    editor.send_raw("this is not json").await.unwrap();
    wait_for_line(&trace, |l| {
        l["dir"] == "in" && l["msg"] == "this is not json"
    })
    .await;
    wait_for_line(&trace, |l| {
        l["dir"] == "out" && l["msg"]["error"]["code"] == -32700
    })
    .await;
    editor.take_errors();
}

#[tokio::test]
async fn exec_traces_the_in_process_connection() {
    let model = FakeModel::with_replies([Reply::text("traced")]).await;
    let ws = Workspace::new();
    let trace = ws.path().join("exec-trace.jsonl");
    let run = CliEnv::with_model(&model)
        .env("OPENAI_API_KEY", API_KEY)
        .cwd(ws.path())
        .run(&[
            "--trace",
            trace.to_str().unwrap(),
            "exec",
            &format!("hi {API_KEY}"),
        ])
        .await;
    run.assert_code(0);
    let (text, lines) = read_trace(&trace);
    check_shape(&lines);
    assert!(!text.contains(API_KEY), "{text}");
    let methods: Vec<&str> = lines
        .iter()
        .filter(|l| l["dir"] == "in")
        .filter_map(|l| l["msg"]["method"].as_str())
        .collect();
    assert_eq!(methods, ["initialize", "session/new", "session/prompt"]);
    assert!(
        lines
            .iter()
            .any(|l| l["dir"] == "out" && l["msg"]["result"]["stopReason"] == "end_turn")
    );
}
