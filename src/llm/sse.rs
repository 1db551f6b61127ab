//! Server-sent events: `data:` lines joined per event, events end at a blank line.
//! Comments (`:`) and other fields are ignored; `\r\n` and `\n` both end lines.

#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The unfinished line of the last read.
    buf: Vec<u8>,
    /// Data of an event that spans reads or has several `data:` lines.
    data: String,
    has_data: bool,
}

/// What a line is, for the decoder.
enum Line<'a> {
    Blank,
    Data(&'a str),
    Other,
}

fn classify(line: &str) -> Line<'_> {
    if line.is_empty() {
        return Line::Blank;
    }
    if line.starts_with(':') {
        return Line::Other;
    }
    let (field, value) = match line.split_once(':') {
        Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
        None => (line, ""),
    };
    if field == "data" {
        Line::Data(value)
    } else {
        Line::Other
    }
}

impl SseDecoder {
    /// Feeds bytes; returns the complete events' data payloads.
    #[cfg(test)]
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        self.feed_with(bytes, |data| {
            events.push(data.to_owned());
            false
        });
        events
    }

    /// Feeds bytes, calling `on_event` with each complete event's data until
    /// it returns true (the rest of `bytes` is then dropped).
    ///
    /// This runs for every chunk a model streams, so it copies nothing in the
    /// usual case: an event that is one `data:` line within this read is
    /// handed over borrowed from `bytes`, and lines are only validated as
    /// UTF-8, not copied. Events spanning reads or lines are assembled.
    pub fn feed_with(&mut self, bytes: &[u8], mut on_event: impl FnMut(&str) -> bool) {
        // The current event's data while it is still one borrowed line.
        let mut pending: Option<&str> = None;
        let mut rest = bytes;
        if !self.buf.is_empty() {
            // Complete the line the last read ended in.
            let Some(pos) = memchr::memchr(b'\n', rest) else {
                self.buf.extend_from_slice(rest);
                return;
            };
            let mut head = std::mem::take(&mut self.buf);
            head.extend_from_slice(&rest[..pos]);
            rest = &rest[pos + 1..];
            let stop = match classify(&decode_line(&head)) {
                Line::Blank => self.end_event(&mut pending, &mut on_event),
                Line::Data(v) => {
                    self.push_data(&mut pending, v);
                    false
                }
                Line::Other => false,
            };
            head.clear();
            self.buf = head;
            if stop {
                return;
            }
        }
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            let line = decode_line(&rest[..pos]);
            rest = &rest[pos + 1..];
            let stop = match &line {
                std::borrow::Cow::Borrowed(l) => match classify(l) {
                    Line::Blank => self.end_event(&mut pending, &mut on_event),
                    Line::Data(v) if pending.is_none() && !self.has_data => {
                        pending = Some(v);
                        false
                    }
                    Line::Data(v) => {
                        self.push_data(&mut pending, v);
                        false
                    }
                    Line::Other => false,
                },
                std::borrow::Cow::Owned(l) => match classify(l) {
                    Line::Blank => self.end_event(&mut pending, &mut on_event),
                    Line::Data(v) => {
                        self.push_data(&mut pending, v);
                        false
                    }
                    Line::Other => false,
                },
            };
            if stop {
                return;
            }
        }
        if let Some(p) = pending {
            // The event goes on in the next read.
            self.data.push_str(p);
            self.has_data = true;
        }
        self.buf.extend_from_slice(rest);
    }

    /// Appends a `data:` line to the event being assembled.
    fn push_data(&mut self, pending: &mut Option<&str>, value: &str) {
        if let Some(p) = pending.take() {
            self.data.push_str(p);
            self.has_data = true;
        }
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(value);
        self.has_data = true;
    }

    /// A blank line: the event (if any) is complete.
    fn end_event(
        &mut self,
        pending: &mut Option<&str>,
        on_event: &mut impl FnMut(&str) -> bool,
    ) -> bool {
        if let Some(p) = pending.take() {
            return on_event(p);
        }
        if self.has_data {
            self.has_data = false;
            let data = std::mem::take(&mut self.data);
            return on_event(&data);
        }
        false
    }

    /// Flushes a last event not followed by a blank line (some servers do that).
    pub fn finish(&mut self) -> Option<String> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            if let Line::Data(v) = classify(&decode_line(&rest)) {
                let mut none = None;
                self.push_data(&mut none, v);
            }
        }
        self.has_data.then(|| {
            self.has_data = false;
            std::mem::take(&mut self.data)
        })
    }
}

/// A line without its `\r`, as text: borrowed unless it is not UTF-8.
fn decode_line(line: &[u8]) -> std::borrow::Cow<'_, str> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_reads() {
        let mut d = SseDecoder::default();
        assert!(d.feed(b"data: {\"a\"").is_empty());
        assert_eq!(
            d.feed(b":1}\r\n\r\n: comment\n\nevent: x\ndata: two\ndata: lines\n\n"),
            vec!["{\"a\":1}", "two\nlines"]
        );
        assert_eq!(d.feed(b"data:[DONE]"), Vec::<String>::new());
        assert_eq!(d.finish().as_deref(), Some("[DONE]"));
    }

    #[test]
    fn any_split_of_a_stream_gives_the_same_events() {
        let stream = "data: {\"a\":\"\u{e9}t\u{e9}\"}\r\n\r\n: c\ndata: x\ndata: y\n\ndata: z\n\n"
            .as_bytes();
        let whole = SseDecoder::default().feed(stream);
        assert_eq!(whole, vec!["{\"a\":\"\u{e9}t\u{e9}\"}", "x\ny", "z"]);
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let mut d = SseDecoder::default();
                let mut got = d.feed(&stream[..cut]);
                got.extend(d.feed(&stream[cut..cut2]));
                got.extend(d.feed(&stream[cut2..]));
                assert_eq!(got, whole, "cut at {cut} and {cut2}");
            }
        }
    }
}
