//! The `acp-coder` binary: flags, logging, configuration, then one of
//!
//! - (no subcommand) the ACP agent on stdio, as editors start it;
//! - `exec PROMPT`: one turn from the terminal, with the agent in process;
//! - `doctor`: checks the setup;
//! - `login`: saves endpoint, key and model to the config file;
//! - `a2a`: serves the A2A protocol over HTTP (issue 20).
//!
//! In agent mode stdout carries protocol frames only; it is owned by the
//! connection's writer task. Logs go to a file, and warnings also to stderr.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use acp_coder::agent::{AgentConfig, serve_with};
use acp_coder::config::{self, Overrides, Settings};
use acp_coder::trace::TraceFile;
use acp_coder::{a2a, doctor, exec, login};

const ENVIRONMENT_HELP: &str = "\
Environment:
  OPENAI_API_KEY    API key of the endpoint (or the variable named by api_key_env in the config file)
  OPENAI_BASE_URL   endpoint base URL, like --base-url
  ACP_CODER_MODEL   model id, like --model
  ACP_CODER_LOG     log level or filter, like --log-level
  NO_COLOR          no colour in exec, doctor and login output
  XDG_CONFIG_HOME, XDG_STATE_HOME, XDG_DATA_HOME   where config, logs and data live

Without a subcommand acp-coder is the ACP agent on stdin/stdout, as editors start it.
Config file: $XDG_CONFIG_HOME/acp-coder/config.toml (see README.md for every key).";

const EXEC_HELP: &str = "\
Exit codes:
  0    the turn ended normally (end_turn)
  1    other failure
  2    bad usage or configuration (flags, config file, empty prompt)
  3    authentication: no API key, or the endpoint rejected it
  4    the model endpoint failed (unreachable, HTTP error after retries, no model)
  5    the model refused (stop reason refusal)
  6    the turn stopped early (max_tokens, max_turn_requests)
  130  interrupted (Ctrl-C)

Without a terminal and without --yes, anything that would ask for permission is refused
and reported; the turn goes on. Answer text goes to stdout; thoughts, tool activity and
diffs to stderr.";

/// A coding agent for editors that speak the Agent Client Protocol (ACP).
///
/// Started by an editor (Zed, JetBrains, Neovim, Emacs) as a child process, it
/// reads JSON-RPC from stdin and writes it to stdout. Any OpenAI-compatible
/// chat-completions endpoint works.
#[derive(Debug, Parser)]
#[command(name = "acp-coder", version, about, after_help = ENVIRONMENT_HELP)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
struct GlobalArgs {
    /// Model id to use (e.g. gpt-4.1, qwen2.5-coder:14b).
    #[arg(long, global = true, env = config::MODEL_ENV, hide_env_values = true, value_name = "ID")]
    model: Option<String>,
    /// Base URL of the OpenAI-compatible endpoint (e.g. http://localhost:11434/v1).
    #[arg(long, global = true, env = config::BASE_URL_ENV, hide_env_values = true, value_name = "URL")]
    base_url: Option<String>,
    /// Config file [default: $XDG_CONFIG_HOME/acp-coder/config.toml].
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Write every JSON-RPC frame (both directions, secrets redacted) to FILE, one JSON line each.
    #[arg(long, global = true, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Log file [default: $XDG_STATE_HOME/acp-coder/logs/acp-coder.DATE.log].
    #[arg(long, global = true, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// Log level or filter for the log file (e.g. debug, acp_coder=trace).
    #[arg(
        long,
        global = true,
        env = "ACP_CODER_LOG",
        hide_env_values = true,
        value_name = "LEVEL",
        default_value = "info"
    )]
    log_level: String,
}

#[derive(Debug, Subcommand)]
enum Command {
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
}

const A2A_HELP: &str = "\
Every request except the agent card (GET /.well-known/agent-card.json) needs
`Authorization: Bearer TOKEN`: a2a_token in the config file, ACP_CODER_A2A_TOKEN,
or else a token generated at start and printed once on stderr as `token: VALUE`.
Addresses other than loopback need a configured token. Permission questions
become the task state input-required; answer them with allow, always or reject.";

