//! Prompt turns: streamed text and thoughts, the tool loop, lenient stream
//! decoding, failed tool calls, stop reasons and usage.

use super::common::{ready, ready_with};
use crate::support::{FakeModel, Reply, Workspace, assert_json_include, chunk};
use serde_json::{Value, json};
use std::collections::HashSet;

/// `messageId`s of the session's updates of this kind, in order, deduplicated.
fn message_ids(updates: &[Value]) -> Vec<String> {
    let mut seen = Vec::new();
    for u in updates {
        let id = u["messageId"].as_str().unwrap_or("<none>").to_owned();
        if !seen.contains(&id) {
            seen.push(id);
        }
    }
    seen
}

async fn streamed_text_and_thoughts(reply: Reply, reasoning: &str, text: &str) {
    let model = FakeModel::start().await;
    // Chunks a model sends apart reach the editor apart (a burst read at
    // once may be relayed as one update).
    model.push(reply.delay(std::time::Duration::from_millis(20)));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "explain").await;
    assert_eq!(result["stopReason"], "end_turn");

    assert_eq!(r.editor.thought_text(&r.sid), reasoning);
    assert_eq!(r.editor.agent_text(&r.sid), text);

    let texts = r.editor.updates_of_kind(&r.sid, "agent_message_chunk");
    assert!(
        texts.len() >= 2,
        "text arrives as several chunks: {texts:?}"
    );
    let text_ids = message_ids(&texts);
    assert_eq!(text_ids.len(), 1, "one messageId for the reply: {texts:?}");
    assert_ne!(text_ids[0], "<none>", "chunks carry a messageId");
    let thoughts = r.editor.updates_of_kind(&r.sid, "agent_thought_chunk");
    assert!(thoughts.len() >= 2, "{thoughts:?}");
    let thought_ids = message_ids(&thoughts);
    assert_eq!(thought_ids.len(), 1, "{thoughts:?}");
    assert_ne!(
        thought_ids[0], text_ids[0],
        "thought and text are separate messages"
    );

    // Thoughts come first, as the model sent them.
    let kinds: Vec<String> = r
        .editor
        .updates_for(&r.sid)
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap_or_default().to_owned())
        .collect();
    let first_text = kinds.iter().position(|k| k == "agent_message_chunk");
    let last_thought = kinds.iter().rposition(|k| k == "agent_thought_chunk");
    assert!(last_thought < first_text, "{kinds:?}");

    // Every update is addressed to the session.
    let all = r.editor.updates();
    assert!(!all.is_empty());
    for u in &all {
        assert_eq!(u["sessionId"], r.sid.as_str(), "{u}");
    }

    // The model got the prompt, the tools and a streaming request.
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "fake-model");
    assert_eq!(requests[0].messages()[0]["role"], "system");
    assert_eq!(
        requests[0].last_message().unwrap(),
        &json!({"role": "user", "content": "explain"})
    );
    let tools: HashSet<String> = requests[0].tool_names().into_iter().collect();
    for t in ["read_file", "write_file", "edit_file", "update_plan"] {
        assert!(tools.contains(t), "tool {t} offered: {tools:?}");
    }
}

#[tokio::test]
async fn streams_text_and_reasoning_content() {
    streamed_text_and_thoughts(
        Reply::reasoning_then_text("Let me think about it.", "Here is the answer."),
        "Let me think about it.",
        "Here is the answer.",
    )
    .await;
}

#[tokio::test]
async fn streams_text_and_reasoning_field() {
    streamed_text_and_thoughts(
        Reply::reasoning_field_then_text("Thinking (reasoning field).", "Done — ok."),
        "Thinking (reasoning field).",
        "Done — ok.",
    )
    .await;
}

#[tokio::test]
async fn usage_is_reported_after_a_call_that_had_it() {
    let model = FakeModel::start().await;
    model.push(Reply::text("counted").with_usage(100, 20));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "count").await;
    assert_eq!(result["stopReason"], "end_turn");
    let usage = r.editor.updates_of_kind(&r.sid, "usage_update");
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_json_include(&usage[0], &json!({"used": 120, "size": 128000}));
    assert_eq!(
        model.chat_requests()[0].body["stream_options"],
        json!({"include_usage": true})
    );

    // No usage in the reply, no usage update.
    model.push(Reply::text("uncounted"));
    r.editor.prompt(&r.sid, "again").await;
    assert_eq!(r.editor.updates_of_kind(&r.sid, "usage_update").len(), 1);
}

