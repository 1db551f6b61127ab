//! `grep`: ripgrep's engine, in process, over a parallel walk.
//!
//! Each walker thread owns a `Searcher` and a clone of the matcher. Matching
//! lines are formatted straight into a per-thread buffer; a file with hits is
//! handed to a shared [`Collector`] that keeps only the files needed for the
//! first `max_results` lines in path order, while every thread keeps counting
//! all matches so the "more matches" note is exact.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use globset::GlobMatcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use super::{
    GrepOptions, MAX_FIRST_LINES, SearchError, SearchOutput, compile_glob, display_path, push_line,
    push_u64, rel_to_root, resolve_root, trim_trailing_newline, walker,
};

/// Searches file contents under `opts.root` for the regex `opts.pattern`.
///
/// Output lines are `path:line:text`, context lines `path-line-text`, groups
/// separated by `--` when `opts.context > 0`. No match is not an error: the
/// text then says so.
pub fn grep(opts: &GrepOptions, cancel: &AtomicBool) -> Result<SearchOutput, SearchError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(opts.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&opts.pattern)
        .map_err(|e| SearchError::InvalidPattern {
            pattern: opts.pattern.clone(),
            reason: e.to_string(),
        })?;
    let root = resolve_root(&opts.root, &opts.display_base)?;
    let glob = opts
        .glob
        .as_deref()
        .map(|g| compile_glob(g, &root))
        .transpose()?;

    let shared = Shared {
        root: &root,
        base: &opts.display_base,
        glob: glob.as_ref(),
        cancel,
        max_results: opts.limits.max_results,
        max_line_chars: opts.limits.max_line_chars,
        collector: Mutex::new(Collector::new(opts.limits.max_results)),
        collector_full: AtomicBool::new(opts.limits.max_results == 0),
        matches: AtomicU64::new(0),
        binary_files: AtomicU64::new(0),
    };
    let mut builder = VisitorBuilder {
        shared: &shared,
        matcher,
        searcher: SearcherBuilder::new()
            .line_number(true)
            .before_context(opts.context)
            .after_context(opts.context)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .build(),
    };
    walker(&root).build_parallel().visit(&mut builder);

    if cancel.load(Ordering::Relaxed) {
        return Err(SearchError::Cancelled);
    }
    let collector = shared
        .collector
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(render(
        opts,
        &root,
        collector,
        shared.matches.into_inner(),
        shared.binary_files.into_inner(),
    ))
}

/// State shared by all walker threads.
struct Shared<'a> {
    root: &'a Path,
    base: &'a Path,
    glob: Option<&'a GlobMatcher>,
    cancel: &'a AtomicBool,
    max_results: usize,
    max_line_chars: usize,
    collector: Mutex<Collector>,
    /// Set once the collector has enough lines, so threads only then take
    /// the lock before searching a file to learn whether to format its hits.
    collector_full: AtomicBool,
    matches: AtomicU64,
    binary_files: AtomicU64,
}

/// The hits of one file, already formatted.
struct FileHits {
    /// `path:line:text` / `path-line-text` / `--` lines, each ending in `\n`.
    text: String,
    /// Byte offset in `text` of each stored matching line.
    match_starts: Vec<usize>,
    /// First matching line number.
    first_line: u64,
}

/// Keeps, among all files with hits, the smallest prefix (in path order)
/// whose stored lines reach `max_results`; files sorting after it are dropped.
/// Once full, `cutoff` is the last kept path: files sorting after it cannot be
/// shown, so their hits are only counted, not formatted.
struct Collector {
    max_results: usize,
    files: BTreeMap<PathBuf, FileHits>,
    stored: usize,
    cutoff: Option<PathBuf>,
}

impl Collector {
    fn new(max_results: usize) -> Self {
        Self {
            max_results,
            files: BTreeMap::new(),
            stored: 0,
            cutoff: None,
        }
    }

    fn wants(&self, path: &Path) -> bool {
        self.max_results > 0 && self.cutoff.as_deref().is_none_or(|cut| path < cut)
    }

    fn insert(&mut self, path: PathBuf, hits: FileHits) {
        if !self.wants(&path) {
            return;
        }
        self.stored += hits.match_starts.len();
        self.files.insert(path, hits);
        // Drop trailing files the others already make up for.
        while let Some(mut last) = self.files.last_entry() {
            let weight = last.get_mut().match_starts.len();
            if self.stored - weight < self.max_results {
                break;
            }
            self.stored -= weight;
            last.remove();
        }
        if self.stored >= self.max_results {
            self.cutoff = self.files.last_key_value().map(|(p, _)| p.clone());
        }
    }
}

