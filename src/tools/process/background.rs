//! Background commands (issue 19 §1): `run_command` with `background: true`
//! starts a command that outlives the tool call and the turn; the model reads
//! it with `command_output` and stops it with `command_kill`, by handle.
//!
//! A job runs either locally ([`super::run_local`]: its own process group,
//! the sandbox launcher, the agent-exit registry) or in an editor terminal
//! (ACP §10 `terminal/*`) when the editor advertised `terminal`. Jobs belong
//! to a session: [`kill_session`] (session/close, session/delete, agent exit)
//! kills every local group and releases every terminal; at most
//! [`limit`] run per session at once.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{CommandResult, CommandSpec, run_local};
use crate::editor::Editor;

/// Default of `max_background_commands`.
pub const DEFAULT_LIMIT: usize = 8;
/// Output kept between two reads of a local job; older output is dropped
/// (and counted) so a chatty server cannot grow the agent's memory.
pub const PENDING_LIMIT: usize = 64 * 1024;
/// A background command runs at most this long (then it is killed like a
/// timed-out command); session close and agent exit end it sooner.
const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Starting returns after this much quiet once output has begun…
pub const START_QUIET: Duration = Duration::from_millis(1000);
/// …or after this long in any case.
pub const START_MAX: Duration = Duration::from_millis(2000);
/// `command_output`'s `wait_ms` ceiling.
pub const MAX_WAIT: Duration = Duration::from_secs(120);
/// Polling period of an editor terminal while waiting for first output.
const TERMINAL_POLL: Duration = Duration::from_millis(200);
/// How long `command_kill` waits for a local job to be gone.
const KILL_WAIT: Duration = Duration::from_secs(3);

static LIMIT: AtomicUsize = AtomicUsize::new(DEFAULT_LIMIT);
static JOBS: LazyLock<Mutex<BTreeMap<String, SessionJobs>>> = LazyLock::new(Default::default);

/// Sets the per-session limit (config `max_background_commands`).
pub fn set_limit(n: usize) {
    LIMIT.store(n.max(1), Ordering::Relaxed);
}

/// The per-session limit in force.
pub fn limit() -> usize {
    LIMIT.load(Ordering::Relaxed)
}

#[derive(Default)]
struct SessionJobs {
    next: u32,
    jobs: BTreeMap<String, Arc<Job>>,
}

fn jobs() -> MutexGuard<'static, BTreeMap<String, SessionJobs>> {
    JOBS.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(
        "this session already runs {0} background commands (the limit, config key `max_background_commands`); stop one with command_kill or wait for one to end (command_output), then retry"
    )]
    Limit(usize),
    #[error(
        "there is no background command {0:?} in this session (it was killed, or the session was restarted); run_command with background: true starts a new one"
    )]
    Unknown(String),
    #[error("{0}")]
    Failed(String),
}

/// One background command.
pub struct Job {
    pub handle: String,
    pub command: String,
    pub cwd: PathBuf,
    started: Instant,
    backend: Backend,
}

enum Backend {
    Local {
        state: Arc<Mutex<LocalState>>,
        notify: Arc<Notify>,
        cancel: CancellationToken,
    },
    Terminal {
        editor: Editor,
        id: String,
        seen: tokio::sync::Mutex<Seen>,
    },
}

#[derive(Default)]
struct LocalState {
    pending: String,
    dropped: u64,
    done: Option<CommandResult>,
}

/// How far the model has read an editor terminal's output.
#[derive(Default)]
struct Seen {
    consumed: usize,
    tail: String,
    exit: Option<(Option<i64>, Option<String>)>,
}

/// What one read of a job returns.
#[derive(Debug, Clone, Default)]
pub struct Chunk {
    pub output: String,
    /// Bytes printed since the last read that are not in `output`.
    pub dropped: u64,
    /// The editor's terminal dropped output, amount unknown.
    pub dropped_unknown: bool,
    pub running: bool,
    pub exit_code: Option<i64>,
    pub signal: Option<String>,
}

/// A line for `/status`.
pub struct Listed {
    pub handle: String,
    pub command: String,
    pub running: bool,
    pub age: Duration,
    pub terminal: bool,
}

fn reserve(session: &str) -> Result<String, JobError> {
    let mut all = jobs();
    let s = all.entry(session.to_owned()).or_default();
    let running = s.jobs.values().filter(|j| j.running_now()).count();
    let limit = limit();
    if running >= limit {
        return Err(JobError::Limit(limit));
    }
    s.next += 1;
    Ok(format!("bg{}", s.next))
}

fn insert(session: &str, job: Arc<Job>) {
    // Editor writes beneath a root are made locally while a job runs.
    crate::editor::watch_background(any_running);
    jobs()
        .entry(session.to_owned())
        .or_default()
        .jobs
        .insert(job.handle.clone(), job);
}

