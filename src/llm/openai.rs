//! The OpenAI-compatible implementation of [`Model`], on async-openai.
use std::sync::Arc;
use std::time::Duration;

use async_openai::config::Config;
use async_openai::error::OpenAIError;
use futures::{FutureExt, StreamExt};
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
        let answer = super::window::ask(&self.endpoint.base, model, || {
            let listing = self.listing.lock().ok().and_then(|l| l.clone());
            let client = self.client.clone();
            let base = self.endpoint.base.clone();
            let headers = self.endpoint.headers.clone();
            let model = model.to_owned();
            async move {
                let found =
                    super::window::probe(&client, &base, &headers, &model, listing, WINDOW_TIMEOUT)
                        .await;
                if let Some(w) = found {
                    tracing::info!(
                        model,
                        window = w.tokens,
                        source = w.source,
                        "context window reported by the server"
                    );
                }
                found
            }
            .boxed()
        });
        answer.await.map(|w| w.tokens)
    }

    fn known_server_window(&self, model: &str) -> Option<super::ServerWindow> {
        super::window::known(&self.endpoint.base, model)
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

#[cfg(test)]
mod kept_alive_tests {
    use super::*;
    use crate::llm::{ChatMessage, ChatRequest, Model, UserPart};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Reads one request (head and `Content-Length` body) from `sock`.
    async fn read_request(sock: &mut tokio::net::TcpStream) -> bool {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = sock.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                return false;
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text[..end]
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    return true;
                }
            }
        }
    }

    const REPLY: &str = r#"{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}"#;

    async fn answer(sock: &mut tokio::net::TcpStream) {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            REPLY.len()
        );
        sock.write_all(head.as_bytes()).await.unwrap();
        sock.write_all(REPLY.as_bytes()).await.unwrap();
    }

    /// Issue 47 item 6: the server keeps the first connection alive, then
    /// closes it on the next request without a byte of reply (as
    /// llama-server does): the request goes again at once on a new
    /// connection, and the call succeeds with no error to report.
    #[tokio::test]
    async fn a_closed_kept_alive_connection_is_sent_again_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut first, _) = listener.accept().await.unwrap();
            assert!(read_request(&mut first).await);
            answer(&mut first).await;
            // The second request on the kept-alive connection: closed.
            assert!(read_request(&mut first).await);
            drop(first);
            let (mut second, _) = listener.accept().await.unwrap();
            assert!(read_request(&mut second).await);
            answer(&mut second).await;
        });
        let model = OpenAiModel::new(
            &format!("http://{addr}/v1"),
            None,
            &[],
            Duration::from_secs(5),
            Duration::from_secs(5),
        )
        .unwrap();
        let messages = [ChatMessage::User(vec![UserPart::Text("hi".into())])];
        let request = ChatRequest::plain(&messages);
        for _ in 0..2 {
            let stream = model.stream(&request).await;
            assert!(stream.is_ok(), "{:?}", stream.err());
            drop(stream);
        }
        server.await.unwrap();
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// Issue 47 item 7: the window is kept per endpoint and model for the
    /// process: a second client of the same endpoint (another session's,
    /// or one rebuilt by `authenticate`) knows it without asking again.
    #[tokio::test]
    async fn a_second_client_of_the_endpoint_does_not_ask_again() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let props = Arc::new(AtomicUsize::new(0));
        let counted = props.clone();
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let body = if head.starts_with("GET /props ") {
                    counted.fetch_add(1, Ordering::SeqCst);
                    r#"{"default_generation_settings":{"n_ctx":8192}}"#
                } else {
                    "{}"
                };
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(reply.as_bytes()).await;
            }
        });
        let client = || {
            OpenAiModel::new(
                &format!("http://{addr}/v1"),
                None,
                &[],
                Duration::from_secs(5),
                Duration::from_secs(5),
            )
            .unwrap()
        };
        let first = client();
        assert_eq!(first.context_window("m").await, Some(8192));
        let second = client();
        assert_eq!(second.known_context_window("m"), Some(8192));
        assert_eq!(second.context_window("m").await, Some(8192));
        assert_eq!(props.load(Ordering::SeqCst), 1);
        // Another model of the same server is its own question.
        assert_eq!(second.known_context_window("other"), None);
    }
}
