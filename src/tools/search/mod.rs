//! In-process search behind the model-facing `grep`, `glob` and
//! `list_directory` tools.
//!
//! Everything here is blocking (the caller runs it in `spawn_blocking`) and
//! built on ripgrep's own crates: `ignore` walks the tree (honouring
//! `.gitignore`, `.ignore` and git excludes even outside a git repository, and
//! skipping hidden files), `grep-searcher` + `grep-regex` search file contents
//! (skipping binary files), and `globset` matches path patterns.
//!
//! Output is plain text meant for a model: deterministic (sorted by path, then
//! line), capped at [`SearchLimits::max_results`] with a note saying how much
//! was left out, paths relative to the session's working directory when they
//! are inside it.

mod glob;
mod grep;
mod list;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::WalkBuilder;

pub use glob::glob;
pub use grep::grep;
pub use list::list_directory;

/// How much a search may return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Most result lines (matching lines, files or entries) shown.
    pub max_results: usize,
    /// Longer lines are cut to this many characters, ending with `…`.
    pub max_line_chars: usize,
    /// `grep` holds one line (with its context) in memory at a time, at most
    /// this many bytes: a file with a longer line is skipped, and the answer
    /// says so (an outside review saw 438 MiB taken by a 300 MiB one-line file).
    pub max_line_bytes: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        Self {
            max_results: 500,
            max_line_chars: 300,
            max_line_bytes: 16 << 20,
        }
    }
}

/// Why a search could not run. Messages are written for the model to act on.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The regex or glob could not be compiled.
    #[error("invalid pattern `{pattern}`: {reason}")]
    InvalidPattern { pattern: String, reason: String },
    /// The search root does not exist.
    #[error("path not found: {}", .0.display())]
    NotFound(PathBuf),
    /// A directory was expected.
    #[error("not a directory: {} (it is a file; read it instead of listing it)", .0.display())]
    NotADirectory(PathBuf),
    /// The root could not be read.
    #[error("cannot read {}: {}", .0.display(), .1)]
    Io(PathBuf, #[source] std::io::Error),
    /// The cancel flag was raised before the search finished.
    #[error("search cancelled")]
    Cancelled,
}

/// The result of a search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchOutput {
    /// What the model sees.
    pub text: String,
    /// Total number of results found (matching lines, files or entries),
    /// including those not shown.
    pub matches: usize,
    /// Whether some results were left out of `text`.
    pub truncated: bool,
    /// Absolute paths of the files shown in `text` (for editor "locations").
    /// Empty for `list_directory`.
    pub files: Vec<PathBuf>,
    /// The first matching line (1-based) of each file shown, at most
    /// [`MAX_FIRST_LINES`] of them. Only `grep` fills this.
    pub first_lines: Vec<(PathBuf, u64)>,
}

/// Cap on [`SearchOutput::first_lines`].
pub const MAX_FIRST_LINES: usize = 20;

/// Options of [`grep`].
#[derive(Debug, Clone)]
pub struct GrepOptions {
    /// A regular expression (Rust `regex` syntax, as in ripgrep).
    pub pattern: String,
    /// Absolute search root: a directory or a single file.
    pub root: PathBuf,
    /// The session's working directory: output paths are relative to it when
    /// inside, absolute otherwise.
    pub display_base: PathBuf,
    /// Only search files whose path relative to `root` matches this glob
    /// (`*.rs`, `src/**/*.ts`).
    pub glob: Option<String>,
    pub case_insensitive: bool,
    /// Lines of context shown before and after each match.
    pub context: usize,
    pub limits: SearchLimits,
}

/// Options of [`glob`].
#[derive(Debug, Clone)]
pub struct GlobOptions {
    /// A glob matched against paths relative to `root`; without a `/` it
    /// matches file names at any depth.
    pub pattern: String,
    /// Absolute directory to search.
    pub root: PathBuf,
    /// See [`GrepOptions::display_base`].
    pub display_base: PathBuf,
    pub limits: SearchLimits,
}

/// `path` as shown to the model: relative to `base` when inside it (`.` for
/// `base` itself), absolute otherwise.
pub(crate) fn display_path(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// Makes a relative root absolute against `base`, and checks it exists.
pub(crate) fn resolve_root(root: &Path, base: &Path) -> Result<PathBuf, SearchError> {
    let root = if root.is_absolute() {
        root.to_path_buf()
    } else {
        base.join(root)
    };
    match std::fs::metadata(&root) {
        Ok(_) => Ok(root),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(SearchError::NotFound(root)),
        Err(e) => Err(SearchError::Io(root, e)),
    }
}

/// The walker shared by all three tools: standard ignore rules, hidden files
/// skipped, `.gitignore` honoured even outside a git repository.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(true)
        .parents(true)
        .ignore(true)
        .git_ignore(true)
        .git_global(true)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false);
    builder
}

/// Compiles a path glob. A pattern without `/` matches file names at any
/// depth; one with `/` is anchored at the root; a trailing `/` means
/// "everything below"; `*` never crosses a `/` while `**` does.
pub(crate) fn compile_glob(pattern: &str, root: &Path) -> Result<GlobMatcher, SearchError> {
    let invalid = |reason: String| SearchError::InvalidPattern {
        pattern: pattern.to_owned(),
        reason,
    };
    let mut p = pattern.trim();
    if p.is_empty() {
        return Err(invalid("the glob is empty".to_owned()));
    }
    let root_str = root.to_string_lossy();
    if let Some(rest) = p.strip_prefix(root_str.as_ref())
        && (rest.is_empty() || rest.starts_with('/'))
    {
        p = rest;
    }
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let p = p.trim_start_matches('/');
    let full = if p.is_empty() {
        "**".to_owned()
    } else if p.ends_with('/') {
        format!("{p}**")
    } else if p.contains('/') {
        p.to_owned()
    } else {
        format!("**/{p}")
    };
    GlobBuilder::new(&full)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| invalid(e.kind().to_string()))
}

