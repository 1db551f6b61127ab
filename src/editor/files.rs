//! Local file access: the fallback when the editor offers no `fs` methods.
use std::path::{Path, PathBuf};

use crate::rpc::{RpcError, codes};

#[derive(Debug, Clone, thiserror::Error)]
pub enum FileError {
    #[error("{} does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("{} is a directory, not a file (use list_directory)", .0.display())]
    IsDirectory(PathBuf),
    #[error("{} looks like a binary file; only text files can be read or edited", .0.display())]
    Binary(PathBuf),
    #[error("{} is not valid UTF-8 text", .0.display())]
    NotUtf8(PathBuf),
    #[error("{} is not a regular file (a device, FIFO or socket); only files can be read", .0.display())]
    NotRegular(PathBuf),
    #[error(
        "{} holds more than {} MiB, more than is read whole; search it with grep or look at it with a command",
        path.display(), limit >> 20
    )]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("cannot access {}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    #[error("the editor could not access {}: {message}", path.display())]
    Editor { path: PathBuf, message: String },
    /// A directory on the path became a symbolic link (or the file is not
    /// where it was written): something is moving the project's folders
    /// while the agent writes. The turn stops.
    #[error(
        "{} was not written safely: {detail}. Something changed the project's folders while the agent was writing (a command running in the background?); the turn was stopped so that nothing more is written. Check for files written outside the project, stop that process, and try again",
        path.display()
    )]
    Moved { path: PathBuf, detail: String },
}

/// The most a text file may hold to be read whole (`read_file`, edits):
/// 32 MiB, far above any source file, so that no file (or device) can fill
/// the agent's memory.
pub const MAX_TEXT_FILE: u64 = 32 << 20;

/// Files larger than this on disk are read from the editor in ranges of
/// lines rather than in one answer (a frame is at most 16 MiB).
pub const WHOLE_EDITOR_READ: u64 = 4 << 20;
/// About how many bytes one ranged read asks for, and the lines of the first.
pub const EDITOR_RANGE_BYTES: u64 = 2 << 20;
pub const EDITOR_RANGE_FIRST_LINES: u64 = 20_000;

/// What the disk says of a file before the editor is asked for it: its
/// size, or `None` when it is not on disk (the editor may still hold a
/// buffer for it). A directory, a device and a file over [`MAX_TEXT_FILE`]
/// are refused here, without asking the editor.
pub async fn size_on_disk(path: &Path) -> Result<Option<u64>, FileError> {
    let Ok(meta) = tokio::fs::metadata(path).await else {
        return Ok(None);
    };
    if meta.is_dir() {
        return Err(FileError::IsDirectory(path.to_owned()));
    }
    if !meta.is_file() {
        return Err(FileError::NotRegular(path.to_owned()));
    }
    if meta.len() > MAX_TEXT_FILE {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            limit: MAX_TEXT_FILE,
        });
    }
    Ok(Some(meta.len()))
}

/// NUL bytes in the first 8 KiB mark a file as binary (git's rule).
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

fn io(path: &Path, e: std::io::Error) -> FileError {
    match e.kind() {
        std::io::ErrorKind::NotFound => FileError::NotFound(path.to_owned()),
        std::io::ErrorKind::IsADirectory => FileError::IsDirectory(path.to_owned()),
        _ => FileError::Io {
            path: path.to_owned(),
            message: e.to_string(),
        },
    }
}

