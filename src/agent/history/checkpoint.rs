//! Checkpoints for `/undo` and `/rewind` (issue 19 §2).
//!
//! Each prompt turn that changes files leaves one checkpoint: for every file a
//! tool wrote or edited, and every file under the roots a command created,
//! changed or deleted, its content before the turn and its content after the
//! turn. They live beside the session log, in `<id>.checkpoints/<seq>.json`
//! (written once, when the turn ends), so they survive a restart; their total
//! size is bounded (`checkpoint_max_bytes`): the oldest are cut to a stub
//! that only says the turn existed, so `/undo` can tell the user it is gone.
//!
//! "Before" is known exactly for tool writes (the file is read first). For a
//! file a command changed or deleted it is the copy kept before the command
//! ran (every file under the roots, within bounds: see `changes`); a file it
//! created is "absent before". A file without a copy is recorded with the
//! reason, and reported as not restorable.
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde::{Deserialize, Serialize};

/// What a file was before the turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "k", content = "text", rename_all = "snake_case")]
pub enum Before {
    Absent,
    Text(String),
    /// A command changed or deleted it and no copy was kept (checkpoints
    /// of earlier versions, which kept copies of read files only).
    Unknown,
    /// Its content before the turn is not known: why, for the user.
    Unkept(String),
}

/// One file of a checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: PathBuf,
    pub before: Before,
    /// Its content when the turn ended (`None`: absent or unreadable), to
    /// tell whether the user changed it since.
    #[serde(default)]
    pub after: Option<String>,
}

/// One turn's checkpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub seq: u64,
    /// The prompt's first line, to name the turn to the user.
    pub prompt: String,
    /// The turn's messages in the model history: `[start, end)`.
    pub history_start: usize,
    pub history_end: usize,
    /// The first text of the turn's user message, to check that the history
    /// range still means this turn (a compaction rewrites the history).
    #[serde(default)]
    pub user_text: String,
    pub files: Vec<FileEntry>,
    /// The contents were dropped to stay within `checkpoint_max_bytes`.
    #[serde(default)]
    pub gone: bool,
}

