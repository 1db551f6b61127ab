//! The command line: flags, subcommands and their help texts (clap).
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use acp_coder::{a2a, config};

pub(crate) const ENVIRONMENT_HELP: &str = "\
Environment:
  OPENAI_API_KEY    API key of the endpoint (or the variable named by api_key_env in the config file)
  OPENAI_BASE_URL   endpoint base URL, like --base-url
  ACP_CODER_MODEL   model id, like --model
  ACP_CODER_LOG     log level or filter, like --log-level
  ACP_CODER_A2A_TOKEN  bearer token of `acp-coder a2a` when the config file has no a2a_token
  ACP_CODER_SERVE_TOKEN  bearer token of `acp-coder serve` (or --token-file)
  ACP_CODER_CHANGES    `walk`: find the files a command changed by walking the roots (no file watcher)
  NO_COLOR          no colour in exec, doctor and login output
  XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_DATA_HOME   where config, logs and data live

Without a subcommand acp-coder is the ACP agent on stdin/stdout, as editors start it.
Config file: $XDG_CONFIG_HOME/acp-coder/config.toml (docs/configuration.md lists every key).";

pub(crate) const EXEC_HELP: &str = "\
Exit codes:
  0    the turn ended normally (end_turn)
  1    other failure
  2    bad usage or configuration (flags, config file, empty prompt, missing directory,
       no such session for --resume or --continue)
  3    authentication: no API key, or the endpoint rejected it
  4    the model endpoint failed (unreachable, HTTP error after retries, no model)
  5    the model refused (stop reason refusal)
  6    the turn stopped early (max_tokens, max_turn_requests)
  7    the turn ended, but a permission it asked for was refused or rejected
       (an edit or command did not happen)
  130  interrupted (Ctrl-C)

Without a terminal and without --yes, anything that would ask for permission is refused
and reported; the turn goes on. Only the answer goes to stdout; thoughts, notices, tool
activity and diffs go to stderr.";

/// A coding agent for editors that speak the Agent Client Protocol (ACP).
///
/// Started by an editor (Zed, JetBrains, Neovim, Emacs) as a child process, it
/// reads JSON-RPC from stdin and writes it to stdout. Any OpenAI-compatible
/// chat-completions endpoint works.
#[derive(Debug, Parser)]
#[command(name = "acp-coder", version, about, after_help = ENVIRONMENT_HELP)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Option<Command>,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub(crate) struct GlobalArgs {
    /// Model id to use (e.g. gpt-4.1, qwen2.5-coder:14b).
    #[arg(long, global = true, env = config::MODEL_ENV, hide_env_values = true, value_name = "ID")]
    pub(crate) model: Option<String>,
    /// Base URL of the OpenAI-compatible endpoint (e.g. http://localhost:11434/v1).
    #[arg(long, global = true, env = config::BASE_URL_ENV, hide_env_values = true, value_name = "URL")]
    pub(crate) base_url: Option<String>,
    /// Config file [default: $XDG_CONFIG_HOME/acp-coder/config.toml].
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) config: Option<PathBuf>,
    /// Write every JSON-RPC frame (both directions, secrets redacted) to FILE, one JSON line each.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) trace: Option<PathBuf>,
    /// Log file [default: $XDG_STATE_HOME/acp-coder/logs/acp-coder.DATE.log].
    #[arg(long, global = true, value_name = "PATH")]
    pub(crate) log_file: Option<PathBuf>,
    /// Log level or filter for the log file (e.g. debug, acp_coder=trace).
    #[arg(
        long,
        global = true,
        env = "ACP_CODER_LOG",
        hide_env_values = true,
        value_name = "LEVEL",
        default_value = "info"
    )]
    pub(crate) log_level: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Run one prompt in the current directory and print what the agent does.
    #[command(after_help = EXEC_HELP)]
    Exec(ExecArgs),
    /// Check the config file, API key, endpoint, model and MCP servers; say what to fix.
    Doctor,
    /// Save the endpoint, API key and default model to the config file (mode 0600).
    Login(LoginArgs),
    /// Serve the A2A protocol over HTTP so other agents can delegate coding tasks.
    #[command(after_help = A2A_HELP)]
    A2a(A2aArgs),
    /// Add, list, show or remove the MCP servers of the config file (other lines are kept).
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Serve ACP over HTTP and WebSocket at /acp, many connections in one process.
    #[command(after_help = SERVE_HELP)]
    Serve(ServeArgs),
}

#[derive(Debug, Subcommand)]
pub(crate) enum McpCommand {
    /// Add a server: `mcp add NAME -- CMD ARGS...` (stdio) or `mcp add --transport http NAME URL`.
    Add(McpAddArgs),
    /// List the servers of the config file.
    List,
    /// Show one server (env and header values are hidden).
    Get {
        /// The server's name.
        name: String,
    },
    /// Remove a server.
    Remove {
        /// The server's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct McpAddArgs {
    /// stdio (a command), http (streamable HTTP) or sse (the legacy HTTP transport).
    #[arg(short, long, value_name = "TRANSPORT", default_value = "stdio", value_parser = ["stdio", "http", "sse"])]
    pub(crate) transport: String,
    /// An environment variable of a stdio server (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE", value_parser = key_value)]
    pub(crate) env: Vec<(String, String)>,
    /// An HTTP header of an http/sse server (repeatable).
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = header)]
    pub(crate) headers: Vec<(String, String)>,
    /// The server's name (its tools are `mcp__NAME__TOOL`).
    pub(crate) name: String,
    /// The URL (http/sse), or the command and its arguments after `--` (stdio).
    #[arg(required = true, num_args = 1.., trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) target: Vec<String>,
}

