//! The agent's one dispatch table (ACP §3–§6): an editor request's method
//! and params decoded into the params type its handler takes. The rpc
//! handler ([`crate::agent::Agent`]) and the fuzz harness
//! ([`crate::agent::decode`]) both decode through [`EditorRequest::decode`],
//! so the fuzzer exercises exactly what the agent accepts.
use serde_json::value::RawValue;

use crate::acp::{
    AuthenticateRequest, DisableProviderRequest, InitializeRequest, ListSessionsRequest,
    LoadSessionRequest, MessageMcp, NewSessionRequest, PromptRequest, SessionOptionsRequest,
    SessionRef, SetConfigOptionRequest, SetModeRequest, SetProviderRequest, SetSessionTitleRequest,
    SteeringRequest, method,
};
use crate::rpc::{RpcError, decode_params};

/// A request from the editor, with its params decoded.
// Made once per request and moved straight into its handler: boxing the
// larger params would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum EditorRequest {
    Initialize(InitializeRequest),
    Authenticate(AuthenticateRequest),
    /// `logout` (ACP §4, `auth.logout`).
    Logout,
    NewSession(NewSessionRequest),
    LoadSession(LoadSessionRequest),
    ResumeSession(LoadSessionRequest),
    /// Unstable `session/fork`.
    ForkSession(LoadSessionRequest),
    /// Unstable `session/set_title`.
    SetTitle(SetSessionTitleRequest),
    /// Unstable `session/options`.
    SessionOptions(SessionOptionsRequest),
    ListSessions(ListSessionsRequest),
    CloseSession(SessionRef),
    DeleteSession(SessionRef),
    Prompt(PromptRequest),
    SetMode(SetModeRequest),
    SetConfigOption(SetConfigOptionRequest),
    /// Unstable `providers/list`.
    ListProviders,
    /// Unstable `providers/set`.
    SetProvider(SetProviderRequest),
    /// Unstable `providers/disable`.
    DisableProvider(DisableProviderRequest),
    /// Unstable MCP over ACP: an MCP request from an editor-side server.
    McpMessage(MessageMcp),
    /// `_session/steering` (codex-acp's extension).
    Steering(SteeringRequest),
}

impl EditorRequest {
    /// Decodes `params` for `method`; `Ok(None)` for a method the agent does
    /// not serve (answered `-32601`).
    pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Option<Self>, RpcError> {
        let p = params;
        Ok(Some(match method {
            method::INITIALIZE => Self::Initialize(decode_params(p)?),
            method::AUTHENTICATE => Self::Authenticate(decode_params(p)?),
            method::LOGOUT => {
                decode_params::<crate::acp::Empty>(p)?;
                Self::Logout
            }
            method::SESSION_NEW => Self::NewSession(decode_params(p)?),
            method::SESSION_LOAD => Self::LoadSession(decode_params(p)?),
            method::SESSION_RESUME => Self::ResumeSession(decode_params(p)?),
            method::SESSION_FORK => Self::ForkSession(decode_params(p)?),
            method::SESSION_SET_TITLE => Self::SetTitle(decode_params(p)?),
            method::SESSION_OPTIONS => Self::SessionOptions(decode_params(p)?),
            method::SESSION_LIST => Self::ListSessions(decode_params(p)?),
            method::SESSION_CLOSE => Self::CloseSession(decode_params(p)?),
            method::SESSION_DELETE => Self::DeleteSession(decode_params(p)?),
            method::SESSION_PROMPT => Self::Prompt(decode_params(p)?),
            method::SESSION_SET_MODE => Self::SetMode(decode_params(p)?),
            method::SESSION_SET_CONFIG_OPTION => Self::SetConfigOption(decode_params(p)?),
            method::PROVIDERS_LIST => Self::ListProviders,
            method::PROVIDERS_SET => Self::SetProvider(decode_params(p)?),
            method::PROVIDERS_DISABLE => Self::DisableProvider(decode_params(p)?),
            method::MCP_MESSAGE => Self::McpMessage(decode_params(p)?),
            method::SESSION_STEERING => Self::Steering(decode_params(p)?),
            _ => return Ok(None),
        }))
    }

    /// The session a prompt is for, read on the reader loop before the whole
    /// prompt is decoded, so its turn is registered in arrival order.
    pub fn prompt_session(params: Option<&RawValue>) -> Option<String> {
        decode_params::<SessionRef>(params)
            .ok()
            .map(|r| r.session_id)
    }
}

/// A notification from the editor, with its params decoded.
#[derive(Debug)]
pub enum EditorNotification {
    Cancel(SessionRef),
    /// `$/cancel_request`: optional to honour; our handlers are short except
    /// prompts, which are cancelled with `session/cancel`.
    CancelRequest,
    /// Unstable MCP over ACP: an MCP notification from an editor-side server.
    McpMessage(MessageMcp),
}

impl EditorNotification {
    /// Decodes `params` for `method`; `Ok(None)` for a notification the agent ignores.
    pub fn decode(method: &str, params: Option<&RawValue>) -> Result<Option<Self>, RpcError> {
        Ok(Some(match method {
            method::SESSION_CANCEL => Self::Cancel(decode_params(params)?),
            method::CANCEL_REQUEST => Self::CancelRequest,
            method::MCP_MESSAGE => Self::McpMessage(decode_params(params)?),
            _ => return Ok(None),
        }))
    }
}
