//! Redaction of text that arrives in pieces (a model's streamed reply): a
//! secret split over two chunks must not go out half in each frame.
use super::current;

/// Holds back the end of the text seen so far while it could be the start of
/// a secret, and redacts what it lets through. Call [`StreamRedactor::finish`]
/// when the stream ends to get what is still held.
#[derive(Debug, Default)]
pub struct StreamRedactor {
    held: String,
}

impl StreamRedactor {
    /// [`StreamRedactor::push`] of an owned chunk: with no secret known and
    /// nothing held (a streamed reply's usual case) the chunk itself, not a
    /// copy.
    pub fn push_string(&mut self, chunk: String) -> String {
        if self.held.is_empty() && current().is_empty() {
            return chunk;
        }
        self.push(&chunk)
    }

    /// The part of `held + chunk` that can be shown now, redacted. Empty when
    /// everything so far could still be the start of a secret.
    pub fn push(&mut self, chunk: &str) -> String {
        let r = current();
        if r.is_empty() {
            if self.held.is_empty() {
                return chunk.to_owned();
            }
            let mut out = std::mem::take(&mut self.held);
            out.push_str(chunk);
            return out;
        }
        if self.held.is_empty() {
            // The usual case: nothing pending, one allocation.
            let keep = r.partial_suffix(chunk);
            let (now, later) = chunk.split_at(chunk.len() - keep);
            self.held.push_str(later);
            return r.redact(now).into_owned();
        }
        let mut text = std::mem::take(&mut self.held);
        text.push_str(chunk);
        let keep = r.partial_suffix(&text);
        self.held = text.split_off(text.len() - keep);
        r.redact(&text).into_owned()
    }

    /// Whatever is still held, redacted (the stream ended: it was no secret).
    pub fn finish(&mut self) -> String {
        let text = std::mem::take(&mut self.held);
        super::redact_string(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_split_over_chunks_never_goes_out() {
        super::super::learn(["sk-stream-split-0123456789".to_owned()]);
        let mut s = StreamRedactor::default();
        let mut out = String::new();
        for chunk in [
            "the key is sk-str",
            "eam-split-01",
            "23456789 and more s",
            "k-",
        ] {
            let got = s.push(chunk);
            assert!(!got.contains("sk-str"), "{got}");
            out.push_str(&got);
        }
        out.push_str(&s.finish());
        assert_eq!(out, "the key is [redacted] and more sk-");
        // Every byte at a time, with multi-byte text around it.
        let text = "é sk-stream-split-0123456789 ü";
        let mut out = String::new();
        for c in text.chars() {
            out.push_str(&s.push(&c.to_string()));
        }
        out.push_str(&s.finish());
        assert_eq!(out, "é [redacted] ü");
    }
}
