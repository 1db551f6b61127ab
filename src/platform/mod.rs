//! Everything that differs between Linux, macOS and Windows, behind one
//! small interface per concern; each system's side is one file
//! ([`linux`](self) `linux.rs` with the sandbox's launcher, mounts and
//! Landlock rules beside it in `linux/`, `macos.rs`, `windows.rs`; what
//! Linux and macOS share as Unix is in `unix.rs`). Nothing outside this
//! module names a target system.
//!
//! - **Command sandbox** ([`sandbox`]): probe what confines commands here,
//!   wrap a command line so that it runs confined by a
//!   [`Policy`](sandbox::Policy) (the same rules on every system, computed
//!   in `tools::sandbox`; the types are the platform's, `sandbox_policy.rs`),
//!   and the launcher's entry point.
//!   Linux: Landlock plus mount and PID namespaces; macOS: Seatbelt
//!   (`/usr/bin/sandbox-exec`, profile from [`seatbelt`]); Windows: none,
//!   and it says so.
//! - **Process tree** ([`process`]): the shell that runs a command line,
//!   finding a program the way the system's shell would ([`win`]'s
//!   `PATHEXT` resolution on Windows), starting a command in a tree of its
//!   own and ending the whole tree (Unix process groups, Windows Job
//!   Objects), peeking at a leader's exit, decoding exit statuses.
//! - **Files** ([`fs`]): owner-only files and folders, executable bits,
//!   file identities and link counts, opening without following a link.
//! - **Standard streams** ([`stdio`]), the **terminal** ([`term`], echo
//!   off for secrets) and **stop requests** ([`signals`]).
//! - **Self-hardening** ([`harden`]): keeping other processes of the same
//!   user from reading the agent's memory (its API key).
//! - **File watching** ([`watch`]): which `notify` backend watches trees.
//! - **Sockets** ([`net`]): who owns a loopback listener.
//! - **Command output** ([`console`]): its text, in the console's code page
//!   on Windows.
//!
//! [`seatbelt`] and [`win`] are pure and compiled everywhere, so that their
//! unit tests run on the Linux CI machine.
#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod unix;
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

mod decode;
mod sandbox_policy;
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub mod seatbelt;
#[cfg_attr(not(windows), allow(dead_code))]
pub mod win;

/// The command sandbox.
pub mod sandbox {
    use std::ffi::OsString;
    use std::path::{Path, PathBuf};

    pub use super::sandbox_policy::{Level, Policy};

    /// Words every message of the sandbox's own set-up starts with.
    pub use super::os::MESSAGE_PREFIX;
    /// The agent binary's hidden launcher subcommand (`acp-coder sandbox-exec`).
    pub use super::os::SUBCOMMAND;

    /// Whether this system has a command sandbox at all (Windows: no).
    /// Where it has none, full-auto asks before each command.
    pub const AVAILABLE: bool = super::os::SANDBOX_AVAILABLE;

    static UNCONFINED_FULL_AUTO: std::sync::atomic::AtomicBool =
        std::sync::atomic::AtomicBool::new(false);

    /// The config's `full_auto_without_sandbox`: where there is no sandbox,
    /// the user chose to let full-auto run commands unasked, unconfined.
    pub fn allow_unconfined_full_auto(on: bool) {
        UNCONFINED_FULL_AUTO.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether full-auto runs commands without asking, given whether the
    /// probed sandbox confines them (`confined`, never the compile-time
    /// [`AVAILABLE`]: a `sandbox-exec` that refuses the profile, a kernel
    /// without Landlock confine nothing), or where the user turned the
    /// missing sandbox off.
    pub fn full_auto_runs_commands(confined: bool) -> bool {
        runs_unasked(
            confined,
            UNCONFINED_FULL_AUTO.load(std::sync::atomic::Ordering::Relaxed),
        )
    }

    /// The rule of [`full_auto_runs_commands`] with the user's choice given.
    pub(super) fn runs_unasked(confined: bool, unconfined_allowed: bool) -> bool {
        confined || unconfined_allowed
    }

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

    /// The container the agent runs in (`docker`, `podman`, `Kubernetes`,
    /// …), where one is seen: its seccomp profile decides which sandbox
    /// layers hold (Linux; `None` elsewhere).
    pub fn container() -> Option<String> {
        super::os::container()
    }
}

/// Processes: the shell, program lookup, process trees and how a
/// process ended.
///
/// A *tree* is everything one command or server started: on Unix a process
/// group (its id is the leader's pid), on Windows a Job Object that holds
/// the child and everything it starts (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`:
/// the tree dies when the agent does, however it ends). A tree is named by
/// its leader's pid on every system.
pub mod process {
    use std::ffi::OsStr;
    use std::io;
    use std::path::{Path, PathBuf};
    use std::process::ExitStatus;

