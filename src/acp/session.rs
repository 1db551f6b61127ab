//! Session setup and prompt turns (ACP §5, §6).
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentBlock, Meta};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionRequest {
    pub cwd: String,
    #[serde(deserialize_with = "super::lenient_items")]
    pub mcp_servers: Vec<McpServer>,
    #[serde(default, deserialize_with = "super::lenient_items")]
    pub additional_directories: Vec<String>,
    /// Initial config option values (unstable `sessionCapabilities.options`),
    /// read by [`super::initial_config_options`].
    #[serde(default)]
    pub config_options: Option<Value>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

/// An MCP server handed over by the editor. stdio entries carry no `type`
/// (a stray `"type": "stdio"` is tolerated); http and sse entries do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum McpServer {
    Http(McpServerHttp),
    Sse(McpServerHttp),
    Stdio(McpServerStdio),
    /// Unstable MCP over ACP (`mcpCapabilities.acp`): the server lives in the editor.
    Acp(super::McpServerAcp),
    #[serde(untagged)]
    StdioUntagged(McpServerStdio),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerStdio {
    pub name: String,
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<NameValue>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerHttp {
    pub name: String,
    pub url: String,
    #[serde(default)]
    pub headers: Vec<NameValue>,
    /// acp-coder reads `{"acp-coder": {"oauth": {"clientId", "clientSecret",
    /// "clientMetadataUrl"}}}` here (how to sign in to the server).
    #[serde(
        rename = "_meta",
        default,
        skip_serializing_if = "ServerMeta::is_empty",
        deserialize_with = "super::lenient"
    )]
    pub meta: ServerMeta,
}

/// An MCP server entry's `_meta`. It may hold a client secret: `Debug`
/// shows its keys only.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMeta(pub Option<serde_json::Map<String, Value>>);

impl ServerMeta {
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    /// The value at `path` (object keys), if any.
    pub fn get(&self, path: &[&str]) -> Option<&Value> {
        let (first, rest) = path.split_first()?;
        let mut v = self.0.as_ref()?.get(*first)?;
        for key in rest {
            v = v.get(*key)?;
        }
        Some(v)
    }
}

impl std::fmt::Debug for ServerMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&String> = self.0.iter().flat_map(|m| m.keys()).collect();
        f.debug_tuple("ServerMeta").field(&keys).finish()
    }
}

/// `{name, value}` pairs used for env variables and HTTP headers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

