//! `acp-coder sandbox-exec`: the launcher that every local command, editor
//! terminal command and MCP stdio server of the agent starts through
//! (issue 14, DESIGN §3 "Modes and permissions").
//!
//! ```text
//! acp-coder sandbox-exec [--root DIR]... [--writable DIR]... [--read-only PATH]...
//!                        [--unreadable PATH]... [--no-network]
//!                        [--landlock-only | --no-sandbox] [--parent PID] -- PROGRAM [ARG]...
//! ```
//!
//! It runs before anything else in `main` (one thread: `unshare(CLONE_NEWUSER)`
//! and Landlock's `restrict_self` both need that), and:
//!
//! 1. arms `PR_SET_PDEATHSIG` and checks that its parent is still the one
//!    it was started by (`--parent`), and makes itself a process-group leader;
//! 2. unless `--no-sandbox`: enters a private mount namespace ([`super::mounts`])
//!    in which everything but the `--root`s is read-only, the `--writable`
//!    temp directories are its own, `.git/config`, `.git/hooks/` and the
//!    `--read-only` paths are read-only, the `--unreadable` paths and the
//!    UNIX sockets of outside processes are covered; and a PID namespace
//!    whose init (the holder, [`hold_namespaces`]) mounts its own `/proc` and
//!    takes every process left in it down with the launcher; then restricts itself
//!    with Landlock ([`super::rules`]): writes only beneath `--root`s,
//!    `--writable`s and the usual devices, no abstract UNIX socket made
//!    outside, TCP off with `--no-network`; and with seccomp
//!    ([`super::seccomp`]): no typing into a terminal (`TIOCSTI`);
//! 3. starts PROGRAM as its child and stays as a small supervisor: signals
//!    sent to it alone are passed on, the child's exit status becomes its own
//!    (a signal death is re-raised), and when its parent dies — even by
//!    SIGKILL — it kills its whole process group.
//!
//! Why a supervisor rather than `exec`: `PR_SET_PDEATHSIG` only reaches the
//! process it is set on; the shell's own children (`sleep 1000 &`) would
//! survive the agent. The kernel also sends the death signal when the *thread*
//! that forked exits (a tokio blocking thread, say), so the signal alone
//! proves nothing: the supervisor compares `getppid()` with the parent it was
//! given before it kills anything.
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt as _;
use std::path::PathBuf;

/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "sandbox-exec";

/// Exit status when the launcher itself fails (as `env`, `timeout`, `nice` do).
pub const SETUP_FAILED: i32 = 125;
/// `--probe` exit statuses: the namespace step failed, Landlock is missing.
pub const PROBE_NO_NAMESPACE: i32 = 3;
pub const PROBE_NO_LANDLOCK: i32 = 4;
/// `--probe`: everything works but a private `/proc` (see [`super::mounts::mount_proc`]).
pub const PROBE_SHARED_PROC: i32 = 5;

/// The death signal; it doubles as "hang up" from a closing terminal.
const DEATH_SIGNAL: libc::c_int = libc::SIGHUP;

/// Words every message of the launcher starts with: the agent recognises a
/// sandbox that could not be set up by them.
pub const MESSAGE_PREFIX: &str = "acp-coder sandbox:";

#[derive(Debug, Default, PartialEq)]
pub(super) struct LaunchArgs {
    pub roots: Vec<PathBuf>,
    pub writable: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
    pub unreadable: Vec<PathBuf>,
    pub network: bool,
    pub sandbox: bool,
    pub namespace: bool,
    pub parent: Option<i32>,
    pub probe: bool,
    pub program: Vec<OsString>,
}

