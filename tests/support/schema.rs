//! Validation of ACP v1 messages against JSON Schemas generated at test time
//! from the official `agent-client-protocol-schema` crate.
//!
//! Schemas are generated with the same settings as the official
//! `schema-generator` (draft 2020-12, untagged variant titles,
//! `RemoveRefSiblings`, `ReplaceBoolSchemas { skip_additional_properties }`)
//! but one root schema per message type, so every `$ref` points into the
//! schema's own `$defs` (checked when a schema is compiled; nothing is ever
//! fetched). Each validator is compiled once per type and cached.
//!
//! The entry points check a whole JSON-RPC message: the envelope
//! (`jsonrpc: "2.0"`, known root keys only, one of `result`/`error`, a valid
//! id) and then `params` / `result` against the type for its method.

use agent_client_protocol_schema::v1 as acp;
use jsonschema::{Draft, Validator};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use schemars::transform::{RemoveRefSiblings, ReplaceBoolSchemas};
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::{LazyLock, Mutex};

/// A JSON-RPC request id (`id` member).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RpcId {
    Num(i64),
    Str(String),
    /// Only legal in an error response to a message whose id could not be read.
    Null,
}

impl RpcId {
    /// Reads an id; `None` for anything JSON-RPC does not allow (fractions, objects…).
    pub fn from_json(value: &Value) -> Option<RpcId> {
        match value {
            Value::Null => Some(RpcId::Null),
            Value::String(s) => Some(RpcId::Str(s.clone())),
            Value::Number(n) => n.as_i64().map(RpcId::Num),
            _ => None,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            RpcId::Num(n) => Value::from(*n),
            RpcId::Str(s) => Value::from(s.as_str()),
            RpcId::Null => Value::Null,
        }
    }
}

impl fmt::Display for RpcId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RpcId::Num(n) => write!(f, "{n}"),
            RpcId::Str(s) => write!(f, "{s:?}"),
            RpcId::Null => f.write_str("null"),
        }
    }
}

impl From<i64> for RpcId {
    fn from(n: i64) -> Self {
        RpcId::Num(n)
    }
}

impl From<&str> for RpcId {
    fn from(s: &str) -> Self {
        RpcId::Str(s.to_owned())
    }
}

impl From<String> for RpcId {
    fn from(s: String) -> Self {
        RpcId::Str(s)
    }
}

/// What a valid message turned out to be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    Request {
        id: RpcId,
        method: String,
    },
    Notification {
        method: String,
    },
    /// `method` is the method of the request this answers (None for an
    /// `id: null` error response).
    Response {
        id: RpcId,
        method: Option<String>,
        is_error: bool,
    },
}

type ValidatorFn = fn() -> &'static Validator;

/// Requests the client (editor) sends to the agent: method, params type, result type.
const CLIENT_REQUESTS: &[(&str, ValidatorFn, ValidatorFn)] = &[
    (
        "initialize",
        validator::<acp::InitializeRequest>,
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
    (
        "session/fork",
        validator::<acp::ForkSessionRequest>,
        validator::<acp::ForkSessionResponse>,
    ),
];

/// Notifications the client sends to the agent.
const CLIENT_NOTIFICATIONS: &[(&str, ValidatorFn)] = &[
    ("session/cancel", validator::<acp::CancelNotification>),
    (
        "$/cancel_request",
        validator::<acp::CancelRequestNotification>,
    ),
    ("mcp/message", mcp_message_notification),
];

/// Requests the agent sends to the client: method, params type, result type.
const AGENT_REQUESTS: &[(&str, ValidatorFn, ValidatorFn)] = &[
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
const AGENT_NOTIFICATIONS: &[(&str, ValidatorFn)] = &[
    ("session/update", validator::<acp::SessionNotification>),
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
const UNSTABLE_SCHEMA: &str = include_str!("schema.unstable.json");

/// The validator of one `$defs` entry of [`UNSTABLE_SCHEMA`], cached.
pub fn unstable_validator(def: &'static str) -> &'static Validator {
    static CACHE: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    if let Some(v) = CACHE.lock().unwrap().get(def) {
        return v;
    }
    let full: Value = serde_json::from_str(UNSTABLE_SCHEMA).expect("schema.unstable.json parses");
    assert!(
        full["$defs"].get(def).is_some(),
        "schema.unstable.json has no $defs/{def}"
    );
    let schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": full["$defs"].clone(),
        "$ref": format!("#/$defs/{def}"),
    });
    let compiled = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("schema.unstable.json $defs/{def} does not compile: {e}"));
    let leaked: &'static Validator = Box::leak(Box::new(compiled));
    CACHE.lock().unwrap().entry(def).or_insert(leaked)
}

fn mcp_connect_request() -> &'static Validator {
    unstable_validator("ConnectMcpRequest")
}
fn mcp_connect_response() -> &'static Validator {
    unstable_validator("ConnectMcpResponse")
}
fn mcp_message_request() -> &'static Validator {
    unstable_validator("MessageMcpRequest")
}
fn mcp_message_response() -> &'static Validator {
    unstable_validator("MessageMcpResponse")
}
fn mcp_message_notification() -> &'static Validator {
    unstable_validator("MessageMcpNotification")
}
fn mcp_disconnect_request() -> &'static Validator {
    unstable_validator("DisconnectMcpRequest")
}
fn mcp_disconnect_response() -> &'static Validator {
    unstable_validator("DisconnectMcpResponse")
}