#[derive(Debug, Args)]
struct A2aArgs {
    /// Address to listen on (port 0 picks a free one).
    #[arg(long, value_name = "ADDR", default_value = a2a::DEFAULT_LISTEN)]
    listen: String,
    /// Serve DIR instead of the current directory (tasks never leave it).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Session mode of every task [default: ask]; full-auto only with the command sandbox.
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "accept-edits", "full-auto"])]
    mode: Option<String>,
}

#[derive(Debug, Args)]
struct ExecArgs {
    /// The prompt; `-` reads it from stdin.
    #[arg(value_name = "PROMPT")]
    prompt: String,
    /// Print one JSON event per line: every session/update, then a result or error event.
    #[arg(long)]
    json: bool,
    /// Allow everything that would ask for permission.
    #[arg(short = 'y', long)]
    yes: bool,
    /// Session mode [default: default_mode of the config file, else ask].
    #[arg(long, value_name = "MODE", value_parser = ["read-only", "ask", "accept-edits", "full-auto"])]
    mode: Option<String>,
    /// Work in DIR instead of the current directory.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct LoginArgs {
    /// Save api_key_env = NAME: read the key from this environment variable.
    #[arg(long, value_name = "NAME", conflicts_with = "api_key")]
    api_key_env: Option<String>,
    /// Save the key itself as api_key (prefer --api-key-env or the interactive prompt: argv is visible to other users).
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Never ask on the terminal; save only what the flags give.
    #[arg(long)]
    no_input: bool,
}

fn main() -> ExitCode {
    // The command sandbox's launcher (`sandbox-exec`, hidden): before clap,
    // logging or anything that could start a thread (platform::sandbox).
    if let Some(code) = acp_coder::platform::sandbox::dispatch() {
        return ExitCode::from(code);
    }
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    // `login` saves only what was typed on the command line, not the environment.
    let from_flag = |id: &str| {
        let sub = matches.subcommand().map(|(_, m)| m);
        [Some(&matches), sub]
            .into_iter()
            .flatten()
            .any(|m| m.value_source(id) == Some(ValueSource::CommandLine))
    };
    let login_flags = (from_flag("base_url"), from_flag("model"));
    let loaded = matches!(
        cli.command,
        None | Some(Command::Exec(_)) | Some(Command::A2a(_))
    )
    .then(|| protect_secrets(&cli.global));
    let stderr_level = match cli.command {
        // exec shows retries and failures itself (see the log file for details).
        Some(Command::Exec(_)) => tracing_subscriber::filter::LevelFilter::OFF,
        _ => tracing_subscriber::filter::LevelFilter::WARN,
    };
    let _guard = match init_logging(&cli.global, stderr_level) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("acp-coder: {e:#}");
            return ExitCode::from(2);
        }
    };
    // Commands go through this binary's launcher mode; probe the sandbox now.
    if !matches!(cli.command, Some(Command::Login(_)))
        && let Ok(exe) = std::env::current_exe()
    {
        acp_coder::tools::sandbox::init(exe);
    }
    let code = match cli.command {
        None => match run_agent(&cli.global, loaded) {
            Ok(()) => 0,
            Err(e) => {
                tracing::error!("{e:#}");
                eprintln!("acp-coder: {e:#}");
                1
            }
        },
        Some(Command::Exec(args)) => run_exec(&cli.global, args),
        Some(Command::Doctor) => run_doctor(&cli.global),
        Some(Command::Login(args)) => run_login(&cli.global, args, login_flags),
        Some(Command::A2a(args)) => run_a2a(&cli.global, args),
    };
    ExitCode::from(code)
}

