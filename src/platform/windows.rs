//! Windows: there is no command sandbox (commands run with the user's
//! rights, and the agent says so in `doctor` and in the full-auto mode's
//! description); commands run through `cmd.exe` without AutoRun; programs
//! named without an extension are found through `PATHEXT` ([`super::win`]).
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::sandbox::{Level, Policy};

pub const SUBCOMMAND: &str = "sandbox-exec";
pub const MESSAGE_PREFIX: &str = "acp-coder sandbox:";
pub const SANDBOX_AVAILABLE: bool = false;
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

/// Containers are a Linux matter here: none is detected on Windows.
pub fn container() -> Option<String> {
    None
}

pub fn sandbox_fix(_level: &Level) -> Option<&'static str> {
    Some(
        "run acp-coder inside WSL 2 for the Linux sandbox; on Windows itself full-auto asks before each command (full_auto_without_sandbox = true in the config lets it run them unasked and unconfined)",
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

// ---------------------------------------------------------------------------
// Process trees: Job Objects.
// ---------------------------------------------------------------------------

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{DirBuilder, File, Metadata, OpenOptions};
use std::io;
use std::os::windows::fs::OpenOptionsExt as _;
use std::os::windows::io::AsRawHandle as _;
use std::process::ExitStatus;
use std::sync::{Mutex, PoisonError};

use tokio::process::{Child, Command};
use windows_sys::Win32::Foundation::{CloseHandle, HANDLE, WAIT_OBJECT_0};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_EXTENDED_LIMIT_INFORMATION, JobObjectExtendedLimitInformation,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    CREATE_NEW_PROCESS_GROUP, CREATE_NO_WINDOW, CREATE_SUSPENDED, GetExitCodeProcess, OpenProcess,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, WaitForSingleObject,
};

use super::process::{Exit, Signal};

/// The exit code a tree ended by the agent gets (`TerminateJobObject`).
const KILLED_EXIT_CODE: u32 = 1;

/// One tree: the Job Object holding it, and a handle on its leader for
/// peeking at its exit. Both closed on drop; closing the job ends every
/// process still in it (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`).
struct Tree {
    job: Option<OwnedHandle>,
    leader: OwnedHandle,
}

struct OwnedHandle(HANDLE);

// SAFETY: a kernel handle may be used and closed from any thread.
unsafe impl Send for OwnedHandle {}

impl Drop for OwnedHandle {
    fn drop(&mut self) {
        // SAFETY: the handle is ours and closed once.
        unsafe { CloseHandle(self.0) };
    }
}

/// The trees the agent started, by leader pid. When the agent ends, the
/// system closes the job handles, and the trees end with it.
static TREES: Mutex<Option<HashMap<i32, Tree>>> = Mutex::new(None);

fn with_trees<T>(f: impl FnOnce(&mut HashMap<i32, Tree>) -> T) -> T {
    let mut trees = TREES.lock().unwrap_or_else(PoisonError::into_inner);
    f(trees.get_or_insert_with(HashMap::new))
}

/// The shell of this machine, chosen once ([`super::win::choose_shell`]).
fn the_shell() -> &'static super::win::Shell {
    static SHELL: std::sync::OnceLock<super::win::Shell> = std::sync::OnceLock::new();
    SHELL.get_or_init(|| {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let pathext = std::env::var("PATHEXT").ok();
        let env = |v: &str| std::env::var(v).ok();
        let find =
            |name: &str| super::win::resolve(name, &path, pathext.as_deref(), |p| p.is_file());
        let exists = |p: &Path| p.is_file();
        let shell = super::win::choose_shell(&super::win::Probe {
            env: &env,
            find: &find,
            exists: &exists,
        });
        tracing::info!(shell = %shell.program.display(), kind = ?shell.kind, "command shell");
        shell
    })
}

pub fn shell() -> (&'static str, &'static [&'static str]) {
    let shell = the_shell();
    (
        shell.program.to_str().unwrap_or("cmd.exe"),
        super::win::shell_args(shell.kind),
    )
}

pub fn check_shell_text(text: &str) -> Result<(), String> {
    super::win::check_text(the_shell().kind, text)
}

pub fn shell_text(text: &str) -> String {
    super::win::shell_text(the_shell().kind, text)
}

pub fn terminal_request(text: &str) -> Option<super::win::TerminalRequest> {
    Some(super::win::terminal_request(the_shell(), text))
}

pub fn shell_description() -> &'static str {
    super::win::shell_description(the_shell().kind)
}

