//! What editors ship now (schema 1.20, unstable): `session/set_title`,
//! `session/options` with initial config options on setup requests, and
//! what a strict client (no opt-ins) gets outside a turn. Every frame is
//! schema-checked by the fake editor (`v120::` validators).
use std::path::Path;

use serde_json::{Value, json};

use super::common::write_config;
use crate::support::{
    FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, config_option, full_capabilities,
};

const CONFIG: &str = r#"
[models.fake-model]
reasoning_efforts = ["low", "medium", "high"]
default_reasoning_effort = "medium"
[models.other-model]
name = "Other"
reasoning_efforts = ["low", "high"]
"#;

fn spawn_in(home: &Path, model: &FakeModel) -> FakeEditor {
    FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(home.to_path_buf()),
        ..SpawnOptions::default()
    })
}

async fn started_in(home: &Path, model: &FakeModel) -> FakeEditor {
    let editor = spawn_in(home, model);
    editor.initialize(full_capabilities()).await;
    editor
}

async fn model_with_two() -> FakeModel {
    let model = FakeModel::start().await;
    model.set_models(&["fake-model", "other-model"]);
    model
}

/// Index of the response to `id` among the agent's messages.
fn response_index(messages: &[Value], id: &str) -> usize {
    messages
        .iter()
        .position(|m| m.get("method").is_none() && m["id"] == id)
        .expect("response present")
}

fn listed_title(list: &Value, sid: &str) -> Value {
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["sessionId"] == sid)
        .map(|s| s["title"].clone())
        .unwrap_or_else(|| panic!("{sid} not listed: {list}"))
}

fn current(carrier: &Value, id: &str) -> Value {
    config_option(carrier, id)["currentValue"].clone()
}

#[tokio::test]
async fn both_methods_are_advertised() {
    let model = FakeModel::start().await;
    let editor = super::common::spawn(&model, &[]);
    let init = editor.initialize(full_capabilities()).await;
    let caps = &init["agentCapabilities"]["sessionCapabilities"];
    assert_eq!(caps["title"], json!({}), "{init}");
    assert_eq!(caps["options"], json!({}), "{init}");
}

/// A title set by the client is answered normalized, shown by
/// `session_info_update` after the response, kept over the generated one,
/// listed, and back after a restart on load and resume; a stored session
/// that is not open is retitled too.
#[tokio::test]
async fn a_client_title_is_stored_listed_and_survives_load_and_resume() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model = FakeModel::with_replies([Reply::text("one"), Reply::text("two")]).await;
    let editor = started_in(home.path(), &model).await;
    let sid = editor.new_session(ws.path()).await;
    editor.prompt(&sid, "the first prompt names it").await;
    let generated = editor.updates_of_kind(&sid, "session_info_update");
    assert_eq!(generated.len(), 1, "{generated:?}");
    assert_eq!(generated[0]["title"], "the first prompt names it");

    let result = editor
        .request_with_id(
            "retitle",
            "session/set_title",
            json!({"sessionId": sid, "title": "  Fix the\n build  "}),
        )
        .await
        .unwrap();
    assert_eq!(result, json!({"title": "Fix the build"}));
    let info = editor
        .wait_for_update(&sid, |u| {
            u["sessionUpdate"] == "session_info_update" && u["title"] == "Fix the build"
        })
        .await;
    assert!(info["updatedAt"].is_string());
    let messages = editor.messages();
    let answered = response_index(&messages, "retitle");
    let told = messages
        .iter()
        .position(|m| m["params"]["update"]["title"] == "Fix the build")
        .unwrap();
    assert!(told > answered, "the update follows the response");

    // A later turn does not generate another title.
    editor.prompt(&sid, "something else entirely").await;
    assert_eq!(editor.updates_of_kind(&sid, "session_info_update").len(), 2);
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(listed_title(&list, &sid), "Fix the build");

    // Refused: an empty title, an unknown session.
    let empty = editor
        .request(
            "session/set_title",
            json!({"sessionId": sid, "title": " \n\t "}),
        )
        .await
        .unwrap_err();
    assert_eq!(empty.code, -32602, "{empty:?}");
    let unknown = editor
        .request(
            "session/set_title",
            json!({"sessionId": "sess_nope", "title": "x"}),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32002, "{unknown:?}");
    editor.assert_no_errors();
    editor.shut_down().await;

    // A restart: the title is listed and comes back on load.
    let editor = started_in(home.path(), &model).await;
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(listed_title(&list, &sid), "Fix the build");
    // Retitled while not open on this connection.
    let result = editor
        .request(
            "session/set_title",
            json!({"sessionId": sid, "title": "Stored title"}),
        )
        .await
        .unwrap();
    assert_eq!(result["title"], "Stored title");
    assert!(editor.updates_for(&sid).is_empty(), "not open: no update");
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(listed_title(&list, &sid), "Stored title");
    editor.load_session(&sid, ws.path()).await;
    let info = editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "session_info_update")
        .await;
    assert_eq!(info["title"], "Stored title");
    editor.assert_no_errors();
    editor.shut_down().await;

    let editor = started_in(home.path(), &model).await;
    editor.resume_session(&sid, ws.path()).await;
    let info = editor
        .wait_for_update(&sid, |u| u["sessionUpdate"] == "session_info_update")
        .await;
    assert_eq!(info["title"], "Stored title");
    editor.assert_no_errors();
}

