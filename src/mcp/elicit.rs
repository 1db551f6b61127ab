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
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, UrlElicitationCapability,
};
use serde_json::Value;

use crate::editor::{Answer, Editor, ElicitError};

/// What the MCP client advertises: the editor's elicitation modes.
pub fn capability(editor: &Editor) -> Option<ElicitationCapability> {
    let mut cap = ElicitationCapability::new();
    if editor.can_elicit_form() {
        cap = cap.with_form(FormElicitationCapability::new());
    }
    if editor.can_elicit_url() {
        cap = cap.with_url(UrlElicitationCapability::new());
    }
    (cap.form.is_some() || cap.url.is_some()).then_some(cap)
}

/// Relays one server elicitation; `server` names it in the question.
pub async fn relay(
    editor: &Editor,
    server: &str,
    request: ElicitRequestParams,
) -> Result<ElicitResult, ErrorData> {
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
                .elicit_form(None, &format!("{server}: {message}"), &schema)
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
            editor
                .open_url_with_id(None, &id, &format!("{server}: {message}"), &url)
                .await
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
    }

    /// A hostile server cannot make the editor show a `javascript:` or
    /// `file:` link: only web links are relayed.
    #[tokio::test]
    async fn only_web_links_are_relayed() {
        let caps: crate::acp::ClientCapabilities =
            serde_json::from_value(json!({"elicitation": {"url": {}}})).unwrap();
        let conn = crate::rpc::Connection::new(None);
        let editor = Editor::new(conn.peer.clone(), std::sync::Arc::new(caps), "s");
        for url in [
            "javascript:alert(1)",
            "file:///etc/passwd",
            "data:text/html,x",
        ] {
            let request: ElicitRequestParams = serde_json::from_value(json!({
                "mode": "url", "message": "sign in", "url": url, "elicitationId": "e"
            }))
            .unwrap();
            let e = relay(&editor, "srv", request).await.unwrap_err();
            assert!(e.message.contains("http(s)"), "{url}: {}", e.message);
        }
        // Without the capability a form is declined, never sent.
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form", "message": "name?",
            "requestedSchema": {"type": "object", "properties": {"n": {"type": "string"}}}
        }))
        .unwrap();
        let r = relay(&editor, "srv", request).await.unwrap();
        assert_eq!(r.action, ElicitationAction::Decline);
    }
}