pub async fn read_local(path: &Path) -> Result<String, FileError> {
    use tokio::io::AsyncReadExt as _;
    let meta = tokio::fs::metadata(path).await.map_err(|e| io(path, e))?;
    if meta.is_dir() {
        return Err(FileError::IsDirectory(path.to_owned()));
    }
    // An outside review read `/dev/zero` (allowed by the user as "Read
    // /dev/zero") and the agent grew by 1.5 GB a second, past the turn's
    // cancellation; a FIFO blocked the read until cancelled.
    if !meta.is_file() {
        return Err(FileError::NotRegular(path.to_owned()));
    }
    let too_large = || FileError::TooLarge {
        path: path.to_owned(),
        limit: MAX_TEXT_FILE,
    };
    if meta.len() > MAX_TEXT_FILE {
        return Err(too_large());
    }
    let file = tokio::fs::File::open(path).await.map_err(|e| io(path, e))?;
    // The length may be wrong (`/proc` files say 0) or grow while read.
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_TEXT_FILE + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| io(path, e))?;
    if bytes.len() as u64 > MAX_TEXT_FILE {
        return Err(too_large());
    }
    if looks_binary(&bytes) {
        return Err(FileError::Binary(path.to_owned()));
    }
    String::from_utf8(bytes).map_err(|_| FileError::NotUtf8(path.to_owned()))
}

/// Writes via a temporary file in the same directory and a rename, so a crash
/// never leaves a half-written file; keeps the permissions of an existing file.
///
/// The file is opened beneath the root among `roots` that holds `path`
/// (`cap-std`: on Linux `openat2` with `RESOLVE_BENEATH`), never through a
/// path that can change between the check and the write: a directory on the
/// way that became a symbolic link leading out of the root is refused, not
/// followed. A path outside every root (a write the user allowed there) is
/// opened beneath its parent directory.
pub async fn write_local(roots: &[PathBuf], path: &Path, content: &str) -> Result<(), FileError> {
    let roots = roots.to_vec();
    let path = path.to_owned();
    let content = content.to_owned();
    tokio::task::spawn_blocking(move || write_atomic(&roots, &path, content.as_bytes()))
        .await
        .map_err(|e| FileError::Io {
            path: PathBuf::new(),
            message: e.to_string(),
        })?
}

/// The root of `roots` that holds `path`, and `path` relative to it; the
/// parent directory and the file name when no root does.
fn beneath<'a>(roots: &'a [PathBuf], path: &'a Path) -> Option<(&'a Path, &'a Path)> {
    roots
        .iter()
        .filter_map(|r| Some((r.as_path(), path.strip_prefix(r).ok()?)))
        .filter(|(_, rel)| rel.file_name().is_some())
        .max_by_key(|(r, _)| r.as_os_str().len())
        .or_else(|| Some((path.parent()?, Path::new(path.file_name()?))))
}

/// Whether `path` names a file beneath one of `roots` (not a root itself).
pub fn is_beneath_a_root(roots: &[PathBuf], path: &Path) -> bool {
    !roots.iter().any(|r| r == path) && crate::tools::paths::is_inside(path, roots)
}

/// The directory `rel`'s file goes in, opened beneath `base` (created when
/// missing), and the file's name.
fn open_parent(
    base: &Path,
    rel: &Path,
    path: &Path,
) -> Result<(cap_std::fs::Dir, std::ffi::OsString), FileError> {
    let moved = |e: std::io::Error| FileError::Moved {
        path: path.to_owned(),
        detail: format!(
            "its folder could not be opened inside {} without leaving it ({e})",
            base.display()
        ),
    };
    let name = rel.file_name().ok_or_else(|| FileError::Io {
        path: path.to_owned(),
        message: "has no file name".into(),
    })?;
    if !base.exists() {
        // Outside the roots, a folder the user allowed a write in.
        std::fs::create_dir_all(base).map_err(|e| io(base, e))?;
    }
    let root = cap_std::fs::Dir::open_ambient_dir(base, cap_std::ambient_authority())
        .map_err(|e| io(base, e))?;
    let dir = match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        None => root,
        Some(sub) => {
            root.create_dir_all(sub).map_err(moved)?;
            root.open_dir(sub).map_err(moved)?
        }
    };
    Ok((dir, name.to_owned()))
}