/// The JSON Schema for `T`, generated like the official `schema.json`.
pub fn schema_value<T: JsonSchema>() -> Value {
    let mut settings = SchemaSettings::draft2020_12();
    settings.untagged_enum_variant_titles = true;
    let mut bool_schemas = ReplaceBoolSchemas::default();
    bool_schemas.skip_additional_properties = true;
    let settings = settings
        .with_transform(RemoveRefSiblings::default())
        .with_transform(bool_schemas);
    let schema = settings.into_generator().into_root_schema_for::<T>();
    serde_json::to_value(&schema).expect("schema serializes")
}

static VALIDATORS: LazyLock<Mutex<HashMap<&'static str, &'static Validator>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The compiled validator for `T`, compiled on first use and cached for the
/// life of the test binary.
pub fn validator<T: JsonSchema>() -> &'static Validator {
    let key = std::any::type_name::<T>();
    if let Some(v) = VALIDATORS.lock().unwrap().get(key) {
        return v;
    }
    let schema = schema_value::<T>();
    let mut refs = Vec::new();
    collect_refs(&schema, &mut refs);
    for r in &refs {
        assert!(
            r.starts_with("#/$defs/") || r == "#",
            "schema for {key} has a non-local $ref {r:?}"
        );
        let pointer = &r[1..];
        assert!(
            schema.pointer(pointer).is_some(),
            "schema for {key}: $ref {r:?} does not resolve inside the schema"
        );
    }
    let compiled = jsonschema::options()
        .with_draft(Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("schema for {key} does not compile: {e}"));
    let leaked: &'static Validator = Box::leak(Box::new(compiled));
    VALIDATORS.lock().unwrap().entry(key).or_insert(leaked)
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if (k == "$ref" || k == "$dynamicRef")
                    && let Some(s) = v.as_str()
                {
                    out.push(s.to_owned());
                }
                collect_refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Checks `instance` against a validator; the error lists every failing
