//! Soak: many concurrent sessions on one agent, every turn with tool calls
//! (edits through the editor, local commands, reads) and permission
//! requests, against a fake model. Every turn must be answered, and the
//! agent must end as lean as it started: no leaked tasks (threads), file
//! descriptors or child processes, and flat memory.
//!
//! The default is a reduced run (4 sessions × 25 turns). The full run (20
//! sessions, 1,000 turns in all) is `scripts/soak.sh`, or:
//! `ACP_SOAK_SESSIONS=20 ACP_SOAK_TURNS=1000 cargo test --locked soak -- --nocapture`.

use super::common::{spawn_in_home, write_config};
use super::faults::fs_only;
use crate::support::{FakeEditor, FakeModel, PermissionDecision, Reply, Workspace};
use serde_json::json;
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What /proc says about the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    rss_kib: u64,
    fds: usize,
    threads: usize,
    children: usize,
}

fn sample(pid: u32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("agent status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let count = |dir: String| std::fs::read_dir(dir).map_or(0, Iterator::count);
    Sample {
        rss_kib: field("VmRSS:"),
        fds: count(format!("/proc/{pid}/fd")),
        threads: count(format!("/proc/{pid}/task")),
        children: children_of(pid),
    }
}

/// Live (non-zombie) processes whose parent is `pid`.
fn children_of(pid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let mut f = rest.split_whitespace();
            let state = f.next().unwrap_or("");
            let ppid: u32 = f.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            ppid == pid && state != "Z"
        })
        .count()
}

/// The turn a prompt asks for: `soak <session> <turn>`.
fn kind(session: usize, turn: usize) -> usize {
    (session + turn) % 5
}

/// Replies from the request itself: a user prompt gets the tool call its
/// turn calls for, a tool result gets the closing text.
fn respond(req: &crate::support::RecordedRequest) -> Option<Reply> {
    let last = req.last_message()?;
    if last["role"] == "tool" {
        let id = last["tool_call_id"].as_str().unwrap_or("");
        return Some(Reply::text(&format!("done with {id}")).with_usage(100, 10));
    }
    let text = last["content"].as_str().unwrap_or("");
    let mut words = text.split_whitespace().skip(1);
    let s: usize = words.next()?.parse().ok()?;
    let t: usize = words.next()?.parse().ok()?;
    let id = format!("call_{s}_{t}");
    Some(match kind(s, t) {
        0 => Reply::tool_call(
            &id,
            "write_file",
            json!({"path": format!("out/{t}.txt"), "content": format!("turn {t}\n")}),
        ),
        1 => Reply::tool_call(
            &id,
            "run_command",
            json!({"command": format!("echo turn-{t}")}),
        ),
        2 => Reply::tool_call(&id, "read_file", json!({"path": "a.txt"})),
        3 => Reply::text(&format!("just talking in turn {t}")),
        _ => Reply::tool_calls([
            (
                format!("{id}_a").as_str(),
                "run_command",
                json!({"command": "sleep 0.01; echo slept"}),
            ),
            (
                format!("{id}_b").as_str(),
                "edit_file",
                // Every fifth turn of a session: alpha → beta → alpha …
                if (t / 5).is_multiple_of(2) {
                    json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"})
                } else {
                    json!({"path": "a.txt", "old_string": "beta", "new_string": "alpha"})
                },
            ),
        ]),
    })
}

