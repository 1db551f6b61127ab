//! One streamed reply: the SSE events of the response body, decoded with
//! our lenient chunk types, assembled, bounded and timed.
//!
//! - The body's events are decoded here, in the turn's own task, by
//!   eventsource-stream (the SSE decoder async-openai itself uses), from the
//!   body the layer took over ([`ReplyState::take_body`]). async-openai's
//!   own stream decodes them on a task it spawns and hands each payload
//!   over an unbounded channel as a `RawValue` copy: a task wake-up, a
//!   JSON validation and a copy per chunk, which the issue-15 profile found
//!   to be most of the agent's CPU time per streamed chunk.
//! - Each payload is read by [`parse_chunk`] (strict, then lenient; NOTES).
//! - A reply's text (answer and reasoning) and its tool-call arguments are
//!   capped ([`StreamLimits`], issue 14 item 5): past the cap the reply
//!   fails with an error naming the limit and its config key, and the
//!   stream (so the request) is dropped.
//! - The idle timeout is per chunk: one timer for the whole stream, pushed
//!   back when it fires early, so a chunk costs a clock read.
//! - Text ready at once is merged into one event, so a burst wakes the turn
//!   once per batch, not once per chunk.
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::{EventStream, EventStreamError, Eventsource};
use futures::Stream;
use serde_json::Value;

use super::assemble::{Assembler, parse_chunk};
use super::layer::{ReplyState, SseBody};
use super::{Event, LlmError, StreamLimits};

/// At most this many payloads are taken in one poll before the turn gets
/// what they made: the turn checks for a cancel between polls, and a flood
/// of large chunks must not hold it off for long.
const BATCH: usize = 32;

pub(super) struct Reply {
    inner: Pin<Box<EventStream<SseBody>>>,
    url: String,
    state: Arc<ReplyState>,
    limits: StreamLimits,
    secrets: Arc<Vec<String>>,
    /// `None` once the reply is complete or failed.
    assembler: Option<Assembler>,
    out: VecDeque<Result<Event, LlmError>>,
    scratch: Vec<Event>,
    idle_limit: Duration,
    last: tokio::time::Instant,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Reply {
    pub(super) fn new(
        body: SseBody,
        url: String,
        state: Arc<ReplyState>,
        limits: StreamLimits,
        secrets: Arc<Vec<String>>,
        idle_limit: Duration,
    ) -> Reply {
        let now = tokio::time::Instant::now();
        Reply {
            inner: Box::pin(body.eventsource()),
            url,
            state,
            limits,
            secrets,
            assembler: Some(Assembler::default()),
            out: VecDeque::new(),
            scratch: Vec::new(),
            idle_limit,
            last: now,
            sleep: Box::pin(tokio::time::sleep_until(now + idle_limit)),
        }
    }

    /// Handles one payload.
    fn payload(&mut self, data: &str) {
        let chunk = match parse_chunk(data) {
            Ok(c) => c,
            Err(e) => return self.fail(self.decode_error(&e.to_string(), data)),
        };
        if let Some(err) = &chunk.error {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| err.to_string());
            let url = self.url.clone();
            return self.fail(LlmError::Api { url, message });
        }
        let Some(a) = self.assembler.as_mut() else {
            return;
        };
        a.push(chunk, &mut self.scratch);
        let (text, args) = (a.text_len(), a.arguments_len());
        for e in self.scratch.drain(..) {
            push_merged(&mut self.out, e);
        }
        if text > self.limits.max_text_bytes {
            self.fail(self.limit(
                "bytes of text",
                self.limits.max_text_bytes,
                "max_reply_text_bytes",
            ));
        } else if args > self.limits.max_tool_arguments_bytes {
            self.fail(self.limit(
                "bytes of tool-call arguments",
                self.limits.max_tool_arguments_bytes,
                "max_tool_arguments_bytes",
            ));
        }
    }

    fn limit(&self, what: &'static str, limit: usize, key: &'static str) -> LlmError {
        LlmError::Limit {
            url: self.url.clone(),
            what,
            limit,
            key,
        }
    }

    fn decode_error(&self, reason: &str, data: &str) -> LlmError {
        let excerpt: String = data.chars().take(120).collect();
        LlmError::Decode {
            url: self.url.clone(),
            reason: format!("{reason} in data line {excerpt:?}"),
        }
    }

