//! A session's change tracker (issue 19 §2–3): its checkpoints, how the
//! model last saw each file, and the copies kept before commands. The
//! session holds one ([`crate::agent::session::Session::tracker`]); the hooks
//! that fill it are in [`super::changes`], which needs the session, so the
//! tracker lives here, apart from both.
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::tools::snapshot::{Mark, Stamp, Watch};

use super::checkpoint::Checkpoints;

/// Largest file whose content is kept before a command.
pub const COPY_MAX_FILE: u64 = 1024 * 1024;
/// Most content kept before a command, in all.
pub const COPY_MAX_TOTAL: u64 = 32 * 1024 * 1024;
/// Longest time spent reading files to keep before one command (reused
/// copies cost no reading).
pub const COPY_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// Why a file's content before a command was not kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unkept {
    TooBig(u64),
    Limit,
    NotText,
    TooManyFiles,
}

impl Unkept {
    pub(super) fn why(self) -> String {
        match self {
            Unkept::TooBig(size) => format!(
                "it held {} KiB, more than the {} KiB kept per file",
                size.div_ceil(1024),
                COPY_MAX_FILE >> 10
            ),
            Unkept::Limit => format!(
                "the copies kept before the command had reached their limit ({} MiB, {} s)",
                COPY_MAX_TOTAL >> 20,
                COPY_MAX_TIME.as_secs()
            ),
            Unkept::NotText => "it is not a text file".into(),
            Unkept::TooManyFiles => format!(
                "the project has more than {} files, more than are tracked",
                crate::tools::snapshot::MAX_ENTRIES
            ),
        }
    }
}

/// Contents of the files a command may change, kept before it.
#[derive(Default)]
pub(super) struct Copies {
    pub(super) texts: HashMap<PathBuf, Arc<str>>,
    pub(super) unkept: HashMap<PathBuf, Unkept>,
    /// The list of files was cut short: a file not in it has no copy.
    pub(super) truncated: bool,
}

pub(super) type CopyCache = HashMap<PathBuf, (Stamp, Arc<str>)>;

/// How the model last saw a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Seen {
    Read,
    Written,
    WrittenViaEditor,
}

/// A session's checkpoints and what its tool calls saw.
pub struct Tracker {
    pub checkpoints: Checkpoints,
    seen: Mutex<HashMap<PathBuf, Seen>>,
    /// Per background handle: where its changes are measured from, and the
    /// contents kept then.
    background: Mutex<HashMap<String, (Mark, Copies)>>,
    /// Started at the first command, for the roots it was started with
    /// (`/add-dir` changes them: the next command starts a new watch).
    pub(super) watch: Mutex<Option<(Vec<PathBuf>, Arc<Watch>)>>,
    /// The last copies kept, with the stamp they were read at.
    pub(super) copies: Arc<Mutex<CopyCache>>,
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
            watch: Mutex::new(None),
            copies: Arc::default(),
            gate: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether the model read or wrote `path` (or was shown it) in this session.
    pub fn has_seen(&self, path: &Path) -> bool {
        self.seen().contains_key(path)
    }

    /// The files the model read or wrote (or was shown) in this session.
    pub fn seen_files(&self) -> Vec<PathBuf> {
        self.seen().keys().cloned().collect()
    }

    /// The model was shown `path`'s content (an editing tool's answer).
    pub fn mark_shown(&self, path: &Path) {
        self.seen().entry(path.to_path_buf()).or_insert(Seen::Read);
    }

    pub(super) fn seen(&self) -> MutexGuard<'_, HashMap<PathBuf, Seen>> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn background(&self) -> MutexGuard<'_, HashMap<String, (Mark, Copies)>> {
        self.background
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
