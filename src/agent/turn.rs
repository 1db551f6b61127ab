//! The prompt turn (ACP §6): stream the model's reply, run the tool calls it
//! asks for, feed their results back, and repeat until it stops calling tools.
//! Every await races the turn's cancellation token. Everything that completes
//! is recorded in the session log as it completes.
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::acp::{ContentBlock, Cost, SessionUpdate, StopReason, UsageUpdate};
use crate::config::Settings;
use crate::llm::{
    ChatMessage, ChatRequest, Completion, Event, FinishReason, LlmError, Model, RetryPolicy,
    ToolCallRequest, Usage, UserPart,
};
use crate::rpc::RpcError;
use crate::secrets::redact_string;

use super::call;
use super::compact;
use super::relay::Relay;
use super::session::{History, Session};

/// What a turn needs besides the session.
pub struct TurnEnv {
    pub model: Arc<dyn Model>,
    pub model_id: String,
    pub reasoning_effort: Option<String>,
    pub settings: Arc<Settings>,
}

impl TurnEnv {
    pub fn context_window(&self) -> u64 {
        self.settings.context_window_for(&self.model_id)
    }

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.settings.max_retries,
            base: self.settings.retry_base_delay,
            max_delay: Duration::from_secs(30),
        }
    }
}

pub fn message_id() -> String {
    format!("msg_{:016x}", fastrand::u64(..))
}

/// Runs one turn for `prompt` (the editor's blocks, already expanded from a
/// slash command if any). Model failures that outlast the retries are JSON-RPC
/// errors; cancellation is the `cancelled` stop reason.
pub async fn run(
    env: &TurnEnv,
    session: &Arc<Session>,
    prompt: &[ContentBlock],
    cancel: &CancellationToken,
) -> Result<StopReason, RpcError> {
    let mut history = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(StopReason::Cancelled),
        h = session.history.lock() => h,
    };
    let user = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(StopReason::Cancelled),
        m = super::prompt::user_message(prompt, &session.editor) => m,
    };
    // The prompt as the model and the log get it: a secret the user pasted is
    // redacted like everywhere else (SECURITY.md §3).
    let user = match user {
        ChatMessage::User(parts) => ChatMessage::User(
            parts
                .into_iter()
                .map(|p| match p {
                    UserPart::Text(t) => UserPart::Text(redact_string(t)),
                    other => other,
                })
                .collect(),
        ),
        other => other,
    };
    session.record_user(prompt, &user);
    history.messages.push(user);
    let mut requests = 0u32;
    loop {
        if requests >= env.settings.max_turn_requests {
            return Ok(StopReason::MaxTurnRequests);
        }
        requests += 1;
        if compact::needed(env, session, &history) {
            match compact::run(env, session, &mut history, cancel, compact::Why::Auto, None).await {
                Ok(true) | Ok(false) => {}
                Err(e) if cancel.is_cancelled() => {
                    tracing::debug!(error = %e.message, "compaction cancelled");
                    return Ok(StopReason::Cancelled);
                }
                // A failed compaction is not fatal: the call may still fit.
                Err(e) => tracing::warn!(error = %e.message, "automatic compaction failed"),
            }
            if cancel.is_cancelled() {
                return Ok(StopReason::Cancelled);
            }
        }
        let request = build_request(env, session, &history, true);
        let completion = match call_model(env, session, &request, cancel, true).await {
            Err(e) => return Err(e),
            Ok(Outcome::Cancelled { partial }) => {
                if !partial.is_empty() {
                    let msg = ChatMessage::Assistant {
                        text: redact_string(partial),
                        reasoning: String::new(),
                        tool_calls: Vec::new(),
                    };
                    session.record_message(&msg);
                    history.messages.push(msg);
                }
                return Ok(StopReason::Cancelled);
            }
            Ok(Outcome::Done(c)) => c,
        };
        account(env, session, &mut history, completion.usage);
        // What the model said goes into history and the log as the editor saw
        // it: a secret it repeated is redacted (SECURITY.md §3). Tool calls
        // run as remembered: a known secret in their arguments is replaced
        // before they run, so no route (an editor write, a local write, a
        // command line) lets the model use or send one on.
        let calls: Vec<ToolCallRequest> = completion
            .tool_calls
            .into_iter()
            .map(|c| ToolCallRequest {
                arguments: redact_string(c.arguments),
                ..c
            })
            .collect();
        let msg = ChatMessage::Assistant {
            text: redact_string(completion.text),
            reasoning: redact_string(completion.reasoning),
            tool_calls: calls.clone(),
        };
        session.record_message(&msg);
        history.messages.push(msg);
        if calls.is_empty() {
            return Ok(match completion.finish_reason {
                Some(FinishReason::Length) => StopReason::MaxTokens,
                Some(FinishReason::ContentFilter) => StopReason::Refusal,
                _ => StopReason::EndTurn,
            });
        }
        let mut was_cancelled = false;
        let mut images = Vec::new();
        let images_on = env.settings.model_accepts_images(&env.model_id);
        for req in &calls {
            let content = if was_cancelled {
                "Error: not run; the user cancelled the turn.".to_owned()
            } else {
                let result = call::run(
                    session,
                    req,
                    cancel,
                    &env.settings.secret_env,
                    env.settings.sandbox_network,
                )
                .await;
                was_cancelled = result.cancelled || cancel.is_cancelled();
                let mut text = result.for_model;
                if images_on {
                    images.extend(result.images.into_iter().map(|u| (req.id.clone(), u)));
                } else if !result.images.is_empty() {
                    text = format!("{text}\n{}", crate::mcp::rich::NOT_SENT);
                }
                // The one choke point of every tool's (built-in or MCP)
                // result: a secret it read never reaches the model or the log.
                redact_string(text)
            };
            let msg = ChatMessage::Tool {
                tool_call_id: req.id.clone(),
                content,
            };
            session.record_message(&msg);
            history.messages.push(msg);
        }
        if let Some(msg) = crate::mcp::rich::images_message(&images) {
            session.record_user(&[], &msg);
            history.messages.push(msg);
        }
        if was_cancelled {
            return Ok(StopReason::Cancelled);
        }
    }
}

