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
//! | `BENCH_SERVE_SESSIONS` (sessions at once over `serve`) | 100 | 10 |
//! | `BENCH_ONLY` (comma list) | all | all |
//! | `BENCH_THREAD_CPU=1` (stream rounds: agent CPU per chunk by thread) | off | off |
//!
//! Benchmarks, each in `benches/agent/`: `startup`, `first-turn` and
//! `sandbox` (startup.rs),
//! `request` (request.rs), `stream` (stream.rs, with the libraries' floor in
//! floor.rs), `cancel` (cancel.rs), `mcp` (mcp.rs), `load` and `soak`
//! (sessions.rs), `size` (here), `a2a` (a2a.rs), `checkpoint` (checkpoint.rs;
//! `BENCH_CHECKPOINT_FILES`: the large project, default 100000, quick 10000),
//! `serve` (serve.rs: N sessions over WebSocket against stdio).
//! This file holds the harness: options, result rows, the agent as a child
//! process driven like an editor; the fake model is model.rs, `/proc`
//! readings procfs.rs. With `--report FILE` the result rows are written there
//! as Markdown table rows (`scripts/bench.sh` adds the search and build rows).
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
#[path = "agent/cancel.rs"]
mod cancel;
#[path = "agent/checkpoint.rs"]
mod checkpoint;
#[path = "agent/floor.rs"]
mod floor;
#[path = "agent/mcp.rs"]
mod mcp;
#[path = "agent/model.rs"]
mod model;
#[path = "agent/procfs.rs"]
mod procfs;
#[path = "agent/request.rs"]
mod request;
#[path = "agent/serve.rs"]
mod serve;
#[path = "agent/sessions.rs"]
mod sessions;
#[path = "agent/startup.rs"]
mod startup;
#[path = "agent/stream.rs"]
mod stream;

use model::*;
use procfs::*;

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
        mcp::fake_mcp_server(
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
    let benches: [(&str, Bench); 13] = [
        ("startup", startup::bench_startup),
        ("first-turn", startup::bench_first_turn),
        ("sandbox", startup::bench_sandbox),
        ("request", request::bench_request_size),
        ("stream", stream::bench_stream),
        ("cancel", cancel::bench_cancel),
        ("mcp", mcp::bench_mcp),
        ("load", sessions::bench_load),
        ("soak", sessions::bench_soak),
        ("size", bench_size),
        ("a2a", a2a::bench_a2a),
        ("checkpoint", checkpoint::bench_checkpoint),
        ("serve", serve::bench_serve),
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
