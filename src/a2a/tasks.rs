//! A2A tasks held by the server: their state, history and artifacts, the
//! events streamed to subscribers, and the bounds (tasks per server, idle
//! expiry; issue 20 "Security").
//!
//! A task is one ACP turn (`session/prompt`) of the session its `contextId`
//! names (the context id *is* the ACP session id, so editors can
//! `session/load` it afterwards). At most one task per context runs at a time,
//! as ACP allows one prompt per session.
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

// tokio's clock (the same as std's outside tests) so that idle expiry runs
// on a paused clock in tests.
use tokio::time::Instant;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use time::OffsetDateTime;
use tokio::sync::{mpsc, oneshot, watch};

use super::wire::{self, A2aError, object, state};

/// A permission question waiting for the client's next message.
pub struct Pending {
    /// ACP `PermissionOption`s of the request.
    pub options: Vec<Value>,
    /// The chosen option id; `None` answers "cancelled".
    pub reply: oneshot::Sender<Option<String>>,
}

struct Inner {
    state: &'static str,
    status_message: Option<Value>,
    /// When the status last changed (ListTasks sorts and filters by it).
    timestamp: OffsetDateTime,
    history: Vec<Value>,
    artifacts: Vec<Value>,
    /// Whether an `answer` artifact chunk was streamed yet (the next appends).
    answer_streamed: bool,
    answer: String,
    /// Each file the turn wrote, with its content before the first write
    /// (`None`: it did not exist), for the diff artifact.
    before: BTreeMap<PathBuf, Option<String>>,
    pending: Option<Pending>,
    last_activity: Instant,
    /// The open streams of the task (SSE responses). A stream's queue holds
    /// what its client has not read yet; none exists, and no event is even
    /// built, while nobody streams (a blocking `SendMessage`).
    subscribers: Vec<mpsc::UnboundedSender<Value>>,
}

impl Inner {
    /// Sends the event `make` builds to every open stream; called under the
    /// task's lock, so every stream sees the events in order and a new
    /// stream's snapshot is exactly what came before its first event.
    fn emit(&mut self, make: impl FnOnce() -> Value) {
        if self.subscribers.is_empty() {
            return;
        }
        let event = make();
        self.subscribers.retain(|s| s.send(event.clone()).is_ok());
    }
}

pub struct Task {
    pub id: String,
    pub context_id: String,
    pub cwd: PathBuf,
    inner: Mutex<Inner>,
    state_tx: watch::Sender<&'static str>,
}

