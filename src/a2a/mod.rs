//! `acp-coder a2a`: serves the Agent2Agent protocol (A2A 1.0, JSON-RPC
//! binding over HTTP, SSE for streaming; the 0.3 method names too) so other
//! agents can delegate coding tasks (issue 20, DESIGN "A2A mode").
//!
//! As in `exec`, the agent runs in this process exactly as an editor would
//! run it — [`serve_with`] over an in-memory pipe — and [`client`] plays the
//! editor: `fs/*` from the local disk, permission requests turned into the
//! task's `input-required` state. Sessions live in the same data directory
//! as the editor's, so `session/list` shows them and editors can load them.
//!
//! Security (SECURITY.md "A2A mode"): 127.0.0.1 by default; every request
//! but the agent card needs the bearer token (`a2a_token`,
//! `ACP_CODER_A2A_TOKEN`, or one generated and printed once on stderr); no
//! non-loopback address without a configured token; mode `ask` unless told
//! otherwise, `full-auto` only with the command sandbox; bounded bodies,
//! tasks and idle time.
mod bridge;
mod client;
mod compat;
mod hub;
mod list;
mod server;
mod tasks;
pub mod wire;

use std::convert::Infallible;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::acp::method;
use crate::agent::{AgentConfig, serve_with};
use crate::config::Mode;
use crate::exec::UntilCancelled;
use crate::rpc::{self, Connection, ServeOptions};

pub use hub::Limits;

/// The environment variable holding the bearer token.
pub const TOKEN_ENV: &str = "ACP_CODER_A2A_TOKEN";
/// Where the server listens unless `--listen` says otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:41241";
/// Largest request body (1 MiB): a task is a message, not an upload.
pub const MAX_BODY: usize = 1 << 20;
/// Open HTTP connections at once.
const MAX_CONNECTIONS: usize = 128;

/// What `acp-coder a2a` was asked to do.
#[derive(Debug, Clone, Default)]
pub struct A2aOptions {
    /// `--listen ADDR` (default [`DEFAULT_LISTEN`]).
    pub listen: Option<String>,
    /// `-C DIR`: the served directory (default: the current one).
    pub cwd: Option<PathBuf>,
    /// `--mode` of every session (default `ask`).
    pub mode: Option<String>,
    /// Bounds on tasks (tests shorten the idle time).
    pub limits: Limits,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("--listen {0:?} is not an address like 127.0.0.1:41241")]
    Listen(String),
    #[error(
        "refusing to listen on {0} without a configured token: set a2a_token in the config file or ACP_CODER_A2A_TOKEN, or listen on 127.0.0.1"
    )]
    PublicWithoutToken(SocketAddr),
    #[error(
        "--mode full-auto needs the command sandbox, which is not available here ({0}); use --mode ask or accept-edits"
    )]
    FullAutoWithoutSandbox(String),
    #[error("--mode {0:?} is not one of read-only, plan, ask, accept-edits, full-auto")]
    Mode(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("served directory {path}: {source}")]
    Cwd {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot generate a token from /dev/urandom: {0}; set a2a_token or ACP_CODER_A2A_TOKEN")]
    Random(std::io::Error),
    #[error("the in-process agent did not start: {0}")]
    Agent(String),
}

