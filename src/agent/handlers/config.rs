//! Config options before and at session setup (unstable schema-1.20
//! `sessionCapabilities.options`): `session/options` answers what a new or
//! stored session would start with, and setup requests (`session/new`,
//! `load`, `resume`, `fork`) take initial values, applied in order as
//! `session/set_config_option` would, but silently and ignoring what does
//! not apply.
use crate::acp::{
    InitialConfigOption, InitialValue, SessionOptionsRequest, SessionOptionsResponse,
    initial_config_options,
};
use crate::rpc::RpcError;

use super::dirs::{absolute_dir, additional_dirs};
use crate::agent::Agent;
use crate::agent::policy::options::{self, MODE, MODEL, REASONING_EFFORT};
use crate::agent::session::Session;
use crate::agent::store::restore::restore;
use crate::config::Mode;

/// A setup request's `configOptions`, checked before anything is set up
/// (a malformed entry or a repeated id is `-32602`).
pub(in crate::agent) fn initial_options(
    value: Option<&serde_json::Value>,
) -> Result<Vec<InitialConfigOption>, RpcError> {
    initial_config_options(value).map_err(RpcError::invalid_params)
}

impl Agent {
    /// `session/options`: the modes and config options a new session in
    /// `cwd` (or the stored session `sessionId`, as `session/load` or
    /// `session/resume` would restore it) starts with. Creates, resumes and
    /// changes nothing, sends no update and starts no MCP server.
    pub(in crate::agent) async fn options_for(
        &self,
        req: SessionOptionsRequest,
    ) -> Result<SessionOptionsResponse, RpcError> {
        absolute_dir("params.cwd", &req.cwd)?;
        additional_dirs(&req.additional_directories)?;
        let settings = self.usable_settings()?;
        let model = self.model()?;
        let listed = self.catalog.listed(&settings, model.as_ref()).await;
        let models = self.catalog.models(&settings, model.as_ref()).await;
        let default_model = || options::default_model(&settings, &listed);
        let (mode, chosen, effort) = match &req.session_id {
            None => (settings.default_mode, default_model(), None),
            Some(id) => {
                let restored = restore(self.read_records(id)?);
                let mode = restored
                    .mode
                    .as_deref()
                    .and_then(Mode::parse)
                    .unwrap_or(settings.default_mode);
                let chosen = restored.model.or_else(default_model);
                (mode, chosen, restored.reasoning_effort)
            }
        };
        Ok(SessionOptionsResponse {
            modes: Mode::state(mode),
            config_options: options::config_options(
                &settings,
                mode,
                chosen.as_deref(),
                &models,
                effort.as_deref(),
            ),
        })
    }

    /// Applies a setup request's initial values in order, as
    /// `session/set_config_option` would but without any `session/update`;
    /// an entry whose id is unknown, whose type does not match (this
    /// agent's options are all selects) or whose value is not offered (at
    /// that point) is ignored.
    pub(in crate::agent) async fn apply_initial_options(
        &self,
        session: &Session,
        entries: &[InitialConfigOption],
    ) {
        for entry in entries {
            let InitialValue::Id(value) = &entry.value else {
                tracing::info!(session = %session.id, option = %entry.config_id, "initial option ignored: this agent has no boolean options");
                continue;
            };
            let applied = match entry.config_id.as_str() {
                MODE => match Mode::parse(value) {
                    Some(mode) => {
                        session.set_mode(mode);
                        if mode.is_read_only() {
                            let stopped =
                                crate::tools::process::background::stop_running(&session.id);
                            if !stopped.is_empty() {
                                tracing::info!(session = %session.id, stopped = stopped.len(), "read-only mode: background commands stopped");
                            }
                        }
                        true
                    }
                    None => false,
                },
                MODEL | REASONING_EFFORT => {
                    let offered = self.session_options(session).await.iter().any(|o| {
                        o.id == entry.config_id && o.options.iter().any(|v| v.value == *value)
                    });
                    if offered && entry.config_id == MODEL {
                        session.store_model(value);
                    } else if offered {
                        session.store_effort(value);
                    }
                    offered
                }
                _ => false,
            };
            if applied {
                tracing::info!(session = %session.id, option = %entry.config_id, value, "initial option applied");
            } else {
                tracing::info!(session = %session.id, option = %entry.config_id, value, "initial option ignored: unknown option or value");
            }
        }
    }
}
