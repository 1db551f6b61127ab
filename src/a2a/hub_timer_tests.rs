//! Idle expiry of A2A tasks and contexts on tokio's paused clock (issue 16,
//! "Tests"): activity is stamped with tokio's clock, so virtual time decides
//! exactly when a task waiting for input or an unused context expires.
use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use tokio::time::{Instant, sleep};

use super::super::tasks::Task;
use super::super::wire::state;
use super::{Hub, Limits};

const IDLE: Duration = Duration::from_secs(60);

fn hub() -> Hub {
    Hub::new(Limits {
        max_live: 10,
        max_stored: 10,
        idle: IDLE,
    })
}

fn task(ctx: &str) -> std::sync::Arc<Task> {
    Task::new(ctx, PathBuf::from("/w"), json!({"role": "ROLE_USER"}))
}

#[tokio::test(start_paused = true)]
async fn a_task_waiting_for_input_expires_exactly_at_the_idle_limit() {
    let hub = hub();
    let waiting = task("c1");
    hub.start(waiting.clone()).unwrap();
    let _reply = waiting.ask(vec![], json!({}));
    let asked = Instant::now();
    sleep(IDLE - Duration::from_millis(1)).await;
    let (stale, _) = hub.expire(Instant::now());
    assert!(stale.is_empty(), "not idle long enough yet");
    sleep(Duration::from_millis(1)).await;
    assert_eq!(asked.elapsed(), IDLE);
    let (stale, _) = hub.expire(Instant::now());
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].id, waiting.id);
}

#[tokio::test(start_paused = true)]
async fn activity_restarts_a_tasks_idle_time() {
    let hub = hub();
    let waiting = task("c1");
    hub.start(waiting.clone()).unwrap();
    let _reply = waiting.ask(vec![], json!({}));
    sleep(Duration::from_secs(45)).await;
    waiting.push_history(json!({"n": 1}));
    sleep(Duration::from_secs(45)).await;
    let (stale, _) = hub.expire(Instant::now());
    assert!(stale.is_empty(), "active 45 s ago");
    sleep(Duration::from_secs(15)).await;
    let (stale, _) = hub.expire(Instant::now());
    assert_eq!(stale.len(), 1, "idle 60 s since the last activity");
}

#[tokio::test(start_paused = true)]
async fn a_finished_task_is_forgotten_once_idle() {
    let hub = hub();
    let done = task("c1");
    hub.start(done.clone()).unwrap();
    done.set_state(state::COMPLETED, None);
    hub.end(&done);
    sleep(IDLE - Duration::from_millis(1)).await;
    hub.expire(Instant::now());
    assert!(hub.get(&done.id).is_ok());
    sleep(Duration::from_millis(1)).await;
    hub.expire(Instant::now());
    assert!(hub.get(&done.id).is_err());
}

#[tokio::test(start_paused = true)]
async fn an_unused_context_closes_exactly_at_the_idle_limit_and_use_restarts_it() {
    let hub = hub();
    hub.add_context("c9", PathBuf::from("/w"));
    sleep(Duration::from_secs(50)).await;
    // A message naming the context uses it.
    assert!(hub.context_dir("c9").is_some());
    let used = Instant::now();
    sleep(IDLE - Duration::from_millis(1)).await;
    let (_, unused) = hub.expire(Instant::now());
    assert!(unused.is_empty());
    sleep(Duration::from_millis(1)).await;
    assert_eq!(used.elapsed(), IDLE);
    let (_, unused) = hub.expire(Instant::now());
    assert_eq!(unused, ["c9"]);
    assert!(hub.context_dir("c9").is_none());
}
