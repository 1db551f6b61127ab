#!/usr/bin/env bash
# Builds the release archives that can be linked on this machine, prints the
# sha256 of each, and with --registry writes those sums into the ACP registry
# entry (editors/acp-registry/acp-coder/agent.json).
#
#   scripts/dist.sh [--out DIR] [--registry] [TARGET...]
#
# Default targets, by the system it runs on:
#   Linux    x86_64-unknown-linux-gnu, aarch64-unknown-linux-gnu,
#            x86_64-pc-windows-gnu   (zig from PyPI links the foreign ones,
#                                     through cargo-zigbuild)
#   macOS    aarch64-apple-darwin, x86_64-apple-darwin   (Xcode's linker and
#                                     SDK; Apple's frameworks cannot be linked
#                                     anywhere else)
#   Windows  x86_64-pc-windows-msvc  (Visual Studio's build tools)
#
# With --registry, the entry lists the targets built here with their sums,
# keeps those built elsewhere (which carry a sum), and drops any target no
# archive was built for: every target it lists has been built.
#
# Archives: acp-coder-<target>.tar.gz (acp-coder inside), or .zip for Windows
# (acp-coder.exe inside), each with README.md and SECURITY.md, in DIR
# (default target/dist). The registry entry names them by the release URL
# https://github.com/acp-coder/acp-coder/releases/download/v<version>/<archive>.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

out="${CARGO_TARGET_DIR:-target}/dist"
registry=0
targets=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --registry) registry=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "dist: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

host="$(rustc -vV | sed -n 's/^host: //p')"
if [ ${#targets[@]} -eq 0 ]; then
  case "$host" in
    *-linux-*) targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-pc-windows-gnu) ;;
    *-apple-darwin) targets=(aarch64-apple-darwin x86_64-apple-darwin) ;;
    *-windows-msvc) targets=(x86_64-pc-windows-msvc) ;;
    *) targets=("$host") ;;
  esac
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
mkdir -p "$out"
out=$(cd "$out" && pwd)
tools="${CARGO_TARGET_DIR:-$repo/target}/dist-tools"

sha256() {
  if command -v sha256sum >/dev/null; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}

# zig (PyPI) and cargo-zigbuild (crates.io) for targets this system does
# not link natively, installed once into the target dir.
zigbuild() {
  if [ ! -x "$tools/venv/bin/python" ]; then
    python3 -m venv "$tools/venv"
    "$tools/venv/bin/pip" install --quiet 'ziglang==0.17.1'
  fi
  if [ ! -x "$tools/bin/cargo-zigbuild" ]; then
    cargo install --locked --quiet --root "$tools" cargo-zigbuild@0.24.1
  fi
  # cargo-zigbuild runs `python3 -m ziglang` when no `zig` is on PATH.
  PATH="$tools/venv/bin:$tools/bin:$PATH" cargo zigbuild "$@"
}

native() {
  [ "$1" = "$host" ] && return 0
  case "$host:$1" in
    *-apple-darwin:*-apple-darwin) return 0 ;;
    x86_64-pc-windows-msvc:*-pc-windows-msvc) return 0 ;;
  esac
  return 1
}

# Reproducible archives: machine paths are remapped out of the binary, and
# every file in an archive has the last commit's time, owner 0 and a fixed
# order, so another build of the same commit with the same toolchain gives
# the same sums.
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$repo=/acp-coder --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"

declare -A sums=()
for target in "${targets[@]}"; do
  rustup target add "$target" >/dev/null 2>&1 || true
  echo "== $target" >&2
  if native "$target"; then
    cargo build --release --locked --target "$target"
  else
    zigbuild --release --locked --target "$target"
  fi
  bin="${CARGO_TARGET_DIR:-target}/$target/release/acp-coder"
  stage=$(mktemp -d)
  case "$target" in
    *windows*)
      cp "$bin.exe" "$stage/acp-coder.exe"
      archive="acp-coder-$target.zip"
      ;;
    *)
      cp "$bin" "$stage/acp-coder"
      archive="acp-coder-$target.tar.gz"
      ;;
  esac
  cp README.md SECURITY.md "$stage/"
  chmod 0644 "$stage"/*.md
  touch -d "@$epoch" "$stage"/*
  rm -f "$out/$archive"
  case "$archive" in
    *.zip) (cd "$stage" && python3 -m zipfile -c "$out/$archive" acp-coder.exe README.md SECURITY.md) ;;
    *) tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -cf - . \
         | gzip -n >"$out/$archive" ;;
  esac
  rm -rf "$stage"
  sums[$target]=$(sha256 "$out/$archive")
  echo "${sums[$target]}  $archive"
done

if [ "$registry" = 1 ]; then
  entry=editors/acp-registry/acp-coder/agent.json
  args=()
  for target in "${!sums[@]}"; do args+=("$target=${sums[$target]}"); done
  python3 - "$entry" "$version" "${args[@]}" <<'PY'
import json, sys
path, version, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
keys = {
    "x86_64-unknown-linux-gnu": "linux-x86_64",
    "aarch64-unknown-linux-gnu": "linux-aarch64",
    "x86_64-apple-darwin": "darwin-x86_64",
    "aarch64-apple-darwin": "darwin-aarch64",
    "x86_64-pc-windows-gnu": "windows-x86_64",
    "x86_64-pc-windows-msvc": "windows-x86_64",
}
with open(path) as f:
    entry = json.load(f)
entry["version"] = version
binary = entry["distribution"].setdefault("binary", {})
base = f"https://github.com/acp-coder/acp-coder/releases/download/v{version}"
for pair in pairs:
    target, sha = pair.split("=", 1)
    exe = "./acp-coder.exe" if "windows" in target else "./acp-coder"
    ext = "zip" if "windows" in target else "tar.gz"
    binary[keys[target]] = {
        "archive": f"{base}/acp-coder-{target}.{ext}",
        "sha256": sha,
        "cmd": exe,
        "args": [],
    }
# An entry no archive was built for (here or, with its sum, on another
# system) promises what nobody has built: it is dropped.
entry["distribution"]["binary"] = dict(sorted((k, v) for k, v in binary.items() if v.get("sha256")))
with open(path, "w") as f:
    json.dump(entry, f, indent=2, ensure_ascii=False)
    f.write("\n")
PY
  echo "updated $entry" >&2
fi
