//! The agent side of ACP: method handlers, sessions, the turn loop.
//!
//! [`serve`] runs one connection: it owns the [`Agent`] (the `rpc::Handler`),
//! and at end of input cancels every turn, stops every child process and waits
//! for the last frames to be written.
mod call;
mod changes;
mod checkpoint;
mod commands;
mod compact;
mod lock;
mod methods;
pub mod modes;
mod options;
pub mod permission;
mod prefix;
pub mod prompt;
mod prompting;
pub mod protected;
mod relay;
mod restore;
mod session;
mod sessions;
pub mod store;
mod turn;
mod undo;

pub use session::Session;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::acp::{ClientCapabilities, SessionRef, method};
use crate::config::{Overrides, Settings};
use crate::llm::{LlmError, Model, OpenAiModel};
use crate::rpc::{self, Connection, Handler, Peer, Reply, RpcError, ServeOptions, decode_params};

/// Builds the model client for the current settings (tests substitute their own).
pub type ModelFactory = Arc<dyn Fn(&Settings) -> Result<Arc<dyn Model>, LlmError> + Send + Sync>;

/// Everything needed to run the agent on a connection.
pub struct AgentConfig {
    pub settings: Settings,
    /// What the command line said, so `authenticate` can reload the rest.
    pub overrides: Option<Overrides>,
    pub model_factory: Option<ModelFactory>,
    pub serve: ServeOptions,
}

impl AgentConfig {
    pub fn new(settings: Settings) -> Self {
        Self {
            settings,
            overrides: None,
            model_factory: None,
            serve: ServeOptions::default(),
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
    model_factory: ModelFactory,
    /// The model client, built lazily from the settings; reset by `authenticate`.
    model: Mutex<Option<Arc<dyn Model>>>,
    /// The models the endpoint lists (for the picker and the default model).
    catalog: options::Catalog,
    store: store::Store,
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
        .with_limits(s.stream_limits);
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
    let conn = Connection::new(config.serve.tracer.clone());
    // Every frame to the editor passes the one redactor (SECURITY.md §3).
    conn.set_filter(crate::secrets::redact_frame);
    crate::secrets::learn(config.settings.secret_values());
    let store = store::Store::new(&config.settings.data_dir);
    let agent = Arc::new(Agent {
        peer: conn.peer.clone(),
        overrides: config.overrides,
        settings: RwLock::new(Arc::new(config.settings)),
        client: RwLock::new(Arc::new(ClientCapabilities::default())),
        sessions: Mutex::new(HashMap::new()),
        model_factory: config.model_factory.unwrap_or_else(default_factory),
        model: Mutex::new(None),
        catalog: options::Catalog::default(),
        store,
    });
    let (read_loop, writer_done) = rpc::serve(conn, reader, writer, agent.clone(), config.serve);
    read_loop.await;
    tracing::info!("input closed; shutting down");
    agent.shutdown();
    drop(agent);
    // Turn tasks still hold peers for a moment while they unwind; don't wait forever.
    let _ = tokio::time::timeout(Duration::from_millis(500), writer_done.wait()).await;
}

impl Agent {
    fn settings(&self) -> Arc<Settings> {
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
            .ok_or_else(|| sessions::unknown_session(id))
    }

    fn model(&self) -> Result<Arc<dyn Model>, RpcError> {
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
            s.cancel();
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
            decode_params::<SessionRef>(params.as_deref())
                .ok()
                .and_then(|r| self.session(&r.session_id).ok())
                .map(|s| s.register_turn())
        } else {
            None
        };
        Box::pin(async move {
            let p = params.as_deref();
            match method.as_str() {
                method::INITIALIZE => to_raw(&self.initialize(decode_params(p)?)),
                method::AUTHENTICATE => to_raw(&self.authenticate(decode_params(p)?).await?),
                method::SESSION_NEW => self.new_session(decode_params(p)?).await,
                method::SESSION_LOAD => self.load_session(decode_params(p)?).await,
                method::SESSION_RESUME => self.resume_session(decode_params(p)?).await,
                method::SESSION_LIST => to_raw(&self.list_sessions(decode_params(p)?)?),
                method::SESSION_CLOSE => to_raw(&self.close_session(decode_params(p)?)?),
                method::SESSION_DELETE => to_raw(&self.delete_session(decode_params(p)?)?),
                method::SESSION_PROMPT => to_raw(&self.prompt(decode_params(p)?, turn).await?),
                method::SESSION_SET_MODE => to_raw(&self.set_mode(decode_params(p)?).await?),
                method::SESSION_SET_CONFIG_OPTION => {
                    to_raw(&self.set_config_option(decode_params(p)?).await?)
                }
                _ => Err(RpcError::method_not_found(&method)),
            }
        })
    }

    /// Everything but prompts runs in arrival order: `session/new` must see the
    /// capabilities `initialize` stored, and `set_mode` right after
    /// `session/new` must find the session. Prompts run concurrently so several
    /// sessions can work at once.
    fn sequential(&self, method: &str) -> bool {
        method != method::SESSION_PROMPT
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            method::SESSION_CANCEL => match decode_params::<SessionRef>(params) {
                Ok(r) => match self.session(&r.session_id) {
                    Ok(s) => {
                        tracing::info!(session = %r.session_id, "cancel");
                        s.cancel();
                    }
                    Err(_) => {
                        tracing::debug!(session = %r.session_id, "cancel for an unknown session")
                    }
                },
                Err(e) => tracing::debug!(error = %e.message, "malformed session/cancel"),
            },
            // `$/cancel_request` is optional to honour; our handlers are short
            // except prompts, which are cancelled with `session/cancel`.
            other => tracing::debug!(method = other, "ignored notification"),
        }
    }
}
