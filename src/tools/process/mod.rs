//! Local command runner for the model-facing `run_command` tool (used when the
//! editor does not offer terminals), and the registry of process groups that
//! guarantees no child process outlives the agent.
//!
//! # Process-group lifecycle
//!
//! Every command runs as `sh -c <command>` in its **own process group** (the
//! group id is the shell's pid), with stdin from `/dev/null` and stdout/stderr
//! piped (the agent's stdout carries protocol frames and is never inherited).
//! The group is registered in a global registry so that [`kill_all_children`]
//! reaches it at agent exit.
//!
//! * **Normal exit.** When the shell exits, the readers get
//!   [`EXIT_DRAIN_GRACE`] to see EOF on both pipes (output that was already
//!   written is never lost: it stays in the pipe after its writers die). Then
//!   the whole group is `SIGKILL`ed, *always*: background jobs the command
//!   left behind (`server &`, `sleep 30 >/dev/null &`) do not outlive the
//!   command. Long-running servers must be started through the editor's
//!   terminals or a dedicated tool; a model that backgrounds a process in a
//!   one-shot command would otherwise leak it silently, possibly holding the
//!   pipes open and hanging the tool.
//! * **Timeout.** `SIGTERM` to the group, up to [`TERM_GRACE`] for the shell to
//!   exit and the pipes to close (so that e.g. `git` removes its lock files),
//!   then `SIGKILL` to the group.
//! * **Cancel.** `SIGTERM` to the group, then at most [`CANCEL_RETURN`] waiting
//!   for everything to be gone; if it is, the result carries the real exit
//!   status, otherwise the result is returned right away and a background task
//!   finishes the job (`SIGKILL` at [`TERM_GRACE`] after the `SIGTERM`, reap).
//! * **Dropped future.** If the `run_local` future is dropped midway, the
//!   group is `SIGKILL`ed and tokio reaps the shell.
//!
//! The group leader (the shell) is reaped only *after* the last signal to its
//! group has been sent: its pid, which is also the group id, cannot be
//! recycled by the kernel before that, so a late `killpg` never hits an
//! unrelated process group. Exit is detected with `waitid(WNOWAIT)`, which
//! leaves the zombie in place.
//!
//! Processes that leave the group on purpose (`setsid`, daemons) are out of
//! reach; if they keep the pipes open the runner stops reading after the
//! grace periods and returns anyway.

pub mod background;
mod ending;
mod exit;
mod output;
mod registry;
// Process groups, signals and `sh`: these tests are Unix's by nature.
#[cfg(all(test, unix))]
mod tests;

pub use crate::platform::process::Signal;
pub use exit::signal_name;
pub use registry::{kill_all_children, kill_group, register_group, unregister_group};

use exit::{ExitInfo, Status, peek_exit};
use output::Output;

use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use crate::platform::process::ChildExits;
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;

/// After `SIGTERM` (timeout or cancel), how long the group gets before `SIGKILL`.
pub const TERM_GRACE: Duration = Duration::from_millis(500);
/// After cancel, how long `run_local` waits for the group to be gone before
/// returning anyway (the `SIGKILL` follow-up then happens in the background).
pub const CANCEL_RETURN: Duration = Duration::from_millis(30);
/// After the shell exited normally, how long readers get to reach EOF before
/// the group is killed.
pub const EXIT_DRAIN_GRACE: Duration = Duration::from_millis(200);
/// After the final `SIGKILL`, how long readers get to reach EOF.
const POST_KILL_DRAIN: Duration = Duration::from_millis(100);
/// After the final `SIGKILL`, how long to wait for the shell to die (it only
/// takes long when it sits in uninterruptible sleep, e.g. on a dead NFS mount).
const KILL_WAIT: Duration = Duration::from_secs(2);
/// Streaming: `on_output` is called at most this often…
const FLUSH_INTERVAL: Duration = Duration::from_millis(50);
/// …unless this many bytes are pending.
const FLUSH_BYTES: usize = 8 * 1024;
/// Size of each pipe read.
const READ_CHUNK: usize = 16 * 1024;
/// Exit is detected through `SIGCHLD`; this is only a safety net.
const EXIT_POLL: Duration = Duration::from_millis(500);
/// Exit polling period when no `SIGCHLD` listener could be installed.
const EXIT_POLL_NO_SIGNAL: Duration = Duration::from_millis(20);

