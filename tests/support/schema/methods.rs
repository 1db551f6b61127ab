//! Which schema type each ACP method's params and result have: the tables
//! the entry points in [`super`] look a method up in.
use super::*;

pub(super) type ValidatorFn = fn() -> &'static Validator;

/// Requests the client (editor) sends to the agent: method, params type, result type.
pub(super) const CLIENT_REQUESTS: &[(&str, ValidatorFn, ValidatorFn)] = &[
    // The client capabilities of 1.20 (`subagents`, `session.cursors`).
    (
        "initialize",
        v1_20_initialize_request,
        validator::<acp::InitializeResponse>,
    ),
    (
        "authenticate",
        validator::<acp::AuthenticateRequest>,
        validator::<acp::AuthenticateResponse>,
    ),
    (
        "logout",
        validator::<acp::LogoutRequest>,
        validator::<acp::LogoutResponse>,
    ),
    (
        "session/new",
        validator::<acp::NewSessionRequest>,
        validator::<acp::NewSessionResponse>,
    ),
    (
        "session/load",
        validator::<acp::LoadSessionRequest>,
        validator::<acp::LoadSessionResponse>,
    ),
    (
        "session/resume",
        validator::<acp::ResumeSessionRequest>,
        validator::<acp::ResumeSessionResponse>,
    ),
    (
        "session/list",
        validator::<acp::ListSessionsRequest>,
        validator::<acp::ListSessionsResponse>,
    ),
    (
        "session/close",
        validator::<acp::CloseSessionRequest>,
        validator::<acp::CloseSessionResponse>,
    ),
    (
        "session/delete",
        validator::<acp::DeleteSessionRequest>,
        validator::<acp::DeleteSessionResponse>,
    ),
    (
        "session/prompt",
        validator::<acp::PromptRequest>,
        validator::<acp::PromptResponse>,
    ),
    (
        "session/set_mode",
        validator::<acp::SetSessionModeRequest>,
        validator::<acp::SetSessionModeResponse>,
    ),
    (
        "session/set_config_option",
        validator::<acp::SetSessionConfigOptionRequest>,
        validator::<acp::SetSessionConfigOptionResponse>,
    ),
    // Unstable (issue 17 items 5-6).
    (
        "providers/list",
        validator::<acp::ListProvidersRequest>,
        validator::<acp::ListProvidersResponse>,
    ),
    (
        "providers/set",
        validator::<acp::SetProviderRequest>,
        validator::<acp::SetProviderResponse>,
    ),
    (
        "providers/disable",
        validator::<acp::DisableProviderRequest>,
        validator::<acp::DisableProviderResponse>,
    ),
    ("mcp/message", mcp_message_request, mcp_message_response),
    // Unstable (`unstable_session_fork`).
    // 1.20: `cursorId` (`unstable_session_cursors`).
    (
        "session/fork",
        v1_20_fork_request,
        validator::<acp::ForkSessionResponse>,
    ),
];

/// Notifications the client sends to the agent.
pub(super) const CLIENT_NOTIFICATIONS: &[(&str, ValidatorFn)] = &[
    ("session/cancel", validator::<acp::CancelNotification>),
    (
        "$/cancel_request",
        validator::<acp::CancelRequestNotification>,
    ),
    ("mcp/message", mcp_message_notification),
];

/// Requests the agent sends to the client: method, params type, result type.
pub(super) const AGENT_REQUESTS: &[(&str, ValidatorFn, ValidatorFn)] = &[
    (
        "session/request_permission",
        validator::<acp::RequestPermissionRequest>,
        validator::<acp::RequestPermissionResponse>,
    ),
    (
        "fs/read_text_file",
        validator::<acp::ReadTextFileRequest>,
        validator::<acp::ReadTextFileResponse>,
    ),
    (
        "fs/write_text_file",
        validator::<acp::WriteTextFileRequest>,
        validator::<acp::WriteTextFileResponse>,
    ),
    (
        "terminal/create",
        validator::<acp::CreateTerminalRequest>,
        validator::<acp::CreateTerminalResponse>,
    ),
    (
        "terminal/output",
        validator::<acp::TerminalOutputRequest>,
        validator::<acp::TerminalOutputResponse>,
    ),
    (
        "terminal/wait_for_exit",
        validator::<acp::WaitForTerminalExitRequest>,
        validator::<acp::WaitForTerminalExitResponse>,
    ),
    (
        "terminal/kill",
        validator::<acp::KillTerminalRequest>,
        validator::<acp::KillTerminalResponse>,
    ),
    (
        "terminal/release",
        validator::<acp::ReleaseTerminalRequest>,
        validator::<acp::ReleaseTerminalResponse>,
    ),
    ("mcp/connect", mcp_connect_request, mcp_connect_response),
    ("mcp/message", mcp_message_request, mcp_message_response),
    (
        "mcp/disconnect",
        mcp_disconnect_request,
        mcp_disconnect_response,
    ),
    (
        "elicitation/create",
        validator::<acp::CreateElicitationRequest>,
        validator::<acp::CreateElicitationResponse>,
    ),
];

