//! `serve` bench (issue 46): one `acp-coder serve` process holding N
//! sessions at once over WebSocket (`BENCH_SERVE_SESSIONS`, default 100,
//! quick 10), one connection and one session each, all prompted at the same
//! moment against the fake model (its default short reply). Reported next to
//! the same N sessions and turns over stdio in one agent process:
//!
//! - memory per session: the server's VmRSS with N sessions open and their
//!   turns done, less its VmRSS before the first connection, over N;
//! - turn latency p50 and p99: `session/prompt` sent → its response read;
//! - the connection limit: the server runs with `--max-connections N`, and
//!   connection N+1 is opened while the N are live;
//! - nothing lost, nothing crossed: every turn answered `end_turn`, and no
//!   connection saw a frame naming another connection's session.
use super::*;

use futures::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// One connection's outcome.
struct Conn {
    latency: u64,
    stop_reason: String,
    foreign: usize,
}

fn sessions_wanted() -> usize {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    env_usize("BENCH_SERVE_SESSIONS", 100, 10, quick).max(2)
}

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn connect(addr: &str) -> Result<Ws, WsError> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(WsError::Io)?;
    tcp.set_nodelay(true).map_err(WsError::Io)?;
    let (ws, _) = tokio_tungstenite::client_async(format!("ws://{addr}/acp"), tcp).await?;
    Ok(ws)
}

/// Sends a request and reads until its response; the frames before it, for
/// the crossing check, go to `seen`.
async fn call(ws: &mut Ws, id: u64, method: &str, params: Value, seen: &mut Vec<Value>) -> Value {
    let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    ws.send(Message::text(line.to_string()))
        .await
        .expect("send");
    response(ws, id, seen).await
}

async fn response(ws: &mut Ws, id: u64, seen: &mut Vec<Value>) -> Value {
    loop {
        let msg = tokio::time::timeout(WAIT, ws.next())
            .await
            .unwrap_or_else(|_| panic!("no response to {id} within {WAIT:?}"))
            .expect("the server closed the connection")
            .expect("read");
        let Message::Text(text) = msg else { continue };
        let v: Value = serde_json::from_str(&text).expect("a JSON frame");
        if v.get("method").is_none() && v.get("id").and_then(Value::as_u64) == Some(id) {
            if let Some(e) = v.get("error") {
                panic!("{id} answered with an error: {e}");
            }
            return v["result"].clone();
        }
        seen.push(v);
    }
}

/// Frames that name a session other than `sid`.
fn foreign(seen: &[Value], sid: &str) -> usize {
    seen.iter()
        .filter(|v| {
            v["params"]["sessionId"]
                .as_str()
                .is_some_and(|other| other != sid)
        })
        .count()
}

