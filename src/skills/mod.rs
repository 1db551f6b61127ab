//! Agent Skills (issue 21): the skill folders users already keep for other
//! agents (Claude Code, Codex, Gemini CLI, Goose, Cursor), in the open Agent
//! Skills format (agentskills.io/specification; rules in [`parse`]).
//!
//! Progressive disclosure, as the specification describes it: the name and
//! description of every skill go into the system prompt ([`Catalog::index`],
//! bounded), the body only when the model calls `load_skill` or the user runs
//! `/<name>`, and the skill's other files only when the body points to them
//! (the model reads or runs them with the ordinary tools, under the ordinary
//! permission rules).
//!
//! Where skills are found, most specific first ([`places`]): `.agents/skills/`
//! (the cross-client location) then `.claude/skills/` (compatibility) in the
//! session's cwd and each parent up to the repository root, the same for each
//! additional root, then the user-wide `$XDG_CONFIG_HOME/acp-coder/skills/`,
//! `~/.agents/skills/` and `~/.claude/skills/`. The first skill of a name
//! wins, so project skills shadow user-wide ones; the log says which.
//! A broken skill is skipped with a log line and a line in `/skills` and
//! `/status`; it never fails a session.
pub mod parse;

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

pub use parse::{Invalid, SkillFile};

/// `SKILL.md` files larger than this are skipped as broken (the body is sent
/// to the model whole; the specification recommends under 500 lines).
pub const SKILL_FILE_MAX: u64 = 256 * 1024;
/// Bytes of the system prompt's skill list. Past it the least specific skills
/// are left out of the index (they still load by name and as `/<name>`), so
/// the first request stays within its 16 KB target (issue 7).
pub const INDEX_LIMIT: usize = 6 * 1024;
/// Files listed for one skill by `load_skill`, and how deep the listing goes.
const FILES_MAX: usize = 200;
const FILES_DEPTH: usize = 4;

/// Where a skill folder was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Under the session's cwd, an additional root, or one of their parents
    /// up to the repository root.
    Project,
    /// In the user's own skill folders.
    User,
}

impl Scope {
    pub fn label(self) -> &'static str {
        match self {
            Scope::Project => "project",
            Scope::User => "user",
        }
    }
}

/// A folder holding skill folders (`…/skills/`).
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub dir: PathBuf,
    pub scope: Scope,
}

/// One valid skill.
#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    /// The skill's folder, canonical (symlinks resolved): its files' paths
    /// are given to the model relative to nothing but this.
    pub dir: PathBuf,
    pub scope: Scope,
    pub file: SkillFile,
}

impl Skill {
    pub fn name(&self) -> &str {
        &self.file.name
    }

    /// What `load_skill` returns: the instructions, where they live, the
    /// guidance fields, and the skill's other files with absolute paths.
    pub fn render(&self) -> String {
        let f = &self.file;
        let mut s = format!(
            "Skill `{}` ({} skill) from {}\nIts folder is {}: paths in the instructions are relative to it.\n",
            f.name,
            self.scope.label(),
            self.dir.join("SKILL.md").display(),
            self.dir.display()
        );
        if !f.allowed_tools.is_empty() {
            let _ = writeln!(
                s,
                "Tools the skill expects (guidance only: every call still follows the session's permission rules): {}",
                f.allowed_tools.join(" ")
            );
        }
        if let Some(c) = &f.compatibility {
            let _ = writeln!(s, "Compatibility: {c}");
        }
        if let Some(l) = &f.license {
            let _ = writeln!(s, "License: {l}");
        }
        let _ = write!(
            s,
            "\n<skill-instructions>\n{}\n</skill-instructions>\n",
            f.body
        );
        let (files, more) = list_files(&self.dir);
        if files.is_empty() {
            s.push_str("\nThe skill has no other files.\n");
        } else {
            s.push_str(
                "\nThe skill's files (read them with read_file when the instructions point to them; run scripts with run_command, from the skill's folder when they expect it):\n",
            );
            for f in files {
                let _ = writeln!(s, "- {}", f.display());
            }
            if more {
                let _ = writeln!(s, "- … more files (list them with glob or list_directory)");
            }
        }
        s
    }
}

/// A `SKILL.md` that was skipped, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Broken {
    pub path: PathBuf,
    pub reason: String,
}

/// A skill hidden by a more specific one of the same name.
#[derive(Debug, Clone, PartialEq)]
pub struct Shadowed {
    pub name: String,
    pub kept: PathBuf,
    pub hidden: PathBuf,
}

/// The skills of a session, found at `session/new` (or `/skills reload`).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Most specific first.
    pub skills: Vec<Skill>,
    pub broken: Vec<Broken>,
    pub shadowed: Vec<Shadowed>,
    /// Skills not in the index for lack of room (least specific ones).
    pub left_out: Vec<String>,
    /// The system prompt's section (empty when there are no skills).
    pub index: String,
}

