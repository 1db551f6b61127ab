//! The A2A 1.0 wire format (JSON-RPC binding), hand-written like the ACP
//! types: the JSON the official `a2a-sdk` writes and reads is the protobuf
//! JSON mapping of `lf.a2a.v1` (camelCase fields, enum names such as
//! `TASK_STATE_WORKING`, `Part` as a oneof of `text` / `raw` / `url` /
//! `data`). Only what acp-coder serves is here: messages, tasks, the two
//! stream events, errors.
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// JSON-RPC method names: A2A 1.0 and the 0.3 names the SDK's compatibility
/// transport sends (`a2a.compat.v0_3`).
pub mod method {
    pub const SEND: &str = "SendMessage";
    pub const STREAM: &str = "SendStreamingMessage";
    pub const GET: &str = "GetTask";
    pub const CANCEL: &str = "CancelTask";
    pub const SUBSCRIBE: &str = "SubscribeToTask";
    pub const LIST: &str = "ListTasks";
    pub const V03_SEND: &str = "message/send";
    pub const V03_STREAM: &str = "message/stream";
    pub const V03_GET: &str = "tasks/get";
    pub const V03_CANCEL: &str = "tasks/cancel";
    pub const V03_SUBSCRIBE: &str = "tasks/resubscribe";
    pub const EXTENDED_CARD: &str = "GetExtendedAgentCard";
    pub const V03_EXTENDED_CARD: &str = "agent/getAuthenticatedExtendedCard";
    /// The push notification config methods, 1.0 and 0.3: acp-coder sends
    /// no push notifications, so each answers `PushNotificationNotSupported`.
    pub const PUSH_CONFIG: [&str; 8] = [
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    ];
}

/// A2A error codes (spec §"JSON-RPC error codes"; `a2a.utils.errors`).
pub mod code {
    pub const PARSE: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    pub const TASK_NOT_FOUND: i64 = -32001;
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    pub const PUSH_NOT_SUPPORTED: i64 = -32003;
    pub const UNSUPPORTED: i64 = -32004;
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    pub const EXTENDED_CARD_NOT_CONFIGURED: i64 = -32007;
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
}

/// An A2A error: a JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct A2aError {
    pub code: i64,
    pub message: String,
}

impl A2aError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
    pub fn params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }
    pub fn task_not_found(id: &str) -> Self {
        Self::new(
            code::TASK_NOT_FOUND,
            format!("task {id:?} not found (unknown, or expired after being idle)"),
        )
    }
    pub fn to_json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

/// Task states, as the protobuf enum names.
pub mod state {
    pub const SUBMITTED: &str = "TASK_STATE_SUBMITTED";
    pub const WORKING: &str = "TASK_STATE_WORKING";
    pub const COMPLETED: &str = "TASK_STATE_COMPLETED";
    pub const FAILED: &str = "TASK_STATE_FAILED";
    pub const CANCELED: &str = "TASK_STATE_CANCELED";
    pub const INPUT_REQUIRED: &str = "TASK_STATE_INPUT_REQUIRED";
    pub const REJECTED: &str = "TASK_STATE_REJECTED";
    /// Every `TaskState` name but `TASK_STATE_UNSPECIFIED` (acp-coder never
    /// asks for authentication, but a client may filter by it).
    pub const ALL: [&str; 8] = [
        SUBMITTED,
        WORKING,
        COMPLETED,
        FAILED,
        CANCELED,
        INPUT_REQUIRED,
        REJECTED,
        "TASK_STATE_AUTH_REQUIRED",
    ];

    /// No further message can change the task.
    pub fn is_terminal(s: &str) -> bool {
        matches!(s, COMPLETED | FAILED | CANCELED | REJECTED)
    }
    /// The task waits: a blocking call returns, a stream ends.
    pub fn is_interrupted(s: &str) -> bool {
        is_terminal(s) || s == INPUT_REQUIRED
    }
}

/// `Message` as received (`SendMessageRequest.message`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(default)]
    pub message_id: String,
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub task_id: String,
    #[serde(default)]
    pub parts: Vec<Value>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendParams {
    pub message: Message,
    #[serde(default)]
    pub configuration: Option<SendConfiguration>,
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    /// Answer at once with the task as it is, instead of when it settles.
    #[serde(default)]
    pub return_immediately: bool,
    #[serde(default)]
    pub history_length: Option<i64>,
}

