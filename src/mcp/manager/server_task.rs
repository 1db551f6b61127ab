//! One server's life, as a task of its [`super::McpManager`]: connect within
//! the start limit (signing in where an HTTP server asks), list and offer its
//! tools and prompts, follow its list changes, notice its death, clean up.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{ServerNotification, SubscriptionFilter};
use rmcp::service::{Peer, RoleClient};
use tokio::sync::mpsc;

use super::super::McpError;
use super::super::connect::{EXIT_WAIT, Service, connect, with_stderr};
use super::super::handler::Handler;
use super::super::stdio::StdioChild;
use super::{BACKGROUND_START_LIMIT, Inner, State, Told, lock};

/// Counts a server as settled exactly once, however its start ends (or
/// when it waits for the user to sign in: `session/new` does not wait for that).
struct Settle<'a>(&'a Inner, AtomicBool);

impl Settle<'_> {
    fn done(&self) {
        if !self.1.swap(true, Ordering::SeqCst) {
            self.0.settled.send_modify(|n| *n += 1);
        }
    }
}

impl Drop for Settle<'_> {
    fn drop(&mut self) {
        self.done();
    }
}

/// Starts, watches and stops server `idx` of `inner`: connect, list its
/// tools, serve until it ends or the session stops, then clean up.
pub(super) async fn run_server(inner: Arc<Inner>, idx: usize) {
    let name = inner.slots[idx].spec.name.clone();
    let settle = Settle(&inner, AtomicBool::new(false));
    let sign_in_notice = |told: Told| {
        settle.done();
        inner.notify(told);
    };
    let (handler, changes) = client_handler(&inner, idx);
    let began = Instant::now();
    let settle_now = || settle.done();
    let present = super::super::oauth_flow::Present {
        editor: &inner.editor,
        notify: &sign_in_notice,
        settle: &settle_now,
        turn_begun: inner.turn_begun.subscribe(),
    };
    let Some((service, child)) = start_server(&inner, idx, handler, present).await else {
        return;
    };
    let peer = service.peer().clone();
    let Some(count) = list_tools(&inner, idx, &peer, began).await else {
        drop(service);
        if let Some(child) = child {
            child.stop().await;
        }
        return;
    };
    // Once ready: the commands watcher reads the prompts of ready servers.
    inner.load_prompts(idx, &peer, true).await;
    let late = inner.startup_over.load(Ordering::SeqCst);
    settle.done();
    if late {
        let tools = format!("{count} tool{}", if count == 1 { "" } else { "s" });
        inner.notify(Told::info(
            format!("MCP server `{name}` is ready now ({tools})."),
            format!("MCP server `{name}` is ready now"),
            format!("Its {tools} are offered from now on."),
        ));
    }
    serve(&inner, idx, service, child, changes).await;
}

/// The signals of a server's list changes, which the serving loop follows.
struct Changes {
    tools_tx: mpsc::UnboundedSender<()>,
    tools: mpsc::UnboundedReceiver<()>,
    prompts: mpsc::UnboundedReceiver<()>,
}

/// The client side of server `idx`'s connection (roots, progress,
/// elicitation, sampling, list changes), and the change signals it sends.
fn client_handler(inner: &Inner, idx: usize) -> (Handler, Changes) {
    let name = &inner.slots[idx].spec.name;
    let (tools_tx, tools) = mpsc::unbounded_channel::<()>();
    let (prompts_tx, prompts) = mpsc::unbounded_channel::<()>();
    let handler = Handler {
        prompts_changed: prompts_tx,
        changed: tools_tx.clone(),
        stale: inner.slots[idx].stale.clone(),
        prompts_stale: inner.slots[idx].prompts_stale.clone(),
        server: name.clone(),
        roots: inner.roots.clone(),
        progress: inner.slots[idx].progress.clone(),
        elicit: inner.slots[idx].asker.elicit.clone(),
        sampling: inner.slots[idx].asker.sampling.clone(),
    };
    let changes = Changes {
        tools_tx,
        tools,
        prompts,
    };
    (handler, changes)
}

