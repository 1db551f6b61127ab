//! Validation of ACP v1 messages against the JSON Schema generated from the
//! `agent-client-protocol-schema` crate 1.20.0 with its unstable features
//! (`tests/support/schema.crate-1.20.json`, see [`methods::CRATE_1_20_SCHEMA`]).
//!
//! That file was generated with the same settings as the official
//! `schema-generator` (draft 2020-12, untagged variant titles,
//! `RemoveRefSiblings`, `ReplaceBoolSchemas { skip_additional_properties }`).
//! Each frame is checked against `{"$ref": "#/$defs/<Type>", "$defs": ...}`,
//! so every `$ref` points into the file itself (nothing is ever fetched).
//! The one message that schema lacks (`$/cancel_request`) is checked against
//! a schema generated at test time from the 1.17 crate the official client
//! pins. Each validator is compiled once per type and cached.
//!
//! The entry points check a whole JSON-RPC message: the envelope
//! (`jsonrpc: "2.0"`, known root keys only, one of `result`/`error`, a valid
//! id) and then `params` / `result` against the type for its method.

mod methods;
mod validators;

use methods::*;
use validators::*;

use super::shorten;
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
    check_against(v120::Error(), error)?;
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
mod tests;
