//! `elicitation/create` and `elicitation/complete` (ACP §10, stable since
//! 2026-07): the agent asks the user through the editor, either with a form
//! (a flat JSON Schema of primitives) or by sending them to a URL.
//!
//! Only modes the editor advertised in `clientCapabilities.elicitation` may
//! be used (the editor answers `-32602` otherwise; ACP §2's hard rule).
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Meta;

/// `clientCapabilities.elicitation`: each present (non-null) key is a mode.
/// `elicitation: {}` advertises no mode (ACP §3, unlike MCP).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ElicitationCapabilities {
    #[serde(default)]
    pub form: Option<Value>,
    #[serde(default)]
    pub url: Option<Value>,
}

impl ElicitationCapabilities {
    pub fn form(&self) -> bool {
        self.form.as_ref().is_some_and(|v| !v.is_null())
    }
    pub fn url(&self) -> bool {
        self.url.as_ref().is_some_and(|v| !v.is_null())
    }
}

/// `elicitation/create` params (`CreateElicitationRequest`): the mode's
/// fields are flattened next to `message`.
#[derive(Debug, Serialize)]
pub struct CreateElicitationRequest<'a> {
    #[serde(flatten)]
    pub mode: ElicitationMode<'a>,
    pub message: &'a str,
}

/// What the user is asked for.
#[derive(Debug, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationMode<'a> {
    Form {
        #[serde(flatten)]
        scope: ElicitationScope<'a>,
        #[serde(rename = "requestedSchema")]
        requested_schema: &'a Value,
    },
    Url {
        #[serde(flatten)]
        scope: ElicitationScope<'a>,
        #[serde(rename = "elicitationId")]
        elicitation_id: &'a str,
        url: &'a str,
    },
}

/// A session-scoped elicitation, optionally tied to one tool call (so the
/// editor can show the question inside that call).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationScope<'a> {
    pub session_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<&'a str>,
}

/// The user's answer (`CreateElicitationResponse`).
#[derive(Debug, Clone, Deserialize)]
pub struct CreateElicitationResponse {
    pub action: ElicitationAction,
    /// The form's values (accept in form mode only).
    #[serde(default)]
    pub content: Option<Map<String, Value>>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitationAction {
    Accept,
    Decline,
    Cancel,
    /// An action this agent does not know: treated like `decline`.
    #[serde(other)]
    Other,
}

/// `elicitation/complete` params: a URL-mode flow finished out of band.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteElicitationNotification<'a> {
    pub elicitation_id: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn wire_shapes() {
        let schema = json!({"type": "object", "properties": {}});
        let form = CreateElicitationRequest {
            mode: ElicitationMode::Form {
                scope: ElicitationScope {
                    session_id: "s",
                    tool_call_id: Some("t"),
                },
                requested_schema: &schema,
            },
            message: "Which?",
        };
        assert_eq!(
            serde_json::to_value(&form).unwrap(),
            json!({"mode": "form", "sessionId": "s", "toolCallId": "t",
                   "requestedSchema": schema, "message": "Which?"})
        );
        let url = CreateElicitationRequest {
            mode: ElicitationMode::Url {
                scope: ElicitationScope {
                    session_id: "s",
                    tool_call_id: None,
                },
                elicitation_id: "e1",
                url: "https://x/auth",
            },
            message: "Sign in",
        };
        assert_eq!(
            serde_json::to_value(&url).unwrap(),
            json!({"mode": "url", "sessionId": "s", "elicitationId": "e1",
                   "url": "https://x/auth", "message": "Sign in"})
        );
        let r: CreateElicitationResponse =
            serde_json::from_value(json!({"action": "accept", "content": {"a": 1}})).unwrap();
        assert_eq!(r.action, ElicitationAction::Accept);
        let r: CreateElicitationResponse =
            serde_json::from_value(json!({"action": "later"})).unwrap();
        assert_eq!(r.action, ElicitationAction::Other);
        let caps: ElicitationCapabilities = serde_json::from_value(json!({"form": {}})).unwrap();
        assert!(caps.form() && !caps.url());
        let caps: ElicitationCapabilities = serde_json::from_value(json!({"url": null})).unwrap();
        assert!(!caps.form() && !caps.url());
    }
}
