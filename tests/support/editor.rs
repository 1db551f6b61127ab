//! A fake editor (ACP client) that drives the agent over any byte-stream pair.
//!
//! Every line the agent writes is recorded, parsed (a non-JSON line is a
//! protocol error) and validated against the official schema
//! ([`super::schema`]). Responses are routed to the pending requests;
//! `session/update` notifications are collected; reverse requests
//! (`fs/*`, `session/request_permission`, `terminal/*`) are answered
//! automatically and recorded.
//!
//! Protocol errors never pass silently: every wait fails fast on them, and
//! dropping the editor panics if any were recorded (unless the test is
//! already panicking or took them with [`FakeEditor::take_errors`]).
//! Failures print the whole transcript plus the agent's stderr.

use super::schema::{self, RpcId};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

#[path = "mcp_acp.rs"]
mod mcp_acp;

/// Default time any single wait may take before the test fails.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

type BoxWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// A JSON-RPC error object received from (or sent to) the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn from_json(v: &Value) -> Self {
        RpcError {
            code: v["code"].as_i64().unwrap_or(i64::MIN),
            message: v["message"].as_str().unwrap_or_default().to_owned(),
            data: v.get("data").cloned(),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            v["data"] = data.clone();
        }
        v
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " (data: {data})")?;
        }
        Ok(())
    }
}

/// How the editor answers the next `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Select the option of kind `allow_once`.
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// Answer `{"outcome":{"outcome":"cancelled"}}`.
    Cancelled,
    /// Never answer (until [`FakeEditor::cancel`] or
    /// [`FakeEditor::answer_held_permissions`]).
    NeverAnswer,
}

impl PermissionDecision {
    fn kind(&self) -> Option<&'static str> {
        match self {
            PermissionDecision::AllowOnce => Some("allow_once"),
            PermissionDecision::AllowAlways => Some("allow_always"),
            PermissionDecision::RejectOnce => Some("reject_once"),
            PermissionDecision::RejectAlways => Some("reject_always"),
            _ => None,
        }
    }
}

/// One `session/request_permission` the agent sent.
#[derive(Debug, Clone)]
pub struct PermissionRecord {
    pub id: RpcId,
    pub params: Value,
    pub decision: Option<PermissionDecision>,
    /// The `result` sent back; `None` while unanswered.
    pub result: Option<Value>,
}

/// One `fs/write_text_file` the agent sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    pub session_id: String,
    pub path: PathBuf,
    pub content: String,
}

/// One `fs/read_text_file` the agent sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub session_id: String,
    pub path: PathBuf,
    pub line: Option<u64>,
    pub limit: Option<u64>,
    /// Served from an open (unsaved) buffer rather than from disk.
    pub from_buffer: bool,
}

/// One `terminal/*` request the agent sent.
#[derive(Debug, Clone)]
pub struct TerminalCall {
    pub method: String,
    pub params: Value,
}

/// Capabilities the editor advertised in `initialize`.
#[derive(Debug, Clone, Copy, Default)]
struct Caps {
    read: bool,
    write: bool,
    terminal: bool,
    /// `elicitation.form` / `elicitation.url` (present and not null).
    elicit_form: bool,
    elicit_url: bool,
}

/// `clientCapabilities` with everything on (fs read/write and terminal).
pub fn full_capabilities() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true})
}

/// `clientCapabilities` with everything off.
pub fn no_capabilities() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false})
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    /// editor → agent
    Out,
    /// agent → editor
    In,
}

#[derive(Default)]
struct TermOutput {
    bytes: Vec<u8>,
    truncated: bool,
    limit: Option<usize>,
}

