//! `a2a` bench (issue 20): `acp-coder a2a` from spawn to the agent card
//! served, and the per-task overhead of a blocking `SendMessage` against the
//! same turn as `session/prompt` over stdio. Part of benches/agent.rs.
use super::*;

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

const TOKEN: &str = "bench-a2a-token";

fn spawn_server(env: &AgentEnv, port: u16) -> Child {
    let mut cmd = env.command();
    cmd.args(["a2a", "--listen", &format!("127.0.0.1:{port}")])
        .env("ACP_CODER_A2A_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd.spawn().expect("spawn acp-coder a2a")
}

pub(super) fn stop(mut child: Child) {
    // SIGTERM: the server's orderly shutdown (Windows has none to send).
    #[cfg(unix)]
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM)
    };
    #[cfg(not(unix))]
    let _ = child.kill();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
}

pub fn bench_a2a(o: &Opts, model: &FakeModel) -> Vec<Row> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let http = reqwest::Client::builder()
        .timeout(WAIT)
        .build()
        .expect("reqwest client");
    let env = AgentEnv::new(o, "a2a", model, "");
    model.clear();

    // Start → agent card, next to the same binary's start → `initialize` over stdio.
    let (mut card_t, mut init_t) = (Vec::new(), Vec::new());
    for _ in 0..o.runs {
        let t0 = now_ns();
        let mut agent = env.spawn();
        agent.next_id = 1;
        agent.p.send_line(&initialize_line(0));
        init_t.push(agent.wait_for(0).at - t0);
        agent.p.close();

        let port = free_port();
        let url = format!("http://127.0.0.1:{port}/.well-known/agent-card.json");
        let t0 = now_ns();
        let child = spawn_server(&env, port);
        let served = rt.block_on(async {
            let deadline = Instant::now() + WAIT;
            loop {
                if let Ok(r) = http.get(&url).send().await
                    && r.status().is_success()
                    && r.bytes().await.is_ok()
                {
                    return now_ns();
                }
                assert!(Instant::now() < deadline, "no agent card within {WAIT:?}");
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
        });
        card_t.push(served - t0);
        stop(child);
    }

    // The same turn (a short text reply: the fake model's default "ok"),
    // over ACP and over A2A, both agents alive at once and the turns
    // interleaved pair by pair (which side goes first alternates), so drift
    // and load changes hit both sides alike ([`turn_pairs`] says what each
    // side's time includes).
    let (acp_t, a2a_t) = turn_pairs(o, &env, &rt, &http);

    let (card, init) = (median(&card_t), median(&init_t));
    let (acp, a2a) = (median(&acp_t), median(&a2a_t));
    let pair_ratios: Vec<f64> = acp_t
        .iter()
        .zip(&a2a_t)
        .map(|(&c, &a)| a as f64 / c.max(1) as f64)
        .collect();
    let pair_ratio = {
        let mut r = pair_ratios;
        r.sort_by(f64::total_cmp);
        r[r.len() / 2]
    };
    println!(
        "  start→card p50 {:.2} ms p90 {:.2} ms (stdio initialize p50 {:.2} ms)",
        ms(card),
        ms(quantile(&card_t, 0.9)),
        ms(init),
    );
    println!(
        "  turn over {} interleaved pairs: ACP p50 {:.3} ms p90 {:.3} ms; A2A p50 {:.3} ms p90 {:.3} ms; ratio of medians {:.3}×, median of per-pair ratios {:.3}×",
        acp_t.len(),
        ms(acp),
        ms(quantile(&acp_t, 0.9)),
        ms(a2a),
        ms(quantile(&a2a_t, 0.9)),
        a2a as f64 / acp.max(1) as f64,
        pair_ratio,
    );
    let ratio = a2a as f64 / acp.max(1) as f64;
    vec![
        Row::new(
            "`acp-coder a2a` spawn → agent card served (median)",
            format!("{:.2} ms", ms(card)),
            format!("spawn → `initialize` over stdio {:.2} ms", ms(init)),
            format!("{:.1}×", card as f64 / init.max(1) as f64),
            "≤ 10 ms",
        )
        .pass(ms(card) <= 10.0),
        Row::new(
            "A2A blocking `SendMessage` vs the same turn over ACP (existing session, warm connection; interleaved pairs, medians)",
            format!("{:.2} ms", ms(a2a)),
            format!("`session/prompt` {:.2} ms", ms(acp)),
            format!("{ratio:.2}×"),
            "≤ 1.2×",
        )
        .pass(ratio <= 1.2),
    ]
}

/// Warm-up pairs (untimed) and timed pairs: 300 timed ones in a full run
/// (a few seconds; a turn's fsync makes single turns noisy on a busy
/// machine, so the medians need many).
fn pair_counts(o: &Opts) -> (usize, usize) {
    (20, (o.runs * 10).max(50))
}

