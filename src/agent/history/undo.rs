//! `/undo` and `/rewind N` (issue 19 §2), and the background-command lines
//! of `/status`.
//!
//! `/undo` restores the files of the last turn that changed any and removes
//! that turn from the history the model sees; repeated, it walks back.
//! `/rewind N` goes back N prompt turns: every turn from the N-th last on is
//! dropped from the history and the files of those turns are restored,
//! newest first. Files go back through `fs/write_text_file` when the editor
//! offers it (open buffers follow); files a turn created are deleted. A file
//! that is not as the turn left it (the user edited it, on disk or in the
//! editor's buffer) is skipped, and the user is told which and why. Each undo
//! is a `undo` record in the session log, so a reload rebuilds the shortened
//! history.
use std::path::Path;

use crate::llm::ChatMessage;

use super::changes::{read_now, user_text_at};
use super::checkpoint::{Before, Checkpoint};
use crate::agent::session::Session;
use crate::agent::store::Record;
use crate::editor::Editor;

/// What restoring one checkpoint did, for the user.
#[derive(Default)]
pub struct Report {
    pub restored: Vec<String>,
    pub deleted: Vec<String>,
    pub skipped: Vec<String>,
}

/// `/undo`: the text to show the user.
pub async fn undo(session: &Session) -> String {
    let _gate = session.tracker.gate.lock().await;
    let Some(cp) = session.tracker.checkpoints.nth_last(1) else {
        return "Nothing to undo: no turn of this session changed files (or all were undone already).".into();
    };
    session.tracker.checkpoints.remove(cp.seq);
    let mut text = format!("**Undid the turn** “{}”", cp.prompt);
    if cp.gone {
        text.push_str(&format!(
            "\n\nIts checkpoint is gone: it was dropped to keep checkpoints within `checkpoint_max_bytes`, so its files were **not** restored.{}",
            drop_turn(session, &cp).await
        ));
        return text;
    }
    let report = restore(session, &cp).await;
    text.push_str(&report.render(&session.cwd));
    text.push_str(&drop_turn(session, &cp).await);
    text
}

/// `/rewind N`: the text to show the user.
pub async fn rewind(session: &Session, args: &str) -> String {
    let n: usize = match args.trim() {
        "" => 1,
        a => match a.parse() {
            Ok(n) if n >= 1 => n,
            _ => {
                return format!(
                    "`/rewind N` takes a number of turns to go back (1 or more); got {a:?}."
                );
            }
        },
    };
    let _gate = session.tracker.gate.lock().await;
    let mut history = session.history.lock().await;
    let users: Vec<usize> = history
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, ChatMessage::User(_)))
        .map(|(i, _)| i)
        .collect();
    let Some(&cut) = users.len().checked_sub(n).and_then(|i| users.get(i)) else {
        return format!(
            "Cannot rewind {n} turns: the conversation the model sees has {} (earlier ones may have been compacted).",
            users.len()
        );
    };
    let (report, gone) = restore_since(session, cut).await;
    let end = history.messages.len();
    history.messages.truncate(cut);
    history.context_tokens = 0;
    history.counted_messages = 0;
    drop(history);
    session.record(&Record::Undo { start: cut, end });
    let mut text = format!("**Rewound {n} turn{}**", if n == 1 { "" } else { "s" });
    text.push_str(&report.render(&session.cwd));
    if gone > 0 {
        text.push_str(&format!(
            "\n\n{gone} of those turns had its checkpoint dropped (`checkpoint_max_bytes`): its files were not restored."
        ));
    }
    text.push_str("\n\nThe model no longer sees those turns.");
    text
}

/// Restores the files of every turn whose messages start at or after
/// history index `cut`, newest first, and forgets their checkpoints;
/// returns what was done and how many of those checkpoints were gone.
/// `/rewind` uses it on its own session; a `session/fork` "at this prompt"
/// calls it on the source session with the fork point as `cut`.
async fn restore_since(session: &Session, cut: usize) -> (Report, usize) {
    let mut report = Report::default();
    let mut gone = 0;
    while let Some(cp) = session.tracker.checkpoints.nth_last(1) {
        if cp.history_start < cut {
            break;
        }
        session.tracker.checkpoints.remove(cp.seq);
        if cp.gone {
            gone += 1;
            continue;
        }
        report.merge(restore(session, &cp).await);
    }
    (report, gone)
}

/// Removes the checkpoint's turn from the history, if the history still
/// holds it where it was; says what happened.
async fn drop_turn(session: &Session, cp: &Checkpoint) -> String {
    let mut history = session.history.lock().await;
    let fits = cp.history_end <= history.messages.len()
        && cp.history_start < cp.history_end
        && user_text_at(&history.messages, cp.history_start) == cp.user_text;
    if !fits {
        return "\n\nThe conversation was compacted since that turn, so the model still sees its summary.".into();
    }
    history.messages.drain(cp.history_start..cp.history_end);
    history.context_tokens = 0;
    history.counted_messages = 0;
    drop(history);
    session.record(&Record::Undo {
        start: cp.history_start,
        end: cp.history_end,
    });
    "\n\nThe model no longer sees that turn.".into()
}

/// Puts the checkpoint's files back, skipping those changed since.
async fn restore(session: &Session, cp: &Checkpoint) -> Report {
    restore_with(&session.editor, &session.cwd, &session.roots(), cp).await
}

