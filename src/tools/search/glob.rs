//! `glob`: files whose path relative to the root matches a glob, over a
//! parallel walk.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use globset::GlobMatcher;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use super::{
    GlobOptions, SearchError, SearchOutput, compile_glob, display_path, resolve_root, walker,
};

/// Lists the files under `opts.root` matching `opts.pattern`, sorted by path.
///
/// A pattern without `/` matches file names at any depth (`*.rs`); one with
/// `/` is matched against the whole path relative to the root
/// (`src/**/*.ts`). No match is not an error: the text then says so.
pub fn glob(opts: &GlobOptions, cancel: &AtomicBool) -> Result<SearchOutput, SearchError> {
    let root = resolve_root(&opts.root, &opts.display_base)?;
    let matcher = compile_glob(&opts.pattern, &root)?;
    let keep = opts.limits.max_results;
    let shared = Shared {
        root: &root,
        matcher: &matcher,
        cancel,
        keep,
        found: Mutex::new(Vec::new()),
        count: AtomicU64::new(0),
    };
    walker(&root)
        .build_parallel()
        .visit(&mut VisitorBuilder { shared: &shared });
    if cancel.load(Ordering::Relaxed) {
        return Err(SearchError::Cancelled);
    }

    let mut found = shared
        .found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    smallest(&mut found, keep);
    found.sort_unstable();
    let total = usize::try_from(shared.count.into_inner()).unwrap_or(usize::MAX);

    let mut out = SearchOutput {
        matches: total,
        ..SearchOutput::default()
    };
    if total == 0 {
        out.text = format!(
            "No files match {} in {}",
            opts.pattern,
            display_path(&root, &opts.display_base)
        );
        return Ok(out);
    }
    for path in &found {
        out.text.push_str(&display_path(path, &opts.display_base));
        out.text.push('\n');
    }
    out.text.pop();
    if total > found.len() {
        out.truncated = true;
        if !out.text.is_empty() {
            out.text.push('\n');
        }
        out.text.push_str(&format!(
            "[… {} more files not shown; narrow the pattern or path]",
            total - found.len()
        ));
    }
    out.files = found;
    Ok(out)
}

/// Keeps (unordered) the `keep` smallest paths of `paths`.
fn smallest(paths: &mut Vec<PathBuf>, keep: usize) {
    if paths.len() > keep {
        if keep > 0 {
            paths.select_nth_unstable(keep - 1);
        }
        paths.truncate(keep);
    }
}

struct Shared<'a> {
    root: &'a std::path::Path,
    matcher: &'a GlobMatcher,
    cancel: &'a AtomicBool,
    keep: usize,
    found: Mutex<Vec<PathBuf>>,
    count: AtomicU64,
}

struct VisitorBuilder<'s> {
    shared: &'s Shared<'s>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            found: Vec::new(),
            count: 0,
        })
    }
}

struct Visitor<'s> {
    shared: &'s Shared<'s>,
    /// Matching paths; pruned to the `keep` smallest whenever it doubles.
    found: Vec<PathBuf>,
    count: u64,
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let shared = self.shared;
        let glob = Some((shared.matcher, shared.root));
        let entry = match super::file_entry(entry, shared.cancel, glob) {
            Ok(e) => e,
            Err(state) => return state,
        };
        self.count += 1;
        self.found.push(entry.into_path());
        if self.found.len() >= shared.keep.saturating_mul(2).max(64) {
            smallest(&mut self.found, shared.keep);
        }
        WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let shared = self.shared;
        shared.count.fetch_add(self.count, Ordering::Relaxed);
        smallest(&mut self.found, shared.keep);
        let mut found = shared
            .found
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        found.append(&mut self.found);
    }
}

#[cfg(test)]
mod tests {
    use super::super::SearchLimits;
    use super::*;
    use std::fs;
    use std::path::Path;

    fn tree(files: &[&str]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for path in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "x").unwrap();
        }
        dir
    }

    fn opts(dir: &Path, pattern: &str) -> GlobOptions {
        GlobOptions {
            pattern: pattern.to_owned(),
            root: dir.to_path_buf(),
            display_base: dir.to_path_buf(),
            limits: SearchLimits::default(),
        }
    }

    fn run(o: &GlobOptions) -> SearchOutput {
        glob(o, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn matches_names_at_any_depth_sorted() {
        let dir = tree(&["src/b.rs", "src/a/c.rs", "a.rs", "README.md", "src/x.rsx"]);
        let out = run(&opts(dir.path(), "*.rs"));
        assert_eq!(out.text, "a.rs\nsrc/a/c.rs\nsrc/b.rs");
        assert_eq!(out.matches, 3);
        assert_eq!(out.files[0], dir.path().join("a.rs"));
        assert!(out.first_lines.is_empty());
    }

    #[test]
    fn slash_patterns_are_relative_to_root() {
        let dir = tree(&["src/b.ts", "src/a/c.ts", "lib/d.ts"]);
        assert_eq!(
            run(&opts(dir.path(), "src/**/*.ts")).text,
            "src/a/c.ts\nsrc/b.ts"
        );
        assert_eq!(run(&opts(dir.path(), "src/*.ts")).text, "src/b.ts");
        let mut o = opts(dir.path(), "*.ts");
        o.root = dir.path().join("src");
        assert_eq!(run(&o).text, "src/a/c.ts\nsrc/b.ts");
    }

    #[test]
    fn ignored_and_hidden_files_are_skipped() {
        let dir = tree(&["kept.rs", "target/debug/x.rs", ".hidden/y.rs", ".z.rs"]);
        fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        assert_eq!(run(&opts(dir.path(), "*.rs")).text, "kept.rs");
    }

    #[test]
    fn capped_with_a_note_and_the_smallest_paths_kept() {
        let names: Vec<String> = (0..300)
            .map(|i| format!("d{}/f{i:03}.txt", i % 9))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let dir = tree(&refs);
        let mut o = opts(dir.path(), "*.txt");
        o.limits.max_results = 5;
        let out = run(&o);
        assert_eq!(
            out.text,
            "d0/f000.txt\nd0/f009.txt\nd0/f018.txt\nd0/f027.txt\nd0/f036.txt\n\
             [… 295 more files not shown; narrow the pattern or path]"
        );
        assert!(out.truncated);
        assert_eq!(out.matches, 300);
        assert_eq!(out.files.len(), 5);
    }

    #[test]
    fn no_match_and_errors() {
        let dir = tree(&["a.rs"]);
        let out = run(&opts(dir.path(), "*.py"));
        assert_eq!(out.text, "No files match *.py in .");
        assert_eq!(out.matches, 0);
        assert!(matches!(
            glob(&opts(dir.path(), "[z"), &AtomicBool::new(false)),
            Err(SearchError::InvalidPattern { .. })
        ));
        let mut o = opts(dir.path(), "*.rs");
        o.root = dir.path().join("missing");
        assert!(matches!(
            glob(&o, &AtomicBool::new(false)),
            Err(SearchError::NotFound(_))
        ));
        assert!(matches!(
            glob(&opts(dir.path(), "*.rs"), &AtomicBool::new(true)),
            Err(SearchError::Cancelled)
        ));
    }

    #[test]
    fn absolute_display_outside_base() {
        let dir = tree(&["a.rs"]);
        let other = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path(), "*.rs");
        o.display_base = other.path().to_path_buf();
        assert_eq!(
            run(&o).text,
            dir.path().join("a.rs").to_string_lossy().into_owned()
        );
    }
}
