//! The walk behind a [`Snapshot`]: `glob`'s walker ([`walker`]), run on
//! all cores. Each thread fills its own lists and hands them over once,
//! when it ends, so the threads never contend on a lock per file.
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ignore::WalkState;

use super::{MAX_ENTRIES, Snapshot, Stamp};
use crate::tools::search::walker;

type Found = (Vec<(PathBuf, Stamp)>, Vec<PathBuf>);

/// One thread's findings, handed to `into` when the thread's visitor is
/// dropped (the parallel walker drops it when the thread is done).
struct Local<'a> {
    files: Vec<(PathBuf, Stamp)>,
    dirs: Vec<PathBuf>,
    into: &'a Mutex<Vec<Found>>,
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        let found = (
            std::mem::take(&mut self.files),
            std::mem::take(&mut self.dirs),
        );
        self.into
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(found);
    }
}

/// The files under `roots` (ignore rules honoured, hidden entries and
/// symbolic links skipped) and the directories the walk entered.
/// Blocking.
pub(super) fn walk(roots: &[PathBuf]) -> (Snapshot, Vec<PathBuf>) {
    let found = Mutex::new(Vec::new());
    let count = AtomicUsize::new(0);
    let truncated = AtomicBool::new(false);
    for root in roots {
        walker(root).build_parallel().run(|| {
            let mut local = Local {
                files: Vec::new(),
                dirs: Vec::new(),
                into: &found,
            };
            let count = &count;
            let truncated = &truncated;
            Box::new(move |entry| {
                let Ok(entry) = entry else {
                    return WalkState::Continue;
                };
                let Some(kind) = entry.file_type() else {
                    return WalkState::Continue;
                };
                if kind.is_dir() {
                    local.dirs.push(entry.into_path());
                } else if kind.is_file() {
                    let Ok(meta) = entry.metadata() else {
                        return WalkState::Continue;
                    };
                    if count.fetch_add(1, Ordering::Relaxed) >= MAX_ENTRIES {
                        truncated.store(true, Ordering::Relaxed);
                        return WalkState::Quit;
                    }
                    local.files.push((entry.into_path(), Stamp::of(&meta)));
                }
                WalkState::Continue
            })
        });
    }
    let found = found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut snap = Snapshot {
        files: std::collections::HashMap::with_capacity(count.load(Ordering::Relaxed)),
        truncated: truncated.load(Ordering::Relaxed),
    };
    let mut dirs = Vec::new();
    for (files, d) in found {
        snap.files.extend(files);
        dirs.extend(d);
    }
    (snap, dirs)
}