fn write_atomic(roots: &[PathBuf], path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    use std::io::Write;
    let (base, rel) = beneath(roots, path).ok_or_else(|| FileError::Io {
        path: path.to_owned(),
        message: "has no parent directory".into(),
    })?;
    let (dir, name) = open_parent(base, rel, path)?;
    let existing = dir.symlink_metadata(&name).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(FileError::IsDirectory(path.to_owned()));
    }
    let perms = existing.filter(|m| m.is_file()).map(|m| m.permissions());
    let tmp = format!(
        ".{}.acp-coder-{}.tmp",
        name.to_string_lossy(),
        fastrand::u64(..)
    );
    let result = (|| {
        let mut f = dir.open_with(
            &tmp,
            cap_std::fs::OpenOptions::new().write(true).create_new(true),
        )?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Some(p) = perms {
            f.set_permissions(p)?;
        }
        // Replaces the name itself: a link put there is replaced, not
        // written through.
        dir.rename(&tmp, &dir, &name)
    })();
    if let Err(e) = result {
        let _ = dir.remove_file(&tmp);
        return Err(io(path, e));
    }
    Ok(())
}

/// Deletes the file at `path` beneath the root of `roots` that holds it
/// (see [`write_local`]): a folder on the way that became a link out of
/// the root is refused, and a link at the name itself is removed, not its
/// target.
pub async fn remove_local(roots: &[PathBuf], path: &Path) -> Result<(), FileError> {
    let roots = roots.to_vec();
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || {
        let (base, rel) =
            beneath(&roots, &path).ok_or_else(|| FileError::NotFound(path.clone()))?;
        let root = cap_std::fs::Dir::open_ambient_dir(base, cap_std::ambient_authority())
            .map_err(|e| io(base, e))?;
        let dir = match rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            None => root,
            Some(sub) => root.open_dir(sub).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => FileError::NotFound(path.clone()),
                _ => FileError::Moved {
                    path: path.clone(),
                    detail: format!(
                        "its folder could not be opened inside {} without leaving it ({e})",
                        base.display()
                    ),
                },
            })?,
        };
        let name = rel.file_name().unwrap_or_default();
        dir.remove_file(name).map_err(|e| io(&path, e))
    })
    .await
    .map_err(|e| FileError::Io {
        path: PathBuf::new(),
        message: e.to_string(),
    })?
}

/// The gate between commands and editor writes (issue 42 item 9). The
/// editor resolves the path it is sent itself, so no check of ours can stop
/// its write from following a folder that a command swaps for a link and
/// back between the check and the write. So the two never overlap: every
/// command (foreground, and a background one while it starts) holds a
/// shared guard ([`command_guard`]); an editor write beneath a root takes the
/// exclusive one without waiting ([`editor_write_gate`]) and holds it while
/// the editor writes and the result is checked. When it cannot (a command
/// is running) or a background command is running, the write is made here,
/// beneath the root through a directory handle ([`write_local`]), which a
/// swapped folder cannot lead out of. The gate is the whole agent's: a
/// subagent's commands swap the same folders.
fn gate() -> &'static std::sync::Arc<tokio::sync::RwLock<()>> {
    static GATE: std::sync::LazyLock<std::sync::Arc<tokio::sync::RwLock<()>>> =
        std::sync::LazyLock::new(Default::default);
    &GATE
}

/// Held by a running command (see [`gate`]): no editor write starts
/// meanwhile. Waits only for an editor write in progress.
pub async fn command_guard() -> tokio::sync::OwnedRwLockReadGuard<()> {
    gate().clone().read_owned().await
}

/// Whether a background command of any session runs now, as the list of
/// background jobs says; it tells the gate with its first job
/// ([`watch_background`]), and none runs before that.
static BACKGROUND: std::sync::OnceLock<fn() -> bool> = std::sync::OnceLock::new();

