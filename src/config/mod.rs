//! Configuration: flags > environment > config file > defaults (DESIGN §3).
//!
//! The file lives at `$XDG_CONFIG_HOME/acp-coder/config.toml` (or `--config`).
//! Settings are re-read by `authenticate`, so a key exported after the editor
//! started the agent is picked up without a restart.
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub mod hooks;
mod mcp;
pub mod mcp_edit;
mod mode;
mod paths;

pub use hooks::{HookEvent, Hooks};
pub use mcp::{McpOAuthClient, McpServerConfig, McpServerSpec, McpTransportSpec};
pub use mode::Mode;
pub use paths::{config_home, data_home, is_local_endpoint, state_home};
use paths::{config_home_with, data_home_with};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
pub const MODEL_ENV: &str = "ACP_CODER_MODEL";
/// Windows up to this many tokens get the short prompt by default.
pub const COMPACT_PROMPT_WINDOW: u64 = 16_384;
/// The sampling temperature of the small-model mode when the config sets
/// none: a small model at a server's default (llama-server's 0.8) invents
/// paths, tools and arguments far more often.
pub const SMALL_MODEL_TEMPERATURE: f32 = 0.2;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid: line {line}, column {column}: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}")]
    Invalid(String),
    /// A base URL that is not http(s), named with where it came from.
    #[error("base URL {url:?} (from {}) must start with http:// or https://: {}", from.describe("base_url"), from.fix("base_url", "--base-url", BASE_URL_ENV))]
    BaseUrl { url: String, from: Source },
}

/// Where a setting's value came from: what `doctor` and the errors name,
/// so that the fix goes where the value was set.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Source {
    /// A command-line flag.
    Flag,
    /// An environment variable (its name).
    Env(String),
    /// The config file (its path).
    File(PathBuf),
    /// A local model server found without configuration (its name).
    LocalServer(String),
    /// Nothing set it.
    #[default]
    Default,
}

impl Source {
    /// Where `key` (its config-file name) came from, in words.
    pub fn describe(&self, key: &str) -> String {
        match self {
            Source::Flag => format!("the --{} flag", key.replace('_', "-")),
            Source::Env(v) => format!("the {v} environment variable"),
            Source::File(p) => format!("{key} in {}", p.display()),
            Source::LocalServer(name) => format!("the local {name} server, found by itself"),
            Source::Default => "the default".into(),
        }
    }

    /// What to do to change `key` where it was set (`flag`, `var`: its
    /// flag and environment variable).
    pub fn fix(&self, key: &str, flag: &str, var: &str) -> String {
        match self {
            Source::Flag => format!("change or drop {flag}"),
            Source::Env(v) => format!(
                "change or unset {v} (in the environment your editor starts acp-coder with)"
            ),
            Source::File(p) => {
                format!("change {key} in {} (or run `acp-coder login`)", p.display())
            }
            Source::LocalServer(_) | Source::Default => {
                format!("run `acp-coder login`, or set {flag}, {var} or {key} in the config file")
            }
        }
    }
}

/// What the user chose on the command line (flags already merged with their
/// environment variables by clap). `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key: Option<String>,
}

impl Overrides {
    /// An empty value (`ACP_CODER_MODEL=`) means "not set", wherever it came from.
    fn without_empty(&self) -> Overrides {
        let nonempty = |v: &Option<String>| v.clone().filter(|s| !s.trim().is_empty());
        Overrides {
            config: self.config.clone(),
            model: nonempty(&self.model),
            base_url: nonempty(&self.base_url),
            api_key: nonempty(&self.api_key),
        }
    }
}

