//! What Linux and macOS share as Unix: process groups and signals, file
//! modes and file identities, termios, `/dev/tty`. Each system's
//! file re-exports it ([`super::os`]) and adds what differs (decoding a
//! `waitid` status, a path to an open file).
use std::ffi::OsStr;
use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use tokio::process::{Child, Command};

use super::process::{Exit, Signal};

pub mod stdio;

// ---------------------------------------------------------------------------
// Process trees: process groups.
// ---------------------------------------------------------------------------

pub fn push_shell_text(cmd: &mut Command, text: &str) {
    cmd.arg(text);
}

/// `sh -c` runs any text whole.
pub fn shell() -> (&'static str, &'static [&'static str]) {
    ("sh", &["-c"])
}

pub fn check_shell_text(_text: &str) -> Result<(), String> {
    Ok(())
}

pub fn shell_text(text: &str) -> String {
    text.to_owned()
}

pub fn terminal_request(_text: &str) -> Option<super::win::TerminalRequest> {
    None
}

pub fn shell_description() -> &'static str {
    "The shell is sh -c (POSIX)"
}

/// A new session (`setsid`), which is also a new process group whose id is
/// the child's pid: the tree is named by its leader on every Unix, and the
/// command has no controlling terminal, so it cannot push keystrokes into
/// the user's shell (`TIOCSTI` on `/dev/tty`; issue 42.11) or be stopped by
/// the terminal's job control.
pub fn new_tree(cmd: &mut Command) {
    without_terminal(cmd);
}

pub fn without_terminal(cmd: &mut Command) {
    // SAFETY: setsid is async-signal-safe and touches no memory.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}

pub fn adopt(child: &Child) -> Option<i32> {
    let id = child.id().and_then(|p| i32::try_from(p).ok())?;
    super::os::adopted(id);
    Some(id)
}

pub fn is_foreign_tree(id: i32) -> bool {
    // SAFETY: getpgrp has no preconditions.
    id > 1 && id != unsafe { libc::getpgrp() }
}

pub fn signal_tree(id: i32, signal: Signal) {
    if !is_foreign_tree(id) {
        return;
    }
    let sig = match signal {
        Signal::Terminate => libc::SIGTERM,
        Signal::Kill => libc::SIGKILL,
    };
    // SAFETY: plain syscall; the id was checked above.
    if unsafe { libc::killpg(id, sig) } == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            tracing::debug!(pgid = id, sig, %err, "killpg failed");
        }
    }
}

pub fn release_tree(id: i32) {
    super::os::released(id);
}

pub fn peek_exit(pid: i32) -> Option<Option<Exit>> {
    loop {
        // SAFETY: a zeroed siginfo_t is a valid out-buffer for waitid.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: plain syscall with a valid out-pointer; WNOWAIT leaves
        // the child as it is.
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
            return Some(None);
        }
        // SAFETY: waitid filled a SIGCHLD siginfo (or left it zeroed).
        if unsafe { info.si_pid() } == 0 {
            return None;
        }
        return Some(super::os::decode_siginfo(&info));
    }
}

pub fn exit_of(status: ExitStatus) -> Option<Exit> {
    match (status.code(), status.signal()) {
        (Some(code), _) => Some(Exit::Code(code)),
        (None, Some(sig)) => Some(Exit::Signal(sig)),
        (None, None) => None,
    }
}

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

pub struct ChildExits(tokio::signal::unix::Signal);

impl ChildExits {
    pub async fn recv(&mut self) -> Option<()> {
        self.0.recv().await
    }
}

pub fn child_exits() -> io::Result<ChildExits> {
    use tokio::signal::unix::{SignalKind, signal};
    signal(SignalKind::child()).map(ChildExits)
}

/// `executable`: only files with an execute bit count (else any file, as
/// the launcher reports a file it cannot run by itself).
pub fn find_program(command: &str, path: &OsStr, cwd: &Path, executable: bool) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && (!executable || is_executable(p, &m)))
    };
    if command.contains('/') {
        let p = cwd.join(command);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path)
        .map(|d| cwd.join(d).join(command))
        .find(|p| executable(p))
}

