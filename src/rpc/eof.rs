//! An input that ends early: end of file as soon as a future completes, so a
//! signal shuts the agent down exactly like the editor closing stdin does
//! (turns cancelled and answered, sessions recorded, children stopped).
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Resolves on SIGTERM or SIGINT (never, if the handlers cannot be set up):
/// the `stop` of [`eof_on`] in agent mode, and `exec`'s Ctrl-C.
pub async fn terminated() {
    crate::platform::signals::terminated().await;
}

/// See [`eof_on`].
pub struct EofOn<R> {
    inner: R,
    stop: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

/// Reads `inner` until `stop` completes, then reports end of file.
pub fn eof_on<R>(inner: R, stop: impl Future<Output = ()> + Send + 'static) -> EofOn<R> {
    EofOn {
        inner,
        stop: Some(Box::pin(stop)),
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for EofOn<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match this.stop.as_mut() {
            None => return Poll::Ready(Ok(())),
            Some(stop) => {
                if stop.as_mut().poll(cx).is_ready() {
                    this.stop = None;
                    return Poll::Ready(Ok(()));
                }
            }
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn reads_until_stopped_then_ends() {
        let (mut tx, rx) = tokio::io::duplex(64);
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let mut input = eof_on(rx, async move {
            let _ = stop_rx.await;
        });
        tokio::io::AsyncWriteExt::write_all(&mut tx, b"abc")
            .await
            .unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(input.read(&mut buf).await.unwrap(), 3);
        stop_tx.send(()).unwrap();
        // The writer is still open, but the input has ended.
        assert_eq!(input.read(&mut buf).await.unwrap(), 0);
        assert_eq!(input.read(&mut buf).await.unwrap(), 0);
    }
}
