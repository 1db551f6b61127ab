//! The macOS sandbox profile (Seatbelt, run by `/usr/bin/sandbox-exec -p`),
//! generated from the same rules as the Linux sandbox: writes only beneath
//! the session roots, the temp directories and the usual devices; git's
//! executable configuration (`.git/config`, `.git/hooks/`, …) and the
//! protected files that make editors or shells run commands stay read-only
//! at any depth in the roots; the secret locations cannot be read at all;
//! the network (IP sockets) follows `sandbox_network`; UNIX-domain sockets
//! connect only to sockets beneath the roots and the command's own temp
//! directory, never to the user's tmux, ssh-agent, Docker or D-Bus.
//!
//! A pure function of its input, compiled and unit-tested on every system;
//! only the macOS build runs it. Paths reach the profile as parameters
//! (`-D NAME=PATH`, `(param "NAME")`), never spliced into its text, except
//! inside the regular expressions of the read-only rules, where each root is
//! escaped so that it can only match itself.
//!
//! Like Codex's profiles (`codex-rs/core/src/seatbelt_base_policy.sbpl`) it
//! starts from `(deny default)`, so that Apple events, arbitrary Mach
//! services and other ways out of the sandbox stay closed; unlike them,
//! reads are allowed everywhere except the secret locations, as on Linux.
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The program that applies a profile (part of every macOS since 10.5).
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// What one command may do. Paths should be canonical (`/private/var/…`
/// rather than `/var/…`): Seatbelt matches the resolved path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// Session roots: writable, with git's configuration and the protected
    /// files in them read-only.
    pub roots: Vec<PathBuf>,
    /// Other writable trees (the temp directories).
    pub writable: Vec<PathBuf>,
    /// Trees no command may read or write (credential stores, the agent's
    /// own configuration and state).
    pub deny_read: Vec<PathBuf>,
    /// Protected paths inside the roots that no generic rule names (the
    /// directory `core.hooksPath` names, `.cargo/config*`): read-only, and
    /// kept absent when they do not exist.
    pub read_only: Vec<PathBuf>,
    /// Whether IP networking is allowed.
    pub network: bool,
    /// The user's `DARWIN_USER_CACHE_DIR` (`confstr`), writable with the
    /// network on: the system's network and certificate code keeps its
    /// caches there (as in Codex's network policy).
    pub user_cache: Option<PathBuf>,
}

/// A generated profile and the parameters its text refers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    pub text: String,
    pub params: Vec<(String, PathBuf)>,
}

/// Files beneath a root that stay read-only, as regular expressions over
/// the part of the path after the root (`/…`), matched at any depth. Git's
/// executable configuration as the Linux sandbox protects it, then the
/// non-git entries of `agent::policy::protected::DEFAULT_PROTECTED`.
const READ_ONLY_TAILS: &[&str] = &[
    // The `.git` entry itself (a directory or a `gitdir:` file): it cannot
    // be replaced by one with its own config.
    "/[.]git",
    // config, config.worktree, commondir of the repository, its submodules
    // (.git/modules/…) and worktrees (.git/worktrees/…).
    "/[.]git(/(modules|worktrees)/.+)?/(config|config[.]worktree|commondir)",
    "/[.]git(/modules/.+)?/hooks(/.*)?",
    "/[.]envrc",
    "/[.]acp-coder(/.*)?",
    "/[.]vscode/(tasks|launch|settings)[.]json",
    "/[^/]*[.]code-workspace",
    "/[.]devcontainer(/.*)?",
    "/[.]devcontainer[.]json",
    "/[.]zed/(tasks|settings)[.]json",
    "/[.]idea/workspace[.]xml",
    "/[.]idea/runConfigurations(/.*)?",
    "/[.]run/[^/]*[.]run[.]xml",
    "/[.]nvim[.]lua",
    "/[.]nvimrc",
    "/[.]exrc",
    "/[.]lazy[.]lua",
    "/[.]dir-locals(-2)?[.]el",
    "/[.]helix/(config|languages)[.]toml",
];

/// Devices every command may write (as on Linux), and the terminals.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/dtracehelper",
];

