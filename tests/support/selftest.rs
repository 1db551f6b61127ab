//! Tests of the fake editor itself, against a scripted in-process "agent"
//! over `tokio::io::duplex`.

use super::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

/// The agent's end of the pipe, driven by hand.
struct ScriptedAgent {
    lines: tokio::io::Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl ScriptedAgent {
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(TIMEOUT, self.lines.next_line())
            .await
            .expect("scripted agent: timed out waiting for a line")
            .expect("read")
            .expect("editor closed the pipe");
        serde_json::from_str(&line).expect("editor sent JSON")
    }

    async fn send(&mut self, msg: Value) {
        self.send_raw(&msg.to_string()).await;
    }

    async fn send_raw(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
        self.out.write_all(b"\n").await.unwrap();
        self.out.flush().await.unwrap();
    }

    /// Sends a request and returns the editor's answer.
    async fn call(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let answer = self.recv().await;
        assert_eq!(answer["id"], id, "answer to {method}: {answer}");
        answer
    }

    async fn update(&mut self, session: &str, update: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}))
            .await;
    }
}

fn pair() -> (FakeEditor, ScriptedAgent) {
    let (editor_side, agent_side) = tokio::io::duplex(1 << 20);
    let (er, ew) = tokio::io::split(editor_side);
    let (ar, aw) = tokio::io::split(agent_side);
    (
        FakeEditor::connect(er, ew),
        ScriptedAgent {
            lines: BufReader::new(ar).lines(),
            out: aw,
        },
    )
}

/// initialize + session/new ("s1") handshake.
async fn handshake(editor: &FakeEditor, agent: &mut ScriptedAgent, caps: Value, cwd: &Path) {
    let (init, ()) = tokio::join!(editor.initialize(caps), async {
        let req = agent.recv().await;
        assert_eq!(req["method"], "initialize");
        assert_eq!(req["params"]["protocolVersion"], 1);
        agent
            .send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": false},
                "authMethods": []
            }}))
            .await;
    });
    assert_eq!(init["protocolVersion"], 1);
    let (sid, ()) = tokio::join!(editor.new_session(cwd), async {
        let req = agent.recv().await;
        assert_eq!(req["method"], "session/new");
        assert!(req["id"].is_string(), "session/new uses a string id");
        agent
            .send(json!({"jsonrpc": "2.0", "id": req["id"], "result": {"sessionId": "s1"}}))
            .await;
    });
    assert_eq!(sid, "s1");
}

