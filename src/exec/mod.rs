//! `acp-coder exec PROMPT`: one turn from the terminal, no editor needed.
//!
//! The agent runs in this process exactly as an editor would run it — the
//! same [`serve_with`] over an in-memory pipe (`tokio::io::duplex`) — and a
//! small built-in ACP client drives it: `initialize` (advertising `fs`
//! read/write, served from the local disk, and no terminal, so commands run
//! as local processes), `session/new` in the working directory, one
//! `session/prompt`. What the agent streams is shown by [`render`].
//! `--continue` and `--resume ID` take up a stored session of the working
//! directory instead (`session/list`, `session/resume`: the same store as
//! the editor's sessions), and `--list` lists them.
//!
//! Exit codes are in [`exit`].
mod client;
pub mod diff;
pub mod render;

use std::io::Read;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::acp::method;
use crate::agent::{AgentConfig, serve_with};
use crate::config::Mode;
use crate::rpc::{self, Connection, RpcError, ServeOptions, codes};
use crate::term::{Stream, Tty};

use client::{Activity, ExecClient, Permissions};
use render::{Outcome, Renderer};

/// Exit codes of `exec` (also listed in `acp-coder exec --help` and README).
pub mod exit {
    /// The turn ended normally (`end_turn`).
    pub const OK: u8 = 0;
    /// Any other failure (internal error, I/O, the agent stopped unexpectedly).
    pub const FAILURE: u8 = 1;
    /// Bad usage or configuration: flags, config file, empty prompt, bad
    /// directory, no such session for `--resume` or `--continue`.
    pub const USAGE: u8 = 2;
    /// Authentication: no API key where one is required, or the endpoint rejected it.
    pub const AUTH: u8 = 3;
    /// The model endpoint failed: unreachable, HTTP errors after retries, no model.
    pub const MODEL: u8 = 4;
    /// The model refused (`refusal` stop reason).
    pub const REFUSAL: u8 = 5;
    /// The turn stopped early: `max_tokens` or `max_turn_requests`.
    pub const INCOMPLETE: u8 = 6;
    /// The turn ended, but a permission it asked for was refused (no
    /// terminal to ask on) or rejected: an edit or command did not happen.
    pub const DECLINED: u8 = 7;
    /// Interrupted (Ctrl-C; `cancelled` stop reason).
    pub const CANCELLED: u8 = 130;
}

/// What `exec` was asked to do.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// The prompt text, or `-` to read it from stdin.
    pub prompt: String,
    /// One JSON event per line instead of text for a person.
    pub json: bool,
    /// Allow everything that would ask.
    pub yes: bool,
    /// Session mode (`read-only`, `ask`, `accept-edits`, `full-auto`).
    pub mode: Option<String>,
    /// Working directory of the session (default: the current directory).
    pub cwd: Option<PathBuf>,
    /// A new session, or which stored one of the working directory.
    pub session: SessionChoice,
    /// List the working directory's sessions instead of running a turn.
    pub list: bool,
}

/// The session `exec` runs its turn in.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum SessionChoice {
    /// A new session (the default).
    #[default]
    New,
    /// The working directory's most recent session (`--continue`).
    Continue,
    /// This session of the working directory (`--resume ID`).
    Resume(String),
}

/// How a run failed before the agent answered the prompt.
#[derive(Debug)]
enum Failure {
    /// The agent answered a request with an error.
    Rpc(RpcError),
    /// `--continue` or `--resume ID` found no such session here.
    NoSession(String),
}

impl From<RpcError> for Failure {
    fn from(e: RpcError) -> Self {
        Failure::Rpc(e)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("reading the prompt from stdin failed: {0}")]
    Stdin(std::io::Error),
    #[error(
        "the prompt is empty: give it as an argument, or `-` and pipe it on stdin (e.g. `echo \"explain main.rs\" | acp-coder exec -`)"
    )]
    EmptyPrompt,
    #[error("--mode {0:?} is not one of read-only, plan, ask, accept-edits, full-auto")]
    Mode(String),
    #[error("working directory {path}: {source}")]
    Cwd {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ExecError {
    pub fn exit_code(&self) -> u8 {
        exit::USAGE
    }
}

/// The prompt text: the argument, or all of stdin for `-`.
pub fn read_prompt(arg: &str) -> Result<String, ExecError> {
    let text = if arg == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(ExecError::Stdin)?;
        s
    } else {
        arg.to_owned()
    };
    if text.trim().is_empty() {
        return Err(ExecError::EmptyPrompt);
    }
    Ok(text)
}

