//! A hostile or broken endpoint cannot grow the agent without bound (issue
//! 14 item 5): one SSE line that never ends, text that never ends, tool-call
//! arguments that never end. Each ends the turn with an error naming the
//! limit's config key, the agent's peak RSS stays under 100 MB, and
//! `session/cancel` during a flood answers within 100 ms.

use std::time::{Duration, Instant};

use super::common::{spawn_in_home, write_config};
use crate::support::{FakeEditor, FakeModel, Flood, Reply, Workspace, full_capabilities};

/// `VmHWM` (peak resident set) of the agent, in bytes.
fn peak_rss(editor: &FakeEditor) -> u64 {
    let pid = editor.pid().expect("the agent's pid");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    kb * 1024
}

struct Agent {
    editor: FakeEditor,
    sid: String,
    _ws: Workspace,
    _home: tempfile::TempDir,
}

async fn agent(model: &FakeModel, config: &str) -> Agent {
    let home = tempfile::tempdir().expect("home");
    write_config(home.path(), config);
    let editor = spawn_in_home(model, home.path().to_owned(), &[]);
    editor.initialize(full_capabilities()).await;
    let ws = Workspace::new();
    let sid = editor.new_session(ws.path()).await;
    Agent {
        editor,
        sid,
        _ws: ws,
        _home: home,
    }
}

const MB: u64 = 1 << 20;

async fn flood_ends_with_the_limit(kind: Flood, key: &str) {
    let _one = ONE_AT_A_TIME.lock().await;
    let model = FakeModel::start().await;
    model.push(Reply::flood(kind));
    let a = agent(&model, "").await;
    let err = a.editor.prompt_error(&a.sid, "hi").await;
    assert!(err.message.contains(key), "{kind:?}: {err}");
    assert!(err.message.contains("config file"), "{kind:?}: {err}");
    assert_eq!(model.chat_requests().len(), 1, "{kind:?}: not retried");
    let peak = peak_rss(&a.editor);
    eprintln!("{kind:?} flood: peak RSS {:.1} MB", peak as f64 / MB as f64);
    assert!(peak < 100 * MB, "{kind:?}: peak RSS {} MB", peak / MB);
    // The session survives.
    model.push(Reply::text("calm again"));
    assert_eq!(
        a.editor.prompt(&a.sid, "again").await["stopReason"],
        "end_turn"
    );
}

#[tokio::test]
async fn an_endless_sse_line_ends_the_turn_under_100_mb() {
    flood_ends_with_the_limit(Flood::Line, "max_sse_event_bytes").await;
}

#[tokio::test]
async fn endless_text_ends_the_turn_under_100_mb() {
    flood_ends_with_the_limit(Flood::Text, "max_reply_text_bytes").await;
}

#[tokio::test]
async fn endless_tool_arguments_end_the_turn_under_100_mb() {
    flood_ends_with_the_limit(Flood::ToolArguments, "max_tool_arguments_bytes").await;
}

/// The cancel timings are taken one flood at a time: two floods at once
/// on a 2-core machine measure each other.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// With the caps raised out of reach, a cancel in the middle of a flood.
async fn cancel_during(kind: Flood) {
    let _one = ONE_AT_A_TIME.lock().await;
    let model = FakeModel::start().await;
    model.push(Reply::flood(kind));
    let a = agent(
        &model,
        "max_sse_event_bytes = 1073741824\nmax_reply_text_bytes = 1073741824\nmax_tool_arguments_bytes = 1073741824\n",
    )
    .await;
    let prompt = a.editor.start_prompt(&a.sid, "hi").await;
    // The cancel comes once the flood is underway: 1 MiB of it written,
    // more than loopback's socket buffers hold unread (about 150 KiB at their
    // initial sizes), so the agent is reading it.
    assert!(
        model
            .wait_for_flooded_bytes(1 << 20, Duration::from_secs(30))
            .await,
        "{kind:?}: the flood never started"
    );
    let sent = Instant::now();
    a.editor.cancel(&a.sid).await;
    let result = prompt.response().await.expect("a cancelled prompt answers");
    let took = sent.elapsed();
    eprintln!("{kind:?} flood: cancel answered in {took:?}");
    assert_eq!(result["stopReason"], "cancelled", "{kind:?}");
    // The 100 ms target is judged by the `cancel` bench (release build,
    // a model streaming as fast as it can). Here, in a debug build whose
    // fake editor validates every frame against the schema on a shared
    // 2-core machine (1.2-4 s seen at load 13-15 with a 1 s bound), the bound
    // only has to catch the old failure: output
    // queued without bound kept the answer back for 7.4 s.
    assert!(
        took < Duration::from_secs(3),
        "{kind:?}: cancel took {took:?}"
    );
    assert!(
        model.wait_for_disconnects(1, Duration::from_secs(5)).await,
        "{kind:?}: the request was dropped"
    );
}

#[tokio::test]
async fn cancel_during_an_endless_line_answers_promptly() {
    cancel_during(Flood::Line).await;
}

#[tokio::test]
async fn cancel_during_endless_tool_arguments_answers_promptly() {
    cancel_during(Flood::ToolArguments).await;
}

/// Text goes to the editor as it comes: the cancel's answer must not queue
/// behind it (the bounded queue to the editor in `src/rpc`;
/// `cancel::cancel_during_a_text_flood_waits_behind_a_bounded_queue` counts
/// the bytes ahead of it).
#[tokio::test]
async fn cancel_during_endless_text_answers_promptly() {
    cancel_during(Flood::Text).await;
}
