//! Editor-configured model providers (unstable `providers/list|set|disable`,
//! `agentCapabilities.providers`; issue 17 item 5). Every frame is checked
//! against the schema crate's `unstable_llm_providers` types.
use std::path::Path;

use serde_json::{Value, json};

use super::common::spawn;
use crate::support::{FakeModel, Reply, Workspace, config_option, full_capabilities};

const SECRET: &str = "sk-editor-SECRET-0123456789";

fn set_params(model: &FakeModel) -> Value {
    json!({
        "providerId": "main",
        "apiType": "openai",
        "baseUrl": model.base_url(),
        "headers": {"Authorization": format!("Bearer {SECRET}"), "X-Route": "eu-1"}
    })
}

/// Every file under `dir` whose bytes contain `needle`.
fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p)
                && String::from_utf8_lossy(&bytes).contains(needle)
            {
                out.push(p.display().to_string());
            }
        }
    }
    out
}

#[tokio::test]
async fn set_routes_new_requests_and_never_shows_the_key() {
    let configured = FakeModel::start().await;
    let gateway = FakeModel::start().await;
    gateway.set_models(&["gw-large", "gw-small"]);
    let mut editor = spawn(&configured, &[("RUST_LOG", "trace")]);
    let init = editor.initialize(full_capabilities()).await;
    assert_eq!(init["agentCapabilities"]["providers"], json!({}));

    let list = editor.request("providers/list", json!({})).await.unwrap();
    assert_eq!(
        list,
        json!({"providers": [{"providerId": "main", "supported": ["openai"], "required": false,
            "current": {"apiType": "openai", "baseUrl": configured.base_url()}}]})
    );

    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    configured.push(Reply::text("from the configured endpoint"));
    editor.prompt(&sid, "one").await;

    let before = editor.message_count();
    let set = editor
        .request("providers/set", set_params(&gateway))
        .await
        .unwrap_or_else(|e| editor.fail(&format!("providers/set failed: {e}")));
    assert_eq!(set, json!({}));
    // The model option follows the new endpoint's models at once.
    let update = editor
        .wait_for_after(before, |m| {
            m["params"]["update"]["sessionUpdate"] == "config_option_update"
        })
        .await;
    let model_opt = config_option(&update["params"]["update"], "model");
    assert_eq!(model_opt["currentValue"], "gw-large");
    let values: Vec<&str> = model_opt["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["gw-large", "gw-small"]);

    // The next request goes to the gateway, with the editor's headers only.
    gateway.push(Reply::text(&format!("you said your key is {SECRET}.")));
    editor.prompt(&sid, "two").await;
    let sent = gateway.chat_requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Bearer {SECRET}").as_str())
    );
    assert_eq!(sent[0].header("x-route"), Some("eu-1"));
    assert_eq!(sent[0].body["model"], "gw-large");
    assert_eq!(
        configured.chat_requests().len(),
        1,
        "nothing more to the old endpoint"
    );
    // The configured key is not sent to the editor's endpoint.
    assert!(!sent[0].raw_body.contains("test-key"));

    // Never echoed: not in the answer shown, not in any frame, not in list.
    let text = editor.agent_text(&sid);
    assert!(text.contains("[redacted]"), "{text}");
    let list = editor.request("providers/list", json!({})).await.unwrap();
    assert_eq!(
        list["providers"][0]["current"]["baseUrl"],
        gateway.base_url()
    );
    assert!(
        !list.to_string().contains("eu-1"),
        "no header in the list: {list}"
    );
    for line in editor.raw_lines() {
        assert!(!line.contains(SECRET), "the agent sent the key: {line}");
    }
    // Never written: not in the log, the session log or anywhere else.
    editor.close_stdin().await;
    editor.wait_exit(std::time::Duration::from_secs(20)).await;
    let home = editor.home().unwrap();
    assert_eq!(files_containing(home, SECRET), Vec::<String>::new());
}

#[tokio::test]
async fn disable_answers_auth_required_until_set_again() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;

    let done = editor
        .request("providers/disable", json!({"providerId": "main"}))
        .await
        .unwrap();
    assert_eq!(done, json!({}));
    let list = editor.request("providers/list", json!({})).await.unwrap();
    assert!(list["providers"][0]["current"].is_null(), "{list}");
    assert_eq!(list["providers"][0]["providerId"], "main");

    let err = editor
        .request("session/new", json!({"cwd": ws.path(), "mcpServers": []}))
        .await
        .expect_err("a disabled provider is not used");
    assert_eq!(err.code, -32000, "{err}");
    assert!(err.message.contains("providers/set"), "{err}");
    let err = editor
        .request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
        )
        .await
        .expect_err("no model call while disabled");
    assert_eq!(err.code, -32000, "{err}");
    let err = editor
        .request("authenticate", json!({"methodId": "openai-api-key"}))
        .await
        .expect_err("authenticate does not re-enable it");
    assert_eq!(err.code, -32000, "{err}");
    assert!(model.chat_requests().is_empty());

    // Unknown ids are a no-op (the RFD: idempotent).
    let other = editor
        .request("providers/disable", json!({"providerId": "nope"}))
        .await
        .unwrap();
    assert_eq!(other, json!({}));

    let params = json!({"providerId": "main", "apiType": "openai", "baseUrl": model.base_url()});
    editor.request("providers/set", params).await.unwrap();
    model.push(Reply::text("back"));
    assert_eq!(editor.prompt(&sid, "again").await["stopReason"], "end_turn");
    assert_eq!(editor.agent_text(&sid), "back");
    // No headers given: no Authorization, not even the configured key.
    assert_eq!(model.chat_requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn set_rejects_what_it_cannot_route_naming_the_field() {
    let model = FakeModel::start().await;
    let editor = spawn(&model, &[]);
    editor.initialize(full_capabilities()).await;
    let base = model.base_url();
    let cases = [
        (
            json!({"providerId": "openai", "apiType": "openai", "baseUrl": base}),
            "providerId",
        ),
        (
            json!({"providerId": "main", "apiType": "anthropic", "baseUrl": base}),
            "apiType",
        ),
        (
            json!({"providerId": "main", "apiType": "openai", "baseUrl": "file:///etc"}),
            "baseUrl",
        ),
        (
            json!({"providerId": "main", "apiType": "openai", "baseUrl": base,
                "headers": {"X-Api-Key": format!("{SECRET}\r\nHost: evil")}}),
            "headers",
        ),
    ];
    for (params, field) in cases {
        let err = editor
            .request("providers/set", params)
            .await
            .expect_err("invalid");
        assert_eq!(err.code, -32602, "{err}");
        assert!(err.message.contains(field), "{err}");
        assert!(!err.message.contains(SECRET), "{err}");
    }
    // Nothing changed.
    let list = editor.request("providers/list", json!({})).await.unwrap();
    assert_eq!(list["providers"][0]["current"]["baseUrl"], base);
    for line in editor.raw_lines() {
        assert!(!line.contains(SECRET), "{line}");
    }
}
