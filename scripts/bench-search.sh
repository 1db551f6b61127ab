#!/usr/bin/env bash
# Benchmark the in-process grep/glob tools against ripgrep.
#
#   scripts/bench-search.sh                      # ~100k files / ~1 GiB
#   FILES=2000 SIZE_MB=20 scripts/bench-search.sh   # smoke run
#
# Env: FILES, SIZE_MB (tree size), RUNS (timed runs, median reported),
# PATTERNS (newline-separated regexes), DATA_DIR (where the tree goes;
# default target/bench-data/FILESxSIZE_MB, never in git), CARGO_TARGET_DIR,
# PROFILE (release, the default, or dev for a quick smoke run),
# RG_OPTIONAL=1 (no ripgrep from apt: time ours alone instead of building it).
# scripts/bench.sh runs this as part of all the benchmarks.
set -euo pipefail

FILES="${FILES:-100000}"
SIZE_MB="${SIZE_MB:-1024}"
RUNS="${RUNS:-7}"
PATTERNS="${PATTERNS:-parse_config_value
[A-Z][a-z]+Error::[A-Z]\\w+}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"
DATA_DIR="${DATA_DIR:-$target/bench-data/${FILES}x${SIZE_MB}}"

# ripgrep to compare against.
if ! command -v rg >/dev/null 2>&1; then
    echo "== installing ripgrep" >&2
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get install -y ripgrep >/dev/null 2>&1 \
            || { apt-get update >/dev/null 2>&1 && apt-get install -y ripgrep >/dev/null 2>&1; } \
            || true
    fi
    command -v rg >/dev/null 2>&1 || [ -n "${RG_OPTIONAL:-}" ] || cargo install ripgrep
fi
RG="$(command -v rg || true)"
if [ -n "$RG" ]; then
    echo "== $("$RG" --version 2>/dev/null | head -1) at $RG"
else
    echo "== no ripgrep: timing ours alone"
fi

PROFILE="${PROFILE:-release}"
echo "== building the bench ($PROFILE)"
cd "$repo"
if [ "$PROFILE" = release ]; then
    build=(cargo bench --bench search --no-run)
else
    build=(cargo build --bench search --profile "$PROFILE")
fi
bench_out="$("${build[@]}" --message-format=json 2>/dev/null \
    | grep -o '"executable":"[^"]*/deps/search-[^"]*"' | cut -d'"' -f4 | tail -1)"
[ -x "$bench_out" ] || { echo "could not find the bench binary" >&2; exit 1; }

# Deterministic tree, generated once per size.
if [ ! -f "$DATA_DIR/.complete" ]; then
    echo "== generating $FILES files / $SIZE_MB MiB in $DATA_DIR"
    rm -rf "$DATA_DIR"
    "$bench_out" --generate "$DATA_DIR" --files "$FILES" --size-mb "$SIZE_MB"
    # ripgrep only honours .gitignore inside a git repository (we always do):
    # make it one so both skip the same files.
    git init -q "$DATA_DIR"
    touch "$DATA_DIR/.complete"
fi

echo "== warming the page cache"
if [ -n "$RG" ]; then
    "$RG" --no-ignore --hidden -c zzzz_never_matches_zzzz "$DATA_DIR" >/dev/null 2>&1 || true
    "$RG" -c zzzz_never_matches_zzzz "$DATA_DIR" >/dev/null 2>&1 || true
fi

status=0
while IFS= read -r pattern; do
    [ -n "$pattern" ] || continue
    echo
    echo "== pattern /$pattern/, $RUNS runs"
    "$bench_out" --root "$DATA_DIR" --pattern "$pattern" --runs "$RUNS" ${RG:+--rg "$RG"} | tee /tmp/bench-search.$$
    for what in grep glob; do
        ratio="$(sed -n "s/^ratio $what[^:]*: *//p" /tmp/bench-search.$$)"
        if awk -v r="$ratio" 'BEGIN { exit !(r > 1.5) }'; then
            echo "!! $what ratio $ratio is above 1.5"
            status=1
        fi
    done
    rm -f /tmp/bench-search.$$
done <<<"$PATTERNS"
exit "$status"