impl McpServer {
    pub fn name(&self) -> &str {
        match self {
            McpServer::Http(h) | McpServer::Sse(h) => &h.name,
            McpServer::Stdio(s) | McpServer::StdioUntagged(s) => &s.name,
            McpServer::Acp(a) => &a.name,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSessionResponse {
    pub session_id: String,
    pub modes: SessionModeState,
    pub config_options: Vec<SessionConfigOption>,
    /// `{"acp-coder": {"notice": …}}`: what the agent chose on its own that
    /// the user should know (a local model server used without configuration).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionModeState {
    pub current_mode_id: String,
    pub available_modes: Vec<SessionMode>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionMode {
    pub id: String,
    pub name: String,
    pub description: String,
}

/// A select-type session config option (ACP §5.6). Boolean options are never
/// sent: this agent has none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionConfigOption {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(rename = "type")]
    pub kind: SelectTag,
    pub current_value: String,
    pub options: Vec<SessionConfigSelectOption>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SelectTag {
    Select,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionConfigSelectOption {
    pub value: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptResponse {
    pub stop_reason: StopReason,
    /// Tokens this turn used (unstable `unstable_end_turn_token_usage`,
    /// issue 17 item 7); omitted when the endpoint reported none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<TurnUsage>,
}

/// `PromptResponse.usage` (the unstable schema's `Usage`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    pub total_tokens: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// `_session/steering` params (codex-acp's extension): a message for the
/// running turn. `_meta.steering.idleBehavior: "promptRequired"` asks for
/// no new turn when the session is idle.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SteeringRequest {
    pub session_id: String,
    pub prompt: Vec<ContentBlock>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

impl SteeringRequest {
    /// The client wants `promptRequired` rather than a new turn when idle.
    pub fn prompt_required_when_idle(&self) -> bool {
        self.meta
            .as_ref()
            .and_then(|m| m.get("steering"))
            .and_then(|s| s.get("idleBehavior"))
            .and_then(Value::as_str)
            == Some("promptRequired")
    }
}

/// `_session/steering` result.
#[derive(Debug, Clone, Serialize)]
pub struct SteeringResponse {
    pub outcome: SteeringOutcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SteeringOutcome {
    /// The message joined the running turn (the model has read it).
    Injected,
    /// The session was idle: the message started a turn of its own.
    StartedNewTurn,
    /// The session was idle and the client asked for a prompt instead.
    PromptRequired,
    /// The turn was cancelled before the message reached the model.
    Failed,
}

/// Params naming only a session (`session/cancel`, `session/close`, ...).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    pub session_id: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetModeRequest {
    pub session_id: String,
    pub mode_id: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionRequest {
    pub session_id: String,
    pub config_id: String,
    pub value: Value,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigOptionResponse {
    pub config_options: Vec<SessionConfigOption>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema's leniency (`x-deserialize-default-on-error`,
    /// `x-deserialize-skip-invalid-items`), which an outside review found
    /// missing: malformed optional parts are dropped, not the message.
    #[test]
    fn malformed_optional_parts_are_dropped_not_the_request() {
        let new: NewSessionRequest = serde_json::from_value(serde_json::json!({
            "cwd": "/w",
            "mcpServers": [
                {"type": "websocket", "name": "future", "url": "ws://h"},
                {"name": "envmap", "command": "/bin/x", "args": [], "env": {"K": "V"}},
                {"name": "ok", "command": "/bin/ok", "args": [], "env": []}
            ],
            "additionalDirectories": ["/a", 5, "/b"],
            "_meta": 5
        }))
        .unwrap();
        assert_eq!(new.mcp_servers.len(), 1);
        assert!(matches!(&new.mcp_servers[0], McpServer::StdioUntagged(s) if s.name == "ok"));
        assert_eq!(new.additional_directories, ["/a", "/b"]);
        assert!(new.meta.is_none());
        let prompt: PromptRequest = serde_json::from_value(serde_json::json!({
            "sessionId": "s", "prompt": [], "_meta": "x"
        }))
        .unwrap();
        assert!(prompt.meta.is_none());
        let init: crate::acp::InitializeRequest = serde_json::from_value(serde_json::json!({
            "protocolVersion": 1, "clientCapabilities": null, "clientInfo": 7, "_meta": 5
        }))
        .unwrap();
        assert!(!init.client_capabilities.fs.read_text_file && init.client_info.is_none());
        // Required parts stay required.
        assert!(
            serde_json::from_value::<NewSessionRequest>(serde_json::json!({"cwd": "/w"})).is_err()
        );
    }

    #[test]
    fn mcp_servers_of_every_shape() {
        let servers: Vec<McpServer> = serde_json::from_str(
            r#"[{"name":"a","command":"/bin/a","args":[],"env":[{"name":"K","value":"V"}]},
                {"type":"stdio","name":"b","command":"/bin/b","args":["x"],"env":[]},
                {"type":"http","name":"c","url":"http://h/mcp","headers":[]},
                {"type":"sse","name":"d","url":"http://h/sse","headers":[{"name":"A","value":"B"}]}]"#,
        )
        .unwrap();
        assert!(matches!(&servers[0], McpServer::StdioUntagged(s) if s.env[0].name == "K"));
        assert!(matches!(&servers[1], McpServer::Stdio(_)));
        assert!(matches!(&servers[2], McpServer::Http(_)));
        assert!(matches!(&servers[3], McpServer::Sse(_)));
        // stdio without `type` round-trips without one.
        let back = serde_json::to_value(&servers[0]).unwrap();
        assert!(back.get("type").is_none());
    }
}

/// `session/load` and `session/resume` params (resume has `mcpServers` optional).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionRequest {
    pub session_id: String,
    pub cwd: String,
    #[serde(default, deserialize_with = "super::lenient_items")]
    pub mcp_servers: Vec<McpServer>,
    #[serde(default, deserialize_with = "super::lenient_items")]
    pub additional_directories: Vec<String>,
    /// `session/fork` at a cursor (unstable `unstable_session_cursors`).
    #[serde(default)]
    pub cursor_id: Option<String>,
    /// Initial config option values (unstable `sessionCapabilities.options`),
    /// read by [`super::initial_config_options`].
    #[serde(default)]
    pub config_options: Option<Value>,
}

/// Result of `session/load` and `session/resume`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadSessionResponse {
    pub modes: SessionModeState,
    pub config_options: Vec<SessionConfigOption>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsRequest {
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSessionsResponse {
    pub sessions: Vec<SessionInfo>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub session_id: String,
    pub cwd: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub additional_directories: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}
