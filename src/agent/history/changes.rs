//! What a session's turns changed (issue 19 §2–3): the hooks around each tool
//! call that fill the turn's checkpoint, and the changed-files list a command
//! result gets.
//!
//! * A write or edit (`Access::Write`): the file's content before it is
//!   recorded (read the way the tool reads it: the editor's buffer when the
//!   editor offers `fs.readTextFile`).
//! * A command (`run_command`, and each read or kill of a background one):
//!   what changed under the roots between a [`Mark`] taken before and the
//!   end of the command ([`Watch`]: inotify events, or a walk when the watch
//!   cannot run); the difference is listed in the result, files the model
//!   read or wrote earlier are marked stale, and the files join the
//!   checkpoint.
//!
//! Content before a command: a command's changes are only seen after it
//! ran, so, before each command, the current content of the files it may
//! change (every file under the roots the watch tracks) is kept in memory:
//! text files up to [`COPY_MAX_FILE`] bytes each, [`COPY_MAX_TOTAL`] in all,
//! read within [`COPY_MAX_TIME`]; the files the model read or wrote come
//! first, then the most recently modified. A copy is reused while the file's
//! size, mtime and inode are unchanged, so once the copies are warm a
//! command costs one lookup per file and a read of what changed since the
//! last one. `/undo` then puts back every file a command changed or deleted;
//! for a file without a copy it says why ([`Unkept`]): too big, the limit
//! was reached, not text, too many files to track.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use crate::editor::{Editor, FileError};
use crate::llm::{ChatMessage, UserPart};
use crate::tools::snapshot::{Change, Changes, Mark, Stamp, Watch};
use crate::tools::{Access, ToolOutput};

use super::checkpoint::Before;
use super::tracker::{
    COPY_MAX_FILE, COPY_MAX_TIME, COPY_MAX_TOTAL, Copies, CopyCache, Seen, Unkept,
};
use crate::agent::session::Session;

/// Most changed files listed in one result.
const LIST_LIMIT: usize = 50;

/// How much [`keep_copies`] may keep and read.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    file: u64,
    total: u64,
    time: std::time::Duration,
}

const BOUNDS: Bounds = Bounds {
    file: COPY_MAX_FILE,
    total: COPY_MAX_TOTAL,
    time: COPY_MAX_TIME,
};

/// The content now of `files` (see the module docs for the bounds and the
/// order), those in `seen` first; `cache` holds the last copies. Blocking.
fn keep_copies(
    mut files: Vec<(PathBuf, Stamp)>,
    truncated: bool,
    seen: &std::collections::HashSet<PathBuf>,
    cache: &Mutex<CopyCache>,
    bounds: Bounds,
) -> Copies {
    let started = std::time::Instant::now();
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    files.sort_by_key(|(p, s)| (!seen.contains(p), std::cmp::Reverse(s.mtime_ns())));
    let mut out = Copies {
        truncated,
        ..Copies::default()
    };
    let mut total = 0;
    for (path, stamp) in files {
        if stamp.size() > bounds.file {
            out.unkept.insert(path, Unkept::TooBig(stamp.size()));
            continue;
        }
        if total + stamp.size() > bounds.total {
            out.unkept.insert(path, Unkept::Limit);
            continue;
        }
        let text = match cache.get(&path) {
            Some((s, t)) if *s == stamp => t.clone(),
            _ if started.elapsed() > bounds.time => {
                out.unkept.insert(path, Unkept::Limit);
                continue;
            }
            _ => match read_regular(&path, bounds.file) {
                Some(t) => Arc::from(t),
                None => {
                    out.unkept.insert(path, Unkept::NotText);
                    continue;
                }
            },
        };
        total += text.len() as u64;
        cache.insert(path.clone(), (stamp, text.clone()));
        out.texts.insert(path, text);
    }
    cache.retain(|p, _| out.texts.contains_key(p));
    out
}