pub(super) fn parse(args: impl IntoIterator<Item = OsString>) -> Result<LaunchArgs, String> {
    let mut a = LaunchArgs {
        network: true,
        sandbox: true,
        namespace: true,
        ..LaunchArgs::default()
    };
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.to_str() {
            Some("--root") => a.roots.push(value("--root")?.into()),
            Some("--writable") => a.writable.push(value("--writable")?.into()),
            Some("--read-only") => a.read_only.push(value("--read-only")?.into()),
            Some("--unreadable") => a.unreadable.push(value("--unreadable")?.into()),
            Some("--no-network") => a.network = false,
            Some("--no-sandbox") => a.sandbox = false,
            Some("--landlock-only") => a.namespace = false,
            Some("--probe") => a.probe = true,
            Some("--parent") => {
                let v = value("--parent")?;
                a.parent = Some(
                    v.to_str()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| format!("--parent: {v:?} is not a process id"))?,
                );
            }
            Some("--") => {
                a.program = it.collect();
                break;
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if a.program.is_empty() && !a.probe {
        return Err("no program given after --".into());
    }
    Ok(a)
}

/// Runs the launcher when `argv[1]` is [`SUBCOMMAND`]; returns its exit status.
/// Call it first thing in `main`, before any thread exists.
pub fn dispatch() -> Option<u8> {
    let mut args = std::env::args_os();
    let _exe = args.next();
    if args.next().as_deref() != Some(std::ffi::OsStr::new(SUBCOMMAND)) {
        return None;
    }
    let code = match parse(args) {
        Ok(a) => run(a),
        Err(e) => fail(&format!(
            "{e} (usage: sandbox-exec [--root DIR]... -- PROGRAM [ARG]...)"
        )),
    };
    Some(u8::try_from(code).unwrap_or(u8::MAX))
}

fn fail(message: &str) -> i32 {
    // The launcher has no log: stderr is where the agent or the terminal looks.
    eprintln!("{MESSAGE_PREFIX} {message}");
    SETUP_FAILED
}

fn run(a: LaunchArgs) -> i32 {
    // Signals the supervisor handles itself, synchronously (sigwaitinfo).
    // Blocked before anything can deliver them; the child gets an empty
    // mask back from std's spawn.
    let set = signal_set();
    // SAFETY: plain libc calls on a local sigset; the process has one thread.
    unsafe {
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let parent = match tie_to_agent(&a) {
        Ok(p) => p,
        Err(code) => return code,
    };
    // /dev/null for the supervisor's own stdio once the child has started
    // (opened before Landlock, though the rules allow it anyway).
    let devnull = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .ok();

    if a.probe {
        return probe(&a);
    }
    let absent = match confine(&a) {
        Ok(paths) => paths,
        Err(code) => return code,
    };
    let child = match spawn(a.program) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // SAFETY: a close-on-exec copy of stderr for the last words below.
    let stderr = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 3) };
    if let Some(null) = devnull {
        use std::os::fd::AsRawFd as _;
        // SAFETY: dup2 onto our own standard descriptors: the child keeps
        // its copies, so pipes reach EOF when the child's side closes.
        unsafe {
            for fd in 0..3 {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
    let status = supervise(child.id() as libc::pid_t, parent, &set);
    remove_absent(&absent, stderr);
    mirror(status)
}

/// Dies with the agent (`PR_SET_PDEATHSIG`), refuses to start when the agent
/// is already gone, and leads its own process group. Returns the agent's pid.
fn tie_to_agent(a: &LaunchArgs) -> Result<libc::pid_t, i32> {
    // SAFETY: prctl/getppid/getpgrp/setpgid take no pointers.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            DEATH_SIGNAL as libc::c_ulong,
            0,
            0,
            0,
        );
        let now = libc::getppid();
        if a.parent.is_some_and(|p| p != now) {
            // The agent is already gone: start nothing.
            return Err(fail("the agent that started this command has exited"));
        }
        if libc::getpgrp() != libc::getpid() {
            libc::setpgid(0, 0);
        }
        Ok(a.parent.unwrap_or(now))
    }
}

/// Enters the sandbox when asked (SECURITY.md §2): the mount namespace with
/// the protected paths read-only, then the Landlock rules. Returns the paths
/// that must stay absent after the command.
fn confine(a: &LaunchArgs) -> Result<Vec<PathBuf>, i32> {
    let mut absent = Vec::new();
    if !a.sandbox {
        return Ok(absent);
    }
    if a.namespace {
        let plan = super::mounts::Plan {
            roots: &a.roots,
            temp: &a.writable,
            read_only: &a.read_only,
            unreadable: &a.unreadable,
            network_off: !a.network,
        };
        absent = super::mounts::enter(&plan).map_err(|e| fail(&e.to_string()))?;
        // Without a private /proc the command still runs (the probe told the
        // agent, and `doctor` says so); the rest of the sandbox holds.
        hold_namespaces()?;
        drop_root_overrides();
    }
    let mut writable = a.roots.clone();
    writable.extend(a.writable.iter().cloned());
    let netns = a.namespace && !a.network;
    super::rules::restrict(&writable, a.network, netns).map_err(|e| fail(&e.to_string()))?;
    super::seccomp::deny_terminal_injection().map_err(|e| fail(&e.to_string()))?;
    Ok(absent)
}

/// A command the launcher starts as root (the agent runs as root, without
/// a user namespace) would read the covered paths anyway: a covering
/// directory or file that no one may read stops everyone but a holder of
/// `CAP_DAC_OVERRIDE` / `CAP_DAC_READ_SEARCH`. Dropped from the bounding
/// set, root's command starts without them and meets file modes as any
/// user does (SECURITY.md §2). Other users' commands have no capabilities.
fn drop_root_overrides() {
    /// `linux/capability.h` (the libc crate has no names for them).
    const CAP_DAC_OVERRIDE: libc::c_ulong = 1;
    const CAP_DAC_READ_SEARCH: libc::c_ulong = 2;
    // SAFETY: geteuid and prctl take no pointers.
    unsafe {
        if libc::geteuid() == 0 {
            for cap in [CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH] {
                libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
            }
        }
    }
}

/// Starts the command; a program that cannot run exits 127 (not found) or
/// 126, as a shell would.
fn spawn(program: Vec<OsString>) -> Result<std::process::Child, i32> {
    let mut program = program.into_iter();
    let name = program.next().unwrap_or_default();
    std::process::Command::new(&name)
        .args(program)
        .spawn()
        .map_err(|e| {
            eprintln!(
                "{MESSAGE_PREFIX} cannot run {}: {e}",
                name.to_string_lossy()
            );
            if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            }
        })
}

