//! MCP sampling (issue 18 item 2): a server's `sampling/createMessage` (MCP
//! 2025-11-25 "Client features: Sampling") answered by the session's model.
//!
//! Rules, each the safe reading of the spec's "SHOULD"s:
//! - Only while the agent runs a tool of that very server in a prompt turn:
//!   the request is shown beside that tool call and ends with the turn. A
//!   request at any other time (no turn, or a turn that is not waiting on
//!   this server) gets an MCP error saying so; there is no turn to attach it
//!   to and no user watching.
//! - Never in `read-only` mode (refused without asking); otherwise only after
//!   the user allows it through `session/request_permission` (ACP §8), in
//!   every mode: sampling spends the user's tokens on text a server chose.
//!   "Always for this server" lasts for the session, like the other grants
//!   (src/agent/policy/).
//! - The session's conversation is never given to a server: `includeContext`
//!   other than `"none"` is logged and noted in the result's `_meta`, and no
//!   context is added (the client "MAY ignore" it; `sampling.context` is not
//!   declared).
//! - Bounded: at most [`MAX_REQUEST_BYTES`] of messages and system prompt.
//! - Counted in the turn's usage and cost, cancelled with the turn
//!   ([`TurnModel`], implemented by the agent's turn engine).
//!
//! Servers are told `sampling: {}` (no `tools`, no `context`): tool use in
//! sampling is refused with an error naming the field.
#![allow(deprecated)] // rmcp marks sampling deprecated by SEP-2577, a future protocol version.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::ErrorData;
use rmcp::model::{
    ContextInclusion, CreateMessageRequestParams, CreateMessageResult, Role, SamplingMessage,
    SamplingMessageContentBlock,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::acp::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use crate::editor::Editor;
use crate::llm::{ChatMessage, Completion, FinishReason, UserPart};

use super::client::Progress;

/// Most bytes of text, image and audio data (and system prompt) one request
/// may carry: a hostile server must not make the agent hold or send
/// megabytes to the model endpoint.
pub const MAX_REQUEST_BYTES: usize = 1024 * 1024;
/// How much of the request the permission prompt quotes.
const SHOWN_CHARS: usize = 1500;

/// What the running prompt turn lends to sampling: its model, mode and
/// cancellation. The model call counts its usage in the turn.
#[async_trait::async_trait]
pub trait TurnModel: Send + Sync {
    /// The session's model for this turn.
    fn model_id(&self) -> String;
    /// The models the configuration names (`model`, `[models."…"]`).
    fn known_models(&self) -> Vec<String>;
    fn accepts_images(&self, model: &str) -> bool;
    /// Whether the model takes `input_audio` parts (per-model `audio`).
    fn accepts_audio(&self, _model: &str) -> bool {
        false
    }
    fn read_only(&self) -> bool;
    /// The turn's token: `session/cancel` triggers it.
    fn cancel(&self) -> CancellationToken;
    /// One model call (no tools), with the turn's retries; `Err` is a
    /// message for the server (the endpoint's failure in words).
    async fn complete(&self, model: &str, request: Sample) -> Result<Completion, String>;
}

/// The model-side request of one sampling call.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    pub stop: Vec<String>,
}

/// The session's sampling state, shared by its servers: the running turn
/// (if any) and the servers the user always allows.
#[derive(Default)]
pub struct Hub {
    turn: Mutex<Option<(u64, Arc<dyn TurnModel>)>>,
    seq: std::sync::atomic::AtomicU64,
    always: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("turn", &lock(&self.turn).is_some())
            .finish()
    }
}

/// Lends the turn to sampling until dropped (see [`Hub::lend`]).
pub struct Lent {
    hub: Arc<Hub>,
    seq: u64,
}

impl Drop for Lent {
    fn drop(&mut self) {
        let mut turn = lock(&self.hub.turn);
        if turn.as_ref().is_some_and(|(s, _)| *s == self.seq) {
            *turn = None;
        }
    }
}

impl Hub {
    /// Makes `turn` the one sampling requests use, while the guard lives.
    pub fn lend(self: &Arc<Self>, turn: Arc<dyn TurnModel>) -> Lent {
        let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *lock(&self.turn) = Some((seq, turn));
        Lent {
            hub: self.clone(),
            seq,
        }
    }

