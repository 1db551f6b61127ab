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
pub async fn write_local(path: &Path, content: &str) -> Result<(), FileError> {
    let path = path.to_owned();
    let content = content.to_owned();
    tokio::task::spawn_blocking(move || write_atomic(&path, content.as_bytes()))
        .await
        .map_err(|e| FileError::Io {
            path: PathBuf::new(),
            message: e.to_string(),
        })?
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FileError> {
    use std::io::Write;
    if path.is_dir() {
        return Err(FileError::IsDirectory(path.to_owned()));
    }
    let dir = path.parent().ok_or_else(|| FileError::Io {
        path: path.to_owned(),
        message: "has no parent directory".into(),
    })?;
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let perms = std::fs::metadata(path).ok().map(|m| m.permissions());
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.acp-coder-{}.tmp", fastrand::u64(..)));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        if let Some(p) = perms {
            std::fs::set_permissions(&tmp, p)?;
        }
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(path, e));
    }
    Ok(())
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
    /// second; a FIFO blocked; a huge file would have been read whole.
    #[tokio::test]
    async fn devices_fifos_and_huge_files_are_not_read() {
        let r = read_local(Path::new("/dev/zero")).await;
        assert!(matches!(r, Err(FileError::NotRegular(_))), "{r:?}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string for mkfifo(3).
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let r = read_local(&fifo).await;
        assert!(matches!(r, Err(FileError::NotRegular(_))), "{r:?}");
        let big = dir.path().join("big.txt");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_TEXT_FILE + 1).unwrap();
        let r = read_local(&big).await;
        assert!(matches!(r, Err(FileError::TooLarge { .. })), "{r:?}");
        assert!(r.unwrap_err().to_string().contains("32 MiB"));
        // `/proc` files report no length but have content.
        let status = read_local(Path::new("/proc/self/status")).await.unwrap();
        assert!(status.contains("Pid:"));
    }

    #[tokio::test]
    async fn local_round_trip_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/a.sh");
        write_local(&p, "echo 1\n").await.unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_local(&p, "echo 2\n").await.unwrap();
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
}
