//! The OpenAI-compatible HTTP implementation of [`Model`].
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{
    AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER,
};
use serde_json::Value;

use super::retry::parse_retry_after;
use super::stream::{Body, Reply, read_body};
use super::{ChatRequest, EventStream, LlmError, Model};
use super::{h1, io};

pub struct OpenAiModel {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    /// The key and the config's header values: never in an error message.
    secrets: std::sync::Arc<Vec<String>>,
    idle_timeout: Duration,
    connect_timeout: Duration,
    /// The headers a direct exchange ([`h1`]) sends besides its own: what
    /// reqwest would add (key, config headers, user agent, accept).
    direct_headers: std::sync::Arc<Vec<(String, String)>>,
}

/// Installs the process-wide TLS crypto provider once (reqwest is built
/// without one to keep the build small; ring is enough for HTTPS clients).
fn install_crypto() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

impl OpenAiModel {
    pub fn new(
        base_url: &str,
        api_key: Option<String>,
        extra_headers: &[(String, String)],
        connect_timeout: Duration,
        idle_timeout: Duration,
    ) -> Result<Self, LlmError> {
        install_crypto();
        let mut headers = HeaderMap::new();
        for (name, value) in extra_headers {
            let bad = |what: &str| LlmError::Connect {
                url: base_url.to_owned(),
                reason: format!("config header {name:?} has an invalid {what}"),
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| bad("value"))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let tls = super::tls::client_config().map_err(|e| LlmError::Connect {
            url: base_url.to_owned(),
            reason: format!("cannot set up TLS: {e}"),
        })?;
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .connect_timeout(connect_timeout)
            .default_headers(headers)
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| LlmError::Connect {
                url: base_url.to_owned(),
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        let direct_headers = direct_headers(api_key.as_deref(), extra_headers);
        let secrets = api_key
            .iter()
            .chain(extra_headers.iter().map(|(_, v)| v))
            .filter(|v| v.len() >= 4)
            .cloned()
            .collect();
        Ok(Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key,
            secrets: std::sync::Arc::new(secrets),
            idle_timeout,
            connect_timeout,
            direct_headers: std::sync::Arc::new(direct_headers),
        })
    }

    fn auth(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.api_key {
            Some(key) => {
                let mut v = HeaderValue::from_str(&format!("Bearer {key}"))
                    .unwrap_or_else(|_| HeaderValue::from_static(""));
                v.set_sensitive(true);
                req.header(AUTHORIZATION, v)
            }
            None => req,
        }
    }
}

/// The most a non-streamed JSON reply may take.
const MAX_JSON_REPLY: usize = 64 * 1024 * 1024;

const USER_AGENT: &str = concat!("acp-coder/", env!("CARGO_PKG_VERSION"));

/// The headers reqwest sends for a chat request, for a direct exchange: the
/// request's own (`authorization`) win over the client's defaults (config
/// headers, then the user agent set after them, then `accept`). Names and
/// values were checked in [`OpenAiModel::new`].
fn direct_headers(api_key: Option<&str>, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let has = |out: &[(String, String)], name: &str| {
        out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if let Some(key) = api_key {
        let v = format!("Bearer {key}");
        let v = if HeaderValue::from_str(&v).is_ok() {
            v
        } else {
            String::new()
        };
        out.push(("authorization".into(), v));
    }
    let own = out.len();
    for (name, value) in extra {
        let same = |(n, _): &(String, String)| n.eq_ignore_ascii_case(name);
        if name.eq_ignore_ascii_case("user-agent") || out[..own].iter().any(same) {
            continue;
        }
        // A later value for the same name replaces an earlier one, as
        // `HeaderMap::insert` does for reqwest.
        match out.iter_mut().find(|h| same(h)) {
            Some(h) => h.1.clone_from(value),
            None => out.push((name.clone(), value.clone())),
        }
    }
    out.push(("user-agent".into(), USER_AGENT.into()));
    if !has(&out, "accept") {
        out.push(("accept".into(), "*/*".into()));
    }
    out
}

/// How one chat request goes out.
enum Exchange {
    Reqwest(reqwest::RequestBuilder),
    Direct {
        target: h1::Target,
        headers: std::sync::Arc<Vec<(String, String)>>,
        body: Vec<u8>,
        connect_timeout: Duration,
    },
}

/// A reply whose head arrived with a success status.
struct Opened {
    /// A whole JSON completion (a server that ignored `stream: true`).
    is_json: bool,
    body: Body,
}

fn is_json(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| ct.contains("application/json"))
}

/// Sends a chat request and waits for the reply's head; a failure status
/// becomes an error with the server's message.
async fn open_chat(
    exchange: Exchange,
    url: &str,
    idle: Duration,
    secrets: &[String],
) -> Result<Opened, LlmError> {
    let (target, headers, body, connect_timeout) = match exchange {
        Exchange::Reqwest(req) => {
            let resp = open(req, url, idle, secrets).await?;
            let ct = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok());
            return Ok(Opened {
                is_json: is_json(ct),
                body: Body::hyper(resp),
            });
        }
        Exchange::Direct {
            target,
            headers,
            body,
            connect_timeout,
        } => (target, headers, body, connect_timeout),
    };
    let sent = h1::post(&target, &headers, &body, connect_timeout);
    let resp = head_within(idle, url, secrets, sent, |e: &h1::SendError| e.0.clone()).await?;
    if !(200..300).contains(&resp.status) {
        let retry_after = resp.header("retry-after").map(str::to_owned);
        let (status, body) = (resp.status, Body::Direct(resp.body));
        return Err(status_error(url, status, retry_after.as_deref(), body, secrets).await);
    }
    Ok(Opened {
        is_json: is_json(resp.header("content-type")),
        body: Body::Direct(resp.body),
    })
}