/// What to run.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// A shell line, run with `sh -c`.
    pub command: String,
    /// Working directory; must exist.
    pub cwd: PathBuf,
    /// Variables set on top of the inherited environment (they win over
    /// `env_remove`).
    pub env: Vec<(String, String)>,
    /// Variables stripped from the inherited environment (secrets).
    pub env_remove: Vec<String>,
    /// Wall-clock limit; on expiry the group gets `SIGTERM`, then `SIGKILL`.
    pub timeout: Duration,
    /// Bytes of output kept; the *tail* is kept.
    pub output_limit: usize,
    /// Confine the command ([`crate::tools::sandbox`]); `None` runs it
    /// unconfined (still through the launcher, which kills it with the agent).
    pub sandbox: Option<crate::tools::sandbox::Policy>,
    /// What the command reads on stdin (then closed); `None`: `/dev/null`.
    pub stdin: Option<Vec<u8>>,
}

/// How a command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandResult {
    /// Exit code of the shell, if it exited normally.
    pub exit_code: Option<i32>,
    /// Name of the signal that killed the shell (`"SIGKILL"`, `"SIGSEGV"`, …).
    pub signal: Option<String>,
    /// stdout and stderr interleaved in arrival order, lossy UTF-8, last
    /// `output_limit` bytes at most (cut at a char boundary).
    pub output: String,
    /// How many bytes (of the lossy UTF-8 text) were dropped from the start.
    pub truncated_bytes: u64,
    /// stdout alone and stderr alone (their last `output_limit` bytes each).
    pub stdout: String,
    pub stderr: String,
    /// The timeout expired and the command was killed.
    pub timed_out: bool,
    /// The cancellation token fired and the command was killed.
    pub cancelled: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The shell could not be started.
    #[error("cannot run `{command}` in {}: {source}", cwd.display())]
    Spawn {
        command: String,
        cwd: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Waiting for the shell failed (should not happen).
    #[error("lost track of `{command}`: {source}")]
    Wait {
        command: String,
        #[source]
        source: io::Error,
    },
}

// ---------------------------------------------------------------------------
// Runner.
// ---------------------------------------------------------------------------

/// Run `spec.command` with `sh -c`, streaming output to `on_output` (coalesced:
/// at most every ~50 ms or 8 KiB; it sees all output, untruncated) and
/// returning the tail of it. See the module docs for the kill policy.
///
/// Errors only when the shell cannot be started (missing working directory,
/// …); timeouts and cancellation are reported in the [`CommandResult`].
pub async fn run_local(
    spec: CommandSpec,
    cancel: CancellationToken,
    mut on_output: impl FnMut(&str) + Send,
) -> Result<CommandResult, ProcessError> {
    if cancel.is_cancelled() {
        return Ok(CommandResult {
            cancelled: true,
            ..CommandResult::default()
        });
    }
    check_cwd(&spec)?;
    let sink: &mut (dyn FnMut(&str) + Send) = &mut on_output;
    let mut run = Run::spawn(&spec)?;
    let start = Instant::now();
    let timeout_at = start
        .checked_add(spec.timeout)
        .unwrap_or_else(|| start + Duration::from_secs(100 * 365 * 86_400));
    let mut result = CommandResult::default();
    match run
        .pump(timeout_at, Until::Exited, Some(&cancel), sink)
        .await
    {
        Event::Done => run.end_after_exit(sink).await,
        Event::Deadline => {
            result.timed_out = true;
            run.end_after_timeout(sink).await;
        }
        Event::Cancelled => {
            result.cancelled = true;
            let term_at = Instant::now();
            if !run.end_after_cancel(term_at, sink).await {
                return Ok(run.answer_then_reap(result, term_at, sink));
            }
        }
    }
    run.report(result, &spec.command, start, sink)
}

