//! Small helpers shared by the suite's test files.

use crate::support::{FakeEditor, FakeModel, SpawnOptions, Workspace, full_capabilities};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Fast retries for every spawned agent (the default base is 500 ms).
pub const RETRY_BASE_MS: &str = "20";

/// The environment of [`FakeModel::agent_env`] plus a short retry backoff,
/// with `extra` applied on top (an empty value removes the variable).
pub fn env_for(model: &FakeModel, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = model.agent_env();
    env.push(("ACP_CODER_RETRY_BASE_MS".into(), RETRY_BASE_MS.into()));
    for (k, v) in extra {
        env.retain(|(ek, _)| ek != k);
        if !v.is_empty() {
            env.push(((*k).to_owned(), (*v).to_owned()));
        }
    }
    env
}

/// Spawns the agent against `model` with [`env_for`].
pub fn spawn(model: &FakeModel, extra: &[(&str, &str)]) -> FakeEditor {
    spawn_args(model, &[], extra)
}

/// Like [`spawn`] with command-line arguments.
pub fn spawn_args(model: &FakeModel, args: &[&str], extra: &[(&str, &str)]) -> FakeEditor {
    FakeEditor::spawn_with(SpawnOptions {
        args: args.iter().map(|s| (*s).to_owned()).collect(),
        envs: env_for(model, extra),
        ..SpawnOptions::default()
    })
}

/// Spawns with an explicit HOME (so a config file can be put there first).
pub fn spawn_in_home(model: &FakeModel, home: PathBuf, extra: &[(&str, &str)]) -> FakeEditor {
    FakeEditor::spawn_with(SpawnOptions {
        envs: env_for(model, extra),
        home: Some(home),
        ..SpawnOptions::default()
    })
}

/// Writes `$HOME/.config/acp-coder/config.toml`.
pub fn write_config(home: &std::path::Path, toml: &str) {
    let dir = home.join(".config/acp-coder");
    std::fs::create_dir_all(&dir).expect("config dir");
    std::fs::write(dir.join("config.toml"), toml).expect("write config");
}

/// The secrets an agent of [`spawn_with_secrets`] holds.
pub struct Secrets<'a> {
    /// In `MY_PROVIDER_KEY`, which the config names as `api_key_env`.
    pub key: &'a str,
    /// In `OPENAI_API_KEY`, unused.
    pub other_key: &'a str,
    /// A configured request header's value.
    pub header: &'a str,
}

/// An agent (HOME = `home`, full-auto) holding `secrets` everywhere they
/// can be configured, logging at trace level to `log`, with `extra_args`:
/// for tests that look for the secrets where they must not be.
pub fn spawn_with_secrets(
    model: &FakeModel,
    home: &Path,
    secrets: &Secrets<'_>,
    log: &Path,
    extra_args: &[String],
) -> FakeEditor {
    write_config(
        home,
        &format!(
            "api_key_env = \"MY_PROVIDER_KEY\"\ndefault_mode = \"full-auto\"\n\n[headers]\n\"X-Provider-Token\" = \"{}\"\n",
            secrets.header
        ),
    );
    let mut args = vec![
        "--log-file".to_owned(),
        log.display().to_string(),
        "--log-level".into(),
        "trace".into(),
    ];
    args.extend_from_slice(extra_args);
    FakeEditor::spawn_with(SpawnOptions {
        args,
        envs: env_for(
            model,
            &[
                ("MY_PROVIDER_KEY", secrets.key),
                ("OPENAI_API_KEY", secrets.other_key),
            ],
        ),
        home: Some(home.to_path_buf()),
        ..SpawnOptions::default()
    })
}

/// `session/new` with an MCP server (`docs`, `/bin/true`) whose
/// environment holds `secret`.
pub async fn session_with_secret_mcp_env(editor: &FakeEditor, cwd: &Path, secret: &str) -> String {
    let env = json!([{"name": "DOCS_TOKEN", "value": secret}]);
    let docs = json!([{"name": "docs", "command": "/bin/true", "args": [], "env": env}]);
    editor.new_session_with_servers(cwd, docs).await
}

/// Fails the test, quoting the lines, when `text` (`what` says where it
/// comes from) holds any of `secrets`.
#[track_caller]
pub fn assert_no_secret(what: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{secret} leaked into {what}:\n{}",
            text.lines()
                .filter(|l| l.contains(secret))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

/// Every file under `dir`, at any depth (none if `dir` is missing).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A spawned agent, initialized (full capabilities), with one session on a
/// fresh workspace.
pub struct Ready {
    pub editor: FakeEditor,
    pub ws: Workspace,
    pub sid: String,
}

pub async fn ready(model: &FakeModel) -> Ready {
    ready_with(model, &[], Workspace::new()).await
}

pub async fn ready_with(model: &FakeModel, extra: &[(&str, &str)], ws: Workspace) -> Ready {
    let editor = spawn(model, extra);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    Ready { editor, ws, sid }
}
