//! The OpenAI-compatible implementation of [`Model`], on async-openai.
use std::sync::Arc;
use std::time::Duration;

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use secrecy::SecretString;
use serde_json::Value;
use serde_json::value::RawValue;

use super::layer::{Layer, ReplyState, unbox};
use super::stream::Reply;
use super::{ChatRequest, EventStream, LlmError, Model, StreamLimits};

/// Where requests go and with which headers: async-openai's [`Config`],
/// ours rather than its `OpenAIConfig`, which sends `Authorization: Bearer `
/// without a key and panics on a key that is not a valid header value.
#[derive(Debug, Clone)]
struct Endpoint {
    base: String,
    headers: HeaderMap,
    key: SecretString,
}

impl Config for Endpoint {
    fn headers(&self) -> HeaderMap {
        self.headers.clone()
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn query(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }

    fn api_base(&self) -> &str {
        &self.base
    }

    fn api_key(&self) -> &SecretString {
        &self.key
    }
}

pub struct OpenAiModel {
    client: reqwest::Client,
    endpoint: Endpoint,
    /// The key and the config's header values: never in an error message.
    secrets: Arc<Vec<String>>,
    /// The names of the config's headers, left behind on a redirect to
    /// another origin.
    credentials: Arc<Vec<HeaderName>>,
    idle_timeout: Duration,
    limits: StreamLimits,
    /// Context windows the server reported, per model (`None`: it did not say).
    windows: std::sync::Mutex<std::collections::HashMap<String, Option<super::ServerWindow>>>,
    /// The last `GET /models` answer, which also says windows (asked once).
    listing: std::sync::Mutex<Option<Value>>,
}

/// How long the server may take to say a model's window.
const WINDOW_TIMEOUT: Duration = Duration::from_secs(3);

const USER_AGENT: &str = concat!("acp-coder/", env!("CARGO_PKG_VERSION"));

impl OpenAiModel {
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        extra_headers: &[(String, String)],
        connect_timeout: Duration,
        idle_timeout: Duration,
    ) -> Result<Self, LlmError> {
        // The config's headers go on each request, not on the client, so
        // that a redirect to another origin can leave them behind
        // ([`super::redirect`]).
        let mut request_headers = HeaderMap::new();
        let mut credentials = Vec::new();
        for (name, value) in extra_headers {
            let bad = |what: &str| LlmError::Connect {
                url: base_url.to_owned(),
                reason: format!("config header {name:?} has an invalid {what}"),
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
            value.set_sensitive(true);
            request_headers.insert(name.clone(), value);
            credentials.push(name);
        }
        // reqwest's defaults stand (proxies from the environment with
        // `NO_PROXY`, http:// and https:// alike) but for redirects: it
        // follows those within the origin, the layer the others.
        let client = crate::net::client_builder()
            .map_err(|e| LlmError::Connect {
                url: base_url.to_owned(),
                reason: format!("cannot set up TLS: {e}"),
            })?
            .connect_timeout(connect_timeout)
            .redirect(super::redirect::policy())
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| LlmError::Connect {
                url: base_url.to_owned(),
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        if let Some(key) = &api_key {
            let mut v = HeaderValue::from_str(&format!("Bearer {key}"))
                .unwrap_or_else(|_| HeaderValue::from_static(""));
            v.set_sensitive(true);
            request_headers.insert(AUTHORIZATION, v);
        }
        let secrets = api_key
            .iter()
            .chain(extra_headers.iter().map(|(_, v)| v))
            .filter(|v| v.len() >= 4)
            .cloned()
            .collect();
        Ok(Self {
            client,
            endpoint: Endpoint {
                base: base_url.trim_end_matches('/').to_owned(),
                headers: request_headers,
                key: SecretString::from(api_key.unwrap_or_default()),
            },
            secrets: Arc::new(secrets),
            credentials: Arc::new(credentials),
            idle_timeout,
            limits: StreamLimits::default(),
            windows: Default::default(),
            listing: Default::default(),
        })
    }

    /// The same client with other memory caps for its replies.
    pub fn with_limits(mut self, limits: StreamLimits) -> Self {
        self.limits = limits;
        self
    }

    /// An async-openai client for one request: cheap (the reqwest client
    /// and its connection pool are shared), and it gives the layer a
    /// [`ReplyState`] of that request's own.
    fn api(&self, state: Arc<ReplyState>) -> async_openai::Client<Endpoint> {
        async_openai::Client::build(self.client.clone(), self.endpoint.clone()).with_http_service(
            Layer {
                client: self.client.clone(),
                secrets: self.secrets.clone(),
                credentials: self.credentials.clone(),
                max_event: self.limits.max_event_bytes,
                state,
            },
        )
    }

    fn url(&self, path: &str) -> String {
        self.endpoint.url(path)
    }

    /// An error from opening a request: ours from the layer, or one of
    /// async-openai's own (which name no secret, but are redacted anyway).
    fn open_error(&self, e: OpenAIError, url: &str) -> LlmError {
        unbox(e).unwrap_or_else(|e| LlmError::Connect {
            url: url.to_owned(),
            reason: crate::secrets::redact_endpoint_text(&e.to_string(), &self.secrets),
        })
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError> {
        let url = self.url("/chat/completions");
        let state = Arc::new(ReplyState::default());
        let api = self.api(state.clone());
        // `stream: true` is in the body: with `byot`, async-openai does not
        // set it (NOTES).
        let chat = api.chat();
        let opened = chat.create_stream_byot::<&ChatRequest<'_>, Box<RawValue>>(request);
        match tokio::time::timeout(self.idle_timeout, opened).await {
            Err(_) => {
                return Err(LlmError::Timeout {
                    url,
                    after: self.idle_timeout,
                });
            }
            Ok(Err(e)) => return Err(self.open_error(e, &url)),
            // async-openai's own stream of the (empty) body it was given
            // ends at once: the layer handed the body to us (`hand_over`).
            Ok(Ok(_)) => {}
        }
        let body = state
            .take_body()
            .unwrap_or_else(|| Box::pin(futures::stream::empty()));
        let reply = Reply::new(
            body,
            url,
            state,
            self.limits,
            self.secrets.clone(),
            self.idle_timeout,
        );
        Ok(reply.boxed())
    }

    async fn context_window(&self, model: &str) -> Option<u64> {
        if let Some(known) = self.windows.lock().ok()?.get(model) {
            return known.map(|w| w.tokens);
        }
        let listing = self.listing.lock().ok().and_then(|l| l.clone());
        let found = super::window::probe(
            &self.client,
            &self.endpoint.base,
            &self.endpoint.headers,
            model,
            listing,
            WINDOW_TIMEOUT,
        )
        .await;
        if let Some(w) = found {
            tracing::info!(
                model,
                window = w.tokens,
                source = w.source,
                "context window reported by the server"
            );
        }
        self.windows.lock().ok()?.insert(model.to_owned(), found);
        found.map(|w| w.tokens)
    }

    fn known_server_window(&self, model: &str) -> Option<super::ServerWindow> {
        self.windows.lock().ok()?.get(model).copied().flatten()
    }

    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let url = self.url("/models");
        let api = self.api(Arc::new(ReplyState::default()));
        let models = api.models();
        let listed = models.list_byot::<Value>();
        let v = match tokio::time::timeout(Duration::from_secs(5), listed).await {
            Err(_) => {
                return Err(LlmError::Timeout {
                    url,
                    after: Duration::from_secs(5),
                });
            }
            Ok(Err(OpenAIError::JSONDeserialize(e, _))) => {
                return Err(LlmError::Decode {
                    url,
                    reason: e.to_string(),
                });
            }
            Ok(Err(e)) => return Err(self.open_error(e, &url)),
            Ok(Ok(v)) => v,
        };
        if let Ok(mut kept) = self.listing.lock() {
            *kept = Some(v.clone());
        }
        Ok(super::discover::model_ids(&v))
    }
}
