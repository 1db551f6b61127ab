//! OpenHands' `ACPAgent` (its Python SDK, no Docker) drives acp-coder over
//! stdio through a tool-using turn against the scripted model.
//!
//! `openhands-sdk` needs Python 3.12 or newer. scripts/test.sh installs it
//! where such a Python exists and sets ACP_CODER_OPENHANDS_PYTHON to it;
//! where none exists it sets the variable to `skip: WHY`, and this test says
//! so and passes without running.

use crate::support::{FakeModel, Reply, Workspace};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

#[tokio::test]
#[ignore = "needs openhands-sdk (ACP_CODER_OPENHANDS_PYTHON; scripts/test.sh installs it)"]
async fn openhands_acp_agent_runs_a_tool_using_turn() {
    let var = "ACP_CODER_OPENHANDS_PYTHON";
    let python = match std::env::var(var) {
        Ok(v) if v.starts_with("skip:") => {
            eprintln!("SKIPPED openhands_acp_agent_runs_a_tool_using_turn: {v}");
            return;
        }
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set; install OpenHands with `python3.12 -m venv DIR && DIR/bin/pip install openhands-sdk==1.58.2` and set {var}=DIR/bin/python, or set it to `skip: WHY` (scripts/test.sh does one or the other)"
        ),
    };
    let model = FakeModel::with_replies([
        Reply::tool_call(
            "call_1",
            "write_file",
            json!({"path": "hello.txt", "content": "hello from OpenHands\n"}),
        ),
        Reply::text("Created hello.txt."),
    ])
    .await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openhands/smoke.py");
    let mut cmd = tokio::process::Command::new(&python);
    cmd.arg(&script)
        .arg(env!("CARGO_BIN_EXE_acp-coder"))
        .arg(ws.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join("config"))
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("XDG_STATE_HOME", home.path().join("state"))
        .kill_on_drop(true);
    for (k, v) in model.agent_env() {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(240), cmd.output())
        .await
        .expect("the OpenHands conversation did not finish within 240 s")
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(r#""ok": true"#),
        "--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(ws.read("hello.txt"), "hello from OpenHands\n");
    // The prompt reached the model through acp-coder.
    let first = &model.chat_requests()[0];
    assert!(
        first.last_message().unwrap()["content"]
            .to_string()
            .contains("hello.txt"),
        "{:?}",
        first.last_message()
    );
}