/// The command line as run: through the agent's launcher when there is one
/// (the sandbox, and a supervisor that kills the group when the agent dies,
/// even by SIGKILL), else the system's shell (`sh -c`); in its own process group.
fn command_for(spec: &CommandSpec) -> Command {
    let (shell, shell_args) = crate::platform::process::shell();
    let argv = shell_args.to_vec();
    let mut cmd = match crate::tools::sandbox::wrap(
        shell,
        &argv,
        spec.sandbox.as_ref(),
        Some(std::process::id()),
    ) {
        Some((exe, args)) => {
            let mut c = Command::new(exe);
            c.args(args);
            c
        }
        None => {
            let mut c = Command::new(shell);
            c.args(argv);
            c
        }
    };
    crate::platform::process::push_shell_text(&mut cmd, &spec.command);
    crate::platform::process::new_tree(&mut cmd);
    let stdin = match spec.stdin {
        Some(_) => Stdio::piped(),
        None => Stdio::null(),
    };
    cmd.current_dir(crate::platform::fs::simplified(&spec.cwd))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for key in &spec.env_remove {
        cmd.env_remove(key);
    }
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    cmd
}

fn check_cwd(spec: &CommandSpec) -> Result<(), ProcessError> {
    let problem = match std::fs::metadata(&spec.cwd) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => io::Error::new(
            io::ErrorKind::NotADirectory,
            "the working directory is not a directory",
        ),
        Err(err) if err.kind() == io::ErrorKind::NotFound => io::Error::new(
            io::ErrorKind::NotFound,
            "the working directory does not exist",
        ),
        Err(err) => io::Error::new(
            err.kind(),
            format!("the working directory is not accessible: {err}"),
        ),
    };
    Err(ProcessError::Spawn {
        command: spec.command.clone(),
        cwd: spec.cwd.clone(),
        source: problem,
    })
}

fn set_status(result: &mut CommandResult, status: Option<Status>) {
    match status {
        Some(Status::Code(code)) => result.exit_code = Some(code),
        Some(Status::Signal(sig)) => result.signal = Some(signal_name(sig)),
        None => {}
    }
}

/// The process group and its leader. Dropping it before the leader was
/// reaped kills the whole group.
struct Group {
    child: Child,
    pgid: i32,
    /// Once the leader is reaped its pid (= our pgid) may be recycled: no more
    /// signals after that.
    reaped: bool,
}

