//! The MCP servers of one session: started concurrently, waited for a bounded
//! time, watched for tool-list changes and for death, stopped with the session.
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::Tool as McpToolDef;
use rmcp::service::{Peer, RoleClient};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::acp::{Notice, SessionUpdate};
use crate::config::McpServerSpec;
use crate::editor::Editor;
use crate::tools::{Tool, ToolSource};

pub use super::options::McpOptions;
pub use super::told::Told;
use super::tool::McpTool;
use super::{client, input, names, oauth, prompts, resources};

mod server_task;

/// How long a turn waits for a server's tool list to be read again before
/// it goes on with the list it has ([`ToolSource::refresh`]).
const REFRESH_LIMIT: Duration = Duration::from_secs(3);

/// A server still starting when `session/new` returned gets this long in all
/// (`npx`/`uvx` may download first) before it counts as failed.
const BACKGROUND_START_LIMIT: Duration = Duration::from_secs(300);

enum State {
    Starting,
    Ready {
        peer: Peer<RoleClient>,
        tools: Vec<McpToolDef>,
    },
    /// Why, in words (shown by `/mcp`).
    Failed(String),
    Gone,
    Stopped,
}

struct Slot {
    spec: McpServerSpec,
    state: Mutex<State>,
    auth: oauth::AuthStatus,
    /// Progress tokens of this server's running calls.
    progress: Arc<client::Progress>,
    /// Answers its elicitation, sampling and roots requests, sent on their
    /// own or as the input requests of an `input_required` result.
    asker: Arc<input::Asker>,
    /// Its prompts (`prompts/list` entries as JSON) while ready.
    prompts: Mutex<Vec<serde_json::Value>>,
    /// Its tool list changed and was not read again yet.
    stale: Arc<AtomicBool>,
    /// Its prompt list changed and was not read again yet.
    prompts_stale: Arc<AtomicBool>,
}

