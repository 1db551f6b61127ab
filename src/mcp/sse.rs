//! The legacy HTTP+SSE transport (MCP 2024-11-05 "Transports: HTTP with
//! SSE"), which rmcp no longer ships: the client opens a `GET` event stream;
//! the server's first `endpoint` event names the URL to `POST` messages to,
//! and its answers arrive on the stream as `message` events.
use std::borrow::Cow;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Url};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use super::McpError;

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
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One server-sent event.
#[derive(Debug, Default, PartialEq)]
struct Event {
    name: String,
    data: String,
}

/// Incremental SSE parser that keeps event names (HTML "server-sent events").
#[derive(Default)]
struct Decoder {
    buf: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl Decoder {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), String> {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, out);
        }
        self.buf.drain(..start);
        let pending = self.buf.len() + self.data.as_ref().map_or(0, String::len);
        if pending > MAX_EVENT {
            return Err(format!("an event exceeds {MAX_EVENT} bytes"));
        }
        Ok(())
    }

    fn line(&mut self, line: &str, out: &mut Vec<Event>) {
        if line.is_empty() {
            if let Some(data) = self.data.take() {
                out.push(Event {
                    name: self.event.take().unwrap_or_else(|| "message".into()),
                    data,
                });
            }
            self.event = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

impl SseTransport {
    /// Opens the event stream and waits for the `endpoint` event.
    pub async fn connect(
        client: Client,
        url: &str,
        headers: HeaderMap,
    ) -> Result<SseTransport, McpError> {
        let sse_url = Url::parse(url).map_err(|e| McpError::Config(format!("url {url:?}: {e}")))?;
        let resp = client
            .get(sse_url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| McpError::Connect(format!("GET {sse_url}: {e}")))?;
        let status = resp.status();
        if !status.is_success() {
            let body = resp.text().await.unwrap_or_default();
            return Err(McpError::Connect(format!(
                "GET {sse_url} answered HTTP {}: {}",
                status.as_u16(),
                body.chars().take(300).collect::<String>()
            )));
        }
        let mut stream = resp.bytes_stream();
        let mut decoder = Decoder::default();
        let mut events = Vec::new();
        let (tx, rx) = mpsc::channel(64);
        // Wait for `endpoint`; messages before it are kept for the reader.
        let mut early = Vec::new();
        let endpoint = tokio::time::timeout(ENDPOINT_WAIT, async {
            loop {
                let Some(chunk) = stream.next().await else {
                    return Err("the event stream ended before the endpoint event".to_owned());
                };
                let chunk = chunk.map_err(|e| format!("reading the event stream: {e}"))?;
                decoder.feed(&chunk, &mut events)?;
                for ev in events.drain(..) {
                    if ev.name == "endpoint" {
                        return Ok(ev.data);
                    }
                    early.push(ev);
                }
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
        let post_url = sse_url.join(endpoint.trim()).map_err(|e| {
            McpError::Connect(format!("the endpoint event {endpoint:?} is not a URL: {e}"))
        })?;
        if !same_origin(&post_url, &sse_url) {
            return Err(McpError::Connect(format!(
                "the endpoint {post_url} is not on the origin of {sse_url}; refusing to send messages (and headers) there"
            )));
        }
        tracing::debug!(%sse_url, %post_url, "SSE endpoint");
        let reader = tokio::spawn(async move {
            for ev in early {
                if !forward(&tx, ev).await {
                    return;
                }
            }
            loop {
                let chunk = match stream.next().await {
                    Some(Ok(c)) => c,
                    Some(Err(e)) => {
                        tracing::info!(%sse_url, error = %e, "SSE stream failed");
                        break;
                    }
                    None => {
                        tracing::info!(%sse_url, "SSE stream ended");
                        break;
                    }
                };
                let mut events = Vec::new();
                if let Err(e) = decoder.feed(&chunk, &mut events) {
                    tracing::warn!(%sse_url, error = %e, "SSE stream dropped");
                    break;
                }
                for ev in events {
                    if !forward(&tx, ev).await {
                        return;
                    }
                }
            }
            // Dropping `tx` ends `receive`: the service sees the server gone.
        });
        Ok(SseTransport {
            client,
            post_url,
            headers,
            rx,
            reader,
        })
    }
}

/// Hands a `message` event to the service; false once nobody listens.
async fn forward(tx: &mpsc::Sender<ServerJsonRpcMessage>, ev: Event) -> bool {
    if ev.name != "message" {
        tracing::debug!(event = %ev.name, "ignored SSE event");
        return true;
    }
    match serde_json::from_str::<ServerJsonRpcMessage>(&ev.data) {
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
        async move {
            let body = serde_json::to_vec(&item).map_err(SseError::Encode)?;
            let resp = client
                .post(url.clone())
                .headers(headers)
                .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
                .timeout(POST_TIMEOUT)
                .body(body)
                .send()
                .await
                .map_err(|source| SseError::Post {
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

    #[test]
    fn decoder_keeps_names_and_joins_data() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.feed(
            b"event: endpoint\r\ndata: /messages?session=1\r\n\r\n: ping\n\ndata: {\"a\":",
            &mut out,
        )
        .unwrap();
        d.feed(b"1}\ndata: x\n\nevent: other\n\n", &mut out)
            .unwrap();
        assert_eq!(
            out,
            [
                Event {
                    name: "endpoint".into(),
                    data: "/messages?session=1".into()
                },
                Event {
                    name: "message".into(),
                    data: "{\"a\":1}\nx".into()
                },
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
}
