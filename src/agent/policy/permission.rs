//! The permission policy: what runs, what asks, what is refused (DESIGN §3, §4).
//!
//! Inside the session roots the mode decides; outside them (after resolving
//! `..`, `~` and symlinks) reads ask in every mode and writes and commands ask
//! in every mode and are refused in read-only. Writes to protected paths
//! (`protected.rs`), and to files with other hard links, ask in every mode too.
//!
//! "Always" answers are remembered per session as grants, each with an access
//! kind and a scope, and a grant authorises only what its kind and scope say
//! (issue 14: a read grant once let a later write through): reads of an exact
//! path; writes of an exact path; edits inside the roots by one tool (never a
//! protected path); a command prefix (`prefix.rs`) inside the roots, or that
//! prefix on exact paths outside them; one MCP tool. A grant on a directory
//! covers calls given that directory (listing, searching it), not calls given
//! a path under it: each path is its own grant. An "always allow" can also be
//! kept for the project (`kept.rs`), never for a scope naming a protected path.
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::acp::{PermissionOption, PermissionOptionKind};
use crate::tools::Access;
use crate::tools::paths::{is_inside, outside_paths_in_command};
use crate::tools::sanitize_title;

pub use crate::agent::policy::grant::Grant;
use crate::agent::policy::kept::Kept;
pub use crate::agent::policy::prefix::{command_prefix, matches_prefix};
use crate::agent::policy::protected::{Protected, in_git_dir, linked_elsewhere};
use crate::config::Mode;

/// What to do with a prepared call.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    Ask(Scope),
    Refuse(String),
}

/// What an "always" answer would cover; its option names say exactly that.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Edits inside the roots (protected paths excepted) by one built-in tool.
    Edits(String),
    /// One MCP tool.
    External(String),
    /// Reads of these exact paths.
    Read(Vec<PathBuf>),
    /// Writes of these exact paths (outside the roots, or protected).
    Write(Vec<PathBuf>),
    /// Commands with this prefix: inside the roots when `paths` is empty,
    /// otherwise naming only these paths outside them.
    Command { prefix: String, paths: Vec<PathBuf> },
    /// URLs of one domain (`web_fetch`).
    Fetch(String),
    /// Nothing to remember (a command whose prefix cannot be trusted).
    Once,
}

impl Scope {
    pub fn grants(&self) -> Vec<Grant> {
        match self {
            Scope::Edits(t) => vec![Grant::Edits { tool: t.clone() }],
            Scope::External(t) => vec![Grant::External { tool: t.clone() }],
            Scope::Read(paths) => paths
                .iter()
                .map(|p| Grant::Read { path: p.clone() })
                .collect(),
            Scope::Write(paths) => paths
                .iter()
                .map(|p| Grant::Write { path: p.clone() })
                .collect(),
            Scope::Command { prefix, paths } if paths.is_empty() => {
                vec![Grant::Command {
                    prefix: prefix.clone(),
                }]
            }
            Scope::Command { prefix, paths } => paths
                .iter()
                .map(|p| Grant::CommandOn {
                    prefix: prefix.clone(),
                    path: p.clone(),
                })
                .collect(),
            Scope::Fetch(domain) => vec![Grant::Fetch {
                domain: domain.clone(),
            }],
            Scope::Once => Vec::new(),
        }
    }

    /// What "always" would cover, for the option names; `None` for `Once`.
    fn describe(&self) -> Option<String> {
        let list = |paths: &[PathBuf]| {
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        Some(match self {
            Scope::Edits(t) => {
                format!("edits by {t} inside the project (protected files excepted)")
            }
            Scope::External(t) => format!("the tool {t}"),
            Scope::Read(p) => format!("reading {}", list(p)),
            Scope::Write(p) => format!("writing {}", list(p)),
            Scope::Command { prefix, paths } if paths.is_empty() => {
                format!("`{prefix} …` inside the project")
            }
            Scope::Command { prefix, paths } => format!("`{prefix} …` on {}", list(paths)),
            Scope::Fetch(domain) => format!("fetching URLs of {domain}"),
            Scope::Once => return None,
        })
    }
}

/// The session's remembered answers; never shared between sessions. The
/// project's kept rules (`kept.rs`), shared by its sessions, count as allowed
/// wherever the scope could have been kept.
#[derive(Debug, Default, Clone)]
pub struct Grants {
    allowed: HashSet<Grant>,
    rejected: HashSet<Grant>,
    kept: Option<Arc<Kept>>,
}

impl Grants {
    /// No session answers yet; the project's kept rules, if it has a store.
    pub fn with_kept(kept: Option<Arc<Kept>>) -> Self {
        Grants {
            kept,
            ..Grants::default()
        }
    }

    pub fn kept(&self) -> Option<&Arc<Kept>> {
        self.kept.as_ref()
    }

