//! The connection: one reader loop, one writer task, a pending table.
//!
//! Three tasks, two channels (NOTES habit 3): the reader classifies frames and
//! spawns one task per incoming request; every outgoing frame goes through one
//! channel to the single writer, so frames never interleave and the messages
//! of one session leave in the order they were produced.
//!
//! The outgoing queue is bounded by back-pressure on its producers, not by
//! the channel (issue 14, "bounded memory"): the bytes waiting to be written
//! are counted, and the producers of bulk output (a model's streamed text, a
//! command's live output) wait in [`Peer::writable`] while more than
//! [`OUTGOING_LIMIT`] bytes wait. Everything else — responses, requests to
//! the editor, and frames produced on the reader loop — is queued at once:
//! the reader must never wait for the writer (the writer may be waiting for
//! the editor, which may be waiting for us to read its answer), and a
//! response queued behind a flood waits for at most the limit's worth of
//! frames, so `session/cancel` during a flood is answered promptly.
use super::writer::{WriterDone, write_loop};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, BufReader};
use tokio::sync::{Notify, mpsc, oneshot};

use super::cancel::{CANCEL_REQUEST, Running, abort_request};
use super::framing::{Frame, LineReader};
use super::message::{Id, Incoming};
use super::{RpcError, decode_params};

type Pending = oneshot::Sender<Result<Option<Box<RawValue>>, RpcError>>;

/// Bytes of queued output above which [`Peer::writable`] waits.
pub const OUTGOING_LIMIT: usize = 64 << 10;

/// What the writer has not written yet; shared by the peers and the writer
/// (not through [`Shared`], whose sender must close when the peers are gone).
#[derive(Default)]
pub(super) struct Backlog {
    pub(super) bytes: AtomicUsize,
    pub(super) drained: Notify,
    /// The writer has stopped: nothing will drain any more, so nobody waits.
    pub(super) closed: AtomicBool,
}

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

struct Shared {
    out: mpsc::UnboundedSender<String>,
    backlog: Arc<Backlog>,
    pending: Mutex<HashMap<i64, Pending>>,
    next_id: AtomicI64,
    /// Observer of every frame in both directions (the `--trace` file).
    tracer: Option<Tracer>,
    /// Longest accepted incoming frame in bytes.
    max_frame: usize,
    /// Rewrites every outgoing frame before it is traced or written (the
    /// agent's secret redactor).
    filter: std::sync::OnceLock<OutFilter>,
}

/// A rewrite of each outgoing frame's text (it must keep it one JSON line).
pub type OutFilter = fn(String) -> String;

/// Observer of every frame: direction and the frame's text.
pub type Tracer = Arc<dyn Fn(Direction, &str) + Send + Sync>;

/// Direction of a traced frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
}

/// A cloneable handle to send notifications and requests to the other side.
#[derive(Clone)]
pub struct Peer {
    shared: Arc<Shared>,
}

#[derive(Serialize)]
struct OutRequest<'a, P> {
    jsonrpc: &'static str,
    id: i64,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutNotification<'a, P> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

#[derive(Serialize)]
struct OutResponse<'a> {
    jsonrpc: &'static str,
    id: &'a Id,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
}

impl Peer {
    fn send_line(&self, line: String) {
        let line = match self.shared.filter.get() {
            Some(filter) => filter(line),
            None => line,
        };
        if let Some(tracer) = &self.shared.tracer {
            tracer(Direction::Out, &line);
        }
        let len = line.len() + 1;
        // Counted before it is queued, so the writer never subtracts first.
        let backlog = &self.shared.backlog;
        backlog.bytes.fetch_add(len, Ordering::AcqRel);
        // A closed writer means the editor is gone; there is no one left to tell.
        if self.shared.out.send(line).is_err() {
            backlog.bytes.fetch_sub(len, Ordering::AcqRel);
        }
    }

    /// Waits until the outgoing queue holds less than [`OUTGOING_LIMIT`]
    /// bytes (or the writer has stopped). Producers of bulk output call it
    /// before producing more, so an editor that reads slowly slows them down
    /// instead of growing the queue.
    pub async fn writable(&self) {
        // The usual case, once per streamed chunk: room, and no waiter to
        // register (and remove) on the `Notify`.
        if self.has_room() {
            return;
        }
        let backlog = &self.shared.backlog;
        loop {
            let drained = backlog.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.has_room() {
                return;
            }
            drained.await;
        }
    }

    /// Whether the outgoing queue is below [`OUTGOING_LIMIT`] (or the writer
    /// has stopped); for output that may be skipped, such as a live preview
    /// that the next one replaces.
    pub fn has_room(&self) -> bool {
        let backlog = &self.shared.backlog;
        backlog.closed.load(Ordering::Acquire)
            || backlog.bytes.load(Ordering::Acquire) < OUTGOING_LIMIT
    }

    /// Bytes queued for the editor and not yet written.
    pub fn backlog(&self) -> usize {
        self.shared.backlog.bytes.load(Ordering::Acquire)
    }

