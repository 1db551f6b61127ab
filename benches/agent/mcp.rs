//! MCP servers that start slowly must not hold up `session/new`.

use super::*;

/// A stdio MCP server that takes `delay_ms` to start; appends `spawned` and
/// `ready` lines to `marker`.
pub(super) fn fake_mcp_server(delay_ms: u64, marker: Option<PathBuf>) {
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

pub(super) fn bench_mcp(o: &Opts, model: &FakeModel) -> Vec<Row> {
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
