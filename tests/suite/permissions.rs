//! Permission requests end to end: what the user is shown, allow/reject
//! once/always and their scopes, cancellation, and paths that escape the
//! project (`..`, absolute, symlinks) asking even in full-auto.

use super::tools_common::{Harness, Via, content_text, edit_call, write_call};
use crate::support::{PermissionDecision, Reply, Workspace};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Index of the first message from the agent matching `pred`.
#[track_caller]
fn index_of(h: &Harness, what: &str, pred: impl Fn(&Value) -> bool) -> usize {
    h.editor
        .messages()
        .iter()
        .position(pred)
        .unwrap_or_else(|| h.editor.fail(&format!("no message: {what}")))
}

fn is_update(m: &Value, id: &str, status: &str) -> bool {
    m["method"] == "session/update"
        && m["params"]["update"]["toolCallId"] == id
        && m["params"]["update"]["status"] == status
}

fn option_kinds(p: &Value) -> Vec<String> {
    p["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap().to_owned())
        .collect()
}

/// A session whose `a.txt` holds `a_txt`, the editor answering the next
/// permission requests with `answers`.
async fn answering(
    via: Via,
    a_txt: &str,
    answers: impl IntoIterator<Item = PermissionDecision>,
) -> Harness {
    let ws = Workspace::builder().file("a.txt", a_txt).build();
    let h = Harness::start(via, ws).await;
    for answer in answers {
        h.editor.push_permission(answer);
    }
    h
}

#[tokio::test]
async fn allow_once_shows_the_diff_and_asks_every_time() {
    let h = answering(
        Via::Editor,
        "old\n",
        [PermissionDecision::AllowOnce, PermissionDecision::AllowOnce],
    )
    .await;
    let args = json!({"path": "a.txt", "content": "new\n"});
    h.run_tool("w1", "write_file", args.clone()).await;
    h.assert_lifecycle("w1", "edit", &args, true, true);
    assert_eq!(h.ws.read("a.txt"), "new\n");

    let perms = h.editor.permission_requests();
    assert_eq!(perms.len(), 1);
    let p = &perms[0].params;
    let abs = h.ws.join("a.txt").display().to_string();
    assert_eq!(p["sessionId"], h.sid.as_str());
    let call = &p["toolCall"];
    assert_eq!(call["toolCallId"], "w1");
    assert_eq!(call["title"], "Write a.txt");
    assert_eq!(call["kind"], "edit");
    assert_eq!(
        call["content"],
        json!([
            {"type": "diff", "path": abs, "oldText": "old\n", "newText": "new\n"},
            {"type": "content", "content": {"type": "text", "text": "Always allow covers edits by write_file inside the project (protected files excepted)."}}
        ])
    );
    assert_eq!(call["locations"][0]["path"], abs.as_str());
    assert_eq!(
        p["options"],
        json!([
            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Always allow in this session", "kind": "allow_always"},
            {"optionId": "allow-project", "name": "Always allow for this project", "kind": "allow_always"},
            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject-always", "name": "Always reject in this session", "kind": "reject_always"}
        ])
    );
    // Order: tool_call → permission request → in_progress → completed.
    let announced = index_of(&h, "tool_call w1", |m| is_update(m, "w1", "pending"));
    let asked = index_of(&h, "permission request", |m| {
        m["method"] == "session/request_permission"
    });
    let started = index_of(&h, "in_progress w1", |m| is_update(m, "w1", "in_progress"));
    assert!(
        announced < asked && asked < started,
        "{announced} {asked} {started}"
    );

    // Once means once.
    h.run_call(write_call("w2", "a.txt", "newer\n")).await;
    assert_eq!(h.editor.permission_requests().len(), 2);
    assert_eq!(h.ws.read("a.txt"), "newer\n");
}

#[tokio::test]
async fn reject_once_changes_nothing_and_tells_the_model() {
    let h = answering(
        Via::Local,
        "old\n",
        [
            PermissionDecision::RejectOnce,
            PermissionDecision::RejectOnce,
            PermissionDecision::RejectOnce,
        ],
    )
    .await;
    let args = json!({"path": "a.txt", "old_string": "old", "new_string": "new"});
    let out = h.run_tool("e1", "edit_file", args.clone()).await;
    h.assert_lifecycle("e1", "edit", &args, false, false);
    assert!(out.contains("rejected"), "{out}");
    assert_eq!(h.ws.read("a.txt"), "old\n");
    let out = h
        .run_tool("c1", "run_command", json!({"command": "touch ran"}))
        .await;
    assert_eq!(h.final_status("c1"), "failed");
    assert!(out.contains("rejected"), "{out}");
    assert!(!h.ws.exists("ran"));
    // Rejecting once does not stick.
    h.run_tool("e2", "edit_file", args).await;
    assert_eq!(h.editor.permission_requests().len(), 3);
}

#[tokio::test]
async fn always_allow_covers_the_tool_not_other_tools() {
    let ws = Workspace::builder()
        .file("a.txt", "one\n")
        .file("b.txt", "b\n")
        .build();
    let h = Harness::start(Via::Editor, ws).await;
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor.push_permission(PermissionDecision::RejectOnce);
    h.run_calls(&[
        edit_call("e1", "a.txt", "one", "two"),
        edit_call("e2", "a.txt", "two", "three"),
        edit_call("e3", "b.txt", "b", "B"),
        write_call("w1", "a.txt", "w\n"),
    ])
    .await;
    h.assert_completed(&["e1", "e2", "e3"]);
    assert_eq!(
        h.editor.asked_ids(),
        ["e1", "w1"],
        "edits after 'always' are not asked"
    );
    assert_eq!(h.final_status("w1"), "failed");
    assert_eq!(h.ws.read("a.txt"), "three\n");
    assert_eq!(h.ws.read("b.txt"), "B\n");
}

#[tokio::test]
async fn always_reject_refuses_without_asking() {
    let h = answering(
        Via::Local,
        "one\n",
        [
            PermissionDecision::RejectAlways,
            PermissionDecision::AllowOnce,
        ],
    )
    .await;
    let edit = json!({"path": "a.txt", "old_string": "one", "new_string": "two"});
    h.run_calls(&[
        ("e1", "edit_file", edit.clone()),
        ("e2", "edit_file", edit.clone()),
        write_call("w1", "b.txt", "b\n"),
    ])
    .await;
    h.assert_lifecycle("e1", "edit", &edit, false, false);
    h.assert_lifecycle("e2", "edit", &edit, false, false);
    assert!(
        h.tool_result("e1").contains("rejected"),
        "{}",
        h.tool_result("e1")
    );
    assert!(
        h.tool_result("e2").contains("reject"),
        "{}",
        h.tool_result("e2")
    );
    assert_eq!(h.editor.asked_ids(), ["e1", "w1"]);
    assert_eq!(h.ws.read("a.txt"), "one\n");
    assert_eq!(h.ws.read("b.txt"), "b\n");
}

/// "Always allow `cargo test`" covers `cargo test --all`, not `cargo build`
/// and never `cargo test && rm x` (no "always" is even offered for it).
#[tokio::test]
async fn always_allow_for_a_command_prefix_is_scoped() {
    let ws = Workspace::builder()
        .file("bin/cargo", "#!/bin/sh\necho \"fake cargo $*\"\n")
        .file("x", "keep me\n")
        .build();
    crate::support::set_mode(&ws.join("bin/cargo"), 0o755);
    let path = format!(
        "{}:{}",
        ws.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let h = Harness::start_with(
        Via::Local.capabilities(),
        ws,
        "",
        vec![("PATH".into(), path)],
    )
    .await;
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor.push_permission(PermissionDecision::RejectOnce);
    h.editor.push_permission(PermissionDecision::RejectOnce);
    h.editor.push_permission(PermissionDecision::RejectOnce);
    h.run_calls(&[
        ("c1", "run_command", json!({"command": "cargo test"})),
        ("c2", "run_command", json!({"command": "cargo test --all"})),
        ("c3", "run_command", json!({"command": "cargo build"})),
        (
            "c4",
            "run_command",
            json!({"command": "cargo test && rm x"}),
        ),
        ("c5", "run_command", json!({"command": "cargo test; rm x"})),
    ])
    .await;
    assert_eq!(h.final_status("c1"), "completed");
    assert!(
        h.tool_result("c1").contains("fake cargo test"),
        "{}",
        h.tool_result("c1")
    );
    assert_eq!(h.final_status("c2"), "completed");
    assert!(h.tool_result("c2").contains("fake cargo test --all"));
    for id in ["c3", "c4", "c5"] {
        assert_eq!(h.final_status(id), "failed", "{id}");
    }
    assert_eq!(h.ws.read("x"), "keep me\n");

    let perms = h.editor.permission_requests();
    let asked: Vec<&Value> = perms
        .iter()
        .map(|p| &p.params["toolCall"]["toolCallId"])
        .collect();
    assert_eq!(asked, ["c1", "c3", "c4", "c5"]);
    // The user sees the command itself.
    let first = &perms[0].params;
    assert_eq!(first["toolCall"]["title"], "Run `cargo test`");
    assert_eq!(first["toolCall"]["kind"], "execute");
    assert!(content_text(&first["toolCall"]).contains("cargo test"));
    let always = first["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_always")
        .unwrap();
    // The option is a few words; the tool call says what it covers.
    assert_eq!(always["name"], "Always allow in this session", "{always}");
    assert!(
        content_text(&first["toolCall"])
            .contains("Always allow covers `cargo test …` inside the project."),
        "{first}"
    );
    // Chained commands: the whole line is shown, and only "once" options.
    for p in &perms[2..] {
        assert!(content_text(&p.params["toolCall"]).contains("rm x"));
        assert_eq!(option_kinds(&p.params), ["allow_once", "reject_once"]);
    }
}

#[tokio::test]
async fn cancelled_outcome_changes_nothing() {
    let h = answering(Via::Editor, "old\n", [PermissionDecision::Cancelled]).await;
    h.model
        .push(Reply::tool_calls([write_call("w1", "a.txt", "new\n")]));
    h.model.push(Reply::text("unexpected"));
    let r = h.editor.prompt(&h.sid, "write").await;
    // A cancelled permission outcome means the turn was cancelled (ACP).
    assert_eq!(r["stopReason"], "cancelled");
    assert_eq!(h.final_status("w1"), "failed");
    assert_eq!(h.ws.read("a.txt"), "old\n");
    assert!(h.editor.writes().is_empty());
    // The model learns about it with the next prompt.
    let r = h.editor.prompt(&h.sid, "next").await;
    assert_eq!(r["stopReason"], "end_turn");
    assert!(
        h.tool_result("w1").contains("cancel"),
        "{}",
        h.tool_result("w1")
    );
}

/// session/cancel while a permission request is open: the prompt ends
/// `cancelled` at once, whether the editor answers the request or not, and a
/// late "allow" does not run the call.
async fn cancel_while_asking(answer_on_cancel: bool) {
    let h = answering(Via::Editor, "old\n", [PermissionDecision::NeverAnswer]).await;
    h.model.push(Reply::tool_calls([
        write_call("w1", "a.txt", "new\n"),
        ("c1", "run_command", json!({"command": "touch ran"})),
    ]));
    let pending = h.editor.start_prompt(&h.sid, "write").await;
    h.editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    let t = Instant::now();
    if answer_on_cancel {
        h.editor.cancel(&h.sid).await;
    } else {
        h.editor
            .notify("session/cancel", json!({"sessionId": h.sid}))
            .await;
    }
    let r = pending.await.expect("prompt result");
    assert_eq!(r["stopReason"], "cancelled");
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    if !answer_on_cancel {
        // The user clicks "allow" after all: too late.
        h.editor
            .answer_held_permissions(PermissionDecision::AllowOnce)
            .await;
    }
    assert_eq!(h.final_status("w1"), "failed");
    // The second call never started (or was reported failed).
    assert!(
        h.statuses("c1")
            .iter()
            .all(|s| s != "in_progress" && s != "completed")
    );

    // The session still works; nothing was written or run meanwhile.
    h.model.push(Reply::text("ok"));
    let r = h.editor.prompt(&h.sid, "next").await;
    assert_eq!(r["stopReason"], "end_turn");
    assert_eq!(h.ws.read("a.txt"), "old\n");
    assert!(!h.ws.exists("ran"));
    assert!(h.editor.writes().is_empty());
    assert!(h.editor.terminal_calls().is_empty());
    assert_eq!(h.editor.permission_requests().len(), 1);
}

#[tokio::test]
async fn cancel_during_permission_request_answered_cancelled() {
    cancel_while_asking(true).await;
}

#[tokio::test]
async fn cancel_during_permission_request_left_unanswered() {
    cancel_while_asking(false).await;
}

/// The user edits the buffer while the edit waits for approval: the edit is
/// applied to what is there now, or refused when it no longer applies; the
/// user's typing is never lost.
#[tokio::test]
async fn edit_is_reapplied_to_changes_made_during_review() {
    let ws = Workspace::builder().file("a.rs", "").build();
    let h = Harness::start(Via::Editor, ws).await;
    let path = h.ws.join("a.rs");
    h.editor.open_buffer(&path, "fn a() {}\nlet x = 1;\n");

    for (id, old, new, typed, expected) in [
        (
            "e1",
            "let x = 1;",
            "let x = 2;",
            "// typed\nfn a() {}\nlet x = 1;\n",
            Some("// typed\nfn a() {}\nlet x = 2;\n"),
        ),
        ("e2", "let x = 2;", "let x = 5;", "let x = 3;\n", None),
    ] {
        h.editor.push_permission(PermissionDecision::NeverAnswer);
        h.model.push(Reply::tool_call(
            id,
            "edit_file",
            json!({"path": "a.rs", "old_string": old, "new_string": new}),
        ));
        h.model.push(Reply::text("done"));
        let pending = h.editor.start_prompt(&h.sid, "edit").await;
        h.editor
            .wait_for(|m| {
                m["method"] == "session/request_permission"
                    && m["params"]["toolCall"]["toolCallId"] == id
            })
            .await;
        h.editor.open_buffer(&path, typed);
        h.editor
            .answer_held_permissions(PermissionDecision::AllowOnce)
            .await;
        let r = pending.await.expect("prompt result");
        assert_eq!(r["stopReason"], "end_turn");
        match expected {
            Some(text) => {
                assert_eq!(h.final_status(id), "completed", "{}", h.tool_result(id));
                assert_eq!(h.editor.buffer(&path).as_deref(), Some(text));
            }
            None => {
                assert_eq!(h.final_status(id), "failed");
                assert!(
                    h.tool_result(id).contains("changed"),
                    "{}",
                    h.tool_result(id)
                );
                assert_eq!(h.editor.buffer(&path).as_deref(), Some(typed));
            }
        }
    }
}
