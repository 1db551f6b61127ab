//! MCP servers' elicitations relayed to the editor (issue 18 item 3),
//! against the reference server `@modelcontextprotocol/server-everything`
//! (its `trigger-elicitation-request` and `trigger-url-elicitation` tools):
//! relayed as ACP `elicitation/create` of the same mode when the editor
//! advertises it, the user's answer returned unchanged; without the
//! capability nothing is advertised to the server and nothing reaches the
//! editor.

use super::mcp_common::everything;
use crate::support::{FakeEditor, FakeModel, Reply, Workspace, full_capabilities};
use serde_json::{Value, json};

/// A full-auto session with the reference server, the editor advertising
/// these `elicitation` capabilities (none: `None`).
async fn session(
    model: &FakeModel,
    elicitation: Option<Value>,
    ws: &Workspace,
) -> (FakeEditor, String) {
    let path = everything();
    let mut caps = full_capabilities();
    if let Some(e) = elicitation {
        caps["elicitation"] = e;
    }
    let editor = FakeEditor::spawn(&[], model.agent_env());
    editor.initialize(caps).await;
    let result = editor
        .request(
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [
                {"name": "everything", "command": "node", "args": [path, "stdio"], "env": []}
            ]}),
        )
        .await
        .unwrap_or_else(|e| editor.fail(&format!("session/new failed: {e}")));
    let sid = result["sessionId"].as_str().unwrap().to_owned();
    editor.set_mode(&sid, "full-auto").await;
    (editor, sid)
}

fn tool_result(model: &FakeModel, call_id: &str) -> String {
    model
        .tool_result_for(call_id)
        .unwrap_or_else(|| panic!("no tool result for {call_id}"))
}

fn elicitations(editor: &FakeEditor) -> Vec<Value> {
    editor
        .reverse_requests()
        .into_iter()
        .filter(|r| r["method"] == "elicitation/create")
        .collect()
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn form_and_url_elicitations_reach_the_editor_and_answers_go_back() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid) = session(&model, Some(json!({"form": {}, "url": {}})), &ws).await;
    editor.push_elicitation_answer(Some(json!({
        "action": "accept",
        "content": {"name": "Ada", "check": true, "integer": 7}
    })));
    editor.push_elicitation_answer(Some(json!({"action": "accept"})));
    model.push(Reply::tool_call(
        "f1",
        "mcp__everything__trigger-elicitation-request",
        json!({}),
    ));
    model.push(Reply::tool_call(
        "u1",
        "mcp__everything__trigger-url-elicitation",
        json!({"url": "https://example.com/authorize?x=1", "elicitationId": "el-42"}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;

    let form = tool_result(&model, "f1");
    assert!(form.contains("Name: Ada"), "{form}");
    assert!(form.contains("Favorite Integer: 7"), "{form}");
    let url = tool_result(&model, "u1");
    assert!(url.contains("User completed the URL elicitation"), "{url}");

    let asked = elicitations(&editor);
    assert_eq!(asked.len(), 2, "{asked:?}");
    let f = &asked[0]["params"];
    assert_eq!(f["mode"], "form");
    assert_eq!(f["sessionId"], sid.as_str());
    assert!(
        f["message"].as_str().unwrap().starts_with("everything: "),
        "{f}"
    );
    assert_eq!(f["requestedSchema"]["type"], "object");
    assert_eq!(f["requestedSchema"]["properties"]["name"]["type"], "string");
    let u = &asked[1]["params"];
    assert_eq!(u["mode"], "url");
    assert_eq!(u["url"], "https://example.com/authorize?x=1");
    assert_eq!(u["elicitationId"], "el-42");
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn a_declined_form_is_declined_for_the_server() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid) = session(&model, Some(json!({"form": {}})), &ws).await;
    // No answer queued: the fake editor declines.
    model.push(Reply::tool_call(
        "f1",
        "mcp__everything__trigger-elicitation-request",
        json!({}),
    ));
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    assert!(tool_result(&model, "f1").contains("declined"));
    // Only form mode was advertised: the server offers no URL tool.
    let tools = model.chat_requests()[0].tool_names();
    assert!(
        !tools.iter().any(|t| t.contains("trigger-url-elicitation")),
        "{tools:?}"
    );
}

#[tokio::test]
#[ignore = "needs the MCP reference servers from npm/PyPI; scripts/test.sh installs them and runs the ignored tests"]
async fn without_the_capability_the_server_is_told_nothing_and_the_editor_asked_nothing() {
    let model = FakeModel::start().await;
    let ws = Workspace::new();
    let (editor, sid) = session(&model, None, &ws).await;
    model.push(Reply::text("done"));
    editor.prompt(&sid, "go").await;
    let tools = model.chat_requests()[0].tool_names();
    assert!(
        tools.iter().any(|t| t == "mcp__everything__echo"),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.contains("elicitation")),
        "{tools:?}"
    );
    assert!(elicitations(&editor).is_empty());
}
