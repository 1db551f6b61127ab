#!/usr/bin/env bash
# Task benchmark with a real model: runs an agent headless on the small
# coding tasks in scripts/tasks/, each in a fresh git repository, and checks
# each by its files or its answer alone. Prints one line per task and the
# pass rate, the median and mean time per task, and (acp-coder) the share of
# the model's call attempts that parsed and of its edits that applied
# (scripts/task_metrics.py reads them from the protocol trace and the agent
# log). A benchmark, never a CI test.
#
#   scripts/bench-tasks.sh [--agent acp-coder|opencode] [--bin PATH]
#                          [--base-url URL] [--model ID] [--timeout SECS]
#                          [--tasks DIR] [--only NAME-GLOB] [--keep]
#   scripts/bench-tasks.sh --self-check   # the checks fail untouched, pass solved
#   scripts/bench-tasks.sh --tasks scripts/tasks-exercism   # the public set
#
# Two task sets: scripts/tasks/ (our own twelve) and scripts/tasks-exercism/
# (twenty of Exercism's Python exercises, the source of Aider's code-editing
# benchmark; its README says which and how they compare).
#
# Defaults: --agent acp-coder, --bin target/debug/acp-coder, --base-url
# http://127.0.0.1:8080/v1 (llama-server), --model qwen2.5-coder-1.5b-instruct,
# --timeout 300. acp-coder runs as `exec --mode full-auto`; opencode as
# `opencode run` with a generated opencode.json pointing at the same server.
#
# A task is a directory with setup.sh (makes the files), prompt.txt, check.sh
# (exit 0 = pass; $1 is the file holding the agent's answer) and solve.sh (a
# reference solution, used by --self-check only).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
agent=acp-coder
bin=$here/../target/debug/acp-coder
base_url=http://127.0.0.1:8080/v1
model=qwen2.5-coder-1.5b-instruct
timeout_s=300
tasks=$here/tasks
only='*'
keep=0
self_check=0
while [ $# -gt 0 ]; do
  case $1 in
    --agent) agent=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --base-url) base_url=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --tasks) tasks=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --self-check) self_check=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done

tasks=$(cd "$tasks" && pwd)

# A fresh repository holding the task's files, committed.
fresh_repo() {
  local task=$1 dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-task.XXXXXX")
  (
    cd "$dir"
    git init -q
    git config user.email bench@example.invalid
    git config user.name bench
    bash "$task/setup.sh"
    git add -A
    git commit -qm "task"
  )
  echo "$dir"
}

check() {
  local task=$1 dir=$2 answer=$3
  (cd "$dir" && bash "$task/check.sh" "$answer") >/dev/null 2>&1
}

if [ "$self_check" = 1 ]; then
  bad=0
  for task in "$tasks"/$only/; do
    task=${task%/}
    name=$(basename "$task")
    dir=$(fresh_repo "$task")
    answer=$dir.answer
    : > "$answer"
    if check "$task" "$dir" "$answer"; then echo "FAIL $name: passes untouched"; bad=1; fi
    (cd "$dir" && bash "$task/solve.sh" "$answer")
    if check "$task" "$dir" "$answer"; then echo "ok   $name"; else echo "FAIL $name: reference solution fails"; bad=1; fi
    rm -rf "$dir" "$answer"
  done
  exit $bad
fi

run_agent() {
  local dir=$1 prompt=$2 answer=$3 log=$4
  case $agent in
    acp-coder)
      # The protocol trace (every session/update) is where the call metrics
      # come from; --keep keeps it beside the log.
      (cd "$dir" && OPENAI_BASE_URL=$base_url ACP_CODER_MODEL=$model OPENAI_API_KEY= \
        XDG_CONFIG_HOME=$dir.config XDG_DATA_HOME=$dir.data XDG_STATE_HOME=$dir.state \
        timeout "$timeout_s" "$bin" --trace "$dir.trace" exec --mode full-auto "$prompt" >"$answer" 2>"$log")
      ;;
    opencode)
      mkdir -p "$dir.config/opencode"
      cat > "$dir.config/opencode/opencode.json" <<JSON
{
  "\$schema": "https://opencode.ai/config.json",
  "model": "local/$model",
  "provider": {
    "local": {
      "npm": "@ai-sdk/openai-compatible",
      "options": { "baseURL": "$base_url" },
      "models": { "$model": { "tools": true } }
    }
  },
  "permission": { "edit": "allow", "bash": "allow", "webfetch": "deny" }
}
JSON
      (cd "$dir" && XDG_CONFIG_HOME=$dir.config timeout "$timeout_s" opencode run "$prompt" \
        </dev/null >"$answer" 2>"$log")
      ;;
    *) echo "unknown agent $agent" >&2; exit 2 ;;
  esac
}

passed=0
total=0
sum_ms=0
all_ms=()
calls=0 unparsed=0 edits=0 applied=0
printf '%-26s %-6s %8s  %s\n' task result seconds 'calls (unparsed) edits applied'
for task in "$tasks"/$only/; do
  task=${task%/}
  name=$(basename "$task")
  dir=$(fresh_repo "$task")
  answer=$dir.answer
  log=$dir.log
  start=$(date +%s%N)
  rc=0
  run_agent "$dir" "$(cat "$task/prompt.txt")" "$answer" "$log" || rc=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  result=fail
  if check "$task" "$dir" "$answer"; then result=pass; passed=$((passed + 1)); fi
  [ "$rc" = 124 ] && result="$result(timeout)"
  total=$((total + 1))
  sum_ms=$((sum_ms + ms))
  all_ms+=("$ms")
  m=''
  if [ "$agent" = acp-coder ]; then
    read -r c u e a < <(python3 "$here/task_metrics.py" "$dir.trace" "$answer" "$dir.state" |
      python3 -c 'import json,sys; m=json.load(sys.stdin); print(m["calls"], m["unparsed"], m["edits"], m["applied"])')
    calls=$((calls + c)) unparsed=$((unparsed + u)) edits=$((edits + e)) applied=$((applied + a))
    m="$c ($u) $e $a"
  fi
  printf '%-26s %-6s %8.1f  %s\n' "$name" "$result" "$(echo "$ms / 1000" | bc -l)" "$m"
  if [ "$keep" = 1 ]; then
    echo "    kept: $dir (answer $answer, log $log, agent log under $dir.state, trace $dir.trace)"
  else
    rm -rf "$dir" "$dir.config" "$dir.data" "$dir.state" "$dir.trace" "$answer" "$log"
  fi
done
[ "$total" -gt 0 ] || { echo "no tasks under $tasks matching $only" >&2; exit 2; }
median_ms=$(printf '%s\n' "${all_ms[@]}" | sort -n | awk '{v[NR] = $1} END {
  print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
printf 'passed %d/%d, median %.1f s, mean %.1f s per task (%s, %s)\n' "$passed" "$total" \
  "$(echo "$median_ms / 1000" | bc -l)" "$(echo "$sum_ms / $total / 1000" | bc -l)" "$agent" "$model"
if [ "$agent" = acp-coder ]; then
  pct() { [ "$2" -gt 0 ] && echo "$((100 * $1 / $2)) %" || echo "-"; }
  printf 'calls parsed %d/%d (%s), edits applied %d/%d (%s)\n' "$calls" "$((calls + unparsed))" \
    "$(pct "$calls" "$((calls + unparsed))")" "$applied" "$edits" "$(pct "$applied" "$edits")"
fi
