//! Start-up (spawn → `initialize`) and the sandbox's cost on a command.

use super::*;

pub(super) fn bench_startup(o: &Opts, model: &FakeModel) -> Vec<Row> {
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

// ------------------------------------------------------------------ first turn

/// The first turn of a new session (issue 47 item 7): `session/prompt` →
/// its response, against a loopback server that answers llama-server's
/// `/props` (the window is asked at session start), and with
/// `context_window` in the config (nothing asked). The prompt goes as soon
/// as `session/new` is answered (as `exec` does), or 200 ms later (as a
/// user types). Fresh agents, the sides alternating.
pub(super) fn bench_first_turn(o: &Opts, _model: &FakeModel) -> Vec<Row> {
    let server = FakeModel::start_with_props(131_072);
    let asked = AgentEnv::new(o, "first-turn-asked", &server, "");
    let set = AgentEnv::new(o, "first-turn-set", &server, "context_window = 131072\n");
    let turn = |env: &AgentEnv, pause: Duration| -> u64 {
        let mut agent = env.spawn();
        agent.initialize();
        let sid = agent.new_session(&env.ws(), json!([]));
        std::thread::sleep(pause);
        let t0 = now_ns();
        let id = agent.prompt(&sid, "say ok");
        let r = agent.wait_for(id);
        assert_eq!(r.result()["stopReason"], "end_turn");
        let t = r.at - t0;
        agent.p.close();
        t
    };
    let pause = Duration::from_millis(200);
    let (mut at_once, mut later, mut without) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..o.runs {
        let mut sides: [&mut dyn FnMut(); 3] = [
            &mut || at_once.push(turn(&asked, Duration::ZERO)),
            &mut || later.push(turn(&asked, pause)),
            &mut || without.push(turn(&set, Duration::ZERO)),
        ];
        sides.rotate_left(i % 3);
        for side in sides {
            side();
        }
    }
    let (a, l, s) = (median(&at_once), median(&later), median(&without));
    println!(
        "  first turn: window asked, prompt at once p50 {:.2} ms p90 {:.2} ms; prompt 200 ms later p50 {:.2} ms p90 {:.2} ms; context_window set p50 {:.2} ms p90 {:.2} ms",
        ms(a),
        ms(quantile(&at_once, 0.9)),
        ms(l),
        ms(quantile(&later, 0.9)),
        ms(s),
        ms(quantile(&without, 0.9))
    );
    let row = |what: &str, m: u64| {
        Row::new(
            what,
            format!("{:.2} ms", ms(m)),
            format!("`context_window` set {:.2} ms", ms(s)),
            format!("{:.2}×", m as f64 / s.max(1) as f64),
            "—",
        )
    };
    vec![
        row(
            "first turn, window asked of the server (`/props`), prompt right after `session/new` (median)",
            a,
        ),
        row(
            "first turn, window asked of the server (`/props`), prompt 200 ms after `session/new` (median)",
            l,
        ),
    ]
}

// ------------------------------------------------------------------ sandbox

/// The cost of the command sandbox (issue 14): `sh -c true` started directly
/// vs through the agent's launcher (`sandbox-exec`: its own exec, the mount
/// namespace with the read-only `.git` binds, Landlock, the supervisor).
pub(super) fn bench_sandbox(o: &Opts, _model: &FakeModel) -> Vec<Row> {
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
            "sandboxed `sh -c true` (launcher, mount and PID namespaces, Landlock; median)",
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
