//! What a command changed (issue 19 §2–3): a snapshot of the paths, sizes,
//! mtimes and inodes of the files under the session roots, taken before and
//! after a command, and the difference between two snapshots.
//!
//! The walk is the one `glob` uses ([`super::search::walker`]): ignore files
//! are honoured and hidden entries skipped, so build outputs (`target/`,
//! `node_modules/`) and `.git/` cost nothing and are not reported. It is
//! bounded ([`MAX_ENTRIES`]); a snapshot that hit the bound says so and its
//! difference is marked incomplete. Cost: `scripts/bench.sh` (`checkpoint`
//! scenario); about 10 µs per file per walk in a release build on a loaded
//! 2-core machine (5 000 files: ~108 ms for the pair, 100 000: ~2 s), over
//! the 10 ms target: an inotify-based tracker (`notify`) is the
//! way to meet it.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Most files one snapshot records.
pub const MAX_ENTRIES: usize = 200_000;

mod walk;
pub mod watch;

pub use watch::{Mark, Watch};

/// What identifies a version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    size: u64,
    mtime_ns: i64,
    ino: u64,
}

/// The modification time in nanoseconds since the epoch (before it:
/// negative); 0 where the system keeps none.
fn mtime_ns(meta: &std::fs::Metadata) -> i64 {
    let Ok(t) = meta.modified() else {
        return 0;
    };
    match t.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
    }
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            size: meta.len(),
            mtime_ns: mtime_ns(meta),
            ino: crate::platform::fs::inode(meta),
        }
    }

    /// The file's size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// When the file was last modified, in nanoseconds since the epoch.
    pub(crate) fn mtime_ns(&self) -> i64 {
        self.mtime_ns
    }

    /// The stamp of the regular file at `path` (not following a symbolic
    /// link), `None` for anything else.
    pub(crate) fn lstat(path: &Path) -> Option<Stamp> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        meta.file_type().is_file().then(|| Stamp::of(&meta))
    }
}

/// The files under some roots at one moment.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    files: HashMap<PathBuf, Stamp>,
    /// The walk stopped at [`MAX_ENTRIES`].
    pub truncated: bool,
}

/// Files created, changed and deleted between two snapshots, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub created: Vec<PathBuf>,
    pub changed: Vec<PathBuf>,
    pub deleted: Vec<PathBuf>,
    /// One of the snapshots was cut short: more may have changed.
    pub incomplete: bool,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.created.is_empty() && self.changed.is_empty() && self.deleted.is_empty()
    }

    /// Every path, with what happened to it.
    pub fn all(&self) -> impl Iterator<Item = (&Path, Change)> {
        self.created
            .iter()
            .map(|p| (p.as_path(), Change::Created))
            .chain(self.changed.iter().map(|p| (p.as_path(), Change::Changed)))
            .chain(self.deleted.iter().map(|p| (p.as_path(), Change::Deleted)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Created,
    Changed,
    Deleted,
}

impl Change {
    pub fn verb(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Changed => "changed",
            Change::Deleted => "deleted",
        }
    }
}

impl Snapshot {
    /// Walks `roots` (blocking: call from a blocking thread) with the
    /// parallel walker (the cost is mostly one `lstat` per file, shared
    /// over the cores).
    pub fn take(roots: &[PathBuf]) -> Snapshot {
        walk::walk(roots).0
    }

    /// Number of files recorded.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// What changed from `self` to `later`.
    pub fn diff(&self, later: &Snapshot) -> Changes {
        let mut c = Changes {
            incomplete: self.truncated || later.truncated,
            ..Changes::default()
        };
        for (path, stamp) in &later.files {
            match self.files.get(path) {
                None => c.created.push(path.clone()),
                Some(old) if old != stamp => c.changed.push(path.clone()),
                Some(_) => {}
            }
        }
        c.deleted = self
            .files
            .keys()
            .filter(|p| !later.files.contains_key(*p))
            .cloned()
            .collect();
        c.created.sort();
        c.changed.sort();
        c.deleted.sort();
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_created_changed_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("keep.txt"), "k").unwrap();
        std::fs::write(root.join("edit.txt"), "a").unwrap();
        std::fs::write(root.join("gone.txt"), "g").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        std::fs::create_dir(root.join("ignored")).unwrap();
        let before = Snapshot::take(std::slice::from_ref(&root));
        std::fs::write(root.join("edit.txt"), "abc").unwrap();
        std::fs::remove_file(root.join("gone.txt")).unwrap();
        std::fs::write(root.join("new.txt"), "n").unwrap();
        std::fs::write(root.join("ignored/out.o"), "x").unwrap();
        let after = Snapshot::take(std::slice::from_ref(&root));
        let c = before.diff(&after);
        assert_eq!(c.created, [root.join("new.txt")]);
        assert_eq!(c.changed, [root.join("edit.txt")]);
        assert_eq!(c.deleted, [root.join("gone.txt")]);
        assert!(!c.incomplete);
    }

    /// `sed -i` replaces the file by a rename: same size and possibly the
    /// same mtime tick, but a new inode. Where metadata carries no inode
    /// (Windows) a walk cannot tell; the watch sees the rename itself
    /// (`watch::tests::a_replaced_file_counts_as_changed`).
    #[test]
    fn a_replaced_file_counts_as_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::platform::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(root.join("f"), "aaa").unwrap();
        let meta = std::fs::metadata(root.join("f")).unwrap();
        if crate::platform::fs::inode(&meta) == 0 {
            return;
        }
        let before = Snapshot::take(std::slice::from_ref(&root));
        let tmp = std::fs::File::create(root.join("f.tmp")).unwrap();
        std::io::Write::write_all(&mut &tmp, b"bbb").unwrap();
        tmp.set_modified(meta.modified().unwrap()).unwrap();
        drop(tmp);
        std::fs::rename(root.join("f.tmp"), root.join("f")).unwrap();
        let after = Snapshot::take(std::slice::from_ref(&root));
        assert_eq!(before.diff(&after).changed, [root.join("f")]);
    }
}