/// The Seatbelt profile for `spec`.
pub fn profile(spec: &Spec) -> Profile {
    let mut params = Vec::new();
    let mut param = |prefix: &str, path: &Path| {
        let name = format!("{prefix}_{}", params.len());
        params.push((name.clone(), path.to_path_buf()));
        name
    };
    let mut t = String::from(BASE);

    // Reads everywhere but the secret locations; writes in the roots, the
    // temp directories and the devices.
    let denied: Vec<String> = spec
        .deny_read
        .iter()
        .map(|p| param("DENY_READ", p))
        .collect();
    t.push_str("(allow file-read*");
    if denied.is_empty() {
        t.push_str(")\n");
    } else {
        t.push_str("\n  (require-all (subpath \"/\")");
        for d in &denied {
            let _ = write!(t, "\n    (require-not (subpath (param \"{d}\")))");
        }
        t.push_str("))\n");
    }
    let roots: Vec<String> = spec.roots.iter().map(|p| param("ROOT", p)).collect();
    let mut writable = roots.clone();
    writable.extend(spec.writable.iter().map(|p| param("WRITABLE", p)));
    let read_only: Vec<String> = spec.roots.iter().map(|r| read_only_regex(r)).collect();
    let kept: Vec<String> = spec
        .read_only
        .iter()
        .map(|p| param("READ_ONLY", p))
        .collect();
    if !writable.is_empty() {
        t.push_str("(allow file-write*\n  (require-all\n    (require-any");
        for w in &writable {
            let _ = write!(t, "\n      (subpath (param \"{w}\"))");
        }
        t.push(')');
        // The root's own entry: `(subpath ROOT)` covers it, and a command
        // could rename the project into its temp directory, write
        // `.git/config` there (no read-only rule names that place) and
        // rename it back (issue 42.11). Renaming or removing the root is a
        // write to its literal path.
        for r in &roots {
            let _ = write!(t, "\n    (require-not (literal (param \"{r}\")))");
        }
        for re in &read_only {
            let _ = write!(t, "\n    (require-not (regex #\"{re}\"))");
        }
        for k in &kept {
            let _ = write!(t, "\n    (require-not (subpath (param \"{k}\")))");
        }
        for d in &denied {
            let _ = write!(t, "\n    (require-not (subpath (param \"{d}\")))");
        }
        t.push_str("))\n");
    }
    t.push_str("(allow file-write* file-ioctl\n");
    for d in DEVICES {
        let _ = writeln!(t, "  (literal \"{d}\")");
    }
    t.push_str("  (regex #\"^/dev/ttys[0-9]+$\") (regex #\"^/dev/fd/[0-9]+$\"))\n");
    // UNIX-domain sockets: made and reached beneath the roots and the
    // command's own temp directory only. A socket elsewhere belongs to a
    // process outside the sandbox (tmux in /private/tmp, ssh-agent's
    // launchd socket, Docker, a language server) that would run what it is
    // told with the user's full rights.
    t.push_str("(allow system-socket (socket-domain AF_UNIX))\n");
    if !writable.is_empty() {
        for (op, side) in [("network-bind", "local"), ("network-outbound", "remote")] {
            let _ = write!(t, "(allow {op}");
            for w in &writable {
                let _ = write!(t, "\n  ({side} unix-socket (subpath (param \"{w}\")))");
            }
            t.push_str(")\n");
        }
    }
    if spec.network {
        t.push_str(NETWORK);
        if let Some(cache) = &spec.user_cache {
            let c = param("DARWIN_USER_CACHE_DIR", cache);
            let _ = writeln!(t, "(allow file-write* (subpath (param \"{c}\")))");
        }
    }
    Profile { text: t, params }
}

/// The per-command temp directories of the commands that are running,
/// by tree id, so that each is removed when its command's tree is
/// released (`platform::process::release_tree`, after the last signal).
/// `wrap` makes the directory; the same thread then starts the command
/// and adopts its tree, which files the directory under the tree's id.
pub mod temps {
    use std::cell::RefCell;
    use std::path::PathBuf;
    use std::sync::{Mutex, PoisonError};

    thread_local! {
        static WRAPPED: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    }
    static BY_TREE: Mutex<Vec<(i32, PathBuf)>> = Mutex::new(Vec::new());

    /// `dir` was made for the command this thread is about to start.
    pub fn wrapped(dir: PathBuf) {
        WRAPPED.with(|w| *w.borrow_mut() = Some(dir));
    }

