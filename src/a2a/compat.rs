//! A2A 0.3 compatibility (issue 20): the 0.3 method names (`message/send`,
//! `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`) with
//! their 0.3 shapes, converted to and from the 1.0 ones the server works in.
//! The shapes are those of the SDK's compatibility layer
//! (`a2a.compat.v0_3.types`): parts and results tagged by `kind`, roles and
//! states in lower case (`input-required`), `configuration.blocking`, and
//! status events with `final`.
use serde_json::{Map, Value, json};

use super::wire::{method, state};

pub fn is_v03(name: &str) -> bool {
    matches!(
        name,
        method::V03_SEND
            | method::V03_STREAM
            | method::V03_GET
            | method::V03_CANCEL
            | method::V03_SUBSCRIBE
    )
}

/// 0.3 request params in the 1.0 shape.
pub fn params_from_v03(name: &str, mut params: Value) -> Value {
    if !matches!(name, method::V03_SEND | method::V03_STREAM) {
        return params;
    }
    if let Some(parts) = params
        .pointer_mut("/message/parts")
        .and_then(Value::as_array_mut)
    {
        for p in parts.iter_mut() {
            *p = part_from_v03(p);
        }
    }
    if let Some(cfg) = params
        .get_mut("configuration")
        .and_then(Value::as_object_mut)
        && let Some(blocking) = cfg.remove("blocking").and_then(|b| b.as_bool())
    {
        cfg.insert("returnImmediately".into(), json!(!blocking));
    }
    params
}

fn part_from_v03(p: &Value) -> Value {
    let mut out = Map::new();
    match p.get("kind").and_then(Value::as_str) {
        Some("data") => {
            out.insert("data".into(), p.get("data").cloned().unwrap_or(Value::Null));
        }
        Some("file") => {
            let file = &p["file"];
            if let Some(uri) = file.get("uri") {
                out.insert("url".into(), uri.clone());
            } else if let Some(bytes) = file.get("bytes") {
                out.insert("raw".into(), bytes.clone());
            }
            if let Some(n) = file.get("name") {
                out.insert("filename".into(), n.clone());
            }
            if let Some(m) = file.get("mimeType") {
                out.insert("mediaType".into(), m.clone());
            }
        }
        _ => {
            out.insert("text".into(), p.get("text").cloned().unwrap_or(json!("")));
        }
    }
    if let Some(m) = p.get("metadata") {
        out.insert("metadata".into(), m.clone());
    }
    Value::Object(out)
}

fn part_to_v03(p: &Value) -> Value {
    let mut out = if let Some(t) = p.get("text") {
        json!({"kind": "text", "text": t})
    } else if let Some(d) = p.get("data") {
        json!({"kind": "data", "data": d})
    } else {
        let mut file = json!({"uri": p.get("url").cloned().unwrap_or(Value::Null)});
        if let Some(n) = p.get("filename") {
            file["name"] = n.clone();
        }
        json!({"kind": "file", "file": file})
    };
    if let Some(m) = p.get("metadata") {
        out["metadata"] = m.clone();
    }
    out
}

fn parts_to_v03(v: &mut Value) {
    if let Some(parts) = v.get_mut("parts").and_then(Value::as_array_mut) {
        for p in parts.iter_mut() {
            *p = part_to_v03(p);
        }
    }
}

fn message_to_v03(mut m: Value) -> Value {
    if !m.is_object() {
        return m;
    }
    m["kind"] = json!("message");
    m["role"] = json!(match m["role"].as_str() {
        Some("ROLE_USER") | Some("user") => "user",
        _ => "agent",
    });
    parts_to_v03(&mut m);
    m
}

/// `TASK_STATE_INPUT_REQUIRED` → `input-required`.
pub fn state_to_v03(s: &str) -> String {
    s.strip_prefix("TASK_STATE_")
        .unwrap_or(s)
        .to_ascii_lowercase()
        .replace('_', "-")
}

fn status_to_v03(mut status: Value) -> Value {
    if let Some(s) = status["state"].as_str() {
        status["state"] = json!(state_to_v03(s));
    }
    if let Some(m) = status.get_mut("message") {
        *m = message_to_v03(m.take());
    }
    status
}

fn task_to_v03(mut t: Value) -> Value {
    t["kind"] = json!("task");
    t["status"] = status_to_v03(t["status"].take());
    if let Some(h) = t.get_mut("history").and_then(Value::as_array_mut) {
        for m in h.iter_mut() {
            *m = message_to_v03(m.take());
        }
    }
    if let Some(a) = t.get_mut("artifacts").and_then(Value::as_array_mut) {
        for art in a.iter_mut() {
            parts_to_v03(art);
        }
    }
    t
}

/// A 1.0 result (`{"task": …}` or a bare `Task`) in the 0.3 shape.
pub fn result_to_v03(name: &str, r: Value) -> Value {
    match name {
        method::V03_SEND => event_to_v03(r),
        _ => task_to_v03(r),
    }
}

/// A 1.0 `StreamResponse` in the 0.3 shape (the tagged object itself).
pub fn event_to_v03(mut e: Value) -> Value {
    if let Some(t) = e.get_mut("task") {
        return task_to_v03(t.take());
    }
    if let Some(m) = e.get_mut("message") {
        return message_to_v03(m.take());
    }
    if let Some(u) = e.get_mut("statusUpdate") {
        let mut u = u.take();
        let fin = u["status"]["state"]
            .as_str()
            .is_some_and(state::is_interrupted);
        u["kind"] = json!("status-update");
        u["final"] = json!(fin);
        u["status"] = status_to_v03(u["status"].take());
        return u;
    }
    if let Some(u) = e.get_mut("artifactUpdate") {
        let mut u = u.take();
        u["kind"] = json!("artifact-update");
        parts_to_v03(&mut u["artifact"]);
        return u;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_and_results_convert() {
        let p = params_from_v03(
            method::V03_SEND,
            json!({"message": {"role": "user", "parts": [{"kind": "text", "text": "hi"}, {"kind": "file", "file": {"uri": "file:///a", "name": "a"}}]},
                   "configuration": {"blocking": false}}),
        );
        assert_eq!(p["message"]["parts"][0], json!({"text": "hi"}));
        assert_eq!(
            p["message"]["parts"][1],
            json!({"url": "file:///a", "filename": "a"})
        );
        assert_eq!(p["configuration"]["returnImmediately"], true);
        let t = result_to_v03(
            method::V03_SEND,
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
                  "message": {"role": "ROLE_AGENT", "parts": [{"text": "ok?"}]}}, "history": [], "artifacts": [{"artifactId": "a", "parts": [{"text": "x"}]}]}}),
        );
        assert_eq!(t["kind"], "task");
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(t["status"]["message"]["role"], "agent");
        assert_eq!(t["status"]["message"]["parts"][0]["kind"], "text");
        assert_eq!(
            t["artifacts"][0]["parts"][0],
            json!({"kind": "text", "text": "x"})
        );
        let e = event_to_v03(
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        assert_eq!(
            (e["kind"].as_str(), e["final"].as_bool()),
            (Some("status-update"), Some(true))
        );
    }
}
