//! Issue 45 item 4: `exec --continue`, `exec --resume ID` and `exec --list`,
//! over the same session store as the editor's sessions.
use super::cli_common::CliEnv;
use crate::support::{FakeModel, Reply, Workspace};
use serde_json::Value;

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The session id of a `--json` run.
fn session_of(stdout: &str) -> String {
    json_lines(stdout)
        .iter()
        .find_map(|e| e["sessionId"].as_str().map(str::to_owned))
        .expect("an event with the session id")
}

/// Every message text of request `i`, joined.
fn conversation(model: &FakeModel, i: usize) -> String {
    model.chat_requests()[i]
        .messages()
        .iter()
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn continue_takes_up_the_latest_session_of_the_directory() {
    let model = FakeModel::with_replies([
        Reply::text("First answer ALPHA."),
        Reply::text("Second answer BETA."),
        Reply::text("Other project."),
        Reply::text("Third answer."),
    ])
    .await;
    let ws = Workspace::new();
    let other = Workspace::new();
    let env = CliEnv::with_model(&model).cwd(ws.path());
    env.run(&["exec", "remember the word OSPREY"])
        .await
        .assert_code(0);
    env.run(&["exec", "a second, newer session"])
        .await
        .assert_code(0);
    // A newer session of another directory is not this one's.
    env.run(&["exec", "-C", other.path().to_str().unwrap(), "elsewhere"])
        .await
        .assert_code(0);
    let run = env.run(&["exec", "--continue", "what was the word?"]).await;
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "Third answer.");
    let sent = conversation(&model, 3);
    assert!(
        sent.contains("a second, newer session") && sent.contains("Second answer BETA."),
        "the latest session of the directory: {sent}"
    );
    assert!(
        !sent.contains("OSPREY") && !sent.contains("elsewhere"),
        "{sent}"
    );
}

#[tokio::test]
async fn resume_takes_up_a_session_by_id_and_list_shows_them_newest_first() {
    let model =
        FakeModel::with_replies([Reply::text("one"), Reply::text("two"), Reply::text("three")])
            .await;
    let ws = Workspace::new();
    let env = CliEnv::with_model(&model).cwd(ws.path());
    let first = env.run(&["exec", "--json", "first task KESTREL"]).await;
    first.assert_code(0);
    let first_id = session_of(&first.stdout);
    let second = env.run(&["exec", "--json", "second task"]).await;
    let second_id = session_of(&second.stdout);
    assert_ne!(first_id, second_id);

    let list = env.run(&["exec", "--list"]).await;
    list.assert_code(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.stdout);
    assert!(
        lines[0].starts_with(&second_id) && lines[0].ends_with("second task"),
        "newest first: {lines:?}"
    );
    assert!(
        lines[1].starts_with(&first_id) && lines[1].ends_with("first task KESTREL"),
        "{lines:?}"
    );
    let listed = json_lines(&env.run(&["exec", "--list", "--json"]).await.stdout);
    assert_eq!(listed[0]["sessionId"], second_id.as_str());
    assert_eq!(listed[1]["title"], "first task KESTREL");
    assert!(listed[1]["updatedAt"].is_string());

    let run = env
        .run(&["exec", "--json", "--resume", &first_id, "go on"])
        .await;
    run.assert_code(0);
    assert_eq!(session_of(&run.stdout), first_id);
    let sent = conversation(&model, 2);
    assert!(
        sent.contains("first task KESTREL") && !sent.contains("second task"),
        "{sent}"
    );
}

#[tokio::test]
async fn an_unknown_session_is_a_usage_error_that_says_how_to_list_them() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let env = CliEnv::with_model(&model).cwd(ws.path());
    let run = env
        .run(&["exec", "--resume", "no-such-session", "hi"])
        .await;
    run.assert_code(2);
    run.assert_stderr_has("no-such-session");
    run.assert_stderr_has("acp-coder exec --list");
    let run = env.run(&["exec", "--continue", "hi"]).await;
    run.assert_code(2);
    run.assert_stderr_has("no earlier session");
    let run = env.run(&["exec", "--list"]).await;
    run.assert_code(0);
    assert_eq!(run.stdout, "");
    run.assert_stderr_has("No sessions in");
    assert!(model.chat_requests().is_empty(), "no model call");
}