/// The config file, as written by the user. Unknown keys are rejected so a typo
/// is reported instead of silently ignored.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// A literal key (prefer `api_key_env`); never logged.
    pub api_key: Option<String>,
    /// Name of the environment variable holding the key (default OPENAI_API_KEY).
    pub api_key_env: Option<String>,
    /// Set false for a remote endpoint that needs no key.
    pub require_api_key: Option<bool>,
    pub default_mode: Option<Mode>,
    pub max_turn_requests: Option<u32>,
    /// The model's context window in tokens; when unset, the server is
    /// asked (llama-server, Ollama, LM Studio, `/models`), else 128000.
    pub context_window: Option<u64>,
    /// The short system prompt and tool descriptions for small models:
    /// default on when the context window is at most 16k tokens.
    pub compact_prompt: Option<bool>,
    /// Sampling temperature of the agent's model requests (0 to 2); unset:
    /// the server's default, or [`SMALL_MODEL_TEMPERATURE`] in the
    /// small-model mode.
    pub temperature: Option<f32>,
    pub max_retries: Option<u32>,
    /// Seconds without a byte from the model before the stream counts as hung.
    pub stream_idle_timeout_secs: Option<u64>,
    /// Send `stream_options.include_usage` (some older servers reject it).
    pub stream_usage: Option<bool>,
    /// Memory caps on one model reply (issue 14): one SSE event, the
    /// reply's text and reasoning, its tool-call arguments. Default 8 MiB each.
    pub max_sse_event_bytes: Option<usize>,
    pub max_reply_text_bytes: Option<usize>,
    pub max_tool_arguments_bytes: Option<usize>,
    /// Send the previous turns' reasoning back as `reasoning_content` (DeepSeek-style servers want it).
    pub send_reasoning: Option<bool>,
    /// Extra HTTP headers for the model endpoint (values never logged).
    #[serde(default)]
    pub headers: std::collections::BTreeMap<String, String>,
    /// MCP servers started for every session, merged with the editor's
    /// `mcpServers` (the editor's entry wins on a name clash): `[mcp_servers.NAME]`.
    #[serde(default)]
    pub mcp_servers: std::collections::BTreeMap<String, McpServerConfig>,
    /// How long `session/new` waits for MCP servers before going on without
    /// the slow ones (they keep starting in the background). Default 10.
    pub mcp_startup_timeout_secs: Option<u64>,
    /// How long one MCP tool call may run before it is cancelled. Default 300.
    pub mcp_tool_timeout_secs: Option<u64>,
    /// Per-model settings; their keys are also offered in the model picker.
    #[serde(default)]
    pub models: std::collections::BTreeMap<String, ModelConfig>,
    /// More protected paths (globs relative to each session root) whose
    /// writes ask in every mode, added to the built-in list (SECURITY.md §1).
    #[serde(default)]
    pub protected_paths: Vec<String>,
    /// Whether sandboxed commands may use the network (TCP). Default true.
    pub sandbox_network: Option<bool>,
    /// Where the system has no command sandbox (Windows): whether full-auto
    /// runs commands without asking, unconfined. Default false (it asks).
    pub full_auto_without_sandbox: Option<bool>,
    /// More paths sandboxed commands may not read (absolute, or `~/…`),
    /// added to the built-in credential stores (SECURITY.md §2).
    #[serde(default)]
    pub sandbox_unreadable: Vec<String>,
    /// Bearer token of `acp-coder a2a` (issue 20); never logged.
    pub a2a_token: Option<String>,
    /// Background commands one session may run at once (issue 19). Default 8.
    pub max_background_commands: Option<usize>,
    /// Bytes of file contents the checkpoints of one session keep for
    /// `/undo` (issue 19); the oldest go first. Default 64 MiB.
    pub checkpoint_max_bytes: Option<u64>,
    /// How deep `task` subagents nest: 1 (default) lets a session start
    /// children that cannot start their own; 0 turns the `task` tool off.
    pub subagent_max_depth: Option<u32>,
    /// Subagents of one session (with their own children) running at once. Default 3.
    pub subagent_max_running: Option<usize>,
    /// The user's hooks (issue 45 item 6): `[[hooks.pre_tool]]`, …
    #[serde(default)]
    pub hooks: hooks::HooksConfig,
    /// The memory files read in each directory from the repository root
    /// down to the working directory, each one that is there. Unset: the
    /// first there of `AGENTS.md`, `CLAUDE.md`, `GEMINI.md`.
    pub memory_files: Option<Vec<String>>,
    /// The `web_fetch` tool. Default: on unless `sandbox_network = false`.
    pub web_fetch: Option<bool>,
    /// Hosts `web_fetch` may read though they resolve to private or
    /// loopback addresses.
    #[serde(default)]
    pub web_fetch_private_hosts: Vec<String>,
}

