//! What the agent answers as an MCP *client* (MCP 2025-11-25 "Client
//! features"), beyond tools: roots, servers' log messages and progress of
//! running tool calls. The rmcp [`super::manager::Handler`] delegates here.
//!
//! - Roots ("Client features: Roots"): the session's cwd and additional
//!   directories as `file://` URIs. `/add-dir` adds one during a session:
//!   `listChanged` is advertised and every connected server gets
//!   `notifications/roots/list_changed` (`McpManager::roots_changed`).
//! - Logging ("Server utilities: Logging"): `notifications/message` goes to
//!   the agent's log file at the matching level, never to stdout.
//! - Progress ("Utilities: Progress"): each `tools/call` carries a progress
//!   token; a notification for it updates that ACP tool call's content
//!   (ACP §9 `tool_call_update`). A token that belongs to no running call is
//!   logged and dropped (notifications get no error reply).
// rmcp marks roots and logging deprecated by SEP-2577 (a future protocol
// version); the versions servers speak today (2025-11-25 and before) use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rmcp::model::{
    ClientCapabilities, ListRootsResult, LoggingLevel, LoggingMessageNotificationParam,
    ProgressNotificationParam, ProgressToken, Root, RootsCapabilities,
};
use serde_json::Value;

use crate::acp::{SessionUpdate, ToolCallContent, ToolCallUpdate};
use crate::editor::Editor;

/// Longest progress message or log line kept (a hostile server may send
/// megabytes in one notification).
const TEXT_MAX: usize = 2000;

/// The capabilities the agent declares to every server: only what the
/// handler really answers.
pub fn capabilities() -> ClientCapabilities {
    let mut caps = ClientCapabilities::default();
    let mut roots = RootsCapabilities::default();
    roots.list_changed = Some(true);
    caps.roots = Some(roots);
    caps
}

/// The session's directories, shared by its servers' handlers and changed
/// by `/add-dir`.
pub type Roots = std::sync::Arc<std::sync::RwLock<Vec<PathBuf>>>;

/// `roots/list`: one `file://` root per session directory, named after it.
pub fn list_roots(dirs: &[PathBuf]) -> ListRootsResult {
    let roots = dirs
        .iter()
        .filter_map(|d| {
            let uri = url::Url::from_directory_path(d).ok()?;
            let mut root = Root::new(uri.to_string());
            root.name = Some(
                d.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| d.display().to_string()),
            );
            Some(root)
        })
        .collect();
    ListRootsResult::new(roots)
}

/// Writes a server's `notifications/message` to the log at its level.
pub fn log_message(server: &str, p: &LoggingMessageNotificationParam) {
    let text = match &p.data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let text = clip(&text);
    let logger = p.logger.as_deref().unwrap_or("");
    match p.level {
        LoggingLevel::Debug => tracing::debug!(server, logger, "MCP server log: {text}"),
        LoggingLevel::Info | LoggingLevel::Notice => {
            tracing::info!(server, logger, "MCP server log: {text}")
        }
        LoggingLevel::Warning => tracing::warn!(server, logger, "MCP server log: {text}"),
        LoggingLevel::Error
        | LoggingLevel::Critical
        | LoggingLevel::Alert
        | LoggingLevel::Emergency => {
            tracing::error!(server, logger, level = ?p.level, "MCP server log: {text}")
        }
    }
}

fn clip(text: &str) -> String {
    if text.len() <= TEXT_MAX {
        return text.to_owned();
    }
    let head = crate::utf8::head(text, TEXT_MAX);
    format!("{head}… ({} bytes in all)", text.len())
}

/// The running calls of one server, by the progress token of their request.
#[derive(Default)]
pub struct Progress {
    calls: Mutex<HashMap<ProgressToken, (Editor, String)>>,
}

