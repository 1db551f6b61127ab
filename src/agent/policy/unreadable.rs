//! Secrets at rest that sandboxed commands may not read (SECURITY.md §2):
//! the agent's own configuration, state and data directories (the key that
//! `acp-coder login` saved, MCP OAuth tokens, every project's session logs),
//! the common credential stores in the home directory, keyrings, browser
//! profiles and the session's runtime directory (`$XDG_RUNTIME_DIR`: the
//! sockets of the user's D-Bus, keyring, ssh-agent, Wayland…). The config
//! file's `sandbox_unreadable` adds paths. A command the user allows by
//! itself runs outside the sandbox and reads them as the user can.
//!
//! OS-independent: every platform's sandbox hides these paths its own way.
use std::path::{Path, PathBuf};

/// Credential stores, relative to the home directory; docs/permissions.md
/// and SECURITY.md §2 repeat the list.
pub const DEFAULT_UNREADABLE: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".npmrc",
    ".yarnrc.yml",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    ".password-store",
    ".config/op",
    ".local/share/keyrings",
    ".mozilla",
    ".thunderbird",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    "snap/firefox",
    "snap/chromium",
    // macOS: the login keychain, browser profiles and cookies.
    "Library/Keychains",
    "Library/Cookies",
    "Library/Safari",
    "Library/Application Support/Google/Chrome",
    "Library/Application Support/Chromium",
    "Library/Application Support/Firefox",
    "Library/Application Support/BraveSoftware",
    "Library/Application Support/Microsoft Edge",
    "Library/Application Support/Vivaldi",
];

/// The paths to hide from a sandboxed command: the defaults under `home`,
/// `$XDG_RUNTIME_DIR` (`runtime`), and `extra` (the agent's own directories
/// and the config file's `sandbox_unreadable`), those that exist. A path
/// that is a root or holds one stays visible: the project comes first (a
/// path inside a root is hidden).
pub fn unreadable(
    home: Option<&Path>,
    runtime: Option<&Path>,
    extra: &[PathBuf],
    roots: &[PathBuf],
) -> Vec<PathBuf> {
    let defaults = home
        .filter(|h| h.is_absolute() && *h != Path::new("/"))
        .into_iter()
        .flat_map(|h| DEFAULT_UNREADABLE.iter().map(move |p| h.join(p)));
    let mut out: Vec<PathBuf> = Vec::new();
    for p in defaults
        .chain(runtime.filter(|r| r.is_absolute()).map(Path::to_path_buf))
        .chain(extra.iter().cloned())
    {
        if !p.is_absolute()
            || roots.iter().any(|r| r.starts_with(&p))
            || out.contains(&p)
            || std::fs::symlink_metadata(&p).is_err()
        {
            continue;
        }
        out.push(p);
    }
    out
}

/// Whether `path` (absolute) is one of `hidden` or lies beneath one.
pub fn hidden_by<'a>(path: &Path, hidden: &'a [PathBuf]) -> Option<&'a Path> {
    hidden
        .iter()
        .find(|h| path.starts_with(h))
        .map(PathBuf::as_path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn existing_stores_are_hidden_but_never_a_root() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        std::fs::create_dir_all(h.join(".ssh")).unwrap();
        std::fs::create_dir_all(h.join(".config/gh")).unwrap();
        std::fs::write(h.join(".netrc"), "machine x").unwrap();
        std::fs::create_dir_all(h.join("agent/data")).unwrap();
        std::fs::create_dir_all(h.join("proj")).unwrap();
        let extra = vec![h.join("agent/data"), h.join("missing"), "rel".into()];
        let roots = vec![h.join("proj")];
        let got = unreadable(Some(h), None, &extra, &roots);
        assert_eq!(
            got,
            [
                h.join(".ssh"),
                h.join(".netrc"),
                h.join(".config/gh"),
                h.join("agent/data")
            ]
        );
        // A project inside a hidden directory keeps it visible.
        let roots = vec![h.join(".ssh/inner")];
        assert!(!unreadable(Some(h), None, &[], &roots).contains(&h.join(".ssh")));
        // No home: only what is given.
        assert!(unreadable(Some(Path::new("/")), None, &[], &[]).is_empty());
        assert_eq!(
            hidden_by(&h.join(".ssh/id_rsa"), &got),
            Some(h.join(".ssh").as_path())
        );
        assert_eq!(hidden_by(&h.join(".sshx"), &got), None);
    }
}
