//! Which schema type each ACP method's params and result have: the tables
//! the entry points in [`super`] look a method up in.
use super::*;

pub(super) type ValidatorFn = fn() -> &'static Validator;

/// Requests the client (editor) sends to the agent: method, params type, result type.
pub(super) const CLIENT_REQUESTS: &[(&str, ValidatorFn, ValidatorFn)] = &[
    // The client capabilities of 1.20 (`subagents`, `session.cursors`).
    (
        "initialize",
        v120::InitializeRequest,
        v120::InitializeResponse,
    ),
    (
        "authenticate",
        v120::AuthenticateRequest,
        v120::AuthenticateResponse,
    ),
    ("logout", v120::LogoutRequest, v120::LogoutResponse),
    (
        "session/new",
        v120::NewSessionRequest,
        v120::NewSessionResponse,
    ),
    (
        "session/load",
        v120::LoadSessionRequest,
        v120::LoadSessionResponse,
    ),
    (
        "session/resume",
        v120::ResumeSessionRequest,
        v120::ResumeSessionResponse,
    ),
    (
        "session/list",
        v120::ListSessionsRequest,
        v120::ListSessionsResponse,
    ),
    (
        "session/close",
        v120::CloseSessionRequest,
        v120::CloseSessionResponse,
    ),
    (
        "session/delete",
        v120::DeleteSessionRequest,
        v120::DeleteSessionResponse,
    ),
    ("session/prompt", v120::PromptRequest, v120::PromptResponse),
    (
        "session/set_mode",
        v120::SetSessionModeRequest,
        v120::SetSessionModeResponse,
    ),
    (
        "session/set_config_option",
        v120::SetSessionConfigOptionRequest,
        v120::SetSessionConfigOptionResponse,
    ),
    // Unstable (issue 17 items 5-6).
    (
        "providers/list",
        v120::ListProvidersRequest,
        v120::ListProvidersResponse,
    ),
    (
        "providers/set",
        v120::SetProviderRequest,
        v120::SetProviderResponse,
    ),
    (
        "providers/disable",
        v120::DisableProviderRequest,
        v120::DisableProviderResponse,
    ),
    ("mcp/message", mcp_message_request, mcp_message_response),
    // Unstable (`unstable_session_fork`).
    // 1.20: `cursorId` (`unstable_session_cursors`).
    (
        "session/fork",
        v120::ForkSessionRequest,
        v120::ForkSessionResponse,
    ),
    // Unstable (`unstable_session_set_title`, `unstable_session_options`).
    (
        "session/set_title",
        v120::SetSessionTitleRequest,
        v120::SetSessionTitleResponse,
    ),
    (
        "session/options",
        v120::SessionOptionsRequest,
        v120::SessionOptionsResponse,
    ),
];

/// Notifications the client sends to the agent.
pub(super) const CLIENT_NOTIFICATIONS: &[(&str, ValidatorFn)] = &[
    ("session/cancel", v120::CancelNotification),
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
        v120::RequestPermissionRequest,
        v120::RequestPermissionResponse,
    ),
    (
        "fs/read_text_file",
        v120::ReadTextFileRequest,
        v120::ReadTextFileResponse,
    ),
    (
        "fs/write_text_file",
        v120::WriteTextFileRequest,
        v120::WriteTextFileResponse,
    ),
    (
        "terminal/create",
        v120::CreateTerminalRequest,
        v120::CreateTerminalResponse,
    ),
    (
        "terminal/output",
        v120::TerminalOutputRequest,
        v120::TerminalOutputResponse,
    ),
    (
        "terminal/wait_for_exit",
        v120::WaitForTerminalExitRequest,
        v120::WaitForTerminalExitResponse,
    ),
    (
        "terminal/kill",
        v120::KillTerminalRequest,
        v120::KillTerminalResponse,
    ),
    (
        "terminal/release",
        v120::ReleaseTerminalRequest,
        v120::ReleaseTerminalResponse,
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
        v120::CreateElicitationRequest,
        v120::CreateElicitationResponse,
    ),
];

/// Notifications the agent sends to the client.
pub(super) const AGENT_NOTIFICATIONS: &[(&str, ValidatorFn)] = &[
    ("session/update", v120::SessionNotification),
    (
        "elicitation/complete",
        v120::CompleteElicitationNotification,
    ),
    (
        "$/cancel_request",
        validator::<acp::CancelRequestNotification>,
    ),
    ("mcp/message", mcp_message_notification),
];

