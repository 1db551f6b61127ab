//! Ways out of the command sandbox that an outside review found (SECURITY.md
//! §2): UNIX sockets of outside processes and `TIOCSTI`; metadata writes
//! outside the roots; secrets at rest; files that tools run on their own;
//! a launcher replaced by a command; background commands that keep writing
//! after the switch to read-only. Each test is an attack that worked on the
//! code before it.
//!
//! The "outside" directories live under the target directory: the temp
//! directory (where workspaces live) is each command's own.

use super::common::write_config;
use super::tools_common::{Harness, Via};
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, SpawnOptions, Workspace, full_capabilities,
    no_capabilities,
};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Whether this kernel has Landlock (the sandbox tests skip without it).
fn landlock() -> bool {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .args(["sandbox-exec", "--probe"])
        .output()
        .expect("run the launcher probe");
    if out.status.code() == Some(4) {
        eprintln!(
            "skipping: this kernel has no usable Landlock ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return false;
    }
    true
}

/// A directory outside the roots and outside the temp directory.
fn outside() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sandbox-escape-")
        .tempdir_in(crate::support::outside_temp_base())
        .expect("outside dir")
}

fn caps(via: Via) -> serde_json::Value {
    match via {
        Via::Editor => full_capabilities(),
        Via::Local => no_capabilities(),
    }
}

/// A full-auto session whose HOME, config, data and state directories are
/// under `home` (kept for the test's whole run), with `config` as the
/// config file; every offer to run without the sandbox is refused.
async fn full_auto(via: Via, ws: Workspace, home: &Path, config: &str) -> Harness {
    full_auto_from(via, ws, home, config, None).await
}

