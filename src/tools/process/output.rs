//! Output accumulation: UTF-8 decoding per stream, tail buffer, streaming.
use tokio::time::Instant;

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
    /// Incomplete UTF-8 sequence at the end of the last read, per stream.
    carry: [Vec<u8>; 2],
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
            carry: [Vec::new(), Vec::new()],
            streams: [String::new(), String::new()],
        }
    }

    pub(super) fn slack(&self) -> usize {
        self.limit.max(64 * 1024)
    }

    pub(super) fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let mut text = String::with_capacity(bytes.len() + 4);
        decode_utf8(&mut self.carry[stream as usize], bytes, &mut text);
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
        let carry = std::mem::take(&mut self.carry[stream as usize]);
        if !carry.is_empty() {
            let text = String::from_utf8_lossy(&carry).into_owned();
            self.append_to(stream, &text);
            self.append(&text);
        }
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

/// Decode `carry ++ bytes` into `out`, replacing invalid sequences with
/// U+FFFD and leaving an incomplete trailing sequence in `carry`.
pub(super) fn decode_utf8(carry: &mut Vec<u8>, bytes: &[u8], out: &mut String) {
    carry.extend_from_slice(bytes);
    let mut i = 0;
    while i < carry.len() {
        match std::str::from_utf8(&carry[i..]) {
            Ok(text) => {
                out.push_str(text);
                i = carry.len();
            }
            Err(err) => {
                let valid = err.valid_up_to();
                out.push_str(std::str::from_utf8(&carry[i..i + valid]).unwrap_or_default());
                i += valid;
                match err.error_len() {
                    Some(bad) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        i += bad;
                    }
                    None => break, // incomplete: wait for more bytes
                }
            }
        }
    }
    carry.drain(..i);
}