/// Takes the secrets out of the process image before anything else runs
/// (SECURITY.md §3, `acp_coder::secrets::env`): the secret variables (the key
/// variable and the config's `api_key_env`) are overwritten and unset, their
/// values kept in memory and learned by the redactor, and the process becomes
/// non-dumpable. Here in `main`, before the log writer's thread or the
/// runtime exist, because it writes the environment.
///
/// Returns the settings it read, which the agent then runs with: loading
/// them again after the scrub gives the same values (`secrets::env::var`
/// keeps what it took out) and only delayed `initialize` (issue 15).
fn protect_secrets(g: &GlobalArgs) -> Result<Settings, config::ConfigError> {
    let loaded = Settings::load(&overrides(g));
    let mut names = loaded
        .as_ref()
        .map(|s| s.secret_env.clone())
        .unwrap_or_else(|_| vec![config::API_KEY_ENV.to_owned()]);
    names.push(a2a::TOKEN_ENV.to_owned());
    // SAFETY: single-threaded still: nothing has spawned a thread yet.
    unsafe { acp_coder::secrets::env::scrub(&names) };
    if let Err(e) = acp_coder::platform::harden::protect_memory() {
        eprintln!("acp-coder: cannot protect the process's memory: {e}");
    }
    loaded
}

fn overrides(g: &GlobalArgs) -> Overrides {
    Overrides {
        config: g.config.clone(),
        model: g.model.clone(),
        base_url: g.base_url.clone(),
        api_key: None,
    }
}

/// The async runtime: one worker thread, or as many as
/// `TOKIO_WORKER_THREADS` (tokio's own variable) asks for.
///
/// One, because the agent's async work waits on I/O (stdin and stdout, the
/// model's stream, MCP servers, the editor's callbacks), and everything
/// that computes for long (search, file walks, snapshots, skills, the
/// session store, commands) runs on blocking threads. With a worker per
/// core, each streamed chunk crossed between the two workers (the
/// connection's task, the turn, the stdout writer), and waking the parked
/// one (eventfd, futex, context switches) was about 40% of the agent's CPU
/// per chunk (perf, issue 15; BENCHMARKS.md). A value tokio cannot use is
/// ignored with a warning: tokio itself panics on it.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(worker_threads(
        std::env::var("TOKIO_WORKER_THREADS").ok().as_deref(),
    ));
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// The worker count for `TOKIO_WORKER_THREADS`'s value (1 when unset or not a positive number).
fn worker_threads(value: Option<&str>) -> usize {
    match value.map(|v| v.trim().parse::<usize>()) {
        None => 1,
        Some(Ok(n)) if (1..=256).contains(&n) => n,
        Some(_) => {
            tracing::warn!(
                value = value.unwrap_or_default(),
                "TOKIO_WORKER_THREADS is not a number from 1 to 256; using 1 worker"
            );
            1
        }
    }
}

/// Values that must never reach a trace file: every configured header
/// value on top of the agent's secrets (the trace is redacted by both).
fn trace_secrets(s: &Settings) -> Vec<String> {
    let mut v = s.secret_values();
    v.extend(s.headers.iter().map(|(_, value)| value.clone()));
    v
}

fn open_trace(g: &GlobalArgs, s: &Settings) -> anyhow::Result<Option<TraceFile>> {
    g.trace
        .as_deref()
        .map(|p| TraceFile::create(p, trace_secrets(s)))
        .transpose()
        .map_err(anyhow::Error::from)
}

fn run_agent(
    g: &GlobalArgs,
    loaded: Option<Result<Settings, config::ConfigError>>,
) -> anyhow::Result<()> {
    let overrides = overrides(g);
    // A broken config must not kill the agent before the editor can show why:
    // run on defaults and answer session/new with the reason.
    let loaded = loaded.unwrap_or_else(|| Settings::load(&overrides));
    let settings = loaded.unwrap_or_else(|e| {
        tracing::warn!("{e}");
        Settings::failed(&e)
    });
    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?settings, "starting");
    let trace = open_trace(g, &settings)?;
    let runtime = runtime()?;
    runtime.block_on(async move {
        let mut config = AgentConfig {
            overrides: Some(overrides),
            ..AgentConfig::new(settings)
        };
        config.serve.tracer = trace.as_ref().map(TraceFile::tracer);
        // A signal ends the input: the agent then shuts down as at end of
        // input (turns cancelled and answered, sessions saved).
        let input = acp_coder::rpc::eof_on(acp_coder::rpc::stdio::stdin(), async {
            acp_coder::rpc::terminated().await;
            tracing::info!("terminated by signal");
        });
        serve_with(input, acp_coder::rpc::stdio::stdout(), config).await;
    });
    // Every command and server we started dies with us, whatever state it is in.
    acp_coder::tools::process::kill_all_children();
    // Blocking stdin reads keep a runtime thread busy; don't wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    tracing::info!("exit");
    Ok(())
}

