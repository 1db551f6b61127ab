//! Everything that differs between Linux, macOS and Windows, behind one
//! small interface per concern; each system's side is one file
//! ([`linux`](self) `linux.rs` with the sandbox's launcher, mounts and
//! Landlock rules beside it in `linux/`, `macos.rs`, `windows.rs`). Nothing
//! outside this module names a target system.
//!
//! - **Command sandbox** ([`sandbox`]): probe what confines commands here,
//!   wrap a command line so that it runs confined by a
//!   [`Policy`](crate::tools::sandbox::Policy) (the same rules on every
//!   system, computed in `tools::sandbox`), and the launcher's entry point.
//!   Linux: Landlock plus mount and PID namespaces; macOS: Seatbelt
//!   (`/usr/bin/sandbox-exec`, profile from [`seatbelt`]); Windows: none,
//!   and it says so.
//! - **Process tree** ([`process`]): the shell that runs a command line,
//!   and finding a program the way the system's shell would
//!   ([`win`]'s `PATHEXT` resolution on Windows).
//! - **Self-hardening** ([`harden`]): keeping other processes of the same
//!   user from reading the agent's memory (its API key).
//! - **File watching** ([`watch`]): which `notify` backend watches trees.
//!
//! [`seatbelt`] and [`win`] are pure and compiled everywhere, so that their
//! unit tests run on the Linux CI machine.
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as os;

#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub mod seatbelt;
#[cfg_attr(not(windows), allow(dead_code))]
pub mod win;

/// The command sandbox.
pub mod sandbox {
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    use crate::tools::sandbox::{Level, Policy};

    /// Words every message of the sandbox's own set-up starts with.
    pub use super::os::MESSAGE_PREFIX;
    /// The agent binary's hidden launcher subcommand (`acp-coder sandbox-exec`).
    pub use super::os::SUBCOMMAND;

    /// Whether this system has a command sandbox at all (Windows: no).
    /// Where it has none, full-auto asks before each command.
    pub const AVAILABLE: bool = super::os::SANDBOX_AVAILABLE;

    /// Runs the launcher when this process was started as one (first thing
    /// in `main`); `None` otherwise, and always where there is no launcher.
    pub fn dispatch() -> Option<u8> {
        super::os::dispatch_launcher()
    }

    /// What confines commands on this machine; `exe` is the agent's binary.
    pub fn probe(exe: &Path) -> Level {
        super::os::probe_sandbox(exe)
    }

    /// The command line that runs `program args`: confined by `policy` when
    /// given and `level` confines, else only supervised where the system
    /// has a supervisor. `None`: run `program` directly.
    pub fn wrap(
        exe: &Path,
        level: &Level,
        program: &str,
        args: &[&str],
        policy: Option<&Policy>,
        parent: Option<u32>,
    ) -> Option<(PathBuf, Vec<OsString>)> {
        super::os::wrap(exe, level, program, args, policy, parent)
    }

    /// What `doctor` advises when the sandbox is missing or partial.
    pub fn fix(level: &Level) -> Option<&'static str> {
        super::os::sandbox_fix(level)
    }
}

/// Processes: the shell and program lookup.
pub mod process {
    /// The shell that runs a command line, and its arguments before the
    /// command text: `sh -c` on Unix; `cmd.exe /D /S /C` on Windows (no
    /// AutoRun, no profile: nothing the user's shell start-up prints can
    /// reach the agent's stdout).
    pub fn shell() -> (&'static str, &'static [&'static str]) {
        super::os::SHELL
    }
}

/// Self-hardening of the agent's own process.
pub mod harden {
    /// Keeps other processes of the same user from reading this one's
    /// memory (ptrace, `/proc/PID/mem`) and from core dumps of it, where
    /// the system has a way; says what it did.
    pub fn protect_memory() -> std::io::Result<&'static str> {
        super::os::protect_memory()
    }
}

/// File watching.
pub mod watch {
    /// The `notify` backend that watches trees on this system.
    pub const BACKEND: &str = super::os::WATCH_BACKEND;
}