/// Lets [`gate`] ask the background jobs whether one runs now (the job
/// list calls this when it first holds a job).
pub fn watch_background(running: fn() -> bool) {
    let _ = BACKGROUND.set(running);
}

/// Whether a background command runs now ([`watch_background`]): an
/// editor write beneath a root is then made here.
pub fn background_running() -> bool {
    BACKGROUND.get().is_some_and(|running| running())
}

/// The exclusive side of [`gate`] for one editor write, if no command holds
/// the shared one now.
pub fn editor_write_gate() -> Option<tokio::sync::OwnedRwLockWriteGuard<()>> {
    gate().clone().try_write_owned().ok()
}

/// Whether `path` (absolute, resolved when it was checked) still has no
/// symbolic link in it: what is sent to the editor must name the file the
/// check approved.
pub fn check_no_link(path: &Path) -> Result<(), FileError> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(FileError::Moved {
            path: path.to_owned(),
            detail: "it is a symbolic link now".into(),
        });
    }
    if crate::tools::paths::canonicalize_lenient(path) != path {
        return Err(FileError::Moved {
            path: path.to_owned(),
            detail: "a folder on its path is a symbolic link now".into(),
        });
    }
    Ok(())
}

/// Whether the file beneath its root holds `content` (read without leaving
/// the root): `None` when it cannot be read there.
pub fn landed(roots: &[PathBuf], path: &Path, content: &str) -> Option<bool> {
    use std::io::Read as _;
    let (base, rel) = beneath(roots, path)?;
    let root = cap_std::fs::Dir::open_ambient_dir(base, cap_std::ambient_authority()).ok()?;
    let mut f = root.open(rel).ok()?;
    let mut bytes = Vec::new();
    f.by_ref()
        .take(content.len() as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes == content.as_bytes())
}

/// Turns an editor's error for `fs/read_text_file` into a [`FileError`]; editors
/// differ in codes, so the disk is consulted to tell "missing" apart.
pub(super) async fn classify_editor_error(path: &Path, err: RpcError) -> FileError {
    if err.code == codes::RESOURCE_NOT_FOUND {
        return FileError::NotFound(path.to_owned());
    }
    match tokio::fs::metadata(path).await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => FileError::NotFound(path.to_owned()),
        Ok(m) if m.is_dir() => FileError::IsDirectory(path.to_owned()),
        // Editors refuse files that are not text, each in its own words: say
        // what the local path would say.
        Ok(_) => match read_head(path).await {
            Some(head) if looks_binary(&head) => FileError::Binary(path.to_owned()),
            Some(head) if std::str::from_utf8(&head).is_err_and(|e| e.error_len().is_some()) => {
                FileError::NotUtf8(path.to_owned())
            }
            _ => FileError::Editor {
                path: path.to_owned(),
                message: err.message,
            },
        },
        Err(_) => FileError::Editor {
            path: path.to_owned(),
            message: err.message,
        },
    }
}

