//! `acp-coder doctor`: checks the setup and says what to fix.
//!
//! Config file, API key (where it comes from, never its value), endpoint
//! (`GET {base}/models` with a short timeout), model (configured? listed?),
//! MCP servers named in the config file, and where the logs go. Prints one
//! ✓/✗ line per check (`!` for a warning, `•` for information); the caller
//! exits 0 when nothing failed and 1 otherwise.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{self, ConfigError, KeySource, Overrides, Settings};
use crate::llm::{LlmError, Model, OpenAiModel};
use crate::term::{Stream, Style};

/// The result of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
    Fail,
    Info,
}

/// One printed line (and an optional "fix" line under it).
#[derive(Debug, Clone)]
pub struct Check {
    pub level: Level,
    pub text: String,
    pub fix: Option<String>,
}

impl Check {
    fn new(level: Level, text: impl Into<String>) -> Self {
        Self {
            level,
            text: text.into(),
            fix: None,
        }
    }
    fn fix(mut self, fix: impl Into<String>) -> Self {
        self.fix = Some(fix.into());
        self
    }
}

/// What doctor needs besides the environment.
pub struct DoctorOptions {
    pub overrides: Overrides,
    /// `--log-file`, when given.
    pub log_file: Option<PathBuf>,
    /// Timeout of the endpoint check.
    pub timeout: Duration,
}

/// Runs every check and prints the report; returns whether all passed.
pub async fn run(opts: &DoctorOptions) -> bool {
    let checks = checks(opts).await;
    let style = Style::for_stream(Stream::Stdout);
    Stream::Stdout.line(&style.bold(&format!("acp-coder {} doctor", env!("CARGO_PKG_VERSION"))));
    for c in &checks {
        let mark = match c.level {
            Level::Ok => style.green("✓"),
            Level::Warn => style.yellow("!"),
            Level::Fail => style.red("✗"),
            Level::Info => style.dim("•"),
        };
        Stream::Stdout.line(&format!("{mark} {}", c.text));
        if let Some(fix) = &c.fix {
            Stream::Stdout.line(&style.dim(&format!("  → {fix}")));
        }
    }
    let failed = checks.iter().filter(|c| c.level == Level::Fail).count();
    if failed == 0 {
        Stream::Stdout.line(&style.green("All checks passed."));
    } else {
        Stream::Stdout.line(&style.red(&format!(
            "{failed} check(s) failed; fix the lines marked ✗."
        )));
    }
    failed == 0
}

/// The default config file path.
pub fn default_config_path() -> PathBuf {
    config::config_home().join("acp-coder").join("config.toml")
}

/// Every check, in order.
pub async fn checks(opts: &DoctorOptions) -> Vec<Check> {
    let mut out = Vec::new();
    let over = &opts.overrides;
    let path = over.config.clone().unwrap_or_else(default_config_path);
    let Some(mut settings) = config_check(over, &path, &mut out) else {
        return out;
    };
    let looked_for_local = settings.may_use_local_server();
    crate::llm::discover::use_local_server(&mut settings, &crate::secrets::env::var).await;
    if let Some(notice) = settings.local_server_notice() {
        out.push(Check::new(Level::Ok, notice));
    } else if looked_for_local {
        out.push(no_local_server(&settings));
    }

    // API key.
    out.push(key_check(&settings));

    // Endpoint.
    let listed = endpoint_check(&settings, opts.timeout, &mut out).await;

    // Model.
    out.push(model_check(&settings, listed.as_deref()));

    // MCP servers from the config file (read on their own, so they are
    // checked even when the rest of the file does not parse).
    if path.is_file() {
        out.extend(mcp_checks(&path, opts.timeout).await);
    }

    // Command sandbox (issue 14).
    out.push(sandbox_check(&settings));

    // Logs.
    out.push(log_check(opts.log_file.as_deref()));
    out
}