    pub fn remember(&mut self, scope: &Scope, allow: bool) {
        let set = if allow {
            &mut self.allowed
        } else {
            &mut self.rejected
        };
        set.extend(scope.grants());
    }

    /// `Some(false)` when any part was rejected for good, `Some(true)` when
    /// every part was allowed, `None` when the user has to be asked.
    /// `kept`: whether the project's kept rules may answer (never for a
    /// scope that names a protected path, see [`keepable`]).
    fn check(&self, scope: &Scope, kept: bool) -> Option<bool> {
        let grants = scope.grants();
        let kept = self.kept.as_ref().filter(|_| kept);
        let allowed = |g: &Grant| self.allowed.contains(g) || kept.is_some_and(|k| k.contains(g));
        if grants.iter().any(|g| self.rejected.contains(g)) {
            Some(false)
        } else if !grants.is_empty() && grants.iter().all(allowed) {
            Some(true)
        } else {
            None
        }
    }
}

/// Where the session may act without asking about the place.
pub struct Bounds<'a> {
    pub roots: &'a [PathBuf],
    pub protected: &'a Protected,
    /// The folders of the user-wide skills (canonical): their files are the
    /// skills' content, read without asking; running their scripts still
    /// asks like any command.
    pub skill_dirs: &'a [PathBuf],
}

impl Bounds<'_> {
    fn outside(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for p in paths {
            if !is_inside(p, self.roots) && !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }

    fn is_protected(&self, path: &Path) -> bool {
        self.protected.covers(path, self.roots)
            || linked_elsewhere(path)
            || in_git_dir(path, self.roots)
    }
}

/// Decides for one call (DESIGN §3 "Modes and permissions", SECURITY.md §1).
pub fn decide(
    mode: Mode,
    access: &Access,
    tool: &str,
    bounds: &Bounds<'_>,
    grants: &Grants,
) -> Decision {
    match access {
        Access::None => Decision::Allow,
        Access::Read(paths) => {
            let mut out = bounds.outside(paths);
            out.retain(|p| !is_inside(p, bounds.skill_dirs));
            if out.is_empty() {
                Decision::Allow
            } else {
                remembered(grants, bounds, Scope::Read(out), false)
            }
        }
        Access::Write(paths) => decide_write(mode, paths, tool, bounds, grants),
        Access::Execute { command, cwd } => decide_execute(mode, command, cwd, bounds, grants),
        // Issue 45 item 2: a fetch asks per domain in every mode but
        // full-auto; "always" covers that domain.
        Access::Fetch { domain } => remembered(
            grants,
            bounds,
            Scope::Fetch(domain.clone()),
            mode == Mode::FullAuto,
        ),
        // Issue 18 item 9: the server's annotations pick the rule. A
        // `readOnlyHint` tool counts as a read (allowed like reads inside the
        // roots); an explicit `destructiveHint` asks in every mode, full-auto
        // included, unless the user chose "always" for it.
        Access::External {
            tool,
            read_only,
            destructive,
        } => match mode {
            _ if *read_only => Decision::Allow,
            Mode::ReadOnly | Mode::Plan => Decision::Refuse(format!(
                "the session is in {} mode and {tool} is not marked read-only",
                mode.name()
            )),
            Mode::FullAuto => {
                remembered(grants, bounds, Scope::External(tool.clone()), !*destructive)
            }
            Mode::Ask | Mode::AcceptEdits => {
                remembered(grants, bounds, Scope::External(tool.clone()), false)
            }
        },
    }
}

/// What the user chose earlier for `scope` wins; otherwise the mode allows
/// the call or the user is asked.
fn remembered(grants: &Grants, bounds: &Bounds<'_>, scope: Scope, mode_allows: bool) -> Decision {
    match grants.check(&scope, keepable(&scope, bounds)) {
        Some(true) => Decision::Allow,
        Some(false) => {
            Decision::Refuse("you chose to always reject this earlier in the session".into())
        }
        None if mode_allows => Decision::Allow,
        None => Decision::Ask(scope),
    }
}

/// Why plan mode refuses an edit or a command: the model is told how the
/// hand-off works.
const PLAN_REFUSAL: &str = "the session is in Plan mode, which allows no edits and no commands: read and search, then write the plan with update_plan and end your turn; the user will be asked to start editing";

fn decide_write(
    mode: Mode,
    paths: &[PathBuf],
    tool: &str,
    bounds: &Bounds<'_>,
    grants: &Grants,
) -> Decision {
    if mode == Mode::Plan {
        return Decision::Refuse(PLAN_REFUSAL.into());
    }
    if mode == Mode::ReadOnly {
        return Decision::Refuse(format!(
            "the session is in {} mode, which does not allow edits; ask the user to switch modes",
            mode.name()
        ));
    }
    // Outside the roots or protected: asks in every mode, per path.
    let mut special = bounds.outside(paths);
    for p in paths {
        if bounds.is_protected(p) && !special.contains(p) {
            special.push(p.clone());
        }
    }
    if !special.is_empty() {
        return remembered(grants, bounds, Scope::Write(special), false);
    }
    remembered(
        grants,
        bounds,
        Scope::Edits(tool.to_owned()),
        matches!(mode, Mode::AcceptEdits | Mode::FullAuto),
    )
}