pub fn push_shell_text(cmd: &mut Command, text: &str) {
    match the_shell().kind {
        super::win::ShellKind::Cmd => {
            cmd.raw_arg(super::win::cmd_argument(text));
        }
        kind => {
            cmd.arg(super::win::shell_text(kind, text));
        }
    }
}

/// Started suspended: [`adopt`] puts it into its Job Object, then lets it
/// run, so that nothing it starts can be outside the job.
pub fn new_tree(cmd: &mut Command) {
    cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW | CREATE_SUSPENDED);
}

/// Resumes every thread of process `pid` (a child started suspended has
/// one), found through a toolhelp snapshot; how many were resumed.
fn resume_threads(pid: u32) -> io::Result<usize> {
    use windows_sys::Win32::Foundation::INVALID_HANDLE_VALUE;
    use windows_sys::Win32::System::Diagnostics::ToolHelp::{
        CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
    };
    use windows_sys::Win32::System::Threading::{OpenThread, ResumeThread, THREAD_SUSPEND_RESUME};
    // SAFETY: plain call; the handle is closed by OwnedHandle.
    let snapshot = unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) };
    if snapshot == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    let snapshot = OwnedHandle(snapshot);
    // SAFETY: an all-zero THREADENTRY32 is valid; dwSize is set below.
    let mut entry: THREADENTRY32 = unsafe { std::mem::zeroed() };
    entry.dwSize = std::mem::size_of::<THREADENTRY32>() as u32;
    let mut resumed = 0;
    // SAFETY: a valid snapshot handle and entry with its size set.
    let mut more = unsafe { Thread32First(snapshot.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: plain call on a thread id from the snapshot.
            let thread = unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) };
            if !thread.is_null() {
                let thread = OwnedHandle(thread);
                // SAFETY: a thread handle with THREAD_SUSPEND_RESUME.
                if unsafe { ResumeThread(thread.0) } != u32::MAX {
                    resumed += 1;
                }
            }
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snapshot.0, &mut entry) } != 0;
    }
    Ok(resumed)
}

pub fn without_terminal(cmd: &mut Command) {
    cmd.creation_flags(windows_sys::Win32::System::Threading::DETACHED_PROCESS);
}

