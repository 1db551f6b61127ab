//! Handshake and session option handlers (ACP §3, §4, §5.5, §5.6).
use std::sync::Arc;

use crate::acp::{
    AgentCapabilities, AuthMethod, AuthenticateRequest, ConfigOptionUpdate, CurrentModeUpdate,
    Empty, Implementation, InitializeRequest, InitializeResponse, McpCapabilities,
    PROTOCOL_VERSION, PromptCapabilities, SessionCapabilities, SessionConfigOption, SessionUpdate,
    SetConfigOptionRequest, SetConfigOptionResponse, SetModeRequest,
};
use crate::config::Settings;
use crate::rpc::RpcError;

use crate::agent::Agent;
use crate::agent::policy::options::{self, MODE, MODEL, REASONING_EFFORT};
use crate::agent::session::Session;
use crate::config::Mode;

pub(in crate::agent) const AUTH_METHOD_ID: &str = "openai-api-key";

/// Whether `initialize`'s `_meta` says `{"acp-coder": {"clientFs": true}}`:
/// a remote client sharing the agent's disk answers fs/* and terminal/*.
fn opted_in_client_fs(meta: Option<&serde_json::Map<String, serde_json::Value>>) -> bool {
    meta.and_then(|m| m.get("acp-coder"))
        .and_then(|o| o.get("clientFs"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

impl Agent {
    /// Where files and commands live, for `_meta."acp-coder".disk` of
    /// session/new and for `/status`: `None` on stdio (always the client's).
    pub(in crate::agent) fn disk(&self) -> Option<&'static str> {
        self.remote.then(|| {
            if self.client_disk.load(std::sync::atomic::Ordering::Relaxed) {
                "client"
            } else {
                "agent"
            }
        })
    }
}

impl Agent {
    /// `initialize` (ACP §3): always protocol version 1; capabilities are only
    /// what this agent really implements.
    pub(in crate::agent) fn initialize(&self, req: InitializeRequest) -> InitializeResponse {
        tracing::info!(
            client = req.client_info.as_ref().map(|c| c.name.as_str()).unwrap_or("?"),
            requested_version = %req.protocol_version,
            fs_read = req.client_capabilities.fs.read_text_file,
            fs_write = req.client_capabilities.fs.write_text_file,
            terminal = req.client_capabilities.terminal,
            "initialize"
        );
        let terminal_auth = req.client_capabilities.terminal_auth();
        let mut caps = req.client_capabilities;
        // Over `serve` the code lives beside the agent: a client elsewhere
        // must not answer fs/* and terminal/* from its own disk (issue 46
        // item 2). One that shares the disk opts in.
        let client_disk = !self.remote || opted_in_client_fs(req.meta.as_ref());
        if !client_disk {
            caps.fs = Default::default();
            caps.terminal = false;
        }
        self.client_disk
            .store(client_disk, std::sync::atomic::Ordering::Relaxed);
        if self.remote {
            tracing::info!(
                client_disk,
                "files and commands: {}",
                if client_disk {
                    "the client's"
                } else {
                    "this machine's"
                }
            );
        }
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(caps);
        let present = || Some(crate::acp::Empty::default());
        let mut response = InitializeResponse {
            protocol_version: PROTOCOL_VERSION,
            agent_capabilities: AgentCapabilities {
                load_session: true,
                prompt_capabilities: PromptCapabilities {
                    image: true,
                    audio: false,
                    embedded_context: true,
                },
                // Both HTTP transports work (crate::mcp); stdio is always supported.
                // `acp`: servers inside the editor, over this connection (mcp::acp_transport).
                mcp_capabilities: McpCapabilities {
                    http: true,
                    sse: true,
                    acp: true,
                },
                session_capabilities: SessionCapabilities {
                    list: present(),
                    delete: present(),
                    resume: present(),
                    close: present(),
                    additional_directories: present(),
                    fork: present(),
                    options: present(),
                    title: present(),
                },
                // Unstable `providers/*` (agent/providers.rs).
                providers: present(),
                auth: Some(crate::acp::AgentAuthCapabilities { logout: present() }),
            },
            auth_methods: vec![AuthMethod::Agent {
                id: AUTH_METHOD_ID.into(),
                name: "OpenAI-compatible API key".into(),
                description: format!(
                    "Set OPENAI_API_KEY (and OPENAI_BASE_URL for a provider other than OpenAI) in the environment the editor starts acp-coder with, or api_key_env in {}, then retry",
                    crate::config::config_home()
                        .join("acp-coder/config.toml")
                        .display()
                ),
            }],
            agent_info: Implementation {
                name: "acp-coder".into(),
                title: Some("acp-coder".into()),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            // `_session/steering` as codex-acp advertises it (handlers/steering.rs).
            meta: serde_json::json!({"steering": {"supported": true}})
                .as_object()
                .cloned(),
        };
        if terminal_auth {
            response.auth_methods.push(terminal_login_method());
        }
        response
    }

    /// `authenticate` (ACP §4): re-reads environment and config; succeeds when
    /// a usable key (or a keyless local endpoint) is there.
    pub(in crate::agent) async fn authenticate(
        &self,
        req: AuthenticateRequest,
    ) -> Result<Empty, RpcError> {
        if req.method_id != AUTH_METHOD_ID {
            return Err(RpcError::invalid_params(format!(
                "params.methodId: unknown auth method {:?}; this agent offers {AUTH_METHOD_ID:?}",
                req.method_id
            )));
        }
        if let Some(over) = &self.overrides {
            let fresh =
                Settings::load(over).map_err(|e| RpcError::invalid_params(e.to_string()))?;
            crate::secrets::learn(fresh.secret_values());
            *self.settings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(fresh);
            *self.model.lock().unwrap_or_else(|e| e.into_inner()) = None;
            self.catalog.reset().await;
        }
        if let Some(e) = self.providers.disabled() {
            return Err(e);
        }
        match self.settings().missing_credentials() {
            Some(what) => Err(RpcError::auth_required(what)),
            None => {
                self.logged_out
                    .store(false, std::sync::atomic::Ordering::Release);
                Ok(Empty::default())
            }
        }
    }

    /// The session's complete option list.
    pub(in crate::agent) async fn session_options(
        &self,
        session: &Session,
    ) -> Vec<SessionConfigOption> {
        let settings = self.settings();
        let models = match self.model() {
            Ok(m) => self.catalog.models(&settings, m.as_ref()).await,
            Err(_) => Vec::new(),
        };
        let meta = session.meta();
        options::config_options(
            &settings,
            session.mode(),
            meta.model.as_deref(),
            &models,
            meta.reasoning_effort.as_deref(),
        )
    }

    /// `session/set_mode` (ACP §5.5).
    /// A running subagent's child session takes a mode within its parent's.
    pub(in crate::agent) async fn set_mode(&self, req: SetModeRequest) -> Result<Empty, RpcError> {
        let session = self.session_or_child(&req.session_id)?;
        let mode = parse_mode("params.modeId", &req.mode_id)?;
        within_parent("params.modeId", &session, mode)?;
        self.apply_mode(&session, mode).await;
        Ok(Empty::default())
    }

    /// An open session, or a running subagent's child session (whose mode
    /// can be set, within its parent's).
    fn session_or_child(&self, id: &str) -> Result<Arc<Session>, RpcError> {
        self.session(id)
            .or_else(|e| crate::agent::subagent::child(id).ok_or(e))
    }

    /// `session/set_config_option` (ACP §5.6).
    pub(in crate::agent) async fn set_config_option(
        &self,
        req: SetConfigOptionRequest,
    ) -> Result<SetConfigOptionResponse, RpcError> {
        let session = if req.config_id == MODE {
            self.session_or_child(&req.session_id)?
        } else {
            self.session(&req.session_id)?
        };
        let value = req.value.as_str().ok_or_else(|| {
            RpcError::invalid_params(format!(
                "params.value: option {:?} takes a string value",
                req.config_id
            ))
        })?;
        match req.config_id.as_str() {
            MODE => {
                let mode = parse_mode("params.value", value)?;
                within_parent("params.value", &session, mode)?;
                self.apply_mode(&session, mode).await;
            }
            MODEL | REASONING_EFFORT => {
                let current = self.session_options(&session).await;
                let option = current
                    .iter()
                    .find(|o| o.id == req.config_id)
                    .ok_or_else(|| {
                        RpcError::invalid_params(format!(
                            "params.configId: this session has no {:?} option",
                            req.config_id
                        ))
                    })?;
                if !option.options.iter().any(|o| o.value == value) {
                    let values: Vec<&str> =
                        option.options.iter().map(|o| o.value.as_str()).collect();
                    return Err(RpcError::invalid_params(format!(
                        "params.value: {value:?} is not one of {}",
                        values.join(", ")
                    )));
                }
                if req.config_id == MODEL {
                    self.apply_model(&session, value).await;
                } else {
                    session.store_effort(value);
                    self.send_options(&session).await;
                }
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "params.configId: unknown config option {other:?}; this session has mode, model and (for some models) reasoning_effort"
                )));
            }
        }
        Ok(SetConfigOptionResponse {
            config_options: self.session_options(&session).await,
        })
    }

    /// Switches mode and keeps the mode list and the config option in sync in the editor.
    /// Read-only allows no command: the session's background commands that
    /// still run are stopped, and the user is told which.
    pub(in crate::agent) async fn apply_mode(&self, session: &Session, mode: Mode) {
        if session.set_mode(mode) {
            tracing::info!(session = %session.id, mode = mode.id(), "mode changed");
        }
        session
            .editor
            .update(&SessionUpdate::CurrentModeUpdate(CurrentModeUpdate {
                current_mode_id: mode.id().into(),
            }));
        if mode.is_read_only() {
            // Its running subagents follow it (`Session::mode`): their
            // background commands stop with the session's own.
            let mut stopped = crate::tools::process::background::stop_running(&session.id);
            for child in crate::agent::subagent::descendants(&session.id) {
                stopped.extend(crate::tools::process::background::stop_running(&child));
            }
            if !stopped.is_empty() {
                let list: Vec<String> = stopped
                    .iter()
                    .map(|c| format!("- {}", crate::tools::code_span(c, 100)))
                    .collect();
                session.editor.update(&SessionUpdate::agent_text(
                    format!(
                        "\n\n> {} mode allows no command to run: stopped {} background command{} of this session:\n{}\n\n",
                        mode.name(),
                        stopped.len(),
                        if stopped.len() == 1 { "" } else { "s" },
                        list.join("\n")
                    ),
                    None,
                ));
            }
        }
        self.send_options(session).await;
    }

    /// Switches the session's model (used from the next model call on).
    pub(in crate::agent) async fn apply_model(&self, session: &Session, model: &str) {
        if session.store_model(model) {
            tracing::info!(session = %session.id, model, "model changed");
        }
        self.send_options(session).await;
    }

    pub(in crate::agent) async fn send_options(&self, session: &Session) {
        let config_options = self.session_options(session).await;
        session
            .editor
            .update(&SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate {
                config_options,
            }));
    }
}