fn positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("{s:?} is not a number above 0")),
    }
}

fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("{s:?} is not KEY=VALUE")),
    }
}

fn header(s: &str) -> Result<(String, String), String> {
    match s.split_once(':') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
        _ => Err(format!("{s:?} is not \"Name: value\"")),
    }
}

pub(crate) const A2A_HELP: &str = "\
Every request except the agent card (GET /.well-known/agent-card.json) needs
`Authorization: Bearer TOKEN`: a2a_token in the config file, ACP_CODER_A2A_TOKEN,
or else a token generated at start and printed once on stderr as `token: VALUE`.
Addresses other than loopback need a configured token. Permission questions
become the task state input-required; answer them with allow, always or reject.";

#[derive(Debug, Args)]
pub(crate) struct A2aArgs {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = a2a::DEFAULT_LISTEN)]
    pub(crate) listen: String,
    /// Serve DIR instead of the current directory (tasks never leave it).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Session mode of every task [default: ask]; full-auto only with the command sandbox.
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "plan", "ask", "accept-edits", "full-auto"])]
    pub(crate) mode: Option<String>,
}

pub(crate) const SERVE_HELP: &str = "\
Endpoints: POST/GET/DELETE /acp (HTTP + SSE, and WebSocket upgrade), GET /health.
The bound address is printed on stderr as `acp-coder serve: listening on http://ADDR/acp`
(and written to --port-file). A token (ACP_CODER_SERVE_TOKEN or --token-file) is required
off loopback; clients send `Authorization: Bearer TOKEN`. Files and commands are this
machine's, whatever the client advertises, unless its initialize says
`_meta: {\"acp-coder\": {\"clientFs\": true}}`. See docs/remote.md.";

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub(crate) listen: String,
    /// Read the bearer token from the first line of PATH (instead of ACP_CODER_SERVE_TOKEN).
    #[arg(long, value_name = "PATH")]
    pub(crate) token_file: Option<PathBuf>,
    /// Refuse to start without a token, even on loopback.
    #[arg(long)]
    pub(crate) require_token: bool,
    /// Let browser pages from ORIGIN (e.g. https://editor.example.com) connect (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub(crate) allow_origins: Vec<String>,
    /// Largest POST body or WebSocket message in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 16 * 1024 * 1024)]
    pub(crate) max_body: usize,
    /// ACP connections at once.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = positive)]
    pub(crate) max_connections: usize,
    /// Sessions per connection.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = positive)]
    pub(crate) max_sessions: usize,
    /// Close an HTTP connection after SECS with no stream open and no request.
    #[arg(long, value_name = "SECS", default_value_t = 600, value_parser = positive)]
    pub(crate) idle_timeout: usize,
    /// Write the bound address (HOST:PORT) to PATH once listening.
    #[arg(long, value_name = "PATH")]
    pub(crate) port_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The prompt; `-` reads it from stdin.
    #[arg(value_name = "PROMPT", required_unless_present = "list")]
    pub(crate) prompt: Option<String>,
    /// Continue the most recent session of this directory (the editor's sessions too).
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "list"])]
    pub(crate) continue_last: bool,
    /// Continue session ID of this directory (`--list` shows them).
    #[arg(short = 'r', long, value_name = "ID", conflicts_with = "list")]
    pub(crate) resume: Option<String>,
    /// List this directory's sessions, newest first: id, last update, title.
    #[arg(long, conflicts_with_all = ["prompt", "yes", "mode"])]
    pub(crate) list: bool,
    /// Print one JSON event per line: every session/update, then a result or error event.
    #[arg(long)]
    pub(crate) json: bool,
    /// Allow everything that would ask for permission.
    #[arg(short = 'y', long)]
    pub(crate) yes: bool,
    /// Session mode [default: default_mode of the config file, else ask].
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "plan", "ask", "accept-edits", "full-auto"])]
    pub(crate) mode: Option<String>,
    /// Work in DIR instead of the current directory.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct LoginArgs {
    /// Save api_key_env = NAME: read the key from this environment variable.
    #[arg(long, value_name = "NAME", conflicts_with = "api_key")]
    pub(crate) api_key_env: Option<String>,
    /// Save the key itself as api_key (prefer --api-key-env or the interactive prompt: argv is visible to other users).
    #[arg(long, value_name = "KEY")]
    pub(crate) api_key: Option<String>,
    /// Never ask on the terminal; save only what the flags give.
    #[arg(long)]
    pub(crate) no_input: bool,
}