/// A new job that ends its processes when its last handle closes.
fn kill_on_close_job() -> io::Result<OwnedHandle> {
    // SAFETY: no attributes, no name.
    let job = unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) };
    if job.is_null() {
        return Err(io::Error::last_os_error());
    }
    let job = OwnedHandle(job);
    // SAFETY: an all-zero JOBOBJECT_EXTENDED_LIMIT_INFORMATION is valid.
    let mut limits: JOBOBJECT_EXTENDED_LIMIT_INFORMATION = unsafe { std::mem::zeroed() };
    limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: the struct and its size match the information class.
    let ok = unsafe {
        SetInformationJobObject(
            job.0,
            JobObjectExtendedLimitInformation,
            (&raw const limits).cast(),
            std::mem::size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// Puts the child, started suspended by [`new_tree`], into a Job Object of
/// its own, then resumes it: everything it starts is inside the job from
/// its first instruction. The child is resumed whatever else fails.
pub fn adopt(child: &Child) -> Option<i32> {
    let pid = child.id()?;
    let id = adopt_suspended(child, pid);
    match resume_threads(pid) {
        Ok(0) => tracing::warn!(pid, "no thread of the child to resume"),
        Ok(_) => {}
        Err(err) => tracing::warn!(pid, %err, "cannot resume the child"),
    }
    id
}

fn adopt_suspended(child: &Child, pid: u32) -> Option<i32> {
    let id = i32::try_from(pid).ok()?;
    // SAFETY: plain call; the child is ours and not yet reaped, so the pid
    // names it.
    let leader = unsafe {
        OpenProcess(
            PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION,
            0,
            pid,
        )
    };
    if leader.is_null() {
        tracing::warn!(pid, err = %io::Error::last_os_error(), "cannot open the child process");
        return Some(id);
    }
    let leader = OwnedHandle(leader);
    let job = kill_on_close_job().and_then(|job| {
        let raw = child
            .raw_handle()
            .ok_or_else(|| io::Error::other("the child has no handle"))?;
        // SAFETY: both handles are valid; the child's stays open while `child` lives.
        if unsafe { AssignProcessToJobObject(job.0, raw as HANDLE) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(job)
    });
    let job = match job {
        Ok(job) => Some(job),
        Err(err) => {
            tracing::warn!(pid, %err, "no Job Object for the child: only it can be ended, not what it starts");
            None
        }
    };
    with_trees(|t| t.insert(id, Tree { job, leader }));
    Some(id)
}

pub fn is_foreign_tree(id: i32) -> bool {
    id > 0 && u32::try_from(id).is_ok_and(|p| p != std::process::id())
}

pub fn signal_tree(id: i32, _signal: Signal) {
    with_trees(|t| {
        let Some(tree) = t.get(&id) else {
            return;
        };
        // SAFETY: handles owned by the table.
        let ok = unsafe {
            match &tree.job {
                Some(job) => TerminateJobObject(job.0, KILLED_EXIT_CODE),
                None => windows_sys::Win32::System::Threading::TerminateProcess(
                    tree.leader.0,
                    KILLED_EXIT_CODE,
                ),
            }
        };
        if ok == 0 {
            tracing::debug!(pid = id, err = %io::Error::last_os_error(), "ending the tree failed");
        }
    });
}

pub fn release_tree(id: i32) {
    let tree = with_trees(|t| t.remove(&id));
    drop(tree);
}

pub fn peek_exit(pid: i32) -> Option<Option<Exit>> {
    with_trees(|t| {
        let Some(tree) = t.get(&pid) else {
            return Some(None);
        };
        // SAFETY: a valid process handle; a zero timeout only polls.
        if unsafe { WaitForSingleObject(tree.leader.0, 0) } != WAIT_OBJECT_0 {
            return None;
        }
        let mut code = 0u32;
        // SAFETY: valid handle and out-pointer.
        if unsafe { GetExitCodeProcess(tree.leader.0, &mut code) } == 0 {
            return Some(None);
        }
        Some(Some(Exit::Code(code as i32)))
    })
}

pub fn exit_of(status: ExitStatus) -> Option<Exit> {
    status.code().map(Exit::Code)
}

pub fn signal_name(sig: i32) -> String {
    format!("signal {sig}")
}

/// Windows has no `SIGCHLD`: exits are polled.
pub struct ChildExits;

impl ChildExits {
    pub async fn recv(&mut self) -> Option<()> {
        None
    }
}

pub fn child_exits() -> io::Result<ChildExits> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "Windows has no child-exit signal; exits are polled",
    ))
}

/// A file with a `PATHEXT` extension is a program: `executable` changes nothing.
pub fn find_program(command: &str, path: &OsStr, cwd: &Path, _executable: bool) -> Option<PathBuf> {
    let pathext = std::env::var("PATHEXT").ok();
    let program = if command.contains(['\\', '/', ':']) {
        cwd.join(command).to_string_lossy().into_owned()
    } else {
        command.to_owned()
    };
    super::win::resolve(&program, path, pathext.as_deref(), |p| {
        cwd.join(p).is_file()
    })
}

// ---------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------

pub const HOME_VARS: &[&str] = &["USERPROFILE", "HOME"];

pub fn owner_only_dir(builder: &mut DirBuilder) -> &mut DirBuilder {
    builder
}

pub fn owner_only_file(options: &mut OpenOptions) -> &mut OpenOptions {
    options
}

pub fn restrict_dir(_path: &Path) -> io::Result<()> {
    Ok(())
}

pub fn restrict_file(_file: &File) -> io::Result<()> {
    Ok(())
}

pub fn is_beneath(path: &Path, root: &Path) -> bool {
    relative_beneath(path, root).is_some()
}

/// A name that is not valid Unicode stays as it is.
pub fn created_name(name: &OsStr) -> OsString {
    match name.to_str() {
        Some(n) => super::win::created_name(n).into(),
        None => name.to_owned(),
    }
}