    /// The command this thread just started is tree `id`.
    pub fn adopted(id: i32) {
        if let Some(dir) = WRAPPED.with(|w| w.borrow_mut().take()) {
            BY_TREE
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((id, dir));
        }
    }

    /// Tree `id` is over: its temp directory goes, with what the command
    /// left in it.
    pub fn released(id: i32) {
        let dirs: Vec<PathBuf> = {
            let mut all = BY_TREE.lock().unwrap_or_else(PoisonError::into_inner);
            let (gone, kept) = std::mem::take(&mut *all)
                .into_iter()
                .partition(|(tree, _)| *tree == id);
            *all = kept;
            gone.into_iter().map(|(_, d)| d).collect()
        };
        for dir in dirs {
            if let Err(e) = std::fs::remove_dir_all(&dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                tracing::debug!(dir = %dir.display(), error = %e, "cannot remove a command's temp directory");
            }
        }
    }
}

/// `sandbox-exec`'s arguments that run `program args` under `profile`,
/// with `TMPDIR` set to `tmpdir` (the command's own temp directory, the one
/// temp directory the profile lets it write) when given.
pub fn argv(
    profile: &Profile,
    tmpdir: Option<&Path>,
    program: &str,
    args: &[&str],
) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["-p".into(), profile.text.clone().into()];
    for (name, path) in &profile.params {
        let mut d = OsString::from(format!("-D{name}="));
        d.push(path.as_os_str());
        v.push(d);
    }
    v.push("--".into());
    if let Some(dir) = tmpdir {
        v.push("/usr/bin/env".into());
        let mut t = OsString::from("TMPDIR=");
        t.push(dir.as_os_str());
        v.push(t);
    }
    v.push(program.into());
    v.extend(args.iter().map(OsString::from));
    v
}

/// One SBPL regular expression (the text between `#"` and `"`) matching
/// every read-only file beneath `root`, case-insensitively for the names
/// (a `.GIT/CONFIG` on a case-insensitive disk is `.git/config`). It holds
/// no `\` and no `"`, so it reads the same whether or not the profile's
/// reader processes escapes in `#"…"`.
fn read_only_regex(root: &Path) -> String {
    let root = root.to_string_lossy();
    let root = root.trim_end_matches('/');
    let tails: Vec<String> = READ_ONLY_TAILS.iter().map(|t| any_case(t)).collect();
    format!("^{}(/.*)?({})$", escape_regex(root), tails.join("|"))
}

/// A regex that matches `s` literally: metacharacters in brackets (`[.]`);
/// the few that cannot be written so without a backslash (`[`, `]`, `^`,
/// `\`, `"`) match any one character, which can only make the read-only
/// set larger, never smaller.
fn escape_regex(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '.' | '$' | '|' | '?' | '*' | '+' | '(' | ')' | '{' | '}' => {
                out.push('[');
                out.push(c);
                out.push(']');
            }
            '[' | ']' | '^' | '\\' | '"' => out.push('.'),
            c => out.push(c),
        }
    }
    out
}

/// Every ASCII letter outside brackets as `[xX]`.
fn any_case(re: &str) -> String {
    let mut out = String::with_capacity(re.len() * 3);
    let mut in_class = false;
    for c in re.chars() {
        match c {
            '[' => in_class = true,
            ']' => in_class = false,
            _ => {}
        }
        if c.is_ascii_alphabetic() && !in_class {
            let _ = write!(
                out,
                "[{}{}]",
                c.to_ascii_lowercase(),
                c.to_ascii_uppercase()
            );
        } else {
            out.push(c);
        }
    }
    out
}

/// Closed by default; what every command needs to run at all (after
/// Chromium's and Codex's base policies): among them `mach-host*` (Node's
/// `os.cpus()` asks the host port), the `kern.grade_cputype` sysctl that
/// Java reads through a "write", and `RootDomainUserClient` (power
/// management queries).
const BASE: &str = r#"(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow user-preference-read)
(allow ipc-posix-sem ipc-posix-shm)
(allow pseudo-tty)
(allow mach-lookup
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.PowerManagement.control"))
(allow mach-host*)
(allow sysctl-write (sysctl-name "kern.grade_cputype"))
(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))
"#;

