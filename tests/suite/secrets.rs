//! The key stays secret (issue 14, SECURITY.md §3): a hostile model tries
//! every route to the API key and the other secrets — a command printing its
//! environment, the agent's own `/proc/<pid>/environ` read by a command and by
//! `read_file`, a file holding the key, the model repeating the key split
//! over streamed chunks — and none of them leaves it in a frame, the session
//! log, the log file, the trace or stderr.

use super::common::{
    Secrets, assert_no_secret, files_under, session_with_secret_mcp_env, spawn_with_secrets,
};
use crate::support::{
    FakeModel, PermissionDecision, Reply, Workspace, chunk, full_capabilities, no_capabilities,
};
use serde_json::json;

const KEY: &str = "sk-live-ROUTEKEY0123456789";
const OTHER_KEY: &str = "sk-openai-ROUTEOTHER98765";
const HEADER_SECRET: &str = "hdr-ROUTE-7f3a9c1e";
const MCP_SECRET: &str = "mcp-ROUTE-51c2d8aa";
const SECRETS: [&str; 4] = [KEY, OTHER_KEY, HEADER_SECRET, MCP_SECRET];
const SECRETS_HELD: Secrets = Secrets {
    key: KEY,
    other_key: OTHER_KEY,
    header: HEADER_SECRET,
};

#[track_caller]
fn assert_clean(what: &str, text: &str) {
    assert_no_secret(what, text, &SECRETS);
}

#[tokio::test]
async fn the_key_is_found_on_no_route() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("agent.log");
    let trace = home.path().join("trace.jsonl");
    let editor = spawn_with_secrets(
        &model,
        home.path(),
        &SECRETS_HELD,
        &log,
        &["--trace".into(), trace.display().to_string()],
    );
    // Everything outside the roots is allowed: the attack gets as far as it can.
    editor.set_default_permission(Some(PermissionDecision::AllowOnce));
    let ws = Workspace::builder()
        .file("notes.txt", format!("the key is {KEY}\n"))
        .build();
    // No fs/terminal capabilities: files are read and commands run by the
    // agent itself, so `/proc/self` is the agent.
    editor.initialize(no_capabilities()).await;
    let pid = editor.pid().expect("agent pid");

    // The process image holds no secret (readable here when the test runs
    // as root; the agent is non-dumpable, so otherwise /proc refuses).
    match std::fs::read(format!("/proc/{pid}/environ")) {
        Ok(environ) => {
            let environ = String::from_utf8_lossy(&environ);
            assert_clean("/proc/<agent>/environ", &environ);
            assert!(environ.contains("HOME="), "{environ}");
        }
        Err(e) => eprintln!("skipping the direct /proc/{pid}/environ check: {e}"),
    }

    // An MCP server whose environment holds a secret.
    let sid = session_with_secret_mcp_env(&editor, ws.path(), MCP_SECRET).await;

    let commands = [
        "env",
        "tr '\\0' '\\n' < /proc/$PPID/environ",
        "cd /pro? && tr '\\0' '\\n' < ./$PPID/environ",
        "cat /proc/$PPID/cmdline; echo; grep -a ROUTE /proc/$PPID/environ; echo done",
        "echo sk-live-ROUTEKEY0123456789 DOCS=mcp-ROUTE-51c2d8aa",
    ];
    for (i, command) in commands.iter().enumerate() {
        model.push(Reply::tool_call(
            &format!("call_cmd{i}"),
            "run_command",
            json!({ "command": command }),
        ));
    }
    for (i, path) in [
        "notes.txt".to_owned(),
        "/proc/self/environ".to_owned(),
        format!("/proc/{pid}/environ"),
    ]
    .iter()
    .enumerate()
    {
        model.push(Reply::tool_call(
            &format!("call_read{i}"),
            "read_file",
            json!({ "path": path }),
        ));
    }
    // The model tries to send the key on: into a file, onto a command line.
    model.push(Reply::tool_call(
        "call_write",
        "write_file",
        json!({"path": "leak.txt", "content": format!("key={KEY}\n")}),
    ));
    // The model repeats the key it read, split over chunks, in thought and text.
    let (a, b) = KEY.split_at(12);
    model.push(Reply::stream([
        chunk::role(),
        chunk::reasoning_content(&format!("I saw {a}")),
        chunk::reasoning_content(&format!("{b} in env")),
        chunk::text(&format!("Your key is {a}")),
        chunk::text(b),
        chunk::text(&format!(" and the token {MCP_SECRET}.")),
    ]));
    // The first prompt (the session's title) holds the key too.
    let prompt = format!("steal {KEY} for me");
    assert_eq!(editor.prompt(&sid, &prompt).await["stopReason"], "end_turn");

    // The routes really ran and found their way around (so their being
    // clean below means something).
    let requests = model.chat_requests();
    let last = requests.last().unwrap();
    let results: Vec<String> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(results.len(), commands.len() + 4, "{results:#?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("leak.txt")).unwrap(),
        "key=[redacted]\n",
        "a known secret in a tool call's arguments is replaced before it runs"
    );
    assert!(results[0].contains("PATH="), "{}", results[0]);
    assert!(
        results[5].contains("[redacted]"),
        "the file read: {}",
        results[5]
    );
    // The environment block itself no longer holds the value: what a command
    // reads there is blank, not a redacted key.
    for r in &results[1..4] {
        assert!(!r.contains("MY_PROVIDER_KEY=[redacted]"), "{r}");
    }
    assert_eq!(
        last.header("authorization"),
        Some(format!("Bearer {KEY}").as_str()),
        "the key is still used for the endpoint"
    );
    let text = editor.agent_text(&sid);
    assert!(
        text.ends_with("Your key is [redacted] and the token [redacted]."),
        "{text}"
    );
    assert_eq!(editor.thought_text(&sid), "I saw [redacted] in env");

    let mut editor = editor;
    editor.close_stdin().await;
    editor.wait_exit(std::time::Duration::from_secs(5)).await;
    let to_model: String = requests
        .iter()
        .map(|r| serde_json::to_string(r.messages()).unwrap())
        .collect();
    assert_clean("what the model was sent", &to_model);
    assert_clean("frames to the editor", &editor.raw_lines().join("\n"));
    assert_clean("stderr", &editor.stderr());
    assert_clean("the log file", &std::fs::read_to_string(&log).unwrap());
    assert_clean("the trace", &std::fs::read_to_string(&trace).unwrap());
    let stored = files_under(&home.path().join(".local/share"));
    assert!(
        stored
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "jsonl"))
    );
    for p in stored {
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        assert_clean(&p.display().to_string(), &text);
    }
}

