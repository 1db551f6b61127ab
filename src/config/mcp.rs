//! The `[mcp_servers.NAME]` entries of the config file and the validated
//! spec of one MCP server to start (DESIGN §3 "MCP servers").
use std::path::Path;

use serde::Deserialize;

use super::ConfigError;

/// One `[mcp_servers.NAME]` entry: `command` (+ `args`, `env`) for a stdio
/// server, or `url` (+ `headers`) for an HTTP one; `type = "sse"` selects the
/// legacy HTTP+SSE transport.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `stdio`, `http` or `sse`; inferred from `command`/`url` when absent.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// `false` keeps the entry in the file without starting it.
    pub enabled: Option<bool>,
}

/// How to reach one MCP server (validated; from the config file or the editor).
#[derive(Clone, PartialEq, Eq)]
pub enum McpTransportSpec {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// Streamable HTTP (MCP 2025-03-26 and later).
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// The legacy HTTP+SSE transport (MCP 2024-11-05).
    Sse {
        url: String,
        headers: Vec<(String, String)>,
    },
    /// Unstable MCP over ACP: a server inside the editor, reached with
    /// `mcp/connect|message|disconnect` (only from `session/new`).
    Acp { server_id: String },
}

/// A named MCP server to start for a session.
#[derive(Clone, PartialEq, Eq)]
pub struct McpServerSpec {
    pub name: String,
    pub transport: McpTransportSpec,
}

impl std::fmt::Debug for McpServerSpec {
    /// Env and header values may hold secrets: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[(String, String)]| v.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
        match &self.transport {
            McpTransportSpec::Stdio { command, args, env } => f
                .debug_struct("Stdio")
                .field("name", &self.name)
                .field("command", command)
                .field("args", args)
                .field("env", &names(env))
                .finish(),
            McpTransportSpec::Http { url, headers } | McpTransportSpec::Sse { url, headers } => f
                .debug_struct(if matches!(self.transport, McpTransportSpec::Sse { .. }) {
                    "Sse"
                } else {
                    "Http"
                })
                .field("name", &self.name)
                .field("url", url)
                .field("headers", &names(headers))
                .finish(),
            McpTransportSpec::Acp { server_id } => f
                .debug_struct("Acp")
                .field("name", &self.name)
                .field("server_id", server_id)
                .finish(),
        }
    }
}

impl McpServerConfig {
    /// Validates one entry of the file: its kind, then the fields of that
    /// kind. Errors name the entry and the file.
    pub(super) fn to_spec(
        &self,
        name: &str,
        path: &Path,
    ) -> Result<Option<McpServerSpec>, ConfigError> {
        if self.enabled == Some(false) {
            return Ok(None);
        }
        let bad = |what: String| {
            ConfigError::Invalid(format!(
                "[mcp_servers.{name}] in {}: {what}",
                path.display()
            ))
        };
        if name.trim().is_empty() {
            return Err(bad("the server name must not be empty".into()));
        }
        let transport = match self.kind().map_err(bad)? {
            "stdio" => self.stdio(),
            kind @ ("http" | "sse") => self.remote(kind),
            other => Err(format!(
                "type {other:?} is not one of \"stdio\", \"http\", \"sse\""
            )),
        }
        .map_err(bad)?;
        Ok(Some(McpServerSpec {
            name: name.to_owned(),
            transport,
        }))
    }

    /// `type`, or what `command` / `url` imply when it is not given.
    fn kind(&self) -> Result<&str, String> {
        match (&self.kind, &self.command, &self.url) {
            (Some(k), _, _) => Ok(k.as_str()),
            (None, Some(_), None) => Ok("stdio"),
            (None, None, Some(_)) => Ok("http"),
            (None, Some(_), Some(_)) => Err("give either `command` or `url`, not both".into()),
            (None, None, None) => {
                Err("needs `command` (a stdio server) or `url` (an HTTP server)".into())
            }
        }
    }

    /// A stdio server: a command, no URL or headers.
    fn stdio(&self) -> Result<McpTransportSpec, String> {
        let Some(command) = self.command.clone().filter(|c| !c.trim().is_empty()) else {
            return Err("a stdio server needs `command`".into());
        };
        if self.url.is_some() || !self.headers.is_empty() {
            return Err("`url` and `headers` are for http/sse servers".into());
        }
        Ok(McpTransportSpec::Stdio {
            command,
            args: self.args.clone(),
            env: pairs(&self.env),
        })
    }

    /// An `http` or `sse` server: an http(s) URL, no command.
    fn remote(&self, kind: &str) -> Result<McpTransportSpec, String> {
        let Some(url) = self.url.clone() else {
            return Err(format!("a {kind} server needs `url`"));
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!("url {url:?} must start with http:// or https://"));
        }
        if self.command.is_some() || !self.args.is_empty() || !self.env.is_empty() {
            return Err("`command`, `args` and `env` are for stdio servers".into());
        }
        let headers = pairs(&self.headers);
        Ok(if kind == "sse" {
            McpTransportSpec::Sse { url, headers }
        } else {
            McpTransportSpec::Http { url, headers }
        })
    }
}

fn pairs(m: &std::collections::BTreeMap<String, String>) -> Vec<(String, String)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}