/// What an error reply says, read for at most 10 s and 64 KiB.
async fn error_body(body: Body) -> Vec<u8> {
    tokio::time::timeout(Duration::from_secs(10), body.read_to_end(64 * 1024))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
}

/// Sends the request and waits for the response head; a failure status
/// becomes an error with the server's message.
async fn open(
    req: reqwest::RequestBuilder,
    url: &str,
    idle: Duration,
    secrets: &[String],
) -> Result<reqwest::Response, LlmError> {
    let resp = head_within(idle, url, secrets, req.send(), |e: &reqwest::Error| {
        error_chain(e)
    })
    .await?;
    if !resp.status().is_success() {
        return Err(error_from(url, resp, secrets).await);
    }
    Ok(resp)
}

/// Waits up to `idle` for a request's reply head: a timeout, or a failure
/// to connect or send, becomes the matching error, its text redacted.
async fn head_within<T, E>(
    idle: Duration,
    url: &str,
    secrets: &[String],
    sent: impl std::future::Future<Output = Result<T, E>>,
    reason: impl FnOnce(&E) -> String,
) -> Result<T, LlmError> {
    match tokio::time::timeout(idle, sent).await {
        Err(_) => Err(LlmError::Timeout {
            url: url.to_owned(),
            after: idle,
        }),
        Ok(Err(e)) => Err(LlmError::Connect {
            url: url.to_owned(),
            reason: redact_all(&reason(&e), secrets),
        }),
        Ok(Ok(head)) => Ok(head),
    }
}

async fn error_from(url: &str, resp: reqwest::Response, secrets: &[String]) -> LlmError {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = Body::hyper(resp);
    status_error(url, status, retry_after.as_deref(), body, secrets).await
}