fn decide_execute(
    mode: Mode,
    command: &str,
    cwd: &Path,
    bounds: &Bounds<'_>,
    grants: &Grants,
) -> Decision {
    if mode == Mode::Plan {
        return Decision::Refuse(PLAN_REFUSAL.into());
    }
    if mode == Mode::ReadOnly {
        return Decision::Refuse(format!(
            "the session is in {} mode, which does not allow running commands",
            mode.name()
        ));
    }
    // Outside the roots (the cwd, or paths the command line names):
    // asks in every mode; an "always" covers this prefix on these
    // paths, never the paths for other access or other commands.
    let prefix = command_prefix(command);
    // Issue 14: a command that will run without asking (full-auto, or
    // a remembered prefix) runs in the sandbox, which enforces what
    // the parser of shell text only guessed at; the parser stays where
    // there is no full sandbox. A cwd outside the roots always asks.
    // Where the system has no sandbox at all (Windows), full-auto asks
    // before each command: nothing would confine it.
    let unasked = (mode == Mode::FullAuto && crate::tools::sandbox::full_auto_runs_commands())
        || prefix.as_ref().is_some_and(|p| {
            grants.check(
                &Scope::Command {
                    prefix: p.clone(),
                    paths: Vec::new(),
                },
                true,
            ) == Some(true)
        });
    let sandboxed = unasked && crate::tools::sandbox::level().replaces_path_check();
    let mut named = vec![cwd.to_path_buf()];
    if !sandboxed {
        named.extend(outside_paths_in_command(command, cwd, bounds.roots));
    }
    let out = bounds.outside(&named);
    match prefix {
        None => remembered(
            grants,
            bounds,
            Scope::Once,
            mode == Mode::FullAuto
                && crate::tools::sandbox::full_auto_runs_commands()
                && out.is_empty(),
        ),
        Some(prefix) => {
            let inside = out.is_empty();
            remembered(
                grants,
                bounds,
                Scope::Command { prefix, paths: out },
                mode == Mode::FullAuto
                    && crate::tools::sandbox::full_auto_runs_commands()
                    && inside,
            )
        }
    }
}

/// Whether an "always allow" for `scope` may be kept for the project: it
/// covers something to remember, and names no protected path.
pub fn keepable(scope: &Scope, bounds: &Bounds<'_>) -> bool {
    match scope {
        Scope::Once => false,
        Scope::Edits(_) | Scope::External(_) | Scope::Fetch(_) => true,
        Scope::Read(paths) | Scope::Write(paths) | Scope::Command { paths, .. } => {
            !paths.iter().any(|p| bounds.is_protected(p))
        }
    }
}

/// The id of the option that keeps an "always allow" for the project.
pub const ALLOW_PROJECT: &str = "allow-project";

/// The options offered for a scope: a few words each ("Allow once",
/// "Always allow in this session"); what "always" covers is said in the
/// tool call ([`covers`]).
pub fn options(scope: &Scope) -> Vec<PermissionOption> {
    options_keeping(scope, false)
}

/// [`options`], with "Always allow for this project" (kept for later
/// sessions of the project) when `keep` (see [`keepable`]): of kind
/// `allow_always` too, after the session's.
pub fn options_keeping(scope: &Scope, keep: bool) -> Vec<PermissionOption> {
    let opt = |id: &str, name: &str, kind| PermissionOption {
        option_id: id.into(),
        name: name.into(),
        kind,
    };
    let always = scope.describe().is_some();
    let mut v = vec![opt(
        "allow-once",
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if always {
        v.push(opt(
            "allow-always",
            "Always allow in this session",
            PermissionOptionKind::AllowAlways,
        ));
        if keep {
            v.push(opt(
                ALLOW_PROJECT,
                "Always allow for this project",
                PermissionOptionKind::AllowAlways,
            ));
        }
    }
    v.push(opt(
        "reject-once",
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    if always {
        v.push(opt(
            "reject-always",
            "Always reject in this session",
            PermissionOptionKind::RejectAlways,
        ));
    }
    v
}

/// What the "always" options of `scope` cover, for the tool call the
/// editor shows with the question: "Always allow covers reading /x/y.";
/// `None` when only "once" is offered. It quotes model-chosen text
/// (command prefixes, paths): one clean line.
pub fn covers(scope: &Scope) -> Option<String> {
    let what = scope.describe()?;
    Some(sanitize_title(&format!("Always allow covers {what}."), 400))
}

#[cfg(test)]
#[path = "permission_tests.rs"]
mod tests;
