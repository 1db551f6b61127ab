//! Credentials: a remote endpoint without a key is refused up front with a
//! message naming the variable; a loopback endpoint needs no key.

use super::common::spawn;
use crate::support::{FakeModel, Reply, Workspace, full_capabilities};
use serde_json::json;

/// An endpoint that must never be contacted (`.invalid` never resolves).
const REMOTE: &str = "https://api.example.invalid/v1";

#[tokio::test]
async fn no_key_for_a_remote_endpoint_is_auth_required() {
    let model = FakeModel::start().await;
    let editor = spawn(
        &model,
        &[("OPENAI_BASE_URL", REMOTE), ("OPENAI_API_KEY", "")],
    );
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["authMethods"][0]["id"], "openai-api-key");
    let ws = Workspace::new();

    let err = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .expect_err("session/new needs a key");
    assert_eq!(err.code, -32000, "{err}");
    assert!(err.message.contains("OPENAI_API_KEY"), "{err}");
    assert!(err.message.contains(REMOTE), "names the endpoint: {err}");

    let err = editor
        .request("authenticate", json!({"methodId": "openai-api-key"}))
        .await
        .expect_err("authenticate cannot conjure a key");
    assert_eq!(err.code, -32000, "{err}");
    assert!(err.message.contains("OPENAI_API_KEY"), "{err}");

    let err = editor
        .request("authenticate", json!({"methodId": "password"}))
        .await
        .expect_err("unknown auth method");
    assert_eq!(err.code, -32602, "{err}");
    assert!(err.message.contains("params.methodId"), "{err}");

    // Still refused after authenticate; nothing was ever sent anywhere.
    let err = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .expect_err("still no key");
    assert_eq!(err.code, -32000);
    assert!(model.requests().is_empty());
}

#[tokio::test]
async fn a_loopback_endpoint_needs_no_key() {
    let model = FakeModel::start().await;
    model.push(Reply::text("keyless hello"));
    let editor = spawn(&model, &[("OPENAI_API_KEY", "")]);
    editor.initialize(full_capabilities()).await;
    let result = editor
        .request("authenticate", json!({"methodId": "openai-api-key"}))
        .await
        .unwrap_or_else(|e| editor.fail(&format!("authenticate failed: {e}")));
    assert_eq!(result, json!({}));
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    assert_eq!(editor.prompt(&sid, "hi").await["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(&sid), "keyless hello");
    let requests = model.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("authorization"),
        None,
        "no Authorization header without a key"
    );
}

#[tokio::test]
async fn a_configured_key_is_sent_as_a_bearer_token() {
    let model = FakeModel::start().await;
    model.push(Reply::text("ok"));
    let editor = spawn(&model, &[("OPENAI_API_KEY", "sk-local-abc")]);
    editor.initialize(full_capabilities()).await;
    assert_eq!(
        editor
            .request("authenticate", json!({"methodId": "openai-api-key"}))
            .await
            .expect("authenticate"),
        json!({})
    );
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    editor.prompt(&sid, "hi").await;
    assert_eq!(
        model.chat_requests()[0].header("authorization"),
        Some("Bearer sk-local-abc")
    );
}