impl TermOutput {
    fn push(&mut self, data: &[u8]) {
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
struct ExitInfo {
    code: Option<u32>,
    signal: Option<String>,
}

impl ExitInfo {
    fn to_json(&self) -> Value {
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

struct Terminal {
    pgid: Option<i32>,
    output: Arc<Mutex<TermOutput>>,
    exit: watch::Receiver<Option<ExitInfo>>,
    released: bool,
}

struct State {
    transcript: Vec<(Dir, String)>,
    /// Every parsed message from the agent.
    messages: Vec<Value>,
    pending: HashMap<RpcId, oneshot::Sender<Result<Value, RpcError>>>,
    /// Unanswered editor requests: id → method (for schema checks).
    editor_requests: HashMap<RpcId, String>,
    editor_request_params: HashMap<RpcId, Value>,
    /// Unanswered agent requests: id → method.
    agent_requests: HashMap<RpcId, String>,
    /// `params` of every `session/update`.
    updates: Vec<Value>,
    update_cursor: usize,
    reverse_requests: Vec<Value>,
    permissions: Vec<PermissionRecord>,
    /// Permission requests answered with `NeverAnswer`, still open.
    held_permissions: Vec<(RpcId, String)>,
    writes: Vec<FileWrite>,
    reads: Vec<FileRead>,
    terminals: HashMap<String, Terminal>,
    terminal_order: Vec<String>,
    terminal_calls: Vec<TerminalCall>,
    next_terminal: u64,
    errors: Vec<String>,
    closed: bool,
    caps: Caps,
    known_sessions: HashSet<String>,
    session_cwds: HashMap<String, PathBuf>,
    // configuration
    buffers: HashMap<PathBuf, String>,
    write_to_disk: bool,
    permission_queue: VecDeque<PermissionDecision>,
    default_permission: Option<PermissionDecision>,
    /// Reverse-request methods answered with this error instead of served.
    failing: HashMap<String, RpcError>,
    timeout: Duration,
    /// MCP servers served over ACP (unstable `mcp/*`).
    mcp: mcp_acp::McpState,
    /// Answers to `elicitation/create`, in order (`None`: never answer);
    /// when empty the editor declines.
    elicitation_answers: VecDeque<Option<Value>>,
    /// `elicitation/create` requests left unanswered, until `$/cancel_request`.
    held_elicitations: Vec<RpcId>,
}

impl State {
    fn new() -> Self {
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
            permission_queue: VecDeque::new(),
            default_permission: None,
            failing: HashMap::new(),
            timeout: DEFAULT_TIMEOUT,
            mcp: Default::default(),
            elicitation_answers: VecDeque::new(),
            held_elicitations: Vec::new(),
        }
    }
}

struct Shared {
    state: Mutex<State>,
    /// Bumped on every change; waiters re-check their condition.
    version: watch::Sender<u64>,
    writer: tokio::sync::Mutex<Option<BoxWriter>>,
    next_id: AtomicI64,
    stderr: Mutex<Vec<u8>>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic elsewhere must not hide the transcript.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v += 1);
    }

    fn error(&self, msg: String) {
        eprintln!("fake editor: {msg}");
        self.lock().errors.push(msg);
        self.bump();
    }

    /// Writes one line; `Dir::Out` transcript entry is added by the caller.
    async fn write_line(&self, line: &str) -> std::io::Result<()> {
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

    fn transcript(&self) -> String {
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

    fn fail(&self, msg: &str) -> ! {
        panic!("{msg}\n{}", self.transcript())
    }

    /// Sends a response to an agent request (validated against the schema;
    /// a harness bug is recorded as an error).
    async fn respond(&self, id: RpcId, result: Result<Value, RpcError>) {
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

fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

fn tail(s: &str, max: usize) -> &str {
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
fn normalize(path: &Path) -> PathBuf {
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

fn slice_lines(content: &str, line: Option<u64>, limit: Option<u64>) -> String {
    let start = usize::try_from(line.unwrap_or(1).saturating_sub(1)).unwrap_or(usize::MAX);
    let lines = content.split_inclusive('\n').skip(start);
    match limit {
        Some(n) => lines
            .take(usize::try_from(n).unwrap_or(usize::MAX))
            .collect(),
        None => lines.collect(),
    }
}

fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        n => format!("SIG{n}"),
    }
}

fn kill_group(pgid: i32) {
    // SAFETY: plain syscall; pgid is a process group this editor created.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// A response to an editor request that has not arrived yet. Await it
/// (`.await` or [`PendingRequest::response`]).
pub struct PendingRequest {
    id: RpcId,
    method: String,
    rx: oneshot::Receiver<Result<Value, RpcError>>,
    shared: Arc<Shared>,
}

impl PendingRequest {
    pub fn id(&self) -> &RpcId {
        &self.id
    }

    /// Waits for the response; fails the test on timeout, on a protocol
    /// error, or if the agent closes the connection first.
    pub async fn response(self) -> Result<Value, RpcError> {
        let PendingRequest {
            id,
            method,
            mut rx,
            shared,
        } = self;
        let timeout = shared.lock().timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut version = shared.version.subscribe();
        loop {
            version.borrow_and_update();
            {
                let st = shared.lock();
                if !st.errors.is_empty() {
                    drop(st);
                    shared.fail(&format!(
                        "protocol error while waiting for the response to {method} (id {id})"
                    ));
                }
            }
            tokio::select! {
                r = &mut rx => match r {
                    Ok(r) => return r,
                    Err(_) => shared.fail(&format!(
                        "the agent closed the connection before answering {method} (id {id})"
                    )),
                },
                changed = tokio::time::timeout_at(deadline, version.changed()) => {
                    if changed.is_err() {
                        shared.fail(&format!(
                            "no response to {method} (id {id}) within {timeout:?}"
                        ));
                    }
                }
            }
        }
    }
}

impl std::future::IntoFuture for PendingRequest {
    type Output = Result<Value, RpcError>;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.response())
    }
}

/// How to launch the agent binary.
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    pub args: Vec<String>,
    pub envs: Vec<(String, String)>,
    /// HOME for the agent; a fresh temp dir (owned by the editor) if None.
    pub home: Option<PathBuf>,
    /// Working directory of the agent process.
    pub cwd: Option<PathBuf>,
}

/// The fake editor. Construct with [`FakeEditor::spawn`] or
/// [`FakeEditor::connect`].
pub struct FakeEditor {
    shared: Arc<Shared>,
    child: Option<Child>,
    home_dir: Option<tempfile::TempDir>,
    home: Option<PathBuf>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeEditor {
    fn drop(&mut self) {
        let (errors, groups) = {
            let st = self.shared.lock();
            let groups: Vec<i32> = st
                .terminals
                .values()
                .filter(|t| t.exit.borrow().is_none())
                .filter_map(|t| t.pgid)
                .collect();
            (st.errors.clone(), groups)
        };
        for g in groups {
            kill_group(g);
        }
        for t in &self.tasks {
            t.abort();
        }
        if !errors.is_empty() && !std::thread::panicking() {
            panic!(
                "the fake editor recorded {} protocol/harness error(s):\n{}",
                errors.len(),
                self.shared.transcript()
            );
        }
    }
}

/// A `Command` for the real `acp-coder` binary with a clean environment:
/// PATH, HOME = `home`, XDG_{CONFIG,DATA,STATE,CACHE}_HOME under it,
/// RUST_BACKTRACE=1, RUST_LOG/TMPDIR if set, then `opts.envs`; stdio piped.
pub fn agent_command(opts: &SpawnOptions, home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acp-coder"));
    cmd.args(&opts.args)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        )
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("RUST_BACKTRACE", "1");
    for var in ["RUST_LOG", "TMPDIR"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    for (k, v) in &opts.envs {
        cmd.env(k, v);
    }
    if let Some(cwd) = &opts.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

impl FakeEditor {
    /// Spawns the real `acp-coder` binary with piped stdio, a clean
    /// environment (PATH, a temp HOME and XDG dirs, RUST_BACKTRACE, RUST_LOG
    /// if set) plus `envs`, and `args`.
    pub fn spawn<I, K, V>(args: &[&str], envs: I) -> FakeEditor
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        Self::spawn_with(SpawnOptions {
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            envs: envs
                .into_iter()
                .map(|(k, v)| {
                    (
                        k.as_ref().to_string_lossy().into_owned(),
                        v.as_ref().to_string_lossy().into_owned(),
                    )
                })
                .collect(),
            ..SpawnOptions::default()
        })
    }

    /// Spawns the agent binary with full control over its launch.
    pub fn spawn_with(opts: SpawnOptions) -> FakeEditor {
        let (home_dir, home) = match opts.home.clone() {
            Some(h) => (None, h),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("acp-coder-home-")
                    .tempdir()
                    .expect("temp HOME");
                let path = dir.path().to_path_buf();
                (Some(dir), path)
            }
        };
        let mut cmd = agent_command(&opts, &home);
        let mut child = cmd.spawn().expect("spawn the acp-coder binary");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut editor = Self::connect(stdout, stdin);
        let shared = editor.shared.clone();
        let echo = std::env::var_os("ACP_TEST_ECHO_STDERR").is_some();
        editor.tasks.push(tokio::spawn(async move {
            let mut stderr = stderr;
            let mut buf = vec![0u8; 8192];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if echo {
                            eprint!("[agent stderr] {}", String::from_utf8_lossy(&buf[..n]));
                        }
                        shared
                            .stderr
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .extend_from_slice(&buf[..n]);
                        shared.bump();
                    }
                }
            }
        }));
        editor.child = Some(child);
        editor.home_dir = home_dir;
        editor.home = Some(home);
        editor
    }

