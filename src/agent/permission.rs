//! The permission policy: what runs, what asks, what is refused (DESIGN §3, §4).
//!
//! Inside the session roots the mode decides; outside them (after resolving
//! `..`, `~` and symlinks) reads ask in every mode and writes and commands ask
//! in every mode and are refused in read-only. "Always" answers are remembered
//! per session: per tool for edits, per command prefix for commands, per exact
//! path outside the roots.
use std::collections::HashSet;
use std::path::PathBuf;

use crate::acp::{PermissionOption, PermissionOptionKind};
use crate::tools::Access;
use crate::tools::paths::{is_inside, outside_paths_in_command};
use crate::tools::sanitize_title;

use super::modes::Mode;

/// What to do with a prepared call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    Ask(Scope),
    Refuse(String),
}

/// What an "always" answer would cover.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Edits inside the roots, or an MCP tool: remembered per tool name.
    Tool(String),
    /// A command: remembered per prefix (e.g. `cargo test`).
    CommandPrefix(String),
    /// Paths outside the roots: remembered per exact path.
    Paths(Vec<PathBuf>),
    /// A command whose prefix cannot be trusted (shell operators): no "always".
    Once,
}

/// The session's remembered answers.
#[derive(Debug, Default, Clone)]
pub struct Grants {
    allowed: HashSet<Scope>,
    rejected: HashSet<Scope>,
    allowed_paths: HashSet<PathBuf>,
    rejected_paths: HashSet<PathBuf>,
}

impl Grants {
    pub fn remember(&mut self, scope: &Scope, allow: bool) {
        match scope {
            Scope::Once => {}
            Scope::Paths(paths) => {
                let set = if allow {
                    &mut self.allowed_paths
                } else {
                    &mut self.rejected_paths
                };
                set.extend(paths.iter().cloned());
            }
            other => {
                let set = if allow {
                    &mut self.allowed
                } else {
                    &mut self.rejected
                };
                set.insert(other.clone());
            }
        }
    }

    fn check(&self, scope: &Scope) -> Option<bool> {
        if let Scope::Paths(paths) = scope {
            if paths.iter().any(|p| self.rejected_paths.contains(p)) {
                return Some(false);
            }
            return (!paths.is_empty() && paths.iter().all(|p| self.allowed_paths.contains(p)))
                .then_some(true);
        }
        if self.rejected.contains(scope) {
            Some(false)
        } else if self.allowed.contains(scope) {
            Some(true)
        } else {
            None
        }
    }
}

