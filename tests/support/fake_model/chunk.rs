//! Builders for `chat.completion.chunk` objects.
use serde_json::{Value, json};

/// A chunk with one choice carrying `delta` and `finish_reason`.
pub fn with_delta(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": super::FAKE_MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    })
}

/// A chunk with an arbitrary delta and no finish reason.
pub fn delta(delta: Value) -> Value {
    with_delta(delta, None)
}

/// The usual first chunk: `{"role":"assistant","content":""}`.
pub fn role() -> Value {
    delta(json!({"role": "assistant", "content": ""}))
}

/// A text delta (`delta.content`).
pub fn text(text: &str) -> Value {
    delta(json!({"content": text}))
}

/// A reasoning delta in the `reasoning_content` field (DeepSeek, vLLM, …).
pub fn reasoning_content(text: &str) -> Value {
    delta(json!({"reasoning_content": text}))
}

/// A reasoning delta in the `reasoning` field (OpenRouter, Ollama, …).
pub fn reasoning(text: &str) -> Value {
    delta(json!({"reasoning": text}))
}

/// One tool-call delta. Any part may be absent; `index: None` omits the
/// `index` key (some servers do that).
pub fn tool_call_delta(
    index: Option<u32>,
    id: Option<&str>,
    name: Option<&str>,
    arguments: Option<&str>,
) -> Value {
    let mut call = serde_json::Map::new();
    if let Some(index) = index {
        call.insert("index".into(), json!(index));
    }
    if let Some(id) = id {
        call.insert("id".into(), json!(id));
        call.insert("type".into(), json!("function"));
    }
    let mut function = serde_json::Map::new();
    if let Some(name) = name {
        function.insert("name".into(), json!(name));
    }
    if let Some(arguments) = arguments {
        function.insert("arguments".into(), json!(arguments));
    }
    call.insert("function".into(), Value::Object(function));
    delta(json!({"tool_calls": [Value::Object(call)]}))
}

/// First delta of a tool call: index, id, name and empty arguments.
pub fn tool_call_start(index: u32, id: &str, name: &str) -> Value {
    tool_call_delta(Some(index), Some(id), Some(name), Some(""))
}

/// A later delta of a tool call: a fragment of its arguments.
pub fn tool_call_args(index: u32, fragment: &str) -> Value {
    tool_call_delta(Some(index), None, None, Some(fragment))
}

/// A whole tool call in one delta, without `index`.
pub fn tool_call_unindexed(id: &str, name: &str, arguments: &str) -> Value {
    tool_call_delta(None, Some(id), Some(name), Some(arguments))
}

/// An empty delta with a finish reason (`stop`, `tool_calls`, `length`,
/// or odd ones like `eos` and `""`).
pub fn finish(reason: &str) -> Value {
    with_delta(json!({}), Some(reason))
}

/// The final usage chunk (`choices: []`).
pub fn usage(prompt_tokens: u64, completion_tokens: u64) -> Value {
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": super::FAKE_MODEL_ID,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    })
}
