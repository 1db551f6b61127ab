//! Protected paths: files inside the project that make something run
//! commands later (git's config and hooks, direnv, the editors' task, launch
//! and language-server settings, the agent's own directory). Writing them
//! asks in every mode, `full-auto` included (DESIGN §3 "Modes and
//! permissions"; issue 14, where `accept-edits` let a model plant
//! `core.fsmonitor` in `.git/config` and the next `git status` ran it).
//!
//! Globs are matched against a path relative to each session root, case
//! insensitively (a `.GIT/config` on a case-insensitive disk is `.git/config`).
//! The defaults apply at any depth (a nested repository's `.git/` too); the
//! config file's `protected_paths` adds globs of the same form.
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// The built-in list; docs/permissions.md and SECURITY.md §1
/// repeat it.
pub const DEFAULT_PROTECTED: &[&str] = &[
    // git: config (core.fsmonitor, core.pager, aliases), hooks, and the rest.
    "**/.git",
    "**/.git/**",
    // direnv runs .envrc on `cd`.
    "**/.envrc",
    // The agent's own settings and prompt templates.
    "**/.acp-coder",
    "**/.acp-coder/**",
    // VS Code (and forks): tasks, launch configurations, settings, workspaces.
    "**/.vscode/tasks.json",
    "**/.vscode/launch.json",
    "**/.vscode/settings.json",
    "**/*.code-workspace",
    // Dev containers run their lifecycle commands when opened.
    "**/.devcontainer/**",
    "**/.devcontainer.json",
    // Zed: settings (language-server commands), tasks, debug configurations.
    "**/.zed",
    "**/.zed/**",
    // Cargo's configuration (`rustc-wrapper`, `runner`, aliases), which the
    // editor's own `cargo check` obeys.
    "**/.cargo/config",
    "**/.cargo/config.toml",
    // Git hook managers: husky's hooks (its `core.hooksPath`), pre-commit's
    // and lefthook's configurations, which name the commands hooks run.
    "**/.husky",
    "**/.husky/**",
    "**/.pre-commit-config.yaml",
    "**/lefthook.yml",
    "**/.lefthook.yml",
    // JetBrains IDEs: run configurations (also shared ones under .run/).
    "**/.idea/workspace.xml",
    "**/.idea/runConfigurations/**",
    "**/.run/*.run.xml",
    // Vim and Neovim local configuration (exrc, lazy.nvim's local spec).
    "**/.nvim.lua",
    "**/.nvimrc",
    "**/.exrc",
    "**/.lazy.lua",
    // Emacs directory-local variables (eval forms).
    "**/.dir-locals.el",
    "**/.dir-locals-2.el",
    // Helix language-server commands.
    "**/.helix/config.toml",
    "**/.helix/languages.toml",
    // Claude Code's and Gemini CLI's project settings hold hooks those
    // agents run; their command folders are prompts this agent reads.
    "**/.claude/settings.json",
    "**/.claude/settings.local.json",
    "**/.claude/commands/**",
    "**/.gemini/settings.json",
    "**/.gemini/commands/**",
];

/// Compiled protected globs.
#[derive(Debug, Clone)]
pub struct Protected {
    set: GlobSet,
}

impl Default for Protected {
    fn default() -> Self {
        Self::new(&[]).expect("the built-in globs are valid")
    }
}

impl Protected {
    /// The defaults plus `extra` (from the config file's `protected_paths`).
    pub fn new(extra: &[String]) -> Result<Self, globset::Error> {
        let mut builder = GlobSetBuilder::new();
        for glob in DEFAULT_PROTECTED
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
        {
            builder.add(compile(glob)?);
        }
        Ok(Self {
            set: builder.build()?,
        })
    }

    /// Whether `path` (absolute, resolved) is protected under one of `roots`:
    /// by a glob, or inside the directory the root's `core.hooksPath` names.
    pub fn covers(&self, path: &Path, roots: &[PathBuf]) -> bool {
        use crate::platform::fs::{is_beneath, relative_beneath};
        roots.iter().any(|root| {
            relative_beneath(path, root)
                .is_some_and(|rel| !rel.as_os_str().is_empty() && self.set.is_match(rel))
                || hooks_path(root).is_some_and(|h| is_beneath(path, &h))
        })
    }
}

