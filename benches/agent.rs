//! End-to-end benchmarks of the `acp-coder` binary (issue 7). Normally run by
//! `scripts/bench.sh`, which builds everything and writes BENCHMARKS.md.
//!
//! ```text
//! cargo bench --bench agent -- --agent PATH [--report FILE] [--work DIR]
//! ```
//!
//! Everything is local and started here: a fake OpenAI-compatible server
//! on 127.0.0.1 that streams as fast as it can (or paced), a fake editor
//! driving the agent over its stdio, and fake MCP servers (this binary
//! re-executed with `--fake-mcp-server`). One clock (this process's
//! `Instant`) times both ends: the fake server embeds its send time in each
//! streamed chunk and the editor's reader thread stamps each line it reads.
//!
//! Each target is measured next to a baseline taken in the same run (`cat`
//! for start-up, reqwest reading the same stream, a stdio round trip…), so
//! the noise of a busy machine shows in both. Sizes come from the environment:
//!
//! | variable | default | quick (`BENCH_QUICK=1`) |
//! |---|---|---|
//! | `BENCH_RUNS` (start-ups, cancels) | 30 | 5 |
//! | `BENCH_STREAM_CHUNKS` (per throughput run) | 100000 | 2000 |
//! | `BENCH_STREAM_ROUNDS` | 11 | 3 |
//! | `BENCH_PACED_CHUNKS` (latency run, 1 chunk/ms) | 3000 | 300 |
//! | `BENCH_PACED_ROUNDS` (latency runs, median reported) | 5 | 1 |
//! | `BENCH_TURNS` (soak) | 1000 | 100 |
//! | `BENCH_LOAD_MESSAGES` | 2000 | 2000 |
//! | `BENCH_MCP_DELAY_MS` | 500 | 500 |
//! | `BENCH_MCP_ROUNDS` | 5 | 1 |
//! | `BENCH_ONLY` (comma list) | all | all |
//! | `BENCH_THREAD_CPU=1` (stream rounds: agent CPU per chunk by thread) | off | off |
//!
//! Benchmarks: `startup`, `sandbox`, `request`, `stream`, `cancel`, `mcp`, `load`,
//! `soak`, `size`, `a2a` (benches/agent/a2a.rs), `checkpoint` (`BENCH_CHECKPOINT_FILES`:
//! the large project, default 100000, quick 10000). With `--report FILE` the result rows are written there as
//! Markdown table rows (`scripts/bench.sh` adds the search and build rows).
#![allow(clippy::print_stdout)]

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use acp_coder::acp::{ContentBlock, ToolCall, ToolCallContent, ToolCallStatus, ToolKind};
use acp_coder::agent::store::{
    Record, Store, StoredAssistant, StoredMessage, StoredPart, StoredToolCall,
};

#[path = "agent/a2a.rs"]
mod a2a;
#[path = "agent/checkpoint.rs"]
mod checkpoint;
#[path = "agent/floor.rs"]
mod floor;

/// Longest any single wait may take before the bench gives up.
const WAIT: Duration = Duration::from_secs(60);

// ------------------------------------------------------------------ clock

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since this process started timing (one clock for every thread).
fn now_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The `p` quantile (0..=1) of `v`, nearest rank.
fn quantile(v: &[u64], p: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let rank = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

fn median(v: &[u64]) -> u64 {
    quantile(v, 0.5)
}

fn env_usize(name: &str, default: usize, quick: usize, is_quick: bool) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if is_quick { quick } else { default })
}

// ------------------------------------------------------------------ results

struct Row {
    what: String,
    measured: String,
    baseline: String,
    ratio: String,
    limit: String,
    verdict: String,
}

fn verdict(pass: bool) -> String {
    // Smoke sizes (and debug builds) say nothing about the limits.
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    match (quick, pass) {
        (false, true) => "pass".into(),
        (false, false) => "**FAIL**".into(),
        (true, true) => "not judged (would pass)".into(),
        (true, false) => "not judged (would miss)".into(),
    }
}

impl Row {
    fn new(what: &str, measured: String, baseline: String, ratio: String, limit: &str) -> Row {
        Row {
            what: what.into(),
            measured,
            baseline,
            ratio,
            limit: limit.into(),
            verdict: "—".into(),
        }
    }
    fn pass(mut self, pass: bool) -> Row {
        self.verdict = verdict(pass);
        self
    }
    fn markdown(&self) -> String {
        format!(
            "| {} | {} | {} | {} | {} | {} |",
            self.what, self.measured, self.baseline, self.ratio, self.limit, self.verdict
        )
    }
}

// ------------------------------------------------------------------ options

struct Opts {
    agent: PathBuf,
    work: PathBuf,
    report: Option<PathBuf>,
    only: Option<Vec<String>>,
    runs: usize,
    stream_chunks: usize,
    stream_rounds: usize,
    paced_chunks: usize,
    paced_rounds: usize,
    turns: usize,
    load_messages: usize,
    mcp_delay_ms: u64,
    mcp_rounds: usize,
}

impl Opts {
    fn wants(&self, name: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|l| l.iter().any(|x| x == name))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.iter().any(|a| a == "--fake-mcp-server") {
        fake_mcp_server(
            get("--delay-ms").and_then(|v| v.parse().ok()).unwrap_or(0),
            get("--marker").map(PathBuf::from),
        );
        return;
    }
    epoch();
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let agent = get("--agent")
        .or_else(|| std::env::var("ACP_CODER_BIN").ok())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_acp-coder")));
    let agent = std::fs::canonicalize(&agent)
        .unwrap_or_else(|e| panic!("agent binary {}: {e}", agent.display()));
    let work = get("--work").map(PathBuf::from).unwrap_or_else(|| {
        std::env::temp_dir().join(format!("acp-coder-bench-{}", std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("create the work dir");
    let opts = Opts {
        agent,
        work: std::fs::canonicalize(&work).expect("work dir"),
        report: get("--report").map(PathBuf::from),
        only: std::env::var("BENCH_ONLY")
            .ok()
            .filter(|v| !v.is_empty())
            .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect()),
        runs: env_usize("BENCH_RUNS", 30, 5, quick).max(1),
        stream_chunks: env_usize("BENCH_STREAM_CHUNKS", 100_000, 2_000, quick).max(10),
        stream_rounds: env_usize("BENCH_STREAM_ROUNDS", 11, 3, quick).max(1),
        paced_chunks: env_usize("BENCH_PACED_CHUNKS", 3_000, 300, quick).max(10),
        paced_rounds: env_usize("BENCH_PACED_ROUNDS", 5, 1, quick).max(1),
        turns: env_usize("BENCH_TURNS", 1_000, 100, quick).max(30),
        load_messages: env_usize("BENCH_LOAD_MESSAGES", 2_000, 2_000, quick).max(4),
        mcp_delay_ms: env_usize("BENCH_MCP_DELAY_MS", 500, 500, quick) as u64,
        mcp_rounds: env_usize("BENCH_MCP_ROUNDS", 5, 1, quick).max(1),
    };
    println!(
        "agent: {}\nwork dir: {}\nmode: {}",
        opts.agent.display(),
        opts.work.display(),
        if quick { "quick (smoke sizes)" } else { "full" }
    );
    let model = FakeModel::start();
    let mut rows = Vec::new();
    type Bench = fn(&Opts, &FakeModel) -> Vec<Row>;
    let benches: [(&str, Bench); 11] = [
        ("startup", bench_startup),
        ("sandbox", bench_sandbox),
        ("request", bench_request_size),
        ("stream", bench_stream),
        ("cancel", bench_cancel),
        ("mcp", bench_mcp),
        ("load", bench_load),
        ("soak", bench_soak),
        ("size", bench_size),
        ("a2a", a2a::bench_a2a),
        ("checkpoint", checkpoint::bench_checkpoint),
    ];
    for (name, bench) in benches {
        if !opts.wants(name) {
            continue;
        }
        println!("\n== {name}");
        let started = Instant::now();
        let new_rows = bench(&opts, &model);
        for r in &new_rows {
            println!("  {}", r.markdown());
        }
        println!("  ({:.1} s)", started.elapsed().as_secs_f64());
        rows.extend(new_rows);
    }
    println!("\n| target | measured | baseline (same run) | ratio | limit | result |");
    println!("|---|---|---|---|---|---|");
    let mut table = String::new();
    for r in &rows {
        println!("{}", r.markdown());
        table.push_str(&r.markdown());
        table.push('\n');
    }
    if let Some(path) = &opts.report {
        std::fs::write(path, table).expect("write the report");
    }
    if !std::env::var("BENCH_KEEP").is_ok_and(|v| v == "1") {
        let _ = std::fs::remove_dir_all(&opts.work);
    }
}

// ------------------------------------------------------------------ fake model

/// What the fake server answers to the next chat request.
#[derive(Clone, Debug)]
enum Script {
    /// A short text reply.
    Text(String),
    /// `chunks` text chunks, each `@<send time in ns>;`, as fast as the socket
    /// takes them or one every `pace`.
    Stream {
        chunks: usize,
        pace: Option<Duration>,
    },
    /// A few text chunks, then nothing until the client goes away.
    Hang { chunks: usize },
    /// One tool call.
    ToolCall { name: String, args: Value },
}

struct ModelState {
    scripts: Mutex<VecDeque<Script>>,
    default: Mutex<Script>,
    chat_requests: AtomicUsize,
    capture_next: AtomicBool,
    captured: Mutex<Option<Vec<u8>>>,
}

struct FakeModel {
    addr: SocketAddr,
    state: Arc<ModelState>,
}

impl FakeModel {
    fn start() -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake model");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(ModelState {
            scripts: Mutex::new(VecDeque::new()),
            default: Mutex::new(Script::Text("ok".into())),
            chat_requests: AtomicUsize::new(0),
            capture_next: AtomicBool::new(false),
            captured: Mutex::new(None),
        });
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let st = st.clone();
                std::thread::spawn(move || serve_connection(&st, stream));
            }
        });
        FakeModel { addr, state }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn push(&self, s: Script) {
        self.state.scripts.lock().unwrap().push_back(s);
    }

    fn clear(&self) {
        self.state.scripts.lock().unwrap().clear();
    }
}

