//! Session logs (issue 14): one writer per log, and loading always yields a
//! conversation strict endpoints accept, whatever shape the log is in.
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, no_capabilities};

fn spawn_in(home: &Path, model: &FakeModel) -> FakeEditor {
    FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(home.to_path_buf()),
        ..SpawnOptions::default()
    })
}

async fn load(editor: &FakeEditor, sid: &str, cwd: &Path) -> Result<Value, String> {
    editor
        .request(
            "session/load",
            json!({"sessionId": sid, "cwd": cwd, "mcpServers": []}),
        )
        .await
        .map_err(|e| format!("{} {}", e.code, e.message))
}

fn sessions_dir(home: &Path) -> std::path::PathBuf {
    home.join(".local/share/acp-coder/sessions")
}

#[tokio::test]
async fn a_session_open_in_one_process_is_refused_to_another_until_released() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let model = FakeModel::start().await;
    let a = spawn_in(home.path(), &model);
    a.initialize(no_capabilities()).await;
    let sid = a.new_session(ws.path()).await;
    model.push(Reply::text("one"));
    a.prompt(&sid, "first").await;

    // A second process may open it read-only (sessions::a_session_open_in_
    // another_process_opens_read_only), but never delete it.
    let b = spawn_in(home.path(), &model);
    b.initialize(no_capabilities()).await;
    b.request("session/delete", json!({"sessionId": sid}))
        .await
        .expect_err("delete is refused while A holds it");
    assert!(
        sessions_dir(home.path())
            .join(format!("{sid}.jsonl"))
            .is_file()
    );

    // A keeps writing; it reloading its own session is fine.
    load(&a, &sid, ws.path()).await.expect("A's own session");
    model.push(Reply::text("two"));
    a.prompt(&sid, "second").await;

    // A closes it: B may load it and becomes the writer.
    a.request("session/close", json!({"sessionId": sid}))
        .await
        .expect("close");
    load(&b, &sid, ws.path()).await.expect("released by close");
    // A may still open it, read-only, while B holds it.
    load(&a, &sid, ws.path())
        .await
        .expect("read-only while B holds it");
    model.push(Reply::text("three"));
    b.prompt(&sid, "third").await;

    // B dies without closing anything: the kernel releases its lock.
    let mut b = b;
    b.kill().await;
    load(&a, &sid, ws.path())
        .await
        .expect("released by the holder's death");
    model.push(Reply::text("four"));
    a.prompt(&sid, "fourth").await;

    // One writer at a time: every record is whole, the prompts in order.
    let log =
        std::fs::read_to_string(sessions_dir(home.path()).join(format!("{sid}.jsonl"))).unwrap();
    let records: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let prompts: Vec<&str> = records
        .iter()
        .filter(|r| r["t"] == "user")
        .filter_map(|r| r["prompt"][0]["text"].as_str())
        .collect();
    assert_eq!(prompts, ["first", "second", "third", "fourth"]);
    let mut a = a;
    a.close_stdin().await;
    a.wait_exit(Duration::from_secs(5)).await;
}

const META: &str = r#"{"t":"meta","v":1,"cwd":"CWD","created_at":"2026-01-01T00:00:00Z"}"#;

fn user(text: &str) -> String {
    json!({"t":"user","prompt":[{"type":"text","text":text}],
        "message":{"role":"user","parts":[{"type":"text","text":text}]}})
    .to_string()
}

fn assistant(text: &str, calls: &[&str]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|id| json!({"id": id, "name": "read_file", "arguments": "{\"path\":\"a\"}"}))
        .collect();
    json!({"t":"assistant","text":text,"tool_calls":calls}).to_string()
}

fn result(id: &str) -> String {
    json!({"t":"tool_result","tool_call_id":id,"content":format!("result of {id}")}).to_string()
}