    /// Drives an agent over any reader (the agent's output) and writer (its
    /// input), e.g. the halves of `tokio::io::duplex`.
    pub fn connect<R, W>(reader: R, writer: W) -> FakeEditor
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            version: watch::channel(0).0,
            writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
            next_id: AtomicI64::new(1),
            stderr: Mutex::new(Vec::new()),
        });
        let reader_task = tokio::spawn(reader_loop(shared.clone(), reader));
        FakeEditor {
            shared,
            child: None,
            home_dir: None,
            home: None,
            tasks: vec![reader_task],
        }
    }

    // ----------------------------------------------------------------- config

    /// The agent's HOME (spawned agents only).
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Per-wait timeout (default [`DEFAULT_TIMEOUT`]).
    pub fn set_timeout(&self, timeout: Duration) {
        self.shared.lock().timeout = timeout;
    }

    /// Opens an (unsaved) buffer: `fs/read_text_file` serves this content
    /// instead of the file on disk; writes update it.
    pub fn open_buffer(&self, path: impl AsRef<Path>, content: &str) {
        self.shared
            .lock()
            .buffers
            .insert(normalize(path.as_ref()), content.to_owned());
    }

    /// Current content of an open buffer.
    pub fn buffer(&self, path: impl AsRef<Path>) -> Option<String> {
        self.shared
            .lock()
            .buffers
            .get(&normalize(path.as_ref()))
            .cloned()
    }

    /// Whether `fs/write_text_file` also writes to disk (default true).
    pub fn set_write_to_disk(&self, on: bool) {
        self.shared.lock().write_to_disk = on;
    }

    /// Queues the answer to the next permission request.
    pub fn push_permission(&self, decision: PermissionDecision) {
        self.shared.lock().permission_queue.push_back(decision);
    }

    /// Answer for permission requests when the queue is empty. With `None`
    /// (the default) an unscripted permission request is a test error (and
    /// is answered `cancelled`).
    pub fn set_default_permission(&self, decision: Option<PermissionDecision>) {
        self.shared.lock().default_permission = decision;
    }

    /// Answers every agent request of `method` (e.g. `fs/write_text_file`,
    /// `terminal/create`) with `error` instead of serving it; `None` serves
    /// it again. Nothing happens on disk for a failed request.
    pub fn fail_requests(&self, method: &str, error: Option<RpcError>) {
        let mut st = self.shared.lock();
        match error {
            Some(e) => st.failing.insert(method.to_owned(), e),
            None => st.failing.remove(method),
        };
    }

    // --------------------------------------------------------------- sending

    fn next_numeric_id(&self) -> RpcId {
        RpcId::Num(self.shared.next_id.fetch_add(1, Ordering::SeqCst))
    }

    /// Sends a request with the next numeric id; returns a handle to await.
    /// The message is checked against the schema first (a malformed request
    /// is a bug in the test: use [`Self::send_request_unchecked`] on purpose).
    pub async fn send_request(&self, method: &str, params: Value) -> PendingRequest {
        let id = self.next_numeric_id();
        self.send_request_inner(id, method, params, true).await
    }

    /// Like [`Self::send_request`] with an explicit id (number or string).
    pub async fn send_request_with_id(
        &self,
        id: impl Into<RpcId>,
        method: &str,
        params: Value,
    ) -> PendingRequest {
        self.send_request_inner(id.into(), method, params, true)
            .await
    }

    /// Sends a request without schema-checking it (for invalid-params tests).
    pub async fn send_request_unchecked(&self, method: &str, params: Value) -> PendingRequest {
        let id = self.next_numeric_id();
        self.send_request_inner(id, method, params, false).await
    }

    async fn send_request_inner(
        &self,
        id: RpcId,
        method: &str,
        params: Value,
        check: bool,
    ) -> PendingRequest {
        let msg = json!({"jsonrpc": "2.0", "id": id.to_json(), "method": method, "params": params});
        let line = msg.to_string();
        let (tx, rx) = oneshot::channel();
        {
            let mut st = self.shared.lock();
            if check && let Err(e) = schema::check_client_message(&msg, &st.agent_requests) {
                drop(st);
                self.shared
                    .fail(&format!("the test tried to send an invalid request: {e}"));
            }
            if st.pending.contains_key(&id) {
                drop(st);
                self.shared
                    .fail(&format!("request id {id} is already pending"));
            }
            match method {
                "initialize" => {
                    let caps = &params["clientCapabilities"];
                    st.caps = Caps {
                        read: caps["fs"]["readTextFile"] == true,
                        write: caps["fs"]["writeTextFile"] == true,
                        terminal: caps["terminal"] == true,
                        elicit_form: !caps["elicitation"]["form"].is_null(),
                        elicit_url: !caps["elicitation"]["url"].is_null(),
                    };
                }
                // Replayed history arrives before the response.
                "session/load" | "session/resume" => {
                    if let Some(sid) = params["sessionId"].as_str() {
                        st.known_sessions.insert(sid.to_owned());
                        if let Some(cwd) = params["cwd"].as_str() {
                            st.session_cwds.insert(sid.to_owned(), PathBuf::from(cwd));
                        }
                    }
                }
                _ => {}
            }
            st.pending.insert(id.clone(), tx);
            st.editor_requests.insert(id.clone(), method.to_owned());
            st.editor_request_params.insert(id.clone(), params);
            st.transcript.push((Dir::Out, line.clone()));
        }
        if let Err(e) = self.shared.write_line(&line).await {
            self.shared
                .fail(&format!("could not send {method} to the agent: {e}"));
        }
        PendingRequest {
            id,
            method: method.to_owned(),
            rx,
            shared: self.shared.clone(),
        }
    }

    /// Sends a request and waits for its response.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.send_request(method, params).await.response().await
    }

    /// Sends a request with a given id and waits for its response.
    pub async fn request_with_id(
        &self,
        id: impl Into<RpcId>,
        method: &str,
        params: Value,
    ) -> Result<Value, RpcError> {
        self.send_request_with_id(id, method, params)
            .await
            .response()
            .await
    }

    /// Sends a request without schema-checking it and waits for the response.
    pub async fn request_unchecked(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.send_request_unchecked(method, params)
            .await
            .response()
            .await
    }

    /// Sends a notification (schema-checked).
    pub async fn notify(&self, method: &str, params: Value) {
        let msg = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let line = msg.to_string();
        {
            let mut st = self.shared.lock();
            if let Err(e) = schema::check_client_message(&msg, &st.agent_requests) {
                drop(st);
                self.shared.fail(&format!(
                    "the test tried to send an invalid notification: {e}"
                ));
            }
            st.transcript.push((Dir::Out, line.clone()));
        }
        if let Err(e) = self.shared.write_line(&line).await {
            self.shared
                .fail(&format!("could not send {method} to the agent: {e}"));
        }
    }

    /// Writes a raw line (a newline is appended unless present). Nothing is
    /// checked or registered: for garbage-input tests.
    pub async fn send_raw(&self, line: &str) -> std::io::Result<()> {
        self.shared
            .lock()
            .transcript
            .push((Dir::Out, line.trim_end_matches('\n').to_owned()));
        self.shared.write_line(line).await
    }

    /// Writes raw bytes verbatim (no newline added): for non-UTF-8 input.
    pub async fn send_raw_bytes(&self, bytes: &[u8]) -> std::io::Result<()> {
        self.shared
            .lock()
            .transcript
            .push((Dir::Out, String::from_utf8_lossy(bytes).into_owned()));
        let mut w = self.shared.writer.lock().await;
        let Some(w) = w.as_mut() else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the editor closed the agent's stdin",
            ));
        };
        w.write_all(bytes).await?;
        w.flush().await
    }

    /// Closes the agent's stdin (EOF).
    pub async fn close_stdin(&self) {
        if let Some(mut w) = self.shared.writer.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }

    // ------------------------------------------------------- typed shortcuts

    /// `initialize` with protocol version 1 and these `clientCapabilities`
    /// (see [`full_capabilities`]); returns the result, fails on error.
    pub async fn initialize(&self, client_capabilities: Value) -> Value {
        let params = json!({
            "protocolVersion": 1,
            "clientCapabilities": client_capabilities,
            "clientInfo": {"name": "fake-editor", "title": "Fake Editor", "version": "0.0.0"}
        });
        match self.request("initialize", params).await {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("initialize failed: {e}")),
        }
    }

    /// `session/new` (string request id) → the new session id.
    pub async fn new_session(&self, cwd: impl AsRef<Path>) -> String {
        self.new_session_with_servers(cwd, json!([])).await
    }

    /// `session/set_mode` (ACP §9); fails the test on an error.
    pub async fn set_mode(&self, session_id: &str, mode: &str) {
        let params = json!({"sessionId": session_id, "modeId": mode});
        if let Err(e) = self.request("session/set_mode", params).await {
            self.shared.fail(&format!("set_mode {mode}: {e}"));
        }
    }

    /// `session/new` with these `mcpServers` → the session id.
    pub async fn new_session_with_servers(&self, cwd: impl AsRef<Path>, servers: Value) -> String {
        let result = self.new_session_params(cwd.as_ref(), servers).await;
        result["sessionId"]
            .as_str()
            .unwrap_or_else(|| self.shared.fail("session/new result has no sessionId"))
            .to_owned()
    }

    /// `session/new` (string request id) → the whole result.
    pub async fn new_session_full(&self, cwd: impl AsRef<Path>) -> Value {
        self.new_session_params(cwd.as_ref(), json!([])).await
    }

    async fn new_session_params(&self, cwd: &Path, servers: Value) -> Value {
        let n = self.shared.next_id.fetch_add(1, Ordering::SeqCst);
        let params = json!({"cwd": cwd, "mcpServers": servers});
        match self
            .request_with_id(format!("new-session-{n}"), "session/new", params)
            .await
        {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("session/new failed: {e}")),
        }
    }

    /// Starts `session/prompt` with one text block; await the handle.
    pub async fn start_prompt(&self, session_id: &str, text: &str) -> PendingRequest {
        self.start_prompt_blocks(session_id, vec![json!({"type": "text", "text": text})])
            .await
    }

    /// Starts `session/prompt` with arbitrary content blocks.
    pub async fn start_prompt_blocks(
        &self,
        session_id: &str,
        blocks: Vec<Value>,
    ) -> PendingRequest {
        self.send_request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": blocks}),
        )
        .await
    }

    /// `session/prompt` with one text block → the result (`{stopReason}`);
    /// fails the test on an error response.
    pub async fn prompt(&self, session_id: &str, text: &str) -> Value {
        match self.start_prompt(session_id, text).await.response().await {
            Ok(r) => r,
            Err(e) => self.shared.fail(&format!("session/prompt failed: {e}")),
        }
    }

    /// `session/prompt` with one text block that must fail → its error.
    pub async fn prompt_error(&self, session_id: &str, text: &str) -> RpcError {
        match self.start_prompt(session_id, text).await.response().await {
            Ok(r) => self.shared.fail(&format!(
                "session/prompt succeeded ({r}) where it must fail"
            )),
            Err(e) => e,
        }
    }

    /// Sends `session/cancel`, then (as the spec requires of a client)
    /// answers the session's still-open permission requests with `cancelled`.
    pub async fn cancel(&self, session_id: &str) {
        self.notify("session/cancel", json!({"sessionId": session_id}))
            .await;
        let held: Vec<RpcId> = self
            .shared
            .lock()
            .held_permissions
            .iter()
            .filter(|(_, sid)| sid == session_id)
            .map(|(id, _)| id.clone())
            .collect();
        for id in held {
            self.shared
                .respond(id, Ok(json!({"outcome": {"outcome": "cancelled"}})))
                .await;
        }
    }

    /// Queues the result of the next `elicitation/create` (e.g.
    /// `{"action": "accept", "content": {...}}`); `None` leaves it
    /// unanswered until the agent withdraws it with `$/cancel_request`.
    pub fn push_elicitation_answer(&self, answer: Option<Value>) {
        self.shared.lock().elicitation_answers.push_back(answer);
    }

    /// `elicitation/create` requests still unanswered.
    pub fn held_elicitations(&self) -> usize {
        self.shared.lock().held_elicitations.len()
    }

    /// Answers every held (`NeverAnswer`) permission request.
    pub async fn answer_held_permissions(&self, decision: PermissionDecision) {
        let held: Vec<(RpcId, String)> = self.shared.lock().held_permissions.clone();
        for (id, _) in held {
            let params = self
                .shared
                .lock()
                .permissions
                .iter()
                .find(|p| p.id == id)
                .map(|p| p.params.clone())
                .unwrap_or(Value::Null);
            let result = permission_result(&self.shared, &params, &decision);
            self.shared.respond(id, Ok(result)).await;
        }
    }

    // --------------------------------------------------------------- waiting

    async fn wait_state<T>(&self, what: &str, mut f: impl FnMut(&mut State) -> Option<T>) -> T {
        let mut rx = self.shared.version.subscribe();
        let timeout = self.shared.lock().timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            rx.borrow_and_update();
            {
                let mut st = self.shared.lock();
                if let Some(t) = f(&mut st) {
                    return t;
                }
                let (errors, closed) = (!st.errors.is_empty(), st.closed);
                drop(st);
                if errors {
                    self.shared
                        .fail(&format!("protocol error while waiting for {what}"));
                }
                if closed {
                    self.shared.fail(&format!(
                        "the agent closed its stdout while waiting for {what}"
                    ));
                }
            }
            if tokio::time::timeout_at(deadline, rx.changed())
                .await
                .is_err()
            {
                self.shared
                    .fail(&format!("timed out after {timeout:?} waiting for {what}"));
            }
        }
    }

    /// Waits for the first message from the agent (of all received so far
    /// and to come) matching `pred`; returns it.
    pub async fn wait_for(&self, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_state("a matching message", |st| {
            st.messages.iter().find(|m| pred(m)).cloned()
        })
        .await
    }

    /// Like [`Self::wait_for`], only among messages received after the first
    /// `from` (see [`Self::message_count`]).
    pub async fn wait_for_after(&self, from: usize, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_state("a matching message", |st| {
            st.messages.iter().skip(from).find(|m| pred(m)).cloned()
        })
        .await
    }

    /// Number of messages received from the agent so far.
    pub fn message_count(&self) -> usize {
        self.shared.lock().messages.len()
    }

    /// The next `session/update` params not yet returned by this method.
    pub async fn next_update(&self) -> Value {
        self.wait_state("the next session/update", |st| {
            let u = st.updates.get(st.update_cursor).cloned()?;
            st.update_cursor += 1;
            Some(u)
        })
        .await
    }

    /// Waits for a `session/update` of `session_id` whose `update` object
    /// matches `pred`; returns the `update` object.
    pub async fn wait_for_update(&self, session_id: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.wait_state(
            &format!("a matching session/update for {session_id}"),
            |st| {
                st.updates
                    .iter()
                    .filter(|u| u["sessionId"] == session_id)
                    .map(|u| &u["update"])
                    .find(|u| pred(u))
                    .cloned()
            },
        )
        .await
    }

    /// Waits until the agent sent a request with this method; returns it.
    pub async fn wait_for_reverse_request(&self, method: &str) -> Value {
        self.wait_state(&format!("a {method} request from the agent"), |st| {
            st.reverse_requests
                .iter()
                .find(|r| r["method"] == method)
                .cloned()
        })
        .await
    }

    /// Waits until the agent's stdout is closed.
    pub async fn wait_closed(&self) {
        let mut rx = self.shared.version.subscribe();
        let timeout = self.shared.lock().timeout;
        let done = tokio::time::timeout(timeout, async {
            loop {
                rx.borrow_and_update();
                if self.shared.lock().closed {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        if done.is_err() {
            self.shared.fail("the agent did not close its stdout");
        }
    }

    /// Waits for the agent process to exit (spawned agents only).
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let Some(child) = self.child.as_mut() else {
            self.shared
                .fail("wait_exit: the agent was not spawned by this editor");
        };
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => self.shared.fail(&format!("waiting for the agent: {e}")),
            Err(_) => self
                .shared
                .fail(&format!("the agent did not exit within {timeout:?}")),
        }
    }

    /// Kills the spawned agent.
    pub async fn kill(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill().await;
        }
    }

    /// The spawned agent's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    // ------------------------------------------------------------ inspection

    /// Every parsed message from the agent.
    pub fn messages(&self) -> Vec<Value> {
        self.shared.lock().messages.clone()
    }

    /// Every raw line from the agent.
    pub fn raw_lines(&self) -> Vec<String> {
        self.shared
            .lock()
            .transcript
            .iter()
            .filter(|(d, _)| *d == Dir::In)
            .map(|(_, l)| l.clone())
            .collect()
    }

    /// Fails the test with this message and the transcript.
    pub fn fail(&self, msg: &str) -> ! {
        self.shared.fail(msg)
    }

    /// All `session/update` params, in order.
    pub fn updates(&self) -> Vec<Value> {
        self.shared.lock().updates.clone()
    }

    /// The `update` objects of one session, in order.
    pub fn updates_for(&self, session_id: &str) -> Vec<Value> {
        self.shared
            .lock()
            .updates
            .iter()
            .filter(|u| u["sessionId"] == session_id)
            .map(|u| u["update"].clone())
            .collect()
    }

    /// The `update` objects of one session with this `sessionUpdate` kind.
    pub fn updates_of_kind(&self, session_id: &str, kind: &str) -> Vec<Value> {
        self.updates_for(session_id)
            .into_iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// Concatenated text of the session's `agent_message_chunk`s.
    pub fn agent_text(&self, session_id: &str) -> String {
        self.chunk_text(session_id, "agent_message_chunk")
    }

    /// Concatenated text of the session's `agent_thought_chunk`s.
    pub fn thought_text(&self, session_id: &str) -> String {
        self.chunk_text(session_id, "agent_thought_chunk")
    }

    fn chunk_text(&self, session_id: &str, kind: &str) -> String {
        self.updates_of_kind(session_id, kind)
            .iter()
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }

    /// Every request the agent sent (whole messages).
    pub fn reverse_requests(&self) -> Vec<Value> {
        self.shared.lock().reverse_requests.clone()
    }

    pub fn permission_requests(&self) -> Vec<PermissionRecord> {
        self.shared.lock().permissions.clone()
    }

    /// The tool call ids the agent asked permission for, in order.
    pub fn asked_ids(&self) -> Vec<String> {
        self.permission_requests()
            .iter()
            .map(|p| {
                let id = &p.params["toolCall"]["toolCallId"];
                id.as_str().unwrap_or_default().to_owned()
            })
            .collect()
    }

    pub fn writes(&self) -> Vec<FileWrite> {
        self.shared.lock().writes.clone()
    }

    pub fn reads(&self) -> Vec<FileRead> {
        self.shared.lock().reads.clone()
    }

    pub fn terminal_calls(&self) -> Vec<TerminalCall> {
        self.shared.lock().terminal_calls.clone()
    }

    /// Ids of all terminals created, in order.
    pub fn terminals_created(&self) -> Vec<String> {
        self.shared.lock().terminal_order.clone()
    }

    /// Ids of terminals the agent created but never released.
    pub fn unreleased_terminals(&self) -> Vec<String> {
        let st = self.shared.lock();
        st.terminal_order
            .iter()
            .filter(|id| st.terminals.get(*id).is_some_and(|t| !t.released))
            .cloned()
            .collect()
    }

    #[track_caller]
    pub fn assert_all_terminals_released(&self) {
        let left = self.unreleased_terminals();
        if !left.is_empty() {
            self.shared
                .fail(&format!("terminals never released: {left:?}"));
        }
    }

    /// Protocol/harness errors recorded so far.
    pub fn errors(&self) -> Vec<String> {
        self.shared.lock().errors.clone()
    }

    /// Takes (clears) the recorded errors, so the editor's drop does not
    /// fail the test: for tests that provoke them on purpose.
    pub fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.lock().errors)
    }

    /// Fails now if any protocol error was recorded.
    pub fn assert_no_errors(&self) {
        if !self.shared.lock().errors.is_empty() {
            self.shared.fail("protocol errors recorded");
        }
    }

    /// Everything the agent wrote to stderr so far (spawned agents only).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.shared.stderr.lock().unwrap_or_else(|e| e.into_inner()))
            .into_owned()
    }
}