fn run_exec(g: &GlobalArgs, args: ExecArgs) -> u8 {
    let early = |message: String, code: u8| {
        tracing::error!("{message}");
        exec::report_early_error(args.json, &message, code);
        code
    };
    let prompt = match exec::read_prompt(&args.prompt) {
        Ok(p) => p,
        Err(e) => return early(e.to_string(), e.exit_code()),
    };
    let overrides = overrides(g);
    let settings = match Settings::load(&overrides) {
        Ok(s) => s,
        Err(e) => return early(e.to_string(), exec::exit::USAGE),
    };
    let trace = match open_trace(g, &settings) {
        Ok(t) => t,
        Err(e) => return early(format!("{e:#}"), exec::exit::USAGE),
    };
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => return early(format!("{e:#}"), exec::exit::FAILURE),
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?settings, "exec");
    let opts = exec::ExecOptions {
        prompt,
        json: args.json,
        yes: args.yes,
        mode: args.mode.clone(),
        cwd: args.cwd.clone(),
    };
    let mut config = AgentConfig {
        overrides: Some(overrides),
        ..AgentConfig::new(settings)
    };
    config.serve.tracer = trace.as_ref().map(TraceFile::tracer);
    let code = runtime.block_on(exec::run(opts, config));
    acp_coder::tools::process::kill_all_children();
    runtime.shutdown_timeout(Duration::from_millis(100));
    drop(trace);
    code
}

fn run_a2a(g: &GlobalArgs, args: A2aArgs) -> u8 {
    let overrides = overrides(g);
    let settings = match Settings::load(&overrides) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("acp-coder a2a: {e}");
            return 2;
        }
    };
    let trace = match open_trace(g, &settings) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("acp-coder a2a: {e:#}");
            return 2;
        }
    };
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acp-coder a2a: {e:#}");
            return 1;
        }
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?settings, "a2a");
    let mut config = AgentConfig {
        overrides: Some(overrides),
        ..AgentConfig::new(settings)
    };
    config.serve.tracer = trace.as_ref().map(TraceFile::tracer);
    let mut limits = a2a::Limits::default();
    // Hidden knob for tests; not part of the documented contract.
    if let Some(ms) = std::env::var("ACP_CODER_A2A_IDLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        limits.idle = Duration::from_millis(ms);
    }
    let opts = a2a::A2aOptions {
        listen: Some(args.listen),
        cwd: args.cwd,
        mode: args.mode,
        limits,
    };
    let result = runtime.block_on(a2a::run(opts, config));
    acp_coder::tools::process::kill_all_children();
    runtime.shutdown_timeout(Duration::from_millis(100));
    drop(trace);
    match result {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("acp-coder a2a: {e}");
            2
        }
    }
}

fn run_doctor(g: &GlobalArgs) -> u8 {
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acp-coder: {e:#}");
            return 1;
        }
    };
    let opts = doctor::DoctorOptions {
        overrides: overrides(g),
        log_file: g.log_file.clone(),
        timeout: Duration::from_secs(5),
    };
    let ok = runtime.block_on(doctor::run(&opts));
    runtime.shutdown_timeout(Duration::from_millis(100));
    if ok { 0 } else { 1 }
}

fn run_login(g: &GlobalArgs, args: LoginArgs, (base_url, model): (bool, bool)) -> u8 {
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("acp-coder: {e:#}");
            return 1;
        }
    };
    let opts = login::LoginOptions {
        config: g.config.clone(),
        base_url: g.base_url.clone().filter(|_| base_url),
        api_key: args.api_key,
        api_key_env: args.api_key_env,
        model: g.model.clone().filter(|_| model),
        no_input: args.no_input,
    };
    let result = runtime.block_on(login::run(opts));
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("acp-coder login: {e}");
            e.exit_code()
        }
    }
}

