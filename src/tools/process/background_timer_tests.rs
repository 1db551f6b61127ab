//! The start-up and wait timers of local background jobs on tokio's paused
//! clock (issue 16, "Tests"): [`START_QUIET`] / [`START_MAX`] of
//! `first_output` and the bounded wait of [`wait_done`]. The job's output and
//! end are pushed by hand as `start_local`'s sink does, so no process runs.
use super::*;

use tokio::time::{Instant, sleep};

/// A local job as `start_local` builds it, with its state and wake-up.
fn local_job() -> (Arc<Job>, Arc<Mutex<LocalState>>, Arc<Notify>) {
    let state = Arc::new(Mutex::new(LocalState::default()));
    let notify = Arc::new(Notify::new());
    let job = Arc::new(Job {
        handle: "bg-test".into(),
        command: "true".into(),
        cwd: std::env::temp_dir(),
        started: std::time::Instant::now(),
        backend: Backend::Local {
            state: state.clone(),
            notify: notify.clone(),
            cancel: CancellationToken::new(),
        },
    });
    (job, state, notify)
}

/// After `after`, appends `text` as the command's output (the sink's work).
fn print_at(after: Duration, text: &'static str, state: &Arc<Mutex<LocalState>>, n: &Arc<Notify>) {
    let (state, n) = (state.clone(), n.clone());
    tokio::spawn(async move {
        sleep(after).await;
        push_bounded(&mut lock(&state), text);
        n.notify_waiters();
    });
}

/// After `after`, ends the command with `code` (the runner's last step).
fn end_at(after: Duration, code: i32, state: &Arc<Mutex<LocalState>>, n: &Arc<Notify>) {
    let (state, n) = (state.clone(), n.clone());
    tokio::spawn(async move {
        sleep(after).await;
        lock(&state).done = Some(CommandResult {
            exit_code: Some(code),
            ..CommandResult::default()
        });
        n.notify_waiters();
    });
}

#[tokio::test(start_paused = true)]
async fn a_silent_job_is_reported_running_after_start_max() {
    let (job, _state, _notify) = local_job();
    let start = Instant::now();
    let chunk = job.first_output().await;
    assert_eq!(start.elapsed(), START_MAX);
    assert!(chunk.running);
    assert_eq!(chunk.output, "");
}

#[tokio::test(start_paused = true)]
async fn first_output_returns_after_start_quiet_of_silence() {
    let (job, state, notify) = local_job();
    print_at(Duration::from_millis(300), "ready\n", &state, &notify);
    let start = Instant::now();
    let chunk = job.first_output().await;
    assert_eq!(start.elapsed(), Duration::from_millis(300) + START_QUIET);
    assert!(chunk.running);
    assert_eq!(chunk.output, "ready\n");
}

#[tokio::test(start_paused = true)]
async fn steady_output_is_cut_at_start_max() {
    let (job, state, notify) = local_job();
    for i in 1..=9u64 {
        print_at(Duration::from_millis(350 * i), "tick\n", &state, &notify);
    }
    let start = Instant::now();
    let chunk = job.first_output().await;
    // Each line restarts the quiet window; the overall limit still holds.
    assert_eq!(start.elapsed(), START_MAX);
    assert!(chunk.running);
    assert_eq!(chunk.output, "tick\n".repeat(5));
}

#[tokio::test(start_paused = true)]
async fn a_job_that_ends_is_reported_at_once() {
    let (job, state, notify) = local_job();
    print_at(Duration::from_millis(100), "bye\n", &state, &notify);
    end_at(Duration::from_millis(500), 3, &state, &notify);
    let start = Instant::now();
    let chunk = job.first_output().await;
    assert_eq!(start.elapsed(), Duration::from_millis(500));
    assert!(!chunk.running);
    assert_eq!(chunk.exit_code, Some(3));
    assert_eq!(chunk.output, "bye\n");
}

#[tokio::test(start_paused = true)]
async fn wait_done_waits_the_full_wait_when_the_job_runs_on() {
    let (_job, state, notify) = local_job();
    // Output wakes the waiter but does not end the wait.
    print_at(Duration::from_secs(1), "still going\n", &state, &notify);
    let start = Instant::now();
    wait_done(&state, &notify, Duration::from_secs(30)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(30));
    assert!(lock(&state).done.is_none());
}

#[tokio::test(start_paused = true)]
async fn wait_done_returns_when_the_job_ends() {
    let (_job, state, notify) = local_job();
    end_at(Duration::from_secs(5), 0, &state, &notify);
    let start = Instant::now();
    wait_done(&state, &notify, Duration::from_secs(30)).await;
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    // Already ended: no wait at all.
    let start = Instant::now();
    wait_done(&state, &notify, Duration::from_secs(30)).await;
    assert_eq!(start.elapsed(), Duration::ZERO);
}
