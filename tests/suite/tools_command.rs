//! run_command end to end: in the editor's terminal (`terminal/*`) and as a
//! local process group; exit codes and output for the model, timeouts and
//! cancellation killing the command, terminals always released.

use super::tools_common::{Harness, Via, both, content_text, sleeper};
use crate::support::{
    PermissionDecision, Reply, Workspace, eventually, process_alive, wait_pid_file,
};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A full-auto session: commands in the project run without asking.
async fn auto(via: Via, ws: Workspace) -> Harness {
    let h = Harness::start(via, ws).await;
    h.set_mode("full-auto").await;
    h
}

fn terminal_methods(h: &Harness) -> Vec<String> {
    h.editor
        .terminal_calls()
        .iter()
        .map(|c| c.method.clone())
        .collect()
}

async fn wait_all_released(h: &Harness) {
    eventually("every terminal is released", || {
        h.editor.unreleased_terminals().is_empty()
    })
    .await;
    h.editor.assert_all_terminals_released();
}

// ------------------------------------------------------------- editor terminal

#[tokio::test]
async fn runs_in_the_editor_terminal() {
    let ws = Workspace::builder().dir("sub").build();
    let h = auto(Via::Editor, ws).await;
    let cmd = "echo out; echo err >&2; exit 3";
    let args = json!({"command": cmd});
    let out = h.run_tool("t1", "run_command", args.clone()).await;
    h.assert_lifecycle("t1", "execute", &args, true, true);
    assert!(out.contains("Exit code: 3"), "{out}");
    assert!(out.contains("out") && out.contains("err"), "{out}");
    assert_eq!(h.final_update("t1")["rawOutput"]["exitCode"], 3);

    let calls = h.editor.terminal_calls();
    let create = &calls[0];
    assert_eq!(create.method, "terminal/create");
    assert_eq!(create.params["sessionId"], h.sid.as_str());
    // Through the agent's own launcher (the command sandbox, issue 14).
    assert_eq!(create.params["command"], env!("CARGO_BIN_EXE_acp-coder"));
    let args = create.params["args"].as_array().unwrap();
    assert_eq!(args[0], "sandbox-exec");
    assert_eq!(
        args[args.len() - 3..],
        [json!("sh"), json!("-c"), json!(cmd)]
    );
    assert_eq!(create.params["cwd"], h.ws.path().display().to_string());
    assert!(
        create.params["outputByteLimit"]
            .as_u64()
            .is_some_and(|l| l > 0),
        "{}",
        create.params
    );
    assert_eq!(
        terminal_methods(&h),
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let tid = h.editor.terminals_created()[0].clone();
    assert!(
        calls[1..]
            .iter()
            .all(|c| c.params["terminalId"] == tid.as_str())
    );
    // The terminal is embedded in the tool call.
    let embedded = h
        .call_updates("t1")
        .iter()
        .any(|u| u["content"] == json!([{"type": "terminal", "terminalId": tid}]));
    assert!(embedded, "{:?}", h.call_updates("t1"));
    wait_all_released(&h).await;

    // `cwd` relative to the session cwd.
    let args = json!({"command": "pwd", "cwd": "sub"});
    let out = h.run_tool("t2", "run_command", args).await;
    let create = h
        .editor
        .terminal_calls()
        .into_iter()
        .filter(|c| c.method == "terminal/create")
        .nth(1)
        .unwrap();
    assert_eq!(create.params["cwd"], h.ws.join("sub").display().to_string());
    assert!(
        out.contains(&h.ws.join("sub").display().to_string()),
        "{out}"
    );
    wait_all_released(&h).await;

    // Long output: the model gets the end, and is told the rest is left out.
    let out = h
        .run_tool("t3", "run_command", json!({"command": "seq 1 100000"}))
        .await;
    assert_long_output(&out);
    wait_all_released(&h).await;
    assert!(h.editor.permission_requests().is_empty());
}

#[track_caller]
fn assert_long_output(out: &str) {
    assert!(
        out.starts_with("Exit code: 0"),
        "{}",
        &out[..200.min(out.len())]
    );
    assert!(
        out.ends_with("\n100000"),
        "{}",
        &out[out.len().saturating_sub(200)..]
    );
    assert!(out.contains("omitted"), "{}", &out[..200.min(out.len())]);
    assert!(out.len() < 64 * 1024, "{} bytes", out.len());
}

/// A backgrounded `sleep 30` with a 300 ms timeout: the call answers soon,
/// saying it timed out; the session, for what each test checks next.
async fn times_out(via: Via, call: &str) -> Harness {
    let h = auto(via, Workspace::new()).await;
    let started = Instant::now();
    let out = h
        .run_tool(
            call,
            "run_command",
            json!({"command": sleeper("pid"), "timeout_ms": 300}),
        )
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "sleep 30 was waited out"
    );
    assert!(out.contains("Timed out"), "{out}");
    assert_eq!(h.final_update(call)["rawOutput"]["timedOut"], true);
    h
}

