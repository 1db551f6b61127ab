//! Settings that shape a turn: the config file's `max_turn_requests`, stop
//! reasons, `AGENTS.md` in the system prompt, model discovery, flags.

use super::common::{env_for, ready, ready_with, spawn, spawn_args, spawn_in_home, write_config};
use crate::support::{FakeModel, Reply, Workspace, full_capabilities};
use serde_json::json;

fn system_prompt(model: &FakeModel, request: usize) -> String {
    let req = &model.chat_requests()[request];
    let first = &req.messages()[0];
    assert_eq!(first["role"], "system", "{first}");
    first["content"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn max_turn_requests_from_the_config_file_stops_a_tool_loop() {
    let model = FakeModel::start().await;
    let plan =
        |n: u32| json!({"entries": [{"content": format!("step {n}"), "status": "in_progress"}]});
    // A model that never stops calling tools.
    for n in 0..3 {
        model.push(Reply::tool_call(
            &format!("call_{n}"),
            "update_plan",
            plan(n),
        ));
    }
    let home = tempfile::tempdir().expect("home");
    write_config(home.path(), "max_turn_requests = 2\n");
    let editor = spawn_in_home(&model, home.path().to_path_buf(), &[]);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    let result = editor.prompt(&sid, "loop forever").await;
    assert_eq!(result["stopReason"], "max_turn_requests");
    assert_eq!(model.chat_requests().len(), 2);
    assert_eq!(
        model.pending_replies(),
        1,
        "the third reply was never asked for"
    );
    assert_eq!(editor.updates_of_kind(&sid, "plan").len(), 2);
}

#[tokio::test]
async fn config_file_given_with_the_flag_is_used() {
    let model = FakeModel::start().await;
    model.push(Reply::text("from config"));
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("custom.toml");
    std::fs::write(
        &path,
        format!(
            "model = \"model-from-file\"\nbase_url = \"{}\"\ndefault_mode = \"accept-edits\"\n",
            model.base_url()
        ),
    )
    .expect("write config");
    let editor = spawn_args(
        &model,
        &["--config", path.to_str().expect("utf-8")],
        &[
            ("OPENAI_BASE_URL", ""),
            ("ACP_CODER_MODEL", ""),
            ("OPENAI_API_KEY", ""),
        ],
    );
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let session = editor.new_session_full(ws.path()).await;
    assert_eq!(session["modes"]["currentModeId"], "accept-edits");
    let sid = session["sessionId"].as_str().expect("sid");
    assert_eq!(editor.prompt(sid, "hi").await["stopReason"], "end_turn");
    assert_eq!(model.chat_requests()[0].body["model"], "model-from-file");
}

#[tokio::test]
async fn flags_override_the_environment() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let editor = spawn_args(
        &model,
        &["--model", "flag-model", "--base-url", &model.base_url()],
        &[
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
            ("ACP_CODER_MODEL", "env-model"),
        ],
    );
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    assert_eq!(editor.prompt(&sid, "hi").await["stopReason"], "end_turn");
    assert_eq!(model.chat_requests()[0].body["model"], "flag-model");
}

#[tokio::test]
async fn length_finish_is_max_tokens() {
    let model = FakeModel::start().await;
    model.push(Reply::text_with_finish("truncated answ", "length"));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "write a lot").await;
    assert_eq!(result["stopReason"], "max_tokens");
    assert_eq!(r.editor.agent_text(&r.sid), "truncated answ");
}

#[tokio::test]
async fn agents_md_is_appended_to_the_system_prompt() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let ws = Workspace::builder()
        .file("AGENTS.md", "Always use tabs. MARKER-ROOT-7731\n")
        .file(
            "crates/core/AGENTS.md",
            "Core crate rules. MARKER-CORE-4410\n",
        )
        .file("crates/core/src/lib.rs", "\n")
        .git()
        .build();
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.join("crates/core")).await;
    editor.prompt(&sid, "hi").await;
    let system = system_prompt(&model, 0);
    let root = system
        .find("MARKER-ROOT-7731")
        .expect("root AGENTS.md included");
    let core = system
        .find("MARKER-CORE-4410")
        .expect("cwd AGENTS.md included");
    assert!(root < core, "outermost first, most specific last");
    assert!(
        system.contains(&ws.join("crates/core").display().to_string()),
        "the working directory is named"
    );
}

#[tokio::test]
async fn agents_md_outside_a_repository_is_read_from_cwd_only() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let ws = Workspace::builder()
        .file("AGENTS.md", "PARENT-NOT-A-REPO-1234\n")
        .file("sub/AGENTS.md", "CWD-RULES-5678\n")
        .build();
    let r = ready_with(&model, &[], ws).await;
    // The ready session is at the workspace root; make one in sub/ too.
    let sub = r.editor.new_session(r.ws.join("sub")).await;
    r.editor.prompt(&sub, "hi").await;
    let system = system_prompt(&model, 0);
    assert!(system.contains("CWD-RULES-5678"));
    assert!(!system.contains("PARENT-NOT-A-REPO-1234"));
}

