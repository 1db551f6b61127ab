//! The settings of a session's MCP servers, shared by the manager and the
//! connection code.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Settings of a session's MCP servers.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// How long [`super::McpManager::start`] waits for the servers.
    pub startup_timeout: Duration,
    /// How long one tool call may run.
    pub call_timeout: Duration,
    /// Working directory of stdio servers (the session's cwd).
    pub cwd: PathBuf,
    /// Variables removed from the environment of stdio servers.
    pub secret_env: Vec<String>,
    /// How many tools the servers may add in all.
    pub tool_budget: usize,
    /// Where HTTP servers' OAuth tokens are stored (`mcp-oauth/` under it).
    pub data_dir: PathBuf,
    /// The session's directories, answered to `roots/list`.
    pub roots: Vec<PathBuf>,
    /// The session's sampling state (the running turn's model).
    pub sampling: Arc<super::sampling::Hub>,
    /// MCP over ACP: the connection's registry of links to the editor's
    /// own MCP servers (`type: "acp"`), when the agent serves an editor.
    pub acp_links: Option<Arc<super::acp_transport::Links>>,
}
