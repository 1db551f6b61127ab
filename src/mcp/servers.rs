//! Which servers a session gets: the editor's `mcpServers` (ACP §5.1
//! "MCP servers") merged with the `[mcp_servers.NAME]` entries of the config
//! file. The editor's entry wins on a name clash; within one list the first
//! entry of a name wins.
use std::collections::HashSet;

use crate::acp::{McpServer, NameValue, ServerMeta};
use crate::config::{McpOAuthClient, McpServerSpec, McpTransportSpec};

/// Where an editor's entry says how to sign in: `_meta["acp-coder"].oauth`.
pub const OAUTH_META: [&str; 2] = ["acp-coder", "oauth"];

/// The sign-in client of an editor's HTTP or SSE entry (`_meta`, see
/// [`OAUTH_META`]): `clientId`, `clientSecret`, `clientMetadataUrl`, `issuer`, each a
/// string; another value is ignored (and logged). The secret is learned by
/// the redactor at once.
fn oauth_of(meta: &ServerMeta, server: &str) -> McpOAuthClient {
    let Some(oauth) = meta.get(&OAUTH_META) else {
        return McpOAuthClient::default();
    };
    let field = |key: &str| match oauth.get(key) {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.clone()),
        Some(_) => {
            tracing::warn!(server = %server, key, "MCP server _meta: OAuth value is not a string; ignored");
            None
        }
    };
    let client = McpOAuthClient {
        client_id: field("clientId"),
        client_secret: field("clientSecret"),
        client_metadata_url: field("clientMetadataUrl"),
        issuer: field("issuer"),
    };
    crate::secrets::learn(client.client_secret.iter().cloned());
    client
}

fn pairs(v: &[NameValue]) -> Vec<(String, String)> {
    v.iter()
        .map(|p| (p.name.clone(), p.value.clone()))
        .collect()
}

/// The editor's description of a server as a spec.
pub fn from_acp(server: &McpServer) -> McpServerSpec {
    let oauth = match server {
        McpServer::Http(h) | McpServer::Sse(h) => oauth_of(&h.meta, &h.name),
        _ => McpOAuthClient::default(),
    };
    let transport = match server {
        McpServer::Stdio(s) | McpServer::StdioUntagged(s) => McpTransportSpec::Stdio {
            command: s.command.clone(),
            args: s.args.clone(),
            env: pairs(&s.env),
        },
        McpServer::Http(h) => McpTransportSpec::Http {
            url: h.url.clone(),
            headers: pairs(&h.headers),
        },
        McpServer::Sse(h) => McpTransportSpec::Sse {
            url: h.url.clone(),
            headers: pairs(&h.headers),
        },
        McpServer::Acp(a) => McpTransportSpec::Acp {
            server_id: a.server_id.clone(),
        },
    };
    McpServerSpec {
        name: server.name().to_owned(),
        transport,
        oauth,
    }
}

/// The editor's servers in their order, then the configured ones whose name
/// the editor did not use.
pub fn merge(editor: &[McpServer], configured: &[McpServerSpec]) -> Vec<McpServerSpec> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for spec in editor
        .iter()
        .map(from_acp)
        .chain(configured.iter().cloned())
    {
        if seen.insert(spec.name.clone()) {
            out.push(spec);
        } else {
            tracing::info!(server = %spec.name, "MCP server listed twice; the first entry is used");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editor_wins_on_name_clash() {
        let editor: Vec<McpServer> = serde_json::from_value(serde_json::json!([
            {"name": "a", "command": "/bin/a", "args": [], "env": [{"name": "K", "value": "V"}]},
            {"type": "sse", "name": "b", "url": "http://h/sse", "headers": []},
            {"type": "http", "name": "a", "url": "http://h/mcp", "headers": []},
        ]))
        .unwrap();
        let configured = vec![
            McpServerSpec {
                name: "b".into(),
                transport: McpTransportSpec::Stdio {
                    command: "x".into(),
                    args: vec![],
                    env: vec![],
                },
                oauth: Default::default(),
            },
            McpServerSpec {
                name: "c".into(),
                transport: McpTransportSpec::Http {
                    url: "http://c".into(),
                    headers: vec![],
                },
                oauth: Default::default(),
            },
        ];
        let merged = merge(&editor, &configured);
        let names: Vec<&str> = merged.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(
            matches!(&merged[0].transport, McpTransportSpec::Stdio { env, .. } if env == &[("K".to_string(), "V".to_string())])
        );
        assert!(matches!(&merged[1].transport, McpTransportSpec::Sse { .. }));
    }

    #[test]
    fn an_editor_entry_carries_its_sign_in_client_in_meta() {
        let editor: Vec<McpServer> = serde_json::from_value(serde_json::json!([
            {"type": "http", "name": "a", "url": "http://h/mcp", "headers": [],
             "_meta": {"acp-coder": {"oauth": {
                 "clientId": "pre-1", "clientSecret": "meta-client-secret-1",
                 "clientMetadataUrl": "https://me.example/client.json"}}}},
            {"type": "sse", "name": "b", "url": "http://h/sse", "headers": [],
             "_meta": {"acp-coder": {"oauth": {"clientId": 7}}, "other": true}},
            {"type": "http", "name": "c", "url": "http://h/mcp", "headers": [], "_meta": 5},
        ]))
        .unwrap();
        let specs = merge(&editor, &[]);
        let a = &specs[0].oauth;
        assert_eq!(a.client_id.as_deref(), Some("pre-1"));
        assert_eq!(a.client_secret.as_deref(), Some("meta-client-secret-1"));
        assert_eq!(
            a.client_metadata_url.as_deref(),
            Some("https://me.example/client.json")
        );
        // The secret is redacted from now on, and Debug never shows it.
        assert_eq!(
            crate::secrets::redact("x meta-client-secret-1 y"),
            "x [redacted] y"
        );
        assert!(!format!("{:?}", specs[0]).contains("meta-client-secret-1"));
        assert!(!format!("{editor:?}").contains("meta-client-secret-1"));
        // A value that is not a string is ignored; a malformed `_meta` too.
        assert!(specs[1].oauth.is_empty());
        assert!(specs[2].oauth.is_empty());
    }
}
