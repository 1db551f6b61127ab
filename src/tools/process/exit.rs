//! Exit statuses: signal names and peeking at a child's exit without reaping it.
use std::io;
use std::process::ExitStatus;

/// `"SIGKILL"` for 9, etc.; `"SIG<n>"` for unusual ones.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    Code(i32),
    Signal(i32),
}

/// The shell has exited (it may still be an unreaped zombie).
#[derive(Debug, Clone, Copy)]
pub(super) struct ExitInfo {
    pub(super) status: Option<Status>,
}

impl From<ExitStatus> for ExitInfo {
    fn from(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let status = match (status.code(), status.signal()) {
            (Some(code), _) => Some(Status::Code(code)),
            (None, Some(sig)) => Some(Status::Signal(sig)),
            (None, None) => None,
        };
        ExitInfo { status }
    }
}

/// Has `pid` (our child) exited? Does not reap it.
pub(super) fn peek_exit(pid: i32) -> Option<ExitInfo> {
    loop {
        // SAFETY: zeroed siginfo_t is a valid out-buffer for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: plain syscall with a valid out-pointer.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if rc == -1 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // ECHILD: already reaped by someone else (SIGCHLD ignored?).
            tracing::debug!(pid, %err, "waitid failed; assuming the child is gone");
            return Some(ExitInfo { status: None });
        }
        // SAFETY: waitid filled a SIGCHLD siginfo (or left it zeroed).
        if unsafe { info.si_pid() } == 0 {
            return None;
        }
        return Some(ExitInfo {
            status: decode_siginfo(&info),
        });
    }
}

#[cfg(target_os = "linux")]
fn decode_siginfo(info: &libc::siginfo_t) -> Option<Status> {
    // SAFETY: a SIGCHLD siginfo from waitid.
    let value = unsafe { info.si_status() };
    match info.si_code {
        libc::CLD_EXITED => Some(Status::Code(value)),
        libc::CLD_KILLED | libc::CLD_DUMPED => Some(Status::Signal(value)),
        _ => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn decode_siginfo(_info: &libc::siginfo_t) -> Option<Status> {
    // The status is read when reaping instead.
    None
}