/// [`restore`] through `editor`, paths shown relative to `cwd`, writes kept
/// beneath `roots` (a fork at a cursor restores the source session's later
/// checkpoints, `cursors`).
pub(super) async fn restore_with(
    editor: &Editor,
    cwd: &Path,
    roots: &[std::path::PathBuf],
    cp: &Checkpoint,
) -> Report {
    let mut report = Report::default();
    // A command that deleted a file acp-coder has no copy of may have moved
    // it (`mv a b`): the file it "created" may hold the only copy of the
    // data, so nothing of that turn is deleted.
    let keep_created = cp
        .files
        .iter()
        .any(|f| matches!(f.before, Before::Unknown | Before::Unkept(_)) && f.after.is_none());
    for f in &cp.files {
        let shown = super::changes::shown(&f.path, cwd);
        match &f.before {
            Before::Unknown => {
                report.skipped.push(format!(
                    "{shown}: not restored: a command changed or deleted it, and no copy was kept before it ran"
                ));
                continue;
            }
            Before::Unkept(why) => {
                report.skipped.push(format!("{shown}: not restored: {why}"));
                continue;
            }
            _ => {}
        }
        if let Some(why) = unsafe_target(&f.path) {
            report.skipped.push(format!("{shown}: {why}"));
            continue;
        }
        let now = match read_now(editor, &f.path).await {
            Ok(now) => now,
            Err(e) => {
                report
                    .skipped
                    .push(format!("{shown}: cannot read it ({e})"));
                continue;
            }
        };
        if now != f.after {
            report.skipped.push(format!(
                "{shown}: it changed after that turn (on disk or in the editor), so it was not overwritten"
            ));
            continue;
        }
        match &f.before {
            Before::Text(text) => match write(editor, roots, &f.path, text).await {
                Ok(()) => report.restored.push(shown),
                Err(e) => report.skipped.push(format!("{shown}: {e}")),
            },
            Before::Absent if keep_created => report.skipped.push(format!(
                "{shown}: kept, although that turn created it: the turn also deleted files that cannot be restored, and this one may hold their content (a move)"
            )),
            Before::Absent => match crate::editor::remove_local(roots, &f.path).await {
                Ok(()) => report.deleted.push(shown),
                Err(crate::editor::FileError::NotFound(_)) => {}
                Err(e) => report
                    .skipped
                    .push(format!("{shown}: cannot delete it ({e})")),
            },
            Before::Unknown | Before::Unkept(_) => {}
        }
    }
    report
}

/// Why `path` must not be written or deleted now: a symbolic link there or
/// in its directories (put by a command since) would send the restore
/// outside the place the turn changed.
fn unsafe_target(path: &Path) -> Option<&'static str> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Some("it is a symbolic link now, so it was not written through");
    }
    let mut dir = path.parent()?;
    // The nearest existing directory must be reached without a link.
    while !dir.exists() {
        dir = dir.parent()?;
    }
    match crate::platform::fs::canonicalize(dir) {
        Ok(real) if real == dir => None,
        _ => Some("a directory on its path is a symbolic link now, so it was not written through"),
    }
}

async fn write(
    editor: &Editor,
    roots: &[std::path::PathBuf],
    path: &Path,
    text: &str,
) -> Result<(), crate::editor::FileError> {
    if let Some(dir) = path.parent()
        && !dir.exists()
        && editor.can_write()
    {
        // The editor writes into existing folders; locally, the write makes
        // them beneath the root.
        let _ = tokio::fs::create_dir_all(dir).await;
    }
    editor.write_text_file(roots, path, text).await
}

impl Report {
    /// Adds what restoring an older checkpoint did: a file several turns
    /// changed is listed once, as the oldest one left it (that restore ran
    /// last).
    fn merge(&mut self, older: Report) {
        for name in older.restored.iter().chain(&older.deleted) {
            self.restored.retain(|r| r != name);
            self.deleted.retain(|d| d != name);
        }
        self.restored.extend(older.restored);
        self.deleted.extend(older.deleted);
        for s in older.skipped {
            if !self.skipped.contains(&s) {
                self.skipped.push(s);
            }
        }
    }

    fn render(&self, _cwd: &Path) -> String {
        let mut s = String::new();
        let list = |title: &str, items: &[String]| {
            if items.is_empty() {
                String::new()
            } else {
                format!(
                    "\n\n{title}:\n{}",
                    items
                        .iter()
                        .map(|i| format!("- {i}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                )
            }
        };
        s.push_str(&list("Restored", &self.restored));
        s.push_str(&list("Deleted (the turn created them)", &self.deleted));
        s.push_str(&list("Skipped", &self.skipped));
        if self.restored.is_empty() && self.deleted.is_empty() && self.skipped.is_empty() {
            s.push_str("\n\nNo file needed restoring.");
        }
        s
    }
}

/// `/status` lines for the session's background commands.
pub fn background_status(session: &Session) -> Vec<String> {
    use crate::tools::process::background;
    let jobs = background::list(&session.id);
    if jobs.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "- **Background commands** ({} of at most {} running):",
        jobs.iter().filter(|j| j.running).count(),
        background::limit()
    )];
    for j in jobs {
        lines.push(format!(
            "  - `{}` {} {} — {} for {} s",
            j.handle,
            if j.terminal { "(terminal)" } else { "(local)" },
            crate::tools::code_span(&j.command, 80),
            if j.running { "running" } else { "ended" },
            j.age.as_secs()
        ));
    }
    lines
}
