//! Issue 45 item 1: `CLAUDE.md` and `GEMINI.md` as project memory (where
//! there is no `AGENTS.md`, or beside it with `memory_files`), Claude Code's
//! `.claude/commands` and Gemini CLI's `.gemini/commands` as slash
//! commands, each read like any other project file.
use super::common::{ready_with, spawn_in_home, write_config};
use crate::support::{FakeModel, PermissionDecision, Reply, Workspace, full_capabilities};

fn system_prompt(model: &FakeModel, request: usize) -> String {
    model.chat_requests()[request].messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The text the model got as the last user message of request `i`.
fn last_user_text(model: &FakeModel, request: usize) -> String {
    let req = &model.chat_requests()[request];
    let m = req.last_message().expect("a message");
    match m["content"].as_str() {
        Some(s) => s.to_owned(),
        None => m["content"].to_string(),
    }
}

#[tokio::test]
async fn claude_md_is_read_where_there_is_no_agents_md_and_status_names_it() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let ws = Workspace::builder()
        .file("CLAUDE.md", "Root rules. MARKER-CLAUDE-ROOT-3141\n")
        .file("crates/a/GEMINI.md", "Gemini rules. MARKER-GEMINI-A-2718\n")
        .file("crates/a/AGENTS.md", "Agents rules. MARKER-AGENTS-A-1618\n")
        .file("crates/a/CLAUDE.md", "Not read. MARKER-CLAUDE-A-0000\n")
        .git()
        .build();
    let editor = spawn_in_home(&model, ws.join(".home"), &[]);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.join("crates/a")).await;
    editor.prompt(&sid, "hi").await;
    let system = system_prompt(&model, 0);
    let root = system
        .find("MARKER-CLAUDE-ROOT-3141")
        .expect("CLAUDE.md read");
    let a = system.find("MARKER-AGENTS-A-1618").expect("AGENTS.md read");
    assert!(root < a, "outermost first");
    assert!(
        !system.contains("MARKER-GEMINI-A-2718"),
        "AGENTS.md comes first"
    );
    assert!(
        !system.contains("MARKER-CLAUDE-A-0000"),
        "AGENTS.md comes first"
    );
    editor.prompt(&sid, "/status").await;
    let status = editor.agent_text(&sid);
    let line = status
        .lines()
        .find(|l| l.contains("**Memory files**"))
        .unwrap_or_else(|| panic!("no memory line: {status}"));
    assert!(
        line.contains(&ws.join("CLAUDE.md").display().to_string())
            && line.contains(&ws.join("crates/a/AGENTS.md").display().to_string())
            && !line.contains("GEMINI.md"),
        "{line}"
    );
}

#[tokio::test]
async fn memory_files_in_the_config_reads_claude_md_beside_agents_md() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let ws = Workspace::builder()
        .file("AGENTS.md", "MARKER-AGENTS-5551\n")
        .file("CLAUDE.md", "MARKER-CLAUDE-5552\n")
        .file("GEMINI.md", "MARKER-GEMINI-5553\n")
        .build();
    let home = ws.join(".home");
    write_config(&home, "memory_files = [\"AGENTS.md\", \"CLAUDE.md\"]\n");
    let editor = spawn_in_home(&model, home, &[]);
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.prompt(&sid, "hi").await;
    let system = system_prompt(&model, 0);
    let agents = system.find("MARKER-AGENTS-5551").expect("AGENTS.md read");
    let claude = system.find("MARKER-CLAUDE-5552").expect("CLAUDE.md read");
    assert!(agents < claude, "in the listed order");
    assert!(!system.contains("MARKER-GEMINI-5553"), "not listed");
}