// ------------------------------------------------------------------ reading

async fn reader_loop<R: AsyncRead + Unpin>(shared: Arc<Shared>, reader: R) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) => break,
            Ok(_) => {
                let terminated = buf.last() == Some(&b'\n');
                if terminated {
                    buf.pop();
                }
                let line = match String::from_utf8(buf.clone()) {
                    Ok(l) => l,
                    Err(_) => {
                        let lossy = String::from_utf8_lossy(&buf).into_owned();
                        shared.lock().transcript.push((Dir::In, lossy.clone()));
                        shared.error(format!("the agent wrote a non-UTF-8 line: {lossy:?}"));
                        continue;
                    }
                };
                shared.lock().transcript.push((Dir::In, line.clone()));
                if !terminated {
                    shared.error(format!(
                        "the agent's last line is not newline-terminated: {}",
                        shorten(&line, 500)
                    ));
                }
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => handle_message(&shared, v),
                    Err(e) => shared.error(format!(
                        "the agent wrote a line that is not JSON ({e}): {}",
                        shorten(&line, 500)
                    )),
                }
                shared.bump();
            }
            Err(e) => {
                shared.error(format!("reading the agent's stdout failed: {e}"));
                break;
            }
        }
    }
    {
        let mut st = shared.lock();
        st.closed = true;
        // Dropping the senders fails every pending request loudly.
        st.pending.clear();
    }
    shared.bump();
}