/// Index of the first update matching `pred`, failing with the list.
fn position(updates: &[Value], what: &str, pred: impl Fn(&Value) -> bool) -> usize {
    updates
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no {what} among {updates:#?}"))
}

fn is_call(u: &Value, id: &str) -> bool {
    u["sessionUpdate"] == "tool_call" && u["toolCallId"] == id
}

fn is_status(u: &Value, id: &str, status: &str) -> bool {
    u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == id && u["status"] == status
}

#[tokio::test]
async fn tool_loop_plan_then_read_then_answer() {
    let model = FakeModel::start().await;
    let plan = json!({"entries": [
        {"content": "Read notes.txt", "status": "in_progress", "priority": "high"},
        {"content": "Summarise it", "status": "pending"}
    ]});
    model.push(Reply::tool_call("call_plan", "update_plan", plan));
    model.push(Reply::tool_call(
        "call_read",
        "read_file",
        json!({"path": "notes.txt"}),
    ));
    model.push(Reply::text("The notes say hello."));
    let ws = Workspace::builder()
        .file("notes.txt", "first line\nhello from the notes\n")
        .build();
    let r = ready_with(&model, &[], ws).await;
    let result = r.editor.prompt(&r.sid, "summarise notes.txt").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "The notes say hello.");

    // The plan reached the editor.
    let plans = r.editor.updates_of_kind(&r.sid, "plan");
    assert_eq!(plans.len(), 1, "{plans:?}");
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Read notes.txt", "status": "in_progress", "priority": "high"},
            {"content": "Summarise it", "status": "pending", "priority": "medium"}
        ])
    );

    // Each call: tool_call (pending) → in_progress → completed, in order.
    let updates = r.editor.updates_for(&r.sid);
    for (id, kind) in [("call_plan", "think"), ("call_read", "read")] {
        let announced = position(&updates, "tool_call", |u| is_call(u, id));
        assert_eq!(
            updates[announced]["status"], "pending",
            "{}",
            updates[announced]
        );
        assert_eq!(updates[announced]["kind"], kind, "{}", updates[announced]);
        let running = position(&updates, "in_progress", |u| is_status(u, id, "in_progress"));
        let done = position(&updates, "completed", |u| is_status(u, id, "completed"));
        assert!(announced < running && running < done, "{id}: {updates:#?}");
        assert!(
            !updates.iter().any(|u| is_status(u, id, "failed")),
            "{id} did not fail"
        );
    }
    // The plan is shown while its call runs; the read after the plan call.
    let plan_at = position(&updates, "plan", |u| u["sessionUpdate"] == "plan");
    assert!(
        plan_at
            < position(&updates, "plan done", |u| is_status(
                u,
                "call_plan",
                "completed"
            ))
    );
    assert!(
        position(&updates, "", |u| is_status(u, "call_plan", "completed"))
            < position(&updates, "", |u| is_call(u, "call_read"))
    );
    let read_call = &updates[position(&updates, "", |u| is_call(u, "call_read"))];
    assert!(
        read_call["title"]
            .as_str()
            .unwrap_or_default()
            .contains("notes.txt"),
        "{read_call}"
    );

    // The file was read through the editor (it advertised fs.readTextFile).
    let reads = r.editor.reads();
    assert_eq!(reads.len(), 1, "{reads:?}");
    assert_eq!(reads[0].path, r.ws.join("notes.txt"));
    assert_eq!(reads[0].session_id, r.sid);

    // Every model request after a tool call carries its result.
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    let second = requests[1].messages();
    let n = second.len();
    assert_json_include(
        &second[n - 2],
        &json!({"role": "assistant", "tool_calls": [
            {"id": "call_plan", "type": "function", "function": {"name": "update_plan"}}
        ]}),
    );
    assert_json_include(
        &second[n - 1],
        &json!({"role": "tool", "tool_call_id": "call_plan"}),
    );
    assert!(
        second[n - 1]["content"]
            .as_str()
            .unwrap_or_default()
            .contains("Plan updated"),
        "{}",
        second[n - 1]
    );
    let third = requests[2].messages();
    let n = third.len();
    assert_json_include(
        &third[n - 2],
        &json!({"role": "assistant", "tool_calls": [
            {"id": "call_read", "function": {"name": "read_file"}}
        ]}),
    );
    let read_args: Value = serde_json::from_str(
        third[n - 2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("arguments are JSON text");
    assert_eq!(read_args, json!({"path": "notes.txt"}));
    assert_json_include(
        &third[n - 1],
        &json!({"role": "tool", "tool_call_id": "call_read"}),
    );
    let content = third[n - 1]["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("hello from the notes"),
        "the file content reaches the model: {content}"
    );
    // The earlier exchange is still there: user prompt, plan call, its result.
    assert!(third.iter().any(|m| m["tool_call_id"] == "call_plan"));
    assert_eq!(
        third[1],
        json!({"role": "user", "content": "summarise notes.txt"})
    );
    assert_eq!(model.unscripted_requests(), 0);
}

#[tokio::test]
async fn unindexed_tool_call_deltas_and_odd_finish_reasons_work() {
    let model = FakeModel::start().await;
    // A whole call in one delta without index, finish_reason "eos".
    model.push(Reply::stream([
        chunk::role(),
        chunk::tool_call_unindexed("call_a", "read_file", r#"{"path":"a.txt"}"#),
        chunk::finish("eos"),
    ]));
    // A call split across deltas, none with an index; finish_reason "".
    model.push(Reply::stream([
        chunk::role(),
        chunk::tool_call_delta(None, Some("call_b"), Some("read_file"), Some("{\"pa")),
        chunk::tool_call_delta(None, None, None, Some("th\":\"b")),
        chunk::tool_call_delta(None, None, None, Some(".txt\"}")),
        chunk::finish(""),
    ]));
    model.push(Reply::text_with_finish("both read", "eos"));
    let ws = Workspace::builder()
        .file("a.txt", "AAA\n")
        .file("b.txt", "BBB\n")
        .build();
    let r = ready_with(&model, &[], ws).await;
    let result = r.editor.prompt(&r.sid, "read both").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "both read");
    let updates = r.editor.updates_for(&r.sid);
    for id in ["call_a", "call_b"] {
        position(&updates, "completed", |u| is_status(u, id, "completed"));
    }
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 3);
    let result_of = |req: usize, id: &str| -> String {
        requests[req]
            .messages()
            .iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .and_then(|m| m["content"].as_str())
            .unwrap_or_else(|| panic!("no tool result for {id} in request {req}"))
            .to_owned()
    };
    assert!(result_of(1, "call_a").contains("AAA"));
    assert!(result_of(2, "call_b").contains("BBB"));
    let paths: Vec<_> = r.editor.reads().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, [r.ws.join("a.txt"), r.ws.join("b.txt")]);
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_fail_the_call_not_the_turn() {
    let model = FakeModel::start().await;
    model.push(Reply::stream([
        chunk::role(),
        chunk::tool_call_start(0, "call_bad", "read_file"),
        chunk::tool_call_args(0, "{\"path\": \"a.txt\""),
        chunk::tool_call_start(1, "call_unknown", "frobnicate"),
        chunk::tool_call_args(1, "{}"),
        chunk::finish("tool_calls"),
    ]));
    model.push(Reply::text("sorry about that"));
    let ws = Workspace::builder().file("a.txt", "AAA\n").build();
    let r = ready_with(&model, &[], ws).await;
    let result = r.editor.prompt(&r.sid, "go").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "sorry about that");

    let updates = r.editor.updates_for(&r.sid);
    for id in ["call_bad", "call_unknown"] {
        let announced = position(&updates, "tool_call", |u| is_call(u, id));
        assert_eq!(updates[announced]["status"], "pending");
        let failed = position(&updates, "failed", |u| is_status(u, id, "failed"));
        assert!(announced < failed);
        assert!(!updates.iter().any(|u| is_status(u, id, "completed")));
        assert!(!updates.iter().any(|u| is_status(u, id, "in_progress")));
    }
    let unknown = &updates[position(&updates, "", |u| is_call(u, "call_unknown"))];
    assert!(
        unknown["title"]
            .as_str()
            .unwrap_or_default()
            .contains("frobnicate"),
        "{unknown}"
    );
    assert!(r.editor.reads().is_empty(), "nothing was read");

    let requests = model.chat_requests();
    assert_eq!(requests.len(), 2);
    let msgs = requests[1].messages();
    let result_of = |id: &str| -> String {
        msgs.iter()
            .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
            .and_then(|m| m["content"].as_str())
            .unwrap_or_else(|| panic!("no tool result for {id}: {msgs:#?}"))
            .to_owned()
    };
    let bad = result_of("call_bad");
    assert!(bad.starts_with("Error:"), "{bad}");
    assert!(bad.contains("JSON"), "says what was wrong: {bad}");
    let unknown = result_of("call_unknown");
    assert!(unknown.starts_with("Error:"), "{unknown}");
    assert!(
        unknown.contains("frobnicate") && unknown.contains("read_file"),
        "names the tool and the real ones: {unknown}"
    );
    // Results come in the order of the calls, right after the assistant message.
    let n = msgs.len();
    assert_eq!(msgs[n - 2]["tool_call_id"], "call_bad");
    assert_eq!(msgs[n - 1]["tool_call_id"], "call_unknown");
    assert_eq!(msgs[n - 3]["role"], "assistant");
}

