//! `acp-coder a2a` (issue 20): the A2A server driven by the official Python
//! SDK (`a2a-sdk`, tests/a2a/client.py). Raw-HTTP tests of the agent card,
//! auth, bounds and every bad input are in a2a_http.rs.
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::support::{
    FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, agent_command, chunk, no_capabilities,
};

/// A running `acp-coder a2a`.
pub(super) struct Served {
    child: Child,
    pub(super) url: String,
    pub(super) token: String,
    stderr: Arc<Mutex<String>>,
    pub(super) home: tempfile::TempDir,
}

impl Served {
    pub(super) fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Stops the server as a service manager would (SIGTERM) and waits for
    /// its exit: all it logged is on disk then.
    pub(super) async fn stop(&mut self) {
        let pid = i32::try_from(self.child.id().expect("a2a runs")).unwrap();
        #[cfg(unix)]
        // SAFETY: signalling our own child process.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
        // Windows has no SIGTERM to send: the server is ended.
        #[cfg(not(unix))]
        let _ = (pid, self.child.start_kill());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("a2a exits within 30 s of SIGTERM")
            .unwrap();
        assert!(
            status.success() || cfg!(not(unix)),
            "{status}\n{}",
            self.stderr()
        );
    }
}

pub(super) async fn serve(
    model: &FakeModel,
    ws: &Path,
    args: &[&str],
    envs: &[(&str, &str)],
) -> Served {
    let home = tempfile::tempdir().unwrap();
    let mut all = vec!["a2a", "-C", ws.to_str().unwrap()];
    if !args.contains(&"--listen") {
        all.extend(["--listen", "127.0.0.1:0"]);
    }
    all.extend_from_slice(args);
    let mut env = model.agent_env();
    env.extend(envs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    let opts = SpawnOptions {
        args: all.iter().map(|s| (*s).to_owned()).collect(),
        envs: env,
        home: Some(home.path().to_owned()),
        cwd: None,
        program: None,
    };
    let mut child = agent_command(&opts, home.path())
        .spawn()
        .expect("spawn a2a");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let stderr = Arc::new(Mutex::new(String::new()));
    let mut token = envs
        .iter()
        .find(|(k, _)| *k == "ACP_CODER_A2A_TOKEN")
        .map(|(_, v)| (*v).to_owned());
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(t) = line.strip_prefix("token: ") {
                token = Some(t.to_owned());
            }
            if let Some(rest) = line.split(" at ").nth(1) {
                return rest.split_whitespace().next().unwrap().to_owned();
            }
        }
        panic!("a2a exited before serving:\n{}", stderr.lock().unwrap());
    })
    .await
    .expect("a2a did not start within 30 s");
    let sink = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    Served {
        child,
        url,
        token: token.expect("a token"),
        stderr,
        home,
    }
}

/// The Python with `a2a-sdk` (ACP_CODER_A2A_PYTHON, set by scripts/test.sh);
/// the tests that need it are `#[ignore]`d in a plain `cargo test`, and fail
/// saying how to install it when run without it.
fn python() -> String {
    let var = "ACP_CODER_A2A_PYTHON";
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => panic!(
            "{var} is not set; install the SDK with `python3 -m venv DIR && DIR/bin/pip install a2a-sdk==1.3.0` and set {var}=DIR/bin/python (scripts/test.sh does)"
        ),
    }
}

/// Runs a scenario of tests/a2a/client.py; its JSON output.
async fn sdk(python: &str, s: &Served, scenario: &str, args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/a2a/client.py");
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::process::Command::new(python)
            .arg(&script)
            .arg(scenario)
            .arg(&s.url)
            .args(args)
            .env("A2A_TOKEN", &s.token)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the SDK client did not finish within 90 s")
    .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "client.py {scenario} failed\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server\n{}",
        String::from_utf8_lossy(&out.stderr),
        s.stderr()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn artifact<'a>(task: &'a Value, id: &str) -> Option<&'a Value> {
    task["artifacts"]
        .as_array()?
        .iter()
        .find(|a| a["artifactId"] == id)
}

