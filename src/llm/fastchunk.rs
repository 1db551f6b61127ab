//! The hot path of chunk decoding: a scanner for the shape nearly every
//! streamed chunk has, one choice whose delta carries text.
//!
//! Why not serde: perf of a fast stream put a third of the reading thread's
//! time in serde_json's generic machinery for this shape (visiting every
//! field of `id`, `object`, `created`… and allocating each string). This
//! borrows the text when it has no escapes and skips what it does not need.
//! Anything else (tool calls, usage, errors, several choices, `message`,
//! content parts, escapes in keys, malformed JSON) returns `None` and goes
//! through [`super::assemble::parse_chunk`], which is the reference: the
//! tests check both agree.
use std::borrow::Cow;

/// What a text chunk carries.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct TextChunk<'a> {
    pub content: Option<Cow<'a, str>>,
    pub reasoning_content: Option<Cow<'a, str>>,
    pub reasoning: Option<Cow<'a, str>>,
    pub refusal: Option<Cow<'a, str>>,
    pub finish_reason: Option<Cow<'a, str>>,
    /// Where the `content` string token is in the data.
    pub content_at: Option<std::ops::Range<usize>>,
}

impl TextChunk<'_> {
    /// Only `content` (and no finish reason): a chunk whose bytes around
    /// the content can be a [`Template`].
    fn content_only(&self) -> bool {
        self.content.is_some()
            && self.reasoning_content.is_none()
            && self.reasoning.is_none()
            && self.refusal.is_none()
            && self.finish_reason.is_none()
    }
}

/// The bytes around the content of the last content-only chunk.
///
/// Within one reply, servers repeat everything but the text (`id`,
/// `created`, `model`… are the same in every chunk), so a chunk that is
/// the last one's prefix, one JSON string, and its suffix parses as the
/// last one did with that string as its content: the rest of the text is
/// identical, and swapping one string token for another keeps JSON valid
/// and its structure unchanged. That costs two `memcmp`s instead of a scan.
#[derive(Debug, Default)]
pub(super) struct Template {
    prefix: String,
    suffix: String,
}

impl Template {
    /// The content of `data` if it fits the template.
    pub(super) fn content<'a>(&self, data: &'a str) -> Option<Cow<'a, str>> {
        if self.prefix.is_empty()
            || data.len() <= self.prefix.len() + self.suffix.len()
            || !data.starts_with(&self.prefix)
            || !data.ends_with(&self.suffix)
        {
            return None;
        }
        let token = data.get(self.prefix.len()..data.len() - self.suffix.len())?;
        let mut c = Cursor {
            s: token,
            b: token.as_bytes(),
            i: 0,
        };
        let text = c.string()?;
        (c.i == token.len()).then_some(text)
    }

    /// Remembers `data`'s shape if `chunk` (read from it) is content-only.
    pub(super) fn learn(&mut self, data: &str, chunk: &TextChunk<'_>) {
        if let (true, Some(at)) = (chunk.content_only(), &chunk.content_at) {
            self.prefix.clear();
            self.prefix.push_str(&data[..at.start]);
            self.suffix.clear();
            self.suffix.push_str(&data[at.end..]);
        }
    }
}

/// Reads `data` if it is a chunk of the common shape; `None` otherwise.
pub(super) fn parse(data: &str) -> Option<TextChunk<'_>> {
    let mut c = Cursor {
        s: data,
        b: data.as_bytes(),
        i: 0,
    };
    let mut out = TextChunk::default();
    let mut seen_choices = false;
    c.eat(b'{')?;
    if !c.eat_if(b'}') {
        loop {
            let key = c.key()?;
            c.eat(b':')?;
            match key {
                "choices" if !seen_choices => {
                    seen_choices = true;
                    choices(&mut c, &mut out)?;
                }
                "choices" => return None,
                // Present and not null: the full decoder's business.
                "usage" | "error" => c.null()?,
                _ => c.skip_value(0)?,
            }
            if c.eat_if(b',') {
                continue;
            }
            c.eat(b'}')?;
            break;
        }
    }
    c.ws();
    (c.i == c.b.len()).then_some(out)
}

fn choices<'a>(c: &mut Cursor<'a>, out: &mut TextChunk<'a>) -> Option<()> {
    c.eat(b'[')?;
    if c.eat_if(b']') {
        return Some(());
    }
    c.eat(b'{')?;
    let mut seen = [false; 2];
    if !c.eat_if(b'}') {
        loop {
            let key = c.key()?;
            c.eat(b':')?;
            match key {
                "delta" if !seen[0] => {
                    seen[0] = true;
                    if c.peek()? == b'n' {
                        c.null()?;
                    } else {
                        delta(c, out)?;
                    }
                }
                "finish_reason" if !seen[1] => {
                    seen[1] = true;
                    out.finish_reason = c.null_or_string()?;
                }
                "delta" | "finish_reason" | "message" => return None,
                _ => c.skip_value(0)?,
            }
            if c.eat_if(b',') {
                continue;
            }
            c.eat(b'}')?;
            break;
        }
    }
    // A second choice is rare enough for the full decoder.
    c.eat(b']')
}

