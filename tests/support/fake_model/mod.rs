//! A scripted OpenAI-compatible chat-completions server on 127.0.0.1:0.
//!
//! Minimal hand-written HTTP/1.1: one request per connection, every reply
//! carries `Connection: close`. Streams use chunked transfer encoding (like
//! the real APIs), so a stream cut mid-way is visible to the client as an
//! incomplete body.
//!
//! ```ignore
//! let model = FakeModel::start().await;
//! model.push(Reply::text("hello"));
//! model.push(Reply::tool_call("call_1", "read_file", json!({"path": "a.txt"})));
//! // … point the agent at model.base_url() …
//! assert_eq!(model.chat_requests().len(), 2);
//! ```
//!
//! Here: the server handle and what it recorded. Replies in `reply`, their
//! chunks in `chunk`, the HTTP side in `server`.

pub mod chunk;
mod reply;
mod server;
#[cfg(test)]
mod tests;

use reply::*;
pub use reply::{Flood, Reply, SseEvent};
use server::*;

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Model id used in generated chunks and in the default `/v1/models` list.
pub const FAKE_MODEL_ID: &str = "fake-model";

// ---------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------

/// One HTTP request the fake server received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// Path including any query string.
    pub path: String,
    /// The whole URL when the request came as to a proxy (absolute form,
    /// `POST http://host/v1/chat/completions`); `path` is then its path.
    pub absolute_target: Option<String>,
    /// Header names are lower-cased.
    pub headers: Vec<(String, String)>,
    pub raw_body: String,
    /// The body parsed as JSON (`Value::Null` if empty or not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// A header value by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// `body.messages` (empty if absent).
    pub fn messages(&self) -> &[Value] {
        self.body["messages"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The text `content` of message `i` ("" when it has none).
    pub fn text(&self, i: usize) -> &str {
        self.messages()
            .get(i)
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
    }

    /// The `role` of each message, in order.
    pub fn roles(&self) -> Vec<&str> {
        self.messages()
            .iter()
            .map(|m| m["role"].as_str().unwrap_or_default())
            .collect()
    }

    /// The last message of `body.messages`.
    pub fn last_message(&self) -> Option<&Value> {
        self.messages().last()
    }

    /// Names of the tools offered in `body.tools`.
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn is_chat(&self) -> bool {
        self.method == "POST" && self.path.starts_with("/v1/chat/completions")
    }
}

/// Computes the reply to a chat request from the request itself (see
/// [`FakeModel::set_responder`]); `None` falls back to the queue.
pub type Responder = Arc<dyn Fn(&RecordedRequest) -> Option<Reply> + Send + Sync>;

#[derive(Default)]
struct State {
    responder: Option<Responder>,
    replies: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    models: Vec<String>,
    models_reply: Option<Reply>,
    /// Other endpoints: (method, path, reply), e.g. llama-server's `/props`.
    routes: Vec<(String, String, Reply)>,
}

struct Inner {
    state: Mutex<State>,
    disconnects: AtomicUsize,
    unscripted: AtomicUsize,
    completed_streams: AtomicUsize,
    /// Bytes of [`Flood`] replies written so far.
    flooded: AtomicUsize,
    /// Bumped on every recorded event; waiters re-check their condition.
    version: watch::Sender<u64>,
}

impl Inner {
    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }
}