/// The config file at `path`: the settings it gives, or, when it does not
/// parse, the settings without it (so the other checks still say
/// something); `None` when even those fail.
fn config_check(over: &Overrides, path: &Path, out: &mut Vec<Check>) -> Option<Settings> {
    let e = match Settings::load(over) {
        Ok(s) => {
            out.push(match &s.config_path {
                Some(p) => Check::new(Level::Ok, format!("config file {} parses", p.display())),
                None => Check::new(
                    Level::Info,
                    format!(
                        "no config file at {} (optional; flags and environment variables are used)",
                        path.display()
                    ),
                )
                .fix("`acp-coder login` writes one"),
            });
            return Some(s);
        }
        Err(e) => e,
    };
    // A bad flag or variable: said once, with the fix where it was set
    // (the file is not to blame, and loading without it fails the same way).
    if let ConfigError::BaseUrl { from, .. } = &e {
        let fix = from.fix("base_url", "--base-url", config::BASE_URL_ENV);
        out.push(Check::new(Level::Fail, e.to_string()).fix(fix));
        return None;
    }
    out.push(if over.config.is_some() && !path.exists() {
        Check::new(
            Level::Fail,
            format!("config file {} does not exist", path.display()),
        )
        .fix("create it, drop --config, or run `acp-coder --config PATH login`")
    } else {
        Check::new(Level::Fail, e.to_string()).fix(format!(
            "edit {}; docs/configuration.md lists every key (the remaining checks ignore the file)",
            path.display()
        ))
    });
    let without_file = Overrides {
        config: None,
        ..over.clone()
    };
    let env = |k: &str| {
        if k == "XDG_CONFIG_HOME" {
            Some("/nonexistent/acp-coder-doctor".into())
        } else {
            std::env::var(k).ok().filter(|v| !v.is_empty())
        }
    };
    let first = e.to_string();
    Settings::load_with(&without_file, &env)
        .map_err(|e| {
            if e.to_string() != first {
                out.push(Check::new(Level::Fail, e.to_string()));
            }
        })
        .ok()
}

/// No local model server answered: which were asked, and how to choose one.
fn no_local_server(s: &Settings) -> Check {
    let tried: Vec<String> = crate::llm::discover::servers(&crate::secrets::env::var)
        .iter()
        .map(|(name, url)| {
            let at = reqwest::Url::parse(url)
                .ok()
                .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port()?)))
                .unwrap_or_else(|| url.clone());
            format!("{name} {at}")
        })
        .collect();
    Check::new(
        Level::Info,
        format!(
            "no local model server found (tried {}), so the endpoint is {} ({})",
            tried.join(", "),
            s.base_url,
            s.base_url_source.describe("base_url")
        ),
    )
    .fix("start one of them, or run `acp-coder login` to save an endpoint")
}

/// Which protection applies to commands on this machine (SECURITY.md §1).
fn sandbox_check(s: &Settings) -> Check {
    use crate::tools::sandbox::{self, Level as Sandbox};
    let level = sandbox::level();
    let network = if s.sandbox_network {
        ""
    } else {
        "; network off for sandboxed commands (sandbox_network = false)"
    };
    let text = format!("{}{network}", level.describe());
    let check = match level {
        Sandbox::Full { .. } | Sandbox::Seatbelt => {
            // What this user's sandboxed commands cannot read (those that exist).
            let home = crate::platform::fs::home();
            let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(std::path::PathBuf::from);
            let hidden = crate::agent::policy::unreadable::unreadable(
                home.as_deref(),
                runtime.as_deref(),
                &s.sandbox_unreadable,
                &[],
            );
            let list: Vec<String> = hidden.iter().map(|p| p.display().to_string()).collect();
            Check::new(
                Level::Ok,
                format!(
                    "{text}; unreadable to sandboxed commands (sandbox_unreadable adds more): {}",
                    if list.is_empty() {
                        "none of the credential stores exist here".to_owned()
                    } else {
                        list.join(", ")
                    }
                ),
            )
        }
        Sandbox::LandlockOnly { .. } | Sandbox::Unavailable { .. } => Check::new(Level::Warn, text),
    };
    let check = match crate::platform::sandbox::fix(level) {
        Some(fix) => check.fix(fix),
        None => check,
    };
    // In a container, its seccomp profile decides which layers hold.
    match crate::platform::sandbox::container() {
        Some(runtime) => Check {
            text: format!("{}; running in a container ({runtime})", check.text),
            fix: check.fix.or_else(|| {
                (!matches!(level, Sandbox::Full { .. })).then(|| CONTAINER_FIX.to_owned())
            }),
            ..check
        },
        None => check,
    }
}

/// What a container needs for the full sandbox (docs/deploy.md).
const CONTAINER_FIX: &str = "in a container, the full sandbox needs unprivileged user namespaces (a seccomp profile that allows unshare and clone with CLONE_NEWUSER) and Landlock; docs/deploy.md says how";

fn key_check(s: &Settings) -> Check {
    match (&s.key_source, s.api_key.is_some()) {
        (KeySource::Env(var), true) => Check::new(
            Level::Ok,
            format!("API key set (from the {var} environment variable; not shown)"),
        ),
        (KeySource::File(p), true) => Check::new(
            Level::Ok,
            format!("API key set (api_key in {}; not shown)", p.display()),
        ),
        (KeySource::Flag, true) => {
            Check::new(Level::Ok, "API key set (from the command line; not shown)")
        }
        _ if !s.require_api_key => Check::new(
            Level::Ok,
            format!("no API key needed for {}", s.base_url),
        ),
        _ => Check::new(
            Level::Fail,
            format!(
                "no API key for {} ({} is not set; {})",
                s.base_url,
                s.api_key_env,
                s.endpoint_origin()
            ),
        )
        .fix(format!(
            "export {} (in the environment your editor starts acp-coder with), or run `acp-coder login`",
            s.api_key_env
        )),
    }
}

