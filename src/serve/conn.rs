//! One ACP connection of `acp-coder serve`: its own agent (the very code the
//! stdio agent runs, [`crate::agent::serve_with`]) on an in-memory pipe, and
//! the router that hands each frame the agent writes to the stream it belongs
//! to (RFD "Streamable HTTP & WebSocket Transport": the connection-scoped
//! stream, or the stream of the session it names; one socket for WebSocket).
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::{AgentConfig, serve_with};
use crate::rpc::{Frame, LineReader};

/// Builds the configuration of each connection's agent.
pub type AgentFactory = Arc<dyn Fn() -> AgentConfig + Send + Sync>;

/// Methods whose answers go to the connection-scoped stream although they
/// name a session (the client may not have its session stream yet).
const CONNECTION_METHODS: &[&str] = &[
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
    "session/list",
];

/// Methods that start a session on this connection.
const OPENING_METHODS: &[&str] = &[
    "session/new",
    "session/load",
    "session/resume",
    "session/fork",
];

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Frames waiting for a stream: buffered until a client opens it, handed to
/// one reader at a time (a second gets `None`: 409), back in the box when that
/// reader goes (a dropped SSE stream loses nothing still queued).
pub struct Mailbox {
    tx: Mutex<Option<mpsc::UnboundedSender<Arc<str>>>>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Arc<str>>>>,
}

impl Mailbox {
    fn new() -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Self {
            tx: Mutex::new(Some(tx)),
            rx: Mutex::new(Some(rx)),
        })
    }

    pub fn push(&self, frame: Arc<str>) {
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send(frame);
        }
    }

    /// No more frames: a stream ends once it has delivered what is queued.
    fn close(&self) {
        lock(&self.tx).take();
    }

    /// The one reader, if no other stream holds it.
    pub fn lease(self: &Arc<Self>) -> Option<Lease> {
        let rx = lock(&self.rx).take()?;
        Some(Lease {
            rx: Some(rx),
            home: self.clone(),
        })
    }
}

/// A stream's hold on a [`Mailbox`].
pub struct Lease {
    rx: Option<mpsc::UnboundedReceiver<Arc<str>>>,
    home: Arc<Mailbox>,
}

impl Lease {
    pub async fn recv(&mut self) -> Option<Arc<str>> {
        self.rx.as_mut()?.recv().await
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(rx) = self.rx.take() {
            *lock(&self.home.rx) = Some(rx);
        }
    }
}

/// Where the answer to one of the client's requests goes.
enum Route {
    Main,
    Session(String),
    /// Straight back to the waiting HTTP request (`initialize`).
    Reply(oneshot::Sender<Arc<str>>),
}

/// Why an incoming frame was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The connection has as many sessions as it may.
    TooManySessions(usize),
    /// `Acp-Session-Id` and `params.sessionId` differ.
    SessionMismatch,
    /// The agent is gone (the connection is closing).
    Closed,
}

pub struct Conn {
    pub id: String,
    /// WebSocket: one stream for everything.
    websocket: bool,
    to_agent: mpsc::UnboundedSender<String>,
    /// The connection-scoped stream (HTTP) or the socket (WebSocket).
    pub main: Arc<Mailbox>,
    sessions: Mutex<HashMap<String, Arc<Mailbox>>>,
    routes: Mutex<HashMap<String, (Route, String)>>,
    max_sessions: usize,
    /// Ends the agent's input: it then cancels its turns (answered
    /// `cancelled`), records its sessions and stops its children.
    stop: CancellationToken,
    /// Cancelled once the agent has ended and every stream is closed.
    pub ended: CancellationToken,
}

