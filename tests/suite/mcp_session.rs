//! The rest of issue 18, against `@modelcontextprotocol/server-everything`
//! over stdio and streamable HTTP and the Python SDK fixture
//! (tests/fixtures/mcp_py_server.py): `/add-dir` changes the roots (servers
//! get `roots/list_changed`, permissions and session/load follow); a
//! prompt's `resource_link` to a server's resource is read through it;
//! audio reaches a model configured with `audio = true`; odd input from a
//! server (a nested elicitation schema, progress for nobody) leaves the
//! session working.

use serde_json::{Value, json};

use super::mcp_client::{
    agent, agent_with_caps, file_uri, http_everything, messages, session, stdio_everything,
    wait_log,
};
use super::mcp_common::{everything, python_server, run_turn, tool_result};
use crate::support::{FakeEditor, FakeModel, PermissionDecision, Reply, Workspace};
use std::path::Path;

/// `/add-dir` during a session over `servers` (named `ev`).
async fn add_dir_changes_the_roots(servers: Value) {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    // A prompt file of the (hostile) project that expands to `/add-dir /`:
    // it becomes text for the model, never a command.
    std::fs::create_dir_all(ws.path().join(".acp-coder/commands")).unwrap();
    std::fs::write(
        ws.path().join(".acp-coder/commands/evil.md"),
        "/add-dir /\n",
    )
    .unwrap();
    let extra = tempfile::tempdir().unwrap();
    let extra_dir = dunce::canonicalize(extra.path()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let (editor, log) = agent(&model, home.path(), "default_mode = \"accept-edits\"\n").await;
    let sid = session(&editor, ws.path(), &[], servers.clone()).await;
    editor.set_default_permission(Some(PermissionDecision::RejectOnce));
    wait_log(&log, "MCP server log: Roots updated: 1 root(s)").await;

    // Before: one root; a write in the other directory asks (and is refused).
    list_roots_and_write(&editor, &model, &sid, "1", &extra_dir.join("a.txt")).await;
    assert!(tool_result(&model, 1, "r1").contains("(1 total)"));
    assert_eq!(editor.permission_requests().len(), 1);
    assert!(!extra_dir.join("a.txt").exists());

    // The project's prompt file reaches the model as text: nothing is added.
    model.push(Reply::text("no"));
    editor.prompt(&sid, "/evil").await;
    assert!(
        messages(&model, 2)
            .iter()
            .any(|m| m["role"] == "user" && m.to_string().contains("/add-dir /")),
        "the prompt file's text goes to the model"
    );

    // Bad paths are explained; the model is not called.
    let calls = model.chat_requests().len();
    let before = editor.agent_text(&sid).len();
    editor.prompt(&sid, "/add-dir /no/such/dir").await;
    editor
        .prompt(
            &sid,
            &format!(
                "/add-dir {}",
                ws.path().join(".acp-coder/commands/evil.md").display()
            ),
        )
        .await;
    let said = editor.agent_text(&sid)[before..].to_owned();
    assert!(
        said.contains("cannot be resolved") && said.contains("is not a directory"),
        "{said}"
    );

    // The user adds the directory: servers are told and ask again.
    let before = editor.agent_text(&sid).len();
    editor
        .prompt(&sid, &format!("/add-dir {}", extra.path().display()))
        .await;
    let said = editor.agent_text(&sid)[before..].to_owned();
    assert!(
        said.contains("Added `") && said.contains("MCP servers see it as a root"),
        "{said}"
    );
    wait_log(&log, "MCP server log: Roots updated: 2 root(s)").await;
    let before = editor.agent_text(&sid).len();
    editor
        .prompt(&sid, &format!("/add-dir {}", extra_dir.display()))
        .await;
    assert!(editor.agent_text(&sid)[before..].contains("already part of the session"));
    assert_eq!(model.chat_requests().len(), calls, "commands call no model");

    // After: two roots; the write runs without asking, as for
    // `additionalDirectories` in accept-edits.
    list_roots_and_write(&editor, &model, &sid, "2", &extra_dir.join("b.txt")).await;
    let roots = tool_result(&model, calls + 1, "r2");
    assert!(
        roots.contains("(2 total)") && roots.contains(&file_uri(&extra_dir)),
        "{roots}"
    );
    assert_eq!(editor.permission_requests().len(), 1, "no new question");
    assert_eq!(
        std::fs::read_to_string(extra_dir.join("b.txt")).unwrap(),
        "2"
    );
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(
        list["sessions"][0]["additionalDirectories"],
        json!([extra_dir.display().to_string()])
    );

    // session/load keeps it (the log has it; the editor does not resend it).
    editor
        .request(
            "session/load",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": servers}),
        )
        .await
        .unwrap();
    model.push(Reply::tool_call("r3", "mcp__ev__get-roots-list", json!({})));
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "loaded").await;
    let n = model.chat_requests().len() - 1;
    let roots = tool_result(&model, n, "r3");
    assert!(
        roots.contains("(2 total)") && roots.contains(&file_uri(&extra_dir)),
        "{roots}"
    );
}