/// Checks `GET {base}/models`; returns the listed ids when that worked.
async fn endpoint_check(
    s: &Settings,
    timeout: Duration,
    out: &mut Vec<Check>,
) -> Option<Vec<String>> {
    let model = match OpenAiModel::new(&s.base_url, s.api_key.clone(), &s.headers, timeout, timeout)
    {
        Ok(m) => m,
        Err(e) => {
            out.push(Check::new(Level::Fail, e.to_string()).fix("fix the [headers] table"));
            return None;
        }
    };
    let listed = tokio::time::timeout(timeout + Duration::from_secs(1), model.list_models()).await;
    let url = format!("{}/models", s.base_url);
    match listed {
        Err(_) | Ok(Err(LlmError::Timeout { .. })) => {
            out.push(
                Check::new(
                    Level::Fail,
                    format!(
                        "endpoint {url} did not answer within {} s",
                        timeout.as_secs()
                    ),
                )
                .fix(base_url_fix(s)),
            );
            None
        }
        Ok(Ok(models)) => {
            out.push(Check::new(
                Level::Ok,
                format!(
                    "endpoint {} answers ({} models listed; from {})",
                    s.base_url,
                    models.len(),
                    s.base_url_source.describe("base_url")
                ),
            ));
            Some(models)
        }
        Ok(Err(LlmError::Status {
            status: status @ (401 | 403),
            message,
            ..
        })) => {
            out.push(
                Check::new(
                    Level::Fail,
                    format!("endpoint {url} rejected the API key (HTTP {status}: {message})"),
                )
                .fix(format!("check {}", s.key_hint())),
            );
            None
        }
        Ok(Err(LlmError::Status { status: 404, .. })) => {
            out.push(
                Check::new(
                    Level::Warn,
                    format!(
                        "endpoint {} is reachable but has no GET /models (HTTP 404)",
                        s.base_url
                    ),
                )
                .fix(if s.base_url.ends_with("/v1") {
                    format!(
                        "fine if chat completions work there; otherwise {}",
                        base_url_fix(s)
                    )
                } else {
                    format!(
                        "OpenAI-compatible servers usually serve under /v1: try {}/v1 ({})",
                        s.base_url,
                        s.base_url_source
                            .fix("base_url", "--base-url", config::BASE_URL_ENV)
                    )
                }),
            );
            None
        }
        Ok(Err(e @ LlmError::Connect { .. })) => {
            let text = if crate::llm::retry::refused_on_loopback(&e) {
                format!(
                    "{e} (is {} running?)",
                    crate::llm::discover::expected_server(&s.base_url)
                )
            } else {
                e.to_string()
            };
            out.push(Check::new(Level::Fail, text).fix(base_url_fix(s)));
            None
        }
        Ok(Err(e)) => {
            out.push(
                Check::new(Level::Fail, format!("GET {url} failed: {e}")).fix(base_url_fix(s)),
            );
            None
        }
    }
}

/// Where to change the base URL: where it was set (from
/// [`Settings::base_url_source`]).
fn base_url_fix(s: &Settings) -> String {
    format!(
        "is the server running? The base URL comes from {}: {}",
        s.base_url_source.describe("base_url"),
        s.base_url_source
            .fix("base_url", "--base-url", config::BASE_URL_ENV)
    )
}

fn model_check(s: &Settings, listed: Option<&[String]>) -> Check {
    let Some(model) = &s.model else {
        return match listed {
            Some([first, ..]) => Check::new(
                Level::Warn,
                format!("no model configured; the first one listed, {first}, will be used"),
            )
            .fix(format!(
                "set {} or model in the config file to choose",
                config::MODEL_ENV
            )),
            _ => Check::new(
                Level::Fail,
                "no model configured and none could be listed from the endpoint",
            )
            .fix(format!(
                "set {}, pass --model, or set model in the config file",
                config::MODEL_ENV
            )),
        };
    };
    let from = format!("from {}", s.model_source.describe("model"));
    let fix_model = s.model_source.fix("model", "--model", config::MODEL_ENV);
    match listed {
        Some(ids) if ids.iter().any(|m| m == model) => Check::new(
            Level::Ok,
            format!("model {model} ({from}) is listed by the endpoint"),
        ),
        Some(ids) if !ids.is_empty() => {
            let mut some: Vec<&str> = ids.iter().take(8).map(String::as_str).collect();
            if ids.len() > 8 {
                some.push("…");
            }
            Check::new(
                Level::Fail,
                format!("model {model} ({from}) is not listed by the endpoint"),
            )
            .fix(format!("available: {}; {fix_model}", some.join(", ")))
        }
        _ => Check::new(
            Level::Warn,
            format!("model {model} ({from}) could not be checked against the endpoint's list"),
        ),
    }
}