/// The schema generated from `agent-client-protocol-schema` 1.20.0 with its
/// unstable features (`schema.crate-1.20.json`): every ACP frame is checked
/// against it. The crate itself cannot be a dependency beside the official
/// client (`agent-client-protocol` 5.2 pins the schema crate at `=1.17.0`,
/// and Cargo holds one 1.x version), so its generated schema is kept here.
pub(super) const CRATE_1_20_SCHEMA: &str = include_str!("../schema.crate-1.20.json");

/// The validator of one `$defs` entry of [`CRATE_1_20_SCHEMA`], cached.
pub fn crate_1_20_validator(def: &'static str) -> &'static Validator {
    static CACHE: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    if let Some(v) = CACHE.lock().unwrap().get(def) {
        return v;
    }
    static FULL: LazyLock<Value> = LazyLock::new(|| {
        serde_json::from_str(CRATE_1_20_SCHEMA).expect("schema.crate-1.20.json parses")
    });
    assert!(
        FULL["$defs"].get(def).is_some(),
        "schema.crate-1.20.json has no $defs/{def}"
    );
    let schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": FULL["$defs"].clone(),
        "$ref": format!("#/$defs/{def}"),
    });
    let compiled = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("schema.crate-1.20.json $defs/{def} does not compile: {e}"));
    let leaked: &'static Validator = Box::leak(Box::new(compiled));
    CACHE.lock().unwrap().entry(def).or_insert(leaked)
}

