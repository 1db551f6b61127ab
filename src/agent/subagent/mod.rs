//! Subagents: the `task` tool hands a self-contained piece of work to a child
//! session with its own context and tool calls.
//!
//! The child has the parent's roots, tools, protected paths, model and
//! permissions, and the parent's mode or a narrower one the model asks for
//! (`Session::new_child`). It runs one turn on the task's prompt; its last
//! answer is the `task` call's result. Its file changes join the parent
//! turn's checkpoint (`/undo` takes them back with the turn), and its token
//! usage and cost count in the parent's turn.
//!
//! * The editor advertised `subagents`: the child is a child session. A
//!   `subagent_update` on the parent announces it (running, cancellable)
//!   before any of its traffic; its messages, tool calls and permission
//!   requests carry its own session id; the `task` call shows a `session`
//!   reference to it; `session/cancel` with its id stops it alone (the parent
//!   gets "cancelled" as the call's result and goes on); a last
//!   `subagent_update` says it is idle, why it stopped, and its usage.
//! * Otherwise: one tool call on the parent, whose content lists the
//!   child's tool calls as they progress; the child's permission requests
//!   are about that call, their titles naming the task.
//!
//! Cancelling the parent's turn cancels the child (its token is a child of
//! the turn's), so a permission request of the child can never hold the
//! parent. Limits: `subagent_max_depth` levels (1 by default: the children
//! of a session get no `task` tool) and `subagent_max_running` children of
//! one family at once (3); a `task` call past the limit waits for a slot.
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::acp::{
    ContentBlock, SessionUpdate, StopReason, SubagentCapabilities, SubagentState, SubagentUpdate,
    Supported, ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind, TurnUsage,
};
use crate::config::Mode;
use crate::editor::Divert;
use crate::llm::{ChatMessage, ToolCallRequest, ToolSpec};
use crate::tools::sanitize_title;

use crate::agent::engine::model_call::{Tasks, TurnEnv};
use crate::agent::engine::tool_call::{
    CallResult, cancelled, failed as fail, result_limit, trim_to,
};
use crate::agent::session::{History, Session};

mod progress;

/// The tool's name.
pub const TOOL: &str = "task";

/// Characters of the model-written task description that follow the action
/// in the title of a child's permission request.
const TASK_IN_TITLE: usize = 48;

/// The `task` tool as a turn runs it ([`Tasks`]): what the prompt handler
/// gives every turn.
pub struct Subagents;

impl Tasks for Subagents {
    fn name(&self) -> &'static str {
        TOOL
    }

    fn tool_spec(&self, env: &TurnEnv, session: &Session) -> Option<ToolSpec> {
        tool_spec(env, session)
    }

    fn run<'a>(
        &'a self,
        env: &'a TurnEnv,
        parent: &'a Arc<Session>,
        history: &'a mut History,
        req: &'a ToolCallRequest,
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, CallResult> {
        run(env, parent, history, req, cancel)
    }
}

/// The `task` tool, when `session` may start children.
fn tool_spec(env: &TurnEnv, session: &Session) -> Option<ToolSpec> {
    (session.depth < env.settings.subagent_max_depth).then(|| ToolSpec {
        name: TOOL.into(),
        description: "Hand a self-contained piece of work to a subagent: a fresh assistant with \
            its own context and your project, tools and permissions, which does it and answers \
            with its result. Use it for many-step work with a short result (research across the \
            code, a focused change), to keep your context small. The subagent sees only `prompt`: give it everything it needs."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "description": {
                    "type": "string",
                    "description": "A short title for the task (3 to 8 words), shown to the user."
                },
                "prompt": {
                    "type": "string",
                    "description": "The complete task for the subagent, with the context it needs."
                },
                "mode": {
                    "type": "string",
                    "enum": Mode::ALL.map(Mode::id),
                    "description": "A narrower mode for the subagent (e.g. read-only for research); never wider than yours."
                }
            },
            "required": ["description", "prompt"],
            "additionalProperties": false
        }),
    })
}

/// A running child: its parent's id, its token and the session itself.
struct Running {
    parent: String,
    token: CancellationToken,
    session: Weak<Session>,
}

/// The running children of this process, by session id, for
/// `session/cancel` and `session/set_mode` of one child and for the
/// parent's mode changes.
fn running() -> &'static Mutex<HashMap<String, Running>> {
    static RUNNING: OnceLock<Mutex<HashMap<String, Running>>> = OnceLock::new();
    RUNNING.get_or_init(Mutex::default)
}

/// `session/cancel` for a running child session: stops it alone. `false`
/// when `id` is no running child.
pub fn cancel(id: &str) -> bool {
    match running().lock().unwrap_or_else(|e| e.into_inner()).get(id) {
        Some(r) => {
            r.token.cancel();
            true
        }
        None => false,
    }
}

