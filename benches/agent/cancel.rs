//! `session/cancel` mid-stream: how fast the turn answers `cancelled`.

use super::*;

pub(super) fn bench_cancel(o: &Opts, model: &FakeModel) -> Vec<Row> {
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
