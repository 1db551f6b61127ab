//! What `/proc` says about a process: memory, file descriptors, threads,
//! children and CPU time by thread.

pub(super) fn proc_status_kb(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

pub(super) fn rss_kb(pid: u32) -> u64 {
    proc_status_kb(pid, "VmRSS:")
}

pub(super) fn count_dir(path: &str) -> usize {
    std::fs::read_dir(path).map_or(0, |d| d.count())
}

pub(super) fn open_fds(pid: u32) -> usize {
    count_dir(&format!("/proc/{pid}/fd"))
}

/// What each open descriptor of `pid` points at.
pub(super) fn fd_targets(pid: u32) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            )
        })
        .collect();
    v.sort();
    v
}

pub(super) fn threads(pid: u32) -> usize {
    count_dir(&format!("/proc/{pid}/task"))
}

/// `name:tid` of each thread of `pid`, to say which thread a count gained.
pub(super) fn thread_names(pid: u32) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|t| {
            let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            format!("{}:{}", name.trim(), t.file_name().to_string_lossy())
        })
        .collect();
    out.sort();
    out
}

/// Live (non-zombie) children of `pid`.
pub(super) fn live_children(pid: u32) -> usize {
    let mut n = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for c in children.split_whitespace() {
            let stat = std::fs::read_to_string(format!("/proc/{c}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .split_whitespace()
                .next();
            if state.is_some_and(|s| s != "Z") {
                n += 1;
            }
        }
    }
    n
}

pub(super) fn mb(kb: u64) -> String {
    format!("{:.1} MB", kb as f64 / 1024.0)
}

/// CPU time so far of each thread of `pid` (`/proc/PID/task/*/schedstat`),
/// summed by thread name.
pub(super) fn task_cpu_by_name(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        *out.entry(name.trim().to_owned()).or_insert(0) += ns;
    }
    out
}
