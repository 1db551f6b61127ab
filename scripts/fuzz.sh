#!/usr/bin/env bash
# Fuzzes the agent's input decoding (fuzz/fuzz_targets/wire.rs) for SECONDS
# (default 60) on one core, starting from the committed corpus
# (fuzz/corpus/wire). New inputs go to a scratch copy of the corpus, so the
# work tree stays clean; crashes are written to fuzz/artifacts/wire/.
#
#   scripts/fuzz.sh            # 60 s
#   scripts/fuzz.sh 1800       # 30 min
#
# Needs the nightly toolchain and cargo-fuzz (installed here from crates.io
# if missing). Exit status: 0 = no crash, or fuzzing unavailable on this
# machine (said loudly; `cargo test` still replays the whole corpus through
# the same code, see tests/suite/fuzz_corpus.rs); 1 = a crash was found.
set -uo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

unavailable() {
    echo "fuzz: UNAVAILABLE ($1): not fuzzing; cargo test replays fuzz/corpus/wire instead" >&2
    exit 0
}

# Bounded waits: a download that cannot happen must not eat the CI budget.
rustup run nightly rustc --version >/dev/null 2>&1 \
    || timeout 300 rustup toolchain install nightly --profile minimal >/dev/null 2>&1 \
    || unavailable "no nightly toolchain"
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: installing cargo-fuzz"
    timeout 600 cargo install cargo-fuzz --locked >/dev/null 2>&1 \
        || unavailable "cannot install cargo-fuzz"
fi
echo "fuzz: building the wire target ($(cargo fuzz --version))"
(cd fuzz && timeout 900 cargo +nightly fuzz build wire -O) \
    || unavailable "the fuzz target does not build here (or not in time)"
target_dir="${CARGO_TARGET_DIR:-fuzz/target}"
[[ "$target_dir" = /* ]] || target_dir="$PWD/$target_dir"
binary="$target_dir/x86_64-unknown-linux-gnu/release/wire"
[[ -x "$binary" ]] || unavailable "no fuzz binary at $binary"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
mkdir -p fuzz/artifacts/wire
echo "fuzz: running for ${seconds}s from $(ls fuzz/corpus/wire | wc -l) corpus files"
"$binary" "$scratch" fuzz/corpus/wire \
    -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -error_exitcode=77 -print_final_stats=1 -artifact_prefix=fuzz/artifacts/wire/ \
    >"$scratch.log" 2>&1
status=$?
grep -E "^stat::|Done|INFO: Loaded|cov:" "$scratch.log" | tail -n 12
if [[ $status -ne 0 ]]; then
    tail -n 60 "$scratch.log"
    echo "fuzz: FAILED (exit $status); reproduce with: $binary fuzz/artifacts/wire/<file>" >&2
    rm -f "$scratch.log"
    exit 1
fi
rm -f "$scratch.log"
echo "fuzz: no crash in ${seconds}s"
