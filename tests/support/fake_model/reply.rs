//! Scripted replies: streams, fixed bodies, floods, and how they are timed.
use super::*;

/// Splits `s` into `parts` non-empty pieces at char boundaries (fewer if `s`
/// is short; one empty piece if `s` is empty).
pub fn split_str(s: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let parts = parts.clamp(1, chars.len());
    let base = chars.len() / parts;
    let extra = chars.len() % parts;
    let mut out = Vec::with_capacity(parts);
    let mut at = 0;
    for i in 0..parts {
        let len = base + usize::from(i < extra);
        out.push(chars[at..at + len].iter().collect());
        at += len;
    }
    out
}

/// One event of an SSE stream.
#[derive(Debug, Clone)]
pub enum SseEvent {
    /// Written as `data: <json>\n\n`.
    Data(Value),
    /// Written verbatim (for comments, malformed data, odd framing…).
    Raw(String),
}

#[derive(Debug, Clone)]
pub(super) enum StreamEnd {
    Complete,
    /// Close the socket after this many events (no terminating chunk).
    CutAfter(usize),
    /// Stop after this many events and wait until the client goes away.
    HangAfter(usize),
}

#[derive(Debug, Clone)]
pub(super) enum Body {
    Stream {
        events: Vec<SseEvent>,
        done: bool,
        end: StreamEnd,
    },
    Fixed {
        status: u16,
        content_type: String,
        body: String,
    },
    /// Writes without end (up to 1 GiB) until the client goes away.
    Flood(Flood),
}

/// What a hostile or broken endpoint floods the agent with (issue 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// One `data:` line that never ends.
    Line,
    /// Text chunks that never stop.
    Text,
    /// One tool call whose arguments never end.
    ToolArguments,
}

/// One scripted HTTP reply to `POST /v1/chat/completions`.
#[derive(Debug, Clone)]
pub struct Reply {
    pub(super) body: Body,
    pub(super) headers: Vec<(String, String)>,
    pub(super) delay: Duration,
    pub(super) first_byte_delay: Duration,
    /// Not answered before this many chat requests have arrived.
    pub(super) held_for_chats: usize,
}

impl Reply {
    pub(super) fn from_body(body: Body) -> Self {
        Reply {
            body,
            headers: Vec::new(),
            delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
            held_for_chats: 0,
        }
    }

    /// An SSE stream of these chunks, then `data: [DONE]`.
    pub fn stream(chunks: impl IntoIterator<Item = Value>) -> Self {
        Self::from_body(Body::Stream {
            events: chunks.into_iter().map(SseEvent::Data).collect(),
            done: true,
            end: StreamEnd::Complete,
        })
    }

    /// Streams `text` as a few content deltas, then `finish_reason: "stop"`.
    pub fn text(text: &str) -> Self {
        Self::text_with_finish(text, "stop")
    }

    /// Streams `text` as a few content deltas, then the given finish reason.
    pub fn text_with_finish(text: &str, finish_reason: &str) -> Self {
        let mut chunks = vec![chunk::role()];
        chunks.extend(split_str(text, 3).iter().map(|p| chunk::text(p)));
        chunks.push(chunk::finish(finish_reason));
        Self::stream(chunks)
    }

    /// Streams reasoning in the `reasoning_content` field, then text, then `stop`.
    pub fn reasoning_then_text(reasoning: &str, text: &str) -> Self {
        Self::thinking_then_text(chunk::reasoning_content, reasoning, text)
    }

    /// Streams reasoning in the `reasoning` field, then text, then `stop`.
    pub fn reasoning_field_then_text(reasoning: &str, text: &str) -> Self {
        Self::thinking_then_text(chunk::reasoning, reasoning, text)
    }

    pub(super) fn thinking_then_text(make: fn(&str) -> Value, reasoning: &str, text: &str) -> Self {
        let mut chunks = vec![chunk::role()];
        chunks.extend(split_str(reasoning, 2).iter().map(|p| make(p)));
        chunks.extend(split_str(text, 2).iter().map(|p| chunk::text(p)));
        chunks.push(chunk::finish("stop"));
        Self::stream(chunks)
    }

