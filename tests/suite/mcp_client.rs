//! The MCP client side beyond tools (issue 18): roots, progress, servers'
//! logs, tool annotations, resources, rich results, against the official
//! `@modelcontextprotocol/server-everything` over stdio and streamable HTTP.
use std::path::Path;

use serde_json::{Value, json};

use super::mcp_common::{
    everything, everything_over, final_update, first_call, run_turn, stdio, tool_result,
};
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, Workspace, full_capabilities,
};

/// An agent with `config` (TOML) and a debug log in `dir`; the log path.
pub(super) async fn agent(
    model: &FakeModel,
    dir: &Path,
    config: &str,
) -> (FakeEditor, std::path::PathBuf) {
    agent_with_caps(model, dir, config, full_capabilities()).await
}

/// [`agent`] for an editor with these `clientCapabilities`.
pub(super) async fn agent_with_caps(
    model: &FakeModel,
    dir: &Path,
    config: &str,
    caps: Value,
) -> (FakeEditor, std::path::PathBuf) {
    let cfg = dir.join("config.toml");
    std::fs::write(&cfg, config).unwrap();
    let log = dir.join("agent.log");
    let args = [
        "--config",
        cfg.to_str().unwrap(),
        "--log-file",
        log.to_str().unwrap(),
        "--log-level",
        "debug",
    ];
    let editor = FakeEditor::spawn(&args, model.agent_env());
    editor.initialize(caps).await;
    (editor, log)
}

pub(super) async fn session(
    editor: &FakeEditor,
    cwd: &Path,
    extra: &[&Path],
    servers: Value,
) -> String {
    let r = editor
        .request(
            "session/new",
            json!({"cwd": cwd, "additionalDirectories": extra, "mcpServers": servers}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("session/new failed: {e}")));
    r["sessionId"].as_str().unwrap().to_owned()
}

pub(super) fn stdio_everything(path: &str) -> Value {
    json!([{"name": "ev", "command": "node", "args": [path, "stdio"], "env": []}])
}

/// Starts server-everything serving streamable HTTP; its `/mcp` URL.
pub(super) async fn http_everything() -> (tokio::process::Child, String) {
    let (child, base) = everything_over("streamableHttp").await;
    (child, format!("{base}/mcp"))
}

pub(super) fn file_uri(p: &Path) -> String {
    format!("file://{}/", p.display())
}

pub(super) async fn wait_log(log: &Path, needle: &str) -> String {
    crate::support::wait_for_text_in(log, needle).await
}

/// Roots, progress and logs in one session over `servers`.
async fn roots_progress_and_logs(servers: impl FnOnce(&str) -> Value, path: &str) {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let extra = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (editor, log) = agent(&model, home.path(), "").await;
    let sid = session(&editor, ws.path(), &[extra.path()], servers(path)).await;
    model.push(Reply::tool_calls([
        ("r1", "mcp__ev__get-roots-list", json!({})),
        (
            "p1",
            "mcp__ev__trigger-long-running-operation",
            json!({"duration": 0.4, "steps": 4}),
        ),
    ]));
    model.push(Reply::text("done"));
    // Both are readOnlyHint tools: they count as reads and do not ask.
    editor.set_default_permission(Some(PermissionDecision::RejectOnce));
    editor.prompt(&sid, "go").await;
    assert!(
        editor.permission_requests().is_empty(),
        "read-only MCP tools asked: {:?}",
        editor.permission_requests()[0].params
    );

    // Item 1: the session's directories as file:// roots.
    let roots = tool_result(&model, 1, "r1");
    assert!(roots.contains("(2 total)"), "{roots}");
    assert!(roots.contains(&file_uri(ws.path())), "{roots}");
    assert!(roots.contains(&file_uri(extra.path())), "{roots}");

    // Item 6: each progress notification updated the call's content.
    let progress: Vec<String> = editor
        .updates_of_kind(&sid, "tool_call_update")
        .into_iter()
        .filter(|u| u["toolCallId"] == "p1")
        .filter_map(|u| {
            u["content"][0]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .filter(|t| t.starts_with("Progress:"))
        .collect();
    // (The last one may race the answer and is then dropped, so that it
    // never overwrites the result.)
    assert!(
        progress.contains(&"Progress: 1 of 4 (25%)".to_owned())
            && progress.contains(&"Progress: 2 of 4 (50%)".to_owned()),
        "{progress:?}"
    );
    let last = final_update(&editor, &sid, "p1");
    assert!(
        last["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Long running operation completed")),
        "{last}"
    );
    assert!(tool_result(&model, 1, "p1").contains("Long running operation completed"));

    // Item 6: the server's log message (sent when it fetched the roots) is in
    // the agent's log file with the server's name.
    let text = wait_log(&log, "MCP server log: Roots updated: 2 root(s)").await;
    let line = text
        .lines()
        .find(|l| l.contains("MCP server log: Roots updated"))
        .unwrap();
    assert!(line.contains("INFO") && line.contains("ev"), "{line}");
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn roots_progress_and_logs_over_stdio() {
    let path = everything();
    roots_progress_and_logs(stdio_everything, &path).await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn roots_progress_and_logs_over_streamable_http() {
    let path = everything();
    let (_server, url) = http_everything().await;
    roots_progress_and_logs(
        |_| json!([{"type": "http", "name": "ev", "url": url, "headers": []}]),
        &path,
    )
    .await;
}

/// Item 9: annotations pick the permission rule and its text.
#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn annotations_drive_permissions() {
    let path = everything();
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let (editor, _log) = agent(&model, home.path(), "default_mode = \"read-only\"\n").await;
    let sid = session(&editor, ws.path(), &[], stdio_everything(&path)).await;
    // read-only mode: a readOnlyHint tool runs; an unmarked one is refused.
    model.push(Reply::tool_calls([
        ("a1", "mcp__ev__get-sum", json!({"a": 1, "b": 2})),
        ("a2", "mcp__ev__toggle-simulated-logging", json!({})),
    ]));
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "go").await;
    assert!(tool_result(&model, 1, "a1").contains('3'));
    assert!(
        tool_result(&model, 1, "a2").contains("is not marked read-only"),
        "{}",
        tool_result(&model, 1, "a2")
    );
    assert_eq!(first_call(&editor, &sid, "a1")["kind"], "read");

    // ask mode: an openWorldHint tool asks and says so.
    editor.set_mode(&sid, "ask").await;
    editor.push_permission(PermissionDecision::RejectOnce);
    model.push(Reply::tool_call(
        "a3",
        "mcp__ev__gzip-file-as-resource",
        json!({"name": "x.gz", "data": "https://example.invalid/"}),
    ));
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "again").await;
    let asked = editor.permission_requests();
    assert_eq!(asked.len(), 1);
    let text = asked[0].params["toolCall"]["content"].to_string();
    assert!(text.contains("open-world"), "{text}");
    assert!(tool_result(&model, 3, "a3").contains("rejected"));
}

