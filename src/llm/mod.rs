//! The model: an OpenAI-compatible chat-completions client with streaming.
//!
//! Why not async-openai's typed streams: many OpenAI-compatible servers send
//! tool-call deltas without `index`, odd `finish_reason`s, chunks without
//! `id`/`created`, `{"error": …}` as an SSE data line, and reasoning text in
//! fields async-openai has no place for (NOTES). We need the HTTP status and
//! `Retry-After` of failures for the retry policy and the idle timeout per chunk,
//! so this module speaks HTTP with reqwest and decodes SSE itself, leniently.
mod assemble;
mod fastchunk;
mod h1;
mod io;
mod openai;
mod retry;
mod sse;
mod stream;
mod tls;
mod wire;

pub use assemble::{Assembler, ToolCallRequest};
pub use openai::OpenAiModel;
pub use retry::RetryPolicy;
pub use wire::{ChatMessage, ChatRequest, ToolSpec, UserPart};

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
            LlmError::Decode { .. } => false,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
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
        }
    }
}

/// A chat model. `stream` returns once the response headers arrived (errors
/// before that are returned directly); dropping the stream aborts the request.
#[async_trait::async_trait]
pub trait Model: Send + Sync {
    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, LlmError>;
    async fn list_models(&self) -> Result<Vec<String>, LlmError>;
}
