//! Reads one streamed reply on the model I/O thread ([`super::io`]): SSE
//! framing, chunk decoding and tool-call assembly, feeding a queue the turn
//! reads from.
use std::time::Duration;

use std::future::poll_fn;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::{FutureExt, Stream, StreamExt};
use serde_json::Value;

use super::assemble::{Assembler, Chunk, parse_chunk};
use super::h1;
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
    /// Bytes of the body read so far.
    fed: usize,
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
            fed: 0,
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
        self.fed += bytes.len();
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

/// During a burst, how long a direct reader that found nothing to read
/// sleeps before it waits on the socket (see [`read_body`]).
///
/// Why sleep at all: a model server writes each token as its own small TCP
/// segment. A reader that keeps up takes them one by one, and on loopback
/// each segment then costs the server the receiving side's work too (the
/// reader's wake-up, the queueing, an ACK to process): on 2 cores a fast
/// local server fell to about half its rate against such a reader (issue
/// 7). A reader that sleeps lets the receive window fill; the server's
/// writes then merely append to its send queue, which goes out in 64 KiB
/// segments once the window opens, and one read takes thousands of chunks.
/// Measured (interleaved A/B, 100k-chunk bursts): 100 µs and 500 µs sleeps
/// did not fill the window of a 1 MiB receive buffer at 2 M chunks/s and
/// left the server throttled (0.7–0.8 of a plain client's rate); 1 ms did
/// (1.35–1.6), and cut the agent's CPU per chunk from ~790 ns to ~330 ns.
const BURST_NAP: Duration = Duration::from_millis(1);

/// A wait for data shorter than this means the server sent the next chunk
/// before the reader was ready for it...
const BURST_WAIT: Duration = Duration::from_micros(50);

/// ...and this many such waits in a row make a burst. A paced stream (a
/// model's tokens, or the bench's one per millisecond) waits far longer,
/// and a single short wait after a stall proves nothing: with a looser test
/// (one wait under 200 µs) a 1/ms stream fell into step with the 1 ms nap
/// and its p99 latency went over 1 ms.
const BURST_WAITS: u32 = 8;

/// Replies being read. A nap holds up the whole model I/O thread, so a
/// reader naps only while it is the only one: with two bursts at once their
/// naps would add up (and the other streams would wait them out).
static READING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Counts one reply in [`READING`] while it lives.
struct Reading;

impl Reading {
    fn start() -> Reading {
        READING.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Reading
    }

    fn alone(&self) -> bool {
        READING.load(std::sync::atomic::Ordering::Relaxed) == 1
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        READING.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// How long a complete reply's connection waits for the body's last bytes
/// before it is closed instead of kept for the next request.
const TAIL_WAIT: Duration = Duration::from_millis(100);

/// Tells a burst from a paced stream, for [`BURST_NAP`]: only a burst
/// naps, so a paced chunk is relayed the moment it arrives.
#[derive(Default)]
struct Burst {
    /// Consecutive waits for data shorter than [`BURST_WAIT`].
    short_waits: u32,
    /// `Reply::fed` when the reader last found nothing to read.
    fed_at_wait: usize,
}

impl Burst {
    /// The reader found nothing to read, `fed` bytes into the body: whether
    /// to nap before waiting.
    fn nap(&mut self, fed: usize) -> bool {
        // (A backlog: as much as makes the [`Pacer`] see a burst.)
        let backlog = fed - self.fed_at_wait >= BURST_BYTES;
        self.fed_at_wait = fed;
        backlog || self.short_waits >= BURST_WAITS
    }

    /// Data came after a wait of `waited`.
    fn waited(&mut self, waited: Duration) {
        if waited < BURST_WAIT {
            self.short_waits = self.short_waits.saturating_add(1);
        } else {
            self.short_waits = 0;
        }
    }
}

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

/// A reply's body: through reqwest (hyper), or read directly ([`h1`]).
pub(super) enum Body {
    Hyper(Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>),
    Direct(h1::Body),
}

impl Body {
    pub(super) fn hyper(resp: reqwest::Response) -> Body {
        Body::Hyper(Box::pin(resp.bytes_stream()))
    }

    /// Waits for the next read of the body and feeds it to `reply`:
    /// `Ready(Some(Ok(())))` after a read, `Ready(None)` at the end.
    fn poll_feed(
        &mut self,
        cx: &mut Context<'_>,
        reply: &mut Reply,
    ) -> Poll<Option<Result<(), String>>> {
        match self {
            Body::Hyper(s) => match s.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    reply.feed(&bytes);
                    Poll::Ready(Some(Ok(())))
                }
                Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.to_string()))),
                Poll::Ready(None) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            },
            Body::Direct(b) => b.poll_feed(cx, &mut |bytes| reply.feed(bytes)),
        }
    }

    /// Whether another task of the I/O runtime may hold the next read:
    /// hyper's connection task decodes chunks for this one.
    fn yield_first(&self) -> bool {
        matches!(self, Body::Hyper(_))
    }

    /// Whether a [`Burst`] may nap: only a direct read gains from it (the
    /// hyper path is CPU-bound during a burst, so it never waits).
    fn coalesces(&self) -> bool {
        matches!(self, Body::Direct(_))
    }

    /// The whole body, up to `limit` bytes.
    pub(super) async fn read_to_end(self, limit: usize) -> Result<Vec<u8>, String> {
        match self {
            Body::Hyper(mut s) => {
                let mut all = Vec::new();
                while let Some(part) = s.next().await {
                    let part = part.map_err(|e| e.to_string())?;
                    all.extend_from_slice(&part[..part.len().min(limit - all.len())]);
                    if all.len() >= limit {
                        break;
                    }
                }
                Ok(all)
            }
            Body::Direct(b) => b.read_to_end(limit).await,
        }
    }
}