/// `session/options` answers what a new session would start with before
/// any exists, and changes nothing: no session, no update.
#[tokio::test]
async fn options_before_any_session_create_nothing() {
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), CONFIG);
    let ws = Workspace::new();
    let model = model_with_two().await;
    let editor = started_in(home.path(), &model).await;
    let options = editor
        .request("session/options", json!({"cwd": ws.path()}))
        .await
        .unwrap();
    assert_eq!(options["modes"]["currentModeId"], "ask", "{options}");
    let ids: Vec<&str> = options["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mode", "model", "reasoning_effort"]);
    assert_eq!(current(&options, "model"), "fake-model");
    assert_eq!(current(&options, "reasoning_effort"), "medium");
    let model_option = config_option(&options, "model");
    let values: Vec<&str> = model_option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["fake-model", "other-model"]);
    // The same as session/new then gives.
    let new = editor.new_session_full(ws.path()).await;
    assert_eq!(new["configOptions"], options["configOptions"]);
    assert_eq!(new["modes"], options["modes"]);
    let sid = new["sessionId"].as_str().unwrap();
    editor
        .request("session/delete", json!({"sessionId": sid}))
        .await
        .unwrap();
    let before = editor.updates().len();
    editor
        .request("session/options", json!({"cwd": ws.path()}))
        .await
        .unwrap();
    assert_eq!(editor.updates().len(), before, "no session/update");
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"], json!([]), "nothing created");
    // A relative cwd and an unknown session are refused.
    let relative = editor
        .request("session/options", json!({"cwd": "rel"}))
        .await
        .unwrap_err();
    assert_eq!(relative.code, -32602);
    let unknown = editor
        .request(
            "session/options",
            json!({"cwd": ws.path(), "sessionId": "sess_nope"}),
        )
        .await
        .unwrap_err();
    assert_eq!(unknown.code, -32002);
    editor.assert_no_errors();
}

