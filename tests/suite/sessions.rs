//! Sessions that last (issue 5): persistence across restarts, load with replay,
//! resume without, list with pagination, crash safety, compaction, model
//! choice, slash commands.
use std::path::Path;

use serde_json::{Value, json};

use crate::support::{
    FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, chunk, config_option, full_capabilities,
    no_capabilities,
};

fn spawn_in(home: &Path, model: &FakeModel, extra: &[(&str, &str)]) -> FakeEditor {
    let mut envs = model.agent_env();
    for (k, v) in extra {
        envs.retain(|(ek, _)| ek != k);
        envs.push(((*k).into(), (*v).into()));
    }
    FakeEditor::spawn_with(SpawnOptions {
        envs,
        home: Some(home.to_path_buf()),
        ..SpawnOptions::default()
    })
}

/// An initialized agent without client capabilities, its data under `home`.
async fn started_in(home: &Path, model: &FakeModel) -> FakeEditor {
    let editor = spawn_in(home, model, &[]);
    editor.initialize(no_capabilities()).await;
    editor
}

/// [`started_in`] a fresh HOME, then a new session (on a fresh workspace)
/// where `prompt` was answered `answer`: what a test of what a restart keeps
/// starts from.
async fn first_turn(
    prompt: &str,
    answer: &str,
) -> (tempfile::TempDir, Workspace, FakeModel, FakeEditor, String) {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model = FakeModel::with_replies([Reply::text(answer)]).await;
    let editor = started_in(home.path(), &model).await;
    let sid = editor.new_session(ws.path()).await;
    editor.prompt(&sid, prompt).await;
    (home, ws, model, editor, sid)
}

/// Index of the response to request `id` among the agent's messages.
fn response_index(messages: &[Value], id: &Value) -> usize {
    messages
        .iter()
        .position(|m| m.get("method").is_none() && &m["id"] == id)
        .expect("response present")
}

#[tokio::test]
async fn restart_then_load_replays_everything_and_continues_with_full_history() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder()
        .file("notes.txt", "alpha\nbeta\n")
        .build();
    let model =
        FakeModel::with_replies([Reply::reasoning_then_text("let me look", "Reading it.")]).await;
    // Turn 1: a tool call, then an answer.
    model.push(Reply::tool_call(
        "call_a",
        "read_file",
        json!({"path": "notes.txt"}),
    ));
    model.push(Reply::text("The file has two lines."));
    let editor = started_in(home.path(), &model).await;
    let sid = editor.new_session(ws.path()).await;
    assert_eq!(
        editor.prompt(&sid, "hello there").await["stopReason"],
        "end_turn"
    );
    assert_eq!(
        editor.prompt(&sid, "what is in notes.txt?").await["stopReason"],
        "end_turn"
    );
    let title = editor.updates_of_kind(&sid, "session_info_update");
    assert_eq!(title[0]["title"], "hello there");
    editor.shut_down().await;

    // A new agent process with the same data directory.
    let editor = spawn_in(home.path(), &model, &[]);
    let init = editor.initialize(no_capabilities()).await;
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"][0]["sessionId"], sid.as_str());
    assert_eq!(list["sessions"][0]["title"], "hello there");
    assert!(list["sessions"][0]["updatedAt"].is_string());

    let before = editor.messages().len();
    let load = editor
        .send_request(
            "session/load",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": []}),
        )
        .await;
    let load_id = load.id().to_json();
    let result = load.response().await.unwrap();
    assert_eq!(result["modes"]["currentModeId"], "ask");
    let commands = editor
        .wait_for(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await;
    assert!(
        commands["params"]["update"]["availableCommands"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "compact")
    );
    let messages = editor.messages();
    let resp_at = response_index(&messages, &load_id);
    let replay: Vec<&Value> = messages[before..resp_at]
        .iter()
        .map(|m| &m["params"]["update"])
        .collect();
    let kinds: Vec<&str> = replay
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk",
            "user_message_chunk",
            "tool_call",
            "agent_message_chunk"
        ],
        "replay order"
    );
    assert_eq!(replay[0]["content"]["text"], "hello there");
    assert_eq!(replay[1]["content"]["text"], "let me look");
    assert_eq!(replay[4]["status"], "completed");
    assert_eq!(replay[4]["kind"], "read");
    assert_eq!(replay[5]["content"]["text"], "The file has two lines.");
    // Commands come strictly after the response.
    let commands_at = messages
        .iter()
        .position(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .unwrap();
    assert!(commands_at > resp_at);

    // The next prompt carries the whole history to the model.
    model.push(Reply::text("Still here."));
    assert_eq!(
        editor.prompt(&sid, "and now?").await["stopReason"],
        "end_turn"
    );
    let last = model.chat_requests().last().unwrap().clone();
    let roles: Vec<&str> = last.roles();
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user"
        ]
    );
    assert_eq!(last.messages()[5]["tool_call_id"], "call_a");
    assert!(last.text(5).contains("alpha"));
    editor.shut_down().await;
}

