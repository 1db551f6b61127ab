//! A2A tasks held by the server: their state, history and artifacts, the
//! events streamed to subscribers, and the bounds (tasks per server, idle
//! expiry; issue 20 "Security").
//!
//! A task is one ACP turn (`session/prompt`) of the session its `contextId`
//! names (the context id *is* the ACP session id, so editors can
//! `session/load` it afterwards). At most one task per context runs at a time,
//! as ACP allows one prompt per session.
use std::collections::BTreeMap;
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

use super::wire::{self, object, state};

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

    /// Adds a finished artifact (the answer or the diff) and tells
    /// subscribers: its last chunk is the whole artifact, name and text,
    /// replacing the pieces streamed before (`append: false`).
    pub fn add_artifact(&self, artifact: Value) {
        let mut inner = self.lock();
        inner.emit(|| self.artifact_update(artifact.clone(), false, true));
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

    pub(super) fn idle_for(&self, now: Instant) -> Duration {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_finished_task_does_not_change_and_history_is_trimmed() {
        let t = Task::new("c", PathBuf::from("/w"), json!({"role": "ROLE_USER"}));
        t.push_history(json!({"n": 2}));
        t.set_state(state::CANCELED, None);
        t.set_state(state::WORKING, None);
        assert_eq!(t.state(), state::CANCELED);
        let snap = t.snapshot(Some(1));
        assert_eq!(snap["history"], json!([{"n": 2}]));
        assert_eq!(snap["status"]["state"], state::CANCELED);
    }
}
