//! The MCP servers of one session: started concurrently, waited for a bounded
//! time, watched for tool-list changes and for death, stopped with the session.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ClientHandler;
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ServerNotification, SubscriptionFilter,
    Tool as McpToolDef,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, Peer, RoleClient, RunningService,
    serve_client_with_ct,
};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::acp::SessionUpdate;
use crate::config::{McpServerSpec, McpTransportSpec};
use crate::editor::Editor;
use crate::tools::{Tool, ToolSource};

use super::stdio::{self, StdioChild};
use super::tool::McpTool;
use super::{McpError, http, names, sse};

/// A server still starting when `session/new` returned gets this long in all
/// (`npx`/`uvx` may download first) before it counts as failed.
const BACKGROUND_START_LIMIT: Duration = Duration::from_secs(300);
/// After its connection closed, how long a stdio server gets to exit by
/// itself before its group is killed (its exit status goes in the report).
const EXIT_WAIT: Duration = Duration::from_millis(500);
/// stderr lines quoted when a stdio server fails.
const STDERR_LINES: usize = 3;

/// Settings of a session's MCP servers.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// How long [`McpManager::start`] waits for the servers.
    pub startup_timeout: Duration,
    /// How long one tool call may run.
    pub call_timeout: Duration,
    /// Working directory of stdio servers (the session's cwd).
    pub cwd: PathBuf,
    /// Variables removed from the environment of stdio servers.
    pub secret_env: Vec<String>,
    /// How many tools the servers may add in all.
    pub tool_budget: usize,
}

type Service = RunningService<RoleClient, Handler>;

enum State {
    Starting,
    Ready {
        peer: Peer<RoleClient>,
        tools: Vec<McpToolDef>,
    },
    Failed,
    Gone,
    Stopped,
}

struct Slot {
    spec: McpServerSpec,
    state: Mutex<State>,
}

struct Notices {
    queued: Vec<String>,
    /// Prompt turns running now: notices are sent at once while > 0.
    turns: usize,
}

struct Inner {
    slots: Vec<Slot>,
    editor: Editor,
    options: McpOptions,
    tools: Mutex<Vec<Arc<dyn Tool>>>,
    notices: Mutex<Notices>,
    stop: CancellationToken,
    /// Number of servers that finished starting (ready or failed).
    settled: watch::Sender<usize>,
    /// `session/new` stopped waiting: later events are reported as they come.
    startup_over: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The MCP servers of one session and their tools (a [`ToolSource`]).
pub struct McpManager {
    inner: Arc<Inner>,
}

impl McpManager {
    /// Starts every server concurrently and waits until all are ready or
    /// failed, or `startup_timeout` passed; never fails. Servers still
    /// starting go on in the background and their tools appear when ready.
    /// What went wrong is told to the user at the start of the next turn.
    pub async fn start(
        specs: Vec<McpServerSpec>,
        editor: Editor,
        options: McpOptions,
    ) -> Arc<McpManager> {
        let total = specs.len();
        let inner = Arc::new(Inner {
            slots: specs
                .into_iter()
                .map(|spec| Slot {
                    spec,
                    state: Mutex::new(State::Starting),
                })
                .collect(),
            editor,
            tools: Mutex::new(Vec::new()),
            notices: Mutex::new(Notices {
                queued: Vec::new(),
                turns: 0,
            }),
            stop: CancellationToken::new(),
            settled: watch::channel(0).0,
            startup_over: AtomicBool::new(false),
            options,
        });
        let began = Instant::now();
        for idx in 0..total {
            tokio::spawn(run_server(inner.clone(), idx));
        }
        let mut settled = inner.settled.subscribe();
        let all = tokio::time::timeout(
            inner.options.startup_timeout,
            settled.wait_for(|n| *n >= total),
        )
        .await
        .is_ok();
        inner.startup_over.store(true, Ordering::SeqCst);
        let slow: Vec<&str> = inner
            .slots
            .iter()
            .filter(|s| matches!(*lock(&s.state), State::Starting))
            .map(|s| s.spec.name.as_str())
            .collect();
        for name in &slow {
            inner.notify(format!(
                "MCP server `{name}` is still starting after {} s; its tools will be added when it is ready.",
                inner.options.startup_timeout.as_secs_f64()
            ));
        }
        tracing::info!(
            servers = total,
            all_settled = all,
            tools = lock(&inner.tools).len(),
            elapsed_ms = began.elapsed().as_millis() as u64,
            "MCP servers started"
        );
        Arc::new(McpManager { inner })
    }
}

impl Drop for McpManager {
    fn drop(&mut self) {
        self.inner.stop.cancel();
    }
}

impl ToolSource for McpManager {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        lock(&self.inner.tools).clone()
    }