/// JSON pointer (relative to `instance`) with the validator's message.
pub fn check_against(validator: &Validator, instance: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| {
            let path = e.instance_path().as_str().to_owned();
            let path = if path.is_empty() { "/".into() } else { path };
            format!("at {path}: {}", shorten(&e.to_string(), 400))
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    let mut msg = errors.join("\n  ");
    // oneOf/anyOf failures only say "not valid under any schema": add the
    // deepest nested failures, which usually name the real problem.
    if msg.contains("oneOf") || msg.contains("anyOf") || msg.contains("any of") {
        let eval = validator.evaluate(instance);
        let mut detail: Vec<(usize, String)> = eval
            .iter_errors()
            .map(|e| {
                let p = e.instance_location.as_str();
                let depth = p.matches('/').count();
                let p = if p.is_empty() { "/" } else { p };
                (
                    depth,
                    format!("at {p}: {}", shorten(e.error.message(), 200)),
                )
            })
            .collect();
        if let Some(max) = detail.iter().map(|(d, _)| *d).max() {
            detail.retain(|(d, _)| *d == max);
            // Fold the per-variant `"x" was expected` lines of a tagged enum
            // into one "expected one of" line per pointer.
            let mut expected: Vec<(String, Vec<String>)> = Vec::new();
            let mut seen = Vec::new();
            for (_, m) in detail {
                if let Some((path, rest)) = m.split_once(": ")
                    && let Some(value) = rest.strip_suffix(" was expected")
                {
                    match expected.iter_mut().find(|(p, _)| p == path) {
                        Some((_, values)) => values.push(value.to_owned()),
                        None => expected.push((path.to_owned(), vec![value.to_owned()])),
                    }
                } else if !seen.contains(&m) {
                    seen.push(m);
                }
            }
            for (path, values) in expected.into_iter().rev() {
                seen.insert(0, format!("{path}: expected one of {}", values.join(", ")));
            }
            let total = seen.len();
            msg.push_str("\n  deepest nested failures:");
            for m in seen.iter().take(8) {
                msg.push_str("\n    ");
                msg.push_str(m);
            }
            if total > 8 {
                msg.push_str(&format!("\n    … and {} more", total - 8));
            }
        }
    }
    Err(msg)
}

/// Checks a value against the schema of `T`.
pub fn check_type<T: JsonSchema>(instance: &Value) -> Result<(), String> {
    check_against(validator::<T>(), instance)
}

fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sender {
    Agent,
    Client,
}

impl Sender {
    fn name(self) -> &'static str {
        match self {
            Sender::Agent => "agent",
            Sender::Client => "editor",
        }
    }
    /// Requests and notifications this side may send, and the requests of
    /// the other side it may answer.
    #[allow(clippy::type_complexity)]
    fn tables(
        self,
    ) -> (
        &'static [(&'static str, ValidatorFn, ValidatorFn)],
        &'static [(&'static str, ValidatorFn)],
        &'static [(&'static str, ValidatorFn, ValidatorFn)],
    ) {
        match self {
            Sender::Agent => (AGENT_REQUESTS, AGENT_NOTIFICATIONS, CLIENT_REQUESTS),
            Sender::Client => (CLIENT_REQUESTS, CLIENT_NOTIFICATIONS, AGENT_REQUESTS),
        }
    }
}

/// Checks a message the AGENT sent. `editor_requests` maps the ids of the
/// editor's requests that are still unanswered to their methods (responses
/// from the agent must answer one of them).
pub fn check_agent_message(
    msg: &Value,
    editor_requests: &HashMap<RpcId, String>,
) -> Result<Classified, String> {
    check_message(Sender::Agent, msg, editor_requests)
}

/// Checks a message the EDITOR (fake client) sends. `agent_requests` maps the
/// ids of the agent's unanswered requests to their methods.
pub fn check_client_message(
    msg: &Value,
    agent_requests: &HashMap<RpcId, String>,
) -> Result<Classified, String> {
    check_message(Sender::Client, msg, agent_requests)
}

/// Like [`check_agent_message`], panicking with a precise message on failure.
#[track_caller]
pub fn validate_agent_message(msg: &Value, editor_requests: &HashMap<RpcId, String>) -> Classified {
    check_agent_message(msg, editor_requests).unwrap_or_else(|e| panic!("{e}"))
}

/// Like [`check_client_message`], panicking with a precise message on failure.
#[track_caller]
pub fn validate_client_message(msg: &Value, agent_requests: &HashMap<RpcId, String>) -> Classified {
    check_client_message(msg, agent_requests).unwrap_or_else(|e| panic!("{e}"))
}

