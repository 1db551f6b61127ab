//! The connection: one reader loop, one writer task, a pending table.
//!
//! Three tasks, two channels (NOTES habit 3): the reader classifies frames and
//! spawns one task per incoming request; every outgoing frame goes through one
//! channel to the single writer, so frames never interleave and the messages
//! of one session leave in the order they were produced. The outgoing side,
//! and how its queue stays bounded, is [`Peer`] (`peer.rs`).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{mpsc, oneshot};

use super::RpcError;
use super::cancel::{CANCEL_REQUEST, Running, abort_request};
use super::framing::{Frame, LineReader};
use super::message::{Id, Incoming};
use super::peer::{Backlog, Direction, OutFilter, Peer, Tracer};
use super::writer::{WriterDone, write_loop};

/// A successful result, and optionally work to do once it has been queued for
/// writing (so notifications it sends are guaranteed to follow the response,
/// e.g. ACP's `available_commands_update` after `session/new`).
pub struct Reply {
    pub result: Box<RawValue>,
    pub after: Option<Box<dyn FnOnce() + Send>>,
}

impl From<Box<RawValue>> for Reply {
    fn from(result: Box<RawValue>) -> Self {
        Reply {
            result,
            after: None,
        }
    }
}

/// What the peer may call on us.
pub trait Handler: Send + Sync + 'static {
    /// Handles one request. Called on the reader loop in arrival order (so it
    /// must not block; synchronous work done before returning the future is
    /// ordered with the frames around it); the future runs on its own task.
    /// The return value is the `result`.
    fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'static, Result<Reply, RpcError>>;

    /// Whether requests of this method run one at a time in arrival order
    /// (e.g. `initialize` before `session/new`) instead of each on its own task.
    /// Sequential requests still run off the reader loop, so notifications and
    /// responses keep flowing while they run.
    fn sequential(&self, method: &str) -> bool {
        let _ = method;
        false
    }

    /// Whether a `$/cancel_request` from the peer may abort a running request
    /// of this method (answered `-32800`). Methods with their own way to stop
    /// (ACP's `session/prompt` has `session/cancel`) say no.
    fn abortable(&self, method: &str) -> bool {
        let _ = method;
        true
    }

    /// Handles one notification, inline on the reader loop: it must not block
    /// (cancellation is a notification and must take effect at once).
    fn notification(&self, method: &str, params: Option<&RawValue>);
}

/// Options of a connection.
pub struct ServeOptions {
    /// Longest accepted frame in bytes; longer lines get `-32700` and are skipped.
    pub max_frame: usize,
    pub tracer: Option<Tracer>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            max_frame: 16 * 1024 * 1024,
            tracer: None,
        }
    }
}

/// A connection before it runs: the peer handle (usable at once) and the
/// outgoing queue [`serve`] drains. Its [`ServeOptions`] are given once, here.
pub struct Connection {
    pub peer: Peer,
    rx: mpsc::UnboundedReceiver<String>,
    backlog: Arc<Backlog>,
}

impl Connection {
    pub fn new(opts: ServeOptions) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(Backlog::default());
        Self {
            peer: Peer::new(tx, backlog.clone(), opts.tracer, opts.max_frame),
            rx,
            backlog,
        }
    }

    /// Sets the rewrite every outgoing frame goes through (once; later calls
    /// are ignored).
    pub fn set_filter(&self, filter: OutFilter) {
        self.peer.set_filter(filter);
    }
}

/// Runs the connection until the input reaches EOF. Returns once every frame
/// produced so far has been written; `handler` tasks still running are not
/// awaited (the caller cancels them and then drops the last `Peer`).
///
/// The writer task ends when every `Peer` clone is gone; the returned
/// [`WriterDone`] lets the caller wait for the last frames to be flushed.
/// The steps: spawn the writer, read frames ([`next_line`]), hand each to
/// [`Dispatch::frame`]; at EOF, fail what still waits for the peer.
pub fn serve<R, W, H>(
    conn: Connection,
    reader: R,
    writer: W,
    handler: Arc<H>,
) -> (BoxFuture<'static, ()>, WriterDone)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    H: Handler,
{
    let Connection { peer, rx, backlog } = conn;
    let (done_tx, done_rx) = oneshot::channel();
    tokio::spawn(write_loop(writer, rx, backlog, done_tx));
    let max_frame = peer.max_frame();
    let dispatch = Dispatch {
        peer,
        handler,
        running: Arc::new(Mutex::new(HashMap::new())),
        sequential: sequential_queue(),
    };
    let read = async move {
        let mut lines = LineReader::new(BufReader::with_capacity(64 * 1024, reader), max_frame);
        while let Some(line) = next_line(&mut lines, &dispatch.peer).await {
            dispatch.frame(&line);
        }
        dispatch.peer.fail_pending();
    };
    (Box::pin(read), WriterDone::new(done_rx))
}

tokio::task_local! {
    /// The running sequential request's hold on the queue, taken by
    /// [`release_order`].
    static ORDER: std::cell::Cell<Option<oneshot::Sender<()>>>;
}

/// Lets the sequential requests behind the running one start now, while it
/// goes on: for a request whose slow rest no later request needs to follow
/// (`session/new` waiting for MCP servers or a model list: an outside review
/// saw it hold every other session's requests for 10 s). Elsewhere a no-op.
pub fn release_order() {
    let _ = ORDER.try_with(|hold| {
        if let Some(tx) = hold.take() {
            let _ = tx.send(());
        }
    });
}

/// One task that starts the sequential requests one after another, in
/// arrival order (see [`Handler::sequential`]): each runs on its own task,
/// and the next starts when it has ended or called [`release_order`].
fn sequential_queue() -> mpsc::UnboundedSender<BoxFuture<'static, ()>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<BoxFuture<'static, ()>>();
    tokio::spawn(async move {
        while let Some(job) = rx.recv().await {
            let (hold, released) = oneshot::channel();
            tokio::spawn(ORDER.scope(std::cell::Cell::new(Some(hold)), job));
            // Resolves on release, or when the job ends (the sender drops).
            let _ = released.await;
        }
    });
    tx
}