    use tokio::process::{Child, Command};

    /// The shell that runs a command line, and its arguments before the
    /// command text: `sh -c` on Unix; on Windows (chosen once,
    /// [`super::win::choose_shell`]) Git for Windows' `bash.exe -c`, else
    /// PowerShell `-NoProfile -NonInteractive -EncodedCommand`, else
    /// `cmd.exe /D /S /C` (no AutoRun, no profile: nothing the user's
    /// shell start-up prints can reach the agent's stdout).
    pub fn shell() -> (&'static str, &'static [&'static str]) {
        super::os::shell()
    }

    /// Why this shell cannot run `text` whole (cmd.exe and a text of
    /// several lines: it would run only the first), or `Ok`. Checked
    /// before a command runs, locally or in the editor's terminal.
    pub fn check_shell_text(text: &str) -> Result<(), String> {
        super::os::check_shell_text(text)
    }

    /// The command text as the shell's last argument, for an argv that
    /// another program starts (the editor's terminal): as is, but base64
    /// for PowerShell's `-EncodedCommand`.
    pub fn shell_text(text: &str) -> String {
        super::os::shell_text(text)
    }

    /// The `terminal/create` request `(command, args, env)` that runs
    /// `text` in this system's shell, where it differs from the shell's
    /// own argv (Windows: [`super::win::terminal_request`], which survives
    /// Zed's joining and JetBrains' argv alike); `None` on Unix, where the
    /// launcher's argv is sent.
    pub fn terminal_request(text: &str) -> Option<super::win::TerminalRequest> {
        super::os::terminal_request(text)
    }

    /// One sentence for the model: which shell runs its commands, and the
    /// syntax to write.
    pub fn shell_description() -> &'static str {
        super::os::shell_description()
    }

    /// Appends the command text as the shell's last argument: as is for
    /// `sh -c` and bash; for `cmd.exe /S /C` in the one pair of quotes `/S`
    /// strips, passed raw (the usual argument quoting would add
    /// backslashes that cmd.exe keeps); encoded for PowerShell.
    pub fn push_shell_text(cmd: &mut Command, text: &str) {
        super::os::push_shell_text(cmd, text);
    }

    /// How to ask a tree to end.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Signal {
        /// Unix: `SIGTERM`, which a program may catch to clean up. Windows
        /// has no such request for a process without a console of ours:
        /// the tree is ended at once, as by [`Signal::Kill`].
        Terminate,
        /// Unix: `SIGKILL`; Windows: `TerminateJobObject`.
        Kill,
    }

