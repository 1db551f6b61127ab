//! Background commands (issue 19 §1): `run_command` with `background: true`,
//! `command_output`, `command_kill`; in the editor's terminal and locally;
//! the per-session limit; cleanup on session/close, session/delete and agent
//! exit.

use super::common::write_config;
use super::tools_common::{Harness, Via, both};
use crate::support::{
    FakeEditor, FakeModel, SpawnOptions, Workspace, eventually, process_alive, wait_gone,
    wait_pid_file,
};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

async fn auto(via: Via, ws: Workspace) -> Harness {
    let h = Harness::start(via, ws).await;
    h.set_mode("full-auto").await;
    h
}

/// Starts `command` in the background as call `id`; returns the result.
async fn start_bg(h: &Harness, id: &str, command: &str) -> String {
    h.run_tool(
        id,
        "run_command",
        json!({"command": command, "background": true}),
    )
    .await
}

/// A server-like command: records its shell's pid, prints `ready`, then a
/// tick every 100 ms until killed.
fn server(pidfile: &Path) -> String {
    format!(
        "echo $$ > {p}.tmp && mv {p}.tmp {p}; echo ready; while true; do echo tick; sleep 0.1; done",
        p = pidfile.display()
    )
}

/// A quiet command that sleeps; its child `sleep` is in the same group.
fn sleeper(pidfile: &Path) -> String {
    format!(
        "sleep 60 & echo $! > {p}.tmp && mv {p}.tmp {p}; wait",
        p = pidfile.display()
    )
}

async fn outlives_turns_then_is_read_and_killed(via: Via) {
    let ws = Workspace::new();
    let h = auto(via, ws).await;
    let pidfile = h.ws.join("server.pid");
    let started = start_bg(&h, "s1", &server(&pidfile)).await;
    assert!(
        started.contains("Started in the background as bg1"),
        "{started}"
    );
    assert!(started.contains("ready"), "{started}");
    assert!(started.contains("bg1 is still running"), "{started}");
    let pid = wait_pid_file(&pidfile).await;
    if via == Via::Editor {
        // The user watches it in the editor's terminal panel.
        let tid = h.editor.terminals_created()[0].clone();
        let embedded = h.call_updates("s1").iter().any(|u| {
            u["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|i| i["terminalId"] == tid.as_str()))
        });
        assert!(embedded, "{:?}", h.call_updates("s1"));
        assert!(h.editor.unreleased_terminals().contains(&tid));
    }

    // Two more turns: it is still there, printing.
    h.model.push(crate::support::Reply::text("waiting"));
    h.editor.prompt(&h.sid, "something else").await;
    // Read until a new tick shows up: every read says it still runs and
    // holds only what came after the previous one.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    for n in 0.. {
        let read = h
            .run_tool(
                &format!("tick{n}"),
                "command_output",
                json!({"handle": "bg1"}),
            )
            .await;
        assert!(read.contains("bg1 is still running"), "{read}");
        assert!(!read.contains("ready"), "only new output: {read}");
        if read.contains("tick") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no tick: {read}");
    }
    assert!(process_alive(pid));

    // /status lists it.
    h.editor.prompt(&h.sid, "/status").await;
    let status = h.editor.agent_text(&h.sid);
    assert!(status.contains("Background commands"), "{status}");
    assert!(status.contains("`bg1`"), "{status}");

    let killed = h
        .run_tool("k1", "command_kill", json!({"handle": "bg1"}))
        .await;
    assert!(killed.contains("Stopped bg1"), "{killed}");
    wait_gone(pid, "the background command").await;
    let gone = h
        .run_tool("o2", "command_output", json!({"handle": "bg1"}))
        .await;
    assert!(gone.contains("no background command \"bg1\""), "{gone}");
    eventually("every terminal is released", || {
        h.editor.unreleased_terminals().is_empty()
    })
    .await;
    h.editor.assert_no_errors();
}
both!(
    a_background_command_outlives_turns,
    outlives_turns_then_is_read_and_killed
);