struct VisitorBuilder<'s> {
    shared: &'s Shared<'s>,
    matcher: RegexMatcher,
    searcher: Searcher,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            matcher: self.matcher.clone(),
            searcher: self.searcher.clone(),
            buf: Buffers::default(),
            matches: 0,
            binary_files: 0,
        })
    }
}

/// Per-thread scratch space reused from file to file.
#[derive(Default)]
struct Buffers {
    text: String,
    match_starts: Vec<usize>,
    prefix: String,
}

struct Visitor<'s> {
    shared: &'s Shared<'s>,
    matcher: RegexMatcher,
    searcher: Searcher,
    buf: Buffers,
    matches: u64,
    binary_files: u64,
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        self.shared
            .matches
            .fetch_add(self.matches, Ordering::Relaxed);
        self.shared
            .binary_files
            .fetch_add(self.binary_files, Ordering::Relaxed);
    }
}

impl ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let shared = self.shared;
        if shared.cancel.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        // Unreadable entries are skipped, as ripgrep does (it only warns).
        let Ok(entry) = entry else {
            return WalkState::Continue;
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let path = entry.path();
        if let Some(glob) = shared.glob
            && !glob.is_match(rel_to_root(path, shared.root))
        {
            return WalkState::Continue;
        }
        let store =
            !shared.collector_full.load(Ordering::Relaxed) || lock(&shared.collector).wants(path);

        self.buf.text.clear();
        self.buf.match_starts.clear();
        self.buf.prefix.clear();
        let mut sink = FileSink {
            buf: &mut self.buf,
            path,
            base: shared.base,
            cancel: shared.cancel,
            store,
            max_results: shared.max_results,
            max_line_chars: shared.max_line_chars,
            count: 0,
            first_line: 0,
            full: false,
            binary: false,
        };
        let result = self.searcher.search_path(&self.matcher, path, &mut sink);
        let (count, first_line, binary) = (sink.count, sink.first_line, sink.binary);
        if result.is_err() {
            // Unreadable file: skipped like ripgrep does.
            return WalkState::Continue;
        }
        if binary {
            self.binary_files += 1;
            return WalkState::Continue;
        }
        if shared.cancel.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        if count == 0 {
            return WalkState::Continue;
        }
        self.matches += count;
        if store && !self.buf.match_starts.is_empty() {
            let hits = FileHits {
                text: self.buf.text.as_str().to_owned(),
                match_starts: self.buf.match_starts.clone(),
                first_line,
            };
            let mut collector = lock(&shared.collector);
            collector.insert(entry.into_path(), hits);
            if collector.cutoff.is_some() {
                shared.collector_full.store(true, Ordering::Relaxed);
            }
        }
        WalkState::Continue
    }
}

fn lock(m: &Mutex<Collector>) -> std::sync::MutexGuard<'_, Collector> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Receives one file's matches from the searcher and formats them.
struct FileSink<'a> {
    buf: &'a mut Buffers,
    path: &'a Path,
    base: &'a Path,
    cancel: &'a AtomicBool,
    /// Whether hits are formatted at all (false: only counted).
    store: bool,
    max_results: usize,
    max_line_chars: usize,
    /// Matching lines seen.
    count: u64,
    first_line: u64,
    /// `max_results` lines are stored: format nothing more.
    full: bool,
    binary: bool,
}

