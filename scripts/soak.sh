#!/usr/bin/env bash
# The full soak: 20 concurrent sessions, 1,000 turns in all, against one agent
# with a fake model; every turn has tool calls and most ask permission. Prints
# the agent's RSS, file descriptors, threads and children before and after
# (tests/suite/soak.rs asserts no leak). `cargo test` runs a reduced version.
#
#   scripts/soak.sh                 # 20 sessions, 1000 turns
#   scripts/soak.sh 50 5000         # sessions, turns
set -euo pipefail
cd "$(dirname "$0")/.."
export ACP_SOAK_SESSIONS="${1:-20}" ACP_SOAK_TURNS="${2:-1000}"
exec cargo test --locked --test all -- --exact suite::soak::soak_concurrent_sessions_leak_nothing --nocapture
