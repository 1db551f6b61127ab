//! Editor-configured model providers: `providers/list`, `providers/set`,
//! `providers/disable` (unstable, `agentCapabilities.providers`; RFD
//! "Configurable LLM Providers", `schema.unstable.json`).
//!
//! The agent has one provider, `main`: the OpenAI-compatible endpoint the
//! environment and the config file describe (DESIGN §"Configuration"). The
//! editor may replace its routing (`providers/set`: base URL and the full
//! header map, which usually carries the credentials) or disable it. The
//! state is process-scoped and kept in memory only (the RFD: "SHOULD NOT be
//! persisted"); header values are learned by the secrets redactor before
//! anything else happens, so no log, frame or session log shows them.
//!
//! - `set` takes effect for the next model request: the model client and the
//!   model catalog are rebuilt, and every open session's model option follows
//!   the new endpoint's `/models` (a session whose model the endpoint does not
//!   list moves to the endpoint's first model).
//! - `disable`: the RFD says a disabled provider "MUST NOT be used for LLM
//!   calls" and lists with `current: null`; `main` is our only provider, so
//!   `session/new` and prompts then answer `auth_required` until the editor
//!   calls `providers/set` again. It is not `required`, so disabling is allowed.
use std::sync::{Arc, Mutex};

use crate::acp::{
    DisableProviderRequest, Empty, ListProvidersResponse, ProviderCurrentConfig, ProviderInfo,
    SetProviderRequest,
};
use crate::config::{KeySource, Settings};
use crate::rpc::RpcError;

use crate::agent::Agent;
use crate::agent::policy::options;
use crate::agent::store::Record;

/// Our one provider's id (the RFD's example name for the main endpoint).
pub const MAIN: &str = "main";
/// The protocol our model client speaks (`LlmProtocol`).
pub const OPENAI: &str = "openai";

/// The routing the editor chose for `main`.
#[derive(Clone)]
struct EditorRoute {
    base_url: String,
    headers: Vec<(String, String)>,
    /// The default model: `None` when the endpoint lists models (its first
    /// one is then the default), else the configured one as a fallback.
    model: Option<String>,
}

#[derive(Clone, Default)]
enum Route {
    /// Environment and config file (the default).
    #[default]
    Configured,
    Editor(EditorRoute),
    Disabled,
}

