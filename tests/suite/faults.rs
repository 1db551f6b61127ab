//! Faults, each ending with a clear message to the user and nothing lost:
//! the model stream cut mid-response, malformed SSE, a hung model, the
//! editor failing `fs/*` and `terminal/*` requests, a permission request
//! never answered, an unwritable session store, a full disk, stdin closed
//! mid-turn, and SIGTERM.
//!
//! (An MCP server crashing mid-call is covered with the MCP client.)

use super::common::{spawn_in_home, write_config};
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, RpcError, TIMEOUT, Workspace, chunk,
    full_capabilities, process_alive, wait_gone, wait_pid_file,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A spawned agent with its own HOME (kept, so a second agent can load its
/// sessions), one session on a fresh workspace.
pub struct Agent {
    pub editor: FakeEditor,
    pub ws: Workspace,
    pub sid: String,
    pub home: tempfile::TempDir,
}

pub async fn start(model: &FakeModel, config: &str, caps: Value, env: &[(&str, &str)]) -> Agent {
    // Not in the temp directory, which sandboxed commands may write.
    let home = tempfile::tempdir_in(crate::support::outside_temp_base()).expect("home");
    write_config(home.path(), config);
    start_in(model, home, caps, env).await
}

pub async fn start_in(
    model: &FakeModel,
    home: tempfile::TempDir,
    caps: Value,
    env: &[(&str, &str)],
) -> Agent {
    let ws = Workspace::builder().file("a.txt", "alpha\n").build();
    let editor = spawn_in_home(model, home.path().to_path_buf(), env);
    editor.initialize(caps).await;
    let sid = editor.new_session(ws.path()).await;
    Agent {
        editor,
        ws,
        sid,
        home,
    }
}

/// Fs capabilities without a terminal: commands run as local processes.
pub fn fs_only() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false})
}

/// Loads `sid` in a fresh agent on the same HOME and returns what it replays.
pub async fn reload(model: &FakeModel, home: &Path, ws: &Path, sid: &str) -> Vec<Value> {
    let editor = spawn_in_home(model, home.to_path_buf(), &[]);
    editor.initialize(full_capabilities()).await;
    editor
        .request(
            "session/load",
            json!({"sessionId": sid, "cwd": ws, "mcpServers": []}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("the session does not load: {e}")));
    let updates = editor.updates_for(sid);
    editor.close_stdin().await;
    updates
}

/// The texts of replayed updates of one kind.
pub fn texts(updates: &[Value], kind: &str) -> Vec<String> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect()
}

// ------------------------------------------------------------- the model

#[tokio::test]
async fn a_stream_cut_mid_response_fails_clearly_and_keeps_the_conversation() {
    let model = FakeModel::start().await;
    let a = start(&model, "max_retries = 1\n", full_capabilities(), &[]).await;
    for _ in 0..2 {
        model.push(Reply::text("the first half of an answer").cut_after(3));
    }
    let err = a.editor.prompt_error(&a.sid, "first question").await;
    assert_eq!(err.code, -32603, "{err}");
    let endpoint = format!("{}/chat/completions", model.base_url());
    for part in [endpoint.as_str(), "dropped mid-reply", "after 2 attempts"] {
        assert!(err.message.contains(part), "{part:?} missing from: {err}");
    }
    let notes = a.editor.thought_text(&a.sid);
    assert!(notes.contains("connection dropped — retrying"), "{notes}");

    // Nothing lost: the question is in the next request and in the log.
    model.push(Reply::text("an answer at last"));
    let done = a.editor.prompt(&a.sid, "second question").await;
    assert_eq!(done["stopReason"], "end_turn");
    let last = model.chat_requests().last().cloned().unwrap();
    let users: Vec<&Value> = last
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| &m["content"])
        .collect();
    assert_eq!(users, [&json!("first question"), &json!("second question")]);
    a.editor.close_stdin().await;
    let replay = reload(&model, a.home.path(), a.ws.path(), &a.sid).await;
    assert_eq!(
        texts(&replay, "user_message_chunk"),
        ["first question", "second question"]
    );
    assert_eq!(texts(&replay, "agent_message_chunk"), ["an answer at last"]);
}

