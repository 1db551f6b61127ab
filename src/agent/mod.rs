//! The agent side of ACP: method handlers, sessions, the turn loop.
//!
//! [`serve`] runs one connection: it owns the [`Agent`] (the `rpc::Handler`),
//! and at end of input cancels every turn, stops every child process and waits
//! for the last frames to be written.
/// The decoding path as one function, for the fuzzer and the corpus replay test.
pub mod decode;
mod engine;
mod handlers;
mod history;
mod hooks;
mod notices;
pub mod policy;
pub(crate) mod project;
mod session;
pub mod store;
mod subagent;
mod turns;

pub use session::{Asker, Session};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::acp::{ClientCapabilities, method};
use crate::config::{Overrides, Settings};
use crate::llm::{LlmError, Model, OpenAiModel};
use crate::rpc::{self, Connection, Handler, Peer, Reply, RpcError, ServeOptions};

use handlers::requests::{EditorNotification, EditorRequest};

/// Builds the model client for the current settings (tests substitute their own).
pub type ModelFactory = Arc<dyn Fn(&Settings) -> Result<Arc<dyn Model>, LlmError> + Send + Sync>;

/// Everything needed to run the agent on a connection.
pub struct AgentConfig {
    pub settings: Settings,
    /// What the command line said, so `authenticate` can reload the rest.
    pub overrides: Option<Overrides>,
    pub model_factory: Option<ModelFactory>,
    pub serve: ServeOptions,
    /// Who sends the prompts: the user at an editor, or (`acp-coder a2a`)
    /// A2A guests within the server's mode.
    pub asker: session::Asker,
    /// Served over the network (`acp-coder serve`): files and commands are
    /// this machine's unless the client opts in to its own (issue 46 item 2).
    pub remote: bool,
    /// Whether a session is live in another connection of this process
    /// (`acp-coder serve`, issue 46 item 6): its `session/load` here opens a
    /// read-only view (replayed, never written); the server routes the
    /// view's prompts to the live copy and shares its updates.
    pub live_elsewhere: Option<LiveElsewhere>,
}

/// See [`AgentConfig::live_elsewhere`].
pub type LiveElsewhere = Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl AgentConfig {
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            overrides: None,
            model_factory: None,
            serve: ServeOptions::default(),
            asker: session::Asker::User,
            remote: false,
            live_elsewhere: None,
        }
    }
}

/// The ACP agent: one per connection.
pub struct Agent {
    peer: Peer,
    overrides: Option<Overrides>,
    settings: RwLock<Arc<Settings>>,
    client: RwLock<Arc<ClientCapabilities>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// Sessions whose `session/new` is not answered yet: on disk already,
    /// but not listed (`handlers::lifecycle::Unborn`).
    unborn: Mutex<std::collections::HashSet<String>>,
    model_factory: ModelFactory,
    /// The model client, built lazily from the settings; reset by `authenticate`.
    model: Mutex<Option<Arc<dyn Model>>>,
    /// The models the endpoint lists (for the picker and the default model).
    catalog: policy::options::Catalog,
    store: store::Store,
    /// The editor's routing of the model provider (unstable `providers/*`).
    providers: handlers::providers::Providers,
    /// MCP-over-ACP connections of this ACP connection, by connection id.
    mcp_links: Arc<crate::mcp::acp_transport::Links>,
    /// Set by `logout`, cleared by a successful `authenticate` (ACP §4).
    logged_out: std::sync::atomic::AtomicBool,
    /// Who sends this connection's prompts (every session's [`session::Asker`]).
    asker: session::Asker,
    /// Served over the network ([`AgentConfig::remote`]).
    remote: bool,
    /// Whose files and terminals the sessions use: the client's (stdio, or a
    /// remote client that opted in) or this machine's.
    client_disk: std::sync::atomic::AtomicBool,
    /// [`AgentConfig::live_elsewhere`].
    live_elsewhere: Option<LiveElsewhere>,
}