pub fn relative_beneath(path: &Path, root: &Path) -> Option<PathBuf> {
    let (path, root) = (long_names(path), long_names(root));
    super::win::relative(&path.to_string_lossy(), &root.to_string_lossy()).map(PathBuf::from)
}

/// `path` with the 8.3 short names of its longest existing ancestor
/// expanded (`GetLongPathNameW`), the rest as given; unchanged when no
/// name has a `~` or nothing can be expanded.
fn long_names(path: &Path) -> std::borrow::Cow<'_, Path> {
    use std::os::windows::ffi::{OsStrExt as _, OsStringExt as _};
    use windows_sys::Win32::Storage::FileSystem::GetLongPathNameW;
    if !path.as_os_str().to_string_lossy().contains('~') {
        return path.into();
    }
    let mut rest = Vec::new();
    let mut existing = path;
    loop {
        let wide: Vec<u16> = existing.as_os_str().encode_wide().chain([0]).collect();
        let mut buf = vec![0u16; 1024];
        // SAFETY: a NUL-terminated input and an output buffer of the size given.
        let n = unsafe { GetLongPathNameW(wide.as_ptr(), buf.as_mut_ptr(), buf.len() as u32) };
        if n > 0 && (n as usize) < buf.len() {
            buf.truncate(n as usize);
            let mut out = PathBuf::from(std::ffi::OsString::from_wide(&buf));
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out.into();
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return path.into(),
        }
    }
}

pub fn mode(_meta: &Metadata) -> Option<u32> {
    None
}

pub fn is_executable(path: &Path, _meta: &Metadata) -> bool {
    let pathext = std::env::var("PATHEXT").ok();
    let exts = pathext.as_deref().unwrap_or(super::win::DEFAULT_PATHEXT);
    let Some(ext) = path.extension().and_then(OsStr::to_str) else {
        return false;
    };
    exts.split(';')
        .filter_map(|e| e.trim().strip_prefix('.'))
        .any(|e| e.eq_ignore_ascii_case(ext))
}

pub fn no_follow(options: &mut OpenOptions) -> &mut OpenOptions {
    options.custom_flags(windows_sys::Win32::Storage::FileSystem::FILE_FLAG_OPEN_REPARSE_POINT)
}

fn handle_info(
    file: &File,
) -> io::Result<windows_sys::Win32::Storage::FileSystem::BY_HANDLE_FILE_INFORMATION> {
    use windows_sys::Win32::Storage::FileSystem::{
        BY_HANDLE_FILE_INFORMATION, GetFileInformationByHandle,
    };
    // SAFETY: an all-zero BY_HANDLE_FILE_INFORMATION is valid.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: a valid handle and out-pointer.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle() as HANDLE, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info)
}

pub fn file_id(file: &File) -> io::Result<(u64, u64)> {
    let info = handle_info(file)?;
    Ok((
        u64::from(info.dwVolumeSerialNumber),
        (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow),
    ))
}

pub fn path_id(path: &Path) -> io::Result<(u64, u64)> {
    file_id(&File::open(path)?)
}

pub fn inode(_meta: &Metadata) -> u64 {
    0
}

pub fn link_count(path: &Path) -> Option<u64> {
    let mut options = OpenOptions::new();
    options.read(true);
    let file = no_follow(&mut options).open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    handle_info(&file).ok().map(|i| u64::from(i.nNumberOfLinks))
}

pub fn open_file_path(_file: &File) -> Option<PathBuf> {
    None
}

/// Named pipes exist only under `\\.\pipe\`, not at a path of a folder.
#[cfg(test)]
pub fn make_fifo_for_test(_path: &Path) -> bool {
    false
}

/// `NUL` reads as empty, not endless: there is no such device.
#[cfg(test)]
pub const ENDLESS_DEVICE: Option<&str> = None;

pub fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    let resolved = link.parent().unwrap_or(Path::new(".")).join(target);
    if resolved.is_dir() {
        std::os::windows::fs::symlink_dir(target, link)
    } else {
        std::os::windows::fs::symlink_file(target, link)
    }
}

