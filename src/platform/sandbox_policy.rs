//! What the command sandbox is asked to do and what it can do here: the
//! policy of one command (computed by `tools::sandbox`, the same on every
//! system) and the level of confinement this machine gives. The platform
//! layer owns them: each system's sandbox takes a [`Policy`] and reports a
//! [`Level`].
use std::path::PathBuf;

/// What the sandbox can do on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Level {
    /// Landlock (kernel ABI `abi`), the read-only `.git` mounts and a PID
    /// namespace; `own_proc`: with its own `/proc`, so that commands see no
    /// other process (where `/proc` cannot be mounted afresh, some
    /// containers, they still see the agent's).
    Full { abi: i32, own_proc: bool },
    /// Landlock only: writes are confined but `.git/config` and hooks are
    /// not protected (`why`: the namespace step failed).
    LandlockOnly { abi: i32, why: String },
    /// macOS: Seatbelt (`sandbox-exec`) with a profile made from the
    /// policy: the same writes, `.git` and protected files read-only.
    Seatbelt,
    /// No sandbox (`why`).
    Unavailable { why: String },
}

impl Level {
    /// Whether commands run confined at all.
    pub fn confines(&self) -> bool {
        !matches!(self, Level::Unavailable { .. })
    }

    /// Whether the sandbox makes the outside-paths check of command lines
    /// unnecessary for commands that run without asking: only when it also
    /// protects `.git`.
    pub fn replaces_path_check(&self) -> bool {
        matches!(self, Level::Full { .. } | Level::Seatbelt)
    }

    /// One line for `doctor` and the log.
    pub fn describe(&self) -> String {
        match self {
            Level::Full { abi, own_proc } => format!(
                "commands run sandboxed: Landlock ABI {abi} (writes only in the project, their own /tmp and devices; no outside abstract socket), a private mount namespace (everything else read-only, .git/config, hooks and other files that tools run read-only, credential stores and the agent's own files unreadable, outside UNIX sockets covered), seccomp (no TIOCSTI) and a PID namespace ({})",
                if *own_proc {
                    "nothing they start outlives them; they see no other process"
                } else {
                    "nothing they start outlives them; but /proc could not be mounted afresh, so they can see the agent's other processes"
                }
            ),
            Level::LandlockOnly { abi, why } => format!(
                "commands run sandboxed by Landlock ABI {abi} (writes only in the project, the temp directory and devices), but .git/config and .git/hooks are NOT protected: {why}; commands naming paths outside the project still ask"
            ),
            Level::Seatbelt => "commands run sandboxed by Seatbelt (sandbox-exec): writes only in the project, the temp directory and devices; .git/config, .git/hooks and the protected files read-only; credential stores unreadable".into(),
            Level::Unavailable { why } => format!(
                "no command sandbox ({why}); full-auto asks before commands that name paths outside the project"
            ),
        }
    }
}

/// How one command is to be confined: what it may write, what stays
/// read-only inside that, what it may not read, and the network. The same
/// for every platform; each one's sandbox enforces it its own way (Linux:
/// the launcher, macOS: a Seatbelt profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Writable trees whose `.git` is protected: the session roots (and a
    /// working directory outside them that the user allowed).
    pub roots: Vec<PathBuf>,
    /// Other writable directories: the temp directories, each the
    /// command's own (empty at start, gone after it).
    pub writable: Vec<PathBuf>,
    /// Protected paths inside the roots (besides git's directory): read-only
    /// when they exist, kept absent when they do not.
    pub read_only: Vec<PathBuf>,
    /// Paths the command may not read at all (credential stores, the
    /// agent's own directories).
    pub unreadable: Vec<PathBuf>,
    /// Whether the command may use the network.
    pub network: bool,
}
