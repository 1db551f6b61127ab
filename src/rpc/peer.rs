//! The outgoing side of a connection: [`Peer`] sends notifications,
//! requests and responses through the one channel the writer drains, and
//! keeps the table of our requests that wait for the editor's answer.
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
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc, oneshot};

use super::cancel::CANCEL_REQUEST;
use super::message::Id;
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
    filter: OnceLock<OutFilter>,
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
    pub(super) fn new(
        out: mpsc::UnboundedSender<String>,
        backlog: Arc<Backlog>,
        tracer: Option<Tracer>,
        max_frame: usize,
    ) -> Self {
        let shared = Arc::new(Shared {
            out,
            backlog,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(0),
            tracer,
            max_frame,
            filter: OnceLock::new(),
        });
        Peer { shared }
    }

    pub(super) fn set_filter(&self, filter: OutFilter) {
        let _ = self.shared.filter.set(filter);
    }

    pub(super) fn max_frame(&self) -> usize {
        self.shared.max_frame
    }

    pub(super) fn tracer(&self) -> Option<&Tracer> {
        self.shared.tracer.as_ref()
    }

    fn send_line(&self, line: String) {
        let line = match self.shared.filter.get() {
            Some(filter) => filter(line),
            None => line,
        };
        if let Some(tracer) = &self.shared.tracer {
            tracer(Direction::Out, &line);
        }
        self.queue_line(line);
    }

    /// Sends `line` as it is: the filter applies only to its traced copy.
    /// For frames whose content is the user's own data going back to the
    /// user (a file's new text), which a rewrite would damage.
    fn send_line_verbatim(&self, line: String) {
        if let Some(tracer) = &self.shared.tracer {
            match self.shared.filter.get() {
                Some(filter) => tracer(Direction::Out, &filter(line.clone())),
                None => tracer(Direction::Out, &line),
            }
        }
        self.queue_line(line);
    }

    fn queue_line(&self, line: String) {
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
        self.request_as(method, params, false).await
    }

    /// [`Peer::request`] for a frame that must reach the editor exactly as
    /// built: the outgoing filter (the secret redactor) rewrites only the
    /// traced copy. `fs/write_text_file` carries a file's content, and a
    /// secret in that file must be written back as it was, never as
    /// `[redacted]`.
    pub async fn request_verbatim<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
    ) -> Result<R, RpcError> {
        self.request_as(method, params, true).await
    }

    async fn request_as<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: &P,
        verbatim: bool,
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
        if verbatim {
            self.send_line_verbatim(line);
        } else {
            self.send_line(line);
        }
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

    pub(super) fn respond(&self, id: &Id, result: Result<Box<RawValue>, RpcError>) {
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

    /// A response from the peer, to the request of ours that waits for it.
    /// Responses are never answered (JSON-RPC 2.0 §5), also `"id": null`
    /// errors a client sends about a frame it could not read: logged, then
    /// dropped.
    pub(super) fn deliver(&self, id: Id, result: Result<Option<Box<RawValue>>, RpcError>) {
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

    /// Fails every request still waiting for the editor (it is gone).
    pub(super) fn fail_pending(&self) {
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
