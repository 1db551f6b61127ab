//! What a new or restored session is built with: its commands (sent, and
//! sent again when a tool source changes), skills, tools and protected paths.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::acp::{AvailableCommandsUpdate, SessionUpdate};
use crate::editor::Editor;
use crate::skills::Shelf;
use crate::tools::{Registry, SkillTools};

use crate::agent::policy::commands;
use crate::agent::session::Session;

/// Sends the session's commands (ACP §7 `available_commands_update`):
/// built-ins, prompt files, then its skills.
pub(in crate::agent) fn send_commands(session: &Session) {
    let available = commands::to_acp(&session_commands(session));
    session
        .editor
        .update(&SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate {
                available_commands: available,
            },
        ));
}

/// Every command the session offers now.
pub(in crate::agent) fn session_commands(session: &Session) -> Vec<commands::Command> {
    let config_dir = crate::config::config_home().join("acp-coder");
    let list = commands::with_skills(
        commands::available(&session.cwd, &config_dir),
        &session.skills.get(),
    );
    commands::with_sources(list, session.registry.source_commands())
}

/// Sends the commands again whenever a tool source's change (an MCP server
/// got ready or stopped, or sent `prompts/list_changed`).
pub(in crate::agent) fn watch_commands(session: &Arc<Session>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    for mut rx in session.registry.commands_changed() {
        let weak = Arc::downgrade(session);
        rt.spawn(async move {
            while rx.changed().await.is_ok() {
                match weak.upgrade() {
                    Some(s) => send_commands(&s),
                    None => return,
                }
            }
        });
    }
}

/// The skills of a session rooted at `cwd` (issue 21), read off the runtime's
/// workers (a few small files, but file-system work all the same).
pub(in crate::agent) async fn find_skills(cwd: &Path, additional: &[PathBuf]) -> Shelf {
    let places = crate::skills::places_for_session(cwd, additional);
    match tokio::task::spawn_blocking(move || crate::skills::discover(&places)).await {
        Ok(catalog) => Shelf::new(catalog),
        Err(e) => {
            tracing::warn!(error = %e, "skills not read");
            Shelf::default()
        }
    }
}

/// The built-in tools, `load_skill` while there are skills, and the tools of
/// the session's MCP servers (the editor's and the configured ones, started
/// concurrently within a bounded time).
pub(in crate::agent) async fn tools_for(
    servers: &[crate::acp::McpServer],
    settings: &crate::config::Settings,
    cwd: &Path,
    additional: &[PathBuf],
    editor: &Editor,
    skills: &Shelf,
    hooks: &crate::mcp::Hooks,
) -> Registry {
    // The editor's MCP env values and headers are secrets from now on.
    for server in servers {
        let pairs = match server {
            crate::acp::McpServer::Http(h) | crate::acp::McpServer::Sse(h) => &h.headers,
            crate::acp::McpServer::Stdio(s) | crate::acp::McpServer::StdioUntagged(s) => &s.env,
            crate::acp::McpServer::Acp(_) => continue,
        };
        for p in pairs {
            crate::secrets::learn_named(&p.name, &p.value);
        }
    }
    let mut registry = Registry::builtin();
    if settings.web_fetch {
        registry.add(Arc::new(crate::tools::web_fetch::WebFetch::new(
            &settings.web_fetch_private_hosts,
        )));
    }
    // `ask_user` exists only where the editor can show its form (issue 17).
    if editor.can_elicit_form() {
        registry.add(Arc::new(crate::tools::AskUser));
    }
    registry.add_source(Arc::new(SkillTools::new(skills.clone())));
    crate::mcp::attach(
        &mut registry,
        servers,
        settings,
        cwd,
        additional,
        editor,
        hooks,
    )
    .await;
    registry
}

/// The protected paths of a new session: the built-in list plus the config's
/// (checked when the config was loaded).
pub(in crate::agent) fn protected_for(
    settings: &crate::config::Settings,
) -> crate::agent::policy::protected::Protected {
    crate::agent::policy::protected::Protected::new(&settings.protected_paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "protected_paths: using the built-in list only");
        crate::agent::policy::protected::Protected::default()
    })
}
