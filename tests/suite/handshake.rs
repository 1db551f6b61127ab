//! `initialize` (version negotiation, agent info, capabilities, auth methods)
//! and the shape of `session/new`.

use super::common::{ready, spawn};
use crate::support::{FakeModel, Workspace, assert_json_include, full_capabilities};
use serde_json::{Value, json};

fn init_params(version: u64) -> Value {
    json!({
        "protocolVersion": version,
        "clientCapabilities": full_capabilities(),
        "clientInfo": {"name": "fake-editor", "title": "Fake Editor", "version": "0.0.0"}
    })
}

#[tokio::test]
async fn any_requested_version_is_answered_with_1() {
    let model = FakeModel::start().await;
    for requested in [1u64, 2, 65535] {
        let editor = spawn(&model, &[]);
        let result = editor
            .request("initialize", init_params(requested))
            .await
            .unwrap_or_else(|e| editor.fail(&format!("initialize({requested}) failed: {e}")));
        assert_eq!(
            result["protocolVersion"], 1,
            "asked for {requested}: {result}"
        );
    }
    // Nothing but the handshake happened: the model was never called.
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn initialize_describes_the_agent() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let result = editor.initialize(full_capabilities()).await;
    assert_json_include(
        &result,
        &json!({
            "protocolVersion": 1,
            "agentInfo": {
                "name": "acp-coder",
                "title": "acp-coder",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "agentCapabilities": {
                "loadSession": true,
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "mcpCapabilities": {"http": true, "sse": true, "acp": true},
                "sessionCapabilities": {
                    "close": {}, "list": {}, "delete": {}, "resume": {}, "additionalDirectories": {}
                },
                "providers": {},
            },
        }),
    );
    let methods = result["authMethods"].as_array().expect("authMethods array");
    assert_eq!(methods.len(), 1, "{result}");
    let method = &methods[0];
    assert_eq!(method["id"], "openai-api-key");
    assert!(
        method.get("type").is_none(),
        "an agent-type auth method carries no type: {method}"
    );
    assert!(method["name"].as_str().is_some_and(|n| !n.is_empty()));
    let description = method["description"].as_str().unwrap_or_default();
    assert!(
        description.contains("OPENAI_API_KEY"),
        "the auth method says what to set: {description}"
    );
    // Capabilities are exactly what the agent implements.
    let session_caps = result["agentCapabilities"]["sessionCapabilities"]
        .as_object()
        .expect("sessionCapabilities object");
    let mut keys: Vec<&String> = session_caps.keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "additionalDirectories",
            "close",
            "delete",
            "fork",
            "list",
            "options",
            "resume",
            "title"
        ],
        "{result}"
    );
    assert_eq!(
        result["agentCapabilities"]["auth"],
        json!({"logout": {}}),
        "{result}"
    );
}

#[tokio::test]
async fn initialize_works_with_minimal_params_and_without_capabilities() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let result = editor
        .request("initialize", json!({"protocolVersion": 1}))
        .await
        .unwrap_or_else(|e| editor.fail(&format!("initialize failed: {e}")));
    assert_eq!(result["protocolVersion"], 1);
    // A session and a turn still work (files would go to disk, not the editor).
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    model.push(crate::support::Reply::text("ok"));
    let r = editor.prompt(&sid, "hi").await;
    assert_eq!(r["stopReason"], "end_turn");
    assert!(editor.reverse_requests().is_empty());
}

#[tokio::test]
async fn new_session_returns_modes_and_the_mode_option() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    let editor = &r.editor;
    let result = editor.new_session_full(r.ws.path()).await;
    let sid = result["sessionId"].as_str().expect("sessionId");
    assert!(!sid.is_empty());
    assert_ne!(sid, r.sid, "session ids are unique");
    let ids = ["read-only", "plan", "ask", "accept-edits", "full-auto"];
    assert_eq!(result["modes"]["currentModeId"], "ask");
    let modes: Vec<&str> = result["modes"]["availableModes"]
        .as_array()
        .expect("availableModes")
        .iter()
        .map(|m| m["id"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(modes, ids);
    let options = result["configOptions"].as_array().expect("configOptions");
    // mode first, then model (issue 5); no reasoning effort without config.
    assert_eq!(options.len(), 2, "{result}");
    assert_json_include(
        &options[1],
        &json!({"id": "model", "type": "select", "category": "model", "currentValue": "fake-model"}),
    );
    assert_json_include(
        &options[0],
        &json!({"id": "mode", "type": "select", "currentValue": "ask"}),
    );
    let values: Vec<&str> = options[0]["options"]
        .as_array()
        .expect("select options")
        .iter()
        .map(|o| o["value"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(values, ids);
}

/// Schema 1.14: `initialize` may be repeated before any other request;
/// each is answered, with the same result, and the connection goes on.
#[tokio::test]
async fn initialize_may_be_repeated_before_any_other_request() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    let mut results = Vec::new();
    for _ in 0..3 {
        let result = editor
            .request("initialize", init_params(1))
            .await
            .unwrap_or_else(|e| editor.fail(&format!("a repeated initialize failed: {e}")));
        results.push(result);
    }
    assert_eq!(results[0], results[1]);
    assert_eq!(results[1], results[2]);
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    model.push(crate::support::Reply::text("ok"));
    assert_eq!(editor.prompt(&sid, "hi").await["stopReason"], "end_turn");
}

/// Schema 1.14: clients ignore config options of a type they do not know,
/// so the agent sends only the two types the schema has (`select`,
/// `boolean`). An initial config option of a type the agent does not know
/// is read as the schema's crate reads it (a string payload is a value id)
/// and ignored when it does not apply, never refused.
#[tokio::test]
async fn config_options_of_an_unknown_type_are_ignored_and_never_sent() {
    let model = FakeModel::start().await;
    let r = ready(&model).await;
    let result = r
        .editor
        .request(
            "session/new",
            json!({"cwd": r.ws.path(), "mcpServers": [], "configOptions": [
                {"configId": "reasoning_effort", "type": "color", "value": "red"},
                {"configId": "model", "type": "_future", "value": "no-such-model"},
                {"configId": "mode", "type": "_future", "value": "read-only"}
            ]}),
        )
        .await
        .unwrap_or_else(|e| r.editor.fail(&format!("unknown types were refused: {e}")));
    let options = result["configOptions"].as_array().expect("configOptions");
    let current =
        |id: &str| options.iter().find(|o| o["id"] == id).unwrap()["currentValue"].clone();
    assert_eq!(current("mode"), "read-only", "{result}");
    assert_eq!(current("model"), "fake-model", "{result}");
    assert!(options.iter().all(|o| o["id"] != "reasoning_effort"));
    for option in options {
        assert!(
            option["type"] == "select" || option["type"] == "boolean",
            "{option}"
        );
    }
}
