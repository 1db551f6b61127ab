//! Grants cover only what was granted (issue 14): an access kind and a scope,
//! per session; command prefixes that include the script; protected paths
//! that ask in every mode. Each finding of the issue is replayed here against
//! the real binary.

use super::tools_common::{Harness, Via, both, edit_call, write_call};
use crate::support::{PermissionDecision, Workspace, full_capabilities, full_sandbox};
use serde_json::{Value, json};

/// `ws/proj` is the session cwd; `ws/outside` and `ws/victim` are not in it.
fn workspace() -> Workspace {
    Workspace::builder()
        .file("proj/in.txt", "inside\n")
        .file("proj/gen.sh", "touch generated\n")
        .file("proj/.git/config", "[core]\n\tbare = false\n")
        .file("proj/.git/hooks/README", "hooks\n")
        .file("outside/notes.txt", "notes\n")
        .file("victim/keep.txt", "keep\n")
        .build()
}

async fn start(via: Via, mode: &str) -> Harness {
    let h = Harness::start_with(via.capabilities(), workspace(), "proj", Vec::new()).await;
    h.set_mode(mode).await;
    h
}

/// The name of option `kind` in the permission request of call `id`.
/// What the "always" options of `id`'s question cover, as its tool call
/// says ("Always allow covers X."): X. The option itself is a few words.
fn always_covers(h: &Harness, id: &str) -> String {
    let p = h
        .editor
        .permission_requests()
        .into_iter()
        .find(|p| p.params["toolCall"]["toolCallId"] == id)
        .unwrap_or_else(|| h.editor.fail(&format!("{id} did not ask")));
    let options = p.params["options"].as_array().unwrap();
    assert!(
        options
            .iter()
            .any(|o| o["kind"] == "allow_always" && o["name"] == "Always allow in this session"),
        "{id}: {options:?}"
    );
    p.params["toolCall"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|c| {
            c["content"]["text"]
                .as_str()?
                .strip_prefix("Always allow covers ")
        })
        .and_then(|t| t.strip_suffix('.'))
        .unwrap_or_else(|| {
            h.editor.fail(&format!(
                "{id}: the tool call does not say what always covers"
            ))
        })
        .to_owned()
}

fn canonical(h: &Harness, rel: &str) -> String {
    dunce::canonicalize(h.ws.join(rel))
        .unwrap()
        .display()
        .to_string()
}

/// Finding 1a: in `ask` mode "Always allow" on reading a file outside the
/// project let a later `write_file` to it through without asking.
async fn a_read_grant_does_not_write(via: Via) {
    let h = start(via, "ask").await;
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_calls(&[
        ("r1", "read_file", json!({"path": "../outside/notes.txt"})),
        ("r2", "read_file", json!({"path": "../outside/notes.txt"})),
        write_call("w1", "../outside/notes.txt", "overwritten\n"),
        (
            "c1",
            "run_command",
            json!({"command": "rm ../outside/notes.txt"}),
        ),
    ])
    .await;
    let notes = canonical(&h, "outside/notes.txt");
    assert_eq!(always_covers(&h, "r1"), format!("reading {notes}"));
    assert_eq!(
        h.editor.asked_ids(),
        ["r1", "w1", "c1"],
        "the read grant covers reads only"
    );
    assert_eq!(h.final_status("r2"), "completed");
    assert_eq!(always_covers(&h, "w1"), format!("writing {notes}"));
    assert_eq!(always_covers(&h, "c1"), format!("`rm …` on {notes}"));
    assert_eq!(h.ws.read("outside/notes.txt"), "notes\n");
}

both!(a_read_grant_does_not_write);

