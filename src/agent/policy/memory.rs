//! `/memory` (issue 45 item 8; Claude Code's and Gemini CLI's command of
//! that name): the project's memory file, through the editor. ACP has no
//! "open this file" request, so the reply names the file and carries a
//! `resource_link` to it, which the editor can open. With no memory file,
//! `/memory` offers to create `AGENTS.md` (asked with
//! `session/request_permission`); `/memory add TEXT` appends a line (asked
//! too). Files are written as the agent writes any file: through the
//! editor's `fs/write_text_file` when it offers it, else beneath the root on
//! disk ([`crate::editor::Editor::write_text_file`]). After a write, and on
//! every `/memory`, the session reads its memory files again.
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::acp::{
    ContentBlock, PermissionOption, PermissionOptionKind, PermissionOutcome, ResourceLink,
    SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate,
    ToolKind,
};
use crate::agent::session::Session;

/// What a new memory file starts with.
const STARTER: &str = "# Project instructions\n\n\
Notes for coding agents working in this project: how to build and test it, the conventions \
to follow, what to leave alone. acp-coder reads this file at the start of every session \
(so do other agents that read AGENTS.md).\n";

/// What `/memory` did; the command's reply is sent by [`run`] itself.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    Done,
    Cancelled,
}

/// Runs `/memory [add TEXT]`.
pub async fn run(session: &Session, args: &str, token: &CancellationToken) -> Outcome {
    let args = args.trim();
    let add = match args.split_once(char::is_whitespace) {
        Some(("add", text)) => Some(text.trim()),
        None if args == "add" => Some(""),
        _ if args.is_empty() => None,
        _ => {
            say(
                session,
                "Usage: `/memory` shows (or creates) the memory file; `/memory add TEXT` adds a line to it.",
            );
            return Outcome::Done;
        }
    };
    if add == Some("") {
        say(
            session,
            "Usage: `/memory add TEXT` adds TEXT as a line of the memory file.",
        );
        return Outcome::Done;
    }
    session.reread_memory();
    let (path, exists) = match target(session) {
        Target::Read(path) => (path, true),
        Target::New(path) => (path, false),
        Target::Unusable(path) => {
            say(
                session,
                &format!(
                    "`{}` is there but is not read: it is not a regular file inside the project (a link out of it, a FIFO or a device). Nothing was done; replace it with a regular file to use it.",
                    path.display()
                ),
            );
            return Outcome::Done;
        }
    };
    let old = if exists {
        match session.editor.read_text_file(&path).await {
            Ok(text) => Some(text),
            Err(e) => {
                say(
                    session,
                    &format!("Could not read `{}`: {e}", path.display()),
                );
                return Outcome::Done;
            }
        }
    } else {
        None
    };
    let new = match (add, &old) {
        (None, Some(text)) => {
            show(session, &path, text);
            return Outcome::Done;
        }
        (None, None) => STARTER.to_owned(),
        (Some(line), Some(text)) => appended(text, line),
        (Some(line), None) => appended(STARTER, line),
    };
    let title = match &old {
        None => format!("Create {}", path.display()),
        Some(_) => format!("Add a line to {}", path.display()),
    };
    match ask_and_write(session, &path, old.as_deref(), &new, &title, token).await {
        Written::Yes => {
            session.reread_memory();
            let what = if old.is_some() { "Added to" } else { "Created" };
            say_with_link(
                session,
                &format!(
                    "{what} `{}`. This session reads it from now on; open it to edit it (run `/memory` after editing so this session reads it again).",
                    path.display()
                ),
                &path,
                new.len(),
            );
            Outcome::Done
        }
        Written::Rejected => {
            say(
                session,
                &format!("Nothing was written to `{}`.", path.display()),
            );
            Outcome::Done
        }
        Written::Failed(why) => {
            say(
                session,
                &format!("Could not write `{}`: {why}", path.display()),
            );
            Outcome::Done
        }
        Written::Cancelled => Outcome::Cancelled,
    }
}

/// The memory file `/memory` works on.
enum Target {
    /// A memory file the session read.
    Read(PathBuf),
    /// None there yet.
    New(PathBuf),
    /// Something there the session did not read (a link out of the
    /// project, a FIFO): neither read nor written through.
    Unusable(PathBuf),
}

/// The one read in the working directory (the first, in the order of
/// `memory_files`), else the most specific one read inside the session's
/// roots, else one in the working directory (`AGENTS.md`, or the first
/// name of `memory_files`).
fn target(session: &Session) -> Target {
    use crate::tools::paths::{canonicalize_lenient, is_inside};
    let read = session.memory_files();
    let roots = session.roots();
    let in_cwd = read
        .iter()
        .find(|p| p.parent() == Some(session.cwd.as_path()));
    let inside = || {
        read.iter()
            .rev()
            .find(|p| is_inside(&canonicalize_lenient(p), &roots))
    };
    if let Some(p) = in_cwd.or_else(inside) {
        return Target::Read(p.clone());
    }
    let name = session
        .memory_names()
        .and_then(|n| n.first())
        .map_or("AGENTS.md", String::as_str);
    let path = session.cwd.join(name);
    if std::fs::symlink_metadata(&path).is_ok() {
        Target::Unusable(path)
    } else {
        Target::New(path)
    }
}

/// `text` with `line` as a list item at its end.
fn appended(text: &str, line: &str) -> String {
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    let item = line.replace(['\r', '\n'], " ");
    let item = item.trim();
    if item.starts_with("- ") || item.starts_with("* ") {
        out.push_str(item);
    } else {
        out.push_str("- ");
        out.push_str(item);
    }
    out.push('\n');
    out
}