#[tokio::test]
async fn full_turn_with_reverse_requests() {
    let ws = Workspace::builder()
        .file("a.txt", "disk 1\ndisk 2\n")
        .file("b.txt", "one\ntwo\nthree\nfour\n")
        .build();
    let (editor, mut agent) = pair();
    handshake(&editor, &mut agent, full_capabilities(), ws.path()).await;
    editor.open_buffer(ws.join("a.txt"), "unsaved 1\nunsaved 2\n");
    editor.push_permission(PermissionDecision::AllowOnce);

    let prompt = editor.start_prompt("s1", "do things").await;
    let req = agent.recv().await;
    assert_eq!(req["method"], "session/prompt");
    assert_eq!(req["params"]["prompt"][0]["text"], "do things");
    let prompt_id = req["id"].clone();

    agent
        .update(
            "s1",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}}),
        )
        .await;
    agent
        .update(
            "s1",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}}),
        )
        .await;

    // Agent ids collide numerically with the editor's on purpose.
    let read = agent
        .call(
            prompt_id.clone(),
            "fs/read_text_file",
            json!({"sessionId": "s1", "path": ws.join("a.txt")}),
        )
        .await;
    assert_eq!(read["result"]["content"], "unsaved 1\nunsaved 2\n");
    let read = agent
        .call(
            json!(2),
            "fs/read_text_file",
            json!({"sessionId": "s1", "path": ws.join("b.txt"), "line": 2, "limit": 2}),
        )
        .await;
    assert_eq!(read["result"]["content"], "two\nthree\n");
    let missing = agent
        .call(
            json!(3),
            "fs/read_text_file",
            json!({"sessionId": "s1", "path": ws.join("nope.txt")}),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32002);

    let write = agent
        .call(
            json!("w1"),
            "fs/write_text_file",
            json!({"sessionId": "s1", "path": ws.join("new/c.txt"), "content": "new file\n"}),
        )
        .await;
    assert_eq!(write["result"], json!({}));
    assert_eq!(ws.read("new/c.txt"), "new file\n");
    agent
        .call(
            json!("w2"),
            "fs/write_text_file",
            json!({"sessionId": "s1", "path": ws.join("a.txt"), "content": "edited\n"}),
        )
        .await;
    assert_eq!(editor.buffer(ws.join("a.txt")).as_deref(), Some("edited\n"));

    let perm = agent
        .call(
            json!(4),
            "session/request_permission",
            json!({
                "sessionId": "s1",
                "toolCall": {"toolCallId": "call_1", "title": "Run echo"},
                "options": [
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"},
                    {"optionId": "yes", "name": "Allow", "kind": "allow_once"}
                ]
            }),
        )
        .await;
    assert_eq!(
        perm["result"],
        json!({"outcome": {"outcome": "selected", "optionId": "yes"}})
    );

    let created = agent
        .call(
            json!(5),
            "terminal/create",
            json!({"sessionId": "s1", "command": "echo hi; echo err >&2; exit 3"}),
        )
        .await;
    let tid = created["result"]["terminalId"].as_str().unwrap().to_owned();
    let exit = agent
        .call(
            json!(6),
            "terminal/wait_for_exit",
            json!({"sessionId": "s1", "terminalId": tid}),
        )
        .await;
    assert_eq!(exit["result"]["exitCode"], 3);
    let output = agent
        .call(
            json!(7),
            "terminal/output",
            json!({"sessionId": "s1", "terminalId": tid}),
        )
        .await;
    let text = output["result"]["output"].as_str().unwrap();
    assert!(text.contains("hi\n") && text.contains("err\n"), "{text}");
    assert_eq!(output["result"]["exitStatus"]["exitCode"], 3);

    // A long-running terminal in the session cwd, killed.
    let created = agent
        .call(
            json!(8),
            "terminal/create",
            json!({"sessionId": "s1", "command": "pwd; sleep 30", "outputByteLimit": 1000}),
        )
        .await;
    let long = created["result"]["terminalId"].as_str().unwrap().to_owned();
    assert_eq!(
        editor.unreleased_terminals(),
        vec![tid.clone(), long.clone()]
    );
    // Wait until `pwd` ran (output while still running has no exitStatus).
    let mut poll_id = 100;
    loop {
        let output = agent
            .call(
                json!(poll_id),
                "terminal/output",
                json!({"sessionId": "s1", "terminalId": long}),
            )
            .await;
        assert!(output["result"].get("exitStatus").is_none(), "{output}");
        if !output["result"]["output"].as_str().unwrap().is_empty() {
            break;
        }
        poll_id += 1;
        assert!(poll_id < 600, "pwd never printed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    agent
        .call(
            json!(9),
            "terminal/kill",
            json!({"sessionId": "s1", "terminalId": long}),
        )
        .await;
    let exit = agent
        .call(
            json!(10),
            "terminal/wait_for_exit",
            json!({"sessionId": "s1", "terminalId": long}),
        )
        .await;
    assert_eq!(exit["result"]["signal"], "SIGKILL");
    let output = agent
        .call(
            json!(11),
            "terminal/output",
            json!({"sessionId": "s1", "terminalId": long}),
        )
        .await;
    assert_eq!(
        output["result"]["output"].as_str().unwrap().trim(),
        ws.path().to_str().unwrap()
    );
    for (n, t) in [(12, &tid), (13, &long)] {
        agent
            .call(
                json!(n),
                "terminal/release",
                json!({"sessionId": "s1", "terminalId": t}),
            )
            .await;
    }
    editor.assert_all_terminals_released();

    agent
        .send(json!({"jsonrpc": "2.0", "id": prompt_id, "result": {"stopReason": "end_turn"}}))
        .await;
    let result = prompt.await.expect("prompt succeeds");
    assert_eq!(result["stopReason"], "end_turn");

    assert_eq!(editor.agent_text("s1"), "Hello");
    assert_eq!(
        editor.next_update().await["update"]["content"]["text"],
        "Hel"
    );
    assert_eq!(
        editor.next_update().await["update"]["content"]["text"],
        "lo"
    );
    let reads = editor.reads();
    assert_eq!(reads.len(), 2, "the missing file is not recorded as read");
    assert!(reads[0].from_buffer);
    assert!(!reads[1].from_buffer);
    assert_eq!((reads[1].line, reads[1].limit), (Some(2), Some(2)));
    let writes = editor.writes();
    assert_eq!(writes.len(), 2);
    assert_eq!(writes[0].path, ws.join("new/c.txt"));
    let perms = editor.permission_requests();
    assert_eq!(perms[0].decision, Some(PermissionDecision::AllowOnce));
    assert_eq!(
        perms[0].result.as_ref().unwrap()["outcome"]["optionId"],
        "yes"
    );
    assert_eq!(
        editor
            .terminal_calls()
            .iter()
            .filter(|c| c.method != "terminal/output")
            .count(),
        7
    );
    editor.assert_no_errors();
}

#[tokio::test]
async fn invalid_agent_output_is_caught() {
    let ws = Workspace::new();
    let (editor, mut agent) = pair();
    handshake(&editor, &mut agent, full_capabilities(), ws.path()).await;
    agent
        .update(
            "s1",
            json!({"sessionUpdate": "agent_mesage_chunk", "content": {"type": "text", "text": "x"}}),
        )
        .await;
    agent.send_raw("this is not json").await;
    agent
        .update(
            "other",
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}),
        )
        .await;
    agent
        .send(json!({"jsonrpc": "2.0", "id": 99, "result": {}}))
        .await;
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while editor.errors().len() < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{:?}",
            editor.errors()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let errors = editor.take_errors();
    assert!(errors[0].contains("/update"), "{}", errors[0]);
    assert!(errors[1].contains("not JSON"), "{}", errors[1]);
    assert!(errors[2].contains("does not know"), "{}", errors[2]);
    assert!(errors[3].contains("id 99"), "{}", errors[3]);
}

