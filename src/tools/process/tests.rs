use super::registry::Registry;
use super::*;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::sync::Arc;
use std::sync::Mutex;

fn spec(command: &str) -> CommandSpec {
    CommandSpec {
        command: command.to_owned(),
        cwd: std::env::temp_dir(),
        env: Vec::new(),
        env_remove: Vec::new(),
        timeout: Duration::from_secs(20),
        output_limit: 1 << 20,
        sandbox: None,
        stdin: None,
    }
}

async fn run(spec: CommandSpec) -> CommandResult {
    run_local(spec, CancellationToken::new(), |_| {})
        .await
        .expect("spawn")
}

/// Dead = no /proc entry, or a zombie waiting for its (new) parent.
fn is_dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => {
            let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
            matches!(state.and_then(|s| s.chars().next()), Some('Z' | 'X'))
        }
    }
}

/// SIGKILL is delivered asynchronously; a killed process is dead "soon".
/// A generous bound, far below the processes' own 30 s lifetime.
async fn assert_dies(pid: i32) {
    let give_up = Instant::now() + Duration::from_secs(5);
    while !is_dead(pid) {
        assert!(Instant::now() < give_up, "process {pid} is still alive");
        sleep(Duration::from_millis(10)).await;
    }
}

fn pid_in(output: &str) -> i32 {
    output
        .lines()
        .find_map(|l| l.strip_prefix("pid="))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no pid in {output:?}"))
}

#[tokio::test]
async fn echo_and_exit_zero() {
    let r = run(spec("echo hello")).await;
    assert_eq!(
        r,
        CommandResult {
            exit_code: Some(0),
            output: "hello\n".into(),
            stdout: "hello\n".into(),
            ..CommandResult::default()
        }
    );
}

#[tokio::test]
async fn nonzero_exit_code() {
    let r = run(spec("echo failing; exit 3")).await;
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.signal, None);
    assert_eq!(r.output, "failing\n");
}

#[tokio::test]
async fn stderr_is_captured_with_stdout() {
    let r = run(spec("echo to-out; echo to-err >&2; echo more-out")).await;
    assert_eq!(r.exit_code, Some(0));
    for needle in ["to-out\n", "to-err\n", "more-out\n"] {
        assert!(
            r.output.contains(needle),
            "{needle:?} missing in {:?}",
            r.output
        );
    }
    assert_eq!(r.output.len(), "to-out\nto-err\nmore-out\n".len());
}

#[tokio::test]
async fn killed_by_signal_is_named() {
    let r = run(spec("kill -KILL $$")).await;
    assert_eq!((r.exit_code, r.signal.as_deref()), (None, Some("SIGKILL")));
    let r = run(spec("kill -USR1 $$")).await;
    assert_eq!((r.exit_code, r.signal.as_deref()), (None, Some("SIGUSR1")));
    assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
    assert!(!r.timed_out && !r.cancelled);
}

#[tokio::test]
async fn env_is_added_and_secrets_removed() {
    static SET: std::sync::Once = std::sync::Once::new();
    // SAFETY: set once, under a name nothing else reads; std serialises
    // its own environment accesses (including Command::spawn).
    SET.call_once(|| unsafe { std::env::set_var("ACP_CODER_TEST_SECRET", "hunter2") });

    let cmd = r#"echo "secret=${ACP_CODER_TEST_SECRET-unset} added=${ADDED-unset}""#;
    let r = run(spec(cmd)).await;
    assert_eq!(r.output, "secret=hunter2 added=unset\n");

    let mut s = spec(cmd);
    s.env = vec![("ADDED".into(), "yes please".into())];
    s.env_remove = vec!["ACP_CODER_TEST_SECRET".into()];
    let r = run(s).await;
    assert_eq!(r.output, "secret=unset added=yes please\n");
}

#[tokio::test]
async fn cwd_is_respected() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("marker.txt"), "x").unwrap();
    let mut s = spec("pwd -P; ls");
    s.cwd = dir.path().to_owned();
    let r = run(s).await;
    let expected = dir.path().canonicalize().unwrap();
    assert_eq!(r.output, format!("{}\nmarker.txt\n", expected.display()));
}