/// When the turn is woken for what was read. A chunk after a quiet spell
/// wakes it at once; while chunks keep coming, at most once per gap. The
/// gap is [`SIGNAL_GAP`], or [`BURST_GAP`] while the stream is a burst
/// (over [`BURST_BYTES`] since the last wake-up): no one reads text at
/// 200 updates a second, and every update costs the editor a message to
/// parse and render.
struct Pacer {
    signalled: tokio::time::Instant,
    gap: Duration,
    /// `Reply::fed` at the last wake-up.
    fed: usize,
}

/// See [`Pacer`]; [`Burst`] also takes this much read without a wait for
/// a backlog.
const BURST_GAP: Duration = Duration::from_millis(4);
const BURST_BYTES: usize = 16 * 1024;

impl Pacer {
    fn new(now: tokio::time::Instant) -> Pacer {
        Pacer {
            signalled: now.checked_sub(SIGNAL_GAP).unwrap_or(now),
            gap: SIGNAL_GAP,
            fed: 0,
        }
    }

    fn due(&self, now: tokio::time::Instant) -> bool {
        now.duration_since(self.signalled) >= self.gap
    }

    fn next(&self) -> tokio::time::Instant {
        self.signalled + self.gap
    }

    /// The turn was woken at `now`, `fed` bytes into the body.
    fn woke(&mut self, now: tokio::time::Instant, fed: usize) {
        self.gap = if fed - self.fed > BURST_BYTES {
            BURST_GAP
        } else {
            SIGNAL_GAP
        };
        self.signalled = now;
        self.fed = fed;
    }
}