fn default_factory() -> ModelFactory {
    Arc::new(|s: &Settings| {
        let m = OpenAiModel::new(
            &s.base_url,
            s.api_key.clone(),
            &s.headers,
            s.connect_timeout,
            s.stream_idle_timeout,
        )?
        .with_limits(crate::llm::StreamLimits {
            max_event_bytes: s.max_sse_event_bytes,
            max_text_bytes: s.max_reply_text_bytes,
            max_tool_arguments_bytes: s.max_tool_arguments_bytes,
        });
        Ok(Arc::new(m) as Arc<dyn Model>)
    })
}

/// Runs the agent over `reader`/`writer` until the reader reaches EOF.
pub async fn serve<R, W>(reader: R, writer: W, settings: Settings)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_with(reader, writer, AgentConfig::new(settings)).await
}

/// [`serve`] with every option.
pub async fn serve_with<R, W>(reader: R, writer: W, config: AgentConfig)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let conn = Connection::new(config.serve);
    // Every frame to the editor passes the one redactor (SECURITY.md §3).
    conn.set_filter(crate::secrets::redact_frame);
    crate::secrets::learn(config.settings.secret_values());
    crate::platform::sandbox::allow_unconfined_full_auto(config.settings.full_auto_without_sandbox);
    let store = store::Store::new(&config.settings.data_dir);
    let agent = Arc::new(Agent {
        peer: conn.peer.clone(),
        overrides: config.overrides,
        settings: RwLock::new(Arc::new(config.settings)),
        client: RwLock::new(Arc::new(ClientCapabilities::default())),
        sessions: Mutex::new(HashMap::new()),
        unborn: Mutex::default(),
        model_factory: config.model_factory.unwrap_or_else(default_factory),
        model: Mutex::new(None),
        catalog: policy::options::Catalog::default(),
        store,
        providers: handlers::providers::Providers::default(),
        mcp_links: Arc::new(crate::mcp::acp_transport::Links::new(conn.peer.clone())),
        logged_out: std::sync::atomic::AtomicBool::new(false),
        asker: config.asker,
        remote: config.remote,
        client_disk: std::sync::atomic::AtomicBool::new(!config.remote),
        live_elsewhere: config.live_elsewhere,
    });
    let (read_loop, writer_done) = rpc::serve(conn, reader, writer, agent.clone());
    read_loop.await;
    tracing::info!("input closed; shutting down");
    agent.shutdown();
    drop(agent);
    // Turn tasks still hold peers for a moment while they unwind; don't wait forever.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer_done.wait()).await;
}

impl Agent {
    /// The effective settings: environment and config file, routed as the
    /// editor chose with `providers/set` (agent/providers.rs).
    fn settings(&self) -> Arc<Settings> {
        self.providers.effective(self.base_settings())
    }

    /// The settings from the environment and the config file alone.
    fn base_settings(&self) -> Arc<Settings> {
        self.settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn client_caps(&self) -> Arc<ClientCapabilities> {
        self.client
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, RpcError> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| handlers::lifecycle::unknown_session(id))
    }

    fn model(&self) -> Result<Arc<dyn Model>, RpcError> {
        if let Some(e) = self.providers.disabled() {
            return Err(e);
        }
        let mut slot = self.model.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = slot.as_ref() {
            return Ok(m.clone());
        }
        let m = (self.model_factory)(&self.settings())
            .map_err(|e| RpcError::internal(e.to_string()))?;
        *slot = Some(m.clone());
        Ok(m)
    }

    /// Cancels every turn and stops every child process we started.
    fn shutdown(&self) {
        let sessions: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, s)| s)
            .collect();
        for s in sessions {
            s.cancel_all();
            // Stops MCP servers; main's kill_all_children is the backstop.
            s.registry.shutdown();
            crate::tools::process::background::kill_session(&s.id);
        }
    }
}

fn to_raw<T: serde::Serialize>(value: &T) -> Result<Reply, RpcError> {
    serde_json::value::to_raw_value(value)
        .map(Reply::from)
        .map_err(RpcError::internal)
}