// ---------------------------------------------------------------------------
// Standard streams, console, stop requests.
// ---------------------------------------------------------------------------

/// tokio's streams: std's handles on Windows are binary (no newline
/// translation); an anonymous pipe cannot be driven by the reactor.
pub mod stdio {
    pub type Stdin = tokio::io::Stdin;
    pub type Stdout = tokio::io::Stdout;

    pub fn stdin() -> Stdin {
        tokio::io::stdin()
    }

    pub fn stdout() -> Stdout {
        tokio::io::stdout()
    }
}

pub fn open_tty() -> Option<(File, File)> {
    let input = OpenOptions::new()
        .read(true)
        .write(true)
        .open("CONIN$")
        .ok()?;
    let output = OpenOptions::new()
        .read(true)
        .write(true)
        .open("CONOUT$")
        .ok()?;
    Some((input, output))
}

pub const AFTER_HIDDEN: &str = "\n";

/// The console's input mode before echo was turned off.
pub struct EchoGuard {
    handle: HANDLE,
    saved: u32,
}

// SAFETY: a console handle may be used from any thread.
unsafe impl Send for EchoGuard {}

pub fn echo_off(input: &File) -> Option<EchoGuard> {
    use windows_sys::Win32::System::Console::{ENABLE_ECHO_INPUT, GetConsoleMode, SetConsoleMode};
    let handle = input.as_raw_handle() as HANDLE;
    let mut saved = 0u32;
    // SAFETY: a console input handle the caller keeps open while the guard lives.
    unsafe {
        if GetConsoleMode(handle, &mut saved) == 0
            || SetConsoleMode(handle, saved & !ENABLE_ECHO_INPUT) == 0
        {
            return None;
        }
    }
    Some(EchoGuard { handle, saved })
}

impl Drop for EchoGuard {
    fn drop(&mut self) {
        // SAFETY: restores the mode read by `echo_off` on the same handle.
        unsafe {
            windows_sys::Win32::System::Console::SetConsoleMode(self.handle, self.saved);
        }
    }
}

pub async fn terminated() {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let (Ok(mut c), Ok(mut b), Ok(mut close)) = (ctrl_c(), ctrl_break(), ctrl_close()) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = c.recv() => {}
        _ = b.recv() => {}
        _ = close.recv() => {}
    }
}

/// See [`super::harden::take_env`]. Windows keeps the environment in the
/// process's own block (no `/proc/PID/environ`); unsetting the variable
/// removes it from that block, which is all there is to wipe.
///
/// # Safety
///
/// No other thread may exist (the environment is written).
pub unsafe fn take_env(names: &[String]) -> Vec<(String, String)> {
    let mut taken = Vec::new();
    for name in names {
        if let Some(value) = std::env::var_os(name) {
            taken.push((name.clone(), value.to_string_lossy().into_owned()));
            // SAFETY: no other thread exists (caller's contract).
            unsafe { std::env::remove_var(name) };
        }
    }
    taken
}

/// Who owns a loopback listener is not read here (issue 42 item 8): the
/// local model server found is named where every client sees it instead.
pub fn listener_owner(_port: u16) -> super::net::Owner {
    super::net::Owner::Unknown
}

/// Command output in the console's code page.
pub mod console {
    use windows_sys::Win32::Globalization::{
        CP_UTF8, GetOEMCP, IsDBCSLeadByteEx, MultiByteToWideChar,
    };
    use windows_sys::Win32::System::Console::GetConsoleOutputCP;

    /// The code page console programs write to a pipe in: the console's
    /// output code page, or the OEM one (850, 437, 932…) when the agent has
    /// no console (an editor started it); `None` when that is UTF-8.
    pub fn output_code_page() -> Option<u32> {
        // SAFETY: neither call takes an argument or can fail unsafely.
        let cp = match unsafe { GetConsoleOutputCP() } {
            0 => unsafe { GetOEMCP() },
            cp => cp,
        };
        (cp != CP_UTF8).then_some(cp)
    }