    /// How a process ended.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Exit {
        /// It exited with this code (Windows: the process's exit code).
        Code(i32),
        /// A signal killed it (Unix only).
        Signal(i32),
    }

    /// Makes `cmd` start a tree of its own: a new session, and so a new
    /// process group without a controlling terminal (Unix `setsid`: no
    /// `TIOCSTI` into the user's shell); on Windows a new process group
    /// without a console window, started suspended: [`adopt`] must follow.
    pub fn new_tree(cmd: &mut Command) {
        super::os::new_tree(cmd);
    }

    /// Starts the program without the agent's terminal: a new session
    /// (Unix `setsid`: no controlling terminal, `/dev/tty` cannot be
    /// opened); no console (Windows `DETACHED_PROCESS`: no `CONIN$`).
    pub fn without_terminal(cmd: &mut Command) {
        super::os::without_terminal(cmd);
    }

    /// The tree id of a child just started with [`new_tree`], called on
    /// the thread that started it; on Windows the suspended child is put
    /// into a new Job Object here, then resumed (everything it starts is
    /// in the job). `None`: the child has no pid (already reaped).
    pub fn adopt(child: &Child) -> Option<i32> {
        super::os::adopt(child)
    }

    /// Whether `id` names a tree that is safe to signal: not 0 or 1 (which
    /// `killpg` reads as "my group" or init) and not the agent's own group.
    pub fn is_foreign_tree(id: i32) -> bool {
        super::os::is_foreign_tree(id)
    }

    /// Sends `signal` to every process of tree `id`, unless it is not ours
    /// to signal ([`is_foreign_tree`]); a tree that is gone is not an error.
    pub fn signal_tree(id: i32, signal: Signal) {
        super::os::signal_tree(id, signal);
    }

    /// Forgets tree `id` after its last signal (Windows: closes the job,
    /// which ends whatever is still in it; Unix: nothing to do).
    pub fn release_tree(id: i32) {
        super::os::release_tree(id);
    }

    /// Has our child `pid` (a tree's leader) exited? Does not reap it, so
    /// its pid (the tree's id) cannot be reused before the last signal.
    /// `Some(None)`: it exited (or is gone), status unknown until reaped.
    pub fn peek_exit(pid: i32) -> Option<Option<Exit>> {
        super::os::peek_exit(pid)
    }

    /// How a reaped child ended.
    pub fn exit_of(status: ExitStatus) -> Option<Exit> {
        super::os::exit_of(status)
    }

    /// `"SIGKILL"` for 9, etc.; `"SIG<n>"` for unusual ones.
    pub fn signal_name(sig: i32) -> String {
        super::os::signal_name(sig)
    }

    /// Notices that some child exited (Unix: `SIGCHLD`), so that exits are
    /// not only found by polling.
    pub struct ChildExits(super::os::ChildExits);

    impl ChildExits {
        /// The next notice; `None` once no more can come.
        pub async fn recv(&mut self) -> Option<()> {
            self.0.recv().await
        }
    }

    /// A listener for child exits, made before the child is started;
    /// an error where the system has none (Windows: exits are polled).
    pub fn child_exits() -> io::Result<ChildExits> {
        super::os::child_exits().map(ChildExits)
    }

    /// Whether `command` names a program that can be started, found the
    /// way the system does: with a directory part, relative to `cwd`;
    /// else on `path` (`PATH`'s value), with `PATHEXT` on Windows.
    pub fn findable(command: &str, path: &OsStr, cwd: &Path) -> bool {
        super::os::find_program(command, path, cwd, false).is_some()
    }

    /// The program `command` names, found as [`findable`] does from the
    /// agent's own directory and `PATH`, and executable.
    pub fn find(command: &str) -> Option<PathBuf> {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let cwd = std::env::current_dir().unwrap_or_default();
        super::os::find_program(command, &path, &cwd, true)
    }

    /// The error a program that cannot be found gives ("No such file or
    /// directory" / "The system cannot find the file specified").
    pub fn not_found() -> io::Error {
        // ENOENT and ERROR_FILE_NOT_FOUND are both 2.
        io::Error::from_raw_os_error(2)
    }
}

/// Files: owner-only files and folders, identities, links.
pub mod fs {
    use std::fs::{DirBuilder, File, Metadata, OpenOptions};
    use std::io;
    use std::path::{Path, PathBuf};

    /// Folders made by `builder` are the owner's only (Unix: mode 0700;
    /// Windows: the ACL inherited from the user's profile, which is
    /// already private).
    pub fn owner_only_dir(builder: &mut DirBuilder) -> &mut DirBuilder {
        super::os::owner_only_dir(builder)
    }

    /// Files created by `options` are the owner's only (Unix: mode 0600;
    /// Windows: the inherited ACL).
    pub fn owner_only_file(options: &mut OpenOptions) -> &mut OpenOptions {
        super::os::owner_only_file(options)
    }

    /// The variables that name the user's home, in order: `HOME` on Unix;
    /// on Windows `USERPROFILE` (whose ACL is the user's own), then `HOME`
    /// (which Git for Windows and MSYS set, sometimes to a POSIX spelling).
    pub const HOME_VARS: &[&str] = super::os::HOME_VARS;

    /// The user's home (`~`): the first of [`HOME_VARS`] that is set and
    /// not empty in `env`.
    pub fn home_with(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
        HOME_VARS
            .iter()
            .filter_map(|v| env(v))
            .find(|h| !h.is_empty())
            .map(PathBuf::from)
    }

    /// The user's home (`~`) from this process's environment
    /// ([`home_with`]); every reader of `~` goes through here.
    pub fn home() -> Option<PathBuf> {
        home_with(|v| std::env::var_os(v))
    }

    /// `.owner_only()` on a [`DirBuilder`] or [`OpenOptions`]: what it
    /// creates is the owner's only ([`owner_only_dir`], [`owner_only_file`]).
    pub trait OwnerOnly {
        fn owner_only(&mut self) -> &mut Self;
    }

    impl OwnerOnly for DirBuilder {
        fn owner_only(&mut self) -> &mut Self {
            owner_only_dir(self)
        }
    }

    impl OwnerOnly for OpenOptions {
        fn owner_only(&mut self) -> &mut Self {
            owner_only_file(self)
        }
    }