#[tokio::test]
async fn missing_cwd_is_a_clear_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let mut s = spec("true");
    s.cwd = missing.clone();
    let err = run_local(s, CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    let msg = err.to_string();
    match err {
        ProcessError::Spawn {
            command,
            cwd,
            source,
        } => {
            assert_eq!(command, "true");
            assert_eq!(cwd, missing);
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(msg.contains(&missing.display().to_string()), "{msg}");
    assert!(msg.contains("working directory does not exist"), "{msg}");

    let file = dir.path().join("file");
    std::fs::write(&file, "").unwrap();
    let mut s = spec("true");
    s.cwd = file;
    let err = run_local(s, CancellationToken::new(), |_| {})
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[tokio::test]
async fn output_tail_is_kept_with_exact_truncation_count() {
    let mut s = spec("printf 0123456789abcdefghij");
    s.output_limit = 5;
    let r = run(s).await;
    assert_eq!((r.output.as_str(), r.truncated_bytes), ("fghij", 15));

    // Large output: goes through the intermediate compactions.
    let mut s = spec("head -c 300000 /dev/zero | tr '\\0' x; echo END");
    s.output_limit = 1000;
    let streamed = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&streamed);
    let r = run_local(s, CancellationToken::new(), move |chunk| {
        *counter.lock().unwrap() += chunk.len();
    })
    .await
    .unwrap();
    assert_eq!(r.output.len(), 1000);
    assert!(r.output.ends_with("xxEND\n"));
    assert_eq!(r.truncated_bytes, 300_004 - 1000);
    assert_eq!(
        *streamed.lock().unwrap(),
        300_004,
        "on_output sees everything"
    );

    // Cut at a char boundary: "é" is 2 bytes; 3 bytes kept would split one.
    let mut s = spec("printf 'ééé'");
    s.output_limit = 3;
    let r = run(s).await;
    assert_eq!((r.output.as_str(), r.truncated_bytes), ("é", 4));

    let mut s = spec("echo abc");
    s.output_limit = 0;
    let r = run(s).await;
    assert_eq!((r.output.as_str(), r.truncated_bytes), ("", 4));
}

#[test]
fn utf8_decoding_across_reads() {
    let mut out = Output::new(100);
    let e = "é".as_bytes();
    out.push(Stream::Out, &[b'a', e[0]]);
    out.push(Stream::Err, b"<err>");
    out.push(Stream::Out, &[e[1], b'b']);
    out.push(Stream::Out, &[0xff, b'c', e[0]]);
    out.end(Stream::Out);
    let mut r = CommandResult::default();
    out.fill(&mut r);
    assert_eq!(r.output, "a<err>éb\u{FFFD}c\u{FFFD}");
    assert_eq!(r.truncated_bytes, 0);
}

#[tokio::test]
async fn timeout_kills_shell_and_grandchild() {
    let mut s = spec("sleep 30 & echo pid=$!; wait");
    s.timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let r = run(s).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(r.timed_out && !r.cancelled, "{r:?}");
    assert_eq!(r.exit_code, None);
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert_dies(pid_in(&r.output)).await;
}

#[tokio::test]
async fn timeout_escalates_to_sigkill() {
    // Both the shell and the grandchild ignore SIGTERM.
    let mut s = spec("(trap '' TERM; exec sleep 30) & echo pid=$!; trap '' TERM; wait");
    s.timeout = Duration::from_millis(1500);
    let started = Instant::now();
    let r = run(s).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(r.timed_out, "{r:?}");
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"));
    assert_dies(pid_in(&r.output)).await;
}

#[tokio::test]
async fn background_children_do_not_outlive_the_command() {
    // Not holding the pipes: the command returns at once.
    let r = run(spec("sleep 30 >/dev/null 2>&1 & echo pid=$!")).await;
    assert_eq!(r.exit_code, Some(0));
    assert_dies(pid_in(&r.output)).await;

    // Holding the pipes: returns after the drain grace, not after 30 s.
    let started = Instant::now();
    let r = run(spec("sleep 30 & echo pid=$!")).await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.timed_out && !r.cancelled);
    assert_dies(pid_in(&r.output)).await;
}

/// Runs `command` (which must print `pid=<n>` then `ready`), cancels when
/// `ready` shows up, and returns the result, the grandchild pid and the
/// cancel → return latency.
async fn cancel_after_ready(command: &str) -> (CommandResult, i32, Duration) {
    let cancel = CancellationToken::new();
    let token = cancel.clone();
    let cancelled_at = Arc::new(Mutex::new(None));
    let stamp = Arc::clone(&cancelled_at);
    let mut seen = String::new();
    let r = run_local(spec(command), cancel, move |chunk| {
        seen.push_str(chunk);
        if seen.contains("ready") && !token.is_cancelled() {
            *stamp.lock().unwrap() = Some(Instant::now());
            token.cancel();
        }
    })
    .await
    .unwrap();
    let latency = cancelled_at.lock().unwrap().expect("cancelled").elapsed();
    let pid = pid_in(&r.output);
    (r, pid, latency)
}

#[tokio::test]
async fn cancel_returns_quickly_and_kills_the_group() {
    let (r, pid, latency) = cancel_after_ready("sleep 30 & echo pid=$!; echo ready; wait").await;
    eprintln!("cancel latency (cooperative group): {latency:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    assert!(r.cancelled && !r.timed_out, "{r:?}");
    assert_eq!(r.signal.as_deref(), Some("SIGTERM"));
    assert_dies(pid).await;
}

#[tokio::test]
async fn cancel_returns_quickly_even_if_sigterm_is_ignored() {
    let (r, pid, latency) = cancel_after_ready(
        "(trap '' TERM; exec sleep 30) & echo pid=$!; trap '' TERM; echo ready; wait",
    )
    .await;
    eprintln!("cancel latency (SIGTERM ignored): {latency:?}");
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    assert!(r.cancelled, "{r:?}");
    // The exit status depends on scheduling (the shell may even finish its
    // `wait` first on a loaded machine): what is guaranteed is that the call
    // returned promptly as cancelled and that every process is gone.
    assert!(!r.timed_out, "{r:?}");
    // The background follow-up SIGKILLs the group TERM_GRACE later.
    assert_dies(pid).await;
}

#[tokio::test]
async fn already_cancelled_does_not_spawn() {
    let cancel = CancellationToken::new();
    cancel.cancel();
    let dir = tempfile::tempdir().unwrap();
    let mut s = spec("touch spawned");
    s.cwd = dir.path().to_owned();
    let r = run_local(s, cancel, |_| {}).await.unwrap();
    assert!(r.cancelled);
    assert!(!dir.path().join("spawned").exists());
}

#[tokio::test]
async fn output_is_streamed_before_exit() {
    // `b` is only printed once on_output has delivered `a`: no timing luck.
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("seen-a");
    let cmd = format!(
        "echo a; while [ ! -e '{}' ]; do sleep 0.01; done; echo b",
        flag.display()
    );
    let chunks = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&chunks);
    let r = run_local(spec(&cmd), CancellationToken::new(), move |chunk| {
        if chunk.contains('a') {
            std::fs::write(&flag, "").unwrap();
        }
        sink.lock().unwrap().push(chunk.to_owned());
    })
    .await
    .unwrap();
    assert_eq!(r.output, "a\nb\n");
    assert!(!r.timed_out);
    assert_eq!(*chunks.lock().unwrap(), ["a\n", "b\n"]);
}

#[tokio::test]
async fn dropping_the_future_kills_the_group() {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let mut tx = Some(tx);
    let task = tokio::spawn(run_local(
        spec("sleep 30 & echo pid=$!; wait"),
        CancellationToken::new(),
        move |chunk| {
            if let Some(tx) = tx.take() {
                let _ = tx.send(pid_in(chunk));
            }
        },
    ));
    let pid = rx.await.unwrap();
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_dies(pid).await;
}

#[test]
fn run_local_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let fut = run_local(spec("true"), CancellationToken::new(), |_| {});
    assert_send(&fut);
}