fn handle_message(shared: &Arc<Shared>, msg: Value) {
    let mut st = shared.lock();
    st.messages.push(msg.clone());
    if let Err(e) = schema::check_agent_message(&msg, &st.editor_requests) {
        st.errors.push(e);
    }
    let id = msg.get("id").and_then(RpcId::from_json);
    let method = msg.get("method").and_then(Value::as_str).map(str::to_owned);
    match (method, id) {
        (Some(method), Some(id)) => {
            // A request from the agent.
            st.reverse_requests.push(msg.clone());
            if st.agent_requests.contains_key(&id) {
                st.errors.push(format!(
                    "the agent reused request id {id} while its earlier request is unanswered"
                ));
            }
            st.agent_requests.insert(id.clone(), method.clone());
            drop(st);
            let params = msg.get("params").cloned().unwrap_or(Value::Null);
            let shared = shared.clone();
            tokio::spawn(async move {
                if let Some(result) = handle_agent_request(&shared, &id, &method, &params).await {
                    shared.respond(id, result).await;
                }
            });
        }
        (Some(method), None) => {
            if method == "session/update" {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                if let Some(sid) = params["sessionId"].as_str()
                    && !st.known_sessions.contains(sid)
                {
                    st.errors.push(format!(
                        "session/update for session {sid:?}, which the editor does not know (yet)"
                    ));
                }
                st.updates.push(params);
            } else if method == "mcp/message" {
                drop(st);
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                mcp_acp::handle_notification(shared, &params);
            } else if method == "$/cancel_request" {
                // The agent gave up on one of its requests: answer a held
                // permission request the way ACP expects (cancelled).
                let target = msg["params"].get("requestId").and_then(RpcId::from_json);
                if let Some(target) = target.clone()
                    && let Some(i) = st.held_elicitations.iter().position(|h| *h == target)
                {
                    st.held_elicitations.remove(i);
                    drop(st);
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        shared
                            .respond(target, Ok(json!({"action": "cancel"})))
                            .await;
                    });
                } else if let Some(target) = target
                    && st.held_permissions.iter().any(|(h, _)| *h == target)
                {
                    drop(st);
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        shared
                            .respond(target, Ok(json!({"outcome": {"outcome": "cancelled"}})))
                            .await;
                    });
                }
            }
        }
        (None, Some(id)) => {
            let method = st.editor_requests.remove(&id);
            let params = st.editor_request_params.remove(&id);
            let outcome = if let Some(error) = msg.get("error") {
                Err(RpcError::from_json(error))
            } else {
                Ok(msg.get("result").cloned().unwrap_or(Value::Null))
            };
            if let (Some("session/new" | "session/fork"), Ok(result)) =
                (method.as_deref(), &outcome)
                && let Some(sid) = result["sessionId"].as_str()
            {
                st.known_sessions.insert(sid.to_owned());
                if let Some(cwd) = params.as_ref().and_then(|p| p["cwd"].as_str()) {
                    st.session_cwds.insert(sid.to_owned(), PathBuf::from(cwd));
                }
            }
            if let Some(tx) = st.pending.remove(&id) {
                let _ = tx.send(outcome);
            }
        }
        (None, None) => {}
    }
}