fn check_message(
    sender: Sender,
    msg: &Value,
    peer_requests: &HashMap<RpcId, String>,
) -> Result<Classified, String> {
    let who = sender.name();
    let fail = |what: String| -> String {
        format!(
            "invalid message from the {who}: {what}\n  message: {}",
            shorten(&msg.to_string(), 2000)
        )
    };
    let Some(obj) = msg.as_object() else {
        return Err(fail("a JSON-RPC message must be a JSON object".into()));
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        other => return Err(fail(format!("/jsonrpc must be \"2.0\", found {other:?}"))),
    }
    for key in obj.keys() {
        if !matches!(
            key.as_str(),
            "jsonrpc" | "id" | "method" | "params" | "result" | "error"
        ) {
            return Err(fail(format!("unknown root key {key:?}")));
        }
    }
    let id = match obj.get("id") {
        None => None,
        Some(v) => match RpcId::from_json(v) {
            Some(id) => Some(id),
            None => {
                return Err(fail(format!(
                    "/id must be an integer or a string, found {v}"
                )));
            }
        },
    };
    let (own_requests, own_notifications, peer_table) = sender.tables();

    if let Some(method) = obj.get("method") {
        let Some(method) = method.as_str() else {
            return Err(fail("/method must be a string".into()));
        };
        if obj.contains_key("result") || obj.contains_key("error") {
            return Err(fail(
                "a request/notification must not carry result or error".into(),
            ));
        }
        let params = obj.get("params");
        if let Some(p) = params
            && !p.is_object()
        {
            return Err(fail(format!(
                "/params of {method} must be an object, found {}",
                shorten(&p.to_string(), 200)
            )));
        }
        let null = Value::Null;
        match id {
            Some(RpcId::Null) => Err(fail(format!("request {method} has a null id"))),
            Some(id) => {
                if let Some((_, params_v, _)) = own_requests.iter().find(|(m, _, _)| *m == method) {
                    check_against(params_v(), params.unwrap_or(&null)).map_err(|e| {
                        fail(format!(
                            "params of request {method} (id {id}) do not match the schema:\n  {e}"
                        ))
                    })?;
                } else if !method.starts_with('_') {
                    return Err(fail(format!(
                        "the {who} may not send a request with method {method:?}"
                    )));
                }
                Ok(Classified::Request {
                    id,
                    method: method.to_owned(),
                })
            }
            None => {
                if let Some((_, params_v)) = own_notifications.iter().find(|(m, _)| *m == method) {
                    check_against(params_v(), params.unwrap_or(&null)).map_err(|e| {
                        fail(format!(
                            "params of notification {method} do not match the schema:\n  {e}"
                        ))
                    })?;
                } else if !method.starts_with('_') {
                    return Err(fail(format!(
                        "the {who} may not send a notification with method {method:?}"
                    )));
                }
                Ok(Classified::Notification {
                    method: method.to_owned(),
                })
            }
        }
    } else {
        // A response.
        let Some(id) = id else {
            return Err(fail(
                "a message without method must be a response with an id".into(),
            ));
        };
        if obj.contains_key("params") {
            return Err(fail("a response must not carry params".into()));
        }
        let (result, error) = (obj.get("result"), obj.get("error"));
        match (result, error) {
            (Some(_), Some(_)) => Err(fail(
                "a response must not have both result and error".into(),
            )),
            (None, None) => Err(fail("a response needs result or error".into())),
            (None, Some(error)) => {
                check_error_object(error).map_err(|e| fail(format!("/error: {e}")))?;
                if id == RpcId::Null {
                    return Ok(Classified::Response {
                        id,
                        method: None,
                        is_error: true,
                    });
                }
                let Some(method) = peer_requests.get(&id) else {
                    return Err(fail(format!(
                        "error response to id {id}, which is not an unanswered request of the other side"
                    )));
                };
                Ok(Classified::Response {
                    id,
                    method: Some(method.clone()),
                    is_error: true,
                })
            }
            (Some(result), None) => {
                if id == RpcId::Null {
                    return Err(fail("a successful response must not have a null id".into()));
                }
                let Some(method) = peer_requests.get(&id) else {
                    return Err(fail(format!(
                        "response to id {id}, which is not an unanswered request of the other side"
                    )));
                };
                if let Some((_, _, result_v)) = peer_table.iter().find(|(m, _, _)| m == method) {
                    check_against(result_v(), result).map_err(|e| {
                        fail(format!(
                            "result of {method} (id {id}) does not match the schema:\n  {e}"
                        ))
                    })?;
                }
                Ok(Classified::Response {
                    id,
                    method: Some(method.clone()),
                    is_error: false,
                })
            }
        }
    }
}