impl Handler for Agent {
    fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'static, Result<Reply, RpcError>> {
        // Called on the reader loop in arrival order: register a prompt's turn
        // now, so a `session/cancel` read right after it cancels it even if
        // the prompt's task has not started yet.
        let turn = if method == method::SESSION_PROMPT {
            EditorRequest::prompt_session(params.as_deref())
                .and_then(|id| self.session(&id).ok())
                .map(|s| s.register_turn())
        } else {
            None
        };
        Box::pin(async move {
            let Some(request) = EditorRequest::decode(&method, params.as_deref())? else {
                return Err(RpcError::method_not_found(&method));
            };
            match request {
                EditorRequest::Initialize(p) => to_raw(&self.initialize(p)),
                EditorRequest::Authenticate(p) => to_raw(&self.authenticate(p).await?),
                EditorRequest::Logout => to_raw(&self.logout().await?),
                EditorRequest::NewSession(p) => self.new_session(p).await,
                EditorRequest::LoadSession(p) => self.load_session(p).await,
                EditorRequest::ResumeSession(p) => self.resume_session(p).await,
                EditorRequest::ForkSession(p) => self.fork_session(p).await,
                EditorRequest::SetTitle(p) => self.set_title(p).await,
                EditorRequest::SessionOptions(p) => to_raw(&self.options_for(p).await?),
                EditorRequest::ListSessions(p) => to_raw(&self.list_sessions(p)?),
                EditorRequest::CloseSession(p) => to_raw(&self.close_session(p)?),
                EditorRequest::DeleteSession(p) => to_raw(&self.delete_session(p)?),
                EditorRequest::Prompt(p) => to_raw(&self.prompt(p, turn).await?),
                EditorRequest::SetMode(p) => to_raw(&self.set_mode(p).await?),
                EditorRequest::SetConfigOption(p) => to_raw(&self.set_config_option(p).await?),
                EditorRequest::ListProviders => to_raw(&self.list_providers()),
                EditorRequest::SetProvider(p) => to_raw(&self.set_provider(p).await?),
                EditorRequest::DisableProvider(p) => to_raw(&self.disable_provider(p).await?),
                EditorRequest::McpMessage(p) => self.mcp_links.request(p).await,
                EditorRequest::Steering(p) => to_raw(&self.clone().steer(p).await?),
            }
        })
    }

    /// Everything but prompts starts in arrival order: `session/new` must see
    /// the capabilities `initialize` stored, and a `set_mode` sent right
    /// after `session/load` must find the session. Prompts run concurrently
    /// so several sessions can work at once, and `session/new` lets the
    /// queue go on once it has read what it needs (`rpc::release_order`).
    /// `mcp/message` requests (an editor-side MCP server asking its client)
    /// run concurrently too: `session/new` may be waiting for that server.
    /// A steering message waits for the turn's next model boundary, so it
    /// runs concurrently too.
    fn sequential(&self, method: &str) -> bool {
        method != method::SESSION_PROMPT
            && method != method::MCP_MESSAGE
            && method != method::SESSION_STEERING
    }

    /// `$/cancel_request` aborts any request but a prompt (answered
    /// `-32800` by the connection); a turn stops through `session/cancel`,
    /// which ends it cleanly with `stopReason: cancelled` (ACP §6).
    fn abortable(&self, method: &str) -> bool {
        method != method::SESSION_PROMPT
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match EditorNotification::decode(method, params) {
            Ok(Some(EditorNotification::Cancel(r))) => match self.session(&r.session_id) {
                Ok(s) => {
                    tracing::info!(session = %r.session_id, "cancel");
                    s.cancel();
                }
                // A subagent's child session stops alone (`subagent`).
                Err(_) if subagent::cancel(&r.session_id) => {
                    tracing::info!(session = %r.session_id, "cancel of a subagent");
                }
                Err(_) => {
                    tracing::debug!(session = %r.session_id, "cancel for an unknown session")
                }
            },
            Ok(Some(EditorNotification::McpMessage(m))) => self.mcp_links.notification(m),
            // `$/cancel_request` was handled by the connection (see `abortable`).
            Ok(Some(EditorNotification::CancelRequest) | None) => {
                tracing::debug!(method, "ignored notification")
            }
            Err(e) => tracing::debug!(method, error = %e.message, "malformed notification"),
        }
    }
}