/// A command that ends by itself: `command_output` with `wait_ms` returns
/// its exit code, and the changed-files list.
async fn ended_commands_report_exit_and_changes(via: Via) {
    let h = auto(via, Workspace::new()).await;
    let started = start_bg(&h, "s1", "sleep 3; echo built > out.txt; echo done; exit 4").await;
    assert!(started.contains("bg1 is still running"), "{started}");
    let read = h
        .run_tool(
            "o1",
            "command_output",
            json!({"handle": "bg1", "wait_ms": 20000}),
        )
        .await;
    assert!(read.contains("bg1 has ended. Exit code: 4"), "{read}");
    assert!(read.contains("done"), "{read}");
    assert!(read.contains("- created out.txt"), "{read}");
    eventually("every terminal is released", || {
        h.editor.unreleased_terminals().is_empty()
    })
    .await;
}
both!(
    ended_background_commands,
    ended_commands_report_exit_and_changes
);

fn spawn_with_config(home: &Path, model: &FakeModel, toml: &str) -> FakeEditor {
    write_config(home, toml);
    FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(home.to_path_buf()),
        ..SpawnOptions::default()
    })
}

async fn at_most_n_per_session(via: Via) {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model = FakeModel::start().await;
    let editor = spawn_with_config(home.path(), &model, "max_background_commands = 2\n");
    editor.initialize(via.capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    let h = Harness {
        model,
        editor,
        ws,
        sid,
    };
    h.set_mode("full-auto").await;
    let mut pids = Vec::new();
    for i in 1..=2 {
        let pidfile = h.ws.join(format!("s{i}.pid"));
        let out = h
            .run_tool(
                &format!("s{i}"),
                "run_command",
                json!({"command": sleeper(&pidfile), "background": true}),
            )
            .await;
        assert!(out.contains(&format!("bg{i}")), "{out}");
        pids.push(wait_pid_file(&pidfile).await);
    }
    let refused = start_bg(&h, "s3", "echo never").await;
    assert!(
        refused.contains("already runs 2 background commands")
            && refused.contains("max_background_commands"),
        "{refused}"
    );
    assert_eq!(h.final_status("s3"), "failed");
    h.run_tool("k1", "command_kill", json!({"handle": "bg1"}))
        .await;
    wait_gone(pids[0], "the background command").await;
    let again = start_bg(&h, "s4", "echo again; sleep 30").await;
    assert!(
        again.contains("Started in the background as bg3"),
        "{again}"
    );
}
both!(the_limit_holds, at_most_n_per_session);

/// session/close, session/delete and agent exit kill the whole group (the
/// shell and the `sleep` it started) and release the editor's terminals.
async fn cleanup(via: Via) {
    let h = auto(via, Workspace::new()).await;
    let start = |sid: String, tag: &'static str| {
        let pidfile = h.ws.join(format!("{tag}.pid"));
        let h = &h;
        async move {
            h.model.push(crate::support::Reply::tool_call(
                tag,
                "run_command",
                json!({"command": sleeper(&pidfile), "background": true}),
            ));
            h.model.push(crate::support::Reply::text("started"));
            h.editor.prompt(&sid, "start it").await;
            wait_pid_file(&pidfile).await
        }
    };
    let full_auto = |sid: String| {
        let h = &h;
        async move {
            h.editor
                .request(
                    "session/set_mode",
                    json!({"sessionId": sid, "modeId": "full-auto"}),
                )
                .await
                .unwrap();
        }
    };

    let pid = start(h.sid.clone(), "close").await;
    h.editor
        .request("session/close", json!({"sessionId": h.sid}))
        .await
        .unwrap();
    wait_gone(pid, "the background command").await;

    let sid = h.editor.new_session(h.ws.path()).await;
    full_auto(sid.clone()).await;
    let pid = start(sid.clone(), "delete").await;
    h.editor
        .request("session/delete", json!({"sessionId": sid}))
        .await
        .unwrap();
    wait_gone(pid, "the background command").await;
    eventually("terminals released after close and delete", || {
        h.editor.unreleased_terminals().is_empty()
    })
    .await;

    let sid = h.editor.new_session(h.ws.path()).await;
    full_auto(sid.clone()).await;
    let pid = start(sid, "exit").await;
    let mut h = h;
    h.editor.close_stdin().await;
    assert!(h.editor.wait_exit(Duration::from_secs(10)).await.success());
    wait_gone(pid, "the background command").await;
}
both!(killed_on_close_delete_and_exit, cleanup);