/// Settings of one model (`[models."gpt-4.1"]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Name shown in the editor's model picker.
    pub name: Option<String>,
    /// Context window in tokens (default: the top-level `context_window`).
    pub context_window: Option<u64>,
    /// Reasoning efforts the model accepts (e.g. ["low", "medium", "high"]);
    /// when set, the session offers a reasoning-effort option.
    #[serde(default)]
    pub reasoning_efforts: Vec<String>,
    pub default_reasoning_effort: Option<String>,
    /// USD per million input (prompt) tokens, for cost reports.
    pub input_cost_per_mtok: Option<f64>,
    /// USD per million output (completion) tokens.
    pub output_cost_per_mtok: Option<f64>,
    /// Whether images from tool results are sent to the model (issue 18
    /// item 7); default true. `false` for text-only models.
    pub images: Option<bool>,
    /// Whether audio from tool results is sent to the model as
    /// `input_audio` parts (issue 18 item 7); default false, since most
    /// chat models refuse audio input.
    pub audio: Option<bool>,
    /// Sampling temperature for this model (default: the top-level one).
    pub temperature: Option<f32>,
}

/// Where the API key came from, for messages that must not contain the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    Flag,
    Env(String),
    File(PathBuf),
    None,
}

/// The effective settings of this agent process.
#[derive(Clone)]
pub struct Settings {
    pub base_url: String,
    /// Whether a flag, the environment or the file named the base URL.
    pub base_url_given: bool,
    /// Where the base URL came from.
    pub base_url_source: Source,
    /// The config file's `base_url` when a flag or the environment won
    /// over it (errors say so: the editor's environment silently beat a
    /// saved login).
    pub base_url_overridden: Option<String>,
    /// Where the model came from.
    pub model_source: Source,
    /// The local server used because nothing was configured
    /// (`llm::discover`): its name.
    pub local_server: Option<String>,
    pub api_key: Option<String>,
    pub key_source: KeySource,
    /// Variable the user should set when the key is missing or wrong.
    pub api_key_env: String,
    pub require_api_key: bool,
    pub model: Option<String>,
    pub config_path: Option<PathBuf>,
    pub default_mode: Mode,
    pub max_turn_requests: u32,
    /// The window when neither the config nor the server says.
    pub context_window: u64,
    /// Whether the file set `context_window` (then the server is not asked).
    pub context_window_configured: bool,
    /// `compact_prompt`: `None` decides by the window ([`Settings::compact_prompt_for`]).
    pub compact_prompt: Option<bool>,
    /// `temperature`, checked to be within 0 to 2.
    pub temperature: Option<f32>,
    pub max_retries: u32,
    pub stream_idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// How much one model reply may hold, in bytes: one SSE event (or a
    /// whole plain-JSON reply), its text and reasoning, all its tool-call
    /// arguments (`max_sse_event_bytes`, `max_reply_text_bytes`,
    /// `max_tool_arguments_bytes` in the file; at least 1024 each).
    pub max_sse_event_bytes: usize,
    pub max_reply_text_bytes: usize,
    pub max_tool_arguments_bytes: usize,
    pub stream_usage: bool,
    pub send_reasoning: bool,
    pub headers: Vec<(String, String)>,
    /// Per-model settings from the config file, in file order.
    pub models: Vec<(String, ModelConfig)>,
    /// How long `GET /models` may take when building the model picker.
    pub models_list_timeout: Duration,
    /// Base delay of the retry backoff (tests shorten it).
    pub retry_base_delay: Duration,
    pub data_dir: PathBuf,
    /// Names of environment variables holding secrets: stripped from children.
    pub secret_env: Vec<String>,
    /// Why the configuration could not be loaded (the agent then runs on
    /// defaults and refuses to open sessions until the file is fixed).
    pub load_error: Option<String>,
    /// MCP servers from the config file, started for every session.
    pub mcp_servers: Vec<McpServerSpec>,
    /// How long `session/new` waits for MCP servers to be ready.
    pub mcp_startup_timeout: Duration,
    /// How long one MCP tool call may run.
    pub mcp_tool_timeout: Duration,
    /// The config file's `protected_paths` (checked globs), added to the built-in list.
    pub protected_paths: Vec<String>,
    /// Whether sandboxed commands may use the network (`sandbox_network`).
    pub sandbox_network: bool,
    /// `full_auto_without_sandbox`: where no command sandbox exists,
    /// full-auto runs commands unasked and unconfined.
    pub full_auto_without_sandbox: bool,
    /// What sandboxed commands may not read besides the built-in credential
    /// stores: the agent's own config, data and state directories and the
    /// config file's `sandbox_unreadable`.
    pub sandbox_unreadable: Vec<PathBuf>,
    /// The config file's `a2a_token` (bearer token of `acp-coder a2a`).
    pub a2a_token: Option<String>,
    /// `max_background_commands` (issue 19).
    pub max_background_commands: usize,
    /// `checkpoint_max_bytes` (issue 19).
    pub checkpoint_max_bytes: u64,
    /// `subagent_max_depth`.
    pub subagent_max_depth: u32,
    /// `subagent_max_running`.
    pub subagent_max_running: usize,
    /// The user's hooks (`[[hooks.EVENT]]`), from the user's config file only.
    pub hooks: Hooks,
    /// `memory_files` (checked file names), or `None` for the default.
    pub memory_files: Option<Vec<String>>,
    /// Whether sessions get the `web_fetch` tool (`web_fetch`, else
    /// `sandbox_network`).
    pub web_fetch: bool,
    /// `web_fetch_private_hosts`.
    pub web_fetch_private_hosts: Vec<String>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("key_source", &self.key_source)
            .field("model", &self.model)
            .field("config_path", &self.config_path)
            .field("default_mode", &self.default_mode)
            .field("mcp_servers", &self.mcp_servers)
            .finish_non_exhaustive()
    }
}

