//! Agent Skills (issue 21): discovery in every location with shadowing, the
//! index in the system prompt, `load_skill` and a skill's script, skill slash
//! commands, broken front matter, user-wide skills outside the roots, reload.

use super::common::spawn_in_home;
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, full_capabilities,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// Writes `<base>/<rel>/<name>/SKILL.md` with this description and body.
fn skill(base: &Path, rel: &str, name: &str, description: &str, body: &str) -> PathBuf {
    let dir = base.join(rel).join(name);
    std::fs::create_dir_all(&dir).expect("skill dir");
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n"),
    )
    .expect("write SKILL.md");
    dir
}

fn system_prompt(model: &FakeModel, request: usize) -> String {
    model.chat_requests()[request].messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The last user message of request `request`, as text.
fn user_text(model: &FakeModel, request: usize) -> String {
    let req = &model.chat_requests()[request];
    let user = req
        .messages()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or(Value::Null);
    match &user["content"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Names and descriptions of the last `available_commands_update`.
fn commands(editor: &FakeEditor, sid: &str) -> Vec<(String, String)> {
    let all = editor.updates_of_kind(sid, "available_commands_update");
    let last = all.last().expect("an available_commands_update");
    last["availableCommands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_owned(),
                c["description"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// An agent with its HOME at `home`, initialized with full capabilities.
async fn agent(model: &FakeModel, home: &Path) -> FakeEditor {
    let editor = spawn_in_home(model, home.to_path_buf(), &[]);
    editor.initialize(full_capabilities()).await;
    editor
}

async fn new_session(editor: &FakeEditor, cwd: &Path, additional: &[&Path]) -> String {
    let r = editor
        .request(
            "session/new",
            json!({"cwd": cwd, "mcpServers": [], "additionalDirectories": additional}),
        )
        .await
        .expect("session/new");
    let sid = r["sessionId"].as_str().expect("sessionId").to_owned();
    editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "available_commands_update")
        .await;
    sid
}

/// What the model was told for call `id`.
fn tool_result(model: &FakeModel, id: &str) -> String {
    model
        .tool_result_for(id)
        .unwrap_or_else(|| panic!("no tool result for {id}"))
}

fn log_text(home: &Path) -> String {
    let dir = home.join(".local/state/acp-coder/logs");
    let mut text = String::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        text.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
    }
    text
}

#[tokio::test]
async fn discovery_in_every_location_with_shadowing() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    skill(
        h,
        ".config/acp-coder/skills",
        "cfg-skill",
        "From the config dir",
        "CFG",
    );
    skill(h, ".agents/skills", "home-skill", "From ~/.agents", "HOME");
    skill(h, ".agents/skills", "deploy", "User deploy", "USER-DEPLOY");
    skill(h, ".claude/skills", "claude-user", "From ~/.claude", "CU");
    let ws = Workspace::builder().dir("app/src").git().build();
    skill(
        ws.path(),
        ".agents/skills",
        "root-skill",
        "At the repo root",
        "ROOT",
    );
    skill(
        ws.path(),
        ".claude/skills",
        "claude-proj",
        "Claude project skill",
        "CP",
    );
    skill(
        ws.path(),
        "app/.agents/skills",
        "deploy",
        "Project deploy",
        "PROJECT-DEPLOY",
    );
    let extra = Workspace::new();
    skill(
        extra.path(),
        ".agents/skills",
        "extra-skill",
        "In the extra root",
        "EXTRA",
    );

    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let editor = agent(&model, h).await;
    let sid = new_session(&editor, &ws.join("app"), &[extra.path()]).await;

    let names: Vec<String> = commands(&editor, &sid).into_iter().map(|c| c.0).collect();
    for expected in [
        "deploy",
        "root-skill",
        "claude-proj",
        "extra-skill",
        "cfg-skill",
        "home-skill",
        "claude-user",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected}: {names:?}"
        );
    }
    assert_eq!(names.iter().filter(|n| *n == "deploy").count(), 1);
    let deploy = commands(&editor, &sid)
        .into_iter()
        .find(|c| c.0 == "deploy")
        .unwrap();
    assert_eq!(deploy.1, "Project deploy");

    editor.prompt(&sid, "hi").await;
    let system = system_prompt(&model, 0);
    assert!(system.contains("- deploy: Project deploy\n"), "{system}");
    assert!(!system.contains("User deploy"), "{system}");
    // Most specific first: the project's skills, then the extra root's, then the user's.
    let at = |s: &str| {
        system
            .find(&format!("- {s}:"))
            .unwrap_or_else(|| panic!("{s}: {system}"))
    };
    assert!(at("deploy") < at("root-skill"));
    assert!(at("root-skill") < at("claude-proj"));
    assert!(at("claude-proj") < at("extra-skill"));
    assert!(at("extra-skill") < at("cfg-skill"));
    assert!(at("cfg-skill") < at("home-skill"));
    assert!(at("home-skill") < at("claude-user"));
    // Bodies are not in the index (progressive disclosure).
    assert!(!system.contains("PROJECT-DEPLOY") && !system.contains("ROOT"));
    // load_skill is offered.
    let tools = model.chat_requests()[0].body["tools"].to_string();
    assert!(tools.contains("\"load_skill\""), "{tools}");

    // The log and `/skills` say which deploy was shadowed.
    let user_deploy = std::fs::canonicalize(h.join(".agents/skills/deploy")).unwrap();
    let log = log_text(h);
    assert!(
        log.contains("skill shadowed") && log.contains(&user_deploy.display().to_string()),
        "{log}"
    );
    editor.prompt(&sid, "/skills").await;
    let text = editor.agent_text(&sid);
    assert!(
        text.contains(&format!(
            "`deploy` at {} is shadowed by",
            user_deploy.display()
        )),
        "{text}"
    );
    assert_eq!(
        model.chat_requests().len(),
        1,
        "/skills does not call the model"
    );
}

#[tokio::test]
async fn load_skill_then_a_script_from_the_skill_folder() {
    let home = tempfile::tempdir().expect("home");
    let ws = Workspace::new();
    let dir = skill(
        ws.path(),
        ".agents/skills",
        "greet",
        "Greets in the house style",
        "Run scripts/hello.sh from this folder.",
    );
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/hello.sh"), "echo HELLO-FROM-SKILL; pwd\n").unwrap();
    let dir = std::fs::canonicalize(&dir).unwrap();

    let model = FakeModel::start().await;
    let editor = agent(&model, home.path()).await;
    let sid = new_session(&editor, ws.path(), &[]).await;
    editor.set_mode(&sid, "full-auto").await;
    model.push(Reply::tool_call(
        "c1",
        "load_skill",
        json!({"name": "greet"}),
    ));
    model.push(Reply::tool_call(
        "c2",
        "run_command",
        json!({"command": "sh scripts/hello.sh", "cwd": dir}),
    ));
    model.push(Reply::text("done"));
    let r = editor.prompt(&sid, "greet me").await;
    assert_eq!(r["stopReason"], "end_turn");

    let loaded = tool_result(&model, "c1");
    assert!(
        loaded.contains("Run scripts/hello.sh from this folder."),
        "{loaded}"
    );
    let script = dir.join("scripts/hello.sh");
    assert!(
        loaded.contains(&format!("- {}\n", script.display())),
        "{loaded}"
    );
    assert!(
        loaded.contains(&format!("Its folder is {}", dir.display())),
        "{loaded}"
    );
    let call = editor
        .updates_for(&sid)
        .into_iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "c1")
        .expect("load_skill reported");
    assert_eq!(call["kind"], "read");
    assert_eq!(call["title"], "Load skill greet");
    let ran = tool_result(&model, "c2");
    assert!(ran.contains("HELLO-FROM-SKILL"), "{ran}");
    assert!(ran.contains(&dir.display().to_string()), "{ran}");
    assert!(editor.permission_requests().is_empty());

    // Read-only mode still loads skills; an unknown name is the model's error.
    editor.set_mode(&sid, "read-only").await;
    model.push(Reply::tool_calls([
        ("c3", "load_skill", json!({"name": "greet"})),
        ("c4", "load_skill", json!({"name": "../greet"})),
    ]));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "again").await;
    assert!(tool_result(&model, "c3").contains("Run scripts/hello.sh"));
    let unknown = tool_result(&model, "c4");
    assert!(
        unknown.contains("no skill \"../greet\"") && unknown.contains("greet"),
        "{unknown}"
    );
    assert!(editor.permission_requests().is_empty());
}

