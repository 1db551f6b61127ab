//! Streaming: the agent's CPU per chunk against the libraries' floor, and
//! server → editor latency at one chunk per millisecond.

use super::*;

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
pub(super) async fn post_stream_request(client: &reqwest::Client, url: &str) -> reqwest::Response {
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

pub(super) fn bench_stream(o: &Opts, model: &FakeModel) -> Vec<Row> {
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