/// The first 8 KiB of a file.
async fn read_head(path: &Path) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let file = tokio::fs::File::open(path).await.ok()?;
    let mut head = Vec::with_capacity(8192);
    file.take(8192).read_to_end(&mut head).await.ok()?;
    Some(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outside review's `read_file /dev/zero` grew the agent by 1.5 GB a
    /// second; a FIFO blocked; a huge file would have been read whole. (The
    /// device and the FIFO where the system has them.)
    #[tokio::test]
    async fn devices_fifos_and_huge_files_are_not_read() {
        if let Some(device) = crate::platform::fs::ENDLESS_DEVICE {
            let r = read_local(Path::new(device)).await;
            assert!(matches!(r, Err(FileError::NotRegular(_))), "{r:?}");
        }
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        if crate::platform::fs::make_fifo_for_test(&fifo) {
            let r = read_local(&fifo).await;
            assert!(matches!(r, Err(FileError::NotRegular(_))), "{r:?}");
        }
        let big = dir.path().join("big.txt");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_TEXT_FILE + 1).unwrap();
        let r = read_local(&big).await;
        assert!(matches!(r, Err(FileError::TooLarge { .. })), "{r:?}");
        assert!(r.unwrap_err().to_string().contains("32 MiB"));
        // `/proc` files (Linux) report no length but have content.
        let proc_status = Path::new("/proc/self/status");
        if proc_status.exists() {
            let status = read_local(proc_status).await.unwrap();
            assert!(status.contains("Pid:"));
        }
    }

    #[cfg(unix)] // file modes are Unix's
    #[tokio::test]
    async fn local_round_trip_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let p = root.join("sub/a.sh");
        write_local(std::slice::from_ref(&root), &p, "echo 1\n")
            .await
            .unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_local(&[], &p, "echo 2\n").await.unwrap();
        assert_eq!(read_local(&p).await.unwrap(), "echo 2\n");
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            std::fs::read_dir(dir.path().join("sub")).unwrap().count(),
            1
        );
    }

    #[tokio::test]
    async fn errors_are_specific() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            read_local(&dir.path().join("nope")).await,
            Err(FileError::NotFound(_))
        ));
        assert!(matches!(
            read_local(dir.path()).await,
            Err(FileError::IsDirectory(_))
        ));
        let bin = dir.path().join("b");
        std::fs::write(&bin, b"a\0b").unwrap();
        assert!(matches!(read_local(&bin).await, Err(FileError::Binary(_))));
    }

    #[tokio::test]
    async fn editor_refusals_of_non_text_files_are_explained() {
        let dir = tempfile::tempdir().unwrap();
        let err = || RpcError::internal("stream did not contain valid UTF-8");
        let png = dir.path().join("a.png");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\n\0\0").unwrap();
        assert!(matches!(
            classify_editor_error(&png, err()).await,
            FileError::Binary(_)
        ));
        let latin1 = dir.path().join("a.txt");
        std::fs::write(&latin1, b"caf\xe9\n").unwrap();
        assert!(matches!(
            classify_editor_error(&latin1, err()).await,
            FileError::NotUtf8(_)
        ));
        let text = dir.path().join("t.txt");
        std::fs::write(&text, "fine\n").unwrap();
        assert!(matches!(
            classify_editor_error(&text, err()).await,
            FileError::Editor { .. }
        ));
    }

    /// A folder on the way that is a symbolic link leading out of the root
    /// is refused, not followed; outside every root (a write the user
    /// allowed) the parent directory is the base.
    #[tokio::test]
    async fn writes_stay_beneath_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        crate::platform::fs::symlink(&outside, root.join("sub")).unwrap();
        let roots = [root.clone()];
        let r = write_local(&roots, &root.join("sub/f.txt"), "x").await;
        assert!(matches!(r, Err(FileError::Moved { .. })), "{r:?}");
        assert!(!outside.join("f.txt").exists());
        assert!(check_no_link(&root.join("sub/f.txt")).is_err());
        // A link as the file itself is replaced, not written through.
        std::fs::write(outside.join("target"), "keep").unwrap();
        crate::platform::fs::symlink(outside.join("target"), root.join("l.txt")).unwrap();
        write_local(&roots, &root.join("l.txt"), "new")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("target")).unwrap(),
            "keep"
        );
        assert_eq!(std::fs::read_to_string(root.join("l.txt")).unwrap(), "new");
        assert_eq!(landed(&roots, &root.join("l.txt"), "new"), Some(true));
        assert_eq!(landed(&roots, &root.join("l.txt"), "other"), Some(false));
        assert_eq!(landed(&roots, &root.join("sub/f.txt"), "x"), None);
        // Outside the roots, as the user allowed.
        write_local(&roots, &outside.join("new/o.txt"), "o")
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("new/o.txt")).unwrap(),
            "o"
        );
        check_no_link(&root.join("l.txt")).unwrap();
    }
}