/// The provider state of one connection, and the effective settings it implies.
#[derive(Default)]
pub(crate) struct Providers {
    route: Mutex<Route>,
    /// Effective settings derived from a base (pointer-compared), so
    /// `Agent::settings` does not copy the settings on every call.
    cache: Mutex<Option<(Arc<Settings>, Arc<Settings>)>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Providers {
    /// The settings model requests use: `base` (environment and config
    /// file) with the editor's routing applied.
    pub(crate) fn effective(&self, base: Arc<Settings>) -> Arc<Settings> {
        let route = match &*lock(&self.route) {
            Route::Editor(r) => r.clone(),
            Route::Configured | Route::Disabled => return base,
        };
        let mut cache = lock(&self.cache);
        if let Some((b, derived)) = cache.as_ref()
            && Arc::ptr_eq(b, &base)
        {
            return derived.clone();
        }
        let derived = Arc::new(apply(&base, &route));
        *cache = Some((base, derived.clone()));
        derived
    }

    /// Why no model request may be made: the editor disabled `main`.
    pub(crate) fn disabled(&self) -> Option<RpcError> {
        matches!(*lock(&self.route), Route::Disabled).then(|| {
            RpcError::auth_required(format!(
                "the editor disabled the model provider {MAIN:?} (providers/disable); configure it again with providers/set"
            ))
        })
    }

    fn set(&self, route: Route) {
        *lock(&self.route) = route;
        *lock(&self.cache) = None;
    }
}

/// `base` routed to the editor's endpoint: its URL and headers replace the
/// configured ones, and no configured key is sent to it.
fn apply(base: &Settings, route: &EditorRoute) -> Settings {
    let mut s = base.clone();
    s.base_url = route.base_url.clone();
    s.headers = route.headers.clone();
    s.api_key = None;
    s.key_source = KeySource::None;
    // The editor's headers carry whatever authentication the endpoint needs.
    s.require_api_key = false;
    s.model = route.model.clone();
    // The configured model list belongs to the configured endpoint; the
    // picker follows the editor's endpoint (its `/models`).
    s.models.retain(|(m, _)| Some(m) == route.model.as_ref());
    s
}

/// Teaches the redactor the header values that are secrets by the project's
/// rule ([`crate::secrets::is_secret_value`]: the name says so, or the value
/// looks like an opaque token), and the token of an `Authorization:
/// <scheme> <token>` value on its own, so a bare key is hidden too.
fn learn_secrets(req: &SetProviderRequest) {
    for (name, value) in &req.headers {
        crate::secrets::learn_named(name, value);
        if crate::secrets::is_secret_name(name)
            && let Some((_, token)) = value.trim().split_once(' ')
        {
            crate::secrets::learn([token.trim().to_owned()]);
        }
    }
}

/// What `providers/set` may carry, checked before anything changes.
fn validate(req: &SetProviderRequest) -> Result<Vec<(String, String)>, RpcError> {
    if req.provider_id != MAIN {
        return Err(RpcError::invalid_params(format!(
            "params.providerId: unknown provider {:?}; this agent has one provider, {MAIN:?}",
            req.provider_id
        )));
    }
    if req.api_type != OPENAI {
        return Err(RpcError::invalid_params(format!(
            "params.apiType: provider {MAIN:?} speaks only {OPENAI:?} (an OpenAI-compatible chat completions endpoint), not {:?}",
            req.api_type
        )));
    }
    match reqwest::Url::parse(&req.base_url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {}
        _ => {
            return Err(RpcError::invalid_params(format!(
                "params.baseUrl: {:?} is not an http:// or https:// URL (e.g. https://api.openai.com/v1)",
                req.base_url
            )));
        }
    }
    let mut headers = Vec::new();
    for (name, value) in &req.headers {
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(RpcError::invalid_params(format!(
                "params.headers: {name:?} is not a valid HTTP header name"
            )));
        }
        if http::HeaderValue::from_str(value).is_err() {
            // The value may be a secret: only its name is told.
            return Err(RpcError::invalid_params(format!(
                "params.headers: the value of {name:?} is not a valid HTTP header value"
            )));
        }
        headers.push((name.clone(), value.clone()));
    }
    Ok(headers)
}

impl Agent {
    /// `providers/list`: routing only, never a header.
    pub(crate) fn list_providers(&self) -> ListProvidersResponse {
        let current = match self.providers.disabled() {
            Some(_) => None,
            None => Some(ProviderCurrentConfig {
                api_type: OPENAI.into(),
                base_url: self.settings().base_url.clone(),
            }),
        };
        ListProvidersResponse {
            providers: vec![ProviderInfo {
                provider_id: MAIN.into(),
                supported: vec![OPENAI.into()],
                required: false,
                current,
            }],
        }
    }

    /// `providers/set`: replaces `main`'s routing for every later request.
    pub(crate) async fn set_provider(&self, req: SetProviderRequest) -> Result<Empty, RpcError> {
        // The RFD puts the credentials in the headers: redact them from now
        // on, before anything can echo one.
        learn_secrets(&req);
        let headers = validate(&req)?;
        tracing::info!(
            provider = MAIN,
            base_url = %req.base_url,
            headers = ?req.headers.keys().collect::<Vec<_>>(),
            "providers/set"
        );
        let mut route = EditorRoute {
            base_url: req.base_url.trim_end_matches('/').to_owned(),
            headers,
            model: None,
        };
        // Probe the new endpoint's models: when it lists none, keep the
        // configured default model rather than having none.
        self.providers.set(Route::Editor(route.clone()));
        self.reset_model().await;
        let settings = self.settings();
        let listed = match self.model() {
            Ok(m) => self.catalog.listed(&settings, m.as_ref()).await,
            Err(_) => Vec::new(),
        };
        if listed.is_empty() {
            route.model = self.base_settings().model.clone();
            self.providers.set(Route::Editor(route));
        }
        self.follow_provider(&listed).await;
        Ok(Empty::default())
    }

