//! The request side of the chat-completions wire format.
use serde::Serialize;
use serde_json::{Value, json};

use super::ToolCallRequest;

#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub stream_usage: bool,
    /// Send assistant reasoning back as `reasoning_content`.
    pub send_reasoning: bool,
    pub reasoning_effort: Option<String>,
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

    fn to_json(&self, send_reasoning: bool) -> Value {
        match self {
            ChatMessage::System(text) => json!({"role": "system", "content": text}),
            ChatMessage::User(parts) => {
                if let [UserPart::Text(t)] = parts.as_slice() {
                    return json!({"role": "user", "content": t});
                }
                let parts: Vec<Value> = parts
                    .iter()
                    .map(|p| match p {
                        UserPart::Text(t) => json!({"type": "text", "text": t}),
                        UserPart::ImageUrl(u) => {
                            json!({"type": "image_url", "image_url": {"url": u}})
                        }
                    })
                    .collect();
                json!({"role": "user", "content": parts})
            }
            ChatMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => {
                let mut m = json!({"role": "assistant"});
                m["content"] = if text.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else {
                    Value::String(text.clone())
                };
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({"id": c.id, "type": "function",
                                   "function": {"name": c.name, "arguments": c.arguments}})
                        })
                        .collect();
                }
                if send_reasoning && !reasoning.is_empty() {
                    m["reasoning_content"] = Value::String(reasoning.clone());
                }
                m
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        }
    }
}

impl ChatRequest {
    /// The JSON body. `tools` is omitted when empty (OpenAI rejects `[]`).
    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": self.messages.iter().map(|m| m.to_json(self.send_reasoning)).collect::<Vec<_>>(),
            "stream": true,
        });
        if self.stream_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        if !self.tools.is_empty() {
            body["tools"] = self
                .tools
                .iter()
                .map(|t| json!({"type": "function", "function": t}))
                .collect();
        }
        if let Some(effort) = &self.reasoning_effort {
            body["reasoning_effort"] = Value::String(effort.clone());
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_shape() {
        let req = ChatRequest {
            model: "m".into(),
            messages: vec![
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
            ],
            tools: vec![],
            stream_usage: false,
            send_reasoning: false,
            reasoning_effort: None,
        };
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
}
