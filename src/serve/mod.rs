//! `acp-coder serve --listen ADDR` (issue 46): ACP over HTTP and WebSocket,
//! as the RFD "Streamable HTTP & WebSocket Transport" (agent-client-protocol
//! #721) specifies, on one `/acp` endpoint, with `GET /health` beside it.
//!
//! Every ACP connection (an HTTP `initialize`, or a WebSocket upgrade) runs
//! its own agent, with its own sessions, in this one process: the stdio
//! agent's code on an in-memory pipe ([`conn`]). This module only moves
//! frames between the network and those pipes, and guards the door: the
//! bearer token (required off loopback), the Origin allow-list, and the
//! limits on bodies, connections and sessions. See docs/remote.md and
//! SECURITY.md "The network surface of `serve`".
mod conn;
mod http;
mod hub;
mod ws;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use conn::AgentFactory;
use conn::Conn;

/// The environment variable holding the bearer token.
pub const TOKEN_ENV: &str = "ACP_CODER_SERVE_TOKEN";
/// The ACP endpoint's path.
pub const ENDPOINT: &str = "/acp";
/// The health check's path (no token needed; says nothing but "ok").
pub const HEALTH: &str = "/health";
/// The header naming an ACP connection (RFD §"Identity Model").
pub const CONNECTION_HEADER: &str = "acp-connection-id";
/// The header naming a session on a POST or a session stream.
pub const SESSION_HEADER: &str = "acp-session-id";

/// The limits of one `serve` process.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest POST body or WebSocket message, in bytes (413 / close 1009).
    pub max_body: usize,
    /// ACP connections at once (503 for one more).
    pub max_connections: usize,
    /// Sessions per connection (429 for one more).
    pub max_sessions: usize,
    /// An HTTP connection with no stream open and no POST for this long is
    /// closed (its client went away without DELETE).
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body: 16 * 1024 * 1024,
            max_connections: 64,
            max_sessions: 32,
            idle: Duration::from_secs(600),
        }
    }
}

