//! The command sandbox (issue 14; DESIGN §3 "Modes and permissions";
//! SECURITY.md §1–2): commands that run without a per-command "allow" from
//! the user — full-auto, or a remembered "always" prefix — may write only
//! inside the session roots, their own temp directory and the usual devices;
//! everything else, and the protected paths in the roots (`.git/config`,
//! hooks, `.envrc`, editor tasks…), is read-only for every kind of write;
//! the credential stores and the agent's own directories are unreadable; no
//! UNIX socket of a process outside is reachable; the network is optional
//! (`sandbox_network` in the config file).
//!
//! Everything goes through the agent's own binary in its launcher mode
//! ([`launcher`], `acp-coder sandbox-exec … -- sh -c CMD`): local commands,
//! editor-terminal commands (so the editor still shows them live) and, with
//! `--no-sandbox`, unsandboxed commands and MCP stdio servers, which then
//! still die with the agent even when it is killed with SIGKILL.
//!
//! What this machine allows is probed once, in the background, when the
//! first session is set up ([`prefetch`], [`level`]): Landlock plus the mount namespace ([`Level::Full`]), Landlock
//! alone ([`Level::LandlockOnly`]: `.git` unprotected, so the old
//! outside-paths check of command lines stays), or nothing
//! ([`Level::Unavailable`]: the old behaviour).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use crate::platform::sandbox::{Level, MESSAGE_PREFIX, Policy, SUBCOMMAND};

/// The agent's own binary, opened when the agent starts: a command that
/// replaces the file (it may lie inside a writable root) must not turn the
/// next "sandboxed" command into an unsandboxed one.
struct Launcher {
    path: PathBuf,
    /// The open binary; processes the agent starts itself exec it through
    /// `/proc/self/fd/N` (close-on-exec: resolved before it closes), where
    /// the system has such a path.
    file: Option<std::fs::File>,
    /// Device and inode at start, checked before the editor is given `path`.
    id: Option<(u64, u64)>,
}

impl Launcher {
    /// The program for a process the agent starts itself: the file opened at
    /// start, whatever is at `path` now.
    fn own(&self) -> PathBuf {
        self.file
            .as_ref()
            .and_then(crate::platform::fs::open_file_path)
            .unwrap_or_else(|| self.path.clone())
    }
}

static LAUNCHER: OnceLock<Launcher> = OnceLock::new();
static LEVEL: OnceLock<Level> = OnceLock::new();

/// Makes `exe` (the agent's own binary) the launcher. Without this call
/// (the library inside another program) commands run as before:
/// unsandboxed, unsupervised. The probe itself waits for [`prefetch`]: it
/// runs the launcher as a child process, which at start-up competed with
/// the agent for the CPU and cost `initialize` about 2 ms (issue 15).
pub fn init(exe: PathBuf) {
    let file = std::fs::File::open(&exe).ok();
    let id = file
        .as_ref()
        .and_then(|f| crate::platform::fs::file_id(f).ok());
    // Without a path to the open file (no /proc) the path is all there is
    // (checked like the editor's).
    let file = file.filter(|f| crate::platform::fs::open_file_path(f).is_some());
    let _ = LAUNCHER.set(Launcher {
        path: exe,
        file,
        id,
    });
}

/// Checks that the binary at the launcher's path is still the one the
/// agent started from, before its path is handed to the editor (which
/// cannot use the agent's open file). A command that replaced it could
/// otherwise run the next "sandboxed" command unconfined.
pub fn launcher_unchanged() -> Result<(), String> {
    let Some(l) = LAUNCHER.get() else {
        return Ok(());
    };
    let now = crate::platform::fs::path_id(&l.path).ok();
    if l.id.is_some() && now == l.id {
        return Ok(());
    }
    Err(format!(
        "the agent's binary {} was replaced or removed since the agent started, so its sandbox launcher can no longer be trusted; no command runs through it. Restart the agent (the editor's \"restart agent\", or close and reopen the session's window).",
        l.path.display()
    ))
}

/// Probes the sandbox in the background unless that has begun, so that the
/// first command does not wait for it; called when a session is set up,
/// after `initialize` was answered.
pub fn prefetch() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    if LAUNCHER.get().is_none() || LEVEL.get().is_some() {
        return;
    }
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("sandbox-probe".into())
            .spawn(|| {
                let level = level();
                tracing::info!(sandbox = %level.describe(), "command sandbox");
            });
        if let Err(e) = spawned {
            tracing::warn!(error = %e, "cannot start the sandbox probe; the first command runs it");
        }
    });
}

/// The sandbox level (probed once; blocks for the probe the first time).
pub fn level() -> &'static Level {
    LEVEL.get_or_init(probe)
}

/// Whether full-auto runs commands without asking here: only where the
/// probed sandbox confines them (issue 42.11: not the compile-time
/// availability, so a `sandbox-exec` that refuses the profile makes
/// commands ask), or where the config says `full_auto_without_sandbox`.
pub fn full_auto_runs_commands() -> bool {
    crate::platform::sandbox::full_auto_runs_commands(level().confines())
}

/// Whether commands are confined, without waiting for the probe: the
/// compile-time availability until the probe has answered (for texts such
/// as the mode's description, never for a decision).
pub fn confines_now() -> bool {
    LEVEL
        .get()
        .map_or(crate::platform::sandbox::AVAILABLE, Level::confines)
}

