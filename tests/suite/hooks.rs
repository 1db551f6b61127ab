//! The user's hooks (issue 45 item 6; `docs/hooks.md`): commands from the
//! user's config file run before and after tool calls, on a prompt and when
//! a turn would end. They read JSON on stdin; exit 2 blocks with stderr as
//! the reason, JSON on stdout can block or add context, and a hook past its
//! timeout is stopped with its process tree.
use std::time::Duration;

use serde_json::{Value, json};

use super::common::{spawn_in_home, write_config};
use crate::support::{FakeEditor, FakeModel, Reply, Workspace};

/// An agent whose user config holds `hooks` (TOML), one session in a
/// project with `a.txt`.
struct Hooked {
    model: FakeModel,
    editor: FakeEditor,
    ws: Workspace,
    sid: String,
    _home: tempfile::TempDir,
}

async fn hooked(hooks: &str) -> Hooked {
    hooked_with(hooks, &[]).await
}

async fn hooked_with(hooks: &str, env: &[(&str, &str)]) -> Hooked {
    let model = FakeModel::start().await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), hooks);
    let editor = spawn_in_home(&model, home.path().to_path_buf(), env);
    editor.initialize(crate::support::no_capabilities()).await;
    let ws = Workspace::builder().file("a.txt", "alpha\n").build();
    let sid = editor.new_session(ws.path()).await;
    Hooked {
        model,
        editor,
        ws,
        sid,
        _home: home,
    }
}

/// A TOML string literal (the commands quote freely).
fn lit(command: &str) -> String {
    toml_edit::value(command).to_string()
}

fn json_file(ws: &Workspace, name: &str) -> Value {
    serde_json::from_str(&ws.read(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// A pre_tool hook for `run_command` that exits 2 stops the command before
/// anything is asked or run; the model reads the hook's stderr. The hook
/// got the call as JSON on stdin; a `read_file` it does not match runs.
#[tokio::test]
async fn a_pre_tool_hook_blocks_a_command_and_the_model_sees_why() {
    let h = hooked(&format!(
        "[[hooks.pre_tool]]\nmatcher = \"run_command\"\ncommand = {}\n",
        lit("cat > .hook-input.json; echo 'no commands in this project' >&2; exit 2")
    ))
    .await;
    h.model.push(Reply::tool_calls([
        ("c1", "run_command", json!({"command": "touch ran"})),
        ("r1", "read_file", json!({"path": "a.txt"})),
    ]));
    h.model.push(Reply::text("ok"));
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let told = h.model.tool_result_for("c1").unwrap_or_default();
    assert!(
        told.contains("blocked by the user's pre_tool hook: no commands in this project"),
        "{told}"
    );
    assert!(!h.ws.exists("ran"), "the command ran");
    assert!(
        h.editor.permission_requests().is_empty(),
        "nothing was asked"
    );
    assert!(
        h.model
            .tool_result_for("r1")
            .is_some_and(|t| t.contains("alpha")),
        "read_file is not matched"
    );
    let input = json_file(&h.ws, ".hook-input.json");
    assert_eq!(input["hook_event_name"], "pre_tool");
    assert_eq!(input["session_id"], h.sid.as_str());
    assert_eq!(input["tool_name"], "run_command");
    assert_eq!(input["tool_input"]["command"], "touch ran");
    assert!(input["cwd"].is_string(), "{input}");
}

/// A post_tool hook's `additionalContext` reaches the model beside the
/// result (the hook read the result on stdin); one that exits 2 gives its
/// reason beside the result of the call it matched.
#[tokio::test]
async fn a_post_tool_hook_adds_context_beside_the_result() {
    let h = hooked(&format!(
        "[[hooks.post_tool]]\nmatcher = \"read_file\"\ncommand = {}\n\
         [[hooks.post_tool]]\nmatcher = \"update_plan\"\ncommand = {}\n",
        lit(
            "cat > .post.json; echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PostToolUse\",\"additionalContext\":\"lint says fine\"}}'"
        ),
        lit("echo 'plans must name a test' >&2; exit 2"),
    ))
    .await;
    h.model.push(Reply::tool_calls([
        ("r1", "read_file", json!({"path": "a.txt"})),
        (
            "p1",
            "update_plan",
            json!({"entries": [{"content": "Do it", "status": "pending"}]}),
        ),
    ]));
    h.model.push(Reply::text("ok"));
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let read = h.model.tool_result_for("r1").unwrap_or_default();
    assert!(
        read.contains("alpha") && read.contains("From the user's post_tool hook: lint says fine"),
        "{read}"
    );
    let input = json_file(&h.ws, ".post.json");
    assert_eq!(input["hook_event_name"], "post_tool");
    assert_eq!(input["tool_name"], "read_file");
    assert!(
        input["tool_response"]
            .as_str()
            .is_some_and(|t| t.contains("alpha")),
        "{input}"
    );
    let plan = h.model.tool_result_for("p1").unwrap_or_default();
    assert!(
        plan.contains("Plan updated")
            && plan.contains("post_tool hook objects to this result: plans must name a test"),
        "{plan}"
    );
}

/// A prompt hook's stdout is context beside the prompt; one that exits 2
/// refuses the prompt: the user reads why and the model never gets it.
#[tokio::test]
async fn a_prompt_hook_adds_context_and_a_blocking_one_refuses_the_prompt() {
    let h = hooked(&format!(
        "[[hooks.prompt]]\ncommand = {}\n",
        lit(
            "cat > .prompt.json; if grep -q forbidden .prompt.json; then echo 'that word is not allowed here' >&2; exit 2; fi; echo 'branch: main'"
        )
    ))
    .await;
    h.model.push(Reply::text("hi"));
    let r = h.editor.prompt(&h.sid, "hello there").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let sent = h.model.chat_requests()[0].body.to_string();
    assert!(
        sent.contains("hello there") && sent.contains("branch: main"),
        "{sent}"
    );
    let input = json_file(&h.ws, ".prompt.json");
    assert_eq!(input["hook_event_name"], "prompt");
    assert_eq!(input["prompt"], "hello there");

    let r = h.editor.prompt(&h.sid, "say forbidden").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert_eq!(h.model.chat_requests().len(), 1, "the model never got it");
    let shown = h.editor.agent_text(&h.sid);
    assert!(
        shown.contains("Your prompt was not sent")
            && shown.contains("that word is not allowed here"),
        "{shown}"
    );
}

/// A stop hook that exits 2 sends the model back with its reason; the
/// next time it lets the turn end.
#[tokio::test]
async fn a_stop_hook_sends_the_model_back_once() {
    let h = hooked(&format!(
        "[[hooks.stop]]\ncommand = {}\n",
        lit(
            "cat > .stop.json; if [ -f .stopped ]; then exit 0; fi; touch .stopped; echo 'run the tests first' >&2; exit 2"
        )
    ))
    .await;
    h.model.push(Reply::text("All set."));
    h.model.push(Reply::text("Tests considered; all set."));
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let requests = h.model.chat_requests();
    assert_eq!(requests.len(), 2);
    let second = requests[1].body.to_string();
    assert!(second.contains("run the tests first"), "{second}");
    let input = json_file(&h.ws, ".stop.json");
    assert_eq!(input["hook_event_name"], "stop");
    assert_eq!(input["stop_hook_active"], true, "the second run knows");
    assert_eq!(
        input["last_assistant_message"],
        "Tests considered; all set."
    );
}

/// A stop hook that always blocks cannot keep the turn going forever: the
/// model is sent back three times, then the turn ends and the user is told.
#[tokio::test]
async fn a_stop_hook_that_always_blocks_is_bounded() {
    let h = hooked(&format!(
        "[[hooks.stop]]\ncommand = {}\n",
        lit("echo 'never done' >&2; exit 2")
    ))
    .await;
    for i in 0..4 {
        h.model.push(Reply::text(&format!("answer {i}")));
    }
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert_eq!(h.model.chat_requests().len(), 4, "1 + 3 returns");
    let thoughts = h.editor.thought_text(&h.sid);
    assert!(
        thoughts.contains("sent the model back 3 times"),
        "{thoughts}"
    );
}

/// Whether a process runs `sleep ARG` (by its command line: the sandbox
/// gives the hook its own pid namespace, so `$!` is no pid out here).
fn sleep_running(arg: &str) -> bool {
    let wanted = format!("sleep\0{arg}\0");
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == wanted.as_bytes())
                && crate::support::process_alive(
                    e.file_name().to_string_lossy().parse().unwrap_or(0),
                )
        })
}