#[tokio::test]
async fn finish_reasons_map_to_stop_reasons() {
    let model = FakeModel::start().await;
    model.push(Reply::text_with_finish("cut off mid", "length"));
    model.push(Reply::text_with_finish(
        "I can't help with that",
        "content_filter",
    ));
    model.push(Reply::text_with_finish("fine", "stop"));
    let r = ready(&model).await;
    assert_eq!(
        r.editor.prompt(&r.sid, "long").await["stopReason"],
        "max_tokens"
    );
    assert_eq!(
        r.editor.prompt(&r.sid, "bad").await["stopReason"],
        "refusal"
    );
    assert_eq!(
        r.editor.prompt(&r.sid, "ok").await["stopReason"],
        "end_turn"
    );
    // The session keeps its history across turns.
    let last = &model.chat_requests()[2];
    let roles: Vec<&str> = last
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "user", "assistant", "user"]
    );
    assert_eq!(last.messages()[2]["content"], "cut off mid");
}

#[tokio::test]
async fn lenient_streams_keep_alives_no_done_and_plain_json_replies() {
    let model = FakeModel::start().await;
    // SSE comments between chunks, and no `data: [DONE]` at the end.
    model.push(
        Reply::stream([chunk::role()])
            .raw(": keep-alive\n\n")
            .chunk(chunk::text("kept "))
            .raw(": ping\n\n")
            .chunk(chunk::text("alive"))
            .chunk(chunk::finish("stop"))
            .without_done(),
    );
    // A server that ignores `stream: true` and answers one JSON completion.
    model.push(Reply::completion("plain json"));
    let r = ready(&model).await;
    assert_eq!(r.editor.prompt(&r.sid, "a").await["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "kept alive");
    assert_eq!(r.editor.prompt(&r.sid, "b").await["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), "kept aliveplain json");
    // The JSON reply carried usage.
    let usage = r.editor.updates_of_kind(&r.sid, "usage_update");
    assert_eq!(usage.len(), 1, "{usage:?}");
    assert_eq!(usage[0]["used"], 15);
}

#[tokio::test]
async fn a_burst_of_chunks_arrives_whole_in_fewer_updates() {
    let model = FakeModel::start().await;
    let parts: Vec<String> = (0..2000).map(|i| format!("w{i} ")).collect();
    let mut chunks = vec![chunk::role()];
    chunks.extend(parts.iter().map(|p| chunk::text(p)));
    chunks.push(chunk::finish("stop"));
    model.push(Reply::stream(chunks));
    let r = ready(&model).await;
    let result = r.editor.prompt(&r.sid, "burst").await;
    assert_eq!(result["stopReason"], "end_turn");
    assert_eq!(r.editor.agent_text(&r.sid), parts.concat());
    // What is read while the agent is busy is merged: the editor does not
    // pay a frame per token when a server sends faster than it renders.
    let updates = r.editor.updates_of_kind(&r.sid, "agent_message_chunk");
    assert!(
        updates.len() < parts.len() / 2,
        "{} updates for {} chunks",
        updates.len(),
        parts.len()
    );
}