// ---------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------

pub const HOME_VARS: &[&str] = &["HOME"];

pub fn owner_only_dir(builder: &mut DirBuilder) -> &mut DirBuilder {
    builder.mode(0o700)
}

pub fn owner_only_file(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(0o600)
}

pub fn restrict_dir(path: &Path) -> io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

pub fn restrict_file(file: &File) -> io::Result<()> {
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
}

pub fn is_beneath(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

pub fn relative_beneath(path: &Path, root: &Path) -> Option<PathBuf> {
    path.strip_prefix(root).ok().map(Path::to_path_buf)
}

pub fn created_name(name: &OsStr) -> std::ffi::OsString {
    name.to_owned()
}

pub fn mode(meta: &Metadata) -> Option<u32> {
    Some(meta.permissions().mode())
}

pub fn is_executable(_path: &Path, meta: &Metadata) -> bool {
    meta.permissions().mode() & 0o111 != 0
}

pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
}

pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
    file.metadata().map(|m| (m.dev(), m.ino()))
}

pub fn path_id(path: &Path) -> io::Result<(u64, u64)> {
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

pub fn inode(meta: &Metadata) -> u64 {
    meta.ino()
}

pub fn link_count(path: &Path) -> Option<u64> {
    std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.nlink())
}

pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(test)]
pub fn make_fifo_for_test(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("a path without NUL");
    // SAFETY: a valid C string for mkfifo(3).
    let made = unsafe { libc::mkfifo(c.as_ptr(), 0o600) } == 0;
    assert!(made, "mkfifo {}", path.display());
    made
}

#[cfg(test)]
pub const ENDLESS_DEVICE: Option<&str> = Some("/dev/zero");

// ---------------------------------------------------------------------------
// Terminal and stop requests.
// ---------------------------------------------------------------------------

pub fn open_tty() -> Option<(File, File)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let writer = file.try_clone().ok()?;
    Some((file, writer))
}

pub const AFTER_HIDDEN: &str = "";

/// The terminal's settings before echo was turned off.
pub struct EchoGuard {
    fd: std::os::fd::RawFd,
    saved: libc::termios,
}

pub fn echo_off(input: &File) -> Option<EchoGuard> {
    let fd = input.as_raw_fd();
    // SAFETY: termios calls on a descriptor the caller keeps open while the
    // guard lives; `saved` is fully initialised by tcgetattr before use.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut saved) != 0 {
            return None;
        }
        let mut quiet = saved;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        libc::tcsetattr(fd, libc::TCSANOW, &quiet);
        Some(EchoGuard { fd, saved })
    }
}

impl Drop for EchoGuard {
    fn drop(&mut self) {
        // SAFETY: restores the settings read by `echo_off` on the same descriptor.
        unsafe {
            libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved);
        }
    }
}

pub async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// Command output on Unix is UTF-8: there is no other code page to read it
/// in, and bytes that are not UTF-8 are shown as U+FFFD.
pub mod console {
    /// No code page besides UTF-8.
    pub fn output_code_page() -> Option<u32> {
        None
    }

