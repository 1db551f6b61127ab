//! Plan mode (issue 45 item 3): the model reads and plans with no edits and
//! no commands; a turn that ends with a plan asks "Start editing?", and an
//! approval switches the mode and carries the plan out in the same turn.
use serde_json::{Value, json};

use super::a2a::{serve, text_of};
use super::a2a_http::{post, rpc, user_message};
use super::tools_common::{Harness, Via, edit_call, write_call};
use crate::support::{FakeModel, PermissionDecision, Reply, Workspace};

/// The model reads `a.txt` and records a one-step plan, then sums it up.
fn push_plan(model: &FakeModel) {
    model.push(Reply::tool_calls([
        ("r1", "read_file", json!({"path": "a.txt"})),
        (
            "p1",
            "update_plan",
            json!({"entries": [{"content": "Change a.txt to say after", "status": "pending"}]}),
        ),
    ]));
    model.push(Reply::text("The plan: change a.txt to say after."));
}

fn planning() -> Workspace {
    Workspace::builder().file("a.txt", "before\n").build()
}

/// The `current_mode_update`s sent to session `sid`.
fn mode_updates(h: &Harness) -> Vec<String> {
    h.editor
        .updates_of_kind(&h.sid, "current_mode_update")
        .iter()
        .map(|u| u["currentModeId"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The option ids of the permission request titled "Start editing?".
fn hand_off_options(h: &Harness) -> Option<Vec<String>> {
    let updates = h.editor.updates_for(&h.sid);
    let asked = h.editor.permission_requests();
    asked.iter().find_map(|r| {
        let id = r.params["toolCall"]["toolCallId"].as_str()?;
        let titled = updates.iter().any(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"] == id
                && u["title"] == "Start editing?"
                && u["kind"] == "switch_mode"
        });
        titled.then(|| {
            r.params["options"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|o| o["optionId"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
    })
}

fn request_text(req: &Value) -> String {
    req.to_string()
}

/// In plan mode writes, edits and commands are refused (the model is told
/// to finish with a plan), and the system prompt says the session plans.
#[tokio::test]
async fn plan_mode_refuses_edits_and_commands() {
    let h = Harness::start(Via::Local, planning()).await;
    h.set_mode("plan").await;
    h.run_calls(&[
        write_call("w1", "new.txt", "x\n"),
        edit_call("e1", "a.txt", "before", "after"),
        ("c1", "run_command", json!({"command": "touch ran"})),
    ])
    .await;
    for id in ["w1", "e1", "c1"] {
        assert_eq!(h.final_status(id), "failed", "{id}");
        let out = h.tool_result(id);
        assert!(
            out.contains("not allowed") && out.contains("Plan mode") && out.contains("update_plan"),
            "{id}: {out}"
        );
    }
    assert!(h.editor.permission_requests().is_empty(), "nothing asked");
    assert_eq!(h.ws.read("a.txt"), "before\n");
    assert!(!h.ws.exists("new.txt") && !h.ws.exists("ran"));
    let first = &h.model.chat_requests()[0];
    assert!(
        request_text(&first.body).contains("# Plan mode"),
        "the system prompt tells the model it plans"
    );
}

/// A turn that ends with a plan asks "Start editing?" (ask, accept-edits,
/// or keep planning; never full-auto). "Yes, edit automatically" switches
/// the session to accept-edits (`current_mode_update`, kept for a load) and
/// the same prompt turn goes on: the model is told the plan was approved
/// and its edit runs before the stop reason arrives.
#[tokio::test]
async fn approving_the_plan_switches_mode_and_edits_in_the_same_turn() {
    let h = Harness::start(Via::Local, planning()).await;
    h.set_mode("plan").await;
    push_plan(&h.model);
    h.model.push(Reply::tool_call(
        "e1",
        "edit_file",
        json!({"path": "a.txt", "old_string": "before", "new_string": "after"}),
    ));
    h.model.push(Reply::text("Changed a.txt."));
    h.editor
        .push_permission(PermissionDecision::Option("accept-edits"));
    let r = h.editor.prompt(&h.sid, "plan the change").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert_eq!(
        hand_off_options(&h).expect("the hand-off was asked"),
        ["ask", "accept-edits", "keep_planning"]
    );
    assert_eq!(
        h.editor.permission_requests().len(),
        1,
        "the edit ran unasked"
    );
    assert_eq!(mode_updates(&h), ["plan", "accept-edits"]);
    assert_eq!(h.ws.read("a.txt"), "after\n");
    assert_eq!(h.final_status("e1"), "completed");
    let requests = h.model.chat_requests();
    assert_eq!(requests.len(), 4, "plan, summary, edit, answer");
    let after = request_text(&requests[2].body);
    assert!(
        after.contains("The user approved the plan; carry it out."),
        "{after}"
    );
    assert!(!after.contains("# Plan mode"), "no longer in plan mode");
    // The store has the new mode: a load of the session starts in it.
    let loaded = h.editor.load_session(&h.sid, h.ws.path()).await;
    assert_eq!(loaded["modes"]["currentModeId"], "accept-edits", "{loaded}");
}

/// "No, keep planning" ends the turn in plan mode: no mode update, no
/// further model call, and the next edit is still refused.
#[tokio::test]
async fn keeping_on_planning_stays_in_plan_mode() {
    let h = Harness::start(Via::Local, planning()).await;
    h.set_mode("plan").await;
    push_plan(&h.model);
    h.editor
        .push_permission(PermissionDecision::Option("keep_planning"));
    let r = h.editor.prompt(&h.sid, "plan the change").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert!(hand_off_options(&h).is_some(), "asked");
    assert_eq!(mode_updates(&h), ["plan"]);
    assert_eq!(h.model.chat_requests().len(), 2);
    h.run_calls(&[edit_call("e1", "a.txt", "before", "after")])
        .await;
    assert_eq!(h.final_status("e1"), "failed");
    assert_eq!(h.ws.read("a.txt"), "before\n");
}

/// A cancel while "Start editing?" waits ends the turn `cancelled`, in plan
/// mode, with no further model call.
#[tokio::test]
async fn cancel_during_the_hand_off_question_is_cancelled() {
    let h = Harness::start(Via::Local, planning()).await;
    h.set_mode("plan").await;
    push_plan(&h.model);
    h.editor.push_permission(PermissionDecision::NeverAnswer);
    let pending = h.editor.start_prompt(&h.sid, "plan the change").await;
    h.editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    h.editor.cancel(&h.sid).await;
    let r = pending.await.expect("prompt result");
    assert_eq!(r["stopReason"], "cancelled", "{r}");
    assert_eq!(mode_updates(&h), ["plan"]);
    assert_eq!(h.model.chat_requests().len(), 2);
    assert_eq!(h.ws.read("a.txt"), "before\n");
}

/// An A2A guest of a server started in plan mode (a read-only ceiling) is
/// never offered editing: its task completes with the plan, with no
/// question, and a later edit is still refused.
#[tokio::test]
async fn a_guest_with_a_read_only_ceiling_is_not_offered_editing() {
    let model = FakeModel::start().await;
    let ws = planning();
    let s = serve(&model, ws.path(), &["--mode", "plan"], &[]).await;
    let t = Some(s.token.as_str());
    push_plan(&model);
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("plan it"))).await;
    let task = &b["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{b}");
    assert!(
        text_of(&task["status"]["message"]).contains("The plan"),
        "{b}"
    );
    assert_eq!(model.chat_requests().len(), 2, "the turn ended there");
    let shown = b.to_string();
    assert!(
        !shown.contains("Start editing") && !shown.contains("edit automatically"),
        "{shown}"
    );
    assert_eq!(ws.read("a.txt"), "before\n");
}
