//! Output accumulation: decoding per stream (UTF-8, or the console's code
//! page on Windows: [`crate::platform::console`]), tail buffer, streaming.
use tokio::time::Instant;

use crate::platform::console::Decoder;

use super::{CommandResult, FLUSH_BYTES, FLUSH_INTERVAL, Stream};

pub(super) struct Output {
    limit: usize,
    /// Tail of the output; may exceed `limit` by up to `slack()` between
    /// compactions.
    tail: String,
    /// Bytes of text produced so far.
    total: u64,
    /// Text not yet handed to `on_output`.
    pending: String,
    last_flush: Option<Instant>,
    /// The text of each stream so far (a character cut at the end of the
    /// last read waits there).
    decoders: [Decoder; 2],
    /// The tail of each stream alone.
    streams: [String; 2],
}

impl Output {
    pub(super) fn new(limit: usize) -> Self {
        Output {
            limit,
            tail: String::new(),
            total: 0,
            pending: String::new(),
            last_flush: None,
            decoders: [Decoder::new(), Decoder::new()],
            streams: [String::new(), String::new()],
        }
    }

    pub(super) fn slack(&self) -> usize {
        self.limit.max(64 * 1024)
    }

    pub(super) fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let mut text = String::with_capacity(bytes.len() + 4);
        self.decoders[stream as usize].push(bytes, &mut text);
        self.append_to(stream, &text);
        self.append(&text);
    }

    fn append_to(&mut self, stream: Stream, text: &str) {
        let own = &mut self.streams[stream as usize];
        own.push_str(text);
        if own.len() > self.limit + self.limit.max(64 * 1024) {
            keep_tail(own, self.limit);
        }
    }

    pub(super) fn end(&mut self, stream: Stream) {
        let mut text = String::new();
        self.decoders[stream as usize].finish(&mut text);
        if !text.is_empty() {
            self.append_to(stream, &text);
        }
        self.append(&text);
    }

    pub(super) fn append(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        self.total += text.len() as u64;
        self.pending.push_str(text);
        self.tail.push_str(text);
        if self.tail.len() > self.limit + self.slack() {
            keep_tail(&mut self.tail, self.limit);
        }
    }

    /// When pending text must be handed out at the latest.
    pub(super) fn flush_at(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(match self.last_flush {
            Some(t) => t + FLUSH_INTERVAL,
            None => Instant::now(),
        })
    }

    pub(super) fn flush_due(&self) -> bool {
        self.pending.len() >= FLUSH_BYTES || self.flush_at().is_some_and(|t| t <= Instant::now())
    }

    pub(super) fn flush(&mut self, sink: &mut (dyn FnMut(&str) + Send)) {
        if !self.pending.is_empty() {
            sink(&self.pending);
            self.pending.clear();
            self.last_flush = Some(Instant::now());
        }
    }

    pub(super) fn fill(&mut self, result: &mut CommandResult) {
        for stream in [Stream::Out, Stream::Err] {
            self.end(stream);
        }
        keep_tail(&mut self.tail, self.limit);
        result.output = std::mem::take(&mut self.tail);
        let [mut out, mut err] = std::mem::take(&mut self.streams);
        keep_tail(&mut out, self.limit);
        keep_tail(&mut err, self.limit);
        (result.stdout, result.stderr) = (out, err);
        result.truncated_bytes = self.total - result.output.len() as u64;
    }
}

/// Keep at most the last `limit` bytes of `s`, starting at a char boundary.
pub(super) fn keep_tail(s: &mut String, limit: usize) {
    if s.len() <= limit {
        return;
    }
    let start = crate::utf8::ceil_boundary(s, s.len() - limit);
    s.drain(..start);
}
