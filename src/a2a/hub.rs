//! Every A2A task of the server and its bounds (issue 20 "Security"):
//! at most one running task per context (ACP allows one prompt per
//! session), a limit on live and stored tasks, and idle expiry of tasks
//! waiting for input, finished tasks and unused contexts.
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use super::tasks::Task;
use super::wire::{self, A2aError, state};

/// The bounds of one server.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Tasks not yet finished.
    pub max_live: usize,
    /// Tasks kept for `GetTask` (finished ones are dropped oldest first).
    pub max_stored: usize,
    /// A task waiting for input this long is canceled; a finished task
    /// untouched this long is forgotten.
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_live: 16,
            max_stored: 256,
            idle: Duration::from_secs(30 * 60),
        }
    }
}

#[derive(Default)]
struct Store {
    tasks: HashMap<String, Arc<Task>>,
    /// Creation order, for dropping the oldest finished tasks.
    order: Vec<String>,
    /// The running task of each session.
    active: HashMap<String, Arc<Task>>,
    /// Sessions this server opened or loaded: their directory and when a
    /// message last named them.
    contexts: HashMap<String, (PathBuf, Instant)>,
}

/// Every task of the server.
pub struct Hub {
    store: Mutex<Store>,
    pub limits: Limits,
}

impl Hub {
    pub fn new(limits: Limits) -> Self {
        Self {
            store: Mutex::new(Store::default()),
            limits,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, id: &str) -> Result<Arc<Task>, A2aError> {
        self.lock()
            .tasks
            .get(id)
            .cloned()
            .ok_or_else(|| A2aError::task_not_found(id))
    }

    pub fn context_dir(&self, context_id: &str) -> Option<PathBuf> {
        let mut s = self.lock();
        let (dir, used) = s.contexts.get_mut(context_id)?;
        *used = Instant::now();
        Some(dir.clone())
    }

    pub fn add_context(&self, context_id: &str, cwd: PathBuf) {
        self.lock()
            .contexts
            .insert(context_id.to_owned(), (cwd, Instant::now()));
    }

    /// The running task of an ACP session.
    pub fn active(&self, session_id: &str) -> Option<Arc<Task>> {
        self.lock().active.get(session_id).cloned()
    }

    /// Registers a new task as its session's running one, within the bounds.
    pub fn start(&self, task: Arc<Task>) -> Result<(), A2aError> {
        let mut s = self.lock();
        if let Some(running) = s.active.get(&task.context_id) {
            return Err(A2aError::new(
                wire::code::UNSUPPORTED,
                format!(
                    "context {} already has a running task ({}); wait for it, answer it, or cancel it first",
                    task.context_id, running.id
                ),
            ));
        }
        // A task is live from here until its turn ends (`end`), whatever
        // state it shows meanwhile: one entry per context, so no scan of
        // every stored task under the lock.
        let live = s.active.len();
        if live >= self.limits.max_live {
            return Err(A2aError::new(
                wire::code::UNSUPPORTED,
                format!(
                    "this server already runs {live} tasks (the limit); wait for one to finish or cancel one"
                ),
            ));
        }
        while s.tasks.len() >= self.limits.max_stored {
            let Some(pos) = s.order.iter().position(|id| {
                s.tasks
                    .get(id)
                    .is_none_or(|t| state::is_terminal(t.state()))
            }) else {
                break;
            };
            let id = s.order.remove(pos);
            s.tasks.remove(&id);
        }
        s.active.insert(task.context_id.clone(), task.clone());
        s.order.push(task.id.clone());
        s.tasks.insert(task.id.clone(), task);
        Ok(())
    }

    /// The turn of `task` is over: its session may run the next one.
    pub fn end(&self, task: &Task) {
        let mut s = self.lock();
        if s.active
            .get(&task.context_id)
            .is_some_and(|t| t.id == task.id)
        {
            s.active.remove(&task.context_id);
        }
    }

    /// Tasks, newest first, filtered by context and state.
    pub fn list(&self, context_id: &str, status: Option<&str>) -> Vec<Arc<Task>> {
        let s = self.lock();
        s.order
            .iter()
            .rev()
            .filter_map(|id| s.tasks.get(id))
            .filter(|t| context_id.is_empty() || t.context_id == context_id)
            .filter(|t| status.is_none_or(|st| t.state() == st))
            .cloned()
            .collect()
    }

    /// Applies idle expiry at `now`: returns the tasks waiting for input too
    /// long (the caller cancels them) and the contexts with no task left and
    /// unused as long (the caller closes their sessions; a later message
    /// naming one loads it again), and forgets finished tasks untouched as
    /// long.
    pub fn expire(&self, now: Instant) -> (Vec<Arc<Task>>, Vec<String>) {
        let mut s = self.lock();
        let idle = self.limits.idle;
        let mut stale = Vec::new();
        let mut forget = Vec::new();
        for t in s.tasks.values() {
            if t.idle_for(now) < idle {
                continue;
            }
            match t.state() {
                st if state::is_terminal(st) => forget.push(t.id.clone()),
                state::INPUT_REQUIRED => stale.push(t.clone()),
                _ => {}
            }
        }
        for id in &forget {
            s.tasks.remove(id);
        }
        s.order.retain(|id| !forget.contains(id));
        let Store {
            tasks,
            active,
            contexts,
            ..
        } = &mut *s;
        let mut unused = Vec::new();
        contexts.retain(|id, (_, used)| {
            let keep = now.saturating_duration_since(*used) < idle
                || active.contains_key(id)
                || tasks.values().any(|t| t.context_id == *id);
            if !keep {
                unused.push(id.clone());
            }
            keep
        });
        (stale, unused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(ctx: &str) -> Arc<Task> {
        Task::new(ctx, PathBuf::from("/w"), json!({"role": "ROLE_USER"}))
    }

    fn hub(max_live: usize, max_stored: usize) -> Hub {
        Hub::new(Limits {
            max_live,
            max_stored,
            idle: Duration::from_secs(60),
        })
    }

    #[test]
    fn one_running_task_per_context_and_a_live_limit() {
        let hub = hub(2, 10);
        let a = task("c1");
        hub.start(a.clone()).unwrap();
        assert_eq!(
            hub.start(task("c1")).unwrap_err().code,
            wire::code::UNSUPPORTED
        );
        hub.start(task("c2")).unwrap();
        let e = hub.start(task("c3")).unwrap_err();
        assert!(e.message.contains("limit"), "{e}");
        a.set_state(state::COMPLETED, None);
        hub.end(&a);
        hub.start(task("c1")).unwrap();
    }

    #[test]
    fn finished_tasks_are_dropped_oldest_first_when_full() {
        let hub = hub(10, 2);
        let a = task("c1");
        hub.start(a.clone()).unwrap();
        a.set_state(state::COMPLETED, None);
        hub.end(&a);
        hub.start(task("c2")).unwrap();
        hub.start(task("c3")).unwrap();
        assert!(hub.get(&a.id).is_err());
        assert_eq!(hub.list("", None).len(), 2);
    }

    #[test]
    fn idle_tasks_expire() {
        let hub = hub(10, 10);
        let waiting = task("c1");
        hub.start(waiting.clone()).unwrap();
        let _rx = waiting.ask(vec![], json!({}));
        let done = task("c2");
        hub.start(done.clone()).unwrap();
        done.set_state(state::COMPLETED, None);
        let running = task("c3");
        hub.start(running.clone()).unwrap();
        running.set_state(state::WORKING, None);
        hub.add_context("c9", PathBuf::from("/w"));
        let (stale, unused) = hub.expire(Instant::now());
        assert!(stale.is_empty() && unused.is_empty());
        let later = Instant::now() + Duration::from_secs(61);
        let (stale, unused) = hub.expire(later);
        assert_eq!(
            unused,
            ["c9"],
            "a context without tasks is closed once idle"
        );
        assert!(hub.context_dir("c9").is_none());
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].id, waiting.id);
        assert!(hub.get(&done.id).is_err(), "finished and idle: forgotten");
        assert!(
            hub.get(&running.id).is_ok(),
            "working tasks never expire here"
        );
    }
}

#[cfg(test)]
#[path = "hub_timer_tests.rs"]
mod timer_tests;