/// Every shape of damage a log can have: crashes, torn and garbage lines,
/// two writers, hand edits.
fn damaged_logs() -> Vec<(&'static str, Vec<u8>)> {
    let lines = |ls: Vec<String>| {
        let mut text = ls.join("\n");
        text.push('\n');
        text.into_bytes()
    };
    let m = || META.to_owned();
    let mut torn = lines(vec![m(), user("hi"), assistant("", &["c1"]), result("c1")]);
    torn.extend_from_slice(br#"{"t":"assistant","text":"half","tool_calls":[{"id":"c2","na"#);
    let cut_assistant = assistant("", &["c1", "c2"]);
    let mut non_utf8 = lines(vec![m(), user("hi")]);
    non_utf8.extend_from_slice(b"\xff\xfe\x00garbage\n");
    non_utf8.extend(lines(vec![assistant("", &["c1"]), result("c1")]));
    vec![
        ("empty", Vec::new()),
        ("only_meta", lines(vec![m()])),
        ("only_whitespace", b"\n\n  \n".to_vec()),
        ("torn_last_line", torn),
        (
            "garbage_mid_file",
            lines(vec![
                m(),
                user("hi"),
                "{{not json".into(),
                assistant("", &["c1"]),
                result("c1"),
            ]),
        ),
        (
            "damaged_assistant_mid_file",
            lines(vec![
                m(),
                user("hi"),
                cut_assistant[..cut_assistant.len() - 20].to_owned(),
                result("c1"),
                result("c2"),
                user("again"),
                assistant("answer", &[]),
            ]),
        ),
        (
            "assistant_without_its_tool_calls",
            lines(vec![
                m(),
                user("hi"),
                json!({"t":"assistant","text":"let me look"}).to_string(),
                result("c1"),
            ]),
        ),
        (
            "duplicate_call_ids",
            lines(vec![
                m(),
                user("hi"),
                assistant("", &["c1", "c1"]),
                result("c1"),
                user("again"),
                assistant("", &["c1"]),
                result("c1"),
            ]),
        ),
        (
            "results_before_calls",
            lines(vec![m(), user("hi"), result("c1"), assistant("", &["c1"])]),
        ),
        (
            "calls_without_results",
            lines(vec![
                m(),
                user("hi"),
                assistant("", &["c1", "c2"]),
                result("c2"),
                user("again"),
            ]),
        ),
        (
            "duplicate_and_foreign_results",
            lines(vec![
                m(),
                user("hi"),
                assistant("", &["c1"]),
                result("c1"),
                result("c1"),
                result("c9"),
            ]),
        ),
        (
            "two_writers_interleaved",
            lines(vec![
                m(),
                user("from A"),
                user("from B"),
                assistant("", &["a1"]),
                assistant("", &["b1"]),
                result("a1"),
                result("b1"),
            ]),
        ),
        (
            "result_after_a_later_prompt",
            lines(vec![
                m(),
                user("hi"),
                assistant("", &["c1"]),
                user("again"),
                result("c1"),
            ]),
        ),
        (
            "broken_compaction",
            lines(vec![
                m(),
                user("hi"),
                json!({"t":"compaction","history":[
                    {"role":"tool","tool_call_id":"zz","content":"x"},
                    {"role":"assistant","text":"","tool_calls":[{"id":"k1","name":"read_file","arguments":"{}"}]}
                ]})
                .to_string(),
            ]),
        ),
        ("non_utf8_line", non_utf8),
        (
            "empty_call_id_and_empty_assistant",
            lines(vec![
                m(),
                user("hi"),
                assistant("", &[""]),
                result(""),
                json!({"t":"assistant"}).to_string(),
            ]),
        ),
    ]
}

/// What strict (OpenAI-style) endpoints require: every `tool` message
/// answers a call of the assistant message just before its run of tool
/// messages, every call is answered, ids are unique.
fn assert_well_formed(case: &str, messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for m in messages {
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            let at = open.iter().position(|o| o == id);
            assert!(
                at.is_some(),
                "{case}: tool message for unknown call {id:?}: {messages:#?}"
            );
            open.remove(at.unwrap());
            continue;
        }
        assert!(
            open.is_empty(),
            "{case}: calls {open:?} unanswered: {messages:#?}"
        );
        if m["role"] == "assistant" {
            for call in m["tool_calls"].as_array().into_iter().flatten() {
                let id = call["id"].as_str().unwrap_or_default().to_owned();
                assert!(!id.is_empty(), "{case}: empty call id");
                assert!(seen.insert(id.clone()), "{case}: call id {id} reused");
                open.push(id);
            }
        }
    }
    assert!(
        open.is_empty(),
        "{case}: calls {open:?} unanswered at the end"
    );
}

#[tokio::test]
async fn damaged_logs_of_every_shape_load_into_a_well_formed_conversation() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::new();
    let dir = sessions_dir(home.path());
    std::fs::create_dir_all(&dir).unwrap();
    let cases = damaged_logs();
    let cwd = serde_json::to_string(ws.path()).unwrap();
    for (name, bytes) in &cases {
        let bytes = String::from_utf8_lossy(bytes)
            .replace("\"CWD\"", &cwd)
            .into_bytes();
        // Keep the non-UTF-8 bytes of that case as they are.
        let bytes = if *name == "non_utf8_line" {
            cases.iter().find(|(n, _)| n == name).unwrap().1.clone()
        } else {
            bytes
        };
        std::fs::write(dir.join(format!("sess_{name}.jsonl")), bytes).unwrap();
    }
    let model = FakeModel::start().await;
    let editor = spawn_in(home.path(), &model);
    editor.initialize(no_capabilities()).await;
    for (name, _) in &cases {
        let sid = format!("sess_{name}");
        load(&editor, &sid, ws.path())
            .await
            .unwrap_or_else(|e| panic!("{name}: a session that exists must load: {e}"));
        model.push(Reply::text("fine"));
        let reply = editor.prompt(&sid, "next").await;
        assert_eq!(reply["stopReason"], "end_turn", "{name}");
        let request = model.chat_requests().pop().unwrap();
        let messages = request.messages();
        assert_well_formed(name, messages);
        assert_eq!(
            messages.last().unwrap()["content"],
            "next",
            "{name}: the new prompt is last"
        );
    }
    let mut editor = editor;
    editor.close_stdin().await;
    editor.wait_exit(Duration::from_secs(5)).await;
}
