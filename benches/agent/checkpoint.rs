//! `checkpoint`: what checkpoints and changed-files detection add to a
//! command (issue 19): the work `agent::history::changes` does around every
//! `run_command` through the session's `Watch` — the mark before the
//! command (draining the inotify events queued so far, up to a marker) and,
//! after it, draining the command's events up to a fresh marker, listing
//! the directories with events and stat'ing their paths, and the
//! difference — in a 5 000-file project (target ≤ 10 ms p50) and a large
//! one (`BENCH_CHECKPOINT_FILES`, default 100 000; quick 10 000). The
//! watch's one-time start (a walk plus one inotify watch per directory, at
//! the session's first command) is printed apart. The walk fallback (no
//! inotify, or `ACP_CODER_CHANGES=walk`: a parallel walk before and after)
//! gets its own rows. Baseline: starting `sh -c true`, the cheapest
//! command there is.
use std::path::Path;
use std::process::{Command, Stdio};

use acp_coder::tools::snapshot::Watch;

use super::{Opts, Row, median, ms, now_ns, quantile};

/// Writes `files` small files, 100 per directory, under `root`.
fn project(root: &Path, files: usize) {
    let _ = std::fs::remove_dir_all(root);
    for i in 0..files {
        let dir = root.join(format!("src/m{:04}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("project dir");
        }
        std::fs::write(dir.join(format!("f{i}.rs")), format!("// file {i}\n")).expect("file");
    }
}

/// Nanoseconds of the mark before and the changes after a command that
/// changes one file (the change itself is not timed).
fn one(watch: &Watch, root: &Path, n: usize) -> u64 {
    let t0 = now_ns();
    let before = watch.mark();
    let t1 = now_ns();
    let f = root.join(format!("src/m0000/f{}.rs", n % 100));
    std::fs::write(&f, format!("// changed {n}\n")).expect("change");
    let t2 = now_ns();
    let (changes, _now) = watch.since(&before);
    let t3 = now_ns();
    assert_eq!(changes.changed, [f], "{changes:?}");
    (t1 - t0) + (t3 - t2)
}

pub fn bench_checkpoint(o: &Opts, _model: &super::FakeModel) -> Vec<Row> {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0");
    let large = super::env_usize("BENCH_CHECKPOINT_FILES", 100_000, 10_000, quick).max(5_001);
    let mut spawn = Vec::new();
    for _ in 0..o.runs {
        let t0 = now_ns();
        let status = Command::new("sh")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .status()
            .expect("sh");
        assert!(status.success());
        spawn.push(now_ns() - t0);
    }
    let base = median(&spawn);
    let mut rows = Vec::new();
    for (files, limit) in [(5_000usize, Some(10.0)), (large, None)] {
        let root = o.work.join(format!("checkpoint-{files}"));
        let t0 = now_ns();
        project(&root, files);
        println!(
            "  {files} files written in {:.1} s",
            ms(now_ns() - t0) / 1e3
        );
        let root = root.canonicalize().expect("project root");
        for walk in [false, true] {
            let watch = Watch::with_mode(vec![root.clone()], walk);
            let t0 = now_ns();
            drop(watch.mark()); // the start, at a session's first command
            let start = now_ns() - t0;
            assert_eq!(watch.watching(), !walk, "inotify is available");
            let how = if walk {
                "walk fallback"
            } else {
                "inotify watch"
            };
            println!("  {files} files, {how}: start {:.1} ms", ms(start));
            one(&watch, &root, 0); // warm the dentry and inode caches
            let runs = if files > 20_000 && walk {
                o.runs.min(11)
            } else {
                o.runs
            };
            let times: Vec<u64> = (1..=runs).map(|n| one(&watch, &root, n)).collect();
            let p50 = median(&times);
            println!(
                "  {files} files, {how}: mark + changes p50 {:.2} ms, p90 {:.2} ms ({} runs)",
                ms(p50),
                ms(quantile(&times, 0.9)),
                runs
            );
            let row = Row::new(
                &format!("checkpoint + changed-files around a command, {files} files, {how} (p50)"),
                format!("{:.2} ms", ms(p50)),
                format!("`sh -c true` {:.2} ms; start {:.0} ms", ms(base), ms(start)),
                format!("{:.1}×", p50 as f64 / base.max(1) as f64),
                if limit.is_some() && !walk {
                    "≤ 10 ms"
                } else {
                    "—"
                },
            );
            rows.push(match limit {
                Some(l) if !walk => row.pass(ms(p50) <= l),
                _ => row,
            });
        }
        let _ = std::fs::remove_dir_all(&root);
    }
    rows
}
