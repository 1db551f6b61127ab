//! One ACP connection of `acp-coder serve`: its own agent (the very code the
//! stdio agent runs, [`crate::agent::serve_with`]) on an in-memory pipe, and
//! the router that hands each frame the agent writes to the stream it belongs
//! to (RFD "Streamable HTTP & WebSocket Transport": the connection-scoped
//! stream, or the stream of the session it names; one socket for WebSocket).
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::hub::{Answer, Hub};
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
    /// A client has opened this stream at least once.
    opened: std::sync::atomic::AtomicBool,
}

impl Mailbox {
    fn new() -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Self {
            tx: Mutex::new(Some(tx)),
            rx: Mutex::new(Some(rx)),
            opened: std::sync::atomic::AtomicBool::new(false),
        })
    }

    pub fn push(&self, frame: Arc<str>) {
        if let Some(tx) = lock(&self.tx).as_ref() {
            let _ = tx.send(frame);
        }
    }

    /// Whether a stream holds the reader now.
    fn leased(&self) -> bool {
        lock(&self.rx).is_none()
    }

    /// No more frames: a stream ends once it has delivered what is queued.
    fn close(&self) {
        lock(&self.tx).take();
    }

    /// The one reader, if no other stream holds it.
    pub fn lease(self: &Arc<Self>) -> Option<Lease> {
        let rx = lock(&self.rx).take()?;
        self.opened
            .store(true, std::sync::atomic::Ordering::Release);
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
    /// A viewer's request to this (the owner's) agent: back to the viewer
    /// under its own id.
    Viewer {
        conn: Weak<Conn>,
        id: Value,
        session: String,
    },
}

/// A request the client sent, waiting for the agent's answer.
struct Pending {
    route: Route,
    method: String,
    session: Option<String>,
}

/// A shared permission request shown to this (viewer) connection.
struct Asked {
    session: String,
    /// The request's id at the owner's agent.
    owner_id: Value,
    owner: Weak<Conn>,
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
    /// A request id the server uses itself (`acp-coder-…`).
    ReservedId,
}

pub struct Conn {
    pub id: String,
    /// WebSocket: one stream for everything.
    websocket: bool,
    to_agent: mpsc::UnboundedSender<String>,
    /// The connection-scoped stream (HTTP) or the socket (WebSocket).
    pub main: Arc<Mailbox>,
    sessions: Mutex<HashMap<String, Arc<Mailbox>>>,
    routes: Mutex<HashMap<String, Pending>>,
    max_sessions: usize,
    hub: Arc<Hub>,
    /// Sessions this connection views, live in another's agent: their owner.
    viewing: Mutex<HashMap<String, Weak<Conn>>>,
    /// Shared permission requests shown here, by the id shown (JSON text).
    asked: Mutex<HashMap<String, Asked>>,
    /// Ends the agent's input: it then cancels its turns (answered
    /// `cancelled`), records its sessions and stops its children.
    stop: CancellationToken,
    /// Cancelled once the agent has ended and every stream is closed.
    pub ended: CancellationToken,
    /// When the client last sent a frame.
    last_seen: Mutex<tokio::time::Instant>,
}