#[tokio::test]
async fn malformed_sse_fails_the_prompt_naming_the_bad_line() {
    let model = FakeModel::start().await;
    let a = start(&model, "", full_capabilities(), &[]).await;
    model.push(
        Reply::stream([chunk::role(), chunk::text("Hel")])
            .raw("data: {\"choices\": [{\"delta\": {\"content\": \"lo\"\n\n")
            .chunk(chunk::text(" never seen")),
    );
    let err = a.editor.prompt_error(&a.sid, "hi").await;
    assert_eq!(err.code, -32603, "{err}");
    assert!(
        err.message.contains("not valid chat-completion JSON")
            && err.message.contains("\\\"content\\\": \\\"lo\\\""),
        "{err}"
    );
    // Not retried: a server sending garbage would send it again.
    assert_eq!(model.chat_requests().len(), 1);
    assert_eq!(a.editor.agent_text(&a.sid), "Hel");
    // The session goes on, with the question kept.
    model.push(Reply::text("fine now"));
    assert_eq!(
        a.editor.prompt(&a.sid, "again").await["stopReason"],
        "end_turn"
    );
    let last = model.chat_requests().last().cloned().unwrap();
    assert_eq!(last.messages()[1]["content"], "hi");
}

#[tokio::test]
async fn a_hung_model_times_out_with_a_clear_message() {
    let model = FakeModel::start().await;
    let a = start(
        &model,
        "max_retries = 1\n",
        full_capabilities(),
        &[("ACP_CODER_STREAM_IDLE_SECS", "1")],
    )
    .await;
    // First attempt: a few chunks, then silence. Second: no headers at all.
    model.push(Reply::text("I am thinking about").hang_after(2));
    model.push(Reply::text("never").first_byte_delay(Duration::from_secs(60)));
    let started = Instant::now();
    let err = a.editor.prompt_error(&a.sid, "hello?").await;
    let took = started.elapsed();
    eprintln!("hung model → error after {took:?}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(err.code, -32603, "{err}");
    assert!(
        err.message.contains("sent nothing for 1 s") && err.message.contains("2 attempts"),
        "{err}"
    );
    assert!(a.editor.thought_text(&a.sid).contains("no reply in time"));
    // The hung stream was abandoned, not left open.
    assert!(model.wait_for_disconnects(1, TIMEOUT).await);
    model.push(Reply::text("back"));
    assert_eq!(
        a.editor.prompt(&a.sid, "now?").await["stopReason"],
        "end_turn"
    );
}

// ------------------------------------------------------------ the editor

/// Runs one tool call against an editor that fails `method`, and returns
/// (the final tool_call_update, the tool result the model got).
async fn tool_against_failing_editor(
    method: &str,
    tool: &str,
    args: Value,
    permission: Option<PermissionDecision>,
) -> (Agent, Value, String) {
    let model = FakeModel::start().await;
    let a = start(&model, "", full_capabilities(), &[]).await;
    a.editor.fail_requests(
        method,
        Some(RpcError::new(
            -32603,
            "the buffer is locked by another process",
        )),
    );
    if let Some(p) = permission {
        a.editor.push_permission(p);
    }
    model.push(Reply::tool_call("call_1", tool, args));
    model.push(Reply::text("I could not do it."));
    let done = a.editor.prompt(&a.sid, "go").await;
    assert_eq!(done["stopReason"], "end_turn");
    let last = a
        .editor
        .updates_of_kind(&a.sid, "tool_call_update")
        .into_iter()
        .rfind(|u| u["status"].is_string())
        .expect("a final status");
    let requests = model.chat_requests();
    let result = requests[1]
        .messages()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    (a, last, result)
}

#[tokio::test]
async fn an_editor_failing_fs_read_fails_the_call_not_the_turn() {
    let (a, last, result) = tool_against_failing_editor(
        "fs/read_text_file",
        "read_file",
        json!({"path": "a.txt"}),
        None,
    )
    .await;
    assert_eq!(last["status"], "failed", "{last}");
    let shown = last["content"][0]["content"]["text"].as_str().unwrap_or("");
    for text in [shown, result.as_str()] {
        assert!(
            text.contains("the editor could not access")
                && text.contains("a.txt")
                && text.contains("the buffer is locked by another process"),
            "{text}"
        );
    }
    assert_eq!(a.ws.read("a.txt"), "alpha\n");
}

#[tokio::test]
async fn an_editor_failing_fs_write_leaves_the_file_alone() {
    let (a, last, result) = tool_against_failing_editor(
        "fs/write_text_file",
        "write_file",
        json!({"path": "a.txt", "content": "beta\n"}),
        Some(PermissionDecision::AllowOnce),
    )
    .await;
    assert_eq!(last["status"], "failed", "{last}");
    assert!(
        result.contains("the buffer is locked by another process") && result.contains("a.txt"),
        "{result}"
    );
    assert_eq!(a.ws.read("a.txt"), "alpha\n", "nothing was written");
}

/// `echo hi` where the editor fails `method`: the call fails, saying
/// `what` and the editor's reason.
async fn command_against_failing_terminal(method: &str, what: &str) -> Agent {
    let (a, last, result) = tool_against_failing_editor(
        method,
        "run_command",
        json!({"command": "echo hi"}),
        Some(PermissionDecision::AllowOnce),
    )
    .await;
    assert_eq!(last["status"], "failed", "{last}");
    assert!(
        result.contains(what) && result.contains("the buffer is locked by another process"),
        "{result}"
    );
    a
}

#[tokio::test]
async fn an_editor_failing_terminal_create_fails_the_call_clearly() {
    let a = command_against_failing_terminal(
        "terminal/create",
        "the editor could not start a terminal",
    )
    .await;
    a.editor.assert_all_terminals_released();
}

#[tokio::test]
async fn an_editor_failing_terminal_output_still_gets_its_terminal_released() {
    let a =
        command_against_failing_terminal("terminal/output", "could not read the terminal's output")
            .await;
    assert_eq!(a.editor.terminals_created().len(), 1);
    a.editor.assert_all_terminals_released();
}

#[tokio::test]
async fn a_permission_never_answered_still_lets_cancel_end_the_turn() {
    let model = FakeModel::start().await;
    let a = start(&model, "", full_capabilities(), &[]).await;
    a.editor.push_permission(PermissionDecision::NeverAnswer);
    model.push(Reply::tool_call(
        "call_w",
        "write_file",
        json!({"path": "b.txt", "content": "x"}),
    ));
    let pending = a.editor.start_prompt(&a.sid, "write b").await;
    let request = a
        .editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    // A bare cancel: this editor never answers the permission request.
    let started = Instant::now();
    a.editor
        .notify("session/cancel", json!({"sessionId": a.sid}))
        .await;
    let result = pending.response().await.expect("the prompt is answered");
    let took = started.elapsed();
    assert_eq!(result["stopReason"], "cancelled");
    // "At once", not "when the editor answers" (never): the latency target
    // is the `cancel` bench's.
    assert!(took < Duration::from_secs(3), "cancel took {took:?}");
    let last = a.editor.updates_of_kind(&a.sid, "tool_call_update");
    let last = last.last().unwrap();
    assert_eq!(last["status"], "failed");
    assert!(!a.ws.exists("b.txt"));
    // A very late "allow" changes nothing, and the session works on.
    a.editor
        .answer_held_permissions(PermissionDecision::AllowOnce)
        .await;
    model.push(Reply::text("ok"));
    assert_eq!(
        a.editor.prompt(&a.sid, "next").await["stopReason"],
        "end_turn"
    );
    assert!(!a.ws.exists("b.txt"), "a late answer ran nothing");
    assert!(request["params"]["toolCall"]["title"].is_string());
}

// ------------------------------------------------------------ the store

fn sessions_dir(home: &Path) -> PathBuf {
    home.join(".local/share/acp-coder/sessions")
}

#[tokio::test]
async fn an_unwritable_session_store_is_told_once_and_catches_up_when_fixed() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), "");
    // A regular file where the directory should be: unwritable even for root.
    let dir = sessions_dir(home.path());
    std::fs::create_dir_all(dir.parent().unwrap()).unwrap();
    std::fs::write(&dir, "not a directory").unwrap();
    let a = start_in(&model, home, full_capabilities(), &[]).await;
    model.push(Reply::text("first answer"));
    model.push(Reply::text("second answer"));
    assert_eq!(
        a.editor.prompt(&a.sid, "one").await["stopReason"],
        "end_turn"
    );
    assert_eq!(
        a.editor.prompt(&a.sid, "two").await["stopReason"],
        "end_turn"
    );
    let text = a.editor.agent_text(&a.sid);
    let warning = format!("could not be saved to {}", dir.display());
    assert_eq!(text.matches(&warning).count(), 1, "told once: {text}");
    assert!(text.contains("first answer") && text.contains("second answer"));
    assert!(
        a.editor.stderr().contains("session record not saved"),
        "{}",
        a.editor.stderr()
    );

    // The user fixes it; the next record writes everything held back.
    std::fs::remove_file(&dir).unwrap();
    let replay = third_turn_then_replay(&model, &a).await;
    assert_eq!(
        texts(&replay, "user_message_chunk"),
        ["one", "two", "three"]
    );
}

