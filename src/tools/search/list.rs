//! `list_directory`: one level of a directory, as the model should see it.

use std::ffi::OsString;
use std::path::Path;

use super::{SearchError, SearchLimits, SearchOutput, human_size, resolve_root, walker};

/// Lists `dir` one level deep: directories first (with a trailing `/`), then
/// files with human-readable sizes, each group sorted by name. Hidden and
/// ignored entries are left out and counted in a final note. A relative `dir`
/// is taken relative to `display_base`.
pub fn list_directory(
    dir: &Path,
    display_base: &Path,
    limits: &SearchLimits,
) -> Result<SearchOutput, SearchError> {
    let dir = resolve_root(dir, display_base)?;
    if !dir.is_dir() {
        return Err(SearchError::NotADirectory(dir));
    }
    let all = std::fs::read_dir(&dir)
        .map_err(|e| SearchError::Io(dir.clone(), e))?
        .count();

    let mut dirs: Vec<OsString> = Vec::new();
    let mut files: Vec<(OsString, String)> = Vec::new();
    for entry in walker(&dir).max_depth(Some(1)).build() {
        let Ok(entry) = entry else { continue };
        if entry.depth() != 1 {
            continue;
        }
        let name = entry.file_name().to_owned();
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            dirs.push(name);
        } else if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())
                .map(|t| t.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "?".to_owned());
            files.push((name, format!(" -> {target}")));
        } else {
            let size = entry
                .metadata()
                .map(|m| format!(" ({})", human_size(m.len())))
                .unwrap_or_default();
            files.push((name, size));
        }
    }
    dirs.sort_unstable();
    files.sort_unstable();

    let visible = dirs.len() + files.len();
    let mut out = SearchOutput {
        matches: visible,
        truncated: visible > limits.max_results,
        ..SearchOutput::default()
    };
    let mut lines: Vec<String> = dirs
        .iter()
        .map(|d| format!("{}/", d.to_string_lossy()))
        .chain(
            files
                .iter()
                .map(|(f, detail)| format!("{}{detail}", f.to_string_lossy())),
        )
        .take(limits.max_results)
        .collect();
    if visible == 0 {
        lines.push("(empty directory)".to_owned());
    }
    if out.truncated {
        lines.push(format!(
            "[… {} more entries not shown]",
            visible - limits.max_results
        ));
    }
    let skipped = all.saturating_sub(visible);
    if skipped > 0 {
        let noun = if skipped == 1 { "entry" } else { "entries" };
        lines.push(format!("({skipped} hidden or ignored {noun} not shown)"));
    }
    out.text = lines.join("\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(files: &[(&str, usize)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, size) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "x".repeat(*size)).unwrap();
        }
        dir
    }

    #[test]
    fn dirs_first_then_files_with_sizes_and_a_note_for_the_rest() {
        let dir = tree(&[
            ("b.txt", 10),
            ("a.rs", 2048),
            ("src/lib.rs", 1),
            ("docs/x.md", 1),
            (".hidden", 1),
            (".git/config", 1),
            ("target/out", 1),
            (".gitignore", 0),
        ]);
        fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let out = list_directory(dir.path(), dir.path(), &SearchLimits::default()).unwrap();
        assert_eq!(
            out.text,
            "docs/\nsrc/\na.rs (2.0 KiB)\nb.txt (10 B)\n(4 hidden or ignored entries not shown)"
        );
        assert_eq!(out.matches, 4);
        assert!(!out.truncated);
    }

    #[test]
    fn capped_with_a_note() {
        let dir = tree(&[("a", 1), ("b", 1), ("c", 1), ("d/x", 1)]);
        let limits = SearchLimits {
            max_results: 2,
            ..SearchLimits::default()
        };
        let out = list_directory(dir.path(), dir.path(), &limits).unwrap();
        assert_eq!(out.text, "d/\na (1 B)\n[… 2 more entries not shown]");
        assert!(out.truncated);
        assert_eq!(out.matches, 4);
    }

    #[test]
    fn empty_relative_and_error_cases() {
        let dir = tree(&[("sub/.only-hidden", 1), ("file.txt", 1)]);
        let out = list_directory(Path::new("sub"), dir.path(), &SearchLimits::default()).unwrap();
        assert_eq!(
            out.text,
            "(empty directory)\n(1 hidden or ignored entry not shown)"
        );
        let err = list_directory(
            &dir.path().join("file.txt"),
            dir.path(),
            &SearchLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(&err, SearchError::NotADirectory(p) if p.ends_with("file.txt")));
        let err = list_directory(
            &dir.path().join("nope"),
            dir.path(),
            &SearchLimits::default(),
        )
        .unwrap_err();
        assert!(matches!(err, SearchError::NotFound(_)));
    }

    #[test]
    fn symlinks_show_their_target() {
        let dir = tree(&[("real.txt", 1)]);
        crate::platform::fs::symlink("real.txt", dir.path().join("link")).unwrap();
        let out = list_directory(dir.path(), dir.path(), &SearchLimits::default()).unwrap();
        assert_eq!(out.text, "link -> real.txt\nreal.txt (1 B)");
    }
}