async fn full_auto_from(
    via: Via,
    ws: Workspace,
    home: &Path,
    config: &str,
    program: Option<PathBuf>,
) -> Harness {
    write_config(home, config);
    let model = FakeModel::start().await;
    let mut envs = model.agent_env();
    for (k, v) in [
        ("HOME", home.to_path_buf()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("XDG_STATE_HOME", home.join(".local/state")),
    ] {
        envs.push((k.to_owned(), v.display().to_string()));
    }
    let editor = FakeEditor::spawn_with(SpawnOptions {
        envs,
        program,
        ..SpawnOptions::default()
    });
    editor.initialize(caps(via)).await;
    let sid = editor.new_session(ws.path()).await;
    let h = Harness {
        model,
        editor,
        ws,
        sid,
    };
    h.set_mode("full-auto").await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h
}

#[track_caller]
fn refused(h: &Harness, id: &str, what: &str) -> String {
    let r = h.tool_result(id);
    assert!(!r.starts_with("Exit code: 0"), "{what} succeeded: {r}");
    r
}

/// A UNIX socket that a process outside the sandbox listens on (a tmux
/// server, a local daemon), outside the roots: no sandboxed command reaches
/// it, the network on or off. A read-only mount does not stop `connect`.
async fn outside_sockets_are_unreachable(via: Via) {
    if !landlock() {
        return;
    }
    let out = outside();
    let path = out.path().join("daemon.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'touch /pwned'); print('connected')\"",
        path.display()
    );
    for config in ["", "sandbox_network = false\n"] {
        let home = outside();
        let h = full_auto(via, Workspace::new(), home.path(), config).await;
        h.run_commands("s", &[&connect], ("ok", "echo fine")).await;
        let r = refused(&h, "s0", &format!("connect with {config:?}"));
        assert!(!r.contains("\nconnected"), "{config:?}: {r}");
        assert!(h.tool_result("ok").contains("fine"));
    }
    assert!(
        listener.accept().is_err(),
        "a sandboxed command reached the outside socket"
    );
}

#[tokio::test]
async fn outside_unix_sockets_are_unreachable_local() {
    outside_sockets_are_unreachable(Via::Local).await;
}

#[tokio::test]
async fn outside_unix_sockets_are_unreachable_in_editor_terminals() {
    outside_sockets_are_unreachable(Via::Editor).await;
}

/// `TIOCSTI` types into a terminal's input (as root it typed a command
/// into an outside shell): refused whatever the terminal.
#[tokio::test]
async fn typing_into_a_terminal_is_refused() {
    if !landlock() {
        return;
    }
    let home = outside();
    let h = full_auto(Via::Local, Workspace::new(), home.path(), "").await;
    let attack = "python3 -c \"import fcntl, os, termios; m, s = os.openpty(); fcntl.ioctl(s, termios.TIOCSTI, b'x'); print('typed', os.read(m, 1))\"";
    h.run_commands("t", &[attack], ("ok", "echo fine")).await;
    let r = refused(&h, "t0", "TIOCSTI");
    assert!(!r.contains("typed"), "{r}");
    assert!(r.contains("Operation not permitted"), "{r}");
}

/// chmod, chown, utime and setxattr outside the roots: Landlock does not
/// cover them; the read-only mount namespace does.
async fn metadata_outside_is_read_only(via: Via) {
    if !landlock() {
        return;
    }
    use std::os::unix::fs::MetadataExt as _;
    let out = outside();
    let f = out.path().join("f.txt");
    let d = out.path().join("d");
    std::fs::write(&f, "x").unwrap();
    std::fs::create_dir(&d).unwrap();
    let before = (
        std::fs::metadata(&f).unwrap(),
        std::fs::metadata(&d).unwrap(),
    );
    let (fp, dp) = (f.display(), d.display());
    let attacks = [
        format!("chmod 000 {fp}"),
        format!("chmod 777 {dp}"),
        format!("chown \"$(id -u):$(id -g)\" {fp}"),
        format!("touch -m -d 2001-01-01 {fp}"),
        format!("python3 -c \"import os; os.setxattr('{fp}', 'user.planted', b'1')\""),
    ];
    let home = outside();
    let h = full_auto(via, Workspace::new(), home.path(), "").await;
    h.run_commands(
        "m",
        &attacks,
        (
            "ok",
            "touch inside.txt && chmod 600 inside.txt && echo fine",
        ),
    )
    .await;
    for (i, a) in attacks.iter().enumerate() {
        refused(&h, &format!("m{i}"), a);
    }
    let after = (
        std::fs::metadata(&f).unwrap(),
        std::fs::metadata(&d).unwrap(),
    );
    assert_eq!(before.0.mode(), after.0.mode());
    assert_eq!(before.1.mode(), after.1.mode());
    assert_eq!(before.0.mtime(), after.0.mtime());
    assert_eq!(before.0.ctime(), after.0.ctime(), "a change of metadata");
    assert!(h.tool_result("ok").contains("fine"), "inside still works");
}

#[tokio::test]
async fn metadata_outside_the_roots_cannot_change_local() {
    metadata_outside_is_read_only(Via::Local).await;
}

#[tokio::test]
async fn metadata_outside_the_roots_cannot_change_in_editor_terminals() {
    metadata_outside_is_read_only(Via::Editor).await;
}

/// Secrets at rest: the saved key in the config file, MCP OAuth tokens,
/// another project's session log, `~/.ssh` and `~/.aws`, and a path the
/// config adds. Read through `rev` (which redaction never sees through),
/// each is denied, and the model is told why and what the user can do.
#[tokio::test]
async fn secrets_at_rest_are_unreadable() {
    if !landlock() {
        return;
    }
    const MARK: &str = "MARKER-OF-A-SECRET-4711";
    let home = outside();
    let h_path = home.path();
    let extra = outside();
    let files = [
        h_path.join(".ssh/id_rsa"),
        h_path.join(".aws/credentials"),
        h_path.join(".local/share/acp-coder/mcp-oauth/example.json"),
        h_path.join(".local/share/acp-coder/sessions/other-project.jsonl"),
        extra.path().join("vault.txt"),
    ];
    for f in &files {
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, format!("{MARK}\n")).unwrap();
    }
    let config = format!(
        "# {MARK}\nsandbox_unreadable = [\"{}\"]\n",
        extra.path().join("vault.txt").display()
    );
    let h = full_auto(Via::Local, Workspace::new(), h_path, &config).await;
    let mut reads: Vec<String> = files
        .iter()
        .map(|f| format!("rev {}", f.display()))
        .collect();
    reads.push(format!(
        "rev {}",
        h_path.join(".config/acp-coder/config.toml").display()
    ));
    reads.push(format!("ls {}", h_path.join(".ssh").display()));
    h.run_commands("r", &reads, ("ok", "echo fine")).await;
    let reversed: String = MARK.chars().rev().collect();
    for (i, read) in reads.iter().enumerate() {
        let r = refused(&h, &format!("r{i}"), read);
        assert!(!r.contains(&reversed) && !r.contains(MARK), "{read}: {r}");
        assert!(r.contains("Permission denied"), "{read}: {r}");
    }
    let r = h.tool_result("r0");
    assert!(
        r.contains("is unreadable to sandboxed commands")
            && r.contains("without the sandbox when asked"),
        "{r}"
    );
    let asked = &h.editor.permission_requests()[0].params;
    let text = asked["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(
        text.contains("is unreadable to sandboxed commands"),
        "{text}"
    );
    assert!(h.tool_result("ok").contains("fine"));
}