/// What the sandbox keeps read-only at the top of one root (SECURITY.md §2),
/// besides git's directory, which the sandbox finds itself: the files above
/// that something runs on its own, and the `core.hooksPath` directory. A
/// listed path that does not exist yet must stay absent: the sandbox removes
/// it if the command creates it. Files an editor writes by itself (JetBrains'
/// `workspace.xml`) are listed only when they exist, so that the editor's
/// own new file is never removed. Deeper copies (`sub/.envrc`) are protected
/// for the file tools only.
pub fn sandbox_read_only(root: &Path) -> Vec<PathBuf> {
    const TOP: &[&str] = &[
        ".envrc",
        ".acp-coder",
        ".vscode/tasks.json",
        ".vscode/launch.json",
        ".vscode/settings.json",
        ".devcontainer",
        ".devcontainer.json",
        ".zed",
        ".idea/runConfigurations",
        ".run",
        ".nvim.lua",
        ".nvimrc",
        ".exrc",
        ".lazy.lua",
        ".dir-locals.el",
        ".dir-locals-2.el",
        ".helix/config.toml",
        ".helix/languages.toml",
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".claude/commands",
        ".gemini/settings.json",
        ".gemini/commands",
        ".cargo/config",
        ".cargo/config.toml",
        ".husky",
        ".pre-commit-config.yaml",
        "lefthook.yml",
        ".lefthook.yml",
    ];
    const WHEN_PRESENT: &[&str] = &[".idea/workspace.xml"];
    let mut out: Vec<PathBuf> = TOP.iter().map(|p| root.join(p)).collect();
    out.extend(
        WHEN_PRESENT
            .iter()
            .map(|p| root.join(p))
            .filter(|p| p.exists()),
    );
    if let Ok(entries) = std::fs::read_dir(root) {
        out.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "code-workspace")),
        );
    }
    if let Some(hooks) = hooks_path(root).filter(|h| {
        crate::platform::fs::relative_beneath(h, root).is_some_and(|r| !r.as_os_str().is_empty())
    }) {
        out.push(hooks);
    }
    out
}

/// The directory that `core.hooksPath` in the root's own git configuration
/// names (`.git/config`, or the config of the git directory a `.git` file
/// points to), resolved as git does: relative to the root, `~/` to the home
/// directory. Git runs every hook from there.
pub fn hooks_path(root: &Path) -> Option<PathBuf> {
    let dotgit = root.join(".git");
    let dir = if dotgit.is_dir() {
        dotgit
    } else {
        let text = std::fs::read_to_string(&dotgit).ok()?;
        let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
        let dir = root.join(target);
        // A worktree's git directory: the config is in the common directory.
        match std::fs::read_to_string(dir.join("commondir")) {
            Ok(common) => dir.join(common.trim()),
            Err(_) => dir,
        }
    };
    let config = std::fs::read_to_string(dir.join("config")).ok()?;
    let value = config_value(&config, "core", "hookspath")?;
    let path = match value.strip_prefix("~/") {
        Some(rest) => crate::platform::fs::home()?.join(rest),
        None => root.join(value),
    };
    Some(normalize(&path))
}

/// The last value of `key` in `[section]` of a git config file (names are
/// case-insensitive; a quoted value is unquoted; `#`/`;` comments end it).
fn config_value(text: &str, section: &str, key: &str) -> Option<String> {
    let mut current = String::new();
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest.split([']', ' ', '"']).next().unwrap_or_default();
            current = name.to_ascii_lowercase();
            continue;
        }
        if current != section {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            continue;
        };
        if !k.trim().eq_ignore_ascii_case(key) {
            continue;
        }
        let v = v.trim();
        let v = if let Some(q) = v.strip_prefix('"') {
            q.split('"').next().unwrap_or_default()
        } else {
            v.split(['#', ';']).next().unwrap_or_default().trim()
        };
        found = Some(v.to_owned());
    }
    found.filter(|v| !v.is_empty())
}