/// The text of the regular file at `path` (no link followed at its end),
/// `None` when it is not one or not text.
fn read_regular(path: &Path, max: u64) -> Option<String> {
    use std::io::Read as _;
    let mut f = crate::platform::fs::no_follow(std::fs::OpenOptions::new().read(true))
        .open(path)
        .ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.by_ref().take(max + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > max || crate::editor::looks_binary(&bytes) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// What [`before`] found out, for [`after`].
pub struct Pre {
    mark: Option<(Mark, Copies)>,
}

/// The session's watch over its current roots. A mark taken on an earlier
/// watch (a background command started before `/add-dir`) reads as
/// "incomplete" on the new one rather than as a wrong list.
fn watch(session: &Session) -> Arc<Watch> {
    let roots = session.roots();
    let mut slot = session
        .tracker
        .watch
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    match &*slot {
        Some((r, w)) if *r == roots => w.clone(),
        _ => {
            let w = Arc::new(Watch::new(roots.clone()));
            *slot = Some((roots, w.clone()));
            w
        }
    }
}

/// A mark for now and the copies kept with it.
async fn mark(session: &Session) -> Option<(Mark, Copies)> {
    let watch = watch(session);
    let seen: std::collections::HashSet<PathBuf> = session.tracker.seen().keys().cloned().collect();
    let cache = session.tracker.copies.clone();
    tokio::task::spawn_blocking(move || {
        let (mark, files, truncated) = watch.mark_listed();
        let copies = keep_copies(files, truncated, &seen, &cache, BOUNDS);
        (mark, copies)
    })
    .await
    .ok()
}

/// What changed since `mark`, and a mark for now.
async fn since(session: &Session, mark: Mark) -> Option<(Changes, Mark)> {
    let watch = watch(session);
    tokio::task::spawn_blocking(move || watch.since(&mark))
        .await
        .ok()
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
                Err(e) => {
                    Before::Unkept(format!("it could not be read before it was written ({e})"))
                }
            };
            session.tracker.checkpoints.note(path, before);
        }
    }
    let mark = if measures(tool, access) {
        mark(session).await
    } else {
        None
    };
    Pre { mark }
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
        if let Some((mark, copies)) = pre.mark
            && let Some((changes, _)) = since(session, mark).await
        {
            note_changes(session, &changes, &copies);
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
    let Some((mut from, mut copies)) = pre.mark else {
        return;
    };
    let raw = out.raw_output.clone().unwrap_or_default();
    let handle = raw["handle"].as_str().map(str::to_owned);
    let running = raw["running"] == true;
    // A background command's changes count from its last read.
    if let Some(h) = &handle
        && matches!(tool, "command_output" | "command_kill")
        && let Some(kept) = session.tracker.background().remove(h)
    {
        (from, copies) = kept;
    }
    let Some((changes, now)) = since(session, from).await else {
        return;
    };
    note_changes(session, &changes, &copies);
    if let Some(h) = handle
        && running
    {
        // Its next read counts from `now`, with the files as they are now.
        let copies = mark(session).await.map(|(_, c)| c).unwrap_or_default();
        session.tracker.background().insert(h, (now, copies));
    }
    if let Some(text) = describe(&changes, &session.tracker.seen(), &session.cwd) {
        out.for_model.push_str("\n\n");
        out.for_model.push_str(&text);
    }
}

/// Adds what a command changed to the running turn's checkpoint (a file
/// already there keeps its earlier, known "before").
fn note_changes(session: &Session, changes: &Changes, copies: &Copies) {
    for (path, change) in changes.all() {
        let before = match (change, copies.texts.get(path)) {
            (Change::Created, _) => Before::Absent,
            (_, Some(text)) => Before::Text(text.to_string()),
            (_, None) => {
                let why = copies
                    .unkept
                    .get(path)
                    .copied()
                    .unwrap_or(if copies.truncated {
                        Unkept::TooManyFiles
                    } else {
                        Unkept::Limit
                    });
                Before::Unkept(format!(
                    "a command changed or deleted it, and no copy was kept before it ran: {}",
                    why.why()
                ))
            }
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
        let shown = shown(path, cwd);
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

/// `path` for a listing: relative to `cwd`, control characters escaped (a
/// file name with a newline must not add a line to the list).
pub fn shown(path: &Path, cwd: &Path) -> String {
    let s = crate::tools::paths::display(path, cwd);
    if !s.chars().any(char::is_control) {
        return s;
    }
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
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
/// gate (`_gate`, from [`Tracker::gate`], which the caller keeps until it
/// has announced the turn's end), finished with the files' final contents.
pub async fn checkpointed<F, T>(
    session: &Arc<Session>,
    _gate: &tokio::sync::MutexGuard<'_, ()>,
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

    /// Every file a command may change is kept, within the bounds, the
    /// files the model saw first; reused copies cost no read, and what was
    /// not kept says why.
    #[test]
    fn copies_are_bounded_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let file = |name: &str, bytes: &[u8]| {
            let p = root.join(name);
            std::fs::write(&p, bytes).unwrap();
            (p.clone(), Stamp::lstat(&p).unwrap())
        };
        let files = vec![
            file("a.txt", b"aaaa"),
            file("seen.txt", b"ssss"),
            file("big.txt", &[b'b'; 20]),
            file("bin.dat", b"x\0y"),
            file("c.txt", b"cccc"),
        ];
        let seen = std::collections::HashSet::from([root.join("seen.txt")]);
        let cache = Mutex::new(CopyCache::new());
        let bounds = Bounds {
            file: 10,
            total: 11,
            time: std::time::Duration::from_secs(60),
        };
        let kept = keep_copies(files.clone(), false, &seen, &cache, bounds);
        assert_eq!(&*kept.texts[&root.join("seen.txt")], "ssss");
        assert_eq!(kept.texts.len(), 2, "{:?}", kept.texts.keys());
        assert_eq!(kept.unkept[&root.join("big.txt")], Unkept::TooBig(20));
        assert_eq!(kept.unkept[&root.join("bin.dat")], Unkept::NotText);
        let limited = kept
            .unkept
            .values()
            .filter(|u| **u == Unkept::Limit)
            .count();
        assert_eq!(limited, 1, "{:?}", kept.unkept);
        assert!(Unkept::TooBig(2 << 20).why().contains("2048 KiB"));
        // A kept copy is reused while the file's stamp is the same.
        let again = keep_copies(files, false, &seen, &cache, bounds);
        assert_eq!(again.texts.len(), 2);
        assert!(Arc::ptr_eq(
            &kept.texts[&root.join("seen.txt")],
            &again.texts[&root.join("seen.txt")]
        ));
    }
}
