#!/usr/bin/env bash
# Interleaved A/B of the streaming bench for two agent binaries (issue 7).
#
#   scripts/bench-ab.sh OLD_BINARY NEW_BINARY [ALTERNATIONS] [ROUNDS]
#
# On a shared 2-core machine a single run's chunk rate drifts by 2x from
# minute to minute, so a change is judged only by alternating the two
# binaries in the same minutes: ALTERNATIONS (default 5) times, ROUNDS
# (default 3) rounds each, then the median of the per-round ratios to
# reqwest and of the agent's CPU per chunk. BENCH_STREAM_CHUNKS and the
# other BENCH_* variables of benches/agent.rs apply.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
[ $# -ge 2 ] || { sed -n 2,10p "$0" >&2; exit 2; }
a="$(realpath "$1")"
b="$(realpath "$2")"
alternations="${3:-5}"
rounds="${4:-3}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"

cargo bench --locked --bench agent --no-run --message-format=json >/tmp/bench-ab-build.$$.json
bench_exe="$(grep -o '"executable":"[^"]*/deps/agent-[^"]*"' /tmp/bench-ab-build.$$.json | cut -d'"' -f4 | tail -1)"
rm -f /tmp/bench-ab-build.$$.json
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

for i in $(seq 1 "$alternations"); do
    for side in a b; do
        bin="$a"
        [ "$side" = b ] && bin="$b"
        BENCH_ONLY=stream BENCH_PACED_CHUNKS="${BENCH_PACED_CHUNKS:-10}" BENCH_STREAM_ROUNDS="$rounds" \
            "$bench_exe" --agent "$bin" --work "$work/w" --report "$work/r.md" 2>&1 |
            grep 'chunks: agent' >>"$work/$side.txt" || true
    done
    echo "alternation $i of $alternations done"
done

for side in a b; do
    name="$a"
    [ "$side" = b ] && name="$b"
    sed -E 's/.*agent ([0-9]+)\/s in [0-9]+ updates \(([0-9]+) ns.*reqwest ([0-9]+)\/s.*/\1 \2 \3/' "$work/$side.txt" |
        awk -v name="$name" '
            { r[NR] = $1 / $3; c[NR] = $2 }
            function median(v, n,   i, j, t) {
                for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
                return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
            }
            END { printf "%s: %d rounds, ratio to reqwest median %.2f, agent CPU per chunk median %d ns\n", name, NR, median(r, NR), median(c, NR) }'
done