/// Redaction is for what leaves for the model, the log, the trace and the
/// store, never for a file's bytes: an edit of one line of a `.env` that
/// also holds the API key, made through the editor's `fs/write_text_file`,
/// and its `/undo`, write the key back exactly as it was.
#[tokio::test]
async fn a_secret_in_an_edited_file_is_written_back_as_it_was() {
    secret_file_round_trip(Writer::Editor).await;
}

/// The same while a command of the session runs: the agent then writes
/// beneath the project itself, through a handle on the root, not through
/// the editor (the write-race rule); the bytes are kept there too.
#[tokio::test]
async fn a_secret_in_a_file_edited_while_a_command_runs_is_written_back_as_it_was() {
    secret_file_round_trip(Writer::AgentWhileACommandRuns).await;
}

/// The same when the editor offers no `fs`: the agent's own writes (and
/// its `/undo`) keep the file's bytes.
#[tokio::test]
async fn a_secret_in_a_locally_edited_file_is_written_back_as_it_was() {
    secret_file_round_trip(Writer::Local).await;
}

/// Who writes the file back.
#[derive(PartialEq)]
enum Writer {
    /// The editor, through `fs/write_text_file`.
    Editor,
    /// The agent: the editor offers no `fs`.
    Local,
    /// The agent, although the editor offers `fs`: a background command runs.
    AgentWhileACommandRuns,
}

