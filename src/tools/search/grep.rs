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
    push_u64, resolve_root, trim_trailing_newline, walker,
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
        long_lines: Mutex::new(Vec::new()),
    };
    let mut builder = VisitorBuilder {
        shared: &shared,
        matcher,
        searcher: SearcherBuilder::new()
            .line_number(true)
            .before_context(opts.context)
            .after_context(opts.context)
            .binary_detection(BinaryDetection::quit(b'\0'))
            .heap_limit(Some(opts.limits.max_line_bytes))
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
    let mut long_lines = shared
        .long_lines
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    long_lines.sort();
    let mut out = render(
        opts,
        &root,
        collector,
        shared.matches.into_inner(),
        shared.binary_files.into_inner(),
    );
    if !long_lines.is_empty() {
        out.text.push('\n');
        out.text
            .push_str(&long_line_note(&long_lines, opts.limits.max_line_bytes));
    }
    Ok(out)
}

/// What the answer says of the files skipped for a line over the limit.
fn long_line_note(paths: &[String], limit: usize) -> String {
    const NAMED: usize = 5;
    let n = paths.len();
    let mut named = paths
        .iter()
        .take(NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if n > NAMED {
        named.push_str(&format!(" and {} more", n - NAMED));
    }
    let s = if n == 1 { "" } else { "s" };
    let limit = if limit >= 1 << 20 {
        format!("{} MiB", limit >> 20)
    } else {
        format!("{} KiB", limit >> 10)
    };
    format!(
        "[{n} file{s} not searched: a line longer than {limit} ({named}); search such a file with a command (`grep -o`, `head -c`)]"
    )
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
    /// Files skipped for a line over `max_line_bytes`, as shown.
    long_lines: Mutex<Vec<String>>,
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
        let glob = shared.glob.map(|g| (g, shared.root));
        let entry = match super::file_entry(entry, shared.cancel, glob) {
            Ok(e) => e,
            Err(state) => return state,
        };
        let path = entry.path();
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
        if let Err(e) = result {
            // A line over the heap limit: skipped, and said. Any other
            // error (an unreadable file) is skipped like ripgrep does.
            if e.to_string().contains("allocation limit") {
                let shown = display_path(path, shared.base);
                shared
                    .long_lines
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .push(shown);
            }
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
#[path = "grep_tests.rs"]
mod tests;
