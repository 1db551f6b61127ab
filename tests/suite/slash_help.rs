//! `/help` (issue 45 item 8): every command of the session, one line each,
//! answered without a model call.
use super::common::ready_with;
use crate::support::{FakeModel, Workspace};

#[tokio::test]
async fn help_lists_every_command_with_one_line_each() {
    let model = FakeModel::start().await;
    let ws = Workspace::builder()
        .file(
            ".acp-coder/commands/deploy.md",
            "---\ndescription: Ship it\n---\nDeploy $ARGUMENTS\n",
        )
        .build();
    let r = ready_with(&model, &[], ws).await;
    let listed = r
        .editor
        .wait_for_update(&r.sid, |u| {
            u["sessionUpdate"] == "available_commands_update"
        })
        .await;
    let names: Vec<String> = listed["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"help".to_owned()), "{names:?}");
    let reply = r.editor.prompt(&r.sid, "/help").await;
    assert_eq!(reply["stopReason"], "end_turn");
    let text = r.editor.agent_text(&r.sid);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- `/")).collect();
    assert_eq!(lines.len(), names.len(), "{text}");
    for name in &names {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("- `/{name}`"))),
            "/{name} missing: {text}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("- `/deploy`") && l.ends_with(": Ship it")),
        "{text}"
    );
    assert!(text.contains("- `/help`: List the commands, one line each"));
    assert!(model.chat_requests().is_empty(), "no model call");
}
