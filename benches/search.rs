//! Benchmark of the in-process search tools against ripgrep.
//!
//! ```text
//! cargo bench --bench search -- --generate DIR [--files N] [--size-mb M]
//! cargo bench --bench search -- --root DIR --pattern P [--runs N]
//!     [--glob-pattern G] [--rg PATH]
//! ```
//!
//! `--generate` writes a deterministic tree (nested dirs, a `.gitignore`
//! with ignored files, hidden files, some binary files) to DIR.
//!
//! Otherwise it times our `grep` (pattern P) and `glob` (pattern G, default
//! `*`, i.e. every file, like `rg --files`) over N runs and prints medians.
//! With `--rg`, it also times `rg P DIR` and `rg --files DIR` (stdout to
//! /dev/null, as a shell would), interleaved with ours, and prints the ratios
//! ours / rg. It also checks that both find the same number of matches.
#![allow(clippy::print_stdout)]

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use acp_coder::tools::search::{GlobOptions, GrepOptions, SearchLimits, glob, grep};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(dir) = get("--generate") {
        let files = get("--files").map_or(100_000, |v| v.parse().expect("--files N"));
        let size_mb = get("--size-mb").map_or(1024, |v| v.parse().expect("--size-mb M"));
        generate(Path::new(&dir), files, size_mb);
        return;
    }
    let Some(root) = get("--root") else {
        eprintln!(
            "usage: search (--generate DIR [--files N] [--size-mb M] | --root DIR --pattern P [--runs N] [--glob-pattern G] [--rg PATH])"
        );
        std::process::exit(2);
    };
    let root = std::fs::canonicalize(root).expect("--root must exist");
    let pattern = get("--pattern").unwrap_or_else(|| "parse_config_value".to_owned());
    let runs: usize = get("--runs").map_or(5, |v| v.parse().expect("--runs N"));
    let glob_pattern = get("--glob-pattern").unwrap_or_else(|| "*".to_owned());
    let rg = get("--rg").map(PathBuf::from);
    bench(&root, &pattern, &glob_pattern, runs, rg.as_deref());
}

fn bench(root: &Path, pattern: &str, glob_pattern: &str, runs: usize, rg: Option<&Path>) {
    let cancel = AtomicBool::new(false);
    let grep_opts = GrepOptions {
        pattern: pattern.to_owned(),
        root: root.to_path_buf(),
        display_base: root.to_path_buf(),
        glob: None,
        case_insensitive: false,
        context: 0,
        limits: SearchLimits::default(),
    };
    let glob_opts = GlobOptions {
        pattern: glob_pattern.to_owned(),
        root: root.to_path_buf(),
        display_base: root.to_path_buf(),
        limits: SearchLimits::default(),
    };
    let ours_grep = || grep(&grep_opts, &cancel).expect("grep failed");
    let ours_glob = || glob(&glob_opts, &cancel).expect("glob failed");

    // Warm-up (page cache, allocator) and a correctness check.
    let g = ours_grep();
    let f = ours_glob();
    println!("root: {}", root.display());
    println!("grep /{pattern}/: {} matching lines", g.matches);
    println!("glob {glob_pattern}: {} files", f.matches);
    if let Some(rg) = rg {
        let rg_lines = rg_count_lines(rg, pattern, root);
        let rg_files = rg_output_lines(rg, &["--files"], root);
        println!("rg: {rg_lines} matching lines, {rg_files} files (rg --files)");
        if rg_lines != g.matches as u64 {
            println!(
                "WARNING: grep match counts differ (ours {}, rg {rg_lines})",
                g.matches
            );
        }
        if glob_pattern == "*" && rg_files != f.matches as u64 {
            println!(
                "WARNING: file counts differ (ours {}, rg {rg_files})",
                f.matches
            );
        }
        time_rg(rg, &[pattern], root);
        time_rg(rg, &["--files"], root);
    }

    let mut t: [Vec<Duration>; 5] = Default::default();
    for _ in 0..runs {
        if let Some(rg) = rg {
            t[0].push(time_rg(rg, &[pattern], root));
        }
        t[1].push(time(|| drop(ours_grep())));
        if let Some(rg) = rg {
            t[2].push(time_rg(rg, &["--files"], root));
        }
        t[3].push(time(|| drop(ours_glob())));
        if let Some(rg) = rg {
            t[4].push(time_rg_piped(rg, &[pattern], root));
        }
    }
    let [rg_grep, our_grep, rg_files, our_glob, rg_grep_piped] = t.map(median);
    let cancel_latency = cancel_latency(&grep_opts, our_grep / 4);
    println!("runs: {runs} (medians, ms)");
    println!("ours grep:               {:8.1}", ms(our_grep));
    println!("ours glob:               {:8.1}", ms(our_glob));
    println!(
        "grep cancel latency:     {:8.1}  (flag raised {:.1} ms in)",
        ms(cancel_latency),
        ms(our_grep / 4)
    );
    if rg.is_some() {
        println!("rg PATTERN >/dev/null:   {:8.1}", ms(rg_grep));
        println!("rg PATTERN | drain:      {:8.1}", ms(rg_grep_piped));
        println!("rg --files >/dev/null:   {:8.1}", ms(rg_files));
        println!(
            "ratio grep (ours / rg):  {:8.2}",
            our_grep.as_secs_f64() / rg_grep.as_secs_f64()
        );
        println!(
            "ratio glob (ours / rg --files): {:.2}",
            our_glob.as_secs_f64() / rg_files.as_secs_f64()
        );
    }
}