/// The running child session `id`, if it is one.
pub fn child(id: &str) -> Option<Arc<Session>> {
    running()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(id)
        .and_then(|r| r.session.upgrade())
}

/// The ids of the running children of `parent`, their children, and so on.
pub fn descendants(parent: &str) -> Vec<String> {
    let map = running().lock().unwrap_or_else(|e| e.into_inner());
    let mut found: Vec<String> = Vec::new();
    let mut next = vec![parent.to_owned()];
    while let Some(p) = next.pop() {
        for (id, r) in map.iter() {
            if r.parent == p && !found.contains(id) {
                found.push(id.clone());
                next.push(id.clone());
            }
        }
    }
    found
}

/// Unregisters a child however its run ends.
struct Registered(String);

impl Drop for Registered {
    fn drop(&mut self) {
        running()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

#[derive(serde::Deserialize)]
struct Args {
    description: String,
    prompt: String,
    #[serde(default)]
    mode: Option<String>,
}

/// Runs a `task` call of `parent`'s turn (whose history is `history`).
/// Boxed: the child's turn runs the turn loop that runs this call.
fn run<'a>(
    env: &'a TurnEnv,
    parent: &'a Arc<Session>,
    history: &'a mut History,
    req: &'a ToolCallRequest,
    cancel: &'a CancellationToken,
) -> futures::future::BoxFuture<'a, CallResult> {
    Box::pin(run_task(env, parent, history, req, cancel))
}

