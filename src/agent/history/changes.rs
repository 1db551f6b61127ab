//! What a session's turns changed (issue 19 §2–3): the hooks around each tool
//! call that fill the turn's checkpoint, and the changed-files list a command
//! result gets.
//!
//! * A write or edit (`Access::Write`): the file's content before it is
//!   recorded (read the way the tool reads it: the editor's buffer when the
//!   editor offers `fs.readTextFile`).
//! * A command (`run_command`, and each read or kill of a background one): a
//!   [`Snapshot`] of the roots before and after; the difference is listed in
//!   the result, files the model read or wrote earlier are marked stale, and
//!   the files join the checkpoint.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::editor::{Editor, FileError};
use crate::llm::{ChatMessage, UserPart};
use crate::tools::snapshot::{Change, Changes, Snapshot};
use crate::tools::{Access, ToolOutput};

use super::checkpoint::{Before, Checkpoints};
use crate::agent::session::Session;

/// Most changed files listed in one result.
const LIST_LIMIT: usize = 50;

/// How the model last saw a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Read,
    Written,
    WrittenViaEditor,
}

/// A session's checkpoints and what its tool calls saw.
pub struct Tracker {
    pub checkpoints: Checkpoints,
    seen: Mutex<HashMap<PathBuf, Seen>>,
    /// Per background handle: the snapshot its changes are measured from.
    background: Mutex<HashMap<String, Snapshot>>,
    /// Held for a whole prompt turn (and by `/undo`): checkpoints follow the
    /// history, and queued turns wait here.
    pub gate: tokio::sync::Mutex<()>,
}

impl Tracker {
    pub fn new(dir: Option<PathBuf>) -> Self {
        Tracker {
            checkpoints: Checkpoints::new(dir),
            seen: Mutex::new(HashMap::new()),
            background: Mutex::new(HashMap::new()),
            gate: tokio::sync::Mutex::new(()),
        }
    }

