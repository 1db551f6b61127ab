//! Whether the agent runs in a container, and which: for `doctor`, since a
//! container's seccomp profile and capabilities decide which layers of the
//! command sandbox can hold (docs/deploy.md).
use std::path::Path;

/// The container runtime, from the marks runtimes leave: the `container`
/// variable (systemd's convention; Podman sets it), `/run/.containerenv`
/// (Podman), `/.dockerenv` (Docker), and Kubernetes' service variables or
/// a `kubepods` cgroup. `None` when none is seen.
pub fn container() -> Option<String> {
    detect(
        &|name| std::env::var(name).ok().filter(|v| !v.is_empty()),
        Path::new("/"),
    )
}

fn detect(env: &dyn Fn(&str) -> Option<String>, root: &Path) -> Option<String> {
    let cgroup = std::fs::read_to_string(root.join("proc/1/cgroup")).unwrap_or_default();
    let runtime = if let Some(name) = env("container") {
        Some(name)
    } else if root.join("run/.containerenv").exists() {
        Some("podman".to_owned())
    } else if root.join(".dockerenv").exists() || cgroup.contains("docker") {
        Some("docker".to_owned())
    } else {
        None
    };
    let kubernetes = env("KUBERNETES_SERVICE_HOST").is_some() || cgroup.contains("kubepods");
    match (runtime, kubernetes) {
        (Some(r), true) => Some(format!("{r}, on Kubernetes")),
        (None, true) => Some("Kubernetes".to_owned()),
        (r, false) => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_are_told_by_their_marks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let none = |_: &str| None;
        assert_eq!(detect(&none, root), None);
        let podman_env = |n: &str| (n == "container").then(|| "podman".to_owned());
        assert_eq!(detect(&podman_env, root).as_deref(), Some("podman"));
        std::fs::write(root.join(".dockerenv"), "").unwrap();
        assert_eq!(detect(&none, root).as_deref(), Some("docker"));
        let k8s = |n: &str| (n == "KUBERNETES_SERVICE_HOST").then(|| "10.0.0.1".to_owned());
        assert_eq!(detect(&k8s, root).as_deref(), Some("docker, on Kubernetes"));
        std::fs::remove_file(root.join(".dockerenv")).unwrap();
        std::fs::create_dir_all(root.join("proc/1")).unwrap();
        std::fs::write(
            root.join("proc/1/cgroup"),
            "0::/kubepods/burstable/pod1/abc\n",
        )
        .unwrap();
        assert_eq!(detect(&none, root).as_deref(), Some("Kubernetes"));
    }
}