impl Checkpoint {
    fn bytes(&self) -> u64 {
        self.files
            .iter()
            .map(|f| {
                let before = match &f.before {
                    Before::Text(t) => t.len(),
                    _ => 0,
                };
                (before + f.after.as_ref().map_or(0, String::len)) as u64
            })
            .sum()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot store the checkpoint in {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The checkpoints of one session.
pub struct Checkpoints {
    /// `None`: the session is not persisted (checkpoints stay in memory).
    dir: Option<PathBuf>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Being filled by the running turn.
    current: Option<Checkpoint>,
    /// Finished checkpoints, oldest first; loaded from `dir` on first use.
    done: Option<Vec<Checkpoint>>,
}

impl Checkpoints {
    pub fn new(dir: Option<PathBuf>) -> Self {
        Checkpoints {
            dir,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A turn starts; `history_start` is where its messages will go.
    pub fn begin(&self, prompt: &str, history_start: usize) {
        let mut st = self.lock();
        let seq = self.next_seq(&mut st);
        st.current = Some(Checkpoint {
            seq,
            // Like everything the agent keeps (SECURITY.md §3).
            prompt: crate::secrets::redact_string(crate::tools::sanitize_title(prompt, 80)),
            history_start,
            history_end: history_start,
            user_text: String::new(),
            files: Vec::new(),
            gone: false,
        });
    }

    /// Whether the running turn already has `path` (its first "before" wins).
    pub fn has(&self, path: &Path) -> bool {
        self.lock()
            .current
            .as_ref()
            .is_some_and(|c| c.files.iter().any(|f| f.path == path))
    }

    /// Records what `path` was before the running turn touched it; a later
    /// note for the same path is ignored. Outside a turn, does nothing.
    pub fn note(&self, path: &Path, before: Before) {
        let mut st = self.lock();
        let Some(cur) = st.current.as_mut() else {
            return;
        };
        if cur.files.iter().any(|f| f.path == path) {
            return;
        }
        cur.files.push(FileEntry {
            path: path.to_owned(),
            before,
            after: None,
        });
    }

    /// The running turn's files (to read their final content).
    pub fn current_paths(&self) -> Vec<PathBuf> {
        self.lock()
            .current
            .as_ref()
            .map(|c| c.files.iter().map(|f| f.path.clone()).collect())
            .unwrap_or_default()
    }

    /// The turn ended: keeps its checkpoint (when it changed files) with the
    /// final contents `after`, on disk when the session is persisted, and
    /// trims old checkpoints to `max_bytes`.
    pub fn finish(
        &self,
        history_end: usize,
        user_text: String,
        after: Vec<(PathBuf, Option<String>)>,
        max_bytes: u64,
    ) -> Result<(), CheckpointError> {
        let mut st = self.lock();
        let Some(mut cur) = st.current.take() else {
            return Ok(());
        };
        if cur.files.is_empty() {
            return Ok(());
        }
        cur.history_end = history_end.max(cur.history_start);
        cur.user_text = user_text;
        for (path, content) in after {
            if let Some(f) = cur.files.iter_mut().find(|f| f.path == path) {
                f.after = content;
            }
        }
        self.loaded(&mut st);
        self.write(&cur)?;
        let done = st.done.get_or_insert_with(Vec::new);
        done.push(cur);
        // The newest is always kept whole; older ones become stubs.
        let mut total: u64 = done.iter().map(Checkpoint::bytes).sum();
        let keep_from = done.len().saturating_sub(1);
        for cp in done.iter_mut().take(keep_from) {
            if total <= max_bytes {
                break;
            }
            if cp.gone {
                continue;
            }
            total -= cp.bytes();
            cp.files.clear();
            cp.gone = true;
            if let Err(e) = self.write(cp) {
                tracing::warn!(error = %e, "old checkpoint not trimmed");
            }
        }
        Ok(())
    }

    /// The `n`-th newest finished checkpoint (1 = the last), if any.
    pub fn nth_last(&self, n: usize) -> Option<Checkpoint> {
        let mut st = self.lock();
        self.loaded(&mut st);
        let done = st.done.as_ref()?;
        done.len().checked_sub(n).and_then(|i| done.get(i)).cloned()
    }

    /// How many finished checkpoints there are.
    pub fn count(&self) -> usize {
        let mut st = self.lock();
        self.loaded(&mut st);
        st.done.as_ref().map_or(0, Vec::len)
    }

    /// Forgets checkpoint `seq` (it was undone).
    pub fn remove(&self, seq: u64) {
        let mut st = self.lock();
        self.loaded(&mut st);
        if let Some(done) = st.done.as_mut() {
            done.retain(|c| c.seq != seq);
        }
        if let Some(dir) = &self.dir {
            let path = dir.join(format!("{seq}.json"));
            if let Err(e) = std::fs::remove_file(&path)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::warn!(path = %path.display(), error = %e, "undone checkpoint not removed");
            }
        }
    }

    fn next_seq(&self, st: &mut State) -> u64 {
        self.loaded(st);
        st.done
            .as_ref()
            .and_then(|d| d.last())
            .map_or(1, |c| c.seq + 1)
    }

    fn loaded(&self, st: &mut State) {
        if st.done.is_some() {
            return;
        }
        st.done = Some(self.dir.as_deref().map(read_dir).unwrap_or_default());
    }

    fn write(&self, cp: &Checkpoint) -> Result<(), CheckpointError> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let io = |path: &Path, source| CheckpointError::Io {
            path: path.to_owned(),
            source,
        };
        create_private_dir(dir).map_err(|e| io(dir, e))?;
        let path = dir.join(format!("{}.json", cp.seq));
        let tmp = dir.join(format!(".{}.json.tmp", cp.seq));
        let bytes = serde_json::to_vec(cp).map_err(|e| io(&path, e.into()))?;
        write_private(&tmp, &bytes).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
        .create(dir)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .owner_only()
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// The checkpoints stored in `dir`, oldest first; unreadable ones are skipped.
fn read_dir(dir: &Path) -> Vec<Checkpoint> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut list: Vec<Checkpoint> = entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| {
            let bytes = std::fs::read(e.path()).ok()?;
            match serde_json::from_slice::<Checkpoint>(&bytes) {
                Ok(c) => Some(c),
                Err(err) => {
                    tracing::warn!(path = %e.path().display(), error = %err, "checkpoint skipped");
                    None
                }
            }
        })
        .collect();
    list.sort_by_key(|c| c.seq);
    list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(cps: &Checkpoints, name: &str, text: &str, max: u64) {
        cps.begin(name, 0);
        cps.note(Path::new(name), Before::Text(text.into()));
        cps.note(Path::new(name), Before::Absent); // the first note wins
        cps.finish(2, name.into(), vec![(name.into(), Some("new".into()))], max)
            .unwrap();
    }

    #[test]
    fn checkpoints_persist_and_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let cps = Checkpoints::new(Some(dir.path().join("s.checkpoints")));
        // A turn without file changes leaves nothing.
        cps.begin("question", 0);
        cps.finish(2, String::new(), Vec::new(), 1000).unwrap();
        assert_eq!(cps.count(), 0);
        turn(&cps, "/a", &"a".repeat(600), 1000);
        turn(&cps, "/b", &"b".repeat(600), 1000);
        // Reloaded from disk (a restart): the oldest was cut to a stub.
        let again = Checkpoints::new(Some(dir.path().join("s.checkpoints")));
        assert_eq!(again.count(), 2);
        let last = again.nth_last(1).unwrap();
        assert_eq!(last.files[0].before, Before::Text("b".repeat(600)));
        assert_eq!(last.files[0].after.as_deref(), Some("new"));
        let first = again.nth_last(2).unwrap();
        assert!(first.gone && first.files.is_empty());
        again.remove(last.seq);
        assert_eq!(again.count(), 1);
        assert_eq!(
            Checkpoints::new(Some(dir.path().join("s.checkpoints"))).count(),
            1
        );
        // Sequence numbers keep growing after a restart.
        again.begin("next", 0);
        assert!(again.lock().current.as_ref().unwrap().seq > first.seq);
    }
}
