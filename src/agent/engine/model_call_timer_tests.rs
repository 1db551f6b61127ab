//! The retry wait of [`super::call_model`] on tokio's paused clock (issue 16,
//! "Tests"): virtual time makes every elapsed time exact, so the tests assert
//! equality instead of wall-clock bounds.
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::retry_wait;
use crate::llm::{LlmError, RetryPolicy};

fn status(code: u16, after: Option<Duration>) -> LlmError {
    LlmError::Status {
        status: code,
        url: "http://127.0.0.1:1/v1".into(),
        message: "busy".into(),
        retry_after: after,
    }
}

/// The policy `TurnEnv::policy` builds, with the configured base delay.
fn policy(max_retries: u32, base: Duration) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        base,
        max_delay: Duration::from_secs(30),
    }
}

/// tokio's timer wheel fires on whole milliseconds, rounding a deadline up:
/// the exact virtual time a `sleep(d)` takes.
fn on_timer_wheel(d: Duration) -> Duration {
    Duration::from_millis(d.as_nanos().div_ceil(1_000_000) as u64)
}

/// Waits as `call_model` does and returns the virtual time it took.
async fn timed_wait(delay: Duration, cancel: &CancellationToken) -> (bool, Duration) {
    let start = Instant::now();
    let slept = retry_wait(delay, cancel).await;
    (slept, start.elapsed())
}

#[tokio::test(start_paused = true)]
async fn waits_what_retry_after_asks() {
    let p = policy(3, Duration::from_millis(100));
    let delay = p
        .delay(&status(429, Some(Duration::from_secs(7))), 1)
        .unwrap();
    assert_eq!(delay, Duration::from_secs(7));
    let (slept, elapsed) = timed_wait(delay, &CancellationToken::new()).await;
    assert!(slept);
    assert_eq!(elapsed, Duration::from_secs(7));
}

#[tokio::test(start_paused = true)]
async fn retry_after_shorter_than_backoff_waits_the_backoff() {
    // The server's hint is a floor, not a licence to hammer it.
    let p = policy(3, Duration::from_secs(8));
    let delay = p
        .delay(&status(503, Some(Duration::from_secs(1))), 2)
        .unwrap();
    assert!(
        (Duration::from_secs(8)..=Duration::from_secs(16)).contains(&delay),
        "{delay:?}"
    );
    let (slept, elapsed) = timed_wait(delay, &CancellationToken::new()).await;
    assert!(slept);
    assert_eq!(elapsed, on_timer_wheel(delay));
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_capped_at_two_minutes() {
    let p = policy(3, Duration::from_millis(100));
    let delay = p
        .delay(&status(429, Some(Duration::from_secs(3600))), 1)
        .unwrap();
    let (slept, elapsed) = timed_wait(delay, &CancellationToken::new()).await;
    assert!(slept);
    assert_eq!(elapsed, Duration::from_secs(120));
}

#[tokio::test(start_paused = true)]
async fn backs_off_with_jitter_between_attempts_then_gives_up() {
    let base = Duration::from_secs(1);
    let p = policy(4, base);
    let err = status(500, None);
    let start = Instant::now();
    let mut total = Duration::ZERO;
    for attempt in 1..=4u32 {
        let delay = p.delay(&err, attempt).unwrap();
        let step = base * (1 << (attempt - 1));
        assert!(
            delay >= step / 2 && delay <= step,
            "attempt {attempt}: {delay:?} outside [{:?}, {step:?}]",
            step / 2
        );
        let (slept, elapsed) = timed_wait(delay, &CancellationToken::new()).await;
        assert!(slept);
        assert_eq!(elapsed, on_timer_wheel(delay), "attempt {attempt}");
        total += on_timer_wheel(delay);
    }
    assert_eq!(start.elapsed(), total);
    assert!(p.delay(&err, 5).is_none(), "max_retries is the last retry");
}

#[tokio::test(start_paused = true)]
async fn backoff_is_capped_at_the_maximum_delay() {
    // 10 s · 2³ = 80 s, jittered to at least 40 s, capped at 30 s.
    let p = policy(5, Duration::from_secs(10));
    let delay = p.delay(&status(502, None), 4).unwrap();
    let (_, elapsed) = timed_wait(delay, &CancellationToken::new()).await;
    assert_eq!(elapsed, Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn cancel_during_the_wait_ends_it_at_once() {
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(3)).await;
        canceller.cancel();
    });
    let (slept, elapsed) = timed_wait(Duration::from_secs(60), &cancel).await;
    assert!(!slept);
    assert_eq!(elapsed, Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn cancelled_before_the_wait_does_not_wait() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let (slept, elapsed) = timed_wait(Duration::from_secs(60), &cancel).await;
    assert!(!slept);
    assert_eq!(elapsed, Duration::ZERO);
}