// The child is returned to the caller, which stops and waits for it
// (`a2a::stop`); clippy sees only the loop's paths.
#[allow(clippy::zombie_processes)]
fn spawn_serve(env: &AgentEnv, n: usize) -> (Child, String) {
    let port_file = env.root.join("serve.port");
    let _ = std::fs::remove_file(&port_file);
    let mut cmd = env.command();
    cmd.args(["serve", "--listen", "127.0.0.1:0", "--port-file"])
        .arg(&port_file)
        .args(["--max-connections", &n.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    let mut child = cmd.spawn().expect("spawn acp-coder serve");
    let deadline = Instant::now() + WAIT;
    loop {
        if let Ok(text) = std::fs::read_to_string(&port_file)
            && text.ends_with('\n')
        {
            return (child, text.trim().to_owned());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("serve did not listen within {WAIT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The stdio side: N sessions in one agent, N prompts written at once.
fn stdio_turns(env: &AgentEnv, n: usize) -> (Vec<u64>, u64, u64) {
    let mut agent = env.spawn();
    agent.initialize();
    let pid = agent.pid();
    std::thread::sleep(Duration::from_millis(50));
    let idle = rss_kb(pid);
    let sids: Vec<String> = (0..n)
        .map(|_| agent.new_session(&env.ws(), json!([])))
        .collect();
    let mut sent = std::collections::HashMap::new();
    for sid in &sids {
        let t0 = now_ns();
        let id = agent.prompt(sid, "say ok");
        sent.insert(id, t0);
    }
    let mut latencies = Vec::new();
    let deadline = Instant::now() + WAIT;
    while latencies.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        let (t, line) = agent
            .p
            .recv(left)
            .unwrap_or_else(|| panic!("stdio: {} of {n} turns answered", latencies.len()));
        if line.starts_with(r#"{"jsonrpc":"2.0","method":"#) {
            continue;
        }
        let v: Value = serde_json::from_str(&line).expect("JSON");
        if v.get("method").is_some() {
            continue;
        }
        if let Some(t0) = v["id"].as_u64().and_then(|id| sent.get(&id)) {
            assert_eq!(v["result"]["stopReason"], "end_turn", "{v}");
            latencies.push(t - t0);
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    let loaded = rss_kb(pid);
    agent.p.close();
    (latencies, idle, loaded)
}

pub(super) fn bench_serve(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let n = sessions_wanted();
    let env = AgentEnv::new(o, "serve", model, "");
    model.clear();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");

    let (stdio_t, stdio_idle, stdio_loaded) = stdio_turns(&env, n);

    let (child, addr) = spawn_serve(&env, n);
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(50));
    let idle = rss_kb(pid);
    let ws_dir = env.ws();
    let (conns, over_limit, held) = rt.block_on(async {
        // All N connected, initialized and holding a session before any prompt.
        let barrier = Arc::new(tokio::sync::Barrier::new(n + 1));
        let turned = Arc::new(tokio::sync::Barrier::new(n + 1));
        let done = Arc::new(tokio::sync::Barrier::new(n + 1));
        let mut tasks = Vec::new();
        for _ in 0..n {
            let (addr, cwd) = (addr.clone(), ws_dir.clone());
            let (barrier, turned, done) = (barrier.clone(), turned.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                let mut ws = connect(&addr).await.expect("connect");
                let mut seen = Vec::new();
                let init: Value = serde_json::from_str(INIT_PARAMS).expect("init params");
                call(&mut ws, 0, "initialize", init, &mut seen).await;
                let r = call(
                    &mut ws,
                    1,
                    "session/new",
                    json!({"cwd": cwd, "mcpServers": []}),
                    &mut seen,
                )
                .await;
                let sid = r["sessionId"].as_str().expect("sessionId").to_owned();
                barrier.wait().await;
                let t0 = now_ns();
                let r = call(
                    &mut ws,
                    2,
                    "session/prompt",
                    json!({"sessionId": sid, "prompt": [{"type": "text", "text": "say ok"}]}),
                    &mut seen,
                )
                .await;
                let latency = now_ns() - t0;
                // Keep the connection open until every turn is done and the
                // limit was tried.
                turned.wait().await;
                done.wait().await;
                let _ = ws.close(None).await;
                Conn {
                    latency,
                    stop_reason: r["stopReason"].as_str().unwrap_or_default().to_owned(),
                    foreign: foreign(&seen, &sid),
                }
            }));
        }
        let all = |b: Arc<tokio::sync::Barrier>, what: &'static str| async move {
            tokio::time::timeout(WAIT * 2, b.wait())
                .await
                .unwrap_or_else(|_| panic!("not every connection {what} (see the panics above)"));
        };
        all(barrier, "opened a session").await;
        // Every turn answered: the memory with N sessions held, then
        // connection N+1 while the N are live.
        all(turned, "finished its turn").await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let held = rss_kb(pid);
        let over_limit = match connect(&addr).await {
            Ok(_) => "accepted".to_owned(),
            Err(WsError::Http(resp)) => format!("HTTP {}", resp.status().as_u16()),
            Err(e) => format!("failed: {e}"),
        };
        all(done, "stayed until the end").await;
        let mut conns = Vec::new();
        for t in tasks {
            conns.push(t.await.expect("a connection task"));
        }
        (conns, over_limit, held)
    });
    a2a::stop(child);

    let serve_t: Vec<u64> = conns.iter().map(|c| c.latency).collect();
    let lost = conns.iter().filter(|c| c.stop_reason != "end_turn").count();
    let crossed: usize = conns.iter().map(|c| c.foreign).sum();
    let per = |loaded: u64, base: u64| loaded.saturating_sub(base) as f64 / 1024.0 / n as f64;
    let (serve_mb, stdio_mb) = (per(held, idle), per(stdio_loaded, stdio_idle));
    let (p50, p99) = (median(&serve_t), quantile(&serve_t, 0.99));
    let (s50, s99) = (median(&stdio_t), quantile(&stdio_t, 0.99));
    println!(
        "  {n} sessions: serve VmRSS {} → {} ({serve_mb:.2} MB a session), stdio {} → {} ({stdio_mb:.2} MB a session)",
        mb(idle),
        mb(held),
        mb(stdio_idle),
        mb(stdio_loaded)
    );
    println!(
        "  {n} concurrent turns: WebSocket p50 {:.2} ms p99 {:.2} ms; stdio p50 {:.2} ms p99 {:.2} ms; connection {}: {over_limit}; {lost} lost, {crossed} crossed frames",
        ms(p50),
        ms(p99),
        ms(s50),
        ms(s99),
        n + 1
    );
    vec![
        Row::new(
            &format!("`serve`: {n} sessions over WebSocket, memory a session"),
            format!("{serve_mb:.2} MB"),
            format!("{n} sessions over stdio, one agent: {stdio_mb:.2} MB"),
            format!("{:.1}×", serve_mb / stdio_mb.max(0.01)),
            "≤ 4 MB",
        )
        .pass(serve_mb <= 4.0),
        Row::new(
            &format!("`serve`: {n} concurrent turns over WebSocket, p50 / p99"),
            format!("{:.2} / {:.2} ms", ms(p50), ms(p99)),
            format!("stdio, same turns: {:.2} / {:.2} ms", ms(s50), ms(s99)),
            format!("{:.1}× (p99)", p99 as f64 / s99.max(1) as f64),
            "p99 ≤ 3× stdio",
        )
        .pass(p99 <= 3 * s99.max(1)),
        Row::new(
            &format!("`serve --max-connections {n}`: connection {}", n + 1),
            format!("{over_limit}; {lost} turns lost, {crossed} frames crossed"),
            "—".into(),
            "—".into(),
            "503, none lost or crossed",
        )
        .pass(over_limit == "HTTP 503" && lost == 0 && crossed == 0),
    ]
}