impl Conn {
    /// Starts the connection's agent and router.
    pub fn start(
        id: String,
        websocket: bool,
        factory: &AgentFactory,
        max_sessions: usize,
        hub: Arc<Hub>,
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
            hub: hub.clone(),
            viewing: Mutex::new(HashMap::new()),
            asked: Mutex::new(HashMap::new()),
            stop: stop.clone(),
            ended: CancellationToken::new(),
            last_seen: Mutex::new(tokio::time::Instant::now()),
        });
        let input = crate::rpc::eof_on(agent_r, stop.clone().cancelled_owned());
        let mut config = factory();
        let me = conn.id.clone();
        config.live_elsewhere = Some(Arc::new(move |session: &str| {
            hub.owner_elsewhere(session, &me).is_some()
        }));
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
            router.hub.ended(&router.id);
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

    /// An HTTP connection nobody listens to: no stream open and no frame
    /// from the client for `idle` (its client went away without DELETE).
    pub fn abandoned(&self, idle: std::time::Duration) -> bool {
        !self.websocket
            && lock(&self.last_seen).elapsed() >= idle
            && !self.main.leased()
            && !lock(&self.sessions).values().any(|m| m.leased())
    }

    pub fn session_count(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Where frames of `session` go on this connection: the socket
    /// (WebSocket); over HTTP the session's stream once the client has opened
    /// it (frames then wait there while it reconnects), the connection's
    /// stream before that. A client that opens a session's stream before
    /// `session/load` (as the RFD shows) gets the replay there; one that opens
    /// it only when a frame names the session (the Python SDK's client) gets
    /// the first frames on the connection's stream, and loses none.
    pub fn sink(&self, session: &str) -> Arc<Mailbox> {
        if self.websocket {
            return self.main.clone();
        }
        let m = self.session_stream(session);
        if m.opened.load(std::sync::atomic::Ordering::Acquire) {
            m
        } else {
            self.main.clone()
        }
    }

    /// A shared permission request answered elsewhere: no answer expected here.
    pub fn forget_ask(&self, id: &Value) {
        lock(&self.asked).remove(&id.to_string());
    }

    /// A frame from the client. `header_session` is `Acp-Session-Id` (HTTP).
    /// `reply`: the answer to this request comes back on it instead of a
    /// stream (`initialize` over HTTP).
    pub fn incoming(
        self: &Arc<Self>,
        frame: Value,
        header_session: Option<&str>,
        reply: Option<oneshot::Sender<Arc<str>>>,
    ) -> Result<(), Refusal> {
        if self.ended.is_cancelled() || self.stop.is_cancelled() {
            return Err(Refusal::Closed);
        }
        *lock(&self.last_seen) = tokio::time::Instant::now();
        let method = frame
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let session = frame
            .get("params")
            .and_then(|p| p.get("sessionId"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(method) = method else {
            return self.answer_from_client(frame);
        };
        // The ids the server gives viewers' requests and shared questions
        // must never meet a client's own.
        if frame
            .get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| id.starts_with(super::hub::ID_PREFIX))
        {
            return Err(Refusal::ReservedId);
        }
        if let (Some(h), Some(s)) = (header_session, session.as_deref())
            && h != s
        {
            return Err(Refusal::SessionMismatch);
        }
        if (method == "session/new" || method == "session/fork")
            && self.session_count() >= self.max_sessions
        {
            return Err(Refusal::TooManySessions(self.max_sessions));
        }
        if let Some(s) = session.as_deref() {
            if OPENING_METHODS.contains(&method.as_str()) {
                self.open_session(s)?;
            }
            if method == "session/load" || method == "session/resume" {
                // Live in another connection: this one becomes a viewer (its
                // agent opens a read-only view, see AgentConfig::live_elsewhere).
                lock(&self.viewing).remove(s);
                if let Some(owner) = self.hub.owner_elsewhere(s, &self.id) {
                    self.hub.join(s, self);
                    lock(&self.viewing).insert(s.to_owned(), Arc::downgrade(&owner));
                    tracing::info!(connection = %self.id, session = s, owner = %owner.id, "viewing a session live in another connection");
                }
            } else if let Some(owner) = self.owner_of_viewed(s) {
                if method == "session/close" {
                    self.hub.leave(s, &self.id);
                    lock(&self.viewing).remove(s);
                } else {
                    if method == "session/prompt"
                        && let Some(params) = frame.get("params")
                    {
                        self.hub.echo_prompt(s, params, &self.id);
                    }
                    return owner.forward_for_viewer(frame, self, s);
                }
            } else {
                if method == "session/prompt"
                    && let Some(params) = frame.get("params")
                {
                    self.hub.echo_prompt(s, params, &self.id);
                }
                if method == "session/close" {
                    self.hub.leave(s, &self.id);
                }
            }
        }
        if let Some(id) = frame.get("id") {
            let route = match (reply, session.as_deref()) {
                (Some(tx), _) => Route::Reply(tx),
                (None, Some(s)) if !CONNECTION_METHODS.contains(&method.as_str()) => {
                    Route::Session(s.to_owned())
                }
                _ => Route::Main,
            };
            let pending = Pending {
                route,
                method,
                session,
            };
            lock(&self.routes).insert(id.to_string(), pending);
        }
        self.send(&frame)
    }

    fn send(&self, frame: &Value) -> Result<(), Refusal> {
        self.to_agent
            .send(frame.to_string())
            .map_err(|_| Refusal::Closed)
    }

    /// The owner of a session this connection views, while it lives.
    fn owner_of_viewed(&self, session: &str) -> Option<Arc<Conn>> {
        let owner = lock(&self.viewing).get(session).and_then(Weak::upgrade)?;
        // Still live there (its owner may have closed it meanwhile).
        let live = self.hub.owner_elsewhere(session, &self.id)?;
        (live.id == owner.id).then_some(owner)
    }

    /// The client's answer to a request of an agent.
    fn answer_from_client(&self, mut frame: Value) -> Result<(), Refusal> {
        let Some(id) = frame.get("id").cloned() else {
            return self.send(&frame);
        };
        let key = id.to_string();
        // A shared permission request of another connection's agent.
        let asked = lock(&self.asked).remove(&key);
        if let Some(a) = asked {
            let Some(owner) = a.owner.upgrade() else {
                return Ok(());
            };
            if let Answer::First = self
                .hub
                .answer(&a.session, &a.owner_id.to_string(), &self.id)
            {
                frame["id"] = a.owner_id;
                return owner.send(&frame);
            }
            return Ok(());
        }
        if id
            .as_str()
            .is_some_and(|s| s.starts_with(super::hub::ID_PREFIX))
        {
            // Answered by another member first.
            return Ok(());
        }
        // Perhaps the owner's answer to a shared request of its own agent.
        for session in self.live_sessions() {
            match self.hub.answer(&session, &key, &self.id) {
                Answer::Late => return Ok(()),
                Answer::First => break,
                Answer::NotShared => {}
            }
        }
        self.send(&frame)
    }

    /// The sessions this connection's agent holds live (as owner) with
    /// viewers, or not: every session stream it has that it does not view.
    fn live_sessions(&self) -> Vec<String> {
        let viewing = lock(&self.viewing);
        lock(&self.sessions)
            .keys()
            .filter(|s| !viewing.contains_key(*s))
            .cloned()
            .collect()
    }

    /// A viewer's frame for a session this (owner) connection's agent holds.
    fn forward_for_viewer(
        &self,
        mut frame: Value,
        viewer: &Arc<Conn>,
        session: &str,
    ) -> Result<(), Refusal> {
        if let Some(id) = frame.get("id").cloned() {
            let fresh = self.hub.fresh_id("proxy");
            let method = frame
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let pending = Pending {
                route: Route::Viewer {
                    conn: Arc::downgrade(viewer),
                    id,
                    session: session.to_owned(),
                },
                method,
                session: Some(session.to_owned()),
            };
            lock(&self.routes).insert(fresh.to_string(), pending);
            frame["id"] = fresh;
        }
        self.send(&frame)
    }

    /// A frame from the agent, to the stream it belongs to (and, for a
    /// session with viewers, to theirs: see [`super::hub`]).
    fn route_out(self: &Arc<Self>, line: String) {
        let value: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                self.main.push(line.into());
                return;
            }
        };
        let frame: Arc<str> = line.into();
        if let Some(method) = value.get("method").and_then(Value::as_str) {
            let session = value
                .get("params")
                .and_then(|p| p.get("sessionId"))
                .and_then(Value::as_str);
            let Some(s) = session else {
                if method == "$/cancel_request"
                    && let Some(request) = value.get("params").and_then(|p| p.get("requestId"))
                {
                    self.hub.withdraw(&self.id, &request.to_string());
                }
                self.main.push(frame);
                return;
            };
            self.sink(s).push(frame.clone());
            let viewers = self.hub.viewers(s, &self.id);
            if viewers.is_empty() {
                return;
            }
            match value.get("id") {
                None => {
                    for v in &viewers {
                        v.sink(s).push(frame.clone());
                    }
                }
                Some(id) if method == "session/request_permission" => {
                    let mut asked = vec![(Arc::downgrade(self), id.clone())];
                    for v in &viewers {
                        let shown = self.hub.fresh_id("ask");
                        let mut copy = value.clone();
                        copy["id"] = shown.clone();
                        lock(&v.asked).insert(
                            shown.to_string(),
                            Asked {
                                session: s.to_owned(),
                                owner_id: id.clone(),
                                owner: Arc::downgrade(self),
                            },
                        );
                        v.sink(s).push(copy.to_string().into());
                        asked.push((Arc::downgrade(v), shown));
                    }
                    self.hub.ask(s, id.to_string(), asked);
                }
                // Other requests (fs, terminals) are the owner's client's.
                Some(_) => {}
            }
            return;
        }
        let Some(id) = value.get("id") else {
            self.main.push(frame);
            return;
        };
        let Some(pending) = lock(&self.routes).remove(&id.to_string()) else {
            self.main.push(frame);
            return;
        };
        let ok = value.get("result").is_some();
        let opened = match pending.method.as_str() {
            "session/new" | "session/fork" => value
                .get("result")
                .and_then(|r| r.get("sessionId"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            "session/load" | "session/resume" if ok => pending.session.clone(),
            _ => None,
        };
        // A view whose load failed is no view.
        if !ok
            && matches!(pending.method.as_str(), "session/load" | "session/resume")
            && let Some(s) = pending.session.as_deref()
            && lock(&self.viewing).remove(s).is_some()
        {
            self.hub.leave(s, &self.id);
        }
        if let Some(s) = opened
            && !matches!(pending.route, Route::Viewer { .. })
        {
            self.session_stream(&s);
            if !lock(&self.viewing).contains_key(&s) {
                self.hub.own(&s, self);
            }
        }
        let connection_level = CONNECTION_METHODS.contains(&pending.method.as_str());
        match pending.route {
            Route::Reply(tx) => {
                if let Err(frame) = tx.send(frame) {
                    self.main.push(frame);
                }
            }
            Route::Session(s) => self.sink(&s).push(frame),
            Route::Main => self.main.push(frame),
            Route::Viewer { conn, id, session } => {
                let Some(viewer) = conn.upgrade() else { return };
                let mut answer = value;
                answer["id"] = id;
                let to = if connection_level {
                    viewer.main.clone()
                } else {
                    viewer.sink(&session)
                };
                to.push(answer.to_string().into());
            }
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
