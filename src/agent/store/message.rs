//! The stored form of conversation messages and their conversions to and
//! from the model client's types.
use super::*;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// An assistant message in storage form: the same fields in a stored
/// message and in a log's `assistant` record.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredAssistant {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default)]
    pub tool_calls: Vec<StoredToolCall>,
}

impl StoredAssistant {
    pub fn to_chat(&self) -> ChatMessage {
        ChatMessage::Assistant {
            text: self.text.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self.tool_calls.iter().map(ToolCallRequest::from).collect(),
        }
    }
}

/// A chat message in storage form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum StoredMessage {
    User {
        parts: Vec<StoredPart>,
    },
    Assistant(StoredAssistant),
    Tool {
        tool_call_id: String,
        content: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StoredPart {
    Text { text: String },
    Image { url: String },
    Audio { data: String, format: String },
}

impl StoredMessage {
    /// System messages are never stored (the prompt is rebuilt at load).
    pub fn from_chat(m: &ChatMessage) -> Option<Self> {
        Some(match m {
            ChatMessage::System(_) => return None,
            ChatMessage::User(parts) => StoredMessage::User {
                parts: parts.iter().map(StoredPart::from).collect(),
            },
            ChatMessage::Assistant {
                text,
                reasoning,
                tool_calls,
            } => StoredMessage::Assistant(StoredAssistant {
                text: text.clone(),
                reasoning: reasoning.clone(),
                tool_calls: tool_calls.iter().map(StoredToolCall::from).collect(),
            }),
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => StoredMessage::Tool {
                tool_call_id: tool_call_id.clone(),
                content: content.clone(),
            },
        })
    }

    pub fn to_chat(&self) -> ChatMessage {
        match self {
            StoredMessage::User { parts } => {
                ChatMessage::User(parts.iter().map(UserPart::from).collect())
            }
            StoredMessage::Assistant(a) => a.to_chat(),
            StoredMessage::Tool {
                tool_call_id,
                content,
            } => ChatMessage::Tool {
                tool_call_id: tool_call_id.clone(),
                content: content.clone(),
            },
        }
    }
}

impl From<&UserPart> for StoredPart {
    fn from(p: &UserPart) -> Self {
        match p {
            UserPart::Text(t) => StoredPart::Text { text: t.clone() },
            UserPart::ImageUrl(u) => StoredPart::Image { url: u.clone() },
            UserPart::InputAudio { data, format } => StoredPart::Audio {
                data: data.clone(),
                format: format.clone(),
            },
        }
    }
}

impl From<&StoredPart> for UserPart {
    fn from(p: &StoredPart) -> Self {
        match p {
            StoredPart::Text { text } => UserPart::Text(text.clone()),
            StoredPart::Image { url } => UserPart::ImageUrl(url.clone()),
            StoredPart::Audio { data, format } => UserPart::InputAudio {
                data: data.clone(),
                format: format.clone(),
            },
        }
    }
}

impl From<&ToolCallRequest> for StoredToolCall {
    fn from(c: &ToolCallRequest) -> Self {
        StoredToolCall {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        }
    }
}

impl From<&StoredToolCall> for ToolCallRequest {
    fn from(c: &StoredToolCall) -> Self {
        ToolCallRequest {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        }
    }
}
