//! The fuzz corpus (`fuzz/corpus/wire`) replayed through the decoding path
//! the fuzzer exercises (`acp_coder::agent::decode::fuzz_one`), so every input
//! that ever crashed or was found interesting keeps being checked by a plain
//! `cargo test`, with or without a nightly toolchain and cargo-fuzz.

use acp_coder::agent::decode;
use std::path::PathBuf;

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/wire")
}

#[test]
fn every_corpus_file_decodes_without_panicking() {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("fuzz/corpus/wire exists")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    let seeds = files
        .iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))
        })
        .count();
    assert!(seeds >= 40, "the seed corpus shrank to {seeds} files");
    let mut failures = Vec::new();
    for path in &files {
        let data = std::fs::read(path).expect("read corpus file");
        if let Err(panic) = std::panic::catch_unwind(|| decode::fuzz_one(&data)) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(format!("{}: {msg}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus files break the decoding path:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    eprintln!("replayed {} corpus files ({seeds} seeds)", files.len());
}

/// The seeds are real messages: apart from the `garbage-` ones, every frame
/// is accepted and every known method's params decode; every `garbage-` seed
/// is refused somewhere on the way.
#[test]
fn seed_messages_decode_cleanly() {
    let mut checked = 0;
    for entry in std::fs::read_dir(corpus_dir()).expect("corpus dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(kind) = name.strip_prefix("seed-") else {
            continue;
        };
        let data = std::fs::read(&path).expect("read seed");
        let s = decode::check_input(&data, 16 * 1024 * 1024, 64 * 1024);
        assert!(s.frames > 0, "{name}: no frame");
        if kind.starts_with("garbage-") {
            assert!(
                s.rejected + s.bad_params > 0,
                "{name}: garbage was accepted: {s:?}"
            );
        } else {
            assert_eq!((s.rejected, s.bad_params), (0, 0), "{name}: {s:?}");
        }
        checked += 1;
    }
    assert!(checked >= 40);
}
