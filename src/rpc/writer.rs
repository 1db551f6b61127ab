//! The writer side of a connection: one task owns the output stream.
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use super::peer::Backlog;

/// Resolves once the writer has flushed everything and every `Peer` is gone.
pub struct WriterDone(oneshot::Receiver<()>);

impl WriterDone {
    pub(super) fn new(done: oneshot::Receiver<()>) -> Self {
        Self(done)
    }

    pub async fn wait(self) {
        let _ = self.0.await;
    }
}

/// The one task that owns the output: writes each queued frame as a line,
/// batching what is already queued into one write, and keeps the backlog count.
pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: mpsc::UnboundedReceiver<String>,
    backlog: Arc<Backlog>,
    done: oneshot::Sender<()>,
) {
    let mut buf = Vec::with_capacity(64 * 1024);
    while let Some(line) = rx.recv().await {
        buf.clear();
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        // Batch whatever else is already queued into one write.
        while buf.len() < 1 << 20 {
            match rx.try_recv() {
                Ok(more) => {
                    buf.extend_from_slice(more.as_bytes());
                    buf.push(b'\n');
                }
                Err(_) => break,
            }
        }
        if let Err(e) = async {
            writer.write_all(&buf).await?;
            writer.flush().await
        }
        .await
        {
            tracing::warn!(error = %e, "writing to stdout failed; dropping further output");
            break;
        }
        backlog.bytes.fetch_sub(buf.len(), Ordering::AcqRel);
        backlog.drained.notify_waiters();
    }
    backlog.closed.store(true, Ordering::Release);
    backlog.drained.notify_waiters();
    let _ = done.send(());
}
