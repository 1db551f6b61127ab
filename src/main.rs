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
// The binary's own modules live in src/main/ (the library's in src/).
#[path = "main/args.rs"]
mod args;
#[path = "main/logging.rs"]
mod logging;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};

use args::{A2aArgs, Cli, Command, ExecArgs, GlobalArgs, LoginArgs, ServeArgs};
use logging::init_logging;

use acp_coder::agent::{AgentConfig, serve_with};
use acp_coder::config::{self, Overrides, Settings};
use acp_coder::trace::TraceFile;
use acp_coder::{a2a, doctor, exec, login};

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
        None | Some(Command::Exec(_)) | Some(Command::A2a(_)) | Some(Command::Serve(_))
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
        Some(Command::Serve(args)) => run_serve(&cli.global, loaded, args),
        Some(Command::Mcp(cmd)) => run_mcp(&cli.global, cmd),
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
    names.push(acp_coder::serve::TOKEN_ENV.to_owned());
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
        let mut settings = settings;
        acp_coder::llm::discover::use_local_server(&mut settings, &acp_coder::secrets::env::var)
            .await;
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
    let prompt = match &args.prompt {
        _ if args.list => String::new(),
        Some(arg) => match exec::read_prompt(arg) {
            Ok(p) => p,
            Err(e) => return early(e.to_string(), e.exit_code()),
        },
        None => return early(exec::ExecError::EmptyPrompt.to_string(), exec::exit::USAGE),
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
        session: match (&args.resume, args.continue_last) {
            (Some(id), _) => exec::SessionChoice::Resume(id.clone()),
            (None, true) => exec::SessionChoice::Continue,
            (None, false) => exec::SessionChoice::New,
        },
        list: args.list,
    };
    let mut settings = settings;
    runtime.block_on(acp_coder::llm::discover::use_local_server(
        &mut settings,
        &acp_coder::secrets::env::var,
    ));
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

/// `acp-coder serve` (issue 46): ACP over HTTP and WebSocket.
fn run_serve(
    g: &GlobalArgs,
    loaded: Option<Result<Settings, config::ConfigError>>,
    args: ServeArgs,
) -> u8 {
    use acp_coder::serve;
    let fail = |message: String, code: u8| {
        tracing::error!("{message}");
        eprintln!("acp-coder serve: {message}");
        code
    };
    let overrides = overrides(g);
    // As in agent mode: a broken config is answered at session/new, not fatal.
    let settings = loaded
        .unwrap_or_else(|| Settings::load(&overrides))
        .unwrap_or_else(|e| {
            tracing::warn!("{e}");
            Settings::failed(&e)
        });
    let token = match &args.token_file {
        Some(path) => match serve::read_token_file(path) {
            Ok(t) => Some(t),
            Err(e) => return fail(e.to_string(), 2),
        },
        None => acp_coder::secrets::env::var(serve::TOKEN_ENV),
    };
    let trace = match open_trace(g, &settings) {
        Ok(t) => t,
        Err(e) => return fail(format!("{e:#}"), 2),
    };
    let runtime = match runtime() {
        Ok(r) => r,
        Err(e) => return fail(format!("{e:#}"), 1),
    };
    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?settings, "serve");
    let opts = serve::ServeOptions {
        listen: args.listen,
        token,
        require_token: args.require_token,
        allow_origins: args.allow_origins,
        limits: serve::Limits {
            max_body: args.max_body,
            max_connections: args.max_connections,
            max_sessions: args.max_sessions,
            idle: Duration::from_secs(args.idle_timeout as u64),
        },
        port_file: args.port_file,
        data_dir: settings.data_dir.clone(),
    };
    let result = runtime.block_on(async move {
        let mut settings = settings;
        acp_coder::llm::discover::use_local_server(&mut settings, &acp_coder::secrets::env::var)
            .await;
        let tracer = trace.as_ref().map(TraceFile::tracer);
        let factory: serve::AgentFactory = std::sync::Arc::new(move || {
            let mut config = AgentConfig {
                overrides: Some(overrides.clone()),
                remote: true,
                ..AgentConfig::new(settings.clone())
            };
            config.serve.tracer = tracer.clone();
            config
        });
        let result = serve::run(opts, factory).await;
        drop(trace);
        result
    });
    acp_coder::tools::process::kill_all_children();
    runtime.shutdown_timeout(Duration::from_millis(100));
    match result {
        Ok(()) => 0,
        Err(e) => fail(e.to_string(), 2),
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

/// `acp-coder mcp ...` (issue 45 item 7): edits the config file's MCP servers.
fn run_mcp(g: &GlobalArgs, cmd: args::McpCommand) -> u8 {
    use acp_coder::config::mcp_edit::{self, NewServer};
    use args::McpCommand;
    let path = g
        .config
        .clone()
        .unwrap_or_else(|| config::config_home().join("acp-coder").join("config.toml"));
    let out = std::io::stdout();
    let mut out = out.lock();
    let result = match cmd {
        McpCommand::List => mcp_edit::list(&path).map(|servers| {
            if servers.is_empty() {
                format!(
                    "No MCP servers in {}; add one with `acp-coder mcp add`.",
                    path.display()
                )
            } else {
                servers
                    .iter()
                    .map(|(name, s)| mcp_edit::describe(name, s, &path))
                    .collect::<Vec<_>>()
                    .join("\n")
            }
        }),
        McpCommand::Get { name } => {
            mcp_edit::get(&path, &name).map(|s| mcp_edit::details(&name, &s, &path))
        }
        McpCommand::Remove { name } => mcp_edit::remove(&path, &name)
            .map(|()| format!("Removed MCP server {name:?} from {}.", path.display())),
        McpCommand::Add(a) => {
            let server = if a.transport == "stdio" {
                if !a.headers.is_empty() {
                    eprintln!("acp-coder mcp add: --header is for http/sse servers");
                    return 2;
                }
                let mut target = a.target.into_iter();
                NewServer::Stdio {
                    command: target.next().unwrap_or_default(),
                    args: target.collect(),
                    env: a.env,
                }
            } else {
                if !a.env.is_empty() || a.target.len() != 1 {
                    eprintln!(
                        "acp-coder mcp add: an {} server takes one URL (and --header, not --env)",
                        a.transport
                    );
                    return 2;
                }
                NewServer::Remote {
                    kind: a.transport,
                    url: a.target.into_iter().next().unwrap_or_default(),
                    headers: a.headers,
                }
            };
            mcp_edit::add(&path, &a.name, &server)
                .map(|()| format!("Added MCP server {:?} to {}.", a.name, path.display()))
        }
    };
    match result {
        Ok(text) => {
            use std::io::Write as _;
            let _ = writeln!(out, "{text}");
            0
        }
        Err(e) => {
            eprintln!("acp-coder mcp: {e}");
            1
        }
    }
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