    fn turn_started(&self) {
        let queued = {
            let mut n = lock(&self.inner.notices);
            n.turns += 1;
            std::mem::take(&mut n.queued)
        };
        if !queued.is_empty() {
            self.inner.send(queued.join("\n\n"));
        }
    }

    fn turn_ended(&self) {
        let mut n = lock(&self.inner.notices);
        n.turns = n.turns.saturating_sub(1);
    }

    fn shutdown(&self) {
        self.inner.stop.cancel();
    }

    fn describe(&self) -> Option<String> {
        let tools = lock(&self.inner.tools).clone();
        let mut lines = Vec::new();
        for slot in &self.inner.slots {
            let name = &slot.spec.name;
            let state = match &*lock(&slot.state) {
                State::Starting => "starting".to_owned(),
                State::Ready { tools: defs, .. } => format!("ready, {} tools", defs.len()),
                State::Failed => "failed to start (see the message above or the log)".to_owned(),
                State::Gone => "stopped unexpectedly; its tools were removed".to_owned(),
                State::Stopped => "stopped".to_owned(),
            };
            lines.push(format!("- **{name}**: {state}"));
            let prefix = format!("mcp__{}__", super::names::sanitize(name));
            let offered: Vec<String> = tools
                .iter()
                .map(|t| t.name().to_owned())
                .filter(|n| n.starts_with(&prefix))
                .map(|n| format!("`{n}`"))
                .collect();
            if !offered.is_empty() {
                lines.push(format!("  - tools: {}", offered.join(", ")));
            }
        }
        Some(lines.join("\n"))
    }
}

impl Inner {
    /// Tells the user now if a turn runs, else at the start of the next one.
    fn notify(&self, text: String) {
        tracing::info!(notice = %text, "MCP notice");
        let mut n = lock(&self.notices);
        if n.turns > 0 {
            drop(n);
            self.send(text);
        } else {
            n.queued.push(text);
        }
    }

    fn send(&self, text: String) {
        let id = format!("msg_{:016x}", fastrand::u64(..));
        self.editor
            .update(&SessionUpdate::agent_text(format!("{text}\n\n"), Some(id)));
    }

    /// Recomputes the model-facing tool list from the ready servers.
    fn rebuild(&self) {
        // Held throughout: two servers getting ready at once must not
        // write lists computed from stale states (lock order: tools, slot).
        let mut current = lock(&self.tools);
        let mut defs: Vec<(String, McpToolDef, Peer<RoleClient>)> = Vec::new();
        for slot in &self.slots {
            if let State::Ready { peer, tools } = &*lock(&slot.state) {
                for t in tools {
                    defs.push((slot.spec.name.clone(), t.clone(), peer.clone()));
                }
            }
        }
        let names = names::assign(
            defs.iter().map(|(s, d, _)| (s.as_str(), d.name.as_ref())),
            &Default::default(),
        );
        let mut list: Vec<Arc<dyn Tool>> = defs
            .into_iter()
            .zip(names)
            .map(|((server, def, peer), name)| {
                Arc::new(McpTool::new(
                    name,
                    &server,
                    def,
                    peer,
                    self.options.call_timeout,
                )) as Arc<dyn Tool>
            })
            .collect();
        if list.len() > self.options.tool_budget {
            let dropped: Vec<String> = list
                .split_off(self.options.tool_budget)
                .iter()
                .map(|t| t.name().to_owned())
                .collect();
            tracing::warn!(
                limit = self.options.tool_budget,
                dropped = ?dropped,
                "too many MCP tools: model endpoints take at most 128 tools, so these are not offered"
            );
        }
        tracing::debug!(tools = list.len(), "MCP tool list rebuilt");
        *current = list;
    }

    fn set(&self, idx: usize, state: State) {
        *lock(&self.slots[idx].state) = state;
    }
}

/// Counts a server as settled exactly once, however its start ends.
struct Settle<'a>(&'a Inner, bool);

