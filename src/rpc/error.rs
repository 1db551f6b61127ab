//! The wire error object and its named constructors.
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Standard JSON-RPC and ACP error codes.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const REQUEST_CANCELLED: i64 = -32800;
    /// ACP `auth_required`.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP "resource not found" (missing file, unknown session).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error object, both the one we send and the one we receive.
///
/// `message` is always one sentence a user can act on (which field, which variable).
/// One read off the wire (an editor's or a server's error) goes through the
/// same one-line rule as one we build, since it may be shown or relayed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[serde(from = "WireError")]
#[error("{message} (code {code})")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// An error object as it arrives, before [`RpcError::new`] normalises it.
#[derive(Deserialize)]
struct WireError {
    code: i64,
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

impl From<WireError> for RpcError {
    fn from(w: WireError) -> Self {
        let e = RpcError::new(w.code, w.message);
        match w.data {
            Some(data) => e.with_data(data),
            None => e,
        }
    }
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        // A message must be one line on the wire: the spec asks for one concise sentence.
        let message = message.into().replace(['\n', '\r'], " ");
        Self {
            code,
            message,
            data: None,
        }
    }
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::PARSE_ERROR, format!("Parse error: {detail}"))
    }
    pub fn invalid_request(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
        .with_data(serde_json::json!({ "method": method }))
    }
    pub fn invalid_params(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INVALID_PARAMS, format!("Invalid params: {detail}"))
    }
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::INTERNAL_ERROR, format!("Internal error: {detail}"))
    }
    pub fn auth_required(detail: impl std::fmt::Display) -> Self {
        Self::new(
            codes::AUTH_REQUIRED,
            format!("Authentication required: {detail}"),
        )
    }
    pub fn not_found(detail: impl std::fmt::Display) -> Self {
        Self::new(codes::RESOURCE_NOT_FOUND, detail.to_string())
    }
    pub fn cancelled() -> Self {
        Self::new(codes::REQUEST_CANCELLED, "Request cancelled")
    }
}