/// Removes what the command created where git must find nothing, saying so
/// on the saved stderr (`stderr` < 0: nowhere to say it).
fn remove_absent(absent: &[PathBuf], stderr: libc::c_int) {
    for p in absent
        .iter()
        .filter(|p| std::fs::symlink_metadata(p).is_ok())
    {
        let gone = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir_all(p));
        let line = format!(
            "{MESSAGE_PREFIX} the command created {}, which the sandbox keeps read-only (git or an editor would run what it says): {}\n",
            p.display(),
            if gone.is_ok() {
                "removed it"
            } else {
                "could NOT remove it"
            }
        );
        if stderr >= 0 {
            // SAFETY: writing a local buffer to our own descriptor.
            unsafe {
                libc::write(stderr, line.as_ptr().cast(), line.len());
            }
        }
    }
}

/// Forks the holder, the first process in the new PID namespace and so its
/// init. It mounts that namespace's own `/proc` ([`super::mounts::mount_proc`]:
/// the command then sees its own processes only; an outside review read an
/// MCP server's token from `/proc/PID/environ`), keeps the namespaces alive,
/// reaps orphans, and dies with the launcher (`PR_SET_PDEATHSIG`), or on
/// its own when the launcher's end of `life` closes (the launcher died
/// before the death signal was armed). When it dies the kernel kills every
/// process left in the namespace, `setsid` daemons included.
///
/// Tearing a mount namespace down waits for an RCU grace period (~10 ms
/// here, as `unshare -m true` shows); done by the launcher's own exit, the
/// agent's wait for the command would pay it. Done by the holder, no one
/// waits for it. Returns whether `/proc` is the namespace's own.
fn hold_namespaces() -> Result<bool, i32> {
    let (mut ready, mut life) = ([0; 2], [0; 2]);
    // SAFETY: pipe2 fills local arrays; fork in a single-threaded process,
    // the child calling only async-signal-safe functions and never returning.
    unsafe {
        if libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) != 0
            || libc::pipe2(life.as_mut_ptr(), libc::O_CLOEXEC) != 0
        {
            return Err(fail(&format!(
                "cannot make a pipe: {}",
                std::io::Error::last_os_error()
            )));
        }
        match libc::fork() {
            0 => {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                let mounted = u8::from(super::mounts::mount_proc().is_ok());
                libc::write(ready[1], (&raw const mounted).cast(), 1);
                // Nothing else: pipes to the agent close without us.
                if life[0] > 0 {
                    libc::syscall(libc::SYS_close_range, 0u32, (life[0] - 1) as u32, 0u32);
                }
                libc::syscall(libc::SYS_close_range, (life[0] + 1) as u32, u32::MAX, 0u32);
                loop {
                    while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
                    let mut p = libc::pollfd {
                        fd: life[0],
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    if libc::poll(&mut p, 1, 1000) > 0 && p.revents != 0 {
                        libc::_exit(0);
                    }
                }
            }
            pid if pid > 0 => {
                libc::close(ready[1]);
                libc::close(life[0]);
                // `life[1]` stays open (close-on-exec) until the launcher exits.
                let mut mounted = 0u8;
                let n = libc::read(ready[0], (&raw mut mounted).cast(), 1);
                libc::close(ready[0]);
                if n != 1 {
                    return Err(fail("the namespace holder died at start"));
                }
                Ok(mounted == 1)
            }
            _ => Err(fail(&format!(
                "cannot fork: {}",
                std::io::Error::last_os_error()
            ))),
        }
    }
}

fn signal_set() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a zeroed local.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [
            libc::SIGCHLD,
            libc::SIGHUP,
            libc::SIGINT,
            libc::SIGQUIT,
            libc::SIGTERM,
            libc::SIGUSR1,
            libc::SIGUSR2,
        ] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Waits for the child; passes signals on; kills the group when the parent dies.