impl Progress {
    /// Routes progress for `token` to tool call `tool_call_id` until the
    /// returned guard is dropped (the call ended or was cancelled).
    pub fn register(
        &self,
        token: ProgressToken,
        editor: Editor,
        tool_call_id: String,
    ) -> ProgressGuard<'_> {
        lock(&self.calls).insert(token.clone(), (editor, tool_call_id));
        ProgressGuard { map: self, token }
    }

    /// The ACP tool call of one of this server's running calls, if any: a
    /// sampling request is shown beside it (src/mcp/sampling.rs).
    pub fn running_call(&self) -> Option<String> {
        lock(&self.calls).values().next().map(|(_, id)| id.clone())
    }

    /// Shows `p` in its tool call; unknown tokens (a call that just ended:
    /// the last notification may race its answer; or a hostile server) are
    /// logged and dropped.
    pub fn notify(&self, server: &str, p: &ProgressNotificationParam) {
        // Held while queueing the update: once the call's guard is dropped no
        // progress can follow (and overwrite) the call's final content.
        let calls = lock(&self.calls);
        let Some((editor, id)) = calls.get(&p.progress_token) else {
            tracing::debug!(server, token = ?p.progress_token, "MCP progress for a token that belongs to no running call: ignored");
            return;
        };
        let text = progress_text(p);
        tracing::debug!(server, tool_call = %id, progress = %text, "MCP progress");
        editor.update(&SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(id.clone()).content(vec![ToolCallContent::text(text)]),
        ));
    }
}

/// Unregisters a progress token when dropped.
pub struct ProgressGuard<'a> {
    map: &'a Progress,
    token: ProgressToken,
}

impl Drop for ProgressGuard<'_> {
    fn drop(&mut self) {
        lock(&self.map.calls).remove(&self.token);
    }
}

/// "Progress: 3 of 5 (60%): message" (the parts the server gave).
fn progress_text(p: &ProgressNotificationParam) -> String {
    let mut text = match p.total.filter(|t| *t > 0.0 && t.is_finite()) {
        Some(total) => format!(
            "Progress: {} of {} ({:.0}%)",
            number(p.progress),
            number(total),
            (p.progress / total * 100.0).clamp(0.0, 100.0)
        ),
        None => format!("Progress: {}", number(p.progress)),
    };
    if let Some(m) = p.message.as_deref().filter(|m| !m.trim().is_empty()) {
        text.push_str(": ");
        text.push_str(&crate::tools::sanitize_title(&clip(m), TEXT_MAX));
    }
    text
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.2}")
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The session directories servers see as roots: cwd first, then the
/// additional directories (duplicates dropped).
pub fn root_dirs(cwd: &Path, additional: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs = vec![cwd.to_path_buf()];
    for d in additional {
        if !dirs.contains(d) {
            dirs.push(d.clone());
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::NumberOrString;

    #[test]
    fn roots_are_file_uris_of_the_session_dirs() {
        let dirs = root_dirs(
            Path::new("/work/my project"),
            &[PathBuf::from("/data"), PathBuf::from("/work/my project")],
        );
        let r = list_roots(&dirs);
        let uris: Vec<&str> = r.roots.iter().map(|r| r.uri.as_str()).collect();
        assert_eq!(uris, ["file:///work/my%20project/", "file:///data/"]);
        assert_eq!(r.roots[0].name.as_deref(), Some("my project"));
        let caps = serde_json::to_value(capabilities()).unwrap();
        assert_eq!(caps, serde_json::json!({"roots": {"listChanged": true}}));
    }

    #[test]
    fn progress_reads_well_and_is_bounded() {
        let p = |progress, total, message: Option<&str>| {
            let mut n =
                ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(1)), progress);
            n.total = total;
            n.message = message.map(str::to_owned);
            progress_text(&n)
        };
        assert_eq!(p(3.0, Some(5.0), None), "Progress: 3 of 5 (60%)");
        assert_eq!(p(0.5, None, Some("halfway")), "Progress: 0.50: halfway");
        assert_eq!(p(9.0, Some(0.0), None), "Progress: 9");
        assert!(p(1.0, None, Some(&"x".repeat(100_000))).len() < 2 * TEXT_MAX);
    }
}
