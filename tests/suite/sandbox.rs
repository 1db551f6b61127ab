//! The command sandbox (issue 14, SECURITY.md §1): in full-auto, commands
//! run through the agent's launcher with Landlock and a private mount
//! namespace. Every bypass of the old command-line check fails to write
//! outside the roots; `.git/config` and `.git/hooks/` stay read-only; editor
//! terminals are confined the same way; the network can be turned off; a
//! denied command may be run again without the sandbox if the user says so;
//! commands die with the agent even when it is killed with SIGKILL.
//!
//! The "outside" directory lives under the target directory: the temp
//! directory (where workspaces live) is writable by design.

use super::common::write_config;
use super::tools_common::{Harness, Via};
use crate::support::{
    PermissionDecision, Workspace, full_capabilities, no_capabilities, process_alive, wait_gone,
    wait_pid_file,
};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Whether this kernel has Landlock; prints why not when it does not. The
/// namespace step is not optional: where Landlock exists the tests run.
fn landlock() -> bool {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .args(["sandbox-exec", "--probe"])
        .output()
        .expect("run the launcher probe");
    // 4: no Landlock (see tools::sandbox::launcher::PROBE_NO_LANDLOCK).
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
        .prefix("sandbox-outside-")
        .tempdir_in(crate::support::outside_temp_base())
        .expect("outside dir")
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A full-auto session whose HOME is `home` (so that `cd` and `~` lead
/// there), with `config` as the config file.
async fn full_auto(via: Via, ws: Workspace, home: &Path, config: &str) -> Harness {
    let caps = match via {
        Via::Editor => full_capabilities(),
        Via::Local => no_capabilities(),
    };
    full_auto_for(caps, ws, home, config).await
}

/// [`full_auto`] for a client with these capabilities.
async fn full_auto_for(
    caps: serde_json::Value,
    ws: Workspace,
    home: &Path,
    config: &str,
) -> Harness {
    let config_home = tempfile::tempdir_in(crate::support::outside_temp_base()).unwrap();
    write_config(config_home.path(), config);
    let xdg = config_home.path().join(".config");
    let env = vec![
        ("HOME".to_owned(), home.display().to_string()),
        ("XDG_CONFIG_HOME".to_owned(), xdg.display().to_string()),
    ];
    let h = Harness::start_with(caps, ws, "", env).await;
    // The config was read at start-up; the directory may go.
    drop(config_home);
    h.set_mode("full-auto").await;
    h
}

/// The first path component of `p` with its second character replaced by `?`.
fn globbed(p: &Path) -> (String, String) {
    let s = p.display().to_string();
    let mut parts = s[1..].splitn(2, '/');
    let top = parts.next().unwrap();
    let rest = parts.next().unwrap_or_default().to_owned();
    let glob: String = top
        .chars()
        .enumerate()
        .map(|(i, c)| if i == 1 { '?' } else { c })
        .collect();
    (format!("/{glob}"), rest)
}

/// The login name and home directory of the user running the tests.
fn me() -> (String, PathBuf) {
    let out = std::process::Command::new("sh")
        .args(["-c", "id -un; getent passwd \"$(id -un)\" | cut -d: -f6"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    (
        lines.next().unwrap_or_default().to_owned(),
        PathBuf::from(lines.next().unwrap_or("/nonexistent")),
    )
}

async fn bypasses(via: Via) {
    if !landlock() {
        return;
    }
    let out = outside();
    let o = out.path().display().to_string();
    let (glob_top, glob_rest) = globbed(out.path());
    let half = o.len() / 2;
    let (user, user_home) = me();
    let marker = format!("acp-coder-sandbox-test-{}", std::process::id());
    let commands = [
        // A backslash-newline inside an absolute path.
        format!("echo x > {}\\\n{}/backslash.txt", &o[..half], &o[half..]),
        // A glob in the top-level directory name.
        format!("cd {glob_top} && echo x > {glob_rest}/glob.txt"),
        // An option glued to its path.
        format!("echo x | sort -o{o}/sort.txt"),
        // `~user`.
        format!("echo x > ~{user}/{marker}"),
        // `cd` with no argument (HOME is the outside directory).
        "cd && echo x > cd.txt".to_owned(),
        // Command substitution.
        format!("echo x > $(printf %s {o})/subst.txt"),
        // eval.
        format!("eval 'echo x > {o}/eval.txt'"),
        // A program writing by itself.
        format!("python3 -c \"open('{o}/py.txt', 'w').write('x')\""),
    ];
    let ws = Workspace::new();
    let h = full_auto(via, ws, out.path(), "").await;
    // Each denial offers to run the command without the sandbox: refuse.
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    h.run_commands("c", &commands, ("inside", "echo fine > inside.txt"))
        .await;

    assert_eq!(
        names_in(out.path()),
        Vec::<String>::new(),
        "written outside"
    );
    assert!(!user_home.join(&marker).exists(), "written in ~{user}");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("inside.txt")).unwrap(),
        "fine\n"
    );
    for (i, c) in commands.iter().enumerate() {
        let result = h.tool_result(&format!("c{i}"));
        assert!(
            !result.starts_with("Exit code: 0"),
            "{c:?} succeeded: {result}"
        );
        assert!(
            result.contains("declined to run it without the sandbox"),
            "{c:?}: {result}"
        );
    }
    // No command asked before running: only the offers to run unsandboxed.
    let asked: Vec<String> = h
        .editor
        .permission_requests()
        .iter()
        .map(|p| {
            let ids: Vec<&str> = p.params["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["optionId"].as_str().unwrap())
                .collect();
            assert_eq!(ids, ["run-unsandboxed", "keep-sandboxed"]);
            p.params["toolCall"]["toolCallId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let expected: Vec<String> = (0..commands.len()).map(|i| format!("c{i}")).collect();
    assert_eq!(asked, expected);
}

#[tokio::test]
async fn bypasses_of_the_old_check_cannot_write_outside_local() {
    bypasses(Via::Local).await;
}

#[tokio::test]
async fn bypasses_of_the_old_check_cannot_write_outside_in_editor_terminals() {
    bypasses(Via::Editor).await;
}

async fn git_protected(via: Via) {
    if !landlock() {
        return;
    }
    let home = outside();
    let ws = Workspace::builder().file("a.txt", "a\n").git().build();
    let config = std::fs::read_to_string(ws.join(".git/config")).unwrap();
    let h = full_auto(via, ws, home.path(), "").await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let attacks = [
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "echo '[core] fsmonitor = evil' >> .git/config",
        "echo evil > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
        "rm -rf .git/hooks",
        "mv .git .git-aside && mkdir .git",
        "mv .git/config .git/config.old",
        "cd .git && echo evil >> config",
        // A redirect of git's common directory (and so of its config).
        "mkdir -p evil-common && echo $PWD/evil-common > .git/commondir; false",
        // The agent's own view of the files, where nothing is read-only.
        "A=$(awk '/^PPid/{print $2}' /proc/$PPID/status); echo evil >> /proc/$A/root$PWD/.git/config",
    ];
    let ok = "echo b >> a.txt && git add a.txt && git commit -qm b && git log --oneline | wc -l";
    h.run_commands("g", &attacks, ("ok", ok)).await;
    assert_eq!(
        std::fs::read_to_string(h.ws.join(".git/config")).unwrap(),
        config
    );
    assert!(!h.ws.join(".git/hooks/post-checkout").exists());
    assert!(h.ws.join(".git/hooks").is_dir());
    assert!(!h.ws.join(".git-aside").exists());
    assert!(!h.ws.join(".git/commondir").exists());
    for (i, attack) in attacks.iter().enumerate() {
        let r = h.tool_result(&format!("g{i}"));
        assert!(!r.starts_with("Exit code: 0"), "{attack}: {r}");
    }
    // Other project files, and git's own work (objects, index, refs), are writable.
    let ok = h.tool_result("ok");
    assert!(ok.starts_with("Exit code: 0"), "{ok}");
    assert!(ok.contains('2'), "{ok}");
    assert_eq!(
        std::fs::read_to_string(h.ws.join("a.txt")).unwrap(),
        "a\nb\n"
    );
}

/// An outside review's attack: with `.git` a file naming a git directory in
/// the project (`git init --separate-git-dir`), the sandbox left that
/// directory's config and hooks writable, and the user's next `git status`
/// ran a planted `core.fsmonitor`. They are read-only like `.git/`'s.
async fn separate_git_dir_protected(via: Via) {
    if !landlock() {
        return;
    }
    let home = outside();
    let ws = Workspace::builder().file("a.txt", "a\n").build();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(ws.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", ws.path())
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
    };
    git(&["init", "-q", "-b", "main", "--separate-git-dir", "gd"]);
    git(&["config", "user.email", "test@example.invalid"]);
    git(&["config", "user.name", "Test"]);
    git(&["add", "a.txt"]);
    git(&["commit", "-q", "-m", "a"]);
    let config = std::fs::read_to_string(ws.join("gd/config")).unwrap();
    let h = full_auto(via, ws, home.path(), "").await;
    h.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let attacks = [
        "echo '[core] fsmonitor = evil' >> gd/config",
        "echo evil > gd/hooks/pre-commit && chmod +x gd/hooks/pre-commit",
        "git config core.hooksPath evil-hooks",
        "mv gd gd-aside && mkdir gd",
        "echo 'gitdir: evil' > .git",
        "mkdir -p evil-common && echo $PWD/evil-common > gd/commondir; false",
    ];
    let ok = "echo b >> a.txt && git add a.txt && git commit -qm b && git log --oneline | wc -l";
    h.run_commands("g", &attacks, ("ok", ok)).await;
    assert_eq!(
        std::fs::read_to_string(h.ws.join("gd/config")).unwrap(),
        config
    );
    assert!(!h.ws.join("gd/hooks/pre-commit").exists());
    assert!(!h.ws.join("gd-aside").exists());
    assert!(!h.ws.join("gd/commondir").exists());
    assert!(
        std::fs::read_to_string(h.ws.join(".git"))
            .unwrap()
            .contains("gd")
    );
    for (i, attack) in attacks.iter().enumerate() {
        let r = h.tool_result(&format!("g{i}"));
        assert!(!r.starts_with("Exit code: 0"), "{attack}: {r}");
    }
    let ok = h.tool_result("ok");
    assert!(ok.starts_with("Exit code: 0") && ok.contains('2'), "{ok}");
}

#[tokio::test]
async fn a_separate_git_dir_is_read_only_local() {
    separate_git_dir_protected(Via::Local).await;
}

#[tokio::test]
async fn a_separate_git_dir_is_read_only_in_editor_terminals() {
    separate_git_dir_protected(Via::Editor).await;
}

#[tokio::test]
async fn git_config_and_hooks_are_read_only_local() {
    git_protected(Via::Local).await;
}

#[tokio::test]
async fn git_config_and_hooks_are_read_only_in_editor_terminals() {
    git_protected(Via::Editor).await;
}

#[tokio::test]
async fn editor_terminals_start_the_launcher() {
    if !landlock() {
        return;
    }
    let home = outside();
    let h = full_auto(Via::Editor, Workspace::new(), home.path(), "").await;
    h.run_tool("t", "run_command", json!({"command": "echo hi"}))
        .await;
    let create = h
        .editor
        .terminal_calls()
        .into_iter()
        .find(|c| c.method == "terminal/create")
        .unwrap();
    assert_eq!(create.params["command"], env!("CARGO_BIN_EXE_acp-coder"));
    let args: Vec<String> = create.params["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(args[0], "sandbox-exec");
    assert!(
        args.windows(2)
            .any(|w| w[0] == "--root" && w[1] == h.ws.path().display().to_string()),
        "{args:?}"
    );
    assert_eq!(args[args.len() - 4..], ["--", "sh", "-c", "echo hi"]);
    assert!(h.tool_result("t").contains("hi"));
}

async fn connect(h: &Harness, id: &str, port: u16) -> String {
    let py = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\""
    );
    h.run_tool(id, "run_command", json!({"command": py})).await
}

#[tokio::test]
async fn network_off_blocks_a_loopback_connect() {
    if !landlock() {
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let home = outside();

    let on = full_auto(Via::Local, Workspace::new(), home.path(), "").await;
    let r = connect(&on, "on", port).await;
    assert!(r.contains("connected"), "network on: {r}");

    let off = full_auto(
        Via::Local,
        Workspace::new(),
        home.path(),
        "sandbox_network = false\n",
    )
    .await;
    off.editor
        .set_default_permission(Some(PermissionDecision::RejectOnce));
    let r = connect(&off, "off", port).await;
    assert!(
        !r.contains("connected") && !r.starts_with("Exit code: 0"),
        "network off: {r}"
    );
    // Only the one connection of the network-on session arrived.
    listener.set_nonblocking(true).unwrap();
    let mut accepted = 0;
    while listener.accept().is_ok() {
        accepted += 1;
    }
    assert_eq!(accepted, 1);
}

#[tokio::test]
async fn a_denied_command_runs_again_unsandboxed_when_the_user_allows() {
    if !landlock() {
        return;
    }
    let out = outside();
    let target = out.path().join("allowed.txt");
    let h = full_auto(Via::Local, Workspace::new(), out.path(), "").await;
    h.editor.push_permission(PermissionDecision::AllowOnce);
    let r = h
        .run_tool(
            "w",
            "run_command",
            json!({"command": format!("echo x > {}", target.display())}),
        )
        .await;
    assert_eq!(h.editor.permission_requests().len(), 1);
    let ask = &h.editor.permission_requests()[0].params;
    let text = ask["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("without the sandbox"), "{text}");
    // Outside the roots everything is read-only (the mount namespace).
    assert!(text.contains("Read-only file system"), "{text}");
    assert!(
        r.contains("without the sandbox") && r.contains("Exit code: 0"),
        "{r}"
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
    // No notice for a client that did not opt in.
    assert!(h.editor.updates_of_kind(&h.sid, "notice").is_empty());
}

/// With `session.notices`, a command the sandbox denied is also a warning
/// notice (the question and the result stay as they were).
#[tokio::test]
async fn a_denied_command_is_a_notice_for_a_client_that_shows_them() {
    if !landlock() {
        return;
    }
    let out = outside();
    let target = out.path().join("denied.txt");
    let mut caps = no_capabilities();
    caps["session"] = json!({"notices": {}});
    let h = full_auto_for(caps, Workspace::new(), out.path(), "").await;
    h.editor.push_permission(PermissionDecision::RejectOnce);
    let r = h
        .run_tool(
            "w",
            "run_command",
            json!({"command": format!("echo x > {}", target.display())}),
        )
        .await;
    assert!(r.contains("declined to run it without the sandbox"), "{r}");
    assert!(!target.exists());
    let notices = h.editor.updates_of_kind(&h.sid, "notice");
    assert_eq!(notices.len(), 1, "{notices:#?}");
    assert_eq!(notices[0]["severity"], "warning");
    assert_eq!(notices[0]["title"], "The sandbox denied a command's access");
    let description = notices[0]["description"].as_str().unwrap();
    assert!(description.contains("denied.txt"), "{description}");
    // A command that fails otherwise is no notice.
    let r = h
        .run_tool("f", "run_command", json!({"command": "exit 3"}))
        .await;
    assert!(r.contains("Exit code: 3"), "{r}");
    assert_eq!(h.editor.updates_of_kind(&h.sid, "notice").len(), 1);
}

/// An outside review read an MCP server's token from `/proc/PID/environ`
/// in a full-auto command (the agent's own environment was safe; its other
/// children's was not) and sent it to the model reversed, past the
/// redaction. Commands now have their own `/proc`: no process outside the
/// command's own is there to read, the agent included.
async fn other_processes_are_invisible(via: Via) {
    if !landlock() {
        return;
    }
    const TOKEN: &str = "ghp_0123456789abcdefSECRET";
    /// Killed however the test ends.
    struct Holder(std::process::Child);
    impl Drop for Holder {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let holder = Holder(
        std::process::Command::new("sleep")
            .arg("1000")
            .env("GITHUB_PERSONAL_ACCESS_TOKEN", TOKEN)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start a process holding a token"),
    );
    let pid = holder.0.id();
    let home = outside();
    let h = full_auto(via, Workspace::new(), home.path(), "").await;
    let agent = h.editor.pid().expect("the agent's pid");
    let attacks = [
        format!("cat /proc/{pid}/environ > env && tr '\\0' '\\n' < env | rev"),
        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null | grep -a GITHUB | rev; false".to_owned(),
        format!("ls /proc/{agent}/ && cat /proc/{agent}/cmdline"),
    ];
    let census = "ls /proc | grep -cE '^[0-9]+$'";
    h.run_commands("p", &attacks, ("census", census)).await;
    let reversed: String = TOKEN.chars().rev().collect();
    for (i, attack) in attacks.iter().enumerate() {
        let r = h.tool_result(&format!("p{i}"));
        assert!(!r.starts_with("Exit code: 0"), "{attack}: {r}");
        assert!(
            !r.contains(&reversed) && !r.contains(TOKEN),
            "{attack}: {r}"
        );
    }
    // The launcher's namespace holds the shell, `ls`, `grep` and the holder.
    let census = h.tool_result("census");
    let count: usize = census
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next()
        .unwrap_or_else(|| panic!("{census}"));
    assert!(count <= 6, "{census}");
    drop(holder);
}

#[tokio::test]
async fn other_processes_are_invisible_local() {
    other_processes_are_invisible(Via::Local).await;
}

#[tokio::test]
async fn other_processes_are_invisible_in_editor_terminals() {
    other_processes_are_invisible(Via::Editor).await;
}

/// The same review: a process that leaves the command's process group
/// (`setsid`, a double fork) outlived the command and the agent. In the
/// command's PID namespace it ends with the command. The daemon holds a lock
/// on a file; the test takes the lock once the daemon is gone.
#[tokio::test]
async fn setsid_daemons_end_with_the_command() {
    if !landlock() {
        return;
    }
    let home = outside();
    let h = full_auto(Via::Local, Workspace::new(), home.path(), "").await;
    let lock = h.ws.join("lock");
    std::fs::write(&lock, "").unwrap();
    // The command returns once the daemon holds the lock.
    let command = "setsid sh -c 'exec flock lock sleep 1000' </dev/null >/dev/null 2>&1 & \
                   until ! flock -n lock true; do sleep 0.01; done; echo held";
    h.run_commands("d", &[command], ("ok", "true")).await;
    assert!(
        h.tool_result("d0").contains("held"),
        "{}",
        h.tool_result("d0")
    );
    let file = std::fs::File::open(&lock).unwrap();
    crate::support::eventually("the daemon is gone and its lock free", || {
        file.try_lock().is_ok()
    })
    .await;
}

#[tokio::test]
async fn commands_die_with_the_agent_even_on_sigkill() {
    let home = outside();
    let mut h = full_auto(Via::Local, Workspace::new(), home.path(), "").await;
    let prompt = {
        h.model.push(crate::support::Reply::tool_calls([(
            "s",
            "run_command",
            json!({"command": "sleep 1000 & echo $! > pid.tmp && mv pid.tmp pid; wait"}),
        )]));
        h.editor.start_prompt(&h.sid, "go").await
    };
    let pid = wait_pid_file(&h.ws.join("pid")).await;
    assert!(process_alive(pid));
    h.editor.kill().await;
    wait_gone(pid, "the sleep, after the agent was killed").await;
    drop(prompt);
}

#[tokio::test]
async fn exec_without_a_terminal_refuses_the_unsandboxed_rerun() {
    if !landlock() {
        return;
    }
    let out = outside();
    let target = out.path().join("exec.txt");
    let model = crate::support::FakeModel::with_replies([
        crate::support::Reply::tool_call(
            "c",
            "run_command",
            json!({"command": format!("echo x > {}", target.display())}),
        ),
        crate::support::Reply::text("done"),
    ])
    .await;
    let ws = Workspace::new();
    let run = super::cli_common::CliEnv::with_model(&model)
        .cwd(ws.path())
        .run(&["exec", "--json", "--mode", "full-auto", "write outside"])
        .await;
    // 7: the turn ended, but a question it asked (the rerun) was refused.
    run.assert_code(7);
    assert!(!target.exists());
    let events: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let perm = events
        .iter()
        .find(|e| e["type"] == "permission")
        .expect("the offer to run without the sandbox");
    assert_eq!(perm["decision"], "refused_no_terminal");
    let requests = model.chat_requests();
    let tool = requests[1].last_message().unwrap();
    let text = tool["content"].as_str().unwrap();
    assert!(
        text.contains("declined to run it without the sandbox"),
        "{text}"
    );
}

// ------------------------------------------------------------ A2A guests

/// Answers a task waiting for input with `option_id`, as an A2A client.
async fn answer_as_guest(
    s: &super::a2a::Served,
    task: &serde_json::Value,
    option_id: &str,
) -> serde_json::Value {
    use super::a2a_http::{post, rpc};
    let message = json!({"message": {"role": "ROLE_USER", "messageId": format!("a-{option_id}"),
        "taskId": task["id"], "contextId": task["contextId"],
        "parts": [{"data": {"optionId": option_id}}]}});
    let (_, b) = post(s, Some(s.token.as_str()), rpc("SendMessage", message)).await;
    b["result"]["task"].clone()
}

/// The option ids a task waiting for input offers.
fn offered(task: &serde_json::Value) -> Vec<String> {
    task["status"]["message"]["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["data"]["options"].as_array())
        .flatten()
        .filter_map(|o| o["optionId"].as_str().map(str::to_owned))
        .collect()
}

/// An A2A client is a guest: it is never offered "Run once without the
/// sandbox" for a command the sandbox stopped, and naming that option
/// does not run it unconfined. It used to be asked, and its answer wrote
/// outside the served directory.
#[tokio::test]
async fn a_guest_is_never_offered_a_run_outside_the_sandbox() {
    use super::a2a_http::{post, rpc, user_message};
    if !landlock() {
        return;
    }
    let model = crate::support::FakeModel::start().await;
    let ws = Workspace::new();
    let out = outside();
    let escaped = out.path().join("escaped.txt");
    let s = super::a2a::serve(&model, ws.path(), &["--mode", "full-auto"], &[]).await;
    model.push(crate::support::Reply::tool_call(
        "c1",
        "run_command",
        json!({"command": format!("echo x > {}", escaped.display())}),
    ));
    model.push(crate::support::Reply::text("done"));
    let (_, b) = post(
        &s,
        Some(s.token.as_str()),
        rpc("SendMessage", user_message("write it")),
    )
    .await;
    let mut task = b["result"]["task"].clone();
    let mut offers = Vec::new();
    // The attack: whatever is asked, answer "run without the sandbox".
    while task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" && offers.len() < 3 {
        offers.extend(offered(&task));
        task = answer_as_guest(&s, &task, "run-unsandboxed").await;
    }
    assert!(!escaped.exists(), "the guest's command wrote outside");
    assert!(
        !offers.iter().any(|o| o == "run-unsandboxed"),
        "offered: {offers:?}"
    );
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{task}");
    let result = model.tool_result_for("c1").unwrap_or_default();
    assert!(result.contains("never run without the sandbox"), "{result}");
}

/// In ask mode, a command an A2A guest allows still runs in the sandbox
/// (a command the user allows runs as allowed): the write outside the
/// served directory is denied. It used to run unconfined.
#[tokio::test]
async fn a_command_a_guest_allows_still_runs_in_the_sandbox() {
    use super::a2a_http::{post, rpc, user_message};
    if !landlock() {
        return;
    }
    let model = crate::support::FakeModel::start().await;
    let ws = Workspace::new();
    let out = outside();
    let escaped = out.path().join("allowed.txt");
    let s = super::a2a::serve(&model, ws.path(), &["--mode", "ask"], &[]).await;
    model.push(crate::support::Reply::tool_call(
        "c1",
        "run_command",
        json!({"command": format!("echo x > {}; echo inside > inside.txt", escaped.display())}),
    ));
    model.push(crate::support::Reply::text("done"));
    let (_, b) = post(
        &s,
        Some(s.token.as_str()),
        rpc("SendMessage", user_message("write it")),
    )
    .await;
    let task = b["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "the command asks: {task}"
    );
    let task = answer_as_guest(&s, &task, "allow-once").await;
    assert_eq!(
        task["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{:?} {task}",
        offered(&task)
    );
    assert!(!escaped.exists(), "the allowed command ran unconfined");
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap_or_default(),
        "inside\n"
    );
}