fn delta<'a>(c: &mut Cursor<'a>, out: &mut TextChunk<'a>) -> Option<()> {
    c.eat(b'{')?;
    if c.eat_if(b'}') {
        return Some(());
    }
    loop {
        let key = c.key()?;
        c.eat(b':')?;
        let slot = match key {
            "content" => {
                if out.content.is_some() {
                    return None;
                }
                let start = {
                    c.ws();
                    c.i
                };
                out.content = c.null_or_string()?;
                out.content_at = Some(start..c.i);
                None
            }
            "reasoning_content" => Some(&mut out.reasoning_content),
            "reasoning" => Some(&mut out.reasoning),
            "refusal" => Some(&mut out.refusal),
            "tool_calls" => {
                c.null()?;
                None
            }
            _ => {
                c.skip_value(0)?;
                None
            }
        };
        if let Some(slot) = slot {
            if slot.is_some() {
                return None; // a duplicate key
            }
            *slot = c.null_or_string()?;
        }
        if c.eat_if(b',') {
            continue;
        }
        return c.eat(b'}');
    }
}

/// Deeper than this, the full decoder decides.
const MAX_DEPTH: u32 = 32;

struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat_if(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        if hit {
            self.i += 1;
        }
        hit
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        self.eat_if(byte).then_some(())
    }

    fn literal(&mut self, word: &str) -> Option<()> {
        self.ws();
        let hit = self.b[self.i..].starts_with(word.as_bytes());
        hit.then(|| self.i += word.len())
    }

    fn null(&mut self) -> Option<()> {
        self.literal("null")
    }

    /// The end of the string starting at `self.i` (a `"`), and whether it
    /// has escapes; `None` if it is unterminated or holds a control byte.
    fn string_end(&self) -> Option<(usize, bool)> {
        let mut j = self.i + 1;
        let mut escaped = false;
        loop {
            match *self.b.get(j)? {
                b'"' => return Some((j, escaped)),
                b'\\' => {
                    escaped = true;
                    j += 2;
                }
                0..0x20 => return None,
                _ => j += 1,
            }
        }
    }

    fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let (end, escaped) = self.string_end()?;
        let start = self.i;
        self.i = end + 1;
        if escaped {
            serde_json::from_str::<String>(self.s.get(start..=end)?)
                .ok()
                .map(Cow::Owned)
        } else {
            self.s.get(start + 1..end).map(Cow::Borrowed)
        }
    }

    /// A key without escapes.
    fn key(&mut self) -> Option<&'a str> {
        match self.string()? {
            Cow::Borrowed(k) => Some(k),
            Cow::Owned(_) => None,
        }
    }

    fn null_or_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.peek()? == b'n' {
            self.null()?;
            return Some(None);
        }
        self.string().map(Some)
    }

    /// A number, by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let digits = |c: &mut Self| {
            let start = c.i;
            while let Some(b'0'..=b'9') = c.b.get(c.i) {
                c.i += 1;
            }
            c.i - start
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        let first = self.b.get(self.i).copied();
        let n = digits(self);
        if n == 0 || (n > 1 && first == Some(b'0')) {
            return None;
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            (digits(self) > 0).then_some(())?;
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            (digits(self) > 0).then_some(())?;
        }
        Some(())
    }

    fn skip_value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => {
                let (end, _) = self.string_end()?;
                self.i = end + 1;
            }
            open @ (b'{' | b'[') => {
                self.i += 1;
                let close = if open == b'{' { b'}' } else { b']' };
                if self.eat_if(close) {
                    return Some(());
                }
                loop {
                    if open == b'{' {
                        self.string()?;
                        self.eat(b':')?;
                    }
                    self.skip_value(depth + 1)?;
                    if self.eat_if(b',') {
                        continue;
                    }
                    return self.eat(close);
                }
            }
            b't' => self.literal("true")?,
            b'f' => self.literal("false")?,
            b'n' => self.null()?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(s))
    }

    #[test]
    fn reads_the_common_shapes() {
        let c = parse(r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"logprobs":null,"finish_reason":null}]}"#).unwrap();
        assert_eq!(c.content, b("Hi"));
        assert_eq!(c.finish_reason, None);
        let c = parse(r#" { "choices" : [ { "delta" : { } , "finish_reason" : "stop" } ] , "usage" : null } "#).unwrap();
        assert_eq!(c.finish_reason, b("stop"));
        let c = parse(r#"{"choices":[{"delta":{"content":"a\"b\n\u00e9"}}]}"#).unwrap();
        assert_eq!(c.content.as_deref(), Some("a\"b\n\u{e9}"));
        let c = parse(r#"{"choices":[{"delta":{"reasoning_content":"t","tool_calls":null,"x":{"y":[0,1,-2.5e3,10E+2,0.5e-1,true,false,null,"s\\"]}}}]}"#).unwrap();
        assert_eq!(c.reasoning_content, b("t"));
        assert_eq!(parse(r#"{"choices":[]}"#), Some(TextChunk::default()));
        assert_eq!(parse("{}"), Some(TextChunk::default()));
    }

    #[test]
    fn a_template_reads_chunks_that_differ_only_in_content() {
        let head = r#"{"id":"c1","created":1,"choices":[{"index":0,"delta":{"content":"#;
        let tail = r#"},"finish_reason":null}]}"#;
        let first = format!(r#"{head}"Hello"{tail}"#);
        let mut t = Template::default();
        assert_eq!(t.content(&first), None, "nothing learned yet");
        t.learn(&first, &parse(&first).unwrap());
        for (data, want) in [
            (format!(r#"{head}" world"{tail}"#), Some(" world")),
            (format!(r#"{head}"a\"b\n"{tail}"#), Some("a\"b\n")),
            (format!(r#"{head}"a" , "b"{tail}"#), None),
            (format!(r#"{head}"a"{tail} "#), None),
            (format!(r#"{head}null{tail}"#), None),
            (format!(r#"{head}"unterminated{tail}"#), None),
            (format!(r#"{head}"x"}},"finish_reason":"stop"}}]}}"#), None),
        ] {
            assert_eq!(t.content(&data).as_deref(), want, "{data}");
            if let Some(w) = want {
                assert_eq!(parse(&data).unwrap().content.as_deref(), Some(w));
            }
        }
        // A chunk with a finish reason is not a template.
        let mut t = Template::default();
        let last = format!(r#"{head}"x"}},"finish_reason":"stop"}}]}}"#);
        t.learn(&last, &parse(&last).unwrap());
        assert_eq!(t.content(&last), None);
    }

    /// Events and completion of `data` through the fast path and through
    /// the full decoder.
    fn both_ways(data: &str) -> Option<(String, String)> {
        use crate::llm::{Assembler, Event};
        let fast = parse(data)?;
        let mut a = Assembler::default();
        let mut events = Vec::new();
        a.push_text_chunk(&fast, |reasoning, t| {
            events.push(if reasoning {
                Event::Reasoning(t.into())
            } else {
                Event::Text(t.into())
            })
        });
        let fast = format!("{events:?} {:?}", a.finish());
        let mut a = Assembler::default();
        let mut events = Vec::new();
        a.push(
            super::super::assemble::parse_chunk(data).unwrap(),
            &mut events,
        );
        Some((fast, format!("{events:?} {:?}", a.finish())))
    }

    #[test]
    fn agrees_with_the_full_decoder() {
        for data in [
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi \"there\"\n"},"finish_reason":null,"logprobs":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"a","reasoning":"b","refusal":null}}]}"#,
            r#"{"choices":[{"delta":{"content":"","refusal":"no"},"finish_reason":"content_filter"}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[{"delta":null,"finish_reason":"length"}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":null,"content":null}}]}"#,
            r#"{"choices":[{"delta":{"content":"\u00e9\ud83d\ude00"},"finish_reason":"weird"}]}"#,
            r#"{"choices":[]}"#,
        ] {
            let (fast, full) = both_ways(data).unwrap_or_else(|| panic!("fast path: {data}"));
            assert_eq!(fast, full, "{data}");
        }
    }

    #[test]
    fn leaves_everything_else_to_the_full_decoder() {
        for data in [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
            r#"{"error":{"message":"x"}}"#,
            r#"{"choices":[{"delta":{}},{"delta":{}}]}"#,
            r#"{"choices":[{"message":{"content":"a"}}]}"#,
            r#"{"choices":[{"delta":{"content":[{"type":"text","text":"a"}]}}]}"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"choices":[],"choices":[]}"#,
            r#"{"ch\u006fices":[]}"#,
            r#"{"choices":null}"#,
            r#"{"choices":[{"delta":{"content":"a"}}]} x"#,
            r#"{"choices":[{"delta":{"content":"a}}]}"#,
            "{\"choices\":[{\"delta\":{\"content\":\"a\u{1}\"}}]}",
            r#"{"id":01,"choices":[]}"#,
            r#"{"id":tru,"choices":[]}"#,
            r#"{"id":1.,"choices":[]}"#,
            r#"{"id":-,"choices":[]}"#,
            r#"{"id":1e,"choices":[]}"#,
            r#"{"id":.5,"choices":[]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],}"#,
            "[1]",
            "null",
            "",
        ] {
            assert_eq!(parse(data), None, "{data}");
        }
    }
}