struct HttpRequest {
    method: String,
    path: String,
    body: Vec<u8>,
    close: bool,
}

fn read_request(rd: &mut BufReader<TcpStream>) -> Option<HttpRequest> {
    let mut line = String::new();
    loop {
        line.clear();
        if rd.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut len = 0usize;
    let mut chunked = false;
    let mut close = false;
    loop {
        line.clear();
        if rd.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_ascii_lowercase());
        match k.as_str() {
            "content-length" => len = v.parse().ok()?,
            "transfer-encoding" => chunked = v.contains("chunked"),
            "connection" => close = v.contains("close"),
            _ => {}
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            rd.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                loop {
                    line.clear();
                    if rd.read_line(&mut line).ok()? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            rd.read_exact(&mut body[start..]).ok()?;
            line.clear();
            rd.read_line(&mut line).ok()?;
        }
    } else {
        body.resize(len, 0);
        rd.read_exact(&mut body).ok()?;
    }
    Some(HttpRequest {
        method,
        path,
        body,
        close,
    })
}

fn serve_connection(st: &ModelState, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut rd = BufReader::new(read_half);
    let mut wr = stream;
    while let Some(req) = read_request(&mut rd) {
        let path = req.path.split('?').next().unwrap_or("");
        let ok = match (req.method.as_str(), path) {
            ("GET", "/v1/models") => write_fixed(
                &mut wr,
                200,
                &json!({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                    .to_string(),
            ),
            ("POST", "/v1/chat/completions") => {
                st.chat_requests.fetch_add(1, Ordering::SeqCst);
                if st.capture_next.swap(false, Ordering::SeqCst) {
                    *st.captured.lock().unwrap() = Some(req.body.clone());
                }
                let script = st
                    .scripts
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or_else(|| st.default.lock().unwrap().clone());
                write_script(&mut wr, &mut rd, &script)
            }
            _ => write_fixed(&mut wr, 404, r#"{"error":{"message":"not found"}}"#),
        };
        if !ok || req.close {
            return;
        }
    }
}

fn write_fixed(wr: &mut TcpStream, status: u16, body: &str) -> bool {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    );
    wr.write_all(head.as_bytes())
        .and_then(|()| wr.write_all(body.as_bytes()))
        .is_ok()
}

const CHUNK_HEAD: &str = r#"data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[{"index":0,"delta":"#;

/// One SSE event `data: {chunk with delta}` as one HTTP chunk.
fn sse_chunk(buf: &mut Vec<u8>, delta: &str, finish: Option<&str>) {
    let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
    let event = format!("{CHUNK_HEAD}{delta},\"finish_reason\":{finish}}}]}}\n\n");
    http_chunk(buf, event.as_bytes());
}

fn http_chunk(buf: &mut Vec<u8>, data: &[u8]) {
    let _ = write!(buf, "{:x}\r\n", data.len());
    buf.extend_from_slice(data);
    buf.extend_from_slice(b"\r\n");
}

fn write_script(wr: &mut TcpStream, rd: &mut BufReader<TcpStream>, script: &Script) -> bool {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n";
    let mut buf = Vec::with_capacity(4096);
    buf.extend_from_slice(head.as_bytes());
    sse_chunk(&mut buf, r#"{"role":"assistant","content":""}"#, None);
    let flush = |wr: &mut TcpStream, buf: &mut Vec<u8>| {
        let ok = wr.write_all(buf).is_ok();
        buf.clear();
        ok
    };
    let finish_reason = match script {
        Script::Text(text) => {
            sse_chunk(&mut buf, &json!({ "content": text }).to_string(), None);
            "stop"
        }
        Script::Stream { chunks, pace } => {
            if !flush(wr, &mut buf) {
                return false;
            }
            let mut event = String::with_capacity(256);
            for _ in 0..*chunks {
                if let Some(p) = pace {
                    std::thread::sleep(*p);
                }
                event.clear();
                let _ = write!(
                    event,
                    "{CHUNK_HEAD}{{\"content\":\"@{};\"}},\"finish_reason\":null}}]}}\n\n",
                    now_ns()
                );
                http_chunk(&mut buf, event.as_bytes());
                if !flush(wr, &mut buf) {
                    return false;
                }
            }
            "stop"
        }
        Script::Hang { chunks } => {
            for i in 0..*chunks {
                sse_chunk(
                    &mut buf,
                    &json!({ "content": format!("part {i} ") }).to_string(),
                    None,
                );
            }
            if !flush(wr, &mut buf) {
                return false;
            }
            // Until the client goes away (cancel drops the request).
            let mut sink = [0u8; 1024];
            loop {
                match rd.read(&mut sink) {
                    Ok(0) | Err(_) => return false,
                    Ok(_) => {}
                }
            }
        }
        Script::ToolCall { name, args } => {
            let delta = json!({"tool_calls": [{
                "index": 0,
                "id": format!("call_{}", now_ns()),
                "type": "function",
                "function": {"name": name, "arguments": args.to_string()}
            }]});
            sse_chunk(&mut buf, &delta.to_string(), None);
            "tool_calls"
        }
    };
    sse_chunk(&mut buf, "{}", Some(finish_reason));
    let usage = r#"data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":10,"total_tokens":1010}}"#;
    http_chunk(&mut buf, format!("{usage}\n\n").as_bytes());
    http_chunk(&mut buf, b"data: [DONE]\n\n");
    buf.extend_from_slice(b"0\r\n\r\n");
    flush(wr, &mut buf)
}

/// Every `@<ns>;` stamp in `text`, with the byte offset just past it.
fn stamps(text: &[u8]) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'@' {
            let mut j = i + 1;
            let mut n: u64 = 0;
            while j < text.len() && text[j].is_ascii_digit() {
                n = n * 10 + u64::from(text[j] - b'0');
                j += 1;
            }
            if j > i + 1 && j < text.len() && text[j] == b';' {
                out.push((n, j + 1));
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

// ------------------------------------------------------------------ processes

/// A child with piped stdio; its stdout lines arrive stamped with [`now_ns`].
struct Proc {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<(u64, String)>,
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::with_capacity(1 << 20, stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let t = now_ns();
                        if tx.send((t, line.trim_end().to_owned())).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Proc {
            stdin: child.stdin.take(),
            child,
            rx,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        stdin.write_all(&buf).expect("write to the child");
        stdin.flush().expect("flush");
    }

    fn recv(&mut self, timeout: Duration) -> Option<(u64, String)> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Closes stdin and waits for the exit (killing after 5 s); returns how
    /// long the exit took.
    fn close(mut self) -> Duration {
        let start = Instant::now();
        drop(self.stdin.take());
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        start.elapsed()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn proc_status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn rss_kb(pid: u32) -> u64 {
    proc_status_kb(pid, "VmRSS:")
}

fn count_dir(path: &str) -> usize {
    std::fs::read_dir(path).map_or(0, |d| d.count())
}

fn open_fds(pid: u32) -> usize {
    count_dir(&format!("/proc/{pid}/fd"))
}

/// What each open descriptor of `pid` points at.
fn fd_targets(pid: u32) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            )
        })
        .collect();
    v.sort();
    v
}

fn threads(pid: u32) -> usize {
    count_dir(&format!("/proc/{pid}/task"))
}

/// `name:tid` of each thread of `pid`, to say which thread a count gained.
fn thread_names(pid: u32) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|t| {
            let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            format!("{}:{}", name.trim(), t.file_name().to_string_lossy())
        })
        .collect();
    out.sort();
    out
}

/// Live (non-zombie) children of `pid`.
fn live_children(pid: u32) -> usize {
    let mut n = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for c in children.split_whitespace() {
            let stat = std::fs::read_to_string(format!("/proc/{c}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            if state.is_some_and(|s| s != "Z") {
                n += 1;
            }
        }
    }
    n
}

fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

// ------------------------------------------------------------------ the editor

/// Where an agent lives: its own HOME / XDG dirs and a project directory.
struct AgentEnv {
    root: PathBuf,
    base_url: String,
    agent: PathBuf,
}

impl AgentEnv {
    fn new(opts: &Opts, name: &str, model: &FakeModel, config: &str) -> AgentEnv {
        let root = opts.work.join(name);
        for d in ["home", "config/acp-coder", "data", "state", "ws"] {
            std::fs::create_dir_all(root.join(d)).expect("create agent dirs");
        }
        std::fs::write(root.join("ws/README.md"), "# bench project\n").expect("write");
        if !config.is_empty() {
            std::fs::write(root.join("config/acp-coder/config.toml"), config).expect("config");
        }
        AgentEnv {
            root,
            base_url: model.base_url(),
            agent: opts.agent.clone(),
        }
    }

    fn ws(&self) -> PathBuf {
        self.root.join("ws")
    }

    fn sessions_dir(&self) -> PathBuf {
        self.root.join("data/acp-coder/sessions")
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.agent);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("OPENAI_BASE_URL", &self.base_url)
            .env("OPENAI_API_KEY", "bench-key")
            .env("ACP_CODER_MODEL", "fake-model")
            .current_dir(self.ws());
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.join("stderr.log"))
            .expect("stderr log");
        cmd.stderr(stderr);
        cmd
    }

    fn spawn(&self) -> Agent {
        Agent {
            p: Proc::spawn(self.command()),
            next_id: 0,
        }
    }
}

const INIT_PARAMS: &str = r#"{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":false},"clientInfo":{"name":"acp-coder-bench","version":"0"}}"#;

fn initialize_line(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{INIT_PARAMS}}}"#)
}

