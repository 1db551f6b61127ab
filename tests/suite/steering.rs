//! Steering (`_session/steering`, as codex-acp defines it) and prompts
//! queued behind a running turn. Every frame is schema-checked by the fake
//! editor.

use super::common::spawn;
use super::tools_common::write_call;
use crate::support::waits::eventually;
use crate::support::{FakeModel, PermissionDecision, Reply, Workspace, full_capabilities};
use serde_json::{Value, json};

fn text_of(update: &Value) -> &str {
    update["content"]["text"].as_str().unwrap_or_default()
}

/// `full_capabilities()` plus `session.notices`.
fn with_notices() -> Value {
    let mut caps = full_capabilities();
    caps["session"] = json!({"notices": {}});
    caps
}

#[tokio::test]
async fn steering_joins_the_running_turn_at_the_next_model_boundary_and_replays_there() {
    let model = FakeModel::start().await;
    let ws = Workspace::builder().file("a.txt", "old\n").build();
    let editor = spawn(&model, &[]);
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["_meta"]["steering"]["supported"], true, "{init}");
    let sid = editor.new_session(ws.path()).await;
    // The turn stops at a permission request the editor holds: the steering
    // message comes while a tool call is open.
    editor.push_permission(PermissionDecision::NeverAnswer);
    model.push(Reply::tool_calls([write_call("w1", "a.txt", "new\n")]));
    model.push(Reply::text("done, and hi"));
    let pending = editor.start_prompt(&sid, "write it").await;
    editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    let steer = editor
        .send_request(
            "_session/steering",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "also say hi"}]}),
        )
        .await;
    editor
        .answer_held_permissions(PermissionDecision::RejectOnce)
        .await;
    let result = pending.await.expect("prompt result");
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(
        steer.await.expect("steering"),
        json!({"outcome": "injected"})
    );

    // The model read it after the tool result, as a user message.
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].roles(),
        ["system", "user", "assistant", "tool", "user"]
    );
    assert_eq!(
        requests[1].last_message().unwrap()["content"],
        "also say hi"
    );

    // A load replays it where it was given: after the tool call, before the reply.
    let from = editor.message_count();
    editor.load_session(&sid, ws.path()).await;
    let replay: Vec<Value> = editor.messages()[from..]
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| m["params"]["update"].clone())
        .collect();
    let at = |pred: &dyn Fn(&Value) -> bool| {
        replay
            .iter()
            .position(pred)
            .unwrap_or_else(|| panic!("not replayed: {replay:#?}"))
    };
    let tool = at(&|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "w1");
    let steered =
        at(&|u| u["sessionUpdate"] == "user_message_chunk" && text_of(u) == "also say hi");
    let reply =
        at(&|u| u["sessionUpdate"] == "agent_message_chunk" && text_of(u) == "done, and hi");
    assert!(tool < steered && steered < reply, "{replay:#?}");
}

#[tokio::test]
async fn steering_an_idle_session_asks_for_a_prompt_or_starts_a_turn() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    let steer = |meta: Value| {
        let mut params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": "go on"}]});
        if !meta.is_null() {
            params["_meta"] = meta;
        }
        params
    };
    // The client sends prompts itself when idle (idleBehavior promptRequired).
    let r = editor
        .request(
            "_session/steering",
            steer(json!({"steering": {"idleBehavior": "promptRequired"}})),
        )
        .await
        .expect("steering");
    assert_eq!(r, json!({"outcome": "promptRequired"}));
    assert!(model.chat_requests().is_empty());

    // Otherwise the message starts a turn of its own.
    model.push(Reply::text("going on"));
    let r = editor
        .request("_session/steering", steer(Value::Null))
        .await
        .expect("steering");
    assert_eq!(r, json!({"outcome": "startedNewTurn"}));
    eventually("the turn the steering message started answers", || {
        editor.agent_text(&sid) == "going on"
    })
    .await;
    assert_eq!(
        model.chat_requests()[0].last_message().unwrap()["content"],
        "go on"
    );

    // An unknown session is an error, not a turn.
    let e = editor
        .request(
            "_session/steering",
            json!({"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "x"}]}),
        )
        .await
        .unwrap_err();
    assert!(e.message.contains("unknown session"), "{e:?}");
}

/// Prompts sent during a turn wait in line, first in first out, each with
/// its own response; `session/cancel` stops the running turn only. With
/// `session.notices` the user is told a prompt is queued; without it nothing
/// new is sent.
async fn queued_prompts(caps: Value) -> Vec<Value> {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let editor = spawn(&model, &[]);
    editor.initialize(caps).await;
    let sid = editor.new_session(ws.path()).await;
    model.push(Reply::text("first answer that never ends").hang_after(2));
    model.push(Reply::text("second answer"));
    model.push(Reply::text("third answer"));
    let first = editor.start_prompt(&sid, "first").await;
    editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "agent_message_chunk")
        .await;
    let second = editor.start_prompt(&sid, "second").await;
    let third = editor.start_prompt(&sid, "third").await;
    // Both wait: the model saw the first prompt only.
    editor.cancel(&sid).await;
    assert_eq!(first.await.unwrap()["stopReason"], "cancelled");
    assert_eq!(second.await.unwrap()["stopReason"], "end_turn");
    assert_eq!(third.await.unwrap()["stopReason"], "end_turn");
    let asked: Vec<String> = model
        .chat_requests()
        .iter()
        .map(|r| {
            r.last_message().unwrap()["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(asked, ["first", "second", "third"]);
    assert!(
        editor
            .agent_text(&sid)
            .ends_with("second answerthird answer")
    );
    editor.updates_of_kind(&sid, "notice")
}

#[tokio::test]
async fn prompts_during_a_turn_queue_in_order_and_cancel_stops_the_running_one_only() {
    let notices = queued_prompts(with_notices()).await;
    let titles: Vec<&str> = notices
        .iter()
        .map(|n| n["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Prompt queued behind 1 turn",
            "Prompt queued behind 2 turns"
        ]
    );
    assert!(notices.iter().all(|n| n["severity"] == "info"));
}

#[tokio::test]
async fn without_the_notices_capability_no_notice_is_sent() {
    assert!(queued_prompts(full_capabilities()).await.is_empty());
}
