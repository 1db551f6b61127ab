//! How a command's run ends: after it exits, at its timeout, or on cancel
//! (`SIGTERM`, a grace period, `SIGKILL`; see the module docs), and the
//! result it reports.
use tokio::time::Instant;

use super::Signal;
use super::exit::ExitInfo;
use super::output::Output;
use super::{
    CANCEL_RETURN, CommandResult, EXIT_DRAIN_GRACE, Event, KILL_WAIT, POST_KILL_DRAIN,
    ProcessError, Run, TERM_GRACE, Until, set_status,
};

impl Run {
    /// The command exited: its last output, then background leftovers die
    /// with it (see the module docs).
    pub(super) async fn end_after_exit(&mut self, sink: &mut (dyn FnMut(&str) + Send)) {
        self.pump(Instant::now() + EXIT_DRAIN_GRACE, Until::Eof, None, sink)
            .await;
        self.group.signal(Signal::Kill);
        self.pump(Instant::now() + POST_KILL_DRAIN, Until::Eof, None, sink)
            .await;
    }

    /// The timeout passed: `SIGTERM`, a grace period, `SIGKILL`.
    pub(super) async fn end_after_timeout(&mut self, sink: &mut (dyn FnMut(&str) + Send)) {
        tracing::debug!(pid = self.group.pgid, "timed out: SIGTERM");
        self.group.signal(Signal::Terminate);
        self.pump(Instant::now() + TERM_GRACE, Until::ExitedAndEof, None, sink)
            .await;
        self.group.signal(Signal::Kill);
        self.pump(Instant::now() + KILL_WAIT, Until::Exited, None, sink)
            .await;
        self.pump(Instant::now() + POST_KILL_DRAIN, Until::Eof, None, sink)
            .await;
    }

    /// Cancelled: `SIGTERM`, and up to [`CANCEL_RETURN`] for it to end;
    /// whether it did (then the group is killed at once).
    pub(super) async fn end_after_cancel(
        &mut self,
        term_at: Instant,
        sink: &mut (dyn FnMut(&str) + Send),
    ) -> bool {
        tracing::debug!(pid = self.group.pgid, "cancelled: SIGTERM");
        self.group.signal(Signal::Terminate);
        let ev = self
            .pump(term_at + CANCEL_RETURN, Until::ExitedAndEof, None, sink)
            .await;
        if ev == Event::Done {
            self.group.signal(Signal::Kill);
        }
        ev == Event::Done
    }

    /// A cancelled command still running: answers now with what it wrote,
    /// and finishes the `SIGTERM` → `SIGKILL` sequence in the background.
    pub(super) fn answer_then_reap(
        mut self,
        mut result: CommandResult,
        term_at: Instant,
        sink: &mut (dyn FnMut(&str) + Send),
    ) -> CommandResult {
        self.output.flush(sink);
        let status = self.exit.and_then(|e| e.status);
        self.output.fill(&mut result);
        set_status(&mut result, status);
        self.output = Output::new(0);
        tokio::spawn(async move {
            let mut discard = |_: &str| {};
            self.pump(
                term_at + TERM_GRACE,
                Until::ExitedAndEof,
                None,
                &mut discard,
            )
            .await;
            self.group.signal(Signal::Kill);
            self.pump(
                Instant::now() + KILL_WAIT,
                Until::Exited,
                None,
                &mut discard,
            )
            .await;
            let status = self.finish();
            tracing::debug!(pid = self.group.pgid, ?status, "cancelled command reaped");
        });
        result
    }

    /// Reaps the leader and fills in the result: output, exit code or signal.
    pub(super) fn report(
        mut self,
        mut result: CommandResult,
        command: &str,
        start: Instant,
        sink: &mut (dyn FnMut(&str) + Send),
    ) -> Result<CommandResult, ProcessError> {
        self.output.flush(sink);
        let status = match self.finish() {
            Ok(Some(status)) => ExitInfo::from(status).status,
            Ok(None) => None,
            Err(source) if self.exit.is_none() => {
                return Err(ProcessError::Wait {
                    command: command.to_owned(),
                    source,
                });
            }
            Err(_) => None,
        }
        .or(self.exit.and_then(|e| e.status));
        self.output.fill(&mut result);
        set_status(&mut result, status);
        tracing::debug!(
            pid = self.group.pgid,
            exit_code = ?result.exit_code,
            signal = ?result.signal,
            elapsed_ms = start.elapsed().as_millis() as u64,
            "command finished"
        );
        Ok(result)
    }
}