/// The next non-blank frame, traced; `None` at EOF or when reading fails.
/// A frame over the size limit is answered with a parse error and skipped.
async fn next_line<R: AsyncRead + Unpin>(
    lines: &mut LineReader<BufReader<R>>,
    peer: &Peer,
) -> Option<Vec<u8>> {
    loop {
        let line = match lines.next().await {
            Ok(Some(Frame::Line(line))) => line,
            Ok(Some(Frame::TooLong { len })) => {
                tracing::warn!(len, "frame too long");
                let max = peer.max_frame();
                peer.respond(
                    &Id::null(),
                    Err(RpcError::parse_error(format!(
                        "line of {len} bytes exceeds the {max} byte limit and was skipped"
                    ))),
                );
                continue;
            }
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed; closing the connection");
                return None;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if let Some(tracer) = peer.tracer() {
            tracer(Direction::In, &String::from_utf8_lossy(&line));
        }
        return Some(line);
    }
}

/// What the reader loop does with each frame.
struct Dispatch<H> {
    peer: Peer,
    handler: Arc<H>,
    /// Requests still running, by id, for `$/cancel_request`.
    running: Running,
    sequential: mpsc::UnboundedSender<BoxFuture<'static, ()>>,
}

impl<H: Handler> Dispatch<H> {
    fn frame(&self, line: &[u8]) {
        match Incoming::parse(line) {
            Err((id, err)) => {
                tracing::debug!(%id, error = %err.message, "bad frame");
                self.peer.respond(&id, Err(err));
            }
            Ok(Incoming::Request { id, method, params }) => self.request(id, method, params),
            Ok(Incoming::Notification { method, params }) => {
                if method == CANCEL_REQUEST {
                    abort_request(&self.running, params.as_deref());
                }
                self.handler.notification(&method, params.as_deref());
            }
            Ok(Incoming::Response { id, result }) => self.peer.deliver(id, result),
        }
    }

    /// Starts a request: the handler builds its future here, before the next
    /// frame is read (see [`Handler::request`]); it runs on its own task or
    /// in the sequential queue, abortable by `$/cancel_request` if the
    /// handler allows.
    fn request(&self, id: Id, method: String, params: Option<Box<RawValue>>) {
        let sequential = self.handler.sequential(&method);
        let (abort, registration) = futures::future::AbortHandle::new_pair();
        if self.handler.abortable(&method) {
            self.running
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone(), abort);
        }
        // A panic inside a handler must still produce a response.
        let fut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.handler.clone().request(method.clone(), params)
        }))
        .ok();
        let job = Box::pin(answer(
            self.peer.clone(),
            self.running.clone(),
            id,
            method,
            fut,
            registration,
        ));
        if sequential {
            let _ = self.sequential.send(job);
        } else {
            tokio::spawn(job);
        }
    }
}

/// Runs one request's future (`None`: building it panicked) and writes its
/// one response: the result, `-32800` when aborted, an internal error when
/// the handler panicked.
async fn answer(
    peer: Peer,
    running: Running,
    id: Id,
    method: String,
    fut: Option<BoxFuture<'static, Result<Reply, RpcError>>>,
    registration: futures::future::AbortRegistration,
) {
    tracing::debug!(%id, method, "request");
    let result = match fut {
        Some(fut) => {
            futures::future::Abortable::new(
                futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(fut)),
                registration,
            )
            .await
        }
        None => Ok(Err(Box::new(()) as Box<dyn std::any::Any + Send>)),
    };
    running
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id);
    let result = match result {
        Ok(Ok(r)) => r,
        Err(futures::future::Aborted) => {
            tracing::info!(%id, method, "request cancelled by the editor");
            Err(RpcError::new(
                super::codes::REQUEST_CANCELLED,
                format!("{method} was cancelled by $/cancel_request"),
            ))
        }
        Ok(Err(_)) => {
            tracing::error!(method, "handler panicked");
            Err(RpcError::internal(format!(
                "the {method} handler failed unexpectedly; see the log"
            )))
        }
    };
    match result {
        Ok(Reply { result, after }) => {
            peer.respond(&id, Ok(result));
            if let Some(after) = after {
                after();
            }
        }
        Err(e) => peer.respond(&id, Err(e)),
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
