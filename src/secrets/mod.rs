//! Secrets: which values they are, and the one redactor every output goes
//! through (DESIGN §4 "Secrets", SECURITY.md §3).
//!
//! Secrets are the API key (the `OPENAI_API_KEY` / `api_key_env` variable or
//! `api_key` in the config file), the config's `[headers]` and MCP servers'
//! `env` and `headers` values (from the config file and from `session/new` /
//! `session/load`), and whatever `authenticate` loads. They are learned into
//! one process-wide [`Redactor`] as soon as the agent knows them, and never
//! forgotten. Every route out goes through it:
//!
//! - frames to the editor: the JSON-RPC writer ([`redact_frame`], set on the
//!   connection), and streamed text before it is batched ([`StreamRedactor`],
//!   so a key split over two chunks is still caught);
//! - the session log (each record's line), and tool results before the model
//!   and the log get them;
//! - the log file and stderr ([`Writer`]), the `--trace` file, and error text
//!   from the endpoint ([`redact_endpoint_text`], which also hides `sk-…`-shaped
//!   strings the endpoint echoes back).
//!
//! The process image is cleaned separately ([`env`]): secret variables are
//! overwritten in the original environment block and the agent is marked
//! non-dumpable.
//!
//! Cost: with no secret known, redaction is one atomic load. With secrets, one
//! SIMD substring search per secret and text (there are few); the rare text
//! that holds one is rewritten with an Aho-Corasick automaton.
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::Value;

mod classify;
pub mod env;
mod stream;
mod writer;

pub use classify::{is_secret_name, is_secret_value, looks_like_credential};
pub use stream::StreamRedactor;
pub use writer::Writer;

/// What every secret is replaced by.
pub const REDACTED: &str = "[redacted]";

/// Shorter values are not redacted: they would mangle ordinary text.
const MIN_LEN: usize = 4;

/// A set of literal secrets and the automaton that finds them.
///
/// Each secret is searched for as written and as it appears inside a JSON
/// string (escaped), so a serialized frame or log line can be redacted
/// without parsing it and stays valid JSON ([`REDACTED`] needs no escaping).
#[derive(Debug, Default)]
pub struct Redactor {
    values: Vec<String>,
    patterns: Vec<String>,
    /// One SIMD substring searcher per pattern: the check every text goes
    /// through (almost always clean). Measured faster than the automaton's
    /// own `is_match`, whose first-byte prefilter stops at every common
    /// letter a key starts with.
    finders: Vec<memchr::memmem::Finder<'static>>,
    /// Replaces, leftmost-longest, once a secret was found.
    ac: Option<AhoCorasick>,
}

impl Redactor {
    pub fn new(values: impl IntoIterator<Item = String>) -> Self {
        let mut r = Redactor::default();
        r.add(values);
        r
    }