/// The answer as a client that follows `append` builds it from the
/// artifact updates (`append: false` replaces what came before).
fn streamed_answer(updates: &[&Value]) -> String {
    let mut text = String::new();
    for u in updates {
        if u["append"] != true {
            text.clear();
        }
        text.push_str(&text_of(&u["artifact"]));
    }
    text
}

pub(super) fn text_of(v: &Value) -> String {
    v["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect()
}

// ------------------------------------------------------------ with the SDK

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_blocking_task_edits_a_file_and_returns_the_diff() {
    let py = python();
    let model = FakeModel::with_replies([
        Reply::tool_call(
            "c1",
            "write_file",
            json!({"path": "src/notes.txt", "content": "hello\nworld\n"}),
        ),
        Reply::text("Wrote the notes."),
    ])
    .await;
    let ws = Workspace::builder()
        .file("src/notes.txt", "hello\n")
        .build();
    let s = serve(&model, ws.path(), &["--mode", "accept-edits"], &[]).await;
    let out = sdk(&py, &s, "blocking", &["add world to the notes"]).await;
    let task = &out["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{out:#}");
    assert_eq!(ws.read("src/notes.txt"), "hello\nworld\n");
    assert_eq!(
        text_of(artifact(task, "answer").unwrap()),
        "Wrote the notes."
    );
    let diff = artifact(task, "diff").expect("diff artifact");
    assert_eq!(diff["metadata"]["files"], json!(["src/notes.txt"]));
    assert_eq!(
        text_of(diff),
        "--- a/src/notes.txt\n+++ b/src/notes.txt\n@@ -1 +1,2 @@\n hello\n+world\n"
    );
    // The prompt reached the model; the session is the editor's kind.
    let first = &model.chat_requests()[0];
    assert_eq!(
        first.last_message().unwrap()["content"],
        "add world to the notes"
    );
    let sid = task["contextId"].as_str().unwrap().to_owned();
    drop(s.child);
    let editor = FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(s.home.path().to_owned()),
        ..SpawnOptions::default()
    });
    editor.initialize(no_capabilities()).await;
    let list = editor.request("session/list", json!({})).await.unwrap();
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["sessionId"].as_str())
        .collect();
    assert!(ids.contains(&sid.as_str()), "{list:#}");
    editor
        .request(
            "session/load",
            json!({"sessionId": sid, "cwd": ws.path(), "mcpServers": []}),
        )
        .await
        .expect("an editor loads the A2A session");
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_streaming_task_streams_text_and_tool_calls() {
    let py = python();
    let model = FakeModel::with_replies([
        Reply::tool_call("r1", "read_file", json!({"path": "a.txt"})),
        Reply::stream([
            chunk::role(),
            chunk::text("The file "),
            chunk::text("says hi."),
            chunk::finish("stop"),
        ]),
    ])
    .await;
    let ws = Workspace::builder().file("a.txt", "hi\n").build();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "stream", &["what does a.txt say?"]).await;
    let events = out["events"].as_array().unwrap();
    // The stream opens on the task as submitted; then it works.
    assert_eq!(
        events[0]["task"]["status"]["state"], "TASK_STATE_SUBMITTED",
        "{out:#}"
    );
    assert_eq!(
        events[1]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING",
        "{out:#}"
    );
    let updates: Vec<&Value> = events
        .iter()
        .map(|e| &e["artifactUpdate"])
        .filter(|u| u["artifact"]["artifactId"] == "answer")
        .collect();
    assert!(updates.len() >= 3, "text streams in pieces: {updates:?}");
    assert_eq!(streamed_answer(&updates), "The file says hi.", "{out:#}");
    // The last chunk is the whole answer, named, replacing the pieces.
    let last = updates.last().unwrap();
    assert_eq!(last["lastChunk"], true, "{last}");
    assert_eq!(last["artifact"]["name"], "answer", "{last}");
    assert_eq!(text_of(&last["artifact"]), "The file says hi.", "{last}");
    assert_ne!(last["append"], true, "{last}");
    let tool_note = events.iter().any(|e| {
        text_of(&e["statusUpdate"]["status"]["message"]).starts_with("Tool")
            && e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    });
    assert!(tool_note, "tool calls as status messages: {out:#}");
    let last = events.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert_eq!(out["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        text_of(artifact(&out["task"], "answer").unwrap()),
        "The file says hi."
    );
}

