//! The process's stdin and stdout as async streams for the connection.
//!
//! `tokio::io::stdin()`/`stdout()` run every read and write on the blocking
//! thread pool: each frame costs two thread hand-offs, and the first read and
//! write each start a thread. Editors give the agent pipes (or, from Node,
//! Unix sockets), so those are put in non-blocking mode and driven by the
//! reactor on the task that reads or writes. Anything else (a terminal, a
//! regular file) keeps tokio's blocking versions, so a shell sharing a
//! terminal never sees it turned non-blocking.
//!
//! Must be called inside the runtime (the reactor registers the descriptors).
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// The agent's input.
pub enum Stdin {
    Pipe(pipe::Receiver),
    Socket(UnixStream),
    Blocking(tokio::io::Stdin),
}

/// The agent's output.
pub enum Stdout {
    Pipe(pipe::Sender),
    Socket(UnixStream),
    Blocking(tokio::io::Stdout),
}

/// File descriptor 0, non-blocking when it is a pipe or a socket.
pub fn stdin() -> Stdin {
    let fd = std::io::stdin();
    match open(fd.as_fd()) {
        Some(Kind::Pipe(fd)) => match pipe::Receiver::from_owned_fd(fd) {
            Ok(p) => Stdin::Pipe(p),
            Err(_) => Stdin::Blocking(tokio::io::stdin()),
        },
        Some(Kind::Socket(s)) => Stdin::Socket(s),
        None => Stdin::Blocking(tokio::io::stdin()),
    }
}

/// File descriptor 1, non-blocking when it is a pipe or a socket.
pub fn stdout() -> Stdout {
    let fd = std::io::stdout();
    match open(fd.as_fd()) {
        Some(Kind::Pipe(fd)) => match pipe::Sender::from_owned_fd(fd) {
            Ok(p) => Stdout::Pipe(p),
            Err(_) => Stdout::Blocking(tokio::io::stdout()),
        },
        Some(Kind::Socket(s)) => Stdout::Socket(s),
        None => Stdout::Blocking(tokio::io::stdout()),
    }
}

enum Kind {
    Pipe(OwnedFd),
    Socket(UnixStream),
}

/// A duplicate of `fd` if it is a pipe or a stream socket.
fn open(fd: BorrowedFd<'_>) -> Option<Kind> {
    use std::os::unix::fs::FileTypeExt;
    let owned = fd.try_clone_to_owned().ok()?;
    let file = std::fs::File::from(owned);
    let kind = file.metadata().ok()?.file_type();
    if kind.is_fifo() {
        Some(Kind::Pipe(file.into()))
    } else if kind.is_socket() && is_stream_socket(file.as_fd()) {
        let s = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
        s.set_nonblocking(true).ok()?;
        UnixStream::from_std(s).ok().map(Kind::Socket)
    } else {
        None
    }
}

fn is_stream_socket(fd: BorrowedFd<'_>) -> bool {
    use std::os::fd::AsRawFd;
    let mut ty: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid descriptor and an out-parameter of the size given.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut ty as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    rc == 0 && ty == libc::SOCK_STREAM
}

impl AsyncRead for Stdin {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdin::Pipe(p) => Pin::new(p).poll_read(cx, buf),
            Stdin::Socket(s) => Pin::new(s).poll_read(cx, buf),
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
            Stdout::Socket(s) => Pin::new(s).poll_write(cx, buf),
            Stdout::Blocking(b) => Pin::new(b).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Pipe(p) => Pin::new(p).poll_flush(cx),
            Stdout::Socket(s) => Pin::new(s).poll_flush(cx),
            Stdout::Blocking(b) => Pin::new(b).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stdout::Pipe(p) => Pin::new(p).poll_shutdown(cx),
            // Never half-close the editor's socket: stdin may share it.
            Stdout::Socket(_) => Poll::Ready(Ok(())),
            Stdout::Blocking(b) => Pin::new(b).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn pipes_and_sockets_are_async_files_are_not() {
        let (r, w) = std::io::pipe().unwrap();
        assert!(matches!(open(r.as_fd()), Some(Kind::Pipe(_))));
        assert!(matches!(open(w.as_fd()), Some(Kind::Pipe(_))));
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(matches!(open(a.as_fd()), Some(Kind::Socket(_))));
        let f = tempfile::tempfile().unwrap();
        assert!(open(f.as_fd()).is_none());

        // A pipe end round-trips bytes through the reactor.
        let Some(Kind::Pipe(rfd)) = open(r.as_fd()) else {
            unreachable!()
        };
        let Some(Kind::Pipe(wfd)) = open(w.as_fd()) else {
            unreachable!()
        };
        let mut rx = Stdin::Pipe(pipe::Receiver::from_owned_fd(rfd).unwrap());
        let mut tx = Stdout::Pipe(pipe::Sender::from_owned_fd(wfd).unwrap());
        tx.write_all(b"frame\n").await.unwrap();
        tx.flush().await.unwrap();
        let mut buf = [0u8; 6];
        rx.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"frame\n");
    }
}
