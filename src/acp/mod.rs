//! Hand-rolled ACP v1 types (serde only), grouped like the official schema.
//!
//! Lenient on input: unknown fields are ignored, `_meta` is kept, unknown enum
//! variants in lists decode to an `Unknown` variant instead of failing the message.
//! Exact on output: optional fields are omitted rather than sent as `null`, and
//! every type mirrors its `$defs` entry in the ACP v1 schema.
pub mod client;
pub mod content;
pub mod elicitation;
pub mod initialize;
pub mod session;
pub mod session_options;
pub mod tool_call;
pub mod unstable_providers;
pub mod unstable_sessions;
pub mod update;

pub use client::*;
pub use content::*;
pub use elicitation::*;
pub use initialize::*;
pub use session::*;
pub use session_options::*;
pub use tool_call::*;
pub use unstable_providers::*;
pub use unstable_sessions::*;
pub use update::*;

/// The only protocol version this agent speaks (ACP §3).
pub const PROTOCOL_VERSION: u16 = 1;

/// Arbitrary `_meta` object carried by every ACP type.
pub type Meta = Option<serde_json::Map<String, serde_json::Value>>;

/// An optional field that is malformed reads as absent instead of failing
/// the whole message: the schema's `x-deserialize-default-on-error`, as the
/// reference implementation does (`"clientCapabilities": null` made
/// `initialize` fail, and with it the connection, in an outside review).
pub(crate) fn lenient<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned + Default,
{
    let v = <serde_json::Value as serde::Deserialize>::deserialize(d)?;
    Ok(serde_json::from_value(v).unwrap_or_default())
}

/// A list whose malformed items are left out (logged), empty when it is not
/// a list: the schema's `x-deserialize-skip-invalid-items` (one `mcpServers`
/// entry of a type this agent does not know failed the whole `session/new`).
pub(crate) fn lenient_items<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    Ok(
        match <serde_json::Value as serde::Deserialize>::deserialize(d)? {
            serde_json::Value::Array(items) => items
                .into_iter()
                .filter_map(|item| match serde_json::from_value(item) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        tracing::warn!(error = %e, "skipping a malformed list item");
                        None
                    }
                })
                .collect(),
            _ => Vec::new(),
        },
    )
}

/// Method names, so no string literal is repeated across the code.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const AUTHENTICATE: &str = "authenticate";
    pub const SESSION_NEW: &str = "session/new";
    pub const SESSION_LOAD: &str = "session/load";
    pub const SESSION_RESUME: &str = "session/resume";
    pub const SESSION_LIST: &str = "session/list";
    pub const SESSION_CLOSE: &str = "session/close";
    pub const SESSION_DELETE: &str = "session/delete";
    pub const SESSION_PROMPT: &str = "session/prompt";
    pub const SESSION_CANCEL: &str = "session/cancel";
    pub const SESSION_SET_MODE: &str = "session/set_mode";
    pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
    pub const SESSION_UPDATE: &str = "session/update";
    pub const REQUEST_PERMISSION: &str = "session/request_permission";
    pub const FS_READ: &str = "fs/read_text_file";
    pub const FS_WRITE: &str = "fs/write_text_file";
    pub const TERMINAL_CREATE: &str = "terminal/create";
    pub const TERMINAL_OUTPUT: &str = "terminal/output";
    pub const TERMINAL_WAIT: &str = "terminal/wait_for_exit";
    pub const TERMINAL_KILL: &str = "terminal/kill";
    pub const TERMINAL_RELEASE: &str = "terminal/release";
    pub const CANCEL_REQUEST: &str = "$/cancel_request";
    pub const LOGOUT: &str = "logout";
    pub const ELICITATION_CREATE: &str = "elicitation/create";
    pub const ELICITATION_COMPLETE: &str = "elicitation/complete";
    /// Unstable (`unstable_session_fork`, ACP §15).
    pub const SESSION_FORK: &str = "session/fork";
    /// Unstable (schema 1.20 `sessionCapabilities.title`).
    pub const SESSION_SET_TITLE: &str = "session/set_title";
    /// Unstable (schema 1.20 `sessionCapabilities.options`).
    pub const SESSION_OPTIONS: &str = "session/options";
    // Unstable (schema.unstable.json): editor-configured providers, MCP over ACP.
    pub const PROVIDERS_LIST: &str = "providers/list";
    pub const PROVIDERS_SET: &str = "providers/set";
    pub const PROVIDERS_DISABLE: &str = "providers/disable";
    pub const MCP_CONNECT: &str = "mcp/connect";
    pub const MCP_MESSAGE: &str = "mcp/message";
    pub const MCP_DISCONNECT: &str = "mcp/disconnect";
    /// codex-acp's steering extension (advertised in `initialize`'s `_meta`).
    pub const SESSION_STEERING: &str = "_session/steering";
}

/// An empty result object `{}` (the wire form of "no result fields").
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Empty {
    #[serde(
        rename = "_meta",
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub meta: Meta,
}