/// A subagent's mode is never wider than its parent's now: `Err` naming
/// the parent otherwise. Any mode for a session the editor opened.
fn within_parent(field: &str, session: &Session, mode: Mode) -> Result<(), RpcError> {
    if session.depth == 0 {
        return Ok(());
    }
    let Some(parent) = session.parent() else {
        return Err(RpcError::invalid_params(format!(
            "session {} is a subagent whose parent session has ended; it stops too",
            session.id
        )));
    };
    let ceiling = parent.mode();
    if mode.rank() > ceiling.rank() {
        return Err(RpcError::invalid_params(format!(
            "{field}: session {} is a subagent of session {}, whose mode is {}; a subagent's mode cannot be wider than its parent's: choose {} or narrower, or change the mode of session {}",
            session.id,
            parent.id,
            ceiling.id(),
            ceiling.id(),
            parent.id
        )));
    }
    Ok(())
}

pub(in crate::agent) fn parse_mode(field: &str, id: &str) -> Result<Mode, RpcError> {
    Mode::parse(id).ok_or_else(|| {
        let ids: Vec<&str> = Mode::ALL.iter().map(|m| m.id()).collect();
        RpcError::invalid_params(format!(
            "{field}: unknown mode {id:?}; expected one of {}",
            ids.join(", ")
        ))
    })
}

/// The terminal auth method, offered only to editors that advertise
/// `auth.terminal` (ACP §3): the editor re-runs the agent command with
/// `login` appended, in a terminal, and reconnects after it exits 0.
fn terminal_login_method() -> AuthMethod {
    AuthMethod::Terminal {
        kind: crate::acp::TerminalTag::Terminal,
        id: "login".into(),
        name: "Log in from a terminal".into(),
        description: format!(
            "Runs `acp-coder login`: asks for the endpoint URL, the API key and the default model, and saves them to {}",
            crate::config::config_home()
                .join("acp-coder/config.toml")
                .display()
        ),
        args: vec!["login".into()],
    }
}
