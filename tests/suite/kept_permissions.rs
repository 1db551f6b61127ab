//! Permissions kept for a project: "Always allow for this project" holds
//! after a restart and a `session/load`, `/permissions`
//! lists and revokes it, the rules live in the agent's data directory (never
//! in the project), and protected paths are never offered.
use std::path::Path;

use serde_json::{Value, json};

use super::common::spawn_in_home;
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, no_capabilities,
};

const PROJECT: &str = "allow-project";

fn workspace() -> Workspace {
    Workspace::builder()
        .file("proj/gen.sh", "touch generated\n")
        .file("proj/.git/config", "[core]\n\tbare = false\n")
        .build()
}

async fn agent(model: &FakeModel, home: &Path) -> FakeEditor {
    let editor = spawn_in_home(model, home.to_path_buf(), &[]);
    editor.initialize(no_capabilities()).await;
    editor
}

/// One turn: the model calls `calls`, then says "done".
async fn turn(editor: &FakeEditor, model: &FakeModel, sid: &str, calls: &[(&str, &str, Value)]) {
    model.push(Reply::tool_calls(
        calls
            .iter()
            .map(|(id, name, args)| (*id, *name, args.clone())),
    ));
    model.push(Reply::text("done"));
    let r = editor.prompt(sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
}

fn option<'a>(request: &'a Value, id: &str) -> Option<&'a Value> {
    request["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["optionId"] == id)
}

fn kept_files(home: &Path) -> Vec<std::path::PathBuf> {
    let dir = home.join(".local/share/acp-coder/permissions");
    std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_project_permission_outlives_the_session_and_can_be_revoked() {
    let home = tempfile::tempdir().unwrap();
    let ws = workspace();
    let proj = ws.join("proj");
    let model = FakeModel::start().await;
    let editor = agent(&model, home.path()).await;
    let sid = editor.new_session(&proj).await;
    editor.set_mode(&sid, "ask").await;
    editor.push_permission(PermissionDecision::Option(PROJECT));
    turn(
        &editor,
        &model,
        &sid,
        &[("c1", "run_command", json!({"command": "sh gen.sh"}))],
    )
    .await;
    let asked = &editor.permission_requests()[0].params;
    let keep = option(asked, PROJECT).expect("the project option is offered");
    assert_eq!(keep["kind"], "allow_always");
    assert_eq!(keep["name"], "Always allow for this project");
    let covers = asked["toolCall"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["content"]["text"].as_str())
        .collect::<Vec<_>>();
    assert!(
        covers.contains(&"Always allow covers `sh gen.sh …` inside the project."),
        "{covers:?}"
    );
    assert!(
        option(asked, "allow-always").is_some(),
        "the session option stays"
    );
    assert!(ws.exists("proj/generated"));
    // Kept in the agent's data directory, private; nothing in the project.
    let files = kept_files(home.path());
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(crate::support::mode_of(&files[0]).is_none_or(|m| m == 0o600));
    assert!(!ws.exists("proj/.acp-coder"));
    editor.shut_down().await;

    // After a restart: a loaded session and a new one run it without asking.
    let editor = agent(&model, home.path()).await;
    editor.load_session(&sid, &proj).await;
    editor.set_mode(&sid, "ask").await;
    editor.set_default_permission(Some(PermissionDecision::RejectOnce));
    turn(
        &editor,
        &model,
        &sid,
        &[("c2", "run_command", json!({"command": "sh gen.sh"}))],
    )
    .await;
    let other = editor.new_session(&proj).await;
    editor.set_mode(&other, "ask").await;
    turn(
        &editor,
        &model,
        &other,
        &[("c3", "run_command", json!({"command": "sh gen.sh again"}))],
    )
    .await;
    assert!(
        editor.permission_requests().is_empty(),
        "kept rules hold after a restart: {:?}",
        editor.asked_ids()
    );

    // `/permissions` lists it; revoking it makes the call ask again.
    editor.prompt(&other, "/permissions").await;
    let text = editor.agent_text(&other);
    assert!(
        text.contains("1. Always allow `sh gen.sh …` inside the project"),
        "{text}"
    );
    editor.prompt(&other, "/permissions revoke 1").await;
    assert!(
        editor
            .agent_text(&other)
            .contains("Revoked: always allow `sh gen.sh …`"),
        "{}",
        editor.agent_text(&other)
    );
    turn(
        &editor,
        &model,
        &other,
        &[("c4", "run_command", json!({"command": "sh gen.sh"}))],
    )
    .await;
    assert_eq!(editor.asked_ids(), ["c4"]);
    editor.shut_down().await;
}

/// A write to a protected path is never offered for the project (the
/// session's "always" stays), and a kept edit rule does not cover it.
#[tokio::test]
async fn protected_paths_are_never_kept() {
    let home = tempfile::tempdir().unwrap();
    let ws = workspace();
    let proj = ws.join("proj");
    let model = FakeModel::start().await;
    let editor = agent(&model, home.path()).await;
    let sid = editor.new_session(&proj).await;
    editor.set_mode(&sid, "ask").await;
    editor.push_permission(PermissionDecision::Option(PROJECT));
    editor.set_default_permission(Some(PermissionDecision::RejectOnce));
    turn(
        &editor,
        &model,
        &sid,
        &[
            (
                "w1",
                "write_file",
                json!({"path": "notes.txt", "content": "ok\n"}),
            ),
            (
                "w2",
                "write_file",
                json!({"path": ".git/config", "content": "[core]\n\tfsmonitor = evil\n"}),
            ),
        ],
    )
    .await;
    let requests = editor.permission_requests();
    assert!(option(&requests[0].params, PROJECT).is_some());
    let protected = requests
        .iter()
        .find(|p| p.params["toolCall"]["toolCallId"] == "w2")
        .expect("the protected write asks");
    assert!(option(&protected.params, PROJECT).is_none());
    assert!(option(&protected.params, "allow-always").is_some());
    assert_eq!(ws.read("proj/notes.txt"), "ok\n");
    assert_eq!(ws.read("proj/.git/config"), "[core]\n\tbare = false\n");
    editor.shut_down().await;
}