impl Settings {
    /// Every secret these settings hold, for the redactor (SECURITY.md §3):
    /// the key, and the values of the endpoint's `[headers]` and of configured
    /// MCP servers' `env` / `headers` that are secret by name or shape
    /// ([`crate::secrets::is_secret_value`]).
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = self.api_key.iter().cloned().collect();
        out.extend(self.a2a_token.iter().cloned());
        let named = |pairs: &[(String, String)], out: &mut Vec<String>| {
            for (k, v) in pairs {
                if crate::secrets::is_secret_value(k, v) {
                    out.push(v.clone());
                }
            }
        };
        named(&self.headers, &mut out);
        for server in &self.mcp_servers {
            match &server.transport {
                McpTransportSpec::Stdio { env, .. } => named(env, &mut out),
                McpTransportSpec::Http { headers, .. } | McpTransportSpec::Sse { headers, .. } => {
                    named(headers, &mut out)
                }
                McpTransportSpec::Acp { .. } => {}
            }
            out.extend(server.oauth.client_secret.iter().cloned());
        }
        out
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.into(),
            base_url_given: false,
            base_url_source: Source::Default,
            base_url_overridden: None,
            model_source: Source::Default,
            local_server: None,
            api_key: None,
            key_source: KeySource::None,
            api_key_env: API_KEY_ENV.into(),
            require_api_key: true,
            model: None,
            config_path: None,
            default_mode: Mode::Ask,
            max_turn_requests: 100,
            context_window: 128_000,
            context_window_configured: false,
            compact_prompt: None,
            temperature: None,
            max_retries: 5,
            stream_idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(15),
            // 8 MiB each: about 2 M tokens, over ten times the longest
            // output any current model produces in one reply.
            max_sse_event_bytes: 8 << 20,
            max_reply_text_bytes: 8 << 20,
            max_tool_arguments_bytes: 8 << 20,
            stream_usage: true,
            send_reasoning: false,
            headers: Vec::new(),
            models: Vec::new(),
            models_list_timeout: Duration::from_secs(3),
            retry_base_delay: Duration::from_millis(500),
            data_dir: data_home().join("acp-coder"),
            secret_env: vec![API_KEY_ENV.into()],
            load_error: None,
            mcp_servers: Vec::new(),
            mcp_startup_timeout: Duration::from_secs(10),
            mcp_tool_timeout: Duration::from_secs(300),
            protected_paths: Vec::new(),
            sandbox_network: true,
            full_auto_without_sandbox: false,
            sandbox_unreadable: paths::agent_dirs_with(
                &|k| std::env::var(k).ok().filter(|v| !v.is_empty()),
                None,
                &data_home().join("acp-coder"),
            ),
            a2a_token: None,
            max_background_commands: 8,
            checkpoint_max_bytes: 64 * 1024 * 1024,
            subagent_max_depth: 1,
            subagent_max_running: 3,
            hooks: Hooks::default(),
            memory_files: None,
            web_fetch: true,
            web_fetch_private_hosts: Vec::new(),
        }
    }
}

