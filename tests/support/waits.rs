//! Waiting for effects that send no message of their own: a process gone, a
//! file written, a line in a log another process writes. Each polls with a
//! generous deadline (30 s) instead of sleeping a fixed time, so a loaded
//! machine makes a test slower, never wrong.

use std::path::Path;
use std::time::Duration;

/// How long any of these waits may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(30);

/// Polls `cond` every 10 ms until it holds; fails the test after 30 s,
/// saying it timed out waiting until `what`.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + DEADLINE;
    while !cond() {
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting until {what}");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether a process exists and is not a zombie (a zombie runs no code and
/// holds nothing: it only waits for its parent to reap it).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) S …`: the state follows the last `)`.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state != 'Z' && state != 'X'),
        Err(_) => false,
    }
}

/// Waits until process `pid` is gone; `what` names it in the failure
/// (e.g. "the server, after session/close").
pub async fn wait_gone(pid: u32, what: &str) {
    eventually(&format!("{what} (pid {pid}) is gone"), || {
        !process_alive(pid)
    })
    .await;
}

/// Waits until `path` holds a pid (written by the command under test);
/// returns it as this process sees it. A sandboxed command runs in a PID
/// namespace of its own, where `$$` and `$!` are that namespace's numbers:
/// the process is then the one whose innermost pid (`NSpid`) is that number
/// and whose working directory is the pid file's directory (the session's).
pub async fn wait_pid_file(path: &Path) -> u32 {
    let mut pid = None;
    eventually(&format!("{} holds a pid", path.display()), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok());
        pid.is_some()
    })
    .await;
    let pid = pid.expect("pid");
    let Some(dir) = path.parent() else {
        return pid;
    };
    if let Some(outer) = namespaced(pid, dir) {
        return outer;
    }
    // Not in a namespace of its own: the number is ours, if that process is
    // the command's. Otherwise it is gone already (a pid no process has).
    let ours = std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd == dir);
    if ours { pid } else { u32::MAX }
}

/// The pid, here, of a process in a nested PID namespace whose pid there is
/// `inner` and whose working directory is `dir`.
fn namespaced(inner: u32, dir: &Path) -> Option<u32> {
    let inner = inner.to_string();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let status = std::fs::read_to_string(e.path().join("status")).ok()?;
        let ids: Vec<&str> = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))?
            .split_whitespace()
            .collect();
        let nested = ids.len() > 1 && ids.last() == Some(&inner.as_str());
        let cwd = std::fs::read_link(e.path().join("cwd")).ok()?;
        (nested && cwd == dir).then_some(pid)
    })
}

/// Waits until the file at `path` (a log another process writes) holds
/// `needle`; returns its text then.
pub async fn wait_for_text_in(path: &Path, needle: &str) -> String {
    let mut text = String::new();
    eventually(&format!("{} holds {needle:?}", path.display()), || {
        text = std::fs::read_to_string(path).unwrap_or_default();
        text.contains(needle)
    })
    .await;
    text
}
