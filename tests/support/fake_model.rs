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
// Chunks
// ---------------------------------------------------------------------------

/// Builders for `chat.completion.chunk` objects.
pub mod chunk {
    use serde_json::{Value, json};

    /// A chunk with one choice carrying `delta` and `finish_reason`.
    pub fn with_delta(delta: Value, finish_reason: Option<&str>) -> Value {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": super::FAKE_MODEL_ID,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
        })
    }

    /// A chunk with an arbitrary delta and no finish reason.
    pub fn delta(delta: Value) -> Value {
        with_delta(delta, None)
    }

    /// The usual first chunk: `{"role":"assistant","content":""}`.
    pub fn role() -> Value {
        delta(json!({"role": "assistant", "content": ""}))
    }

    /// A text delta (`delta.content`).
    pub fn text(text: &str) -> Value {
        delta(json!({"content": text}))
    }

    /// A reasoning delta in the `reasoning_content` field (DeepSeek, vLLM, …).
    pub fn reasoning_content(text: &str) -> Value {
        delta(json!({"reasoning_content": text}))
    }

    /// A reasoning delta in the `reasoning` field (OpenRouter, Ollama, …).
    pub fn reasoning(text: &str) -> Value {
        delta(json!({"reasoning": text}))
    }

    /// One tool-call delta. Any part may be absent; `index: None` omits the
    /// `index` key (some servers do that).
    pub fn tool_call_delta(
        index: Option<u32>,
        id: Option<&str>,
        name: Option<&str>,
        arguments: Option<&str>,
    ) -> Value {
        let mut call = serde_json::Map::new();
        if let Some(index) = index {
            call.insert("index".into(), json!(index));
        }
        if let Some(id) = id {
            call.insert("id".into(), json!(id));
            call.insert("type".into(), json!("function"));
        }
        let mut function = serde_json::Map::new();
        if let Some(name) = name {
            function.insert("name".into(), json!(name));
        }
        if let Some(arguments) = arguments {
            function.insert("arguments".into(), json!(arguments));
        }
        call.insert("function".into(), Value::Object(function));
        delta(json!({"tool_calls": [Value::Object(call)]}))
    }

    /// First delta of a tool call: index, id, name and empty arguments.
    pub fn tool_call_start(index: u32, id: &str, name: &str) -> Value {
        tool_call_delta(Some(index), Some(id), Some(name), Some(""))
    }

    /// A later delta of a tool call: a fragment of its arguments.
    pub fn tool_call_args(index: u32, fragment: &str) -> Value {
        tool_call_delta(Some(index), None, None, Some(fragment))
    }

    /// A whole tool call in one delta, without `index`.
    pub fn tool_call_unindexed(id: &str, name: &str, arguments: &str) -> Value {
        tool_call_delta(None, Some(id), Some(name), Some(arguments))
    }

    /// An empty delta with a finish reason (`stop`, `tool_calls`, `length`,
    /// or odd ones like `eos` and `""`).
    pub fn finish(reason: &str) -> Value {
        with_delta(json!({}), Some(reason))
    }

    /// The final usage chunk (`choices: []`).
    pub fn usage(prompt_tokens: u64, completion_tokens: u64) -> Value {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": super::FAKE_MODEL_ID,
            "choices": [],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens
            }
        })
    }
}

/// Splits `s` into `parts` non-empty pieces at char boundaries (fewer if `s`
/// is short; one empty piece if `s` is empty).
pub fn split_str(s: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let parts = parts.clamp(1, chars.len());
    let base = chars.len() / parts;
    let extra = chars.len() % parts;
    let mut out = Vec::with_capacity(parts);
    let mut at = 0;
    for i in 0..parts {
        let len = base + usize::from(i < extra);
        out.push(chars[at..at + len].iter().collect());
        at += len;
    }
    out
}

// ---------------------------------------------------------------------------
// Replies
// ---------------------------------------------------------------------------

/// One event of an SSE stream.
#[derive(Debug, Clone)]
pub enum SseEvent {
    /// Written as `data: <json>\n\n`.
    Data(Value),
    /// Written verbatim (for comments, malformed data, odd framing…).
    Raw(String),
}

#[derive(Debug, Clone)]
enum StreamEnd {
    Complete,
    /// Close the socket after this many events (no terminating chunk).
    CutAfter(usize),
    /// Stop after this many events and wait until the client goes away.
    HangAfter(usize),
}

