//! Paths as tools see them: relative to the session cwd, `~` expanded, `..`
//! and symlinks resolved, so "inside the project" means what it says.
use std::path::{Component, Path, PathBuf};

/// Resolves `~`, `.` and `..` and symlinks (of the longest existing ancestor) of
/// a path, relative paths against `cwd`.
pub fn resolve(path: &str, cwd: &Path) -> PathBuf {
    let expanded = if path == "~" || path.starts_with("~/") {
        match std::env::var_os("HOME") {
            Some(home) => {
                PathBuf::from(home).join(path.trim_start_matches('~').trim_start_matches('/'))
            }
            None => PathBuf::from(path),
        }
    } else {
        PathBuf::from(path)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    canonicalize_lenient(&lexical_normalize(&joined))
}

fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Canonicalises the longest existing ancestor and appends the rest, so paths
/// of files not yet created still resolve symlinked directories. Dangling
/// symlinks are followed too: writing through one creates its target.
pub fn canonicalize_lenient(path: &Path) -> PathBuf {
    canonicalize_following(path, 0)
}

/// Symlink hops followed through dangling links (as the kernel's ELOOP limit).
const MAX_LINK_HOPS: u32 = 40;

fn canonicalize_following(path: &Path, hops: u32) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(canon) = existing.canonicalize() {
            let mut out = canon;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        if hops < MAX_LINK_HOPS
            && let Ok(target) = std::fs::read_link(&existing)
        {
            let base = existing
                .parent()
                .map(|p| canonicalize_following(p, hops + 1))
                .unwrap_or_default();
            let mut next = lexical_normalize(&base.join(target));
            for part in rest.iter().rev() {
                next.push(part);
            }
            return canonicalize_following(&next, hops + 1);
        }
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether a resolved path lies inside one of the (canonical) roots.
pub fn is_inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|r| path.starts_with(r))
}

/// How a path is shown in titles and results: relative to cwd when inside it.
pub fn display(path: &Path, cwd: &Path) -> String {
    let cwd_canon = canonicalize_lenient(cwd);
    for base in [cwd, cwd_canon.as_path()] {
        if let Ok(rel) = path.strip_prefix(base) {
            let s = rel.display().to_string();
            return if s.is_empty() { ".".into() } else { s };
        }
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_handles_dots_tilde_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("link")).unwrap();
        assert_eq!(resolve("a/../b.txt", &root), root.join("b.txt"));
        assert_eq!(resolve("../x", &root.join("real")), root.join("x"));
        assert!(!is_inside(
            &resolve("../../etc/passwd", &root),
            std::slice::from_ref(&root)
        ));
        assert!(!is_inside(
            &resolve("link/new-file", &root),
            std::slice::from_ref(&root)
        ));
        assert!(is_inside(
            &resolve("real/new/deep.txt", &root),
            std::slice::from_ref(&root)
        ));
        // Dangling links resolve to where a write through them would land.
        std::os::unix::fs::symlink("../elsewhere/new.txt", root.join("real/dangling")).unwrap();
        assert_eq!(
            resolve("real/dangling", &root),
            root.join("elsewhere/new.txt")
        );
        std::os::unix::fs::symlink("/nonexistent-dir", root.join("dlink")).unwrap();
        assert_eq!(
            resolve("dlink/a/b.txt", &root),
            PathBuf::from("/nonexistent-dir/a/b.txt")
        );
        std::os::unix::fs::symlink("loop2", root.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", root.join("loop2")).unwrap();
        let _ = resolve("loop1", &root); // terminates
        let home = PathBuf::from(std::env::var("HOME").unwrap());
        assert!(resolve("~/x", &root).starts_with(home.canonicalize().unwrap_or(home)));
    }

    #[test]
    fn display_is_relative_inside_cwd() {
        assert_eq!(
            display(Path::new("/p/src/a.rs"), Path::new("/p")),
            "src/a.rs"
        );
        assert_eq!(display(Path::new("/q/a.rs"), Path::new("/p")), "/q/a.rs");
        assert_eq!(display(Path::new("/p"), Path::new("/p")), ".");
    }
}