/// The fake editor's side of one agent process.
struct Agent {
    p: Proc,
    next_id: u64,
}

/// A response and the lines that came before it.
struct Reply {
    at: u64,
    msg: Value,
    before: Vec<(u64, String)>,
}

impl Reply {
    fn result(&self) -> &Value {
        if let Some(e) = self.msg.get("error") {
            panic!("the agent answered with an error: {e}");
        }
        &self.msg["result"]
    }
}

impl Agent {
    fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.p.send_line(&line.to_string());
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.p.send_line(&line.to_string());
    }

    /// Reads until the response to `id`; answers requests from the agent on the way.
    fn wait_for(&mut self, id: u64) -> Reply {
        let deadline = Instant::now() + WAIT;
        let mut before = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some((t, line)) = self.p.recv(left) else {
                panic!("no response to request {id} within {WAIT:?}");
            };
            // Notifications (the bulk) are kept raw; parse the rest.
            if line.starts_with(r#"{"jsonrpc":"2.0","method":"#) {
                before.push((t, line));
                continue;
            }
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                panic!("the agent wrote a line that is not JSON: {line}");
            };
            if v.get("method").is_some() {
                if let Some(req_id) = v.get("id") {
                    let answer = json!({"jsonrpc": "2.0", "id": req_id,
                        "error": {"code": -32601, "message": "not offered by the bench editor"}});
                    self.p.send_line(&answer.to_string());
                }
                before.push((t, line));
                continue;
            }
            if v.get("id").and_then(Value::as_u64) == Some(id) {
                return Reply {
                    at: t,
                    msg: v,
                    before,
                };
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.wait_for(id).result().clone()
    }

    fn initialize(&mut self) {
        let id = self.next_id;
        self.next_id += 1;
        self.p.send_line(&initialize_line(id));
        self.wait_for(id).result();
    }

    fn new_session(&mut self, cwd: &Path, mcp: Value) -> String {
        let r = self.call("session/new", json!({"cwd": cwd, "mcpServers": mcp}));
        r["sessionId"].as_str().expect("sessionId").to_owned()
    }

    fn prompt(&mut self, sid: &str, text: &str) -> u64 {
        self.request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
        )
    }

    /// Waits for the first line containing all of `needles`; returns its time.
    fn wait_line(&mut self, needles: &[&str]) -> u64 {
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some((t, line)) = self.p.recv(left) else {
                panic!("no line with {needles:?} within {WAIT:?}");
            };
            if needles.iter().all(|n| line.contains(n)) {
                return t;
            }
        }
    }

    /// A stdio round trip through the agent: an unknown method, answered at once.
    fn ping(&mut self) -> u64 {
        let t0 = now_ns();
        let id = self.request("bench/ping", json!({}));
        self.wait_for(id).at - t0
    }

    fn pid(&self) -> u32 {
        self.p.pid()
    }
}

// ------------------------------------------------------------------ startup