impl Group {
    fn signal(&self, signal: Signal) {
        if !self.reaped {
            kill_group(self.pgid, signal);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.reaped {
            kill_group(self.pgid, Signal::Kill);
        }
        unregister_group(self.pgid);
        // `Child` then SIGKILLs the leader (kill_on_drop) and tokio reaps it.
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    Exited,
    Eof,
    ExitedAndEof,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// The `Until` condition holds.
    Done,
    Deadline,
    Cancelled,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Stream {
    Out = 0,
    Err = 1,
}

struct Run {
    group: Group,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
    sigchld: Option<ChildExits>,
    exit: Option<ExitInfo>,
    output: Output,
}

impl Run {
    /// Starts the command and registers its group.
    fn spawn(spec: &CommandSpec) -> Result<Run, ProcessError> {
        // Listen for SIGCHLD before spawning so that no exit notification is missed.
        let sigchld = match crate::platform::process::child_exits() {
            Ok(s) => Some(s),
            Err(err) => {
                tracing::debug!(%err, "no child-exit listener; polling for child exit");
                None
            }
        };
        let mut child = command_for(spec)
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                command: spec.command.clone(),
                cwd: spec.cwd.clone(),
                source,
            })?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        if let (Some(bytes), Some(mut pipe)) = (spec.stdin.clone(), child.stdin.take()) {
            // Written beside the pump; closed after, so the command sees
            // EOF. A command that exits without reading it is no error.
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt as _;
                if let Err(e) = pipe.write_all(&bytes).await {
                    tracing::debug!(error = %e, "command stdin not fully written");
                }
            });
        }
        let Some(pid) = crate::platform::process::adopt(&child) else {
            return Err(ProcessError::Wait {
                command: spec.command.clone(),
                source: io::Error::other("child has no pid right after spawn"),
            });
        };
        register_group(pid);
        tracing::debug!(pid, command = %spec.command, "spawned");
        Ok(Run {
            group: Group {
                child,
                pgid: pid,
                reaped: false,
            },
            stdout,
            stderr,
            out_buf: vec![0; READ_CHUNK],
            err_buf: vec![0; READ_CHUNK],
            sigchld,
            exit: None,
            output: Output::new(spec.output_limit),
        })
    }

    fn eof(&self) -> bool {
        self.stdout.is_none() && self.stderr.is_none()
    }

    /// Read output and watch for the shell's exit until `until` holds, the
    /// deadline passes, or `cancel` fires.
    async fn pump(
        &mut self,
        deadline: Instant,
        until: Until,
        cancel: Option<&CancellationToken>,
        sink: &mut (dyn FnMut(&str) + Send),
    ) -> Event {
        let exit_poll = if self.sigchld.is_some() {
            EXIT_POLL
        } else {
            EXIT_POLL_NO_SIGNAL
        };
        loop {
            if self.exit.is_none() && !self.group.reaped {
                self.exit = peek_exit(self.group.pgid);
            }
            let done = match until {
                Until::Exited => self.exit.is_some(),
                Until::Eof => self.eof(),
                Until::ExitedAndEof => self.exit.is_some() && self.eof(),
            };
            if done {
                return Event::Done;
            }
            if Instant::now() >= deadline {
                return Event::Deadline;
            }
            let flush_at = self.output.flush_at();
            let waiting_exit = self.exit.is_none();
            tokio::select! {
                r = read_some(&mut self.stdout, &mut self.out_buf) => {
                    self.on_read(Stream::Out, r, sink);
                }
                r = read_some(&mut self.stderr, &mut self.err_buf) => {
                    self.on_read(Stream::Err, r, sink);
                }
                _ = next_signal(&mut self.sigchld), if waiting_exit => {}
                _ = sleep(exit_poll), if waiting_exit => {}
                _ = sleep_until(flush_at.unwrap_or(deadline)), if flush_at.is_some() => {
                    self.output.flush(sink);
                }
                _ = sleep_until(deadline) => {}
                _ = cancelled(cancel) => return Event::Cancelled,
            }
        }
    }

    fn on_read(
        &mut self,
        stream: Stream,
        read: io::Result<usize>,
        sink: &mut (dyn FnMut(&str) + Send),
    ) {
        let (pipe_open, buf) = match stream {
            Stream::Out => (self.stdout.is_some(), &self.out_buf),
            Stream::Err => (self.stderr.is_some(), &self.err_buf),
        };
        debug_assert!(pipe_open);
        let eof = match read {
            Ok(0) => true,
            Ok(n) => {
                self.output.push(stream, &buf[..n]);
                false
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => false,
            Err(err) => {
                tracing::warn!(%err, ?stream, "reading command output failed");
                true
            }
        };
        if eof {
            self.output.end(stream);
            match stream {
                Stream::Out => self.stdout = None,
                Stream::Err => self.stderr = None,
            }
        }
        if self.output.flush_due() {
            self.output.flush(sink);
        }
    }

    /// Final step: unregister, then reap the leader if it has exited. Must be
    /// called after the last signal to the group.
    fn finish(&mut self) -> io::Result<Option<ExitStatus>> {
        unregister_group(self.group.pgid);
        if self.exit.is_none() {
            // Still running (e.g. stuck in uninterruptible sleep): leave it to
            // `Group::drop` + tokio's orphan reaper.
            return Ok(None);
        }
        let status = self.group.child.try_wait();
        self.group.reaped = true;
        status
    }
}

async fn read_some<R: AsyncRead + Unpin>(
    pipe: &mut Option<R>,
    buf: &mut [u8],
) -> io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => std::future::pending().await,
    }
}

async fn next_signal(slot: &mut Option<ChildExits>) {
    let closed = match slot {
        Some(signal) => signal.recv().await.is_none(),
        None => true,
    };
    if closed {
        // Signal driver gone (runtime shutting down): rely on polling.
        *slot = None;
        std::future::pending::<()>().await;
    }
}

async fn cancelled(cancel: Option<&CancellationToken>) {
    match cancel {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}
