//! Project settings (issue 45 item 5): `.acp-coder/config.toml` in the
//! project applies only after the user trusts it (asked on `session/new`,
//! kept per project, asked again when the file changes), and only its safe
//! keys: model, default_mode (no wider than the user's), instructions and
//! MCP servers (each asked before it starts). Keys that would widen the
//! sandbox, the network, the permissions or the endpoint are refused and
//! reported, never applied.
use serde_json::Value;

use super::common::spawn_in_home;
use crate::support::{FakeEditor, FakeModel, PermissionDecision, Reply, Workspace};

const FILE: &str = ".acp-coder/config.toml";

struct Project {
    model: FakeModel,
    editor: FakeEditor,
    ws: Workspace,
    _home: tempfile::TempDir,
}

async fn project(settings: &str) -> Project {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    let editor = spawn_in_home(&model, home.path().to_path_buf(), &[]);
    editor.initialize(crate::support::no_capabilities()).await;
    let ws = Workspace::builder().file(FILE, settings).build();
    Project {
        model,
        editor,
        ws,
        _home: home,
    }
}

/// The trust questions asked so far (their tool calls' titles).
fn trust_titles(p: &Project) -> Vec<String> {
    p.editor
        .updates()
        .iter()
        .filter(|u| {
            u["update"]["sessionUpdate"] == "tool_call"
                && u["update"]["title"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Trust the project settings"))
        })
        .map(|u| u["update"]["title"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The last model request's body, as text.
fn last_request(p: &Project) -> Value {
    p.model
        .chat_requests()
        .last()
        .expect("a model request")
        .body
        .clone()
}

const SETTINGS: &str =
    "model = \"project-model\"\ninstructions = \"PROJECT-RULE-42: answer in haiku\"\n";

/// A new session in the project and one prompt; returns the session id.
async fn session_with_prompt(p: &Project, text: &str) -> String {
    let sid = p.editor.new_session(p.ws.path()).await;
    p.model.push(Reply::text("hi"));
    let r = p.editor.prompt(&sid, text).await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    sid
}

/// Untrusted ("Do not apply them"): the model and the instructions stay the
/// user's, and the session says the file was not applied.
#[tokio::test]
async fn untrusted_project_settings_are_reported_and_not_applied() {
    let p = project(SETTINGS).await;
    p.editor.push_permission(PermissionDecision::Option("no"));
    let sid = session_with_prompt(&p, "hello").await;
    let titles = trust_titles(&p);
    assert_eq!(titles.len(), 1, "asked once");
    assert!(
        titles[0].contains(FILE)
            && titles[0].contains("model")
            && titles[0].contains("instructions"),
        "{titles:?}"
    );
    let body = last_request(&p);
    assert_ne!(body["model"], "project-model");
    assert!(!body.to_string().contains("PROJECT-RULE-42"));
    let shown = p.editor.agent_text(&sid);
    assert!(shown.contains("not trusted, so none applied"), "{shown}");
}

/// Trusted: the model and the instructions apply from that prompt on, and
/// a later session of the same project has them without a question.
#[tokio::test]
async fn trusted_project_settings_apply_model_and_instructions() {
    let p = project(SETTINGS).await;
    p.editor.push_permission(PermissionDecision::Option("yes"));
    session_with_prompt(&p, "hello").await;
    let body = last_request(&p);
    assert_eq!(body["model"], "project-model", "{body}");
    assert!(body.to_string().contains("PROJECT-RULE-42"));
    session_with_prompt(&p, "again").await;
    assert_eq!(trust_titles(&p).len(), 1, "trust is kept for the project");
    let body = last_request(&p);
    assert_eq!(body["model"], "project-model", "{body}");
    assert!(body.to_string().contains("PROJECT-RULE-42"));
}

/// Keys that would widen what the agent may do are refused even when the
/// project is trusted, and reported (in the session and in /status): a
/// stop hook from the project never runs, the endpoint stays the user's,
/// a full-auto default mode is not taken.
#[tokio::test]
async fn widening_project_keys_are_refused_and_reported() {
    let p = project(
        "model = \"project-model\"\ndefault_mode = \"full-auto\"\nbase_url = \"http://127.0.0.1:9/v1\"\nsandbox_network = true\n\n[[hooks.stop]]\ncommand = \"touch pwned\"\n",
    )
    .await;
    p.editor.push_permission(PermissionDecision::Option("yes"));
    let sid = session_with_prompt(&p, "hello").await;
    assert_eq!(last_request(&p)["model"], "project-model");
    assert!(!p.ws.exists("pwned"), "the project's hook ran");
    let modes = p.editor.updates_of_kind(&sid, "current_mode_update");
    assert!(modes.is_empty(), "{modes:?}");
    let shown = p.editor.agent_text(&sid);
    for key in [
        "`hooks` refused",
        "`base_url` refused",
        "`sandbox_network` refused",
        "`default_mode` refused",
    ] {
        assert!(shown.contains(key), "{key}: {shown}");
    }
    p.editor.prompt(&sid, "/status").await;
    let status = p.editor.agent_text(&sid);
    assert!(
        status.contains("Project settings") && status.matches("`hooks` refused").count() >= 2,
        "{status}"
    );
    // A later (trusted) session starts in the user's mode, not full-auto.
    let r = p.editor.new_session_full(p.ws.path()).await;
    assert_eq!(r["modes"]["currentModeId"], "ask", "{r}");
}

/// Trust holds for the file's content: once it changes, the next session
/// asks again.
#[tokio::test]
async fn a_changed_project_file_asks_again() {
    let p = project(SETTINGS).await;
    p.editor.push_permission(PermissionDecision::Option("yes"));
    session_with_prompt(&p, "one").await;
    session_with_prompt(&p, "two").await;
    assert_eq!(trust_titles(&p).len(), 1);
    p.ws.write(FILE, "model = \"other-model\"\n");
    p.editor.push_permission(PermissionDecision::Option("no"));
    session_with_prompt(&p, "three").await;
    assert_eq!(trust_titles(&p).len(), 2, "asked again");
    assert_ne!(last_request(&p)["model"], "other-model");
}

/// A project's MCP server is asked about before it is started: "no" keeps
/// it from running even in a trusted project; "yes" lets it start (with
/// the project's next session, without another question).
#[cfg(unix)] // the server is a shell line
#[tokio::test]
async fn a_project_mcp_server_asks_before_it_starts() {
    let p = project("").await;
    let marker = p.ws.join("mcp-started");
    p.ws.write(
        FILE,
        format!(
            "[mcp_servers.probe]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n",
            serde_json::json!(format!("touch '{}'", marker.display()))
        ),
    );
    p.editor.push_permission(PermissionDecision::Option("yes"));
    p.editor.push_permission(PermissionDecision::Option("no"));
    session_with_prompt(&p, "one").await;
    assert_eq!(
        p.editor.permission_requests().len(),
        2,
        "trust, then the server"
    );
    assert!(!marker.exists(), "the server started without a yes");
    p.editor.push_permission(PermissionDecision::Option("yes"));
    let sid = session_with_prompt(&p, "two").await;
    assert_eq!(
        p.editor.permission_requests().len(),
        3,
        "only the server asked"
    );
    assert!(
        !marker.exists(),
        "this session's servers were already set up"
    );
    assert!(
        p.editor
            .agent_text(&sid)
            .contains("starts with the project's next session")
    );
    session_with_prompt(&p, "three").await;
    assert_eq!(p.editor.permission_requests().len(), 3, "not asked again");
    crate::support::eventually("the allowed server started", || marker.exists()).await;
}

/// An A2A guest is never asked to trust a project, and its session does
/// not apply the project's settings.
#[tokio::test]
async fn a_guest_session_never_applies_project_settings() {
    use super::a2a::serve;
    use super::a2a_http::{post, rpc, user_message};
    let model = FakeModel::start().await;
    let ws = Workspace::builder().file(FILE, SETTINGS).build();
    let s = serve(&model, ws.path(), &["--mode", "read-only"], &[]).await;
    model.push(Reply::text("hi"));
    let (_, b) = post(
        &s,
        Some(s.token.as_str()),
        rpc("SendMessage", user_message("hello")),
    )
    .await;
    assert_eq!(
        b["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{b}"
    );
    let body = model
        .chat_requests()
        .last()
        .expect("a model request")
        .body
        .clone();
    assert_ne!(body["model"], "project-model");
    assert!(!body.to_string().contains("PROJECT-RULE-42"));
}

/// `skills` in a trusted project's settings: its folders inside the project
/// are read like `.agents/skills` (the skill reaches the model and the
/// commands, from the trusting prompt on and in later sessions at once); a
/// folder outside the project is refused and reported.
#[tokio::test]
async fn trusted_project_skills_are_read_and_a_folder_outside_is_refused() {
    let p = project("skills = [\"tools/skills\"]\n").await;
    let skill = p.ws.path().join("tools/skills/deploy-notes/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: deploy-notes\ndescription: How this project deploys\n---\nUse the blue pipeline.\n",
    )
    .unwrap();
    p.editor.push_permission(PermissionDecision::Option("yes"));
    let sid = session_with_prompt(&p, "hello").await;
    assert!(
        last_request(&p).to_string().contains("deploy-notes"),
        "the project's skill is not in the model's index"
    );
    assert!(
        p.editor
            .agent_text(&sid)
            .contains("skills in `tools/skills`")
    );
    // A later session of the trusted project has it from the start.
    let again = p.editor.new_session(p.ws.path()).await;
    let commands = p
        .editor
        .updates_of_kind(&again, "available_commands_update");
    assert!(
        commands
            .iter()
            .any(|u| u.to_string().contains("deploy-notes")),
        "{commands:?}"
    );

    let q = project("skills = [\"../elsewhere\"]\nmodel = \"project-model\"\n").await;
    q.editor.push_permission(PermissionDecision::Option("yes"));
    let sid = session_with_prompt(&q, "hello").await;
    assert!(
        q.editor.agent_text(&sid).contains("`skills` refused"),
        "{}",
        q.editor.agent_text(&sid)
    );
}