/// Runs `turns` turns of one session; returns how many were answered `end_turn`.
async fn run_session(
    editor: &FakeEditor,
    index: usize,
    (sid, ws): (&str, &Workspace),
    turns: std::ops::Range<usize>,
) -> usize {
    let mut answered = 0;
    for t in turns {
        let result = editor.prompt(sid, &format!("soak {index} {t}")).await;
        assert_eq!(result["stopReason"], "end_turn", "session {index} turn {t}");
        answered += 1;
        if kind(index, t) == 0 {
            assert_eq!(ws.read(format!("out/{t}.txt")), format!("turn {t}\n"));
        }
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_concurrent_sessions_leak_nothing() {
    let sessions = env_usize("ACP_SOAK_SESSIONS", 4).max(1);
    let total = env_usize("ACP_SOAK_TURNS", 100).max(sessions * 10);
    let per_session = total / sessions;
    let warmup = 5; // one turn of each kind per session before the baseline
    let model = FakeModel::start().await;
    model.set_responder(respond);
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), "");
    let editor = spawn_in_home(&model, home.path().to_path_buf(), &[]);
    editor.set_timeout(Duration::from_secs(120));
    editor.set_default_permission(Some(PermissionDecision::AllowOnce));
    editor.initialize(fs_only()).await;
    let pid = editor.pid().expect("spawned");
    let workspaces: Vec<Workspace> = (0..sessions)
        .map(|_| {
            Workspace::builder()
                .file("a.txt", "alpha\n")
                .dir("out")
                .build()
        })
        .collect();
    let mut sids = Vec::new();
    for ws in &workspaces {
        sids.push(editor.new_session(ws.path()).await);
    }
    let each = || sids.iter().map(String::as_str).zip(&workspaces).enumerate();

    // Warm-up: every session, every kind of turn, so the baseline includes
    // the runtime's steady-state threads and buffers.
    let started = Instant::now();
    let warm: usize =
        futures::future::join_all(each().map(|(i, s)| run_session(&editor, i, s, 0..warmup)))
            .await
            .into_iter()
            .sum();
    // The baseline is taken once the warm-up's commands are gone.
    let settle = Instant::now() + Duration::from_secs(15);
    while children_of(pid) > 0 {
        assert!(
            Instant::now() < settle,
            "the warm-up's commands outlived their turns"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = sample(pid);
    eprintln!(
        "soak: {sessions} sessions × {per_session} turns; baseline after {warm} warm-up turns: {before:?}"
    );

    // The run, sampling memory as it goes.
    let sampling = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u64>::new()));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (sampling, done) = (sampling.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                sampling.lock().unwrap().push(sample(pid).rss_kib);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let ran: usize = futures::future::join_all(
        each().map(|(i, s)| run_session(&editor, i, s, warmup..warmup + per_session)),
    )
    .await
    .into_iter()
    .sum();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = sampler.await;
    let took = started.elapsed();
    assert_eq!(ran, sessions * per_session, "every turn answered");
    assert_eq!(model.unscripted_requests(), 0);

    // Idle again: the runtime's spare blocking threads retire after 10 s.
    let settle = Instant::now() + Duration::from_secs(15);
    let mut after = sample(pid);
    while Instant::now() < settle
        && (after.fds > before.fds || after.threads > before.threads || after.children > 0)
    {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = sample(pid);
    }
    let rss = sampling.lock().unwrap().clone();
    let peak = rss.iter().copied().max().unwrap_or(after.rss_kib);
    let permissions = editor.permission_requests().len();
    eprintln!(
        "soak: {} turns ({warm} warm-up) in {took:?}, {permissions} permission requests, {} model calls",
        warm + ran,
        model.chat_requests().len()
    );
    eprintln!(
        "soak: after: {after:?}; RSS samples (KiB): first {:?}, peak {peak}, last {:?}",
        rss.first(),
        rss.last()
    );
    assert_eq!(after.children, 0, "child processes left behind");
    assert!(
        after.fds <= before.fds,
        "file descriptors leaked: {before:?} → {after:?}"
    );
    assert!(
        after.threads <= before.threads,
        "threads leaked: {before:?} → {after:?}"
    );
    // Memory: the conversations grow a little; anything like a leak per turn
    // (a turn's buffers or tasks kept) would add megabytes.
    let growth = after.rss_kib.saturating_sub(before.rss_kib);
    assert!(
        growth < 16 * 1024 + 16 * (ran as u64),
        "RSS grew by {growth} KiB over {ran} turns: {before:?} → {after:?}"
    );
    let expected_permissions = (0..sessions)
        .flat_map(|s| (0..warmup + per_session).map(move |t| kind(s, t)))
        .map(|k| match k {
            0 | 1 => 1,
            4 => 2,
            _ => 0,
        })
        .sum::<usize>();
    assert_eq!(permissions, expected_permissions);
    let mut editor = editor;
    editor.close_stdin().await;
    let status = editor.wait_exit(Duration::from_secs(5)).await;
    assert!(status.success(), "{status:?}");
}