/// How long `grep` takes to return once its cancel flag is raised.
fn cancel_latency(opts: &GrepOptions, after: Duration) -> Duration {
    let cancel = AtomicBool::new(false);
    std::thread::scope(|s| {
        let start = Instant::now();
        s.spawn(|| {
            std::thread::sleep(after);
            cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let _ = grep(opts, &cancel);
        start.elapsed().saturating_sub(after)
    })
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<Duration>) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v.sort_unstable();
    v[v.len() / 2]
}

fn rg_command(rg: &Path, args: &[&str], root: &Path) -> Command {
    let mut cmd = Command::new(rg);
    cmd.args(args)
        .arg(root)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// `rg ARGS ROOT >/dev/null`, timed including process start.
fn time_rg(rg: &Path, args: &[&str], root: &Path) -> Duration {
    let mut cmd = rg_command(rg, args, root);
    cmd.stdout(Stdio::null());
    time(|| {
        cmd.status().expect("cannot run rg");
    })
}

/// `rg ARGS ROOT | cat >/dev/null`: output really produced and read.
fn time_rg_piped(rg: &Path, args: &[&str], root: &Path) -> Duration {
    let mut cmd = rg_command(rg, args, root);
    cmd.stdout(Stdio::piped());
    time(|| {
        let mut child = cmd.spawn().expect("cannot run rg");
        let mut out = child.stdout.take().expect("piped stdout");
        let mut buf = vec![0u8; 1 << 16];
        while out.read(&mut buf).is_ok_and(|n| n > 0) {}
        child.wait().expect("rg did not finish");
    })
}

fn rg_output_lines(rg: &Path, args: &[&str], root: &Path) -> u64 {
    let out = rg_command(rg, args, root).output().expect("cannot run rg");
    out.stdout.iter().filter(|&&b| b == b'\n').count() as u64
}

/// Total matching lines according to `rg --count`.
fn rg_count_lines(rg: &Path, pattern: &str, root: &Path) -> u64 {
    let out = rg_command(rg, &["--count", "--no-filename", pattern], root)
        .output()
        .expect("cannot run rg");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .sum()
}

/// splitmix64: small, fast, and stable across versions (deterministic trees).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const WORDS: &[&str] = &[
    "let", "mut", "fn", "impl", "struct", "self", "return", "match", "Some", "None", "Ok", "Err",
    "result", "value", "config", "buffer", "index", "count", "path", "file", "error", "handle",
    "request", "response", "session", "client", "server", "token", "parse", "write", "read", "len",
    "iter", "map", "filter", "collect", "into", "from", "new", "default", "async", "await", "pub",
    "use", "crate", "super", "where", "for", "in", "if", "else", "while", "loop", "break",
    "continue", "const", "static", "type", "trait", "enum", "=", "+", "->", "=>", "{", "}", "(",
    ")", "&", "::", ";", ",", "0", "1", "42", "\"text\"",
];

/// Lines sprinkled into about 1 in 4000 generated lines.
const NEEDLES: &[&str] = &[
    "    let cfg = parse_config_value(&input)?; // TODO(search): cache",
    "pub fn parse_config_value(s: &str) -> Result<Value, ConfigError> {",
    "        Err(ConfigError::Missing) => return Err(ParseError::new(\"missing\")),",
];

fn generate(dir: &Path, files: usize, size_mb: usize) {
    let mut rng = Rng(0x5EED_0000_0000_0001);
    // A pool of lines to draw from keeps generation fast.
    let pool: Vec<String> = (0..8192)
        .map(|_| {
            let indent = " ".repeat(4 * rng.below(4) as usize);
            let mut line = indent;
            let words = 4 + rng.below(14);
            for i in 0..words {
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
            }
            line.push('\n');
            line
        })
        .collect();

    std::fs::create_dir_all(dir).expect("cannot create the output dir");
    std::fs::write(dir.join(".gitignore"), "target/\n*.log\n").expect("write .gitignore");
    let avg = (size_mb as u64 * 1024 * 1024) / files.max(1) as u64;
    let exts = ["rs", "ts", "py", "md", "txt", "go"];
    let mut total = 0u64;
    for i in 0..files {
        let d = i / 100;
        let mut rel = format!("d{:02}/d{:03}", d / 32, d % 32);
        // Every 20th file lives in an ignored or hidden place, every 100th
        // is binary; some live deeper.
        let (name, binary) = match i % 100 {
            0 => (format!("blob{i}.bin"), true),
            5 | 55 => {
                rel.push_str("/target/debug");
                (format!("gen{i}.rs"), false)
            }
            15 | 65 => (format!("run{i}.log"), false),
            25 | 75 => {
                rel.push_str("/.cache");
                (format!("c{i}.txt"), false)
            }
            n if n % 10 == 3 => {
                rel.push_str("/deep/nested/more");
                (format!("f{i}.{}", exts[i % exts.len()]), false)
            }
            _ => (format!("f{i}.{}", exts[i % exts.len()]), false),
        };
        let sub = dir.join(&rel);
        std::fs::create_dir_all(&sub).expect("create dir");
        // Sizes vary from 0.2x to 1.8x the average; one file in 1000 is 10x.
        let mut size = avg / 5 + rng.below((avg * 8 / 5).max(1));
        if i % 1000 == 999 {
            size *= 10;
        }
        let mut out = BufWriter::new(std::fs::File::create(sub.join(name)).expect("create file"));
        let mut written = 0u64;
        if binary {
            out.write_all(b"\x7fELF\x02\x01\x01\0\0\0").expect("write");
            written += 10;
        }
        while written < size {
            let line = if rng.below(4000) == 0 {
                NEEDLES[rng.below(NEEDLES.len() as u64) as usize]
            } else {
                pool[rng.below(pool.len() as u64) as usize].as_str()
            };
            out.write_all(line.as_bytes()).expect("write");
            if line.ends_with('\n') {
                written += line.len() as u64;
            } else {
                out.write_all(b"\n").expect("write");
                written += line.len() as u64 + 1;
            }
        }
        out.flush().expect("flush");
        total += written;
    }
    println!(
        "generated {files} files, {:.0} MiB in {}",
        total as f64 / (1024.0 * 1024.0),
        dir.display()
    );
}
