//! Status lines for long waits (retries, MCP start-up, compaction, …).
//!
//! A status is an `agent_thought_chunk` in italics on its own line, so every
//! editor shows it without special support, marked with
//! `_meta["acp-coder/status"]: true` on the text block so clients that know
//! (the `exec` client) can show it as a status line rather than as thinking.
use serde_json::{Map, Value};

use crate::acp::{ContentBlock, ContentChunk, SessionUpdate, TextContent};

use super::Editor;

/// The `_meta` key marking a thought chunk as a status line.
pub const STATUS_META_KEY: &str = "acp-coder/status";

/// The update that shows `text` as a status line (`text` is one short sentence,
/// without surrounding underscores or newlines).
pub fn status_update(text: &str) -> SessionUpdate {
    let mut meta = Map::new();
    meta.insert(STATUS_META_KEY.into(), Value::Bool(true));
    let text = text.trim().replace(['\n', '\r'], " ");
    SessionUpdate::AgentThoughtChunk(ContentChunk {
        content: ContentBlock::Text(TextContent {
            text: format!("\n_{text}_\n"),
            annotations: None,
            meta: Some(meta),
        }),
        message_id: Some(format!("status_{:016x}", fastrand::u64(..))),
    })
}

/// Whether an update (as JSON) is a status line, and its text without markup.
pub fn status_text(update: &Value) -> Option<String> {
    let content = update.get("content")?;
    if content.get("_meta")?.get(STATUS_META_KEY)? != &Value::Bool(true) {
        return None;
    }
    let text = content.get("text")?.as_str()?.trim();
    let text = text
        .strip_prefix('_')
        .and_then(|t| t.strip_suffix('_'))
        .unwrap_or(text);
    Some(text.to_owned())
}

impl Editor {
    /// Shows a status line to the user in this session (see the module docs),
    /// e.g. `editor.status("Starting MCP server github…")`.
    pub fn status(&self, text: &str) {
        self.update(&status_update(text));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_round_trip() {
        let u = serde_json::to_value(status_update("Retrying in 2 s")).unwrap();
        assert_eq!(u["sessionUpdate"], "agent_thought_chunk");
        assert_eq!(u["content"]["text"], "\n_Retrying in 2 s_\n");
        assert_eq!(status_text(&u).as_deref(), Some("Retrying in 2 s"));
        let plain = serde_json::to_value(SessionUpdate::agent_thought("hmm", None)).unwrap();
        assert_eq!(status_text(&plain), None);
    }
}
