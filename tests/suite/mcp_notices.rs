//! What the user is told about a session's MCP servers, as session notices
//! (schema 1.20 `notice`) for a client that opted into `session.notices`:
//! a server that failed to start, one that is still starting and then came
//! (late) ready, one that stopped unexpectedly. Notices go out outside
//! turns too once the client knows the session; none of it is agent text.
//! Without the opt-in the same events stay agent text (tests/suite/mcp.rs,
//! mcp_lifecycle.rs), and no notice is sent.
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp_common::*;
use crate::support::{FakeEditor, FakeModel, Reply, Workspace, full_capabilities};

async fn agent(model: &FakeModel, notices: bool) -> (FakeEditor, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "default_mode = \"full-auto\"\nmcp_startup_timeout_secs = 2\n",
    )
    .unwrap();
    let editor = FakeEditor::spawn(
        &["--config", &path.display().to_string()],
        model.agent_env(),
    );
    let mut caps = full_capabilities();
    if notices {
        caps["session"] = json!({"notices": {}});
    }
    editor.initialize(caps).await;
    (editor, dir)
}

/// The session's notices as (severity, title, description).
fn notices(editor: &FakeEditor, sid: &str) -> Vec<(String, String, String)> {
    editor
        .updates_of_kind(sid, "notice")
        .iter()
        .map(|n| {
            let s = |k: &str| n[k].as_str().unwrap_or_default().to_owned();
            (s("severity"), s("title"), s("description"))
        })
        .collect()
}

/// Waits (no turn runs) until a notice's title contains `needle`.
async fn notice_with(editor: &FakeEditor, sid: &str, needle: &str) -> (String, String, String) {
    let began = Instant::now();
    loop {
        if let Some(n) = notices(editor, sid)
            .into_iter()
            .find(|n| n.1.contains(needle))
        {
            return n;
        }
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "no notice {needle:?}: {:?}",
            notices(editor, sid)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn with_the_opt_in_mcp_servers_failing_and_coming_ready_are_notices() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = agent(&model, true).await;
    let servers: Value = json!([
        {"name": "missing", "command": "/nonexistent/mcp-server", "args": [], "env": []},
        stdio("slow", &["--delay-ms", "4000"]),
        stdio("c", &[]),
    ]);
    let (sid, _) = new_session(&editor, ws.path(), servers).await;

    // Before any prompt: the failure and the slow start, then the late
    // readiness, all outside a turn.
    let (severity, _, description) = notice_with(&editor, &sid, "`missing` failed to start").await;
    assert_eq!(severity, "warning");
    assert!(
        description.contains("cannot start `/nonexistent/mcp-server`")
            && description.contains("other servers are not affected"),
        "{description}"
    );
    let (severity, _, description) = notice_with(&editor, &sid, "`slow` is still starting").await;
    assert_eq!(severity, "info");
    assert!(description.contains("after 2 s"), "{description}");
    let (severity, _, description) = notice_with(&editor, &sid, "`slow` is ready now").await;
    assert_eq!(severity, "info");
    assert!(description.contains("tools are offered"), "{description}");
    assert!(
        editor
            .updates_of_kind(&sid, "agent_message_chunk")
            .is_empty()
    );

    // A server that dies during a turn.
    model.push(Reply::tool_call("x1", "mcp__c__crash", json!({})));
    model.push(Reply::text("it crashed"));
    editor.prompt(&sid, "crash it").await;
    let (severity, _, description) = notice_with(&editor, &sid, "`c` stopped unexpectedly").await;
    assert_eq!(severity, "warning");
    assert!(description.contains("exit status 7"), "{description}");

    // Each told once, none as agent text.
    assert_eq!(
        notices(&editor, &sid).len(),
        4,
        "{:?}",
        notices(&editor, &sid)
    );
    let text = editor.agent_text(&sid);
    assert!(
        !text.contains("MCP server") && text.contains("it crashed"),
        "{text}"
    );
}

#[tokio::test]
async fn without_the_opt_in_mcp_events_stay_agent_text_and_no_notice_is_sent() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, _cfg) = agent(&model, false).await;
    let servers =
        json!([{"name": "missing", "command": "/nonexistent/mcp-server", "args": [], "env": []}]);
    let (sid, _) = new_session(&editor, ws.path(), servers).await;
    wait_for_mcp_text(&editor, &sid, "`missing` failed to start").await;
    assert!(editor.updates_of_kind(&sid, "notice").is_empty());
}
