//! Small helpers shared by the suite's test files.

use crate::support::{FakeEditor, FakeModel, SpawnOptions, Workspace, full_capabilities};
use std::path::PathBuf;

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