    /// Streams one tool call (arguments split across three deltas), then
    /// `finish_reason: "tool_calls"`.
    pub fn tool_call(id: &str, name: &str, arguments: Value) -> Self {
        Self::tool_calls([(id, name, arguments)])
    }

    /// Streams several tool calls (indices 0, 1, …), then `tool_calls`.
    pub fn tool_calls<'a>(calls: impl IntoIterator<Item = (&'a str, &'a str, Value)>) -> Self {
        let mut chunks = vec![chunk::role()];
        for (index, (id, name, arguments)) in calls.into_iter().enumerate() {
            let index = u32::try_from(index).expect("few tool calls");
            chunks.push(chunk::tool_call_start(index, id, name));
            for part in split_str(&arguments.to_string(), 3) {
                chunks.push(chunk::tool_call_args(index, &part));
            }
        }
        chunks.push(chunk::finish("tool_calls"));
        Self::stream(chunks)
    }

    /// A non-streaming `chat.completion` JSON reply with this text.
    pub fn completion(text: &str) -> Self {
        Self::json(json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": FAKE_MODEL_ID,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        }))
    }

    /// `200 OK` with this JSON body.
    pub fn json(body: Value) -> Self {
        Self::status(200, body)
    }

    /// Any status with a JSON body.
    pub fn status(status: u16, body: Value) -> Self {
        Self::raw_body(status, "application/json", body.to_string())
    }

    /// Any status, content type and body.
    pub fn raw_body(status: u16, content_type: &str, body: impl Into<String>) -> Self {
        Self::from_body(Body::Fixed {
            status,
            content_type: content_type.to_owned(),
            body: body.into(),
        })
    }

    /// An error status with an OpenAI-shaped error body.
    pub fn error(status: u16, message: &str) -> Self {
        let kind = match status {
            400 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            _ => "server_error",
        };
        Self::status(
            status,
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
        )
    }

    /// `429` with `Retry-After: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Self {
        Self::error(429, "Rate limit reached").header("Retry-After", &retry_after_secs.to_string())
    }

    /// A reply that never ends (see [`Flood`]).
    pub fn flood(kind: Flood) -> Self {
        Self::from_body(Body::Flood(kind))
    }

    /// Appends a data chunk to a stream.
    pub fn chunk(mut self, chunk: Value) -> Self {
        self.events_mut().push(SseEvent::Data(chunk));
        self
    }

    /// Appends raw text to a stream, written verbatim (e.g. `": ping\n\n"` or
    /// `"data: {not json\n\n"`).
    pub fn raw(mut self, text: &str) -> Self {
        self.events_mut().push(SseEvent::Raw(text.to_owned()));
        self
    }

    /// Appends a usage chunk to a stream.
    pub fn with_usage(self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.chunk(chunk::usage(prompt_tokens, completion_tokens))
    }

    /// Ends the stream without `data: [DONE]` (the body still ends cleanly).
    pub fn without_done(mut self) -> Self {
        if let Body::Stream { done, .. } = &mut self.body {
            *done = false;
        }
        self
    }

    /// Closes the connection abruptly after `n` events (chunks).
    pub fn cut_after(mut self, n: usize) -> Self {
        if let Body::Stream { end, .. } = &mut self.body {
            *end = StreamEnd::CutAfter(n);
        }
        self
    }

    /// Sends `n` events, then sends nothing more until the client
    /// disconnects (counted in [`FakeModel::disconnects`]).
    pub fn hang_after(mut self, n: usize) -> Self {
        if let Body::Stream { end, .. } = &mut self.body {
            *end = StreamEnd::HangAfter(n);
        }
        self
    }

    /// Waits this long between stream events.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Waits this long before sending the status line.
    pub fn first_byte_delay(mut self, delay: Duration) -> Self {
        self.first_byte_delay = delay;
        self
    }

    /// Holds the reply until `n` chat requests have arrived (a server that
    /// answers one request only once another one came).
    pub fn held_until_chat_requests(mut self, n: usize) -> Self {
        self.held_for_chats = n;
        self
    }

    /// Adds a response header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    pub(super) fn events_mut(&mut self) -> &mut Vec<SseEvent> {
        match &mut self.body {
            Body::Stream { events, .. } => events,
            Body::Fixed { .. } | Body::Flood(_) => panic!("this Reply is not a stream"),
        }
    }
}
