#!/usr/bin/env bash
# Runs every test. The suite drives third-party programs a test may not
# download itself: the ACP linter acplint, the official MCP reference servers
# (npm's server-everything, the Python MCP SDK with its OAuth server side),
# the official A2A and ACP Python SDKs, the official ACP Rust SDK's remote
# client (tests/acp_rs, built here), kubernetes-validate (the Kubernetes
# schemas) and, where Python 3.12 exists, OpenHands' SDK. This script
# installs them once, pinned, into a cache (CI_TOOLS, default
# $TMPDIR/acp-coder-ci-tools; needs Node/npm and python3 with venv), then
# runs the whole suite including the tests that need them, which a plain
# `cargo test --locked` skips as #[ignore]d.
set -euo pipefail
cd "$(dirname "$0")/.."

CI_TOOLS="${CI_TOOLS:-${TMPDIR:-/tmp}/acp-coder-ci-tools}"
mkdir -p "$CI_TOOLS"
venv() { # venv DIR PACKAGE...: a venv with these packages, reused when present
    local dir="$1"
    shift
    [ -x "$dir/bin/python" ] || "${PYTHON:-python3}" -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
}

echo "== test tools (into $CI_TOOLS)"
# acplint, the third-party ACP linter (tests/suite/conformance.rs).
venv "$CI_TOOLS/acplint-venv" acplint==0.1.0
export ACP_CODER_ACPLINT_PYTHON="$CI_TOOLS/acplint-venv/bin/python"
# The MCP reference servers (tests/suite/mcp*.rs): the TypeScript server
# (stdio, streamable HTTP, legacy SSE) and the Python SDK (stdio, and the
# OAuth-protected server of tests/suite/mcp_oauth.rs).
npm install --no-audit --no-fund --prefix "$CI_TOOLS/npm" @modelcontextprotocol/server-everything@2026.8.31 >/dev/null
venv "$CI_TOOLS/venv" "mcp==2.3.0"
export ACP_CODER_MCP_EVERYTHING="$CI_TOOLS/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
export ACP_CODER_MCP_PYTHON="$CI_TOOLS/venv/bin/python"
# The official A2A client (tests/suite/a2a.rs drives tests/a2a/client.py), in
# its own venv so its dependencies never meet the MCP SDK's.
venv "$CI_TOOLS/a2a-venv" "a2a-sdk==1.3.0"
export ACP_CODER_A2A_PYTHON="$CI_TOOLS/a2a-venv/bin/python"
# The official ACP Python SDK's remote (HTTP + SSE, WebSocket) client against
# `acp-coder serve` (tests/suite/serve.rs drives tests/acp_py/client.py).
venv "$CI_TOOLS/acp-venv" "agent-client-protocol[http]==0.12.1"
export ACP_CODER_ACP_PYTHON="$CI_TOOLS/acp-venv/bin/python"
# The official ACP Rust SDK's remote client (agent-client-protocol-http's
# HttpClient) against `acp-coder serve` (tests/suite/serve_rust_client.rs
# runs tests/acp_rs, its own package with its own lock file: never a
# dependency of acp-coder). Built once into the cache; needs crates.io and a
# C compiler (aws-lc-sys), no cmake; about 3 minutes cold on 2 cores.
cargo build --locked --quiet --manifest-path tests/acp_rs/Cargo.toml --target-dir "$CI_TOOLS/acp-rs-target"
export ACP_CODER_ACP_RS_CLIENT="$CI_TOOLS/acp-rs-target/debug/acp-rs-client"
# The Kubernetes schemas (tests/suite/deploy.rs validates deploy/kubernetes/).
venv "$CI_TOOLS/k8s-venv" "kubernetes-validate==1.37.0"
export ACP_CODER_K8S_PYTHON="$CI_TOOLS/k8s-venv/bin/python"
# OpenHands' ACPAgent (tests/suite/openhands.rs): openhands-sdk needs Python
# 3.12 or newer; where there is none, the test says so and is skipped.
py312=""
for p in python3.14 python3.13 python3.12 python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    py312=$p
    break
  fi
done
if [ -z "$py312" ]; then
  export ACP_CODER_OPENHANDS_PYTHON="skip: openhands-sdk needs Python 3.12 or newer; this machine has $(python3 --version 2>&1)"
elif PYTHON=$py312 venv "$CI_TOOLS/openhands-venv" "openhands-sdk==1.58.2"; then
  export ACP_CODER_OPENHANDS_PYTHON="$CI_TOOLS/openhands-venv/bin/python"
else
  export ACP_CODER_OPENHANDS_PYTHON="skip: openhands-sdk==1.58.2 could not be installed with $py312"
fi
echo "OpenHands: $ACP_CODER_OPENHANDS_PYTHON"
node --version
"$ACP_CODER_ACPLINT_PYTHON" -c 'import acplint; print("acplint", acplint.__version__)'
"$ACP_CODER_MCP_PYTHON" -c 'import importlib.metadata as m; print("python mcp", m.version("mcp"))'
"$ACP_CODER_A2A_PYTHON" -c 'import importlib.metadata as m; print("python a2a-sdk", m.version("a2a-sdk"))'
"$ACP_CODER_ACP_PYTHON" -c 'import importlib.metadata as m; print("python agent-client-protocol", m.version("agent-client-protocol"))'
"$ACP_CODER_K8S_PYTHON" -c 'import importlib.metadata as m; print("kubernetes-validate", m.version("kubernetes-validate"))'

echo "== tests"
# Every test, the ignored ones too, except one that is a measurement (the
# redaction cost per chunk; run it by hand with --release --nocapture).
exec cargo test --locked -- --include-ignored --skip secrets::tests::redaction_cost_per_chunk