/// Files that something else runs on its own stay read-only for commands:
/// editor tasks and settings, direnv, dev containers, the agent's prompt
/// templates, the `core.hooksPath` directory; one that does not exist yet
/// (`.cargo/config.toml`) is removed if a command creates it.
async fn files_tools_run_are_read_only(via: Via) {
    if !landlock() {
        return;
    }
    let protected = [
        ".vscode/tasks.json",
        ".zed/settings.json",
        ".envrc",
        ".devcontainer/devcontainer.json",
        ".acp-coder/commands/review.md",
        "githooks/pre-commit",
    ];
    let mut ws = Workspace::builder().file("a.txt", "a\n");
    for p in protected {
        ws = ws.file(p, "original\n");
    }
    let ws = ws.git().build();
    let git = std::process::Command::new("git")
        .args(["config", "core.hooksPath", "githooks"])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(git.success());
    let home = outside();
    let h = full_auto(via, ws, home.path(), "").await;
    let mut attacks: Vec<String> = protected
        .iter()
        .map(|p| format!("echo evil >> {p}"))
        .collect();
    attacks.push(
        "mkdir -p .cargo && echo '[build]\nrustc-wrapper = \"/tmp/x\"' > .cargo/config.toml".into(),
    );
    h.run_commands("w", &attacks, ("ok", "echo fine >> a.txt"))
        .await;
    for (i, p) in protected.iter().enumerate() {
        refused(&h, &format!("w{i}"), p);
        assert_eq!(
            std::fs::read_to_string(h.ws.join(p)).unwrap(),
            "original\n",
            "{p}"
        );
    }
    assert!(
        !h.ws.join(".cargo/config.toml").exists(),
        "a created .cargo/config.toml stayed"
    );
    let created = h.tool_result(&format!("w{}", protected.len()));
    assert!(created.contains(".cargo/config.toml"), "{created}");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("a.txt")).unwrap(),
        "a\nfine\n"
    );
}

#[tokio::test]
async fn files_tools_run_are_read_only_for_commands_local() {
    files_tools_run_are_read_only(Via::Local).await;
}

#[tokio::test]
async fn files_tools_run_are_read_only_for_commands_in_editor_terminals() {
    files_tools_run_are_read_only(Via::Editor).await;
}

/// The same files through the file tools: in accept-edits, writing
/// `.cargo/config.toml`, husky's hooks or the `core.hooksPath` directory asks.
#[tokio::test]
async fn file_tools_ask_before_writing_files_tools_run() {
    let ws = Workspace::builder().file("a.txt", "a\n").git().build();
    let git = std::process::Command::new("git")
        .args(["config", "core.hooksPath", "tools/hooks"])
        .current_dir(ws.path())
        .status()
        .unwrap();
    assert!(git.success());
    let h = Harness::start(Via::Local, ws).await;
    h.set_mode("accept-edits").await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let paths = [
        ".cargo/config.toml",
        ".husky/pre-commit",
        "tools/hooks/pre-push",
        ".zed/debug.json",
        ".pre-commit-config.yaml",
    ];
    let calls: Vec<(String, serde_json::Value)> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                format!("f{i}"),
                json!({"path": p, "content": "#!/bin/sh\ntouch /tmp/pwned\n"}),
            )
        })
        .collect();
    let calls: Vec<(&str, &str, serde_json::Value)> = calls
        .iter()
        .map(|(id, a)| (id.as_str(), "write_file", a.clone()))
        .collect();
    h.run_calls(&calls).await;
    assert_eq!(h.editor.permission_requests().len(), paths.len());
    for p in paths {
        assert!(!h.ws.join(p).exists(), "{p} written without asking");
    }
}

