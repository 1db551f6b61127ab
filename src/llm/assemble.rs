//! Lenient chunk decoding and tool-call delta assembly.
//!
//! Servers differ: some omit `index` on tool-call deltas, some send every call
//! with index 0 but a fresh `id`, some repeat the name in every delta, and
//! `finish_reason` does not reliably say whether tools were called (NOTES). The
//! rule here: an `id` different from the current call's starts a new call; an
//! `index` picks its call; a delta with neither continues the last call.
use serde::Deserialize;
use serde_json::Value;

use super::{Completion, Event, FinishReason, Usage};

/// One complete tool call as the model asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    /// JSON text as the model produced it (may be invalid; tools report that).
    pub arguments: String,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Chunk {
    #[serde(default, deserialize_with = "skip_bad_items")]
    pub choices: Vec<Choice>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice {
    #[serde(default, deserialize_with = "lenient_opt")]
    pub delta: Option<Delta>,
    /// Non-streamed replies carry `message` instead of `delta`.
    #[serde(default, deserialize_with = "lenient_opt")]
    pub message: Option<Delta>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta {
    #[serde(default, deserialize_with = "text_or_parts")]
    pub content: Option<String>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub reasoning: Option<String>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub refusal: Option<String>,
    #[serde(default, deserialize_with = "skip_bad_items")]
    pub tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolCallDelta {
    #[serde(default, deserialize_with = "lenient_opt")]
    pub index: Option<u32>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub id: Option<String>,
    #[serde(default, deserialize_with = "lenient_opt")]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionDelta {
    #[serde(default, deserialize_with = "lenient_opt")]
    pub name: Option<String>,
    /// Usually a string; a few servers send an object.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub total_tokens: Option<u64>,
}

fn lenient_opt<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    if v.is_null() {
        // The usual `"finish_reason": null`: no error to build and discard.
        return Ok(None);
    }
    Ok(serde_json::from_value(v).ok())
}

fn skip_bad_items<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(match v {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|i| serde_json::from_value(i).ok())
            .collect(),
        _ => Vec::new(),
    })
}

/// `content` as a string, or as a list of `{type:"text", text}` parts.
fn text_or_parts<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<String>(),
        ),
        _ => None,
    })
}

#[derive(Debug, Default)]
struct Partial {
    index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
    announced: bool,
}

/// Folds chunks into events and, at the end, a [`Completion`].
#[derive(Debug, Default)]
pub struct Assembler {
    calls: Vec<Partial>,
    text: String,
    reasoning: String,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    generated_ids: u32,
    /// Bytes of every call's arguments so far (the cap of issue 14).
    arguments_len: usize,
}

impl Assembler {
    /// Applies one decoded chunk, pushing the events it yields.
    pub(super) fn push(&mut self, chunk: Chunk, out: &mut Vec<Event>) {
        if let Some(u) = chunk.usage {
            let prompt = u.prompt_tokens.unwrap_or(0);
            let completion = u.completion_tokens.unwrap_or(0);
            self.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion,
                total_tokens: u.total_tokens.unwrap_or(prompt + completion),
            });
        }
        for choice in chunk.choices {
            if let Some(delta) = choice.delta.or(choice.message) {
                self.push_delta(delta, out);
            }
            if let Some(reason) = choice
                .finish_reason
                .as_deref()
                .and_then(FinishReason::parse)
            {
                self.finish = Some(reason);
            }
        }
    }

    fn push_delta(&mut self, delta: Delta, out: &mut Vec<Event>) {
        for thought in [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
        {
            if !thought.is_empty() {
                self.reasoning.push_str(&thought);
                out.push(Event::Reasoning(thought));
            }
        }
        for text in [delta.content, delta.refusal].into_iter().flatten() {
            if !text.is_empty() {
                self.text.push_str(&text);
                out.push(Event::Text(text));
            }
        }
        for tc in delta.tool_calls {
            self.push_tool_delta(tc, out);
        }
    }

    fn push_tool_delta(&mut self, tc: ToolCallDelta, out: &mut Vec<Event>) {
        let id = tc.id.filter(|s| !s.is_empty());
        let slot = self.slot_for(tc.index, id.as_deref());
        let call = &mut self.calls[slot];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(f) = tc.function {
            if let Some(name) = f.name.filter(|n| !n.is_empty())
                && call.name.is_empty()
            {
                call.name = name;
            }
            let before = call.arguments.len();
            match f.arguments {
                Some(Value::String(s)) => call.arguments.push_str(&s),
                Some(Value::Null) | None => {}
                Some(other) => call.arguments.push_str(&other.to_string()),
            }
            self.arguments_len += call.arguments.len() - before;
        }
        if !call.announced && !call.name.is_empty() && !call.id.is_empty() {
            call.announced = true;
            out.push(Event::ToolCallStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
        }
    }

    fn slot_for(&mut self, index: Option<u32>, id: Option<&str>) -> usize {
        let differs = |p: &Partial| id.is_some_and(|id| !p.id.is_empty() && p.id != id);
        let found = match index {
            Some(i) => self.calls.iter().rposition(|p| p.index == Some(i)),
            None => self.calls.len().checked_sub(1),
        };
        match found {
            Some(slot) if !differs(&self.calls[slot]) => slot,
            _ => {
                self.calls.push(Partial {
                    index,
                    ..Partial::default()
                });
                self.calls.len() - 1
            }
        }
    }

    /// The assembled completion. Calls without a name are dropped; calls
    /// without an id get a generated one.
    pub fn finish(mut self) -> Completion {
        let mut calls = Vec::new();
        for p in std::mem::take(&mut self.calls) {
            if p.name.is_empty() {
                tracing::warn!(id = %p.id, "dropping a tool call without a name");
                continue;
            }
            let id = if p.id.is_empty() {
                self.generated_ids += 1;
                format!("call_{}", self.generated_ids)
            } else {
                p.id
            };
            let arguments = if p.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                p.arguments
            };
            calls.push(ToolCallRequest {
                id,
                name: p.name,
                arguments,
            });
        }
        Completion {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls: calls,
            finish_reason: self.finish,
            usage: self.usage,
        }
    }

    pub fn saw_finish(&self) -> bool {
        self.finish.is_some()
    }

    /// Bytes of text (answer and reasoning) so far.
    pub fn text_len(&self) -> usize {
        self.text.len() + self.reasoning.len()
    }

    /// Bytes of tool-call arguments so far.
    pub fn arguments_len(&self) -> usize {
        self.arguments_len
    }
}