// ------------------------------------------------------- reverse requests

async fn handle_agent_request(
    shared: &Arc<Shared>,
    id: &RpcId,
    method: &str,
    params: &Value,
) -> Option<Result<Value, RpcError>> {
    let (caps, failure) = {
        let st = shared.lock();
        (st.caps, st.failing.get(method).cloned())
    };
    if let Some(error) = failure {
        return Some(Err(error));
    }
    let allowed = match method {
        "fs/read_text_file" => caps.read,
        "fs/write_text_file" => caps.write,
        m if m.starts_with("terminal/") => caps.terminal,
        "elicitation/create" => match params["mode"].as_str() {
            Some("form") => caps.elicit_form,
            Some("url") => caps.elicit_url,
            _ => false,
        },
        _ => true,
    };
    if !allowed {
        shared.error(format!(
            "the agent called {method} although the editor did not advertise that capability"
        ));
        return Some(Err(RpcError::new(
            -32601,
            format!("Method not found: {method}"),
        )));
    }
    match method {
        "fs/read_text_file" => Some(read_text_file(shared, params).await),
        "fs/write_text_file" => Some(write_text_file(shared, params).await),
        "session/request_permission" => request_permission(shared, id, params),
        m if m.starts_with("mcp/") => Some(mcp_acp::handle_request(shared, m, params).await),
        "elicitation/create" => {
            let mut st = shared.lock();
            match st.elicitation_answers.pop_front() {
                Some(Some(answer)) => Some(Ok(answer)),
                Some(None) => {
                    st.held_elicitations.push(id.clone());
                    None
                }
                None => Some(Ok(json!({"action": "decline"}))),
            }
        }
        m if m.starts_with("terminal/") => Some(terminal(shared, m, params).await),
        _ => Some(Err(RpcError::new(
            -32601,
            format!("Method not found: {method}"),
        ))),
    }
}

