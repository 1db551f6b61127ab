#!/usr/bin/env bash
# Every benchmark of the agent (issue 7), one command; writes BENCHMARKS.md.
#
#   scripts/bench.sh                       # full sizes, release build -> BENCHMARKS.md
#   BENCH_QUICK=1 scripts/bench.sh         # smoke sizes -> $CARGO_TARGET_DIR/BENCHMARKS.quick.md
#   BENCH_QUICK=1 BENCH_PROFILE=dev scripts/bench.sh   # what CI runs (debug build, no limits)
#   BENCH_CLEAN_BUILD=1 scripts/bench.sh   # also times a clean release build (slow)
#
# Everything runs against loopback fakes that the benches start themselves
# (an OpenAI-compatible server, MCP servers, an editor): no network, no keys.
# Every figure is a median (or a quantile) next to a baseline measured in the
# same run, so a busy machine shows in both.
#
# Env:
#   BENCH_QUICK=1          smoke sizes; limits are reported but never fail the run
#   BENCH_PROFILE          release (default) or dev
#   BENCH_OUT              where the report goes (default BENCHMARKS.md, or
#                          $CARGO_TARGET_DIR/BENCHMARKS.quick.md when quick)
#   BENCH_SEARCH_FILES, BENCH_SEARCH_MB, BENCH_SEARCH_RUNS
#                          search tree (default 100000 files / 1024 MiB, 7 runs;
#                          quick: 2000 / 20, 3 runs)
#   BENCH_CLEAN_BUILD=1    time `cargo build --release` in an empty target dir
#   BENCH_ONLY=a,b         only these agent benches (startup, first-turn, request, stream,
#                          cancel, mcp, load, soak, size, a2a, checkpoint, serve);
#                          BENCH_SKIP_SEARCH=1
#   and the sizes benches/agent.rs documents (BENCH_RUNS, BENCH_TURNS, …).
# Exit status: 1 when a full run misses a limit (never in quick mode).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$repo/target}"
target="$CARGO_TARGET_DIR"
quick="${BENCH_QUICK:-0}"
[ "$quick" = 0 ] && quick=""
profile="${BENCH_PROFILE:-release}"
if [ -n "$quick" ]; then
    out="${BENCH_OUT:-$target/BENCHMARKS.quick.md}"
    search_files="${BENCH_SEARCH_FILES:-2000}"
    search_mb="${BENCH_SEARCH_MB:-20}"
    search_runs="${BENCH_SEARCH_RUNS:-3}"
else
    out="${BENCH_OUT:-$repo/BENCHMARKS.md}"
    search_files="${BENCH_SEARCH_FILES:-100000}"
    search_mb="${BENCH_SEARCH_MB:-1024}"
    search_runs="${BENCH_SEARCH_RUNS:-7}"
fi
# The command as typed, with the variables that shaped this run.
cmdline="scripts/bench.sh"
for v in $(compgen -e | grep -E '^BENCH_' | sort); do
    cmdline="$v=${!v} $cmdline"
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
rows="$tmp/rows.md"
: >"$rows"

echo "== building the agent and the benches ($profile)"
# The bench first, the agent last and on its own: building a bench also
# builds the package's binary with the dev-dependencies' features unified
# in (serde_json's preserve_order, from agent-client-protocol), which is not
# the binary `cargo build --release` gives users; building the binary alone
# afterwards puts the users' one back at $agent_bin.
if [ "$profile" = release ]; then
    cargo bench --locked --bench agent --no-run --message-format=json >"$tmp/build.json"
    cargo build --release --locked --bin acp-coder
    agent_bin="$target/release/acp-coder"
else
    cargo build --locked --profile "$profile" --bench agent \
        --message-format=json >"$tmp/build.json"
    cargo build --locked --profile "$profile" --bin acp-coder
    dir="$profile"
    [ "$profile" = dev ] && dir=debug
    agent_bin="$target/$dir/acp-coder"
fi
bench_exe="$(grep -o '"executable":"[^"]*/deps/agent-[^"]*"' "$tmp/build.json" | cut -d'"' -f4 | tail -1)"
[ -x "$bench_exe" ] || { echo "could not find the agent bench binary" >&2; exit 1; }

# The builds just wrote hundreds of MB: flush them and let the machine
# settle, or the writeback stalls the first start-up timings (the `cat`
# baseline itself took twice its usual time).
sync
sleep 5

echo
echo "== agent benchmarks"
"$bench_exe" --agent "$agent_bin" --work "$target/bench-work" --report "$tmp/agent-rows.md" \
    2>&1 | tee "$tmp/agent.log"