/// The messages of chat request `n` (JSON as sent).
pub(super) fn messages(model: &FakeModel, n: usize) -> Vec<Value> {
    model.chat_requests()[n].messages().to_vec()
}

/// Items 5 and 7: images reach the model after the results (unless the
/// model has `images = false`); structured content, resource links and
/// embedded resources are kept for it; resources are listed and read.
async fn rich_results_and_resources(servers: Value, images: bool) {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let config = if images {
        String::new()
    } else {
        format!(
            "[models.\"{}\"]\nimages = false\n",
            crate::support::FAKE_MODEL_ID
        )
    };
    let (editor, _log) = agent(&model, home.path(), &config).await;
    let sid = session(&editor, ws.path(), &[], servers).await;
    model.push(Reply::tool_calls([
        ("i1", "mcp__ev__get-tiny-image", json!({})),
        (
            "s1",
            "mcp__ev__get-structured-content",
            json!({"location": "Chicago"}),
        ),
        ("l1", "mcp__ev__get-resource-links", json!({"count": 2})),
        (
            "e1",
            "mcp__ev__get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 4}),
        ),
        ("rl", "list_mcp_resources", json!({})),
        (
            "rr",
            "read_mcp_resource",
            json!({"server": "ev", "uri": "demo://resource/dynamic/text/7"}),
        ),
        (
            "rb",
            "read_mcp_resource",
            json!({"server": "nope", "uri": "demo://x"}),
        ),
    ]));
    model.push(Reply::text("done"));
    editor.set_default_permission(Some(PermissionDecision::RejectOnce));
    editor.prompt(&sid, "go").await;
    assert!(editor.permission_requests().is_empty(), "reads do not ask");

    let msgs = messages(&model, 1);
    let image_msg = msgs
        .iter()
        .find(|m| m["role"] == "user" && m["content"].is_array());
    let image = tool_result(&model, 1, "i1");
    assert!(image.contains("[image: image/png"), "{image}");
    if images {
        let m = image_msg.expect("a user message with the images");
        let parts = m["content"].as_array().unwrap();
        assert!(
            parts.iter().any(|p| p["type"] == "image_url"
                && p["image_url"]["url"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("data:image/png;base64,"))),
            "{m}"
        );
        assert_eq!(msgs.last(), Some(m), "the images follow the tool results");
    } else {
        assert!(image_msg.is_none(), "images = false sends no image");
        assert!(image.contains("images = false"), "{image}");
    }
    // The editor got the image as today.
    let shown = final_update(&editor, &sid, "i1");
    let types: Vec<&Value> = shown["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["content"]["type"])
        .collect();
    assert!(types.iter().any(|t| *t == "image"), "{types:?}");

    assert!(tool_result(&model, 1, "s1").contains("Light rain"));
    let links = tool_result(&model, 1, "l1");
    assert!(
        links.contains("[resource link: Blob Resource 1 <demo://resource/dynamic/blob/1>")
            && links.contains("demo://resource/dynamic/text/2"),
        "{links}"
    );
    let embedded = tool_result(&model, 1, "e1");
    assert!(
        embedded.contains("<resource uri=\"demo://resource/dynamic/text/4\">")
            && embedded.contains("Resource 4: This is a plaintext resource"),
        "{embedded}"
    );
    let listed = tool_result(&model, 1, "rl");
    assert!(
        listed.contains("Server `ev`:")
            && listed.contains("demo://resource/static/document/")
            && listed.contains("demo://resource/dynamic/text/{resourceId}"),
        "{listed}"
    );
    assert_eq!(first_call(&editor, &sid, "rl")["kind"], "read");
    let read = tool_result(&model, 1, "rr");
    assert!(
        read.contains("Resource 7: This is a plaintext resource"),
        "{read}"
    );
    let bad = tool_result(&model, 1, "rb");
    assert!(
        bad.contains("no MCP server named \"nope\"") && bad.contains("ev"),
        "{bad}"
    );
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn rich_results_and_resources_over_stdio() {
    let path = everything();
    rich_results_and_resources(stdio_everything(&path), true).await;
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn rich_results_and_resources_over_streamable_http_without_images() {
    let (_server, url) = http_everything().await;
    rich_results_and_resources(
        json!([{"type": "http", "name": "ev", "url": url, "headers": []}]),
        false,
    )
    .await;
}

/// The last `available_commands_update` of a session.
fn commands(editor: &FakeEditor, sid: &str) -> Vec<Value> {
    editor
        .updates_of_kind(sid, "available_commands_update")
        .last()
        .map(|u| u["availableCommands"].as_array().unwrap().clone())
        .unwrap_or_default()
}

/// Item 4: prompts are slash commands; running one sends its messages; a
/// missing required argument is told to the user and the session goes on.
#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn prompts_are_slash_commands() {
    let path = everything();
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let (editor, _log) = agent(&model, home.path(), "").await;
    let sid = session(&editor, ws.path(), &[], stdio_everything(&path)).await;
    editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "available_commands_update")
        .await;
    let list = commands(&editor, &sid);
    let args = list
        .iter()
        .find(|c| c["name"] == "ev.args-prompt")
        .unwrap_or_else(|| panic!("no /ev.args-prompt in {list:?}"));
    assert_eq!(args["input"]["hint"], "city=… [state=…]");
    assert!(list.iter().any(|c| c["name"] == "ev.simple-prompt"));

    model.push(Reply::text("sunny"));
    editor
        .prompt(&sid, "/ev.args-prompt city=New York state=NY")
        .await;
    let sent = messages(&model, 0);
    let user = sent.iter().rfind(|m| m["role"] == "user").unwrap();
    assert!(
        user.to_string().contains("What's weather in New York, NY?"),
        "{user}"
    );

    // A missing required argument: the user is told, the model is not called.
    let before = model.chat_requests().len();
    let r = editor.prompt(&sid, "/ev.args-prompt state=NY").await;
    assert_eq!(r["stopReason"], "end_turn");
    assert_eq!(model.chat_requests().len(), before);
    assert!(
        editor
            .agent_text(&sid)
            .contains("missing required argument city"),
        "{}",
        editor.agent_text(&sid)
    );
    // The session still works.
    model.push(Reply::text("still here"));
    editor.prompt(&sid, "/ev.simple-prompt").await;
    assert!(messages(&model, before).iter().any(|m| {
        m.to_string()
            .contains("This is a simple prompt without arguments.")
    }),);
}

/// Bad input from a server: progress for a token of nobody, a 1 MB progress
/// message and a 1 MB log line are dropped or cut; the call and the session
/// go on.
#[tokio::test]
async fn hostile_notifications_leave_the_session_working() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let home = tempfile::tempdir().unwrap();
    let (editor, log) = agent(&model, home.path(), "").await;
    let sid = session(&editor, ws.path(), &[], json!([stdio("srv", &[])])).await;
    editor.set_default_permission(Some(PermissionDecision::AllowOnce));
    let noisy = Reply::tool_call("n1", "mcp__srv__noisy", json!({}));
    let echo = Reply::tool_call("n2", "mcp__srv__echo", json!({"text": "alive"}));
    run_turn(&editor, &model, &sid, [noisy, echo]).await;
    assert_eq!(tool_result(&model, 1, "n1"), "noisy done");
    assert_eq!(tool_result(&model, 2, "n2"), "alive");
    for u in editor.updates_of_kind(&sid, "tool_call_update") {
        assert!(u.to_string().len() < 10_000, "an update carried the flood");
    }
    let last = final_update(&editor, &sid, "n1");
    assert_eq!(last["content"][0]["content"]["text"], "noisy done");
    let text = wait_log(&log, "bytes in all").await;
    assert!(text.contains("belongs to no running call"));
    if let Some(l) = text.lines().find(|l| l.len() >= 10_000) {
        panic!("a log line carried the flood: {}", &l[..300]);
    }
}