impl Catalog {
    /// The folders of the user-wide skills: reading their files does not
    /// ask (`permission::Bounds::skill_dirs`). Project skills live in the
    /// session's roots already.
    pub fn user_dirs(&self) -> Vec<PathBuf> {
        self.skills
            .iter()
            .filter(|s| matches!(s.scope, Scope::User))
            .map(|s| s.dir.clone())
            .collect()
    }

    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.file.name == name)
    }

    /// One line for `/status`, if there is anything to say.
    pub fn status_line(&self) -> Option<String> {
        if self.skills.is_empty() && self.broken.is_empty() {
            return None;
        }
        let mut notes = Vec::new();
        if !self.broken.is_empty() {
            notes.push(format!("{} broken and skipped", self.broken.len()));
        }
        if !self.shadowed.is_empty() {
            notes.push(format!("{} shadowed", self.shadowed.len()));
        }
        if !self.left_out.is_empty() {
            notes.push(format!(
                "{} left out of the model's index for room",
                self.left_out.len()
            ));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({}; see `/skills`)", notes.join(", "))
        };
        Some(format!("- **Skills**: {} loaded{notes}", self.skills.len()))
    }

    /// The Markdown answer to `/skills`; `without_command` names the skills
    /// whose slash command a built-in or prompt-file command has, and what
    /// has it (`commands::skills_without_command`).
    pub fn describe(&self, without_command: &[(String, &str)]) -> String {
        let mut s = String::from("**Skills**\n");
        if self.skills.is_empty() {
            s.push_str("No skills found. Put skill folders (each with a SKILL.md) in `.agents/skills/` in the project or in `~/.agents/skills/`.\n");
        }
        for k in &self.skills {
            let left = if self.left_out.contains(&k.file.name) {
                format!(
                    " — not in the model's index (no room): use `/{}`",
                    k.file.name
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "- `{}` ({}) {}{left}",
                k.file.name,
                k.scope.label(),
                k.dir.display()
            );
        }
        for (name, by) in without_command {
            let _ = writeln!(
                s,
                "- `{name}` has no slash command: `/{name}` is {by}. Ask for the skill in a prompt \
                 instead (\"use the {name} skill to …\"); the model loads it with `load_skill`"
            );
        }
        for b in &self.broken {
            let _ = writeln!(s, "- ⚠ skipped {}: {}", b.path.display(), b.reason);
        }
        for h in &self.shadowed {
            let _ = writeln!(
                s,
                "- `{}` at {} is shadowed by {}",
                h.name,
                h.hidden.display(),
                h.kept.display()
            );
        }
        s.push_str("\nRun `/skills reload` after changing skills on disk.");
        s
    }
}

/// The skill folders of a session rooted at `cwd` (+ `additional`), most
/// specific first; user-wide ones from `config_home` and `home`.
pub fn places(cwd: &Path, additional: &[PathBuf], config_home: &Path, home: &Path) -> Vec<Place> {
    let mut out = Vec::new();
    for root in std::iter::once(cwd).chain(additional.iter().map(PathBuf::as_path)) {
        let repo = root
            .ancestors()
            .find(|d| d.join(".git").exists())
            .map(Path::to_path_buf);
        let dirs: Vec<&Path> = match &repo {
            Some(top) => root
                .ancestors()
                .take_while(|d| d.starts_with(top))
                .collect(),
            None => vec![root],
        };
        for dir in dirs {
            for sub in [".agents/skills", ".claude/skills"] {
                out.push(Place {
                    dir: dir.join(sub),
                    scope: Scope::Project,
                });
            }
        }
    }
    for dir in [
        config_home.join("acp-coder/skills"),
        home.join(".agents/skills"),
        home.join(".claude/skills"),
    ] {
        out.push(Place {
            dir,
            scope: Scope::User,
        });
    }
    // A folder reached twice (cwd is also the home, say) counts once, as the
    // more specific place.
    let mut seen = HashSet::new();
    out.retain(|p| seen.insert(std::fs::canonicalize(&p.dir).unwrap_or_else(|_| p.dir.clone())));
    out
}

/// [`places`] with the user-wide folders of this process's environment.
pub fn places_for_session(cwd: &Path, additional: &[PathBuf]) -> Vec<Place> {
    let home = crate::platform::fs::home().unwrap_or_else(|| PathBuf::from("/"));
    places(cwd, additional, &crate::config::config_home(), &home)
}

