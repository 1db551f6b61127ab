//! Session cursors (unstable `unstable_session_cursors`, schema 1.20
//! `CursorUpdate`) and subagent sessions (`SubagentUpdate`): the
//! `session/update` variants, sent only to a client that advertised
//! `session.cursors` and `subagents` respectively.
use serde::Serialize;

use super::{ClientCapabilities, TurnUsage as Usage};

impl ClientCapabilities {
    /// `clientCapabilities.session.cursors` is an object.
    pub fn cursors(&self) -> bool {
        self.session
            .as_ref()
            .and_then(|s| s.get("cursors"))
            .is_some_and(serde_json::Value::is_object)
    }

    /// `clientCapabilities.subagents` is an object.
    pub fn subagents(&self) -> bool {
        self.subagents
            .as_ref()
            .is_some_and(serde_json::Value::is_object)
    }
}

/// `cursor_update`: a position in the session the client can act at.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CursorUpdate {
    pub cursor_id: String,
    pub capabilities: CursorCapabilities,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<CursorAnchor>,
}

/// What the cursor accepts: `fork` (`session/fork` with `cursorId`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CursorCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<Supported>,
}

/// Where the cursor is: before or after an entity the client holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CursorAnchor {
    AgentMessage {
        #[serde(rename = "messageId")]
        message_id: String,
        position: AnchorPosition,
    },
    AgentThought {
        #[serde(rename = "messageId")]
        message_id: String,
        position: AnchorPosition,
    },
    ToolCall {
        #[serde(rename = "toolCallId")]
        tool_call_id: String,
        position: AnchorPosition,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnchorPosition {
    Before,
    After,
}

/// `{}`: a capability that is supported.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Supported {}

/// `subagent_update`: sent on the parent session about a child session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentUpdate {
    pub session_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<SubagentCapabilities>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<SubagentState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// What the client may do to the child: `cancel` (`session/cancel` with its id).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancel: Option<Supported>,
}

/// The child's foreground work.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SubagentState {
    Running,
    Idle {
        #[serde(rename = "stopReason")]
        stop_reason: super::StopReason,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
    },
}
