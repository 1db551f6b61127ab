//! The request side of the chat-completions wire format.
use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use super::ToolCallRequest;

/// A request borrows its conversation: a turn sends the whole history on
/// every model call, and copying it each time cost most of a long
/// session's per-turn CPU and doubled its memory while the call ran.
#[derive(Debug, Clone)]
pub struct ChatRequest<'a> {
    pub model: String,
    /// Sent before `messages` (a turn's system prompt, which the history
    /// does not hold).
    pub system: Option<String>,
    pub messages: &'a [ChatMessage],
    pub tools: Vec<ToolSpec>,
    pub stream_usage: bool,
    /// Send assistant reasoning back as `reasoning_content`.
    pub send_reasoning: bool,
    pub reasoning_effort: Option<String>,
    /// A cap on the reply (`max_tokens`); set by MCP sampling, whose
    /// requests carry one (src/mcp/sampling.rs). Turns leave it unset.
    pub max_tokens: Option<u32>,
    /// Sampling temperature; unset means the endpoint's default.
    pub temperature: Option<f32>,
    /// Stop sequences (`stop`); omitted when empty.
    pub stop: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessage {
    System(String),
    User(Vec<UserPart>),
    Assistant {
        text: String,
        reasoning: String,
        tool_calls: Vec<ToolCallRequest>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum UserPart {
    Text(String),
    /// A `data:` URL or an https URL.
    ImageUrl(String),
    /// Base64 audio and its format (`wav` or `mp3`, the formats the
    /// chat-completions `input_audio` part takes; issue 18 item 7).
    InputAudio {
        data: String,
        format: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

impl ChatMessage {
    pub fn user_text(text: impl Into<String>) -> Self {
        ChatMessage::User(vec![UserPart::Text(text.into())])
    }
}

/// One message as the endpoint wants it.
struct WireMessage<'a> {
    message: &'a ChatMessage,
    send_reasoning: bool,
}

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.message {
            ChatMessage::System(text) => {
                m.serialize_entry("role", "system")?;
                m.serialize_entry("content", text)?;
            }
            ChatMessage::User(parts) => {
                m.serialize_entry("role", "user")?;
                if let [UserPart::Text(t)] = parts.as_slice() {
                    m.serialize_entry("content", t)?;
                } else {
                    m.serialize_entry("content", &UserParts(parts))?;
                }
            }
            ChatMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                m.serialize_entry("role", "assistant")?;
                if text.is_empty() && !tool_calls.is_empty() {
                    m.serialize_entry("content", &())?;
                } else {
                    m.serialize_entry("content", text)?;
                }
                if !tool_calls.is_empty() {
                    m.serialize_entry("tool_calls", &WireToolCalls(tool_calls))?;
                }
                if self.send_reasoning && !reasoning.is_empty() {
                    m.serialize_entry("reasoning_content", reasoning)?;
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => {
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", tool_call_id)?;
                m.serialize_entry("content", content)?;
            }
        }
        m.end()
    }
}

struct UserParts<'a>(&'a [UserPart]);

impl Serialize for UserParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|p| match p {
            UserPart::Text(t) => json!({"type": "text", "text": t}),
            UserPart::ImageUrl(u) => json!({"type": "image_url", "image_url": {"url": u}}),
            UserPart::InputAudio { data, format } => {
                json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
            }
        }))
    }
}

struct WireToolCalls<'a>(&'a [ToolCallRequest]);

impl Serialize for WireToolCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: &'a str,
        }
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            r#type: &'static str,
            function: Function<'a>,
        }
        s.collect_seq(self.0.iter().map(|c| Call {
            id: &c.id,
            r#type: "function",
            function: Function {
                name: &c.name,
                arguments: &c.arguments,
            },
        }))
    }
}

/// The request body, written straight to JSON text: building it as a `Value`
/// first cost about 2.5 KB of short-lived maps per history message on every
/// model call (massif), which glibc's allocator kept as RSS that grew with
/// the length of the conversation. `tools` is omitted when empty (OpenAI
/// rejects `[]`).
impl Serialize for ChatRequest<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            r#type: &'static str,
            function: &'a ToolSpec,
        }
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", &self.model)?;
        m.serialize_entry(
            "messages",
            &Messages {
                system: self.system.as_deref(),
                messages: self.messages,
                send_reasoning: self.send_reasoning,
            },
        )?;
        m.serialize_entry("stream", &true)?;
        if self.stream_usage {
            m.serialize_entry("stream_options", &json!({"include_usage": true}))?;
        }
        if !self.tools.is_empty() {
            let tools: Vec<Tool<'_>> = self
                .tools
                .iter()
                .map(|t| Tool {
                    r#type: "function",
                    function: t,
                })
                .collect();
            m.serialize_entry("tools", &tools)?;
        }
        if let Some(effort) = &self.reasoning_effort {
            m.serialize_entry("reasoning_effort", effort)?;
        }
        if let Some(max) = self.max_tokens {
            m.serialize_entry("max_tokens", &max)?;
        }
        if let Some(t) = self.temperature {
            m.serialize_entry("temperature", &t)?;
        }
        if !self.stop.is_empty() {
            m.serialize_entry("stop", &self.stop)?;
        }
        m.end()
    }
}