cat "$tmp/agent-rows.md" >>"$rows"

if [ -z "${BENCH_SKIP_SEARCH:-}" ]; then
    echo
    echo "== search benchmark ($search_files files, $search_mb MiB)"
    search_status=0
    FILES="$search_files" SIZE_MB="$search_mb" RUNS="$search_runs" PROFILE="$profile" \
        RG_OPTIONAL="${quick:+1}" scripts/bench-search.sh 2>&1 | tee "$tmp/search.log" \
        || search_status=$?
    # One row per pattern for grep, one for glob (the first pattern's run).
    awk -v files="$search_files" -v mb="$search_mb" -v quick="$quick" '
        function limit(r) {
            if (r == "") return "—"
            if (quick != "") return (r + 0 <= 1.5) ? "not judged (would pass)" : "not judged (would miss)"
            return (r + 0 <= 1.5) ? "pass" : "**FAIL**"
        }
        /^== pattern/ { pat = $0; sub(/^== pattern /, "", pat); sub(/, [0-9]+ runs$/, "", pat); n++ }
        /^ours grep:/ { og = $3 } /^ours glob:/ { ol = $3 }
        /^rg PATTERN >\/dev\/null:/ { rg = $4 } /^rg --files >\/dev\/null:/ { rf = $4 }
        /^ratio grep/ { gr = $NF }
        /^ratio glob/ {
            lr = $NF
            printf "| `grep` tool %s, %s files / %s MiB | %s ms | `rg PATTERN` %s ms | %s× | ≤ 1.5× | %s |\n", pat, files, mb, og, rg, gr, limit(gr)
            if (n == 1) glob = sprintf("| `glob` tool `*`, %s files / %s MiB | %s ms | `rg --files` %s ms | %s× | ≤ 1.5× | %s |\n", files, mb, ol, rf, lr, limit(lr))
        }
        END { printf "%s", glob }
    ' "$tmp/search.log" >>"$rows"
    if ! grep -q '^ratio grep' "$tmp/search.log"; then
        echo "| \`grep\`/\`glob\` tools vs ripgrep | see log (exit $search_status) | — | — | ≤ 1.5× | — |" >>"$rows"
    fi
fi

build_row=""
if [ "${BENCH_CLEAN_BUILD:-}" = 1 ]; then
    echo
    echo "== clean release build (2 jobs)"
    clean="$target/clean-build"
    rm -rf "$clean"
    load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
    start=$(date +%s.%N)
    # `times` in the subshell: CPU time of the build and everything it ran.
    (
        CARGO_TARGET_DIR="$clean" cargo build --release --locked -j 2 --bin acp-coder 2>&1 | tail -2
        times >"$tmp/cpu"
    ) || true
    end=$(date +%s.%N)
    rm -rf "$clean"
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", b - a }')
    # Second line of `times`: children's user and system time, e.g. 8m9.145s 0m37.452s.
    cpu2=$(awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); t += p[1] * 60 + p[2] } printf "%.0f", t / 2 }' "$tmp/cpu")
    verdict=$(awk -v w="$wall" 'BEGIN { if (w <= 240) print "pass"; else print "**FAIL**" }')
    build_row="| clean release build, \`-j 2\` (load average before: $load_before) | $((wall / 60)) min $((wall % 60)) s wall | CPU time / 2 cores: $((cpu2 / 60)) min $((cpu2 % 60)) s | — | ≤ 4 min | $verdict |"
    echo "$build_row"
else
    build_row="| clean release build, \`-j 2\` | not run (set BENCH_CLEAN_BUILD=1) | — | — | ≤ 4 min | — |"
fi
echo "$build_row" >>"$rows"