/// The request for the next call: system prompt, history, and (unless
/// `with_tools` is false) the session's tools.
pub fn build_request(
    env: &TurnEnv,
    session: &Session,
    history: &History,
    with_tools: bool,
) -> ChatRequest {
    let mut messages = Vec::with_capacity(history.messages.len() + 1);
    messages.push(ChatMessage::System(session.system_prompt()));
    messages.extend(history.messages.iter().cloned());
    ChatRequest {
        model: env.model_id.clone(),
        messages,
        tools: if with_tools {
            session.registry.specs()
        } else {
            Vec::new()
        },
        stream_usage: env.settings.stream_usage,
        send_reasoning: env.settings.send_reasoning,
        reasoning_effort: env.reasoning_effort.clone(),
    }
}

/// Token and cost accounting after a call, reported as `usage_update` (ACP §7).
pub fn account(env: &TurnEnv, session: &Session, history: &mut History, usage: Option<Usage>) {
    let Some(u) = usage else { return };
    history.context_tokens = u.prompt_tokens + u.completion_tokens;
    history.counted_messages = history.messages.len() + 1;
    history.total_prompt_tokens += u.prompt_tokens;
    history.total_completion_tokens += u.completion_tokens;
    let prices = env
        .settings
        .model_config(&env.model_id)
        .and_then(|c| Some((c.input_cost_per_mtok?, c.output_cost_per_mtok?)));
    if let Some((input, output)) = prices {
        history.cost_usd +=
            u.prompt_tokens as f64 * input / 1e6 + u.completion_tokens as f64 * output / 1e6;
    }
    session
        .editor
        .update(&SessionUpdate::UsageUpdate(UsageUpdate {
            used: history.context_tokens,
            size: env.context_window(),
            cost: prices.map(|_| Cost {
                amount: (history.cost_usd * 1e6).round() / 1e6,
                currency: "USD".into(),
            }),
        }));
}

