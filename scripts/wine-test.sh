#!/usr/bin/env bash
# Runs the Windows build (x86_64-pc-windows-gnu) under Wine: the unit tests,
# then the integration tests that need no Unix-only tool, which drive the
# Windows acp-coder.exe the way an editor does (sessions, file tools,
# commands through cmd.exe, permissions, MCP over stdio with the Windows
# build of examples/mcp_test_server, /undo, exit when the editor goes away).
#
#   scripts/wine-test.sh
#
# Needs wine (Debian: wine, wine64), the mingw-w64 linker
# (x86_64-w64-mingw32-gcc) and the rustup target x86_64-pc-windows-gnu;
# .ci/run installs them. Everything it makes is under target/: the Windows
# build in target/x86_64-pc-windows-gnu, a private Wine prefix and the
# stand-in DLL in target/wine.
#
# Wine 8 has no bcryptprimitives.dll, whose ProcessPrng Rust's std needs (since
# 1.78): tests/support/wine/bcryptprimitives.c is a stand-in, built here and
# copied next to each .exe. It is for Wine only and never shipped (real
# Windows 10 and 11 have the DLL).
#
# Wine forgives what Windows does not (a \\?\ working directory, for one):
# a pass here is necessary, not sufficient.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-pc-windows-gnu
for tool in wine x86_64-w64-mingw32-gcc; do
  command -v "$tool" >/dev/null || {
    echo "wine-test: $tool is missing (Debian: apt-get install wine wine64 mingw-w64)" >&2
    exit 1
  }
done
rustup target list --installed | grep -qx "$target" || {
  echo "wine-test: run 'rustup target add $target' first" >&2
  exit 1
}

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CC_x86_64_pc_windows_gnu=x86_64-w64-mingw32-gcc
export AR_x86_64_pc_windows_gnu=x86_64-w64-mingw32-ar
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine
tdir="${CARGO_TARGET_DIR:-target}"
mkdir -p "$tdir/wine"
tdir="$(cd "$tdir" && pwd)"
export WINEPREFIX="$tdir/wine/prefix"
export WINEDEBUG=-all
# No window or dialog from Wine's first start on a machine without a display.
export DISPLAY=
# Wine's prefix ships a stub powershell.exe that runs nothing and exits 0:
# the agent would choose it over cmd.exe (Git bash, PowerShell, cmd.exe).
# Commands run in Wine's cmd.exe, chosen the way a user would.
export ACP_CODER_SHELL=cmd.exe

start=$(date +%s)
echo "== wine: build the Windows binary, its tests and the MCP test server"
wine --version
x86_64-w64-mingw32-gcc -shared -O2 -o "$tdir/wine/bcryptprimitives.dll" \
  tests/support/wine/bcryptprimitives.c -ladvapi32 -Wl,--kill-at
cargo test --locked --target "$target" --lib --test all --no-run
cargo build --locked --target "$target" --example mcp_test_server
out="$tdir/$target/debug"
for dir in "$out" "$out/deps" "$out/examples"; do
  cp "$tdir/wine/bcryptprimitives.dll" "$dir/"
done
built=$(date +%s)

echo "== wine: prefix $WINEPREFIX"
wineboot -i >/dev/null 2>&1 || true

# Unit tests that do not pass under Wine, each with why (each re-run alone
# under Wine on 2026-12-06; the rest of the unit tests run).
unit_skips=(
  # Hangs: the watcher of a root that is deleted and made again never
  # answers under Wine (ReadDirectoryChangesW on a removed folder); check on
  # real Windows first.
  tools::snapshot::watch::tests::a_recreated_root_is_watched_again
  # The test spells Unix paths (/etc, /tmp, /api) or shows them with '/';
  # on Windows they are drive-relative and shown with '\\' (and names
  # differing only in case are the same file).
  agent::engine::named_files::tests::only_small_text_files_inside_the_roots_are_read
  tools::missing::tests::a_guessed_path_gets_the_files_of_that_name
  agent::policy::permission::tests::a_listing_grant_never_runs_a_command_on_the_directory
  agent::policy::permission::tests::command_prefix_grants_are_scoped
  mcp::client::tests::roots_are_file_uris_of_the_session_dirs
  tools::paths::tests::commands_naming_paths_outside_the_roots
  tools::search::glob::tests::
  tools::search::grep::tests::finds_matches_sorted_by_path_then_line
  tools::search::grep::tests::glob_filters_files_relative_to_root
  tools::search::grep::tests::paths_outside_display_base_are_absolute
  # Symbolic links: Wine's are not Windows' (no reparse points).
  agent::engine::model_text::tests::agents_md_that_is_not_a_project_file_is_skipped
  agent::policy::add_dir::tests::resolves_existing_directories_only
  agent::policy::commands::tests::project_prompt_files_are_read_like_project_files
  editor::files::tests::writes_stay_beneath_the_root
  skills::tests::project_skills_linking_outside_the_project_are_not_read
  tools::paths::tests::resolution_handles_dots_tilde_and_symlinks
  tools::search::list::tests::symlinks_show_their_target
  # A file name Windows forbids (os error 123).
  tools::snapshot::watch::tests::the_walk_mode_gives_the_same_answer
  # A Unix device in the test (/dev/full for a full disk); Wine keeps a
  # deleted file that is still open listed until its last handle closes
  # (the old delete semantics; Windows 10 1903+ on NTFS removes the name at
  # once); the skill's size check counts 262177 bytes against 262144 (the
  # test's CRLF or the file's: not yet told apart).
  skills::tests::hostile_skill_folders
  agent::store::tests::a_full_disk_loses_nothing_once_it_has_room_again
  agent::store::tests::round_trip_and_torn_last_line
  # sh syntax in the command (`echo first; sleep 30`).
  tools::process::background::tests::local_jobs_start_read_and_die
)

