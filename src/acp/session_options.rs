//! Unstable session methods of the schema-1.20 lineage: `session/set_title`
//! (`sessionCapabilities.title`) and `session/options` with initial config
//! option values on session setup requests (`sessionCapabilities.options`).
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Meta, SessionConfigOption, SessionModeState};

/// `session/set_title` params.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetSessionTitleRequest {
    pub session_id: String,
    pub title: String,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

/// `session/set_title` result: the title as stored (normalized).
#[derive(Debug, Clone, Serialize)]
pub struct SetSessionTitleResponse {
    pub title: String,
}

/// `session/options` params: the options a new session in `cwd` (or the
/// stored session `sessionId`) would start with.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOptionsRequest {
    pub cwd: String,
    #[serde(default, deserialize_with = "super::lenient_items")]
    pub additional_directories: Vec<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

/// `session/options` result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionOptionsResponse {
    pub modes: SessionModeState,
    pub config_options: Vec<SessionConfigOption>,
}

/// One `InitialSessionConfigOption` of a setup request (`configOptions` on
/// `session/new|load|resume|fork`).
#[derive(Debug, Clone, PartialEq)]
pub struct InitialConfigOption {
    pub config_id: String,
    pub value: InitialValue,
}

/// A value id (`type` absent or any other string) or a boolean (`type: "boolean"`).
#[derive(Debug, Clone, PartialEq)]
pub enum InitialValue {
    Id(String),
    Boolean(bool),
}

/// Reads a setup request's `configOptions` (omitted and `null` are an
/// empty list). A malformed entry or a repeated `configId` is an error
/// naming the entry (the schema: `-32602`); whether an entry applies is
/// decided later, when it is applied.
pub fn initial_config_options(value: Option<&Value>) -> Result<Vec<InitialConfigOption>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(
                "params.configOptions: expected a list of {configId, value} objects".into(),
            );
        }
    };
    let mut out: Vec<InitialConfigOption> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("params.configOptions[{i}]");
        let config_id = item
            .get("configId")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at}.configId: expected the option's id (a string)"))?;
        let value = match (item.get("type").and_then(Value::as_str), item.get("value")) {
            (Some("boolean"), Some(Value::Bool(b))) => InitialValue::Boolean(*b),
            (Some("boolean"), _) => {
                return Err(format!(
                    "{at}.value: a \"boolean\" entry takes true or false"
                ));
            }
            (_, Some(Value::String(s))) => InitialValue::Id(s.clone()),
            _ => return Err(format!("{at}.value: expected a value id (a string)")),
        };
        if out.iter().any(|o| o.config_id == config_id) {
            return Err(format!(
                "{at}.configId: {config_id:?} is given twice; send each option once"
            ));
        }
        out.push(InitialConfigOption {
            config_id: config_id.to_owned(),
            value,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn initial_options_are_read_and_malformed_ones_refused() {
        let ok = initial_config_options(Some(&json!([
            {"configId": "mode", "value": "ask"},
            {"configId": "x", "type": "boolean", "value": true},
            {"configId": "y", "type": "_future", "value": "v", "_meta": {}}
        ])))
        .unwrap();
        assert_eq!(ok.len(), 3);
        assert_eq!(ok[0].value, InitialValue::Id("ask".into()));
        assert_eq!(ok[1].value, InitialValue::Boolean(true));
        assert_eq!(ok[2].value, InitialValue::Id("v".into()));
        assert!(initial_config_options(None).unwrap().is_empty());
        assert!(
            initial_config_options(Some(&Value::Null))
                .unwrap()
                .is_empty()
        );
        for bad in [
            json!({"configId": "mode"}),
            json!([{"value": "ask"}]),
            json!([{"configId": "mode", "value": 3}]),
            json!([{"configId": "x", "type": "boolean", "value": "yes"}]),
            json!([{"configId": "mode", "value": "ask"}, {"configId": "mode", "value": "ask"}]),
        ] {
            assert!(initial_config_options(Some(&bad)).is_err(), "{bad}");
        }
    }
}