fn bench_startup(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let env = AgentEnv::new(o, "startup", model, "");
    let init = initialize_line(0);
    let (mut agent_t, mut cat_t, mut rss, mut cat_rss, mut exit_t, mut new_t) = (
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    for i in 0..o.runs {
        // Baseline: the same line through `cat`.
        let t0 = now_ns();
        let mut cat = Proc::spawn(Command::new("cat"));
        cat.send_line(&init);
        let (t1, _) = cat.recv(WAIT).expect("cat echoes");
        cat_t.push(t1 - t0);
        cat_rss.push(rss_kb(cat.pid()));
        cat.close();

        let t0 = now_ns();
        let mut agent = env.spawn();
        agent.next_id = 1;
        agent.p.send_line(&init);
        let reply = agent.wait_for(0);
        agent_t.push(reply.at - t0);
        assert_eq!(reply.result()["protocolVersion"], 1);
        if i < 10 {
            let t0 = now_ns();
            let id = agent.request("session/new", json!({"cwd": env.ws(), "mcpServers": []}));
            let r = agent.wait_for(id);
            r.result();
            new_t.push(r.at - t0);
            // Let the commands update after the response go out too.
            std::thread::sleep(Duration::from_millis(20));
            rss.push(rss_kb(agent.pid()));
        }
        exit_t.push(agent.p.close().as_nanos() as u64);
    }
    let (a, c) = (median(&agent_t), median(&cat_t));
    println!(
        "  spawn→initialize: agent p50 {:.2} ms p90 {:.2} ms; cat p50 {:.2} ms; exit after EOF p50 {:.1} ms",
        ms(a),
        ms(quantile(&agent_t, 0.9)),
        ms(c),
        ms(median(&exit_t))
    );
    let r = median(&rss);
    let n = median(&new_t);
    println!("  first session/new after start: p50 {:.2} ms", ms(n));
    vec![
        Row::new(
            "spawn → `initialize` response (median)",
            format!("{:.2} ms", ms(a)),
            format!("`cat` echo {:.2} ms", ms(c)),
            format!("{:.1}×", a as f64 / c.max(1) as f64),
            "≤ 5 ms",
        )
        .pass(ms(a) <= 5.0),
        Row::new(
            "VmRSS after `session/new` (median)",
            mb(r),
            format!("`cat` {}", mb(median(&cat_rss))),
            format!("{:.1}×", r as f64 / median(&cat_rss).max(1) as f64),
            "≤ 15 MB",
        )
        .pass(r <= 15 * 1024),
        Row::new(
            "first `session/new` (HTTP client, model list, session log; median)",
            format!("{:.2} ms", ms(n)),
            format!("`initialize` {:.2} ms", ms(a)),
            "—".into(),
            "—",
        ),
    ]
}

// ------------------------------------------------------------------ sandbox

/// The cost of the command sandbox (issue 14): `sh -c true` started directly
/// vs through the agent's launcher (`sandbox-exec`: its own exec, the mount
/// namespace with the read-only `.git` binds, Landlock, the supervisor).
fn bench_sandbox(o: &Opts, _model: &FakeModel) -> Vec<Row> {
    let ws = o.work.join("sandbox-ws");
    std::fs::create_dir_all(ws.join(".git/hooks")).expect("sandbox ws");
    std::fs::write(ws.join(".git/config"), "[core]\n").expect("config");
    std::fs::write(ws.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    let tmp = std::env::temp_dir();
    let probe = Command::new(&o.agent)
        .args(["sandbox-exec", "--probe"])
        .output()
        .expect("run the launcher probe");
    if !probe.status.success() {
        let why = String::from_utf8_lossy(&probe.stderr).trim().to_owned();
        println!("  no sandbox here: {why}");
        return vec![Row::new(
            "sandboxed `sh -c true` (median)",
            format!("not measured: {why}"),
            "—".into(),
            "—".into(),
            "≤ 5 ms added",
        )];
    }
    let run = |launcher: Option<&[&str]>| -> u64 {
        let mut c = match launcher {
            Some(args) => {
                let mut c = Command::new(&o.agent);
                c.args(args).args(["--", "sh", "-c", "true"]);
                c
            }
            None => {
                let mut c = Command::new("sh");
                c.args(["-c", "true"]);
                c
            }
        };
        c.current_dir(&ws).stdin(Stdio::null());
        let t0 = now_ns();
        let status = c.status().expect("run true");
        assert!(status.success(), "{status}");
        now_ns() - t0
    };
    let root = ws.display().to_string();
    let tmp = tmp.display().to_string();
    let parent = std::process::id().to_string();
    let sandboxed: Vec<&str> = vec![
        "sandbox-exec",
        "--root",
        &root,
        "--writable",
        &tmp,
        "--parent",
        &parent,
    ];
    let supervised: Vec<&str> = vec!["sandbox-exec", "--no-sandbox", "--parent", &parent];
    let (mut direct, mut sup, mut sbx) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..o.runs * 4 {
        direct.push(run(None));
        sup.push(run(Some(&supervised)));
        sbx.push(run(Some(&sandboxed)));
    }
    let (d, u, s) = (median(&direct), median(&sup), median(&sbx));
    let added = ms(s.saturating_sub(d));
    println!(
        "  sh -c true: direct p50 {:.2} ms; launcher --no-sandbox p50 {:.2} ms; sandboxed p50 {:.2} ms p90 {:.2} ms",
        ms(d),
        ms(u),
        ms(s),
        ms(quantile(&sbx, 0.9))
    );
    vec![
        Row::new(
            "sandboxed `sh -c true` (launcher, mount namespace, Landlock; median)",
            format!("{:.2} ms (+{added:.2} ms)", ms(s)),
            format!("`sh -c true` {:.2} ms", ms(d)),
            format!("{:.1}×", s as f64 / d.max(1) as f64),
            "≤ 5 ms added",
        )
        .pass(added <= 5.0),
        Row::new(
            "unsandboxed command through the launcher (supervisor only; median)",
            format!("{:.2} ms (+{:.2} ms)", ms(u), ms(u.saturating_sub(d))),
            format!("`sh -c true` {:.2} ms", ms(d)),
            format!("{:.1}×", u as f64 / d.max(1) as f64),
            "—",
        ),
    ]
}

// ------------------------------------------------------------------ first request

fn bench_request_size(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let plain = AgentEnv::new(o, "request", model, "");
    let (body, system, tools, tools_bytes) = first_request(&plain, model);
    // Issue 21: 20 skills (descriptions of a typical length, ~250 bytes) in
    // the project; their index goes into the system prompt and `load_skill`
    // into the tools.
    let skilled = AgentEnv::new(o, "request-skills", model, "");
    for i in 0..20 {
        let name = format!("skill-{i:02}");
        let dir = skilled.ws().join(".agents/skills").join(&name);
        std::fs::create_dir_all(&dir).expect("skill dir");
        let description = format!(
            "Prepares and checks release {i} artifacts for the project (bumps versions, \
             updates the changelog from merged pull requests, builds the packages and \
             verifies their signatures). Use when the user asks to cut, tag or publish a \
             release, or mentions changelogs."
        );
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nSteps for {name}.\n"),
        )
        .expect("write SKILL.md");
    }
    let (s_body, s_system, s_tools, s_tools_bytes) = first_request(&skilled, model);
    let row = |what: &str, body: usize, system: usize, tools: usize, tools_bytes: usize| {
        Row::new(
            what,
            format!("{:.1} KB", body as f64 / 1024.0),
            format!(
                "system prompt {:.1} KB + {tools} tool schemas {:.1} KB",
                system as f64 / 1024.0,
                tools_bytes as f64 / 1024.0
            ),
            "—".into(),
            "≤ 16 KB",
        )
        .pass(body <= 16 * 1024)
    };
    vec![
        row(
            "first model request, one-line prompt (JSON body)",
            body,
            system,
            tools,
            tools_bytes,
        ),
        row(
            "first model request with 20 skills (JSON body)",
            s_body,
            s_system,
            s_tools,
            s_tools_bytes,
        ),
    ]
}

/// The first model request of a new session in `env` for a one-line prompt:
/// (body bytes, system prompt bytes, tools, tool schema bytes).
fn first_request(env: &AgentEnv, model: &FakeModel) -> (usize, usize, usize, usize) {
    let mut agent = env.spawn();
    agent.initialize();
    let sid = agent.new_session(&env.ws(), json!([]));
    model.clear();
    model.state.capture_next.store(true, Ordering::SeqCst);
    model.push(Script::Text("done".into()));
    let id = agent.prompt(&sid, "Fix the typo in README.md");
    agent.wait_for(id).result();
    let body = model
        .state
        .captured
        .lock()
        .unwrap()
        .take()
        .expect("captured body");
    let v: Value = serde_json::from_slice(&body).expect("request JSON");
    let system = v["messages"][0]["content"].as_str().map_or(0, str::len);
    let tools = v["tools"].as_array().map_or(0, Vec::len);
    let tools_bytes = v["tools"].to_string().len();
    println!(
        "  first request: {} bytes: system prompt {system} bytes, {tools} tools {tools_bytes} bytes, {} messages",
        body.len(),
        v["messages"].as_array().map_or(0, Vec::len)
    );
    agent.p.close();
    (body.len(), system, tools, tools_bytes)
}

// ------------------------------------------------------------------ streaming

struct StreamRun {
    /// Chunks received.
    n: usize,
    /// Frames they came in.
    frames: usize,
    /// Chunks per second, first send to last receipt.
    rate: f64,
    /// Per-chunk send→receipt latencies.
    lat: Vec<u64>,
    /// Per-chunk send times (`now_ns`), in the order of `lat`.
    sent: Vec<u64>,
    /// The agent's CPU time (all threads) per chunk, in ns.
    cpu_per_chunk: Option<f64>,
    /// Chunks per second the server wrote (first to last send): below the
    /// reader's rate when the reader holds the server back.
    send_rate: f64,
}

/// CPU time so far of each thread of `pid` (`/proc/PID/task/*/schedstat`),
/// summed by thread name.
fn task_cpu_by_name(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *out.entry(name.trim().to_owned()).or_insert(0) += ns;
    }
    out
}