/// Looks a job up.
pub fn get(session: &str, handle: &str) -> Result<Arc<Job>, JobError> {
    jobs()
        .get(session)
        .and_then(|s| s.jobs.get(handle.trim()).cloned())
        .ok_or_else(|| JobError::Unknown(handle.to_owned()))
}

/// The session's jobs, oldest first.
pub fn list(session: &str) -> Vec<Listed> {
    let jobs: Vec<Arc<Job>> = jobs()
        .get(session)
        .map(|s| s.jobs.values().cloned().collect())
        .unwrap_or_default();
    let mut out: Vec<Listed> = jobs
        .iter()
        .map(|j| Listed {
            handle: j.handle.clone(),
            command: j.command.clone(),
            running: j.running_now(),
            age: j.started.elapsed(),
            terminal: matches!(j.backend, Backend::Terminal { .. }),
        })
        .collect();
    out.sort_by_key(|l| std::cmp::Reverse(l.age));
    out
}

/// Whether a job of any session is running now: editor writes beneath a
/// root are then made locally (`editor::files::gate`, issue 42 item 9,
/// which asks through [`crate::editor::watch_background`]).
pub fn any_running() -> bool {
    jobs()
        .values()
        .any(|s| s.jobs.values().any(|j| j.running_now()))
}

/// Kills every job of `session` (whole process groups; editor terminals are
/// released, which kills their command, ACP §10) and forgets them. For
/// session/close, session/delete and agent exit; never blocks.
pub fn kill_session(session: &str) {
    let Some(s) = jobs().remove(session) else {
        return;
    };
    for job in s.jobs.into_values() {
        tracing::debug!(session, handle = %job.handle, "killing background command");
        job.stop_now();
    }
}

/// Stops every running job of `session` (a mode that allows no command was
/// chosen) and returns their commands; the jobs stay listed, so that
/// `command_output` shows how they ended.
pub fn stop_running(session: &str) -> Vec<String> {
    let jobs: Vec<Arc<Job>> = jobs()
        .get(session)
        .map(|s| s.jobs.values().cloned().collect())
        .unwrap_or_default();
    let mut stopped = Vec::new();
    for job in jobs.iter().filter(|j| j.running_now()) {
        tracing::info!(session, handle = %job.handle, "stopping background command");
        job.stop_now();
        stopped.push(job.command.clone());
    }
    stopped
}

/// [`kill_session`] for every session (agent exit).
pub fn kill_all() {
    let sessions: Vec<String> = jobs().keys().cloned().collect();
    for s in sessions {
        kill_session(&s);
    }
}

/// Starts `spec` locally; returns once it has printed its first output (see
/// [`START_QUIET`]) or ended.
pub async fn start_local(
    session: &str,
    mut spec: CommandSpec,
) -> Result<(Arc<Job>, Chunk), JobError> {
    let handle = reserve(session)?;
    spec.timeout = LIFETIME;
    spec.output_limit = 0;
    let state = Arc::new(Mutex::new(LocalState::default()));
    let notify = Arc::new(Notify::new());
    let cancel = CancellationToken::new();
    let job = Arc::new(Job {
        handle,
        command: spec.command.clone(),
        cwd: spec.cwd.clone(),
        started: Instant::now(),
        backend: Backend::Local {
            state: state.clone(),
            notify: notify.clone(),
            cancel: cancel.clone(),
        },
    });
    insert(session, job.clone());
    let (sink_state, sink_notify) = (state.clone(), notify.clone());
    let command = spec.command.clone();
    tokio::spawn(async move {
        let result = run_local(spec, cancel, move |chunk: &str| {
            push_bounded(&mut lock(&sink_state), chunk);
            sink_notify.notify_waiters();
        })
        .await;
        let done = match result {
            Ok(r) => r,
            Err(e) => {
                let mut st = lock(&state);
                st.pending.push_str(&format!("[{e}]\n"));
                CommandResult {
                    exit_code: Some(127),
                    ..CommandResult::default()
                }
            }
        };
        tracing::debug!(%command, exit = ?done.exit_code, "background command ended");
        lock(&state).done = Some(done);
        notify.notify_waiters();
    });
    let chunk = job.first_output().await;
    Ok((job, chunk))
}

/// What `terminal/create` starts: the program, its arguments, and
/// variables set for it (on Windows they may carry the command text).
pub type TerminalArgv = (String, Vec<String>, Vec<crate::acp::session::NameValue>);

