//! MCP client (issue 4): the editor hands `mcpServers` to `session/new` (ACP
//! §5.1 "MCP servers"); the agent connects to each as an MCP client and
//! offers their tools to the model as `mcp__<server>__<tool>`.
//!
//! - [`servers`]: the editor's list merged with `[mcp_servers.NAME]` from the
//!   config file.
//! - [`manager`]: one [`McpManager`] per session — concurrent start with a
//!   bounded wait, tool-list changes, death reports, shutdown; it is the
//!   session registry's [`crate::tools::ToolSource`].
//! - transports: [`stdio`] (own process group, stderr to the log),
//!   streamable HTTP (rmcp's client, [`http`]), legacy HTTP+SSE ([`sse`]).
//! - [`tool`]: one MCP tool as a [`crate::tools::Tool`]; result conversion.
//! - [`names`]: model-facing tool names.
//! - [`client`]: roots, progress and servers' log messages.
//! - [`rich`]: images of tool results for the model.
//! - [`resources`]: the `list_mcp_resources` and `read_mcp_resource` tools.
//! - [`prompts`]: servers' prompts as slash commands.
//! - [`sampling`]: servers' `sampling/createMessage` answered by the model.
//! - [`input`]: `input_required` results (protocol 2026-07-28) answered
//!   the same ways, and the request sent again.
//! - [`prompt_links`]: prompt `resource_link`s read through their server.
pub mod acp_transport;
pub mod client;
mod connect;
pub mod elicit;
mod handler;
mod handshake;
pub mod http;
pub mod input;
pub mod manager;
pub mod names;
pub mod oauth;
pub mod oauth_connect;
pub mod oauth_flow;
mod options;
pub mod prompt_links;
pub mod prompts;
pub mod resources;
pub mod rich;
pub mod sampling;
pub mod servers;
pub mod sse;
pub mod stdio;
mod stdio_lines;
mod told;
pub mod tool;

pub use manager::{McpManager, McpOptions};

use std::path::Path;
use std::sync::Arc;

use crate::acp::McpServer;
use crate::config::Settings;
use crate::editor::Editor;
use crate::tools::Registry;

/// Model endpoints (OpenAI's) reject requests with more tools than this.
pub const MAX_TOOLS: usize = 128;

/// Why a server could not be used (told to the user by name).
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("cannot start `{command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Config(String),
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("the MCP handshake failed: {0}")]
    Handshake(String),
    /// HTTP 401 with this `WWW-Authenticate` challenge (OAuth, `oauth_connect`).
    #[error("the server asks for sign-in (HTTP 401)")]
    SignIn(String),
}

/// What a session's MCP client shares with the rest of the agent: the
/// sampling state the running turn lends its model to, and the
/// connection's MCP-over-ACP links (kept here, not in `editor`, so that
/// `mcp` uses `editor` and not the other way round).
#[derive(Clone, Default)]
pub struct Hooks {
    pub sampling: Arc<sampling::Hub>,
    pub acp_links: Option<Arc<acp_transport::Links>>,
}

/// Adds the session's MCP servers (the editor's `servers` merged with the
/// configured ones) to `registry`, waiting at most
/// `settings.mcp_startup_timeout` for them. Used by `session/new` (and the
/// methods that revive a session).
pub async fn attach(
    registry: &mut Registry,
    servers: &[McpServer],
    settings: &Settings,
    cwd: &Path,
    additional: &[std::path::PathBuf],
    editor: &Editor,
    hooks: &Hooks,
) {
    let specs = servers::merge(servers, &settings.mcp_servers);
    if specs.is_empty() {
        return;
    }
    tracing::info!(servers = ?specs, "starting MCP servers");
    let options = McpOptions {
        startup_timeout: settings.mcp_startup_timeout,
        call_timeout: settings.mcp_tool_timeout,
        cwd: cwd.to_path_buf(),
        secret_env: settings.secret_env.clone(),
        data_dir: settings.data_dir.clone(),
        tool_budget: MAX_TOOLS.saturating_sub(registry.fixed_len()),
        roots: client::root_dirs(cwd, additional),
        sampling: hooks.sampling.clone(),
        acp_links: hooks.acp_links.clone(),
    };
    let manager = McpManager::start(specs, editor.clone(), options).await;
    registry.add_source(manager as Arc<dyn crate::tools::ToolSource>);
}
