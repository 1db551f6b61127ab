//! Elicitation and the `ask_user` tool (issue 17 item 1): offered only when
//! the editor advertises `elicitation.form`, a form tied to the tool call,
//! the answer (or declined / cancelled) as the tool result, no permission
//! in any mode, and a question withdrawn with `$/cancel_request` when the
//! turn is cancelled (item 3).

use super::tools_common::Harness;
use crate::support::{Reply, RpcId, Workspace, full_capabilities};
use serde_json::{Value, json};

fn caps_with_form() -> Value {
    let mut caps = full_capabilities();
    caps["elicitation"] = json!({"form": {}});
    caps
}

async fn start(caps: Value) -> Harness {
    Harness::start_with(caps, Workspace::new(), "", Vec::new()).await
}

/// Tool names the model was offered in its first request.
fn offered_tools(h: &Harness) -> Vec<String> {
    h.model.chat_requests()[0].body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn elicitations(h: &Harness) -> Vec<Value> {
    h.editor
        .reverse_requests()
        .into_iter()
        .filter(|r| r["method"] == "elicitation/create")
        .collect()
}

#[tokio::test]
async fn ask_user_is_offered_only_with_the_form_capability() {
    for (caps, offered) in [
        (full_capabilities(), false),
        // `elicitation: {}` advertises no mode (ACP §3).
        (
            {
                let mut c = full_capabilities();
                c["elicitation"] = json!({});
                c
            },
            false,
        ),
        (
            {
                let mut c = full_capabilities();
                c["elicitation"] = json!({"url": {}});
                c
            },
            false,
        ),
        (caps_with_form(), true),
    ] {
        let h = start(caps.clone()).await;
        h.model.push(Reply::text("hi"));
        h.editor.prompt(&h.sid, "hello").await;
        let tools = offered_tools(&h);
        assert_eq!(
            tools.iter().any(|t| t == "ask_user"),
            offered,
            "caps {caps}: {tools:?}"
        );
        assert!(tools.iter().any(|t| t == "read_file"), "{tools:?}");
    }
}

#[tokio::test]
async fn without_the_capability_a_call_to_ask_user_sends_nothing() {
    let h = start(full_capabilities()).await;
    let result = h
        .run_tool("q1", "ask_user", json!({"question": "Which?"}))
        .await;
    assert!(result.contains("no tool named"), "{result}");
    assert!(elicitations(&h).is_empty());
}

#[tokio::test]
async fn a_question_with_options_becomes_a_form_tied_to_the_call() {
    let h = start(caps_with_form()).await;
    // Read-only allows it and it needs no permission.
    h.set_mode("read-only").await;
    h.editor.push_elicitation_answer(Some(
        json!({"action": "accept", "content": {"answer": "Postgres"}}),
    ));
    let args = json!({
        "question": "Which database?",
        "options": [
            {"label": "Postgres", "description": "the server one"},
            {"label": "SQLite"}
        ]
    });
    let result = h.run_tool("q1", "ask_user", args).await;
    assert_eq!(result, "The user answered: Postgres");
    assert!(h.editor.permission_requests().is_empty());
    assert_eq!(h.final_status("q1"), "completed");

    let asked = elicitations(&h);
    assert_eq!(asked.len(), 1);
    let p = &asked[0]["params"];
    assert_eq!(p["mode"], "form");
    assert_eq!(p["sessionId"], h.sid.as_str());
    assert_eq!(p["toolCallId"], "q1");
    assert_eq!(p["message"], "Which database?");
    let answer = &p["requestedSchema"]["properties"]["answer"];
    assert_eq!(answer["type"], "string");
    assert_eq!(
        answer["oneOf"],
        json!([
            {"const": "Postgres", "title": "Postgres", "description": "the server one"},
            {"const": "SQLite", "title": "SQLite"}
        ])
    );
    // The tool call names its tool (item 7).
    let call = &h.editor.updates_of_kind(&h.sid, "tool_call")[0];
    assert_eq!(call["name"], "ask_user");
}

#[tokio::test]
async fn multi_select_free_text_decline_and_cancel() {
    let h = start(caps_with_form()).await;
    h.editor.push_elicitation_answer(Some(json!({
        "action": "accept",
        "content": {"answer": ["lint", "test"], "other": "and docs"}
    })));
    h.editor
        .push_elicitation_answer(Some(json!({"action": "decline"})));
    h.editor
        .push_elicitation_answer(Some(json!({"action": "cancel"})));
    let args = json!({
        "question": "Which checks?",
        "options": [{"label": "lint"}, {"label": "test"}, {"label": "bench"}],
        "multi_select": true,
        "allow_free_text": true
    });
    let r = h.run_tool("m1", "ask_user", args).await;
    assert_eq!(r, "The user answered: lint, test\nThey added: and docs");
    let p = &elicitations(&h)[0]["params"]["requestedSchema"];
    assert_eq!(p["properties"]["answer"]["type"], "array");
    assert_eq!(p["properties"]["other"]["type"], "string");

    let r = h
        .run_tool("d1", "ask_user", json!({"question": "Name?"}))
        .await;
    assert_eq!(r, "The user declined to answer.");
    let r = h
        .run_tool("c1", "ask_user", json!({"question": "Name?"}))
        .await;
    assert!(r.contains("cancelled"), "{r}");
    // Bad arguments never reach the editor.
    let r = h
        .run_tool("b1", "ask_user", json!({"question": "", "options": []}))
        .await;
    assert!(r.contains("question"), "{r}");
    assert_eq!(elicitations(&h).len(), 3);
}

#[tokio::test]
async fn cancelling_the_turn_withdraws_the_open_question() {
    let h = start(caps_with_form()).await;
    h.editor.push_elicitation_answer(None);
    h.model.push(Reply::tool_call(
        "q1",
        "ask_user",
        json!({"question": "Proceed?"}),
    ));
    let pending = h.editor.start_prompt(&h.sid, "go").await;
    let asked = h
        .editor
        .wait_for_reverse_request("elicitation/create")
        .await;
    let asked_id = RpcId::from_json(&asked["id"]).unwrap();
    h.editor
        .notify("session/cancel", json!({"sessionId": h.sid}))
        .await;
    let result = pending.response().await.unwrap();
    assert_eq!(result["stopReason"], "cancelled");
    // The agent told the editor to close the question and did not wait for it.
    let withdrawn = h.editor.wait_for_cancel_request().await;
    assert_eq!(withdrawn, asked_id);
    crate::support::eventually("the held question is answered", || {
        h.editor.held_elicitations() == 0
    })
    .await;
    // The session keeps working.
    h.model.push(Reply::text("ok"));
    assert_eq!(
        h.editor.prompt(&h.sid, "again").await["stopReason"],
        "end_turn"
    );
}
