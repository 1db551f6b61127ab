//! Permission requests end to end: what the user is shown, allow/reject
//! once/always and their scopes, cancellation, and paths that escape the
//! project (`..`, absolute, symlinks) asking even in full-auto.

use super::tools_common::{Harness, Via, both, content_text, diffs, edit_call, write_call};
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
        json!([{"type": "diff", "path": abs, "oldText": "old\n", "newText": "new\n"}])
    );
    assert_eq!(call["locations"][0]["path"], abs.as_str());
    assert_eq!(
        p["options"],
        json!([
            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Always allow edits by write_file inside the project (protected files excepted) in this session", "kind": "allow_always"},
            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject-always", "name": "Always reject edits by write_file inside the project (protected files excepted) in this session", "kind": "reject_always"}
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
    for id in ["e1", "e2", "e3"] {
        assert_eq!(
            h.final_status(id),
            "completed",
            "{id}: {}",
            h.tool_result(id)
        );
    }
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
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(ws.join("bin/cargo"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
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
    assert!(
        always["name"].as_str().unwrap().contains("cargo test"),
        "{always}"
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

// ------------------------------------------------------------ path escapes

/// `ws/proj` is the session cwd; `ws/outside` is not in the project;
/// `proj/link` points to it.
fn escape_workspace() -> Workspace {
    let ws = Workspace::builder()
        .file("proj/in.txt", "inside\n")
        .file("outside/secret.txt", "secret\n")
        .file("outside/other.txt", "other\n")
        .build();
    std::os::unix::fs::symlink(ws.join("outside"), ws.join("proj/link")).unwrap();
    ws
}

const READS: [&str; 4] = ["r1", "r2", "r3", "g1"];
const WRITES: [&str; 5] = ["w1", "w2", "w3", "e1", "w4"];
const COMMANDS: [&str; 2] = ["c1", "c2"];

fn assert_nothing_escaped(h: &Harness) {
    let home = h.editor.home().expect("the agent's HOME");
    assert!(!home.join("planted.txt").exists(), "written to ~");
    let outside = h.ws.join("outside");
    assert_eq!(h.ws.read("outside/secret.txt"), "secret\n");
    for f in ["new.txt", "abs.txt", "via-link.txt", "ran", "ran2"] {
        assert!(!outside.join(f).exists(), "{f} was created outside");
    }
}

async fn escapes_with(via: Via, mode: &str, decision: PermissionDecision) -> Harness {
    let h = Harness::start_with(via.capabilities(), escape_workspace(), "proj", Vec::new()).await;
    h.editor.set_default_permission(Some(decision));
    h.set_mode(mode).await;
    let outside = h.ws.join("outside");
    h.model.push(Reply::tool_calls([
        ("r1", "read_file", json!({"path": "../outside/secret.txt"})),
        (
            "r2",
            "read_file",
            json!({"path": outside.join("other.txt")}),
        ),
        ("r3", "read_file", json!({"path": "link/secret.txt"})),
        ("g1", "grep", json!({"pattern": "secret", "path": ".."})),
        write_call("w1", "../outside/new.txt", "x\n"),
        write_call("w2", outside.join("abs.txt"), "x\n"),
        write_call("w3", "link/via-link.txt", "x\n"),
        edit_call("e1", "link/secret.txt", "secret", "leaked"),
        write_call("w4", "~/planted.txt", "x\n"),
        (
            "c1",
            "run_command",
            json!({"command": "touch ran", "cwd": "../outside"}),
        ),
        (
            "c2",
            "run_command",
            json!({"command": "touch ran2", "cwd": "link"}),
        ),
    ]));
    h.model.push(Reply::text("done"));
    let r = h.editor.prompt(&h.sid, "escape").await;
    assert_eq!(r["stopReason"], "end_turn");
    h
}

/// Full-auto asks for everything outside the project; rejecting keeps it out.
async fn full_auto_asks_outside(via: Via) {
    let h = escapes_with(via, "full-auto", PermissionDecision::RejectOnce).await;
    let all: Vec<&str> = READS
        .iter()
        .chain(&WRITES)
        .chain(&COMMANDS)
        .copied()
        .collect();
    assert_eq!(
        h.editor.asked_ids(),
        all,
        "every escape asks, even in full-auto"
    );
    for id in &all {
        assert_eq!(h.final_status(id), "failed", "{id}");
        assert!(
            h.tool_result(id).contains("rejected"),
            "{id}: {}",
            h.tool_result(id)
        );
    }
    // The user is shown the real (resolved) location.
    let outside = h.ws.join("outside").display().to_string();
    for p in h.editor.permission_requests() {
        let id = p.params["toolCall"]["toolCallId"].clone();
        let always = p.params["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == "allow_always")
            .cloned()
            .unwrap_or_else(|| panic!("{id}: no always option for the path"));
        // grep's root is `..`, the workspace root: outside the project too.
        let expected = if id == "g1" {
            format!(
                "Always allow reading {} in this session",
                h.ws.path().display()
            )
        } else if id == "w4" {
            // `~` is the agent's HOME.
            let home = h.editor.home().unwrap().canonicalize().unwrap();
            home.join("planted.txt").display().to_string()
        } else {
            outside.clone()
        };
        assert!(
            always["name"].as_str().unwrap().contains(&expected),
            "{id}: {always}"
        );
    }
    let w3 = h
        .editor
        .permission_requests()
        .into_iter()
        .find(|p| p.params["toolCall"]["toolCallId"] == "w3")
        .unwrap();
    let diff = diffs(&w3.params["toolCall"]);
    assert_eq!(
        diff[0]["path"],
        format!("{outside}/via-link.txt"),
        "the diff names the symlink's target"
    );
    assert_nothing_escaped(&h);
    assert!(h.editor.writes().is_empty());
    assert!(h.editor.terminal_calls().is_empty());
    // Edits read the file to show the diff, but the model learns nothing.
    for id in ["r1", "r3", "e1"] {
        assert!(!h.tool_result(id).contains("secret"), "{id}");
    }
}

both!(full_auto_asks_before_escaping, full_auto_asks_outside);

/// Read-only: escaping reads ask (and run when allowed); escaping writes and
/// commands are refused without asking.
async fn read_only_refuses_escaping_writes(via: Via) {
    let h = escapes_with(via, "read-only", PermissionDecision::AllowOnce).await;
    assert_eq!(h.editor.asked_ids(), READS, "only reads ask");
    for id in READS {
        assert_eq!(
            h.final_status(id),
            "completed",
            "{id}: {}",
            h.tool_result(id)
        );
    }
    assert!(h.tool_result("r1").contains("secret"));
    assert!(h.tool_result("r3").contains("secret"));
    for id in WRITES.iter().chain(&COMMANDS) {
        assert_eq!(h.statuses(id), ["pending", "failed"], "{id}");
        assert!(
            h.tool_result(id).contains("mode"),
            "{id}: {}",
            h.tool_result(id)
        );
    }
    assert_nothing_escaped(&h);
    assert!(h.editor.writes().is_empty());
    assert!(h.editor.terminal_calls().is_empty());
}

both!(
    read_only_refuses_escaping_writes,
    read_only_refuses_escaping_writes
);

/// "Always allow" for a path outside the project covers that path only.
#[tokio::test]
async fn always_allow_outside_is_per_path() {
    let h = Harness::start_with(
        Via::Editor.capabilities(),
        escape_workspace(),
        "proj",
        Vec::new(),
    )
    .await;
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor.push_permission(PermissionDecision::RejectOnce);
    h.run_calls(&[
        ("r1", "read_file", json!({"path": "../outside/secret.txt"})),
        ("r2", "read_file", json!({"path": "link/secret.txt"})),
        ("r3", "read_file", json!({"path": "../outside/other.txt"})),
        ("r4", "read_file", json!({"path": "in.txt"})),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["r1", "r3"]);
    assert_eq!(h.final_status("r1"), "completed");
    assert_eq!(
        h.final_status("r2"),
        "completed",
        "same file through the symlink"
    );
    assert_eq!(h.final_status("r3"), "failed");
    assert_eq!(h.final_status("r4"), "completed");
}

/// Symlinks to files outside the project: reading or writing through them
/// asks even in full-auto, also when the target does not exist yet (a
/// dangling link), and grep does not follow them.
async fn file_symlinks_ask(via: Via) {
    let ws = escape_workspace();
    std::os::unix::fs::symlink(ws.join("outside/secret.txt"), ws.join("proj/leak.txt")).unwrap();
    std::os::unix::fs::symlink("../outside/planted.txt", ws.join("proj/dangling.txt")).unwrap();
    let h = Harness::start_with(via.capabilities(), ws, "proj", Vec::new()).await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.set_mode("full-auto").await;
    h.run_calls(&[
        ("r1", "read_file", json!({"path": "leak.txt"})),
        write_call("w1", "leak.txt", "x\n"),
        write_call("w2", "dangling.txt", "planted\n"),
        ("g1", "grep", json!({"pattern": "secret"})),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["r1", "w1", "w2"]);
    for id in ["r1", "w1", "w2"] {
        assert_eq!(h.final_status(id), "failed", "{id}");
    }
    let w2 = &h.editor.permission_requests()[2];
    assert_eq!(
        diffs(&w2.params["toolCall"])[0]["path"],
        h.ws.join("outside/planted.txt").display().to_string()
    );
    assert!(!h.ws.exists("outside/planted.txt"));
    assert!(
        std::fs::symlink_metadata(h.ws.join("proj/dangling.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(h.ws.read("outside/secret.txt"), "secret\n");
    // grep searched the project without following the link.
    assert_eq!(h.final_status("g1"), "completed");
    assert!(
        !h.tool_result("g1").contains("secret\n") && !h.tool_result("g1").contains(":1:secret"),
        "{}",
        h.tool_result("g1")
    );
}

both!(file_symlinks_ask, file_symlinks_ask);

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
