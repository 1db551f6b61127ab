#!/usr/bin/env bash
# Lints the crate for every system it ships for (`cargo clippy --all-targets
# -D warnings` per target: a check, no code generation or linking), with zig
# as the C compiler of the C dependencies (ring), then runs the platform
# rules' unit tests that do not need the system they describe (Seatbelt
# profiles, PATHEXT, Windows paths and quoting).
#
#   scripts/cross-lint.sh [TARGET...]     default: every target below
#
# Installs what it needs from the package registries: the rustup targets,
# and `ziglang` from PyPI (into target/cross-lint/venv).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(
    x86_64-unknown-linux-gnu
    aarch64-unknown-linux-gnu
    x86_64-apple-darwin
    aarch64-apple-darwin
    x86_64-pc-windows-gnu
  )
  # Windows is linted with the GNU target (zig provides its C compiler
  # here); the crate uses nothing GNU-specific, so the MSVC build is the
  # same code.
fi

work="${CARGO_TARGET_DIR:-target}/cross-lint"
mkdir -p "$work/bin"
work="$(cd "$work" && pwd)"
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet 'ziglang==0.17.1'
fi

# One `cc` per zig target: the cc crate adds its own target flags, which zig
# spells differently; zig gets its own.
zig_target() {
  case "$1" in
    x86_64-unknown-linux-gnu) echo x86_64-linux-gnu ;;
    aarch64-unknown-linux-gnu) echo aarch64-linux-gnu ;;
    x86_64-apple-darwin) echo x86_64-macos ;;
    aarch64-apple-darwin) echo aarch64-macos ;;
    x86_64-pc-windows-gnu) echo x86_64-windows-gnu ;;
    *) echo "cross-lint: no zig target for $1" >&2; return 1 ;;
  esac
}
cat >"$work/bin/ar" <<AR
#!/usr/bin/env bash
exec "$work/venv/bin/python" -m ziglang ar "\$@"
AR
chmod +x "$work/bin/ar"

host="$(rustc -vV | sed -n 's/^host: //p')"
for target in "${TARGETS[@]}"; do
  if [ "$target" = "$host" ]; then
    # The host's own build (shared with the lint and test steps).
    echo "== clippy $target (host)"
    cargo clippy --all-targets --locked -- -D warnings
    continue
  fi
  rustup target add "$target" >/dev/null 2>&1 || true
  zt="$(zig_target "$target")"
  cc="$work/bin/cc-$target"
  cat >"$cc" <<CC
#!/usr/bin/env bash
args=(); skip=0
for a in "\$@"; do
  if [ \$skip = 1 ]; then skip=0; continue; fi
  case "\$a" in
    --target=*|-mmacosx-version-min=*) ;;
    -arch|-target) skip=1 ;;
    *) args+=("\$a") ;;
  esac
done
exec "$work/venv/bin/python" -m ziglang cc -target $zt "\${args[@]}"
CC
  chmod +x "$cc"
  var="${target//-/_}"
  echo "== clippy $target"
  start=$SECONDS
  env "CC_$var=$cc" "AR_$var=$work/bin/ar" \
    cargo clippy --target "$target" --all-targets --locked -- -D warnings
  echo "   $target: $((SECONDS - start)) s"
done

echo "== platform unit tests (every system's rules, run here)"
cargo test --locked --lib platform::