/// Reads every skill in `places` (blocking file-system work; small).
///
/// Links are resolved first: a project skill (its folder or its
/// `SKILL.md`) that resolves outside the project — the directories of the
/// project places — or the user's own skill folders is not read, since
/// reads outside the project need the user's permission, which no one can
/// give at `session/new`; it is listed as skipped, saying where it points.
pub fn discover(places: &[Place]) -> Catalog {
    let mut cat = Catalog::default();
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let allowed: Vec<PathBuf> = places
        .iter()
        .filter_map(|p| match p.scope {
            Scope::Project => p.dir.parent()?.parent().map(canonical),
            Scope::User => Some(canonical(&p.dir)),
        })
        .collect();
    for place in places {
        let Ok(entries) = std::fs::read_dir(&place.dir) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for dir in dirs {
            let file = dir.join("SKILL.md");
            if !file.is_file() {
                continue;
            }
            let folder = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let real_file = canonical(&file);
            if place.scope == Scope::Project
                && let Some(out) = [canonical(&dir), real_file.clone()]
                    .into_iter()
                    .find(|p| !allowed.iter().any(|a| p.starts_with(a)))
            {
                tracing::warn!(path = %file.display(), target = %out.display(), "project skill links outside the project; not read");
                cat.broken.push(Broken {
                    path: file,
                    reason: format!(
                        "it links to {}, outside the project, and reading there needs your permission: copy the skill into the project or into ~/.agents/skills",
                        out.display()
                    ),
                });
                continue;
            }
            match read_skill(&real_file, &folder) {
                Ok(parsed) => {
                    let canonical = canonical(&dir);
                    if let Some(kept) = cat.get(&parsed.name) {
                        tracing::info!(skill = %parsed.name, kept = %kept.dir.display(), shadowed = %canonical.display(), "skill shadowed by a more specific one of the same name");
                        cat.shadowed.push(Shadowed {
                            name: parsed.name,
                            kept: kept.dir.clone(),
                            hidden: canonical,
                        });
                        continue;
                    }
                    cat.skills.push(Skill {
                        dir: canonical,
                        scope: place.scope,
                        file: parsed,
                    });
                }
                Err(e) => {
                    tracing::warn!(path = %file.display(), reason = %e, "skill skipped");
                    cat.broken.push(Broken {
                        path: file,
                        reason: e.0,
                    });
                }
            }
        }
    }
    build_index(&mut cat);
    tracing::debug!(
        skills = cat.skills.len(),
        broken = cat.broken.len(),
        left_out = cat.left_out.len(),
        "skills discovered"
    );
    cat
}

fn read_skill(file: &Path, folder: &str) -> Result<SkillFile, Invalid> {
    let len = std::fs::metadata(file)
        .map_err(|e| Invalid(format!("cannot read it: {e}")))?
        .len();
    if len > SKILL_FILE_MAX {
        return Err(Invalid(format!(
            "it is {len} bytes; the limit is {SKILL_FILE_MAX}: move detail into references/ files"
        )));
    }
    let text =
        std::fs::read_to_string(file).map_err(|e| Invalid(format!("cannot read it: {e}")))?;
    parse::parse(&text, folder)
}

/// Fills [`Catalog::index`] and [`Catalog::left_out`] within [`INDEX_LIMIT`].
fn build_index(cat: &mut Catalog) {
    if cat.skills.is_empty() {
        return;
    }
    let mut list = String::new();
    for skill in &cat.skills {
        let description = skill
            .file
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let line = format!("- {}: {description}\n", skill.file.name);
        if list.len() + line.len() > INDEX_LIMIT || !cat.left_out.is_empty() {
            cat.left_out.push(skill.file.name.clone());
            continue;
        }
        list.push_str(&line);
    }
    if !cat.left_out.is_empty() {
        tracing::info!(left_out = ?cat.left_out, limit = INDEX_LIMIT, "skills left out of the system prompt's index");
    }
    cat.index = format!(
        "\n# Skills\nSkills are instructions for particular tasks. When a task matches one below, call load_skill with its name before you start, then follow it.\n{list}"
    );
}

/// The files of a skill folder (not `SKILL.md`), absolute, sorted; hidden
/// entries and symlinked folders are not followed. `true` when cut short.
fn list_files(dir: &Path) -> (Vec<PathBuf>, bool) {
    let mut out = Vec::new();
    let mut more = false;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries.into_iter().rev() {
            if e.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                if depth + 1 < FILES_DEPTH {
                    stack.push((path, depth + 1));
                } else {
                    more = true;
                }
            } else if path != dir.join("SKILL.md") {
                out.push(path);
            }
        }
    }
    out.sort();
    if out.len() > FILES_MAX {
        out.truncate(FILES_MAX);
        more = true;
    }
    (out, more)
}

/// The session's current catalog, shared by the session, its `load_skill`
/// tool and its commands; `/skills reload` swaps it.
#[derive(Clone, Default)]
pub struct Shelf(Arc<RwLock<Arc<Catalog>>>);

impl Shelf {
    pub fn new(catalog: Catalog) -> Self {
        Shelf(Arc::new(RwLock::new(Arc::new(catalog))))
    }

    pub fn get(&self) -> Arc<Catalog> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set(&self, catalog: Catalog) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
    }
}

#[cfg(test)]
mod tests;