/// Handle to a running fake server; dropping it stops the server.
pub struct FakeModel {
    inner: Arc<Inner>,
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeModel {
    /// Binds 127.0.0.1:0 and serves until dropped.
    pub async fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind fake model server");
        let addr = listener.local_addr().expect("local addr");
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                models: vec![FAKE_MODEL_ID.to_owned()],
                ..State::default()
            }),
            disconnects: AtomicUsize::new(0),
            unscripted: AtomicUsize::new(0),
            completed_streams: AtomicUsize::new(0),
            flooded: AtomicUsize::new(0),
            version: watch::channel(0).0,
        });
        let server = inner.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            connections.spawn(handle_connection(server.clone(), stream));
                        }
                        Err(e) => {
                            eprintln!("fake model: accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        FakeModel { inner, addr, task }
    }

    /// Starts a server with these replies queued.
    pub async fn with_replies(replies: impl IntoIterator<Item = Reply>) -> FakeModel {
        let model = Self::start().await;
        for r in replies {
            model.push(r);
        }
        model
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Environment for an agent process pointed at this server.
    pub fn agent_env(&self) -> Vec<(String, String)> {
        vec![
            ("OPENAI_BASE_URL".into(), self.base_url()),
            ("OPENAI_API_KEY".into(), "test-key".into()),
            ("ACP_CODER_MODEL".into(), FAKE_MODEL_ID.into()),
        ]
    }

    /// Queues a reply for the next chat-completions request.
    pub fn push(&self, reply: Reply) {
        self.inner.state.lock().unwrap().replies.push_back(reply);
    }

    /// Answers chat requests with `responder(request)` when it returns a
    /// reply (queued replies are used when it returns `None`): for many
    /// concurrent sessions, where a queue cannot know whose request is next.
    pub fn set_responder(
        &self,
        responder: impl Fn(&RecordedRequest) -> Option<Reply> + Send + Sync + 'static,
    ) {
        self.inner.state.lock().unwrap().responder = Some(Arc::new(responder));
    }

    /// Number of queued replies not yet served.
    pub fn pending_replies(&self) -> usize {
        self.inner.state.lock().unwrap().replies.len()
    }

    /// Sets the ids listed by `GET /v1/models`.
    pub fn set_models(&self, ids: &[&str]) {
        self.inner.state.lock().unwrap().models = ids.iter().map(|s| (*s).to_owned()).collect();
    }

    /// Replaces every `GET /v1/models` reply (e.g. with an error status).
    pub fn set_models_reply(&self, reply: Reply) {
        self.inner.state.lock().unwrap().models_reply = Some(reply);
    }

    /// Answers `method path` (e.g. `GET /props`, `POST /api/show`) with
    /// `reply` every time: the endpoints local servers add to the API.
    pub fn set_route(&self, method: &str, path: &str, reply: Reply) {
        let mut st = self.inner.state.lock().unwrap();
        st.routes.retain(|(m, p, _)| !(m == method && p == path));
        st.routes.push((method.to_owned(), path.to_owned(), reply));
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.inner.state.lock().unwrap().requests.clone()
    }

    /// Only the `POST /v1/chat/completions` requests.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.is_chat())
            .collect()
    }

    /// What the model was told as the result of call `id`, from the last
    /// chat request that carries it.
    pub fn tool_result_for(&self, id: &str) -> Option<String> {
        self.chat_requests().iter().rev().find_map(|r| {
            r.messages()
                .iter()
                .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
                .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        })
    }

    /// Streams the client abandoned before they were complete.
    pub fn disconnects(&self) -> usize {
        self.inner.disconnects.load(Ordering::SeqCst)
    }

    /// Streams delivered to the end.
    pub fn completed_streams(&self) -> usize {
        self.inner.completed_streams.load(Ordering::SeqCst)
    }

    /// Bytes of [`Flood`] replies written to the client so far.
    pub fn flooded_bytes(&self) -> usize {
        self.inner.flooded.load(Ordering::SeqCst)
    }

    /// Chat requests that found the reply queue empty (answered with 500).
    pub fn unscripted_requests(&self) -> usize {
        self.inner.unscripted.load(Ordering::SeqCst)
    }

    /// Waits until `cond(self)` holds; false on timeout.
    pub async fn wait_until(&self, timeout: Duration, cond: impl Fn(&FakeModel) -> bool) -> bool {
        let mut rx = self.inner.version.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            if cond(self) {
                return true;
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                return cond(self);
            }
        }
    }

    /// Waits until at least `n` streams were aborted by the client.
    pub async fn wait_for_disconnects(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |m| m.disconnects() >= n).await
    }

    /// Waits until at least `n` bytes of a flood were written to the client.
    pub async fn wait_for_flooded_bytes(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |m| m.flooded_bytes() >= n).await
    }

    /// Waits until at least `n` chat requests arrived.
    pub async fn wait_for_chat_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |m| m.chat_requests().len() >= n)
            .await
    }
}