/// Starts `argv` in an editor terminal (the caller embeds the terminal in
/// its tool call); returns like [`start_local`].
pub async fn start_terminal(
    session: &str,
    editor: &Editor,
    command: &str,
    argv: TerminalArgv,
    cwd: PathBuf,
    output_limit: u64,
) -> Result<(Arc<Job>, Chunk), JobError> {
    let handle = reserve(session)?;
    let (program, args, env) = argv;
    let id = editor
        .terminal_create(&program, args, env, &cwd, output_limit)
        .await
        .map_err(|e| {
            JobError::Failed(format!(
                "the editor could not start a terminal: {}",
                e.message
            ))
        })?;
    let job = Arc::new(Job {
        handle,
        command: command.to_owned(),
        cwd,
        started: Instant::now(),
        backend: Backend::Terminal {
            editor: editor.clone(),
            id,
            seen: tokio::sync::Mutex::new(Seen::default()),
        },
    });
    insert(session, job.clone());
    let chunk = job.first_output().await;
    Ok((job, chunk))
}

/// Waits up to `wait` for a local job to end (returns as soon as it does).
async fn wait_done(state: &Mutex<LocalState>, notify: &Notify, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        // Registered before the check, so an end in between still wakes us.
        let changed = notify.notified();
        if lock(state).done.is_some() {
            return;
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return;
        }
    }
}

/// Kills one job and forgets it; returns its last output and status.
pub async fn kill(session: &str, handle: &str) -> Result<Chunk, JobError> {
    let job = get(session, handle)?;
    if let Some(s) = jobs().get_mut(session) {
        s.jobs.remove(&job.handle);
    }
    let chunk = match &job.backend {
        Backend::Local {
            cancel,
            notify,
            state,
        } => {
            cancel.cancel();
            wait_done(state, notify, KILL_WAIT).await;
            job.take_local()
        }
        Backend::Terminal { editor, id, .. } => {
            let _ = editor.terminal_kill(id).await;
            let mut chunk = job.read_terminal().await;
            if let Err(e) = editor.terminal_release(id).await {
                tracing::warn!(terminal = %id, error = %e.message, "terminal/release failed");
            }
            chunk.running = false;
            chunk
        }
    };
    Ok(chunk)
}

/// The output since the last read, after waiting up to `wait` for the job to
/// end (returns early when it does).
pub async fn read(session: &str, handle: &str, wait: Duration) -> Result<Chunk, JobError> {
    let job = get(session, handle)?;
    let wait = wait.min(MAX_WAIT);
    match &job.backend {
        Backend::Local { state, notify, .. } => {
            wait_done(state, notify, wait).await;
            Ok(job.take_local())
        }
        Backend::Terminal { editor, id, .. } => {
            if !wait.is_zero() {
                let _ = tokio::time::timeout(wait, editor.terminal_wait_for_exit(id)).await;
            }
            Ok(job.read_terminal().await)
        }
    }
}

/// Forgets a job that has ended and been read to the end (its handle stops
/// counting against nothing; it is kept only for `/status` otherwise).
pub async fn forget_if_done(session: &str, job: &Job, chunk: &Chunk) {
    if chunk.running {
        return;
    }
    if let Some(s) = jobs().get_mut(session) {
        s.jobs.remove(&job.handle);
    }
    if let Backend::Terminal { editor, id, .. } = &job.backend
        && let Err(e) = editor.terminal_release(id).await
    {
        tracing::warn!(terminal = %id, error = %e.message, "terminal/release failed");
    }
}

impl Job {
    /// The editor terminal's id, if the job runs in one.
    pub fn terminal_id(&self) -> Option<&str> {
        match &self.backend {
            Backend::Terminal { id, .. } => Some(id),
            Backend::Local { .. } => None,
        }
    }

    fn running_now(&self) -> bool {
        match &self.backend {
            Backend::Local { state, .. } => lock(state).done.is_none(),
            Backend::Terminal { seen, .. } => seen.try_lock().map_or(true, |s| s.exit.is_none()),
        }
    }

    fn stop_now(&self) {
        match &self.backend {
            Backend::Local { cancel, .. } => cancel.cancel(),
            Backend::Terminal { editor, id, .. } => {
                let (editor, id) = (editor.clone(), id.clone());
                tokio::spawn(async move {
                    if let Err(e) = editor.terminal_release(&id).await {
                        tracing::debug!(terminal = %id, error = %e.message, "terminal/release failed");
                    }
                });
            }
        }
    }

