//! stdio servers (MCP 2025-11-25 "Transports: stdio"): the agent spawns the
//! server and speaks newline-delimited JSON-RPC over its stdin/stdout.
//!
//! Each server runs in its **own process group** (registered with
//! [`crate::tools::process`], so agent exit kills it whatever happens), with
//! the agent's environment minus its secrets plus the configured `env`, and
//! its stderr read line by line into our log (never our stderr, never our
//! stdout, which carries ACP frames). Stopping it signals the whole group, so
//! wrappers (`sh -c`, `npx`, `uvx`) and whatever they started go too.
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::tools::process::{Signal, kill_group, register_group, signal_name, unregister_group};

use super::McpError;

/// After `SIGTERM`, how long the server gets to exit before `SIGKILL`.
const TERM_GRACE: Duration = Duration::from_millis(1000);
/// stderr lines kept for error reports.
const STDERR_TAIL: usize = 20;
/// Longer stderr lines are cut in the log.
const STDERR_LINE_MAX: usize = 2000;

/// A running stdio server process (the leader of its own process group).
pub struct StdioChild {
    name: String,
    pid: i32,
    child: tokio::sync::Mutex<Option<Child>>,
    /// Set once the group was killed and unregistered.
    reaped: Mutex<Option<String>>,
    stderr_tail: StderrTail,
    /// True once stderr reached EOF (every line is in `stderr_tail`).
    stderr_done: tokio::sync::watch::Receiver<bool>,
}

/// Spawns `command args` for server `name` in directory `cwd`.
pub fn spawn(
    name: &str,
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    secret_env: &[String],
) -> Result<(StdioChild, tokio::io::DuplexStream, ChildStdin), McpError> {
    let spawn_error = |source| McpError::Spawn {
        command: command.to_owned(),
        source,
    };
    let mut child = server_command(command, args, env, cwd, secret_env)
        .map_err(spawn_error)?
        .spawn()
        .map_err(spawn_error)?;
    let pid = crate::platform::process::adopt(&child).unwrap_or(0);
    register_group(pid);
    // Its lines reach rmcp through a copier that fails a request at once
    // when its answer is over the line limit (`stdio_lines`).
    let stdout = super::stdio_lines::bounded(name, child.stdout.take().expect("piped stdout"));
    let stdin = child.stdin.take().expect("piped stdin");
    let (stderr_tail, stderr_done) = log_stderr(name, child.stderr.take().expect("piped stderr"));
    tracing::info!(server = name, pid, command, "MCP server process started");
    Ok((
        StdioChild {
            name: name.to_owned(),
            pid,
            child: tokio::sync::Mutex::new(Some(child)),
            reaped: Mutex::new(None),
            stderr_tail,
            stderr_done,
        },
        stdout,
        stdin,
    ))
}

/// The server's command: through the agent's launcher (unconfined,
/// `--no-sandbox`) when there is one, which kills the server's group if the
/// agent dies, even by SIGKILL; piped, in its own group, without the
/// agent's secrets, with the configured `env`.
fn server_command(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
    secret_env: &[String],
) -> std::io::Result<Command> {
    let mut cmd = match launched(command, args, env, cwd).transpose()? {
        Some((exe, argv)) => {
            let mut c = Command::new(exe);
            c.args(argv);
            c
        }
        None => {
            let mut c = Command::new(command);
            c.args(args);
            c
        }
    };
    crate::platform::process::new_tree(&mut cmd);
    cmd.current_dir(crate::platform::fs::simplified(cwd))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for k in secret_env {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok(cmd)
}

type StderrTail = std::sync::Arc<Mutex<VecDeque<String>>>;

/// Reads the server's stderr line by line into our log (long lines cut),
/// keeping the last [`STDERR_TAIL`] lines for error reports; the receiver
/// turns true at EOF.
fn log_stderr(
    name: &str,
    stderr: tokio::process::ChildStderr,
) -> (StderrTail, tokio::sync::watch::Receiver<bool>) {
    let tail = StderrTail::default();
    let server = name.to_owned();
    let tail_w = tail.clone();
    let (done_tx, stderr_done) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(mut line)) = lines.next_line().await {
            if line.len() > STDERR_LINE_MAX {
                line.truncate(crate::utf8::floor_boundary(&line, STDERR_LINE_MAX));
                line.push('…');
            }
            tracing::info!(target: "acp_coder::mcp::stderr", server = %server, "{line}");
            let mut t = tail_w.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() == STDERR_TAIL {
                t.pop_front();
            }
            t.push_back(line);
        }
        let _ = done_tx.send(true);
    });
    (tail, stderr_done)
}

