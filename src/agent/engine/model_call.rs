//! One model call and its environment, shared by the turn loop and
//! compaction (ACP §6): the request they send, the call with its retries
//! (DESIGN §3 "Model endpoint"), and failures mapped to JSON-RPC errors.
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::acp::SessionUpdate;
use crate::config::Settings;
use crate::llm::{
    ChatMessage, ChatRequest, Completion, Event, LlmError, Model, RetryPolicy, ToolCallRequest,
    ToolSpec, text_calls,
};
use crate::rpc::RpcError;
use crate::tools::ToolDescription;

use crate::agent::engine::model_text;
use crate::agent::engine::relay::Relay;
use crate::agent::engine::tool_call::CallResult;
use crate::agent::session::{History, Session};

/// What a turn needs besides the session.
#[derive(Clone)]
pub struct TurnEnv {
    pub model: Arc<dyn Model>,
    pub model_id: String,
    pub reasoning_effort: Option<String>,
    pub settings: Arc<Settings>,
    /// The `task` tool (subagents), when the turn offers it.
    pub tasks: Option<Arc<dyn Tasks>>,
}

/// A tool the turn runs itself rather than through the session's tools:
/// the `task` tool, whose call runs a subagent's own turn. The subagents
/// are a layer above the turn, which gets the tool with its [`TurnEnv`].
pub trait Tasks: Send + Sync {
    /// The tool's name.
    fn name(&self) -> &'static str;

    /// The tool as the model is offered it, when `session` may use it.
    fn tool_spec(&self, env: &TurnEnv, session: &Session) -> Option<ToolSpec>;

    /// Runs one call of it in `parent`'s turn (whose history is `history`).
    fn run<'a>(
        &'a self,
        env: &'a TurnEnv,
        parent: &'a Arc<Session>,
        history: &'a mut History,
        req: &'a ToolCallRequest,
        cancel: &'a CancellationToken,
    ) -> futures::future::BoxFuture<'a, CallResult>;
}

impl TurnEnv {
    /// Whether `name` is the [`Tasks`] tool's.
    pub fn is_task(&self, name: &str) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.name() == name)
    }
}

impl TurnEnv {
    /// The model's window: as configured, else as the server said
    /// ([`Model::context_window`], asked at session start), else the
    /// default.
    pub fn context_window(&self) -> u64 {
        self.settings
            .configured_context_window(&self.model_id)
            .or_else(|| self.model.known_context_window(&self.model_id))
            .unwrap_or(self.settings.context_window)
    }

    /// Waits for the server's answer about the model's window unless the
    /// config gives it, at most [`WINDOW_WAIT`]: the asking started with
    /// the session ([`learn_window_in_background`]) and is usually done; a
    /// server slow to say does not hold the turn, which goes on with the
    /// default until the answer is in.
    pub async fn learn_context_window(&self) {
        if self
            .settings
            .configured_context_window(&self.model_id)
            .is_none()
        {
            let asked = self.model.context_window(&self.model_id);
            let _ = tokio::time::timeout(WINDOW_WAIT, asked).await;
        }
    }

    fn policy(&self) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.settings.max_retries,
            base: self.settings.retry_base_delay,
            max_delay: Duration::from_secs(30),
        }
    }
}

/// The longest a turn waits for the server to say the model's window.
pub const WINDOW_WAIT: Duration = Duration::from_secs(1);

/// Starts asking the server for `model_id`'s window (at session start),
/// unless the config gives it; the answer is kept for the process.
pub fn learn_window_in_background(model: &Arc<dyn Model>, settings: &Settings, model_id: &str) {
    if settings.configured_context_window(model_id).is_some() {
        return;
    }
    let (model, model_id) = (model.clone(), model_id.to_owned());
    tokio::spawn(async move {
        model.context_window(&model_id).await;
    });
}

pub fn message_id() -> String {
    format!("msg_{:016x}", fastrand::u64(..))
}