/// Reports an error that happened before the turn (bad flags, bad config) the
/// way the run would have: a JSON error event or a line on stderr.
pub fn report_early_error(json: bool, message: &str, exit_code: u8) {
    let mut r = if json {
        Renderer::Json
    } else {
        Renderer::Human(render::Human::new(std::path::Path::new("/")))
    };
    r.finish(
        Outcome::Failed {
            code: None,
            message,
            data: None,
            exit_code,
            hint: None,
        },
        0,
    );
}

/// Runs one turn and returns the process exit code. The prompt must already
/// be resolved ([`read_prompt`]); `config` is the agent's configuration
/// (tracer included).
pub async fn run(opts: ExecOptions, mut config: AgentConfig) -> u8 {
    let (cwd, permissions) = match prepare(&opts, &mut config) {
        Ok(x) => x,
        Err(e) => {
            report_early_error(opts.json, &e.to_string(), e.exit_code());
            return e.exit_code();
        }
    };

    // The agent, in process, reading what the client writes until `stop`.
    let (client_side, agent_side) = tokio::io::duplex(1 << 20);
    let (agent_r, agent_w) = tokio::io::split(agent_side);
    let (client_r, client_w) = tokio::io::split(client_side);
    let stop = CancellationToken::new();
    let agent_input = UntilCancelled::new(agent_r, stop.clone());
    let agent = tokio::spawn(serve_with(agent_input, agent_w, config));

    // The client.
    let renderer = Arc::new(Mutex::new(Renderer::new(opts.json, &cwd)));
    let (activity, activity_rx) = tokio::sync::watch::channel(Activity {
        frames: 0,
        waiting_on_model: true,
    });
    let handler = Arc::new(ExecClient {
        renderer: renderer.clone(),
        permissions,
        refused: Default::default(),
        declined: Default::default(),
        activity,
        cwd: cwd.clone(),
    });
    let conn = Connection::new(ServeOptions::default());
    let peer = conn.peer.clone();
    let (client_loop, _client_done) = rpc::serve(conn, client_r, client_w, handler.clone());
    tokio::spawn(client_loop);

    let result = if opts.list {
        match list_sessions(&peer, &cwd, opts.json).await {
            Ok(()) => Ok(json!({"stopReason": "end_turn"})),
            Err(e) => Err(e),
        }
    } else {
        prompt_once(&peer, &cwd, &opts, activity_rx, &renderer).await
    };
    let refused = handler.refused.load(Ordering::Relaxed);
    let declined = handler.declined.load(Ordering::Relaxed);
    let code = if opts.list && result.is_ok() {
        exit::OK
    } else {
        report(&renderer, &result, refused, declined)
    };

    // End of input for the agent: it cancels what runs and stops its children.
    drop(peer);
    stop.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(2), agent).await;
    code
}

/// Checks the options before anything starts: the working directory, the
/// mode (applied to `config`), and how permission requests are answered.
fn prepare(
    opts: &ExecOptions,
    config: &mut AgentConfig,
) -> Result<(PathBuf, Permissions), ExecError> {
    let cwd = resolve_cwd(opts.cwd.as_deref())?;
    if let Some(mode) = &opts.mode {
        config.settings.default_mode =
            Mode::parse(mode).ok_or_else(|| ExecError::Mode(mode.clone()))?;
    }
    let permissions = if opts.yes {
        Permissions::AllowAll
    } else if Tty::available() {
        Permissions::AskTty
    } else {
        Permissions::Refuse
    };
    Ok((cwd, permissions))
}

/// `initialize`, as `exec`'s client.
async fn initialize(peer: &rpc::Peer) -> Result<(), RpcError> {
    peer.request::<_, Value>(
        method::INITIALIZE,
        &json!({
            "protocolVersion": 1,
            "clientCapabilities": {
                "fs": {"readTextFile": true, "writeTextFile": true},
                "terminal": false,
                // Notices (MCP start-up failures, the local server in use)
                // come as `notice` updates, shown on stderr, never as answer text.
                "session": {"notices": {}}
            },
            "clientInfo": {"name": "acp-coder-exec", "title": "acp-coder exec", "version": env!("CARGO_PKG_VERSION")}
        }),
    )
    .await
    .map(|_| ())
}

/// The stored sessions of `cwd`, newest first (every page of `session/list`).
async fn stored_sessions(peer: &rpc::Peer, cwd: &std::path::Path) -> Result<Vec<Value>, RpcError> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut params = json!({"cwd": cwd.to_string_lossy()});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let page: Value = peer.request(method::SESSION_LIST, &params).await?;
        if let Some(sessions) = page.get("sessions").and_then(Value::as_array) {
            out.extend(sessions.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() && cursor.as_deref() != Some(c) => cursor = Some(c.to_owned()),
            _ => return Ok(out),
        }
    }
}