/// The network on: IP sockets (any address), name resolution through
/// mDNSResponder, certificate checks, the routing table (`net.routetable`,
/// explicit although `BASE` reads every sysctl, so that narrowing `BASE`
/// cannot break it). UNIX-domain sockets stay as above.
const NETWORK: &str = r#"(allow system-socket)
(allow sysctl-read (sysctl-name-prefix "net.routetable."))
(allow network-outbound (remote ip "*:*"))
(allow network-inbound (local ip "*:*"))
(allow network-bind (local ip "*:*"))
(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))
(allow mach-lookup
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.SecurityServer")
  (global-name "com.apple.networkd")
  (global-name "com.apple.ocspd")
  (global-name "com.apple.trustd.agent")
  (global-name "com.apple.SystemConfiguration.DNSConfiguration")
  (global-name "com.apple.SystemConfiguration.configd"))
"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(network: bool) -> Spec {
        Spec {
            roots: vec!["/Users/me/proj".into()],
            writable: vec!["/private/var/folders/x/T/acp-coder-501-7/1".into()],
            deny_read: vec!["/Users/me/.ssh".into()],
            read_only: vec!["/Users/me/proj/.husky".into()],
            network,
            user_cache: Some("/private/var/folders/x/C".into()),
        }
    }

    /// The compiled read-only regex, as Seatbelt would read it from the
    /// profile, run with the `regex` crate (POSIX-compatible subset).
    fn read_only(root: &str, path: &str) -> bool {
        let text = read_only_regex(Path::new(root));
        assert!(!text.contains(['\\', '"']), "{text}");
        regex::Regex::new(&text).unwrap().is_match(path)
    }

    #[test]
    fn writes_only_in_roots_temp_and_devices() {
        let p = profile(&spec(true));
        assert!(p.text.starts_with("(version 1)\n(deny default)\n"));
        assert_eq!(
            p.params,
            [
                ("DENY_READ_0".to_string(), PathBuf::from("/Users/me/.ssh")),
                ("ROOT_1".to_string(), PathBuf::from("/Users/me/proj")),
                (
                    "WRITABLE_2".to_string(),
                    PathBuf::from("/private/var/folders/x/T/acp-coder-501-7/1")
                ),
                (
                    "READ_ONLY_3".to_string(),
                    PathBuf::from("/Users/me/proj/.husky")
                ),
                (
                    "DARWIN_USER_CACHE_DIR_4".to_string(),
                    PathBuf::from("/private/var/folders/x/C")
                ),
            ]
        );
        assert!(p.text.contains("(subpath (param \"ROOT_1\"))"));
        assert!(p.text.contains("(subpath (param \"WRITABLE_2\"))"));
        assert!(p.text.contains("(literal \"/dev/null\")"));
        // No write rule other than those (and, with the network on, the
        // user's cache directory).
        assert_eq!(p.text.matches("(allow file-write*").count(), 3);
        assert_eq!(
            profile(&spec(false))
                .text
                .matches("(allow file-write*")
                .count(),
            2
        );
        assert!(!p.text.contains("(allow default)"));
    }

    #[test]
    fn secrets_are_neither_read_nor_written() {
        let p = profile(&spec(true));
        assert_eq!(
            p.text
                .matches("(require-not (subpath (param \"DENY_READ_0\")))")
                .count(),
            2
        );
    }

    #[test]
    fn git_config_hooks_and_protected_files_stay_read_only() {
        let r = "/Users/me/proj";
        for path in [
            "/Users/me/proj/.git",
            "/Users/me/proj/.git/config",
            "/Users/me/proj/.git/hooks/pre-commit",
            "/Users/me/proj/.git/hooks",
            "/Users/me/proj/.git/modules/lib/config",
            "/Users/me/proj/.git/modules/lib/hooks/post-checkout",
            "/Users/me/proj/.git/worktrees/w/commondir",
            "/Users/me/proj/vendor/dep/.git/config",
            "/Users/me/proj/.GIT/CONFIG",
            "/Users/me/proj/.envrc",
            "/Users/me/proj/sub/.vscode/tasks.json",
            "/Users/me/proj/x.code-workspace",
            "/Users/me/proj/.acp-coder/prompts/a.md",
        ] {
            assert!(read_only(r, path), "{path} should be read-only");
        }
        for path in [
            "/Users/me/proj/src/main.rs",
            "/Users/me/proj/.git/objects/ab/cdef",
            "/Users/me/proj/.git/index",
            "/Users/me/proj/.git/refs/heads/main",
            "/Users/me/proj/.gitignore",
            "/Users/me/proj/config",
            "/Users/me/proj/.vscode/extensions.json",
            "/Users/me/projector/.envrc",
        ] {
            assert!(!read_only(r, path), "{path} should be writable");
        }
    }

    #[test]
    fn hostile_root_names_cannot_change_the_profile() {
        let root = r#"/Users/me/we"ird) (allow default) [x].*\z"#;
        let p = profile(&Spec {
            roots: vec![root.into()],
            ..Spec::default()
        });
        assert!(!p.text.contains("(allow default)"));
        assert!(read_only(root, &format!("{root}/.git/config")));
        assert!(!read_only(root, "/Users/me/weXird/.git/config"));
        assert!(!read_only(root, &format!("{root}/src/a.rs")));
    }

    /// Issue 42.11: the write rule excludes each root's own entry, so
    /// `mv ROOT $TMPDIR/x` (then `.git/config` written there, then moved
    /// back) is refused; what is beneath the root stays writable.
    #[test]
    fn the_roots_own_entry_cannot_be_moved_away() {
        let p = profile(&Spec {
            roots: vec!["/Users/me/proj".into(), "/Users/me/lib".into()],
            writable: vec!["/private/var/t/1".into()],
            ..Spec::default()
        });
        let rule = p
            .text
            .split("(allow file-write*\n")
            .nth(1)
            .unwrap()
            .split("\n(allow")
            .next()
            .unwrap();
        for root in ["ROOT_0", "ROOT_1"] {
            assert!(
                rule.contains(&format!("(require-not (literal (param \"{root}\")))")),
                "{rule}"
            );
            assert!(rule.contains(&format!("(subpath (param \"{root}\"))")));
        }
        // The temp directory is not a root: its entry is the command's.
        assert!(!rule.contains("(literal (param \"WRITABLE_2\"))"), "{rule}");
    }

    /// Issue 43.6: what common tools need, as in Codex's base policy:
    /// Node's `os.cpus()` (`mach-host*`), Java (`kern.grade_cputype`),
    /// power management (`RootDomainUserClient`).
    #[test]
    fn base_policy_lets_common_tools_start() {
        for network in [false, true] {
            let t = profile(&spec(network)).text;
            assert!(t.contains("\n(allow mach-host*)\n"), "{t}");
            assert!(
                t.contains("(allow sysctl-write (sysctl-name \"kern.grade_cputype\"))"),
                "{t}"
            );
            assert!(
                t.contains(
                    "(allow iokit-open (iokit-registry-entry-class \"RootDomainUserClient\"))"
                ),
                "{t}"
            );
            // Nothing broader than those.
            assert!(!t.contains("(allow sysctl-write)"), "{t}");
            assert!(!t.contains("(allow iokit-open)"), "{t}");
        }
    }

    /// Issue 43.6: with the network on, the user's cache directory is
    /// writable and the routing table readable; with it off, neither rule.
    #[test]
    fn network_on_adds_the_user_cache_and_the_routing_table() {
        let on = profile(&spec(true));
        let name = on
            .params
            .iter()
            .find(|(_, p)| p == Path::new("/private/var/folders/x/C"))
            .map(|(n, _)| n.clone())
            .expect("the cache directory is a parameter");
        assert!(name.starts_with("DARWIN_USER_CACHE_DIR_"));
        assert!(
            on.text
                .contains(&format!("(allow file-write* (subpath (param \"{name}\")))")),
            "{}",
            on.text
        );
        assert!(
            on.text
                .contains("(allow sysctl-read (sysctl-name-prefix \"net.routetable.\"))")
        );
        let off = profile(&spec(false));
        assert!(
            !off.params
                .iter()
                .any(|(n, _)| n.starts_with("DARWIN_USER_CACHE_DIR"))
        );
        assert!(!off.text.contains("net.routetable"));
    }

    /// Issue 43.6: a command's own temp directory is removed when its
    /// tree is released, with what the command left in it; another
    /// command's stays.
    #[test]
    fn a_commands_temp_directory_goes_with_its_tree() {
        let base = tempfile::tempdir().unwrap();
        let (mine, other) = (base.path().join("1"), base.path().join("2"));
        for d in [&mine, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("left-behind"), "x").unwrap();
        }
        temps::wrapped(mine.clone());
        temps::adopted(-4242);
        temps::wrapped(other.clone());
        temps::adopted(-4243);
        temps::released(-4242);
        assert!(!mine.exists());
        assert!(other.exists());
        temps::released(-4243);
        assert!(!other.exists());
        // A tree without a directory, or released twice: nothing happens.
        temps::adopted(-4244);
        temps::released(-4244);
        temps::released(-4242);
    }

    #[test]
    fn network_follows_the_setting() {
        let on = profile(&spec(true)).text;
        assert!(on.contains("(allow network-outbound (remote ip \"*:*\"))"));
        assert!(on.contains("com.apple.networkd"));
        let off = profile(&spec(false)).text;
        assert!(!off.contains("network-inbound") && !off.contains("com.apple.networkd"));
        assert!(!off.contains("remote ip") && !off.contains("mDNSResponder"));
    }

    /// The user's tmux, ssh-agent, Docker or D-Bus socket is a way out of
    /// any sandbox: with the network on or off, a command reaches UNIX
    /// sockets beneath the roots and its own temp directory only, and no
    /// rule allows networking without naming what it allows.
    #[test]
    fn unix_sockets_only_beneath_the_roots_and_own_temp() {
        for network in [false, true] {
            let t = profile(&spec(network)).text;
            assert!(
                t.contains(
                    "(allow network-outbound\n  (remote unix-socket (subpath (param \"ROOT_1\")))\n  (remote unix-socket (subpath (param \"WRITABLE_2\"))))"
                ),
                "{t}"
            );
            assert!(!t.contains("(remote unix-socket)"), "{t}");
            assert!(!t.contains("(local unix-socket)"), "{t}");
            for bare in ["network-outbound)", "network*", "network-bind)"] {
                assert!(!t.contains(&format!("(allow {bare}")), "{bare} in {t}");
            }
            // Every outbound rule names what it allows.
            for rule in t.split("(allow network-outbound").skip(1) {
                let rule = rule.trim_start();
                assert!(
                    rule.starts_with("(remote unix-socket (subpath (param")
                        || rule.starts_with("(remote ip")
                        || rule.starts_with(
                            "(remote unix-socket (path-literal \"/private/var/run/mDNSResponder\"))"
                        ),
                    "{rule}"
                );
            }
        }
    }

    #[test]
    fn named_protected_paths_stay_read_only() {
        let p = profile(&spec(false));
        assert!(p.params.contains(&(
            "READ_ONLY_3".to_string(),
            PathBuf::from("/Users/me/proj/.husky")
        )));
        assert!(
            p.text
                .contains("(require-not (subpath (param \"READ_ONLY_3\")))")
        );
    }

    #[test]
    fn argv_passes_paths_as_parameters() {
        let p = profile(&spec(false));
        let v = argv(&p, None, "sh", &["-c", "make test"]);
        assert_eq!(v[0], "-p");
        assert!(v.contains(&OsString::from("-DROOT_1=/Users/me/proj")));
        let dash = v.iter().position(|a| a == "--").unwrap();
        assert_eq!(v[dash + 1..], ["sh", "-c", "make test"].map(OsString::from));
        // The command's own temp directory reaches it as TMPDIR.
        let v = argv(&p, Some(Path::new("/private/var/t/1")), "sh", &["-c", "x"]);
        let dash = v.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            v[dash + 1..],
            ["/usr/bin/env", "TMPDIR=/private/var/t/1", "sh", "-c", "x"].map(OsString::from)
        );
    }

    #[test]
    fn parentheses_balance() {
        for network in [true, false] {
            let t = profile(&spec(network)).text;
            let mut depth = 0i32;
            let mut in_str = false;
            let mut esc = false;
            for c in t.chars() {
                if in_str {
                    match (esc, c) {
                        (true, _) => esc = false,
                        (false, '\\') => esc = true,
                        (false, '"') => in_str = false,
                        _ => {}
                    }
                    continue;
                }
                match c {
                    '"' => in_str = true,
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                assert!(depth >= 0, "{t}");
            }
            assert_eq!(depth, 0, "{t}");
        }
    }
}
