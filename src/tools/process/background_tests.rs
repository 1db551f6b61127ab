//! Unit tests of [`super`] (background jobs).
use super::*;

#[test]
fn pending_output_is_bounded_and_counted() {
    let mut st = LocalState::default();
    push_bounded(&mut st, &"a".repeat(PENDING_LIMIT));
    push_bounded(&mut st, "bcd");
    assert_eq!(st.pending.len(), PENDING_LIMIT);
    assert_eq!(st.dropped, 3);
    assert!(st.pending.ends_with("bcd"));
}

#[test]
fn terminal_reads_resume_after_truncation() {
    let mut seen = Seen::default();
    assert_eq!(since("hello\n", false, &seen), ("hello\n".into(), false));
    seen.consumed = 6;
    seen.tail = "hello\n".into();
    assert_eq!(
        since("hello\nworld\n", false, &seen),
        ("world\n".into(), false)
    );
    // The editor dropped the start: the last text seen is still there.
    assert_eq!(
        since("llo\nworld\n", true, &seen),
        ("world\n".into(), false)
    );
    // Everything seen is gone: all of it is new, and some was lost.
    assert_eq!(since("zzz\n", true, &seen), ("zzz\n".into(), true));
}

#[tokio::test]
async fn local_jobs_start_read_and_die() {
    let session = "unit-bg-session";
    let spec = CommandSpec {
        command: "echo first; sleep 30".into(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        env_remove: Vec::new(),
        timeout: Duration::from_secs(1),
        output_limit: 1024,
        sandbox: None,
        stdin: None,
    };
    let (job, first) = start_local(session, spec).await.unwrap();
    assert!(first.running, "{first:?}");
    assert_eq!(first.output, "first\n");
    assert_eq!(list(session).len(), 1);
    let again = read(session, &job.handle, Duration::ZERO).await.unwrap();
    assert!(again.running && again.output.is_empty());
    let last = kill(session, &job.handle).await.unwrap();
    assert!(!last.running, "{last:?}");
    assert!(matches!(
        read(session, &job.handle, Duration::ZERO).await,
        Err(JobError::Unknown(_))
    ));
}