/// Reads a streamed reply's body to its end (or failure, or the idle limit)
/// into `tx`. Dropping the future drops the request.
///
/// When no read is ready, this task first lets the tasks already woken run
/// (hyper's connection task, which decodes the next chunk it has buffered)
/// and reads again; on a direct connection during a [`Burst`], it sleeps
/// for [`BURST_NAP`] instead, so the next read takes many chunks at once.
/// (A blocking sleep: it must not leave the thread in `epoll_wait`, where
/// every segment reaching the socket would wake it. It holds up the model
/// I/O thread for 1 ms, so it is taken only there, never on the fallback
/// of the caller's runtime, and only while no other reply is being read:
/// see [`READING`].) Only when
/// nothing is at hand does it hand over what it has, and wakes the turn as
/// [`Pacer`] says: waking a task on another thread costs more than decoding
/// a chunk.
pub(super) async fn read_body(
    mut body: Body,
    mut reply: Reply,
    idle_limit: Duration,
    tx: Sender,
    redact: impl Fn(LlmError) -> LlmError,
) {
    let mut idle = IdleTimer::new(idle_limit);
    let mut pacer = Pacer::new(idle.last);
    // Queued items the turn was not woken for, and the tick that will.
    let mut owed = false;
    let mut deferred = Box::pin(tokio::time::sleep_until(idle.last));
    let mut burst = Burst::default();
    let reading = Reading::start();
    let may_nap = body.coalesces() && super::io::on_io_thread();
    while !reply.done() {
        let mut read = poll_fn(|cx| body.poll_feed(cx, &mut reply)).now_or_never();
        if read.is_none() && body.yield_first() {
            YieldOnce(false).await;
            read = poll_fn(|cx| body.poll_feed(cx, &mut reply)).now_or_never();
        }
        let read = match read {
            Some(read) => {
                if pacer.due(idle.last) && reply.flush(&tx, &redact) {
                    // A sustained backlog.
                    tx.signal();
                    pacer.woke(idle.last, reply.fed);
                    owed = false;
                }
                Some(read)
            }
            None => {
                owed |= reply.flush(&tx, &redact);
                let now = tokio::time::Instant::now();
                if owed && pacer.due(now) {
                    tx.signal();
                    pacer.woke(now, reply.fed);
                    owed = false;
                } else if owed && deferred.deadline() != pacer.next() {
                    // (Re-arming the same deadline would cost a timer-wheel
                    // update per chunk.)
                    deferred.as_mut().reset(pacer.next());
                }
                if burst.nap(reply.fed) && may_nap && reading.alone() {
                    std::thread::sleep(BURST_NAP);
                }
                let waiting = std::time::Instant::now();
                let read = loop {
                    tokio::select! {
                        biased;
                        read = poll_fn(|cx| body.poll_feed(cx, &mut reply)) => break Some(read),
                        () = idle.expired() => break None,
                        () = deferred.as_mut(), if owed => {
                            tx.signal();
                            pacer.woke(tokio::time::Instant::now(), reply.fed);
                            owed = false;
                        }
                    }
                };
                burst.waited(waiting.elapsed());
                read
            }
        };
        match read {
            None => reply.fail(LlmError::Timeout {
                url: reply.url.clone(),
                after: idle_limit,
            }),
            Some(Some(Ok(()))) => idle.touch(),
            Some(None) => reply.end(),
            Some(Some(Err(reason))) => reply.fail(LlmError::Interrupted {
                url: reply.url.clone(),
                reason,
            }),
        }
    }
    reply.flush(&tx, &redact);
    // Dropping `tx` wakes the receiver for the last items and the end.
    drop(tx);
    drop(reading);
    if let Body::Direct(b) = body
        && !b.finished()
    {
        // On a task of its own: the turn drops this one (aborting it) as
        // soon as it has the end.
        tokio::spawn(b.finish(TAIL_WAIT));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_stream_never_naps() {
        let mut b = Burst::default();
        let mut fed = 0;
        for i in 0..1000 {
            // One ~250-byte chunk per read, mostly 1 ms apart; now and then
            // the reader was late and the next chunk came at once.
            fed += 250;
            assert!(!b.nap(fed));
            let late = i % 5 == 0;
            b.waited(if late {
                Duration::from_micros(10)
            } else {
                Duration::from_millis(1)
            });
        }
    }

    #[test]
    fn back_to_back_data_naps_until_the_stream_pauses() {
        let mut b = Burst::default();
        let mut fed = 0;
        for _ in 0..BURST_WAITS {
            fed += 250;
            assert!(!b.nap(fed), "the first chunks go out at once");
            b.waited(Duration::from_micros(2));
        }
        fed += 250;
        assert!(b.nap(fed), "chunks keep coming back to back: a burst");
        b.waited(Duration::ZERO);
        fed += 80_000;
        assert!(b.nap(fed));
        b.waited(Duration::from_millis(20));
        fed += 250;
        assert!(!b.nap(fed), "a pause ends the burst");
    }

    #[test]
    fn a_large_read_without_a_wait_is_a_burst() {
        let mut b = Burst::default();
        assert!(b.nap(BURST_BYTES), "a backlog read in one go");
        b.waited(Duration::from_millis(5));
        assert!(!b.nap(BURST_BYTES + 250));
    }
}