/// Serves a ready server: follows its list changes until it quits (then
/// reported gone) or the session stops (then it is stopped).
async fn serve(
    inner: &Inner,
    idx: usize,
    service: Service,
    child: Option<StdioChild>,
    mut changes: Changes,
) {
    let name = &inner.slots[idx].spec.name;
    let peer = service.peer().clone();
    let listener = subscribe(&peer, name, &changes.tools_tx);
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let ended = loop {
        tokio::select! {
            quit = &mut waiting => break Some(quit),
            Some(()) = changes.tools.recv() => {
                while changes.tools.try_recv().is_ok() {}
                refresh(inner, idx, &peer).await;
            }
            Some(()) = changes.prompts.recv() => {
                while changes.prompts.try_recv().is_ok() {}
                inner.load_prompts(idx, &peer, true).await;
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
        Some(quit) => gone(inner, idx, child.as_ref(), &format!("{quit:?}")).await,
    }
}

/// Connects to server `idx` within [`BACKGROUND_START_LIMIT`]; `None` when
/// the session stopped first or the server failed to start (reported).
async fn start_server(
    inner: &Inner,
    idx: usize,
    handler: Handler,
    present: super::super::oauth_flow::Present<'_>,
) -> Option<(Service, Option<StdioChild>)> {
    let spec = &inner.slots[idx].spec;
    let name = &spec.name;
    let connected = tokio::select! {
        biased;
        _ = inner.stop.cancelled() => {
            inner.set(idx, State::Stopped);
            return None;
        }
        r = tokio::time::timeout(BACKGROUND_START_LIMIT, connect(spec, handler, &inner.options, inner.options.acp_links.as_ref(), inner.stop.child_token(), &inner.slots[idx].auth, present)) => r,
    };
    let connected = connected.unwrap_or_else(|_| {
        Err(McpError::Connect(format!(
            "it did not finish starting within {} s",
            BACKGROUND_START_LIMIT.as_secs()
        )))
    });
    match connected {
        Ok(x) => Some(x),
        Err(e) => {
            tracing::warn!(server = %name, error = %e, "MCP server failed to start");
            inner.set(idx, State::Failed(e.to_string()));
            if !inner.stop.is_cancelled() {
                let rest = "Its tools are not available; other servers are not affected.";
                inner.notify(Told::failed(
                    format!("MCP server `{name}` failed to start: {e}. {rest}"),
                    format!("MCP server `{name}` failed to start"),
                    format!("{e}. {rest}"),
                ));
            }
            None
        }
    }
}

/// Lists the tools of a connected server and offers them; their number, or
/// `None` when listing failed (reported; the caller stops the server).
async fn list_tools(
    inner: &Inner,
    idx: usize,
    peer: &Peer<RoleClient>,
    began: Instant,
) -> Option<usize> {
    let name = &inner.slots[idx].spec.name;
    let tools = match peer.list_all_tools().await {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(server = %name, error = %e, "tools/list failed");
            inner.set(idx, State::Failed(format!("listing its tools failed: {e}")));
            inner.notify(Told::failed(
                format!(
                    "MCP server `{name}` started but listing its tools failed: {e}. Its tools are not available."
                ),
                format!("MCP server `{name}` failed to start"),
                format!("Listing its tools failed: {e}. Its tools are not available."),
            ));
            return None;
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
    Some(count)
}

/// From protocol 2026-07-28 on, list changes come on a `subscriptions/listen`
/// stream (SEP-2575) instead of as plain notifications: asks for them.
fn subscribe(
    peer: &Peer<RoleClient>,
    name: &str,
    changed: &mpsc::UnboundedSender<()>,
) -> Option<tokio::task::JoinHandle<()>> {
    peer.peer_info()
        .filter(|i| !i.protocol_version.has_initialize())
        .filter(|i| {
            i.capabilities
                .tools
                .as_ref()
                .and_then(|t| t.list_changed)
                .unwrap_or(false)
        })
        .map(|_| tokio::spawn(listen(peer.clone(), name.to_owned(), changed.clone())))
}

/// The server went away by itself: reaps it, removes its tools and tells the user.
async fn gone(inner: &Inner, idx: usize, child: Option<&StdioChild>, quit: &str) {
    let name = &inner.slots[idx].spec.name;
    let how = match child {
        Some(c) => {
            let how = c.wait_then_stop(EXIT_WAIT).await;
            c.stderr_eof(EXIT_WAIT).await;
            with_stderr(format!("its process ended ({how})"), c)
        }
        None => format!("the connection closed ({quit})"),
    };
    tracing::warn!(server = %name, how = %how, "MCP server gone");
    inner.set(idx, State::Gone);
    inner.rebuild();
    inner.commands.send_modify(|n| *n += 1);
    if !inner.stop.is_cancelled() {
        let rest = "Its tools were removed; the session goes on.";
        inner.notify(Told::failed(
            format!("MCP server `{name}` stopped unexpectedly: {how}. {rest}"),
            format!("MCP server `{name}` stopped unexpectedly"),
            format!("{how}. {rest}"),
        ));
    }
}

/// Re-reads the tool list (after `tools/list_changed`, or before a turn:
/// `McpManager::refresh`); the model-facing list is rebuilt if it changed.
pub(super) async fn refresh(inner: &Inner, idx: usize, peer: &Peer<RoleClient>) {
    let name = &inner.slots[idx].spec.name;
    inner.slots[idx].stale.store(false, Ordering::SeqCst);
    match peer.list_all_tools().await {
        Ok(tools) => {
            let count = tools.len();
            let changed = match &mut *lock(&inner.slots[idx].state) {
                State::Ready { tools: old, .. } if *old != tools => {
                    *old = tools;
                    true
                }
                _ => false,
            };
            if changed {
                tracing::info!(server = %name, tools = count, "MCP tool list changed");
                inner.rebuild();
            }
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
