//! Handlers of the client → agent methods.
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::acp::{
    AgentCapabilities, AuthMethod, AuthenticateRequest, ConfigOptionUpdate, CurrentModeUpdate,
    Empty, Implementation, InitializeRequest, InitializeResponse, McpCapabilities,
    NewSessionRequest, NewSessionResponse, PROTOCOL_VERSION, PromptCapabilities, PromptRequest,
    PromptResponse, SessionCapabilities, SessionConfigOption, SessionRef, SessionUpdate,
    SetConfigOptionRequest, SetConfigOptionResponse, SetModeRequest,
};
use crate::config::{MODEL_ENV, Settings};
use crate::editor::Editor;
use crate::rpc::RpcError;
use crate::tools::Registry;

use super::Agent;
use super::modes::Mode;
use super::session::Session;
use super::turn::{self, TurnEnv};

const AUTH_METHOD_ID: &str = "openai-api-key";

impl Agent {
    /// `initialize` (ACP §3): always protocol version 1; capabilities are only
    /// what this agent really implements.
    pub(super) fn initialize(&self, req: InitializeRequest) -> InitializeResponse {
        tracing::info!(
            client = req.client_info.as_ref().map(|c| c.name.as_str()).unwrap_or("?"),
            requested_version = %req.protocol_version,
            fs_read = req.client_capabilities.fs.read_text_file,
            fs_write = req.client_capabilities.fs.write_text_file,
            terminal = req.client_capabilities.terminal,
            "initialize"
        );
        let terminal_auth = req.client_capabilities.terminal_auth();
        *self.client.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(req.client_capabilities);
        let mut response = InitializeResponse {
            protocol_version: PROTOCOL_VERSION,
            agent_capabilities: AgentCapabilities {
                load_session: false,
                prompt_capabilities: PromptCapabilities {
                    image: true,
                    audio: false,
                    embedded_context: true,
                },
                mcp_capabilities: McpCapabilities {
                    http: false,
                    sse: false,
                },
                session_capabilities: SessionCapabilities {
                    close: Some(Empty::default()),
                    ..Default::default()
                },
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
        };
        if terminal_auth {
            response.auth_methods.push(terminal_login_method());
        }
        response
    }

    /// `authenticate` (ACP §4): re-reads environment and config; succeeds when
    /// a usable key (or a keyless local endpoint) is there.
    pub(super) fn authenticate(&self, req: AuthenticateRequest) -> Result<Empty, RpcError> {
        if req.method_id != AUTH_METHOD_ID {
            return Err(RpcError::invalid_params(format!(
                "params.methodId: unknown auth method {:?}; this agent offers {AUTH_METHOD_ID:?}",
                req.method_id
            )));
        }
        if let Some(over) = &self.overrides {
            let fresh =
                Settings::load(over).map_err(|e| RpcError::invalid_params(e.to_string()))?;
            *self.settings.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(fresh);
            *self.model.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        match self.settings().missing_credentials() {
            Some(what) => Err(RpcError::auth_required(what)),
            None => Ok(Empty::default()),
        }
    }

    /// `session/new` (ACP §5.1).
    pub(super) async fn new_session(
        &self,
        req: NewSessionRequest,
    ) -> Result<NewSessionResponse, RpcError> {
        let cwd = absolute_dir("params.cwd", &req.cwd)?;
        let mut additional = Vec::new();
        for (i, d) in req.additional_directories.iter().enumerate() {
            additional.push(absolute_dir(
                &format!("params.additionalDirectories[{i}]"),
                d,
            )?);
        }
        let settings = self.settings();
        if let Some(what) = settings.missing_credentials() {
            return Err(RpcError::auth_required(what));
        }
        let mode = Mode::parse(&settings.default_mode).unwrap_or(Mode::Ask);
        let id = format!("sess_{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..));
        let editor = Editor::new(self.peer.clone(), self.client_caps(), &id);
        if !req.mcp_servers.is_empty() {
            tracing::info!(count = req.mcp_servers.len(), "MCP servers given");
        }
        let session = Session::new(
            id.clone(),
            cwd,
            additional,
            editor,
            req.mcp_servers,
            mode,
            Registry::builtin(),
        );
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), session);
        tracing::info!(session = %id, "session created");
        Ok(NewSessionResponse {
            session_id: id,
            modes: Mode::state(mode),
            config_options: config_options(mode),
        })
    }

    /// `session/prompt` (ACP §6).
    pub(super) async fn prompt(&self, req: PromptRequest) -> Result<PromptResponse, RpcError> {
        let session = self.session(&req.session_id)?;
        let settings = self.settings();
        if let Some(what) = settings.missing_credentials() {
            return Err(RpcError::auth_required(what));
        }
        let model = self.model()?;
        let model_id = self.model_id(&settings, model.as_ref()).await?;
        let env = TurnEnv {
            model,
            model_id,
            settings,
        };
        tracing::info!(session = %session.id, prompt = %super::prompt::summary(&req.prompt, 80), "turn start");
        let (seq, token) = session.begin_turn();
        let result = turn::run(&env, &session, &req.prompt, &token).await;
        session.end_turn(seq);
        match &result {
            Ok(reason) => tracing::info!(session = %session.id, ?reason, "turn end"),
            Err(e) => tracing::warn!(session = %session.id, error = %e.message, "turn failed"),
        }
        result.map(|stop_reason| PromptResponse { stop_reason })
    }

    /// The configured model, else the first that `GET /models` lists (DESIGN §4).
    async fn model_id(
        &self,
        settings: &Settings,
        model: &dyn crate::llm::Model,
    ) -> Result<String, RpcError> {
        if let Some(m) = &settings.model {
            return Ok(m.clone());
        }
        let mut cached = self.discovered_model.lock().await;
        if let Some(m) = cached.as_ref() {
            return Ok(m.clone());
        }
        let listed = model.list_models().await;
        match listed {
            Ok(models) if !models.is_empty() => {
                tracing::info!(model = %models[0], "no model configured; using the first listed");
                *cached = Some(models[0].clone());
                Ok(models[0].clone())
            }
            Ok(_) => Err(RpcError::invalid_params(format!(
                "no model is configured and {}/models lists none: set {MODEL_ENV} or pass --model",
                settings.base_url
            ))),
            Err(e) => Err(RpcError::invalid_params(format!(
                "no model is configured and listing models failed ({e}): set {MODEL_ENV} or pass --model"
            ))),
        }
    }

    /// `session/set_mode` (ACP §5.5).
    pub(super) fn set_mode(&self, req: SetModeRequest) -> Result<Empty, RpcError> {
        let session = self.session(&req.session_id)?;
        let mode = parse_mode("params.modeId", &req.mode_id)?;
        self.apply_mode(&session, mode);
        Ok(Empty::default())
    }

    /// `session/set_config_option` (ACP §5.6).
    pub(super) fn set_config_option(
        &self,
        req: SetConfigOptionRequest,
    ) -> Result<SetConfigOptionResponse, RpcError> {
        let session = self.session(&req.session_id)?;
        match req.config_id.as_str() {
            "mode" => {
                let value = req.value.as_str().ok_or_else(|| {
                    RpcError::invalid_params("params.value: the mode option takes a string value")
                })?;
                let mode = parse_mode("params.value", value)?;
                self.apply_mode(&session, mode);
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "params.configId: unknown config option {other:?}; this session has \"mode\""
                )));
            }
        }
        Ok(SetConfigOptionResponse {
            config_options: config_options(session.mode()),
        })
    }

    /// Switches mode and keeps the mode list and the config option in sync in the editor.
    fn apply_mode(&self, session: &Session, mode: Mode) {
        if session.set_mode(mode) {
            tracing::info!(session = %session.id, mode = mode.id(), "mode changed");
        }
        session
            .editor
            .update(&SessionUpdate::CurrentModeUpdate(CurrentModeUpdate {
                current_mode_id: mode.id().into(),
            }));
        session
            .editor
            .update(&SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate {
                config_options: config_options(mode),
            }));
    }

    /// `session/close` (ACP §5.4): cancels a running turn and frees the session.
    pub(super) fn close_session(&self, req: SessionRef) -> Result<Empty, RpcError> {
        let session = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req.session_id);
        match session {
            Some(s) => {
                s.cancel();
                tracing::info!(session = %req.session_id, "session closed");
                Ok(Empty::default())
            }
            None => Err(self
                .session(&req.session_id)
                .err()
                .unwrap_or_else(|| RpcError::internal("session vanished"))),
        }
    }
}

fn config_options(mode: Mode) -> Vec<SessionConfigOption> {
    vec![Mode::config_option(mode)]
}

fn parse_mode(field: &str, id: &str) -> Result<Mode, RpcError> {
    Mode::parse(id).ok_or_else(|| {
        let ids: Vec<&str> = Mode::ALL.iter().map(|m| m.id()).collect();
        RpcError::invalid_params(format!(
            "{field}: unknown mode {id:?}; expected one of {}",
            ids.join(", ")
        ))
    })
}

fn absolute_dir(field: &str, path: &str) -> Result<PathBuf, RpcError> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "{field}: expected an absolute path, got {path:?}"
        )));
    }
    Ok(p.to_path_buf())
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
