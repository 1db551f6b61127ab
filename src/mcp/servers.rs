//! Which servers a session gets: the editor's `mcpServers` (ACP §5.1
//! "MCP servers") merged with the `[mcp_servers.NAME]` entries of the config
//! file. The editor's entry wins on a name clash; within one list the first
//! entry of a name wins.
use std::collections::HashSet;

use crate::acp::{McpServer, NameValue};
use crate::config::{McpServerSpec, McpTransportSpec};

fn pairs(v: &[NameValue]) -> Vec<(String, String)> {
    v.iter()
        .map(|p| (p.name.clone(), p.value.clone()))
        .collect()
}

/// The editor's description of a server as a spec.
pub fn from_acp(server: &McpServer) -> McpServerSpec {
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
            },
            McpServerSpec {
                name: "c".into(),
                transport: McpTransportSpec::Http {
                    url: "http://c".into(),
                    headers: vec![],
                },
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
}