#[tokio::test]
async fn a_user_skill_outside_the_roots_loads_and_reads_without_asking_but_its_scripts_ask() {
    let home = tempfile::tempdir().expect("home");
    let dir = skill(
        home.path(),
        ".agents/skills",
        "helper",
        "A user-wide helper",
        "Run scripts/run.sh.",
    );
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "echo USER-SCRIPT-RAN\n").unwrap();
    let script = std::fs::canonicalize(dir.join("scripts/run.sh")).unwrap();
    let ws = Workspace::new();

    let model = FakeModel::start().await;
    let editor = agent(&model, home.path()).await;
    let sid = new_session(&editor, ws.path(), &[]).await;
    // A skill's script asks as any command does in this mode (in full-auto
    // it would run in the command sandbox, like any other command).
    editor.set_mode(&sid, "accept-edits").await;
    model.push(Reply::tool_call(
        "c1",
        "load_skill",
        json!({"name": "helper"}),
    ));
    model.push(Reply::tool_call(
        "c2",
        "run_command",
        json!({"command": format!("sh {}", script.display())}),
    ));
    model.push(Reply::text("done"));
    editor.push_permission(PermissionDecision::AllowOnce);
    editor.prompt(&sid, "help").await;

    assert!(tool_result(&model, "c1").contains(&script.display().to_string()));
    let asked = editor.permission_requests();
    assert_eq!(asked.len(), 1, "only the script asks: {asked:?}");
    assert_eq!(asked[0].params["toolCall"]["toolCallId"], "c2");
    assert!(tool_result(&model, "c2").contains("USER-SCRIPT-RAN"));

    // The skill's own files are its content: reading them does not ask. A
    // file beside the folder still asks, also through a symlink in it.
    std::fs::write(dir.join("reference.md"), "REFERENCE-TEXT\n").unwrap();
    std::fs::write(home.path().join("beside.md"), "BESIDE\n").unwrap();
    acp_coder::platform::fs::symlink(home.path().join("beside.md"), dir.join("escape.md")).unwrap();
    let reference = std::fs::canonicalize(dir.join("reference.md")).unwrap();
    let beside = dir.join("escape.md");
    model.push(Reply::tool_call(
        "c5",
        "read_file",
        json!({"path": reference.display().to_string()}),
    ));
    model.push(Reply::tool_call(
        "c6",
        "read_file",
        json!({"path": beside.display().to_string()}),
    ));
    model.push(Reply::text("done"));
    editor.push_permission(PermissionDecision::RejectOnce);
    editor.prompt(&sid, "read it").await;
    assert!(tool_result(&model, "c5").contains("REFERENCE-TEXT"));
    let asked = editor.permission_requests();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[1].params["toolCall"]["toolCallId"], "c6");
    assert!(!tool_result(&model, "c6").contains("BESIDE"));

    // Rejected, it does not run.
    model.push(Reply::tool_call(
        "c3",
        "run_command",
        json!({"command": format!("sh {}", script.display())}),
    ));
    model.push(Reply::text("done"));
    editor.push_permission(PermissionDecision::RejectOnce);
    editor.prompt(&sid, "again").await;
    assert_eq!(editor.permission_requests().len(), 3);
    assert!(!tool_result(&model, "c3").contains("USER-SCRIPT-RAN"));
}

