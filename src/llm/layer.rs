//! The HTTP layer under async-openai (its `middleware` feature): sends each
//! request with our reqwest client and sees the raw response before
//! async-openai does.
//!
//! Why a layer of our own (NOTES, async-openai): async-openai's own errors
//! drop the status of an error body that is not OpenAI-shaped
//! (`{"detail": …}`, `{"error": "string"}`) and never carry `Retry-After`,
//! which our retry policy and the user's status line need; its built-in
//! retries (which show the user nothing) are replaced by this layer, which
//! has none. A server that answers a streaming request with a whole JSON
//! completion is recognised here by content type and handed on as one SSE
//! event. A streamed body goes through [`SseGuard`] (issue 14 item 5: one
//! event may not grow without bound).
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use async_openai::error::OpenAIError;
use async_openai::middleware::HttpRequestFactory;
use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use super::LlmError;
use super::redirect;
use super::retry::parse_retry_after;
use crate::secrets::redact_endpoint_text;

/// What one request's layer learnt about its reply, read by the stream
/// reader ([`super::stream`]).
#[derive(Default)]
pub(super) struct ReplyState {
    /// The stream reader read `data: [DONE]` (the guard then reads the
    /// body's tail so that the connection can be reused).
    pub saw_done: AtomicBool,
    /// [`SseGuard`] stopped the body: one event passed the cap.
    pub over_limit: AtomicBool,
    /// A chat reply's body, which the stream reader decodes itself (see
    /// [`Layer::hand_over`]).
    body: Mutex<Option<SseBody>>,
}

impl ReplyState {
    /// The body [`Layer::hand_over`] kept: once, after the request opened.
    pub fn take_body(&self) -> Option<SseBody> {
        self.body.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

/// A reply's body on its way to the SSE decoder: whole events, one per piece.
pub(super) type SseBody = Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>;

/// The tower service async-openai sends every request through.
#[derive(Clone)]
pub(super) struct Layer {
    pub client: reqwest::Client,
    pub secrets: Arc<Vec<String>>,
    /// Header names that never follow a redirect to another origin.
    pub credentials: Arc<Vec<reqwest::header::HeaderName>>,
    /// The most one SSE event (or a plain-JSON reply) may take, in bytes.
    pub max_event: usize,
    pub state: Arc<ReplyState>,
}

/// Our error inside async-openai's, taken out again by [`unbox`].
fn boxed(e: LlmError) -> OpenAIError {
    OpenAIError::Boxed(Box::new(e))
}

/// The [`LlmError`] this layer put into an async-openai error, or `None`.
pub(super) fn unbox(e: OpenAIError) -> Result<LlmError, OpenAIError> {
    match e {
        OpenAIError::Boxed(b) => match b.downcast::<LlmError>() {
            Ok(e) => Ok(*e),
            Err(b) => Err(OpenAIError::Boxed(b)),
        },
        other => Err(other),
    }
}

impl tower::Service<HttpRequestFactory> for Layer {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), OpenAIError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, factory: HttpRequestFactory) -> Self::Future {
        let layer = self.clone();
        Box::pin(async move {
            let request = factory.build().await?;
            let url = request.url().to_string();
            let resp = layer.send(request).await.map_err(|e| {
                boxed(LlmError::Connect {
                    url: url.clone(),
                    reason: redact_endpoint_text(&error_chain(&e), &layer.secrets),
                })
            })?;
            if !resp.status().is_success() {
                return Err(boxed(status_error(&url, resp, &layer.secrets).await));
            }
            let status = resp.status();
            let json = resp
                .headers()
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|ct| ct.contains("application/json"));
            let body: SseBody = match (url.ends_with("/chat/completions"), json) {
                // `GET /models`: the body as it came, under the cap.
                (false, _) => {
                    let body = layer.read_body(&url, resp).await.map_err(boxed)?;
                    let mut out = http::Response::new(reqwest::Body::from(body));
                    *out.status_mut() = status;
                    return Ok(reqwest::Response::from(out));
                }
                (true, true) => {
                    let event = layer.json_as_sse(&url, resp).await.map_err(boxed)?;
                    Box::pin(futures::stream::once(std::future::ready(Ok(event))))
                }
                (true, false) => Box::pin(SseGuard::new(
                    resp.bytes_stream(),
                    layer.max_event,
                    layer.state.clone(),
                )),
            };
            Ok(layer.hand_over(status, body))
        })
    }
}