    /// Narrows an existing folder to its owner (Unix: mode 0700; Windows:
    /// nothing, see [`owner_only_dir`]).
    pub fn restrict_dir(path: &Path) -> io::Result<()> {
        super::os::restrict_dir(path)
    }

    /// Narrows an open file to its owner (Unix: mode 0600; Windows:
    /// nothing, see [`owner_only_file`]).
    pub fn restrict_file(file: &File) -> io::Result<()> {
        super::os::restrict_file(file)
    }

    /// Whether `path` is `root` or lies beneath it, both resolved: by
    /// components on Unix; on Windows in any case, with either slash, with
    /// or without a `\\?\` prefix, 8.3 names expanded, stream suffixes and
    /// trailing dots and spaces dropped ([`relative_beneath`]), as the
    /// file system itself reads names.
    pub fn is_beneath(path: &Path, root: &Path) -> bool {
        super::os::is_beneath(path, root)
    }

    /// `path` resolved (links followed, `..` gone), spelled as programs
    /// accept it: on Windows without the `\\?\` prefix that
    /// `std::fs::canonicalize` adds, whenever the plain path names the same
    /// file (`dunce`, as Codex does); only paths that need the prefix (too
    /// long, reserved names) keep it. Every root, working directory and
    /// path shown to the model or the user is resolved through here.
    pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
        dunce::canonicalize(path)
    }

    /// `path` without a `\\?\` prefix where the plain spelling names the
    /// same file (Windows); as it is elsewhere. For working directories and
    /// command lines: cmd.exe refuses a UNC-style working directory and
    /// runs in `C:\Windows` instead.
    pub fn simplified(path: &Path) -> &Path {
        dunce::simplified(path)
    }

    /// The part of `path` beneath `root` (both resolved), `None` when it
    /// is not beneath, spelled so that one file has one spelling: on Unix
    /// the components as they are; on Windows with 8.3 short names of
    /// existing folders and files expanded (`PROGRA~1`), and each name as
    /// the file system reads it (no `::$DATA` or other stream suffix, no
    /// trailing dots or spaces: [`super::win::file_name`]), compared in any
    /// case. Protected paths are matched on this ([`is_beneath`] agrees).
    pub fn relative_beneath(path: &Path, root: &Path) -> Option<PathBuf> {
        super::os::relative_beneath(path, root)
    }

    /// The name a file or folder that does not exist yet gets when it is
    /// created as `name`: as it is on Unix; on Windows without trailing
    /// dots and spaces (`foo.` and `foo ` name `foo`,
    /// [`super::win::created_name`]).
    pub fn created_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
        super::os::created_name(name)
    }

    /// The Unix permission bits, `None` on Windows.
    pub fn mode(meta: &Metadata) -> Option<u32> {
        super::os::mode(meta)
    }

    /// Whether a regular file can be run as a program: an execute bit
    /// (Unix), a `PATHEXT` extension (Windows).
    pub fn is_executable(path: &Path, meta: &Metadata) -> bool {
        meta.is_file() && super::os::is_executable(path, meta)
    }

    /// Opens without following a link at the end of the path (the link
    /// itself is opened, and is not a regular file), and without waiting
    /// on a FIFO's writer (Unix).
    pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
        super::os::no_follow(options)
    }

    /// What identifies an open file on its system: (device, inode) on
    /// Unix, (volume serial number, file index) on Windows.
    pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
        super::os::file_id(file)
    }

    /// [`file_id`] of what is at `path` now (a link at its end followed).
    pub fn path_id(path: &Path) -> io::Result<(u64, u64)> {
        super::os::path_id(path)
    }

    /// The inode of what `meta` describes, `0` where metadata does not
    /// carry one (Windows): a version stamp's tie-breaker only.
    pub fn inode(meta: &Metadata) -> u64 {
        super::os::inode(meta)
    }

    /// How many names the regular file at `path` has (hard links); no
    /// link at its end is followed. `None` when it is not a regular file.
    pub fn link_count(path: &Path) -> Option<u64> {
        super::os::link_count(path)
    }

    /// A path that opens the very file `file` is (Linux:
    /// `/proc/self/fd/N`), whatever is at its old path now; `None` where
    /// the system has no such path.
    pub fn open_file_path(file: &File) -> Option<std::path::PathBuf> {
        super::os::open_file_path(file)
    }

    /// For tests: a file at `path` that is not a regular file and whose
    /// reading would wait for a writer (a FIFO, Unix); `false` where the
    /// system cannot make one at any path (Windows: named pipes live in
    /// `\\.\pipe\` only). Tests that prove a special file is not read make
    /// one where they can, and prove the rest everywhere.
    #[cfg(test)]
    pub fn make_fifo_for_test(path: &Path) -> bool {
        super::os::make_fifo_for_test(path)
    }

    /// For tests: a device whose reading never ends (`/dev/zero`), where
    /// the system has one at a path a link can name.
    #[cfg(test)]
    pub const ENDLESS_DEVICE: Option<&str> = super::os::ENDLESS_DEVICE;

    /// A symbolic link at `link` to `target` (Windows: a directory link
    /// when `target`, read from `link`'s folder, is a directory). For
    /// tests that build trees with links.
    pub fn symlink(target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
        super::os::symlink(target.as_ref(), link.as_ref())
    }
}