#[tokio::test]
async fn claude_and_gemini_commands_are_listed_and_expand_their_arguments() {
    let model = FakeModel::start().await;
    model.push(Reply::text("one"));
    model.push(Reply::text("two"));
    model.push(Reply::text("three"));
    let ws = Workspace::builder()
        .file(
            ".gemini/commands/git/summary.toml",
            "description = \"Summarize a commit\"\nprompt = \"\"\"\nSummarize commit {{args}} in one line.\n\"\"\"\n",
        )
        .file(
            ".gemini/commands/plain.toml",
            "prompt = \"Plain gemini prompt.\"\n",
        )
        .file(
            ".claude/commands/fix.md",
            "---\ndescription: Fix an issue\nargument-hint: [issue-number]\n---\nFix issue #$ARGUMENTS now.\n",
        )
        .file(".claude/commands/frontend/widget.md", "Build the widget.\n")
        .build();
    let r = ready_with(&model, &[], ws).await;
    let listed = r
        .editor
        .wait_for_update(&r.sid, |u| {
            u["sessionUpdate"] == "available_commands_update"
        })
        .await;
    let commands = listed["availableCommands"].as_array().unwrap();
    let find = |name: &str| {
        commands
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("/{name} not listed: {commands:?}"))
            .clone()
    };
    assert_eq!(find("git:summary")["description"], "Summarize a commit");
    assert_eq!(find("git:summary")["input"]["hint"], "arguments");
    assert_eq!(find("fix")["description"], "Fix an issue");
    assert_eq!(find("fix")["input"]["hint"], "[issue-number]");
    assert!(
        find("widget")["description"]
            .as_str()
            .unwrap()
            .contains("(project:frontend)")
    );
    find("plain");

    r.editor.prompt(&r.sid, "/git:summary abc123").await;
    let text = last_user_text(&model, 0);
    assert!(
        text.contains("Summarize commit abc123 in one line."),
        "{text}"
    );
    assert!(!text.contains("{{args}}"), "{text}");
    r.editor.prompt(&r.sid, "/fix 42").await;
    let text = last_user_text(&model, 1);
    assert!(text.contains("Fix issue #42 now."), "{text}");
    r.editor.prompt(&r.sid, "/plain and more").await;
    let text = last_user_text(&model, 2);
    assert!(
        text.contains("Plain gemini prompt.") && text.contains("and more"),
        "{text}"
    );
}

/// A memory file or a command file linked out of the project is not read:
/// its text reaches neither the model nor the command list.
#[cfg(unix)] // symlinks without privileges
#[tokio::test]
async fn memory_and_command_files_linked_out_of_the_project_are_refused() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let outside = Workspace::builder()
        .file("secret.md", "OUTSIDE-SECRET-9090\n")
        .file("secret.toml", "prompt = \"OUTSIDE-SECRET-9191\"\n")
        .build();
    let ws = Workspace::builder()
        .dir(".claude/commands")
        .dir(".gemini/commands")
        .build();
    let link = acp_coder::platform::fs::symlink;
    link(outside.join("secret.md"), ws.join("CLAUDE.md")).unwrap();
    link(
        outside.join("secret.md"),
        ws.join(".claude/commands/steal.md"),
    )
    .unwrap();
    link(
        outside.join("secret.toml"),
        ws.join(".gemini/commands/take.toml"),
    )
    .unwrap();
    link(outside.path().to_path_buf(), ws.join(".gemini/commands/ns")).unwrap();
    let r = ready_with(&model, &[], ws).await;
    let listed = r
        .editor
        .wait_for_update(&r.sid, |u| {
            u["sessionUpdate"] == "available_commands_update"
        })
        .await;
    let names: Vec<&str> = listed["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for refused in ["steal", "take", "ns:secret"] {
        assert!(!names.contains(&refused), "/{refused} listed: {names:?}");
    }
    r.editor.prompt(&r.sid, "hi").await;
    let system = system_prompt(&model, 0);
    assert!(!system.contains("OUTSIDE-SECRET"), "{system}");
    r.editor.prompt(&r.sid, "/status").await;
    assert!(
        r.editor
            .agent_text(&r.sid)
            .contains("**Memory files**: none"),
        "{}",
        r.editor.agent_text(&r.sid)
    );
}

/// The `resource_link` blocks the agent sent in its messages.
fn links(editor: &crate::support::FakeEditor, sid: &str) -> Vec<serde_json::Value> {
    editor
        .updates_of_kind(sid, "agent_message_chunk")
        .into_iter()
        .filter(|u| u["content"]["type"] == "resource_link")
        .map(|u| u["content"].clone())
        .collect()
}