pub enum Outcome {
    Done(Completion),
    /// Cancelled; `partial` is the text the user already saw.
    Cancelled {
        partial: String,
    },
}

/// One model call with retries. When `visible`, text and thoughts stream to the
/// editor; otherwise (compaction) only status lines do.
pub async fn call_model(
    env: &TurnEnv,
    session: &Session,
    request: &ChatRequest,
    cancel: &CancellationToken,
    visible: bool,
) -> Result<Outcome, RpcError> {
    let editor = &session.editor;
    let policy = env.policy();
    let mut attempt = 0u32;
    loop {
        attempt += 1;
        let text_id = message_id();
        let thought_id = message_id();
        let mut partial = String::new();
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => None,
            r = async {
                let mut stream = env.model.stream(request).await?;
                // Batches what streams faster than it can be written; flushed when dropped.
                // It waits while the editor is behind, which slows the stream down
                // instead of growing the queue to the editor (rpc::Peer::writable).
                let relay = visible.then(|| Relay::new(editor, &text_id, &thought_id));
                while let Some(event) = stream.next().await {
                    match event? {
                        Event::Text(t) => {
                            partial.push_str(&t);
                            if let Some(relay) = &relay {
                                relay.text(t).await;
                            }
                        }
                        Event::Reasoning(t) => {
                            if let Some(relay) = &relay {
                                relay.thought(t).await;
                            }
                        }
                        Event::ToolCallStarted { .. } => {}
                        Event::Done(c) => return Ok(c),
                    }
                }
                Err(LlmError::Interrupted { url: env.settings.base_url.clone(), reason: "the stream ended early".into() })
            } => Some(r),
        };
        let err = match outcome {
            None => {
                return Ok(Outcome::Cancelled {
                    partial: if visible { partial } else { String::new() },
                });
            }
            Some(Ok(c)) => return Ok(Outcome::Done(c)),
            Some(Err(e)) => e,
        };
        tracing::warn!(attempt, error = %err, "model call failed");
        match policy.delay(&err, attempt) {
            Some(delay) => {
                if visible && !partial.is_empty() {
                    // The retry streams the whole answer again as a new message;
                    // close the broken one so the text does not run together.
                    editor.update(&SessionUpdate::agent_text(
                        "\n\n_(connection lost — the answer restarts below)_\n\n",
                        Some(text_id.clone()),
                    ));
                }
                status(
                    session,
                    &format!(
                        "Model endpoint: {} — retrying in {} (attempt {} of {})…",
                        err.short(),
                        human_delay(delay),
                        attempt + 1,
                        policy.max_retries + 1
                    ),
                );
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Ok(Outcome::Cancelled { partial: String::new() }),
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            None => return Err(to_rpc_error(env, &err, attempt)),
        }
    }
}

fn human_delay(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// A short status line for long waits (retries, compaction, start-up), shown
/// as a thought so it does not become part of the answer.
pub fn status(session: &Session, text: &str) {
    session.editor.status(text);
}

/// Maps a final model failure to an actionable wire error (DESIGN §4 "Auth").
pub fn to_rpc_error(env: &TurnEnv, err: &LlmError, attempts: u32) -> RpcError {
    let s = &env.settings;
    let data = serde_json::json!({ "endpoint": s.base_url, "model": env.model_id });
    match err {
        LlmError::Status { status: 401 | 403, url, message, .. } => RpcError::auth_required(format!(
            "{url} rejected the API key ({message}); check {}",
            s.key_hint()
        ))
        .with_data(data),
        LlmError::Status { status: 404, url, message, .. } => RpcError::internal(format!(
            "{url} answered HTTP 404 ({message}): check the model name {:?} (--model or ACP_CODER_MODEL) and the base URL (--base-url or OPENAI_BASE_URL)",
            env.model_id
        ))
        .with_data(data),
        other if attempts > 1 => {
            RpcError::internal(format!("the model request failed after {attempts} attempts: {other}")).with_data(data)
        }
        other => RpcError::internal(format!("the model request failed: {other}")).with_data(data),
    }
}
