//! Conformance as a third party sees it: the ACP linter `acplint` (PyPI,
//! 0.1.0) runs its whole suite against the real binary and a fake model.
//!
//! Every check must pass, except the ones where acplint 0.1.0 itself departs
//! from the official ACP schema; those are listed in [`TOLERATED`] by check
//! id with the reason, and must fail the way that reason predicts — any
//! other failure fails this test. `.ci/run` installs acplint; without it the
//! test is skipped loudly, unless `CI` is set, where it fails.

use crate::support::{FakeModel, Reply, Workspace};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

/// A check acplint 0.1.0 gets wrong, and why.
struct Tolerated {
    /// acplint's check id (`name` in its JSON report).
    id: &'static str,
    /// Text every part (`; `-separated) of its failure message must contain,
    /// so a different failure of the same check is not excused.
    message: &'static str,
    why: &'static str,
}

const VERSION_IS_A_NUMBER: &str = "acplint expects protocolVersion as the string \"1\"; the ACP schema's ProtocolVersion is an integer (uint16) and the agent answers 1";
const NO_LABEL: &str = "acplint requires a `label` on each SessionConfigOption; the ACP schema has no such field (the option's text is `name`)";
const CONTENT_NOT_PROMPT: &str = "acplint sends session/prompt with `content` instead of the required `prompt`, which the agent rightly refuses with -32602 (so no turn runs), and it looks for camelCase `agentMessageChunk` where the schema's discriminator is `agent_message_chunk`";

const TOLERATED: &[Tolerated] = &[
    Tolerated {
        id: "initialize_v1",
        message: "protocolVersion: Input should be '1' (got 1)",
        why: VERSION_IS_A_NUMBER,
    },
    Tolerated {
        id: "protocol_version_returned",
        message: "Expected protocolVersion='1', got '1'",
        why: VERSION_IS_A_NUMBER,
    },
    Tolerated {
        id: "schema_initialize",
        message: "protocolVersion: Input should be '1' (got 1)",
        why: VERSION_IS_A_NUMBER,
    },
    Tolerated {
        id: "new_session",
        message: "label: Field required",
        why: NO_LABEL,
    },
    Tolerated {
        id: "schema_session_new",
        message: "label: Field required",
        why: NO_LABEL,
    },
    Tolerated {
        id: "agent_message_chunk_received",
        message: "No agentMessageChunk updates received",
        why: CONTENT_NOT_PROMPT,
    },
    Tolerated {
        id: "prompt_stop_reason",
        message: "No stopReason in prompt response",
        why: CONTENT_NOT_PROMPT,
    },
];

/// The Python interpreter that has acplint (ACP_CODER_ACPLINT_PYTHON, set by
/// scripts/test.sh, else `python3`), and acplint's version.
fn find_acplint() -> Option<(String, String)> {
    let python = std::env::var("ACP_CODER_ACPLINT_PYTHON")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "python3".to_owned());
    let out = std::process::Command::new(python)
        .args([
            "-c",
            "import sys, acplint; print(acplint.__version__); print(sys.executable)",
        ])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    let version = lines.next()?.trim().to_owned();
    let python = lines.next()?.trim().to_owned();
    Some((python, version))
}

#[tokio::test]
#[ignore = "needs acplint from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn acplint_passes_except_its_known_departures() {
    let Some((python, version)) = find_acplint() else {
        panic!(
            "acplint is not installed: `python3 -m venv DIR && DIR/bin/pip install acplint==0.1.0` and set ACP_CODER_ACPLINT_PYTHON=DIR/bin/python (scripts/test.sh does)"
        );
    };
    assert_eq!(
        version, "0.1.0",
        "the tolerated departures are those of acplint 0.1.0; found {version}"
    );
    let model = FakeModel::start().await;
    model.set_responder(|_| Some(Reply::text("hello").with_usage(12, 3)));
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder().file("README.md", "# demo\n").build();
    let report_path = home.path().join("acplint.json");
    let mut cmd = tokio::process::Command::new(&python);
    cmd.args([
        "-m",
        "acplint.cli",
        "--agent",
        env!("CARGO_BIN_EXE_acp-coder"),
    ])
    .arg("--cwd")
    .arg(ws.path())
    // Authentication last: acplint 0.1.0 cannot read our initialize response
    // (VERSION_IS_A_NUMBER), so it knows no auth method, never authenticates,
    // and its authentication checks end with `logout`, after which this agent
    // answers auth_required until `authenticate` (issue 17 item 2). Run first,
    // as acplint's default order has it, that would fail every later check.
    .arg("--categories")
    .args([
        "initialization",
        "session_lifecycle",
        "streaming",
        "tool_calls",
        "permissions",
        "file_operations",
        "terminals",
        "plans",
        "session_modes",
        "config_options",
        "cancel",
        "stress",
        "schema_validation",
        "authentication",
    ])
    .args(["--output", "json", "--output-file"])
    .arg(&report_path)
    .args(["--timeout", "20"])
    .env_clear()
    .env("PATH", std::env::var_os("PATH").unwrap_or_default())
    .env("HOME", home.path())
    .env("XDG_CONFIG_HOME", home.path().join(".config"))
    .env("XDG_DATA_HOME", home.path().join(".local/share"))
    .env("XDG_STATE_HOME", home.path().join(".local/state"))
    .env("ACP_CODER_RETRY_BASE_MS", "20")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    for (k, v) in model.agent_env() {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .expect("acplint finished within 10 minutes")
        .expect("run acplint");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(&report_path)
            .unwrap_or_else(|e| panic!("no acplint report ({e}); stderr:\n{stderr}")),
    )
    .expect("acplint's report is JSON");
    let results = report["results"].as_array().expect("results").clone();
    assert!(
        results.len() > 20,
        "acplint ran only {} checks",
        results.len()
    );
    let mut failures = Vec::new();
    let mut excused = Vec::new();
    for r in &results {
        let id = r["name"].as_str().unwrap_or("?");
        let status = r["status"].as_str().unwrap_or("?").to_ascii_lowercase();
        if matches!(status.as_str(), "pass" | "skip") {
            continue;
        }
        let message = r["message"].as_str().unwrap_or("");
        let explained = |t: &Tolerated| message.split("; ").all(|part| part.contains(t.message));
        match TOLERATED.iter().find(|t| t.id == id) {
            Some(t) if explained(t) => excused.push(format!("{id}: {}", t.why)),
            _ => failures.push(format!(
                "{id} [{}] {status}: {message}",
                r["category"].as_str().unwrap_or("?")
            )),
        }
    }
    let passed = results
        .iter()
        .filter(|r| {
            r["status"]
                .as_str()
                .is_some_and(|s| s.eq_ignore_ascii_case("pass"))
        })
        .count();
    eprintln!(
        "acplint {version}: {passed} of {} checks passed; {} tolerated departures:\n  {}",
        results.len(),
        excused.len(),
        excused.join("\n  ")
    );
    // The `content` departure means no prompt reaches the model; if one ever
    // did, the prompt checks would be judged for real.
    assert_eq!(
        model.chat_requests().len(),
        0,
        "acplint's prompts now reach the model: drop the CONTENT_NOT_PROMPT tolerances"
    );
    assert!(
        failures.is_empty(),
        "acplint failures that are not known departures of acplint itself:\n{}\n\nfull report:\n{}",
        failures.join("\n"),
        serde_json::to_string_pretty(&report).unwrap_or_default()
    );
}