#[derive(Debug, Clone)]
enum Body {
    Stream {
        events: Vec<SseEvent>,
        done: bool,
        end: StreamEnd,
    },
    Fixed {
        status: u16,
        content_type: String,
        body: String,
    },
    /// Writes without end (up to 1 GiB) until the client goes away.
    Flood(Flood),
}

/// What a hostile or broken endpoint floods the agent with (issue 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// One `data:` line that never ends.
    Line,
    /// Text chunks that never stop.
    Text,
    /// One tool call whose arguments never end.
    ToolArguments,
}

/// One scripted HTTP reply to `POST /v1/chat/completions`.
#[derive(Debug, Clone)]
pub struct Reply {
    body: Body,
    headers: Vec<(String, String)>,
    delay: Duration,
    first_byte_delay: Duration,
}

impl Reply {
    fn from_body(body: Body) -> Self {
        Reply {
            body,
            headers: Vec::new(),
            delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
        }
    }

    /// An SSE stream of these chunks, then `data: [DONE]`.
    pub fn stream(chunks: impl IntoIterator<Item = Value>) -> Self {
        Self::from_body(Body::Stream {
            events: chunks.into_iter().map(SseEvent::Data).collect(),
            done: true,
            end: StreamEnd::Complete,
        })
    }

    /// Streams `text` as a few content deltas, then `finish_reason: "stop"`.
    pub fn text(text: &str) -> Self {
        Self::text_with_finish(text, "stop")
    }

    /// Streams `text` as a few content deltas, then the given finish reason.
    pub fn text_with_finish(text: &str, finish_reason: &str) -> Self {
        let mut chunks = vec![chunk::role()];
        chunks.extend(split_str(text, 3).iter().map(|p| chunk::text(p)));
        chunks.push(chunk::finish(finish_reason));
        Self::stream(chunks)
    }

    /// Streams reasoning in the `reasoning_content` field, then text, then `stop`.
    pub fn reasoning_then_text(reasoning: &str, text: &str) -> Self {
        Self::thinking_then_text(chunk::reasoning_content, reasoning, text)
    }

    /// Streams reasoning in the `reasoning` field, then text, then `stop`.
    pub fn reasoning_field_then_text(reasoning: &str, text: &str) -> Self {
        Self::thinking_then_text(chunk::reasoning, reasoning, text)
    }

    fn thinking_then_text(make: fn(&str) -> Value, reasoning: &str, text: &str) -> Self {
        let mut chunks = vec![chunk::role()];
        chunks.extend(split_str(reasoning, 2).iter().map(|p| make(p)));
        chunks.extend(split_str(text, 2).iter().map(|p| chunk::text(p)));
        chunks.push(chunk::finish("stop"));
        Self::stream(chunks)
    }

