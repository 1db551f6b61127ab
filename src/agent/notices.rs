//! Session notices (schema 1.20 `notice`): live, fire-and-forget information
//! for the user, sent only to a client that advertised `session.notices`.
//! Without it nothing is sent, and each caller keeps showing what it showed
//! before (usually agent text), so a client that did not opt in sees no
//! change.
use crate::acp::{Notice, NoticeSeverity};
use crate::editor::Editor;

use super::Session;

/// Sends `notice` to the session's client if it shows notices; `false`
/// (nothing sent) when it did not opt in.
pub fn send(session: &Session, notice: Notice) -> bool {
    send_to(&session.editor, notice)
}

/// [`send`] for code that holds the session's editor only (tools, MCP).
pub fn send_to(editor: &Editor, notice: Notice) -> bool {
    editor.notice(notice)
}

pub fn info(title: impl Into<String>, description: Option<String>) -> Notice {
    notice(NoticeSeverity::Info, title, description)
}

fn notice(
    severity: NoticeSeverity,
    title: impl Into<String>,
    description: Option<String>,
) -> Notice {
    Notice::new(severity, title, description)
}

pub fn warning(title: impl Into<String>, description: Option<String>) -> Notice {
    notice(NoticeSeverity::Warning, title, description)
}

/// The model endpoint failed or limited the rate: the call is tried again
/// (attempt `attempt` of `of`) after `wait`.
pub fn retrying(why: &str, attempt: u32, of: u32, wait: &str) -> Notice {
    warning(
        format!("Retrying the model call (attempt {attempt} of {of})"),
        Some(format!("{why}; trying again in {wait}.")),
    )
}

/// A prompt that came while a turn runs waits in line.
pub fn queued(ahead: usize) -> Notice {
    let turns = if ahead == 1 {
        "1 turn".to_owned()
    } else {
        format!("{ahead} turns")
    };
    info(
        format!("Prompt queued behind {turns}"),
        Some(
            "It runs when the turns before it end; session/cancel stops the running turn only."
                .into(),
        ),
    )
}

/// acp-coder found a local model server and uses it, no endpoint being
/// configured (`Settings::local_server_notice` says which and how to change it).
pub fn local_model(text: String) -> Notice {
    info("Using a local model server", Some(text))
}