/// Runs the interleaved turns; returns the ACP and the A2A times, pair by
/// pair (same index, same pair). What each side includes (BENCHMARKS.md's
/// method text, in scripts/bench.sh, says the same):
///
/// Both: one agent process, started before timing, with an existing
/// conversation (ACP: the session `session/new` made; A2A: the context an
/// untimed first task made) and as many earlier turns on it; the same
/// prompt text, the same model reply ("ok", one streamed chunk, from the
/// same fake server); the request bytes built before the clock starts; the
/// clock stops when the whole response has been read (ACP: the reader
/// thread reads the `session/prompt` response line, after the
/// `session/update` lines before it; A2A: reqwest has the whole HTTP body);
/// parsing it comes after.
/// ACP side: the line written to the agent's stdin, the turn, the
/// `session/update` notifications and the response on its stdout.
/// A2A side: the HTTP/1.1 `POST /` on a kept-alive connection (bearer token
/// checked), the JSON-RPC envelope, the task (state, history, the answer
/// artifact, the diff check), the same turn through the in-process ACP
/// connection, and the task's snapshot as the JSON reply.
fn turn_pairs(
    o: &Opts,
    env: &AgentEnv,
    rt: &tokio::runtime::Runtime,
    http: &reqwest::Client,
) -> (Vec<u64>, Vec<u64>) {
    let mut agent = env.spawn();
    agent.initialize();
    let sid = agent.new_session(&env.ws(), json!([]));
    let acp_pid = agent.pid();

    let port = free_port();
    let child = spawn_server(env, port);
    let a2a_pid = child.id();
    let url = format!("http://127.0.0.1:{port}/");
    let card = format!("{url}.well-known/agent-card.json");
    rt.block_on(async {
        let deadline = Instant::now() + WAIT;
        while http.get(&card).send().await.is_err() {
            assert!(Instant::now() < deadline, "the A2A server did not start");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });

    let mut context = Value::Null;
    let mut a2a_turn = |i: usize| -> u64 {
        let mut message = json!({"role": "ROLE_USER", "messageId": format!("m{i}"),
                                 "parts": [{"text": "say ok"}]});
        if !context.is_null() {
            message["contextId"] = context.clone();
        }
        let body = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage",
                          "params": {"message": message}})
        .to_string();
        let request = http
            .post(&url)
            .bearer_auth(TOKEN)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        let (t0, t1, bytes) = rt.block_on(async {
            let t0 = now_ns();
            let bytes = request
                .send()
                .await
                .expect("SendMessage")
                .bytes()
                .await
                .expect("the reply's body");
            (t0, now_ns(), bytes)
        });
        let r: Value = serde_json::from_slice(&bytes).expect("JSON reply");
        let task = &r["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
        context = task["contextId"].clone();
        t1 - t0
    };
    let mut acp_turn = || -> u64 {
        let id = agent.next_id;
        agent.next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
                          "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "say ok"}]}})
        .to_string();
        let t0 = now_ns();
        agent.p.send_line(&line);
        let r = agent.wait_for(id);
        assert_eq!(r.result()["stopReason"], "end_turn");
        r.at - t0
    };

    // The first A2A task makes the context (the ACP session exists already).
    a2a_turn(0);
    let (warm, timed) = pair_counts(o);
    let (mut acp_t, mut a2a_t) = (Vec::with_capacity(timed), Vec::with_capacity(timed));
    let mut cpu_at_start = (0, 0);
    for i in 0..warm + timed {
        if i == warm {
            cpu_at_start = (process_cpu(acp_pid), process_cpu(a2a_pid));
        }
        let (acp, a2a) = if i % 2 == 0 {
            let acp = acp_turn();
            (acp, a2a_turn(i + 1))
        } else {
            let a2a = a2a_turn(i + 1);
            (acp_turn(), a2a)
        };
        if i >= warm {
            acp_t.push(acp);
            a2a_t.push(a2a);
        }
    }
    // The agents' own CPU time per turn (all threads), for reading the
    // figure: work added, or waiting added.
    let per_turn = |pid: u32, start: u64| ms(process_cpu(pid).saturating_sub(start) / timed as u64);
    println!(
        "  agent CPU per turn: ACP {:.3} ms, A2A {:.3} ms",
        per_turn(acp_pid, cpu_at_start.0),
        per_turn(a2a_pid, cpu_at_start.1),
    );
    agent.p.close();
    stop(child);
    (acp_t, a2a_t)
}

/// CPU time so far of every thread of `pid`, in ns.
fn process_cpu(pid: u32) -> u64 {
    task_cpu_by_name(pid).values().sum()
}