/// Decodes one streamed chunk.
///
/// Nearly every chunk is well-formed, and those are read straight into typed
/// fields. Anything unusual (a wrong type anywhere, content parts, an
/// `error`) fails that strict reading and takes the lenient one, which goes
/// through `Value` to drop what is malformed: the result is the same, but the
/// common case no longer builds a `Value` tree (and a discarded error for
/// every `null`) per chunk.
pub(super) fn parse_chunk(data: &str) -> serde_json::Result<Chunk> {
    match serde_json::from_str::<strict::Chunk>(data) {
        Ok(c) if c.error.is_none() => Ok(c.into()),
        _ => serde_json::from_str(data),
    }
}

/// The shape of a well-formed chunk, without leniency.
mod strict {
    use serde::Deserialize;
    use serde::de::IgnoredAny;

    #[derive(Deserialize)]
    pub struct Chunk {
        #[serde(default)]
        pub choices: Vec<Choice>,
        #[serde(default)]
        pub usage: Option<super::WireUsage>,
        #[serde(default)]
        pub error: Option<IgnoredAny>,
    }

    #[derive(Deserialize)]
    pub struct Choice {
        #[serde(default)]
        pub delta: Option<Delta>,
        #[serde(default)]
        pub message: Option<Delta>,
        #[serde(default)]
        pub finish_reason: Option<String>,
    }

    #[derive(Deserialize)]
    pub struct Delta {
        #[serde(default)]
        pub content: Option<String>,
        #[serde(default)]
        pub reasoning_content: Option<String>,
        #[serde(default)]
        pub reasoning: Option<String>,
        #[serde(default)]
        pub refusal: Option<String>,
        #[serde(default)]
        pub tool_calls: Option<Vec<ToolCallDelta>>,
    }

    #[derive(Deserialize)]
    pub struct ToolCallDelta {
        #[serde(default)]
        pub index: Option<u32>,
        #[serde(default)]
        pub id: Option<String>,
        #[serde(default)]
        pub function: Option<FunctionDelta>,
    }

    #[derive(Deserialize)]
    pub struct FunctionDelta {
        #[serde(default)]
        pub name: Option<String>,
        #[serde(default)]
        pub arguments: Option<String>,
    }
}

