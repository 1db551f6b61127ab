//! The prompt turn (ACP §6): stream the model's reply, run the tool calls it
//! asks for, feed their results back, and repeat until it stops calling tools.
//! Every await races the turn's cancellation token.
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::acp::{ContentBlock, SessionUpdate, StopReason, UsageUpdate};
use crate::config::Settings;
use crate::llm::{
    ChatMessage, ChatRequest, Completion, Event, FinishReason, LlmError, Model, RetryPolicy,
};
use crate::rpc::RpcError;

use super::call;
use super::session::{History, Session};

/// What a turn needs besides the session.
pub struct TurnEnv {
    pub model: Arc<dyn Model>,
    pub model_id: String,
    pub settings: Arc<Settings>,
}

fn message_id() -> String {
    format!("msg_{:016x}", fastrand::u64(..))
}

/// Runs one turn. Model failures that outlast the retries are JSON-RPC errors;
/// cancellation is the `cancelled` stop reason.
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
    history.messages.push(user);
    let policy = RetryPolicy {
        max_retries: env.settings.max_retries,
        base: env.settings.retry_base_delay,
        max_delay: Duration::from_secs(30),
    };
    let mut requests = 0u32;
    loop {
        if requests >= env.settings.max_turn_requests {
            return Ok(StopReason::MaxTurnRequests);
        }
        requests += 1;
        let request = build_request(env, session, &history);
        let completion =
            match call_model(env, session, &request, &policy, cancel, &mut history).await? {
                Some(c) => c,
                None => return Ok(StopReason::Cancelled),
            };
        report_usage(env, session, &mut history, &completion);
        let calls = completion.tool_calls.clone();
        history.messages.push(ChatMessage::Assistant {
            text: completion.text,
            reasoning: completion.reasoning,
            tool_calls: calls.clone(),
        });
        if calls.is_empty() {
            return Ok(match completion.finish_reason {
                Some(FinishReason::Length) => StopReason::MaxTokens,
                Some(FinishReason::ContentFilter) => StopReason::Refusal,
                _ => StopReason::EndTurn,
            });
        }
        let mut was_cancelled = false;
        for req in &calls {
            let content = if was_cancelled {
                "Error: not run; the user cancelled the turn.".to_owned()
            } else {
                let result = call::run(session, req, cancel, &env.settings.secret_env).await;
                was_cancelled = result.cancelled || cancel.is_cancelled();
                result.for_model
            };
            history.messages.push(ChatMessage::Tool {
                tool_call_id: req.id.clone(),
                content,
            });
        }
        if was_cancelled {
            return Ok(StopReason::Cancelled);
        }
    }
}

fn build_request(env: &TurnEnv, session: &Session, history: &History) -> ChatRequest {
    let mut messages = Vec::with_capacity(history.messages.len() + 1);
    messages.push(ChatMessage::System(session.system_prompt.clone()));
    messages.extend(history.messages.iter().cloned());
    ChatRequest {
        model: env.model_id.clone(),
        messages,
        tools: session.registry.specs(),
        stream_usage: env.settings.stream_usage,
        send_reasoning: env.settings.send_reasoning,
        reasoning_effort: None,
    }
}

fn report_usage(env: &TurnEnv, session: &Session, history: &mut History, c: &Completion) {
    if let Some(u) = c.usage {
        history.context_tokens = u.prompt_tokens + u.completion_tokens;
        session
            .editor
            .update(&SessionUpdate::UsageUpdate(UsageUpdate {
                used: history.context_tokens,
                size: env.settings.context_window,
                cost: None,
            }));
    }
}

/// One model call with retries. `Ok(None)` means cancelled; partial output of a
/// cancelled call is kept in the history (the user saw it).
async fn call_model(
    env: &TurnEnv,
    session: &Session,
    request: &ChatRequest,
    policy: &RetryPolicy,
    cancel: &CancellationToken,
    history: &mut History,
) -> Result<Option<Completion>, RpcError> {
    let editor = &session.editor;
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
                while let Some(event) = stream.next().await {
                    match event? {
                        Event::Text(t) => {
                            partial.push_str(&t);
                            editor.update(&SessionUpdate::agent_text(t, Some(text_id.clone())));
                        }
                        Event::Reasoning(t) => {
                            editor.update(&SessionUpdate::agent_thought(t, Some(thought_id.clone())));
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
                if !partial.is_empty() {
                    history.messages.push(ChatMessage::Assistant {
                        text: partial,
                        reasoning: String::new(),
                        tool_calls: Vec::new(),
                    });
                }
                return Ok(None);
            }
            Some(Ok(c)) => return Ok(Some(c)),
            Some(Err(e)) => e,
        };
        tracing::warn!(attempt, error = %err, "model call failed");
        match policy.delay(&err, attempt) {
            Some(delay) => {
                editor.status(&format!(
                    "Model endpoint: {} — retrying in {:.1} s (attempt {} of {})…",
                    err.short(),
                    delay.as_secs_f64(),
                    attempt + 1,
                    policy.max_retries + 1
                ));
                tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Ok(None),
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            None => return Err(to_rpc_error(env, &err, attempt)),
        }
    }
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