/// A failure status as an error: the server's message from its body (read
/// as [`error_body`] does, redacted) and its `Retry-After`.
async fn status_error(
    url: &str,
    status: u16,
    retry_after: Option<&str>,
    body: Body,
    secrets: &[String],
) -> LlmError {
    let message = redact_all(&error_message(&error_body(body).await), secrets);
    LlmError::Status {
        status,
        url: url.to_owned(),
        message,
        retry_after: retry_after.and_then(parse_retry_after),
    }
}

/// The human part of an error body: `error.message`, `error`, `message`, `detail` or the text.
fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let from_json = serde_json::from_str::<Value>(&text).ok().and_then(|v| {
        let pick = |v: &Value| v.as_str().map(str::to_owned);
        v.get("error")
            .and_then(|e| e.get("message").and_then(pick).or_else(|| pick(e)))
            .or_else(|| v.get("message").and_then(pick))
            .or_else(|| v.get("detail").and_then(pick))
    });
    let msg = from_json.unwrap_or_else(|| text.trim().to_owned());
    let msg = msg.replace(['\n', '\r'], " ");
    if msg.is_empty() {
        "(empty body)".into()
    } else if msg.chars().count() > 300 {
        msg.chars().take(300).collect::<String>() + "…"
    } else {
        msg
    }
}

/// Endpoint text through the one redactor ([`crate::secrets`]): every known
/// secret, this client's key and header values, and `sk-…`-shaped strings.
fn redact_all(text: &str, secrets: &[String]) -> String {
    crate::secrets::redact_endpoint_text(text, secrets)
}

/// An error whose server-supplied text went through [`redact_all`]: servers
/// echo headers and keys back in errors, in bodies and in streams alike.
fn redact_error(e: LlmError, secrets: &[String]) -> LlmError {
    let r = |t: String| redact_all(&t, secrets);
    match e {
        LlmError::Status {
            status,
            url,
            message,
            retry_after,
        } => LlmError::Status {
            status,
            url,
            message: r(message),
            retry_after,
        },
        LlmError::Connect { url, reason } => LlmError::Connect {
            url,
            reason: r(reason),
        },
        LlmError::Interrupted { url, reason } => LlmError::Interrupted {
            url,
            reason: r(reason),
        },
        LlmError::Decode { url, reason } => LlmError::Decode {
            url,
            reason: r(reason),
        },
        LlmError::Api { url, message } => LlmError::Api {
            url,
            message: r(message),
        },
        t @ LlmError::Timeout { .. } => t,
    }
}

#[async_trait::async_trait]
impl Model for OpenAiModel {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError> {
        let url = format!("{}/chat/completions", self.base_url);
        let exchange = match h1::Target::direct(&url) {
            Some(target) => Exchange::Direct {
                target,
                headers: self.direct_headers.clone(),
                body: request.to_body(),
                connect_timeout: self.connect_timeout,
            },
            None => Exchange::Reqwest(
                self.auth(self.client.post(&url))
                    .header(CONTENT_TYPE, "application/json")
                    .body(request.to_body()),
            ),
        };
        let idle = self.idle_timeout;
        let secrets = self.secrets.clone();
        let (tx, rx) = io::queue();
        let (head_tx, head_rx) = tokio::sync::oneshot::channel();
        // The request and its body are read on the model I/O thread (see
        // `io`); dropping the stream returned here aborts that task.
        let task = io::spawn(async move {
            let opened = match open_chat(exchange, &url, idle, &secrets).await {
                Ok(opened) => opened,
                Err(e) => {
                    let _ = head_tx.send(Err(e));
                    return;
                }
            };
            if head_tx.send(Ok(())).is_err() {
                return;
            }
            let redact = |e| redact_error(e, &secrets);
            let mut reply = Reply::new(url.clone());
            if !opened.is_json {
                return read_body(opened.body, reply, idle, tx, redact).await;
            }
            // A server that ignored `stream: true`: one JSON completion.
            match opened.body.read_to_end(MAX_JSON_REPLY).await {
                Ok(body) => {
                    if !reply.payload(&String::from_utf8_lossy(&body)) {
                        reply.complete();
                    }
                }
                Err(reason) => tx.send(Err(redact(LlmError::Interrupted { url, reason }))),
            }
            reply.flush(&tx, redact);
        });
        let rx = rx.owning(task);
        match head_rx.await {
            Ok(Ok(())) => Ok(rx.boxed()),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(LlmError::Interrupted {
                url: format!("{}/chat/completions", self.base_url),
                reason: "the model I/O task ended before the reply began".into(),
            }),
        }
    }

