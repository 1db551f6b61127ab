//! The one thread that makes sessions durable at the end of each turn
//! (`Session::touch`: fsync of the log, the `session/list` sidecar).
//!
//! Why not tokio's blocking pool: `spawn_blocking` starts a thread whenever
//! none is idle *at that instant*, and a pool thread counts itself idle only
//! after the task it ran has woken its caller. A turn that ends, is answered
//! and is followed by the next turn before the previous thread got the CPU
//! back (a busy 2-core machine) therefore started one more thread, which
//! then lived on: the 1000-turn soak bench saw the agent's threads grow from
//! 5 to 6 (issue 15). One long-lived thread, started at the first turn's
//! end, keeps the count flat; the jobs it runs (an fsync and a small file
//! replace) are sequential per session anyway.
use std::sync::Mutex;
use std::sync::mpsc;

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// Runs `job` on the sync thread and waits for it; runs it on the blocking
/// pool instead if that thread cannot be started.
pub async fn run(job: impl FnOnce() + Send + 'static) {
    static QUEUE: Mutex<Option<mpsc::Sender<Job>>> = Mutex::new(None);
    let (done, wait) = oneshot::channel::<()>();
    let job: Job = Box::new(move || {
        job();
        let _ = done.send(());
    });
    let job = {
        let mut q = QUEUE.lock().unwrap_or_else(|e| e.into_inner());
        if q.is_none() {
            *q = start();
        }
        match q.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => None,
                Err(mpsc::SendError(job)) => {
                    *q = None;
                    Some(job)
                }
            },
            None => Some(job),
        }
    };
    if let Some(job) = job {
        if let Err(e) = tokio::task::spawn_blocking(job).await {
            tracing::warn!(error = %e, "session not synced");
        }
        return;
    }
    let _ = wait.await;
}

fn start() -> Option<mpsc::Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    let spawned = std::thread::Builder::new()
        .name("session-sync".into())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                // A panicking job must not end the thread for every later turn.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(e) => {
            tracing::warn!(error = %e, "cannot start the session sync thread; using the blocking pool");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Every job runs, in order, on one and the same thread.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn jobs_run_in_order_on_one_thread() {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let count = Arc::new(AtomicUsize::new(0));
        for i in 0..50 {
            let (s, c) = (seen.clone(), count.clone());
            super::run(move || {
                s.lock().unwrap().push((i, std::thread::current().id()));
                c.fetch_add(1, Ordering::SeqCst);
            })
            .await;
            assert_eq!(count.load(Ordering::SeqCst), i + 1, "run waits for its job");
        }
        let seen = seen.lock().unwrap();
        assert!(seen.iter().enumerate().all(|(i, (j, _))| i == *j));
        assert!(seen.iter().all(|(_, t)| *t == seen[0].1), "one thread");
    }
}