    /// Decodes `carry ++ bytes` in `code_page` into `out`
    /// (`MultiByteToWideChar`); a lead byte of a double-byte code page
    /// (932, 936, 949, 950) cut from its trail byte by the end of the read
    /// waits in `carry` for the next.
    pub fn decode(code_page: u32, carry: &mut Vec<u8>, bytes: &[u8], out: &mut String) {
        carry.extend_from_slice(bytes);
        let mut whole = 0;
        while whole < carry.len() {
            // SAFETY: a plain query on a byte.
            let lead = unsafe { IsDBCSLeadByteEx(code_page, carry[whole]) } != 0;
            match (lead, whole + 1 < carry.len()) {
                (true, true) => whole += 2,
                (true, false) => break,
                (false, _) => whole += 1,
            }
        }
        for piece in carry[..whole].chunks(1 << 20) {
            out.push_str(&wide(code_page, piece));
        }
        carry.drain(..whole);
    }

    /// `bytes` (whole characters, fewer than 2^31) in `code_page` as text.
    fn wide(code_page: u32, bytes: &[u8]) -> String {
        if bytes.is_empty() {
            return String::new();
        }
        let len = bytes.len() as i32;
        // SAFETY: `bytes` is valid for `len` bytes; a null output with
        // size 0 asks for the length needed.
        let need = unsafe {
            MultiByteToWideChar(code_page, 0, bytes.as_ptr(), len, std::ptr::null_mut(), 0)
        };
        if need <= 0 {
            return String::from_utf8_lossy(bytes).into_owned();
        }
        let mut wide = vec![0u16; need as usize];
        // SAFETY: `wide` has room for `need` UTF-16 units.
        let got = unsafe {
            MultiByteToWideChar(code_page, 0, bytes.as_ptr(), len, wide.as_mut_ptr(), need)
        };
        wide.truncate(got.max(0) as usize);
        String::from_utf16_lossy(&wide)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 43.2: cmd.exe's output in the OEM code page reads as text:
    /// 0x82 0x8A are "éè" in code page 850; UTF-8 stays as it is; a
    /// Shift-JIS (932) character cut between two reads is whole.
    #[test]
    fn console_output_is_decoded_in_its_code_page() {
        let decode = |cp: u32, chunks: &[&[u8]]| {
            let (mut carry, mut out) = (Vec::new(), String::new());
            for c in chunks {
                console::decode(cp, &mut carry, c, &mut out);
            }
            (out, carry)
        };
        assert_eq!(decode(850, &[b"caf\x82 \x8a\r\n"]).0, "café è\r\n");
        assert_eq!(decode(850, &[&[0x82, 0x8A]]).0, "éè");
        // 日本 in Shift-JIS, cut inside the first character.
        let sjis = [0x93, 0xFA, 0x96, 0x7B];
        let (out, carry) = decode(932, &[&sjis[..1]]);
        assert_eq!((out.as_str(), carry.as_slice()), ("", &sjis[..1]));
        assert_eq!(decode(932, &[&sjis[..1], &sjis[1..]]).0, "日本");
        // UTF-8 output passes the platform decoder as it is, whatever the
        // console's code page, and bytes that are not UTF-8 are read in it.
        let mut d = crate::platform::console::Decoder::new();
        let mut out = String::new();
        d.push("héllo".as_bytes(), &mut out);
        d.finish(&mut out);
        assert_eq!(out, "héllo");
        if let Some(cp) = console::output_code_page() {
            let mut d = crate::platform::console::Decoder::new();
            let mut out = String::new();
            d.push(&[b'a', 0x82, b'\n'], &mut out);
            d.finish(&mut out);
            let (expected, _) = decode(cp, &[&[b'a', 0x82, b'\n']]);
            assert_eq!(out, expected);
            assert!(!out.contains('\u{fffd}'), "{out:?} in code page {cp}");
        }
    }

    /// Issue 43.5: a tree starts suspended, is put into its job, then runs:
    /// it finishes with its own exit code, inside the job.
    #[tokio::test]
    async fn a_tree_runs_whole_inside_its_job() {
        let mut cmd = Command::new("cmd.exe");
        cmd.args(["/D", "/C", "exit 7"]);
        new_tree(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let id = adopt(&child).unwrap();
        let in_job = with_trees(|t| t.get(&id).is_some_and(|tree| tree.job.is_some()));
        assert!(in_job);
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(7));
        release_tree(id);
    }
}