/// `a/./b/../c` → `a/c`, without touching the disk (the directory may not exist yet).
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// Whether `path` is a file with other hard links: writing it in place (as an
/// editor may for `fs/write_text_file`) changes the other names too, which
/// may be `.git/config` or a file outside the project (a hard link that a
/// command made, or a package manager's store), so it is treated like a
/// protected path. Local writes replace the file (a rename) and so never
/// reach the other names, but the policy does not depend on how a write is
/// done.
pub fn linked_elsewhere(path: &Path) -> bool {
    crate::platform::fs::link_count(path).is_some_and(|n| n > 1)
}

/// Whether `path` lies in a git directory that is not named `.git` (which
/// the globs cover): one a `.git` file names (`git init --separate-git-dir`,
/// a worktree's or submodule's), or a bare repository, inside a root. Its
/// `config` and `hooks/` make git run commands just as `.git/`'s do; an
/// outside review planted a hook through `write_file gd/hooks/pre-commit`.
/// A git directory is recognised by git's own test: a `HEAD` file next to
/// `objects/` (or, for a worktree's, a `commondir` file).
pub fn in_git_dir(path: &Path, roots: &[PathBuf]) -> bool {
    use crate::platform::fs::relative_beneath;
    let Some(root) = roots
        .iter()
        .find(|r| crate::platform::fs::is_beneath(path, r))
    else {
        return false;
    };
    let is_git_dir = |dir: &Path| {
        dir.join("HEAD").is_file()
            && (dir.join("objects").is_dir() || dir.join("commondir").is_file())
    };
    path.ancestors()
        .take_while(|a| relative_beneath(a, root).is_some_and(|r| !r.as_os_str().is_empty()))
        .any(is_git_dir)
}