    /// The body failed (the connection, or the layer's cap on one event).
    fn stream_error(&mut self, e: EventStreamError<std::io::Error>) {
        let err = if self.state.over_limit.load(Ordering::Relaxed) {
            self.limit(
                "bytes in one SSE event",
                self.limits.max_event_bytes,
                "max_sse_event_bytes",
            )
        } else {
            LlmError::Interrupted {
                url: self.url.clone(),
                reason: e.to_string(),
            }
        };
        self.fail(err);
    }

    /// The stream ended: at `[DONE]`, or when the body did.
    fn end(&mut self) {
        let done = self.state.saw_done.load(Ordering::Relaxed)
            || self.assembler.as_ref().is_some_and(Assembler::saw_finish);
        if done {
            if let Some(a) = self.assembler.take() {
                self.out.push_back(Ok(Event::Done(a.finish())));
            }
        } else {
            self.fail(LlmError::Interrupted {
                url: self.url.clone(),
                reason: "the stream ended before the reply was complete".into(),
            });
        }
    }

    fn fail(&mut self, err: LlmError) {
        if self.assembler.take().is_some() {
            self.out.push_back(Err(err.redacted(&self.secrets)));
        }
    }

    /// Whether the idle limit has passed since the last payload; arms the
    /// timer for the rest of it otherwise.
    fn idle_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.sleep.as_mut().poll(cx).is_pending() {
                return false;
            }
            let deadline = self.last + self.idle_limit;
            if tokio::time::Instant::now() >= deadline {
                return true;
            }
            self.sleep.as_mut().reset(deadline);
        }
    }
}

/// Appends an event, merging text into text and reasoning into reasoning.
fn push_merged(out: &mut VecDeque<Result<Event, LlmError>>, e: Event) {
    match (out.back_mut(), e) {
        (Some(Ok(Event::Text(last))), Event::Text(t))
        | (Some(Ok(Event::Reasoning(last))), Event::Reasoning(t)) => last.push_str(&t),
        (_, e) => out.push_back(Ok(e)),
    }
}