impl Layer {
    /// Sends `request`, following a redirect to another origin without the
    /// credentials ([`redirect::next_hop`]); reqwest follows the others.
    async fn send(
        &self,
        mut request: reqwest::Request,
    ) -> Result<reqwest::Response, reqwest::Error> {
        let mut hops = 0;
        loop {
            let retry = request.try_clone();
            let again = request.try_clone();
            let resp = match self.client.execute(request).await {
                Ok(resp) => resp,
                // A kept-alive connection the server had closed (llama-server
                // does): nothing of the response came back, so the request is
                // sent again at once on a new connection, with no notice.
                Err(e) => match again {
                    Some(again) if closed_before_reply(&e) => {
                        tracing::debug!(error = %error_chain(&e), "a kept-alive connection was closed; sending again");
                        self.client.execute(again).await?
                    }
                    _ => return Err(e),
                },
            };
            match redirect::next_hop(&resp, retry, &self.credentials) {
                Some(next) if hops < redirect::MAX_REDIRECTS => {
                    hops += 1;
                    tracing::info!(
                        from = %resp.url().origin().ascii_serialization(),
                        to = %next.url().origin().ascii_serialization(),
                        "the model endpoint redirects to another origin: following without the key and the configured headers"
                    );
                    request = next;
                }
                _ => return Ok(resp),
            }
        }
    }

    /// A whole (not streamed) body, at most `max_event` bytes of it.
    async fn read_body(&self, url: &str, resp: reqwest::Response) -> Result<Bytes, LlmError> {
        let body =
            read_capped(resp, self.max_event)
                .await
                .map_err(|reason| LlmError::Interrupted {
                    url: url.to_owned(),
                    reason,
                })?;
        if body.len() > self.max_event {
            return Err(LlmError::Limit {
                url: url.to_owned(),
                what: "bytes in one SSE event",
                limit: self.max_event,
                key: "max_sse_event_bytes",
            });
        }
        Ok(body)
    }

    /// A server that ignored `stream: true` sent one JSON completion: it
    /// goes on as one SSE event (`message` instead of `delta`, which the
    /// assembler reads) followed by `[DONE]`.
    async fn json_as_sse(&self, url: &str, resp: reqwest::Response) -> Result<Bytes, LlmError> {
        let body = self.read_body(url, resp).await?;
        let value: Value = serde_json::from_slice(&body).map_err(|e| LlmError::Decode {
            url: url.to_owned(),
            reason: redact_endpoint_text(&e.to_string(), &self.secrets),
        })?;
        // Compact JSON has no raw newline, so it is one `data:` line.
        Ok(Bytes::from(format!("data: {value}\n\ndata: [DONE]\n\n")))
    }

    /// A chat reply: its body goes to our stream reader ([`ReplyState`]),
    /// async-openai gets the status and an empty body. async-openai decodes
    /// a streamed body on a task of its own and sends each event over a
    /// channel as a `RawValue` copy; at one event per token that hand-over
    /// was most of the agent's CPU time per chunk (issue 15), so the reader
    /// decodes the events itself, with the same decoder (eventsource-stream).
    fn hand_over(&self, status: http::StatusCode, body: SseBody) -> reqwest::Response {
        *self.state.body.lock().unwrap_or_else(|e| e.into_inner()) = Some(body);
        let mut out = http::Response::new(reqwest::Body::from(Bytes::new()));
        *out.status_mut() = status;
        reqwest::Response::from(out)
    }
}

/// The body, reading at most `limit + 1` bytes (more means "over the limit").
async fn read_capped(resp: reqwest::Response, limit: usize) -> Result<Bytes, String> {
    let mut all = BytesMut::new();
    let mut body = resp.bytes_stream();
    while let Some(part) = body.next().await {
        let part = part.map_err(|e| error_chain(&e))?;
        let room = (limit + 1).saturating_sub(all.len());
        all.extend_from_slice(&part[..part.len().min(room)]);
        if all.len() > limit {
            break;
        }
    }
    Ok(all.freeze())
}

