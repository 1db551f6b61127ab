//! A2A operations on the in-process agent (issue 20, DESIGN "A2A mode"):
//! a context is an ACP session (`session/new`, or `session/load` of a
//! session this server has not seen yet), a task is a `session/prompt`, an
//! answer to `input-required` answers the pending permission request, and
//! `CancelTask` is `session/cancel`.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::acp::method;
use crate::rpc::{Peer, RpcError};

use super::client::{relative, unified};
use super::hub::Hub;
use super::tasks::Task;
use super::wire::{self, A2aError, SendParams, code, state};

/// How long `CancelTask` waits for the turn to stop before marking it canceled.
const CANCEL_WAIT: Duration = Duration::from_secs(10);

pub struct Bridge {
    pub hub: Arc<Hub>,
    pub peer: Peer,
    /// The served directory; every session lies inside it.
    pub root: PathBuf,
}

/// A task just started or continued, with its events from that moment
/// when they are streamed.
pub struct Started {
    pub task: Arc<Task>,
    pub snapshot: Value,
    pub events: Option<mpsc::UnboundedReceiver<Value>>,
}

/// Starts the turn's stream (or not), atomically with its snapshot.
fn started(task: Arc<Task>, stream: bool) -> Started {
    let (snapshot, events) = if stream {
        let (s, e) = task.subscribe();
        (s, Some(e))
    } else {
        (Value::Null, None)
    };
    Started {
        task,
        snapshot,
        events,
    }
}

impl Bridge {
    /// `SendMessage` / `SendStreamingMessage` (`stream`): a new task, or the
    /// answer to the question of an `input-required` one (`message.taskId`).
    pub async fn send(self: &Arc<Self>, mut raw: Value, stream: bool) -> Result<Started, A2aError> {
        let params: SendParams = wire::decode_ref(&raw)?;
        let mut message = raw
            .as_object_mut()
            .and_then(|p| p.remove("message"))
            .unwrap_or(Value::Null);
        let msg = params.message;
        if !msg.task_id.is_empty() {
            return self.answer(&msg.task_id, &msg.context_id, &msg.parts, message, stream);
        }
        let blocks = wire::prompt_blocks(&msg.parts)?;
        let sub = msg
            .metadata
            .as_ref()
            .or(params.metadata.as_ref())
            .and_then(|m| m.get("cwd"));
        let (context_id, cwd) = self.context(&msg.context_id, sub).await?;
        self.links_inside(&blocks)?;
        message["contextId"] = json!(context_id);
        let task = Task::new(&context_id, cwd, message);
        self.hub.start(task.clone())?;
        // The stream opens on the task as submitted, then it works.
        let started = started(task.clone(), stream);
        task.set_state(state::WORKING, None);
        let this = self.clone();
        tokio::spawn(async move { this.run_turn(task, blocks).await });
        Ok(started)
    }

    fn answer(
        &self,
        task_id: &str,
        context_id: &str,
        parts: &[Value],
        mut message: Value,
        stream: bool,
    ) -> Result<Started, A2aError> {
        let task = self.hub.get(task_id)?;
        if !context_id.is_empty() && context_id != task.context_id {
            return Err(A2aError::params(format!(
                "message.contextId {context_id} is not the context of task {task_id} ({})",
                task.context_id
            )));
        }
        let current = task.state();
        if state::is_terminal(current) {
            return Err(A2aError::new(
                code::UNSUPPORTED,
                format!(
                    "task {task_id} is finished ({current}) and takes no more messages; to continue the conversation send a new message with contextId {} and no taskId",
                    task.context_id
                ),
            ));
        }
        let Some(options) = task.pending_options() else {
            return Err(A2aError::new(
                code::UNSUPPORTED,
                format!(
                    "task {task_id} is not waiting for input ({current}); wait for it to finish or cancel it"
                ),
            ));
        };
        let Some(choice) = wire::permission_answer(parts, &options) else {
            let ids: Vec<&str> = options
                .iter()
                .filter_map(|o| o.get("optionId")?.as_str())
                .collect();
            return Err(A2aError::params(format!(
                "task {task_id} asks for permission: answer with text \"allow\", \"always\" or \"reject\", or a data part {{\"optionId\": one of {ids:?}}}"
            )));
        };
        message["contextId"] = json!(task.context_id);
        task.push_history(message);
        // "always" for a command that offers no such option (one whose
        // reach cannot be scoped) runs it once: the status says so.
        let note = wire::always_unavailable(parts, &options, &choice).then(|| {
            wire::agent_message(
                &task.context_id,
                &task.id,
                vec![wire::text_part(
                    "This command offers no \"always\" option, so it runs this once; the next such command asks again.",
                )],
            )
        });
        // Working before the answer reaches the agent, so the stream starts
        // with what follows it.
        task.set_state(state::WORKING, note);
        let started = started(task.clone(), stream);
        task.answer_pending(Some(choice));
        Ok(started)
    }