    /// The one encoding here, UTF-8 ([`output_code_page`] names no other).
    pub fn decode(_code_page: u32, carry: &mut Vec<u8>, bytes: &[u8], out: &mut String) {
        crate::platform::decode::decode_utf8(carry, bytes, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::fs::OwnerOnly as _;

    /// Issue 42.11: a command's tree is a session of its own (no
    /// controlling terminal: no `TIOCSTI` into the user's shell), and its
    /// process group is still named by the leader's pid.
    #[tokio::test]
    async fn a_tree_is_a_session_of_its_own() {
        let mut cmd = Command::new("sleep");
        cmd.arg("5").kill_on_drop(true);
        new_tree(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let pid = adopt(&child).unwrap();
        // SAFETY: plain queries about our own child.
        let (sid, pgid) = unsafe { (libc::getsid(pid), libc::getpgid(pid)) };
        // SAFETY: no preconditions.
        let own_sid = unsafe { libc::getsid(0) };
        child.kill().await.unwrap();
        assert_eq!(pgid, pid);
        assert_eq!(sid, pid, "the command must lead a new session");
        assert_ne!(sid, own_sid);
    }

    #[test]
    fn owner_only_files_and_folders_get_0600_and_0700() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        DirBuilder::new()
            .recursive(true)
            .owner_only()
            .create(&sub)
            .unwrap();
        let f = sub.join("f");
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .owner_only()
            .open(&f)
            .unwrap();
        let m = |p: &Path| mode(&std::fs::metadata(p).unwrap()).unwrap() & 0o777;
        assert_eq!((m(&sub), m(&f)), (0o700, 0o600));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        restrict_file(&file).unwrap();
        assert_eq!(m(&f), 0o600);
    }

    #[test]
    fn ids_links_and_programs() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, "x").unwrap();
        let file = File::open(&a).unwrap();
        assert_eq!(file_id(&file).unwrap(), path_id(&a).unwrap());
        assert_eq!(link_count(&a), Some(1));
        std::fs::hard_link(&a, dir.path().join("b")).unwrap();
        assert_eq!(link_count(&a), Some(2));
        symlink(Path::new("a"), &dir.path().join("l")).unwrap();
        assert_eq!(
            link_count(&dir.path().join("l")),
            None,
            "a link is not followed"
        );
        // A plain file is found by the launcher's check, not as a program.
        let path = dir.path().as_os_str();
        assert!(find_program("a", path, dir.path(), false).is_some());
        assert!(find_program("a", path, dir.path(), true).is_none());
        std::fs::set_permissions(&a, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_program("a", path, dir.path(), true), Some(a.clone()));
        assert_eq!(
            find_program("./a", OsStr::new(""), dir.path(), true),
            Some(dir.path().join("./a"))
        );
        assert!(is_beneath(&a, dir.path()) && !is_beneath(dir.path(), &a));
    }

    #[test]
    fn exits_and_signals_are_named() {
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(exit_of(ExitStatus::from_raw(3 << 8)), Some(Exit::Code(3)));
        assert_eq!(
            exit_of(ExitStatus::from_raw(libc::SIGKILL)),
            Some(Exit::Signal(libc::SIGKILL))
        );
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert!(!is_foreign_tree(0) && !is_foreign_tree(1));
        // SAFETY: getpgrp has no preconditions.
        assert!(!is_foreign_tree(unsafe { libc::getpgrp() }));
    }
}

unsafe extern "C" {
    static mut environ: *mut *mut std::ffi::c_char;
}

/// See [`super::harden::take_env`]: the value bytes of each variable in the
/// C library's `environ` (on Linux the block `/proc/PID/environ` shows) are
/// overwritten with NULs in place, then the variable is unset.
///
/// # Safety
///
/// No other thread may exist (the environment is written).
pub unsafe fn take_env(names: &[String]) -> Vec<(String, String)> {
    let mut taken = Vec::new();
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings
    // owned by the C library; no other thread touches it (caller's contract).
    // Each string's bytes after `NAME=` are ours to overwrite in place: the
    // string keeps its length (it just becomes `NAME=` followed by NULs).
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            let entry = *p;
            let bytes = std::ffi::CStr::from_ptr(entry).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                let name = String::from_utf8_lossy(&bytes[..eq]).into_owned();
                if names.contains(&name) {
                    let value = String::from_utf8_lossy(&bytes[eq + 1..]).into_owned();
                    let len = bytes.len() - eq - 1;
                    std::ptr::write_bytes(entry.add(eq + 1), 0, len);
                    taken.push((name, value));
                }
            }
            p = p.add(1);
        }
        for name in names {
            std::env::remove_var(name);
        }
    }
    taken
}
