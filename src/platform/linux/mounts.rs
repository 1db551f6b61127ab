//! The namespace step of the sandbox: a private mount namespace (inside a new
//! user namespace unless the launcher already holds `CAP_SYS_ADMIN`, i.e. runs
//! as root) in which git's executable configuration inside the session roots
//! is bind-mounted read-only onto itself.
//!
//! Landlock grants write access to whole trees and cannot carve a read-only
//! subtree out of a writable one; a read-only bind mount can (bubblewrap does
//! the same for Codex). Plain syscalls through `libc`, no `bwrap` needed.
//!
//! What is protected in each root is found in `git_dirs.rs`.
//!
//! The roots and those git directories are also bound onto themselves
//! (read-write): a mount point cannot be renamed or removed (`EBUSY`), so a
//! command cannot move `.git` aside and put a new one with its own `config`
//! in its place. Landlock then forbids any further mount or unmount.
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error(
        "cannot create a private mount namespace ({0}); unprivileged user namespaces may be \
         disabled (sysctl kernel.unprivileged_userns_clone, or AppArmor's \
         kernel.apparmor_restrict_unprivileged_userns)"
    )]
    Unshare(io::Error),
    #[error("cannot map the user and group ids into the new user namespace ({0})")]
    IdMap(io::Error),
    #[error("cannot make {}: {source}", what)]
    Mount { what: String, source: io::Error },
    #[error(
        "cannot protect {}: it is a symbolic link; a command could replace it (make it a regular file or directory)",
        .0.display()
    )]
    Symlink(PathBuf),
}

/// What the mount namespace is made of (SECURITY.md §2).
pub struct Plan<'a> {
    /// The writable roots (git directories in them protected).
    pub roots: &'a [PathBuf],
    /// Temp directories: each gets an empty, private tmpfs (as `/tmp` and `/dev/shm` do).
    pub temp: &'a [PathBuf],
    /// Protected paths in the roots: read-only when present, else kept absent.
    pub read_only: &'a [PathBuf],
    /// Paths made unreadable.
    pub unreadable: &'a [PathBuf],
    pub network_off: bool,
}

