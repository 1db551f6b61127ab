//! The model: an OpenAI-compatible chat-completions client with streaming,
//! on async-openai (DESIGN §2).
//!
//! async-openai sends the request (through reqwest: proxies, `NO_PROXY`,
//! redirects and TLS as reqwest does them) and decodes the SSE stream. Its
//! typed chunks reject what many OpenAI-compatible servers send (tool-call
//! deltas without `index`, odd `finish_reason`s, `{"error": …}` data lines,
//! reasoning text in `reasoning_content`/`reasoning`), so it runs with
//! `byot`: the request is our [`ChatRequest`], each payload is taken raw and
//! read by our lenient types ([`assemble`]). Its `middleware` feature puts
//! our layer ([`layer`]) under it, which keeps the status, `Retry-After` and
//! odd error bodies of failures, bounds one SSE event, and replaces its
//! retries with none: ours ([`RetryPolicy`]) show the user what happens.
mod assemble;
mod chat;
pub mod discover;
mod layer;
mod openai;
mod redirect;
pub mod retry;
mod stream;
pub mod text_calls;
mod window;

pub use assemble::{Assembler, ToolCallRequest};
pub use chat::{ChatMessage, ChatRequest, ToolSpec, UserPart};
pub use openai::OpenAiModel;
pub use retry::RetryPolicy;

use std::time::Duration;

use futures::stream::BoxStream;

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

/// Why the model stopped, as the server said it (normalised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    Stop,
    Length,
    ToolCalls,
    ContentFilter,
    Other(String),
}

impl FinishReason {
    pub fn parse(s: &str) -> Option<FinishReason> {
        Some(match s {
            "" => return None,
            "stop" | "end_turn" | "eos" => FinishReason::Stop,
            "length" | "max_tokens" => FinishReason::Length,
            "tool_calls" | "function_call" | "tool_use" => FinishReason::ToolCalls,
            "content_filter" | "refusal" => FinishReason::ContentFilter,
            other => FinishReason::Other(other.to_owned()),
        })
    }
}

/// One event of a streamed reply, already assembled.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Text(String),
    Reasoning(String),
    /// A tool call was announced (its arguments are still streaming).
    ToolCallStarted {
        id: String,
        name: String,
    },
    /// The reply is complete.
    Done(Completion),
}

/// The assembled end of one model call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<ToolCallRequest>,
    pub finish_reason: Option<FinishReason>,
    pub usage: Option<Usage>,
}

pub type EventStream = BoxStream<'static, Result<Event, LlmError>>;

/// Failures of a model call. Messages name the endpoint and never the key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("{url} answered HTTP {status}: {message}")]
    Status {
        status: u16,
        url: String,
        message: String,
        retry_after: Option<Duration>,
    },
    #[error("cannot reach {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("{url} sent nothing for {} s", after.as_secs())]
    Timeout { url: String, after: Duration },
    #[error("the connection to {url} dropped mid-reply: {reason}")]
    Interrupted { url: String, reason: String },
    #[error("{url} sent a reply that is not valid chat-completion JSON: {reason}")]
    Decode { url: String, reason: String },
    #[error("{url} reported an error in the stream: {message}")]
    Api { url: String, message: String },
    /// A reply passed one of the [`StreamLimits`] (issue 14 item 5).
    #[error(
        "the reply from {url} passed {limit} {what}, so the turn stops here; \
         if the endpoint really sends that much, raise `{key}` in the config file"
    )]
    Limit {
        url: String,
        what: &'static str,
        limit: usize,
        key: &'static str,
    },
}

/// How much one reply may hold in memory (issue 14 item 5: a hostile or
/// broken endpoint grew the agent without bound). Each is a config key of
/// the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// One SSE event (its lines together), and a whole plain-JSON reply:
    /// `max_sse_event_bytes`.
    pub max_event_bytes: usize,
    /// The reply's text and reasoning together: `max_reply_text_bytes`.
    pub max_text_bytes: usize,
    /// All tool-call arguments of the reply: `max_tool_arguments_bytes`.
    pub max_tool_arguments_bytes: usize,
}

impl Default for StreamLimits {
    /// 8 MiB each: about 2 M tokens, over ten times the longest output any
    /// current model produces in one reply.
    fn default() -> Self {
        StreamLimits {
            max_event_bytes: 8 << 20,
            max_text_bytes: 8 << 20,
            max_tool_arguments_bytes: 8 << 20,
        }
    }
}

impl LlmError {
    /// 429, 5xx, 408, timeouts, dropped connections and in-stream errors are worth retrying.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => {
                matches!(status, 408 | 409 | 425 | 429) || *status >= 500
            }
            LlmError::Connect { .. } | LlmError::Timeout { .. } | LlmError::Interrupted { .. } => {
                true
            }
            LlmError::Api { message, .. } => {
                let m = message.to_ascii_lowercase();
                m.contains("overloaded")
                    || m.contains("rate")
                    || m.contains("timeout")
                    || m.contains("unavailable")
            }
            LlmError::Decode { .. } | LlmError::Limit { .. } => false,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The error with its server-supplied text through the one redactor
    /// ([`crate::secrets::redact_endpoint_text`]: every known secret, this
    /// client's key and header values, and `sk-…`-shaped strings, which
    /// servers echo back partially in 401 messages).
    pub(super) fn redacted(mut self, secrets: &[String]) -> LlmError {
        match &mut self {
            LlmError::Status { message: text, .. }
            | LlmError::Api { message: text, .. }
            | LlmError::Connect { reason: text, .. }
            | LlmError::Interrupted { reason: text, .. }
            | LlmError::Decode { reason: text, .. } => {
                *text = crate::secrets::redact_endpoint_text(text, secrets)
            }
            LlmError::Timeout { .. } | LlmError::Limit { .. } => {}
        }
        self
    }

    /// A short reason for a status line ("HTTP 429", "connection dropped").
    pub fn short(&self) -> String {
        match self {
            LlmError::Status { status, .. } => format!("HTTP {status}"),
            LlmError::Connect { .. } => "endpoint unreachable".into(),
            LlmError::Timeout { .. } => "no reply in time".into(),
            LlmError::Interrupted { .. } => "connection dropped".into(),
            LlmError::Decode { .. } => "malformed reply".into(),
            LlmError::Api { .. } => "error in stream".into(),
            LlmError::Limit { .. } => "reply too large".into(),
        }
    }
}

/// A chat model. `stream` returns once the response headers arrived (errors
/// before that are returned directly); dropping the stream aborts the request.
#[async_trait::async_trait]
pub trait Model: Send + Sync {
    async fn stream(&self, request: &ChatRequest<'_>) -> Result<EventStream, LlmError>;
    async fn list_models(&self) -> Result<Vec<String>, LlmError>;

    /// The context window the server runs `model` with, when it says
    /// (`window`): asked once per endpoint and model in the process, then
    /// remembered. The asking goes on if the caller stops waiting.
    async fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }

    /// What [`Model::context_window`] learned, without asking.
    fn known_context_window(&self, model: &str) -> Option<u64> {
        self.known_server_window(model).map(|w| w.tokens)
    }

    /// What [`Model::context_window`] learned and where the server said it.
    fn known_server_window(&self, _model: &str) -> Option<ServerWindow> {
        None
    }
}

/// A context window a server reported, and where it said so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerWindow {
    pub tokens: u64,
    /// Which answer said it, for `/status` (e.g. "llama-server `/props` (n_ctx)").
    pub source: &'static str,
}