/// `GetTaskRequest`, `CancelTaskRequest`, `SubscribeToTaskRequest`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    pub id: String,
    #[serde(default)]
    pub history_length: Option<i64>,
}

/// `ListTasksRequest`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    #[serde(default)]
    pub context_id: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub page_size: Option<i64>,
    #[serde(default)]
    pub page_token: String,
    #[serde(default)]
    pub history_length: Option<i64>,
    /// RFC 3339: only tasks whose status changed at or after it.
    #[serde(default)]
    pub status_timestamp_after: Option<String>,
    #[serde(default)]
    pub include_artifacts: bool,
}

/// Checks a `historyLength` (A2A spec §"History length semantics"): absent
/// means all, 0 none, n the last n; negative is an error.
pub fn history_length(n: Option<i64>) -> Result<Option<i64>, A2aError> {
    match n {
        Some(n) if n < 0 => Err(A2aError::params(format!(
            "historyLength {n}: must be 0 or more (omit it for the whole history)"
        ))),
        other => Ok(other),
    }
}

/// Decodes params, naming the field that is wrong.
pub fn decode<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    decode_ref(&params)
}

/// [`decode`] from a borrowed value. Valid params decode directly; only a
/// failure is decoded again with the path tracker, which copies every key
/// it passes, to name the field.
pub fn decode_ref<T: serde::de::DeserializeOwned>(params: &Value) -> Result<T, A2aError> {
    T::deserialize(params).or_else(|_| {
        serde_path_to_error::deserialize(params)
            .map_err(|e| A2aError::params(format!("params.{}: {}", e.path(), e.inner())))
    })
}

/// A JSON object of these fields, each moved in. `json!` copies every
/// `Value` it is given (it serialises it again), so the objects that carry
/// messages, parts and tasks are built with this instead.
pub fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

/// A text part.
pub fn text_part(text: &str) -> Value {
    object([("text", text.into())])
}

/// An agent message with these parts.
pub fn agent_message(context_id: &str, task_id: &str, parts: Vec<Value>) -> Value {
    object([
        ("messageId", new_id().into()),
        ("contextId", context_id.into()),
        ("taskId", task_id.into()),
        ("role", "ROLE_AGENT".into()),
        ("parts", Value::Array(parts)),
    ])
}

/// The text of a message's text parts, joined by newlines.
pub fn message_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The ACP prompt blocks for a message: text parts as text, `data` parts as
/// their JSON text, `url` parts as resource links. `raw` (inline bytes) is
/// refused: acp-coder's prompt takes text.
pub fn prompt_blocks(parts: &[Value]) -> Result<Vec<Value>, A2aError> {
    let mut blocks = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            blocks.push(json!({"type": "text", "text": t}));
        } else if let Some(d) = p.get("data") {
            blocks.push(json!({"type": "text", "text": d.to_string()}));
        } else if let Some(u) = p.get("url").and_then(Value::as_str) {
            let name = p
                .get("filename")
                .and_then(Value::as_str)
                .unwrap_or(u)
                .to_owned();
            blocks.push(json!({"type": "resource_link", "uri": u, "name": name}));
        } else {
            return Err(A2aError::new(
                code::CONTENT_TYPE_NOT_SUPPORTED,
                format!(
                    "message.parts[{i}]: only text, data and url parts are accepted (send file contents as text)"
                ),
            ));
        }
    }
    if blocks.is_empty() {
        return Err(A2aError::params(
            "message.parts is empty: send at least one text part with the task",
        ));
    }
    Ok(blocks)
}