# ------------------------------------------------------------------ report
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
mem="$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
dirty=""
git diff --quiet HEAD 2>/dev/null || dirty=" (with uncommitted changes)"
{
    echo "# Benchmarks"
    echo
    echo "Written by \`scripts/bench.sh\`; do not edit by hand. Re-run it to update."
    echo
    echo "- command: \`$cmdline\` (profile: $profile${quick:+, quick sizes})"
    echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- commit: $commit$dirty"
    echo "- machine: $cpu, $(nproc) cores, $mem memory; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- toolchain: $(rustc --version)"
    echo
    echo "| target | measured | baseline (same run) | ratio | limit | result |"
    echo "|---|---|---|---|---|---|"
    cat "$rows"
    echo
    cat <<'EOF'
How each figure is taken (see `benches/agent.rs` and `benches/agent/` for the code):

- **start-up**: time from `spawn()` to the `initialize` response line read by the
  fake editor, against spawning `cat` and reading the same line back. VmRSS is
  read from `/proc/PID/status` after `session/new` has been answered. The
  command sandbox's probe (a run of the agent's own launcher) starts with the
  first session, not at start-up, where it competed with `initialize` for
  the CPU (issue 15). The executable is linked at a fixed address (not PIE,
  `build.rs`): as a PIE its ~36,000 relative relocations were applied at
  every start, ~150 copy-on-write page faults, which were the largest part
  of start-up and 1 MB of its memory (and of every sandboxed command's
  launcher). `ACP_CODER_PIE=1` builds a PIE.