#[tokio::test]
async fn terminal_timeout_kills_and_releases() {
    let h = times_out(Via::Editor, "t1").await;
    let methods = terminal_methods(&h);
    assert!(methods.contains(&"terminal/kill".to_owned()), "{methods:?}");
    let pid = wait_pid_file(&h.ws.join("pid")).await;
    eventually("the sleep is gone", || !process_alive(pid)).await;
    wait_all_released(&h).await;
}

// ------------------------------------------------------------------- local

#[tokio::test]
async fn runs_locally_with_streamed_output() {
    let ws = Workspace::builder().dir("sub").build();
    let h = auto(Via::Local, ws).await;
    let cmd = "echo out; echo err >&2; exit 3";
    let args = json!({"command": cmd});
    let out = h.run_tool("c1", "run_command", args.clone()).await;
    h.assert_lifecycle("c1", "execute", &args, true, true);
    assert!(out.contains("Exit code: 3"), "{out}");
    assert!(out.contains("out") && out.contains("err"), "{out}");
    assert_eq!(h.final_update("c1")["rawOutput"]["exitCode"], 3);
    // Output is streamed into the call while it runs (updates between
    // in_progress and the final status), and shown at the end.
    let updates = h.call_updates("c1");
    let running = updates
        .iter()
        .skip_while(|u| u["status"] != "in_progress")
        .skip(1)
        .take_while(|u| u.get("status").is_none())
        .any(|u| content_text(u).contains("out"));
    assert!(running, "no streamed output: {updates:?}");
    let last = content_text(&h.final_update("c1"));
    assert!(
        last.contains("out") && last.contains("Exit code: 3"),
        "{last}"
    );

    let out = h
        .run_tool("c2", "run_command", json!({"command": "pwd", "cwd": "sub"}))
        .await;
    assert!(
        out.contains(&h.ws.join("sub").display().to_string()),
        "{out}"
    );

    // The API key does not leak into commands.
    let out = h
        .run_tool(
            "c3",
            "run_command",
            json!({"command": "echo key=${OPENAI_API_KEY:-unset}; env | grep -c test-key || true"}),
        )
        .await;
    assert!(out.contains("key=unset"), "{out}");
    assert!(!out.contains("test-key"), "{out}");

    let out = h
        .run_tool("c4", "run_command", json!({"command": "seq 1 100000"}))
        .await;
    assert_long_output(&out);
    assert!(h.editor.reverse_requests().is_empty());
}

#[tokio::test]
async fn local_timeout_kills_the_process_group() {
    let h = times_out(Via::Local, "c1").await;
    let pid = wait_pid_file(&h.ws.join("pid")).await;
    eventually("the background sleep is gone", || !process_alive(pid)).await;

    // A command that ignores SIGTERM is killed all the same.
    let started = Instant::now();
    let out = h
        .run_tool(
            "c2",
            "run_command",
            json!({"command": format!("trap '' TERM; {}", sleeper("pid2")), "timeout_ms": 300}),
        )
        .await;
    assert!(out.contains("Timed out"), "{out}");
    let pid = wait_pid_file(&h.ws.join("pid2")).await;
    eventually("the TERM-proof sleep is gone", || !process_alive(pid)).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "sleep 30 was waited out"
    );
}

// ------------------------------------------------------------------- cancel

async fn cancel_during_sleep(via: Via) {
    let h = auto(via, Workspace::new()).await;
    h.model.push(Reply::tool_call(
        "s1",
        "run_command",
        json!({"command": sleeper("pid")}),
    ));
    let pending = h.editor.start_prompt(&h.sid, "sleep").await;
    let pid = wait_pid_file(&h.ws.join("pid")).await;
    assert!(process_alive(pid));
    let cancelled_at = Instant::now();
    h.editor.cancel(&h.sid).await;
    let r = pending.await.expect("prompt result");
    assert_eq!(r["stopReason"], "cancelled");
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(3),
        "cancel took {:?}",
        cancelled_at.elapsed()
    );
    assert_eq!(h.final_status("s1"), "failed");
    eventually("the sleep is gone", || !process_alive(pid)).await;
    if via == Via::Editor {
        wait_all_released(&h).await;
        let methods = terminal_methods(&h);
        assert!(
            methods.contains(&"terminal/kill".to_owned())
                || methods.contains(&"terminal/release".to_owned()),
            "{methods:?}"
        );
    }

    // The session goes on, and the model learns what happened.
    h.model.push(Reply::text("ok"));
    let r = h.editor.prompt(&h.sid, "next").await;
    assert_eq!(r["stopReason"], "end_turn");
    let told = h.tool_result("s1");
    assert!(told.contains("cancel"), "{told}");
    if via == Via::Editor {
        wait_all_released(&h).await;
    }
}