/// Checks `[mcp_servers.<name>]` tables of the config file, if it has any:
/// a stdio server's command must be found, an HTTP server must answer.
pub async fn mcp_checks(config_path: &Path, timeout: Duration) -> Vec<Check> {
    let Ok(text) = std::fs::read_to_string(config_path) else {
        return Vec::new();
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let Some(servers) = table.get("mcp_servers").and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        let command = entry.get("command").and_then(toml::Value::as_str);
        let url = entry.get("url").and_then(toml::Value::as_str);
        out.push(match (command, url) {
            (Some(cmd), _) => match find_command(cmd) {
                Some(p) => Check::new(
                    Level::Ok,
                    format!("MCP server {name}: command {cmd} found ({})", p.display()),
                ),
                None => Check::new(
                    Level::Fail,
                    format!("MCP server {name}: command {cmd} not found on PATH"),
                )
                .fix(format!(
                    "install it or give its absolute path in [mcp_servers.{name}] command"
                )),
            },
            (None, Some(u)) => match reqwest::Url::parse(u) {
                Ok(parsed)
                    if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() =>
                {
                    probe_mcp(name, parsed, timeout).await
                }
                _ => Check::new(
                    Level::Fail,
                    format!("MCP server {name}: URL {u:?} is not a valid http(s) URL"),
                )
                .fix(format!("fix url in [mcp_servers.{name}]")),
            },
            (None, None) => Check::new(
                Level::Fail,
                format!("MCP server {name}: neither command nor url is set"),
            )
            .fix(format!(
                "add command = \"…\" or url = \"…\" to [mcp_servers.{name}]"
            )),
        });
    }
    out
}

/// Asks an HTTP MCP server to `initialize` (as a session would): any
/// answer but 404 means a server is there (401 too: it wants a sign-in,
/// which the first session does); no answer, or 404, fails.
async fn probe_mcp(name: &str, url: reqwest::Url, timeout: Duration) -> Check {
    let shown = url.to_string();
    let fix = format!("start the server, or fix url in [mcp_servers.{name}]");
    let built = match crate::net::client_builder() {
        Ok(b) => b
            .connect_timeout(timeout)
            .timeout(timeout)
            .build()
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    };
    let client = match built {
        Ok(c) => c,
        Err(e) => {
            return Check::new(Level::Fail, format!("MCP server {name}: {e}"));
        }
    };
    let hello = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "acp-coder-doctor", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let sent = client
        .post(url)
        .header(
            reqwest::header::ACCEPT,
            "application/json, text/event-stream",
        )
        .json(&hello)
        .send()
        .await;
    match sent {
        Ok(r) if r.status() == reqwest::StatusCode::NOT_FOUND => Check::new(
            Level::Fail,
            format!("MCP server {name}: {shown} answered HTTP 404 (no MCP server at that path)"),
        )
        .fix(fix),
        Ok(r) if r.status().is_server_error() => Check::new(
            Level::Warn,
            format!(
                "MCP server {name}: {shown} answered HTTP {}",
                r.status().as_u16()
            ),
        ),
        Ok(r) if r.status() == reqwest::StatusCode::UNAUTHORIZED => Check::new(
            Level::Ok,
            format!(
                "MCP server {name}: {shown} answers and asks for authorization (a session signs in)"
            ),
        ),
        Ok(r) => Check::new(
            Level::Ok,
            format!(
                "MCP server {name}: {shown} answers (HTTP {})",
                r.status().as_u16()
            ),
        ),
        Err(e) => Check::new(
            Level::Fail,
            format!(
                "MCP server {name}: nothing answers at {shown} ({})",
                error_chain(&e)
            ),
        )
        .fix(fix),
    }
}

/// An error with its causes (reqwest's own text hides them).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let c_text = c.to_string();
        if !text.contains(&c_text) {
            text = format!("{text}: {c_text}");
        }
        cause = c.source();
    }
    text
}

/// Where `cmd` would be run from: itself if it has a slash, else the first
/// executable match on PATH.
pub fn find_command(cmd: &str) -> Option<PathBuf> {
    crate::platform::process::find(cmd)
}

fn log_check(log_file: Option<&Path>) -> Check {
    match log_file {
        Some(f) => Check::new(Level::Info, format!("logs go to {}", f.display())),
        None => {
            let dir = config::state_home().join("acp-coder").join("logs");
            Check::new(
                Level::Info,
                format!(
                    "logs go to {}/acp-coder.DATE.log (raise detail with --log-level debug)",
                    dir.display()
                ),
            )
        }
    }
}