impl Conn {
    /// Starts the connection's agent and router.
    pub fn start(
        id: String,
        websocket: bool,
        factory: &AgentFactory,
        max_sessions: usize,
    ) -> Arc<Self> {
        let (client_side, agent_side) = tokio::io::duplex(1 << 20);
        let (agent_r, agent_w) = tokio::io::split(agent_side);
        let (client_r, mut client_w) = tokio::io::split(client_side);
        let (to_agent, mut outgoing) = mpsc::unbounded_channel::<String>();
        let stop = CancellationToken::new();
        let conn = Arc::new(Self {
            id,
            websocket,
            to_agent,
            main: Mailbox::new(),
            sessions: Mutex::new(HashMap::new()),
            routes: Mutex::new(HashMap::new()),
            max_sessions,
            stop: stop.clone(),
            ended: CancellationToken::new(),
        });
        let input = crate::rpc::eof_on(agent_r, stop.clone().cancelled_owned());
        let config = factory();
        let max_frame = config.serve.max_frame;
        tokio::spawn(serve_with(input, agent_w, config));
        tokio::spawn(async move {
            while let Some(mut line) = outgoing.recv().await {
                line.push('\n');
                if client_w.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        });
        let router = conn.clone();
        tokio::spawn(async move {
            let mut lines = LineReader::new(BufReader::new(client_r), max_frame.saturating_mul(2));
            while let Ok(Some(frame)) = lines.next().await {
                if let Frame::Line(line) = frame {
                    router.route_out(String::from_utf8_lossy(&line).into_owned());
                }
            }
            router.close_streams();
            tracing::info!(connection = %router.id, "ACP connection ended");
            router.ended.cancel();
        });
        conn
    }

    /// Ends the connection: the agent shuts down as at end of input, its last
    /// frames (the cancelled turns' answers) still reach the streams, which
    /// then close.
    pub fn close(&self) {
        self.stop.cancel();
    }

    fn close_streams(&self) {
        self.main.close();
        for m in lock(&self.sessions).values() {
            m.close();
        }
        // Requests still waiting for a direct answer fail (their sender drops).
        lock(&self.routes).clear();
    }

    /// The session's stream, if the connection knows the session.
    pub fn session(&self, id: &str) -> Option<Arc<Mailbox>> {
        lock(&self.sessions).get(id).cloned()
    }

    /// The session's stream, made on first use (a client opens it before
    /// `session/load`), within the session limit.
    pub fn open_session(&self, id: &str) -> Result<Arc<Mailbox>, Refusal> {
        let mut sessions = lock(&self.sessions);
        if let Some(m) = sessions.get(id) {
            return Ok(m.clone());
        }
        if sessions.len() >= self.max_sessions {
            return Err(Refusal::TooManySessions(self.max_sessions));
        }
        let m = Mailbox::new();
        sessions.insert(id.to_owned(), m.clone());
        Ok(m)
    }

    pub fn session_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// A frame from the client. `header_session` is `Acp-Session-Id` (HTTP).
    /// `reply`: the answer to this request comes back on it instead of a
    /// stream (`initialize` over HTTP).
    pub fn incoming(
        &self,
        frame: Value,
        header_session: Option<&str>,
        reply: Option<oneshot::Sender<Arc<str>>>,
    ) -> Result<(), Refusal> {
        if self.ended.is_cancelled() || self.stop.is_cancelled() {
            return Err(Refusal::Closed);
        }
        let method = frame.get("method").and_then(Value::as_str);
        let session = frame
            .get("params")
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str);
        if let (Some(h), Some(s)) = (header_session, session)
            && method.is_some()
            && h != s
        {
            return Err(Refusal::SessionMismatch);
        }
        if let Some(method) = method {
            if method == "session/new" || method == "session/fork" {
                let n = self.session_count();
                if n >= self.max_sessions {
                    return Err(Refusal::TooManySessions(self.max_sessions));
                }
            }
            if let Some(s) = session
                && OPENING_METHODS.contains(&method)
            {
                self.open_session(s)?;
            }
            if let Some(id) = frame.get("id") {
                let route = match (reply, session) {
                    (Some(tx), _) => Route::Reply(tx),
                    (None, Some(s)) if !CONNECTION_METHODS.contains(&method) => {
                        Route::Session(s.to_owned())
                    }
                    _ => Route::Main,
                };
                lock(&self.routes).insert(id.to_string(), (route, method.to_owned()));
            }
        }
        self.to_agent
            .send(frame.to_string())
            .map_err(|_| Refusal::Closed)
    }

    /// A frame from the agent, to the stream it belongs to.
    fn route_out(&self, line: String) {
        let value: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                self.main.push(line.into());
                return;
            }
        };
        let frame: Arc<str> = line.into();
        if value.get("method").is_some() {
            let session = value
                .get("params")
                .and_then(|p| p.get("sessionId"))
                .and_then(Value::as_str);
            match session {
                Some(s) if !self.websocket => self.session_stream(s).push(frame),
                _ => self.main.push(frame),
            }
            return;
        }
        let Some(id) = value.get("id") else {
            self.main.push(frame);
            return;
        };
        let route = lock(&self.routes).remove(&id.to_string());
        if let Some((_, method)) = &route
            && (method == "session/new" || method == "session/fork")
            && let Some(s) = value
                .get("result")
                .and_then(|r| r.get("sessionId"))
                .and_then(Value::as_str)
        {
            self.session_stream(s);
        }
        match route.map(|(r, _)| r) {
            Some(Route::Reply(tx)) => {
                if let Err(frame) = tx.send(frame) {
                    self.main.push(frame);
                }
            }
            Some(Route::Session(s)) if !self.websocket => self.session_stream(&s).push(frame),
            _ => self.main.push(frame),
        }
    }

    /// The session's stream, made if missing (the agent only speaks of
    /// sessions this connection opened).
    fn session_stream(&self, id: &str) -> Arc<Mailbox> {
        lock(&self.sessions)
            .entry(id.to_owned())
            .or_insert_with(Mailbox::new)
            .clone()
    }
}
