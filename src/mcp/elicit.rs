//! MCP servers' elicitations relayed to the editor (issue 18 item 3).
//!
//! A server's `elicitation/create` becomes an ACP `elicitation/create` of
//! the same mode (ACP §10) when the editor advertised that mode; otherwise
//! it is declined. The user's answer goes back unchanged. The MCP client
//! advertises to its servers exactly the modes the editor renders, so a
//! well-behaved server never asks for a mode that would only be declined.
//!
//! The form schema has already been read into rmcp's typed
//! `ElicitationSchema` (an object of primitive properties; rmcp answers a
//! malformed one with an invalid-params error before we see it); a form the
//! editor's side would still reject is answered with a clear MCP error.
use rmcp::ErrorData;
use std::collections::HashSet;
use std::sync::Mutex;

use rmcp::model::{
    CustomNotification, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
};
use serde_json::Value;

use crate::editor::{Answer, Editor, ElicitError};

/// The relay of one server: the session's editor, the server's name (shown
/// with each question) and the URL elicitations it had relayed, so only
/// those can be completed (`notifications/elicitation/complete`).
pub struct Relay {
    editor: Editor,
    server: String,
    open_urls: Mutex<HashSet<String>>,
}

/// MCP's notification that a URL-mode flow finished out of band.
const COMPLETE: &str = "notifications/elicitation/complete";

impl Relay {
    pub fn new(editor: Editor, server: &str) -> Self {
        Self {
            editor,
            server: server.to_owned(),
            open_urls: Mutex::new(HashSet::new()),
        }
    }

    /// What the MCP client advertises: the editor's elicitation modes.
    pub fn capability(&self) -> Option<ElicitationCapability> {
        let mut cap = ElicitationCapability::new();
        if self.editor.can_elicit_form() {
            cap = cap.with_form(FormElicitationCapability::new());
        }
        if self.editor.can_elicit_url() {
            cap = cap.with_url(UrlElicitationCapability::new());
        }
        (cap.form.is_some() || cap.url.is_some()).then_some(cap)
    }

    /// Relays one server elicitation.
    pub async fn relay(&self, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        self.relay_in(request, None).await
    }