async fn run_task(
    env: &TurnEnv,
    parent: &Arc<Session>,
    history: &mut History,
    req: &ToolCallRequest,
    cancel: &CancellationToken,
) -> CallResult {
    let id = parent.claim_tool_id(&req.id);
    let raw: Value = serde_json::from_str(&req.arguments).unwrap_or(Value::Null);
    let args: Option<Args> = serde_json::from_value(raw.clone()).ok();
    let title = args
        .as_ref()
        .map(|a| format!("Task: {}", a.description))
        .unwrap_or_else(|| "Task".into());
    let title = sanitize_title(&title, 200);
    parent.editor.update(&SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.clone(),
        title: title.clone(),
        name: Some(TOOL.into()),
        kind: ToolKind::Think,
        status: ToolCallStatus::Pending,
        content: Vec::new(),
        locations: Vec::new(),
        raw_input: Some(raw),
        raw_output: None,
        meta: None,
    }));
    let Some(args) = args else {
        return fail(
            parent,
            &id,
            "the arguments of task must be a JSON object with `description` and `prompt` strings"
                .into(),
        );
    };
    if parent.depth >= env.settings.subagent_max_depth {
        return fail(
            parent,
            &id,
            format!(
                "subagents cannot start subagents here (subagent_max_depth is {}); do the work yourself",
                env.settings.subagent_max_depth
            ),
        );
    }
    // The child's own bound: the narrower mode the model asked for, or
    // none (full-auto); `Session::mode` narrows it to the parent's mode at
    // each call, so a mode the user sets on the parent later applies too.
    let mode = match args.mode.as_deref().map(Mode::parse) {
        None => Mode::FullAuto,
        Some(Some(m)) if m.rank() <= parent.mode().rank() => m,
        Some(_) => {
            return fail(
                parent,
                &id,
                format!(
                    "mode must be one of {} and not wider than this session's ({})",
                    Mode::ids(),
                    parent.mode().id()
                ),
            );
        }
    };
    let slots = parent
        .subagent_slots
        .get_or_init(|| {
            Arc::new(tokio::sync::Semaphore::new(
                env.settings.subagent_max_running,
            ))
        })
        .clone();
    let _slot = tokio::select! {
        biased;
        _ = cancel.cancelled() => return cancelled(parent, &id),
        s = slots.acquire_owned() => match s {
            Ok(s) => s,
            Err(_) => return fail(parent, &id, "subagents are shut down".into()),
        },
    };
    let child_id = format!("{}-task-{}", parent.id, fastrand::u64(..) % 1_000_000_000);
    let shown = parent.editor.capabilities().subagents();
    let (editor, progress) = if shown {
        (parent.editor.for_session(&child_id), None)
    } else {
        let progress = progress::Progress::new(parent.editor.clone(), id.clone());
        let divert = Divert {
            updates: progress.observer(),
            tool_call_id: id.clone(),
            // The action first, then (shortened) which task asks for it.
            title_suffix: format!(
                " — for the task: {}",
                sanitize_title(&args.description, TASK_IN_TITLE)
            ),
        };
        (parent.editor.diverted(divert), Some(progress))
    };
    let child = Session::new_child(parent, child_id.clone(), editor, mode);
    let token = cancel.child_token();
    running().lock().unwrap_or_else(|e| e.into_inner()).insert(
        child_id.clone(),
        Running {
            parent: parent.id.clone(),
            token: token.clone(),
            session: Arc::downgrade(&child),
        },
    );
    let _registered = Registered(child_id.clone());
    tracing::info!(parent = %parent.id, child = %child_id, mode = child.mode().id(), "subagent started");
    let mut first = ToolCallUpdate::new(&id).status(ToolCallStatus::InProgress);
    if shown {
        parent
            .editor
            .update(&SessionUpdate::SubagentUpdate(SubagentUpdate {
                session_id: child_id.clone(),
                title: Some(args.description.clone()),
                capabilities: Some(SubagentCapabilities {
                    cancel: Some(Supported {}),
                }),
                state: Some(SubagentState::Running),
                cwd: Some(parent.cwd.display().to_string()),
            }));
        first = first.content(vec![ToolCallContent::Session {
            session_id: child_id.clone(),
        }]);
    }
    parent.editor.update(&SessionUpdate::ToolCallUpdate(first));

    let prompt = [ContentBlock::text(args.prompt)];
    let outcome = crate::agent::engine::turn::run(
        env,
        &child,
        &prompt,
        &token,
        &crate::agent::engine::turn::JustEnd,
    )
    .await;
    crate::tools::process::background::kill_session(&child_id);
    let (answer, used) = {
        let h = child.history.lock().await;
        (last_answer(&h.messages), Used::of(&h))
    };
    used.add_to(history);
    drop(progress);
    let stop = match &outcome {
        Ok(stop) => *stop,
        Err(_) if token.is_cancelled() => StopReason::Cancelled,
        Err(_) => StopReason::EndTurn,
    };
    if shown {
        parent
            .editor
            .update(&SessionUpdate::SubagentUpdate(SubagentUpdate {
                session_id: child_id.clone(),
                title: None,
                capabilities: None,
                state: Some(SubagentState::Idle {
                    stop_reason: stop,
                    usage: Some(used.usage()),
                }),
                cwd: None,
            }));
    }
    tracing::info!(parent = %parent.id, child = %child_id, ?stop, "subagent ended");
    let limit = result_limit(env.context_window());
    let finish = |parent: &Session, id: &str, answer: String| finish(parent, id, answer, limit);
    match outcome {
        Err(e) => fail(
            parent,
            &id,
            format!(
                "the subagent failed: {} (its work so far: {answer})",
                e.message
            ),
        ),
        Ok(StopReason::Cancelled) if cancel.is_cancelled() => cancelled(parent, &id),
        Ok(StopReason::Cancelled) => finish(
            parent,
            &id,
            format!("The user stopped this subagent before it finished. Its last words: {answer}"),
        ),
        Ok(StopReason::EndTurn) => finish(parent, &id, answer),
        Ok(other) => finish(
            parent,
            &id,
            format!("The subagent stopped early ({other:?}). Its last words: {answer}"),
        ),
    }
}

/// The text of the child's last assistant message.
fn last_answer(messages: &[ChatMessage]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::Assistant { text, .. } if !text.trim().is_empty() => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "(the subagent gave no answer)".into())
}

/// What the child used, added to the parent's turn.
struct Used {
    prompt: u64,
    completion: u64,
    cost: f64,
}

impl Used {
    fn of(h: &History) -> Self {
        Used {
            prompt: h.total_prompt_tokens,
            completion: h.total_completion_tokens,
            cost: h.cost_usd,
        }
    }

    fn add_to(&self, parent: &mut History) {
        parent.total_prompt_tokens += self.prompt;
        parent.total_completion_tokens += self.completion;
        parent.cost_usd += self.cost;
    }

    fn usage(&self) -> TurnUsage {
        TurnUsage {
            total_tokens: self.prompt + self.completion,
            input_tokens: self.prompt,
            output_tokens: self.completion,
        }
    }
}

fn finish(parent: &Session, id: &str, answer: String, limit: usize) -> CallResult {
    parent
        .editor
        .update(&SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            status: Some(ToolCallStatus::Completed),
            content: Some(vec![ToolCallContent::text(answer.clone())]),
            raw_output: Some(json!({ "output": crate::utf8::shorten(&answer, 16 * 1024) })),
            ..ToolCallUpdate::new(id)
        }));
    CallResult {
        for_model: trim_to(answer, limit),
        cancelled: false,
        failed: false,
        halted: false,
        refused: false,
        media: Vec::new(),
    }
}
