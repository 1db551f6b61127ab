//! Paths that escape the project (`..`, absolute, symlinks): asking even in
//! full-auto, refused in read-only, "always" scoped to the path.

use super::tools_common::{Harness, Via, both, diffs, edit_call, write_call};
use crate::support::{PermissionDecision, Reply, Workspace};
use serde_json::json;

/// `ws/proj` is the session cwd; `ws/outside` is not in the project;
/// `proj/link` points to it.
fn escape_workspace() -> Workspace {
    let ws = Workspace::builder()
        .file("proj/in.txt", "inside\n")
        .file("outside/secret.txt", "secret\n")
        .file("outside/other.txt", "other\n")
        .build();
    acp_coder::platform::fs::symlink(ws.join("outside"), ws.join("proj/link")).unwrap();
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
            format!("reading {}", h.ws.path().display())
        } else if id == "w4" {
            // `~` is the agent's HOME.
            let home = dunce::canonicalize(h.editor.home().unwrap()).unwrap();
            home.join("planted.txt").display().to_string()
        } else {
            outside.clone()
        };
        assert_eq!(always["name"], "Always allow in this session", "{id}");
        let covers = p.params["toolCall"]["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["content"]["text"].as_str())
            .find(|t| t.starts_with("Always allow covers "))
            .unwrap_or_else(|| panic!("{id}: the tool call does not say what always covers"));
        assert!(covers.contains(&expected), "{id}: {covers}");
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
    // Nothing outside is read before the user allows it: the model learns nothing.
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

both!(read_only_refuses_escaping_writes);

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
    acp_coder::platform::fs::symlink(ws.join("outside/secret.txt"), ws.join("proj/leak.txt"))
        .unwrap();
    acp_coder::platform::fs::symlink("../outside/planted.txt", ws.join("proj/dangling.txt"))
        .unwrap();
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

both!(file_symlinks_ask);

/// A hostile model's probe (found by an outside review): `edit_file` on a
/// file outside the project with an `old_string` that does not match. The
/// "closest lines" hint quoted the file (an SSH key, `/etc/passwd`) back to
/// the model before the permission step, in every mode, read-only too. Now
/// nothing outside the project is read before the user allowed the call:
/// not for the hint, not for a duplicate-match count, not for `write_file`'s
/// diff; the editor sees no `fs/read_text_file` for it either.
async fn failed_edits_outside_show_nothing(via: Via) {
    for (mode, decision) in [
        ("read-only", PermissionDecision::AllowOnce),
        ("ask", PermissionDecision::RejectOnce),
        ("full-auto", PermissionDecision::RejectOnce),
    ] {
        let ws = escape_workspace();
        std::fs::write(
            ws.join("outside/secret.txt"),
            "-----BEGIN KEY-----\nsecret-key-body\nsecret-key-body\n-----END KEY-----\n",
        )
        .unwrap();
        std::fs::write(ws.join("outside/blob.bin"), b"\x00\x01binary\x00").unwrap();
        let h = Harness::start_with(via.capabilities(), ws, "proj", Vec::new()).await;
        h.editor.set_default_permission(Some(decision));
        h.set_mode(mode).await;
        let abs = h.ws.join("outside/secret.txt");
        h.run_calls(&[
            edit_call("e1", "../outside/secret.txt", "-----BEGIN KEY----X", "y"),
            edit_call("e2", &abs, "secret-key-body", "y"),
            edit_call("e3", "link/secret.txt", "-----END KEY----X", "y"),
            write_call("w1", "link/blob.bin", "text\n"),
        ])
        .await;
        for id in ["e1", "e2", "e3", "w1"] {
            let result = h.tool_result(id);
            assert_eq!(h.final_status(id), "failed", "{mode} {id}: {result}");
            for leak in ["KEY", "secret-key-body", "lines 2, 3", "binary", "closest"] {
                assert!(
                    !result.contains(leak),
                    "{mode} {id} leaked {leak:?}: {result}"
                );
            }
        }
        let outside = h.ws.join("outside");
        let outside = dunce::canonicalize(outside).unwrap();
        assert!(
            h.editor
                .reads()
                .iter()
                .all(|r| !r.path.starts_with(&outside)),
            "{mode}: the editor was asked to read outside: {:?}",
            h.editor.reads()
        );
        assert!(
            h.ws.read("outside/secret.txt")
                .starts_with("-----BEGIN KEY-----")
        );
        assert!(h.editor.writes().is_empty());
        if mode == "read-only" {
            assert!(
                h.editor.asked_ids().is_empty(),
                "read-only refuses writes unasked"
            );
        } else {
            assert_eq!(h.editor.asked_ids(), ["e1", "e2", "e3", "w1"], "{mode}");
        }
    }
}

both!(failed_edits_outside_show_nothing);

/// Once the user allowed an edit outside the project, it is applied to the
/// file as it is then (it was not read before), line endings kept.
async fn allowed_edits_outside_apply(via: Via) {
    let ws = escape_workspace();
    std::fs::write(ws.join("outside/crlf.txt"), "a\r\nb\r\n").unwrap();
    let h = Harness::start_with(via.capabilities(), ws, "proj", Vec::new()).await;
    h.editor
        .set_default_permission(Some(PermissionDecision::AllowOnce));
    h.run_calls(&[
        edit_call("e1", "link/secret.txt", "secret", "changed"),
        write_call("w1", "link/crlf.txt", "x\ny\n"),
        write_call("w2", "link/fresh.txt", "new\n"),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["e1", "w1", "w2"]);
    for id in ["e1", "w1", "w2"] {
        assert_eq!(
            h.final_status(id),
            "completed",
            "{id}: {}",
            h.tool_result(id)
        );
    }
    assert_eq!(h.ws.read("outside/secret.txt"), "changed\n");
    assert_eq!(h.ws.read("outside/crlf.txt"), "x\r\ny\r\n");
    assert!(
        h.tool_result("w1").starts_with("Wrote"),
        "{}",
        h.tool_result("w1")
    );
    assert!(
        h.tool_result("w2").starts_with("Created"),
        "{}",
        h.tool_result("w2")
    );
}

both!(allowed_edits_outside_apply);