/// A fresh bearer token: 32 bytes from the kernel's CSPRNG, hex.
fn generate_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(ServeError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The agent card (A2A spec §"Agent card"; `lf.a2a.v1.AgentCard` in its JSON
/// form), plus the 0.3 connection fields so 0.3 clients find the endpoint.
pub fn agent_card(url: &str) -> Value {
    let skill = |id: &str, name: &str, description: &str, examples: &[&str]| {
        json!({
            "id": id,
            "name": name,
            "description": description,
            "tags": ["code"],
            "examples": examples,
        })
    };
    json!({
        "name": "acp-coder",
        "description": "A coding agent working in one directory: it reads, edits and explains code, runs commands and tests, and returns its answer and a unified diff of the files it changed. Permission questions come back as input-required.",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {"streaming": true, "pushNotifications": false},
        "securitySchemes": {
            "bearer": {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "The token `acp-coder a2a` printed at start, or its configured a2a_token / ACP_CODER_A2A_TOKEN"
            }}
        },
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain", "application/json"],
        "defaultOutputModes": ["text/plain", "text/x-diff"],
        "skills": [
            skill("edit-code", "Edit code", "Change code in the served directory as asked; the diff comes back as an artifact.", &["Rename the function parse_args to parse_cli everywhere"]),
            skill("explain-code", "Explain code", "Read the code and explain how something works.", &["How does the config loader find its file?"]),
            skill("review-changes", "Review changes", "Review uncommitted changes or a diff and point out problems.", &["Review the changes in src/ against main"]),
            skill("fix-tests", "Run and fix tests", "Run the tests, find why one fails and fix it.", &["cargo test fails in tests/parse.rs; fix it"]),
        ],
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
    })
}

/// The bearer token: the config file's, the environment's, or a new one
/// (`true`: generated, to be printed once).
/// A blank one (`ACP_CODER_A2A_TOKEN=`, `a2a_token = " "`) counts as none.
fn token(configured: Option<String>) -> Result<(String, bool), ServeError> {
    let given = configured
        .into_iter()
        .chain(crate::secrets::env::var(TOKEN_ENV))
        .map(|t| t.trim().to_owned())
        .find(|t| !t.is_empty());
    match given {
        Some(t) => Ok((t, false)),
        None => Ok((generate_token()?, true)),
    }
}

/// Serves until SIGINT/SIGTERM. Returns once the agent has shut down.
pub async fn run(opts: A2aOptions, mut config: AgentConfig) -> Result<(), ServeError> {
    let root = served_root(opts.cwd.as_deref())?;
    let mode = mode_of(opts.mode.as_deref())?;
    config.settings.default_mode = mode;
    // Its clients are guests: this mode is their ceiling (DESIGN "Who
    // holds which rights").
    config.asker = crate::agent::Asker::Guest(mode);
    let listen = opts.listen.as_deref().unwrap_or(DEFAULT_LISTEN);
    let addr: SocketAddr = listen
        .parse()
        .map_err(|_| ServeError::Listen(listen.to_owned()))?;
    let (token, generated) = token(config.settings.a2a_token.clone())?;
    if generated && !addr.ip().is_loopback() {
        return Err(ServeError::PublicWithoutToken(addr));
    }
    crate::secrets::learn([token.clone()]);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;

    let hub = Arc::new(hub::Hub::new(opts.limits));
    let agent = InProcessAgent::start(config, hub.clone()).await?;
    let url = format!("http://{local}/");
    let bridge = Arc::new(bridge::Bridge {
        hub,
        peer: agent.peer.clone(),
        root: root.clone(),
    });
    tokio::spawn(bridge.clone().expire_loop());
    let server = Arc::new(server::Server {
        bridge,
        card: Bytes::from(agent_card(&url).to_string()),
        card_from_host: local.ip().is_unspecified(),
        token: token.clone(),
        max_body: MAX_BODY,
    });
    if generated {
        eprintln!("token: {token}");
    }
    eprintln!(
        "acp-coder a2a: serving {} at {url} (agent card: {url}.well-known/agent-card.json)",
        root.display()
    );
    tracing::info!(%url, root = %root.display(), "a2a serving");
    accept_loop(listener, server).await;
    tracing::info!("a2a: shutting down");
    agent.stop().await;
    Ok(())
}

/// The served directory: `-C DIR` or the current one, canonical.
fn served_root(cwd: Option<&std::path::Path>) -> Result<PathBuf, ServeError> {
    let dir = match cwd {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|source| ServeError::Cwd {
            path: PathBuf::from("."),
            source,
        })?,
    };
    let c = crate::platform::fs::canonicalize(&dir)
        .map_err(|source| ServeError::Cwd { path: dir, source })?;
    if !c.is_dir() {
        return Err(ServeError::Cwd {
            path: c,
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    Ok(c)
}

/// The sessions' mode (`ask` by default); `full-auto` only where the
/// command sandbox confines.
fn mode_of(id: Option<&str>) -> Result<Mode, ServeError> {
    let id = id.unwrap_or(Mode::Ask.id());
    let Some(mode) = Mode::parse(id) else {
        return Err(ServeError::Mode(id.to_owned()));
    };
    if mode == Mode::FullAuto {
        let level = crate::tools::sandbox::level();
        if !level.confines() {
            return Err(ServeError::FullAutoWithoutSandbox(level.describe()));
        }
    }
    Ok(mode)
}

/// The agent, in process, over a duplex, as `exec` drives it: initialized,
/// reading what the bridge writes until [`InProcessAgent::stop`].
struct InProcessAgent {
    peer: rpc::Peer,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl InProcessAgent {
    async fn start(config: AgentConfig, hub: Arc<hub::Hub>) -> Result<Self, ServeError> {
        let (client_side, agent_side) = tokio::io::duplex(1 << 20);
        let (agent_r, agent_w) = tokio::io::split(agent_side);
        let (client_r, client_w) = tokio::io::split(client_side);
        let stop = CancellationToken::new();
        let task = tokio::spawn(serve_with(
            UntilCancelled::new(agent_r, stop.clone()),
            agent_w,
            config,
        ));
        let conn = Connection::new(ServeOptions::default());
        let peer = conn.peer.clone();
        let handler = Arc::new(client::A2aClient { hub });
        let (client_loop, _done) = rpc::serve(conn, client_r, client_w, handler);
        tokio::spawn(client_loop);
        peer.request::<_, Value>(
            method::INITIALIZE,
            &json!({
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false},
                "clientInfo": {"name": "acp-coder-a2a", "title": "acp-coder A2A server", "version": env!("CARGO_PKG_VERSION")}
            }),
        )
        .await
        .map_err(|e| ServeError::Agent(e.message))?;
        Ok(Self { peer, stop, task })
    }

    /// Ends the agent's input; waits (3 s at most) for it to stop its turns
    /// and child processes.
    async fn stop(self) {
        drop(self.peer);
        self.stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(3), self.task).await;
    }
}

/// Serves HTTP/1.1 connections (at most [`MAX_CONNECTIONS`] at once) until
/// SIGTERM/SIGINT.
async fn accept_loop(listener: TcpListener, server: Arc<server::Server>) {
    crate::net::accept_until_terminated(listener, MAX_CONNECTIONS, "a2a", move |stream| {
        let server = server.clone();
        async move {
            let svc = hyper::service::service_fn(move |req| {
                let server = server.clone();
                async move { Ok::<_, Infallible>(server::handle(server, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(Duration::from_secs(30))
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_configured_token_is_no_token() {
        for blank in ["", "   ", "\t\n"] {
            let (t, generated) = token(Some(blank.to_owned())).unwrap();
            assert!(generated, "{blank:?} counted as a token");
            assert_eq!(t.len(), 64);
        }
        assert_eq!(
            token(Some(" tok ".into())).unwrap(),
            ("tok".to_owned(), false)
        );
    }

    #[test]
    fn generated_tokens_are_long_and_fresh() {
        let a = generate_token().unwrap();
        assert_eq!(a.len(), 64);
        assert_ne!(a, generate_token().unwrap());
    }

    #[test]
    fn the_card_names_the_endpoint_and_the_scheme() {
        let c = agent_card("http://127.0.0.1:1/");
        assert_eq!(c["supportedInterfaces"][0]["url"], "http://127.0.0.1:1/");
        assert_eq!(c["capabilities"]["streaming"], true);
        assert_eq!(c["skills"].as_array().unwrap().len(), 4);
        assert!(c["securitySchemes"]["bearer"].is_object());
    }
}