struct Messages<'a> {
    system: Option<&'a str>,
    messages: &'a [ChatMessage],
    send_reasoning: bool,
}

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct System<'a> {
            role: &'static str,
            content: &'a str,
        }
        let mut seq = s.serialize_seq(Some(
            self.messages.len() + usize::from(self.system.is_some()),
        ))?;
        if let Some(content) = self.system {
            seq.serialize_element(&System {
                role: "system",
                content,
            })?;
        }
        for message in self.messages {
            seq.serialize_element(&WireMessage {
                message,
                send_reasoning: self.send_reasoning,
            })?;
        }
        seq.end()
    }
}

#[cfg(test)]
impl<'a> ChatRequest<'a> {
    /// A request of `messages` to model `m` with every option off (tests).
    pub(crate) fn plain(messages: &'a [ChatMessage]) -> Self {
        ChatRequest {
            model: "m".into(),
            system: None,
            messages,
            tools: vec![],
            stream_usage: false,
            send_reasoning: false,
            reasoning_effort: None,
            max_tokens: None,
            temperature: None,
            stop: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl ChatRequest<'_> {
        fn to_json(&self) -> Value {
            serde_json::to_value(self).unwrap()
        }
    }

    fn plain(messages: &[ChatMessage]) -> ChatRequest<'_> {
        ChatRequest::plain(messages)
    }

    #[test]
    fn body_shape() {
        let messages = [
            ChatMessage::System("sys".into()),
            ChatMessage::user_text("hi"),
            ChatMessage::Assistant {
                text: String::new(),
                reasoning: "thought".into(),
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "echo".into(),
                    arguments: "{}".into(),
                }],
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                content: "ok".into(),
            },
        ];
        let req = plain(&messages);
        let body = req.to_json();
        assert!(body.get("tools").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][1], json!({"role":"user","content":"hi"}));
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert!(body["messages"][2].get("reasoning_content").is_none());
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            "echo"
        );
        assert_eq!(
            body["messages"][3],
            json!({"role":"tool","tool_call_id":"c1","content":"ok"})
        );
    }

    #[test]
    fn the_system_prompt_goes_before_the_borrowed_history() {
        let history = [ChatMessage::user_text("hi")];
        let mut req = plain(&history);
        req.system = Some("sys".into());
        assert_eq!(
            req.to_json()["messages"],
            json!([{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}])
        );
    }

    #[test]
    fn every_field_on_the_wire() {
        let req = ChatRequest {
            model: "m".into(),
            system: None,
            messages: &[
                ChatMessage::User(vec![
                    UserPart::Text("look".into()),
                    UserPart::ImageUrl("data:image/png;base64,AA".into()),
                    UserPart::InputAudio {
                        data: "UklG".into(),
                        format: "wav".into(),
                    },
                ]),
                ChatMessage::Assistant {
                    text: "done".into(),
                    reasoning: "because".into(),
                    tool_calls: vec![],
                },
            ],
            tools: vec![ToolSpec {
                name: "echo".into(),
                description: "Echoes.".into(),
                parameters: json!({"type": "object"}),
            }],
            stream_usage: true,
            send_reasoning: true,
            reasoning_effort: Some("high".into()),
            max_tokens: None,
            temperature: None,
            stop: Vec::new(),
        };
        let body: Value = serde_json::from_slice(&serde_json::to_vec(&req).unwrap()).unwrap();
        assert_eq!(body, req.to_json());
        assert_eq!(
            body,
            json!({
                "model": "m",
                "stream": true,
                "stream_options": {"include_usage": true},
                "reasoning_effort": "high",
                "messages": [
                    {"role": "user", "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                        {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}
                    ]},
                    {"role": "assistant", "content": "done", "reasoning_content": "because"}
                ],
                "tools": [{"type": "function", "function": {
                    "name": "echo", "description": "Echoes.", "parameters": {"type": "object"}
                }}]
            })
        );
    }
}