/// Samples the CPU time of PID 1's threads every 0.5 ms (`now_ns`, total
/// ns), for `BENCH_PACED_WORST`.
struct PidOneSampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(u64, u64)>>,
}

impl PidOneSampler {
    fn start() -> PidOneSampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut out = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let cpu: u64 = task_cpu_by_name(1).values().sum();
                out.push((now_ns(), cpu));
                std::thread::sleep(Duration::from_micros(500));
            }
            out
        });
        PidOneSampler { stop, thread }
    }

    fn stop(self) -> Vec<(u64, u64)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

/// PID 1's CPU time between two `now_ns` instants, from the samples.
fn pid_one_cpu_between(samples: &[(u64, u64)], from: u64, to: u64) -> u64 {
    let at = |t: u64| {
        samples
            .iter()
            .take_while(|(s, _)| *s <= t)
            .last()
            .map_or(0, |(_, c)| *c)
    };
    at(to + 500_000).saturating_sub(at(from.saturating_sub(500_000)))
}

fn stream_stats(samples: &[(u64, u64)], frames: usize) -> StreamRun {
    // (sent, received)
    let first = samples.iter().map(|s| s.0).min().unwrap_or(0);
    let last = samples.iter().map(|s| s.1).max().unwrap_or(0);
    let last_sent = samples.iter().map(|s| s.0).max().unwrap_or(0);
    let per_sec =
        |until: u64| samples.len() as f64 / (until.saturating_sub(first).max(1) as f64 / 1e9);
    StreamRun {
        send_rate: per_sec(last_sent),
        n: samples.len(),
        frames,
        rate: per_sec(last),
        lat: samples.iter().map(|(s, r)| r.saturating_sub(*s)).collect(),
        sent: samples.iter().map(|s| s.0).collect(),
        cpu_per_chunk: None,
    }
}

fn agent_stream(
    agent: &mut Agent,
    env: &AgentEnv,
    model: &FakeModel,
    chunks: usize,
    pace: Option<Duration>,
) -> StreamRun {
    let sid = agent.new_session(&env.ws(), json!([]));
    model.push(Script::Stream { chunks, pace });
    let before = task_cpu_by_name(agent.pid());
    let id = agent.prompt(&sid, "stream");
    let reply = agent.wait_for(id);
    let spent: Vec<(String, u64)> = task_cpu_by_name(agent.pid())
        .into_iter()
        .map(|(n, v)| {
            let d = v.saturating_sub(before.get(&n).copied().unwrap_or(0));
            (n, d)
        })
        .collect();
    let cpu: u64 = spent.iter().map(|(_, d)| d).sum();
    if std::env::var_os("BENCH_THREAD_CPU").is_some() {
        let parts: Vec<String> = spent
            .iter()
            .map(|(n, d)| format!("{n} {:.0}", *d as f64 / chunks as f64))
            .collect();
        println!("    agent CPU ns per chunk by thread: {}", parts.join(", "));
    }
    assert_eq!(reply.result()["stopReason"], "end_turn");
    let mut samples = Vec::with_capacity(chunks);
    let mut frames = 0;
    for (t, line) in &reply.before {
        if line.contains("agent_message_chunk") {
            frames += 1;
            samples.extend(stamps(line.as_bytes()).into_iter().map(|(s, _)| (s, *t)));
        }
    }
    assert_eq!(samples.len(), chunks, "every chunk reached the editor");
    StreamRun {
        cpu_per_chunk: Some(cpu as f64 / chunks as f64),
        ..stream_stats(&samples, frames)
    }
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().build().expect("reqwest client")
}