impl Stream for Reply {
    type Item = Result<Event, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let mut taken = 0;
        while this.assembler.is_some() && taken < BATCH {
            match this.inner.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    this.last = tokio::time::Instant::now();
                    // As async-openai's own stream: `[DONE]` ends the
                    // reply, keep-alive events are skipped.
                    if event.data == "[DONE]" {
                        this.state.saw_done.store(true, Ordering::Relaxed);
                        this.end();
                    } else if event.event != "keepalive" {
                        this.payload(&event.data);
                    }
                }
                Poll::Ready(Some(Err(e))) => this.stream_error(e),
                Poll::Ready(None) => this.end(),
                Poll::Pending => {
                    if this.out.is_empty() && this.idle_expired(cx) {
                        let url = this.url.clone();
                        let after = this.idle_limit;
                        this.fail(LlmError::Timeout { url, after });
                    }
                    break;
                }
            }
            taken += 1;
        }
        if let Some(item) = this.out.pop_front() {
            return Poll::Ready(Some(item));
        }
        if this.assembler.is_none() {
            return Poll::Ready(None);
        }
        if taken == BATCH {
            // A long burst with nothing to hand over yet: come back soon.
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn reply(payloads: Vec<&str>, done: bool, limits: StreamLimits) -> Reply {
        let items: Vec<Result<bytes::Bytes, std::io::Error>> = payloads
            .into_iter()
            .map(|p| Ok(format!("data: {p}\n\n").into()))
            .chain(done.then(|| Ok("data: [DONE]\n\n".into())))
            .collect();
        let state = Arc::new(ReplyState::default());
        Reply::new(
            Box::pin(futures::stream::iter(items)),
            "http://m/v1/chat/completions".into(),
            state,
            limits,
            Arc::new(vec!["hunter22".into()]),
            Duration::from_secs(5),
        )
    }

    #[tokio::test]
    async fn text_ready_at_once_is_one_event() {
        let r = reply(
            vec![
                r#"{"choices":[{"delta":{"content":"a"}}]}"#,
                r#"{"choices":[{"delta":{"content":"b"}}]}"#,
                r#"{"choices":[{"delta":{"reasoning_content":"r"}}]}"#,
            ],
            true,
            StreamLimits::default(),
        );
        let got: Vec<_> = r.map(Result::unwrap).collect().await;
        assert_eq!(got[0], Event::Text("ab".into()));
        assert_eq!(got[1], Event::Reasoning("r".into()));
        assert!(matches!(&got[2], Event::Done(c) if c.text == "ab"));
    }

    #[tokio::test]
    async fn caps_end_the_reply_with_the_config_key() {
        let limits = StreamLimits {
            max_text_bytes: 3,
            ..StreamLimits::default()
        };
        let r = reply(
            vec![
                r#"{"choices":[{"delta":{"content":"ab"}}]}"#,
                r#"{"choices":[{"delta":{"content":"cd"}}]}"#,
            ],
            true,
            limits,
        );
        let got: Vec<_> = r.collect().await;
        let err = got.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(err.contains("max_reply_text_bytes"), "{err}");
        let limits = StreamLimits {
            max_tool_arguments_bytes: 4,
            ..StreamLimits::default()
        };
        let r = reply(
            vec![
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"p\":1}"}}]}}]}"#,
            ],
            true,
            limits,
        );
        let got: Vec<_> = r.collect().await;
        let err = got.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(err.contains("max_tool_arguments_bytes"), "{err}");
    }

    /// The idle timer on tokio's paused clock: a server that sends one chunk
    /// and then nothing ends the reply with a timeout after exactly the idle
    /// limit, without the test waiting for it.
    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_times_out_after_the_idle_limit() {
        let first: Result<bytes::Bytes, std::io::Error> =
            Ok("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".into());
        let inner = futures::stream::iter([first]).chain(futures::stream::pending());
        let mut r = Reply::new(
            Box::pin(inner),
            "http://m/v1/chat/completions".into(),
            Arc::new(ReplyState::default()),
            StreamLimits::default(),
            Arc::new(Vec::new()),
            Duration::from_secs(300),
        );
        let began = tokio::time::Instant::now();
        assert_eq!(r.next().await.unwrap().unwrap(), Event::Text("a".into()));
        let err = r.next().await.unwrap().unwrap_err();
        assert!(matches!(err, LlmError::Timeout { .. }), "{err}");
        assert_eq!(began.elapsed(), Duration::from_secs(300));
    }

    /// As async-openai's stream did: keep-alive events are skipped, `[DONE]`
    /// ends the reply even when more follows, a failing body interrupts it.
    #[tokio::test]
    async fn keepalives_done_and_a_failing_body() {
        let items: Vec<Result<bytes::Bytes, std::io::Error>> = vec![
            Ok("event: keepalive\ndata: {}\n\n".into()),
            Ok("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".into()),
            Ok("data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n".into()),
        ];
        let state = Arc::new(ReplyState::default());
        let r = Reply::new(
            Box::pin(futures::stream::iter(items)),
            "http://m/v1/chat/completions".into(),
            state.clone(),
            StreamLimits::default(),
            Arc::new(Vec::new()),
            Duration::from_secs(5),
        );
        let got: Vec<_> = r.map(Result::unwrap).collect().await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(matches!(&got[1], Event::Done(c) if c.text == "a"));
        assert!(state.saw_done.load(Ordering::Relaxed));
        let items: Vec<Result<bytes::Bytes, std::io::Error>> = vec![
            Ok("data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n".into()),
            Err(std::io::Error::other("connection reset")),
        ];
        let r = Reply::new(
            Box::pin(futures::stream::iter(items)),
            "http://m/v1/chat/completions".into(),
            Arc::new(ReplyState::default()),
            StreamLimits::default(),
            Arc::new(Vec::new()),
            Duration::from_secs(5),
        );
        let got: Vec<_> = r.collect().await;
        let err = got.last().unwrap().as_ref().unwrap_err().to_string();
        assert!(
            err.contains("dropped mid-reply") && err.contains("connection reset"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_end_without_done_or_finish_is_an_interruption() {
        let r = reply(
            vec![r#"{"choices":[{"delta":{"content":"a"}}]}"#],
            false,
            StreamLimits::default(),
        );
        let got: Vec<_> = r.collect().await;
        assert!(matches!(
            got.last().unwrap(),
            Err(LlmError::Interrupted { .. })
        ));
        let r = reply(
            vec![r#"{"error":{"message":"key hunter22 overloaded"}}"#],
            false,
            StreamLimits::default(),
        );
        let got: Vec<_> = r.collect().await;
        let err = got[0].as_ref().unwrap_err();
        assert!(err.is_retryable());
        assert!(!err.to_string().contains("hunter22"), "{err}");
    }
}
