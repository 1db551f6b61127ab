//! The process's stdin and stdout as async streams for the connection.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on the blocking
//! thread pool: each frame costs two thread hand-offs, and the first read and
//! write each start a thread. Editors mostly give the agent pipes, so a pipe
//! is driven by the reactor on the task that reads or writes.
//!
//! The agent never changes the file status flags of a descriptor it
//! inherited (issue 15): the open file description behind fd 0 and 1 is
//! shared with whoever started the agent (a wrapper such as `npx`, a
//! shell), and `O_NONBLOCK` set on it would make their reads and writes
//! fail with `EAGAIN`. A pipe is therefore opened anew through
//! `/proc/self/fd/N`, which gives a description of our own on the same pipe,
//! and only that one is made non-blocking. Anything that cannot be reopened
//! so (a Unix socket, as Node gives its children; a terminal; a file; no
//! `/proc`) keeps tokio's blocking versions.
//!
//! Must be called inside the runtime (the reactor registers the descriptors).
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::unix::pipe;

/// The agent's input.
pub enum Stdin {
    Pipe(pipe::Receiver),
    Blocking(tokio::io::Stdin),
}

/// The agent's output.
pub enum Stdout {
    Pipe(pipe::Sender),
    Blocking(tokio::io::Stdout),
}

/// File descriptor 0: a description of our own when it is a pipe.
pub fn stdin() -> Stdin {
    let fd = std::io::stdin();
    match reopen(fd.as_fd(), false).map(pipe::Receiver::from_owned_fd) {
        Some(Ok(p)) => Stdin::Pipe(p),
        _ => Stdin::Blocking(tokio::io::stdin()),
    }
}

/// File descriptor 1: a description of our own when it is a pipe.
pub fn stdout() -> Stdout {
    let fd = std::io::stdout();
    match reopen(fd.as_fd(), true).map(pipe::Sender::from_owned_fd) {
        Some(Ok(p)) => Stdout::Pipe(p),
        _ => Stdout::Blocking(tokio::io::stdout()),
    }
}

/// If `fd` is a pipe: the same pipe opened again through `/proc/self/fd`
/// (a new open file description), non-blocking.
fn reopen(fd: BorrowedFd<'_>, write: bool) -> Option<OwnedFd> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let kind = std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()?
        .file_type();
    if !kind.is_fifo() {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
        .ok()?;
    Some(file.into())
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdin::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            Stdin::Blocking(b) => Pin::new(b).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stdout {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stdout::Pipe(p) => Pin::new(p).poll_write(cx, buf),
            Stdout::Blocking(b) => Pin::new(b).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Pipe(p) => Pin::new(p).poll_flush(cx),
            Stdout::Blocking(b) => Pin::new(b).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            Stdout::Blocking(b) => Pin::new(b).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn nonblocking(fd: BorrowedFd<'_>) -> bool {
        use std::os::fd::AsRawFd;
        // SAFETY: F_GETFL on a valid descriptor.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        flags & libc::O_NONBLOCK != 0
    }

    #[tokio::test]
    async fn pipes_are_reopened_and_the_inherited_description_keeps_its_flags() {
        let (r, w) = std::io::pipe().unwrap();
        let rfd = reopen(r.as_fd(), false).expect("a pipe's read end");
        let wfd = reopen(w.as_fd(), true).expect("a pipe's write end");
        assert!(nonblocking(rfd.as_fd()) && nonblocking(wfd.as_fd()));
        assert!(
            !nonblocking(r.as_fd()),
            "the inherited description is untouched"
        );
        assert!(!nonblocking(w.as_fd()));
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(
            reopen(a.as_fd(), false).is_none(),
            "a socket stays blocking"
        );
        let f = tempfile::tempfile().unwrap();
        assert!(reopen(f.as_fd(), false).is_none());

        // The new ends round-trip bytes through the reactor.
        let mut rx = Stdin::Pipe(pipe::Receiver::from_owned_fd(rfd).unwrap());
        let mut tx = Stdout::Pipe(pipe::Sender::from_owned_fd(wfd).unwrap());
        tx.write_all(b"frame\n").await.unwrap();
        tx.flush().await.unwrap();
        let mut buf = [0u8; 6];
        rx.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"frame\n");
        assert!(!nonblocking(r.as_fd()));
    }
}