impl Settle<'_> {
    fn done(&mut self) {
        if !self.1 {
            self.1 = true;
            self.0.settled.send_modify(|n| *n += 1);
        }
    }
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// Starts, watches and stops server `idx` of `inner`.
async fn run_server(inner: Arc<Inner>, idx: usize) {
    let spec = inner.slots[idx].spec.clone();
    let name = spec.name.clone();
    let mut settle = Settle(&inner, false);
    let (changed_tx, mut changed_rx) = mpsc::unbounded_channel::<()>();
    let handler = Handler {
        changed: changed_tx.clone(),
        elicit: Arc::new(super::elicit::Relay::new(inner.editor.clone(), &name)),
    };
    let began = Instant::now();
    let connected = tokio::select! {
        biased;
        _ = inner.stop.cancelled() => {
            inner.set(idx, State::Stopped);
            return;
        }
        r = tokio::time::timeout(BACKGROUND_START_LIMIT, connect(&spec, handler, &inner.options, inner.stop.child_token())) => r,
    };
    let connected = match connected {
        Err(_) => Err(McpError::Connect(format!(
            "it did not finish starting within {} s",
            BACKGROUND_START_LIMIT.as_secs()
        ))),
        Ok(r) => r,
    };
    let (service, child) = match connected {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(server = %name, error = %e, "MCP server failed to start");
            inner.set(idx, State::Failed);
            if !inner.stop.is_cancelled() {
                inner.notify(format!(
                    "MCP server `{name}` failed to start: {e}. Its tools are not available; other servers are not affected."
                ));
            }
            return;
        }
    };
    let peer = service.peer().clone();
    let tools = match peer.list_all_tools().await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(server = %name, error = %e, "tools/list failed");
            inner.set(idx, State::Failed);
            inner.notify(format!(
                "MCP server `{name}` started but listing its tools failed: {e}. Its tools are not available."
            ));
            drop(service);
            if let Some(child) = child {
                child.stop().await;
            }
            return;
        }
    };
    let info = peer.peer_info();
    tracing::info!(
        server = %name,
        tools = tools.len(),
        protocol = %info.as_ref().map(|i| i.protocol_version.to_string()).unwrap_or_default(),
        implementation = %info.as_ref().and_then(|i| i.server_info.as_ref()).map(|s| format!("{} {}", s.name, s.version)).unwrap_or_default(),
        elapsed_ms = began.elapsed().as_millis() as u64,
        "MCP server ready"
    );
    let count = tools.len();
    inner.set(
        idx,
        State::Ready {
            peer: peer.clone(),
            tools,
        },
    );
    inner.rebuild();
    let late = inner.startup_over.load(Ordering::SeqCst);
    settle.done();
    if late {
        inner.notify(format!(
            "MCP server `{name}` is ready now ({count} tool{}).",
            if count == 1 { "" } else { "s" }
        ));
    }

    // From protocol 2026-07-28 on, list changes come on a `subscriptions/listen`
    // stream (SEP-2575) instead of as plain notifications: ask for them.
    let listener = info
        .filter(|i| !i.protocol_version.has_initialize())
        .filter(|i| {
            i.capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
                .unwrap_or(false)
        })
        .map(|_| tokio::spawn(listen(peer.clone(), name.clone(), changed_tx.clone())));

    let waiting = service.waiting();
    tokio::pin!(waiting);
    let ended = loop {
        tokio::select! {
            quit = &mut waiting => break Some(quit),
            Some(()) = changed_rx.recv() => {
                while changed_rx.try_recv().is_ok() {}
                refresh(&inner, idx, &peer).await;
            }
            _ = inner.stop.cancelled() => break None,
        }
    };
    if let Some(l) = listener {
        l.abort();
    }
    match ended {
        None => {
            // The service token is a child of `stop`: the service is closing.
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut waiting).await;
            if let Some(child) = child {
                child.stop().await;
            }
            inner.set(idx, State::Stopped);
            tracing::info!(server = %name, "MCP server stopped");
        }
        Some(quit) => {
            let how = match &child {
                Some(c) => {
                    let how = c.wait_then_stop(EXIT_WAIT).await;
                    c.stderr_eof(EXIT_WAIT).await;
                    with_stderr(format!("its process ended ({how})"), c)
                }
                None => format!("the connection closed ({quit:?})"),
            };
            tracing::warn!(server = %name, how = %how, "MCP server gone");
            inner.set(idx, State::Gone);
            inner.rebuild();
            if !inner.stop.is_cancelled() {
                inner.notify(format!(
                    "MCP server `{name}` stopped unexpectedly: {how}. Its tools were removed; the session goes on."
                ));
            }
        }
    }
}

/// Re-reads the tool list after `tools/list_changed`.
async fn refresh(inner: &Inner, idx: usize, peer: &Peer<RoleClient>) {
    let name = &inner.slots[idx].spec.name;
    match peer.list_all_tools().await {
        Ok(tools) => {
            tracing::info!(server = %name, tools = tools.len(), "MCP tool list changed");
            if let State::Ready { tools: old, .. } = &mut *lock(&inner.slots[idx].state) {
                *old = tools;
            }
            inner.rebuild();
        }
        Err(e) => {
            tracing::warn!(server = %name, error = %e, "tools/list after list_changed failed")
        }
    }
}

