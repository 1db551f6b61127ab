//! Which files of a root's git directories the mount namespace makes
//! read-only (`mounts.rs` binds them), and which directories it pins.
//!
//! What is protected, for each root `R` (DESIGN §3 "Modes and permissions"):
//! - `R/.git` when it is a file (a worktree's or submodule's `gitdir:` pointer),
//!   and the git directory it names, as below (a repository made with
//!   `git init --separate-git-dir` inside the project kept its config and
//!   hooks writable until an outside review found it); for a worktree's
//!   directory (it has a `commondir`), its `config.worktree` and `commondir`
//!   and the common directory they lead to;
//! - in the git directory `R/.git` and each submodule git directory under
//!   `.git/modules/`: `config`, `config.worktree`, `commondir` and `hooks/`
//!   (created empty when missing, as `git init` would); in each
//!   `.git/worktrees/*`: `config.worktree` and `commondir`.
use std::path::{Path, PathBuf};

/// Submodule git directories looked at, at most (each costs two mounts).
const MAX_GIT_DIRS: usize = 64;
/// Nesting of `.git/modules/` walked (`a/b` submodule names, nested submodules).
const MAX_DEPTH: usize = 6;

/// A path to protect is a symbolic link: a command could replace it.
#[derive(Debug)]
pub(super) struct Symlink(pub PathBuf);

/// Collects, for one root, what to pin (bind onto itself) and what to make read-only.
pub(super) fn protected(
    root: &Path,
    pinned: &mut Vec<PathBuf>,
    readonly: &mut Vec<PathBuf>,
) -> Result<(), Symlink> {
    if !root.is_dir() {
        return Ok(());
    }
    pinned.push(root.to_path_buf());
    let dotgit = root.join(".git");
    // The git directory to walk: `.git` itself, or the one a `.git` file
    // names (`linked`: then a worktree's when it has a `commondir`).
    let (dir, linked) = match std::fs::symlink_metadata(&dotgit) {
        Ok(m) if m.file_type().is_symlink() => return Err(Symlink(dotgit)),
        Ok(m) if m.is_file() => {
            let target = pointed_to(&dotgit);
            readonly.push(dotgit);
            (target, true)
        }
        Ok(m) if m.is_dir() => (Some(dotgit), false),
        _ => (None, false),
    };
    let mut walk = GitWalk {
        budget: MAX_GIT_DIRS,
        pinned,
        readonly,
    };
    match dir {
        Some(dir) if linked && dir.join("commondir").is_file() => walk.linked_dir(&dir),
        Some(dir) => walk.git_dir(&dir, 0),
        None => Ok(()),
    }
}

/// The git directory a `.git` file names (`gitdir: PATH`, relative to the
/// file's directory), if it is a directory; its real path, so that a command
/// cannot swap a symlink on the way.
fn pointed_to(dotgit: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dotgit).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let base = dotgit.parent()?;
    let dir = base.join(target).canonicalize().ok()?;
    dir.is_dir().then_some(dir)
}

/// One root's walk through its git directory and submodules, at most
/// `budget` git directories deep in all.
struct GitWalk<'a> {
    budget: usize,
    pinned: &'a mut Vec<PathBuf>,
    readonly: &'a mut Vec<PathBuf>,
}

impl GitWalk<'_> {
    fn git_dir(&mut self, dir: &Path, depth: usize) -> Result<(), Symlink> {
        if self.budget == 0 {
            return Ok(());
        }
        self.budget -= 1;
        self.pinned.push(dir.to_path_buf());
        let hooks = dir.join("hooks");
        if std::fs::symlink_metadata(&hooks).is_err() {
            // Nothing to bind on otherwise, and a command could create it.
            let _ = std::fs::create_dir(&hooks);
        }
        for name in ["config", "config.worktree", "commondir", "hooks"] {
            existing(&dir.join(name), self.readonly)?;
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) {
            for e in entries.flatten() {
                for name in ["config.worktree", "commondir"] {
                    existing(&e.path().join(name), self.readonly)?;
                }
            }
        }
        self.submodules(&dir.join("modules"), depth)
    }

    /// A linked worktree's git directory: its own `config.worktree` and
    /// `commondir`, then the common directory, where config and hooks live.
    fn linked_dir(&mut self, dir: &Path) -> Result<(), Symlink> {
        self.pinned.push(dir.to_path_buf());
        for name in ["config.worktree", "commondir"] {
            existing(&dir.join(name), self.readonly)?;
        }
        let common = std::fs::read_to_string(dir.join("commondir"))
            .ok()
            .and_then(|c| dir.join(c.trim()).canonicalize().ok())
            .filter(|c| c.is_dir() && !self.pinned.contains(c));
        match common {
            Some(common) => self.git_dir(&common, 0),
            None => Ok(()),
        }
    }

    /// Submodule git directories: `modules/<name>` where `<name>` may contain `/`.
    fn submodules(&mut self, dir: &Path, depth: usize) -> Result<(), Symlink> {
        if depth >= MAX_DEPTH {
            return Ok(());
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for e in entries.flatten() {
            let path = e.path();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() {
                self.git_dir(&path, depth + 1)?;
            } else {
                self.submodules(&path, depth + 1)?;
            }
        }
        Ok(())
    }
}