fn absolute_path(shared: &Shared, method: &str, params: &Value) -> Result<PathBuf, RpcError> {
    let Some(path) = params["path"].as_str() else {
        return Err(RpcError::new(-32602, "missing path"));
    };
    let path = Path::new(path);
    if !path.is_absolute() {
        shared.error(format!(
            "{method}: path {path:?} is not absolute (ACP requires absolute paths)"
        ));
        return Err(RpcError::new(-32602, "path must be absolute"));
    }
    Ok(normalize(path))
}

async fn read_text_file(shared: &Shared, params: &Value) -> Result<Value, RpcError> {
    let path = absolute_path(shared, "fs/read_text_file", params)?;
    let line = params["line"].as_u64();
    let limit = params["limit"].as_u64();
    let buffered = shared.lock().buffers.get(&path).cloned();
    let from_buffer = buffered.is_some();
    let content = match buffered {
        Some(c) => c,
        None => match tokio::fs::read_to_string(&path).await {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(RpcError::new(
                    -32002,
                    format!("Resource not found: {}", path.display()),
                ));
            }
            Err(e) => {
                return Err(RpcError::new(
                    -32603,
                    format!("cannot read {}: {e}", path.display()),
                ));
            }
        },
    };
    shared.lock().reads.push(FileRead {
        session_id: params["sessionId"].as_str().unwrap_or_default().to_owned(),
        path,
        line,
        limit,
        from_buffer,
    });
    Ok(json!({"content": slice_lines(&content, line, limit)}))
}

async fn write_text_file(shared: &Shared, params: &Value) -> Result<Value, RpcError> {
    let path = absolute_path(shared, "fs/write_text_file", params)?;
    let content = params["content"].as_str().unwrap_or_default().to_owned();
    let to_disk = {
        let mut st = shared.lock();
        st.writes.push(FileWrite {
            session_id: params["sessionId"].as_str().unwrap_or_default().to_owned(),
            path: path.clone(),
            content: content.clone(),
        });
        if let Some(buf) = st.buffers.get_mut(&path) {
            buf.clone_from(&content);
        }
        st.write_to_disk
    };
    shared.bump();
    if to_disk {
        if let Some(parent) = path.parent() {
            let _ = tokio::fs::create_dir_all(parent).await;
        }
        if let Err(e) = tokio::fs::write(&path, &content).await {
            return Err(RpcError::new(
                -32603,
                format!("cannot write {}: {e}", path.display()),
            ));
        }
    }
    Ok(json!({}))
}

fn permission_result(shared: &Shared, params: &Value, decision: &PermissionDecision) -> Value {
    let cancelled = json!({"outcome": {"outcome": "cancelled"}});
    let option_id = match decision {
        PermissionDecision::Cancelled | PermissionDecision::NeverAnswer => return cancelled,
        other => {
            let kind = other.kind().expect("kinded decision");
            let found = params["options"].as_array().and_then(|opts| {
                opts.iter()
                    .find(|o| o["kind"] == kind)
                    .and_then(|o| o["optionId"].as_str().map(str::to_owned))
            });
            if found.is_none() {
                shared.error(format!(
                    "scripted permission decision {kind} but the request offers no such option: {}",
                    params["options"]
                ));
            }
            found
        }
    };
    match option_id {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => cancelled,
    }
}

