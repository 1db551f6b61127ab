//! The `acp-coder` binary: flags, logging, configuration, then the ACP agent on stdio.
//!
//! stdout carries protocol frames only; it is owned by the connection's writer
//! task. Logs go to a file, and warnings also to stderr.
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use acp_coder::agent::{AgentConfig, serve_with};
use acp_coder::config::{self, Overrides, Settings};
use acp_coder::rpc;

/// A coding agent for editors that speak the Agent Client Protocol (ACP).
///
/// Started by an editor (Zed, JetBrains, Neovim, Emacs) as a child process; it
/// reads JSON-RPC from stdin and writes it to stdout. Any OpenAI-compatible
/// chat-completions endpoint works.
#[derive(Debug, Parser)]
#[command(name = "acp-coder", version, about, long_about = None)]
struct Cli {
    /// Model id to use (e.g. gpt-4.1, qwen2.5-coder:14b).
    #[arg(long, env = config::MODEL_ENV, value_name = "ID")]
    model: Option<String>,
    /// Base URL of the OpenAI-compatible endpoint (e.g. http://localhost:11434/v1).
    #[arg(long, env = config::BASE_URL_ENV, value_name = "URL")]
    base_url: Option<String>,
    /// Config file [default: $XDG_CONFIG_HOME/acp-coder/config.toml].
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Log file [default: $XDG_STATE_HOME/acp-coder/logs/acp-coder.log.DATE].
    #[arg(long, value_name = "PATH")]
    log_file: Option<PathBuf>,
    /// Log level or filter for the log file (e.g. debug, acp_coder=trace).
    #[arg(
        long,
        env = "ACP_CODER_LOG",
        value_name = "LEVEL",
        default_value = "info"
    )]
    log_level: String,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let _guard = match init_logging(&cli) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("acp-coder: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("acp-coder: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let overrides = Overrides {
        config: cli.config.clone(),
        model: cli.model.clone(),
        base_url: cli.base_url.clone(),
        api_key: None,
    };
    // A broken config must not kill the agent before the editor can show why:
    // run on defaults and answer session/new with the reason.
    let settings = Settings::load(&overrides).unwrap_or_else(|e| {
        tracing::warn!("{e}");
        Settings::failed(&e)
    });
    tracing::info!(version = env!("CARGO_PKG_VERSION"), ?settings, "starting");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get().min(4)))
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let config = AgentConfig {
            overrides: Some(overrides),
            ..AgentConfig::new(settings)
        };
        let agent = serve_with(rpc::stdio::stdin(), rpc::stdio::stdout(), config);
        tokio::select! {
            () = agent => {}
            () = terminated() => tracing::info!("terminated by signal"),
        }
    });
    // Every command and server we started dies with us, whatever state it is in.
    acp_coder::tools::process::kill_all_children();
    // Blocking stdin reads keep a runtime thread busy; don't wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    tracing::info!("exit");
    Ok(())
}

/// SIGTERM or SIGINT: shut down like at end of input.
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

fn init_logging(cli: &Cli) -> anyhow::Result<Option<tracing_appender::non_blocking::WorkerGuard>> {
    let file_filter = EnvFilter::try_new(&cli.log_level).with_context(|| {
        format!(
            "--log-level / ACP_CODER_LOG: {:?} is not a valid level or filter",
            cli.log_level
        )
    })?;
    let stderr_layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(tracing_subscriber::filter::LevelFilter::WARN);
    let writer = match &cli.log_file {
        Some(path) => {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create log directory {}", dir.display()))?;
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open log file {}", path.display()))?;
            Some(log_writer(file))
        }
        None => {
            let dir = config::state_home().join("acp-coder").join("logs");
            match std::fs::create_dir_all(&dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| {
                    tracing_appender::rolling::Builder::new()
                        .rotation(tracing_appender::rolling::Rotation::DAILY)
                        .filename_prefix("acp-coder")
                        .filename_suffix("log")
                        .max_log_files(7)
                        .build(&dir)
                        .map_err(anyhow::Error::from)
                }) {
                Ok(appender) => Some(log_writer(appender)),
                Err(e) => {
                    eprintln!(
                        "acp-coder: logging to stderr only: cannot write logs in {}: {e}",
                        dir.display()
                    );
                    None
                }
            }
        }
    };
    let registry = tracing_subscriber::registry().with(stderr_layer);
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
    tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(4096)
        .finish(w)
}

use tracing_subscriber::Layer as _;