fn spawn_sleeper_group() -> std::process::Child {
    std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap()
}

#[test]
fn registry_kills_registered_groups_and_closes() {
    let registry = Registry::default();
    // Bogus ids must never be signalled (killpg(0) = our own group).
    // SAFETY: no preconditions.
    let own = unsafe { libc::getpgrp() };
    for bogus in [-5, 0, 1, own] {
        registry.register(bogus);
    }
    assert!(registry.lock().groups.is_empty());

    let mut kept = spawn_sleeper_group();
    let mut dropped = spawn_sleeper_group();
    registry.register(kept.id() as i32);
    registry.register(dropped.id() as i32);
    registry.unregister(dropped.id() as i32);
    registry.kill_all();
    registry.kill_all(); // idempotent
    assert_eq!(kept.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert_eq!(
        dropped.try_wait().unwrap(),
        None,
        "unregistered group spared"
    );
    dropped.kill().unwrap();
    dropped.wait().unwrap();

    // Closed: a group registered after kill_all dies on the spot.
    let mut late = spawn_sleeper_group();
    registry.register(late.id() as i32);
    assert_eq!(late.wait().unwrap().signal(), Some(libc::SIGKILL));
    assert!(registry.lock().groups.is_empty());
}

const GLOBAL_HELPER_ENV: &str = "ACP_CODER_PROCESS_GLOBAL_KILL_HELPER";
const GLOBAL_HELPER_TEST: &str = "tools::process::tests::global_kill_all_in_child_process";

/// The global registry is shared by every test in this binary, so
/// `kill_all_children` is exercised in a separate test process.
#[test]
fn kill_all_children_reaches_registered_groups() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            GLOBAL_HELPER_TEST,
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .env(GLOBAL_HELPER_ENV, "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "run in a child process by kill_all_children_reaches_registered_groups"]
fn global_kill_all_in_child_process() {
    if std::env::var_os(GLOBAL_HELPER_ENV).is_none() {
        return; // never close the registry of a shared test process
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // A running command, killed from outside its runner.
    let r = rt.block_on(async {
        let mut s = spec("sleep 30 & echo pid=$!; echo ready; wait");
        s.timeout = Duration::from_secs(20);
        let mut seen = String::new();
        let r = run_local(s, CancellationToken::new(), move |chunk| {
            seen.push_str(chunk);
            if seen.contains("ready") {
                kill_all_children();
            }
        })
        .await
        .unwrap();
        assert_dies(pid_in(&r.output)).await;
        r
    });
    assert_eq!(r.signal.as_deref(), Some("SIGKILL"), "{r:?}");
    assert!(!r.timed_out && !r.cancelled);

    // Manually registered group (e.g. an MCP server), after closing.
    let mut late = spawn_sleeper_group();
    register_group(late.id() as i32);
    assert_eq!(late.wait().unwrap().signal(), Some(libc::SIGKILL));
    kill_all_children();
    unregister_group(late.id() as i32);
}

/// A command reads what the spec gives on stdin, and its stdout and
/// stderr also come back apart (hooks read each on its own).
#[tokio::test]
async fn stdin_is_given_and_the_streams_come_back_apart() {
    let mut s = spec("cat; echo oops >&2; exit 2");
    s.stdin = Some(b"{\"a\":1}".to_vec());
    let r = run(s).await;
    assert_eq!(r.exit_code, Some(2));
    assert_eq!(r.stdout, "{\"a\":1}");
    assert_eq!(r.stderr, "oops\n");
    assert!(r.output.contains("oops") && r.output.contains("{\"a\":1}"));
    // Without stdin the command reads nothing (/dev/null).
    let r = run(spec("cat; echo done")).await;
    assert_eq!(r.stdout, "done\n");
}
