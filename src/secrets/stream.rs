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
    ///
    /// With secrets known, a clean chunk with nothing held is also passed on
    /// without a copy (less what it must hold back): one redactor look-up
    /// and one substring search per chunk (issue 15: the streamed chunk's
    /// CPU time).
    pub fn push_string(&mut self, mut chunk: String) -> String {
        if !self.held.is_empty() {
            return self.push(&chunk);
        }
        let r = current();
        if r.is_empty() {
            return chunk;
        }
        let keep = r.partial_suffix(&chunk);
        let cut = chunk.len() - keep;
        if r.found_in(&chunk[..cut]) {
            self.held.push_str(&chunk[cut..]);
            return r.redact(&chunk[..cut]).into_owned();
        }
        self.held.push_str(&chunk[cut..]);
        chunk.truncate(cut);
        chunk
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

    /// The owned path (the relay's) gives what `push` gives, byte for byte.
    #[test]
    fn owned_chunks_are_redacted_like_borrowed_ones() {
        super::super::learn(["sk-owned-split-0123456789".to_owned()]);
        let text = "a sk-owned-split-0123456789 b sk-owned c é sk-owned-split-0123456789";
        for size in [1, 2, 3, 5, 8, 13, 100] {
            let (mut a, mut b) = (StreamRedactor::default(), StreamRedactor::default());
            let (mut out_a, mut out_b) = (String::new(), String::new());
            let mut rest = text;
            while !rest.is_empty() {
                let cut = crate::utf8::floor_boundary(rest, size).max(1);
                let cut = (cut..=rest.len())
                    .find(|&i| rest.is_char_boundary(i))
                    .unwrap_or(rest.len());
                let (piece, tail) = rest.split_at(cut);
                let got = a.push_string(piece.to_owned());
                assert!(!got.contains("sk-owned-split"), "{got}");
                out_a.push_str(&got);
                out_b.push_str(&b.push(piece));
                rest = tail;
            }
            out_a.push_str(&a.finish());
            out_b.push_str(&b.finish());
            assert_eq!(out_a, out_b, "chunks of {size}");
            assert_eq!(out_a, "a [redacted] b sk-owned c é [redacted]");
        }
    }
}
