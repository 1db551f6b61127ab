//! The editor's recorded state, shared between the test and the reader task.
use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dir {
    /// editor → agent
    Out,
    /// agent → editor
    In,
}

#[derive(Default)]
pub(super) struct TermOutput {
    pub(super) bytes: Vec<u8>,
    pub(super) truncated: bool,
    pub(super) limit: Option<usize>,
}

impl TermOutput {
    pub(super) fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if let Some(limit) = self.limit
            && self.bytes.len() > limit
        {
            let mut cut = self.bytes.len() - limit;
            // Keep a char boundary: skip UTF-8 continuation bytes.
            while cut < self.bytes.len() && (self.bytes[cut] & 0b1100_0000) == 0b1000_0000 {
                cut += 1;
            }
            self.bytes.drain(..cut);
            self.truncated = true;
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ExitInfo {
    pub(super) code: Option<u32>,
    pub(super) signal: Option<String>,
}

impl ExitInfo {
    pub(super) fn to_json(&self) -> Value {
        let mut v = json!({});
        if let Some(code) = self.code {
            v["exitCode"] = json!(code);
        }
        if let Some(signal) = &self.signal {
            v["signal"] = json!(signal);
        }
        v
    }
}

pub(super) struct Terminal {
    pub(super) pgid: Option<i32>,
    pub(super) output: Arc<Mutex<TermOutput>>,
    pub(super) exit: watch::Receiver<Option<ExitInfo>>,
    pub(super) released: bool,
}

/// A hook run before an `fs/write_text_file` is served.
pub(super) type WriteHook = std::sync::Arc<dyn Fn(&std::path::Path) + Send + Sync>;

pub(super) struct State {
    pub(super) transcript: Vec<(Dir, String)>,
    /// Every parsed message from the agent.
    pub(super) messages: Vec<Value>,
    pub(super) pending: HashMap<RpcId, oneshot::Sender<Result<Value, RpcError>>>,
    /// Unanswered editor requests: id → method (for schema checks).
    pub(super) editor_requests: HashMap<RpcId, String>,
    pub(super) editor_request_params: HashMap<RpcId, Value>,
    /// Unanswered agent requests: id → method.
    pub(super) agent_requests: HashMap<RpcId, String>,
    /// `params` of every `session/update`.
    pub(super) updates: Vec<Value>,
    pub(super) update_cursor: usize,
    pub(super) reverse_requests: Vec<Value>,
    pub(super) permissions: Vec<PermissionRecord>,
    /// Permission requests answered with `NeverAnswer`, still open.
    pub(super) held_permissions: Vec<(RpcId, String)>,
    pub(super) writes: Vec<FileWrite>,
    pub(super) reads: Vec<FileRead>,
    pub(super) terminals: HashMap<String, Terminal>,
    pub(super) terminal_order: Vec<String>,
    pub(super) terminal_calls: Vec<TerminalCall>,
    pub(super) next_terminal: u64,
    pub(super) errors: Vec<String>,
    pub(super) closed: bool,
    pub(super) caps: Caps,
    pub(super) known_sessions: HashSet<String>,
    pub(super) session_cwds: HashMap<String, PathBuf>,
    // configuration
    pub(super) buffers: HashMap<PathBuf, String>,
    pub(super) write_to_disk: bool,
    /// Runs before an `fs/write_text_file` is served, with its path.
    pub(super) before_write: Option<WriteHook>,
    pub(super) permission_queue: VecDeque<PermissionDecision>,
    pub(super) default_permission: Option<PermissionDecision>,
    /// Reverse-request methods answered with this error instead of served.
    pub(super) failing: HashMap<String, RpcError>,
    pub(super) timeout: Duration,
    /// MCP servers served over ACP (unstable `mcp/*`).
    pub(super) mcp: mcp_acp::McpState,
    /// Answers to `elicitation/create`, in order (`None`: never answer);
    /// when empty the editor declines.
    pub(super) elicitation_answers: VecDeque<Option<Value>>,
    /// `elicitation/create` requests left unanswered, until `$/cancel_request`.
    pub(super) held_elicitations: Vec<RpcId>,
    /// Methods whose requests are never answered ([`super::FakeEditor::ignore_requests`]).
    pub(super) ignored: std::collections::HashSet<String>,
    /// Requests of those methods, until the agent withdraws them.
    pub(super) held_ignored: Vec<RpcId>,
}

impl State {
    pub(super) fn new() -> Self {
        State {
            transcript: Vec::new(),
            messages: Vec::new(),
            pending: HashMap::new(),
            editor_requests: HashMap::new(),
            editor_request_params: HashMap::new(),
            agent_requests: HashMap::new(),
            updates: Vec::new(),
            update_cursor: 0,
            reverse_requests: Vec::new(),
            permissions: Vec::new(),
            held_permissions: Vec::new(),
            writes: Vec::new(),
            reads: Vec::new(),
            terminals: HashMap::new(),
            terminal_order: Vec::new(),
            terminal_calls: Vec::new(),
            next_terminal: 1,
            errors: Vec::new(),
            closed: false,
            caps: Caps::default(),
            known_sessions: HashSet::new(),
            session_cwds: HashMap::new(),
            buffers: HashMap::new(),
            write_to_disk: true,
            before_write: None,
            permission_queue: VecDeque::new(),
            default_permission: None,
            failing: HashMap::new(),
            timeout: DEFAULT_TIMEOUT,
            mcp: Default::default(),
            elicitation_answers: VecDeque::new(),
            held_elicitations: Vec::new(),
            ignored: Default::default(),
            held_ignored: Vec::new(),
        }
    }
}

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// Bumped on every change; waiters re-check their condition.
    pub(super) version: watch::Sender<u64>,
    pub(super) writer: tokio::sync::Mutex<Option<BoxWriter>>,
    pub(super) next_id: AtomicI64,
    pub(super) stderr: Mutex<Vec<u8>>,
}

impl Shared {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere must not hide the transcript.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    pub(super) fn error(&self, msg: String) {
        eprintln!("fake editor: {msg}");
        self.lock().errors.push(msg);
        self.bump();
    }

