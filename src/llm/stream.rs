//! Reads one streamed reply on the model I/O thread ([`super::io`]): SSE
//! framing, chunk decoding and tool-call assembly, feeding a queue the turn
//! reads from.
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::Value;

use super::assemble::{Assembler, Chunk, parse_chunk};
use super::io::Sender;
use super::sse::SseDecoder;
use super::{Event, LlmError};

/// The stream's idle timeout. A `tokio::time::timeout` around every read
/// registered and removed a timer per chunk (perf: ~7 % of a fast stream's
/// CPU); this is one sleep for the whole stream, pushed back only when it
/// fires early, so a chunk costs one clock read.
struct IdleTimer {
    limit: Duration,
    last: tokio::time::Instant,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl IdleTimer {
    fn new(limit: Duration) -> Self {
        let now = tokio::time::Instant::now();
        IdleTimer {
            limit,
            last: now,
            sleep: Box::pin(tokio::time::sleep_until(now + limit)),
        }
    }

    /// Data arrived.
    fn touch(&mut self) {
        self.last = tokio::time::Instant::now();
    }

    /// Resolves once `limit` has passed since the last `touch`.
    async fn expired(&mut self) {
        loop {
            self.sleep.as_mut().await;
            let deadline = self.last + self.limit;
            if tokio::time::Instant::now() >= deadline {
                return;
            }
            self.sleep.as_mut().reset(deadline);
        }
    }
}

/// Appends text to the last event if it is text of the same kind.
fn push_text(out: &mut Vec<Result<Event, LlmError>>, reasoning: bool, t: &str) {
    match (out.last_mut(), reasoning) {
        (Some(Ok(Event::Text(last))), false) | (Some(Ok(Event::Reasoning(last))), true) => {
            last.push_str(t);
        }
        _ => out.push(Ok(if reasoning {
            Event::Reasoning(t.to_owned())
        } else {
            Event::Text(t.to_owned())
        })),
    }
}

/// What one reply's reading has assembled so far.
pub(super) struct Reply {
    url: String,
    decoder: SseDecoder,
    /// `None` once the reply is complete or failed.
    assembler: Option<Assembler>,
    /// Events not yet handed to the queue (text merged), handed over together.
    out: Vec<Result<Event, LlmError>>,
    events: Vec<Event>,
    /// The shape of the last text chunk, to read the next ones faster.
    template: super::fastchunk::Template,
}

impl Reply {
    pub(super) fn new(url: String) -> Reply {
        Reply {
            url,
            decoder: SseDecoder::default(),
            assembler: Some(Assembler::default()),
            out: Vec::new(),
            events: Vec::new(),
            template: super::fastchunk::Template::default(),
        }
    }

    /// Handles one SSE payload (or a whole JSON reply); returns true once the
    /// reply is complete or failed.
    pub(super) fn payload(&mut self, data: &str) -> bool {
        let data = data.trim();
        if data.is_empty() {
            return false;
        }
        if data == "[DONE]" {
            self.complete();
            return true;
        }
        if let Some(text) = self.template.content(data) {
            if let Some(a) = self.assembler.as_mut() {
                let out = &mut self.out;
                a.push_content(&text, |t| push_text(out, false, t));
            }
            return false;
        }
        if let Some(fast) = super::fastchunk::parse(data) {
            self.template.learn(data, &fast);
            if let Some(a) = self.assembler.as_mut() {
                let out = &mut self.out;
                a.push_text_chunk(&fast, |reasoning, t| push_text(out, reasoning, t));
            }
            return false;
        }
        let chunk: Chunk = match parse_chunk(data) {
            Ok(c) => c,
            Err(e) => {
                let excerpt: String = data.chars().take(120).collect();
                self.fail(LlmError::Decode {
                    url: self.url.clone(),
                    reason: format!("{e} in data line {excerpt:?}"),
                });
                return true;
            }
        };
        if let Some(err) = &chunk.error {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| err.to_string());
            self.fail(LlmError::Api {
                url: self.url.clone(),
                message,
            });
            return true;
        }
        if let Some(a) = self.assembler.as_mut() {
            a.push(chunk, &mut self.events);
            for e in self.events.drain(..) {
                match e {
                    Event::Text(t) => push_text(&mut self.out, false, &t),
                    Event::Reasoning(t) => push_text(&mut self.out, true, &t),
                    e => self.out.push(Ok(e)),
                }
            }
        }
        false
    }

    /// Feeds one read of the body.
    fn feed(&mut self, bytes: &[u8]) {
        let mut decoder = std::mem::take(&mut self.decoder);
        decoder.feed_with(bytes, |data| self.payload(data));
        self.decoder = decoder;
    }