fn probe() -> Level {
    let Some(exe) = LAUNCHER.get().map(Launcher::own) else {
        return Level::Unavailable {
            why: "the agent runs inside another program, without its launcher".into(),
        };
    };
    crate::platform::sandbox::probe(&exe)
}

/// The temp directories commands may write: `$TMPDIR` (or `/tmp`) and `/tmp`.
pub fn temp_dirs() -> Vec<PathBuf> {
    let mut v = vec![std::env::temp_dir()];
    if !v.contains(&PathBuf::from("/tmp")) {
        v.push("/tmp".into());
    }
    v
}

/// The command line that runs `program args` through the launcher: confined
/// by `policy` when given (and the sandbox is available), else only
/// supervised. `None` when there is no launcher (run `program` directly).
/// `parent`: the agent's pid for processes it starts itself (the editor
/// starts terminal commands: none then).
pub fn wrap(
    program: &str,
    args: &[&str],
    policy: Option<&Policy>,
    parent: Option<u32>,
) -> Option<(PathBuf, Vec<OsString>)> {
    let launcher = LAUNCHER.get()?;
    // The editor starts terminal commands: it gets the path (checked by
    // [`launcher_unchanged`]); the agent's own children, the open file.
    let exe = match parent {
        Some(_) => launcher.own(),
        None => launcher.path.clone(),
    };
    crate::platform::sandbox::wrap(&exe, level(), program, args, policy, parent)
}

/// Whether a failed sandboxed command looks like the sandbox stopped it:
/// a write outside the allowed trees fails with `EACCES` ("Permission
/// denied"), one on a protected git file with `EROFS` ("Read-only file
/// system"), a denied mount with `EPERM`; or the sandbox could not be set up.
pub fn looks_denied(output: &str) -> bool {
    let lower = output.to_ascii_lowercase();
    [
        "permission denied",
        "read-only file system",
        "operation not permitted",
        "errno 13",
        "errno 30",
        "eacces",
        "erofs",
    ]
    .iter()
    .any(|m| lower.contains(m))
        || output.contains(MESSAGE_PREFIX)
}

/// The policy of a command that runs unasked in `cwd`: a working directory
/// outside `roots` is added as a writable root; `unreadable_extra`: the
/// agent's own directories and the config file's `sandbox_unreadable`.
pub fn policy_for(
    roots: &[PathBuf],
    cwd: &Path,
    network: bool,
    unreadable_extra: &[PathBuf],
) -> Policy {
    use crate::agent::policy::{protected, unreadable};
    let mut roots = roots.to_vec();
    if !roots.iter().any(|r| cwd.starts_with(r)) {
        roots.push(cwd.to_path_buf());
    }
    let read_only = roots
        .iter()
        .flat_map(|r| protected::sandbox_read_only(r))
        .collect();
    let home = crate::platform::fs::home();
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from);
    let unreadable = unreadable::unreadable(
        home.as_deref(),
        runtime.as_deref(),
        unreadable_extra,
        &roots,
    );
    Policy {
        writable: temp_dirs()
            .into_iter()
            .filter(|t| !roots.iter().any(|r| t.starts_with(r)))
            .collect(),
        roots,
        read_only,
        unreadable,
        network,
    }
}

/// When a denied command's output names a path the sandbox hides, what to
/// tell the model and the user about it: which path and why, and, when
/// `user_may_allow` (not to an A2A guest), how the user can allow it.
pub fn unreadable_note(output: &str, policy: &Policy, user_may_allow: bool) -> Option<String> {
    let hit = policy
        .unreadable
        .iter()
        .find(|p| output.contains(&*p.to_string_lossy()))?;
    let how = match user_may_allow {
        true => {
            " The user can let this command read it by running it once without the sandbox when asked, or by allowing it in ask mode (a command the user allows by itself runs unsandboxed)."
        }
        false => "",
    };
    Some(format!(
        "{} is unreadable to sandboxed commands: it holds credentials or the agent's own data.{how}",
        hit.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_are_recognised() {
        assert!(looks_denied("sh: 1: cannot create /x/y: Permission denied"));
        assert!(looks_denied(
            "touch: cannot touch '.git/config': Read-only file system"
        ));
        assert!(looks_denied(
            "PermissionError: [Errno 13] Permission denied: '/x'"
        ));
        assert!(looks_denied(
            "acp-coder sandbox: cannot make /p a mount point"
        ));
        assert!(!looks_denied("error[E0425]: cannot find value `x`"));
    }

    #[test]
    fn outside_cwd_becomes_a_root() {
        let p = policy_for(&["/p".into()], Path::new("/p/sub"), true, &[]);
        assert_eq!(p.roots, [PathBuf::from("/p")]);
        assert!(p.read_only.contains(&PathBuf::from("/p/.envrc")));
        let p = policy_for(&["/p".into()], Path::new("/q"), false, &[]);
        assert_eq!(p.roots, [PathBuf::from("/p"), PathBuf::from("/q")]);
        assert!(!p.network);
    }

    #[test]
    fn levels_say_what_applies() {
        assert!(
            Level::Full {
                abi: 7,
                own_proc: true
            }
            .replaces_path_check()
        );
        let l = Level::LandlockOnly {
            abi: 7,
            why: "no userns".into(),
        };
        assert!(l.confines() && !l.replaces_path_check());
        assert!(l.describe().contains("NOT protected"));
        let u = Level::Unavailable { why: "old".into() };
        assert!(!u.confines() && u.describe().contains("no command sandbox"));
    }
}
