//! `--trace FILE`: every JSON-RPC frame in both directions, one JSON line each.
//!
//! ```text
//! {"ts":"2026-01-02T03:04:05.678Z","dir":"in","msg":{"jsonrpc":"2.0","id":0,"method":"initialize",…}}
//! ```
//!
//! `dir` is seen from the agent: `in` is what the editor sent, `out` what the
//! agent sent. `msg` is the frame as JSON, or a string when it is not JSON.
//! Secrets are replaced by `"[redacted]"` before anything is written: the
//! API key and configured header values wherever they appear, the values of
//! `env` and `headers` entries of `mcpServers` (and any of their fields whose
//! name looks secret, like `_meta`'s `clientSecret`), and `{name, value}` pairs or
//! header/env maps whose name looks secret (`Authorization`, `*token*`,
//! `*key*`, `*secret*`, `*password*`, `*cookie*`). A value hidden that way
//! (when its name says secret, or it looks like an opaque token) is also
//! hidden wherever a later frame repeats it, e.g. in an error message.
//!
//! The agent never waits for the disk: the tracer stamps the frame and hands
//! it to a writer thread over a channel; the thread redacts, formats and
//! writes in batches, flushing whenever it has caught up.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;

use serde_json::Value;
use time::OffsetDateTime;

use crate::rpc::{Direction, Tracer};

pub use crate::secrets::{REDACTED, is_secret_name};

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot open trace file {path}: {source}")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
}

enum Msg {
    Frame(OffsetDateTime, Direction, String),
    Stop,
}

/// An open trace file. Dropping it writes what is queued and closes the file.
pub struct TraceFile {
    tx: mpsc::Sender<Msg>,
    thread: Option<JoinHandle<()>>,
}

impl TraceFile {
    /// Opens (appends to) `path`, created with mode 0600, and starts the writer.
    /// `secrets` are literal values never to be written (shorter than 4
    /// characters are ignored).
    pub fn create(path: &Path, secrets: Vec<String>) -> Result<TraceFile, TraceError> {
        use crate::platform::fs::OwnerOnly as _;
        let open_err = |source| TraceError::Open {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(open_err)?;
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .owner_only()
            .open(path)
            .map_err(open_err)?;
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("acp-coder-trace".into())
            .spawn(move || write_loop(file, rx, &secrets))
            .map_err(open_err)?;
        Ok(TraceFile {
            tx,
            thread: Some(thread),
        })
    }

    /// The observer to hand to the connection (`ServeOptions::tracer`).
    pub fn tracer(&self) -> Tracer {
        let tx = self.tx.clone();
        Arc::new(move |dir: Direction, frame: &str| {
            let _ = tx.send(Msg::Frame(OffsetDateTime::now_utc(), dir, frame.to_owned()));
        })
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn write_loop(mut file: std::fs::File, rx: mpsc::Receiver<Msg>, secrets: &[String]) {
    let mut secrets = Secrets::new(secrets.to_vec());
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut stop = false;
    while !stop {
        let Ok(first) = rx.recv() else { break };
        buf.clear();
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Frame(ts, dir, frame) => {
                    buf.extend_from_slice(trace_line(ts, dir, &frame, &mut secrets).as_bytes());
                    buf.push(b'\n');
                }
                Msg::Stop => {
                    stop = true;
                    break;
                }
            }
            if buf.len() < 1 << 20 {
                next = rx.try_recv().ok();
            }
        }
        // One write per batch: whole lines even when several processes append.
        if !buf.is_empty() && (file.write_all(&buf).is_err() || file.flush().is_err()) {
            tracing::warn!("writing the trace file failed; tracing stops");
            return;
        }
    }
}

/// The literal values never to write: the configured ones, plus every value
/// redacted structurally so far (an MCP server's token stays hidden when a
/// later frame, say an error message, repeats it).
#[derive(Debug, Default)]
pub struct Secrets {
    values: Vec<String>,
}

impl Secrets {
    pub fn new(values: Vec<String>) -> Self {
        let mut s = Self::default();
        s.learn(values);
        s
    }

    fn learn(&mut self, values: Vec<String>) {
        let before = self.values.len();
        for v in values {
            // Short values would mangle ordinary text.
            if v.len() >= 4 && v != REDACTED && !self.values.contains(&v) {
                self.values.push(v);
            }
        }
        if self.values.len() != before {
            // Longest first, so a secret containing another is replaced whole.
            self.values.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// The trace's own values, then the agent's one redactor ([`crate::secrets`]).
    fn replace(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.values {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), REDACTED);
            }
        }
        crate::secrets::redact_string(out)
    }

    fn found_in(&self, text: &str) -> bool {
        self.values.iter().any(|s| text.contains(s.as_str()))
            || crate::secrets::current().found_in(text)
    }
}