    /// The body ended.
    fn end(&mut self) {
        if let Some(data) = self.decoder.finish()
            && self.payload(&data)
        {
            return;
        }
        if self.assembler.as_ref().is_some_and(Assembler::saw_finish) {
            self.complete();
        } else {
            self.fail(LlmError::Interrupted {
                url: self.url.clone(),
                reason: "the stream ended before the reply was complete".into(),
            });
        }
    }

    pub(super) fn complete(&mut self) {
        if let Some(a) = self.assembler.take() {
            self.out.push(Ok(Event::Done(a.finish())));
        }
    }

    fn fail(&mut self, err: LlmError) {
        if self.assembler.take().is_some() {
            self.out.push(Err(err));
        }
    }

    pub(super) fn done(&self) -> bool {
        self.assembler.is_none()
    }

    /// Hands what was read to the queue, errors redacted, without waking the
    /// receiver (see [`Sender::queue`]); false if there was nothing.
    pub(super) fn flush(&mut self, tx: &Sender, redact: impl Fn(LlmError) -> LlmError) -> bool {
        if self.out.is_empty() {
            return false;
        }
        for item in &mut self.out {
            if let Err(e) = item {
                // At most one error per reply: the clone is not on a hot path.
                *e = redact(e.clone());
            }
        }
        tx.queue(&mut self.out);
        true
    }
}

/// The least time between two wake-ups of the turn while text keeps coming:
/// what a burst or a backlog of chunks gathers into one batch. A chunk
/// after a quiet spell is handed over at once, and a deferred hand-over
/// waits for the next timer tick (≤ 1 ms), so a user sees no difference;
/// the turn's runtime, the relay and the editor wake a few thousand times a
/// second at most instead of once per chunk.
const SIGNAL_GAP: Duration = Duration::from_micros(500);

/// Returns `Pending` once after waking itself: the task goes to the back of
/// the run queue, behind the tasks already woken, without the I/O driver
/// poll that `tokio::task::yield_now` waits for on a current-thread runtime
/// (perf: an `epoll_wait` per chunk).
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// Reads a streamed reply's body to its end (or failure, or the idle limit)
/// into `tx`. Dropping the future drops the request.
///
/// When no read is ready, this task first lets the tasks already woken run
/// (hyper's connection task, which decodes the next chunk it has buffered)
/// and reads again. Only when nothing is at hand does it hand over what it
/// has, and wakes the turn at most once per [`SIGNAL_GAP`]: waking a task
/// on another thread costs more than decoding a chunk.
pub(super) async fn read_body(
    resp: reqwest::Response,
    mut reply: Reply,
    idle_limit: Duration,
    tx: Sender,
    redact: impl Fn(LlmError) -> LlmError,
) {
    let mut body = resp.bytes_stream();
    let mut idle = IdleTimer::new(idle_limit);
    let mut signalled = idle.last.checked_sub(SIGNAL_GAP).unwrap_or(idle.last);
    // Queued items the turn was not woken for, and the tick that will.
    let mut owed = false;
    let mut deferred = Box::pin(tokio::time::sleep_until(idle.last));
    while !reply.done() {
        let mut read = body.next().now_or_never();
        if read.is_none() {
            YieldOnce(false).await;
            read = body.next().now_or_never();
        }
        let read = match read {
            Some(read) => {
                if idle.last.duration_since(signalled) >= SIGNAL_GAP && reply.flush(&tx, &redact) {
                    // A sustained backlog.
                    tx.signal();
                    signalled = idle.last;
                    owed = false;
                }
                Some(read)
            }
            None => {
                owed |= reply.flush(&tx, &redact);
                let now = tokio::time::Instant::now();
                if owed && now.duration_since(signalled) >= SIGNAL_GAP {
                    tx.signal();
                    signalled = now;
                    owed = false;
                } else if owed && deferred.deadline() != signalled + SIGNAL_GAP {
                    // (Re-arming the same deadline would cost a timer-wheel
                    // update per chunk.)
                    deferred.as_mut().reset(signalled + SIGNAL_GAP);
                }
                loop {
                    tokio::select! {
                        biased;
                        read = body.next() => break Some(read),
                        () = idle.expired() => break None,
                        () = deferred.as_mut(), if owed => {
                            tx.signal();
                            signalled = tokio::time::Instant::now();
                            owed = false;
                        }
                    }
                }
            }
        };
        match read {
            None => reply.fail(LlmError::Timeout {
                url: reply.url.clone(),
                after: idle_limit,
            }),
            Some(Some(Ok(bytes))) => {
                idle.touch();
                reply.feed(&bytes);
            }
            Some(None) => reply.end(),
            Some(Some(Err(e))) => reply.fail(LlmError::Interrupted {
                url: reply.url.clone(),
                reason: e.to_string(),
            }),
        }
    }
    reply.flush(&tx, &redact);
    // Dropping `tx` wakes the receiver for the last items and the end.
}