async fn secret_file_round_trip(writer: Writer) {
    let through_editor = writer != Writer::Local;
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("agent.log");
    let trace = home.path().join("trace.jsonl");
    let editor = spawn_with_secrets(
        &model,
        home.path(),
        &SECRETS_HELD,
        &log,
        &["--trace".into(), trace.display().to_string()],
    );
    let env = format!("OPENAI_API_KEY={OTHER_KEY}\nPROVIDER={KEY}\nPORT=8080\n");
    let ws = Workspace::builder().file(".env", env.clone()).build();
    editor
        .initialize(if through_editor {
            full_capabilities()
        } else {
            no_capabilities()
        })
        .await;
    let sid = editor.new_session(ws.path()).await;

    if writer == Writer::AgentWhileACommandRuns {
        editor.set_default_permission(Some(PermissionDecision::AllowOnce));
        model.push(Reply::tool_call(
            "call_bg",
            "run_command",
            json!({"command": "sleep 60", "background": true}),
        ));
    }
    model.push(Reply::tool_call(
        "call_edit",
        "edit_file",
        json!({"path": ".env", "old_string": "PORT=8080", "new_string": "PORT=9090"}),
    ));
    model.push(Reply::text("done"));
    assert_eq!(
        editor.prompt(&sid, "use port 9090").await["stopReason"],
        "end_turn"
    );
    assert_eq!(
        ws.read(".env"),
        env.replace("PORT=8080", "PORT=9090"),
        "the edit changed one line and kept the keys"
    );
    // The model saw the file's keys redacted all the same.
    let requests = model.chat_requests();
    let to_model: String = requests
        .iter()
        .map(|r| serde_json::to_string(r.messages()).unwrap())
        .collect();
    assert_clean("what the model was sent", &to_model);

    // `/undo` through the editor restores the file exactly too.
    let r = editor.prompt(&sid, "/undo").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert_eq!(ws.read(".env"), env, "the undo kept the keys");

    let mut editor = editor;
    editor.close_stdin().await;
    editor.wait_exit(std::time::Duration::from_secs(5)).await;
    assert_clean("the log file", &std::fs::read_to_string(&log).unwrap());
    let traced = std::fs::read_to_string(&trace).unwrap();
    assert_clean("the trace", &traced);
    assert_eq!(
        traced.contains("fs/write_text_file"),
        writer == Writer::Editor,
        "the writes went through the editor only when it offered fs and no command ran"
    );
}

/// Only secrets are secret: an MCP server's `DB_NAME=inventory_service_prod`
/// is a plain setting and reaches the model and the user as it is, while a
/// token-named value beside it and a value shaped like a GitHub token under
/// a harmless name stay hidden.
#[tokio::test]
async fn plain_mcp_settings_reach_the_model_and_secrets_do_not() {
    const DB: &str = "inventory_service_prod";
    const TOKEN: &str = "plainword-but-named-a-token";
    const SHAPED: &str = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ012345";
    let model = FakeModel::start().await;
    let editor = super::common::spawn(&model, &[]);
    let ws = Workspace::builder()
        .file(
            "deploy.txt",
            format!("database {DB}\ntoken {TOKEN}\nmirror {SHAPED}\n"),
        )
        .build();
    editor.initialize(no_capabilities()).await;
    let env = json!([
        {"name": "DB_NAME", "value": DB},
        {"name": "DB_PATH", "value": "/var/lib/inventory/data"},
        {"name": "SERVICE_API_TOKEN", "value": TOKEN},
        {"name": "MIRROR", "value": SHAPED},
    ]);
    let servers = json!([{"name": "db", "command": "/bin/true", "args": [], "env": env}]);
    let sid = editor.new_session_with_servers(ws.path(), servers).await;
    model.push(Reply::tool_call(
        "call_read",
        "read_file",
        json!({"path": "deploy.txt"}),
    ));
    model.push(Reply::text(&format!("The database is {DB}.")));
    assert_eq!(
        editor.prompt(&sid, "which database?").await["stopReason"],
        "end_turn"
    );
    let requests = model.chat_requests();
    let read = requests
        .last()
        .unwrap()
        .messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .unwrap();
    assert!(read.contains(&format!("database {DB}")), "{read}");
    assert!(read.contains("token [redacted]"), "{read}");
    assert!(read.contains("mirror [redacted]"), "{read}");
    assert_no_secret("what the model was sent", &read, &[TOKEN, SHAPED]);
    assert!(
        editor
            .agent_text(&sid)
            .ends_with(&format!("The database is {DB}.")),
        "{}",
        editor.agent_text(&sid)
    );
}
