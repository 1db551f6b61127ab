//! Exit statuses: signal names and peeking at a child's exit without
//! reaping it ([`crate::platform::process`] does the system's part).
use std::process::ExitStatus;

pub use crate::platform::process::Exit as Status;
pub use crate::platform::process::signal_name;

/// The shell has exited (it may still be an unreaped zombie).
#[derive(Debug, Clone, Copy)]
pub(super) struct ExitInfo {
    pub(super) status: Option<Status>,
}

impl From<ExitStatus> for ExitInfo {
    fn from(status: ExitStatus) -> Self {
        ExitInfo {
            status: crate::platform::process::exit_of(status),
        }
    }
}

/// Has `pid` (our child) exited? Does not reap it.
pub(super) fn peek_exit(pid: i32) -> Option<ExitInfo> {
    crate::platform::process::peek_exit(pid).map(|status| ExitInfo { status })
}
