//! The `session/update` notification and its variants (ACP §7).
use serde::{Deserialize, Serialize};

use super::{ContentBlock, SessionConfigOption, ToolCall, ToolCallUpdate};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification<'a> {
    pub session_id: &'a str,
    pub update: &'a SessionUpdate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum SessionUpdate {
    UserMessageChunk(ContentChunk),
    AgentMessageChunk(ContentChunk),
    AgentThoughtChunk(ContentChunk),
    ToolCall(ToolCall),
    ToolCallUpdate(ToolCallUpdate),
    Plan(Plan),
    AvailableCommandsUpdate(AvailableCommandsUpdate),
    CurrentModeUpdate(CurrentModeUpdate),
    ConfigOptionUpdate(ConfigOptionUpdate),
    SessionInfoUpdate(SessionInfoUpdate),
    UsageUpdate(UsageUpdate),
    /// Only when the client advertised `session.notices` (schema 1.20).
    Notice(Notice),
    /// Only when the client advertised `session.compaction` (schema 1.20).
    CompactionUpdate(CompactionUpdate),
    /// Only when the client advertised `session.compaction` (schema 1.20).
    CompactionSummaryChunk(CompactionSummaryChunk),
    /// Only when the client advertised `session.cursors` (unstable).
    CursorUpdate(super::CursorUpdate),
    /// Only when the client advertised `subagents`.
    SubagentUpdate(super::SubagentUpdate),
}

/// Fire-and-forget information for the user (schema 1.20 `Notice`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Notice {
    pub severity: NoticeSeverity,
    /// Plain text, never empty.
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Notice {
    pub fn new(
        severity: NoticeSeverity,
        title: impl Into<String>,
        description: Option<String>,
    ) -> Notice {
        Notice {
            severity,
            title: title.into(),
            description,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeSeverity {
    Info,
    Warning,
    Error,
}

/// A context compaction's state (schema 1.20 `CompactionUpdate`): the first
/// one with an id fixes its place in the timeline, later ones patch it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionUpdate {
    pub compaction_id: String,
    pub status: CompactionStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionStatus {
    InProgress,
    Completed,
    Failed,
    Cancelled,
}

/// One block appended to a compaction's summary (schema 1.20).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummaryChunk {
    pub compaction_id: String,
    pub content: ContentBlock,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    pub content: ContentBlock,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub entries: Vec<PlanEntry>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: PlanPriority,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanPriority {
    High,
    Medium,
    Low,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AvailableCommandsUpdate {
    pub available_commands: Vec<AvailableCommand>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AvailableCommand {
    pub name: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<CommandInput>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandInput {
    pub hint: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CurrentModeUpdate {
    pub current_mode_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigOptionUpdate {
    pub config_options: Vec<SessionConfigOption>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfoUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageUpdate {
    pub used: u64,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// `usage_update.cost`. Schema 1.14: `currency` is an ISO 4217 code for
/// money or another unit such as `credits`, so it is any string. The agent
/// only sends costs (its own, from the configured prices, in USD); it never
/// reads one from a peer, hence no `Deserialize`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

impl SessionUpdate {
    pub fn agent_text(text: impl Into<String>, message_id: Option<String>) -> Self {
        SessionUpdate::AgentMessageChunk(ContentChunk {
            content: ContentBlock::text(text),
            message_id,
        })
    }
    pub fn agent_thought(text: impl Into<String>, message_id: Option<String>) -> Self {
        SessionUpdate::AgentThoughtChunk(ContentChunk {
            content: ContentBlock::text(text),
            message_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schema 1.14: a cost in a unit that is not an ISO 4217 code goes out
    /// as given, beside one in money.
    #[test]
    fn a_cost_may_be_in_credits() {
        for currency in ["credits", "USD"] {
            let update = SessionUpdate::UsageUpdate(UsageUpdate {
                used: 10,
                size: 100,
                cost: Some(Cost {
                    amount: 2.5,
                    currency: currency.into(),
                }),
            });
            assert_eq!(
                serde_json::to_value(&update).unwrap(),
                serde_json::json!({"sessionUpdate": "usage_update", "used": 10, "size": 100,
                    "cost": {"amount": 2.5, "currency": currency}})
            );
        }
    }
}