/// The request for the next call of a turn: system prompt, history, and the
/// session's tools.
/// A small window (or `compact_prompt`) gets the short system prompt and
/// tool descriptions, with the same tools.
pub fn turn_request<'a>(env: &TurnEnv, session: &Session, history: &'a History) -> ChatRequest<'a> {
    let compact = env.settings.compact_prompt_for(env.context_window());
    // The `task` tool counts in the 128 a request may offer: it takes the
    // place of the registry's last (MCP) tool when the registry is full.
    let task = env.tasks.as_ref().and_then(|t| t.tool_spec(env, session));
    let mut tools: Vec<_> = session
        .registry
        .specs()
        .into_iter()
        .map(|t| match compact {
            true => compact_tool_spec(t),
            false => tool_spec(t),
        })
        .collect();
    if let Some(task) = task {
        tools.truncate(crate::mcp::MAX_TOOLS - 1);
        tools.push(task);
    }
    let mut request = request(env, &history.messages, tools, env.settings.send_reasoning);
    let mut system = session.system_prompt();
    let instructions = session
        .project
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .applied
        .instructions
        .clone();
    if let Some(instructions) = instructions {
        system.push_str(
            "\n\n# Instructions from the project's settings (.acp-coder/config.toml)\n\n",
        );
        system.push_str(&instructions);
        system.push('\n');
    }
    if session.mode() == crate::config::Mode::Plan {
        system.push_str(model_text::PLAN_MODE);
    }
    request.system = Some(match compact {
        true => model_text::compact_system_prompt(&system),
        false => system,
    });
    request
}

/// A tool as a small model sees it ([`model_text::compact_description`]).
fn compact_tool_spec(t: ToolDescription) -> ToolSpec {
    ToolSpec {
        name: t.name,
        description: model_text::compact_description(&t.description),
        parameters: model_text::compact_parameters(t.parameters),
    }
}

/// The one place a model request is put together (turns, compaction and
/// sampling); it borrows the messages.
pub fn request<'a>(
    env: &TurnEnv,
    messages: &'a [ChatMessage],
    tools: Vec<ToolSpec>,
    send_reasoning: bool,
) -> ChatRequest<'a> {
    let window = env.context_window();
    let small = env.settings.compact_prompt_for(window);
    ChatRequest {
        model: env.model_id.clone(),
        system: None,
        messages,
        tools,
        stream_usage: env.settings.stream_usage,
        send_reasoning,
        reasoning_effort: env.reasoning_effort.clone(),
        max_tokens: small.then(|| small_model_reply_tokens(window)),
        temperature: env.settings.temperature_for(&env.model_id, small),
        stop: Vec::new(),
    }
}

/// The longest reply a small model may write in one request: an eighth of
/// its window (less than what compaction keeps free), at most 4096 tokens.
/// A small model can fall into writing the same lines over and over;
/// unbounded, that went on until the window was full (minutes on a CPU).
pub fn small_model_reply_tokens(window: u64) -> u32 {
    (window / 8).clamp(256, 4096) as u32
}

/// A tool as the model sees it: tools describe themselves with their own
/// type (DESIGN §2: `tools` does not use `llm`); the agent converts.
pub fn tool_spec(t: ToolDescription) -> ToolSpec {
    ToolSpec {
        name: t.name,
        description: t.description,
        parameters: t.parameters,
    }
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
    request: &ChatRequest<'_>,
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
                // Batches what streams faster than it can be written; flushed when dropped.
                // It waits while the editor is behind, which slows the stream down
                // instead of growing the queue to the editor (rpc::Peer::writable).
                let relay = visible.then(|| Relay::new(editor, &text_id, &thought_id));
                stream_once(env, request, relay.as_ref(), &mut partial).await
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
                let notice = crate::agent::notices::retrying(
                    &format!("Model endpoint: {}", err.short()),
                    attempt + 1,
                    policy.max_retries + 1,
                    &human_delay(delay),
                );
                if !crate::agent::notices::send(session, notice) {
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
                }
                if !retry_wait(delay, cancel).await {
                    return Ok(Outcome::Cancelled {
                        partial: String::new(),
                    });
                }
            }
            None => return Err(to_rpc_error(env, &err, attempt)),
        }
    }
}

