//! Tool calls as the editor sees them (ACP §9).
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentBlock, Meta};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolCallContent {
    Content {
        content: ContentBlock,
    },
    Diff {
        path: String,
        #[serde(rename = "oldText", default, skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        #[serde(rename = "newText")]
        new_text: String,
    },
    Terminal {
        #[serde(rename = "terminalId")]
        terminal_id: String,
    },
    /// A reference to a child session (only when the client advertised `subagents`).
    Session {
        #[serde(rename = "sessionId")]
        session_id: String,
    },
}

impl ToolCallContent {
    pub fn text(text: impl Into<String>) -> Self {
        ToolCallContent::Content {
            content: ContentBlock::text(text),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallLocation {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// The `tool_call` update: the first report of a call. (Deserialize is for
/// the session store, which keeps each call's final state for replay.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub tool_call_id: String,
    pub title: String,
    /// The tool's programmatic name (`ToolCall.name`, issue 17 item 7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub kind: ToolKind,
    pub status: ToolCallStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub content: Vec<ToolCallContent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub locations: Vec<ToolCallLocation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "super::lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Meta,
}

impl ToolCall {
    /// Applies an update (fields present replace the old ones, ACP §9).
    pub fn apply(&mut self, u: &ToolCallUpdate) {
        if let Some(t) = &u.title {
            self.title = t.clone();
        }
        if let Some(k) = u.kind {
            self.kind = k;
        }
        if let Some(s) = u.status {
            self.status = s;
        }
        if let Some(c) = &u.content {
            self.content = c.clone();
        }
        if let Some(l) = &u.locations {
            self.locations = l.clone();
        }
        if u.raw_input.is_some() {
            self.raw_input = u.raw_input.clone();
        }
        if u.raw_output.is_some() {
            self.raw_output = u.raw_output.clone();
        }
    }
}

/// `tool_call_update` and the `toolCall` of a permission request: only the
/// fields that changed are sent; `content`/`locations` replace the old arrays.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallUpdate {
    pub tool_call_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolCallStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolCallContent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<ToolCallLocation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Meta,
}

impl ToolCallUpdate {
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            tool_call_id: id.into(),
            ..Default::default()
        }
    }
    pub fn status(mut self, status: ToolCallStatus) -> Self {
        self.status = Some(status);
        self
    }
    pub fn content(mut self, content: Vec<ToolCallContent>) -> Self {
        self.content = Some(content);
        self
    }
    pub fn raw_output(mut self, raw: Value) -> Self {
        self.raw_output = Some(raw);
        self
    }
}

impl From<&ToolCall> for ToolCallUpdate {
    fn from(call: &ToolCall) -> Self {
        ToolCallUpdate {
            tool_call_id: call.tool_call_id.clone(),
            title: Some(call.title.clone()),
            kind: Some(call.kind),
            status: Some(call.status),
            content: Some(call.content.clone()),
            locations: Some(call.locations.clone()),
            raw_input: call.raw_input.clone(),
            raw_output: call.raw_output.clone(),
            meta: None,
        }
    }
}