/// A session another process has open (`acp-coder a2a` serving it as a
/// conversation, another editor) opens read-only instead of failing: load
/// and resume answer, the replay ends with a note saying why and what to do,
/// a prompt says it again and runs nothing; once that process lets it go,
/// the session loads as usual.
#[tokio::test]
async fn a_session_open_in_another_process_opens_read_only() {
    let (home, ws, model, editor, sid) = first_turn("remember 42", "first answer").await;
    // `editor`'s agent still holds the session.
    let other = started_in(home.path(), &model).await;
    other.load_session(&sid, ws.path()).await;
    let text = other.agent_text(&sid);
    assert!(text.contains("first answer"), "{text}");
    assert!(
        text.contains("open in another acp-coder process (pid ")
            && text.contains("read-only")
            && text.contains("then open the session again"),
        "{text}"
    );
    let before = model.chat_requests().len();
    let r = other.prompt(&sid, "go on").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert_eq!(model.chat_requests().len(), before, "nothing ran");
    assert_eq!(other.agent_text(&sid).matches("read-only").count(), 2);
    other.resume_session(&sid, ws.path()).await;

    // Let go: the first agent ends; the session loads writable again, and
    // the refused prompt was never saved.
    editor.shut_down().await;
    other.shut_down().await;
    let third = started_in(home.path(), &model).await;
    third.load_session(&sid, ws.path()).await;
    assert!(!third.agent_text(&sid).contains("read-only"));
    model.push(Reply::text("it was 42"));
    third.prompt(&sid, "what number?").await;
    assert_eq!(model.chat_requests().len(), before + 1);
    let sent = model.chat_requests().last().unwrap().messages().to_vec();
    assert!(!Value::Array(sent).to_string().contains("go on"));
    third.shut_down().await;
}

#[tokio::test]
async fn resume_restores_without_replay() {
    let (home, ws, model, editor, sid) = first_turn("remember 42", "first answer").await;
    editor.shut_down().await;

    let editor = started_in(home.path(), &model).await;
    let before = editor.updates().len();
    editor.resume_session(&sid, ws.path()).await;
    editor
        .wait_for(|m| m["params"]["update"]["sessionUpdate"] == "available_commands_update")
        .await;
    let after: Vec<Value> = editor.updates()[before..].to_vec();
    assert!(
        after
            .iter()
            .all(|u| u["update"]["sessionUpdate"] != "user_message_chunk"
                && u["update"]["sessionUpdate"] != "agent_message_chunk"),
        "resume must not replay: {after:#?}"
    );
    model.push(Reply::text("it was 42"));
    editor.prompt(&sid, "what number?").await;
    let last = model.chat_requests().last().unwrap().clone();
    assert!(
        last.messages()
            .iter()
            .any(|m| m["content"] == "remember 42")
    );
    editor.shut_down().await;
}