fn request_permission(
    shared: &Shared,
    id: &RpcId,
    params: &Value,
) -> Option<Result<Value, RpcError>> {
    let decision = {
        let mut st = shared.lock();
        let d = st
            .permission_queue
            .pop_front()
            .or_else(|| st.default_permission.clone());
        st.permissions.push(PermissionRecord {
            id: id.clone(),
            params: params.clone(),
            decision: d.clone(),
            result: None,
        });
        d
    };
    shared.bump();
    let Some(decision) = decision else {
        shared.error(format!(
            "unscripted session/request_permission (push_permission or set_default_permission): {params}"
        ));
        return Some(Ok(json!({"outcome": {"outcome": "cancelled"}})));
    };
    if decision == PermissionDecision::NeverAnswer {
        let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
        shared.lock().held_permissions.push((id.clone(), sid));
        return None;
    }
    Some(Ok(permission_result(shared, params, &decision)))
}

async fn terminal(shared: &Arc<Shared>, method: &str, params: &Value) -> Result<Value, RpcError> {
    shared.lock().terminal_calls.push(TerminalCall {
        method: method.to_owned(),
        params: params.clone(),
    });
    shared.bump();
    if method == "terminal/create" {
        return create_terminal(shared, params).await;
    }
    let tid = params["terminalId"].as_str().unwrap_or_default().to_owned();
    let (output, mut exit, pgid) = {
        let st = shared.lock();
        match st.terminals.get(&tid) {
            Some(t) if !t.released => (t.output.clone(), t.exit.clone(), t.pgid),
            Some(_) => {
                drop(st);
                shared.error(format!("{method} on released terminal {tid:?}"));
                return Err(RpcError::new(
                    -32602,
                    format!("terminal {tid} was released"),
                ));
            }
            None => {
                drop(st);
                shared.error(format!("{method} on unknown terminal {tid:?}"));
                return Err(RpcError::new(-32602, format!("unknown terminal {tid}")));
            }
        }
    };
    match method {
        "terminal/output" => {
            let (text, truncated) = {
                let o = output.lock().unwrap_or_else(|e| e.into_inner());
                (String::from_utf8_lossy(&o.bytes).into_owned(), o.truncated)
            };
            let mut result = json!({"output": text, "truncated": truncated});
            if let Some(info) = exit.borrow().clone() {
                result["exitStatus"] = info.to_json();
            }
            Ok(result)
        }
        "terminal/wait_for_exit" => {
            let info = exit
                .wait_for(Option::is_some)
                .await
                .map(|i| i.clone())
                .ok()
                .flatten();
            match info {
                Some(info) => Ok(info.to_json()),
                None => Err(RpcError::new(-32603, "terminal vanished")),
            }
        }
        "terminal/kill" => {
            if exit.borrow().is_none()
                && let Some(g) = pgid
            {
                kill_group(g);
            }
            Ok(json!({}))
        }
        "terminal/release" => {
            if exit.borrow().is_none()
                && let Some(g) = pgid
            {
                kill_group(g);
            }
            if let Some(t) = shared.lock().terminals.get_mut(&tid) {
                t.released = true;
            }
            shared.bump();
            Ok(json!({}))
        }
        _ => Err(RpcError::new(-32601, format!("Method not found: {method}"))),
    }
}

async fn create_terminal(shared: &Arc<Shared>, params: &Value) -> Result<Value, RpcError> {
    let command = params["command"].as_str().unwrap_or_default().to_owned();
    let args: Vec<String> = params["args"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let session = params["sessionId"].as_str().unwrap_or_default();
    let cwd = params["cwd"]
        .as_str()
        .map(PathBuf::from)
        .or_else(|| shared.lock().session_cwds.get(session).cloned());
    let limit = params["outputByteLimit"]
        .as_u64()
        .map(|l| usize::try_from(l).unwrap_or(usize::MAX));

    let mut cmd = if args.is_empty() {
        let mut c = Command::new("sh");
        c.arg("-c").arg(&command);
        c
    } else {
        let mut c = Command::new(&command);
        c.args(&args);
        c
    };
    if let Some(cwd) = &cwd {
        cmd.current_dir(cwd);
    }
    if let Some(env) = params["env"].as_array() {
        for var in env {
            if let (Some(k), Some(v)) = (var["name"].as_str(), var["value"].as_str()) {
                cmd.env(k, v);
            }
        }
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Err(RpcError::new(
                -32603,
                format!("cannot start {command:?}: {e}"),
            ));
        }
    };
    let pgid = child.id().and_then(|p| i32::try_from(p).ok());
    let output = Arc::new(Mutex::new(TermOutput {
        limit,
        ..TermOutput::default()
    }));
    let mut readers = Vec::new();
    let stdout = child
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>);
    let stderr = child
        .stderr
        .take()
        .map(|s| Box::new(s) as Box<dyn AsyncRead + Send + Unpin>);
    for pipe in [stdout, stderr].into_iter().flatten() {
        let output = output.clone();
        let shared = shared.clone();
        readers.push(tokio::spawn(async move {
            let mut pipe = pipe;
            let mut buf = vec![0u8; 8192];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        output
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(&buf[..n]);
                        shared.bump();
                    }
                }
            }
        }));
    }
    let (exit_tx, exit_rx) = watch::channel(None);
    {
        let shared = shared.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            // Let the readers drain what the process wrote (bounded: a
            // background grandchild may keep the pipes open).
            let _ = tokio::time::timeout(Duration::from_secs(2), async {
                for r in readers {
                    let _ = r.await;
                }
            })
            .await;
            let info = match status {
                Ok(s) => {
                    use std::os::unix::process::ExitStatusExt;
                    ExitInfo {
                        code: s.code().and_then(|c| u32::try_from(c).ok()),
                        signal: s.signal().map(signal_name),
                    }
                }
                Err(_) => ExitInfo {
                    code: None,
                    signal: None,
                },
            };
            let _ = exit_tx.send(Some(info));
            shared.bump();
        });
    }
    let id = {
        let mut st = shared.lock();
        let id = format!("term-{}", st.next_terminal);
        st.next_terminal += 1;
        st.terminals.insert(
            id.clone(),
            Terminal {
                pgid,
                output,
                exit: exit_rx,
                released: false,
            },
        );
        st.terminal_order.push(id.clone());
        id
    };
    shared.bump();
    Ok(json!({"terminalId": id}))
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