/// One line of the trace file.
pub fn trace_line(
    ts: OffsetDateTime,
    dir: Direction,
    frame: &str,
    secrets: &mut Secrets,
) -> String {
    let msg = match serde_json::from_str::<Value>(frame) {
        Ok(mut v) => {
            redact(&mut v, secrets);
            v
        }
        Err(_) => Value::String(secrets.replace(frame)),
    };
    let dir = match dir {
        Direction::In => "in",
        Direction::Out => "out",
    };
    format!(
        "{{\"ts\":\"{}\",\"dir\":\"{dir}\",\"msg\":{msg}}}",
        rfc3339_millis(ts)
    )
}

/// `2026-01-02T03:04:05.678Z`.
pub fn rfc3339_millis(ts: OffsetDateTime) -> String {
    let ts = ts.to_offset(time::UtcOffset::UTC);
    ts.format(time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    ))
    .unwrap_or_default()
}

/// Redacts a frame in place (see the module docs for the rules): first by
/// structure (learning the values it hides), then every known value wherever
/// it appears in a string.
pub fn redact(value: &mut Value, secrets: &mut Secrets) {
    let mut learned = Vec::new();
    structural(value, None, false, &mut learned);
    secrets.learn(learned);
    literal(value, secrets);
}

/// Replaces `v` and remembers its old value when it is worth hiding
/// elsewhere too: its name says secret, or it is shaped like a credential
/// ([`crate::secrets::looks_like_credential`]), not an ordinary setting like
/// `/usr/bin`.
fn hide(v: &mut Value, secret_name: bool, learned: &mut Vec<String>) {
    if let Value::String(old) = std::mem::replace(v, Value::String(REDACTED.into()))
        && (secret_name || crate::secrets::looks_like_credential(&old))
    {
        learned.push(old);
    }
}

fn structural(value: &mut Value, key: Option<&str>, in_mcp: bool, learned: &mut Vec<String>) {
    let secret_name = |m: &serde_json::Map<String, Value>| {
        m.get("name")
            .and_then(Value::as_str)
            .is_some_and(is_secret_name)
    };
    match value {
        Value::Array(items) => {
            let pairs = matches!(key, Some("env" | "headers"));
            for item in items {
                if pairs && let Value::Object(m) = item {
                    let by_name = secret_name(m);
                    if (in_mcp || by_name)
                        && let Some(v) = m.get_mut("value")
                    {
                        hide(v, by_name, learned);
                    }
                }
                structural(item, None, in_mcp, learned);
            }
        }
        Value::Object(map) => {
            // `{"name": "X-Api-Key", "value": "…"}` anywhere.
            if secret_name(map)
                && let Some(v) = map.get_mut("value")
                && v.is_string()
            {
                hide(v, true, learned);
            }
            let map_of_values = matches!(key, Some("env" | "headers"));
            // `providers/set` params: every header value may be a credential.
            let provider = map.contains_key("providerId") && map.contains_key("baseUrl");
            for (k, v) in map.iter_mut() {
                if provider
                    && k == "headers"
                    && let Value::Object(h) = v
                {
                    for (name, x) in h.iter_mut() {
                        hide(x, is_secret_name(name), learned);
                    }
                    continue;
                }
                if map_of_values && v.is_string() && (in_mcp || is_secret_name(k)) {
                    hide(v, is_secret_name(k), learned);
                    continue;
                }
                // An MCP server's `_meta` sign-in (`clientSecret`).
                if in_mcp && v.is_string() && is_secret_name(k) {
                    hide(v, true, learned);
                    continue;
                }
                let child_in_mcp = in_mcp || k == "mcpServers";
                structural(v, Some(k.as_str()), child_in_mcp, learned);
            }
        }
        _ => {}
    }
}