    fn current(&self) -> Option<Arc<dyn TurnModel>> {
        lock(&self.turn)
            .as_ref()
            .map(|(_, t)| t.clone())
            .filter(|t| !t.cancel().is_cancelled())
    }
}

/// One server's side of sampling: answers its `sampling/createMessage`.
pub struct Sampler {
    hub: Arc<Hub>,
    editor: Editor,
    server: String,
    /// The server's running tool calls (the request is shown beside one).
    calls: Arc<Progress>,
}

fn refuse(message: String) -> ErrorData {
    ErrorData::invalid_request(message, None)
}

impl Sampler {
    pub fn new(hub: Arc<Hub>, editor: Editor, server: &str, calls: Arc<Progress>) -> Self {
        Self {
            hub,
            editor,
            server: server.to_owned(),
            calls,
        }
    }

    /// Answers one `sampling/createMessage`.
    /// `withdrawn` fires when the server cancels its request
    /// (`notifications/cancelled`): the prompt or the model call ends then.
    pub async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        withdrawn: CancellationToken,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.create_message_in(params, withdrawn, None).await
    }

    /// Answers one sampling request of ACP tool call `parent` (an input
    /// request of a call, `super::input`), or of the server's running tool
    /// call when `None`.
    pub async fn create_message_in(
        &self,
        params: CreateMessageRequestParams,
        withdrawn: CancellationToken,
        parent: Option<&str>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let server = &self.server;
        let (turn, parent) = self.admit(&params, parent)?;
        let model = pick_model(&params, &turn.model_id(), &turn.known_models());
        let sample = to_sample(
            &params,
            turn.accepts_images(&model),
            turn.accepts_audio(&model),
        )?;
        let withheld = params
            .include_context
            .as_ref()
            .filter(|c| !matches!(c, ContextInclusion::None))
            .map(|c| serde_json::to_value(c).unwrap_or_default());
        if let Some(c) = &withheld {
            tracing::info!(server, include_context = %c, "MCP sampling asked for context: none is supplied (the conversation is not shared with servers)");
        }
        let id = format!("{parent}_sampling_{:08x}", fastrand::u32(..));
        self.announce(&id, &params, &model, withheld.is_some());
        let cancel = turn.cancel();
        let cancelled = || {
            self.finish(&id, ToolCallStatus::Failed, "Cancelled with the turn.");
            ErrorData::internal_error(
                "sampling cancelled: the user cancelled the agent's turn".to_owned(),
                None,
            )
        };
        let gone = || {
            self.finish(
                &id,
                ToolCallStatus::Failed,
                "The server withdrew the request.",
            );
            ErrorData::internal_error("sampling withdrawn by the server".to_owned(), None)
        };
        if !lock(&self.hub.always).contains(server) {
            let allowed = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                _ = withdrawn.cancelled() => return Err(gone()),
                a = self.ask(&id) => a,
            };
            if let Err(why) = allowed {
                self.finish(&id, ToolCallStatus::Failed, &why);
                return Err(refuse(format!("sampling refused: {why}")));
            }
        }
        self.editor.update(&SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(id.clone()).status(ToolCallStatus::InProgress),
        ));
        let done = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(cancelled()),
            _ = withdrawn.cancelled() => return Err(gone()),
            r = turn.complete(&model, sample) => r,
        };
        let completion = match done {
            Ok(c) => c,
            Err(e) if cancel.is_cancelled() => {
                tracing::debug!(server, error = %e, "sampling ended by the cancel");
                return Err(cancelled());
            }
            Err(e) => {
                self.finish(&id, ToolCallStatus::Failed, &e);
                return Err(ErrorData::internal_error(
                    format!("sampling failed: {e}"),
                    None,
                ));
            }
        };
        tracing::info!(server, model = %model, chars = completion.text.len(), "MCP sampling answered");
        self.finish(&id, ToolCallStatus::Completed, &completion.text);
        Ok(answer(completion, model, withheld))
    }

    /// The checks before anything is shown: the size bound, a running tool
    /// call of this server in a turn (whose model answers), not read-only.
    fn admit(
        &self,
        params: &CreateMessageRequestParams,
        parent: Option<&str>,
    ) -> Result<(Arc<dyn TurnModel>, String), ErrorData> {
        let server = &self.server;
        let size = request_bytes(params);
        if size > MAX_REQUEST_BYTES {
            tracing::warn!(server, size, "MCP sampling request too large: refused");
            return Err(ErrorData::invalid_params(
                format!(
                    "sampling/createMessage: the messages and system prompt hold {size} bytes; \
                     acp-coder takes at most {MAX_REQUEST_BYTES} bytes (1 MB) per request: send less"
                ),
                None,
            ));
        }
        let parent = parent
            .map(str::to_owned)
            .or_else(|| self.calls.running_call());
        let (Some(turn), Some(parent)) = (self.hub.current(), parent) else {
            tracing::info!(server, "MCP sampling request outside a tool call: refused");
            return Err(refuse(format!(
                "sampling is only available while the agent is running a tool of this server \
                 ({server}) in a prompt turn; send sampling/createMessage from within a tools/call"
            )));
        };
        if turn.read_only() {
            tracing::info!(server, "MCP sampling request in read-only mode: refused");
            return Err(refuse(format!(
                "sampling refused: the session is in read-only mode, where servers' model \
                 requests are not run (the user can switch modes); server {server}"
            )));
        }
        Ok((turn, parent))
    }

    /// The request as a tool call of its own in the editor, before asking.
    fn announce(&self, id: &str, params: &CreateMessageRequestParams, model: &str, withheld: bool) {
        let server = &self.server;
        let shown = describe(server, params, model, withheld);
        self.editor.update(&SessionUpdate::ToolCall(ToolCall {
            tool_call_id: id.to_owned(),
            title: crate::tools::sanitize_title(&format!("Sampling request from {server}"), 120),
            name: None,
            kind: ToolKind::Other,
            status: ToolCallStatus::Pending,
            content: vec![ToolCallContent::text(shown)],
            locations: Vec::new(),
            raw_input: Some(json!({
                "server": server, "model": model, "maxTokens": params.max_tokens,
            })),
            raw_output: None,
            meta: None,
        }));
    }

    /// The permission request; `Err` says why it is not allowed.
    async fn ask(&self, id: &str) -> Result<(), String> {
        let server = &self.server;
        let options = vec![
            option("allow", "Allow once", PermissionOptionKind::AllowOnce),
            option(
                "always",
                &format!("Always allow {server} (this session)"),
                PermissionOptionKind::AllowAlways,
            ),
            option("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let answer = self
            .editor
            .request_permission(ToolCallUpdate::new(id), options.clone())
            .await;
        let kind = match answer {
            Ok(PermissionOutcome::Selected { option_id }) => options
                .iter()
                .find(|o| o.option_id == option_id)
                .map(|o| o.kind),
            Ok(PermissionOutcome::Cancelled) => None,
            Err(e) => {
                return Err(format!(
                    "the permission request failed in the editor ({})",
                    e.message
                ));
            }
        };
        match kind {
            Some(PermissionOptionKind::AllowOnce) => Ok(()),
            Some(PermissionOptionKind::AllowAlways) => {
                lock(&self.hub.always).insert(server.clone());
                Ok(())
            }
            _ => Err("the user rejected the request".to_owned()),
        }
    }

    fn finish(&self, id: &str, status: ToolCallStatus, text: &str) {
        self.editor.update(&SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(id)
                .status(status)
                .content(vec![ToolCallContent::text(clip(text, SHOWN_CHARS))]),
        ));
    }
}

