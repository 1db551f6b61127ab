//! The start-up timers of [`McpManager`] on tokio's paused clock (issue 16,
//! "Tests"): `startup_timeout` (how long `session/new` waits, DESIGN §5
//! "MCP") and [`BACKGROUND_START_LIMIT`] (when a server still starting is
//! given up). The server is an editor's MCP-over-ACP server whose
//! `mcp/connect` is never answered, so no process or socket is involved.
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{BACKGROUND_START_LIMIT, McpManager, McpOptions, lock};
use crate::config::{McpServerSpec, McpTransportSpec};
use crate::editor::Editor;
use crate::rpc::{Connection, ServeOptions};
use crate::tools::ToolSource;

fn options(startup_timeout: Duration, conn: &Connection) -> McpOptions {
    McpOptions {
        startup_timeout,
        call_timeout: Duration::from_secs(60),
        cwd: std::env::temp_dir(),
        secret_env: Vec::new(),
        tool_budget: 100,
        data_dir: std::env::temp_dir(),
        roots: Vec::new(),
        sampling: Arc::default(),
        acp_links: Some(Arc::new(super::super::acp_transport::Links::new(
            conn.peer.clone(),
        ))),
    }
}

fn silent_server() -> Vec<McpServerSpec> {
    vec![McpServerSpec {
        name: "slow".into(),
        transport: McpTransportSpec::Acp {
            server_id: "never-answers".into(),
        },
        oauth: Default::default(),
    }]
}

#[tokio::test(start_paused = true)]
async fn session_start_waits_exactly_the_startup_timeout_then_gives_up_at_the_limit() {
    // The connection is never served: the editor never answers mcp/connect.
    let conn = Connection::new(ServeOptions::default());
    let editor = Editor::new(conn.peer.clone(), Arc::default(), "s");
    let start = Instant::now();
    let manager = McpManager::start(
        silent_server(),
        editor,
        options(Duration::from_secs(10), &conn),
    )
    .await;
    assert_eq!(start.elapsed(), Duration::from_secs(10));
    assert!(
        manager.describe().unwrap().contains("**slow**: starting"),
        "{:?}",
        manager.describe()
    );
    let queued = lock(&manager.inner.notices).queued.clone();
    assert_eq!(queued.len(), 1, "{queued:?}");
    assert!(
        queued[0].contains("still starting after 10 s"),
        "{queued:?}"
    );

    // The background start goes on until its own limit, counted from the
    // server's start, not from the end of the session's wait.
    tokio::time::sleep_until(start + BACKGROUND_START_LIMIT - Duration::from_millis(1)).await;
    assert!(manager.describe().unwrap().contains("starting"));
    tokio::time::sleep_until(start + BACKGROUND_START_LIMIT + Duration::from_millis(1)).await;
    assert!(
        manager.describe().unwrap().contains("failed to start"),
        "{:?}",
        manager.describe()
    );
    let queued = lock(&manager.inner.notices).queued.clone();
    assert!(
        queued[1].contains("did not finish starting within 300 s"),
        "{queued:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn no_servers_no_wait() {
    let conn = Connection::new(ServeOptions::default());
    let editor = Editor::new(conn.peer.clone(), Arc::default(), "s");
    let start = Instant::now();
    let manager =
        McpManager::start(Vec::new(), editor, options(Duration::from_secs(10), &conn)).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
    assert!(manager.tools().is_empty());
}
