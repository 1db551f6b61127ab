//! The legacy HTTP+SSE transport (MCP 2024-11-05 "Transports: HTTP with
//! SSE"), which rmcp no longer ships: the client opens a `GET` event stream;
//! the server's first `endpoint` event names the URL to `POST` messages to,
//! and its answers arrive on the stream as `message` events.
use std::borrow::Cow;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Url};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use sse_stream::{Sse, SseStream};
use tokio::sync::mpsc;

use super::McpError;
use super::oauth_flow::Bearer;

/// How long to wait for the `endpoint` event after the stream opened.
const ENDPOINT_WAIT: Duration = Duration::from_secs(30);
/// One `POST` of a message may take this long (answers come on the stream).
const POST_TIMEOUT: Duration = Duration::from_secs(60);
/// Events larger than this end the stream (a broken or hostile server).
const MAX_EVENT: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SseError {
    #[error("POST {url} failed: {source}")]
    Post { url: Url, source: reqwest::Error },
    #[error("POST {url} answered HTTP {status}: {body}")]
    Status { url: Url, status: u16, body: String },
    #[error("cannot encode the message: {0}")]
    Encode(serde_json::Error),
}

/// A client transport over the legacy HTTP+SSE protocol.
pub struct SseTransport {
    client: Client,
    post_url: Url,
    headers: HeaderMap,
    bearer: Bearer,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// The event stream of a `GET`, decoded by `sse-stream` (every SSE line
/// ending, CR alone included). One event may take at most [`MAX_EVENT`]
/// bytes: `sse-stream` buffers an unfinished line and event without a
/// bound, so the bytes since the last decoded event are counted here.
type Events = std::pin::Pin<Box<dyn futures::Stream<Item = Result<Sse, String>> + Send>>;

fn events(resp: reqwest::Response) -> Events {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let since_event = Arc::new(AtomicUsize::new(0));
    let counted = since_event.clone();
    let bytes = resp.bytes_stream().map(move |chunk| {
        let chunk = chunk?;
        let n = counted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len();
        if n > MAX_EVENT {
            return Err(TooLarge.into());
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(chunk)
    });
    let bytes = bytes.map_err(|e| std::io::Error::other(e.to_string()));
    Box::pin(SseStream::from_bytes_stream(bytes).map(move |ev| {
        since_event.store(0, Ordering::Relaxed);
        ev.map_err(|e| e.to_string())
    }))
}

#[derive(Debug, thiserror::Error)]
#[error("an event exceeds {MAX_EVENT} bytes")]
struct TooLarge;

/// The name of an event (`message` when it has none).
fn name(ev: &Sse) -> &str {
    ev.event.as_deref().unwrap_or("message")
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event; every
    /// request carries `bearer`'s token once there is one (OAuth). A 401 is
    /// [`McpError::SignIn`] with the server's challenge.
    pub async fn connect(
        client: Client,
        url: &str,
        headers: HeaderMap,
        bearer: Bearer,
    ) -> Result<SseTransport, McpError> {
        let sse_url = Url::parse(url).map_err(|e| McpError::Config(format!("url {url:?}: {e}")))?;
        let resp = open_stream(&client, &sse_url, &headers, &bearer).await?;
        let mut stream = events(resp);
        let (endpoint, early) = wait_for_endpoint(&mut stream, &sse_url).await?;
        let post_url = post_url(&sse_url, &endpoint)?;
        tracing::debug!(%sse_url, %post_url, "SSE endpoint");
        let (tx, rx) = mpsc::channel(64);
        let reader = tokio::spawn(read_events(stream, early, tx, sse_url));
        Ok(SseTransport {
            client,
            post_url,
            headers,
            bearer,
            rx,
            reader,
        })
    }
}

/// The `GET` of the event stream, checked: a 401 with a challenge asks for
/// sign-in, any other failure names the status and the start of the body.
async fn open_stream(
    client: &Client,
    sse_url: &Url,
    headers: &HeaderMap,
    bearer: &Bearer,
) -> Result<reqwest::Response, McpError> {
    let mut get = client
        .get(sse_url.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream");
    if let Some(auth) = bearer.header().await {
        get = get.header(reqwest::header::AUTHORIZATION, auth);
    }
    let resp = get
        .send()
        .await
        .map_err(|e| McpError::Connect(format!("GET {sse_url}: {e}")))?;
    let status = resp.status();
    if status == reqwest::StatusCode::UNAUTHORIZED
        && let Some(challenge) = resp.headers().get(reqwest::header::WWW_AUTHENTICATE)
    {
        return Err(McpError::SignIn(
            challenge.to_str().unwrap_or_default().to_owned(),
        ));
    }
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        return Err(McpError::Connect(format!(
            "GET {sse_url} answered HTTP {}: {}",
            status.as_u16(),
            body.chars().take(300).collect::<String>()
        )));
    }
    Ok(resp)
}

/// Waits up to [`ENDPOINT_WAIT`] for the `endpoint` event: its data, and
/// the messages that came before it (kept for the reader).
async fn wait_for_endpoint(
    stream: &mut Events,
    sse_url: &Url,
) -> Result<(String, Vec<Sse>), McpError> {
    let mut early = Vec::new();
    let endpoint = tokio::time::timeout(ENDPOINT_WAIT, async {
        loop {
            let Some(ev) = stream.next().await else {
                return Err("the event stream ended before the endpoint event".to_owned());
            };
            let ev = ev.map_err(|e| format!("reading the event stream: {e}"))?;
            if name(&ev) == "endpoint" {
                return Ok(ev.data.unwrap_or_default());
            }
            early.push(ev);
        }
    })
    .await
    .map_err(|_| {
        McpError::Connect(format!(
            "GET {sse_url}: no endpoint event within {} s (is this a legacy SSE server? \
             streamable HTTP servers take \"type\": \"http\")",
            ENDPOINT_WAIT.as_secs()
        ))
    })?
    .map_err(|e| McpError::Connect(format!("GET {sse_url}: {e}")))?;
    Ok((endpoint, early))
}

/// The URL the endpoint event names, resolved against the stream's; only on
/// the stream's origin (messages and their headers go nowhere else).
fn post_url(sse_url: &Url, endpoint: &str) -> Result<Url, McpError> {
    let post_url = sse_url.join(endpoint.trim()).map_err(|e| {
        McpError::Connect(format!("the endpoint event {endpoint:?} is not a URL: {e}"))
    })?;
    if !same_origin(&post_url, sse_url) {
        return Err(McpError::Connect(format!(
            "the endpoint {post_url} is not on the origin of {sse_url}; refusing to send messages (and headers) there"
        )));
    }
    Ok(post_url)
}

/// Forwards the early messages, then the stream's, until it ends or nobody
/// listens. Dropping `tx` at the end ends `receive`: the service sees the
/// server gone.
async fn read_events(
    mut stream: Events,
    early: Vec<Sse>,
    tx: mpsc::Sender<ServerJsonRpcMessage>,
    sse_url: Url,
) {
    for ev in early {
        if !forward(&tx, ev).await {
            return;
        }
    }
    loop {
        let ev = match stream.next().await {
            Some(Ok(ev)) => ev,
            Some(Err(e)) => {
                tracing::warn!(%sse_url, error = %e, "SSE stream failed");
                break;
            }
            None => {
                tracing::info!(%sse_url, "SSE stream ended");
                break;
            }
        };
        if !forward(&tx, ev).await {
            return;
        }
    }
}

/// Hands a `message` event to the service; false once nobody listens.
async fn forward(tx: &mpsc::Sender<ServerJsonRpcMessage>, ev: Sse) -> bool {
    if name(&ev) != "message" {
        tracing::debug!(event = %name(&ev), "ignored SSE event");
        return true;
    }
    let Some(data) = ev.data else {
        return true;
    };
    match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
        Ok(msg) => tx.send(msg).await.is_ok(),
        Err(e) => {
            tracing::warn!(error = %e, "undecodable message on the SSE stream");
            true
        }
    }
}

impl Transport<RoleClient> for SseTransport {
    type Error = SseError;