fn existing(path: &Path, readonly: &mut Vec<PathBuf>) -> Result<(), Symlink> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Symlink(path.to_path_buf())),
        Ok(_) => {
            readonly.push(path.to_path_buf());
            Ok(())
        }
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_git_executes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let g = root.join(".git");
        std::fs::create_dir_all(g.join("modules/lib/a/modules/inner")).unwrap();
        std::fs::write(g.join("config"), "").unwrap();
        std::fs::write(g.join("HEAD"), "").unwrap();
        std::fs::write(g.join("modules/lib/a/HEAD"), "").unwrap();
        std::fs::write(g.join("modules/lib/a/config"), "").unwrap();
        std::fs::write(g.join("modules/lib/a/modules/inner/HEAD"), "").unwrap();
        std::fs::create_dir_all(g.join("worktrees/w")).unwrap();
        std::fs::write(g.join("worktrees/w/commondir"), "../..").unwrap();
        let (mut pinned, mut ro) = (Vec::new(), Vec::new());
        protected(root, &mut pinned, &mut ro).unwrap();
        assert_eq!(pinned[..2], [root.to_path_buf(), g.clone()], "{pinned:?}");
        assert!(pinned.contains(&g.join("modules/lib/a")));
        assert!(pinned.contains(&g.join("modules/lib/a/modules/inner")));
        for p in [
            "config",
            "hooks",
            "worktrees/w/commondir",
            "modules/lib/a/config",
            "modules/lib/a/hooks",
            "modules/lib/a/modules/inner/hooks",
        ] {
            assert!(ro.contains(&g.join(p)), "{p} in {ro:?}");
        }
        // A missing hooks directory is created so that it can be protected.
        assert!(g.join("hooks").is_dir());

        // A `.git` file (worktree, submodule) is protected itself.
        let wt = tempfile::tempdir().unwrap();
        std::fs::write(wt.path().join(".git"), "gitdir: /x").unwrap();
        let (mut pinned, mut ro) = (Vec::new(), Vec::new());
        protected(wt.path(), &mut pinned, &mut ro).unwrap();
        assert_eq!(ro, [wt.path().join(".git")]);

        // ... and so is the git directory it names (`--separate-git-dir`),
        // wherever it is, relative paths read from the file's directory.
        let sep = tempfile::tempdir().unwrap();
        let sep_root = sep.path().canonicalize().unwrap();
        let gd = sep_root.join("gd");
        std::fs::create_dir_all(gd.join("objects")).unwrap();
        std::fs::write(gd.join("HEAD"), "").unwrap();
        std::fs::write(gd.join("config"), "").unwrap();
        std::fs::write(sep_root.join(".git"), "gitdir: gd\n").unwrap();
        let (mut pinned, mut ro) = (Vec::new(), Vec::new());
        protected(&sep_root, &mut pinned, &mut ro).unwrap();
        assert!(pinned.contains(&gd), "{pinned:?}");
        for p in [sep_root.join(".git"), gd.join("config"), gd.join("hooks")] {
            assert!(ro.contains(&p), "{p:?} in {ro:?}");
        }

        // A worktree's directory leads to the common directory's config and hooks.
        let main = tempfile::tempdir().unwrap();
        let main_git = main.path().canonicalize().unwrap().join(".git");
        let w = main_git.join("worktrees/w");
        std::fs::create_dir_all(&w).unwrap();
        std::fs::write(main_git.join("HEAD"), "").unwrap();
        std::fs::write(main_git.join("config"), "").unwrap();
        std::fs::write(w.join("HEAD"), "").unwrap();
        std::fs::write(w.join("commondir"), "../..\n").unwrap();
        let tree = tempfile::tempdir().unwrap();
        std::fs::write(
            tree.path().join(".git"),
            format!("gitdir: {}\n", w.display()),
        )
        .unwrap();
        let (mut pinned, mut ro) = (Vec::new(), Vec::new());
        protected(tree.path(), &mut pinned, &mut ro).unwrap();
        assert!(
            pinned.contains(&w) && pinned.contains(&main_git),
            "{pinned:?}"
        );
        for p in [
            w.join("commondir"),
            main_git.join("config"),
            main_git.join("hooks"),
        ] {
            assert!(ro.contains(&p), "{p:?} in {ro:?}");
        }
        assert!(
            !w.join("hooks").exists(),
            "nothing is created in a worktree's directory"
        );

        // A symlinked config could be swapped for another file: refused.
        let l = tempfile::tempdir().unwrap();
        std::fs::create_dir(l.path().join(".git")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", l.path().join(".git/config")).unwrap();
        let r = protected(l.path(), &mut Vec::new(), &mut Vec::new());
        assert!(matches!(r, Err(Symlink(_))), "{r:?}");
    }
}
