//! A path that does not exist, and the files of that name in the project.
//! A model that guesses a path (`app.log` for `logs/app.log`) reads "does
//! not exist" and gives up or guesses again; the files of the same name
//! beneath the session's roots tell it where to look.
use std::path::{Path, PathBuf};

use super::paths;

/// Most files named in a suggestion.
const MOST_SHOWN: usize = 5;
/// Most directory entries looked at, however large the project.
const MOST_VISITED: usize = 50_000;
/// Deepest directory looked into, below each root.
const MOST_DEPTH: usize = 24;

/// When `path` (as the model gave it, relative to `cwd`) does not exist: a
/// sentence naming the files and directories of the same name (ASCII case
/// ignored) beneath `roots`, relative to `cwd` where they are below it.
/// `None` when the path exists, or nothing of that name was found. The
/// walk skips what the search tools skip (ignored and hidden files) and is
/// bounded; it blocks, so call it off the async threads.
pub fn same_name_elsewhere(path: &str, cwd: &Path, roots: &[PathBuf]) -> Option<String> {
    if path.trim().is_empty() || path.contains('\0') {
        return None;
    }
    let resolved = paths::resolve(path, cwd);
    if std::fs::symlink_metadata(&resolved).is_ok() {
        return None;
    }
    let name = resolved.file_name()?.to_str()?.to_owned();
    let mut found: Vec<PathBuf> = Vec::new();
    let mut visited = 0;
    'roots: for root in roots {
        let walk = super::search::walker(root)
            .max_depth(Some(MOST_DEPTH))
            .build();
        for entry in walk.flatten() {
            visited += 1;
            if visited > MOST_VISITED || found.len() >= MOST_SHOWN {
                break 'roots;
            }
            let p = entry.path();
            if entry.depth() > 0
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.eq_ignore_ascii_case(&name))
                && !found.iter().any(|f| f == p)
            {
                found.push(p.to_path_buf());
            }
        }
    }
    if found.is_empty() {
        return None;
    }
    let shown: Vec<String> = found
        .iter()
        .map(|p| p.strip_prefix(cwd).unwrap_or(p).display().to_string())
        .collect();
    Some(format!(
        "{path} does not exist. In the project, {name} is at: {}. Use that path.",
        shown.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guessed_path_gets_the_files_of_that_name() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("logs/old")).unwrap();
        std::fs::write(root.join("logs/app.log"), "x").unwrap();
        std::fs::write(root.join("logs/old/APP.LOG"), "x").unwrap();
        std::fs::write(root.join("other.log"), "x").unwrap();
        let roots = [root.clone()];
        let said = same_name_elsewhere("app.log", &root, &roots).unwrap();
        assert!(said.starts_with("app.log does not exist."), "{said}");
        assert!(said.contains("logs/app.log"), "{said}");
        assert!(said.contains("logs/old/APP.LOG"), "{said}");
        assert!(!said.contains(&*root.to_string_lossy()), "{said}");
        // An absolute guess too, and a directory.
        let said = same_name_elsewhere(&root.join("old").to_string_lossy(), &root, &roots);
        assert!(said.unwrap().contains("logs/old"));
        // A path that exists, or a name found nowhere: nothing to add.
        assert!(same_name_elsewhere("logs/app.log", &root, &roots).is_none());
        assert!(same_name_elsewhere("missing.txt", &root, &roots).is_none());
        assert!(same_name_elsewhere("", &root, &roots).is_none());
    }

    #[test]
    fn ignored_and_hidden_files_are_not_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".secret")).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
        std::fs::write(root.join(".secret/key.pem"), "x").unwrap();
        std::fs::write(root.join("build/key.pem"), "x").unwrap();
        assert!(same_name_elsewhere("key.pem", &root, std::slice::from_ref(&root)).is_none());
    }
}