    fn name() -> Cow<'static, str> {
        "sse".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let url = self.post_url.clone();
        let headers = self.headers.clone();
        let bearer = self.bearer.clone();
        async move {
            let body = serde_json::to_vec(&item).map_err(SseError::Encode)?;
            let mut post = client
                .post(url.clone())
                .headers(headers)
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .timeout(POST_TIMEOUT)
                .body(body);
            if let Some(auth) = bearer.header().await {
                post = post.header(reqwest::header::AUTHORIZATION, auth);
            }
            let resp = post.send().await.map_err(|source| SseError::Post {
                url: url.clone(),
                source,
            })?;
            let status = resp.status();
            if status.is_success() {
                return Ok(());
            }
            let body = resp.text().await.unwrap_or_default();
            Err(SseError::Status {
                url,
                status: status.as_u16(),
                body: body.chars().take(300).collect(),
            })
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.rx.recv()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.reader.abort();
        self.rx.close();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn decode(parts: &[&'static str]) -> Vec<Result<(String, String), String>> {
        let body = futures::stream::iter(
            parts
                .iter()
                .map(|p| Ok::<_, std::io::Error>(bytes::Bytes::from_static(p.as_bytes())))
                .collect::<Vec<_>>(),
        );
        let resp = http::Response::new(reqwest::Body::wrap_stream(body));
        events(reqwest::Response::from(resp))
            .map(|ev| ev.map(|ev| (name(&ev).to_owned(), ev.data.unwrap_or_default())))
            .collect()
            .await
    }

    #[tokio::test]
    async fn events_keep_names_join_data_and_read_every_line_ending() {
        let got = decode(&[
            "event: endpoint\r\ndata: /messages?session=1\r\n\r\n: ping\n\ndata: {\"a\":",
            "1}\ndata: x\n\nevent: other\rdata: y\r\r",
        ])
        .await;
        let got: Vec<_> = got.into_iter().map(Result::unwrap).collect();
        assert_eq!(
            got,
            [
                ("endpoint".into(), "/messages?session=1".into()),
                ("message".into(), "{\"a\":1}\nx".into()),
                ("other".into(), "y".into()),
            ]
        );
        let a = Url::parse("http://127.0.0.1:80/sse").unwrap();
        assert!(same_origin(&a, &a.join("/m?x=1").unwrap()));
        assert!(same_origin(&a, &Url::parse("http://127.0.0.1/m").unwrap()));
        assert!(!same_origin(
            &a,
            &Url::parse("http://evil.example/m").unwrap()
        ));
    }

    #[tokio::test]
    async fn an_event_that_never_ends_is_cut() {
        let big: &'static str = Box::leak("x".repeat(1 << 20).into_boxed_str());
        let mut parts = vec!["data: "];
        parts.extend(std::iter::repeat_n(big, MAX_EVENT / (1 << 20) + 1));
        let got = decode(&parts).await;
        assert!(got.last().unwrap().is_err(), "{:?}", got.len());
    }
}