/// The launcher's command line for `command args`, after checking that
/// `command` can be found as `execvp` would (so a missing server is still
/// reported as "cannot start" rather than as a launcher that exits 127).
fn launched(
    command: &str,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> Option<std::io::Result<(std::path::PathBuf, Vec<std::ffi::OsString>)>> {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let wrapped = crate::tools::sandbox::wrap(command, &argv, None, Some(std::process::id()))?;
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| std::ffi::OsString::from(v))
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    let found = crate::platform::process::findable(command, &path, cwd);
    Some(if found {
        Ok(wrapped)
    } else {
        Err(crate::platform::process::not_found())
    })
}

/// Whether the group leader has exited (left unreaped), so its pid, which
/// is the group id, cannot be recycled before we reap it.
fn leader_exited(pid: i32) -> bool {
    crate::platform::process::peek_exit(pid).is_some()
}

impl StdioChild {
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Waits up to `limit` for stderr to reach EOF (after the process
    /// ended), so that [`Self::stderr_tail`] has its last words.
    pub async fn stderr_eof(&self, limit: Duration) {
        let mut done = self.stderr_done.clone();
        let _ = tokio::time::timeout(limit, done.wait_for(|d| *d)).await;
    }

    /// The last lines the server wrote to stderr, for error reports.
    pub fn stderr_tail(&self, lines: usize) -> Vec<String> {
        let t = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        t.iter()
            .skip(t.len().saturating_sub(lines))
            .cloned()
            .collect()
    }

    /// Stops the server: `SIGTERM` to its group (unless it already exited),
    /// up to [`TERM_GRACE`] for the leader to exit, then `SIGKILL` to the
    /// group (stragglers included), unregister, reap. Returns how it ended
    /// ("exit status 3", "killed by SIGTERM"). Idempotent.
    pub async fn stop(&self) -> String {
        let mut slot = self.child.lock().await;
        let Some(mut child) = slot.take() else {
            return self
                .reaped
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone()
                .unwrap_or_else(|| "stopped".into());
        };
        if !leader_exited(self.pid) {
            kill_group(self.pid, Signal::Terminate);
            let deadline = tokio::time::Instant::now() + TERM_GRACE;
            while !leader_exited(self.pid) && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        kill_group(self.pid, Signal::Kill);
        unregister_group(self.pid);
        let how = match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
            Ok(Ok(status)) => describe(status),
            Ok(Err(e)) => format!("unknown exit ({e})"),
            Err(_) => "did not exit after SIGKILL".into(),
        };
        tracing::info!(server = %self.name, pid = self.pid, how = %how, "MCP server process ended");
        *self.reaped.lock().unwrap_or_else(|e| e.into_inner()) = Some(how.clone());
        how
    }

    /// Waits up to `limit` for the server to exit by itself (after its
    /// stdout closed), then stops it; returns how it ended.
    pub async fn wait_then_stop(&self, limit: Duration) -> String {
        let deadline = tokio::time::Instant::now() + limit;
        while !leader_exited(self.pid) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.stop().await
    }
}

impl Drop for StdioChild {
    /// The last resort (a session dropped without `shutdown`): kill the group
    /// at once; tokio reaps the leader (`kill_on_drop`).
    fn drop(&mut self) {
        let live = match self.child.try_lock() {
            Ok(slot) => slot.is_some(),
            Err(_) => true,
        };
        if live {
            kill_group(self.pid, Signal::Kill);
            unregister_group(self.pid);
        }
    }
}

fn describe(status: std::process::ExitStatus) -> String {
    use crate::platform::process::{Exit, exit_of};
    match exit_of(status) {
        Some(Exit::Code(c)) => format!("exit status {c}"),
        Some(Exit::Signal(s)) => format!("killed by {}", signal_name(s)),
        None => "ended".into(),
    }
}