/// What the user is told about the servers: as session notices (schema
/// 1.20) to a client that opted into `session.notices`, else as agent text.
struct Notices {
    /// Agent text waiting for the next turn (outside a turn none is sent).
    queued: Vec<String>,
    /// Notices waiting until the client knows the session.
    queued_notices: Vec<Notice>,
    /// Prompt turns running now: notices are sent at once while > 0.
    turns: usize,
    /// The client knows the session (`session/new` was answered): notices
    /// go out at once, in a turn or not.
    known: bool,
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
    /// Bumped when the prompts (slash commands) change.
    commands: watch::Sender<u64>,
    /// The session's directories as `roots/list` answers them; `/add-dir`
    /// changes them ([`ToolSource::roots_changed`]).
    roots: client::Roots,
    /// Set when the session's first prompt turn begins (`oauth_flow::Present`).
    turn_begun: watch::Sender<bool>,
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
        let roots: client::Roots = Arc::new(std::sync::RwLock::new(options.roots.clone()));
        let inner = Arc::new(Inner {
            slots: specs
                .into_iter()
                .map(|spec| {
                    let progress = Arc::<client::Progress>::default();
                    let asker = Arc::new(input::Asker::new(
                        Arc::new(super::elicit::Relay::new(editor.clone(), &spec.name)),
                        Arc::new(super::sampling::Sampler::new(
                            options.sampling.clone(),
                            editor.clone(),
                            &spec.name,
                            progress.clone(),
                        )),
                        roots.clone(),
                    ));
                    Slot {
                        spec,
                        state: Mutex::new(State::Starting),
                        auth: Default::default(),
                        progress,
                        asker,
                        prompts: Mutex::default(),
                        stale: Arc::default(),
                        prompts_stale: Arc::default(),
                    }
                })
                .collect(),
            editor,
            tools: Mutex::new(Vec::new()),
            notices: Mutex::new(Notices {
                queued: Vec::new(),
                queued_notices: Vec::new(),
                turns: 0,
                known: false,
            }),
            stop: CancellationToken::new(),
            settled: watch::channel(0).0,
            startup_over: AtomicBool::new(false),
            commands: watch::channel(0).0,
            roots,
            turn_begun: watch::channel(false).0,
            options,
        });
        let began = Instant::now();
        // If this start is abandoned (the `session/new` that waits for it was
        // aborted), the servers stop rather than run on without a session.
        let abandoned = inner.stop.clone().drop_guard();
        for idx in 0..total {
            tokio::spawn(server_task::run_server(inner.clone(), idx));
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
            let after = format!(
                "after {} s; its tools will be added when it is ready.",
                inner.options.startup_timeout.as_secs_f64()
            );
            inner.notify(Told::info(
                format!("MCP server `{name}` is still starting {after}"),
                format!("MCP server `{name}` is still starting"),
                format!("It is still starting {after}"),
            ));
        }
        tracing::info!(
            servers = total,
            all_settled = all,
            tools = lock(&inner.tools).len(),
            elapsed_ms = began.elapsed().as_millis() as u64,
            "MCP servers started"
        );
        abandoned.disarm();
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
        self.inner.turn_begun.send_replace(true);
        let (queued, notices) = {
            let mut n = lock(&self.inner.notices);
            n.turns += 1;
            n.known = true;
            (
                std::mem::take(&mut n.queued),
                std::mem::take(&mut n.queued_notices),
            )
        };
        if !queued.is_empty() {
            self.inner.send(queued.join("\n\n"));
        }
        self.inner.send_notices(notices);
    }

    /// Re-reads, before the turn calls the model, the tool list and the
    /// prompts (slash commands) of each ready server that may have changed
    /// them unannounced or whose change is still being read: a server of
    /// protocol 2026-07-28, where change notifications travel only on a
    /// `subscriptions/listen` stream and only if the server publishes them
    /// there (the Python SDK drops a `send_tool_list_changed()` and a
    /// `send_prompt_list_changed()` on such a connection), and whose list
    /// results carry their own freshness (SEP-2549: rmcp's cache answers
    /// while `ttlMs` lasts, and a list without it is stale at once); and a
    /// server of an older version whose `list_changed` came in.
    fn refresh(&self) -> Option<crate::tools::RefreshFuture> {
        let due: Vec<(usize, Peer<RoleClient>, bool, bool)> = self
            .inner
            .slots
            .iter()
            .enumerate()
            .filter_map(|(idx, slot)| match &*lock(&slot.state) {
                State::Ready { peer, .. } => {
                    let modern = peer
                        .peer_info()
                        .is_some_and(|i| !i.protocol_version.has_initialize());
                    let tools = modern || slot.stale.load(Ordering::SeqCst);
                    let prompts = modern || slot.prompts_stale.load(Ordering::SeqCst);
                    (tools || prompts).then(|| (idx, peer.clone(), tools, prompts))
                }
                _ => None,
            })
            .collect();
        if due.is_empty() {
            return None;
        }
        let inner = self.inner.clone();
        Some(Box::pin(async move {
            let reads = due.iter().map(|(idx, peer, tools, prompts)| {
                let inner = &inner;
                async move {
                    let read = async {
                        if *tools {
                            server_task::refresh(inner, *idx, peer).await;
                        }
                        if *prompts {
                            inner.load_prompts(*idx, peer, false).await;
                        }
                    };
                    if tokio::time::timeout(REFRESH_LIMIT, read).await.is_err() {
                        let name = &inner.slots[*idx].spec.name;
                        tracing::warn!(server = %name, limit_s = REFRESH_LIMIT.as_secs(), "tools/list or prompts/list before the turn took too long: the last lists are used");
                    }
                }
            });
            futures::future::join_all(reads).await;
        }))
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
                State::Failed(why) => format!("failed to start: {why}"),
                State::Gone => "stopped unexpectedly; its tools were removed".to_owned(),
                State::Stopped => "stopped".to_owned(),
            };
            lines.push(format!("- **{name}**: {state}"));
            if let Some(url) = oauth::server_url(&slot.spec) {
                let store = oauth::TokenStore::for_server(&self.inner.options.data_dir, url);
                lines.push(format!("  - sign-in: {}", slot.auth.describe(name, &store)));
            }
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

    fn sign_out(&self, server: &str) -> Option<String> {
        let slot = self.inner.slots.iter().find(|s| s.spec.name == server)?;
        Some(oauth::sign_out(
            server,
            oauth::server_url(&slot.spec),
            &self.inner.options.data_dir,
            &slot.auth,
        ))
    }

    /// Each ready server's prompts as `/<server>.<prompt>` (issue 18 item 4).
    fn commands(&self) -> Vec<crate::tools::SourceCommand> {
        let mut out = Vec::new();
        for slot in &self.inner.slots {
            if matches!(*lock(&slot.state), State::Ready { .. }) {
                for p in lock(&slot.prompts).iter() {
                    out.extend(prompts::command(&slot.spec.name, p));
                }
            }
        }
        out
    }

    fn run_command(&self, name: &str, input: &str) -> Option<crate::tools::CommandFuture> {
        for slot in &self.inner.slots {
            let State::Ready { peer, .. } = &*lock(&slot.state) else {
                continue;
            };
            let found = lock(&slot.prompts)
                .iter()
                .find(|p| {
                    p["name"]
                        .as_str()
                        .map(|n| prompts::command_name(&slot.spec.name, n))
                        == Some(name.to_owned())
                })
                .cloned();
            let Some(prompt) = found else { continue };
            let arguments = prompts::parse_input(&prompt, input);
            let (peer, server) = (peer.clone(), slot.spec.name.clone());
            let asker = slot.asker.clone();
            let prompt_name = prompt["name"].as_str().unwrap_or_default().to_owned();
            let timeout = self.inner.options.call_timeout;
            return Some(Box::pin(async move {
                let fetch = prompts::Fetch {
                    peer,
                    asker,
                    server,
                };
                fetch.run(prompt_name, arguments?, timeout).await
            }));
        }
        None
    }

    /// A prompt's `resource_link` to a ready server's resource (issue 18
    /// item 5, [`super::prompt_links`]).
    fn read_link(&self, uri: &str) -> Option<crate::tools::LinkFuture> {
        let servers = self.inner.resource_servers();
        if servers.is_empty() {
            return None;
        }
        let (uri, timeout) = (uri.to_owned(), self.inner.options.call_timeout);
        Some(Box::pin(super::prompt_links::read(servers, uri, timeout)))
    }

    /// `/add-dir` (issue 18 item 1): `roots/list` answers the new list and
    /// every ready server gets `notifications/roots/list_changed`.
    fn roots_changed(&self, roots: &[PathBuf]) {
        *self.inner.roots.write().unwrap_or_else(|e| e.into_inner()) = roots.to_vec();
        for slot in &self.inner.slots {
            let State::Ready { peer, .. } = &*lock(&slot.state) else {
                continue;
            };
            let (peer, server) = (peer.clone(), slot.spec.name.clone());
            tokio::spawn(async move {
                #[allow(deprecated)] // roots: see src/mcp/client.rs
                let sent = peer.notify_roots_list_changed().await;
                match sent {
                    Ok(()) => tracing::info!(server = %server, "MCP roots/list_changed sent"),
                    Err(e) => {
                        tracing::warn!(server = %server, error = %e, "MCP roots/list_changed not sent")
                    }
                }
            });
        }
    }

    /// Its one caller subscribes strictly after the response that tells
    /// the client the session (`reply_then_commands`): from then on notices
    /// need not wait for a turn.
    fn commands_changed(&self) -> Option<watch::Receiver<u64>> {
        let notices = {
            let mut n = lock(&self.inner.notices);
            n.known = true;
            std::mem::take(&mut n.queued_notices)
        };
        self.inner.send_notices(notices);
        Some(self.inner.commands.subscribe())
    }
}