/// Initial config options on `session/new` apply in order, silently
/// (no `config_option_update` or `current_mode_update`), ignoring what
/// does not apply; malformed or repeated entries fail the request and
/// leave no session. Model, mode and effort come back on load and resume
/// after a restart, as `session/options` said they would, and initial
/// options on resume apply on top.
#[tokio::test]
async fn initial_options_apply_silently_and_survive_load_and_resume() {
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), CONFIG);
    let ws = Workspace::new();
    let model = model_with_two().await;
    let editor = started_in(home.path(), &model).await;
    let new = editor
        .request_with_id(
            "new-with-options",
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [], "configOptions": [
                {"configId": "mode", "value": "read-only"},
                {"configId": "model", "value": "other-model"},
                // Offered by other-model (applied after it), not by fake-model.
                {"configId": "reasoning_effort", "value": "high"},
                {"configId": "model_speed", "value": "fast"},
                {"configId": "x", "type": "boolean", "value": true, "_meta": {}},
                {"configId": "reasoning_effort_typo", "value": "high"}
            ]}),
        )
        .await
        .unwrap();
    let sid = new["sessionId"].as_str().unwrap().to_owned();
    assert_eq!(new["modes"]["currentModeId"], "read-only");
    assert_eq!(current(&new, "mode"), "read-only");
    assert_eq!(current(&new, "model"), "other-model");
    assert_eq!(current(&new, "reasoning_effort"), "high");
    let kinds: Vec<String> = editor
        .updates_for(&sid)
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["available_commands_update"], "silently");

    // A value not offered is ignored; the rest still applies.
    let ignored = editor
        .request(
            "session/new",
            json!({"cwd": ws.path(), "mcpServers": [], "configOptions": [
                {"configId": "model", "value": "no-such-model"},
                {"configId": "mode", "value": "no-such-mode"},
                {"configId": "reasoning_effort", "value": "low"}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(current(&ignored, "model"), "fake-model");
    assert_eq!(current(&ignored, "mode"), "ask");
    assert_eq!(current(&ignored, "reasoning_effort"), "low");
    let other = ignored["sessionId"].as_str().unwrap().to_owned();

    // Malformed and repeated entries: -32602, no session made.
    for bad in [
        json!([{"configId": "mode", "value": "ask"}, {"configId": "mode", "value": "ask"}]),
        json!([{"configId": "mode", "value": 5}]),
        json!([{"value": "ask"}]),
    ] {
        // Not schema-valid on purpose: sent unchecked.
        let e = editor
            .request_unchecked(
                "session/new",
                json!({"cwd": ws.path(), "mcpServers": [], "configOptions": bad}),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602, "{bad}: {e:?}");
    }
    let list = editor.request("session/list", json!({})).await.unwrap();
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2, "{list}");
    editor.assert_no_errors();
    editor.shut_down().await;

    // After a restart: session/options for the stored session, then load.
    let editor = started_in(home.path(), &model).await;
    let options = editor
        .request(
            "session/options",
            json!({"cwd": ws.path(), "sessionId": sid}),
        )
        .await
        .unwrap();
    assert_eq!(options["modes"]["currentModeId"], "read-only");
    assert_eq!(current(&options, "model"), "other-model");
    assert_eq!(current(&options, "reasoning_effort"), "high");
    let loaded = editor.load_session(&sid, ws.path()).await;
    assert_eq!(loaded["configOptions"], options["configOptions"]);
    assert_eq!(loaded["modes"], options["modes"]);
    // Resume with initial options on top of what was stored.
    let resumed = editor
        .request(
            "session/resume",
            json!({"sessionId": other, "cwd": ws.path(), "configOptions": [
                {"configId": "mode", "value": "accept-edits"}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(current(&resumed, "mode"), "accept-edits");
    assert_eq!(current(&resumed, "reasoning_effort"), "low");
    assert!(
        editor
            .updates_of_kind(&other, "config_option_update")
            .is_empty()
            && editor
                .updates_of_kind(&other, "current_mode_update")
                .is_empty()
    );
    editor.assert_no_errors();
    editor.shut_down().await;

    let editor = started_in(home.path(), &model).await;
    let resumed = editor.resume_session(&other, ws.path()).await;
    assert_eq!(current(&resumed, "mode"), "accept-edits");
    assert_eq!(current(&resumed, "model"), "fake-model");
    assert_eq!(current(&resumed, "reasoning_effort"), "low");
    editor.assert_no_errors();
}

/// `session/fork` takes initial values too, on top of what the fork
/// starts with (the source's choices), and the source keeps its own.
#[tokio::test]
async fn a_fork_takes_initial_options_on_top_of_the_source() {
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), CONFIG);
    let ws = Workspace::new();
    let model = model_with_two().await;
    model.push(Reply::text("hello"));
    let editor = started_in(home.path(), &model).await;
    let sid = editor.new_session(ws.path()).await;
    editor
        .request(
            "session/set_config_option",
            json!({"sessionId": sid, "configId": "model", "value": "other-model"}),
        )
        .await
        .unwrap();
    editor.prompt(&sid, "hi").await;
    let fork = editor
        .request(
            "session/fork",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": [], "configOptions": [
                {"configId": "mode", "value": "full-auto"},
                {"configId": "reasoning_effort", "value": "low"}
            ]}),
        )
        .await
        .unwrap();
    let forked = fork["sessionId"].as_str().unwrap();
    assert_eq!(current(&fork, "mode"), "full-auto");
    assert_eq!(current(&fork, "model"), "other-model");
    assert_eq!(current(&fork, "reasoning_effort"), "low");
    assert!(
        editor
            .updates_of_kind(forked, "current_mode_update")
            .is_empty()
    );
    let source = editor
        .request(
            "session/options",
            json!({"cwd": ws.path(), "sessionId": sid}),
        )
        .await
        .unwrap();
    assert_eq!(current(&source, "mode"), "ask");
    assert_eq!(current(&source, "model"), "other-model");
    editor.assert_no_errors();
}

/// A session another acp-coder process holds (its log has one writer) is
/// not retitled from here, whether this process has it open read-only or
/// not at all: the error names the holder, and the title stays.
#[tokio::test]
async fn a_session_held_elsewhere_is_not_retitled() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model = FakeModel::with_replies([Reply::text("one")]).await;
    let holder = started_in(home.path(), &model).await;
    let sid = holder.new_session(ws.path()).await;
    holder.prompt(&sid, "kept title").await;
    let other = started_in(home.path(), &model).await;
    let refused = other
        .request(
            "session/set_title",
            json!({"sessionId": sid, "title": "Not mine"}),
        )
        .await
        .unwrap_err();
    assert!(
        refused.message.contains("another acp-coder process"),
        "{refused:?}"
    );
    assert_eq!(
        refused.data.as_ref().unwrap()["holderPid"],
        holder.pid().unwrap()
    );
    // Opened read-only here: still refused.
    other.load_session(&sid, ws.path()).await;
    let again = other
        .request(
            "session/set_title",
            json!({"sessionId": sid, "title": "Not mine"}),
        )
        .await
        .unwrap_err();
    assert!(
        again.message.contains("another acp-coder process"),
        "{again:?}"
    );
    let list = other.request("session/list", json!({})).await.unwrap();
    assert_eq!(listed_title(&list, &sid), "kept title");
    other.assert_no_errors();
    holder.assert_no_errors();
}
