//! Windows: there is no command sandbox (commands run with the user's
//! rights, and the agent says so in `doctor` and in the full-auto mode's
//! description); commands run through `cmd.exe` without AutoRun; programs
//! named without an extension are found through `PATHEXT` ([`super::win`]).
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::tools::sandbox::{Level, Policy};

pub const SUBCOMMAND: &str = "sandbox-exec";
pub const MESSAGE_PREFIX: &str = "acp-coder sandbox:";
/// `/D`: no AutoRun commands from the registry; `/S /C`: the rest of the
/// line is the command, quotes kept as given.
pub const SANDBOX_AVAILABLE: bool = false;
pub const SHELL: (&str, &[&str]) = ("cmd.exe", &["/D", "/S", "/C"]);
pub const WATCH_BACKEND: &str = "ReadDirectoryChangesW";

pub fn dispatch_launcher() -> Option<u8> {
    None
}

pub fn probe_sandbox(_exe: &Path) -> Level {
    Level::Unavailable {
        why: "acp-coder has no command sandbox on Windows: commands run with your full rights"
            .into(),
    }
}

/// Nothing wraps a command here: `program` is found through `PATHEXT`
/// (`npx` is `npx.cmd`) and run directly.
pub fn wrap(
    _exe: &Path,
    _level: &Level,
    program: &str,
    args: &[&str],
    _policy: Option<&Policy>,
    _parent: Option<u32>,
) -> Option<(PathBuf, Vec<OsString>)> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let pathext = std::env::var("PATHEXT").ok();
    let found = super::win::resolve(program, &path, pathext.as_deref(), |p| p.is_file())?;
    Some((found, args.iter().map(OsString::from).collect()))
}

pub fn sandbox_fix(_level: &Level) -> Option<&'static str> {
    Some(
        "run acp-coder inside WSL 2 for the Linux sandbox; on Windows itself full-auto asks before each command",
    )
}

/// Nothing to do: another process needs `PROCESS_VM_READ` on this one,
/// which Windows grants only to the same user's processes at the same or
/// a higher integrity level.
pub fn protect_memory() -> std::io::Result<&'static str> {
    Ok(
        "no change (Windows has no per-process switch; the process's memory is readable only by the same user's processes)",
    )
}
