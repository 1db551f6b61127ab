//! Server-sent events: `data:` lines joined per event, events end at a blank line.
//! Comments (`:`) and other fields are ignored; `\r\n` and `\n` both end lines.

#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// Feeds bytes; returns the complete events' data payloads.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            self.line(&line, &mut events);
        }
        self.buf.drain(..start);
        events
    }

    /// Flushes a last event not followed by a blank line (some servers do that).
    pub fn finish(&mut self) -> Option<String> {
        if !self.buf.is_empty() {
            let rest = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            let mut ignored = Vec::new();
            self.line(rest.trim_end_matches('\r'), &mut ignored);
        }
        self.has_data.then(|| {
            self.has_data = false;
            std::mem::take(&mut self.data)
        })
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) {
        if line.is_empty() {
            if self.has_data {
                events.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
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
}