impl Settings {
    /// Builds the settings from overrides, the process environment and the file.
    pub fn load(over: &Overrides) -> Result<Settings, ConfigError> {
        // Secret variables were taken out of the environment at start-up
        // (`secrets::env::scrub`); their values are still known there.
        Self::load_with(over, &crate::secrets::env::var)
    }

    /// Same as [`Settings::load`] with an explicit environment (tests).
    /// The steps: the overrides without empty values, the file (given or
    /// found), the endpoint, then the file's settings, then the hidden
    /// knobs of the environment.
    pub fn load_with(
        over: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Settings, ConfigError> {
        let over = &over.without_empty();
        let path = over.config.clone().or_else(|| {
            let p = config_home_with(env).join("acp-coder").join("config.toml");
            p.exists().then_some(p)
        });
        let file = match &path {
            Some(p) => read_file(p)?,
            None => FileConfig::default(),
        };
        let data_dir = data_home_with(env).join("acp-coder");
        let mut s = Settings {
            config_path: path.clone(),
            sandbox_unreadable: paths::agent_dirs_with(env, path.as_deref(), &data_dir),
            data_dir,
            ..Settings::default()
        };
        s.endpoint(over, env, &file, path.as_deref())?;
        s.apply_scalars(&file);
        s.apply_tables(file, &path.unwrap_or_default())?;
        s.apply_hidden_env(env);
        Ok(s)
    }

    /// The file's single-valued settings, each where it is set.
    fn apply_scalars(&mut self, file: &FileConfig) {
        if let Some(mode) = file.default_mode {
            self.default_mode = mode;
        }
        if let Some(n) = file.max_turn_requests {
            self.max_turn_requests = n.max(1);
        }
        if let Some(n) = file.context_window {
            self.context_window = n;
            self.context_window_configured = true;
        }
        self.compact_prompt = file.compact_prompt;
        self.temperature = file.temperature;
        if let Some(n) = file.max_retries {
            self.max_retries = n;
        }
        if let Some(n) = file.stream_idle_timeout_secs {
            self.stream_idle_timeout = Duration::from_secs(n.max(1));
        }
        if let Some(b) = file.stream_usage {
            self.stream_usage = b;
        }
        for (value, limit) in [
            (file.max_sse_event_bytes, &mut self.max_sse_event_bytes),
            (file.max_reply_text_bytes, &mut self.max_reply_text_bytes),
            (
                file.max_tool_arguments_bytes,
                &mut self.max_tool_arguments_bytes,
            ),
        ] {
            if let Some(n) = value {
                *limit = n.max(1024);
            }
        }
        if let Some(b) = file.send_reasoning {
            self.send_reasoning = b;
        }
        if let Some(b) = file.sandbox_network {
            self.sandbox_network = b;
        }
        self.web_fetch = file.web_fetch.unwrap_or(self.sandbox_network);
        if let Some(b) = file.full_auto_without_sandbox {
            self.full_auto_without_sandbox = b;
        }
        if let Some(n) = file.max_background_commands {
            self.max_background_commands = n.max(1);
        }
        if let Some(n) = file.checkpoint_max_bytes {
            self.checkpoint_max_bytes = n;
        }
        if let Some(n) = file.subagent_max_depth {
            self.subagent_max_depth = n;
        }
        if let Some(n) = file.subagent_max_running {
            self.subagent_max_running = n.max(1);
        }
        if let Some(n) = file.mcp_startup_timeout_secs {
            self.mcp_startup_timeout = Duration::from_secs(n);
        }
        if let Some(n) = file.mcp_tool_timeout_secs {
            self.mcp_tool_timeout = Duration::from_secs(n.max(1));
        }
        self.a2a_token = file.a2a_token.clone().filter(|t| !t.trim().is_empty());
    }

    /// The file's tables and lists: headers, models, MCP servers and the
    /// protected paths, the last two checked (errors name `file_path`).
    fn apply_tables(&mut self, file: FileConfig, file_path: &Path) -> Result<(), ConfigError> {
        let temperatures = std::iter::once(("temperature".to_owned(), file.temperature)).chain(
            file.models
                .iter()
                .map(|(id, m)| (format!("models.{id:?}.temperature"), m.temperature)),
        );
        for (key, t) in temperatures {
            if t.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
                return Err(ConfigError::Invalid(format!(
                    "{}: {key} must be a number from 0 to 2",
                    file_path.display()
                )));
            }
        }
        self.headers = file.headers.into_iter().collect();
        self.models = file.models.into_iter().collect();
        for (name, server) in &file.mcp_servers {
            if let Some(spec) = server.to_spec(name, file_path)? {
                self.mcp_servers.push(spec);
            }
        }
        self.hooks = Hooks::check(file.hooks)
            .map_err(|e| ConfigError::Invalid(format!("{}: {e}", file_path.display())))?;
        if let Some(bad) = file.memory_files.iter().flatten().find(|n| {
            let p = Path::new(n.as_str());
            p.file_name().and_then(|f| f.to_str()) != Some(n.as_str())
        }) {
            return Err(ConfigError::Invalid(format!(
                "{}: memory_files: {bad:?} is not a file name (no directories; the file is looked for in each directory from the repository root down)",
                file_path.display()
            )));
        }
        self.memory_files = file.memory_files;
        self.web_fetch_private_hosts = file.web_fetch_private_hosts;
        check_globs(&file.protected_paths, file_path)?;
        self.protected_paths = file.protected_paths;
        for p in &file.sandbox_unreadable {
            let path = match p.strip_prefix("~/") {
                Some(rest) => paths::home().join(rest),
                None => PathBuf::from(p),
            };
            if !path.is_absolute() {
                return Err(ConfigError::Invalid(format!(
                    "{}: sandbox_unreadable: {p:?} is not an absolute path (or ~/…)",
                    file_path.display()
                )));
            }
            self.sandbox_unreadable.push(path);
        }
        Ok(())
    }