    /// Adds values; returns whether any was new.
    fn add(&mut self, values: impl IntoIterator<Item = String>) -> bool {
        let before = self.values.len();
        for v in values {
            if v.len() >= MIN_LEN && v != REDACTED && !self.values.contains(&v) {
                self.values.push(v);
            }
        }
        if self.values.len() == before {
            return false;
        }
        let mut patterns: Vec<String> = Vec::new();
        for v in &self.values {
            let escaped = serde_json::to_string(v).unwrap_or_default();
            let escaped = escaped[1..escaped.len() - 1].to_owned();
            for p in [v.clone(), escaped] {
                if !patterns.contains(&p) {
                    patterns.push(p);
                }
            }
        }
        self.ac = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .map_err(|e| tracing::error!(error = %e, "cannot build the secret matcher"))
            .ok();
        self.finders = patterns
            .iter()
            .map(|p| memchr::memmem::Finder::new(p.as_bytes()).into_owned())
            .collect();
        self.patterns = patterns;
        true
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether `text` holds a secret.
    pub fn found_in(&self, text: &str) -> bool {
        let t = text.as_bytes();
        self.finders.iter().any(|f| f.find(t).is_some())
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when clean.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match &self.ac {
            Some(ac) if self.found_in(text) => {
                let replace: Vec<&str> = vec![REDACTED; self.patterns.len()];
                Cow::Owned(ac.replace_all(text, &replace))
            }
            _ => Cow::Borrowed(text),
        }
    }

    /// Redacts every string value in a JSON value (object keys are names,
    /// never secrets).
    pub fn redact_json(&self, value: &mut Value) {
        if self.is_empty() {
            return;
        }
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }

    /// Length in bytes of the longest end of `text` that is the start (not
    /// the whole) of a secret: what a stream must hold back until it knows
    /// whether the secret follows.
    fn partial_suffix(&self, text: &str) -> usize {
        let t = text.as_bytes();
        let Some(&last) = t.last() else { return 0 };
        let mut best = 0;
        for p in &self.patterns {
            let p = p.as_bytes();
            let longest = (p.len() - 1).min(t.len());
            for k in (best + 1..=longest).rev() {
                if p[k - 1] == last && t.ends_with(&p[..k]) {
                    best = k;
                    break;
                }
            }
        }
        best
    }
}

static GLOBAL: RwLock<Option<Arc<Redactor>>> = RwLock::new(None);
static ANY: AtomicBool = AtomicBool::new(false);

/// The process-wide redactor (empty until a secret is learned).
pub fn current() -> Arc<Redactor> {
    static EMPTY: std::sync::LazyLock<Arc<Redactor>> = std::sync::LazyLock::new(Arc::default);
    if !ANY.load(Ordering::Acquire) {
        return EMPTY.clone();
    }
    GLOBAL
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default()
}

/// Adds secrets to the process-wide redactor (values under 4 bytes are ignored).
pub fn learn(values: impl IntoIterator<Item = String>) {
    let values: Vec<String> = values.into_iter().filter(|v| v.len() >= MIN_LEN).collect();
    if values.is_empty() {
        return;
    }
    let mut g = GLOBAL.write().unwrap_or_else(|e| e.into_inner());
    let old = g.clone().unwrap_or_default();
    if values.iter().all(|v| old.values.contains(v)) {
        return;
    }
    let mut next = Redactor::default();
    next.add(old.values.iter().cloned().chain(values));
    *g = Some(Arc::new(next));
    ANY.store(true, Ordering::Release);
}

/// Learns the value of a named header or variable (an MCP server's `env` or
/// `headers`, the config's `[headers]`) when it is a secret: its name says so
/// or it is shaped like a credential ([`is_secret_value`]); the password of a
/// `user:pass@` URL is learned on its own too. Plain words, paths and numbers
/// (`DB_NAME=inventory_service_prod`, `PATH=/usr/bin`) are left alone, or
/// redacting them would mangle everything the agent says about them.
pub fn learn_named(name: &str, value: &str) {
    if is_secret_value(name, value) {
        let pass = classify::url_password(value.trim()).map(str::to_owned);
        learn(std::iter::once(value.to_owned()).chain(pass));
    }
}

/// [`Redactor::redact`] with the process-wide secrets.
pub fn redact(text: &str) -> Cow<'_, str> {
    if !ANY.load(Ordering::Acquire) {
        return Cow::Borrowed(text);
    }
    match current().redact(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// [`redact`] of an owned string, without copying when it is clean.
pub fn redact_string(text: String) -> String {
    match redact(&text) {
        Cow::Borrowed(_) => text,
        Cow::Owned(s) => s,
    }
}

/// An outgoing JSON-RPC frame, redacted (the connection's output filter).
pub fn redact_frame(line: String) -> String {
    redact_string(line)
}

/// Text that came from the model endpoint (error bodies, in-stream errors,
/// excerpts of malformed replies): the known secrets, `extra` (the client's
/// own key and header values), and anything shaped like an API key (`sk-…`,
/// which servers echo back partially in 401 messages).
pub fn redact_endpoint_text(text: &str, extra: &[String]) -> String {
    let mut out = redact_string(text.to_owned());
    let extra = Redactor::new(extra.iter().cloned());
    if let Cow::Owned(s) = extra.redact(&out) {
        out = s;
    }
    redact_key_shapes(&out)
}

/// Replaces what follows `sk-` at the start of a word (4+ key characters).
fn redact_key_shapes(text: &str) -> String {
    let mut out = text.to_owned();
    let mut i = 0;
    while let Some(pos) = out[i..].find("sk-") {
        let start = i + pos + 3;
        let at_word_start = i + pos == 0
            || !out[..i + pos]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric());
        if !at_word_start {
            i = start;
            continue;
        }
        let end = out[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_*.".contains(c)))
            .map_or(out.len(), |e| start + e);
        if end - start >= 4 {
            out.replace_range(start..end, REDACTED);
        }
        i = start.min(out.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literal_and_json_escaped_forms_are_replaced() {
        let r = Redactor::new(["sk-live-abcdef".to_owned(), "p\"w\\d9".to_owned()]);
        assert_eq!(r.redact("key sk-live-abcdef!"), "key [redacted]!");
        assert!(matches!(r.redact("clean"), Cow::Borrowed(_)));
        let frame = serde_json::to_string(&json!({"a": "x p\"w\\d9 y"})).unwrap();
        let redacted = r.redact(&frame);
        let v: Value = serde_json::from_str(&redacted).unwrap();
        assert_eq!(v["a"], "x [redacted] y");
        assert_eq!(r.redact("sk"), "sk", "short values are not secrets");
        assert!(Redactor::new(["abc".to_owned()]).is_empty());
    }

    #[test]
    fn the_longest_secret_wins() {
        let r = Redactor::new(["abcd".to_owned(), "abcdefgh".to_owned()]);
        assert_eq!(r.redact("abcdefgh abcd"), "[redacted] [redacted]");
    }

    #[test]
    fn json_values_are_redacted_in_place() {
        let r = Redactor::new(["topsecret".to_owned()]);
        let mut v = json!({"x": ["a topsecret", {"y": "topsecret"}], "n": 1});
        r.redact_json(&mut v);
        assert_eq!(
            v,
            json!({"x": ["a [redacted]", {"y": "[redacted]"}], "n": 1})
        );
    }

    #[test]
    fn partial_suffix_finds_a_started_secret() {
        let r = Redactor::new(["sk-abcdef".to_owned()]);
        assert_eq!(r.partial_suffix("hello sk-ab"), 5);
        assert_eq!(r.partial_suffix("hello s"), 1);
        assert_eq!(r.partial_suffix("hello"), 0);
        assert_eq!(
            r.partial_suffix("sk-abcdef"),
            0,
            "a whole secret is not held"
        );
        let overlap = Redactor::new(["abab".to_owned()]);
        assert_eq!(overlap.partial_suffix("xaba"), 3);
    }

    #[test]
    fn endpoint_text_hides_key_shapes_and_extra_values() {
        let r = redact_endpoint_text(
            "Incorrect API key provided: sk-proj-ab**********wxyz. hdr-value-1234",
            &["hdr-value-1234".to_owned()],
        );
        assert_eq!(r, "Incorrect API key provided: sk-[redacted] [redacted]");
        assert_eq!(redact_key_shapes("risk-free sk-"), "risk-free sk-");
    }
}

#[cfg(test)]
mod cost {
    use super::*;

    /// `cargo test --release --lib secrets::cost -- --ignored --nocapture`:
    /// the price of redaction per streamed chunk with three secrets known.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn redaction_cost_per_chunk() {
        learn([
            "sk-live-COSTKEY0123456789abcdef".to_owned(),
            "hdr-cost-7f3a9c1e55".to_owned(),
            "mcp-cost-51c2d8aa77".to_owned(),
        ]);
        let chunk = "Here is some ordinary model text, about forty bytes.";
        let frame = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"sess_0123456789abcdef01234567","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{chunk}"}}}}}}}}"#
        );
        let n = 200_000;
        let mut stream = StreamRedactor::default();
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(stream.push(std::hint::black_box(chunk)));
        }
        let per_chunk = t.elapsed().as_nanos() / n;
        let t = std::time::Instant::now();
        for _ in 0..n {
            std::hint::black_box(redact_frame(std::hint::black_box(frame.clone())));
        }
        let per_frame = t.elapsed().as_nanos() / n;
        eprintln!(
            "stream push: {per_chunk} ns/chunk; frame filter: {per_frame} ns/frame (incl. clone)"
        );
    }
}