    async fn first_output(&self) -> Chunk {
        let start = tokio::time::Instant::now();
        let end = start + START_MAX;
        match &self.backend {
            Backend::Local { state, notify, .. } => loop {
                let changed = notify.notified();
                {
                    let st = lock(state);
                    if st.done.is_some() {
                        break;
                    }
                }
                let quiet_end = (tokio::time::Instant::now() + START_QUIET).min(end);
                let has_output = !lock(state).pending.is_empty();
                let until = if has_output { quiet_end } else { end };
                if tokio::time::timeout_at(until, changed).await.is_err() {
                    break;
                }
            },
            Backend::Terminal { editor, id, .. } => {
                let mut last_len = 0;
                let mut last_change = start;
                loop {
                    let out = match editor.terminal_output(id).await {
                        Ok(o) => o,
                        Err(_) => break,
                    };
                    if out.exit_status.is_some() {
                        break;
                    }
                    let now = tokio::time::Instant::now();
                    if out.output.len() != last_len {
                        last_len = out.output.len();
                        last_change = now;
                    } else if last_len > 0 && now >= last_change + START_QUIET {
                        break;
                    }
                    if now + TERMINAL_POLL > end {
                        break;
                    }
                    tokio::time::sleep(TERMINAL_POLL).await;
                }
            }
        }
        match &self.backend {
            Backend::Local { .. } => self.take_local(),
            Backend::Terminal { .. } => self.read_terminal().await,
        }
    }

    fn take_local(&self) -> Chunk {
        let Backend::Local { state, .. } = &self.backend else {
            return Chunk::default();
        };
        let mut st = lock(state);
        let mut chunk = Chunk {
            output: std::mem::take(&mut st.pending),
            dropped: std::mem::take(&mut st.dropped),
            running: st.done.is_none(),
            ..Chunk::default()
        };
        if let Some(done) = &st.done {
            chunk.exit_code = done.exit_code.map(i64::from);
            chunk.signal = done.signal.clone();
            if done.cancelled && chunk.signal.is_none() && chunk.exit_code.is_none() {
                chunk.signal = Some("SIGTERM".into());
            }
        }
        chunk
    }

    async fn read_terminal(&self) -> Chunk {
        let Backend::Terminal { editor, id, seen } = &self.backend else {
            return Chunk::default();
        };
        let mut seen = seen.lock().await;
        let out = match editor.terminal_output(id).await {
            Ok(o) => o,
            Err(e) => {
                return Chunk {
                    output: format!("[could not read the terminal's output: {}]", e.message),
                    running: seen.exit.is_none(),
                    exit_code: seen.exit.as_ref().and_then(|e| e.0),
                    signal: seen.exit.as_ref().and_then(|e| e.1.clone()),
                    ..Chunk::default()
                };
            }
        };
        let (new, unknown) = since(&out.output, out.truncated, &seen);
        seen.consumed = out.output.len();
        seen.tail = crate::utf8::tail(&out.output, 256).to_owned();
        if let Some(status) = &out.exit_status {
            seen.exit = Some((status.exit_code, status.signal.clone()));
        }
        let mut chunk = Chunk {
            output: new,
            dropped_unknown: unknown,
            running: seen.exit.is_none(),
            exit_code: seen.exit.as_ref().and_then(|e| e.0),
            signal: seen.exit.as_ref().and_then(|e| e.1.clone()),
            ..Chunk::default()
        };
        chunk.dropped += keep_last(&mut chunk.output, PENDING_LIMIT);
        chunk
    }
}

/// The part of a terminal's `output` the model has not seen. The editor
/// truncates from the start (ACP §10), so after truncation the last text
/// returned is looked for; when it is gone too, everything is new and some
/// output was lost (`true`).
fn since(output: &str, truncated: bool, seen: &Seen) -> (String, bool) {
    if seen.consumed == 0 {
        return (output.to_owned(), truncated);
    }
    if !truncated
        && output.len() >= seen.consumed
        && output.is_char_boundary(seen.consumed)
        && output[..seen.consumed].ends_with(&seen.tail)
    {
        return (output[seen.consumed..].to_owned(), false);
    }
    if !seen.tail.is_empty()
        && let Some(at) = output.rfind(&seen.tail)
    {
        return (output[at + seen.tail.len()..].to_owned(), false);
    }
    // The output now starts inside the text last returned.
    let tail = seen.tail.as_str();
    for k in (MIN_OVERLAP.min(tail.len()).max(1)..tail.len()).rev() {
        let cut = tail.len() - k;
        if tail.is_char_boundary(cut) && output.starts_with(&tail[cut..]) {
            return (output[k..].to_owned(), false);
        }
    }
    (output.to_owned(), true)
}

/// Shortest overlap with the last text returned that counts as a match.
const MIN_OVERLAP: usize = 4;

fn push_bounded(st: &mut LocalState, chunk: &str) {
    st.pending.push_str(chunk);
    st.dropped += keep_last(&mut st.pending, PENDING_LIMIT);
}

/// Drops the start of `s` so at most its last `limit` bytes remain (whole
/// characters); returns how many bytes were dropped.
fn keep_last(s: &mut String, limit: usize) -> u64 {
    let cut = s.len() - crate::utf8::tail(s, limit).len();
    s.drain(..cut);
    cut as u64
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
#[path = "background_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "background_timer_tests.rs"]
mod timer_tests;