#[tokio::test]
async fn list_paginates_filters_by_cwd_and_rejects_bad_cursors() {
    let home = tempfile::tempdir().unwrap();
    let a = Workspace::new();
    let b = Workspace::new();
    let model = FakeModel::start().await;
    let editor = started_in(home.path(), &model).await;
    for _ in 0..52 {
        editor.new_session(a.path()).await;
    }
    let in_b = editor.new_session(b.path()).await;
    let page1 = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(page1["sessions"].as_array().unwrap().len(), 50);
    let cursor = page1["nextCursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let page2 = editor
        .request("session/list", json!({"cursor": cursor}))
        .await
        .unwrap();
    assert_eq!(page2["sessions"].as_array().unwrap().len(), 3);
    assert!(page2.get("nextCursor").is_none());
    let only_b = editor
        .request("session/list", json!({"cwd": b.path()}))
        .await
        .unwrap();
    assert_eq!(only_b["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(only_b["sessions"][0]["sessionId"], in_b.as_str());
    let none = editor
        .request("session/list", json!({"cwd": "/nonexistent/dir"}))
        .await
        .unwrap();
    assert_eq!(none["sessions"], json!([]));
    let err = editor
        .request("session/list", json!({"cursor": "garbage"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("cursor"), "{}", err.message);

    // Delete removes from the list; deleting again succeeds silently.
    editor
        .request("session/delete", json!({"sessionId": in_b}))
        .await
        .unwrap();
    editor
        .request("session/delete", json!({"sessionId": in_b}))
        .await
        .unwrap();
    let only_b = editor
        .request("session/list", json!({"cwd": b.path()}))
        .await
        .unwrap();
    assert_eq!(only_b["sessions"], json!([]));
    let err = editor
        .request(
            "session/load",
            json!({"sessionId": in_b, "cwd": b.path(), "mcpServers": []}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, -32002);
    editor.shut_down().await;
}

#[cfg(unix)] // signals, file modes and FIFOs are Unix's
#[tokio::test]
async fn kill_dash_nine_mid_turn_then_load_keeps_what_was_complete() {
    let (home, ws, model, editor, sid) =
        first_turn("first part", "Done with the first part.").await;
    // Second turn: the model streams a little, then hangs; the agent is killed.
    model.push(Reply::stream([chunk::text("partial ans"), chunk::text("wer")]).hang_after(1));
    let _pending = editor.start_prompt(&sid, "second part").await;
    editor
        .wait_for_update(&sid, |u| u["content"]["text"] == "partial ans")
        .await;
    let pid = editor.pid().unwrap() as i32;
    unsafe { libc::kill(pid, libc::SIGKILL) };
    editor.wait_closed().await;
    drop(editor);

    // A torn record at the end as if killed mid-write.
    let log = home
        .path()
        .join(format!(".local/share/acp-coder/sessions/{sid}.jsonl"));
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str(r#"{"t":"assistant","text":"tor"#);
    std::fs::write(&log, text).unwrap();

    let editor = started_in(home.path(), &model).await;
    editor.load_session(&sid, ws.path()).await;
    let texts: Vec<String> = editor
        .updates_for(&sid)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect();
    assert!(texts.contains(&"first part".to_owned()));
    assert!(texts.contains(&"Done with the first part.".to_owned()));
    assert!(
        texts.contains(&"second part".to_owned()),
        "the prompt of the interrupted turn was recorded"
    );
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "continue").await;
    editor.shut_down().await;
}

#[tokio::test]
async fn compaction_triggers_when_the_window_fills_and_the_user_sees_it() {
    let home = tempfile::tempdir().unwrap();
    let config_dir = home.path().join(".config/acp-coder");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("config.toml"), "context_window = 3000\n").unwrap();
    let ws = Workspace::new();
    let model = FakeModel::with_replies([Reply::text("noted").with_usage(2000, 10)]).await;
    let editor = started_in(home.path(), &model).await;
    let sid = editor.new_session(ws.path()).await;
    let usage_size = |e: &FakeEditor| {
        e.updates_of_kind(&sid, "usage_update")
            .last()
            .map(|u| u["size"].clone())
    };
    editor
        .prompt(&sid, &format!("first: {}", "x".repeat(4000)))
        .await;
    assert_eq!(usage_size(&editor), Some(json!(3000)));
    // The next prompt pushes past 80 % of the window: a summary call comes first.
    model.push(Reply::text("SUMMARY: the user sent x's."));
    model.push(Reply::text("second answer"));
    editor
        .prompt(&sid, &format!("second: {}", "y".repeat(2000)))
        .await;
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    let summary_req = &requests[1];
    assert!(
        summary_req.tool_names().is_empty(),
        "the summary call offers no tools"
    );
    assert!(summary_req.text(0).contains("compacting"));
    let after = &requests[2];
    let first_user = after.messages()[1]["content"].as_str().unwrap();
    assert!(
        first_user.contains("SUMMARY: the user sent x's."),
        "{first_user}"
    );
    assert!(!after.messages().iter().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("first: "))
    }));
    assert!(
        after.messages().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .starts_with("second: ")
    );
    assert!(
        editor.thought_text(&sid).contains("Context compacted"),
        "{}",
        editor.thought_text(&sid)
    );

    // /compact on demand, and the compacted history survives a restart.
    model.push(Reply::text("SUMMARY TWO"));
    assert_eq!(
        editor.prompt(&sid, "/compact").await["stopReason"],
        "end_turn"
    );
    editor.shut_down().await;
    let editor = started_in(home.path(), &model).await;
    editor.resume_session(&sid, ws.path()).await;
    model.push(Reply::text("fine"));
    editor.prompt(&sid, "go on").await;
    let last = model.chat_requests().last().unwrap().clone();
    let roles: Vec<&str> = last.roles();
    assert_eq!(roles, ["system", "user", "user"]);
    assert!(last.text(1).contains("SUMMARY TWO"));
    editor.shut_down().await;
}

#[tokio::test]
async fn model_option_lists_fake_models_and_switches() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model = FakeModel::start().await;
    model.set_models(&["m-one", "m-two"]);
    // No ACP_CODER_MODEL: the first listed model is the default.
    let editor = spawn_in(home.path(), &model, &[("ACP_CODER_MODEL", "")]);
    editor.initialize(no_capabilities()).await;
    let new = editor.new_session_full(ws.path()).await;
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    let option = config_option(&new, "model");
    assert_eq!(option["category"], "model");
    assert_eq!(option["currentValue"], "m-one");
    let values: Vec<&str> = option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["m-one", "m-two"]);
    model.push(Reply::text("one"));
    editor.prompt(&sid, "hi").await;
    assert_eq!(model.chat_requests().last().unwrap().body["model"], "m-one");
    let set = editor
        .request(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "model", "value": "m-two"}),
        )
        .await
        .unwrap();
    let current = config_option(&set, "model")["currentValue"].clone();
    assert_eq!(current, "m-two");
    let err = editor
        .request(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "model", "value": "nope"}),
        )
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    model.push(Reply::text("two"));
    editor.prompt(&sid, "again").await;
    assert_eq!(model.chat_requests().last().unwrap().body["model"], "m-two");
    editor.shut_down().await;

    // The choice is part of the session: it survives a restart.
    let editor = spawn_in(home.path(), &model, &[("ACP_CODER_MODEL", "")]);
    editor.initialize(no_capabilities()).await;
    let resumed = editor
        .request(
            "session/resume",
            json!({"sessionId": sid, "cwd": ws.path()}),
        )
        .await
        .unwrap();
    let current = config_option(&resumed, "model")["currentValue"].clone();
    assert_eq!(current, "m-two");
    model.push(Reply::text("three"));
    editor.prompt(&sid, "after restart").await;
    assert_eq!(model.chat_requests().last().unwrap().body["model"], "m-two");
    editor.shut_down().await;
}