impl From<strict::Chunk> for Chunk {
    fn from(c: strict::Chunk) -> Self {
        let delta = |d: strict::Delta| Delta {
            content: d.content,
            reasoning_content: d.reasoning_content,
            reasoning: d.reasoning,
            refusal: d.refusal,
            tool_calls: d
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|t| ToolCallDelta {
                    index: t.index,
                    id: t.id,
                    function: t.function.map(|f| FunctionDelta {
                        name: f.name,
                        arguments: f.arguments.map(Value::String),
                    }),
                })
                .collect(),
        };
        Chunk {
            choices: c
                .choices
                .into_iter()
                .map(|ch| Choice {
                    delta: ch.delta.map(delta),
                    message: ch.message.map(delta),
                    finish_reason: ch.finish_reason,
                })
                .collect(),
            usage: c.usage,
            error: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Why the chunks are our own types (`byot`): async-openai's typed
    /// chunk rejects what real OpenAI-compatible servers send, so each of
    /// these would end the reply with a decode error (issue 15 asks for
    /// a failing test against the library for every workaround).
    #[test]
    fn async_openai_types_reject_what_servers_send() {
        use async_openai::types::chat::CreateChatCompletionStreamResponse as Theirs;
        let head = r#""id":"x","object":"chat.completion.chunk","created":1,"model":"m""#;
        for (what, choices) in [
            (
                "a tool-call delta without `index` (several local servers)",
                r#"[{"index":0,"delta":{"tool_calls":[{"id":"c1","function":{"name":"f","arguments":"{}"}}]}}]"#,
            ),
            (
                "a `finish_reason` outside OpenAI's list",
                r#"[{"index":0,"delta":{},"finish_reason":"eos"}]"#,
            ),
            (
                "`content` as a list of parts",
                r#"[{"index":0,"delta":{"content":[{"type":"text","text":"a"}]}}]"#,
            ),
        ] {
            let data = format!(r#"{{{head},"choices":{choices}}}"#);
            assert!(serde_json::from_str::<Theirs>(&data).is_err(), "{what}");
            assert!(parse_chunk(&data).is_ok(), "{what}");
        }
        // An `{"error": …}` data line is no chunk of theirs at all.
        assert!(serde_json::from_str::<Theirs>(r#"{"error":{"message":"overloaded"}}"#).is_err());
        let ours = parse_chunk(r#"{"error":{"message":"overloaded"}}"#).unwrap();
        assert!(ours.error.is_some());
    }

    #[test]
    fn strict_and_lenient_decoding_agree() {
        for data in [
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi \"there\"\n"},"finish_reason":null,"logprobs":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"a","reasoning":"b","refusal":null}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"p\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}"#,
            r#"{"choices":[{"delta":{"tool_calls":null,"content":null}}]}"#,
            // Only the lenient path reads these:
            r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"function":{"arguments":{"k":1}}}]}}]}"#,
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"}]},"finish_reason":7}]}"#,
            r#"{"choices":null,"usage":{"prompt_tokens":1.5}}"#,
            r#"{"choices":[null,{"delta":"x"},{"delta":{"content":5}}]}"#,
            r#"{"error":{"message":"overloaded"}}"#,
        ] {
            let lenient: Chunk = serde_json::from_str(data).unwrap();
            let fast = parse_chunk(data).unwrap();
            assert_eq!(format!("{fast:?}"), format!("{lenient:?}"), "{data}");
        }
        for data in ["[1]", "{", "null", "7"] {
            let lenient = serde_json::from_str::<Chunk>(data).map(|c| format!("{c:?}"));
            let fast = parse_chunk(data).map(|c| format!("{c:?}"));
            assert_eq!(fast.is_ok(), lenient.is_ok(), "{data}");
            assert_eq!(fast.ok(), lenient.ok(), "{data}");
        }
    }

    fn run(chunks: &[&str]) -> (Vec<Event>, Completion) {
        let mut a = Assembler::default();
        let mut events = Vec::new();
        for c in chunks {
            a.push(serde_json::from_str(c).unwrap(), &mut events);
        }
        (events, a.finish())
    }

    #[test]
    fn text_reasoning_and_usage() {
        let (events, done) = run(&[
            r#"{"choices":[{"delta":{"reasoning_content":"think "}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"more"}}]}"#,
            r#"{"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}"#,
        ]);
        assert_eq!(events[0], Event::Reasoning("think ".into()));
        assert_eq!(events[1], Event::Reasoning("more".into()));
        assert_eq!(done.text, "Hello");
        assert_eq!(done.reasoning, "think more");
        assert_eq!(done.finish_reason, Some(FinishReason::Stop));
        assert_eq!(done.usage.unwrap().total_tokens, 12);
    }

    #[test]
    fn indexed_tool_calls_split_arguments() {
        let (_, done) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"grep","arguments":"{\"pat"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"tern\":\"y\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"eos"}]}"#,
        ]);
        assert_eq!(done.tool_calls.len(), 2);
        assert_eq!(done.tool_calls[0].arguments, r#"{"path":"x"}"#);
        assert_eq!(done.tool_calls[1].arguments, r#"{"pattern":"y"}"#);
        assert_eq!(done.finish_reason, Some(FinishReason::Stop));
    }

    #[test]
    fn calls_without_index_are_split_by_id() {
        let (events, done) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{\"n\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":"{}"}}]}}]}"#,
            // Same index 0 but a new id: a new call (some servers do this).
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"z","arguments":{"k":1}}}]}}],"finish_reason":""}"#,
        ]);
        let names: Vec<_> = done.tool_calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["x", "y", "z"]);
        assert_eq!(done.tool_calls[0].arguments, r#"{"n":1}"#);
        assert_eq!(done.tool_calls[2].arguments, r#"{"k":1}"#);
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::ToolCallStarted { .. }))
                .count(),
            3
        );
        assert_eq!(done.finish_reason, None);
    }

    #[test]
    fn missing_id_and_name_handling() {
        let (_, done) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"x"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":null,"tool_calls":"garbage"}}]}"#,
        ]);
        assert_eq!(done.tool_calls.len(), 1);
        assert_eq!(done.tool_calls[0].id, "call_1");
        assert_eq!(done.tool_calls[0].arguments, "{}");
    }

    #[test]
    fn non_streamed_message_and_content_parts() {
        let (_, done) = run(&[
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"tool_calls":[{"id":"t","function":{"name":"n","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(done.text, "ab");
        assert_eq!(done.tool_calls[0].name, "n");
        assert_eq!(done.finish_reason, Some(FinishReason::ToolCalls));
    }
}