/// A hook past its timeout is stopped with its process tree (the sleep it
/// started in the background is gone too); the user is warned and the call
/// goes on.
#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_tree() {
    // A duration no other process sleeps, to find this one by.
    let arg = format!("30.{}", fastrand::u32(100_000..999_999));
    // The finder finds such a sleep (here one of the test's own).
    let own = format!("31.{}", fastrand::u32(100_000..999_999));
    let mut mine = std::process::Command::new("sleep")
        .arg(&own)
        .spawn()
        .unwrap();
    // (once it has exec'd: right after the fork it is still this test)
    crate::support::eventually("the test's own sleep is found", || sleep_running(&own)).await;
    mine.kill().unwrap();
    mine.wait().unwrap();
    assert!(!sleep_running(&own));
    let h = hooked(&format!(
        "[[hooks.pre_tool]]\ncommand = {}\ntimeout_secs = 1\n",
        lit(&format!("sleep {arg} & touch .started; wait"))
    ))
    .await;
    h.model.push(Reply::tool_call(
        "r1",
        "read_file",
        json!({"path": "a.txt"}),
    ));
    h.model.push(Reply::text("ok"));
    let t = std::time::Instant::now();
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    assert!(
        h.model
            .tool_result_for("r1")
            .is_some_and(|t| t.contains("alpha")),
        "the call went on"
    );
    let thoughts = h.editor.thought_text(&h.sid);
    assert!(
        thoughts.contains("timeout") && thoughts.contains("going on"),
        "{thoughts}"
    );
    assert!(h.ws.exists(".started"), "the hook ran");
    crate::support::eventually("the hook's background sleep is gone", || {
        !sleep_running(&arg)
    })
    .await;
}

/// A post_tool hook reads the result as the model does: a known secret the
/// call read (here the API key, in a project file) is redacted in its
/// input too. It used to get the raw text.
#[tokio::test]
async fn a_post_tool_hook_never_sees_a_secret_the_call_read() {
    const KEY: &str = "sk-hookleak-0123456789abcdef0123456789";
    let h = hooked_with(
        &format!(
            "[[hooks.post_tool]]\nmatcher = \"read_file\"\ncommand = {}\n",
            lit("cat > .post-in.json")
        ),
        &[("OPENAI_API_KEY", KEY)],
    )
    .await;
    h.ws.write("notes.txt", format!("key: {KEY}\n"));
    h.model.push(Reply::tool_call(
        "r1",
        "read_file",
        json!({"path": "notes.txt"}),
    ));
    h.model.push(Reply::text("ok"));
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let input = h.ws.read(".post-in.json");
    assert!(input.contains("key: "), "{input}");
    assert!(!input.contains(KEY), "the hook got the secret: {input}");
}