- **first turn**: a fresh agent, `session/new`, then at once (as `exec`
  does) a one-line prompt; the time from the `session/prompt` line to its
  response. One side asks the loopback server for the window (it answers
  llama-server's `GET /props`; the asking starts with the session and the
  first request waits for it at most 1 s), the other has `context_window`
  in the config and asks nothing; fresh agents, the sides alternating. The
  fake server sets TCP_NODELAY: one that writes a reply's head and body
  apart without it holds the body ~40 ms on a kept-alive connection (Nagle
  meets the client's delayed ACK), which was the 45 ms issue 47 measured.
- **streaming**: the fake OpenAI server writes each SSE chunk as one HTTP chunk
  (TCP_NODELAY), stamping its text with the send time; the editor's reader
  thread stamps each `session/update` line it reads. The target is the
  agent's CPU time per streamed text chunk: all its threads
  (`/proc/PID/task/*/schedstat`) over a burst of chunks, median of rounds.
  The chunk rate, and reqwest reading the same stream from the same server,
  are printed for reference only: the old target "rate ≥ 0.95 of reqwest"
  measured a loopback burst of ~2 M chunks/s, about a thousand times what any
  model server sends, and was retired with the home-made HTTP stack it had
  called for (issue 15). The baseline column is the floor of the libraries
  the issue prescribes, measured on the same stream in the same round, on
  one thread of the bench process (`benches/agent/floor.rs`): reqwest
  reading the body and nothing else, and async-openai's own
  `create_stream_byot` decoding each chunk into a `serde_json::Value` with
  no agent work at all (no assembly, no ACP frame, no write to stdout).
  Since then the model client is async-openai over
  reqwest for `http://` and `https://` alike. A chat reply's body is decoded
  by eventsource-stream (async-openai's own SSE decoder) on the turn's task:
  async-openai's stream decodes on a task it spawns and hands each event
  over a channel as a `RawValue` copy, a wake-up, a JSON validation and
  a copy per chunk (`src/llm/layer.rs`, `hand_over`). The agent's runtime has
  one worker thread (`src/main.rs`, `runtime`): with one per core, each chunk
  crossed between the two (the connection's task, the turn, the stdout
  writer) and waking the parked one was ~40% of the CPU per chunk (perf:
  eventfd writes, futex, context switches). What is left (perf, profiling
  build, one worker): 29% in serde_json and eventsource-stream (the library
  decoders the issue prescribes), 15% in hyper's body channel, `bytes` and
  their wakers, 8% in tokio, 8% in the allocator, 13% in the kernel (socket
  reads, the frame writes), 7% in the agent's own code. 3 µs
  would take a decoder of our own, which the issue rules out: the target
  is reported, not built around. Latency is measured on a paced
  stream (one chunk per millisecond) so that it shows the relay's delay, not
  a queue: server send → editor receipt, p99 ≤ 1 ms, in five rounds of 3000
  chunks with reqwest's rounds alternating, the median round reported (one
  stall of this shared host queues every chunk behind it: a single 30 ms
  stall decided a lone round's p99; the worst round is shown beside it)
  (`BENCH_PACED_WORST=1`
  prints the slowest chunks and what this sandbox's PID 1 ran meanwhile).
- **cancel**: full-auto mode; `session/cancel` is sent once the first text
  chunk (streaming) or the `in_progress` update of `run_command sleep 30`
  (command) has arrived; the time to the prompt's response. Afterwards the
  agent must have no live children left.
- **MCP**: the fake servers (this bench binary with `--fake-mcp-server`)
  sleep before answering `initialize`; `session/new` is timed with five of
  them against one of them, each in a fresh agent after a warm-up session.
- **session/load**: a generated JSON Lines log in the agent's own format
  (user, assistant with a `read_file` call, tool result, answer; repeated);
  time from the request to the last replayed `session/update`, against
  reading and parsing the same log in the bench process.
- **soak**: one session, short turns; VmRSS, `/proc/PID/fd` and
  `/proc/PID/task` after 20 warm-up turns and at the end; the session log's
  growth stands for the history the agent legitimately keeps.
- **first request**: the body of the first `POST /chat/completions` of a new
  session for a one-line prompt, as captured by the fake server; once in a
  bare project and once with 20 skills in `.agents/skills/` (issue 21).
- **checkpoint**: the work done around every command for `/undo` and the
  changed-files list (issue 19), with one file changed in between, through
  the session's watch: the mark before the command and, after it, draining
  the inotify events up to a marker, stat'ing the paths with events and the
  difference (the watch's one-time start, a walk plus one watch per
  directory at the first command, in the baseline column); and the walk
  fallback (a parallel walk of paths, sizes, mtimes, inodes before and
  after); in a 5 000-file project and a large one
  (`BENCH_CHECKPOINT_FILES`, default 100 000), caches warm.
- **A2A** (`benches/agent/a2a.rs`): start → agent card: `acp-coder a2a`
  spawned until `GET /.well-known/agent-card.json` first succeeds (polled
  every 0.2 ms), against spawn → `initialize` answered over stdio. Per
  task: one ACP agent (stdio) and one A2A server (HTTP/1.1, one kept-alive
  reqwest connection) run side by side on the same fake model, each with
  an existing conversation (the ACP session from `session/new`; the A2A
  context an untimed first task made) and the same turn ("say ok",
  answered "ok" in one streamed chunk); 20 warm-up pairs, then
  `10 × BENCH_RUNS` (≥ 50) timed pairs, interleaved ACP, A2A, A2A, ACP, …
  (which side goes first alternates), so drift and load hit both sides
  alike. Both clocks start after the request bytes are built and stop
  when the whole response has been read (parsing it is not timed). The
  ACP side is the `session/prompt` line written to stdin, the turn, its
  `session/update` lines and the response line; the A2A side is a
  blocking `SendMessage` (`POST /` with the bearer token), the JSON-RPC
  envelope, the task (state, history, answer artifact, diff check), the
  same turn over the in-process ACP connection, and the task's snapshot
  as the JSON reply. The figure is the ratio of the two medians; the
  median of per-pair ratios is printed next to it, and so is each agent
  process's CPU time per turn (`/proc/PID/task/*/schedstat`).
- **serve** (`benches/agent/serve.rs`): one `acp-coder serve
  --max-connections N` process and N WebSocket connections
  (`BENCH_SERVE_SESSIONS`, default 100), each `initialize`, `session/new`,
  then all N `session/prompt`s at once ("say ok", the fake model's short
  reply); the turn is timed from the prompt sent to its response read. The
  baseline is the same N sessions in one stdio agent with the N prompts
  written at once. Memory a session is the server's VmRSS with the N
  sessions open and their turns done, less its VmRSS before the first
  connection, over N (the stdio agent's likewise). Connection N+1 is opened
  while the N are live; every turn must end `end_turn` and no connection may
  see a frame naming another's session.
- **search**: `scripts/bench-search.sh` (our in-process `grep`/`glob` against
  `rg PATTERN` / `rg --files`, both with the page cache warm).
- **clean build**: `cargo build --release --locked -j 2 --bin acp-coder` in an
  empty target directory, dependencies already downloaded. On 2 cores both
  are busy from start to end, so the CPU time is what decides it; the
  release profile in `Cargo.toml` says which settings were tried and what
  each cost (thin LTO re-optimised every crate in a last 95 s step).
EOF
    # The real-model task runs take an hour on a model server this script
    # does not start: they are measured by hand (scripts/bench-tasks.sh)
    # and kept in benches/real-model-tasks.md, shown here as they stand.
    echo
    cat "$repo/benches/real-model-tasks.md"
    echo
    echo "<details><summary>Raw output</summary>"
    echo
    echo '```text'
    cat "$tmp/agent.log"
    [ -f "$tmp/search.log" ] && cat "$tmp/search.log"
    echo '```'
    echo
    echo "</details>"
} >"$out"

echo
echo "== report written to $out"
awk '/^\| target/ { on = 1 } on && /^$/ { exit } on' "$out"
if [ -z "$quick" ] && grep -q '\*\*FAIL\*\*' "$rows"; then
    exit 1
fi
