//! Prompt content (issue 5): images, embedded resources, resource links read
//! through the editor; usage with cost; the reasoning-effort option.
use std::time::Duration;

use serde_json::json;

use crate::support::{
    FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, full_capabilities, no_capabilities,
};

async fn shut_down(mut editor: FakeEditor) {
    editor.close_stdin().await;
    assert!(editor.wait_exit(Duration::from_secs(5)).await.success());
}

#[tokio::test]
async fn images_resources_and_links_reach_the_model() {
    let ws = Workspace::builder().file("src/lib.rs", "on disk\n").build();
    let model = FakeModel::with_replies([Reply::text("seen")]).await;
    let editor = FakeEditor::spawn(&[], model.agent_env());
    editor.initialize(full_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    // An unsaved buffer: the link must be read through the editor.
    editor.open_buffer(ws.join("src/lib.rs"), "unsaved buffer text\n");
    let link = format!("file://{}", ws.join("src/lib.rs").display());
    let blocks = vec![
        json!({"type": "text", "text": "Look at these"}),
        json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
        json!({"type": "resource", "resource": {"uri": "file:///proj/notes.md", "text": "embedded notes", "mimeType": "text/markdown"}}),
        json!({"type": "resource_link", "uri": link, "name": "lib.rs"}),
    ];
    let result = editor.prompt_blocks(&sid, blocks).await;
    assert_eq!(result["stopReason"], "end_turn");
    let req = model.chat_requests()[0].clone();
    let content = req.last_message().unwrap()["content"]
        .as_array()
        .expect("multi-part user content")
        .clone();
    assert_eq!(content[0], json!({"type": "text", "text": "Look at these"}));
    assert_eq!(
        content[1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgo="
    );
    let text = content[2]["text"].as_str().unwrap();
    assert!(
        text.contains("<context source=\"/proj/notes.md\">\nembedded notes\n</context>"),
        "{text}"
    );
    assert!(text.contains("unsaved buffer text"), "{text}");
    assert!(!text.contains("on disk"), "{text}");
    assert!(
        editor.reads().iter().any(|r| r.from_buffer),
        "read through fs/read_text_file"
    );
    shut_down(editor).await;
}

#[tokio::test]
async fn usage_reports_cost_and_reasoning_effort_is_an_option() {
    let home = tempfile::tempdir().unwrap();
    let cfg = home.path().join(".config/acp-coder");
    std::fs::create_dir_all(&cfg).unwrap();
    std::fs::write(
        cfg.join("config.toml"),
        r#"
context_window = 100000
[models.fake-model]
name = "Fake Model"
context_window = 50000
reasoning_efforts = ["low", "medium", "high"]
default_reasoning_effort = "medium"
input_cost_per_mtok = 2.0
output_cost_per_mtok = 8.0
"#,
    )
    .unwrap();
    let ws = Workspace::new();
    let model = FakeModel::with_replies([Reply::text("hi").with_usage(1000, 500)]).await;
    let editor = FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(home.path().to_path_buf()),
        ..SpawnOptions::default()
    });
    editor.initialize(no_capabilities()).await;
    let new = editor.new_session_full(ws.path()).await;
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    let options = new["configOptions"].as_array().unwrap();
    let effort = options
        .iter()
        .find(|o| o["id"] == "reasoning_effort")
        .expect("effort option");
    assert_eq!(effort["category"], "thought_level");
    assert_eq!(effort["currentValue"], "medium");
    let model_opt = options.iter().find(|o| o["id"] == "model").unwrap();
    assert_eq!(model_opt["options"][0]["name"], "Fake Model");
    editor.prompt(&sid, "hello").await;
    assert_eq!(model.chat_requests()[0].body["reasoning_effort"], "medium");
    let usage = editor
        .updates_of_kind(&sid, "usage_update")
        .last()
        .unwrap()
        .clone();
    assert_eq!(usage["used"], 1500);
    assert_eq!(usage["size"], 50000);
    // 1000 × $2/M + 500 × $8/M = $0.006
    assert_eq!(usage["cost"], json!({"amount": 0.006, "currency": "USD"}));
    editor
        .request(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "reasoning_effort", "value": "high"}),
        )
        .await
        .unwrap();
    model.push(Reply::text("again"));
    editor.prompt(&sid, "again").await;
    assert_eq!(model.chat_requests()[1].body["reasoning_effort"], "high");
    editor.prompt(&sid, "/status").await;
    let text = editor.agent_text(&sid);
    assert!(
        text.contains("Reasoning effort**: high") && text.contains("Cost this session**: $0.0"),
        "{text}"
    );
    shut_down(editor).await;
}
