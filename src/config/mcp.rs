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
    /// `[mcp_servers.NAME.oauth]`: how acp-coder signs in to an HTTP server
    /// whose authorization server does not register clients on the fly.
    pub oauth: Option<McpOAuthConfig>,
}

/// `[mcp_servers.NAME.oauth]` in the config file.
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpOAuthConfig {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    /// The authorization server (its `issuer`) `client_secret` belongs to.
    pub issuer: Option<String>,
}

impl std::fmt::Debug for McpOAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        McpOAuthClient::from(self.clone()).fmt(f)
    }
}

impl From<McpOAuthConfig> for McpOAuthClient {
    fn from(c: McpOAuthConfig) -> Self {
        McpOAuthClient {
            client_id: c.client_id,
            client_secret: c.client_secret,
            client_metadata_url: c.client_metadata_url,
            issuer: c.issuer,
        }
    }
}

/// Who acp-coder is to an HTTP server's authorization server when it signs
/// in (MCP 2026-07-28 "Client registration"), in the spec's order: a client
/// registered in advance (`client_id`, with `client_secret` for a
/// confidential one), else a Client ID Metadata Document at
/// `client_metadata_url` when the authorization server supports them, else
/// dynamic registration. All empty: dynamic registration only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct McpOAuthClient {
    pub client_id: Option<String>,
    /// A secret (SECURITY.md §3): redacted everywhere, never stored by us.
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    /// The authorization server (its `issuer`) the secret was issued by:
    /// the secret goes to no other (issue 42 item 7). Unset: the MCP
    /// server's own origin.
    pub issuer: Option<String>,
}

impl std::fmt::Debug for McpOAuthClient {
    /// The secret is never shown, only whether there is one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuthClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl McpOAuthClient {
    pub fn is_empty(&self) -> bool {
        self.client_id.is_none()
            && self.client_secret.is_none()
            && self.client_metadata_url.is_none()
            && self.issuer.is_none()
    }

    /// What is wrong with it, in words naming the keys (`secret_key`,
    /// `metadata_key`: how the caller spells them).
    pub fn check(&self, secret_key: &str, metadata_key: &str) -> Result<(), String> {
        if self
            .client_id
            .as_deref()
            .is_some_and(|s| s.trim().is_empty())
        {
            return Err("the OAuth client id is empty; remove it or give the id the authorization server issued".into());
        }
        if self.client_secret.is_some() && self.client_id.is_none() {
            return Err(format!(
                "`{secret_key}` needs the client id it belongs to; add the pre-registered client id"
            ));
        }
        if let Some(url) = &self.client_metadata_url
            && !is_metadata_url(url)
        {
            return Err(format!(
                "`{metadata_key}` {url:?} must be an https URL with a path (where your Client ID Metadata Document is served)"
            ));
        }
        Ok(())
    }
}

/// A Client ID Metadata Document's URL (its client id): https, a host, a path.
fn is_metadata_url(url: &str) -> bool {
    reqwest::Url::parse(url)
        .is_ok_and(|u| u.scheme() == "https" && u.host_str().is_some() && u.path() != "/")
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
    /// How to sign in to an HTTP or SSE server (empty for the others).
    pub oauth: McpOAuthClient,
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
                .field("oauth", &self.oauth)
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
    pub fn to_spec(&self, name: &str, path: &Path) -> Result<Option<McpServerSpec>, ConfigError> {
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
        let oauth: McpOAuthClient = self.oauth.clone().map(Into::into).unwrap_or_default();
        if !oauth.is_empty() && matches!(transport, McpTransportSpec::Stdio { .. }) {
            return Err(bad(
                "`oauth` is for http/sse servers (a stdio server gets its credentials through `env`)"
                    .into(),
            ));
        }
        oauth
            .check("oauth.client_secret", "oauth.client_metadata_url")
            .map_err(bad)?;
        Ok(Some(McpServerSpec {
            name: name.to_owned(),
            transport,
            oauth,
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