#[tokio::test]
async fn waits_fail_fast_on_protocol_errors() {
    let ws = Workspace::new();
    let (editor, mut agent) = pair();
    handshake(&editor, &mut agent, full_capabilities(), ws.path()).await;
    agent.send_raw("garbage").await;
    let waited = tokio::spawn(async move {
        editor.wait_for(|m| m["method"] == "never/sent").await;
    })
    .await;
    let panic = waited.unwrap_err().into_panic();
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("protocol error"), "{text}");
    assert!(text.contains("← garbage"), "transcript is printed: {text}");
}

#[tokio::test]
async fn capability_violations_and_held_permissions() {
    let ws = Workspace::new();
    let (editor, mut agent) = pair();
    handshake(&editor, &mut agent, no_capabilities(), ws.path()).await;
    let answer = agent
        .call(
            json!(1),
            "fs/read_text_file",
            json!({"sessionId": "s1", "path": ws.join("x")}),
        )
        .await;
    assert_eq!(answer["error"]["code"], -32601);
    let errors = editor.take_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("capability"), "{}", errors[0]);

    editor.push_permission(PermissionDecision::NeverAnswer);
    agent
        .send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/request_permission", "params": {
                "sessionId": "s1",
                "toolCall": {"toolCallId": "c"},
                "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}]
            }}),
        )
        .await;
    editor
        .wait_for_reverse_request("session/request_permission")
        .await;
    editor.cancel("s1").await;
    let cancel = agent.recv().await;
    assert_eq!(cancel["method"], "session/cancel");
    let answer = agent.recv().await;
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["outcome"]["outcome"], "cancelled");
    editor.assert_no_errors();
}

#[tokio::test]
async fn agent_eof_is_noticed() {
    let (editor, agent) = pair();
    drop(agent);
    editor.wait_closed().await;
    let waited = tokio::spawn(async move {
        let _ = editor
            .request("initialize", json!({"protocolVersion": 1}))
            .await;
    })
    .await;
    assert!(
        waited.is_err(),
        "a request to a closed agent fails the test"
    );
}

/// The spawn path: clean env, temp HOME, piped stdio; the agent must exit
/// when its stdin closes.
#[tokio::test]
async fn spawned_agent_exits_on_stdin_eof() {
    let model = FakeModel::start().await;
    let mut editor = spawn_agent(&model);
    let home = editor.home().unwrap().to_path_buf();
    assert!(home.is_dir());
    editor.close_stdin().await;
    let status = editor.wait_exit(Duration::from_secs(10)).await;
    assert!(
        status.success(),
        "exit status {status:?}; stderr:\n{}",
        editor.stderr()
    );
}