/// Issue 45 item 8: `/memory` with no memory file asks to create
/// `AGENTS.md`, writes it through the editor, links it, and the session's
/// next model call reads it.
#[tokio::test]
async fn memory_creates_agents_md_through_the_editor_after_asking() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let r = ready_with(&model, &[], Workspace::new()).await;
    r.editor.push_permission(PermissionDecision::AllowOnce);
    let reply = r.editor.prompt(&r.sid, "/memory").await;
    assert_eq!(reply["stopReason"], "end_turn");
    let asked = r.editor.permission_requests();
    assert_eq!(asked.len(), 1, "one question");
    let path = r.ws.join("AGENTS.md");
    let writes = r.editor.writes();
    assert_eq!(writes.len(), 1, "written through the editor");
    assert_eq!(writes[0].path, path);
    assert!(writes[0].content.contains("# Project instructions"));
    assert_eq!(r.ws.read("AGENTS.md"), writes[0].content);
    let links = links(&r.editor, &r.sid);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(links[0]["name"], "AGENTS.md");
    assert_eq!(
        links[0]["uri"],
        url::Url::from_file_path(&path).unwrap().to_string()
    );
    assert!(
        r.editor
            .agent_text(&r.sid)
            .contains(&format!("Created `{}`", path.display())),
        "{}",
        r.editor.agent_text(&r.sid)
    );
    assert!(model.chat_requests().is_empty(), "no model call");
    r.editor.prompt(&r.sid, "hi").await;
    assert!(system_prompt(&model, 0).contains("acp-coder reads this file"));
}

/// `/memory` with a memory file shows its path and a summary and links
/// it; nothing is asked or written.
#[tokio::test]
async fn memory_links_the_memory_file_in_use() {
    let model = FakeModel::start().await;
    let ws = Workspace::builder()
        .file("CLAUDE.md", "# Team rules\n\n- tabs\n")
        .build();
    let r = ready_with(&model, &[], ws).await;
    r.editor.prompt(&r.sid, "/memory").await;
    let text = r.editor.agent_text(&r.sid);
    let path = r.ws.join("CLAUDE.md");
    assert!(
        text.contains(&format!("Memory file: `{}` (3 lines", path.display()))
            && text.contains("\"Team rules\""),
        "{text}"
    );
    let links = links(&r.editor, &r.sid);
    assert_eq!(links.len(), 1, "{links:?}");
    assert_eq!(
        links[0]["uri"],
        url::Url::from_file_path(&path).unwrap().to_string()
    );
    assert!(r.editor.permission_requests().is_empty());
    assert!(r.editor.writes().is_empty());
    assert!(model.chat_requests().is_empty(), "no model call");
}

/// `/memory add TEXT` asks; rejected, nothing changes; allowed, the line is
/// added (on disk here: the editor offers no `fs/write_text_file`) and the
/// model sees it.
#[tokio::test]
async fn memory_add_appends_a_line_only_when_allowed() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let ws = Workspace::builder()
        .file("AGENTS.md", "# Rules\n- tabs")
        .build();
    let editor = super::common::spawn(&model, &[]);
    editor.initialize(crate::support::no_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.push_permission(PermissionDecision::RejectOnce);
    editor
        .prompt(&sid, "/memory add run cargo fmt MARKER-ADD-4242")
        .await;
    assert_eq!(ws.read("AGENTS.md"), "# Rules\n- tabs");
    assert!(editor.agent_text(&sid).contains("Nothing was written"));
    editor.push_permission(PermissionDecision::AllowOnce);
    editor
        .prompt(&sid, "/memory add run cargo fmt MARKER-ADD-4242")
        .await;
    assert_eq!(
        ws.read("AGENTS.md"),
        "# Rules\n- tabs\n- run cargo fmt MARKER-ADD-4242\n"
    );
    let asked = editor.permission_requests();
    assert_eq!(asked.len(), 2);
    assert!(editor.writes().is_empty(), "no editor write capability");
    editor.prompt(&sid, "hi").await;
    assert!(system_prompt(&model, 0).contains("MARKER-ADD-4242"));
}

/// An A2A client may neither see nor write the memory file.
#[tokio::test]
async fn memory_is_refused_to_a2a_clients() {
    use super::a2a::{serve, text_of};
    use super::a2a_http::{post, rpc, user_message};
    let model = FakeModel::start().await;
    let ws = Workspace::builder().file("AGENTS.md", "# Rules\n").build();
    let s = serve(&model, ws.path(), &["--mode", "full-auto"], &[]).await;
    let t = Some(s.token.as_str());
    let (_, b) = post(
        &s,
        t,
        rpc("SendMessage", user_message("/memory add push to main")),
    )
    .await;
    let reply = text_of(&b["result"]["task"]["status"]["message"]);
    assert!(
        reply.contains("`/memory add push to main` is not available to A2A clients"),
        "{reply}"
    );
    assert_eq!(ws.read("AGENTS.md"), "# Rules\n");
    let (_, b) = post(&s, t, rpc("SendMessage", user_message("/memory"))).await;
    let reply = text_of(&b["result"]["task"]["status"]["message"]);
    assert!(reply.contains("not available to A2A clients"), "{reply}");
    assert!(model.chat_requests().is_empty(), "no turn ran");
}