/// A failure status as an error: the server's message from its body (read
/// for at most 10 s and 64 KiB, redacted) and its `Retry-After`.
pub(super) async fn status_error(
    url: &str,
    resp: reqwest::Response,
    secrets: &[String],
) -> LlmError {
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let body = tokio::time::timeout(Duration::from_secs(10), read_capped(resp, 64 * 1024))
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    LlmError::Status {
        status,
        url: url.to_owned(),
        message: redact_endpoint_text(&error_message(&body), secrets),
        retry_after,
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

/// reqwest's Display hides the cause ("error sending request"); include it.
/// Whether `e` is a connection that closed before any byte of the response
/// came back (a kept-alive connection the server had closed meanwhile), not
/// a server that cannot be reached.
fn closed_before_reply(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() {
        return false;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        if let Some(h) = c.downcast_ref::<hyper::Error>()
            && h.is_incomplete_message()
        {
            return true;
        }
        if let Some(io) = c.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        cur = c.source();
    }
    false
}

pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
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

/// How long a reply's connection waits for the body's last bytes after
/// `[DONE]` (async-openai stops reading there) so that it can be reused.
const TAIL_WAIT: Duration = Duration::from_millis(100);

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Sits between reqwest's body and async-openai's SSE decoder
/// (eventsource-stream) and:
/// - caps one event (its lines up to the blank line that ends it) at
///   `max_event` bytes: the decoder buffers an event whole, so a `data:`
///   line that never ends grew the agent's memory without bound (issue 14);
/// - turns every line ending into `\n`: the decoder holds a line ending in
///   a lone `\r` until the next byte comes (it cannot yet tell `\r` from
///   `\r\n`), so a server that ends lines with `\r` alone, as the SSE spec
///   allows, had each event shown only when the next one began, and the
///   last never (test `a_lone_cr_ends_lines`);
/// - hands the decoder whole events, one per piece: it re-parses its whole
///   buffer whenever bytes arrive and copies what follows each line it takes
///   out, so an event arriving in many reads, or a read of many events,
///   cost time quadratic in its size.
pub(super) struct SseGuard {
    inner: Option<ByteStream>,
    max_event: usize,
    state: Arc<ReplyState>,
    /// Normalised bytes not yet looked at.
    pending: Bytes,
    /// The start of an event whose end has not come yet.
    held: BytesMut,
    /// The last byte seen was `\r` (a `\n` right after it is dropped).
    after_cr: bool,
    /// Bytes of the current event so far (its finished lines and the current line).
    event_len: usize,
    /// Bytes of the current line so far.
    line_len: usize,
    ended: bool,
}

impl SseGuard {
    fn new(
        inner: impl Stream<Item = reqwest::Result<Bytes>> + Send + 'static,
        max_event: usize,
        state: Arc<ReplyState>,
    ) -> SseGuard {
        SseGuard {
            inner: Some(Box::pin(inner)),
            max_event,
            state,
            pending: Bytes::new(),
            held: BytesMut::new(),
            after_cr: false,
            event_len: 0,
            line_len: 0,
            ended: false,
        }
    }

    /// `bytes` with `\r\n` and `\r` turned into `\n`; no copy without a `\r`.
    fn normalise(&mut self, mut bytes: Bytes) -> Bytes {
        if self.after_cr && bytes.first() == Some(&b'\n') {
            bytes = bytes.slice(1..);
        }
        if bytes.is_empty() {
            return bytes;
        }
        self.after_cr = false;
        if memchr::memchr(b'\r', &bytes).is_none() {
            return bytes;
        }
        let mut out = Vec::with_capacity(bytes.len());
        let mut after_cr = false;
        for &b in bytes.iter() {
            match b {
                b'\r' => {
                    out.push(b'\n');
                    after_cr = true;
                }
                b'\n' if after_cr => after_cr = false,
                b => {
                    out.push(b);
                    after_cr = false;
                }
            }
        }
        self.after_cr = after_cr;
        Bytes::from(out)
    }

    /// The next whole event in `pending` (up to and including the blank
    /// line that ends it), joined to what `held` has of it; `None` when
    /// `pending` ends inside an event, which then moves to `held`. `Err`
    /// once the event passes the cap.
    fn next_event(&mut self) -> Result<Option<Bytes>, std::io::Error> {
        let buf = self.pending.clone();
        let mut at = 0;
        let mut complete = false;
        while at < buf.len() {
            let Some(nl) = memchr::memchr(b'\n', &buf[at..]) else {
                self.note_line_bytes(&buf[at..]);
                at = buf.len();
                break;
            };
            self.note_line_bytes(&buf[at..at + nl]);
            at += nl + 1;
            let blank = self.line_len == 0;
            self.line_len = 0;
            if blank {
                self.event_len = 0;
                complete = true;
                break;
            }
            self.event_len += 1;
        }
        if self.event_len > self.max_event {
            self.state.over_limit.store(true, Ordering::Relaxed);
            self.pending = Bytes::new();
            self.held = BytesMut::new();
            return Err(std::io::Error::other(format!(
                "one SSE event passed {} bytes",
                self.max_event
            )));
        }
        let part = self.pending.split_to(at);
        if !complete {
            self.held.extend_from_slice(&part);
            return Ok(None);
        }
        if self.held.is_empty() {
            return Ok(Some(part));
        }
        self.held.extend_from_slice(&part);
        Ok(Some(std::mem::take(&mut self.held).freeze()))
    }

    fn note_line_bytes(&mut self, part: &[u8]) {
        self.line_len += part.len();
        self.event_len += part.len();
    }
}

impl Stream for SseGuard {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            while !self.pending.is_empty() {
                match self.next_event() {
                    Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                    Ok(None) => {}
                    Err(e) => return Poll::Ready(Some(Err(e))),
                }
            }
            if self.state.over_limit.load(Ordering::Relaxed) {
                return Poll::Ready(None);
            }
            if self.ended {
                // What is left of an event the body did not finish.
                let rest = std::mem::take(&mut self.held);
                return Poll::Ready((!rest.is_empty()).then(|| Ok(rest.freeze())));
            }
            let Some(inner) = self.inner.as_mut() else {
                return Poll::Ready(None);
            };
            match inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => self.pending = self.normalise(bytes),
                Poll::Ready(Some(Err(e))) => {
                    self.ended = true;
                    self.held = BytesMut::new();
                    return Poll::Ready(Some(Err(std::io::Error::other(error_chain(&e)))));
                }
                Poll::Ready(None) => self.ended = true,
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for SseGuard {
    /// After `[DONE]` the stream reader drops the body unread; the few bytes
    /// after it (the end of the chunked body) are read on a task of their
    /// own so that reqwest can keep the connection for the next request.
    fn drop(&mut self) {
        if self.ended || !self.state.saw_done.load(Ordering::Relaxed) {
            return;
        }
        let (Some(mut inner), Ok(rt)) = (self.inner.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        rt.spawn(async move {
            let _ = tokio::time::timeout(TAIL_WAIT, async {
                let mut read = 0usize;
                while let Some(Ok(b)) = inner.next().await {
                    read += b.len();
                    if read > 64 * 1024 {
                        break;
                    }
                }
            })
            .await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard_over(parts: &[&'static [u8]], max: usize) -> (SseGuard, Arc<ReplyState>) {
        let state = Arc::new(ReplyState::default());
        let parts: Vec<reqwest::Result<Bytes>> =
            parts.iter().map(|p| Ok(Bytes::from_static(p))).collect();
        (
            SseGuard::new(futures::stream::iter(parts), max, state.clone()),
            state,
        )
    }

    async fn collect(g: SseGuard) -> (Vec<Vec<u8>>, bool) {
        let items: Vec<_> = g.collect().await;
        let failed = items.iter().any(Result::is_err);
        (
            items
                .into_iter()
                .filter_map(Result::ok)
                .map(|b| b.to_vec())
                .collect(),
            failed,
        )
    }

    #[tokio::test]
    async fn a_lone_cr_ends_lines() {
        let (g, _) = guard_over(
            &[b"data: a\r\rdata: b\r", b"\n\r\nda", b"ta: [DONE]\r\r"],
            1000,
        );
        let (pieces, failed) = collect(g).await;
        assert!(!failed);
        assert_eq!(
            pieces,
            [&b"data: a\n\n"[..], b"data: b\n\n", b"data: [DONE]\n\n"],
            "one whole event per piece"
        );
    }

    /// Once the reader has seen `[DONE]` and drops the body, the guard reads
    /// what is left of it (the end of the chunked body) so that reqwest can
    /// reuse the connection; before `[DONE]` it reads nothing more.
    #[tokio::test(start_paused = true)]
    async fn the_tail_after_done_is_read_for_reuse() {
        for done in [true, false] {
            let tail_read = Arc::new(AtomicBool::new(false));
            let flag = tail_read.clone();
            let parts = futures::stream::iter([Ok(Bytes::from_static(b"data: [DONE]\n\n"))]).chain(
                futures::stream::once(async move {
                    flag.store(true, Ordering::Relaxed);
                    Ok(Bytes::from_static(b"\n"))
                }),
            );
            let state = Arc::new(ReplyState::default());
            let mut g = SseGuard::new(parts, 1000, state.clone());
            assert!(g.next().await.unwrap().is_ok());
            state.saw_done.store(done, Ordering::Relaxed);
            drop(g);
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(tail_read.load(Ordering::Relaxed), done);
        }
    }

    /// Why [`SseGuard`] turns line endings into `\n`: async-openai's SSE
    /// decoder alone never yields the last event of a stream whose lines
    /// end in `\r` alone (it waits for a byte that could make it `\r\n`).
    #[tokio::test]
    async fn async_openai_alone_loses_the_last_cr_only_event() {
        const BODY: &str = "data: {\"n\":1}\r\rdata: {\"n\":2}\r\r";
        async fn events(guarded: bool) -> usize {
            let service = tower::service_fn(move |_: HttpRequestFactory| async move {
                let parts = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(
                    BODY.as_bytes(),
                ))]);
                let body = if guarded {
                    let state = Arc::new(ReplyState::default());
                    let raw = parts.map(|p| Ok::<_, reqwest::Error>(p.unwrap_or_default()));
                    reqwest::Body::wrap_stream(SseGuard::new(raw, 1 << 20, state))
                } else {
                    reqwest::Body::wrap_stream(parts)
                };
                Ok::<_, OpenAIError>(reqwest::Response::from(http::Response::new(body)))
            });
            let config = async_openai::config::OpenAIConfig::new().with_api_base("http://unused");
            let client = async_openai::Client::with_config(config).with_http_service(service);
            let chat = client.chat();
            let stream = chat
                .create_stream_byot::<_, Value>(serde_json::json!({"stream": true}))
                .await
                .unwrap();
            stream
                .filter(|e| std::future::ready(e.is_ok()))
                .count()
                .await
        }
        // (`Client::with_config` builds a reqwest client: it needs the provider.)
        crate::net::install_crypto();
        assert_eq!(events(false).await, 1, "the library alone drops event 2");
        assert_eq!(events(true).await, 2);
    }

    #[tokio::test]
    async fn one_event_may_not_pass_the_cap() {
        let (g, state) = guard_over(&[b"data: 0123456789", b"0123456789", b"0123456789"], 25);
        let (_, failed) = collect(g).await;
        assert!(failed);
        assert!(state.over_limit.load(Ordering::Relaxed));
        // Many short lines without the blank line that ends an event count too.
        let (g, _) = guard_over(&[b"data: 01234\ndata: 01234\ndata: 01234\n"], 25);
        assert!(collect(g).await.1);
        // Events under the cap pass however many there are.
        let (g, _) = guard_over(&[&b"data: 0123456789\n\ndata: 0123456789\n\n"[..]; 50], 25);
        let (pieces, failed) = collect(g).await;
        assert!(!failed && pieces.len() == 100);
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
