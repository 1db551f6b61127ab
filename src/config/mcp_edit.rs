//! `acp-coder mcp add|list|get|remove` (issue 45 item 7): the
//! `[mcp_servers.NAME]` tables of the config file, edited in place with
//! `toml_edit` so every other line, comments included, stays as it was. A
//! new entry is checked as the loader checks it ([`McpServerConfig::to_spec`])
//! and the whole file as the loader reads it, before anything is written.
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, value};

use super::{ConfigError, FileConfig, McpServerConfig, McpTransportSpec};

/// A server to add, as the command line gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewServer {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    /// `http` (streamable HTTP) or `sse` (the legacy transport).
    Remote {
        kind: String,
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// What went wrong, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML ({message}); fix it by hand first")]
    Parse { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
    #[error("no MCP server named {name:?} in {path}; `acp-coder mcp list` shows them")]
    Missing { name: String, path: PathBuf },
    #[error(
        "an MCP server named {name:?} is already in {path}; remove it first (`acp-coder mcp remove {name}`)"
    )]
    Exists { name: String, path: PathBuf },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The config file's text, or "" when it does not exist yet.
fn read_text(path: &Path) -> Result<String, EditError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(EditError::Read {
            path: path.to_owned(),
            source,
        }),
    }
}

fn parse(path: &Path, text: &str) -> Result<DocumentMut, EditError> {
    text.parse::<DocumentMut>().map_err(|e| EditError::Parse {
        path: path.to_owned(),
        message: e.message().to_owned(),
    })
}

/// The servers of the file, in file order, as the loader reads them.
pub fn list(path: &Path) -> Result<Vec<(String, McpServerConfig)>, EditError> {
    let text = read_text(path)?;
    let file: FileConfig = toml::from_str(&text).map_err(|e| EditError::Parse {
        path: path.to_owned(),
        message: e.message().to_owned(),
    })?;
    // The loader's map is sorted; the document keeps the file's order.
    let doc = parse(path, &text)?;
    let order: Vec<String> = doc
        .get("mcp_servers")
        .and_then(Item::as_table_like)
        .map(|t| t.iter().map(|(k, _)| k.to_owned()).collect())
        .unwrap_or_default();
    let mut servers = file.mcp_servers;
    Ok(order
        .into_iter()
        .filter_map(|name| servers.remove(&name).map(|s| (name, s)))
        .collect())
}

/// One server of the file.
pub fn get(path: &Path, name: &str) -> Result<McpServerConfig, EditError> {
    list(path)?
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, s)| s)
        .ok_or_else(|| EditError::Missing {
            name: name.to_owned(),
            path: path.to_owned(),
        })
}

/// The file's text with `name` added (checked as the loader checks it).
pub fn with_added(
    path: &Path,
    old: &str,
    name: &str,
    server: &NewServer,
) -> Result<String, EditError> {
    let mut doc = parse(path, old)?;
    let servers = doc
        .entry("mcp_servers")
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| {
            EditError::Invalid(format!(
                "`mcp_servers` in {} is not a table; fix it by hand first",
                path.display()
            ))
        })?;
    if servers.contains_key(name) {
        return Err(EditError::Exists {
            name: name.to_owned(),
            path: path.to_owned(),
        });
    }
    let pairs = |v: &[(String, String)]| {
        let mut t = toml_edit::InlineTable::new();
        for (k, val) in v {
            t.insert(k, val.as_str().into());
        }
        value(t)
    };
    let mut entry = Table::new();
    match server {
        NewServer::Stdio { command, args, env } => {
            entry.insert("command", value(command.as_str()));
            if !args.is_empty() {
                entry.insert(
                    "args",
                    value(
                        args.iter()
                            .map(String::as_str)
                            .collect::<toml_edit::Array>(),
                    ),
                );
            }
            if !env.is_empty() {
                entry.insert("env", pairs(env));
            }
        }
        NewServer::Remote { kind, url, headers } => {
            entry.insert("type", value(kind.as_str()));
            entry.insert("url", value(url.as_str()));
            if !headers.is_empty() {
                entry.insert("headers", pairs(headers));
            }
        }
    }
    servers.insert(name, Item::Table(entry));
    let text = doc.to_string();
    check(path, &text, name)?;
    Ok(text)
}

/// The file's text without `name`.
pub fn with_removed(path: &Path, old: &str, name: &str) -> Result<String, EditError> {
    let mut doc = parse(path, old)?;
    let removed = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .and_then(|t| t.remove(name));
    if removed.is_none() {
        return Err(EditError::Missing {
            name: name.to_owned(),
            path: path.to_owned(),
        });
    }
    Ok(doc.to_string())
}

