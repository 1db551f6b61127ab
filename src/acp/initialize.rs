//! `initialize` and `authenticate` (ACP §3, §4).
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Meta, lenient};

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeRequest {
    /// Any integer is accepted; we always answer with our version.
    pub protocol_version: Value,
    #[serde(default, deserialize_with = "lenient")]
    pub client_capabilities: ClientCapabilities,
    #[serde(default, deserialize_with = "lenient")]
    pub client_info: Option<Implementation>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

/// What the editor can do for us. Everything omitted is unsupported.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    #[serde(default, deserialize_with = "lenient")]
    pub fs: FileSystemCapabilities,
    #[serde(default, deserialize_with = "lenient")]
    pub terminal: bool,
    #[serde(default, deserialize_with = "lenient")]
    pub auth: ClientAuthCapabilities,
    #[serde(default)]
    pub session: Option<Value>,
    /// Child sessions shown as such (`subagent_update`; schema 1.20).
    #[serde(default)]
    pub subagents: Option<Value>,
    /// Which `elicitation/create` modes the editor renders (issue 17).
    #[serde(default, deserialize_with = "lenient")]
    pub elicitation: super::ElicitationCapabilities,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSystemCapabilities {
    #[serde(default, deserialize_with = "lenient")]
    pub read_text_file: bool,
    #[serde(default, deserialize_with = "lenient")]
    pub write_text_file: bool,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientAuthCapabilities {
    #[serde(default, deserialize_with = "lenient")]
    pub terminal: bool,
}

impl ClientCapabilities {
    /// `session.<name>` is an object: the client opted in to that session
    /// extension (`notices`, `compaction`: omitted or `null` means no).
    pub fn session_opt_in(&self, name: &str) -> bool {
        self.session
            .as_ref()
            .and_then(|s| s.get(name))
            .is_some_and(Value::is_object)
    }

    /// The client shows `notice` updates (schema 1.20 `session.notices`).
    pub fn notices(&self) -> bool {
        self.session_opt_in("notices")
    }

    /// The client follows `compaction_update`s (schema 1.20 `session.compaction`).
    pub fn compaction(&self) -> bool {
        self.session_opt_in("compaction")
    }

    /// Whether the editor supports terminal auth (stable capability or the older `_meta` key).
    pub fn terminal_auth(&self) -> bool {
        self.auth.terminal
            || self
                .meta
                .as_ref()
                .and_then(|m| m.get("terminal-auth"))
                .and_then(Value::as_bool)
                .unwrap_or(false)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Implementation {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub version: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResponse {
    pub protocol_version: u16,
    pub agent_capabilities: AgentCapabilities,
    pub auth_methods: Vec<AuthMethod>,
    pub agent_info: Implementation,
    /// Extensions: `steering: {supported: true}` (codex-acp's `_session/steering`).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Meta,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    pub load_session: bool,
    pub prompt_capabilities: PromptCapabilities,
    pub mcp_capabilities: McpCapabilities,
    #[serde(skip_serializing_if = "SessionCapabilities::is_empty")]
    pub session_capabilities: SessionCapabilities,
    /// Unstable `providers/list|set|disable` (`{}` when supported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub providers: Option<super::Empty>,
    /// `auth.logout: {}` advertises the `logout` method (ACP §4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth: Option<AgentAuthCapabilities>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentAuthCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logout: Option<super::Empty>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptCapabilities {
    pub image: bool,
    pub audio: bool,
    pub embedded_context: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct McpCapabilities {
    pub http: bool,
    pub sse: bool,
    /// Unstable MCP over ACP (`type: "acp"` servers).
    pub acp: bool,
}

/// Each present key (`{}`) advertises one optional session method.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub list: Option<super::Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delete: Option<super::Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<super::Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close: Option<super::Empty>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_directories: Option<super::Empty>,
    /// Unstable `session/fork` (ACP §15, `unstable_session_fork`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fork: Option<super::Empty>,
    /// Unstable `session/options` and initial `configOptions` on setup requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<super::Empty>,
    /// Unstable `session/set_title`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<super::Empty>,
}

impl SessionCapabilities {
    fn is_empty(&self) -> bool {
        self.list.is_none()
            && self.delete.is_none()
            && self.resume.is_none()
            && self.close.is_none()
            && self.additional_directories.is_none()
            && self.fork.is_none()
            && self.options.is_none()
            && self.title.is_none()
    }
}

/// An auth method. Agent-type methods carry no `type` on the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum AuthMethod {
    Agent {
        id: String,
        name: String,
        description: String,
    },
    Terminal {
        #[serde(rename = "type")]
        kind: TerminalTag,
        id: String,
        name: String,
        description: String,
        args: Vec<String>,
    },
}

/// The constant `"terminal"` tag.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TerminalTag {
    Terminal,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticateRequest {
    pub method_id: String,
}