/// A command renamed a script over the agent's binary (inside a writable
/// root); the next "sandboxed" command then ran that script unconfined.
/// The agent runs the binary it opened at start (local commands), or
/// refuses (the editor is given a path, which no longer holds the agent).
async fn a_replaced_launcher_is_never_run(via: Via) {
    if !landlock() {
        return;
    }
    let out = outside();
    let pwned = out.path().join("pwned");
    // The agent's binary inside the project: a hard link on the same disk.
    let ws = Workspace::builder().outside_temp().build();
    let exe = ws.join("acp-coder");
    std::fs::hard_link(env!("CARGO_BIN_EXE_acp-coder"), &exe).unwrap();
    let fake = format!(
        "#!/bin/sh\necho unconfined > {}\nwhile [ \"$1\" != -- ]; do shift; done; shift; exec \"$@\"\n",
        pwned.display()
    );
    let ws_path = ws.path().to_path_buf();
    let home = outside();
    let h = full_auto_from(via, ws, home.path(), "", Some(exe.clone())).await;
    let swap = format!("printf '%s' '{fake}' > evil && chmod +x evil && mv evil acp-coder");
    let write_outside = format!("echo x > {}", out.path().join("escaped").display());
    h.run_commands(
        "x",
        &[swap.as_str(), write_outside.as_str()],
        ("ok", "true"),
    )
    .await;
    assert!(
        h.tool_result("x0").starts_with("Exit code: 0"),
        "{}",
        h.tool_result("x0")
    );
    assert!(
        std::fs::read_to_string(ws_path.join("acp-coder"))
            .unwrap()
            .contains("unconfined")
    );
    assert!(!pwned.exists(), "the replaced launcher ran");
    assert!(!out.path().join("escaped").exists(), "written outside");
    let r = h.tool_result("x1");
    assert!(!r.starts_with("Exit code: 0"), "{r}");
    if matches!(via, Via::Editor) {
        assert!(r.contains("was replaced"), "{r}");
    }
}

#[tokio::test]
async fn a_replaced_launcher_is_never_run_local() {
    a_replaced_launcher_is_never_run(Via::Local).await;
}

#[tokio::test]
async fn a_replaced_launcher_is_never_run_in_editor_terminals() {
    a_replaced_launcher_is_never_run(Via::Editor).await;
}

/// After `session/set_mode` to read-only a background command kept
/// appending to a file. It is stopped, and the user is told. The writer
/// holds a lock on a file: the test takes it once the writer is gone.
async fn read_only_stops_background_commands(via: Via) {
    let home = outside();
    let h = full_auto(via, Workspace::new(), home.path(), "").await;
    let lock = h.ws.join("lock");
    std::fs::write(&lock, "").unwrap();
    let writer =
        "flock lock sh -c 'touch started; while :; do echo x >> grow.txt; sleep 0.05; done'";
    h.run_tool(
        "bg",
        "run_command",
        json!({"command": writer, "background": true}),
    )
    .await;
    let started = h.ws.join("started");
    crate::support::eventually("the writer started", || started.exists()).await;
    h.set_mode("read-only").await;
    let file = std::fs::File::open(&lock).unwrap();
    crate::support::eventually("the writer is gone and its lock free", || {
        file.try_lock().is_ok()
    })
    .await;
    let told = h.editor.agent_text(&h.sid);
    assert!(
        told.contains("stopped 1 background command") && told.contains("grow.txt"),
        "{told}"
    );
}

#[tokio::test]
async fn read_only_stops_background_commands_local() {
    read_only_stops_background_commands(Via::Local).await;
}

#[tokio::test]
async fn read_only_stops_background_commands_in_editor_terminals() {
    read_only_stops_background_commands(Via::Editor).await;
}