/// One validator function per schema 1.20 type the method tables name.
#[allow(non_snake_case)]
pub(super) mod v120 {
    use super::{Validator, crate_1_20_validator};
    pub fn Error() -> &'static Validator {
        crate_1_20_validator("Error")
    }
    pub fn AuthenticateRequest() -> &'static Validator {
        crate_1_20_validator("AuthenticateRequest")
    }
    pub fn AuthenticateResponse() -> &'static Validator {
        crate_1_20_validator("AuthenticateResponse")
    }
    pub fn CancelNotification() -> &'static Validator {
        crate_1_20_validator("CancelNotification")
    }
    pub fn CloseSessionRequest() -> &'static Validator {
        crate_1_20_validator("CloseSessionRequest")
    }
    pub fn CloseSessionResponse() -> &'static Validator {
        crate_1_20_validator("CloseSessionResponse")
    }
    pub fn CompleteElicitationNotification() -> &'static Validator {
        crate_1_20_validator("CompleteElicitationNotification")
    }
    pub fn CreateElicitationRequest() -> &'static Validator {
        crate_1_20_validator("CreateElicitationRequest")
    }
    pub fn CreateElicitationResponse() -> &'static Validator {
        crate_1_20_validator("CreateElicitationResponse")
    }
    pub fn CreateTerminalRequest() -> &'static Validator {
        crate_1_20_validator("CreateTerminalRequest")
    }
    pub fn CreateTerminalResponse() -> &'static Validator {
        crate_1_20_validator("CreateTerminalResponse")
    }
    pub fn DeleteSessionRequest() -> &'static Validator {
        crate_1_20_validator("DeleteSessionRequest")
    }
    pub fn DeleteSessionResponse() -> &'static Validator {
        crate_1_20_validator("DeleteSessionResponse")
    }
    pub fn DisableProviderRequest() -> &'static Validator {
        crate_1_20_validator("DisableProviderRequest")
    }
    pub fn DisableProviderResponse() -> &'static Validator {
        crate_1_20_validator("DisableProviderResponse")
    }
    pub fn ForkSessionRequest() -> &'static Validator {
        crate_1_20_validator("ForkSessionRequest")
    }
    pub fn ForkSessionResponse() -> &'static Validator {
        crate_1_20_validator("ForkSessionResponse")
    }
    pub fn InitializeRequest() -> &'static Validator {
        crate_1_20_validator("InitializeRequest")
    }
    pub fn InitializeResponse() -> &'static Validator {
        crate_1_20_validator("InitializeResponse")
    }
    pub fn KillTerminalRequest() -> &'static Validator {
        crate_1_20_validator("KillTerminalRequest")
    }
    pub fn KillTerminalResponse() -> &'static Validator {
        crate_1_20_validator("KillTerminalResponse")
    }
    pub fn ListProvidersRequest() -> &'static Validator {
        crate_1_20_validator("ListProvidersRequest")
    }
    pub fn ListProvidersResponse() -> &'static Validator {
        crate_1_20_validator("ListProvidersResponse")
    }
    pub fn ListSessionsRequest() -> &'static Validator {
        crate_1_20_validator("ListSessionsRequest")
    }
    pub fn ListSessionsResponse() -> &'static Validator {
        crate_1_20_validator("ListSessionsResponse")
    }
    pub fn LoadSessionRequest() -> &'static Validator {
        crate_1_20_validator("LoadSessionRequest")
    }
    pub fn LoadSessionResponse() -> &'static Validator {
        crate_1_20_validator("LoadSessionResponse")
    }
    pub fn LogoutRequest() -> &'static Validator {
        crate_1_20_validator("LogoutRequest")
    }
    pub fn LogoutResponse() -> &'static Validator {
        crate_1_20_validator("LogoutResponse")
    }
    pub fn NewSessionRequest() -> &'static Validator {
        crate_1_20_validator("NewSessionRequest")
    }
    pub fn NewSessionResponse() -> &'static Validator {
        crate_1_20_validator("NewSessionResponse")
    }
    pub fn PromptRequest() -> &'static Validator {
        crate_1_20_validator("PromptRequest")
    }
    pub fn PromptResponse() -> &'static Validator {
        crate_1_20_validator("PromptResponse")
    }
    pub fn ReadTextFileRequest() -> &'static Validator {
        crate_1_20_validator("ReadTextFileRequest")
    }
    pub fn ReadTextFileResponse() -> &'static Validator {
        crate_1_20_validator("ReadTextFileResponse")
    }
    pub fn ReleaseTerminalRequest() -> &'static Validator {
        crate_1_20_validator("ReleaseTerminalRequest")
    }
    pub fn ReleaseTerminalResponse() -> &'static Validator {
        crate_1_20_validator("ReleaseTerminalResponse")
    }
    pub fn RequestPermissionRequest() -> &'static Validator {
        crate_1_20_validator("RequestPermissionRequest")
    }
    pub fn RequestPermissionResponse() -> &'static Validator {
        crate_1_20_validator("RequestPermissionResponse")
    }
    pub fn ResumeSessionRequest() -> &'static Validator {
        crate_1_20_validator("ResumeSessionRequest")
    }
    pub fn ResumeSessionResponse() -> &'static Validator {
        crate_1_20_validator("ResumeSessionResponse")
    }
    pub fn SessionNotification() -> &'static Validator {
        crate_1_20_validator("SessionNotification")
    }
    pub fn SessionOptionsRequest() -> &'static Validator {
        crate_1_20_validator("SessionOptionsRequest")
    }
    pub fn SessionOptionsResponse() -> &'static Validator {
        crate_1_20_validator("SessionOptionsResponse")
    }
    pub fn SetProviderRequest() -> &'static Validator {
        crate_1_20_validator("SetProviderRequest")
    }
    pub fn SetProviderResponse() -> &'static Validator {
        crate_1_20_validator("SetProviderResponse")
    }
    pub fn SetSessionConfigOptionRequest() -> &'static Validator {
        crate_1_20_validator("SetSessionConfigOptionRequest")
    }
    pub fn SetSessionConfigOptionResponse() -> &'static Validator {
        crate_1_20_validator("SetSessionConfigOptionResponse")
    }
    pub fn SetSessionModeRequest() -> &'static Validator {
        crate_1_20_validator("SetSessionModeRequest")
    }
    pub fn SetSessionModeResponse() -> &'static Validator {
        crate_1_20_validator("SetSessionModeResponse")
    }
    pub fn SetSessionTitleRequest() -> &'static Validator {
        crate_1_20_validator("SetSessionTitleRequest")
    }
    pub fn SetSessionTitleResponse() -> &'static Validator {
        crate_1_20_validator("SetSessionTitleResponse")
    }
    pub fn TerminalOutputRequest() -> &'static Validator {
        crate_1_20_validator("TerminalOutputRequest")
    }
    pub fn TerminalOutputResponse() -> &'static Validator {
        crate_1_20_validator("TerminalOutputResponse")
    }
    pub fn WaitForTerminalExitRequest() -> &'static Validator {
        crate_1_20_validator("WaitForTerminalExitRequest")
    }
    pub fn WaitForTerminalExitResponse() -> &'static Validator {
        crate_1_20_validator("WaitForTerminalExitResponse")
    }
    pub fn WriteTextFileRequest() -> &'static Validator {
        crate_1_20_validator("WriteTextFileRequest")
    }
    pub fn WriteTextFileResponse() -> &'static Validator {
        crate_1_20_validator("WriteTextFileResponse")
    }
}

/// The official unstable schema (git HEAD `schema.unstable.json`), for the
/// MCP-over-ACP messages: the schema crate's lineage defines `mcp/message`
/// differently (`serverId` + `requestId`) and has no `mcp/connect`.
pub(super) const UNSTABLE_SCHEMA: &str = include_str!("../schema.unstable.json");

/// The validator of one `$defs` entry of [`UNSTABLE_SCHEMA`], cached.
pub fn unstable_validator(def: &'static str) -> &'static Validator {
    static CACHE: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    json_validator(&CACHE, UNSTABLE_SCHEMA, "schema.unstable.json", def)
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