/// A third turn ("three") once the store works again; after a restart the
/// replay has all three answers. The replayed updates.
async fn third_turn_then_replay(model: &FakeModel, a: &Agent) -> Vec<Value> {
    model.push(Reply::text("third answer"));
    assert_eq!(
        a.editor.prompt(&a.sid, "three").await["stopReason"],
        "end_turn"
    );
    a.editor.close_stdin().await;
    let replay = reload(model, a.home.path(), a.ws.path(), &a.sid).await;
    assert_eq!(
        texts(&replay, "agent_message_chunk"),
        ["first answer", "second answer", "third answer"]
    );
    replay
}

/// Lets the agent see EFBIG instead of dying of SIGXFSZ when it writes past
/// RLIMIT_FSIZE (an ignored signal stays ignored across exec).
#[cfg(target_os = "linux")]
fn ignore_sigxfsz() {
    // SAFETY: changes this test process's disposition of a signal nothing here uses.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Another process's limit: `prlimit`, which only Linux has.
#[cfg(target_os = "linux")]
fn set_file_size_limit(pid: u32, bytes: Option<u64>) {
    let limit = bytes.unwrap_or(libc::RLIM_INFINITY);
    let new = libc::rlimit {
        rlim_cur: limit,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: plain syscall on a child process of this test.
    let rc = unsafe {
        libc::prlimit(
            i32::try_from(pid).unwrap(),
            libc::RLIMIT_FSIZE,
            &new,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0, "prlimit: {}", std::io::Error::last_os_error());
}

/// A full disk makes `write` fail part-way through a record, exactly like
/// the file size limit used here (ENOSPC and EFBIG take the same path): the
/// user is told, the turn goes on, and once there is room again the held
/// records are written whole, in order.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_full_disk_loses_no_record_once_there_is_room_again() {
    ignore_sigxfsz();
    let model = FakeModel::start().await;
    let a = start(&model, "", full_capabilities(), &[]).await;
    let pid = a.editor.pid().expect("spawned");
    model.push(Reply::text("first answer"));
    assert_eq!(
        a.editor.prompt(&a.sid, "one").await["stopReason"],
        "end_turn"
    );
    let log = sessions_dir(a.home.path()).join(format!("{}.jsonl", a.sid));
    let size = std::fs::metadata(&log).unwrap().len();
    // Room for a few more bytes only: the next record is cut mid-line.
    set_file_size_limit(pid, Some(size + 40));
    let long = "a long prompt ".repeat(200);
    model.push(Reply::text("second answer"));
    assert_eq!(
        a.editor.prompt(&a.sid, &long).await["stopReason"],
        "end_turn"
    );
    assert!(
        a.editor.agent_text(&a.sid).contains("could not be saved"),
        "{}",
        a.editor.agent_text(&a.sid)
    );
    let cut = std::fs::metadata(&log).unwrap().len();
    assert!(cut > size && cut <= size + 40, "{size} → {cut}");
    set_file_size_limit(pid, None);
    let replay = third_turn_then_replay(&model, &a).await;
    assert_eq!(
        texts(&replay, "user_message_chunk"),
        ["one".to_owned(), long.clone(), "three".to_owned()]
    );
}

// --------------------------------------------------------- the process

/// A model asking for a command that records its pid and then sleeps.
fn sleeper(ws: &Workspace) -> (Reply, PathBuf) {
    let pid_file = ws.join("sleep.pid");
    let reply = Reply::tool_call(
        "call_sleep",
        "run_command",
        json!({"command": "echo $$ > sleep.pid; exec sleep 30"}),
    );
    (reply, pid_file)
}

/// Starts a turn in full-auto whose model runs
/// `sleep 30` locally; returns once the sleep runs, with its pid.
async fn turn_running_sleep(model: &FakeModel) -> (Agent, u32, crate::support::PendingRequest) {
    let a = start(model, "default_mode = \"full-auto\"\n", fs_only(), &[]).await;
    let (reply, pid_file) = sleeper(&a.ws);
    model.push(reply);
    let pending = a.editor.start_prompt(&a.sid, "start the sleeper").await;
    let pid = wait_pid_file(&pid_file).await;
    assert!(process_alive(pid));
    (a, pid, pending)
}

/// After the agent stopped mid-command: the command is gone and the session
/// loads with the prompt and the stopped call.
async fn assert_stopped_cleanly(model: &FakeModel, a: &Agent, pid: u32) {
    wait_gone(pid, "the command, after the agent stopped").await;
    let replay = reload(model, a.home.path(), a.ws.path(), &a.sid).await;
    assert_eq!(texts(&replay, "user_message_chunk"), ["start the sleeper"]);
    let calls: Vec<&Value> = replay
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .collect();
    assert_eq!(calls.len(), 1, "the stopped call is kept: {replay:#?}");
    assert_eq!(calls[0]["status"], "failed");
    assert!(calls[0]["title"].as_str().unwrap().contains("sleep 30"));
}

#[tokio::test]
async fn stdin_closed_mid_command_stops_it_and_keeps_the_session() {
    let model = FakeModel::start().await;
    let (mut a, pid, pending) = turn_running_sleep(&model).await;
    let started = Instant::now();
    a.editor.close_stdin().await;
    // The turn is wound down, not dropped: the prompt gets its answer.
    let result = pending.response().await.expect("the prompt is answered");
    assert_eq!(result["stopReason"], "cancelled");
    let status = a.editor.wait_exit(Duration::from_secs(3)).await;
    eprintln!("EOF mid-command → exit in {:?}", started.elapsed());
    assert_eq!(status.code(), Some(0), "{}", a.editor.stderr());
    assert_stopped_cleanly(&model, &a, pid).await;
}

#[cfg(unix)] // signals, file modes and FIFOs are Unix's
#[tokio::test]
async fn sigterm_mid_command_shuts_down_cleanly() {
    let model = FakeModel::start().await;
    let (mut a, pid, pending) = turn_running_sleep(&model).await;
    let agent = i32::try_from(a.editor.pid().unwrap()).unwrap();
    let started = Instant::now();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(agent, libc::SIGTERM) }, 0);
    // Like end of input: the turn is cancelled and answered before the exit.
    let result = pending.response().await.expect("the prompt is answered");
    assert_eq!(result["stopReason"], "cancelled");
    let status = a.editor.wait_exit(Duration::from_secs(3)).await;
    eprintln!("SIGTERM mid-command → exit in {:?}", started.elapsed());
    assert_eq!(status.code(), Some(0), "{}", a.editor.stderr());
    assert_stopped_cleanly(&model, &a, pid).await;
}