/// The existing memory file: its path, a short summary, and a link the
/// editor can open.
fn show(session: &Session, path: &Path, text: &str) {
    let lines = text.lines().count();
    let heading = text
        .lines()
        .find(|l| l.starts_with('#'))
        .map(|h| h.trim_start_matches('#').trim())
        .filter(|h| !h.is_empty());
    let mut summary = format!(
        "Memory file: `{}` ({lines} lines, {} bytes",
        path.display(),
        text.len()
    );
    if let Some(h) = heading {
        summary.push_str(&format!(
            "; starts with \"{}\"",
            crate::utf8::ellipsize(h, 80)
        ));
    }
    summary.push_str(").");
    let others: Vec<String> = session
        .memory_files()
        .into_iter()
        .filter(|p| p != path)
        .map(|p| format!("`{}`", p.display()))
        .collect();
    if !others.is_empty() {
        summary.push_str(&format!(" Also read: {}.", others.join(", ")));
    }
    summary.push_str(
        " Open it to edit it, then run `/memory` so this session reads it again; `/memory add TEXT` adds a line.",
    );
    say_with_link(session, &summary, path, text.len());
}

enum Written {
    Yes,
    Rejected,
    Failed(String),
    Cancelled,
}

/// Shows the change as a tool call, asks, and writes when allowed.
async fn ask_and_write(
    session: &Session,
    path: &Path,
    old: Option<&str>,
    new: &str,
    title: &str,
    token: &CancellationToken,
) -> Written {
    let id = session.claim_tool_id("");
    let shown = path.display().to_string();
    session.editor.update(&SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.clone(),
        title: crate::tools::sanitize_title(title, 120),
        name: None,
        kind: ToolKind::Edit,
        status: ToolCallStatus::Pending,
        content: vec![ToolCallContent::Diff {
            path: shown.clone(),
            old_text: old.map(str::to_owned),
            new_text: new.to_owned(),
        }],
        locations: vec![ToolCallLocation {
            path: shown,
            line: None,
        }],
        raw_input: Some(serde_json::json!({"command": "/memory", "path": path})),
        raw_output: None,
        meta: None,
    }));
    let options = vec![
        option("allow", "Write it", PermissionOptionKind::AllowOnce),
        option("reject", "Don't write", PermissionOptionKind::RejectOnce),
    ];
    let answer = tokio::select! {
        biased;
        _ = token.cancelled() => {
            finish(session, &id, ToolCallStatus::Failed, "Cancelled.");
            return Written::Cancelled;
        }
        a = session.editor.request_permission(ToolCallUpdate::new(id.clone()), options) => a,
    };
    match answer {
        Ok(PermissionOutcome::Selected { option_id }) if option_id == "allow" => {}
        Ok(PermissionOutcome::Cancelled) => {
            finish(session, &id, ToolCallStatus::Failed, "Cancelled.");
            return Written::Cancelled;
        }
        Ok(_) => {
            finish(
                session,
                &id,
                ToolCallStatus::Failed,
                "Rejected: nothing was written.",
            );
            return Written::Rejected;
        }
        Err(e) => {
            let why = format!(
                "the permission request failed in the editor ({})",
                e.message
            );
            finish(session, &id, ToolCallStatus::Failed, &why);
            return Written::Failed(why);
        }
    }
    match session
        .editor
        .write_text_file(&session.roots(), path, new)
        .await
    {
        Ok(()) => {
            tracing::info!(session = %session.id, path = %path.display(), "memory file written with /memory");
            finish(session, &id, ToolCallStatus::Completed, "Written.");
            Written::Yes
        }
        Err(e) => {
            let why = e.to_string();
            finish(session, &id, ToolCallStatus::Failed, &why);
            Written::Failed(why)
        }
    }
}

fn option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption {
        option_id: id.into(),
        name: name.into(),
        kind,
    }
}

fn finish(session: &Session, id: &str, status: ToolCallStatus, text: &str) {
    session.editor.update(&SessionUpdate::ToolCallUpdate(
        ToolCallUpdate::new(id)
            .status(status)
            .content(vec![ToolCallContent::text(text)]),
    ));
}

fn say(session: &Session, text: &str) {
    session.editor.update(&SessionUpdate::agent_text(
        text.to_owned(),
        Some(crate::agent::engine::model_call::message_id()),
    ));
}

/// `text`, then a `resource_link` to `path` in the same message.
fn say_with_link(session: &Session, text: &str, path: &Path, size: usize) {
    let message_id = crate::agent::engine::model_call::message_id();
    session.editor.update(&SessionUpdate::agent_text(
        format!("{text}\n"),
        Some(message_id.clone()),
    ));
    let Ok(uri) = url::Url::from_file_path(path) else {
        return;
    };
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    session.editor.update(&SessionUpdate::AgentMessageChunk(
        crate::acp::ContentChunk {
            content: ContentBlock::ResourceLink(ResourceLink {
                uri: uri.to_string(),
                name,
                mime_type: Some("text/markdown".into()),
                title: Some(format!("Memory file {}", path.display())),
                description: None,
                size: i64::try_from(size).ok(),
            }),
            message_id: Some(message_id),
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_added_as_a_list_item() {
        assert_eq!(appended("# T\n", "use tabs"), "# T\n- use tabs\n");
        assert_eq!(appended("# T", "- use tabs"), "# T\n- use tabs\n");
        assert_eq!(appended("", "a\nb"), "- a b\n");
    }
}
