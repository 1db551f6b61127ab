//! Linux: the command sandbox is the agent's own binary in its launcher
//! mode (`linux/launcher.rs`): Landlock (`linux/rules.rs`), a private mount
//! namespace that keeps git's configuration read-only (`linux/mounts.rs`,
//! the files found by `linux/git_dirs.rs`)
//! and a PID namespace; it also supervises unsandboxed commands and MCP
//! servers so that they die with the agent.
mod container;
mod git_dirs;
pub mod launcher;
mod mounts;
mod net;
mod rules;
mod seccomp;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

pub use container::container;
pub use launcher::{MESSAGE_PREFIX, SUBCOMMAND};
pub use net::listener_owner;

use super::sandbox::{Level, Policy};

pub use super::unix::*;

pub const SANDBOX_AVAILABLE: bool = true;
pub const WATCH_BACKEND: &str = "inotify";

pub fn dispatch_launcher() -> Option<u8> {
    launcher::dispatch()
}

pub fn probe_sandbox(exe: &Path) -> Level {
    let abi = rules::kernel_abi();
    if abi < rules::MIN_ABI {
        return Level::Unavailable {
            why: format!(
                "the kernel's Landlock ABI is {abi}; the sandbox needs {}: Linux 6.2 or newer with Landlock enabled",
                rules::MIN_ABI
            ),
        };
    }
    let out = std::process::Command::new(exe)
        .args([SUBCOMMAND, "--probe"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .output();
    match out {
        Ok(o) if o.status.success() => Level::Full {
            abi,
            own_proc: true,
        },
        Ok(o) if o.status.code() == Some(launcher::PROBE_SHARED_PROC) => Level::Full {
            abi,
            own_proc: false,
        },
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr)
                .trim()
                .replace('\n', "; ");
            if o.status.code() == Some(launcher::PROBE_NO_NAMESPACE) {
                Level::LandlockOnly { abi, why }
            } else {
                Level::Unavailable {
                    why: format!("the sandbox probe failed: {why}"),
                }
            }
        }
        Err(e) => Level::Unavailable {
            why: format!("cannot run the launcher {}: {e}", exe.display()),
        },
    }
}

/// Everything goes through the launcher: confined, or only supervised.
pub fn wrap(
    exe: &Path,
    level: &Level,
    program: &str,
    args: &[&str],
    policy: Option<&Policy>,
    parent: Option<u32>,
) -> Option<(PathBuf, Vec<OsString>)> {
    let mut v: Vec<OsString> = vec![SUBCOMMAND.into()];
    match policy {
        Some(p) if level.confines() => {
            for (flag, paths) in [
                ("--root", &p.roots),
                ("--writable", &p.writable),
                ("--read-only", &p.read_only),
                ("--unreadable", &p.unreadable),
            ] {
                for path in paths {
                    v.push(flag.into());
                    v.push(path.into());
                }
            }
            if !p.network {
                v.push("--no-network".into());
            }
            if !level.replaces_path_check() {
                v.push("--landlock-only".into());
            }
        }
        _ => v.push("--no-sandbox".into()),
    }
    if let Some(pid) = parent {
        v.push("--parent".into());
        v.push(pid.to_string().into());
    }
    v.push("--".into());
    v.push(program.into());
    v.extend(args.iter().map(OsString::from));
    Some((exe.to_path_buf(), v))
}

pub fn sandbox_fix(level: &Level) -> Option<&'static str> {
    match level {
        Level::LandlockOnly { .. } => Some(
            "allow unprivileged user namespaces (e.g. sysctl kernel.apparmor_restrict_unprivileged_userns=0) to protect .git as well",
        ),
        Level::Unavailable { .. } => {
            Some("Linux 6.2 or newer with Landlock enabled (lsm=…,landlock) sandboxes commands")
        }
        _ => None,
    }
}

/// `PR_SET_DUMPABLE` 0: no ptrace by same-user processes, `/proc/PID/mem`
/// and `environ` owned by root, no core dump.
pub fn protect_memory() -> std::io::Result<&'static str> {
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers.
    let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
    if rc == 0 {
        Ok("non-dumpable (PR_SET_DUMPABLE 0)")
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A `waitid` status: the exit code, or the signal that killed the child.
pub fn decode_siginfo(info: &libc::siginfo_t) -> Option<super::process::Exit> {
    use super::process::Exit;
    // SAFETY: a SIGCHLD siginfo from waitid.
    let value = unsafe { info.si_status() };
    match info.si_code {
        libc::CLD_EXITED => Some(Exit::Code(value)),
        libc::CLD_KILLED | libc::CLD_DUMPED => Some(Exit::Signal(value)),
        _ => None,
    }
}

/// `/proc/self/fd/N`: the open file itself, whatever is at its path now.
pub fn open_file_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd as _;
    Path::new("/proc/self/fd")
        .is_dir()
        .then(|| PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd())))
}

/// Nothing to file: a sandboxed command's `/tmp` is its own mount, gone
/// with it.
pub fn adopted(_id: i32) {}

/// See [`adopted`].
pub fn released(_id: i32) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_becomes_non_dumpable() {
        protect_memory().unwrap();
        // SAFETY: plain integer arguments.
        let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) };
        assert_eq!(dumpable, 0);
    }

    #[test]
    fn unconfined_commands_are_still_supervised() {
        let level = Level::Unavailable { why: "test".into() };
        let (exe, argv) = wrap(
            Path::new("/bin/agent"),
            &level,
            "sh",
            &["-c", "true"],
            None,
            Some(7),
        )
        .unwrap();
        assert_eq!(exe, Path::new("/bin/agent"));
        assert_eq!(
            argv,
            [
                SUBCOMMAND,
                "--no-sandbox",
                "--parent",
                "7",
                "--",
                "sh",
                "-c",
                "true"
            ]
            .map(OsString::from)
        );
    }
}
