//! A2A clients are guests (issue 42 items 1 and 2, DESIGN "Who holds which
//! rights"): no slash command that changes rights or state reaches them, the
//! server's mode and directory are their ceiling, and their answers to
//! permission requests are never kept for the project.
use serde_json::{Value, json};

use super::a2a::{serve, text_of};
use super::a2a_http::{post, rpc, user_message};
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, SpawnOptions, Workspace, no_capabilities,
};

/// A message continuing context `ctx`.
fn in_context(ctx: &Value, text: &str) -> Value {
    json!({"message": {"role": "ROLE_USER", "messageId": format!("m-{text}"), "contextId": ctx,
                       "parts": [{"text": text}]}})
}

/// On a read-only server, `/mode full-auto` from a client is refused (the
/// reply names the command and why) and changes nothing: the next task's
/// write and command are refused by the read-only mode. It used to answer
/// "Mode is now Full auto", then write the file and run the command.
#[tokio::test]
async fn a_guest_cannot_widen_a_read_only_server_with_slash_mode() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &["--mode", "read-only"], &[]).await;
    let t = Some(s.token.as_str());
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("/mode full-auto"))).await;
    let task = &b["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{b}");
    let reply = text_of(&task["status"]["message"]);
    assert!(
        reply.contains("`/mode full-auto` is not available to A2A clients")
            && reply.contains("acp-coder a2a --mode")
            && reply.contains("/add-dir"),
        "{reply}"
    );
    assert!(!reply.contains("Mode is now"), "{reply}");
    assert!(model.chat_requests().is_empty(), "no turn ran");

    model.push(Reply::tool_calls([
        (
            "w1",
            "write_file",
            json!({"path": "owned.txt", "content": "x\n"}),
        ),
        ("c1", "run_command", json!({"command": "touch ran.txt"})),
    ]));
    model.push(Reply::text("done"));
    let (_, b) = post(
        &s,
        t,
        rpc("SendMessage", in_context(&task["contextId"], "write it")),
    )
    .await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    assert!(!ws.exists("owned.txt"), "the write ran");
    assert!(!ws.exists("ran.txt"), "the command ran");
    for id in ["w1", "c1"] {
        let result = model.tool_result_for(id).unwrap_or_default();
        assert!(
            result.contains("not allowed") && result.contains("Read only mode"),
            "{id}: {result}"
        );
    }
}