#[tokio::test]
async fn a_skill_is_a_slash_command_and_built_ins_keep_their_names() {
    let home = tempfile::tempdir().expect("home");
    let ws = Workspace::new();
    let dir = skill(
        ws.path(),
        ".agents/skills",
        "release-notes",
        "Write release notes from the git log",
        "Collect commits. SKILL-BODY-4242",
    );
    std::fs::write(dir.join("template.md"), "## Changes\n").unwrap();
    skill(
        home.path(),
        ".agents/skills",
        "review",
        "A user review skill",
        "X",
    );

    let model = FakeModel::start().await;
    model.push(Reply::text("notes written"));
    let editor = agent(&model, home.path()).await;
    let sid = new_session(&editor, ws.path(), &[]).await;
    let cmds = commands(&editor, &sid);
    let notes = cmds
        .iter()
        .find(|c| c.0 == "release-notes")
        .expect("skill command");
    assert_eq!(notes.1, "Write release notes from the git log");
    let reviews: Vec<_> = cmds.iter().filter(|c| c.0 == "review").collect();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0].1, "Review the uncommitted changes");
    // `/skills` says the skill lost its command, and how else to use it.
    editor.prompt(&sid, "/skills").await;
    let said = editor.agent_text(&sid);
    assert!(
        said.contains("`review` has no slash command: `/review` is the built-in command")
            && said.contains("use the review skill")
            && said.contains("load_skill"),
        "{said}"
    );
    assert!(
        !said.contains("`release-notes` has no slash command"),
        "{said}"
    );

    let r = editor.prompt(&sid, "/release-notes for v1.2 only").await;
    assert_eq!(r["stopReason"], "end_turn");
    let sent = user_text(&model, 0);
    assert!(sent.contains("SKILL-BODY-4242"), "{sent}");
    assert!(sent.contains("Task: for v1.2 only"), "{sent}");
    let template = std::fs::canonicalize(dir.join("template.md")).unwrap();
    assert!(sent.contains(&template.display().to_string()), "{sent}");
    assert!(!sent.starts_with("/release-notes"), "{sent}");
}