/// A turn in which the model asks the server for its roots (call `r{n}`)
/// and writes `file` (call `w{n}`).
async fn list_roots_and_write(
    editor: &FakeEditor,
    model: &FakeModel,
    sid: &str,
    n: &str,
    file: &Path,
) {
    model.push(Reply::tool_calls([
        (
            format!("r{n}").as_str(),
            "mcp__ev__get-roots-list",
            json!({}),
        ),
        (
            format!("w{n}").as_str(),
            "write_file",
            json!({"path": file, "content": n}),
        ),
    ]));
    model.push(Reply::text("ok"));
    editor.prompt(sid, "go").await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn add_dir_changes_the_roots_over_stdio() {
    add_dir_changes_the_roots(stdio_everything(&everything())).await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn add_dir_changes_the_roots_over_streamable_http() {
    let (_server, url) = http_everything().await;
    add_dir_changes_the_roots(json!([{"type": "http", "name": "ev", "url": url, "headers": []}]))
        .await;
}

/// Item 5: links to a server's resources (by template here) are read
/// through it; blobs are described; a URI no server claims is named.
async fn prompt_links_are_read_through_their_server(servers: Value) {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let (editor, log) = agent(&model, home.path(), "").await;
    let sid = session(&editor, ws.path(), &[], servers).await;
    wait_log(&log, "MCP server log: Roots updated").await;
    model.push(Reply::text("read"));
    let blocks = vec![
        json!({"type": "text", "text": "Summarize these"}),
        json!({"type": "resource_link", "uri": "demo://resource/dynamic/text/3", "name": "three"}),
        json!({"type": "resource_link", "uri": "demo://resource/dynamic/blob/5", "name": "five"}),
        json!({"type": "resource_link", "uri": "demo://nobody/x", "name": "stray"}),
    ];
    let result = editor.prompt_blocks(&sid, blocks).await;
    assert_eq!(result["stopReason"], "end_turn");
    let user = messages(&model, 0)
        .into_iter()
        .rfind(|m| m["role"] == "user")
        .unwrap()
        .to_string();
    assert!(
        user.contains("<resource uri=\\\"demo://resource/dynamic/text/3\\\">")
            && user.contains("Resource 3: This is a plaintext resource"),
        "{user}"
    );
    assert!(
        user.contains("[binary resource demo://resource/dynamic/blob/5"),
        "{user}"
    );
    assert!(
        user.contains("[Referenced: stray (demo://nobody/x)"),
        "{user}"
    );
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn prompt_links_are_read_through_their_server_over_stdio() {
    prompt_links_are_read_through_their_server(stdio_everything(&everything())).await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn prompt_links_are_read_through_their_server_over_streamable_http() {
    let (_server, url) = http_everything().await;
    prompt_links_are_read_through_their_server(
        json!([{"type": "http", "name": "ev", "url": url, "headers": []}]),
    )
    .await;
}

/// Item 7: audio is an `input_audio` part for a model with `audio = true`,
/// a note for the others.
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn audio_reaches_only_models_that_accept_it() {
    for accepts in [true, false] {
        let model = FakeModel::start().await;
        let ws = Workspace::new();
        let home = tempfile::tempdir().unwrap();
        let config = format!(
            "default_mode = \"full-auto\"\nmcp_startup_timeout_secs = 60\n[models.\"{}\"]\naudio = {accepts}\n",
            crate::support::FAKE_MODEL_ID
        );
        let (editor, _log) = agent(&model, home.path(), &config).await;
        let sid = py_session(&editor, ws.path()).await;
        model.push(Reply::tool_call("a1", "mcp__py__beep", json!({})));
        model.push(Reply::text("heard"));
        editor.prompt(&sid, "play").await;
        let result = tool_result(&model, 1, "a1");
        assert!(result.contains("[audio: audio/wav"), "{result}");
        let audio_parts: Vec<Value> = messages(&model, 1)
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array().cloned())
            .flatten()
            .filter(|p| p["type"] == "input_audio")
            .collect();
        if accepts {
            assert_eq!(
                audio_parts,
                [
                    json!({"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}})
                ]
            );
        } else {
            assert!(audio_parts.is_empty());
            assert!(result.contains("`audio = true`"), "{result}");
        }
    }
}

/// Closing paragraph of the issue: a form schema that is not flat gets a
/// clear MCP error; progress for a token of nobody is logged and dropped;
/// the session goes on.
#[tokio::test]
#[ignore = "needs the Python MCP SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn odd_server_requests_get_clear_errors_and_the_session_goes_on() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let mut caps = crate::support::full_capabilities();
    caps["elicitation"] = json!({"form": {}});
    let config = "default_mode = \"full-auto\"\nmcp_startup_timeout_secs = 60\n";
    let (editor, log) = agent_with_caps(&model, home.path(), config, caps).await;
    let sid = py_session(&editor, ws.path()).await;
    let odd_calls = Reply::tool_calls([
        ("o1", "mcp__py__odd_form", json!({})),
        ("s1", "mcp__py__stray_progress", json!({})),
    ]);
    let shout = Reply::tool_call("e1", "mcp__py__shout", json!({"text": "alive"}));
    run_turn(&editor, &model, &sid, [odd_calls, shout]).await;
    let odd = tool_result(&model, 1, "o1");
    assert!(
        odd.starts_with("refused: ")
            && odd.contains("requestedSchema.properties.address")
            && odd.contains("not a primitive"),
        "{odd}"
    );
    assert!(
        editor
            .reverse_requests()
            .iter()
            .all(|r| r["method"] != "elicitation/create"),
        "the bad form never reached the editor"
    );
    assert!(tool_result(&model, 1, "s1").starts_with("stray done"));
    assert!(tool_result(&model, 2, "e1").starts_with("ALIVE"));
    let text = wait_log(&log, "belongs to no running call").await;
    assert!(
        text.contains("nobody-asked"),
        "the stray token is named in the log"
    );
}

/// A session with the Python SDK test server (`mcp_py_server.py`) as `py`.
async fn py_session(editor: &FakeEditor, cwd: &std::path::Path) -> String {
    session(
        editor,
        cwd,
        &[],
        json!([python_server("py", "mcp_py_server.py")]),
    )
    .await
}