# The integration suites that need no Unix-only tool. Their tests spawn
# acp-coder.exe (and mcp_test_server.exe); commands run through cmd.exe.
suites=(
  acp_registry
  cancel
  handshake
  kept_permissions
  lifecycle
  mcp
  mcp_lifecycle
  modes
  permissions
  session_setup
  sessions
  tools_command
  tools_files
  turns
  undo
)
# Tests of those suites that need a Unix tool or behaviour, each with why.
# The portable ones that stay: tools_command::any_shell_runs_commands and
# undo::undo_removes_what_any_shell_made (echo, exit, echo x> file).
skips=(
  # The editor's terminal gets `cmd.exe /D /C %ACP_CODER_LINE%` with the text
  # in the environment (what survives Zed joining command and args); real
  # cmd.exe expands %VAR% before it reads the command name, Wine's cmd.exe
  # takes the whole expansion as the name ("Can't recognize 'echo …'").
  suite::tools_command::any_shell_runs_commands::editor
  suite::undo::undo_removes_what_any_shell_made::editor
  # sh syntax or tools in the command (`;`, sleep, seq, $!, trap, sed, mv,
  # rm, tr, printf, sh gen.sh).
  suite::tools_command::runs_in_the_editor_terminal
  suite::tools_command::terminal_timeout_kills_and_releases
  suite::tools_command::runs_locally_with_streamed_output
  suite::tools_command::local_timeout_kills_the_process_group
  suite::tools_command::cancel_kills_
  suite::tools_command::an_unanswered_kill_still_releases_the_terminal
  suite::tools_command::a_zero_timeout_is_the_default
  suite::undo::a_file_name_with_a_newline_stays_on_one_line
  suite::undo::a_moved_file_is_never_lost
  suite::undo::a_recreated_root_is_tracked
  suite::undo::changed_files_are_listed::
  suite::undo::the_walk_fallback_lists_and_undoes_the_same
  suite::undo::undo_restores_command_changes::
  suite::undo::undo_restores_files_the_model_never_read::
  suite::undo::undo_restores_what_a_command_changed_in_a_read_file::
  suite::permissions::always_allow_for_a_command_prefix_is_scoped
  suite::kept_permissions::a_project_permission_outlives_the_session_and_can_be_revoked
  suite::mcp_lifecycle::no_orphans_after_eof_even_through_a_shell_wrapper
  # Symbolic links (Wine's are not Windows').
  suite::undo::undo_does_not_write_through_links
  # The mode table expects full-auto to run commands unasked, which needs
  # the command sandbox; Windows has none, so full-auto asks (README).
  suite::modes::ask::
  suite::modes::accept_edits::
  suite::modes::full_auto::
  # Linux only: /proc (support::process_alive, fdinfo).
  suite::mcp_lifecycle::session_close_stops_the_server_group
  suite::lifecycle::inherited_stdio_stays_blocking
  # Timing: five MCP servers must start in about the time of one; under
  # Wine each .exe start costs seconds.
  suite::mcp::servers_start_concurrently_and_slow_ones_join_later
)

uargs=()
for s in "${unit_skips[@]}"; do uargs+=(--skip "$s"); done
args=()
for s in "${suites[@]}"; do args+=("suite::$s::"); done
for s in "${skips[@]}"; do args+=(--skip "$s"); done

status=0
echo "== wine: unit tests (acp-coder.exe's lib)"
cargo test --locked --target "$target" --lib -- "${uargs[@]}" 2>&1 | tee "$tdir/wine/unit.log" || status=1
echo "== wine: integration tests (${suites[*]})"
cargo test --locked --target "$target" --test all -- "${args[@]}" 2>&1 \
  | tee "$tdir/wine/integration.log" || status=1
end=$(date +%s)

count() { grep -E '^test result:' "$1" | tail -n1 || echo "no result (see $1)"; }
echo "== wine: what ran"
echo "unit tests under Wine:        $(count "$tdir/wine/unit.log")"
echo "integration tests under Wine: $(count "$tdir/wine/integration.log")"
echo "wine-test: build $((built - start)) s, runs $((end - built)) s"
exit $status