#[tokio::test]
async fn a_broken_skill_is_skipped_and_reported() {
    let home = tempfile::tempdir().expect("home");
    let ws = Workspace::new();
    skill(ws.path(), ".agents/skills", "good", "A good skill", "GOOD");
    let bad = ws.join(".agents/skills/bad");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(
        bad.join("SKILL.md"),
        "---\nname: bad\ndescription: [unclosed\n---\nx\n",
    )
    .unwrap();
    // Name and folder differ, or the name breaks the rules: also refused.
    let renamed = ws.join(".agents/skills/renamed");
    std::fs::create_dir_all(&renamed).unwrap();
    std::fs::write(
        renamed.join("SKILL.md"),
        "---\nname: original\ndescription: d\n---\n",
    )
    .unwrap();
    skill(ws.path(), ".agents/skills", "Wrong_Name", "d", "x");

    let model = FakeModel::start().await;
    model.push(Reply::text("fine"));
    let editor = agent(&model, home.path()).await;
    let sid = new_session(&editor, ws.path(), &[]).await;
    let r = editor.prompt(&sid, "hello").await;
    assert_eq!(r["stopReason"], "end_turn");
    let system = system_prompt(&model, 0);
    assert!(system.contains("- good: A good skill"));
    assert!(
        !system.contains("- bad:")
            && !system.contains("Wrong_Name")
            && !system.contains("original")
    );
    let names: Vec<String> = commands(&editor, &sid).into_iter().map(|c| c.0).collect();
    assert!(names.contains(&"good".to_owned()) && !names.contains(&"bad".to_owned()));

    let stderr = editor.stderr();
    assert!(
        stderr.contains("skill skipped")
            && stderr.contains(&bad.join("SKILL.md").display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("not valid YAML"), "{stderr}");
    editor.prompt(&sid, "/status").await;
    let status = editor.agent_text(&sid);
    assert!(
        status.contains("**Skills**: 1 loaded (3 broken and skipped"),
        "{status}"
    );
    editor.prompt(&sid, "/skills").await;
    let listing = editor.agent_text(&sid);
    assert!(
        listing.contains("differs from its folder name"),
        "{listing}"
    );
    editor.assert_no_errors();
}

#[tokio::test]
async fn skills_changed_on_disk_arrive_with_reload_and_the_next_session() {
    let home = tempfile::tempdir().expect("home");
    let ws = Workspace::new();
    let model = FakeModel::start().await;
    model.push(Reply::text("one"));
    model.push(Reply::text("two"));
    let editor = agent(&model, home.path()).await;
    let sid = new_session(&editor, ws.path(), &[]).await;
    editor.prompt(&sid, "first").await;
    assert!(!system_prompt(&model, 0).contains("# Skills"));
    let tools = model.chat_requests()[0].body["tools"].to_string();
    assert!(!tools.contains("load_skill"), "no skills, no load_skill");

    skill(
        ws.path(),
        ".agents/skills",
        "fresh",
        "Added while running",
        "NEW",
    );
    let before = editor
        .updates_of_kind(&sid, "available_commands_update")
        .len();
    editor.prompt(&sid, "/skills reload").await;
    assert!(
        editor
            .agent_text(&sid)
            .contains("Skills reloaded: 1 found.")
    );
    assert_eq!(
        editor
            .updates_of_kind(&sid, "available_commands_update")
            .len(),
        before + 1
    );
    assert!(commands(&editor, &sid).iter().any(|c| c.0 == "fresh"));
    editor.prompt(&sid, "second").await;
    assert!(system_prompt(&model, 1).contains("- fresh: Added while running"));
    assert!(
        model.chat_requests()[1].body["tools"]
            .to_string()
            .contains("load_skill")
    );

    // A new session sees it without a reload.
    let sid2 = new_session(&editor, ws.path(), &[]).await;
    assert!(commands(&editor, &sid2).iter().any(|c| c.0 == "fresh"));
    let s = editor.prompt(&sid, "/skills nonsense").await;
    assert_eq!(s["stopReason"], "end_turn");
}

/// A project skill that is a link to another project's skill (its
/// `SKILL.md`, or its whole folder) is not read: its description never
/// reaches the model, `load_skill` does not know it, and `/skills` lists it
/// as skipped, naming where it points.
#[tokio::test]
async fn a_project_skill_linking_to_another_project_is_not_read() {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().expect("home");
    let ws = Workspace::builder().git().build();
    let other = Workspace::new();
    let theirs = skill(
        other.path(),
        ".agents/skills",
        "theirs",
        "OTHER-PROJECT-DESCRIPTION",
        "OTHER-PROJECT-BODY",
    );
    let linked = skill(
        other.path(),
        ".agents/skills",
        "linked",
        "OTHER-PROJECT-DESCRIPTION-2",
        "OTHER-PROJECT-BODY-2",
    );
    std::fs::write(linked.join("secret-notes.md"), "n").expect("notes");
    let skills = ws.join(".agents/skills");
    std::fs::create_dir_all(skills.join("theirs")).expect("dir");
    acp_coder::platform::fs::symlink(theirs.join("SKILL.md"), skills.join("theirs/SKILL.md"))
        .expect("link");
    acp_coder::platform::fs::symlink(&linked, skills.join("linked")).expect("link");
    skill(
        ws.path(),
        ".agents/skills",
        "ours",
        "Our own skill",
        "OUR-BODY",
    );

    let editor = agent(&model, home.path()).await;
    let sid = new_session(&editor, ws.path(), &[]).await;
    model.push(Reply::tool_calls([
        ("l1", "load_skill", json!({"name": "theirs"})),
        ("l2", "load_skill", json!({"name": "linked"})),
    ]));
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "go").await;
    let prompt = system_prompt(&model, 0);
    assert!(prompt.contains("- ours: Our own skill"), "{prompt}");
    assert!(!prompt.contains("OTHER-PROJECT"), "{prompt}");
    for id in ["l1", "l2"] {
        let loaded = tool_result(&model, id);
        assert!(
            !loaded.contains("OTHER-PROJECT-BODY") && !loaded.contains("secret-notes.md"),
            "{loaded}"
        );
    }

    let before = editor.agent_text(&sid);
    editor.prompt(&sid, "/skills").await;
    let said = editor.agent_text(&sid)[before.len()..].to_owned();
    assert!(
        said.contains("skills/theirs/SKILL.md")
            && said.contains("skills/linked/SKILL.md")
            && said.contains("outside the project"),
        "{said}"
    );
}