/// The streaming chat request the fake model answers, sent with reqwest.
async fn post_stream_request(client: &reqwest::Client, url: &str) -> reqwest::Response {
    client
        .post(url)
        .header("content-type", "application/json")
        .body(r#"{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"stream"}]}"#)
        .send()
        .await
        .expect("reqwest send")
}

fn reqwest_stream(
    rt: &tokio::runtime::Runtime,
    client: &reqwest::Client,
    model: &FakeModel,
    chunks: usize,
    pace: Option<Duration>,
) -> StreamRun {
    use futures::StreamExt;
    model.push(Script::Stream { chunks, pace });
    let url = format!("{}/chat/completions", model.base_url());
    let client = client.clone();
    // Read on a task, as the agent does (block_on's own future would run
    // on this thread, outside a multi-thread runtime's workers).
    let read = async move {
        let resp = post_stream_request(&client, &url).await;
        let mut body = resp.bytes_stream();
        let mut buf: Vec<u8> = Vec::with_capacity(chunks * 256);
        let mut marks: Vec<(usize, u64)> = Vec::new();
        while let Some(part) = body.next().await {
            let part = part.expect("reqwest body");
            let t = now_ns();
            buf.extend_from_slice(&part);
            marks.push((buf.len(), t));
        }
        (buf, marks)
    };
    let (buf, marks) = rt
        .block_on(async { tokio::spawn(read).await })
        .expect("the reqwest reader");
    let mut samples = Vec::with_capacity(chunks);
    let mut m = 0;
    for (sent, end) in stamps(&buf) {
        while marks[m].0 < end {
            m += 1;
        }
        samples.push((sent, marks[m].1));
    }
    assert_eq!(samples.len(), chunks, "reqwest got every chunk");
    stream_stats(&samples, marks.len())
}

fn bench_stream(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let env = AgentEnv::new(o, "stream", model, "");
    let mut agent = env.spawn();
    agent.initialize();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = http_client();
    // Warm-up: connections, allocator, page cache.
    agent_stream(&mut agent, &env, model, 200, None);
    reqwest_stream(&rt, &client, model, 200, None);

    let (mut ours, mut theirs, mut cpu) = (Vec::new(), Vec::new(), Vec::new());
    let (mut raw_floor, mut lib_floor) = (Vec::new(), Vec::new());
    for _ in 0..o.stream_rounds {
        let a = agent_stream(&mut agent, &env, model, o.stream_chunks, None);
        let b = reqwest_stream(&rt, &client, model, o.stream_chunks, None);
        println!(
            "  {} chunks: agent {:.0}/s in {} updates ({:.0} ns of agent CPU per chunk; server wrote {:.0}/s; latency p50 {:.3} ms), reqwest {:.0}/s in {} reads (server wrote {:.0}/s)",
            a.n,
            a.rate,
            a.frames,
            a.cpu_per_chunk.unwrap_or(0.0),
            a.send_rate,
            ms(median(&a.lat)),
            b.rate,
            b.frames,
            b.send_rate
        );
        ours.push(a.rate as u64);
        theirs.push(b.rate as u64);
        cpu.push(a.cpu_per_chunk.unwrap_or(f64::MAX) as u64);
        // The libraries' own floor, same stream, same round (floor.rs).
        let raw = floor::reqwest_cpu_per_chunk(&rt, &client, model, o.stream_chunks);
        let lib = floor::async_openai_cpu_per_chunk(&rt, &client, model, o.stream_chunks);
        println!(
            "    floor: reqwest reading the body {raw:.0} ns/chunk; async-openai decoding each chunk {lib:.0} ns/chunk"
        );
        raw_floor.push(raw as u64);
        lib_floor.push(lib as u64);
    }
    let cpu_ns = median(&cpu);
    let (raw_ns, lib_ns) = (median(&raw_floor), median(&lib_floor));
    let (ra, rb) = (median(&ours), median(&theirs));
    let ratio = ra as f64 / rb.max(1) as f64;
    // Not judged: the same client on a runtime shaped like the agent's
    // (2 workers), to show what the scheduler costs on its own.
    let mt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    // Its own client: pooled connections belong to the runtime that opened them.
    let mt_client = http_client();
    let mt_rates: Vec<u64> = (0..o.stream_rounds.min(3))
        .map(|_| reqwest_stream(&mt, &mt_client, model, o.stream_chunks, None).rate as u64)
        .collect();
    let rm = median(&mt_rates);
    println!(
        "  reqwest on a 2-worker runtime: {:.0}/s (agent / that: {:.2})",
        rm as f64,
        ra as f64 / rm.max(1) as f64
    );

    let pace = Some(Duration::from_millis(1));
    let worst = std::env::var_os("BENCH_PACED_WORST").is_some();
    // Rounds, agent and reqwest alternating, each judged by its own
    // quantiles; the figure is the median round: one stall of the shared
    // host (tens of ms, every chunk queued behind it) is 1% of a round's
    // chunks, so it decided a single round's p99 by itself.
    let (mut a50s, mut a99s, mut amaxs, mut b50s, mut b99s) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..o.paced_rounds {
        let pid1 = (worst && round == 0).then(PidOneSampler::start);
        let agent_first = round % 2 == 0;
        let b_early =
            (!agent_first).then(|| reqwest_stream(&rt, &client, model, o.paced_chunks, pace));
        let a = agent_stream(&mut agent, &env, model, o.paced_chunks, pace);
        let pid1 = pid1.map(PidOneSampler::stop);
        let b =
            b_early.unwrap_or_else(|| reqwest_stream(&rt, &client, model, o.paced_chunks, pace));
        let (a50, a99, amax) = (
            median(&a.lat),
            quantile(&a.lat, 0.99),
            quantile(&a.lat, 1.0),
        );
        let (b50, b99) = (median(&b.lat), quantile(&b.lat, 0.99));
        if let Some(pid1) = pid1 {
            // Which chunks were late (the first ones: turn start-up), and how
            // much CPU the sandbox's PID 1 took meanwhile (it runs at nice -10).
            let mut order: Vec<(usize, u64)> = a.lat.iter().copied().enumerate().collect();
            order.sort_by_key(|&(_, l)| std::cmp::Reverse(l));
            let list: Vec<String> = order
                .iter()
                .take(5)
                .map(|&(i, l)| {
                    let from = a.sent[i];
                    let cpu = pid_one_cpu_between(&pid1, from, from + l);
                    format!("#{i} {:.3} ms (PID 1 ran {:.1} ms)", ms(l), ms(cpu))
                })
                .collect();
            println!("    slowest paced chunks: {}", list.join(", "));
        }
        println!(
            "  paced ({} chunks, 1/ms): agent p50 {:.3} p99 {:.3} max {:.3} ms; reqwest p50 {:.3} p99 {:.3} ms",
            a.n,
            ms(a50),
            ms(a99),
            ms(amax),
            ms(b50),
            ms(b99)
        );
        a50s.push(a50);
        a99s.push(a99);
        amaxs.push(amax);
        b50s.push(b50);
        b99s.push(b99);
    }
    let (a50, a99, b50, b99) = (median(&a50s), median(&a99s), median(&b50s), median(&b99s));
    let rounds = o.paced_rounds;
    agent.p.close();
    vec![
        // Issue 15: what a streamed chunk costs the machine, not how many
        // a loopback server can push (the old "≥ 0.95 of reqwest" rate
        // target, a thousand times what any model sends, is retired).
        Row::new(
            "streaming: agent CPU per streamed text chunk (all threads, median of rounds)",
            format!("{:.2} µs", cpu_ns as f64 / 1000.0),
            format!(
                "async-openai alone {:.2} µs, reqwest alone {:.2} µs (agent {:.0}k chunks/s; reqwest {:.0}k/s, 2-worker runtime {:.0}k)",
                lib_ns as f64 / 1000.0,
                raw_ns as f64 / 1000.0,
                ra as f64 / 1000.0,
                rb as f64 / 1000.0,
                rm as f64 / 1000.0
            ),
            format!(
                "{:.1}× async-openai alone; rate {ratio:.2} of reqwest",
                cpu_ns as f64 / lib_ns.max(1) as f64
            ),
            "≤ 3 µs",
        )
        .pass(cpu_ns <= 3_000),
        Row::new(
            "streaming: server → editor latency per chunk (paced 1/ms; median of rounds)",
            format!("p50 {:.3} ms, p99 {:.3} ms", ms(a50), ms(a99)),
            format!(
                "reqwest p50 {:.3} ms, p99 {:.3} ms ({rounds} rounds of {} chunks; worst round's p99 {:.3} ms, slowest chunk {:.3} ms)",
                ms(b50),
                ms(b99),
                o.paced_chunks,
                ms(a99s.iter().copied().max().unwrap_or(0)),
                ms(amaxs.iter().copied().max().unwrap_or(0))
            ),
            format!("+{:.3} ms at p99", ms(a99.saturating_sub(b99))),
            "p99 ≤ 1 ms",
        )
        .pass(ms(a99) <= 1.0),
    ]
}

// ------------------------------------------------------------------ cancel

fn bench_cancel(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let env = AgentEnv::new(o, "cancel", model, "default_mode = \"full-auto\"\n");
    let mut agent = env.spawn();
    agent.initialize();
    let sid = agent.new_session(&env.ws(), json!([]));
    model.clear();
    let id = agent.prompt(&sid, "warm up");
    agent.wait_for(id).result();
    let pings: Vec<u64> = (0..o.runs).map(|_| agent.ping()).collect();

    let cancel = |agent: &mut Agent, id: u64| -> u64 {
        let t0 = now_ns();
        agent.notify("session/cancel", json!({"sessionId": sid}));
        let r = agent.wait_for(id);
        assert_eq!(r.result()["stopReason"], "cancelled");
        r.at - t0
    };
    let mut streaming = Vec::new();
    for _ in 0..o.runs {
        model.push(Script::Hang { chunks: 3 });
        let id = agent.prompt(&sid, "talk");
        agent.wait_line(&["agent_message_chunk", "part 0"]);
        streaming.push(cancel(&mut agent, id));
    }
    let mut command = Vec::new();
    for _ in 0..o.runs {
        model.push(Script::ToolCall {
            name: "run_command".into(),
            args: json!({"command": "sleep 30"}),
        });
        let id = agent.prompt(&sid, "run it");
        agent.wait_line(&["tool_call_update", r#""status":"in_progress""#]);
        command.push(cancel(&mut agent, id));
    }
    std::thread::sleep(Duration::from_millis(200));
    let children = live_children(agent.pid());
    let ping = median(&pings);
    println!(
        "  stdio round trip p50 {:.3} ms; live children after the cancels: {children}",
        ms(ping)
    );
    agent.p.close();
    let row = |what: &str, v: &[u64]| {
        let (p50, p99) = (median(v), quantile(v, 0.99));
        Row::new(
            what,
            format!(
                "p50 {:.2} ms, p99 {:.2} ms (n={})",
                ms(p50),
                ms(p99),
                v.len()
            ),
            format!("stdio round trip p50 {:.2} ms", ms(ping)),
            format!("{:.1}× at p50", p50 as f64 / ping.max(1) as f64),
            "p50 ≤ 10 ms, p99 ≤ 50 ms",
        )
        .pass(ms(p50) <= 10.0 && ms(p99) <= 50.0)
    };
    let mut kill_row = row(
        "`session/cancel` → prompt response, `run_command` `sleep 30` in progress",
        &command,
    );
    if children > 0 {
        kill_row
            .measured
            .push_str(&format!("; {children} children left"));
        kill_row.verdict = verdict(false);
    }
    vec![
        row(
            "`session/cancel` → prompt response, model streaming",
            &streaming,
        ),
        kill_row,
    ]
}

// ------------------------------------------------------------------ MCP

/// A stdio MCP server that takes `delay_ms` to start; appends `spawned` and
/// `ready` lines to `marker`.
fn fake_mcp_server(delay_ms: u64, marker: Option<PathBuf>) {
    let mark = |what: &str| {
        if let Some(m) = &marker
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(m)
        {
            let _ = writeln!(f, "{what} {}", std::process::id());
        }
    };
    mark("spawned");
    std::thread::sleep(Duration::from_millis(delay_ms));
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (v.get("id"), v.get("method").and_then(Value::as_str))
        else {
            continue;
        };
        let result = match method {
            "initialize" => json!({
                "protocolVersion": v["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "bench-mcp", "version": "0.0.0"}
            }),
            "tools/list" => {
                mark("ready");
                json!({"tools": [{
                    "name": "echo",
                    "description": "Echoes its input.",
                    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}
                }]})
            }
            "tools/call" => {
                json!({"content": [{"type": "text", "text": "echo"}], "isError": false})
            }
            "resources/list" => json!({"resources": []}),
            "prompts/list" => json!({"prompts": []}),
            "ping" => json!({}),
            _ => {
                let _ = writeln!(
                    out,
                    "{}",
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown method"}})
                );
                let _ = out.flush();
                continue;
            }
        };
        let _ = writeln!(
            out,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "result": result})
        );
        let _ = out.flush();
    }
}