/// Enters the namespaces and builds the command's view of the file system,
/// bubblewrap's `--ro-bind / /` model with plain syscalls:
///
/// 1. every mount read-only, recursively (`mount_setattr`): no write of any
///    kind outside the roots, metadata (`chmod`, `chown`, `utime`,
///    `setxattr`) included, which Landlock does not cover;
/// 2. an empty tmpfs of its own on `/tmp`, `/dev/shm` and the temp
///    directory: no other process's files or sockets there;
/// 3. the roots put back writable (copies of their mounts taken before 1);
///    in them git's configuration and the protected paths read-only;
/// 4. the unreadable paths covered: a directory by an empty tmpfs that no
///    one may enter, a file by an empty file that no one may read; the
///    UNIX sockets that processes outside had bound (from `/proc/net/unix`)
///    covered the same way, so `connect` finds no socket there. A
///    read-only mount alone does not stop `connect`.
///
/// Returns the paths that must stay absent: `commondir` in git directories
/// that have none (git would take its configuration from the directory it
/// names, and a missing file cannot be bind-mounted) and the protected
/// paths that do not exist; the launcher removes any the command created.
pub fn enter(plan: &Plan) -> Result<Vec<PathBuf>, NamespaceError> {
    let roots = plan.roots;
    // Read in the agent's network namespace: a new one lists nothing.
    let sockets = bound_sockets();
    unshare(plan.network_off)?;
    let (mut pinned, mut readonly) = (Vec::new(), Vec::new());
    for root in roots {
        super::git_dirs::protected(root, &mut pinned, &mut readonly)
            .map_err(|super::git_dirs::Symlink(path)| NamespaceError::Symlink(path))?;
    }
    // Roots may share a git directory (a worktree and its main checkout).
    for list in [&mut pinned, &mut readonly] {
        let mut seen = std::collections::HashSet::new();
        list.retain(|p| seen.insert(p.clone()));
    }
    let mut absent: Vec<PathBuf> = pinned
        .iter()
        .filter(|p| !roots.contains(p))
        .map(|g| g.join("commondir"))
        .filter(|c| std::fs::symlink_metadata(c).is_err())
        .collect();

    // 1. Copies of the roots' mounts while they are writable, then all read-only.
    let mut dirs: Vec<&PathBuf> = roots.iter().filter(|r| r.is_dir()).collect();
    dirs.sort_by_key(|r| r.components().count());
    dirs.dedup();
    let copies = dirs
        .iter()
        .map(|r| clone_tree(r).map(|fd| (*r, fd)))
        .collect::<Result<Vec<_>, _>>()?;
    read_only_everywhere()?;

    // 2. Private temp directories.
    let mut temps: Vec<PathBuf> = ["/tmp", "/dev/shm"]
        .iter()
        .map(PathBuf::from)
        .chain(plan.temp.iter().cloned())
        .filter(|t| !roots.iter().any(|r| t.starts_with(r)))
        .collect();
    temps.sort_by_key(|t| t.components().count());
    temps.dedup();
    for t in &temps {
        if !t.is_dir() {
            // A temp directory inside one made private above: make it there.
            if std::fs::create_dir_all(t).is_err() {
                continue;
            }
        }
        tmpfs(t, c"mode=1777", libc::MS_NOSUID | libc::MS_NODEV)?;
    }

    // 3. The roots, writable again; their protected parts read-only.
    for (root, fd) in copies {
        if !root.is_dir() {
            // A root inside a private temp directory.
            let _ = std::fs::create_dir_all(root);
        }
        attach(&fd, root)?;
    }
    for p in pinned.iter().filter(|p| !roots.contains(p)) {
        bind(p, p, false)?;
    }
    for p in &readonly {
        bind(p, p, true)?;
    }
    for p in plan.read_only {
        match std::fs::symlink_metadata(p) {
            // A link cannot be covered (a mount follows it): its target is
            // read-only when outside the roots; inside, it is the
            // project's own file. Documented in SECURITY.md.
            Ok(m) if m.file_type().is_symlink() => {}
            Ok(_) => bind(p, p, true)?,
            Err(_) => absent.push(p.clone()),
        }
    }

    // 4. What may not be read or reached.
    let cover = Cover::new()?;
    for p in plan.unreadable {
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => tmpfs(
                p,
                c"mode=000,size=4k",
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            )?,
            Ok(_) => cover.over(p, true)?,
            Err(_) => {}
        }
    }
    let inside = |s: &Path| {
        roots
            .iter()
            .chain(&temps)
            .chain(plan.unreadable)
            .any(|r| s.starts_with(r))
    };
    for s in sockets.iter().filter(|s| !inside(s)) {
        cover.over(s, false)?;
    }
    drop(cover);

    // The working directory still points into the mounts as they were
    // before: resolve it again, or `echo x >> .git/config` run from the
    // root would write through the old, writable mount.
    if let Ok(cwd) = std::env::current_dir() {
        std::env::set_current_dir(&cwd).map_err(|source| NamespaceError::Mount {
            what: format!("{} the working directory again", cwd.display()),
            source,
        })?;
    }
    Ok(absent)
}

/// What `--probe` checks: the namespace, and the steps of [`enter`] on `dir`.
pub fn probe(dir: &Path, network_off: bool) -> Result<(), NamespaceError> {
    unshare(network_off)?;
    let copy = clone_tree(dir)?;
    read_only_everywhere()?;
    tmpfs(
        Path::new("/tmp"),
        c"mode=1777",
        libc::MS_NOSUID | libc::MS_NODEV,
    )?;
    if !dir.is_dir() {
        let _ = std::fs::create_dir_all(dir);
    }
    attach(&copy, dir)?;
    bind(dir, dir, true)
}