/// The wait before a retry: `delay` (from [`RetryPolicy::delay`]) unless the
/// turn is cancelled first (ACP §6 `session/cancel` ends the wait at once).
/// Returns `false` when cancelled.
async fn retry_wait(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

/// One attempt: streams the reply, relaying text and thoughts when `relay`
/// is set; `partial` collects the text shown so far. When tools are offered,
/// text that may be a call written as text is held back
/// ([`text_calls::Holdback`]) and, when the reply has no structured call,
/// taken as its calls ([`with_text_calls`]); held text that is no call is
/// shown at the end.
async fn stream_once(
    env: &TurnEnv,
    request: &ChatRequest<'_>,
    relay: Option<&Relay>,
    partial: &mut String,
) -> Result<Completion, LlmError> {
    let mut stream = env.model.stream(request).await?;
    let mut hold = (!request.tools.is_empty()).then(text_calls::Holdback::default);
    while let Some(event) = stream.next().await {
        match event? {
            Event::Text(t) => {
                let t = match hold.as_mut() {
                    Some(h) => h.push(&t),
                    None => t,
                };
                if t.is_empty() {
                    continue;
                }
                partial.push_str(&t);
                if let Some(relay) = relay {
                    relay.text(t).await;
                }
            }
            Event::Reasoning(t) => {
                if let Some(relay) = relay {
                    relay.thought(t).await;
                }
            }
            Event::ToolCallStarted { .. } => {}
            Event::Done(c) => {
                let (c, taken) = with_text_calls(c, request);
                let held = hold.map(text_calls::Holdback::finish).unwrap_or_default();
                // Held text is shown unless it was taken as calls.
                if !held.is_empty() && !taken {
                    partial.push_str(&held);
                    if let Some(relay) = relay {
                        relay.text(held).await;
                    }
                }
                return Ok(c);
            }
        }
    }
    Err(LlmError::Interrupted {
        url: env.settings.base_url.clone(),
        reason: "the stream ended early".into(),
    })
}

/// A reply without structured calls whose text holds calls to tools
/// ([`text_calls::extract`]) becomes a reply with those calls; its text is
/// what surrounds them. The flag: the text is not to be shown (it was
/// taken as calls, or is a call that does not parse).
fn with_text_calls(mut c: Completion, request: &ChatRequest<'_>) -> (Completion, bool) {
    if !c.tool_calls.is_empty() || request.tools.is_empty() {
        return (c, false);
    }
    let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    let Some(found) = text_calls::extract(&c.text, &offered) else {
        // A call that does not parse goes back to the model (the turn
        // does that); it is never shown as the answer.
        let broken = text_calls::broken_call(&c.text, &offered).is_some();
        return (c, broken);
    };
    // Text inside content is not a call: a reply that quotes a call from a
    // file, a tool's output or the prompt stays an answer.
    if text_calls::quoted_in(&found, &contents(request)) {
        tracing::warn!("a call written as text quotes content the model read; not run");
        return (c, false);
    }
    tracing::info!(
        calls = found.calls.len(),
        "tool calls written as text taken as calls"
    );
    c.text = found.prose;
    c.tool_calls = found.calls;
    for call in &mut c.tool_calls {
        if let Some(tool) = request.tools.iter().find(|t| t.name == call.name) {
            text_calls::fill_sole_parameter(call, &tool.parameters);
        }
    }
    (c, true)
}

/// The text the model was given rather than wrote: the system prompt, the
/// user's messages and the tools' results.
fn contents<'a>(request: &'a ChatRequest<'_>) -> Vec<&'a str> {
    let mut out: Vec<&str> = request.system.as_deref().into_iter().collect();
    for m in request.messages {
        match m {
            ChatMessage::System(s) => out.push(s),
            ChatMessage::Tool { content, .. } => out.push(content),
            ChatMessage::User(parts) => out.extend(parts.iter().filter_map(|p| match p {
                crate::llm::UserPart::Text(t) => Some(t.as_str()),
                _ => None,
            })),
            ChatMessage::Assistant { .. } => {}
        }
    }
    out
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
            "{url} rejected the API key ({message}); check {} ({})",
            s.key_hint(),
            s.endpoint_origin()
        ))
        .with_data(data),
        // The user's settings point at the wrong place: invalid params.
        LlmError::Status { status: 404, url, message, .. } => {
            let v1 = if s.base_url.ends_with("/v1") {
                String::new()
            } else {
                format!(
                    "; OpenAI-compatible servers usually serve under /v1: try {}/v1",
                    s.base_url
                )
            };
            RpcError::invalid_params(format!(
                "{url} answered HTTP 404 ({message}): check the model name {:?} (from {}) and the base URL {} ({}){v1}",
                env.model_id,
                s.model_source.describe("model"),
                s.base_url,
                s.endpoint_origin()
            ))
            .with_data(data)
        }
        LlmError::Connect { url, reason } if crate::llm::retry::refused_on_loopback(err) => {
            RpcError::invalid_params(format!(
                "nothing listens at {url} (connection refused: {reason}): start {} there, or point acp-coder at another endpoint ({}; {})",
                crate::llm::discover::expected_server(&s.base_url),
                s.endpoint_origin(),
                s.base_url_source.fix("base_url", "--base-url", crate::config::BASE_URL_ENV)
            ))
            .with_data(data)
        }
        other if attempts > 1 => {
            RpcError::internal(format!("the model request failed after {attempts} attempts: {other}")).with_data(data)
        }
        other => RpcError::internal(format!("the model request failed: {other}")).with_data(data),
    }
}

#[cfg(test)]
#[path = "model_call_timer_tests.rs"]
mod timer_tests;
