//! Requests the agent sends to the editor (ACP §9 permission, §10 fs/terminal).
use serde::{Deserialize, Serialize};

use super::{NameValue, ToolCallUpdate};

/// Params of `session/request_permission` (ACP §9): the call awaiting
/// approval and the choices offered.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestPermissionRequest<'a> {
    pub session_id: &'a str,
    pub tool_call: ToolCallUpdate,
    pub options: Vec<PermissionOption>,
}

/// One choice offered; `kind` tells the editor how to present it and
/// whether to remember it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    pub option_id: String,
    pub name: String,
    pub kind: PermissionOptionKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionOptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

/// Result of `session/request_permission`.
#[derive(Debug, Clone, Deserialize)]
pub struct RequestPermissionResponse {
    pub outcome: PermissionOutcome,
}

/// The option picked, or `cancelled` when the turn was cancelled meanwhile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionOutcome {
    Cancelled,
    Selected {
        #[serde(rename = "optionId")]
        option_id: String,
    },
}

/// Params of `fs/read_text_file` (ACP §10): `line` is 1-based.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFileRequest<'a> {
    pub session_id: &'a str,
    pub path: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// Result of `fs/read_text_file`: the editor's buffer, saved or not.
#[derive(Debug, Clone, Deserialize)]
pub struct ReadTextFileResponse {
    pub content: String,
}

/// Params of `fs/write_text_file` (ACP §10): the complete new content.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFileRequest<'a> {
    pub session_id: &'a str,
    pub path: &'a str,
    pub content: &'a str,
}

/// Params of `terminal/create` (ACP §10): the editor runs the command and
/// keeps at most `output_byte_limit` bytes of its output.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalRequest<'a> {
    pub session_id: &'a str,
    pub command: &'a str,
    pub args: Vec<String>,
    pub env: Vec<NameValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_byte_limit: Option<u64>,
}

/// Result of `terminal/create`: the id the other terminal methods take.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTerminalResponse {
    pub terminal_id: String,
}

/// Params of `terminal/output`, `wait_for_exit`, `kill` and `release` (§10).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalRef<'a> {
    pub session_id: &'a str,
    pub terminal_id: &'a str,
}

/// How a terminal's command ended: its exit code, or the signal that
/// killed it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalExitStatus {
    #[serde(default)]
    pub exit_code: Option<i64>,
    #[serde(default)]
    pub signal: Option<String>,
}

/// Result of `terminal/output`: the output so far, and the exit status
/// once the command has ended.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOutputResponse {
    pub output: String,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub exit_status: Option<TerminalExitStatus>,
}