    /// Writes one line; `Dir::Out` transcript entry is added by the caller.
    pub(super) async fn write_line(&self, line: &str) -> std::io::Result<()> {
        let mut w = self.writer.lock().await;
        let Some(w) = w.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the editor closed the agent's stdin",
            ));
        };
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        if !line.ends_with('\n') {
            buf.push(b'\n');
        }
        w.write_all(&buf).await?;
        w.flush().await
    }

    pub(super) fn transcript(&self) -> String {
        let st = self.lock();
        let mut out =
            String::from("=== fake editor transcript (→ editor to agent, ← agent to editor) ===\n");
        for (dir, line) in &st.transcript {
            out.push_str(match dir {
                Dir::Out => "→ ",
                Dir::In => "← ",
            });
            out.push_str(&shorten(line, 4000));
            out.push('\n');
        }
        if !st.errors.is_empty() {
            out.push_str("=== protocol / harness errors ===\n");
            for e in &st.errors {
                out.push_str(e);
                out.push('\n');
            }
        }
        drop(st);
        let stderr = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if !stderr.is_empty() {
            let text = String::from_utf8_lossy(&stderr);
            let tail = tail(&text, 8000);
            out.push_str("=== agent stderr (tail) ===\n");
            out.push_str(tail);
            if !tail.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    pub(super) fn fail(&self, msg: &str) -> ! {
        panic!("{msg}\n{}", self.transcript())
    }

    /// Sends a response to an agent request (validated against the schema;
    /// a harness bug is recorded as an error).
    pub(super) async fn respond(&self, id: RpcId, result: Result<Value, RpcError>) {
        let msg = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id.to_json(), "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id.to_json(), "error": e.to_json()}),
        };
        let line = msg.to_string();
        {
            let mut st = self.lock();
            if let Err(e) = schema::check_client_message(&msg, &st.agent_requests) {
                st.errors.push(format!(
                    "harness bug: the fake editor sent an invalid response: {e}"
                ));
            }
            st.agent_requests.remove(&id);
            for p in st.permissions.iter_mut().filter(|p| p.id == id) {
                p.result = msg.get("result").cloned();
            }
            st.held_permissions.retain(|(held, _)| *held != id);
            st.transcript.push((Dir::Out, line.clone()));
        }
        self.bump();
        if let Err(e) = self.write_line(&line).await {
            eprintln!("fake editor: could not answer agent request {id}: {e}");
        }
    }
}

pub(super) fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// Lexically normalizes an absolute path (`.` and `..` resolved).
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

pub(super) fn slice_lines(content: &str, line: Option<u64>, limit: Option<u64>) -> String {
    let start = usize::try_from(line.unwrap_or(1).saturating_sub(1)).unwrap_or(usize::MAX);
    let lines = content.split_inclusive('\n').skip(start);
    match limit {
        Some(n) => lines
            .take(usize::try_from(n).unwrap_or(usize::MAX))
            .collect(),
        None => lines.collect(),
    }
}

/// Kills a terminal's whole process tree (the agent's own platform layer:
/// a process group on Unix, a Job Object on Windows).
pub(super) fn kill_group(pgid: i32) {
    use acp_coder::platform::process::{Signal, signal_tree};
    signal_tree(pgid, Signal::Kill);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slicing_lines() {
        let text = "a\nb\nc\nd";
        assert_eq!(slice_lines(text, None, None), text);
        assert_eq!(slice_lines(text, Some(2), None), "b\nc\nd");
        assert_eq!(slice_lines(text, Some(2), Some(2)), "b\nc\n");
        assert_eq!(slice_lines(text, Some(9), Some(2)), "");
        assert_eq!(slice_lines(text, None, Some(1)), "a\n");
    }

    #[test]
    fn output_truncation_keeps_char_boundary() {
        let mut o = TermOutput {
            limit: Some(4),
            ..TermOutput::default()
        };
        o.push("abé".as_bytes());
        assert!(!o.truncated);
        o.push("xy".as_bytes());
        assert!(o.truncated);
        assert!(std::str::from_utf8(&o.bytes).is_ok());
        assert!(o.bytes.len() <= 4);
        assert!(o.bytes.ends_with(b"xy"));
    }

    #[test]
    fn normalizing_paths() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }
}