#[tokio::test]
async fn without_a_configured_model_the_first_listed_is_used() {
    let model = FakeModel::start().await;
    model.set_models(&["listed-first", "listed-second"]);
    model.push(Reply::text("one"));
    model.push(Reply::text("two"));
    let r = ready_with(&model, &[("ACP_CODER_MODEL", "")], Workspace::new()).await;
    assert!(
        !env_for(&model, &[("ACP_CODER_MODEL", "")])
            .iter()
            .any(|(k, _)| k == "ACP_CODER_MODEL")
    );
    r.editor.prompt(&r.sid, "a").await;
    r.editor.prompt(&r.sid, "b").await;
    let requests = model.requests();
    let listings = requests
        .iter()
        .filter(|q| q.method == "GET" && q.path == "/v1/models")
        .count();
    assert_eq!(listings, 1, "the listing is asked once and remembered");
    let chats = model.chat_requests();
    assert_eq!(chats.len(), 2);
    for c in &chats {
        assert_eq!(c.body["model"], "listed-first");
    }
}

#[tokio::test]
async fn without_a_model_and_an_empty_listing_the_prompt_says_what_to_set() {
    let model = FakeModel::start().await;
    model.set_models(&[]);
    let r = ready_with(&model, &[("ACP_CODER_MODEL", "")], Workspace::new()).await;
    let err = r.editor.prompt_error(&r.sid, "a").await;
    assert!(err.message.contains("ACP_CODER_MODEL"), "{err}");
    assert!(model.chat_requests().is_empty());
}

#[tokio::test]
async fn a_broken_config_file_is_reported_on_session_new_and_fixed_by_authenticate() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().expect("home");
    write_config(home.path(), "modle = \"typo\"\n");
    let editor = spawn_in_home(&model, home.path().to_path_buf(), &[]);
    // The agent stays up: the handshake works.
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let err = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .expect_err("broken config");
    assert!(
        err.message.contains("config.toml") && err.message.contains("modle"),
        "names the file and the key: {err}"
    );
    // Warnings also go to stderr (the editor's log), naming the problem.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !editor.stderr().contains("modle") {
        assert!(
            std::time::Instant::now() < deadline,
            "no warning on stderr: {}",
            editor.stderr()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    write_config(home.path(), "max_turn_requests = 3\n");
    editor
        .request("authenticate", json!({"methodId": "openai-api-key"}))
        .await
        .expect("authenticate reloads the fixed file");
    editor.new_session(ws.path()).await;
}

#[test]
fn help_and_version_describe_the_binary() {
    let run = |arg: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_acp-coder"))
            .arg(arg)
            .output()
            .expect("run acp-coder");
        assert!(out.status.success(), "{arg}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let version = run("--version");
    assert_eq!(
        version.trim(),
        format!("acp-coder {}", env!("CARGO_PKG_VERSION"))
    );
    let help = run("--help");
    for flag in [
        "--model",
        "--base-url",
        "--config",
        "--log-file",
        "--log-level",
        "--trace",
    ] {
        assert!(help.contains(flag), "{flag} missing from --help:\n{help}");
    }
}

/// Issue 44: a mistake in the user's file is invalid params (never
/// "Internal error"), at a line and column, with the key it likely meant.
#[tokio::test]
async fn a_config_mistake_is_invalid_params_with_line_column_and_did_you_mean() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().expect("home");
    let ws = Workspace::new();
    for (toml, wanted) in [
        (
            "model = \"m\"\ndefault_mod = \"ask\"\n",
            ["line 2, column 1", "did you mean `default_mode`?"],
        ),
        (
            "model = \"m\"\n\ndefault_mode = \"full_auto\"\n",
            ["line 3, column 16", "did you mean `full-auto`?"],
        ),
    ] {
        write_config(home.path(), toml);
        let editor = spawn_in_home(&model, home.path().to_path_buf(), &[]);
        editor.initialize(full_capabilities()).await;
        let err = editor
            .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
            .await
            .expect_err("broken config");
        assert_eq!(err.code, -32602, "{err}");
        assert!(!err.message.contains("Internal error"), "{err}");
        for w in wanted {
            assert!(err.message.contains(w), "{w:?} missing: {err}");
        }
        assert!(
            !err.message.contains("`subagent_max_running`"),
            "a close key is named alone, not the list of every key: {err}"
        );
    }
}

/// Issue 44: a base URL without `/v1` that answers 404 says to try `/v1`,
/// as invalid params, naming where the URL came from.
#[tokio::test]
async fn a_404_from_the_endpoint_suggests_v1() {
    let model = FakeModel::start().await;
    let root = model.base_url().trim_end_matches("/v1").to_owned();
    let r = ready_with(&model, &[("OPENAI_BASE_URL", &root)], Workspace::new()).await;
    let err = r.editor.prompt_error(&r.sid, "hi").await;
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("HTTP 404"), "{err}");
    assert!(err.message.contains(&format!("try {root}/v1")), "{err}");
    assert!(
        err.message
            .contains("the base URL comes from the OPENAI_BASE_URL environment variable"),
        "{err}"
    );
}

/// Issue 44: an auth error names the source that won: here the editor's
/// environment over the saved login's base URL.
#[tokio::test]
async fn an_auth_error_says_the_environment_beat_the_saved_login() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().expect("home");
    write_config(
        home.path(),
        &format!("base_url = \"{}\"\nmodel = \"m\"\n", model.base_url()),
    );
    let editor = spawn_in_home(
        &model,
        home.path().to_path_buf(),
        &[
            ("OPENAI_BASE_URL", "https://api.invalid/v1"),
            ("OPENAI_API_KEY", ""),
        ],
    );
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let err = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .expect_err("no key for the remote endpoint");
    assert_eq!(err.code, -32000, "{err}");
    for part in [
        "no API key for https://api.invalid/v1",
        "the base URL comes from the OPENAI_BASE_URL environment variable",
        &format!("wins over base_url = \"{}\"", model.base_url()),
    ] {
        assert!(err.message.contains(part), "{part:?} missing: {err}");
    }
}