fn supervise(
    child: libc::pid_t,
    parent: libc::pid_t,
    set: &libc::sigset_t,
) -> std::process::ExitStatus {
    loop {
        // SAFETY: sigwaitinfo/getppid/kill/waitpid with valid pointers to locals.
        unsafe {
            if libc::getppid() != parent {
                libc::killpg(libc::getpgrp(), libc::SIGKILL);
            }
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let sig = libc::sigwaitinfo(set, &mut info);
            if sig == libc::SIGCHLD || sig < 0 {
                let mut status = 0;
                loop {
                    let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                    if pid == child {
                        return std::process::ExitStatus::from_raw(status);
                    }
                    if pid <= 0 {
                        break;
                    }
                }
                continue;
            }
            if libc::getppid() != parent {
                // The agent (or the editor) died: nothing of ours outlives it.
                libc::killpg(libc::getpgrp(), libc::SIGKILL);
            }
            // A signal for us alone (an editor killing the terminal's
            // process, or a spurious death signal from an exiting thread of
            // the parent): the command gets it. Signals to the whole group
            // reach the child directly as well; a second SIGTERM is harmless.
            if sig != DEATH_SIGNAL || info.si_pid() != parent {
                libc::kill(child, sig);
            }
        }
    }
}

/// Ends the launcher the way its child ended.
fn mirror(status: std::process::ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    let sig = status.signal().unwrap_or(libc::SIGKILL);
    // SAFETY: resetting our own disposition and mask, then raising: the
    // agent sees "killed by SIGx" as if it had run the command itself. No
    // core file for a re-raised SIGSEGV/SIGABRT: the child already dumped.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut only);
        libc::sigaddset(&mut only, sig);
        libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
        libc::raise(sig);
    }
    128 + sig
}

/// `--probe`: sets up a sandbox around the temp directory and reports what
/// worked (the agent runs it once at start-up, `doctor` shows the result).
fn probe(a: &LaunchArgs) -> i32 {
    let tmp = std::env::temp_dir();
    let mut code = 0;
    if let Err(e) = super::mounts::probe(&tmp, !a.network) {
        eprintln!("{e}");
        code = PROBE_NO_NAMESPACE;
    } else if let Err(e) = probe_proc() {
        eprintln!(
            "cannot mount a private /proc ({e}); commands can see the agent's other processes"
        );
        code = PROBE_SHARED_PROC;
    }
    let netns = code == 0 && !a.network;
    if let Err(e) = super::rules::restrict(&[tmp], a.network, netns) {
        eprintln!("{e}");
        return PROBE_NO_LANDLOCK;
    }
    code
}

/// Whether the first process of the new PID namespace can mount its `/proc`.
fn probe_proc() -> std::io::Result<()> {
    // SAFETY: fork in a single-threaded process; the child calls only
    // async-signal-safe functions; waitpid on a local.
    unsafe {
        match libc::fork() {
            0 => libc::_exit(match super::mounts::mount_proc() {
                Ok(()) => 0,
                Err(e) => e.raw_os_error().unwrap_or(libc::EPERM),
            }),
            pid if pid > 0 => {
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
                match libc::WEXITSTATUS(status) {
                    0 => Ok(()),
                    errno => Err(std::io::Error::from_raw_os_error(errno)),
                }
            }
            _ => Err(std::io::Error::last_os_error()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_the_launcher_line() {
        let a = parse(os(&[
            "--root",
            "/p",
            "--writable",
            "/tmp",
            "--read-only",
            "/p/.envrc",
            "--unreadable",
            "/h/.ssh",
            "--no-network",
            "--parent",
            "42",
            "--",
            "sh",
            "-c",
            "echo --root",
        ]))
        .unwrap();
        assert_eq!(a.roots, [PathBuf::from("/p")]);
        assert_eq!(a.writable, [PathBuf::from("/tmp")]);
        assert_eq!(a.read_only, [PathBuf::from("/p/.envrc")]);
        assert_eq!(a.unreadable, [PathBuf::from("/h/.ssh")]);
        assert!(!a.network && a.sandbox && a.namespace);
        assert_eq!(a.parent, Some(42));
        assert_eq!(a.program, os(&["sh", "-c", "echo --root"]));
        assert!(parse(os(&["--root"])).is_err());
        assert!(parse(os(&["--bogus", "--", "x"])).is_err());
        assert!(parse(os(&["--root", "/p"])).is_err());
        assert!(parse(os(&["--parent", "x", "--", "sh"])).is_err());
        let a = parse(os(&["--no-sandbox", "--landlock-only", "--", "x"])).unwrap();
        assert!(!a.sandbox && !a.namespace);
    }
}