/// Checks one glob as the config file gives it (used when loading the config,
/// so a bad glob is reported with the key's name).
pub fn compile(glob: &str) -> Result<globset::Glob, globset::Error> {
    let glob = glob.trim_start_matches("./");
    GlobBuilder::new(glob)
        .case_insensitive(true)
        .literal_separator(true)
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 42.12: to Windows, `.envrc::$DATA`, `.vscode/tasks.json.`,
    /// `.GIT\config ` are the protected files themselves. The relative
    /// part is computed by the Windows rule (`platform::win::relative`,
    /// what `platform::fs::relative_beneath` uses there), then matched.
    #[test]
    fn windows_spellings_of_protected_files_are_protected() {
        let p = Protected::default();
        for path in [
            "C:\\proj\\.envrc::$DATA",
            "C:\\proj\\.envrc:stream",
            "c:\\PROJ\\.vscode\\tasks.json.",
            "\\\\?\\C:\\proj\\.vscode \\tasks.json . .",
            "C:/proj/.GIT/config ",
            "C:\\proj\\sub\\.git.\\hooks\\pre-commit",
        ] {
            let rel = crate::platform::win::relative(path, "C:\\proj").unwrap();
            assert!(
                p.set.is_match(rel.replace('\\', "/")),
                "{path} -> {rel} should be protected"
            );
        }
        let rel = crate::platform::win::relative("C:\\proj\\src\\envrc.rs", "C:\\proj").unwrap();
        assert!(!p.set.is_match(rel.replace('\\', "/")));
    }

    #[test]
    fn defaults_cover_command_planting_files_at_any_depth() {
        let p = Protected::default();
        let roots = vec![PathBuf::from("/proj"), PathBuf::from("/other")];
        for path in [
            "/proj/.git/config",
            "/proj/.git/hooks/pre-commit",
            "/proj/.git",
            "/proj/.GIT/CONFIG",
            "/proj/vendor/lib/.git/config",
            "/proj/.envrc",
            "/proj/sub/.envrc",
            "/proj/.acp-coder/commands/x.md",
            "/proj/.vscode/tasks.json",
            "/proj/.vscode/settings.json",
            "/proj/my.code-workspace",
            "/proj/.devcontainer/devcontainer.json",
            "/proj/.zed/tasks.json",
            "/proj/.idea/workspace.xml",
            "/proj/.idea/runConfigurations/Run.xml",
            "/proj/.run/Server.run.xml",
            "/proj/.nvim.lua",
            "/proj/.exrc",
            "/proj/.dir-locals.el",
            "/proj/.helix/languages.toml",
            "/proj/.cargo/config.toml",
            "/proj/.cargo/config",
            "/proj/.zed/debug.json",
            "/proj/.husky/pre-commit",
            "/proj/.pre-commit-config.yaml",
            "/proj/.claude/settings.json",
            "/proj/.claude/settings.local.json",
            "/proj/.claude/commands/deploy.md",
            "/proj/sub/.gemini/settings.json",
            "/proj/.gemini/commands/git/commit.toml",
            "/other/.git/config",
        ] {
            assert!(p.covers(Path::new(path), &roots), "{path}");
        }
        for path in [
            "/proj/src/main.rs",
            "/proj/.gitignore",
            "/proj/.github/workflows/ci.yml",
            "/proj/.vscode/extensions.json",
            "/proj/.cargo/registry/x",
            "/proj/Makefile",
            "/proj/docs/git/config",
            "/proj",
            "/elsewhere/.git/config",
        ] {
            assert!(!p.covers(Path::new(path), &roots), "{path}");
        }
    }

    #[test]
    fn the_hooks_path_directory_is_protected() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n[Core]\n\thooksPath = \"tools/./githooks\" # here\n",
        )
        .unwrap();
        let roots = vec![root.clone()];
        let p = Protected::default();
        assert_eq!(hooks_path(&root), Some(root.join("tools/githooks")));
        assert!(p.covers(&root.join("tools/githooks/pre-commit"), &roots));
        assert!(!p.covers(&root.join("tools/other.sh"), &roots));
        let ro = sandbox_read_only(&root);
        assert!(ro.contains(&root.join("tools/githooks")), "{ro:?}");
        assert!(ro.contains(&root.join(".cargo/config.toml")), "{ro:?}");
        // No hooksPath: nothing extra.
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        assert_eq!(hooks_path(&root), None);
        assert_eq!(
            config_value("[alias]\nhookspath = x\n", "core", "hookspath"),
            None
        );
    }

    #[test]
    fn git_directories_by_any_name_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let roots = vec![root.clone()];
        let gd = root.join("sub/gd");
        std::fs::create_dir_all(gd.join("objects")).unwrap();
        std::fs::create_dir_all(gd.join("hooks")).unwrap();
        std::fs::write(gd.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let wt = root.join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join("HEAD"), "x").unwrap();
        std::fs::write(wt.join("commondir"), "../gd").unwrap();
        for p in [
            gd.join("config"),
            gd.join("hooks/pre-commit"),
            gd.join("HEAD"),
            gd.clone(),
            wt.join("config.worktree"),
        ] {
            assert!(in_git_dir(&p, &roots), "{p:?}");
        }
        for p in [
            root.join("sub/other.txt"),
            root.join("sub"),
            root.clone(),
            PathBuf::from("/elsewhere/gd/config"),
        ] {
            assert!(!in_git_dir(&p, &roots), "{p:?}");
        }
        // The root itself being a git directory does not protect everything.
        std::fs::create_dir_all(root.join("objects")).unwrap();
        std::fs::write(root.join("HEAD"), "x").unwrap();
        assert!(!in_git_dir(&root.join("src/main.rs"), &roots));
    }

    #[test]
    fn hard_linked_files_count_as_linked_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, "x").unwrap();
        assert!(!linked_elsewhere(&a));
        std::fs::hard_link(&a, dir.path().join("b")).unwrap();
        assert!(linked_elsewhere(&a));
        assert!(!linked_elsewhere(dir.path()));
        assert!(!linked_elsewhere(&dir.path().join("missing")));
    }

    #[test]
    fn the_config_adds_globs_relative_to_each_root() {
        let p = Protected::new(&["Makefile".into(), "./scripts/*.sh".into()]).unwrap();
        let roots = vec![PathBuf::from("/proj")];
        assert!(p.covers(Path::new("/proj/Makefile"), &roots));
        assert!(p.covers(Path::new("/proj/scripts/release.sh"), &roots));
        assert!(!p.covers(Path::new("/proj/sub/Makefile"), &roots));
        assert!(!p.covers(Path::new("/proj/scripts/sub/x.sh"), &roots));
        assert!(Protected::new(&["a[".into()]).is_err());
    }
}
