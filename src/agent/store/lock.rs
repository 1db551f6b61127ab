//! One writer per session log (issue 14; DESIGN §4 "Session logs").
//!
//! A process that holds a session open holds an exclusive lock
//! (`File::try_lock`: `flock` on Unix, `LockFileEx` on Windows) on
//! `<id>.lock` beside its log, with its pid written inside. A second
//! process that loads, resumes or deletes the session is refused with an
//! error naming the session and that pid, so two processes never interleave
//! records in one log. Inside one process the claim is shared (the editor
//! reopening a thread replaces the live session; both belong to the same
//! writer). The lock goes when the last holder (the session's log) is
//! dropped — session closed or deleted — and with the process, however it
//! ends: the system drops the lock with the file handle. (On Windows the
//! lock also keeps the other process from reading the pid inside: the
//! error then names no pid.)
//!
//! The lock file is never removed while unlocked by us, except by
//! `session/delete` while holding it; a process that locked a file that was
//! removed meanwhile sees a different inode at the path and tries again.
use std::collections::HashMap;
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::agent::store::StoreError;
use crate::platform::fs::OwnerOnly as _;

/// A held lock on one session's log; released when the last clone is dropped.
#[derive(Debug)]
pub struct Claim {
    path: PathBuf,
    _file: std::fs::File,
}

impl Claim {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Claims held by this process, by lock path.
static HELD: Mutex<Option<HashMap<PathBuf, Weak<Claim>>>> = Mutex::new(None);

/// Takes (or shares, inside this process) the lock of session `id` whose
/// files live in `dir`. [`StoreError::Locked`] when another process holds it.
pub fn claim(dir: &Path, id: &str) -> Result<Arc<Claim>, StoreError> {
    let path = dir.join(format!("{id}.lock"));
    let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
    let held = held.get_or_insert_with(HashMap::new);
    if let Some(c) = held.get(&path).and_then(Weak::upgrade) {
        return Ok(c);
    }
    held.retain(|_, w| w.strong_count() > 0);
    let io = |source| StoreError::Io {
        path: path.clone(),
        source,
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
        .create(dir)
        .map_err(io)?;
    for _ in 0..16 {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .owner_only()
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Err(StoreError::Locked {
                    id: id.to_owned(),
                    pid: text.trim().parse().ok(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(io(e)),
        }
        // Locked; but if the file was removed (a delete) before we locked it,
        // the lock guards nothing: start over on the file now at the path.
        let same = match (
            crate::platform::fs::file_id(&file),
            crate::platform::fs::path_id(&path),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same {
            continue;
        }
        let pid = format!("{}\n", std::process::id());
        let written = file
            .set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(pid.as_bytes()));
        if let Err(e) = written {
            tracing::debug!(error = %e, "cannot write the pid into the session lock");
        }
        let c = Arc::new(Claim {
            path: path.clone(),
            _file: file,
        });
        held.insert(path, Arc::downgrade(&c));
        return Ok(c);
    }
    Err(io(std::io::Error::other(
        "the lock file keeps being replaced",
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_shared_in_process_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let a = claim(dir.path(), "s1").unwrap();
        let b = claim(dir.path(), "s1").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let pid = std::fs::read_to_string(a.path()).unwrap();
        assert_eq!(pid.trim(), std::process::id().to_string());
        // Another open file description conflicts while held (what a second
        // process would see) ...
        let other = std::fs::File::open(a.path()).unwrap();
        assert!(matches!(
            other.try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop((a, b));
        // ... and not once the last holder is gone.
        other.try_lock().unwrap();
    }
}