/// The answer to a pending permission question, as an option kind of ACP's
/// `session/request_permission` (`allow_once`, `allow_always`,
/// `reject_once`) or an option id: from a data part
/// `{"optionId": ...}` / `{"decision": ...}`, or plainly from text.
pub fn permission_answer(parts: &[Value], options: &[Value]) -> Option<String> {
    let kind_id = |kind: &str| {
        options
            .iter()
            .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
            .and_then(|o| o.get("optionId")?.as_str().map(str::to_owned))
    };
    let by_word = |w: &str| -> Option<String> {
        let w = w.trim().trim_end_matches(['.', '!']).to_ascii_lowercase();
        if let Some(o) = options.iter().find(|o| {
            o.get("optionId").and_then(Value::as_str) == Some(w.as_str())
                || o.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.eq_ignore_ascii_case(&w))
        }) {
            return o.get("optionId")?.as_str().map(str::to_owned);
        }
        let kind = match w.as_str() {
            "allow" | "allow once" | "allow_once" | "yes" | "y" | "ok" | "approve" | "approved" => {
                "allow_once"
            }
            "always" | "allow always" | "allow_always" | "always allow" => "allow_always",
            "reject" | "reject once" | "reject_once" | "no" | "n" | "deny" | "denied"
            | "refuse" => "reject_once",
            "reject always" | "reject_always" | "never" => "reject_always",
            _ => return None,
        };
        kind_id(kind).or_else(|| {
            let fallback = if kind.starts_with("allow") {
                ["allow_once", "allow_always"]
            } else {
                ["reject_once", "reject_always"]
            };
            fallback.iter().find_map(|k| kind_id(k))
        })
    };
    for p in parts {
        if let Some(d) = p.get("data") {
            for key in ["optionId", "decision", "answer"] {
                if let Some(found) = d.get(key).and_then(Value::as_str).and_then(by_word) {
                    return Some(found);
                }
            }
        }
    }
    let text = message_text(parts);
    (!text.trim().is_empty()).then(|| by_word(&text)).flatten()
}

/// Whether an answer asked for "always" but `choice` (what
/// [`permission_answer`] picked) is not an `allow_always` option: the
/// command offers none, so it runs once and the next one asks again.
pub fn always_unavailable(parts: &[Value], options: &[Value], choice: &str) -> bool {
    let always = |w: &str| {
        matches!(
            w.trim()
                .trim_end_matches(['.', '!'])
                .to_ascii_lowercase()
                .as_str(),
            "always" | "allow always" | "allow_always" | "always allow"
        )
    };
    let asked = parts.iter().any(|p| {
        p.get("data").is_some_and(|d| {
            ["optionId", "decision", "answer"]
                .iter()
                .any(|k| d.get(k).and_then(Value::as_str).is_some_and(always))
        })
    }) || always(&message_text(parts));
    let kind = options
        .iter()
        .find(|o| o.get("optionId").and_then(Value::as_str) == Some(choice))
        .and_then(|o| o.get("kind")?.as_str());
    asked && kind != Some("allow_always")
}

/// A fresh id (a random UUID v4 spelling: tasks, messages, artifacts).
pub fn new_id() -> String {
    let (a, b) = (fastrand::u64(..), fastrand::u64(..));
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0x3fff | 0x8000,
        b & 0xffff_ffff_ffff
    )
}

/// An RFC 3339 timestamp (protobuf `Timestamp` JSON).
pub fn timestamp(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> Vec<Value> {
        vec![
            json!({"optionId": "allow", "name": "Allow", "kind": "allow_once"}),
            json!({"optionId": "always", "name": "Always allow", "kind": "allow_always"}),
            json!({"optionId": "reject", "name": "Reject", "kind": "reject_once"}),
        ]
    }

    #[test]
    fn answers_from_text_and_data() {
        let o = opts();
        let ans = |parts: Value| permission_answer(parts.as_array().unwrap(), &o);
        assert_eq!(ans(json!([{"text": "yes"}])).as_deref(), Some("allow"));
        assert_eq!(
            ans(json!([{"text": " Always allow "}])).as_deref(),
            Some("always")
        );
        assert_eq!(ans(json!([{"text": "no."}])).as_deref(), Some("reject"));
        assert_eq!(ans(json!([{"text": "Never"}])).as_deref(), Some("reject"));
        assert_eq!(
            ans(json!([{"data": {"optionId": "always"}}])).as_deref(),
            Some("always")
        );
        assert_eq!(
            ans(json!([{"data": {"decision": "reject_once"}}])).as_deref(),
            Some("reject")
        );
        assert_eq!(ans(json!([{"text": "maybe later"}])), None);
        assert_eq!(ans(json!([])), None);
    }

    #[test]
    fn prompt_parts() {
        let b = prompt_blocks(&[json!({"text": "hi"}), json!({"data": {"a": 1}})]).unwrap();
        assert_eq!(b[1]["text"], "{\"a\":1}");
        assert_eq!(prompt_blocks(&[]).unwrap_err().code, code::INVALID_PARAMS);
        assert_eq!(
            prompt_blocks(&[json!({"raw": "AAAA"})]).unwrap_err().code,
            code::CONTENT_TYPE_NOT_SUPPORTED
        );
    }

    #[test]
    fn ids_look_like_uuids() {
        let id = new_id();
        assert_eq!(id.len(), 36);
        assert_eq!(id.as_bytes()[14], b'4');
        assert_ne!(id, new_id());
    }
}