/// A task whose command needs permission, answered by `scenario` of
/// client.py with `answer`; the workspace and the client's output.
async fn ask_for_a_command(scenario: &str, answer: &str, reply: &str) -> (Workspace, Value) {
    ask_to_run("echo ran > out.txt", scenario, answer, reply).await
}

/// [`ask_for_a_command`] for `command`.
async fn ask_to_run(
    command: &str,
    scenario: &str,
    answer: &str,
    reply: &str,
) -> (Workspace, Value) {
    let py = python();
    let model = FakeModel::with_replies([
        Reply::tool_call("k1", "run_command", json!({"command": command})),
        Reply::text(reply),
    ])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, scenario, &["run the thing", answer]).await;
    let asked = &out["asked"];
    assert_eq!(
        asked["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{out:#}"
    );
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert_eq!(out["task"]["id"], asked["id"]);
    (ws, out)
}

/// "always" for a command that offers no "always" option (a compound one)
/// runs it once, and the status message says so.
#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_always_without_an_always_option_says_it_runs_once() {
    let (ws, out) = ask_to_run("echo a && echo ran > out.txt", "ask", "always", "Ran it.").await;
    let data = out["asked"]["status"]["message"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|p| p.get("data"))
        .expect("a data part");
    assert!(
        data["options"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["kind"] != "allow_always"),
        "{data}"
    );
    assert_eq!(ws.read("out.txt").trim(), "ran");
    let said: Vec<String> = out["task"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(text_of)
        .collect();
    assert!(
        said.iter()
            .any(|t| t.contains("offers no \"always\" option, so it runs this once")),
        "{said:?}"
    );
    // A plain "allow" says nothing of the kind.
    let (_ws, out) = ask_to_run("echo a && echo ran > out.txt", "ask", "allow", "Ran it.").await;
    assert!(!out["task"].to_string().contains("offers no"), "{out:#}");
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_input_required_round_trip_for_a_command() {
    let (ws, out) = ask_for_a_command("ask", "allow", "Ran it.").await;
    let question = text_of(&out["asked"]["status"]["message"]);
    assert!(question.contains("echo ran > out.txt"), "{question}");
    assert!(question.contains("allow"), "{question}");
    // The options come as a data part too, for programs.
    let parts = out["asked"]["status"]["message"]["parts"]
        .as_array()
        .unwrap();
    let data = parts
        .iter()
        .find_map(|p| p.get("data"))
        .expect("a data part");
    assert_eq!(
        data["toolCall"]["rawInput"]["command"],
        "echo ran > out.txt"
    );
    assert!(data["options"].as_array().unwrap().len() >= 2, "{data}");
    assert_eq!(ws.read("out.txt").trim(), "ran");
    // A message to the finished task is refused, saying how to go on.
    let again = &out["again"];
    assert!(
        again["message"]
            .as_str()
            .unwrap()
            .contains("no more messages"),
        "{again}"
    );
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_rejecting_in_text_stops_the_command() {
    let (ws, _) = ask_for_a_command("ask", "No.", "Understood, not running it.").await;
    assert!(!ws.exists("out.txt"));
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_answer_as_a_data_part_picks_the_option() {
    let (ws, _) = ask_for_a_command("ask_data", "allow_once", "Ran it.").await;
    assert_eq!(ws.read("out.txt").trim(), "ran");
    let (ws, _) = ask_for_a_command("ask_data", "reject_once", "Not run.").await;
    assert!(!ws.exists("out.txt"));
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_subscribe_follows_a_running_task() {
    let py = python();
    // The model answers after 3 s: time enough to subscribe.
    let model = FakeModel::with_replies([Reply::stream([
        chunk::role(),
        chunk::text("Late "),
        chunk::text("answer."),
        chunk::finish("stop"),
    ])
    .first_byte_delay(Duration::from_secs(3))])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "subscribe", &["take your time"]).await;
    assert_eq!(
        out["started"]["status"]["state"], "TASK_STATE_WORKING",
        "{out:#}"
    );
    let events = out["events"].as_array().unwrap();
    assert_eq!(events[0]["task"]["id"], out["started"]["id"], "{out:#}");
    let updates: Vec<&Value> = events
        .iter()
        .map(|e| &e["artifactUpdate"])
        .filter(|u| u["artifact"]["artifactId"] == "answer")
        .collect();
    assert_eq!(streamed_answer(&updates), "Late answer.", "{out:#}");
    assert_eq!(
        events.last().unwrap()["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{out:#}"
    );
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_follow_up_message_continues_the_conversation() {
    let py = python();
    let model =
        FakeModel::with_replies([Reply::text("First answer."), Reply::text("Second answer.")])
            .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "followup", &["one", "two"]).await;
    assert_eq!(out["first"]["contextId"], out["second"]["contextId"]);
    assert_ne!(out["first"]["id"], out["second"]["id"]);
    assert_eq!(
        text_of(artifact(&out["second"], "answer").unwrap()),
        "Second answer."
    );
    // The second request carries the first turn.
    let second = &model.chat_requests()[1];
    let contents: Vec<String> = second
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect();
    assert!(contents.iter().any(|c| c == "one"), "{contents:?}");
    assert!(
        contents.iter().any(|c| c == "First answer."),
        "{contents:?}"
    );
    assert_eq!(
        out["listed"]["tasks"].as_array().unwrap().len(),
        2,
        "{out:#}"
    );
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_cancel_stops_the_model_stream() {
    let py = python();
    let model = FakeModel::with_replies([Reply::stream([
        chunk::role(),
        chunk::text("Thinking"),
        chunk::finish("stop"),
    ])
    .hang_after(2)])
    .await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "cancel", &["take forever"]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_CANCELED",
        "{out:#}"
    );
    assert!(
        out["again"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be canceled"),
        "{out:#}"
    );
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_errors_are_clear() {
    let py = python();
    let model = FakeModel::with_replies([Reply::text("Done.")]).await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "errors", &["hello"]).await;
    assert_eq!(out["unknown_task"]["type"], "TaskNotFoundError", "{out:#}");
    assert_eq!(
        out["unknown_cancel"]["type"], "TaskNotFoundError",
        "{out:#}"
    );
    assert_eq!(
        out["finished_message"]["type"], "UnsupportedOperationError",
        "{out:#}"
    );
    assert!(
        out["unknown_context"]["message"]
            .as_str()
            .unwrap()
            .contains("omit contextId"),
        "{out:#}"
    );
}

#[tokio::test]
#[ignore = "needs the official A2A Python SDK from PyPI; scripts/test.sh installs it and runs the ignored tests"]
async fn sdk_v03_compatibility_names() {
    let py = python();
    let model =
        FakeModel::with_replies([Reply::text("Old but gold."), Reply::text("Streamed too.")]).await;
    let ws = Workspace::new();
    let s = serve(&model, ws.path(), &[], &[]).await;
    let out = sdk(&py, &s, "v03", &["hi", "blocking"]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
    assert_eq!(
        text_of(artifact(&out["task"], "answer").unwrap()),
        "Old but gold."
    );
    let out = sdk(&py, &s, "v03", &["hi", "stream"]).await;
    assert_eq!(
        out["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{out:#}"
    );
}