/// A JSON-RPC error object: `{code: integer, message: string, data?: any}`
/// and nothing else.
fn check_error_object(error: &Value) -> Result<(), String> {
    let Some(obj) = error.as_object() else {
        return Err(format!("must be an object, found {error}"));
    };
    for key in obj.keys() {
        if !matches!(key.as_str(), "code" | "message" | "data") {
            return Err(format!("unknown key {key:?} in error object"));
        }
    }
    check_type::<acp::Error>(error)?;
    match obj.get("code") {
        Some(Value::Number(n)) if n.is_i64() => {}
        other => return Err(format!("/code must be an integer, found {other:?}")),
    }
    match obj.get("message") {
        Some(Value::String(_)) => Ok(()),
        other => Err(format!("/message must be a string, found {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(pairs: &[(RpcId, &str)]) -> HashMap<RpcId, String> {
        pairs
            .iter()
            .map(|(id, m)| (id.clone(), (*m).to_owned()))
            .collect()
    }

    #[test]
    fn agent_message_chunk_passes() {
        let msg = json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "sess-1",
                "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "hello"}
                }
            }
        });
        assert_eq!(
            validate_agent_message(&msg, &HashMap::new()),
            Classified::Notification {
                method: "session/update".into()
            }
        );
    }

    #[test]
    fn bogus_session_update_fails_with_pointer() {
        let msg = json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": "sess-1",
                "update": {"sessionUpdate": "agent_mesage_chunk", "content": {"type": "text", "text": "x"}}
            }
        });
        let err = check_agent_message(&msg, &HashMap::new()).unwrap_err();
        assert!(err.contains("session/update"), "{err}");
        assert!(err.contains("/update"), "{err}");
        eprintln!("{err}");

        // Wrong content shape inside a valid variant.
        let msg = json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}}
        });
        let err = check_agent_message(&msg, &HashMap::new()).unwrap_err();
        assert!(err.contains("/update"), "{err}");
    }

    #[test]
    fn initialize_response_passes_and_is_checked() {
        let ids = sent(&[(RpcId::Num(0), "initialize")]);
        let ok = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "result": {
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": true, "promptCapabilities": {"image": false}},
                "authMethods": [],
                "agentInfo": {"name": "acp-coder", "version": "0.1.0"}
            }
        });
        assert_eq!(
            validate_agent_message(&ok, &ids),
            Classified::Response {
                id: RpcId::Num(0),
                method: Some("initialize".into()),
                is_error: false
            }
        );
        let bad = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "one"}});
        let err = check_agent_message(&bad, &ids).unwrap_err();
        assert!(err.contains("/protocolVersion"), "{err}");
        assert!(err.contains("initialize"), "{err}");
    }

    #[test]
    fn envelope_rules() {
        let ids = sent(&[(RpcId::Str("a".into()), "session/prompt")]);
        let no_version = json!({"id": "a", "result": {"stopReason": "end_turn"}});
        assert!(check_agent_message(&no_version, &ids).is_err());
        let both = json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "end_turn"}, "error": {"code": 1, "message": "x"}});
        assert!(check_agent_message(&both, &ids).is_err());
        let extra =
            json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "end_turn"}, "extra": 1});
        assert!(
            check_agent_message(&extra, &ids)
                .unwrap_err()
                .contains("extra")
        );
        let unknown_id = json!({"jsonrpc": "2.0", "id": 7, "result": {"stopReason": "end_turn"}});
        assert!(check_agent_message(&unknown_id, &ids).is_err());
        let good = json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "end_turn"}});
        validate_agent_message(&good, &ids);
        let bad_stop = json!({"jsonrpc": "2.0", "id": "a", "result": {"stopReason": "done"}});
        assert!(
            check_agent_message(&bad_stop, &ids)
                .unwrap_err()
                .contains("/stopReason")
        );
        let err = json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32603, "message": "boom", "data": {"x": 1}}});
        validate_agent_message(&err, &ids);
        let err_float =
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": 1.5, "message": "boom"}});
        assert!(check_agent_message(&err_float, &ids).is_err());
        let err_extra =
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": 1, "message": "boom", "why": 1}});
        assert!(check_agent_message(&err_extra, &ids).is_err());
        let parse_error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
        validate_agent_message(&parse_error, &HashMap::new());
    }

    #[test]
    fn unstable_providers_and_mcp_over_acp() {
        let connect = json!({"jsonrpc": "2.0", "id": 5, "method": "mcp/connect", "params": {"serverId": "s"}});
        validate_agent_message(&connect, &HashMap::new());
        let no_id = json!({"jsonrpc": "2.0", "id": 5, "method": "mcp/connect", "params": {}});
        assert!(check_agent_message(&no_id, &HashMap::new()).is_err());
        let pending = sent(&[(RpcId::Num(5), "mcp/connect")]);
        let ok = json!({"jsonrpc": "2.0", "id": 5, "result": {"connectionId": "c"}});
        validate_client_message(&ok, &pending);
        let empty = json!({"jsonrpc": "2.0", "id": 5, "result": {}});
        assert!(check_client_message(&empty, &pending).is_err());
        let note = json!({"jsonrpc": "2.0", "method": "mcp/message",
            "params": {"connectionId": "c", "method": "notifications/initialized"}});
        validate_agent_message(&note, &HashMap::new());
        validate_client_message(&note, &HashMap::new());
        let no_conn = json!({"jsonrpc": "2.0", "method": "mcp/message", "params": {"method": "x"}});
        assert!(check_agent_message(&no_conn, &HashMap::new()).is_err());

        let listed = sent(&[(RpcId::Num(1), "providers/list")]);
        let list = json!({"jsonrpc": "2.0", "id": 1, "result": {"providers": [
            {"providerId": "main", "supported": ["openai"], "required": false, "current": null}]}});
        validate_agent_message(&list, &listed);
        let partial =
            json!({"jsonrpc": "2.0", "id": 1, "result": {"providers": [{"providerId": "main"}]}});
        assert!(check_agent_message(&partial, &listed).is_err());
        let set = json!({"jsonrpc": "2.0", "id": 2, "method": "providers/set",
            "params": {"providerId": "main", "apiType": "openai", "baseUrl": "http://h/v1"}});
        validate_client_message(&set, &HashMap::new());
        let acp_server = json!({"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {
            "cwd": "/p", "mcpServers": [{"type": "acp", "name": "ed", "serverId": "s1"}]}});
        validate_client_message(&acp_server, &HashMap::new());
    }

    #[test]
    fn reverse_requests_and_client_messages() {
        let perm = json!({
            "jsonrpc": "2.0", "id": 0, "method": "session/request_permission",
            "params": {
                "sessionId": "s",
                "toolCall": {"toolCallId": "call_1", "title": "Edit file"},
                "options": [
                    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
                ]
            }
        });
        validate_agent_message(&perm, &HashMap::new());
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/tmp/x", "line": 2, "limit": 3}});
        validate_agent_message(&read, &HashMap::new());
        let unknown = json!({"jsonrpc": "2.0", "id": 2, "method": "fs/delete_file", "params": {}});
        assert!(check_agent_message(&unknown, &HashMap::new()).is_err());

        let pending = sent(&[
            (RpcId::Num(0), "session/request_permission"),
            (RpcId::Num(1), "fs/read_text_file"),
        ]);
        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "allow"}}});
        validate_client_message(&answer, &pending);
        let cancelled =
            json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "cancelled"}}});
        validate_client_message(&cancelled, &pending);
        let bad = json!({"jsonrpc": "2.0", "id": 1, "result": {"text": "x"}});
        assert!(check_client_message(&bad, &pending).is_err());
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true},
            "clientInfo": {"name": "fake-editor", "version": "0.0.0"}
        }});
        validate_client_message(&init, &HashMap::new());
        let cancel =
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}});
        validate_client_message(&cancel, &HashMap::new());
    }
}