#[tokio::test]
async fn slash_commands_run_locally_or_as_prompts() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder()
        .file(
            ".acp-coder/commands/explain.md",
            "---\ndescription: Explain a file\n---\nExplain $ARGUMENTS in detail.\n",
        )
        .build();
    // A user-wide command from the config directory.
    let user_cmds = home.path().join(".config/acp-coder/commands");
    std::fs::create_dir_all(&user_cmds).unwrap();
    std::fs::write(
        user_cmds.join("standup.md"),
        "Summarize what changed today.\n",
    )
    .unwrap();
    let model = FakeModel::start().await;
    let editor = spawn_in(home.path(), &model, &[]);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    let cmds = editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "available_commands_update")
        .await;
    let names: Vec<&str> = cmds["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for expected in [
        "compact", "init", "review", "mode", "model", "status", "mcp", "explain", "standup",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    // Local commands answer without the model.
    editor.prompt(&sid, "/status").await;
    assert!(editor.agent_text(&sid).contains("fake-model"));
    editor.prompt(&sid, "/mode full-auto").await;
    editor
        .wait_for_update(&sid, |u| {
            u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "full-auto"
        })
        .await;
    assert!(model.chat_requests().is_empty());
    // Prompt commands expand their template.
    model.push(Reply::text("It is a file."));
    editor.prompt(&sid, "/explain src/main.rs").await;
    let req = model.chat_requests().last().unwrap().clone();
    assert_eq!(
        req.last_message().unwrap()["content"],
        "Explain src/main.rs in detail.\n"
    );
    model.push(Reply::text("AGENTS.md written"));
    editor.prompt(&sid, "/init").await;
    let req = model.chat_requests().last().unwrap().clone();
    assert!(
        req.last_message().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("AGENTS.md")
    );
    editor.shut_down().await;
}

#[tokio::test]
async fn close_cancels_a_running_turn() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model =
        FakeModel::with_replies([Reply::stream([chunk::text("thinking…")]).hang_after(1)]).await;
    let editor = started_in(home.path(), &model).await;
    let sid = editor.new_session(ws.path()).await;
    let pending = editor.start_prompt(&sid, "long task").await;
    editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "agent_message_chunk")
        .await;
    editor
        .request("session/close", json!({"sessionId": sid}))
        .await
        .unwrap();
    assert_eq!(pending.response().await.unwrap()["stopReason"], "cancelled");
    let err = editor
        .request("session/close", json!({"sessionId": sid}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32002);
    editor.shut_down().await;
}