    async fn list_models(&self) -> Result<Vec<String>, LlmError> {
        let url = format!("{}/models", self.base_url);
        let req = self.auth(self.client.get(&url));
        let secrets = self.secrets.clone();
        // On the I/O thread too: a pooled connection's task runs on the
        // runtime that opened it, and the streams that reuse it run there.
        let task = io::spawn(async move { fetch_models(req, &url, &secrets).await });
        let mut task = AbortOnDrop(task);
        match (&mut task.0).await {
            Ok(r) => r,
            Err(e) => Err(LlmError::Interrupted {
                url: format!("{}/models", self.base_url),
                reason: format!("the model I/O task failed: {e}"),
            }),
        }
    }
}

/// Aborts a task when the future waiting for it is dropped (cancelled).
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn fetch_models(
    req: reqwest::RequestBuilder,
    url: &str,
    secrets: &[String],
) -> Result<Vec<String>, LlmError> {
    let resp = tokio::time::timeout(Duration::from_secs(5), req.send())
        .await
        .map_err(|_| LlmError::Timeout {
            url: url.to_owned(),
            after: Duration::from_secs(5),
        })?
        .map_err(|e| LlmError::Connect {
            url: url.to_owned(),
            reason: redact_all(&error_chain(&e), secrets),
        })?;
    if !resp.status().is_success() {
        return Err(error_from(url, resp, secrets).await);
    }
    let v: Value = resp.json().await.map_err(|e| LlmError::Decode {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    let list = v
        .get("data")
        .or_else(|| v.get("models"))
        .and_then(Value::as_array);
    Ok(list
        .map(|items| {
            items
                .iter()
                .filter_map(|m| {
                    m.get("id")
                        .or_else(|| m.get("name"))
                        .and_then(Value::as_str)
                })
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default())
}

/// reqwest's Display hides the cause ("error sending request"); include it.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let cs = c.to_string();
        if !s.contains(&cs) {
            s.push_str(": ");
            s.push_str(&cs);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direct_headers_match_what_reqwest_sends() {
        let h = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                .collect()
        };
        let got = direct_headers(
            Some("sk-1"),
            &h(&[
                ("X-Team", "a"),
                ("Authorization", "from config"),
                ("x-team", "b"),
                ("User-Agent", "mine"),
            ]),
        );
        assert_eq!(
            got,
            h(&[
                ("authorization", "Bearer sk-1"),
                ("X-Team", "b"),
                ("user-agent", USER_AGENT),
                ("accept", "*/*"),
            ])
        );
        let got = direct_headers(None, &h(&[("Accept", "text/event-stream")]));
        assert_eq!(
            got,
            h(&[("Accept", "text/event-stream"), ("user-agent", USER_AGENT)])
        );
    }

    #[test]
    fn secrets_are_redacted() {
        let r = redact_all(
            "Incorrect API key provided: sk-abc1***********wxyz. Key my-secret-key",
            &["my-secret-key".to_owned()],
        );
        assert!(!r.contains("abc1"), "{r}");
        assert!(!r.contains("my-secret-key"), "{r}");
        assert_eq!(redact_all("risk-free sk-", &[]), "risk-free sk-");
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(error_message(br#"{"error":"nope"}"#), "nope");
        assert_eq!(error_message(br#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(error_message(b"plain\ntext"), "plain text");
        assert_eq!(error_message(b""), "(empty body)");
    }
}