impl Task {
    pub fn new(context_id: &str, cwd: PathBuf, first: Value) -> Arc<Self> {
        Arc::new(Self {
            id: wire::new_id(),
            context_id: context_id.to_owned(),
            cwd,
            inner: Mutex::new(Inner {
                state: state::SUBMITTED,
                status_message: None,
                timestamp: OffsetDateTime::now_utc(),
                history: vec![first],
                artifacts: Vec::new(),
                answer_streamed: false,
                answer: String::new(),
                before: BTreeMap::new(),
                pending: None,
                last_activity: Instant::now(),
                subscribers: Vec::new(),
            }),
            state_tx: watch::channel(state::SUBMITTED).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn state(&self) -> &'static str {
        self.lock().state
    }

    /// When the status last changed.
    pub fn updated(&self) -> OffsetDateTime {
        self.lock().timestamp
    }

    /// The `Task` object, with at most `history_length` history messages.
    pub fn snapshot(&self, history_length: Option<i64>) -> Value {
        snapshot_of(self, &self.lock(), history_length)
    }

    /// [`Task::snapshot`] as JSON text, written straight from the task's
    /// state: the reply to a blocking `SendMessage` or a `GetTask` does not
    /// copy the history and artifacts into a `Value` first.
    pub fn snapshot_json(&self, history_length: Option<i64>) -> Box<RawValue> {
        let inner = self.lock();
        let view = view_of(self, &inner, history_length);
        // Borrowed strings and `Value`s: serialising cannot fail.
        serde_json::value::to_raw_value(&view).unwrap_or_else(|_| RawValue::NULL.to_owned())
    }

    /// The task now and every event after it, atomically; the events end
    /// when the task finishes.
    pub fn subscribe(&self) -> (Value, mpsc::UnboundedReceiver<Value>) {
        let mut inner = self.lock();
        let (tx, rx) = mpsc::unbounded_channel();
        if !state::is_terminal(inner.state) {
            inner.subscribers.push(tx);
        }
        (snapshot_of(self, &inner, None), rx)
    }

    /// Moves to `new_state` with a status message, and tells subscribers.
    pub fn set_state(&self, new_state: &'static str, message: Option<Value>) {
        {
            let mut inner = self.lock();
            if state::is_terminal(inner.state) {
                return;
            }
            inner.state = new_state;
            inner.timestamp = OffsetDateTime::now_utc();
            inner.last_activity = Instant::now();
            if let Some(m) = &message {
                inner.history.push(m.clone());
            }
            inner.status_message = message;
            if !inner.subscribers.is_empty() {
                let status = status_of(&inner);
                inner.emit(|| {
                    let update = object([
                        ("taskId", self.id.as_str().into()),
                        ("contextId", self.context_id.as_str().into()),
                        ("status", status),
                    ]);
                    object([("statusUpdate", update)])
                });
            }
            if state::is_terminal(new_state) {
                // The streams end after this last event.
                inner.subscribers.clear();
            }
        }
        self.state_tx.send_replace(new_state);
    }

    /// A status message while working (tool calls), without changing state.
    pub fn note(&self, text: &str) {
        let message = wire::agent_message(&self.context_id, &self.id, vec![wire::text_part(text)]);
        let state = self.state();
        if state == state::WORKING {
            self.set_state(state::WORKING, Some(message));
        }
    }

    /// Streams a piece of the answer (artifact `answer`, appended).
    pub fn push_text(&self, text: &str) {
        let mut inner = self.lock();
        inner.answer.push_str(text);
        inner.last_activity = Instant::now();
        let append = std::mem::replace(&mut inner.answer_streamed, true);
        inner.emit(|| {
            let artifact = object([
                ("artifactId", "answer".into()),
                ("name", "answer".into()),
                ("parts", Value::Array(vec![wire::text_part(text)])),
            ]);
            self.artifact_update(artifact, append, false)
        });
    }

    /// Adds a finished artifact (the answer or the diff) and tells subscribers;
    /// `closes_stream` marks the end of the streamed `answer`.
    pub fn add_artifact(&self, artifact: Value, closes_stream: bool) {
        let mut inner = self.lock();
        let streamed = closes_stream && inner.answer_streamed;
        inner.emit(|| {
            let (artifact, append) = if streamed {
                let empty = object([
                    ("artifactId", artifact["artifactId"].clone()),
                    ("parts", Value::Array(vec![wire::text_part("")])),
                ]);
                (empty, true)
            } else {
                (artifact.clone(), false)
            };
            self.artifact_update(artifact, append, true)
        });
        inner.artifacts.push(artifact);
    }

    /// A `TaskArtifactUpdateEvent` of this task.
    fn artifact_update(&self, artifact: Value, append: bool, last_chunk: bool) -> Value {
        let update = object([
            ("taskId", self.id.as_str().into()),
            ("contextId", self.context_id.as_str().into()),
            ("artifact", artifact),
            ("append", append.into()),
            ("lastChunk", last_chunk.into()),
        ]);
        object([("artifactUpdate", update)])
    }

    pub fn answer(&self) -> String {
        self.lock().answer.clone()
    }

    /// Records a file's content before the task first writes it.
    pub fn record_before(&self, path: PathBuf, content: impl FnOnce() -> Option<String>) {
        self.lock().before.entry(path).or_insert_with(content);
    }

    pub fn written_files(&self) -> BTreeMap<PathBuf, Option<String>> {
        self.lock().before.clone()
    }

    pub fn push_history(&self, message: Value) {
        let mut inner = self.lock();
        inner.history.push(message);
        inner.last_activity = Instant::now();
    }

    /// Asks the client: the task becomes input-required with `message`.
    pub fn ask(&self, options: Vec<Value>, message: Value) -> oneshot::Receiver<Option<String>> {
        let (tx, rx) = oneshot::channel();
        self.lock().pending = Some(Pending { options, reply: tx });
        self.set_state(state::INPUT_REQUIRED, Some(message));
        rx
    }

    /// The options of the open question, if one is open.
    pub fn pending_options(&self) -> Option<Vec<Value>> {
        self.lock().pending.as_ref().map(|p| p.options.clone())
    }

    /// Answers the open question (`None`: cancelled); false when none is open.
    pub fn answer_pending(&self, choice: Option<String>) -> bool {
        let pending = self.lock().pending.take();
        match pending {
            Some(p) => {
                let _ = p.reply.send(choice);
                true
            }
            None => false,
        }
    }

    /// Waits until the task is terminal or waits for input.
    pub async fn settled(&self) {
        let mut rx = self.state_tx.subscribe();
        let _ = rx.wait_for(|s| state::is_interrupted(s)).await;
    }

    /// Waits until the task is terminal.
    pub async fn finished(&self) {
        let mut rx = self.state_tx.subscribe();
        let _ = rx.wait_for(|s| state::is_terminal(s)).await;
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.lock().last_activity)
    }
}

/// A task's `TaskStatus`, borrowed.
#[derive(Serialize)]
struct StatusView<'a> {
    state: &'static str,
    timestamp: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a Value>,
}

/// A `Task` object, borrowed from the task's state: the one description of
/// its wire form, serialised as text ([`Task::snapshot_json`]) or as a
/// `Value` ([`snapshot_of`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TaskView<'a> {
    id: &'a str,
    context_id: &'a str,
    status: StatusView<'a>,
    artifacts: &'a [Value],
    history: &'a [Value],
}

fn status_view(inner: &Inner) -> StatusView<'_> {
    StatusView {
        state: inner.state,
        timestamp: wire::timestamp(inner.timestamp),
        message: inner.status_message.as_ref(),
    }
}

fn view_of<'a>(task: &'a Task, inner: &'a Inner, history_length: Option<i64>) -> TaskView<'a> {
    let history: &[Value] = match history_length {
        Some(n) if n >= 0 => {
            let n = (n as usize).min(inner.history.len());
            &inner.history[inner.history.len() - n..]
        }
        _ => &inner.history,
    };
    TaskView {
        id: &task.id,
        context_id: &task.context_id,
        status: status_view(inner),
        artifacts: &inner.artifacts,
        history,
    }
}

fn status_of(inner: &Inner) -> Value {
    serde_json::to_value(status_view(inner)).unwrap_or_default()
}

fn snapshot_of(task: &Task, inner: &Inner, history_length: Option<i64>) -> Value {
    serde_json::to_value(view_of(task, inner, history_length)).unwrap_or_default()
}

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

    #[test]
    fn a_finished_task_does_not_change_and_history_is_trimmed() {
        let t = task("c");
        t.push_history(json!({"n": 2}));
        t.set_state(state::CANCELED, None);
        t.set_state(state::WORKING, None);
        assert_eq!(t.state(), state::CANCELED);
        let snap = t.snapshot(Some(1));
        assert_eq!(snap["history"], json!([{"n": 2}]));
        assert_eq!(snap["status"]["state"], state::CANCELED);
    }
}

#[cfg(test)]
#[path = "tasks_timer_tests.rs"]
mod timer_tests;
