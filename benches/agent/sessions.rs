//! `session/load` of a long session, and a soak of many turns.

use super::*;

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

pub(super) fn bench_load(o: &Opts, model: &FakeModel) -> Vec<Row> {
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

pub(super) fn bench_soak(o: &Opts, model: &FakeModel) -> Vec<Row> {
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