    /// Relays one elicitation, shown with ACP tool call `tool_call` when it
    /// belongs to one (an input request of a `tools/call`, `super::input`).
    pub async fn relay_in(
        &self,
        request: ElicitRequestParams,
        tool_call: Option<&str>,
    ) -> Result<ElicitResult, ErrorData> {
        let editor = &self.editor;
        let server = &self.server;
        let answer = match request {
            ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } => {
                if !editor.can_elicit_form() {
                    return Ok(ElicitResult::new(ElicitationAction::Decline));
                }
                let schema = serde_json::to_value(&requested_schema)
                    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
                check_form(&schema)?;
                editor
                    .elicit_form(tool_call, &format!("{server}: {message}"), &schema)
                    .await
            }
            ElicitRequestParams::UrlElicitationParams {
                message,
                url,
                elicitation_id,
                ..
            } => {
                if !editor.can_elicit_url() {
                    return Ok(ElicitResult::new(ElicitationAction::Decline));
                }
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(ErrorData::invalid_params(
                        format!(
                            "url: {url:?} is not an http(s) URL; only web links are shown to the user"
                        ),
                        None,
                    ));
                }
                let id = if elicitation_id.is_empty() {
                    format!("mcp_{:016x}", fastrand::u64(..))
                } else {
                    elicitation_id
                };
                let answer = editor
                    .open_url_with_id(tool_call, &id, &format!("{server}: {message}"), &url)
                    .await;
                if matches!(answer, Ok(Answer::Accept(_))) {
                    lock(&self.open_urls).insert(id);
                }
                answer
            }
            // rmcp's enum is non-exhaustive: a mode this build does not know.
            #[allow(unreachable_patterns)]
            _ => return Ok(ElicitResult::new(ElicitationAction::Decline)),
        };
        match answer {
            Ok(Answer::Accept(content)) => {
                let mut r = ElicitResult::new(ElicitationAction::Accept);
                if !content.is_empty() {
                    r.content = Some(Value::Object(content));
                }
                Ok(r)
            }
            Ok(Answer::Decline) => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Ok(Answer::Cancel) => Ok(ElicitResult::new(ElicitationAction::Cancel)),
            Err(ElicitError::Unsupported(_)) => Ok(ElicitResult::new(ElicitationAction::Decline)),
            Err(e @ ElicitError::Editor(_)) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }

    /// Forwards `notifications/elicitation/complete` as ACP
    /// `elicitation/complete`, for URL elicitations this server had relayed
    /// (an id it never used is ignored).
    pub fn notification(&self, n: &CustomNotification) {
        if n.method != COMPLETE {
            return;
        }
        let Some(id) = n
            .params
            .as_ref()
            .and_then(|p| p.get("elicitationId"))
            .and_then(Value::as_str)
        else {
            return;
        };
        if lock(&self.open_urls).remove(id) {
            self.editor.complete_elicitation(id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The error for a server request rmcp could not read into its typed form
/// (it arrives as a custom request): an `elicitation/create` whose schema is
/// not a flat object (rmcp would answer "method not found: elicitation/create")
/// gets invalid params naming the offending property; any other method is
/// not one the agent answers.
pub fn untyped_request(request: &rmcp::model::CustomRequest) -> ErrorData {
    if request.method == "elicitation/create" {
        let params = request.params.clone().unwrap_or_default();
        let schema = params.get("requestedSchema").cloned().unwrap_or_default();
        if params.get("mode").and_then(Value::as_str) != Some("url")
            && let Err(e) = check_form(&schema)
        {
            return e;
        }
        return ErrorData::invalid_params(
            "elicitation/create: the params do not match MCP's form (message, requestedSchema) or URL (message, url, elicitationId) elicitation",
            None,
        );
    }
    ErrorData::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("{}: acp-coder does not answer this method", request.method),
        None,
    )
}

/// A relayed form must be an object whose properties are all primitives
/// (string, number, integer, boolean, or a multi-select array of strings);
/// the error names the offending property.
fn check_form(schema: &Value) -> Result<(), ErrorData> {
    let bad = |msg: String| Err(ErrorData::invalid_params(msg, None));
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return bad("requestedSchema: must be {\"type\": \"object\", ...}".into());
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return bad("requestedSchema.properties: must be an object".into());
    };
    for (name, p) in props {
        match p.get("type").and_then(Value::as_str) {
            Some("string" | "number" | "integer" | "boolean") => {}
            Some("array")
                if p.get("items")
                    .is_some_and(|i| i.get("type").and_then(Value::as_str) != Some("object")) => {}
            other => {
                return bad(format!(
                    "requestedSchema.properties.{name}: type {} is not a primitive (string, number, integer, boolean or a multi-select array); elicitation forms are flat",
                    other.map_or_else(|| "missing".to_owned(), |t| format!("{t:?}"))
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_flat_forms_pass() {
        assert!(check_form(&json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}})).is_ok());
        assert!(check_form(&json!({"type": "object", "properties": {"m": {"type": "array", "items": {"type": "string", "enum": ["x"]}}}})).is_ok());
        let e = check_form(&json!({"type": "object", "properties": {"deep": {"type": "object"}}}))
            .unwrap_err();
        assert!(e.message.contains("properties.deep"), "{}", e.message);
        assert!(check_form(&json!({"type": "array"})).is_err());
        let custom = |method: &str, params: Value| {
            untyped_request(&rmcp::model::CustomRequest::new(method, Some(params)))
        };
        let e = custom(
            "elicitation/create",
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {"addr": {"type": "object"}}}}),
        );
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains("properties.addr"), "{}", e.message);
        let e = custom("x/unknown", json!({}));
        assert_eq!(e.code, rmcp::model::ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.starts_with("x/unknown: "), "{}", e.message);
    }

    /// A hostile server cannot make the editor show a `javascript:` or
    /// `file:` link: only web links are relayed.
    #[tokio::test]
    async fn only_web_links_are_relayed() {
        let caps: crate::acp::ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
        let conn = crate::rpc::Connection::new(crate::rpc::ServeOptions::default());
        let editor = Editor::new(conn.peer.clone(), std::sync::Arc::new(caps), "s");
        let relay_ = Relay::new(editor, "srv");
        for url in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,x",
        ] {
            let request: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "url", "message": "sign in", "url": url, "elicitationId": "e"
            }))
            .unwrap();
            let e = relay_.relay(request).await.unwrap_err();
            assert!(e.message.contains("http(s)"), "{url}: {}", e.message);
        }
        // Without the capability a form is declined, never sent.
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "name?",
            "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}
        }))
        .unwrap();
        let r = relay_.relay(request).await.unwrap();
        assert_eq!(r.action, ElicitationAction::Decline);

        // Only URL elicitations this server had relayed are completed.
        lock(&relay_.open_urls).insert("mine".into());
        let complete = |id: &str| {
            serde_json::from_value::<CustomNotification>(json!({
                "method": COMPLETE, "params": {"elicitationId": id}
            }))
            .unwrap()
        };
        relay_.notification(&complete("someone-elses"));
        assert_eq!(lock(&relay_.open_urls).len(), 1);
        relay_.notification(&complete("mine"));
        assert!(lock(&relay_.open_urls).is_empty());
    }
}