/// The next file of a parallel walk that `glob` (if any) accepts, matched
/// on its path below `root`: `Err(Quit)` once the search is cancelled,
/// `Err(Continue)` for directories, for files the glob rejects and for
/// unreadable entries, which are skipped as ripgrep does (it only warns).
pub(crate) fn file_entry(
    entry: Result<ignore::DirEntry, ignore::Error>,
    cancel: &std::sync::atomic::AtomicBool,
    glob: Option<(&GlobMatcher, &Path)>,
) -> Result<ignore::DirEntry, ignore::WalkState> {
    if cancel.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(ignore::WalkState::Quit);
    }
    match entry {
        Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => match glob {
            Some((glob, root)) if !glob.is_match(rel_to_root(e.path(), root)) => {
                Err(ignore::WalkState::Continue)
            }
            _ => Ok(e),
        },
        _ => Err(ignore::WalkState::Continue),
    }
}

/// The part of `path` below `root`, or its file name when `path` is `root`
/// itself (a single-file search).
pub(crate) fn rel_to_root<'a>(path: &'a Path, root: &Path) -> &'a Path {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel,
        _ => path.file_name().map(Path::new).unwrap_or(path),
    }
}

/// Appends `line` (without its line terminator), cut to `max_chars`
/// characters with a trailing `…`. Invalid UTF-8 is replaced.
pub(crate) fn push_line(out: &mut String, line: &[u8], max_chars: usize) {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match std::str::from_utf8(line) {
        Ok(s) => push_cut(out, s, max_chars),
        Err(_) => push_cut(out, &String::from_utf8_lossy(line), max_chars),
    }
}

fn push_cut(out: &mut String, s: &str, max_chars: usize) {
    // A line of at most `max_chars` bytes has at most that many characters.
    if s.len() <= max_chars {
        out.push_str(s);
        return;
    }
    match s.char_indices().nth(max_chars) {
        Some((cut, _)) => {
            out.push_str(&s[..cut]);
            out.push('…');
        }
        None => out.push_str(s),
    }
}

/// Appends a decimal number without going through `fmt` machinery.
pub(crate) fn push_u64(out: &mut String, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    out.push_str(std::str::from_utf8(&buf[i..]).unwrap_or_default());
}

/// `1.2 KiB` style sizes.
pub(crate) fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let mut s = String::new();
    if value < 10.0 {
        let _ = write!(s, "{value:.1} {}", UNITS[unit]);
    } else {
        let _ = write!(s, "{value:.0} {}", UNITS[unit]);
    }
    s
}

/// Drops a trailing newline left by line-oriented assembly.
pub(crate) fn trim_trailing_newline(s: &mut String) {
    while s.ends_with('\n') {
        s.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_paths_are_relative_inside_base_and_absolute_outside() {
        let base = Path::new("/work/proj");
        assert_eq!(
            display_path(Path::new("/work/proj/src/a.rs"), base),
            "src/a.rs"
        );
        assert_eq!(display_path(Path::new("/work/proj"), base), ".");
        assert_eq!(display_path(Path::new("/etc/hosts"), base), "/etc/hosts");
        // A sibling sharing a string prefix is not "inside".
        assert_eq!(
            display_path(Path::new("/work/project2/x"), base),
            "/work/project2/x"
        );
    }

    #[test]
    fn long_lines_are_cut_on_a_char_boundary() {
        let mut s = String::new();
        push_line(&mut s, "héllo wörld\r\n".as_bytes(), 4);
        assert_eq!(s, "héll…");
        s.clear();
        push_line(&mut s, b"short\n", 300);
        assert_eq!(s, "short");
        s.clear();
        push_line(&mut s, b"ab\xffcd", 300);
        assert_eq!(s, "ab\u{fffd}cd");
    }

    #[test]
    fn numbers_and_sizes_format() {
        let mut s = String::new();
        push_u64(&mut s, 0);
        s.push(' ');
        push_u64(&mut s, 1234567890);
        assert_eq!(s, "0 1234567890");
        assert_eq!(human_size(12), "12 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(20 * 1024 * 1024), "20 MiB");
    }

    #[test]
    fn globs_without_slash_match_names_at_any_depth() {
        let root = Path::new("/r");
        let g = compile_glob("*.rs", root).unwrap();
        assert!(g.is_match("a.rs"));
        assert!(g.is_match("src/deep/a.rs"));
        assert!(!g.is_match("a.rsx"));
        let g = compile_glob("src/*.rs", root).unwrap();
        assert!(g.is_match("src/a.rs"));
        assert!(!g.is_match("src/deep/a.rs"));
        let g = compile_glob("src/**/*.ts", root).unwrap();
        assert!(g.is_match("src/a.ts"));
        assert!(g.is_match("src/x/y/a.ts"));
        assert!(!g.is_match("lib/a.ts"));
        let g = compile_glob("./src/", root).unwrap();
        assert!(g.is_match("src/x/y/a.ts"));
        let g = compile_glob("/r/src/*.rs", root).unwrap();
        assert!(g.is_match("src/a.rs"));
        assert!(matches!(
            compile_glob("src/[a", root),
            Err(SearchError::InvalidPattern { .. })
        ));
    }
}