/// Finding 1b: in `full-auto` "Always allow" on `list_directory ../victim`
/// let `rm -rf ../victim` run without asking.
#[tokio::test]
async fn a_listing_grant_does_not_run_rm_in_full_auto() {
    // Outside the temp directory, which sandboxed commands may write.
    let ws = Workspace::builder()
        .file("proj/in.txt", "inside\n")
        .file("victim/keep.txt", "keep\n")
        .outside_temp()
        .build();
    let h = Harness::start_with(Via::Local.capabilities(), ws, "proj", Vec::new()).await;
    h.set_mode("full-auto").await;
    let sandboxed = full_sandbox();
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_calls(&[
        ("l1", "list_directory", json!({"path": "../victim"})),
        ("l2", "list_directory", json!({"path": "../victim"})),
        ("c1", "run_command", json!({"command": "rm -rf ../victim"})),
        (
            "c2",
            "run_command",
            json!({"command": "rm -rf ../victim", "cwd": "../victim"}),
        ),
    ])
    .await;
    // With the sandbox, c1 runs confined, is denied, and the offer to run
    // it unsandboxed is the question; without it, the path check asks.
    assert_eq!(h.editor.asked_ids(), ["l1", "c1", "c2"]);
    assert_eq!(h.final_status("l2"), "completed");
    assert!(h.ws.exists("victim/keep.txt"), "the directory was removed");
    if sandboxed {
        // Reads stay allowed to sandboxed commands; writes outside never.
        h.run_calls(&[
            ("c3", "run_command", json!({"command": "ls ../victim"})),
            ("c5", "run_command", json!({"command": "rm -rf ../victim"})),
        ])
        .await;
        assert_eq!(h.final_status("c3"), "completed");
        assert_eq!(h.editor.asked_ids(), ["l1", "c1", "c2", "c5"]);
        assert!(h.ws.exists("victim/keep.txt"));
        return;
    }
    assert_eq!(h.final_status("c1"), "failed");
    // A command grant on it covers that prefix there, in this session only.
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.run_calls(&[
        ("c3", "run_command", json!({"command": "ls ../victim"})),
        ("c4", "run_command", json!({"command": "ls -a ../victim"})),
        ("c5", "run_command", json!({"command": "rm -rf ../victim"})),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["l1", "c1", "c2", "c3", "c5"]);
    assert_eq!(h.final_status("c4"), "completed");
    assert!(h.ws.exists("victim/keep.txt"));
}

/// "Always" never crosses sessions, also in the same agent process.
#[tokio::test]
async fn grants_stay_in_their_session() {
    let h = start(Via::Local, "ask").await;
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.run_calls(&[
        ("r1", "read_file", json!({"path": "../outside/notes.txt"})),
        ("c1", "run_command", json!({"command": "sh gen.sh"})),
    ])
    .await;
    let other = h.editor.new_session(h.ws.join("proj")).await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.model.push(crate::support::Reply::tool_calls([
        ("r2", "read_file", json!({"path": "../outside/notes.txt"})),
        ("c2", "run_command", json!({"command": "sh gen.sh"})),
    ]));
    h.model.push(crate::support::Reply::text("done"));
    let r = h.editor.prompt(&other, "again").await;
    assert_eq!(r["stopReason"], "end_turn");
    assert_eq!(h.editor.asked_ids(), ["r1", "c1", "r2", "c2"]);
}

/// Issue 16: "Always allow" for a script records the script, so inline code
/// given to the same interpreter still asks.
#[tokio::test]
async fn a_script_grant_does_not_cover_inline_code() {
    let h = start(Via::Local, "ask").await;
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_calls(&[
        ("c1", "run_command", json!({"command": "sh gen.sh"})),
        ("c2", "run_command", json!({"command": "sh gen.sh again"})),
        (
            "c3",
            "run_command",
            json!({"command": "sh -c 'touch pwned'"}),
        ),
        ("c4", "run_command", json!({"command": "sh other.sh"})),
    ])
    .await;
    assert_eq!(always_covers(&h, "c1"), "`sh gen.sh …` inside the project");
    assert_eq!(h.editor.asked_ids(), ["c1", "c3", "c4"]);
    assert_eq!(h.final_status("c2"), "completed");
    // Inline code offers no "always" at all.
    let c3 = &h.editor.permission_requests()[1];
    let kinds: Vec<&Value> = c3.params["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| &o["kind"])
        .collect();
    assert_eq!(kinds, [&json!("allow_once"), &json!("reject_once")]);
    assert!(!h.ws.exists("proj/pwned"));
}

/// Finding 4: `accept-edits` (and `full-auto`) let the model write
/// `core.fsmonitor` into `.git/config` without asking.
async fn protected_paths_ask(via: Via) {
    for mode in ["accept-edits", "full-auto"] {
        let h = start(via, mode).await;
        h.editor
            .set_default_permission(Some(PermissionDecision::RejectOnce));
        h.run_calls(&[
            write_call(
                "w1",
                ".git/config",
                "[core]\n\tfsmonitor = \"touch /tmp/pwned\"\n",
            ),
            edit_call("e1", ".git/config", "bare = false", "fsmonitor = x"),
            write_call("w2", ".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"),
            write_call("w3", ".envrc", "touch pwned\n"),
            write_call("w4", ".vscode/tasks.json", "{}\n"),
            write_call("w5", "sub/../.acp-coder/commands/x.md", "x\n"),
            ("r1", "read_file", json!({"path": ".git/config"})),
            write_call("w6", "ok.txt", "ok\n"),
        ])
        .await;
        assert_eq!(
            h.editor.asked_ids(),
            ["w1", "e1", "w2", "w3", "w4", "w5"],
            "{mode}"
        );
        assert_eq!(h.ws.read("proj/.git/config"), "[core]\n\tbare = false\n");
        for f in [
            ".git/hooks/pre-commit",
            ".envrc",
            ".vscode/tasks.json",
            ".acp-coder",
        ] {
            assert!(!h.ws.join("proj").join(f).exists(), "{mode}: {f}");
        }
        assert_eq!(h.final_status("r1"), "completed");
        assert_eq!(h.ws.read("proj/ok.txt"), "ok\n");
        assert_eq!(
            always_covers(&h, "w1"),
            format!("writing {}", canonical(&h, "proj/.git/config"))
        );
    }
}

both!(protected_paths_ask);

/// An outside review's attack: the project's `.git` is a file naming a git
/// directory inside the project (`git init --separate-git-dir gd`), whose
/// config and hooks no `.git/**` glob covers. Writing them asks in every
/// mode, as `.git/`'s do; other files next to it do not.
async fn separate_git_dirs_are_protected(via: Via) {
    for mode in ["accept-edits", "full-auto"] {
        let h = start(via, mode).await;
        let proj = h.ws.join("proj");
        std::fs::remove_dir_all(proj.join(".git")).unwrap();
        for d in ["gd/objects", "gd/refs", "gd/hooks"] {
            std::fs::create_dir_all(proj.join(d)).unwrap();
        }
        std::fs::write(proj.join("gd/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(proj.join("gd/config"), "[core]\n").unwrap();
        std::fs::write(proj.join(".git"), "gitdir: gd\n").unwrap();
        h.editor
            .set_default_permission(Some(PermissionDecision::RejectOnce));
        h.run_calls(&[
            write_call("w1", "gd/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"),
            write_call("w2", "gd/config", "[core]\n\tfsmonitor = \"touch pwned\"\n"),
            edit_call("e1", "gd/config", "[core]", "[core]\n\thooksPath = x"),
            write_call("w3", ".git", "gitdir: elsewhere\n"),
            write_call("w4", "gd-notes.txt", "ok\n"),
        ])
        .await;
        assert_eq!(h.editor.asked_ids(), ["w1", "w2", "e1", "w3"], "{mode}");
        assert!(!proj.join("gd/hooks/pre-commit").exists(), "{mode}");
        assert_eq!(h.ws.read("proj/gd/config"), "[core]\n", "{mode}");
        assert_eq!(h.ws.read("proj/.git"), "gitdir: gd\n", "{mode}");
        assert_eq!(h.ws.read("proj/gd-notes.txt"), "ok\n", "{mode}");
    }
}

both!(separate_git_dirs_are_protected);

/// An "always" on a protected file covers that file and writes only; a
/// symlink into `.git` is the file it points to.
#[tokio::test]
async fn a_protected_grant_is_exact() {
    let h = start(Via::Local, "full-auto").await;
    acp_coder::platform::fs::symlink(".git/hooks", h.ws.join("proj/hooks")).unwrap();
    h.editor.push_permission(PermissionDecision::AllowAlways);
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_calls(&[
        write_call("w1", ".git/config", "[core]\n"),
        write_call("w2", ".git/config", "[core]\n\tbare = false\n"),
        write_call("w3", ".git/description", "x\n"),
        write_call("w4", "hooks/post-checkout", "#!/bin/sh\n"),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["w1", "w3", "w4"]);
    assert_eq!(h.final_status("w2"), "completed");
    assert!(!h.ws.exists("proj/.git/hooks/post-checkout"));
}

/// `protected_paths` in the config file adds globs relative to each root.
#[tokio::test]
async fn the_config_file_extends_the_protected_list() {
    let config = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(config.path().join("acp-coder")).unwrap();
    std::fs::write(
        config.path().join("acp-coder/config.toml"),
        "protected_paths = [\"deploy/*.sh\", \"Makefile\"]\n",
    )
    .unwrap();
    let env = vec![(
        "XDG_CONFIG_HOME".to_owned(),
        config.path().display().to_string(),
    )];
    let h = Harness::start_with(full_capabilities(), workspace(), "proj", env).await;
    h.set_mode("full-auto").await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_calls(&[
        write_call("w1", "deploy/prod.sh", "x\n"),
        write_call("w2", "Makefile", "x\n"),
        write_call("w3", ".git/config", "x\n"),
        write_call("w4", "deploy/readme.md", "x\n"),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["w1", "w2", "w3"]);
    assert_eq!(h.final_status("w4"), "completed");
}

/// A hard link made inside the project to `.git/config` or to a file outside
/// it: an editor that saves in place would change the other name too, so
/// writing it asks in every mode.
#[tokio::test]
async fn hard_linked_files_ask_in_full_auto() {
    let h = start(Via::Editor, "full-auto").await;
    std::fs::hard_link(
        h.ws.join("proj/.git/config"),
        h.ws.join("proj/innocent.txt"),
    )
    .unwrap();
    std::fs::hard_link(h.ws.join("outside/notes.txt"), h.ws.join("proj/notes.txt")).unwrap();
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_calls(&[
        write_call("w1", "innocent.txt", "[core]\n\tfsmonitor = x\n"),
        edit_call("e1", "notes.txt", "notes", "changed"),
        ("r1", "read_file", json!({"path": "innocent.txt"})),
    ])
    .await;
    assert_eq!(h.editor.asked_ids(), ["w1", "e1"]);
    assert_eq!(h.ws.read("proj/.git/config"), "[core]\n\tbare = false\n");
    assert_eq!(h.ws.read("outside/notes.txt"), "notes\n");
    assert_eq!(h.final_status("r1"), "completed");
}