fn init_logging(
    g: &GlobalArgs,
    stderr_level: tracing_subscriber::filter::LevelFilter,
) -> anyhow::Result<Option<tracing_appender::non_blocking::WorkerGuard>> {
    let mut file_filter = EnvFilter::try_new(&g.log_level).with_context(|| {
        format!(
            "--log-level / ACP_CODER_LOG: {:?} is not a valid level or filter",
            g.log_level
        )
    })?;
    // rmcp logs every message an MCP server sends in full at `info` (a
    // server's megabyte notification became a megabyte log line); the agent
    // logs what matters itself. `ACP_CODER_LOG=rmcp=debug` still gets them.
    if !g.log_level.contains("rmcp") {
        file_filter = file_filter.add_directive(
            "rmcp=warn"
                .parse()
                .context("the built-in rmcp log directive")?,
        );
    }
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_writer(|| acp_coder::secrets::Writer(std::io::stderr()))
        .with_ansi(acp_coder::term::Stream::Stderr.wants_color())
        .with_target(false)
        .with_filter(stderr_level);
    let writer = match &g.log_file {
        Some(path) => Some(log_writer(open_log_file(path)?)),
        None => daily_log().map(log_writer),
    };
    // async-openai logs the raw text of a reply it cannot decode (which a
    // server may fill with echoed keys) at error level, unredacted; the
    // model client reports those failures itself, redacted (src/llm).
    let quiet_deps =
        tracing_subscriber::filter::filter_fn(|m| !m.target().starts_with("async_openai"));
    let registry = tracing_subscriber::registry()
        .with(quiet_deps)
        .with(stderr_layer);
    match writer {
        Some((writer, guard)) => {
            let file_layer = tracing_subscriber::fmt::layer()
                .with_writer(writer)
                .with_ansi(false)
                .with_filter(file_filter);
            registry.with(file_layer).init();
            Ok(Some(guard))
        }
        None => {
            registry.init();
            Ok(None)
        }
    }
}

/// `--log-file`: created (with its folder) if needed, appended to, and
/// readable by the user only (logs hold prompt summaries and paths).
fn open_log_file(path: &std::path::Path) -> anyhow::Result<std::fs::File> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create log directory {}", dir.display()))?;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot open log file {}", path.display()))
}

/// The default log: a daily file in `$XDG_STATE_HOME/acp-coder/logs`, seven
/// kept. `None` (stderr only, said once) when that folder is not writable.
fn daily_log() -> Option<tracing_appender::rolling::RollingFileAppender> {
    let dir = config::state_home().join("acp-coder").join("logs");
    let appender = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| {
            tracing_appender::rolling::Builder::new()
                .rotation(tracing_appender::rolling::Rotation::DAILY)
                .filename_prefix("acp-coder")
                .filename_suffix("log")
                .max_log_files(7)
                .build(&dir)
                .map_err(anyhow::Error::from)
        });
    match appender {
        Ok(appender) => Some(appender),
        Err(e) => {
            eprintln!(
                "acp-coder: logging to stderr only: cannot write logs in {}: {e}",
                dir.display()
            );
            None
        }
    }
}

/// The log file's writer thread. Its queue is kept small: tracing-appender's
/// default of 128,000 lines is a 4 MB buffer initialised at start-up, which was
/// 40 % of the agent's start-up time and a third of its memory. Lines beyond
/// the queue are dropped (counted by tracing-appender), never blocking a turn.
fn log_writer<W: std::io::Write + Send + 'static>(
    w: W,
) -> (
    tracing_appender::non_blocking::NonBlocking,
    tracing_appender::non_blocking::WorkerGuard,
) {
    // Each line passes the one redactor on the writer thread (SECURITY.md §3).
    tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(4096)
        .finish(acp_coder::secrets::Writer(w))
}

use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