impl FileSink<'_> {
    fn push(&mut self, sep: char, line_number: u64, line: &[u8]) {
        if self.buf.prefix.is_empty() {
            self.buf.prefix = display_path(self.path, self.base);
        }
        let text = &mut self.buf.text;
        text.push_str(&self.buf.prefix);
        text.push(sep);
        push_u64(text, line_number);
        text.push(sep);
        push_line(text, line, self.max_line_chars);
        text.push('\n');
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.cancel.load(Ordering::Relaxed) {
            return Ok(false);
        }
        // Without multi-line search a match is one line; be general anyway.
        for (line_number, line) in (mat.line_number().unwrap_or(0)..).zip(mat.lines()) {
            self.count += 1;
            if self.first_line == 0 {
                self.first_line = line_number;
            }
            if self.store && !self.full {
                if self.buf.match_starts.len() < self.max_results {
                    self.buf.match_starts.push(self.buf.text.len());
                    self.push(':', line_number, line);
                } else {
                    self.full = true;
                }
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.store && !self.full {
            self.push('-', ctx.line_number().unwrap_or(0), ctx.bytes());
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        if self.store && !self.full && !self.buf.text.is_empty() {
            self.buf.text.push_str("--\n");
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _offset: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Assembles the final text from the collected files, in path order.
fn render(
    opts: &GrepOptions,
    root: &Path,
    collector: Collector,
    total: u64,
    binary_files: u64,
) -> SearchOutput {
    let mut out = SearchOutput {
        matches: usize::try_from(total).unwrap_or(usize::MAX),
        ..SearchOutput::default()
    };
    if total == 0 {
        out.text = format!(
            "No matches for /{}/ in {}",
            opts.pattern,
            display_path(root, &opts.display_base)
        );
        if binary_files > 0 {
            let s = if binary_files == 1 { "" } else { "s" };
            out.text
                .push_str(&format!(" ({binary_files} binary file{s} skipped)"));
        }
        return out;
    }
    let max = opts.limits.max_results;
    let mut shown = 0usize;
    for (path, hits) in collector.files {
        if shown >= max {
            break;
        }
        if opts.context > 0 && !out.text.is_empty() {
            out.text.push_str("--\n");
        }
        // Even a file within the budget may end with context lines stored
        // before a match that did not fit: cut after its last stored match.
        let n = hits.match_starts.len().min(max - shown);
        let end = cut_after_match(&hits, n, opts.context);
        out.text.push_str(&hits.text[..end]);
        shown += n;
        if out.first_lines.len() < MAX_FIRST_LINES {
            out.first_lines.push((path.clone(), hits.first_line));
        }
        out.files.push(path);
    }
    trim_trailing_newline(&mut out.text);
    let hidden = total.saturating_sub(shown as u64);
    if hidden > 0 {
        out.truncated = true;
        if !out.text.is_empty() {
            out.text.push('\n');
        }
        out.text.push_str(&format!(
            "[… {hidden} more matches not shown; narrow the pattern or path]"
        ));
    }
    out
}

/// Byte offset in `hits.text` just past the `n`-th stored match line (1-based)
/// and up to `context` following context lines of the same group.
fn cut_after_match(hits: &FileHits, n: usize, context: usize) -> usize {
    let text = hits.text.as_str();
    let next_match = hits.match_starts.get(n).copied().unwrap_or(text.len());
    let line_end = |from: usize| text[from..].find('\n').map_or(text.len(), |i| from + i + 1);
    let mut end = line_end(hits.match_starts[n - 1]);
    for _ in 0..context {
        if end >= next_match || text[end..].starts_with("--\n") {
            break;
        }
        end = line_end(end);
    }
    end
}

#[cfg(test)]
mod tests {
    use super::super::SearchLimits;
    use super::*;
    use std::fs;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let p = dir.path().join(path);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, content).unwrap();
        }
        dir
    }

    fn opts(dir: &Path, pattern: &str) -> GrepOptions {
        GrepOptions {
            pattern: pattern.to_owned(),
            root: dir.to_path_buf(),
            display_base: dir.to_path_buf(),
            glob: None,
            case_insensitive: false,
            context: 0,
            limits: SearchLimits::default(),
        }
    }

    fn run(o: &GrepOptions) -> SearchOutput {
        grep(o, &AtomicBool::new(false)).unwrap()
    }

    #[test]
    fn finds_matches_sorted_by_path_then_line() {
        let dir = tree(&[
            ("b.txt", "needle one\nhay\nneedle two\n"),
            ("a/z.txt", "needle\n"),
            ("a.txt", "hay\nneedle\n"),
        ]);
        let out = run(&opts(dir.path(), "needle"));
        assert_eq!(
            out.text,
            "a/z.txt:1:needle\na.txt:2:needle\nb.txt:1:needle one\nb.txt:3:needle two"
        );
        assert_eq!(out.matches, 4);
        assert!(!out.truncated);
        let root = dir.path();
        assert_eq!(
            out.files,
            vec![root.join("a/z.txt"), root.join("a.txt"), root.join("b.txt")]
        );
        assert_eq!(
            out.first_lines,
            vec![
                (root.join("a/z.txt"), 1),
                (root.join("a.txt"), 2),
                (root.join("b.txt"), 1)
            ]
        );
    }

    #[test]
    fn gitignore_is_respected_outside_a_git_repo() {
        let dir = tree(&[
            (".gitignore", "ignored/\n*.log\n"),
            ("ignored/x.txt", "needle\n"),
            ("out.log", "needle\n"),
            ("kept.txt", "needle\n"),
            ("sub/.ignore", "local.txt\n"),
            ("sub/local.txt", "needle\n"),
        ]);
        let out = run(&opts(dir.path(), "needle"));
        assert_eq!(out.text, "kept.txt:1:needle");
    }

    #[test]
    fn hidden_files_and_binary_files_are_skipped() {
        let dir = tree(&[
            (".hidden.txt", "needle\n"),
            (".config/x.txt", "needle\n"),
            ("bin.dat", "needle\0\x01\x02\n"),
            ("text.txt", "needle\n"),
        ]);
        let out = run(&opts(dir.path(), "needle"));
        assert_eq!(out.text, "text.txt:1:needle");
        assert_eq!(out.matches, 1);
    }

    #[test]
    fn binary_data_late_in_a_large_file_discards_its_earlier_hits() {
        let mut content = "needle\n".repeat(10);
        content.push_str(&"x".repeat(200_000));
        content.push_str("\0\n");
        let dir = tree(&[("big.bin", &content)]);
        let out = run(&opts(dir.path(), "needle"));
        assert_eq!(out.matches, 0);
        assert!(out.text.starts_with("No matches"), "{}", out.text);
        assert!(out.text.contains("1 binary file skipped"), "{}", out.text);
    }

    #[test]
    fn context_lines_and_group_separators() {
        let dir = tree(&[
            ("a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n"),
            ("b.txt", "hit\nx\n"),
        ]);
        let mut o = opts(dir.path(), "hit");
        o.context = 1;
        let out = run(&o);
        assert_eq!(
            out.text,
            "a.txt-2-2\na.txt:3:hit\na.txt-4-4\n--\na.txt-7-7\na.txt:8:hit\na.txt-9-9\n--\n\
             b.txt:1:hit\nb.txt-2-x"
        );
    }

    #[test]
    fn results_are_capped_with_a_note_counting_the_rest() {
        let files: Vec<(String, String)> = (0..30)
            .map(|i| (format!("f{i:02}.txt"), "hit\nhit\nhit\n".to_owned()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let dir = tree(&refs);
        let mut o = opts(dir.path(), "hit");
        o.limits.max_results = 10;
        let out = run(&o);
        let lines: Vec<&str> = out.text.lines().collect();
        assert_eq!(lines.len(), 11);
        assert_eq!(lines[0], "f00.txt:1:hit");
        assert_eq!(lines[9], "f03.txt:1:hit");
        assert_eq!(
            lines[10],
            "[… 80 more matches not shown; narrow the pattern or path]"
        );
        assert_eq!(out.matches, 90);
        assert!(out.truncated);
        assert_eq!(out.files.len(), 4);
    }

    #[test]
    fn cap_inside_one_file_keeps_trailing_context() {
        let dir = tree(&[("a.txt", "hit\nc1\nhit\nc2\nc3\nc4\nhit\n")]);
        let mut o = opts(dir.path(), "hit");
        o.context = 1;
        o.limits.max_results = 2;
        let out = run(&o);
        assert_eq!(
            out.text,
            "a.txt:1:hit\na.txt-2-c1\na.txt:3:hit\na.txt-4-c2\n\
             [… 1 more matches not shown; narrow the pattern or path]"
        );
    }

    #[test]
    fn long_lines_are_truncated() {
        let long = format!("needle{}\n", "x".repeat(1000));
        let dir = tree(&[("a.txt", &long)]);
        let mut o = opts(dir.path(), "needle");
        o.limits.max_line_chars = 10;
        assert_eq!(run(&o).text, "a.txt:1:needlexxxx…");
    }

    #[test]
    fn case_insensitive_search() {
        let dir = tree(&[("a.txt", "Needle\nNEEDLE\nneedle\nhay\n")]);
        let mut o = opts(dir.path(), "needle");
        assert_eq!(run(&o).matches, 1);
        o.case_insensitive = true;
        assert_eq!(run(&o).matches, 3);
    }

    #[test]
    fn glob_filters_files_relative_to_root() {
        let dir = tree(&[
            ("src/a.rs", "needle\n"),
            ("src/deep/b.rs", "needle\n"),
            ("src/c.ts", "needle\n"),
            ("top.rs", "needle\n"),
        ]);
        let mut o = opts(dir.path(), "needle");
        o.glob = Some("*.rs".into());
        assert_eq!(
            run(&o).text,
            "src/a.rs:1:needle\nsrc/deep/b.rs:1:needle\ntop.rs:1:needle"
        );
        o.glob = Some("src/*.rs".into());
        assert_eq!(run(&o).text, "src/a.rs:1:needle");
        o.glob = Some("src/**/*.{rs,ts}".into());
        assert_eq!(run(&o).matches, 3);
    }

    #[test]
    fn invalid_regex_is_an_error_with_the_reason() {
        let dir = tree(&[("a.txt", "x\n")]);
        let err = grep(&opts(dir.path(), "fn (foo"), &AtomicBool::new(false)).unwrap_err();
        match &err {
            SearchError::InvalidPattern { pattern, reason } => {
                assert_eq!(pattern, "fn (foo");
                assert!(reason.contains("unclosed group"), "{reason}");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(err.to_string().starts_with("invalid pattern `fn (foo`"));
    }

    #[test]
    fn invalid_glob_is_an_error() {
        let dir = tree(&[("a.txt", "x\n")]);
        let mut o = opts(dir.path(), "x");
        o.glob = Some("src/[a".into());
        assert!(matches!(
            grep(&o, &AtomicBool::new(false)),
            Err(SearchError::InvalidPattern { .. })
        ));
    }

    #[test]
    fn no_match_is_not_an_error() {
        let dir = tree(&[("sub/a.txt", "hay\n")]);
        let mut o = opts(dir.path(), "needle");
        o.root = dir.path().join("sub");
        let out = run(&o);
        assert_eq!(out.text, "No matches for /needle/ in sub");
        assert_eq!(out.matches, 0);
        assert!(out.files.is_empty());
    }

    #[test]
    fn single_file_root_is_searched_even_if_ignored_or_hidden() {
        let dir = tree(&[
            (".gitignore", "*.log\n"),
            ("a.log", "needle\n"),
            ("b.txt", "needle\n"),
        ]);
        let mut o = opts(dir.path(), "needle");
        o.root = dir.path().join("a.log");
        let out = run(&o);
        assert_eq!(out.text, "a.log:1:needle");
        o.glob = Some("*.log".into());
        assert_eq!(run(&o).matches, 1);
    }

    #[test]
    fn paths_outside_display_base_are_absolute() {
        let dir = tree(&[("a.txt", "needle\n")]);
        let elsewhere = tempfile::tempdir().unwrap();
        let mut o = opts(dir.path(), "needle");
        o.display_base = elsewhere.path().to_path_buf();
        let out = run(&o);
        assert_eq!(
            out.text,
            format!("{}:1:needle", dir.path().join("a.txt").display())
        );
        // A relative root is resolved against the display base.
        let mut o = opts(dir.path(), "needle");
        o.display_base = dir.path().parent().unwrap().to_path_buf();
        o.root = PathBuf::from(dir.path().file_name().unwrap());
        let name = dir.path().file_name().unwrap().to_string_lossy();
        assert_eq!(run(&o).text, format!("{name}/a.txt:1:needle"));
    }

    #[test]
    fn missing_root_is_not_found() {
        let dir = tree(&[]);
        let mut o = opts(dir.path(), "x");
        o.root = dir.path().join("nope");
        let err = grep(&o, &AtomicBool::new(false)).unwrap_err();
        assert!(matches!(&err, SearchError::NotFound(p) if p.ends_with("nope")));
        assert!(err.to_string().contains("nope"));
    }

    #[test]
    fn cancelled_search_stops() {
        let files: Vec<(String, String)> = (0..200)
            .map(|i| (format!("d{}/f{i}.txt", i % 7), "needle\n".to_owned()))
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let dir = tree(&refs);
        let cancel = AtomicBool::new(true);
        assert!(matches!(
            grep(&opts(dir.path(), "needle"), &cancel),
            Err(SearchError::Cancelled)
        ));
        // Raised mid-way from another thread: still returns promptly.
        let cancel = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| cancel.store(true, Ordering::Relaxed));
            let r = grep(&opts(dir.path(), "needle"), &cancel);
            assert!(r.is_ok() || matches!(r, Err(SearchError::Cancelled)));
        });
    }

    #[test]
    fn collector_keeps_only_what_the_cap_needs() {
        let hits = |n: usize| FileHits {
            text: String::new(),
            match_starts: vec![0; n],
            first_line: 1,
        };
        let mut c = Collector::new(5);
        c.insert(PathBuf::from("c"), hits(3));
        c.insert(PathBuf::from("d"), hits(3));
        c.insert(PathBuf::from("e"), hits(3));
        // c + d reach 5: e is not needed.
        assert_eq!(c.files.len(), 2);
        assert_eq!(c.cutoff.as_deref(), Some(Path::new("d")));
        c.insert(PathBuf::from("a"), hits(5));
        assert_eq!(c.files.keys().collect::<Vec<_>>(), vec![Path::new("a")]);
        assert!(!c.wants(Path::new("b")));
        assert!(c.wants(Path::new("0")));
    }
}