    /// The session of `context_id` (opened or loaded), or a new one; its
    /// directory is the served one or the subdirectory `sub` inside it.
    async fn context(
        &self,
        context_id: &str,
        sub: Option<&Value>,
    ) -> Result<(String, PathBuf), A2aError> {
        if !context_id.is_empty()
            && let Some(dir) = self.hub.context_dir(context_id)
        {
            return Ok((context_id.to_owned(), dir));
        }
        let cwd = match sub {
            None => self.root.clone(),
            Some(v) => inside(&self.root, v)?,
        };
        if !context_id.is_empty() {
            // Only a conversation of the served directory: the data
            // directory also holds the editor's sessions of other projects.
            let not_ours = |why: &str| {
                A2aError::params(format!(
                    "message.contextId {context_id} is not a conversation of this server ({why}); omit contextId to start a new one"
                ))
            };
            let cwd = match self.stored_cwd(context_id).await? {
                None => return Err(not_ours("no such session")),
                Some(dir)
                    if !crate::tools::paths::canonicalize_lenient(&dir).starts_with(&self.root) =>
                {
                    tracing::warn!(context = %context_id, "a2a: refusing a session of another directory as a context");
                    return Err(not_ours("it belongs to another directory"));
                }
                Some(dir) => dir,
            };
            let cwd_text = cwd.to_string_lossy();
            let loaded: Result<Value, RpcError> = self
                .peer
                .request(
                    method::SESSION_LOAD,
                    &json!({"sessionId": context_id, "cwd": cwd_text, "mcpServers": []}),
                )
                .await;
            return match loaded {
                Ok(_) => {
                    self.hub.add_context(context_id, cwd.clone());
                    Ok((context_id.to_owned(), cwd))
                }
                Err(e) => Err(not_ours(&e.message)),
            };
        }
        let cwd_text = cwd.to_string_lossy();
        let created: Value = self
            .peer
            .request(
                method::SESSION_NEW,
                &json!({"cwd": cwd_text, "mcpServers": []}),
            )
            .await
            .map_err(|e| A2aError::new(code::INTERNAL, e.message))?;
        let id = created
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.hub.add_context(&id, cwd.clone());
        Ok((id, cwd))
    }

