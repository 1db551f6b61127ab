//! No check-then-write race: while the model writes many files into a
//! folder of the project, a process outside the agent keeps swapping that
//! folder for a symbolic link to a directory outside the project. Every ask
//! is rejected, so nothing may ever be written outside. Local writes open
//! beneath the root without following a link out of it; the editor is sent
//! a path with no link in it and, when its write did not land where it
//! should, the turn stops loudly.
//!
//! No timing luck: the swapper runs a bounded loop for as long as the turns
//! do, and what is asserted holds however the two interleave.

use super::tools_common::{Harness, Via, both};
use crate::support::{PermissionDecision, Reply, Workspace};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Rounds (prompt turns) and writes per round: N = ROUNDS × WRITES attempts.
const ROUNDS: usize = 6;
const WRITES: usize = 25;
/// The swapper's bound.
const MAX_SWAPS: usize = 200_000;
/// How long the folder stays a link, and then real, per swap.
const HOLD: std::time::Duration = std::time::Duration::from_micros(300);

/// Swaps `dir` for a link to `outside` and back until `stop`; returns how
/// many swaps happened.
fn swapper(dir: &Path, outside: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    let dir = dir.to_owned();
    let outside = outside.to_owned();
    std::thread::spawn(move || {
        let swaps = AtomicUsize::new(0);
        for i in 0..MAX_SWAPS {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let aside = dir.with_file_name(format!("sub.aside{i}"));
            if std::fs::rename(&dir, &aside).is_err() {
                std::thread::yield_now();
                continue;
            }
            if acp_coder::platform::fs::symlink(&outside, &dir).is_ok() {
                swaps.fetch_add(1, Ordering::Relaxed);
                // Each state holds a while, so that a path resolved while
                // the folder was real is often written while it is a link.
                std::thread::sleep(HOLD);
                let _ = std::fs::remove_file(&dir);
            }
            let _ = std::fs::rename(&aside, &dir);
            std::thread::sleep(HOLD);
        }
        swaps.into_inner()
    })
}

/// Files directly in `dir`.
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

async fn swapped_folder(via: Via) {
    let outside = tempfile::tempdir().unwrap();
    let out = dunce::canonicalize(outside.path()).unwrap();
    let ws = Workspace::builder().file("sub/keep.txt", "k\n").build();
    let h = Harness::start(via, ws).await;
    h.set_mode("full-auto").await;
    // Every ask (a path that resolved outside the project) is rejected.
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let root = dunce::canonicalize(h.ws.path()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = swapper(&root.join("sub"), &out, stop.clone());
    let mut stopped = 0;
    for round in 0..ROUNDS {
        let before = entries(&out).len();
        let ids: Vec<String> = (0..WRITES).map(|i| format!("w{round}_{i}")).collect();
        let calls = ids.iter().enumerate().map(|(i, id)| {
            (
                id.as_str(),
                "write_file",
                json!({"path": format!("sub/f{round}_{i}.bashrc"), "content": "echo pwned\n"}),
            )
        });
        h.model.push(Reply::tool_calls(calls));
        h.model.push(Reply::text("done"));
        let text_before = h.editor.agent_text(&h.sid).len();
        let r = h
            .editor
            .prompt(&h.sid, &format!("write round {round}"))
            .await;
        let said = h.editor.agent_text(&h.sid)[text_before..].to_owned();
        let landed_outside = entries(&out).len() - before;
        if r["stopReason"] == "refusal" {
            stopped += 1;
            assert!(said.contains("Stopped."), "{said}");
            assert!(said.contains("was not written safely"), "{said}");
        }
        // A stopped turn left its closing reply unasked: use it up.
        if h.model.pending_replies() > 0 {
            h.editor.prompt(&h.sid, "go on").await;
        }
        match via {
            Via::Local => assert_eq!(
                landed_outside,
                0,
                "round {round}: a local write left the project: {:?}",
                entries(&out)
            ),
            // The editor follows links itself: the agent cannot stop its
            // one write, but it must notice and stop the turn at once.
            Via::Editor => {
                assert!(landed_outside <= 1, "round {round}: {:?}", entries(&out));
                if landed_outside == 1 {
                    assert_eq!(r["stopReason"], "refusal", "round {round}: {said}");
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swaps.join().unwrap();
    eprintln!(
        "{via:?}: {swaps} swaps, {stopped} of {ROUNDS} turns stopped, outside: {:?}",
        entries(&out)
    );
    // The project's folder is whole again and holds what was written.
    let sub = root.join("sub");
    assert!(sub.is_dir() && !sub.is_symlink());
}
both!(a_swapped_folder_never_lets_a_write_out, swapped_folder);

/// Issue 42 item 9, deterministic: the editor resolves the path it is sent
/// itself, so a folder swapped for a link at the moment it writes takes the
/// write out of the project (an outside review saw it in 1 of 9 runs under
/// load). Here the swap happens at exactly that moment, every time (the
/// editor's hook does it when the write arrives), while a background command
/// of the session runs. No editor write beneath the project may happen
/// while a command of the agent runs: the file is written beneath the root
/// by the agent, and nothing lands outside. Once the command is stopped,
/// writes go through the editor again.
#[tokio::test]
async fn no_editor_write_while_a_command_runs() {
    let outside = tempfile::tempdir().unwrap();
    let out = dunce::canonicalize(outside.path()).unwrap();
    let ws = Workspace::builder().file("sub/keep.txt", "k\n").build();
    let h = Harness::start(Via::Editor, ws).await;
    h.set_mode("full-auto").await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let root = dunce::canonicalize(h.ws.path()).unwrap();
    let armed = Arc::new(AtomicBool::new(true));
    {
        let (armed, sub, out) = (armed.clone(), root.join("sub"), out.clone());
        h.editor.set_before_write(move |path| {
            if armed.load(Ordering::SeqCst) && path.starts_with(&sub) {
                // What a command swapping the folder does at the worst time.
                std::fs::rename(&sub, sub.with_file_name("sub.aside")).unwrap();
                acp_coder::platform::fs::symlink(&out, &sub).unwrap();
            }
        });
    }
    let started = h
        .run_tool(
            "bg",
            "run_command",
            json!({"command": "echo up; sleep 60", "background": true}),
        )
        .await;
    assert!(started.contains("bg1"), "{started}");

    let r = h
        .run_tool(
            "w1",
            "write_file",
            json!({"path": "sub/a.txt", "content": "inside\n"}),
        )
        .await;
    assert!(entries(&out).is_empty(), "{:?} / {r}", entries(&out));
    assert_eq!(
        std::fs::read_to_string(root.join("sub/a.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        h.editor.writes().iter().all(|w| !w.path.ends_with("a.txt")),
        "the editor was asked to write while a command ran"
    );

    // The command stopped: the editor writes again (nothing swaps now).
    armed.store(false, Ordering::SeqCst);
    h.run_tool("k", "command_kill", json!({"handle": "bg1"}))
        .await;
    h.run_tool(
        "w2",
        "write_file",
        json!({"path": "sub/b.txt", "content": "via editor\n"}),
    )
    .await;
    assert!(
        h.editor
            .writes()
            .iter()
            .any(|w| w.path.ends_with("sub/b.txt")),
        "{:?}",
        h.editor
            .writes()
            .iter()
            .map(|w| &w.path)
            .collect::<Vec<_>>()
    );
    assert!(entries(&out).is_empty());
}