impl Inner {
    /// Tells the user: a client that shows notices gets a notice, at once
    /// once it knows the session (else when it does); another gets agent
    /// text, at once if a turn runs, else at the start of the next one.
    fn notify(&self, told: Told) {
        let Told { text, notice } = told;
        tracing::info!(notice = %text, "MCP notice");
        let mut n = lock(&self.notices);
        if self.editor.capabilities().notices() {
            if n.known || n.turns > 0 {
                drop(n);
                self.send_notices(vec![notice]);
            } else {
                n.queued_notices.push(notice);
            }
        } else if n.turns > 0 {
            drop(n);
            self.send(text);
        } else {
            n.queued.push(text);
        }
    }

    fn send_notices(&self, notices: Vec<Notice>) {
        for notice in notices {
            self.editor.notice(notice);
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
        let mut defs: Vec<(usize, McpToolDef, Peer<RoleClient>)> = Vec::new();
        let mut with_resources = Vec::new();
        for (idx, slot) in self.slots.iter().enumerate() {
            if let State::Ready { peer, tools } = &*lock(&slot.state) {
                for t in tools {
                    defs.push((idx, t.clone(), peer.clone()));
                }
                if peer
                    .peer_info()
                    .is_some_and(|i| i.capabilities.resources.is_some())
                {
                    with_resources.push(resources::Server {
                        name: slot.spec.name.clone(),
                        peer: peer.clone(),
                        asker: slot.asker.clone(),
                    });
                }
            }
        }
        let names = names::assign(
            defs.iter()
                .map(|(i, d, _)| (self.slots[*i].spec.name.as_str(), d.name.as_ref())),
            &Default::default(),
        );
        let mut list: Vec<Arc<dyn Tool>> = defs
            .into_iter()
            .zip(names)
            .map(|((idx, def, peer), name)| {
                let slot = &self.slots[idx];
                Arc::new(
                    McpTool::new(name, &slot.spec.name, def, peer, self.options.call_timeout)
                        .with_progress(slot.progress.clone())
                        .with_asker(slot.asker.clone()),
                ) as Arc<dyn Tool>
            })
            .collect();
        // Issue 18 item 5: first, so the tool budget never drops them.
        let resource_tools =
            resources::ResourceTool::pair(with_resources, self.options.call_timeout);
        list.splice(
            0..0,
            resource_tools
                .into_iter()
                .map(|t| Arc::new(t) as Arc<dyn Tool>),
        );
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

    /// The ready servers that offer resources.
    fn resource_servers(&self) -> Vec<resources::Server> {
        self.slots
            .iter()
            .filter_map(|slot| match &*lock(&slot.state) {
                State::Ready { peer, .. }
                    if peer
                        .peer_info()
                        .is_some_and(|i| i.capabilities.resources.is_some()) =>
                {
                    Some(resources::Server {
                        name: slot.spec.name.clone(),
                        peer: peer.clone(),
                        asker: slot.asker.clone(),
                    })
                }
                _ => None,
            })
            .collect()
    }

    fn set(&self, idx: usize, state: State) {
        *lock(&self.slots[idx].state) = state;
    }

    /// Re-reads server `idx`'s prompts (at start, on
    /// `prompts/list_changed`, and before a turn: `McpManager::refresh`) and
    /// tells the session its commands changed: always with `announce`,
    /// else only when the list is not the one it had.
    async fn load_prompts(&self, idx: usize, peer: &Peer<RoleClient>, announce: bool) {
        let slot = &self.slots[idx];
        slot.prompts_stale.store(false, Ordering::SeqCst);
        let offers = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_some());
        let mut changed = false;
        if offers {
            match peer.list_all_prompts().await {
                Ok(list) => {
                    let list: Vec<serde_json::Value> = list
                        .iter()
                        .filter_map(|p| serde_json::to_value(p).ok())
                        .collect();
                    let mut old = lock(&slot.prompts);
                    if *old != list {
                        tracing::info!(server = %slot.spec.name, prompts = list.len(), "MCP prompts listed");
                        *old = list;
                        changed = true;
                    }
                }
                Err(e) => {
                    tracing::warn!(server = %slot.spec.name, error = %e, "prompts/list failed")
                }
            }
        }
        if announce || changed {
            self.commands.send_modify(|n| *n += 1);
        }
    }
}

#[cfg(test)]
#[path = "manager_timer_tests.rs"]
mod timer_tests;