/// An outside review: an editor that never answers `terminal/kill` kept its
/// terminal forever, though the agent MUST release every terminal (ACP §10).
/// The kill is given up after a few seconds (and withdrawn), then the
/// terminal is released.
#[tokio::test]
async fn an_unanswered_kill_still_releases_the_terminal() {
    let h = auto(Via::Editor, Workspace::new()).await;
    h.editor.ignore_requests("terminal/kill");
    h.model.push(Reply::tool_call(
        "s1",
        "run_command",
        json!({"command": sleeper("pid")}),
    ));
    let pending = h.editor.start_prompt(&h.sid, "sleep").await;
    wait_pid_file(&h.ws.join("pid")).await;
    h.editor.cancel(&h.sid).await;
    let r = pending.await.expect("prompt result");
    assert_eq!(r["stopReason"], "cancelled");
    wait_all_released(&h).await;
    let sent = h.reverse_methods("terminal/");
    let kill = sent.iter().position(|m| m == "terminal/kill");
    let release = sent.iter().rposition(|m| m == "terminal/release");
    assert!(kill.is_some() && release > kill, "{sent:?}");
    eventually("the kill is withdrawn", || h.editor.ignored_requests() == 0).await;
}

#[tokio::test]
async fn cancel_kills_sleep_in_editor_terminal() {
    cancel_during_sleep(Via::Editor).await;
}

#[tokio::test]
async fn cancel_kills_local_sleep() {
    cancel_during_sleep(Via::Local).await;
}

// ------------------------------------------------------------------- plan

#[tokio::test]
async fn update_plan_sends_exactly_the_entries() {
    let h = Harness::start(Via::Local, Workspace::new()).await;
    // Plans need no permission, even in read-only mode.
    h.set_mode("read-only").await;
    let entries = json!([
        {"content": "Read the code", "status": "completed", "priority": "high"},
        {"content": "Fix the bug", "status": "in_progress", "priority": "medium"},
        {"content": "Write a test", "status": "pending", "priority": "low"}
    ]);
    let args = json!({"entries": entries});
    let out = h.run_tool("p1", "update_plan", args.clone()).await;
    h.assert_lifecycle("p1", "think", &args, true, true);
    assert!(out.contains("1 of 3"), "{out}");
    let plans = h.editor.updates_of_kind(&h.sid, "plan");
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["entries"], entries);

    // The next plan replaces it, exactly.
    let entries2 = json!([
        {"content": "Fix the bug", "status": "completed", "priority": "medium"}
    ]);
    h.run_tool("p2", "update_plan", json!({"entries": entries2}))
        .await;
    let plans = h.editor.updates_of_kind(&h.sid, "plan");
    assert_eq!(plans.len(), 2);
    assert_eq!(plans[1]["entries"], entries2);
    assert!(h.editor.permission_requests().is_empty());

    // An outside review: escape sequences reached the editor's plan raw.
    let hostile = json!([
        {"content": "Fix\u{1b}]0;pwn\u{7} the\r\nbug\u{202e}", "status": "pending"}
    ]);
    h.run_tool("p3", "update_plan", json!({"entries": hostile}))
        .await;
    let plans = h.editor.updates_of_kind(&h.sid, "plan");
    assert_eq!(plans[2]["entries"][0]["content"], "Fix the bug");
}

/// `timeout_ms: 0` (a small model filling every parameter) is the default
/// timeout, not a command killed at once.
#[tokio::test]
async fn a_zero_timeout_is_the_default() {
    let h = Harness::start(Via::Local, Workspace::builder().build()).await;
    h.set_mode("full-auto").await;
    let out = h
        .run_tool(
            "c1",
            "run_command",
            json!({"command": "sleep 0.3; echo done", "timeout_ms": 0}),
        )
        .await;
    assert!(out.contains("done") && !out.contains("Timed out"), "{out}");
}

/// Commands in words every shell the agent may choose understands (sh,
/// cmd.exe, PowerShell): `echo` and `exit N`, through the editor's terminal
/// and locally. The one command test that runs on Windows too
/// (scripts/wine-test.sh).
async fn any_shell_runs_echo_and_exit(via: Via) {
    let ws = Workspace::builder().dir("sub").build();
    let h = auto(via, ws).await;
    // Where there is no command sandbox (Windows), full-auto asks first.
    h.editor
        .set_default_permission(Some(PermissionDecision::AllowOnce));
    let out = h
        .run_tool(
            "p1",
            "run_command",
            json!({"command": "echo portable-hello"}),
        )
        .await;
    assert!(out.starts_with("Exit code: 0"), "{out}");
    assert!(out.contains("portable-hello"), "{out}");
    assert_eq!(h.final_update("p1")["rawOutput"]["exitCode"], 0);
    let out = h
        .run_tool(
            "p2",
            "run_command",
            json!({"command": "exit 3", "cwd": "sub"}),
        )
        .await;
    assert!(out.contains("Exit code: 3"), "{out}");
    assert_eq!(h.final_update("p2")["rawOutput"]["exitCode"], 3);
    if via == Via::Editor {
        wait_all_released(&h).await;
    } else {
        // Locally: no terminal (a permission request is all it may send).
        let methods: Vec<Value> = h
            .editor
            .reverse_requests()
            .iter()
            .map(|r| r["method"].clone())
            .filter(|m| m != "session/request_permission")
            .collect();
        assert!(methods.is_empty(), "{methods:?}");
    }
}
both!(any_shell_runs_commands, any_shell_runs_echo_and_exit);