pub struct ServeOptions {
    pub listen: String,
    /// The bearer token (from `--token-file` or [`TOKEN_ENV`]), if any.
    pub token: Option<String>,
    /// Refuse to start without a token even on loopback.
    pub require_token: bool,
    /// Origins a browser may call from (exact `scheme://host[:port]`).
    pub allow_origins: Vec<String>,
    pub limits: Limits,
    /// Where to write the bound address (`HOST:PORT` and a newline).
    pub port_file: Option<PathBuf>,
    /// The session store (a session stream may be opened for a stored session
    /// before `session/load`).
    pub data_dir: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--listen {0:?} is not an address like 127.0.0.1:8080 or [::1]:8080")]
    Listen(String),
    #[error(
        "refusing to listen on {0} without a token: anyone who can reach it could run commands as you. Set {TOKEN_ENV} or pass --token-file PATH (clients then send `Authorization: Bearer TOKEN`), or listen on 127.0.0.1"
    )]
    PublicWithoutToken(SocketAddr),
    #[error(
        "--require-token is set but there is no token: set {TOKEN_ENV} or pass --token-file PATH"
    )]
    NoToken,
    #[error("cannot read the token file {path}: {source}")]
    TokenFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the token file {0} is empty; put the token on its first line")]
    EmptyTokenFile(PathBuf),
    #[error("--allow-origin {0:?} is not an origin like https://editor.example.com")]
    Origin(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot write the port file {path}: {source}")]
    PortFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Reads the token file's first line (trimmed).
pub fn read_token_file(path: &std::path::Path) -> Result<String, ServeError> {
    let text = std::fs::read_to_string(path).map_err(|source| ServeError::TokenFile {
        path: path.to_owned(),
        source,
    })?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    if token.is_empty() {
        return Err(ServeError::EmptyTokenFile(path.to_owned()));
    }
    Ok(token)
}

/// An `--allow-origin` value, normalised (`scheme://host[:port]`, lower case,
/// no trailing slash).
fn origin(value: &str) -> Result<String, ServeError> {
    let v = value.trim().trim_end_matches('/').to_ascii_lowercase();
    let ok = url::Url::parse(&v).is_ok_and(|u| {
        matches!(u.scheme(), "http" | "https")
            && u.host_str().is_some()
            && u.path() == "/"
            && u.query().is_none()
            && u.username().is_empty()
    });
    if ok {
        Ok(v)
    } else {
        Err(ServeError::Origin(value.to_owned()))
    }
}

/// What every request shares.
pub(crate) struct Server {
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    factory: AgentFactory,
    /// SHA-256 of the token: compared in constant time, whatever its length.
    token: Option<[u8; 32]>,
    origins: Vec<String>,
    limits: Limits,
    store: crate::agent::store::Store,
    /// Cancelled at SIGTERM / Ctrl-C: no new connections, 503 for requests.
    stopping: CancellationToken,
    /// Open SSE streams and WebSocket tasks, awaited at shutdown.
    streams: TaskTracker,
    /// Sessions shared by several connections.
    hub: Arc<hub::Hub>,
}

impl Server {
    fn lock_conns(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn conn(&self, id: &str) -> Option<Arc<Conn>> {
        self.lock_conns().get(id).cloned()
    }

    /// A new ACP connection with its own agent, if under the limit.
    fn new_conn(self: &Arc<Self>, websocket: bool) -> Option<Arc<Conn>> {
        let mut conns = self.lock_conns();
        if conns.len() >= self.limits.max_connections || self.stopping.is_cancelled() {
            return None;
        }
        let id = new_id();
        let conn = Conn::start(
            id.clone(),
            websocket,
            &self.factory,
            self.limits.max_sessions,
            self.hub.clone(),
        );
        conns.insert(id.clone(), conn.clone());
        drop(conns);
        tracing::info!(connection = %id, websocket, "ACP connection opened");
        let server = self.clone();
        let ended = conn.ended.clone();
        tokio::spawn(async move {
            ended.cancelled().await;
            server.lock_conns().remove(&id);
        });
        Some(conn)
    }

    /// Closes one connection.
    fn drop_conn(&self, id: &str) {
        if let Some(c) = self.lock_conns().get(id) {
            c.close();
        }
    }
}

/// A connection id nobody can guess (it is no secret, but one client must
/// not stumble on another's streams).
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom(&mut bytes).is_err() {
        // Unreachable on the platforms we build for; still unique.
        bytes[..8].copy_from_slice(&fastrand::u64(..).to_le_bytes());
        bytes[8..].copy_from_slice(&fastrand::u64(..).to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn getrandom(buf: &mut [u8]) -> Result<(), ()> {
    rustls::crypto::ring::default_provider()
        .secure_random
        .fill(buf)
        .map_err(|_| ())
}

fn digest(token: &str) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).into()
}

/// Serves until SIGTERM / Ctrl-C; then every connection's agent shuts down
/// (running turns answered `cancelled`, sessions recorded), the last frames
/// go out and the streams close.
pub async fn run(opts: ServeOptions, factory: AgentFactory) -> Result<(), ServeError> {
    let addr: SocketAddr = opts
        .listen
        .parse()
        .map_err(|_| ServeError::Listen(opts.listen.clone()))?;
    let token = opts
        .token
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    match token {
        None if !addr.ip().is_loopback() => return Err(ServeError::PublicWithoutToken(addr)),
        None if opts.require_token => return Err(ServeError::NoToken),
        None => tracing::warn!(
            %addr,
            "serving without a token: any local user can connect (set {TOKEN_ENV} or --token-file)"
        ),
        Some(t) => crate::secrets::learn([t.to_owned()]),
    }
    let origins = opts
        .allow_origins
        .iter()
        .map(|o| origin(o))
        .collect::<Result<Vec<_>, _>>()?;
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    if let Some(path) = &opts.port_file {
        std::fs::write(path, format!("{local}\n")).map_err(|source| ServeError::PortFile {
            path: path.clone(),
            source,
        })?;
    }
    let server = Arc::new(Server {
        conns: Mutex::new(HashMap::new()),
        factory,
        token: token.map(digest),
        origins,
        limits: opts.limits.clone(),
        store: crate::agent::store::Store::new(&opts.data_dir),
        stopping: CancellationToken::new(),
        streams: TaskTracker::new(),
        hub: Arc::default(),
    });
    eprintln!("acp-coder serve: listening on http://{local}{ENDPOINT} (ws://{local}{ENDPOINT})");
    tracing::info!(%local, limits = ?opts.limits, token = token.is_some(), "serve listening");
    tokio::spawn(reap_idle(Arc::downgrade(&server)));
    accept_loop(listener, server.clone()).await;
    shutdown(&server).await;
    Ok(())
}

/// Closes the HTTP connections whose client went away (see [`Limits::idle`]).
async fn reap_idle(server: std::sync::Weak<Server>) {
    loop {
        let Some(s) = server.upgrade() else { return };
        let idle = s.limits.idle;
        let abandoned: Vec<Arc<Conn>> = s
            .lock_conns()
            .values()
            .filter(|c| c.abandoned(idle))
            .cloned()
            .collect();
        for c in abandoned {
            tracing::info!(connection = %c.id, ?idle, "serve: closed an idle connection (no stream, no request)");
            c.close();
        }
        drop(s);
        tokio::time::sleep((idle / 4).clamp(Duration::from_millis(200), Duration::from_secs(30)))
            .await;
    }
}

/// Stops every connection and waits (10 s at most) for their agents to
/// answer and record, and for the streams to deliver the last frames.
async fn shutdown(server: &Arc<Server>) {
    tracing::info!("serve: shutting down");
    server.stopping.cancel();
    let conns: Vec<Arc<Conn>> = server.lock_conns().values().cloned().collect();
    for c in &conns {
        c.close();
    }
    let all_ended = futures::future::join_all(conns.iter().map(|c| c.ended.cancelled()));
    if tokio::time::timeout(Duration::from_secs(10), all_ended)
        .await
        .is_err()
    {
        tracing::warn!("serve: some connections did not end within 10 s");
    }
    server.streams.close();
    if tokio::time::timeout(Duration::from_secs(5), server.streams.wait())
        .await
        .is_err()
    {
        tracing::warn!("serve: some streams were still open after 5 s");
    }
}

async fn accept_loop(listener: TcpListener, server: Arc<Server>) {
    // Over HTTP/1.1 every stream is a TCP connection: the main one and one a
    // session, for each ACP connection, and the POSTs beside them.
    let limits = &server.limits;
    let tcp = limits
        .max_connections
        .saturating_mul(limits.max_sessions.saturating_add(2))
        .clamp(16, 4096);
    crate::net::accept_until_terminated(listener, tcp, "serve", move |stream| {
        let server = server.clone();
        async move {
            let svc = hyper::service::service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, std::convert::Infallible>(http::handle(server, req).await) }
            });
            let mut builder =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            builder
                .http1()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30));
            let _ = builder
                .serve_connection_with_upgrades(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalised_and_checked() {
        assert_eq!(
            origin("https://Editor.example.com/").unwrap(),
            "https://editor.example.com"
        );
        assert_eq!(
            origin("http://localhost:5173").unwrap(),
            "http://localhost:5173"
        );
        for bad in [
            "*",
            "editor.example.com",
            "https://x.example/path",
            "file:///tmp",
            "null",
        ] {
            assert!(origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ids_are_long_and_distinct() {
        let (a, b) = (new_id(), new_id());
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
    }
}
