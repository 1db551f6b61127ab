//! Unstable ACP types (`schema.unstable.json`, Rust features
//! `unstable_llm_providers` and `unstable_mcp_over_acp`): editor-configured
//! model providers (`providers/list|set|disable`, RFD "Configurable LLM
//! Providers") and MCP servers reached through the ACP connection
//! (`mcpServers` entries of `type: "acp"`, `mcp/connect|message|disconnect`).
//!
//! Each type mirrors its `$defs` entry; the capabilities that gate them are
//! `agentCapabilities.providers` and `mcpCapabilities.acp`.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::Meta;

/// `providers/list` result (`ListProvidersResponse`).
#[derive(Debug, Clone, Serialize)]
pub struct ListProvidersResponse {
    pub providers: Vec<ProviderInfo>,
}

/// `ProviderInfo`: only non-secret routing information.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub provider_id: String,
    pub supported: Vec<String>,
    pub required: bool,
    /// `null` means disabled (the RFD: "MUST NOT be used for LLM calls").
    pub current: Option<ProviderCurrentConfig>,
}

/// `ProviderCurrentConfig`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderCurrentConfig {
    pub api_type: String,
    pub base_url: String,
}

/// `providers/set` params (`SetProviderRequest`). `headers` may hold the
/// credentials: never logged (no `Debug` of values), never stored.
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetProviderRequest {
    pub provider_id: String,
    pub api_type: String,
    pub base_url: String,
    /// Omitted means an empty map (RFD "Set semantics").
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

impl std::fmt::Debug for SetProviderRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetProviderRequest")
            .field("provider_id", &self.provider_id)
            .field("api_type", &self.api_type)
            .field("base_url", &self.base_url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// `providers/disable` params (`DisableProviderRequest`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DisableProviderRequest {
    pub provider_id: String,
    #[serde(rename = "_meta", default, deserialize_with = "super::lenient")]
    pub meta: Meta,
}

/// `McpServerAcp`: an MCP server that lives in the editor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServerAcp {
    pub name: String,
    pub server_id: String,
}

/// `mcp/connect` params (`ConnectMcpRequest`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectMcpRequest<'a> {
    pub server_id: &'a str,
}

/// `mcp/connect` result (`ConnectMcpResponse`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectMcpResponse {
    pub connection_id: String,
}

/// `mcp/message` params, request or notification (`MessageMcpRequest`,
/// `MessageMcpNotification`): one inner MCP message without its envelope.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageMcp {
    pub connection_id: String,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// `mcp/disconnect` params (`DisconnectMcpRequest`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisconnectMcpRequest<'a> {
    pub connection_id: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_request_debug_hides_header_values() {
        let req: SetProviderRequest = serde_json::from_value(serde_json::json!({
            "providerId": "main", "apiType": "openai", "baseUrl": "http://h/v1",
            "headers": {"Authorization": "Bearer sk-very-secret"}
        }))
        .unwrap();
        let shown = format!("{req:?}");
        assert!(shown.contains("Authorization"), "{shown}");
        assert!(!shown.contains("sk-very-secret"), "{shown}");
        let no_headers: SetProviderRequest = serde_json::from_value(serde_json::json!({
            "providerId": "main", "apiType": "openai", "baseUrl": "http://h/v1"
        }))
        .unwrap();
        assert!(no_headers.headers.is_empty());
    }

    #[test]
    fn message_params_omit_absent_params() {
        let m = MessageMcp {
            connection_id: "c".into(),
            method: "notifications/initialized".into(),
            params: None,
        };
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            serde_json::json!({"connectionId": "c", "method": "notifications/initialized"})
        );
    }
}