    /// Streams one tool call (arguments split across three deltas), then
    /// `finish_reason: "tool_calls"`.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::tool_calls([(id, name, arguments)])
    }

    /// Streams several tool calls (indices 0, 1, …), then `tool_calls`.
    pub fn tool_calls<'a>(calls: impl IntoIterator<Item = (&'a str, &'a str, Value)>) -> Self {
        let mut chunks = vec![chunk::role()];
        for (index, (id, name, arguments)) in calls.into_iter().enumerate() {
            let index = u32::try_from(index).expect("few tool calls");
            chunks.push(chunk::tool_call_start(index, id, name));
            for part in split_str(&arguments.to_string(), 3) {
                chunks.push(chunk::tool_call_args(index, &part));
            }
        }
        chunks.push(chunk::finish("tool_calls"));
        Self::stream(chunks)
    }

    /// A non-streaming `chat.completion` JSON reply with this text.
    pub fn completion(text: &str) -> Self {
        Self::json(json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": FAKE_MODEL_ID,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }))
    }

    /// `200 OK` with this JSON body.
    pub fn json(body: Value) -> Self {
        Self::status(200, body)
    }

    /// Any status with a JSON body.
    pub fn status(status: u16, body: Value) -> Self {
        Self::raw_body(status, "application/json", body.to_string())
    }

    /// Any status, content type and body.
    pub fn raw_body(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Self::from_body(Body::Fixed {
            status,
            content_type: content_type.to_owned(),
            body: body.into(),
        })
    }

    /// An error status with an OpenAI-shaped error body.
    pub fn error(status: u16, message: &str) -> Self {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            _ => "server_error",
        };
        Self::status(
            status,
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
        )
    }

    /// `429` with `Retry-After: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::error(429, "Rate limit reached").header("Retry-After", &retry_after_secs.to_string())
    }

    /// A reply that never ends (see [`Flood`]).
    pub fn flood(kind: Flood) -> Self {
        Self::from_body(Body::Flood(kind))
    }

    /// Appends a data chunk to a stream.
    pub fn chunk(mut self, chunk: Value) -> Self {
        self.events_mut().push(SseEvent::Data(chunk));
        self
    }

    /// Appends raw text to a stream, written verbatim (e.g. `": ping\n\n"` or
    /// `"data: {not json\n\n"`).
    pub fn raw(mut self, text: &str) -> Self {
        self.events_mut().push(SseEvent::Raw(text.to_owned()));
        self
    }

    /// Appends a usage chunk to a stream.
    pub fn with_usage(self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.chunk(chunk::usage(prompt_tokens, completion_tokens))
    }

    /// Ends the stream without `data: [DONE]` (the body still ends cleanly).
    pub fn without_done(mut self) -> Self {
        if let Body::Stream { done, .. } = &mut self.body {
            *done = false;
        }
        self
    }

    /// Closes the connection abruptly after `n` events (chunks).
    pub fn cut_after(mut self, n: usize) -> Self {
        if let Body::Stream { end, .. } = &mut self.body {
            *end = StreamEnd::CutAfter(n);
        }
        self
    }

    /// Sends `n` events, then sends nothing more until the client
    /// disconnects (counted in [`FakeModel::disconnects`]).
    pub fn hang_after(mut self, n: usize) -> Self {
        if let Body::Stream { end, .. } = &mut self.body {
            *end = StreamEnd::HangAfter(n);
        }
        self
    }

    /// Waits this long between stream events.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Waits this long before sending the status line.
    pub fn first_byte_delay(mut self, delay: Duration) -> Self {
        self.first_byte_delay = delay;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn events_mut(&mut self) -> &mut Vec<SseEvent> {
        match &mut self.body {
            Body::Stream { events, .. } => events,
            Body::Fixed { .. } | Body::Flood(_) => panic!("this Reply is not a stream"),
        }
    }
}

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
}

struct Inner {
    state: Mutex<State>,
    disconnects: AtomicUsize,
    unscripted: AtomicUsize,
    completed_streams: AtomicUsize,
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

    /// Waits until at least `n` chat requests arrived.
    pub async fn wait_for_chat_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |m| m.chat_requests().len() >= n)
            .await
    }
}

