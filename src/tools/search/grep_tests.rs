//! Unit tests of the in-process grep (kept apart: grep.rs is long enough).
use super::super::SearchLimits;
use super::*;
use std::fs;

fn tree(files: &[(impl AsRef<str>, impl AsRef<str>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, content) in files {
        let p = dir.path().join(path.as_ref());
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content.as_ref()).unwrap();
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

/// Searches for `needle` in a tree of `others` plus, for each of `needles`,
/// a file that holds it.
fn needle_search(needles: &[&str], others: &[(&str, &str)]) -> SearchOutput {
    let mut files: Vec<(&str, &str)> = needles.iter().map(|n| (*n, "needle\n")).collect();
    files.extend_from_slice(others);
    let dir = tree(&files);
    run(&opts(dir.path(), "needle"))
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
    let out = needle_search(
        &["ignored/x.txt", "out.log", "kept.txt", "sub/local.txt"],
        &[
            (".gitignore", "ignored/\n*.log\n"),
            ("sub/.ignore", "local.txt\n"),
        ],
    );
    assert_eq!(out.text, "kept.txt:1:needle");
}

#[test]
fn hidden_files_and_binary_files_are_skipped() {
    let out = needle_search(
        &[".hidden.txt", ".config/x.txt", "text.txt"],
        &[("bin.dat", "needle\0\x01\x02\n")],
    );
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
    let dir = tree(&files);
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
    let dir = tempfile::tempdir().unwrap();
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
    let dir = tree(&files);
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

/// A file with a line over `max_line_bytes` is not held in memory whole: it
/// is skipped and the answer names it; the other files are searched.
#[test]
fn a_line_over_the_heap_limit_skips_its_file_and_says_so() {
    let long = format!("{}needle\n", "a".repeat(64 * 1024));
    let dir = tree(&[
        ("a.txt", "needle\n".to_owned()),
        ("big.min.js", long),
        ("c.txt", "hay\nneedle\n".to_owned()),
    ]);
    let mut o = opts(dir.path(), "needle");
    o.limits.max_line_bytes = 16 * 1024;
    let out = run(&o);
    assert_eq!(
        out.text,
        "a.txt:1:needle\nc.txt:2:needle\n[1 file not searched: a line longer than 16 KiB (big.min.js); search such a file with a command (`grep -o`, `head -c`)]"
    );
    assert_eq!(out.matches, 2);
    // Nothing else matches: the note follows the "no matches" line.
    let out = run(&GrepOptions {
        pattern: "zzz".into(),
        ..o
    });
    assert!(out.text.starts_with("No matches for /zzz/"), "{}", out.text);
    assert!(out.text.contains("(big.min.js)"), "{}", out.text);
}