/// The new text as the loader reads it: the whole file, and the entry `name`.
fn check(path: &Path, text: &str, name: &str) -> Result<(), EditError> {
    let file: FileConfig = toml::from_str(text).map_err(|e| EditError::Parse {
        path: path.to_owned(),
        message: e.message().to_owned(),
    })?;
    if let Some(entry) = file.mcp_servers.get(name) {
        entry.to_spec(name, path).map_err(|e| match e {
            ConfigError::Invalid(m) => EditError::Invalid(m),
            other => EditError::Invalid(other.to_string()),
        })?;
    }
    Ok(())
}

/// Adds `name` to the file at `path` (created if missing, mode 0600).
pub fn add(path: &Path, name: &str, server: &NewServer) -> Result<(), EditError> {
    let old = read_text(path)?;
    let text = with_added(path, &old, name, server)?;
    write(path, &text)
}

/// Removes `name` from the file at `path`.
pub fn remove(path: &Path, name: &str) -> Result<(), EditError> {
    let old = read_text(path)?;
    let text = with_removed(path, &old, name)?;
    write(path, &text)
}

fn write(path: &Path, text: &str) -> Result<(), EditError> {
    crate::login::write_private(path, text.as_bytes()).map_err(|source| EditError::Write {
        path: path.to_owned(),
        source,
    })
}

/// One line about a server for `mcp list` and `/mcp`: its transport and
/// where it is. Env and header values may be secrets: only names are shown.
pub fn describe(name: &str, server: &McpServerConfig, path: &Path) -> String {
    let off = if server.enabled == Some(false) {
        " (disabled)"
    } else {
        ""
    };
    match server.to_spec(name, path) {
        Ok(Some(spec)) => format!("{name}: {}{off}", transport_words(&spec.transport)),
        Ok(None) => format!("{name}: {}{off}", raw_words(server)),
        Err(e) => format!("{name}: invalid: {e}"),
    }
}

fn raw_words(s: &McpServerConfig) -> String {
    match (&s.command, &s.url) {
        (Some(c), _) => format!("stdio: {}", command_line(c, &s.args)),
        (None, Some(u)) => format!("{}: {u}", s.kind.as_deref().unwrap_or("http")),
        (None, None) => "no command or url".into(),
    }
}

fn command_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `stdio: CMD ARGS`, `http: URL` or `sse: URL`.
pub fn transport_words(t: &McpTransportSpec) -> String {
    match t {
        McpTransportSpec::Stdio { command, args, .. } => {
            format!("stdio: {}", command_line(command, args))
        }
        McpTransportSpec::Http { url, .. } => format!("http: {url}"),
        McpTransportSpec::Sse { url, .. } => format!("sse: {url}"),
        McpTransportSpec::Acp { server_id } => format!("acp: {server_id}"),
    }
}

/// `mcp get NAME`: every field, with env and header values hidden.
pub fn details(name: &str, server: &McpServerConfig, path: &Path) -> String {
    let mut lines = vec![describe(name, server, path)];
    let names = |m: &std::collections::BTreeMap<String, String>| {
        m.keys().cloned().collect::<Vec<_>>().join(", ")
    };
    if !server.env.is_empty() {
        lines.push(format!("  env: {} (values hidden)", names(&server.env)));
    }
    if !server.headers.is_empty() {
        lines.push(format!(
            "  headers: {} (values hidden)",
            names(&server.headers)
        ));
    }
    if let Some(id) = server.oauth.as_ref().and_then(|o| o.client_id.as_ref()) {
        lines.push(format!("  oauth client id: {id}"));
    }
    lines.push(format!("  in: {}", path.display()));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# my settings\nmodel = \"m\" # the model\n\n[mcp_servers.old]\n# kept\ncommand = \"old-server\"\n\n[headers]\n";

    #[test]
    fn add_and_remove_keep_the_rest_of_the_file() {
        let p = Path::new("/x/config.toml");
        let server = NewServer::Stdio {
            command: "npx".into(),
            args: vec!["-y".into(), "pkg".into()],
            env: vec![("TOKEN".into(), "t".into())],
        };
        let added = with_added(p, FILE, "new", &server).unwrap();
        assert!(
            added.starts_with(FILE.trim_end_matches("\n[headers]\n")),
            "{added}"
        );
        assert!(added.contains("# kept") && added.contains("# the model"));
        assert!(
            added.contains("[mcp_servers.new]\ncommand = \"npx\"\nargs = [\"-y\", \"pkg\"]"),
            "{added}"
        );
        let removed = with_removed(p, &added, "new").unwrap();
        assert_eq!(removed, FILE);
        assert!(matches!(
            with_added(p, FILE, "old", &server),
            Err(EditError::Exists { .. })
        ));
        assert!(matches!(
            with_removed(p, FILE, "nope"),
            Err(EditError::Missing { .. })
        ));
    }

    #[test]
    fn an_entry_the_loader_refuses_is_not_written() {
        let p = Path::new("/x/config.toml");
        let bad = NewServer::Remote {
            kind: "http".into(),
            url: String::new(),
            headers: vec![],
        };
        let e = with_added(p, "", "r", &bad).unwrap_err();
        assert!(e.to_string().contains("[mcp_servers.r]"), "{e}");
    }
}