    /// The directory session `id` was stored with, from `session/list`
    /// (`None`: no such session).
    async fn stored_cwd(&self, id: &str) -> Result<Option<PathBuf>, A2aError> {
        let mut params = json!({});
        loop {
            let page: Value = self
                .peer
                .request(method::SESSION_LIST, &params)
                .await
                .map_err(|e| A2aError::new(code::INTERNAL, e.message))?;
            let sessions = page.get("sessions").and_then(Value::as_array);
            if let Some(s) = sessions
                .into_iter()
                .flatten()
                .find(|s| s.get("sessionId").and_then(Value::as_str) == Some(id))
            {
                return Ok(s.get("cwd").and_then(Value::as_str).map(PathBuf::from));
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) => params = json!({"cursor": c}),
                None => return Ok(None),
            }
        }
    }

    /// Refuses a `file://` part naming a file outside the served directory:
    /// the agent would put its text into the model request, whatever the
    /// mode, as an editor's link to a file it shows the user.
    fn links_inside(&self, blocks: &[Value]) -> Result<(), A2aError> {
        for (i, b) in blocks.iter().enumerate() {
            let Some(uri) = b
                .get("uri")
                .and_then(Value::as_str)
                .filter(|_| b.get("type").and_then(Value::as_str) == Some("resource_link"))
            else {
                continue;
            };
            let Some(path) = crate::acp::file_uri_to_path(uri) else {
                continue;
            };
            let resolved = crate::tools::paths::canonicalize_lenient(&path);
            if !path.is_absolute() || !resolved.starts_with(&self.root) {
                return Err(A2aError::params(format!(
                    "message.parts[{i}]: {uri} is outside the served directory {}; name files inside it",
                    self.root.display()
                )));
            }
        }
        Ok(())
    }

    async fn run_turn(&self, task: Arc<Task>, blocks: Vec<Value>) {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct PromptParams<'a> {
            session_id: &'a str,
            prompt: &'a [Value],
        }
        /// The part of a `PromptResponse` the task uses.
        #[derive(serde::Deserialize)]
        struct PromptResult {
            #[serde(rename = "stopReason", default)]
            stop_reason: String,
        }
        let result: Result<PromptResult, RpcError> = self
            .peer
            .request(
                method::SESSION_PROMPT,
                &PromptParams {
                    session_id: &task.context_id,
                    prompt: &blocks,
                },
            )
            .await;
        let answer = task.answer();
        if !answer.is_empty() {
            let artifact = wire::object([
                ("artifactId", "answer".into()),
                ("name", "answer".into()),
                ("parts", Value::Array(vec![wire::text_part(&answer)])),
            ]);
            task.add_artifact(artifact);
        }
        if let Some(diff) = diff_artifact(&task) {
            task.add_artifact(diff);
        }
        let (final_state, text) = match &result {
            Ok(r) => match r.stop_reason.as_str() {
                "cancelled" => (state::CANCELED, "Canceled.".to_owned()),
                "refusal" => (state::FAILED, "The model refused the task.".to_owned()),
                reason @ ("max_tokens" | "max_turn_requests") => (
                    state::COMPLETED,
                    format!("Stopped early ({reason}). {answer}"),
                ),
                _ if answer.is_empty() => (state::COMPLETED, "Done.".to_owned()),
                _ => (state::COMPLETED, answer),
            },
            Err(e) => (state::FAILED, e.message.clone()),
        };
        let message = wire::agent_message(&task.context_id, &task.id, vec![wire::text_part(&text)]);
        self.hub.end(&task);
        task.set_state(final_state, Some(message));
    }

    /// `CancelTask`: `session/cancel`, the open question answered
    /// "cancelled", then the task once the turn stopped.
    pub async fn cancel(&self, id: &str) -> Result<Value, A2aError> {
        let task = self.hub.get(id)?;
        let current = task.state();
        if state::is_terminal(current) {
            return Err(A2aError::new(
                code::TASK_NOT_CANCELABLE,
                format!("task {id} is already finished ({current}) and cannot be canceled"),
            ));
        }
        self.peer.notify(
            method::SESSION_CANCEL,
            &json!({"sessionId": task.context_id}),
        );
        task.answer_pending(None);
        if tokio::time::timeout(CANCEL_WAIT, task.finished())
            .await
            .is_err()
        {
            tracing::warn!(task = %id, "the turn did not stop in time after session/cancel");
            task.set_state(state::CANCELED, None);
        }
        Ok(task.snapshot(None))
    }

    /// Cancels tasks left waiting for input too long (every minute or so).
    pub async fn expire_loop(self: Arc<Self>) {
        let every =
            (self.hub.limits.idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
        loop {
            tokio::time::sleep(every).await;
            let (stale, unused) = self.hub.expire(tokio::time::Instant::now());
            for task in stale {
                tracing::info!(task = %task.id, "canceling a task idle in input-required");
                let _ = self.cancel(&task.id).await;
            }
            // Frees the agent's memory of the session; it stays on disk.
            for context in unused {
                tracing::info!(%context, "closing an idle context's session");
                let closed: Result<Value, RpcError> = self
                    .peer
                    .request(method::SESSION_CLOSE, &json!({"sessionId": context}))
                    .await;
                if let Err(e) = closed {
                    tracing::warn!(%context, error = %e.message, "session/close failed");
                }
            }
        }
    }
}

/// `sub` (a path relative to `root`, from message metadata `cwd`) resolved,
/// refused unless it is a directory inside `root`.
fn inside(root: &Path, sub: &Value) -> Result<PathBuf, A2aError> {
    let Some(rel) = sub.as_str() else {
        return Err(A2aError::params(
            "metadata.cwd: expected a string, a directory relative to the served one",
        ));
    };
    let joined = root.join(rel);
    let resolved = crate::platform::fs::canonicalize(&joined).map_err(|e| {
        A2aError::params(format!(
            "metadata.cwd {rel:?}: {e}; name a directory inside the served one"
        ))
    })?;
    if !resolved.starts_with(root) || !resolved.is_dir() {
        return Err(A2aError::params(format!(
            "metadata.cwd {rel:?} is not a directory inside the served directory {}",
            root.display()
        )));
    }
    Ok(resolved)
}

/// The `diff` artifact: a unified diff of every file the task wrote, with
/// the file list in its metadata; `None` when nothing changed.
fn diff_artifact(task: &Task) -> Option<Value> {
    let mut text = String::new();
    let mut files = Vec::new();
    for (path, old) in task.written_files() {
        let new = std::fs::read_to_string(&path).unwrap_or_default();
        if old.as_deref() == Some(new.as_str()) {
            continue;
        }
        let rel = relative(&path, &task.cwd);
        text.push_str(&unified(&rel, old.as_deref(), &new));
        files.push(rel);
    }
    if files.is_empty() {
        return None;
    }
    let mut metadata = Map::new();
    metadata.insert("files".into(), json!(files));
    Some(json!({
        "artifactId": "diff",
        "name": "diff",
        "description": "Unified diff of the files this task changed",
        "parts": [{"text": text, "mediaType": "text/x-diff"}],
        "metadata": metadata,
    }))
}