/// On an ask-mode server, `/add-dir <outside>` is refused, so a later task
/// reading a secret there still asks (the task waits for input) and the
/// model has not seen it. It used to read the secret without a question.
#[tokio::test]
async fn a_guest_cannot_add_a_directory_outside_the_served_one() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let outside = Workspace::builder()
        .file("secret.txt", "OUTSIDE-SECRET-77")
        .build();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let t = Some(s.token.as_str());
    let add = format!("/add-dir {}", outside.path().display());
    let (_, b) = post(&s, t, rpc("SendMessage", user_message(&add))).await;
    let task = &b["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{b}");
    let reply = text_of(&task["status"]["message"]);
    assert!(
        reply.contains("/add-dir") && reply.contains("not available to A2A clients"),
        "{reply}"
    );

    let secret = outside.join("secret.txt");
    model.push(Reply::tool_call(
        "r1",
        "read_file",
        json!({"path": secret.display().to_string()}),
    ));
    model.push(Reply::text("read it"));
    let (_, b) = post(
        &s,
        t,
        rpc("SendMessage", in_context(&task["contextId"], "read it")),
    )
    .await;
    let second = &b["result"]["task"];
    assert_eq!(
        second["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "reading outside the served directory asks: {b}"
    );
    assert!(
        model.tool_result_for("r1").is_none(),
        "the model got the file before an answer"
    );
    let (_, b) = post(&s, t, rpc("CancelTask", json!({"id": second["id"]}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
    assert!(
        !model
            .chat_requests()
            .iter()
            .any(|r| r.body.to_string().contains("OUTSIDE-SECRET-77")),
        "the secret reached the model"
    );
}

/// An A2A client is not offered "also in later sessions of this project",
/// and naming that option is refused; its "always" holds in its own context
/// only. The user's next editor session in the same project and data
/// directory still asks before `sh gen.sh --again`. It used to run it
/// without asking, on a rule the client had kept.
#[tokio::test]
async fn a_guest_answer_is_never_kept_for_the_project() {
    let model = FakeModel::start().await;
    let ws = Workspace::builder()
        .file("gen.sh", "touch generated\n")
        .build();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let t = Some(s.token.as_str());
    let command = "sh gen.sh --again";
    model.push(Reply::tool_call(
        "k1",
        "run_command",
        json!({"command": command}),
    ));
    model.push(Reply::text("generated"));
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("generate"))).await;
    let task = b["result"]["task"].clone();
    assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{b}");
    let offered: Vec<String> = task["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["data"]["options"].as_array())
        .flatten()
        .filter_map(|o| o["optionId"].as_str().map(str::to_owned))
        .collect();
    assert!(offered.contains(&"allow-always".to_owned()), "{offered:?}");
    assert!(
        !offered.contains(&"allow-project".to_owned()),
        "{offered:?}"
    );

    let answer = |parts: Value| {
        json!({"message": {"role": "ROLE_USER", "messageId": "a", "taskId": task["id"],
                           "contextId": task["contextId"], "parts": parts}})
    };
    let (_, b) = post(
        &s,
        t,
        rpc(
            "SendMessage",
            answer(json!([{"data": {"optionId": "allow-project"}}])),
        ),
    )
    .await;
    assert_eq!(b["error"]["code"], -32602, "{b}");
    let (_, b) = post(
        &s,
        t,
        rpc("SendMessage", answer(json!([{"text": "always"}]))),
    )
    .await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    assert!(ws.exists("generated"));
    let kept = s.home.path().join(".local/share/acp-coder/permissions");
    assert!(
        std::fs::read_dir(&kept).map_or(true, |mut d| d.next().is_none()),
        "a kept rule was written in {}",
        kept.display()
    );

    // The user's editor, same project, same data directory: it asks.
    let editor = FakeEditor::spawn_with(SpawnOptions {
        args: Vec::new(),
        envs: model.agent_env(),
        home: Some(s.home.path().to_owned()),
        cwd: None,
        program: None,
    });
    editor.initialize(no_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.push_permission(PermissionDecision::RejectOnce);
    model.push(Reply::tool_call(
        "k2",
        "run_command",
        json!({"command": command}),
    ));
    model.push(Reply::text("asked"));
    let r = editor.prompt(&sid, "generate again").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let asked = editor.permission_requests();
    assert_eq!(
        asked.len(),
        1,
        "the editor session was not asked: {asked:?}"
    );
    editor.shut_down().await;
}

/// A client that names the user's own conversation of the served directory
/// (`contextId`) gets it in the server's mode and directory: not the
/// full-auto the user chose there, nor the directory the user added. It
/// used to inherit both: the write ran on a read-only server.
#[tokio::test]
async fn a_loaded_conversation_keeps_the_servers_ceiling() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let outside = Workspace::builder()
        .file("secret.txt", "OUTSIDE-SECRET-78")
        .build();
    let s = serve(&model, ws.path(), &["--mode", "read-only"], &[]).await;
    let t = Some(s.token.as_str());
    let mut editor = FakeEditor::spawn_with(SpawnOptions {
        args: Vec::new(),
        envs: model.agent_env(),
        home: Some(s.home.path().to_owned()),
        cwd: None,
        program: None,
    });
    editor.initialize(no_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.set_mode(&sid, "full-auto").await;
    let add = format!("/add-dir {}", outside.path().display());
    editor.prompt(&sid, &add).await;
    model.push(Reply::text("noted"));
    editor.prompt(&sid, "hello").await;
    editor.close_stdin().await;
    editor.wait_exit(std::time::Duration::from_secs(30)).await;

    model.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "owned.txt", "content": "x\n"}),
    ));
    model.push(Reply::text("done"));
    let (_, b) = post(&s, t, rpc("SendMessage", in_context(&json!(sid), "write"))).await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    assert!(!ws.exists("owned.txt"), "the write ran");
    let write = model.tool_result_for("w1").unwrap_or_default();
    assert!(write.contains("Read only mode"), "{write}");

    let secret = outside.join("secret.txt");
    model.push(Reply::tool_call(
        "r1",
        "read_file",
        json!({"path": secret.display().to_string()}),
    ));
    model.push(Reply::text("read it"));
    let (_, b) = post(&s, t, rpc("SendMessage", in_context(&json!(sid), "read"))).await;
    let task = &b["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "reading outside the served directory asks: {b}"
    );
    assert!(model.tool_result_for("r1").is_none());
    let (_, b) = post(&s, t, rpc("CancelTask", json!({"id": task["id"]}))).await;
    assert_eq!(b["result"]["status"]["state"], "TASK_STATE_CANCELED", "{b}");
}