fn literal(value: &mut Value, secrets: &Secrets) {
    match value {
        Value::String(s) if secrets.found_in(s) => *s = secrets.replace(s),
        Value::Array(items) => items.iter_mut().for_each(|v| literal(v, secrets)),
        Value::Object(map) => map.values_mut().for_each(|v| literal(v, secrets)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mcp_env_and_headers_are_redacted() {
        let mut v = json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{
        "cwd":"/p",
        "mcpServers":[
            {"name":"fs","command":"/bin/fs","args":["--token","x"],"env":[{"name":"PLAIN","value":"v1"},{"name":"GH_TOKEN","value":"ghp_123"}]},
            {"type":"http","name":"api","url":"https://h/mcp","headers":[{"name":"Accept","value":"a"},{"name":"Authorization","value":"Bearer t"}]}
        ]}});
        let mut secrets = Secrets::default();
        redact(&mut v, &mut secrets);
        let servers = &v["params"]["mcpServers"];
        assert_eq!(servers[0]["env"][0]["value"], REDACTED);
        assert_eq!(servers[0]["env"][1]["value"], REDACTED);
        assert_eq!(servers[0]["env"][1]["name"], "GH_TOKEN");
        assert_eq!(servers[1]["headers"][0]["value"], REDACTED);
        assert_eq!(servers[1]["headers"][1]["value"], REDACTED);
        assert_eq!(servers[1]["url"], "https://h/mcp");
        assert_eq!(servers[0]["args"][1], "x");
    }

    #[test]
    fn an_mcp_servers_oauth_client_secret_is_redacted() {
        let mut v = json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{
        "cwd":"/p",
        "mcpServers":[{"type":"http","name":"api","url":"https://h/mcp","headers":[],
            "_meta":{"acp-coder":{"oauth":{"clientId":"acp-1","clientSecret":"s3cr3t-value"}}}}]}});
        let mut secrets = Secrets::default();
        redact(&mut v, &mut secrets);
        let oauth = &v["params"]["mcpServers"][0]["_meta"]["acp-coder"]["oauth"];
        assert_eq!(oauth["clientSecret"], REDACTED);
        assert_eq!(oauth["clientId"], "acp-1");
        // Hidden wherever a later frame repeats it.
        let mut later = json!({"error":{"message":"bad s3cr3t-value"}});
        redact(&mut later, &mut secrets);
        assert_eq!(later["error"]["message"], "bad [redacted]");
    }

    #[test]
    fn provider_headers_are_redacted() {
        let mut v = json!({"jsonrpc":"2.0","id":2,"method":"providers/set","params":{
            "providerId":"main","apiType":"openai","baseUrl":"https://gw/v1",
            "headers":{"Authorization":"Bearer sk-gw-123456","X-Route":"eu-1"}}});
        let mut secrets = Secrets::default();
        redact(&mut v, &mut secrets);
        let p = &v["params"];
        assert_eq!(p["headers"]["Authorization"], REDACTED);
        assert_eq!(p["headers"]["X-Route"], REDACTED);
        assert_eq!(p["baseUrl"], "https://gw/v1");
        // The credential stays hidden when a later frame repeats it.
        let mut later = json!({"error": {"message": "Bearer sk-gw-123456 rejected"}});
        redact(&mut later, &mut secrets);
        assert_eq!(later["error"]["message"], "[redacted] rejected");
    }

    #[test]
    fn secret_names_and_literal_secrets() {
        let mut secrets = Secrets::new(vec!["sk-live-abcdef".to_owned()]);
        let mut v = json!({"params":{
            "env":[{"name":"PATH","value":"/bin"},{"name":"OPENAI_API_KEY","value":"zzz"}],
            "headers":{"X-Secret-Thing":"s","Accept":"json"},
            "prompt":[{"type":"text","text":"my key is sk-live-abcdef, ok"}]}});
        redact(&mut v, &mut secrets);
        assert_eq!(v["params"]["env"][0]["value"], "/bin");
        assert_eq!(v["params"]["env"][1]["value"], REDACTED);
        assert_eq!(v["params"]["headers"]["X-Secret-Thing"], REDACTED);
        assert_eq!(v["params"]["headers"]["Accept"], "json");
        assert_eq!(v["params"]["prompt"][0]["text"], "my key is [redacted], ok");
    }

    #[test]
    fn values_hidden_once_stay_hidden() {
        let mut secrets = Secrets::default();
        let mut v = json!({"params":{"mcpServers":[{"name":"gh","command":"x","args":[],
            "env":[{"name":"GITHUB_PAT","value":"ghp_secretvalue"}]}]}});
        redact(&mut v, &mut secrets);
        let mut later = json!({"error":{"message":"server gh failed: bad token ghp_secretvalue"}});
        redact(&mut later, &mut secrets);
        assert_eq!(
            later["error"]["message"],
            "server gh failed: bad token [redacted]"
        );
        let line = trace_line(
            OffsetDateTime::UNIX_EPOCH,
            Direction::Out,
            "x ghp_secretvalue",
            &mut secrets,
        );
        assert!(!line.contains("ghp_secretvalue"), "{line}");
    }

    #[test]
    fn lines_have_timestamp_direction_and_message() {
        let ts = OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789).unwrap();
        let mut secrets = Secrets::new(vec!["sk-live-abcdef".into()]);
        let line = trace_line(
            ts,
            Direction::In,
            r#"{"jsonrpc":"2.0","id":1}"#,
            &mut secrets,
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["ts"], "2023-11-14T22:13:20.123Z");
        assert_eq!(v["dir"], "in");
        assert_eq!(v["msg"]["id"], 1);
        let line = trace_line(ts, Direction::Out, "not json sk-live-abcdef", &mut secrets);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["dir"], "out");
        assert_eq!(v["msg"], "not json [redacted]");
    }

    #[test]
    fn file_gets_every_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/trace.jsonl");
        let trace = TraceFile::create(&path, vec!["secret-value".into()]).unwrap();
        let tracer = trace.tracer();
        for i in 0..100 {
            tracer(
                Direction::In,
                &format!(r#"{{"id":{i},"x":"secret-value"}}"#),
            );
        }
        drop(trace);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 100);
        assert!(!text.contains("secret-value"));
        if let Some(mode) = crate::platform::fs::mode(&std::fs::metadata(&path).unwrap()) {
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