/// A flood: the model gets the last 64 KB and a note that the rest was dropped.
async fn output_is_bounded(via: Via) {
    let h = auto(via, Workspace::new()).await;
    let out = start_bg(
        &h,
        "s1",
        "head -c 200000 /dev/zero | tr '\\0' x; echo; echo END; sleep 30",
    )
    .await;
    assert!(
        out.contains("bytes of earlier output were dropped"),
        "{}",
        &out[..300.min(out.len())]
    );
    assert!(out.contains("END"));
    assert!(out.len() < 70 * 1024, "{}", out.len());
    h.run_tool("k1", "command_kill", json!({"handle": "bg1"}))
        .await;
}
both!(background_output_is_bounded, output_is_bounded);

/// Handles belong to their session: another session cannot read or kill
/// them (a hostile model guessing `bg1`).
#[tokio::test]
async fn handles_do_not_cross_sessions() {
    let h = auto(Via::Local, Workspace::new()).await;
    let pidfile = h.ws.join("a.pid");
    start_bg(&h, "s1", &sleeper(&pidfile)).await;
    let pid = wait_pid_file(&pidfile).await;
    let other = h.editor.new_session(h.ws.path()).await;
    h.editor
        .request(
            "session/set_mode",
            json!({"sessionId": other, "modeId": "full-auto"}),
        )
        .await
        .unwrap();
    h.model.push(crate::support::Reply::tool_calls([
        ("x1", "command_output", json!({"handle": "bg1"})),
        ("x2", "command_kill", json!({"handle": "bg1"})),
    ]));
    h.model.push(crate::support::Reply::text("tried"));
    h.editor.prompt(&other, "steal it").await;
    for id in ["x1", "x2"] {
        let r = h.tool_result(id);
        assert!(r.contains("no background command \"bg1\""), "{r}");
    }
    assert!(process_alive(pid));
    h.run_tool("k1", "command_kill", json!({"handle": "bg1"}))
        .await;
    wait_gone(pid, "the background command").await;
}

/// Background mode changes nothing about permissions: in `ask` mode the
/// user is asked, and a rejection starts nothing.
#[tokio::test]
async fn background_commands_ask_like_any_command() {
    let h = Harness::start(Via::Local, Workspace::new()).await;
    h.editor
        .push_permission(crate::support::PermissionDecision::RejectOnce);
    let out = start_bg(&h, "s1", "echo started > started.txt; sleep 30").await;
    assert!(out.contains("rejected"), "{out}");
    assert_eq!(h.editor.permission_requests().len(), 1);
    // Proving that nothing starts needs a wait with nothing to wait for:
    // a short one, as the command would have written its file at once.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!h.ws.exists("started.txt"));
    let r = h
        .run_tool("o1", "command_output", json!({"handle": "bg1"}))
        .await;
    assert!(r.contains("no background command"), "{r}");
}

/// The sandbox confines background commands like any other (issue 14):
/// in full-auto a write outside the roots fails, locally and in terminals.
async fn sandboxed(via: Via) {
    let probe = std::process::Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .args(["sandbox-exec", "--probe"])
        .output()
        .expect("probe");
    if probe.status.code() == Some(4) {
        eprintln!("skipping: no Landlock here");
        return;
    }
    let outside = tempfile::Builder::new()
        .prefix("bg-outside-")
        .tempdir_in(crate::support::outside_temp_base())
        .unwrap();
    let target = outside.path().join("escaped.txt");
    let h = auto(via, Workspace::new()).await;
    let out = start_bg(
        &h,
        "s1",
        &format!(
            "echo x > {} ; echo inside > in.txt; echo tried",
            target.display()
        ),
    )
    .await;
    let read = h
        .run_tool(
            "o1",
            "command_output",
            json!({"handle": "bg1", "wait_ms": 10000}),
        )
        .await;
    assert!(!target.exists(), "{out}\n{read}");
    assert!(h.ws.exists("in.txt"), "{out}\n{read}");
}
both!(background_commands_are_sandboxed, sandboxed);

/// The launcher's supervisor: even a SIGKILLed agent takes its background
/// commands along.
#[tokio::test]
async fn background_commands_die_with_a_killed_agent() {
    let mut h = auto(Via::Local, Workspace::new()).await;
    let pidfile = h.ws.join("k.pid");
    start_bg(&h, "s1", &sleeper(&pidfile)).await;
    let pid = wait_pid_file(&pidfile).await;
    h.editor.kill().await;
    wait_gone(pid, "the background command").await;
}
