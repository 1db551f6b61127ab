//! Security guarantees (SECURITY.md): nothing outside the session roots is
//! written, deleted or run without the user's explicit answer, in every mode;
//! secrets never reach logs, traces, stderr or protocol frames; commands get
//! the agent's environment minus its secrets; titles and permission prompts
//! cannot be spoofed by control characters in model output; session files
//! are private.

use super::common::{
    Secrets, assert_no_secret, files_under, session_with_secret_mcp_env, spawn_args,
    spawn_with_secrets,
};
use super::faults::{Agent, fs_only, start};
use super::tools_common::write_call;
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, chunk, full_capabilities,
};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The tool results the model got in its last request, in order.
fn tool_results(model: &FakeModel) -> Vec<String> {
    model
        .chat_requests()
        .last()
        .map(|r| {
            r.messages()
                .iter()
                .filter(|m| m["role"] == "tool")
                .filter_map(|m| m["content"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The model has the agent run `env`: what the command saw.
async fn env_of_a_command(editor: &FakeEditor, model: &FakeModel, sid: &str) -> String {
    model.push(Reply::tool_call(
        "call_env",
        "run_command",
        json!({"command": "env"}),
    ));
    model.push(Reply::text("ok"));
    assert_eq!(editor.prompt(sid, "env").await["stopReason"], "end_turn");
    tool_results(model).join("\n")
}

/// A directory outside the workspace with a file to lose, and a symlink to
/// it from inside the workspace.
struct Outside {
    dir: tempfile::TempDir,
    victim: PathBuf,
    /// Components of the workspace path (`..` steps up to `/`).
    ws_depth: usize,
}

fn outside_of(ws: &Workspace) -> Outside {
    // Outside the temp directory too: sandboxed commands may write there.
    let dir = tempfile::Builder::new()
        .prefix("acp-coder-outside-")
        .tempdir_in(crate::support::outside_temp_base())
        .unwrap();
    let victim = dunce::canonicalize(dir.path()).unwrap().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    acp_coder::platform::fs::symlink(dir.path(), ws.join("link")).unwrap();
    let ws_depth = ws.path().components().count() - 1;
    Outside {
        dir,
        victim,
        ws_depth,
    }
}

/// Every way out of the roots, as tool calls: `..`, an absolute path, a
/// symlink, `~`, for writes, deletes (commands) and a command's cwd.
fn escapes(out: &Outside) -> Vec<(String, &'static str, Value)> {
    let victim = out.victim.display().to_string();
    let outside_dir = out.dir.path().display().to_string();
    // The outside directory, reached from the workspace through `..`.
    let ups = "../".repeat(out.ws_depth);
    let up = format!("{ups}{}/up.txt", outside_dir.trim_start_matches('/'));
    vec![
        (
            "w_dotdot".into(),
            "write_file",
            json!({"path": up, "content": "x"}),
        ),
        (
            "w_abs".into(),
            "write_file",
            json!({"path": format!("{outside_dir}/abs.txt"), "content": "x"}),
        ),
        (
            "w_link".into(),
            "write_file",
            json!({"path": "link/via-link.txt", "content": "x"}),
        ),
        (
            "w_tilde".into(),
            "write_file",
            json!({"path": "~/home.txt", "content": "x"}),
        ),
        (
            "e_link".into(),
            "edit_file",
            json!({"path": "link/victim.txt", "old_string": "precious", "new_string": "gone"}),
        ),
        (
            "rm_abs".into(),
            "run_command",
            json!({"command": format!("rm -f {victim}")}),
        ),
        (
            "rm_link".into(),
            "run_command",
            json!({"command": "rm -f link/victim.txt"}),
        ),
        (
            "rm_dotdot".into(),
            "run_command",
            json!({"command": "cd src && rm -f ../link/victim.txt"}),
        ),
        (
            "rm_tilde".into(),
            "run_command",
            json!({"command": "rm -f ~/keep.txt"}),
        ),
        (
            "cwd_out".into(),
            "run_command",
            json!({"command": "rm -f victim.txt", "cwd": outside_dir}),
        ),
    ]
}

/// Runs every escape in `mode`, rejecting whatever asks; returns the agent.
async fn try_escapes(mode: &str) -> (Agent, Outside, FakeModel, usize) {
    let model = FakeModel::start().await;
    let a = start(&model, "", fs_only(), &[]).await;
    std::fs::create_dir_all(a.ws.join("src")).unwrap();
    let out = outside_of(&a.ws);
    std::fs::write(a.home.path().join("keep.txt"), "mine\n").unwrap();
    a.editor.set_mode(&a.sid, mode).await;
    let calls = escapes(&out);
    let n = calls.len();
    model.push(Reply::tool_calls(
        calls
            .iter()
            .map(|(id, tool, args)| (id.as_str(), *tool, args.clone())),
    ));
    model.push(Reply::text("done"));
    a.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let done = a.editor.prompt(&a.sid, "escape").await;
    assert_eq!(done["stopReason"], "end_turn");
    (a, out, model, n)
}

fn assert_nothing_escaped(a: &Agent, out: &Outside) {
    assert_eq!(std::fs::read_to_string(&out.victim).unwrap(), "precious\n");
    let left: Vec<String> = std::fs::read_dir(out.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["victim.txt"], "written outside: {left:?}");
    assert_eq!(
        std::fs::read_to_string(a.home.path().join("keep.txt")).unwrap(),
        "mine\n"
    );
    assert!(!a.home.path().join("home.txt").exists());
    assert!(a.editor.writes().is_empty(), "{:?}", a.editor.writes());
}

#[tokio::test]
async fn leaving_the_roots_asks_even_in_full_auto() {
    let (a, out, model, n) = try_escapes("full-auto").await;
    let asked = a.editor.asked_ids();
    let ids: Vec<String> = escapes(&out).into_iter().map(|(id, _, _)| id).collect();
    assert_eq!(asked, ids, "every escape asks, once each");
    for p in a.editor.permission_requests() {
        let kinds: Vec<&str> = p.params["options"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert!(kinds.contains(&"allow_once") && kinds.contains(&"reject_once"));
    }
    let results = tool_results(&model);
    assert_eq!(results.len(), n);
    for r in &results {
        // Commands that ran in the sandbox (issue 14) failed there, and the
        // offer to run them without it was rejected.
        assert!(
            r.contains("the user rejected this call")
                || r.contains("declined to run it without the sandbox"),
            "{r}"
        );
    }
    assert_nothing_escaped(&a, &out);
}

#[tokio::test]
async fn leaving_the_roots_asks_in_accept_edits_too() {
    let (a, out, _model, n) = try_escapes("accept-edits").await;
    assert_eq!(a.editor.permission_requests().len(), n);
    assert_nothing_escaped(&a, &out);
}

#[tokio::test]
async fn leaving_the_roots_is_refused_in_read_only_without_asking() {
    let (a, out, model, n) = try_escapes("read-only").await;
    assert!(a.editor.permission_requests().is_empty());
    let results = tool_results(&model);
    assert_eq!(results.len(), n);
    for r in &results {
        assert!(r.contains("not allowed") && r.contains("Read only"), "{r}");
    }
    assert_nothing_escaped(&a, &out);
}

#[tokio::test]
async fn inside_the_roots_full_auto_does_not_ask() {
    let model = FakeModel::start().await;
    let a = start(&model, "default_mode = \"full-auto\"\n", fs_only(), &[]).await;
    std::fs::create_dir_all(a.ws.join("src")).unwrap();
    model.push(Reply::tool_calls([
        write_call("w", "src/../new.txt", "hi\n"),
        (
            "c",
            "run_command",
            json!({"command": "cat new.txt src/../a.txt > both.txt 2>/dev/null"}),
        ),
    ]));
    model.push(Reply::text("done"));
    assert_eq!(
        a.editor.prompt(&a.sid, "go").await["stopReason"],
        "end_turn"
    );
    assert!(a.editor.permission_requests().is_empty());
    assert_eq!(a.ws.read("both.txt"), "hi\nalpha\n");
}

// ------------------------------------------------------------- secrets

const KEY: &str = "sk-live-SECRETKEY0123456789";
const OTHER_KEY: &str = "sk-openai-UNUSEDSECRET9876";
const HEADER_SECRET: &str = "hdr-SECRET-7f3a9c1e";
const MCP_SECRET: &str = "mcp-SECRET-51c2d8aa";

#[tokio::test]
async fn secrets_never_reach_frames_stderr_logs_or_errors() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("trace.log");
    let secrets = Secrets {
        key: KEY,
        other_key: OTHER_KEY,
        header: HEADER_SECRET,
    };
    let editor = spawn_with_secrets(&model, home.path(), &secrets, &log, &[]);
    let ws = Workspace::builder().file("a.txt", "alpha\n").build();
    editor.initialize(fs_only()).await;
    // An MCP server whose environment holds a secret.
    let sid = session_with_secret_mcp_env(&editor, ws.path(), MCP_SECRET).await;

    // A server that echoes credentials back in every kind of error.
    let echo = format!("Incorrect API key provided: {KEY}; token {HEADER_SECRET}");
    model.push(Reply::error(401, &echo));
    let err = editor.prompt_error(&sid, "hi").await;
    assert_eq!(err.code, -32000, "{err}");
    assert!(
        err.message.contains("MY_PROVIDER_KEY"),
        "names the variable: {err}"
    );
    model.push(Reply::stream([chunk::role()]).raw(&format!(
        "data: {{\"error\": {{\"message\": \"{echo}\"}}}}\n\n"
    )));
    editor.prompt_error(&sid, "again").await;
    model
        .push(Reply::stream([chunk::role(), chunk::text("x")]).raw(&format!("data: {{{echo}\n\n")));
    editor.prompt_error(&sid, "and again").await;
    // A command printing its environment, and the MCP status.
    let env_output = env_of_a_command(&editor, &model, &sid).await;
    assert!(env_output.contains("PATH="), "{env_output}");
    assert_eq!(editor.prompt(&sid, "/mcp").await["stopReason"], "end_turn");

    // The secrets were really in use (so their absence below means something).
    let sent = model.chat_requests();
    let first = &sent[0];
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(first.header("x-provider-token"), Some(HEADER_SECRET));

    let mut editor = editor;
    editor.close_stdin().await;
    editor.wait_exit(std::time::Duration::from_secs(5)).await;
    let frames = editor.raw_lines().join("\n");
    let stderr = editor.stderr();
    let log_text = std::fs::read_to_string(&log).expect("the log file");
    assert!(
        log_text.contains("TRACE") || log_text.contains("DEBUG"),
        "trace level is on"
    );
    let stored: String = files_under(&home.path().join(".local"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect();
    for (what, text) in [
        ("stdout frames", &frames),
        ("stderr", &stderr),
        ("the trace log", &log_text),
        ("stored sessions and logs", &stored),
        ("the command's output", &env_output),
    ] {
        assert_no_secret(what, text, &[KEY, OTHER_KEY, HEADER_SECRET, MCP_SECRET]);
    }
    assert!(!env_output.contains("MY_PROVIDER_KEY=") && !env_output.contains("OPENAI_API_KEY="));
}

#[tokio::test]
async fn commands_get_the_agent_environment_minus_its_secrets() {
    let model = FakeModel::start().await;
    let editor = spawn_args(
        &model,
        &[],
        &[
            ("OPENAI_API_KEY", OTHER_KEY),
            ("SOME_TOOL_SETTING", "visible-to-commands"),
        ],
    );
    let ws = Workspace::new();
    editor.initialize(fs_only()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.set_mode(&sid, "full-auto").await;
    let output = env_of_a_command(&editor, &model, &sid).await;
    assert!(
        output.contains("SOME_TOOL_SETTING=visible-to-commands"),
        "{output}"
    );
    assert!(output.contains("PAGER=cat") && output.contains("GIT_TERMINAL_PROMPT=0"));
    assert!(!output.contains("OPENAI_API_KEY"), "{output}");
    assert!(!output.contains(OTHER_KEY));
}

#[tokio::test]
async fn editor_terminals_are_given_no_agent_environment() {
    let model = FakeModel::start().await;
    let editor = spawn_args(&model, &[], &[("OPENAI_API_KEY", OTHER_KEY)]);
    let ws = Workspace::new();
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.push_permission(PermissionDecision::AllowOnce);
    model.push(Reply::tool_call(
        "call_t",
        "run_command",
        json!({"command": "true"}),
    ));
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "run").await;
    let create = editor
        .terminal_calls()
        .into_iter()
        .find(|c| c.method == "terminal/create")
        .expect("terminal/create");
    assert!(
        create.params.get("env").is_none_or(|e| e == &json!([])),
        "{}",
        create.params
    );
    assert!(!create.params.to_string().contains(OTHER_KEY));
}

// ------------------------------------------------------------- spoofing

fn clean(s: &str) -> bool {
    !s.chars()
        .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c))
}

#[tokio::test]
async fn titles_and_permission_prompts_cannot_be_spoofed() {
    let model = FakeModel::start().await;
    let a = start(&model, "", fs_only(), &[]).await;
    let command = "echo harmless\u{1b}[2K\r\nrm -rf ./build # \u{1b}]0;innocent\u{7}\u{202e}";
    let path = "notes\u{1b}[31m.txt\r\nREADME.md";
    model.push(Reply::tool_calls([
        ("call_cmd", "run_command", json!({"command": command})),
        write_call("call_path", path, "x"),
        ("call_bad", "evil\u{1b}[2K\rtool", json!({})),
    ]));
    model.push(Reply::text("done"));
    a.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    assert_eq!(
        a.editor.prompt(&a.sid, "go").await["stopReason"],
        "end_turn"
    );

    let mut titles: Vec<String> = a
        .editor
        .updates_for(&a.sid)
        .iter()
        .filter_map(|u| u["title"].as_str().map(str::to_owned))
        .collect();
    let permissions = a.editor.permission_requests();
    assert_eq!(permissions.len(), 2);
    for p in &permissions {
        titles.push(p.params["toolCall"]["title"].as_str().unwrap().to_owned());
        for o in p.params["options"].as_array().unwrap() {
            titles.push(o["name"].as_str().unwrap().to_owned());
        }
    }
    assert!(titles.len() >= 7, "{titles:?}");
    for t in &titles {
        assert!(clean(t), "a title carries control characters: {t:?}");
    }
    assert!(
        titles
            .iter()
            .any(|t| t.contains("echo harmless rm -rf ./build"))
    );
    // The command itself is shown whole for review.
    let shown = permissions[0].params["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(shown.contains(command), "{shown:?}");
    assert!(!a.ws.exists("build"));
}

/// An outside review: ``ls `touch p4` `` was titled `ls 'touch p4'`, a
/// harmless literal in a shell, while the command substitutes. Titles now
/// keep backticks, in a longer code span.
#[tokio::test]
async fn titles_show_backticks_as_they_are() {
    let model = FakeModel::start().await;
    let a = start(&model, "", fs_only(), &[]).await;
    model.push(Reply::tool_calls([(
        "call_cmd",
        "run_command",
        json!({"command": "ls `touch p4`"}),
    )]));
    model.push(Reply::text("done"));
    a.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    a.editor.prompt(&a.sid, "go").await;
    let permissions = a.editor.permission_requests();
    let title = permissions[0].params["toolCall"]["title"].as_str().unwrap();
    assert!(title.contains("`` ls `touch p4` ``"), "{title:?}");
    assert!(!title.contains('\''), "{title:?}");
    assert!(!a.ws.exists("p4"));
}

// ------------------------------------------------------------- storage

#[tokio::test]
async fn session_files_are_private() {
    use crate::support::mode_of as mode;
    let model = FakeModel::start().await;
    let a = start(&model, "", full_capabilities(), &[]).await;
    model.push(Reply::text("hi"));
    a.editor.prompt(&a.sid, "hello").await;
    let dir = a.home.path().join(".local/share/acp-coder/sessions");
    assert!(mode(&dir).is_none_or(|m| m == 0o700));
    for f in files_under(&dir) {
        assert!(mode(&f).is_none_or(|m| m == 0o600), "{}", f.display());
    }
}