fn bench_mcp(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let me = std::env::current_exe().expect("current exe");
    let env = AgentEnv::new(o, "mcp", model, "");
    let what = format!(
        "`session/new` with 5 stdio MCP servers taking {} ms each to start",
        o.mcp_delay_ms
    );
    let marker = env.root.join("mcp-marker");
    let servers = |n: usize| -> Value {
        (0..n)
            .map(|i| {
                json!({
                    "name": format!("bench{i}"),
                    "command": me,
                    "args": ["--fake-mcp-server", "--delay-ms", o.mcp_delay_ms.to_string(),
                             "--marker", marker],
                    "env": []
                })
            })
            .collect()
    };
    let count = |what: &str| {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with(what))
            .count()
    };
    let mut times: [Vec<u64>; 3] = Default::default();
    for round in 0..o.mcp_rounds {
        for (slot, n) in [(0usize, 0usize), (1, 1), (2, 5)] {
            let _ = std::fs::remove_file(&marker);
            let mut agent = env.spawn();
            agent.initialize();
            // Warm: HTTP client, model list.
            agent.new_session(&env.ws(), json!([]));
            let t0 = now_ns();
            let id = agent.request(
                "session/new",
                json!({"cwd": env.ws(), "mcpServers": servers(n)}),
            );
            let r = agent.wait_for(id);
            r.result();
            times[slot].push(r.at - t0);
            if n > 0 && round == 0 {
                // Give a lazy implementation a moment before concluding.
                let wait = Instant::now();
                while count("spawned") < n && wait.elapsed() < Duration::from_secs(2) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let spawned = count("spawned");
                if spawned == 0 {
                    agent.p.close();
                    println!("  skipped: agent has no MCP support (no server was started)");
                    return vec![Row {
                        verdict: "skipped: agent has no MCP support".into(),
                        ..Row::new(
                            &what,
                            "—".into(),
                            "—".into(),
                            "—".into(),
                            "≤ 1.3× one server",
                        )
                    }];
                }
                println!(
                    "  {n} server(s): {spawned} spawned, {} listed their tools",
                    count("ready")
                );
            }
            agent.p.close();
        }
    }
    let [zero, one, five] = times.map(|t| median(&t));
    let ratio = five as f64 / one.max(1) as f64;
    println!(
        "  session/new: 0 servers {:.1} ms, 1 server {:.1} ms, 5 servers {:.1} ms",
        ms(zero),
        ms(one),
        ms(five)
    );
    vec![
        Row::new(
            &what,
            format!("{:.0} ms", ms(five)),
            format!("one server {:.0} ms (none: {:.1} ms)", ms(one), ms(zero)),
            format!("{ratio:.2}×"),
            "≤ 1.3× one server",
        )
        .pass(ratio <= 1.3),
    ]
}

// ------------------------------------------------------------------ session/load

/// Writes a stored session of `messages` model messages (user, assistant with
/// a tool call, tool result, assistant answer; repeated) in the agent's format.
fn generate_session(dir: &Path, id: &str, cwd: &Path, messages: usize) -> u64 {
    std::fs::create_dir_all(dir).expect("sessions dir");
    let mut out = String::new();
    let mut push = |r: &Record| {
        out.push_str(&serde_json::to_string(r).expect("record"));
        out.push('\n');
    };
    push(&Record::Meta {
        v: 1,
        cwd: cwd.display().to_string(),
        additional_directories: vec![],
        created_at: "2025-01-01T00:00:00Z".into(),
    });
    push(&Record::Title {
        title: "bench session".into(),
    });
    let filler = "The quick brown fox jumps over the lazy dog while the borrow checker watches. ";
    for turn in 0..messages.div_ceil(4) {
        let prompt = format!(
            "Turn {turn}: please look at src/module_{turn}.rs and explain what `handle_{turn}` does, then suggest a fix."
        );
        push(&Record::User {
            prompt: vec![ContentBlock::text(prompt.clone())],
            message: StoredMessage::User {
                parts: vec![StoredPart::Text { text: prompt }],
            },
        });
        let call_id = format!("call_{turn}");
        let args = json!({"path": format!("src/module_{turn}.rs")}).to_string();
        push(&Record::Assistant(StoredAssistant {
            text: format!("Let me read src/module_{turn}.rs first."),
            reasoning: String::new(),
            tool_calls: vec![StoredToolCall {
                id: call_id.clone(),
                name: "read_file".into(),
                arguments: args.clone(),
            }],
        }));
        let file: String = (1..=40)
            .map(|l| format!("{l:>4}\tfn line_{l}() {{ let x = {l} * 2; }}\n"))
            .collect();
        push(&Record::ToolCall {
            call: Box::new(ToolCall {
                tool_call_id: call_id.clone(),
                title: format!("Read src/module_{turn}.rs"),
                name: Some("read_file".into()),
                kind: ToolKind::Read,
                status: ToolCallStatus::Completed,
                content: vec![ToolCallContent::text(format!("```\n{file}```"))],
                locations: vec![],
                raw_input: Some(serde_json::from_str(&args).expect("args")),
                raw_output: None,
                meta: None,
            }),
        });
        push(&Record::ToolResult {
            tool_call_id: call_id,
            content: file,
        });
        push(&Record::Assistant(StoredAssistant {
            text: format!("`handle_{turn}` doubles its input. {}", filler.repeat(8)),
            reasoning: String::new(),
            tool_calls: vec![],
        }));
    }
    let path = dir.join(format!("{id}.jsonl"));
    std::fs::write(&path, &out).expect("write the session");
    out.len() as u64
}