/// The paths of the UNIX sockets bound in this network namespace
/// (`/proc/net/unix`; abstract ones, `@…`, are Landlock's and the network
/// namespace's to stop; relative ones cannot be placed).
fn bound_sockets() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/net/unix") else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            l.split_once(" /")
                .map(|(_, p)| PathBuf::from(format!("/{p}")))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// An empty file that no one may read, bind-mounted read-only over files to
/// hide them. It lives in the private `/tmp` until dropped (the mounts keep it).
struct Cover {
    path: PathBuf,
}

impl Cover {
    fn new() -> Result<Self, NamespaceError> {
        let path = PathBuf::from(format!("/tmp/.acp-coder-cover-{}", std::process::id()));
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o000)
            .open(&path)
            .map_err(|source| NamespaceError::Mount {
                what: "a file to cover unreadable files with".into(),
                source,
            })?;
        Ok(Self { path })
    }

    /// Covers `target`; `strict`: a failure is an error (for a socket of
    /// another process, a path that cannot be reached is fine: the command
    /// cannot reach it either).
    fn over(&self, target: &Path, strict: bool) -> Result<(), NamespaceError> {
        match bind(&self.path, target, true) {
            Err(NamespaceError::Mount { source, .. })
                if !strict
                    && matches!(
                        source.raw_os_error(),
                        Some(libc::ENOENT | libc::EACCES | libc::ENOTDIR | libc::ELOOP)
                    ) =>
            {
                Ok(())
            }
            r => r,
        }
    }
}

