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

fn stop(mut child: Child) {
    // SIGTERM: the server's orderly shutdown.
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
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

    // The same turn (a short text reply), over ACP then over A2A. Both sides
    // time the same work: a turn of an existing session (ACP: the session
    // created by `session/new`; A2A: the context the untimed first task
    // created) over a warm connection (stdio; one HTTP/1.1 keep-alive
    // connection), with as many turns before it. The A2A side adds what A2A
    // is: the HTTP request and response, the JSON-RPC envelope, the task
    // (state, history, answer artifact) and its snapshot in the reply.
    let turns = (o.runs * 2).max(10);
    let mut agent = env.spawn();
    agent.initialize();
    let sid = agent.new_session(&env.ws(), json!([]));
    let mut acp_t = Vec::new();
    for i in 0..=turns {
        let t0 = now_ns();
        let id = agent.prompt(&sid, "say ok");
        let r = agent.wait_for(id);
        assert_eq!(r.result()["stopReason"], "end_turn");
        if i > 0 {
            acp_t.push(r.at - t0);
        }
    }
    agent.p.close();

    let port = free_port();
    let child = spawn_server(&env, port);
    let url = format!("http://127.0.0.1:{port}/");
    let a2a_t = rt.block_on(async {
        let card = format!("{url}.well-known/agent-card.json");
        let deadline = Instant::now() + WAIT;
        while http.get(&card).send().await.is_err() {
            assert!(Instant::now() < deadline, "the A2A server did not start");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let mut context = Value::Null;
        let mut times = Vec::new();
        for i in 0..=turns {
            let mut message = json!({"role": "ROLE_USER", "messageId": format!("m{i}"),
                                     "parts": [{"text": "say ok"}]});
            if !context.is_null() {
                message["contextId"] = context.clone();
            }
            let body = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage",
                              "params": {"message": message}});
            let t0 = now_ns();
            let r: Value = http
                .post(&url)
                .bearer_auth(TOKEN)
                .json(&body)
                .send()
                .await
                .expect("SendMessage")
                .json()
                .await
                .expect("JSON reply");
            if i > 0 {
                times.push(now_ns() - t0);
            }
            let task = &r["result"]["task"];
            assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
            context = task["contextId"].clone();
        }
        times
    });
    stop(child);

    let (card, init) = (median(&card_t), median(&init_t));
    let (acp, a2a) = (median(&acp_t), median(&a2a_t));
    println!(
        "  start→card p50 {:.2} ms p90 {:.2} ms (stdio initialize p50 {:.2} ms); turn: ACP p50 {:.2} ms, A2A p50 {:.2} ms over {turns} turns",
        ms(card),
        ms(quantile(&card_t, 0.9)),
        ms(init),
        ms(acp),
        ms(a2a)
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
            "A2A blocking `SendMessage` vs the same turn over ACP (existing session, warm connection; median)",
            format!("{:.2} ms", ms(a2a)),
            format!("`session/prompt` {:.2} ms", ms(acp)),
            format!("{ratio:.2}×"),
            "≤ 1.2×",
        )
        .pass(ratio <= 1.2),
    ]
}