/// Decides for one call.
pub fn decide(
    mode: Mode,
    access: &Access,
    tool: &str,
    roots: &[PathBuf],
    grants: &Grants,
) -> Decision {
    let outside = |paths: &[PathBuf]| -> Vec<PathBuf> {
        paths
            .iter()
            .filter(|p| !is_inside(p, roots))
            .cloned()
            .collect()
    };
    let remembered = |scope: Scope, mode_allows: bool| -> Decision {
        match grants.check(&scope) {
            Some(true) => Decision::Allow,
            Some(false) => {
                Decision::Refuse("you chose to always reject this earlier in the session".into())
            }
            None if mode_allows => Decision::Allow,
            None => Decision::Ask(scope),
        }
    };
    match access {
        Access::None => Decision::Allow,
        Access::Read(paths) => {
            let out = outside(paths);
            if out.is_empty() {
                Decision::Allow
            } else {
                remembered(Scope::Paths(out), false)
            }
        }
        Access::Write(paths) => {
            if mode == Mode::ReadOnly {
                return Decision::Refuse(format!(
                    "the session is in {} mode, which does not allow edits; ask the user to switch modes",
                    mode.name()
                ));
            }
            let out = outside(paths);
            if !out.is_empty() {
                return remembered(Scope::Paths(out), false);
            }
            remembered(
                Scope::Tool(tool.to_owned()),
                matches!(mode, Mode::AcceptEdits | Mode::FullAuto),
            )
        }
        Access::Execute { command, cwd } => {
            if mode == Mode::ReadOnly {
                return Decision::Refuse(format!(
                    "the session is in {} mode, which does not allow running commands",
                    mode.name()
                ));
            }
            // Outside the roots (the cwd, or paths the command line names):
            // ask in every mode until each path is allowed; then the mode
            // decides on the command itself.
            let mut out = Vec::new();
            if !is_inside(cwd, roots) {
                out.push(cwd.clone());
            }
            // Issue 14: a command that will run without asking runs in the
            // sandbox, which enforces what this parser of shell text only
            // guessed at; the parser stays where there is no full sandbox.
            let scope = command_prefix(command).map_or(Scope::Once, Scope::CommandPrefix);
            let sandboxed = remembered(scope, mode == Mode::FullAuto) == Decision::Allow
                && crate::tools::sandbox::level().replaces_path_check();
            let named = if sandboxed {
                Vec::new()
            } else {
                outside_paths_in_command(command, cwd, roots)
            };
            for p in named {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
            if !out.is_empty() {
                match remembered(Scope::Paths(out), false) {
                    Decision::Allow => {}
                    other => return other,
                }
            }
            let scope = command_prefix(command).map_or(Scope::Once, Scope::CommandPrefix);
            remembered(scope, mode == Mode::FullAuto)
        }
        Access::External { tool, read_only } => match mode {
            Mode::ReadOnly if *read_only => Decision::Allow,
            Mode::ReadOnly => Decision::Refuse(format!(
                "the session is in {} mode and {tool} is not marked read-only",
                mode.name()
            )),
            Mode::FullAuto => remembered(Scope::Tool(tool.clone()), true),
            Mode::Ask | Mode::AcceptEdits => remembered(Scope::Tool(tool.clone()), false),
        },
    }
}

/// The options offered for a scope, with names a person understands.
pub fn options(scope: &Scope) -> Vec<PermissionOption> {
    // Names quote model-chosen text (command prefixes, paths): one clean line.
    let opt = |id: &str, name: String, kind| PermissionOption {
        option_id: id.into(),
        name: sanitize_title(&name, 200),
        kind,
    };
    let mut v = vec![opt(
        "allow-once",
        "Allow once".into(),
        PermissionOptionKind::AllowOnce,
    )];
    let always = match scope {
        Scope::Tool(t) => Some(format!("Always allow {t} in this session")),
        Scope::CommandPrefix(p) => Some(format!("Always allow `{p} …` commands in this session")),
        Scope::Paths(p) if p.len() == 1 => {
            Some(format!("Always allow {} in this session", p[0].display()))
        }
        Scope::Paths(_) => Some("Always allow these paths in this session".into()),
        Scope::Once => None,
    };
    if let Some(name) = &always {
        v.push(opt(
            "allow-always",
            name.clone(),
            PermissionOptionKind::AllowAlways,
        ));
    }
    v.push(opt(
        "reject-once",
        "Reject".into(),
        PermissionOptionKind::RejectOnce,
    ));
    if always.is_some() {
        v.push(opt(
            "reject-always",
            "Always reject".into(),
            PermissionOptionKind::RejectAlways,
        ));
    }
    v
}

/// The reusable prefix of a command (`cargo test --all` → `cargo test`), or
/// `None` when the line chains or redirects commands, so that "always allow
/// `cargo test`" can never approve `cargo test && rm -rf ~`.
pub fn command_prefix(command: &str) -> Option<String> {
    const OPERATORS: [&str; 10] = [";", "&", "|", "`", "$(", ">", "<", "\n", "\r", "\\"];
    if OPERATORS.iter().any(|op| command.contains(op)) {
        return None;
    }
    let mut words = command.split_whitespace();
    let first = words.next()?;
    if first.contains('=') {
        return None; // `FOO=bar cmd`: environment changes are not a prefix.
    }
    match words.next() {
        Some(second)
            if !second.starts_with('-') && !second.contains('/') && !second.contains('.') =>
        {
            Some(format!("{first} {second}"))
        }
        _ => Some(first.to_owned()),
    }
}

/// Whether the command line is covered by a remembered prefix.
pub fn matches_prefix(command: &str, prefix: &str) -> bool {
    command_prefix(command).is_some_and(|p| p == prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> Vec<PathBuf> {
        vec![PathBuf::from("/proj")]
    }

    #[test]
    fn mode_table() {
        let g = Grants::default();
        let read_in = Access::Read(vec!["/proj/a".into()]);
        let write_in = Access::Write(vec!["/proj/a".into()]);
        let exec = Access::Execute {
            command: "cargo test".into(),
            cwd: "/proj".into(),
        };
        let write_out = Access::Write(vec!["/etc/passwd".into()]);
        let read_out = Access::Read(vec!["/etc/hosts".into()]);
        for mode in Mode::ALL {
            assert_eq!(
                decide(mode, &read_in, "read_file", &roots(), &g),
                Decision::Allow
            );
            assert!(matches!(
                decide(mode, &read_out, "read_file", &roots(), &g),
                Decision::Ask(_)
            ));
        }
        assert!(matches!(
            decide(Mode::ReadOnly, &write_in, "write_file", &roots(), &g),
            Decision::Refuse(_)
        ));
        assert!(matches!(
            decide(Mode::Ask, &write_in, "write_file", &roots(), &g),
            Decision::Ask(Scope::Tool(_))
        ));
        assert_eq!(
            decide(Mode::AcceptEdits, &write_in, "write_file", &roots(), &g),
            Decision::Allow
        );
        assert_eq!(
            decide(Mode::FullAuto, &write_in, "write_file", &roots(), &g),
            Decision::Allow
        );
        assert!(matches!(
            decide(Mode::ReadOnly, &exec, "run_command", &roots(), &g),
            Decision::Refuse(_)
        ));
        assert!(matches!(
            decide(Mode::Ask, &exec, "run_command", &roots(), &g),
            Decision::Ask(_)
        ));
        assert!(matches!(
            decide(Mode::AcceptEdits, &exec, "run_command", &roots(), &g),
            Decision::Ask(_)
        ));
        assert_eq!(
            decide(Mode::FullAuto, &exec, "run_command", &roots(), &g),
            Decision::Allow
        );
        assert!(matches!(
            decide(Mode::FullAuto, &write_out, "write_file", &roots(), &g),
            Decision::Ask(Scope::Paths(_))
        ));
        assert!(matches!(
            decide(Mode::ReadOnly, &write_out, "write_file", &roots(), &g),
            Decision::Refuse(_)
        ));
    }

    #[test]
    fn always_answers_are_scoped() {
        let mut g = Grants::default();
        g.remember(&Scope::CommandPrefix("cargo test".into()), true);
        let ok = Access::Execute {
            command: "cargo test --all".into(),
            cwd: "/proj".into(),
        };
        let chained = Access::Execute {
            command: "cargo test && rm -rf target".into(),
            cwd: "/proj".into(),
        };
        let other = Access::Execute {
            command: "cargo build".into(),
            cwd: "/proj".into(),
        };
        assert_eq!(
            decide(Mode::Ask, &ok, "run_command", &roots(), &g),
            Decision::Allow
        );
        assert_eq!(
            decide(Mode::Ask, &chained, "run_command", &roots(), &g),
            Decision::Ask(Scope::Once)
        );
        assert!(matches!(
            decide(Mode::Ask, &other, "run_command", &roots(), &g),
            Decision::Ask(_)
        ));
        g.remember(&Scope::Tool("edit_file".into()), false);
        let w = Access::Write(vec!["/proj/x".into()]);
        assert!(matches!(
            decide(Mode::Ask, &w, "edit_file", &roots(), &g),
            Decision::Refuse(_)
        ));
        g.remember(&Scope::Paths(vec!["/etc/hosts".into()]), true);
        assert_eq!(
            decide(
                Mode::Ask,
                &Access::Read(vec!["/etc/hosts".into()]),
                "read_file",
                &roots(),
                &g
            ),
            Decision::Allow
        );
        assert!(matches!(
            decide(
                Mode::Ask,
                &Access::Read(vec!["/etc/passwd".into()]),
                "read_file",
                &roots(),
                &g
            ),
            Decision::Ask(_)
        ));
    }

    #[test]
    fn commands_reaching_outside_ask_even_in_full_auto() {
        let g = Grants::default();
        let cmd = |c: &str| Access::Execute {
            command: c.into(),
            cwd: "/proj".into(),
        };
        for c in ["rm -rf /etc/x", "cat ~/.ssh/id_rsa", "cp a ../b"] {
            assert!(
                matches!(
                    decide(Mode::FullAuto, &cmd(c), "run_command", &roots(), &g),
                    Decision::Ask(Scope::Paths(_))
                ),
                "{c}"
            );
        }
        let mut g = Grants::default();
        g.remember(&Scope::Paths(vec!["/etc/x".into()]), true);
        assert_eq!(
            decide(
                Mode::FullAuto,
                &cmd("rm -rf /etc/x"),
                "run_command",
                &roots(),
                &g
            ),
            Decision::Allow
        );
        assert!(matches!(
            decide(
                Mode::Ask,
                &cmd("rm -rf /etc/x"),
                "run_command",
                &roots(),
                &g
            ),
            Decision::Ask(Scope::CommandPrefix(_))
        ));
        let options = options(&Scope::CommandPrefix("echo\x1b[2K\rhi".into()));
        assert!(options.iter().all(|o| !o.name.contains(['\x1b', '\r'])));
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            command_prefix("cargo test --all").as_deref(),
            Some("cargo test")
        );
        assert_eq!(command_prefix("ls -la").as_deref(), Some("ls"));
        assert_eq!(
            command_prefix("python3 script.py").as_deref(),
            Some("python3")
        );
        assert_eq!(command_prefix("echo hi; rm x"), None);
        assert_eq!(command_prefix("cat a > b"), None);
        assert_eq!(command_prefix("FOO=1 make"), None);
        assert!(matches_prefix("git status -s", "git status"));
    }
}