/// Reads the request head and body. `None` if the client went away or sent
/// something that is not HTTP/1.1.
async fn read_request(
    rd: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
) -> Option<RecordedRequest> {
    let mut line = String::new();
    // Request line (skip stray blank lines).
    loop {
        line.clear();
        if rd.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let (path, absolute_target) = match target.strip_prefix("http://") {
        Some(rest) => (
            rest.find('/')
                .map_or_else(|| "/".to_owned(), |i| rest[i..].to_owned()),
            Some(target.clone()),
        ),
        None => (target, None),
    };
    let mut headers = Vec::new();
    let mut head_bytes = line.len();
    loop {
        line.clear();
        let n = rd.read_line(&mut line).await.ok()?;
        head_bytes += n;
        if n == 0 || head_bytes > 256 * 1024 {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            line.clear();
            rd.read_line(&mut line).await.ok()?;
            let size_str = line.trim().split(';').next().unwrap_or("");
            let size = usize::from_str_radix(size_str, 16).ok()?;
            if size == 0 {
                // Trailers until a blank line.
                loop {
                    line.clear();
                    if rd.read_line(&mut line).await.ok()? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            rd.read_exact(&mut body[start..]).await.ok()?;
            line.clear();
            rd.read_line(&mut line).await.ok()?;
        }
    } else if let Some(len) = header("content-length") {
        let len: usize = len.parse().ok()?;
        body.resize(len, 0);
        rd.read_exact(&mut body).await.ok()?;
    }
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let parsed = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
    Some(RecordedRequest {
        method,
        path,
        absolute_target,
        headers,
        raw_body,
        body: parsed,
    })
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

async fn handle_connection(inner: Arc<Inner>, stream: TcpStream) {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::new(rd);
    let Some(request) = read_request(&mut rd).await else {
        return;
    };
    let reply = {
        let mut st = inner.state.lock().unwrap();
        st.requests.push(request.clone());
        let path = request.path.split('?').next().unwrap_or("");
        match (request.method.as_str(), path) {
            ("POST", "/v1/chat/completions") => match st
                .responder
                .as_ref()
                .and_then(|r| r(&request))
                .or_else(|| st.replies.pop_front())
            {
                Some(reply) => reply,
                None => {
                    inner.unscripted.fetch_add(1, Ordering::SeqCst);
                    eprintln!("fake model: chat request with no scripted reply left");
                    Reply::status(
                        500,
                        json!({"error": {
                            "message": "fake model: no scripted reply left",
                            "type": "fake_model_error",
                            "code": "no_scripted_reply"
                        }}),
                    )
                }
            },
            ("GET", "/v1/models") => st.models_reply.clone().unwrap_or_else(|| {
                let data: Vec<Value> = st
                    .models
                    .iter()
                    .map(
                        |id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}),
                    )
                    .collect();
                Reply::json(json!({"object": "list", "data": data}))
            }),
            _ => Reply::error(
                404,
                &format!(
                    "fake model: no route for {} {}",
                    request.method, request.path
                ),
            ),
        }
    };
    inner.bump();

    // Watch for the client going away: any EOF/error on the read side.
    let (gone_tx, gone_rx) = watch::channel(false);
    let watcher = tokio::spawn(async move {
        let mut buf = [0u8; 512];
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = gone_tx.send(true);
    });

    if !reply.first_byte_delay.is_zero() {
        tokio::time::sleep(reply.first_byte_delay).await;
    }
    let outcome = write_reply(&mut wr, &reply, gone_rx).await;
    match outcome {
        Outcome::Disconnected => {
            inner.disconnects.fetch_add(1, Ordering::SeqCst);
        }
        Outcome::StreamComplete => {
            inner.completed_streams.fetch_add(1, Ordering::SeqCst);
        }
        Outcome::Other => {}
    }
    inner.bump();
    watcher.abort();
}

enum Outcome {
    StreamComplete,
    Disconnected,
    Other,
}

async fn write_reply(
    wr: &mut OwnedWriteHalf,
    reply: &Reply,
    mut gone: watch::Receiver<bool>,
) -> Outcome {
    let extra: String = reply
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    match &reply.body {
        Body::Fixed {
            status,
            content_type,
            body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
                reason_phrase(*status),
                body.len()
            );
            let _ = wr.write_all(head.as_bytes()).await;
            let _ = wr.write_all(body.as_bytes()).await;
            let _ = wr.shutdown().await;
            Outcome::Other
        }
        Body::Flood(kind) => write_flood(wr, *kind, gone).await,
        Body::Stream { events, done, end } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n{extra}\r\n"
            );
            if wr.write_all(head.as_bytes()).await.is_err() {
                return Outcome::Disconnected;
            }
            let mut texts: Vec<String> = events
                .iter()
                .map(|e| match e {
                    SseEvent::Data(v) => format!("data: {v}\n\n"),
                    SseEvent::Raw(s) => s.clone(),
                })
                .collect();
            if *done {
                texts.push("data: [DONE]\n\n".to_owned());
            }
            for (i, text) in texts.iter().enumerate() {
                match end {
                    StreamEnd::CutAfter(n) if i == *n => {
                        let _ = wr.flush().await;
                        return Outcome::Other;
                    }
                    StreamEnd::HangAfter(n) if i == *n => {
                        let _ = wr.flush().await;
                        let _ = gone.wait_for(|g| *g).await;
                        return Outcome::Disconnected;
                    }
                    _ => {}
                }
                if i > 0 && !reply.delay.is_zero() {
                    tokio::select! {
                        () = tokio::time::sleep(reply.delay) => {}
                        _ = gone.wait_for(|g| *g) => return Outcome::Disconnected,
                    }
                }
                if *gone.borrow() {
                    return Outcome::Disconnected;
                }
                let frame = format!("{:x}\r\n{text}\r\n", text.len());
                if wr.write_all(frame.as_bytes()).await.is_err() || wr.flush().await.is_err() {
                    return Outcome::Disconnected;
                }
            }
            match end {
                StreamEnd::CutAfter(_) => {
                    // n >= number of events: cut before the terminating chunk.
                    let _ = wr.flush().await;
                    return Outcome::Other;
                }
                StreamEnd::HangAfter(_) => {
                    let _ = gone.wait_for(|g| *g).await;
                    return Outcome::Disconnected;
                }
                StreamEnd::Complete => {}
            }
            if wr.write_all(b"0\r\n\r\n").await.is_err() {
                return Outcome::Disconnected;
            }
            let _ = wr.shutdown().await;
            Outcome::StreamComplete
        }
    }
}

