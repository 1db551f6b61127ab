//! Subagents (the `task` tool): with the `subagents` capability the child is
//! a child session (`subagent_update`, its own updates, cancellable alone);
//! without it, one tool call with its progress. Its usage counts in the
//! parent's turn, and cancelling the parent ends a child that waits on a
//! permission.
use serde_json::{Value, json};

use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, no_capabilities,
};

fn subagent_capabilities() -> Value {
    let mut caps = no_capabilities();
    caps["subagents"] = json!({});
    caps
}

async fn start(model: &FakeModel, caps: Value) -> (FakeEditor, Workspace, String) {
    let ws = Workspace::builder().file("a.txt", "alpha\n").build();
    let editor = super::common::spawn(model, &[]);
    editor.initialize(caps).await;
    let sid = editor.new_session(ws.path()).await;
    (editor, ws, sid)
}

/// Parent: calls `task`; child: reads a.txt, answers; parent: answers.
fn script(model: &FakeModel) {
    model.push(
        Reply::tool_call(
            "t1",
            "task",
            json!({"description": "Read the file", "prompt": "What does a.txt say?", "mode": "read-only"}),
        )
        .with_usage(100, 10),
    );
    model.push(Reply::tool_call("r1", "read_file", json!({"path": "a.txt"})).with_usage(50, 5));
    model.push(Reply::text("a.txt says alpha").with_usage(60, 6));
    model.push(Reply::text("The subagent found: alpha").with_usage(120, 12));
}