/// The agent's own stdin and stdout as async streams for the connection
/// (Unix: a pipe reopened non-blocking on the reactor; elsewhere tokio's).
/// Both carry bytes as they are: no newline translation anywhere.
pub mod stdio {
    pub use super::os::stdio::{Stdin, Stdout, stdin, stdout};
}

/// The controlling terminal (questions that must reach a person).
pub mod term {
    use std::fs::File;

    /// The terminal for reading and for writing (Unix: `/dev/tty` twice;
    /// Windows: `CONIN$` and `CONOUT$`); `None` without one.
    pub fn open() -> Option<(File, File)> {
        super::os::open_tty()
    }

    /// Turns echo off on the terminal `input` until the guard is dropped
    /// (a newline is still echoed on Unix); `None` when it cannot.
    pub fn echo_off(input: &File) -> Option<EchoOff> {
        super::os::echo_off(input).map(EchoOff)
    }

    /// What to write after a line read with echo off, so that the next
    /// text starts on a line of its own: nothing where the terminal still
    /// echoed the newline (Unix, `ECHONL`), a newline on Windows.
    pub const AFTER_HIDDEN: &str = super::os::AFTER_HIDDEN;

    /// Restores the terminal's echo when dropped.
    pub struct EchoOff(#[allow(dead_code)] super::os::EchoGuard);
}

/// Requests to stop the agent.
pub mod signals {
    /// Resolves when the agent is asked to stop: `SIGTERM` or `SIGINT`
    /// (Unix); Ctrl-C, Ctrl-Break or the console closing (Windows). Never,
    /// if the handlers cannot be set up.
    pub async fn terminated() {
        super::os::terminated().await;
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

    /// Takes the variables `names` out of the process: returns each one
    /// found with its value, wipes the value where the system keeps a copy
    /// other processes can read (Unix: the bytes in `environ`, which
    /// `/proc/PID/environ` shows on Linux), and unsets it.
    ///
    /// # Safety
    ///
    /// No other thread may exist (the environment is written).
    pub unsafe fn take_env(names: &[String]) -> Vec<(String, String)> {
        // SAFETY: the caller's contract.
        unsafe { super::os::take_env(names) }
    }
}

/// Sockets of other processes.
pub mod net {
    /// Who owns the TCP socket listening on a loopback port.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Owner {
        /// This user, or root.
        Trusted,
        /// Another user (their uid): a squatter, for a well-known port.
        Other(u32),
        /// Not known: nothing listens, or this system does not say (macOS,
        /// Windows).
        Unknown,
    }

    /// Who owns what listens on loopback `port` (Linux: `/proc/net/tcp`
    /// and `tcp6`; elsewhere [`Owner::Unknown`]).
    pub fn listener_owner(port: u16) -> Owner {
        super::os::listener_owner(port)
    }
}

/// Text of what commands write to a pipe: UTF-8 as it is; on Windows,
/// output that is not UTF-8 is read in the console's code page (cmd.exe and
/// console programs write the OEM code page, e.g. 850, to a pipe).
pub mod console {
    pub use super::decode::Decoder;
}

/// File watching.
pub mod watch {
    /// The `notify` backend that watches trees on this system.
    pub const BACKEND: &str = super::os::WATCH_BACKEND;
}

#[cfg(test)]
mod full_auto_tests {
    use super::sandbox::runs_unasked;

    /// Full-auto runs commands unasked where the PROBED sandbox confines
    /// them (issue 42.11: a `sandbox-exec` that refused the profile
    /// confines nothing, whatever the build could do); where it confines
    /// nothing, only when the user's config turned the missing one off.
    /// `tools::sandbox::full_auto_runs_commands` passes the probed
    /// `Level::confines()`.
    #[test]
    fn full_auto_runs_commands_only_confined_or_by_the_users_choice() {
        assert!(runs_unasked(true, false));
        assert!(!runs_unasked(false, false));
        assert!(runs_unasked(false, true));
    }
}