    /// Sends a notification. Serialization of our own types cannot fail; if it
    /// ever does, the frame is dropped with a log line rather than a panic.
    pub fn notify<P: Serialize>(&self, method: &str, params: &P) {
        match serde_json::to_string(&OutNotification {
            jsonrpc: "2.0",
            method,
            params,
        }) {
            Ok(line) => self.send_line(line),
            Err(e) => tracing::error!(method, error = %e, "could not serialize notification"),
        }
    }

    /// Sends a request and waits for its response. Dropping the returned future
    /// forgets the pending entry (the late response is then ignored).
    pub async fn request<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, RpcError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let line = serde_json::to_string(&OutRequest {
            jsonrpc: "2.0",
            id,
            method,
            params,
        })
        .map_err(RpcError::internal)?;
        let (tx, rx) = oneshot::channel();
        self.shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let mut guard = PendingGuard {
            peer: self,
            id,
            answered: false,
        };
        self.send_line(line);
        let outcome = rx.await;
        guard.answered = true;
        drop(guard);
        let raw = match outcome {
            Ok(result) => result?,
            Err(_) => {
                return Err(RpcError::internal(format!(
                    "the editor closed the connection before answering {method}"
                )));
            }
        };
        decode_params::<R>(raw.as_deref()).map_err(|e| {
            RpcError::internal(format!(
                "the editor's answer to {method} was malformed: {}",
                e.message
            ))
        })
    }

    fn respond(&self, id: &Id, result: Result<Box<RawValue>, RpcError>) {
        let (result, error) = match &result {
            Ok(r) => (Some(r.as_ref()), None),
            Err(e) => (None, Some(e)),
        };
        match serde_json::to_string(&OutResponse {
            jsonrpc: "2.0",
            id,
            result,
            error,
        }) {
            Ok(line) => self.send_line(line),
            Err(e) => tracing::error!(error = %e, "could not serialize response"),
        }
    }

    /// Fails every request still waiting for the editor (it is gone).
    fn fail_pending(&self) {
        let drained: Vec<Pending> = {
            let mut map = self
                .shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            map.drain().map(|(_, tx)| tx).collect()
        };
        for tx in drained {
            let _ = tx.send(Err(RpcError::internal("the editor closed the connection")));
        }
    }
}

/// Forgets a request's pending entry when its future ends. A request given
/// up before its answer came (the turn was cancelled while the agent waited
/// on a permission dialog, an elicitation, a file or a terminal) is withdrawn
/// with `$/cancel_request` so the editor can close the dialog; its late answer
/// is then ignored (ACP §1, issue 17 item 3).
struct PendingGuard<'a> {
    peer: &'a Peer,
    id: i64,
    answered: bool,
}
impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        let waiting = self
            .peer
            .shared
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id)
            .is_some();
        if waiting && !self.answered {
            self.peer
                .notify(CANCEL_REQUEST, &serde_json::json!({ "requestId": self.id }));
        }
    }
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
        let shared = Arc::new(Shared {
            out: tx,
            backlog: backlog.clone(),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            tracer: opts.tracer,
            max_frame: opts.max_frame,
            filter: std::sync::OnceLock::new(),
        });
        Self {
            peer: Peer { shared },
            rx,
            backlog,
        }
    }
}

impl Connection {
    /// Sets the rewrite every outgoing frame goes through (once; later calls
    /// are ignored).
    pub fn set_filter(&self, filter: OutFilter) {
        let _ = self.peer.shared.filter.set(filter);
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
    let max_frame = peer.shared.max_frame;
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

/// One task that runs the sequential requests one after another, in arrival
/// order (see [`Handler::sequential`]).
fn sequential_queue() -> mpsc::UnboundedSender<BoxFuture<'static, ()>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<BoxFuture<'static, ()>>();
    tokio::spawn(async move {
        while let Some(job) = rx.recv().await {
            job.await;
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
                let max = peer.shared.max_frame;
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
        if let Some(tracer) = &peer.shared.tracer {
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

impl Peer {
    /// A response from the peer, to the request of ours that waits for it.
    /// Responses are never answered (JSON-RPC 2.0 §5), also `"id": null`
    /// errors a client sends about a frame it could not read: logged, then
    /// dropped.
    fn deliver(&self, id: Id, result: Result<Option<Box<RawValue>>, RpcError>) {
        let key = match id {
            Id::Num(n) => Some(n),
            _ => None,
        };
        let tx = key.and_then(|k| {
            self.shared
                .pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&k)
        });
        match tx {
            Some(tx) => {
                let _ = tx.send(result);
            }
            None => match &result {
                Err(e) => tracing::warn!(
                    %id,
                    code = e.code,
                    message = %e.message,
                    "the editor reported an error not tied to a pending request"
                ),
                Ok(_) => tracing::debug!(%id, "response to no pending request"),
            },
        }
    }
}

#[cfg(test)]
#[path = "connection_tests.rs"]
mod tests;