impl Drop for Cover {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Makes every mount of the namespace read-only, recursively (Linux 5.12).
fn read_only_everywhere() -> Result<(), NamespaceError> {
    let attr = libc::mount_attr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a static C string and a local struct of the size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &raw const attr,
            std::mem::size_of::<libc::mount_attr>(),
        )
    };
    if r != 0 {
        return Err(NamespaceError::Mount {
            what: "every mount read-only".into(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// A detached copy of the mounts at and below `path` (`open_tree`).
fn clone_tree(path: &Path) -> Result<std::os::fd::OwnedFd, NamespaceError> {
    use std::os::fd::FromRawFd as _;
    let err = |source| NamespaceError::Mount {
        what: format!("a copy of the mounts at {}", path.display()),
        source,
    };
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| err(io::Error::from(io::ErrorKind::InvalidInput)))?;
    // SAFETY: a valid C string; the flags ask for a new, close-on-exec fd.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::OPEN_TREE_CLONE | libc::OPEN_TREE_CLOEXEC | libc::AT_RECURSIVE as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(err(io::Error::last_os_error()));
    }
    // SAFETY: open_tree returned a new descriptor that we own.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Attaches a copy made by [`clone_tree`] at `target` (`move_mount`).
fn attach(fd: &std::os::fd::OwnedFd, target: &Path) -> Result<(), NamespaceError> {
    use std::os::fd::AsRawFd as _;
    let err = |source| NamespaceError::Mount {
        what: format!("{} writable again", target.display()),
        source,
    };
    let c = CString::new(target.as_os_str().as_bytes())
        .map_err(|_| err(io::Error::from(io::ErrorKind::InvalidInput)))?;
    // SAFETY: a descriptor we own, an empty path and a valid C string.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            fd.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if r != 0 {
        return Err(err(io::Error::last_os_error()));
    }
    Ok(())
}

/// Mounts a fresh tmpfs on `target` with `options` (`mode=…`).
fn tmpfs(
    target: &Path,
    options: &std::ffi::CStr,
    flags: libc::c_ulong,
) -> Result<(), NamespaceError> {
    let err = |source| NamespaceError::Mount {
        what: format!("a private {}", target.display()),
        source,
    };
    let c = CString::new(target.as_os_str().as_bytes())
        .map_err(|_| err(io::Error::from(io::ErrorKind::InvalidInput)))?;
    // SAFETY: valid C strings for mount(2).
    let r = unsafe {
        libc::mount(
            c"tmpfs".as_ptr(),
            c.as_ptr(),
            c"tmpfs".as_ptr(),
            flags,
            options.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(err(io::Error::last_os_error()));
    }
    Ok(())
}

/// Mounts a `/proc` of the new PID namespace over the old one. Only a
/// process inside that namespace can (the launcher's children are; the
/// launcher is not): `/proc` then lists the command's own processes, not
/// the agent's or its MCP servers', whose environments hold their tokens.
/// Fails where the old `/proc` is partly covered (some containers mask
/// files in it), which a user namespace may not undo.
/// Async-signal-safe (no allocation): the holder calls it right after `fork`.
pub fn mount_proc() -> io::Result<()> {
    // SAFETY: static C strings for mount(2); no data argument.
    let r = unsafe {
        libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn unshare(network_off: bool) -> Result<(), NamespaceError> {
    // A PID namespace too: the launcher's first child (the holder) is its
    // init, and when that dies the kernel kills every process left in it,
    // `setsid` daemons included, which a process group cannot hold.
    let net = libc::CLONE_NEWPID | if network_off { libc::CLONE_NEWNET } else { 0 };
    // SAFETY: the ids are read before the namespace changes; unshare takes flags only.
    let (uid, gid, euid) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid()) };
    let mut user_ns = false;
    // Root (CAP_SYS_ADMIN) needs no user namespace; otherwise, or if root's
    // attempt is refused (a container without the capability), make one.
    // SAFETY: unshare takes flags only; the launcher is single-threaded.
    let direct = euid == 0 && unsafe { libc::unshare(libc::CLONE_NEWNS | net) } == 0;
    if !direct {
        // SAFETY: as above.
        if unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | net) } != 0 {
            return Err(NamespaceError::Unshare(io::Error::last_os_error()));
        }
        user_ns = true;
    }
    if user_ns {
        let write = |file: &str, text: String| {
            std::fs::write(format!("/proc/self/{file}"), text).map_err(NamespaceError::IdMap)
        };
        write("setgroups", "deny".into())?;
        write("uid_map", format!("{uid} {uid} 1"))?;
        write("gid_map", format!("{gid} {gid} 1"))?;
    }
    // Our mounts must not propagate back to the agent's namespace.
    mount(
        None,
        Path::new("/"),
        libc::MS_REC | libc::MS_PRIVATE,
        "the mounts private",
    )
}

/// Binds `source` onto `path` (itself, or a cover); `readonly` then
/// remounts the bind read-only, keeping the flags the original mount has (a
/// user namespace may not drop `nosuid`/`nodev`/`noexec` it inherited).
fn bind(source: &Path, path: &Path, readonly: bool) -> Result<(), NamespaceError> {
    let what = |kind: &str| format!("{} {kind}", path.display());
    mount(
        Some(source),
        path,
        libc::MS_BIND | libc::MS_REC,
        &what("a mount point"),
    )?;
    if !readonly {
        return Ok(());
    }
    let flags = locked_flags(path);
    mount(
        None,
        path,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | flags,
        &what("read-only"),
    )
}

fn locked_flags(path: &Path) -> libc::c_ulong {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: statvfs fills a zeroed local; `c` is a valid C string.
    let f = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return 0;
        }
        st.f_flag
    };
    let mut flags = 0;
    for (st, ms) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f & st != 0 {
            flags |= ms;
        }
    }
    flags
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    flags: libc::c_ulong,
    what: &str,
) -> Result<(), NamespaceError> {
    let err = |source| NamespaceError::Mount {
        what: what.to_owned(),
        source,
    };
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| err(io::Error::from(io::ErrorKind::InvalidInput)))
    };
    let target_c = c(target)?;
    let source_c = source.map(c).transpose()?;
    // SAFETY: valid C strings (or null) for mount(2); no data argument.
    let r = unsafe {
        libc::mount(
            source_c.as_ref().map_or(std::ptr::null(), |s| s.as_ptr()),
            target_c.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(err(io::Error::last_os_error()));
    }
    Ok(())
}