    /// Hidden knobs for tests and debugging; not part of the documented contract.
    fn apply_hidden_env(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        if let Some(ms) = env("ACP_CODER_RETRY_BASE_MS").and_then(|v| v.parse().ok()) {
            self.retry_base_delay = Duration::from_millis(ms);
        }
        if let Some(secs) = env("ACP_CODER_STREAM_IDLE_SECS").and_then(|v| v.parse().ok()) {
            self.stream_idle_timeout = Duration::from_secs(secs);
        }
    }

    /// The model endpoint and its key (flag > env > file): the base
    /// URL (http or https), the key variable, where the key came from, and
    /// whether one is needed.
    fn endpoint(
        &mut self,
        over: &Overrides,
        env: &dyn Fn(&str) -> Option<String>,
        file: &FileConfig,
        path: Option<&Path>,
    ) -> Result<(), ConfigError> {
        let env_value = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let file_source = || Source::File(path.map(Path::to_path_buf).unwrap_or_default());
        // clap merges `--base-url` with its variable: the flag is the
        // source only when the variable does not hold the same value.
        let (given, source) = match (&over.base_url, env_value(BASE_URL_ENV)) {
            (Some(u), e) if e.as_deref() != Some(u) => (Some(u.clone()), Source::Flag),
            (Some(u), _) => (Some(u.clone()), Source::Env(BASE_URL_ENV.into())),
            (None, Some(e)) => (Some(e), Source::Env(BASE_URL_ENV.into())),
            (None, None) => match file.base_url.clone().filter(|u| !u.trim().is_empty()) {
                Some(u) => (Some(u), file_source()),
                None => (None, Source::Default),
            },
        };
        self.base_url_overridden = match source {
            Source::Flag | Source::Env(_) => file.base_url.clone(),
            _ => None,
        };
        self.base_url_given = given.is_some();
        self.base_url_source = source;
        self.base_url = given
            .unwrap_or_else(|| DEFAULT_BASE_URL.into())
            .trim_end_matches('/')
            .to_owned();
        if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            return Err(ConfigError::BaseUrl {
                url: self.base_url.clone(),
                from: self.base_url_source.clone(),
            });
        }
        self.api_key_env = file
            .api_key_env
            .clone()
            .unwrap_or_else(|| API_KEY_ENV.into());
        if !self.secret_env.contains(&self.api_key_env) {
            self.secret_env.push(self.api_key_env.clone());
        }
        let (key, source) = if let Some(k) = &over.api_key {
            (Some(k.clone()), KeySource::Flag)
        } else if let Some(k) = env(&self.api_key_env) {
            (Some(k), KeySource::Env(self.api_key_env.clone()))
        } else if let Some(k) = &file.api_key {
            (
                Some(k.clone()),
                KeySource::File(path.map(Path::to_path_buf).unwrap_or_default()),
            )
        } else {
            (None, KeySource::None)
        };
        self.api_key = key;
        self.key_source = source;
        self.require_api_key = file
            .require_api_key
            .unwrap_or_else(|| !is_local_endpoint(&self.base_url));
        let file_model = file.model.clone().filter(|m| !m.trim().is_empty());
        (self.model, self.model_source) = match (&over.model, env_value(MODEL_ENV)) {
            (Some(m), e) if e.as_deref() != Some(m) => (Some(m.clone()), Source::Flag),
            (Some(m), _) => (Some(m.clone()), Source::Env(MODEL_ENV.into())),
            (None, Some(e)) => (Some(e), Source::Env(MODEL_ENV.into())),
            (None, None) => match file_model {
                Some(m) => (Some(m), file_source()),
                None => (None, Source::Default),
            },
        };
        Ok(())
    }

    /// Settings to run on when loading failed: defaults plus the reason.
    pub fn failed(error: &ConfigError) -> Settings {
        Settings {
            load_error: Some(error.to_string()),
            ..Settings::default()
        }
    }

    /// Whether a local server may be looked for: no base URL and no key
    /// anywhere, and the config file loaded.
    pub fn may_use_local_server(&self) -> bool {
        !self.base_url_given && self.api_key.is_none() && self.load_error.is_none()
    }

    /// Uses the local server `name` at `base_url` (found by `llm::discover`),
    /// with `model` unless one is configured.
    pub fn use_local_server(&mut self, name: &str, base_url: &str, model: Option<String>) {
        self.base_url = base_url.trim_end_matches('/').to_owned();
        self.require_api_key = false;
        self.base_url_source = Source::LocalServer(name.to_owned());
        if self.model.is_none() && model.is_some() {
            self.model = model;
            self.model_source = Source::LocalServer(name.to_owned());
        }
        self.local_server = Some(name.to_owned());
    }

    /// What to tell the user when a local server is used without
    /// configuration (`doctor`, the first session); `None` otherwise.
    pub fn local_server_notice(&self) -> Option<String> {
        let name = self.local_server.as_ref()?;
        Some(format!(
            "No model endpoint is configured, so acp-coder uses the local {name} server at {}{}. Set {BASE_URL_ENV} (or base_url in the config file) to choose another.",
            self.base_url,
            self.model
                .as_ref()
                .map(|m| format!(" with model {m}"))
                .unwrap_or_default()
        ))
    }

    /// Why a model call cannot be made yet, phrased as what to set; `None` when usable.
    pub fn missing_credentials(&self) -> Option<String> {
        if self.api_key.is_none() && self.require_api_key {
            Some(format!(
                "no API key for {} ({}): set {} in the environment the editor starts acp-coder with, or api_key_env/api_key in {} (or point {} at a local server such as Ollama)",
                self.base_url,
                self.endpoint_origin(),
                self.api_key_env,
                self.config_path
                    .clone()
                    .unwrap_or_else(|| config_home().join("acp-coder").join("config.toml"))
                    .display(),
                BASE_URL_ENV,
            ))
        } else {
            None
        }
    }

    /// Where the endpoint came from, for errors: "the base URL comes from
    /// …", and whether that beat the config file's.
    pub fn endpoint_origin(&self) -> String {
        let mut text = format!(
            "the base URL comes from {}",
            self.base_url_source.describe("base_url")
        );
        if let Some(file_url) = &self.base_url_overridden {
            text.push_str(&format!(
                ", which wins over base_url = {file_url:?} in the config file; unset it to use the saved login"
            ));
        }
        text
    }

    /// The settings of a model, if the config has any.
    pub fn model_config(&self, id: &str) -> Option<&ModelConfig> {
        self.models.iter().find(|(m, _)| m == id).map(|(_, c)| c)
    }

    /// Whether the model gets the images of tool results (default yes).
    pub fn model_accepts_images(&self, id: &str) -> bool {
        self.model_config(id).and_then(|c| c.images).unwrap_or(true)
    }

    /// Whether the model gets the audio of tool results (default no).
    pub fn model_accepts_audio(&self, id: &str) -> bool {
        self.model_config(id).and_then(|c| c.audio).unwrap_or(false)
    }

    /// The context window of a model, in tokens, as configured (else the default).
    pub fn context_window_for(&self, id: &str) -> u64 {
        self.configured_context_window(id)
            .unwrap_or(self.context_window)
    }

    /// The context window the config file gives a model, if it does.
    pub fn configured_context_window(&self, id: &str) -> Option<u64> {
        self.model_config(id).and_then(|c| c.context_window).or(self
            .context_window_configured
            .then_some(self.context_window))
    }

    /// Whether a model with a window of `window` tokens gets the short
    /// prompt: as `compact_prompt` says, else for windows up to 16k.
    pub fn compact_prompt_for(&self, window: u64) -> bool {
        self.compact_prompt
            .unwrap_or(window <= COMPACT_PROMPT_WINDOW)
    }

    /// The temperature of requests to model `id`: the model's setting, else
    /// the top-level one, else in the small-model mode
    /// [`SMALL_MODEL_TEMPERATURE`], else the server's default (`None`).
    pub fn temperature_for(&self, id: &str, small_model: bool) -> Option<f32> {
        self.model_config(id)
            .and_then(|c| c.temperature)
            .or(self.temperature)
            .or(small_model.then_some(SMALL_MODEL_TEMPERATURE))
    }

    /// Where to fix a key the endpoint rejected.
    pub fn key_hint(&self) -> String {
        match &self.key_source {
            KeySource::Flag => "the key given with --api-key".into(),
            KeySource::Env(v) => format!("the {v} environment variable"),
            KeySource::File(p) => format!("api_key in {}", p.display()),
            KeySource::None => format!("{} (no key is set)", self.api_key_env),
        }
    }
}

