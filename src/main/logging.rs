//! Logging: the daily (or `--log-file`) file through the one redactor, and
//! warnings on stderr.
use anyhow::Context;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use acp_coder::config;

use crate::args::GlobalArgs;

pub(crate) fn init_logging(
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
        .owner_only()
        .open(path)
        .with_context(|| format!("cannot open log file {}", path.display()))
}

/// The default log: a daily file in `$XDG_STATE_HOME/acp-coder/logs`, seven
/// kept. `None` (stderr only, said once) when that folder is not writable.
fn daily_log() -> Option<tracing_appender::rolling::RollingFileAppender> {
    let dir = config::state_home().join("acp-coder").join("logs");
    let appender = std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
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

use acp_coder::platform::fs::OwnerOnly as _;