    fn seen(&self) -> MutexGuard<'_, HashMap<PathBuf, Seen>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn background(&self) -> MutexGuard<'_, HashMap<String, Snapshot>> {
        self.background
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// What [`before`] found out, for [`after`].
pub struct Pre {
    snapshot: Option<Snapshot>,
}

/// Whether a call is a command whose effects on files are measured.
fn measures(tool: &str, access: &Access) -> bool {
    matches!(access, Access::Execute { .. }) || matches!(tool, "command_output" | "command_kill")
}

/// Runs right before a permitted call's action.
pub async fn before(session: &Session, tool: &str, access: &Access) -> Pre {
    if let Access::Write(paths) = access {
        for path in paths {
            if session.tracker.checkpoints.has(path) {
                continue;
            }
            let before = match read_now(&session.editor, path).await {
                Ok(Some(text)) => Before::Text(text),
                Ok(None) => Before::Absent,
                Err(_) => Before::Unknown,
            };
            session.tracker.checkpoints.note(path, before);
        }
    }
    let snapshot = if measures(tool, access) {
        Some(take(&session.roots()).await)
    } else {
        None
    };
    Pre { snapshot }
}

/// Runs after a call's action: records what it saw (when it succeeded,
/// `out` is its output) and appends the changed-files list to a command's
/// result. A failed command's changes still join the checkpoint.
pub async fn after(
    session: &Session,
    tool: &str,
    access: &Access,
    pre: Pre,
    out: Option<&mut ToolOutput>,
) {
    let Some(out) = out else {
        if let Some(since) = pre.snapshot {
            let now = take(&session.roots()).await;
            note_changes(session, &since.diff(&now));
        }
        return;
    };
    match access {
        Access::Read(paths) => {
            let mut seen = session.tracker.seen();
            for p in paths {
                seen.entry(p.clone()).or_insert(Seen::Read);
            }
        }
        Access::Write(paths) => {
            let how = if session.editor.can_write() {
                Seen::WrittenViaEditor
            } else {
                Seen::Written
            };
            let mut seen = session.tracker.seen();
            for p in paths {
                seen.insert(p.clone(), how);
            }
        }
        _ => {}
    }
    let Some(mut since) = pre.snapshot else {
        return;
    };
    let now = take(&session.roots()).await;
    let raw = out.raw_output.clone().unwrap_or_default();
    let handle = raw["handle"].as_str().map(str::to_owned);
    let running = raw["running"] == true;
    if let Some(h) = &handle {
        let mut bg = session.tracker.background();
        // A background command's changes count from its last read.
        if matches!(tool, "command_output" | "command_kill")
            && let Some(snap) = bg.remove(h)
        {
            since = snap;
        }
        if running {
            bg.insert(h.clone(), now.clone());
        }
    }
    let changes = since.diff(&now);
    note_changes(session, &changes);
    if let Some(text) = describe(&changes, &session.tracker.seen(), &session.cwd) {
        out.for_model.push_str("\n\n");
        out.for_model.push_str(&text);
    }
}

/// Adds what a command changed to the running turn's checkpoint (a file
/// already there keeps its earlier, known "before").
fn note_changes(session: &Session, changes: &Changes) {
    for (path, change) in changes.all() {
        let before = match change {
            Change::Created => Before::Absent,
            Change::Changed | Change::Deleted => Before::Unknown,
        };
        session.tracker.checkpoints.note(path, before);
    }
}

/// The changed-files list for the model, `None` when nothing changed.
fn describe(changes: &Changes, seen: &HashMap<PathBuf, Seen>, cwd: &Path) -> Option<String> {
    if changes.is_empty() {
        return changes.incomplete.then(|| {
            "[Too many files under the project to track what the command changed.]".into()
        });
    }
    let mut lines = vec!["Files the command created, changed or deleted:".to_owned()];
    let total = changes.created.len() + changes.changed.len() + changes.deleted.len();
    for (path, change) in changes.all().take(LIST_LIMIT) {
        let shown = crate::tools::paths::display(path, cwd);
        let note = match (change, seen.get(path)) {
            (Change::Created, _) | (_, None) => "",
            (_, Some(Seen::Read)) | (_, Some(Seen::Written)) => {
                " — stale: you saw this file earlier; read it again before editing it"
            }
            (_, Some(Seen::WrittenViaEditor)) => {
                " — stale: you wrote it through the editor, so the editor's buffer and the disk may now differ; read it again before editing it"
            }
        };
        lines.push(format!("- {} {shown}{note}", change.verb()));
    }
    if total > LIST_LIMIT {
        lines.push(format!("- … and {} more", total - LIST_LIMIT));
    }
    if changes.incomplete {
        lines.push(
            "[The project has too many files to track them all: more may have changed.]".into(),
        );
    }
    Some(lines.join("\n"))
}

async fn take(roots: &[PathBuf]) -> Snapshot {
    let roots = roots.to_vec();
    tokio::task::spawn_blocking(move || Snapshot::take(&roots))
        .await
        .unwrap_or_default()
}

/// A file's content now, as the tools see it (`None`: it does not exist).
pub async fn read_now(editor: &Editor, path: &Path) -> Result<Option<String>, FileError> {
    match editor.read_text_file(path).await {
        Ok(t) => Ok(Some(t)),
        Err(FileError::NotFound(_)) => Ok(None),
        Err(e) if !path.exists() => {
            tracing::debug!(error = %e, "treating an unreadable missing file as absent");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Runs a prompt turn with its checkpoint: begun once the turn holds the
/// gate (`_gate`, from [`Tracker::gate`]), finished with the files' final
/// contents.
pub async fn checkpointed<F, T>(
    session: &Arc<Session>,
    _gate: tokio::sync::MutexGuard<'_, ()>,
    prompt: &str,
    max_bytes: u64,
    cancel: &tokio_util::sync::CancellationToken,
    turn: F,
) -> T
where
    F: std::future::Future<Output = T>,
{
    let start = session.history.lock().await.messages.len();
    session.tracker.checkpoints.begin(prompt, start);
    let result = turn.await;
    let (end, user_text) = {
        let h = session.history.lock().await;
        (h.messages.len(), user_text_at(&h.messages, start))
    };
    let mut after = Vec::new();
    for path in session.tracker.checkpoints.current_paths() {
        // A cancelled turn may be the agent shutting down: the editor may
        // never answer, and the prompt's response must not wait for it.
        let content = if cancel.is_cancelled() {
            local_now(&path).await
        } else {
            match tokio::time::timeout(AFTER_READ, read_now(&session.editor, &path)).await {
                Ok(r) => r.ok().flatten(),
                Err(_) => local_now(&path).await,
            }
        };
        after.push((path, content));
    }
    if let Err(e) = session
        .tracker
        .checkpoints
        .finish(end, user_text, after, max_bytes)
    {
        tracing::warn!(error = %e, "checkpoint not saved");
        session
            .editor
            .update(&crate::acp::SessionUpdate::agent_text(
                format!("\n\n> ⚠ This turn's changes could not be saved for /undo: {e}\n\n"),
                None,
            ));
    }
    result
}

/// How long reading a file's final content through the editor may take.
const AFTER_READ: std::time::Duration = std::time::Duration::from_secs(5);

async fn local_now(path: &Path) -> Option<String> {
    crate::editor::read_local(path).await.ok()
}

/// The first text of the user message at `i`, if that is one.
pub fn user_text_at(messages: &[ChatMessage], i: usize) -> String {
    match messages.get(i) {
        Some(ChatMessage::User(parts)) => parts
            .iter()
            .find_map(|p| match p {
                UserPart::Text(t) => Some(t.clone()),
                _ => None,
            })
            .unwrap_or_default(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_files_are_marked() {
        let cwd = Path::new("/p");
        let changes = Changes {
            created: vec!["/p/new".into()],
            changed: vec!["/p/read".into(), "/p/ed".into(), "/p/other".into()],
            deleted: vec![],
            incomplete: false,
        };
        let seen = HashMap::from([
            (PathBuf::from("/p/read"), Seen::Read),
            (PathBuf::from("/p/ed"), Seen::WrittenViaEditor),
        ]);
        let text = describe(&changes, &seen, cwd).unwrap();
        assert!(text.contains("- created new\n"), "{text}");
        assert!(text.contains("- changed read — stale: you saw"), "{text}");
        assert!(
            text.contains("- changed ed — stale: you wrote it through the editor"),
            "{text}"
        );
        assert!(
            text.contains("- changed other\n") || text.ends_with("- changed other"),
            "{text}"
        );
        assert_eq!(describe(&Changes::default(), &seen, cwd), None);
    }
}