    /// `providers/disable`: unknown ids succeed (RFD: idempotent).
    pub(crate) async fn disable_provider(
        &self,
        req: DisableProviderRequest,
    ) -> Result<Empty, RpcError> {
        if req.provider_id != MAIN {
            tracing::info!(provider = %req.provider_id, "providers/disable of an unknown provider");
            return Ok(Empty::default());
        }
        tracing::info!(provider = MAIN, "providers/disable");
        self.providers.set(Route::Disabled);
        self.reset_model().await;
        Ok(Empty::default())
    }

    /// Drops the model client and the model list, so the next request uses
    /// the current route.
    async fn reset_model(&self) {
        *self.model.lock().unwrap_or_else(|e| e.into_inner()) = None;
        self.catalog.reset().await;
    }

    /// Moves open sessions to the new endpoint's models and tells the editor.
    async fn follow_provider(&self, listed: &[String]) {
        let sessions: Vec<_> = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let settings = self.settings();
        for session in sessions {
            let current = session.meta().model;
            let keep = current
                .as_ref()
                .is_some_and(|m| listed.is_empty() || listed.contains(m));
            if !keep && let Some(m) = options::default_model(&settings, listed) {
                tracing::info!(session = %session.id, model = %m, "model follows the new provider");
                session.meta.lock().unwrap_or_else(|e| e.into_inner()).model = Some(m.clone());
                session.record(&Record::Model { model: m });
            }
            self.send_options(&session).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: serde_json::Value) -> SetProviderRequest {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn validation_names_the_field() {
        let ok = req(
            serde_json::json!({"providerId": "main", "apiType": "openai",
            "baseUrl": "http://127.0.0.1:1/v1", "headers": {"Authorization": "Bearer k"}}),
        );
        assert_eq!(validate(&ok).unwrap().len(), 1);
        for (bad, field) in [
            (
                serde_json::json!({"providerId": "other", "apiType": "openai", "baseUrl": "http://h"}),
                "providerId",
            ),
            (
                serde_json::json!({"providerId": "main", "apiType": "anthropic", "baseUrl": "http://h"}),
                "apiType",
            ),
            (
                serde_json::json!({"providerId": "main", "apiType": "openai", "baseUrl": "file:///etc/passwd"}),
                "baseUrl",
            ),
            (
                serde_json::json!({"providerId": "main", "apiType": "openai", "baseUrl": "http://h", "headers": {"Bad Name": "x"}}),
                "headers",
            ),
            (
                serde_json::json!({"providerId": "main", "apiType": "openai", "baseUrl": "http://h", "headers": {"X-Key": "line\nbreak-secret"}}),
                "headers",
            ),
        ] {
            let e = validate(&req(bad)).unwrap_err();
            assert!(e.message.contains(field), "{}", e.message);
            assert!(!e.message.contains("break-secret"), "{}", e.message);
        }
    }

    #[test]
    fn editor_route_replaces_url_headers_and_key() {
        let mut base = Settings {
            api_key: Some("sk-configured-key".into()),
            headers: vec![("X-Configured".into(), "1".into())],
            model: Some("configured-model".into()),
            ..Settings::default()
        };
        base.require_api_key = true;
        let p = Providers::default();
        let base = Arc::new(base);
        assert!(Arc::ptr_eq(&p.effective(base.clone()), &base));
        p.set(Route::Editor(EditorRoute {
            base_url: "http://127.0.0.1:9/v1".into(),
            headers: vec![("Authorization".into(), "Bearer editor".into())],
            model: None,
        }));
        let e = p.effective(base.clone());
        assert_eq!(e.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(e.api_key, None);
        assert_eq!(
            e.headers,
            [("Authorization".into(), "Bearer editor".into())]
        );
        assert_eq!(e.model, None);
        assert!(e.missing_credentials().is_none());
        // Cached per base.
        assert!(Arc::ptr_eq(&p.effective(base.clone()), &e));
        p.set(Route::Disabled);
        assert!(p.disabled().is_some());
        assert!(Arc::ptr_eq(&p.effective(base.clone()), &base));
    }
}