/// Keeps a `subscriptions/listen` stream for tool-list changes open.
async fn listen(peer: Peer<RoleClient>, server: String, changed: mpsc::UnboundedSender<()>) {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut sub = match peer.listen(filter).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(server = %server, error = %e, "subscriptions/listen failed");
            return;
        }
    };
    tracing::debug!(server = %server, "listening for tool list changes");
    loop {
        match sub.next().await {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => {
                if changed.send(()).is_err() {
                    return;
                }
            }
            Ok(Some(other)) => {
                tracing::debug!(server = %server, ?other, "subscription notification")
            }
            Ok(None) => {
                tracing::debug!(server = %server, end = ?sub.end(), "subscription ended");
                return;
            }
            Err(e) => {
                tracing::warn!(server = %server, error = %e, "subscription failed");
                return;
            }
        }
    }
}

fn with_stderr(mut text: String, child: &StdioChild) -> String {
    let tail = child.stderr_tail(STDERR_LINES);
    if !tail.is_empty() {
        text.push_str("; its last stderr output: ");
        text.push_str(&tail.join(" | "));
    }
    text
}

/// A handshake failure in words: rmcp's transport errors name Rust types;
/// the causes (connection refused, HTTP status) are in the source chain.
fn init_error(e: &ClientInitializeError) -> String {
    match e {
        ClientInitializeError::TransportError { error, context } => {
            let mut text = format!("{context}: {}", error.error);
            // rmcp's HTTP client error does not chain its reqwest cause.
            let client = error
                .error
                .downcast_ref::<rmcp::transport::streamable_http_client::StreamableHttpError<reqwest::Error>>()
                .and_then(|e| match e {
                    rmcp::transport::streamable_http_client::StreamableHttpError::Client(c) => {
                        Some(c as &(dyn std::error::Error + 'static))
                    }
                    _ => None,
                });
            let mut source = client.or_else(|| error.error.source());
            while let Some(s) = source {
                let part = s.to_string();
                if !text.contains(&part) {
                    text.push_str(": ");
                    text.push_str(&part);
                }
                source = s.source();
            }
            text
        }
        ClientInitializeError::ConnectionClosed(during) => {
            format!("the server closed the connection while waiting for the {during}")
        }
        other => other.to_string(),
    }
}

/// Connects to one server over its transport and does the MCP handshake.
async fn connect(
    spec: &McpServerSpec,
    handler: Handler,
    options: &McpOptions,
    ct: CancellationToken,
) -> Result<(Service, Option<StdioChild>), McpError> {
    match &spec.transport {
        McpTransportSpec::Stdio { command, args, env } => {
            let (child, stdout, stdin) = stdio::spawn(
                &spec.name,
                command,
                args,
                env,
                &options.cwd,
                &options.secret_env,
            )?;
            match serve_client_with_ct(handler, (stdout, stdin), ct).await {
                Ok(service) => Ok((service, Some(child))),
                Err(e) => {
                    let how = child.wait_then_stop(EXIT_WAIT).await;
                    child.stderr_eof(EXIT_WAIT).await;
                    Err(McpError::Handshake(with_stderr(
                        format!("{} (the process: {how})", init_error(&e)),
                        &child,
                    )))
                }
            }
        }
        McpTransportSpec::Http { url, headers } => {
            let transport = http::streamable(url, headers)?;
            let service = serve_client_with_ct(handler, transport, ct)
                .await
                .map_err(|e| McpError::Handshake(init_error(&e)))?;
            Ok((service, None))
        }
        McpTransportSpec::Sse { url, headers } => {
            let (client, headers) = http::client_and_headers(headers)?;
            let transport = sse::SseTransport::connect(client, url, headers).await?;
            let service = serve_client_with_ct(handler, transport, ct)
                .await
                .map_err(|e| McpError::Handshake(init_error(&e)))?;
            Ok((service, None))
        }
    }
}

/// Our side of each connection: forwards tool-list changes.
#[derive(Clone)]
pub struct Handler {
    changed: mpsc::UnboundedSender<()>,
    /// Where server elicitations go (issue 18 item 3, `super::elicit`).
    elicit: Arc<super::elicit::Relay>,
}

impl ClientHandler for Handler {
    /// `notifications/tools/list_changed` outside a subscription (protocol
    /// versions before 2026-07-28).
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changed.send(());
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = self.elicit.capability();
        ClientConfig::new(
            capabilities,
            Implementation::new("acp-coder", env!("CARGO_PKG_VERSION")),
        )
    }

    /// A server's `elicitation/create`, relayed to the editor (issue 18 item 3).
    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.elicit.relay(request).await
    }

    /// `notifications/elicitation/complete` for a relayed URL elicitation.
    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        self.elicit.notification(&notification);
    }
}