fn option(id: &str, name: &str, kind: PermissionOptionKind) -> PermissionOption {
    PermissionOption {
        option_id: id.to_owned(),
        name: name.to_owned(),
        kind,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Bytes of text and media data the request carries.
fn request_bytes(p: &CreateMessageRequestParams) -> usize {
    let blocks: usize = p
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .map(|b| match b {
            SamplingMessageContentBlock::Text(t) => t.text.len(),
            SamplingMessageContentBlock::Image(i) => i.data.len(),
            SamplingMessageContentBlock::Audio(a) => a.data.len(),
            other => serde_json::to_string(other).map_or(0, |s| s.len()),
        })
        .sum();
    blocks + p.system_prompt.as_ref().map_or(0, String::len)
}

/// The model a request gets: the first hint that names a model the
/// configuration knows (exactly, else as a part of its name, as the spec's
/// hints are "substrings of a model name"), otherwise the session's model.
/// The cost/speed/intelligence priorities have no counterpart here.
fn pick_model(p: &CreateMessageRequestParams, session: &str, known: &[String]) -> String {
    let hints = p
        .model_preferences
        .as_ref()
        .and_then(|m| m.hints.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|h| h.name.as_deref())
        .filter(|h| !h.trim().is_empty());
    for hint in hints {
        if let Some(m) = known.iter().find(|m| *m == hint) {
            return m.clone();
        }
        if hint.len() >= 3
            && let Some(m) = known.iter().find(|m| m.contains(hint))
        {
            return m.clone();
        }
    }
    session.to_owned()
}

/// The request as model messages: the server's system prompt, then its
/// messages; images as image parts when the model takes them (user
/// messages), anything else the chat API cannot carry as a note.
fn to_sample(
    p: &CreateMessageRequestParams,
    images: bool,
    audio: bool,
) -> Result<Sample, ErrorData> {
    check_request(p)?;
    let mut messages = Vec::with_capacity(p.messages.len() + 1);
    if let Some(system) = p.system_prompt.as_deref().filter(|s| !s.trim().is_empty()) {
        messages.push(ChatMessage::System(system.to_owned()));
    }
    for (i, m) in p.messages.iter().enumerate() {
        let parts = m
            .content
            .iter()
            .map(|block| to_part(block, &m.role, images, audio, i))
            .collect::<Result<Vec<_>, _>>()?;
        messages.push(to_message(&m.role, parts));
    }
    Ok(Sample {
        messages,
        max_tokens: p.max_tokens,
        temperature: p.temperature.filter(|t| t.is_finite() && *t >= 0.0),
        stop: p.stop_sequences.clone().unwrap_or_default(),
    })
}

/// Refuses what this client cannot serve, naming the field: no messages, no
/// tokens, or tools (it does not declare `sampling.tools`).
fn check_request(p: &CreateMessageRequestParams) -> Result<(), ErrorData> {
    if p.messages.is_empty() {
        return Err(ErrorData::invalid_params(
            "sampling/createMessage: messages is empty; send at least one user message",
            None,
        ));
    }
    if p.max_tokens == 0 {
        return Err(ErrorData::invalid_params(
            "sampling/createMessage: maxTokens must be at least 1",
            None,
        ));
    }
    if p.tools.as_ref().is_some_and(|t| !t.is_empty()) || p.tool_choice.is_some() {
        return Err(ErrorData::invalid_params(
            "sampling/createMessage: tools and toolChoice are not supported by this client \
             (it does not declare sampling.tools); send the request without them",
            None,
        ));
    }
    Ok(())
}

/// One content block of message `i`: text as is, an image or audio the model
/// takes (in a user message) as itself, otherwise a note naming it.
fn to_part(
    block: &SamplingMessageContentBlock,
    role: &Role,
    images: bool,
    audio: bool,
    i: usize,
) -> Result<UserPart, ErrorData> {
    let user = *role == Role::User;
    Ok(match block {
        SamplingMessageContentBlock::Text(t) => UserPart::Text(t.text.clone()),
        SamplingMessageContentBlock::Image(img)
            if images && user && img.mime_type.starts_with("image/") =>
        {
            UserPart::ImageUrl(format!("data:{};base64,{}", img.mime_type, img.data))
        }
        SamplingMessageContentBlock::Image(img) => UserPart::Text(format!(
            "[image: {}, not shown: this model does not take images here]",
            img.mime_type
        )),
        SamplingMessageContentBlock::Audio(a)
            if audio && user && crate::mcp::rich::audio_format(&a.mime_type).is_some() =>
        {
            UserPart::InputAudio {
                data: a.data.clone(),
                format: crate::mcp::rich::audio_format(&a.mime_type)
                    .unwrap_or("wav")
                    .to_owned(),
            }
        }
        SamplingMessageContentBlock::Audio(a) => UserPart::Text(format!(
            "[audio: {}, not played: the model endpoint takes no audio]",
            a.mime_type
        )),
        _ => {
            return Err(ErrorData::invalid_params(
                format!(
                    "sampling/createMessage: messages[{i}] holds tool_use/tool_result content, \
                     which needs sampling.tools; this client does not declare it"
                ),
                None,
            ));
        }
    })
}

/// A message of `role` from its parts; an assistant's are joined as text.
fn to_message(role: &Role, parts: Vec<UserPart>) -> ChatMessage {
    match role {
        Role::User => ChatMessage::User(parts),
        Role::Assistant => ChatMessage::Assistant {
            text: parts
                .into_iter()
                .map(|p| match p {
                    UserPart::Text(t) | UserPart::ImageUrl(t) => t,
                    UserPart::InputAudio { format, .. } => format!("[audio: {format}]"),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            reasoning: String::new(),
            tool_calls: Vec::new(),
        },
    }
}

/// What the permission prompt shows: the server, the model, the limit, the
/// system prompt and the messages, each cut to a readable length.
fn describe(server: &str, p: &CreateMessageRequestParams, model: &str, context: bool) -> String {
    let mut text = format!(
        "The MCP server {server} asks the model ({model}) for a reply of at most {} tokens.",
        p.max_tokens
    );
    if let Some(s) = &p.system_prompt {
        text.push_str(&format!("\n\nSystem prompt:\n{}", clip(s, SHOWN_CHARS)));
    }
    let mut budget = SHOWN_CHARS * 2;
    for m in &p.messages {
        let role = if m.role == Role::User {
            "user"
        } else {
            "assistant"
        };
        for b in m.content.iter() {
            let part = match b {
                SamplingMessageContentBlock::Text(t) => clip(&t.text, SHOWN_CHARS.min(budget)),
                SamplingMessageContentBlock::Image(i) => format!("[image {}]", i.mime_type),
                SamplingMessageContentBlock::Audio(a) => format!("[audio {}]", a.mime_type),
                _ => "[tool content]".to_owned(),
            };
            budget = budget.saturating_sub(part.len());
            text.push_str(&format!("\n\n{role}: {part}"));
            if budget == 0 {
                text.push_str("\n\n(more messages not shown)");
                return text;
            }
        }
    }
    if context {
        text.push_str("\n\nIt asked for the conversation as context; none is given to servers.");
    }
    text
}

fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let head = crate::utf8::head(text, max);
    format!("{head}… ({} characters in all)", text.chars().count())
}

/// MCP's stop reason for the endpoint's `finish_reason`. Chat-completions
/// endpoints report a stop sequence as `stop` like a natural end, so
/// `stopSequence` cannot be told apart and `endTurn` is said.
fn stop_reason(f: Option<&FinishReason>) -> &str {
    match f {
        Some(FinishReason::Length) => CreateMessageResult::STOP_REASON_END_MAX_TOKEN,
        Some(FinishReason::ToolCalls) => CreateMessageResult::STOP_REASON_TOOL_USE,
        Some(FinishReason::ContentFilter) => "contentFilter",
        Some(FinishReason::Other(s)) if s == "stop_sequence" => {
            CreateMessageResult::STOP_REASON_END_SEQUENCE
        }
        _ => CreateMessageResult::STOP_REASON_END_TURN,
    }
}

/// The MCP result: the model's text as the assistant's message, the model
/// used, the stop reason; a note in `_meta` when context was asked for.
fn answer(completion: Completion, model: String, withheld: Option<Value>) -> CreateMessageResult {
    let mut message = SamplingMessage::assistant_text(completion.text);
    if let Some(c) = withheld {
        let mut meta = serde_json::Map::new();
        meta.insert(
            "acp-coder/includeContext".into(),
            json!(format!(
                "{c} was asked for; no context is supplied to servers"
            )),
        );
        message.meta = Some(rmcp::model::MetaObject(meta));
    }
    let mut result = CreateMessageResult::new(message, model);
    result.stop_reason = Some(stop_reason(completion.finish_reason.as_ref()).to_owned());
    result
}

#[cfg(test)]
#[path = "sampling_tests.rs"]
mod tests;