/// `exec --list`: the sessions of `cwd`, newest first, one a line on
/// stdout (id, last update, title), or one JSON object a line.
async fn list_sessions(
    peer: &rpc::Peer,
    cwd: &std::path::Path,
    as_json: bool,
) -> Result<(), Failure> {
    use std::io::Write as _;
    initialize(peer).await?;
    let sessions = stored_sessions(peer, cwd).await?;
    let mut out = std::io::stdout().lock();
    if sessions.is_empty() && !as_json {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "No sessions in {} yet.", cwd.display());
    }
    for s in &sessions {
        let field = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or_default();
        let line = if as_json {
            json!({"sessionId": field("sessionId"), "updatedAt": s.get("updatedAt"), "title": s.get("title")})
                .to_string()
        } else {
            let title = crate::tools::sanitize_title(field("title"), 100);
            format!("{}  {}  {}", field("sessionId"), field("updatedAt"), title)
        };
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
    Ok(())
}

/// The session of the turn: a new one, or the stored one `choice` names
/// (`session/resume`, with `--mode` applied to it).
async fn open_session(
    peer: &rpc::Peer,
    cwd: &std::path::Path,
    opts: &ExecOptions,
) -> Result<String, Failure> {
    let wanted = match &opts.session {
        SessionChoice::New => {
            let session: Value = peer
                .request(
                    method::SESSION_NEW,
                    &json!({"cwd": cwd.to_string_lossy(), "mcpServers": []}),
                )
                .await?;
            return Ok(session
                .get("sessionId")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned());
        }
        SessionChoice::Continue => None,
        SessionChoice::Resume(id) => Some(id.as_str()),
    };
    let sessions = stored_sessions(peer, cwd).await?;
    let id_of = |s: &Value| {
        s.get("sessionId")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let found = match wanted {
        None => sessions.first().and_then(id_of),
        Some(id) => sessions.iter().filter_map(id_of).find(|s| s == id),
    };
    let Some(id) = found else {
        return Err(Failure::NoSession(match wanted {
            None => format!(
                "there is no earlier session in {} to continue; run `acp-coder exec PROMPT` to start one",
                cwd.display()
            ),
            Some(id) => format!(
                "there is no session {id:?} in {}; `acp-coder exec --list` lists this directory's sessions (newest first), `-C DIR` another directory's",
                cwd.display()
            ),
        }));
    };
    peer.request::<_, Value>(
        method::SESSION_RESUME,
        &json!({"sessionId": id, "cwd": cwd.to_string_lossy(), "mcpServers": []}),
    )
    .await?;
    if let Some(mode) = &opts.mode {
        peer.request::<_, Value>(
            method::SESSION_SET_MODE,
            &json!({"sessionId": id, "modeId": mode}),
        )
        .await?;
    }
    Ok(id)
}

/// The client's side of one run: `initialize`, the session
/// ([`open_session`]), one `session/prompt`; Ctrl-C cancels the turn, a
/// second one gives up.
async fn prompt_once(
    peer: &rpc::Peer,
    cwd: &std::path::Path,
    opts: &ExecOptions,
    activity_rx: tokio::sync::watch::Receiver<Activity>,
    renderer: &Arc<Mutex<Renderer>>,
) -> Result<Value, Failure> {
    initialize(peer).await?;
    let session_id = open_session(peer, cwd, opts).await?;
    let prompt_params =
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": opts.prompt}]});
    let prompt = peer.request::<_, Value>(method::SESSION_PROMPT, &prompt_params);
    tokio::pin!(prompt);
    let waiting = waiting_indicator(opts.json, activity_rx, renderer.clone());
    tokio::pin!(waiting);
    let mut interrupts = 0;
    loop {
        tokio::select! {
            r = &mut prompt => return r.map_err(Failure::Rpc),
            () = &mut waiting => {}
            () = crate::rpc::terminated() => {
                interrupts += 1;
                if interrupts > 1 {
                    return Ok(json!({"stopReason": "cancelled"}));
                }
                renderer.lock().unwrap_or_else(|e| e.into_inner())
                    .note("Cancelling… (Ctrl-C again to quit at once)");
                peer.notify(method::SESSION_CANCEL, &json!({"sessionId": session_id}));
            }
        }
    }
}

/// Renders how the run ended; the process exit code.
fn report(
    renderer: &Mutex<Renderer>,
    result: &Result<Value, Failure>,
    refused: usize,
    declined: usize,
) -> u8 {
    let mut r = renderer.lock().unwrap_or_else(|e| e.into_inner());
    match result {
        Ok(v) => {
            let reason = v
                .get("stopReason")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            let code = match stop_reason_exit(reason) {
                exit::OK if declined > 0 => exit::DECLINED,
                code => code,
            };
            r.finish(
                Outcome::Stopped {
                    stop_reason: reason,
                    exit_code: code,
                },
                refused,
            );
            code
        }
        Err(Failure::NoSession(message)) => {
            r.finish(
                Outcome::Failed {
                    code: None,
                    message,
                    data: None,
                    exit_code: exit::USAGE,
                    hint: None,
                },
                refused,
            );
            exit::USAGE
        }
        Err(Failure::Rpc(e)) => {
            let code = error_exit(e);
            let hint = match code {
                exit::AUTH => Some(
                    "Run `acp-coder login` to save an endpoint and key, or `acp-coder doctor` to see what is missing.",
                ),
                exit::MODEL => Some("Run `acp-coder doctor` to check the endpoint and model."),
                _ => None,
            };
            r.finish(
                Outcome::Failed {
                    code: Some(e.code),
                    message: &e.message,
                    data: e.data.as_ref(),
                    exit_code: code,
                    hint,
                },
                refused,
            );
            code
        }
    }
}

fn resolve_cwd(dir: Option<&std::path::Path>) -> Result<PathBuf, ExecError> {
    let dir = match dir {
        Some(d) => d.to_owned(),
        None => std::env::current_dir().map_err(|source| ExecError::Cwd {
            path: PathBuf::from("."),
            source,
        })?,
    };
    let canonical = crate::platform::fs::canonicalize(&dir).map_err(|source| ExecError::Cwd {
        path: dir.clone(),
        source,
    })?;
    if !canonical.is_dir() {
        return Err(ExecError::Cwd {
            path: dir,
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    Ok(canonical)
}

/// The exit code for a stop reason.
pub fn stop_reason_exit(reason: &str) -> u8 {
    match reason {
        "end_turn" => exit::OK,
        "refusal" => exit::REFUSAL,
        "max_tokens" | "max_turn_requests" => exit::INCOMPLETE,
        "cancelled" => exit::CANCELLED,
        _ => exit::FAILURE,
    }
}

/// The exit code for an error response from the agent.
pub fn error_exit(e: &RpcError) -> u8 {
    let about_model = e.data.as_ref().is_some_and(|d| d.get("endpoint").is_some())
        || e.message.contains("no model is configured");
    match e.code {
        codes::AUTH_REQUIRED => exit::AUTH,
        _ if about_model => exit::MODEL,
        _ => exit::FAILURE,
    }
}

/// On a terminal, says once per quiet stretch that we are waiting for the
/// model, so a slow first token does not look like a hang (not while a tool
/// runs or a question is open). Never resolves.
async fn waiting_indicator(
    json: bool,
    mut activity: tokio::sync::watch::Receiver<Activity>,
    renderer: Arc<Mutex<Renderer>>,
) {
    if json || !Stream::Stderr.is_terminal() {
        return std::future::pending().await;
    }
    let mut shown = false;
    loop {
        let quiet = tokio::time::timeout(Duration::from_secs(3), activity.changed()).await;
        match quiet {
            Ok(Ok(())) => shown = false,
            Ok(Err(_)) => return std::future::pending().await,
            Err(_) if !shown && activity.borrow().waiting_on_model => {
                shown = true;
                renderer
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .note("⋯ waiting for the model…");
            }
            Err(_) => {}
        }
    }
}

/// A reader that reports end of input once `token` is cancelled (also the
/// A2A server's agent input, `crate::a2a`).
pub struct UntilCancelled<R> {
    inner: R,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl<R> UntilCancelled<R> {
    pub fn new(inner: R, token: CancellationToken) -> Self {
        Self {
            inner,
            cancelled: Box::pin(token.cancelled_owned()),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilCancelled<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes() {
        assert_eq!(stop_reason_exit("end_turn"), 0);
        assert_eq!(stop_reason_exit("refusal"), exit::REFUSAL);
        assert_eq!(stop_reason_exit("max_tokens"), exit::INCOMPLETE);
        assert_eq!(error_exit(&RpcError::auth_required("x")), exit::AUTH);
        assert_eq!(
            error_exit(&RpcError::internal("x").with_data(json!({"endpoint": "u"}))),
            exit::MODEL
        );
        assert_eq!(error_exit(&RpcError::internal("x")), exit::FAILURE);
    }
}
