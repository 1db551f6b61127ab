//! `logout` (ACP §4, `agentCapabilities.auth.logout`; issue 17 item 2).
//!
//! Forgets the credentials this process holds: the API key in the current
//! settings and the model client built with it. Until `authenticate`
//! succeeds again, `session/new`, `session/load`, `session/resume` and
//! prompts answer `auth_required` (see `Agent::usable_settings`). A key that
//! `acp-coder login` saved in the config file is not removed behind the
//! user's back: the response's `_meta` says where it is, so the editor can
//! tell them.
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::json;

use crate::acp::Empty;
use crate::config::KeySource;
use crate::rpc::RpcError;

use crate::agent::Agent;

/// The `_meta` key of the note about a key kept in the config file.
pub const NOTE_KEY: &str = "acp-coder/note";

impl Agent {
    pub(in crate::agent) async fn logout(&self) -> Result<Empty, RpcError> {
        self.logged_out.store(true, Ordering::Release);
        let saved = {
            let mut slot = self.settings.write().unwrap_or_else(|e| e.into_inner());
            let mut fresh = (**slot).clone();
            let saved = match &fresh.key_source {
                KeySource::File(path) => Some(path.clone()),
                _ => None,
            };
            fresh.api_key = None;
            fresh.key_source = KeySource::None;
            *slot = Arc::new(fresh);
            saved
        };
        *self.model.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.catalog.reset().await;
        tracing::info!("logged out");
        let mut response = Empty::default();
        if let Some(path) = saved {
            let note = format!(
                "Logged out of this session of acp-coder. The API key saved by `acp-coder login` is still in {} (api_key); remove it there to forget it for good.",
                path.display()
            );
            response.meta = Some(
                json!({ NOTE_KEY: note })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            );
        }
        Ok(response)
    }

    /// `auth_required` while logged out.
    pub(in crate::agent) fn check_logged_in(&self) -> Result<(), RpcError> {
        if self.logged_out.load(Ordering::Acquire) {
            return Err(RpcError::auth_required(
                "logged out: call authenticate to sign in again".to_owned(),
            ));
        }
        Ok(())
    }
}