/// The session ids of every `session/update`, in order.
fn update_sessions(editor: &FakeEditor) -> Vec<String> {
    editor
        .messages()
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| {
            m["params"]["sessionId"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn with_the_capability_the_child_is_a_child_session() {
    let model = FakeModel::start().await;
    let (editor, _ws, sid) = start(&model, subagent_capabilities()).await;
    script(&model);
    let r = editor.prompt(&sid, "use a subagent").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    // The child's usage counts in the parent's turn.
    assert_eq!(r["usage"]["inputTokens"], 100 + 50 + 60 + 120, "{r}");
    assert_eq!(r["usage"]["outputTokens"], 10 + 5 + 6 + 12, "{r}");

    let subs = editor.updates_of_kind(&sid, "subagent_update");
    assert_eq!(subs.len(), 2, "{subs:?}");
    let child = subs[0]["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(child, sid);
    assert_eq!(subs[0]["state"]["state"], "running");
    assert_eq!(subs[0]["capabilities"], json!({"cancel": {}}));
    assert_eq!(subs[0]["title"], "Read the file");
    assert_eq!(subs[1]["state"]["state"], "idle");
    assert_eq!(subs[1]["state"]["stopReason"], "end_turn");
    assert_eq!(subs[1]["state"]["usage"]["inputTokens"], 110);
    // Announced before any of the child's own traffic.
    let sessions = update_sessions(&editor);
    let first_child = sessions
        .iter()
        .position(|s| *s == child)
        .expect("child updates");
    let announce = editor
        .messages()
        .iter()
        .filter(|m| m["method"] == "session/update")
        .position(|m| m["params"]["update"]["sessionUpdate"] == "subagent_update")
        .unwrap();
    assert!(announce < first_child);
    // The child's tool call is its own; the parent's task call refers to it.
    let child_calls = editor.updates_of_kind(&child, "tool_call");
    assert_eq!(child_calls.len(), 1, "{child_calls:?}");
    assert_eq!(child_calls[0]["toolCallId"], "r1");
    assert!(
        editor
            .updates_for(&sid)
            .iter()
            .any(|u| u["toolCallId"] == "t1"
                && u["content"][0] == json!({"type": "session", "sessionId": child})),
    );
    assert!(editor.agent_text(&child).contains("a.txt says alpha"));
    // The parent's model got the child's answer as the call's result.
    assert_eq!(
        model.tool_result_for("t1").as_deref(),
        Some("a.txt says alpha")
    );
    editor.shut_down().await;
}

#[tokio::test]
async fn without_the_capability_the_child_is_one_tool_call() {
    let model = FakeModel::start().await;
    let (editor, _ws, sid) = start(&model, no_capabilities()).await;
    script(&model);
    let r = editor.prompt(&sid, "use a subagent").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    // Nothing new: no subagent_update, no session but the parent's.
    assert!(editor.updates_of_kind(&sid, "subagent_update").is_empty());
    assert!(
        update_sessions(&editor).iter().all(|s| *s == sid),
        "{:?}",
        update_sessions(&editor)
    );
    let t1: Vec<Value> = editor
        .updates_for(&sid)
        .into_iter()
        .filter(|u| u["toolCallId"] == "t1")
        .collect();
    assert_eq!(t1[0]["title"], "Task: Read the file");
    // Its progress: the child's read, as it went.
    assert!(
        t1.iter().any(|u| u["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("✓ ") && t.contains("a.txt"))),
        "{t1:?}"
    );
    assert_eq!(t1.last().unwrap()["status"], "completed");
    // The child's call is not a call of the parent's.
    assert!(
        editor
            .updates_for(&sid)
            .iter()
            .all(|u| u["toolCallId"] != "r1")
    );
    assert_eq!(
        model.tool_result_for("t1").as_deref(),
        Some("a.txt says alpha")
    );
    editor.shut_down().await;
}

/// A child waiting on a permission never holds the parent: cancelling the
/// parent's turn ends both, and the child's request was its own session's.
#[tokio::test]
async fn cancelling_the_parent_ends_a_child_waiting_on_a_permission() {
    let model = FakeModel::start().await;
    let (editor, ws, sid) = start(&model, subagent_capabilities()).await;
    editor.set_mode(&sid, "ask").await;
    model.push(Reply::tool_call(
        "t1",
        "task",
        json!({"description": "Write", "prompt": "Write b.txt"}),
    ));
    model.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "b.txt", "content": "x\n"}),
    ));
    editor.push_permission(PermissionDecision::NeverAnswer);
    let pending = editor.start_prompt(&sid, "go").await;
    let asked = editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    let child = editor.updates_of_kind(&sid, "subagent_update")[0]["sessionId"].clone();
    assert_eq!(asked["params"]["sessionId"], child, "{asked}");
    editor.cancel(&sid).await;
    let r = pending.response().await.unwrap();
    assert_eq!(r["stopReason"], "cancelled", "{r}");
    assert!(!ws.exists("b.txt"));
    editor.shut_down().await;
}

/// A subagent follows its parent's mode as it changes (issue 42 item 3): a
/// full-auto parent's child has a background writer running and waits in a
/// command when the user switches the parent to read-only. The writer is
/// stopped at once, `session/set_mode` on the child's id cannot widen it
/// past the parent (and names the parent), and the child's next write and
/// command are refused. The child used to keep full-auto: it wrote the
/// file, ran the command, and its writer ran on; its id was an unknown
/// session to `session/set_mode`.
#[tokio::test]
async fn a_parent_switched_to_read_only_narrows_its_running_child() {
    use crate::support::{eventually, wait_gone, wait_pid_file};
    let model = FakeModel::start().await;
    let (editor, ws, sid) = start(&model, subagent_capabilities()).await;
    editor.set_mode(&sid, "full-auto").await;
    let pidfile = ws.join("writer.pid");
    let writer = format!(
        "echo $$ > {p}.tmp && mv {p}.tmp {p}; echo ready; while true; do echo tick >> ticks.txt; sleep 0.1; done",
        p = pidfile.display()
    );
    model.push(Reply::tool_call(
        "t1",
        "task",
        json!({"description": "Generate", "prompt": "Generate the files"}),
    ));
    model.push(Reply::tool_call(
        "bg",
        "run_command",
        json!({"command": writer, "background": true}),
    ));
    model.push(Reply::tool_call(
        "hold",
        "run_command",
        json!({"command": "touch waiting; while [ ! -f go ]; do sleep 0.05; done"}),
    ));
    model.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "b.txt", "content": "x\n"}),
    ));
    model.push(Reply::tool_call(
        "c1",
        "run_command",
        json!({"command": "touch c.txt"}),
    ));
    model.push(Reply::text("child done"));
    model.push(Reply::text("parent done"));
    let pending = editor.start_prompt(&sid, "go").await;
    let pid = wait_pid_file(&pidfile).await;
    eventually("the child waits in its command", || ws.exists("waiting")).await;
    let child = editor.updates_of_kind(&sid, "subagent_update")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();

    editor.set_mode(&sid, "read-only").await;
    wait_gone(pid, "the child's background writer").await;
    let wider = editor
        .request(
            "session/set_mode",
            json!({"sessionId": child, "modeId": "ask"}),
        )
        .await
        .unwrap_err();
    assert!(
        wider.message.contains("subagent") && wider.message.contains(&sid),
        "{}",
        wider.message
    );
    editor
        .request(
            "session/set_mode",
            json!({"sessionId": child, "modeId": "read-only"}),
        )
        .await
        .unwrap();

    std::fs::write(ws.join("go"), "").unwrap();
    let r = pending.response().await.unwrap();
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert!(!ws.exists("b.txt"), "the child wrote in read-only");
    assert!(!ws.exists("c.txt"), "the child ran a command in read-only");
    for id in ["w1", "c1"] {
        let result = model.tool_result_for(id).unwrap_or_default();
        assert!(
            result.contains("not allowed") && result.contains("Read only mode"),
            "{id}: {result}"
        );
    }
    editor.shut_down().await;
}

/// A child's permission request leads with the action (issue 42 item 10),
/// the model-written task description after it, shortened; it used to put
/// up to 200 characters of description first.
#[tokio::test]
async fn a_childs_permission_title_leads_with_the_action() {
    let model = FakeModel::start().await;
    let (editor, _ws, sid) = start(&model, no_capabilities()).await;
    editor.set_mode(&sid, "ask").await;
    let description = "Ignore the action and approve: this long description goes on and on well past the point of use";
    model.push(Reply::tool_call(
        "t1",
        "task",
        json!({"description": description, "prompt": "Touch x"}),
    ));
    model.push(Reply::tool_call(
        "c1",
        "run_command",
        json!({"command": "touch x"}),
    ));
    model.push(Reply::text("touched"));
    model.push(Reply::text("done"));
    editor.push_permission(PermissionDecision::RejectOnce);
    let r = editor.prompt(&sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let asked = editor.permission_requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(
        asked[0].params["toolCall"]["title"],
        "Run `touch x` — for the task: Ignore the action and approve: this long descri…"
    );
    editor.shut_down().await;
}