/// Writes a [`Flood`] in 64 KiB chunks until the client goes away (or 1 GiB).
async fn write_flood(wr: &mut OwnedWriteHalf, kind: Flood, gone: watch::Receiver<bool>) -> Outcome {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    let first = match kind {
        Flood::Line => r#"data: {"choices":[{"delta":{"content":""#.to_owned(),
        Flood::Text => String::new(),
        Flood::ToolArguments => format!(
            "data: {}\n\n",
            chunk::tool_call_start(0, "call_flood", "write_file")
        ),
    };
    let unit = match kind {
        Flood::Line => "a".repeat(1024),
        // 1 KiB per chunk: the caps are reached in seconds even in a debug build.
        Flood::Text => format!("data: {}\n\n", chunk::text(&"flood ".repeat(170))),
        Flood::ToolArguments => {
            format!("data: {}\n\n", chunk::tool_call_args(0, &"a".repeat(1024)))
        }
    };
    let mut block = String::with_capacity(70_000);
    while block.len() < 64 * 1024 {
        block.push_str(&unit);
    }
    let frame = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
    if wr.write_all(head.as_bytes()).await.is_err() {
        return Outcome::Disconnected;
    }
    if !first.is_empty() && wr.write_all(frame(&first).as_bytes()).await.is_err() {
        return Outcome::Disconnected;
    }
    let block = frame(&block);
    let mut sent = 0usize;
    while sent < 1 << 30 {
        if *gone.borrow() || wr.write_all(block.as_bytes()).await.is_err() {
            return Outcome::Disconnected;
        }
        sent += block.len();
    }
    Outcome::Other
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    /// POSTs `body` to the fake model's chat endpoint.
    async fn post_chat(model: &FakeModel, body: Value) -> reqwest::Response {
        client()
            .post(format!("{}/chat/completions", model.base_url()))
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    fn client() -> reqwest::Client {
        crate::support::http_client()
    }

    /// Parses an SSE body into its `data:` payloads.
    fn sse_data(body: &str) -> Vec<String> {
        body.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                e.strip_prefix("data: ")
                    .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                    .to_owned()
            })
            .collect()
    }

    #[tokio::test]
    async fn sse_text_reply_parses_and_request_is_recorded() {
        let model = FakeModel::start().await;
        model.push(Reply::text("hello").with_usage(3, 2));
        let resp = client()
            .post(format!("{}/chat/completions", model.base_url()))
            .bearer_auth("sk-test")
            .json(&json!({"model": "fake-model", "stream": true, "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(
            resp.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        let body = resp.text().await.unwrap();
        let data = sse_data(&body);
        assert_eq!(data.last().unwrap(), "[DONE]");
        let chunks: Vec<Value> = data[..data.len() - 1]
            .iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let text: String = chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "hello");
        assert!(
            chunks
                .iter()
                .filter(|c| c["choices"][0]["delta"]["content"]
                    .as_str()
                    .is_some_and(|t| !t.is_empty()))
                .count()
                >= 2,
            "text is split into several deltas"
        );
        assert!(
            chunks
                .iter()
                .any(|c| c["choices"][0]["finish_reason"] == "stop")
        );
        assert_eq!(chunks.last().unwrap()["usage"]["total_tokens"], 5);

        let reqs = model.chat_requests();
        assert_eq!(reqs.len(), 1);
        assert_eq!(reqs[0].header("Authorization"), Some("Bearer sk-test"));
        assert_eq!(reqs[0].body["messages"][0]["content"], "hi");
        assert_eq!(reqs[0].last_message().unwrap()["role"], "user");
        assert_eq!(model.completed_streams(), 1);
        assert_eq!(model.disconnects(), 0);
        assert_eq!(model.pending_replies(), 0);
    }

    #[tokio::test]
    async fn tool_call_reply_reassembles() {
        let model = FakeModel::start().await;
        model.push(Reply::tool_call(
            "call_1",
            "echo",
            json!({"text": "hi there", "n": 3}),
        ));
        let body = post_chat(&model, json!({})).await.text().await.unwrap();
        let data = sse_data(&body);
        let mut args = String::new();
        let mut name = None;
        let mut finish = None;
        for d in &data[..data.len() - 1] {
            let c: Value = serde_json::from_str(d).unwrap();
            if let Some(calls) = c["choices"][0]["delta"]["tool_calls"].as_array() {
                assert_eq!(calls[0]["index"], 0);
                if let Some(n) = calls[0]["function"]["name"].as_str() {
                    name = Some(n.to_owned());
                    assert_eq!(calls[0]["id"], "call_1");
                }
                args.push_str(calls[0]["function"]["arguments"].as_str().unwrap());
            }
            if let Some(f) = c["choices"][0]["finish_reason"].as_str() {
                finish = Some(f.to_owned());
            }
        }
        assert_eq!(name.as_deref(), Some("echo"));
        assert_eq!(
            serde_json::from_str::<Value>(&args).unwrap(),
            json!({"text": "hi there", "n": 3})
        );
        assert_eq!(finish.as_deref(), Some("tool_calls"));
    }

    #[tokio::test]
    async fn error_status_with_headers_and_empty_queue() {
        let model = FakeModel::start().await;
        model.push(Reply::rate_limited(1));
        let url = format!("{}/chat/completions", model.base_url());
        let resp = client().post(&url).json(&json!({})).send().await.unwrap();
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()["retry-after"], "1");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["error"]["type"], "rate_limit_error");

        let resp = client().post(&url).json(&json!({})).send().await.unwrap();
        assert_eq!(resp.status(), 500);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(
            body["error"]["message"],
            "fake model: no scripted reply left"
        );
        assert_eq!(model.unscripted_requests(), 1);

        let models: Value = client()
            .get(format!("{}/models", model.base_url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(models["object"], "list");
        assert_eq!(models["data"][0]["id"], "fake-model");

        let resp = client()
            .get(format!("{}/nope", model.base_url()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 404);
        assert_eq!(model.requests().len(), 4);
        assert_eq!(model.chat_requests().len(), 2);
    }

    #[tokio::test]
    async fn non_stream_completion() {
        let model = FakeModel::start().await;
        model.push(Reply::completion("plain"));
        let body: Value = post_chat(&model, json!({"stream": false}))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(body["choices"][0]["message"]["content"], "plain");
    }

    #[tokio::test]
    async fn hang_then_client_disconnect_is_detected() {
        let model = FakeModel::start().await;
        model.push(Reply::text("never finished").hang_after(2));
        let resp = post_chat(&model, json!({})).await;
        let mut stream = resp.bytes_stream();
        let first = stream.next().await.unwrap().unwrap();
        assert!(std::str::from_utf8(&first).unwrap().starts_with("data: "));
        // Nothing else arrives while the server hangs.
        let next = tokio::time::timeout(Duration::from_millis(300), async {
            // Drain what was already sent (2 events), then block.
            let mut got = Vec::new();
            while let Some(item) = stream.next().await {
                got.push(item.unwrap());
            }
            got
        })
        .await;
        assert!(next.is_err(), "the stream must hang, not end");
        assert_eq!(model.disconnects(), 0);
        // The client goes away.
        drop(stream);
        assert!(
            model.wait_for_disconnects(1, Duration::from_secs(5)).await,
            "server noticed the client abort"
        );
    }

    #[tokio::test]
    async fn delayed_stream_aborted_by_client_is_detected() {
        let model = FakeModel::start().await;
        model.push(
            Reply::text("a slow answer that takes a while").delay(Duration::from_millis(200)),
        );
        let resp = post_chat(&model, json!({})).await;
        let mut stream = resp.bytes_stream();
        stream.next().await.unwrap().unwrap();
        drop(stream);
        assert!(model.wait_for_disconnects(1, Duration::from_secs(5)).await);
        assert_eq!(model.completed_streams(), 0);
    }

    #[tokio::test]
    async fn cut_stream_is_an_incomplete_body() {
        let model = FakeModel::start().await;
        model.push(Reply::text("cut short").cut_after(2));
        let resp = post_chat(&model, json!({})).await;
        let mut stream = resp.bytes_stream();
        let mut data = Vec::new();
        let mut error = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(bytes) => data.extend_from_slice(&bytes),
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        assert!(error.is_some(), "a cut stream must end with a body error");
        let text = String::from_utf8(data).unwrap();
        assert_eq!(sse_data(&text).len(), 2);
    }

    #[test]
    fn split_str_is_char_safe() {
        assert_eq!(split_str("hello", 3), vec!["he", "ll", "o"]);
        assert_eq!(split_str("hé", 3), vec!["h", "é"]);
        assert_eq!(split_str("", 3), vec![""]);
    }
}