fn bench_load(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let env = AgentEnv::new(o, "load", model, "");
    let id = "sess_bench_load";
    let bytes = generate_session(&env.sessions_dir(), id, &env.ws(), o.load_messages);
    // Baseline: reading and parsing the same log in this process.
    let store = Store::new(&env.root.join("data/acp-coder"));
    let mut parse = Vec::new();
    for _ in 0..5 {
        let t0 = now_ns();
        let records = store.read(id).expect("read");
        parse.push(now_ns() - t0);
        assert!(records.len() > o.load_messages);
    }
    let mut agent = env.spawn();
    agent.initialize();
    agent.new_session(&env.ws(), json!([]));
    let replay_kinds = [
        "\"user_message_chunk\"",
        "\"agent_message_chunk\"",
        "\"agent_thought_chunk\"",
        "\"sessionUpdate\":\"tool_call\"",
        "\"sessionUpdate\":\"plan\"",
    ];
    let (mut last, mut resp, mut count) = (Vec::new(), Vec::new(), 0);
    for _ in 0..o.runs.min(10) {
        let t0 = now_ns();
        let rid = agent.request(
            "session/load",
            json!({"sessionId": id, "cwd": env.ws(), "mcpServers": []}),
        );
        let r = agent.wait_for(rid);
        r.result();
        let replayed: Vec<u64> = r
            .before
            .iter()
            .filter(|(t, l)| *t >= t0 && replay_kinds.iter().any(|k| l.contains(k)))
            .map(|(t, _)| *t)
            .collect();
        count = replayed.len();
        last.push(replayed.iter().max().copied().unwrap_or(r.at) - t0);
        resp.push(r.at - t0);
    }
    agent.p.close();
    let (l, p) = (median(&last), median(&parse));
    println!(
        "  {} messages, {:.1} MB log, {count} updates replayed; last update {:.1} ms, response {:.1} ms; in-process parse {:.1} ms",
        o.load_messages,
        bytes as f64 / 1e6,
        ms(l),
        ms(median(&resp)),
        ms(p)
    );
    vec![
        Row::new(
            &format!(
                "`session/load` of {} messages ({:.1} MB) → last replayed update",
                o.load_messages,
                bytes as f64 / 1e6
            ),
            format!("{:.1} ms ({count} updates)", ms(l)),
            format!("parsing the log in-process {:.1} ms", ms(p)),
            format!("{:.1}×", l as f64 / p.max(1) as f64),
            "≤ 100 ms",
        )
        .pass(ms(l) <= 100.0),
    ]
}

// ------------------------------------------------------------------ soak

fn bench_soak(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let env = AgentEnv::new(o, "soak", model, "");
    let mut agent = env.spawn();
    agent.initialize();
    let sid = agent.new_session(&env.ws(), json!([]));
    model.clear();
    let log = env.sessions_dir().join(format!("{sid}.jsonl"));
    let size = || std::fs::metadata(&log).map_or(0, |m| m.len());
    let pid = agent.pid();
    let warm = 20;
    let mut turn_t = Vec::new();
    let mut before = (0, 0, 0, 0);
    let mut max_threads = 0;
    let mut fds_before = Vec::new();
    let mut threads_before = Vec::new();
    let mut trend = Vec::new();
    for i in 0..o.turns {
        if i == warm {
            std::thread::sleep(Duration::from_millis(50));
            before = (rss_kb(pid), open_fds(pid), threads(pid), size());
            fds_before = fd_targets(pid);
            threads_before = thread_names(pid);
        }
        let t0 = now_ns();
        let id = agent.prompt(&sid, &format!("turn {i}: say ok"));
        let r = agent.wait_for(id);
        assert_eq!(r.result()["stopReason"], "end_turn");
        turn_t.push(r.at - t0);
        if i % 50 == 0 {
            max_threads = max_threads.max(threads(pid));
        }
        if i > 0 && i % (o.turns / 10).max(1) == 0 {
            trend.push(format!("{i}: {:.1}", rss_kb(pid) as f64 / 1024.0));
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let after = (rss_kb(pid), open_fds(pid), threads(pid), size());
    let fds_after = fd_targets(pid);
    for fd in fds_after.iter().filter(|f| !fds_before.contains(f)) {
        println!("  new descriptor: {fd}");
    }
    for fd in fds_before.iter().filter(|f| !fds_after.contains(f)) {
        println!("  closed descriptor: {fd}");
    }
    let threads_after = thread_names(pid);
    for t in threads_after.iter().filter(|t| !threads_before.contains(t)) {
        println!("  new thread: {t}");
    }
    for t in threads_before.iter().filter(|t| !threads_after.contains(t)) {
        println!("  ended thread: {t}");
    }
    max_threads = max_threads.max(after.2);
    let ping = agent.ping();
    println!("  VmRSS (MB) after turn {}", trend.join(", "));
    agent.p.close();
    let rss_growth = after.0.saturating_sub(before.0) as i64;
    let history = after.3.saturating_sub(before.3) as i64 / 1024;
    let beyond = rss_growth - history;
    let n = o.turns - warm;
    println!(
        "  {n} turns after {warm} warm-up: VmRSS {} → {}, log +{history} KB, fds {} → {}, threads {} → {} (max {max_threads}); turn p50 {:.2} ms",
        mb(before.0),
        mb(after.0),
        before.1,
        after.1,
        before.2,
        after.2,
        ms(median(&turn_t))
    );
    vec![
        Row::new(
            &format!(
                "{} short turns: VmRSS growth beyond the stored history",
                o.turns
            ),
            format!(
                "{:.2} MB (RSS +{:.2} MB)",
                beyond as f64 / 1024.0,
                rss_growth as f64 / 1024.0
            ),
            format!("history +{:.2} MB", history as f64 / 1024.0),
            "—".into(),
            "≤ 5 MB",
        )
        .pass(beyond <= 5 * 1024),
        Row::new(
            &format!("{} short turns: open files, threads", o.turns),
            format!(
                "fds {} → {}, threads {} → {}",
                before.1, after.1, before.2, after.2
            ),
            format!(
                "turn p50 {:.2} ms vs stdio round trip {:.2} ms",
                ms(median(&turn_t)),
                ms(ping)
            ),
            "—".into(),
            "no growth",
        )
        .pass(after.1 <= before.1 && after.2 <= before.2),
    ]
}

// ------------------------------------------------------------------ binary size

fn bench_size(o: &Opts, _model: &FakeModel) -> Vec<Row> {
    let size = std::fs::metadata(&o.agent).map_or(0, |m| m.len());
    let rg = std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("rg"))
                .find(|f| f.is_file())
        })
        .and_then(|f| std::fs::metadata(f).ok())
        .map(|m| m.len());
    // MB as the issue writes it: 10^6 bytes, the stricter reading.
    let mb = |b: u64| b as f64 / 1e6;
    vec![
        Row::new(
            "stripped release binary",
            format!("{:.2} MB", mb(size)),
            rg.map_or("—".into(), |r| format!("ripgrep {:.2} MB", mb(r))),
            rg.map_or("—".into(), |r| format!("{:.1}×", size as f64 / r as f64)),
            "≤ 20 MB",
        )
        .pass(size <= 20_000_000),
    ]
}