/// `protected_paths` must be valid globs (checked once, at load).
fn check_globs(globs: &[String], file_path: &Path) -> Result<(), ConfigError> {
    for glob in globs {
        if let Err(e) = globset::Glob::new(glob.trim_start_matches("./")) {
            return Err(ConfigError::Invalid(format!(
                "protected_paths entry {glob:?} in {} is not a valid glob ({e}); use globs relative to the project such as \"deploy/*.sh\"",
                file_path.display()
            )));
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_owned(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|sp| line_column(&text, sp.start))
            .unwrap_or((1, 1));
        ConfigError::Parse {
            path: path.to_owned(),
            line,
            column,
            message: did_you_mean(e.message()),
        }
    })
}

/// The 1-based line and column (in characters) of byte `offset` of `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut at = offset.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

/// serde's "unknown field `x`, expected one of `a`, `b`, …" (and "unknown
/// variant" for enum values such as `default_mode`) with the closest valid
/// name, when one is close: "unknown key `default_mod`; did you mean
/// `default_mode`?". Other messages pass unchanged.
pub fn did_you_mean(message: &str) -> String {
    let (kind, rest) = if let Some(r) = message.strip_prefix("unknown field `") {
        ("key", r)
    } else if let Some(r) = message.strip_prefix("unknown variant `") {
        ("value", r)
    } else {
        return message.to_owned();
    };
    let Some((given, expected)) = rest.split_once('`') else {
        return message.to_owned();
    };
    let valid: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match closest(given, valid.iter().copied()) {
        Some(v) => format!("unknown {kind} `{given}`; did you mean `{v}`?"),
        None => format!("unknown {kind} `{given}`; valid: {}", valid.join(", ")),
    }
}

/// The valid name closest to `given`, when it is close enough to be what
/// was meant (a typo or two, a `_` for a `-`).
pub(crate) fn closest<'a>(
    given: &str,
    valid: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    valid
        .into_iter()
        .map(|v| (strsim::damerau_levenshtein(given, v), v))
        .filter(|(d, v)| *d <= (v.chars().count() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v)
}

#[cfg(test)]
mod tests;