/// Notifications the agent sends to the client.
pub(super) const AGENT_NOTIFICATIONS: &[(&str, ValidatorFn)] = &[
    // 1.20: `subagent_update`, `cursor_update`, `session` tool-call content.
    ("session/update", v1_20_session_notification),
    (
        "elicitation/complete",
        validator::<acp::CompleteElicitationNotification>,
    ),
    (
        "$/cancel_request",
        validator::<acp::CancelRequestNotification>,
    ),
    ("mcp/message", mcp_message_notification),
];

/// The official unstable schema (git HEAD `schema.unstable.json`), for the
/// MCP-over-ACP messages: the schema crate's lineage defines `mcp/message`
/// differently (`serverId` + `requestId`) and has no `mcp/connect`.
pub(super) const UNSTABLE_SCHEMA: &str = include_str!("../schema.unstable.json");

/// The schema generated (schemars, draft 2020-12) from
/// `agent-client-protocol-schema` 1.20.0 with its `unstable` features, for
/// the types added after 1.17 (the crate version the test suite links:
/// `agent-client-protocol` 5.2 pins it): `subagent_update`, `cursor_update`,
/// `session/fork` at a cursor, the 1.20 client capabilities.
pub(super) const V1_20_SCHEMA: &str = include_str!("../schema.1-20.json");

/// The validator of one `$defs` entry of [`UNSTABLE_SCHEMA`], cached.
pub fn unstable_validator(def: &'static str) -> &'static Validator {
    static CACHE: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    json_validator(&CACHE, UNSTABLE_SCHEMA, "schema.unstable.json", def)
}

/// The validator of one `$defs` entry of [`V1_20_SCHEMA`], cached.
pub fn v1_20_validator(def: &'static str) -> &'static Validator {
    static CACHE: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    json_validator(&CACHE, V1_20_SCHEMA, "schema.1-20.json", def)
}

pub(super) fn v1_20_initialize_request() -> &'static Validator {
    v1_20_validator("InitializeRequest")
}
pub(super) fn v1_20_fork_request() -> &'static Validator {
    v1_20_validator("ForkSessionRequest")
}
pub(super) fn v1_20_session_notification() -> &'static Validator {
    v1_20_validator("SessionNotification")
}

fn json_validator(
    cache: &Mutex<HashMap<&'static str, &'static Validator>>,
    text: &str,
    name: &str,
    def: &'static str,
) -> &'static Validator {
    if let Some(v) = cache.lock().unwrap().get(def) {
        return v;
    }
    let full: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name} parses: {e}"));
    assert!(
        full["$defs"].get(def).is_some(),
        "{name} has no $defs/{def}"
    );
    let schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": full["$defs"].clone(),
        "$ref": format!("#/$defs/{def}"),
    });
    let compiled = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("{name} $defs/{def} does not compile: {e}"));
    let leaked: &'static Validator = Box::leak(Box::new(compiled));
    cache.lock().unwrap().entry(def).or_insert(leaked)
}

pub(super) fn mcp_connect_request() -> &'static Validator {
    unstable_validator("ConnectMcpRequest")
}
pub(super) fn mcp_connect_response() -> &'static Validator {
    unstable_validator("ConnectMcpResponse")
}
pub(super) fn mcp_message_request() -> &'static Validator {
    unstable_validator("MessageMcpRequest")
}
pub(super) fn mcp_message_response() -> &'static Validator {
    unstable_validator("MessageMcpResponse")
}
pub(super) fn mcp_message_notification() -> &'static Validator {
    unstable_validator("MessageMcpNotification")
}
pub(super) fn mcp_disconnect_request() -> &'static Validator {
    unstable_validator("DisconnectMcpRequest")
}
pub(super) fn mcp_disconnect_response() -> &'static Validator {
    unstable_validator("DisconnectMcpResponse")
}
