//! Permissions kept for a project: the "Always allow … for this project"
//! answers, which outlive the session (load, resume, a restart).
//!
//! They live in the agent's data directory, never in the project:
//! `<data_dir>/permissions/<hash>.json`, the hash (SHA-256) of the canonical
//! project root (the session's cwd), the directory `0700` and the file `0600`,
//! replaced atomically. A repository cannot plant one: nothing under the
//! project is read. The file names its root, and a file whose root is not the
//! session's is ignored.
//!
//! What can be kept is what a session grant covers (`permission::Scope`):
//! command prefixes (inside the project, or on exact paths outside it), reads
//! and writes of exact paths, edits inside the project by one tool, one MCP
//! tool; never a scope that names a protected path (`protected.rs`), and only
//! allowing (a rejection stays in the session). `/permissions` lists the
//! kept rules and revokes them.
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::grant::Grant;

const DIR: &str = "permissions";

#[derive(Debug, thiserror::Error)]
pub enum KeptError {
    #[error("cannot save the project's permissions in {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The file: its project root and its rules, oldest first.
#[derive(Debug, Default, Serialize, Deserialize)]
struct KeptFile {
    root: String,
    #[serde(default)]
    rules: Vec<Grant>,
}

/// The rules kept for one project root, shared by every session of this
/// process in that project.
#[derive(Debug)]
pub struct Kept {
    root: PathBuf,
    path: PathBuf,
    rules: Mutex<Vec<Grant>>,
}

/// One `Kept` per file in the process, so a rule kept or revoked in one
/// session holds at once in the others of the same project.
fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Kept>>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<Kept>>>> = OnceLock::new();
    OPEN.get_or_init(Mutex::default)
}

/// Where the rules of `root` (canonical) are kept under `data_dir`.
pub fn file_for(data_dir: &Path, root: &Path) -> PathBuf {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hash: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    data_dir.join(DIR).join(format!("{hash}.json"))
}

impl Kept {
    /// The kept rules of the project whose canonical root is `root`.
    pub fn open(data_dir: &Path, root: &Path) -> Arc<Kept> {
        let path = file_for(data_dir, root);
        let mut open = registry().lock().unwrap_or_else(|e| e.into_inner());
        open.retain(|_, w| w.strong_count() > 0);
        if let Some(k) = open.get(&path).and_then(Weak::upgrade) {
            return k;
        }
        let rules = read(&path, root);
        let kept = Arc::new(Kept {
            root: root.to_path_buf(),
            path: path.clone(),
            rules: Mutex::new(rules),
        });
        open.insert(path, Arc::downgrade(&kept));
        kept
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn contains(&self, grant: &Grant) -> bool {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(grant)
    }

    /// The rules, oldest first (the numbering of `/permissions`).
    pub fn list(&self) -> Vec<Grant> {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Keeps `grants` (those not kept yet) and saves the file. What another
    /// process kept meanwhile is merged, not overwritten.
    pub fn add(&self, grants: Vec<Grant>) -> Result<(), KeptError> {
        self.change(|rules| {
            for g in grants {
                if !rules.contains(&g) {
                    rules.push(g);
                }
            }
        })
    }

    /// Revokes rule `index` (0-based, in [`Self::list`]'s order); `None` if
    /// there is no such rule.
    pub fn revoke(&self, index: usize) -> Result<Option<Grant>, KeptError> {
        let target = self.list().get(index).cloned();
        let Some(target) = target else {
            return Ok(None);
        };
        self.change(|rules| rules.retain(|g| g != &target))?;
        Ok(Some(target))
    }

    /// Revokes every rule; how many there were.
    pub fn revoke_all(&self) -> Result<usize, KeptError> {
        let n = self.list().len();
        self.change(Vec::clear)?;
        Ok(n)
    }

    /// Re-reads the file, applies `f`, writes it back, and holds the result.
    fn change(&self, f: impl FnOnce(&mut Vec<Grant>)) -> Result<(), KeptError> {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let mut now = read(&self.path, &self.root);
        // Rules this process holds but the file lost (e.g. deleted by hand
        // while we ran) are not brought back: the file is the truth.
        f(&mut now);
        write(&self.path, &self.root, &now).map_err(|source| KeptError::Io {
            path: self.path.clone(),
            source,
        })?;
        *rules = now;
        Ok(())
    }
}

fn read(path: &Path, root: &Path) -> Vec<Grant> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "kept permissions not readable; none apply");
            return Vec::new();
        }
    };
    match serde_json::from_slice::<KeptFile>(&text) {
        Ok(f) if Path::new(&f.root) == root => f.rules,
        Ok(f) => {
            tracing::warn!(path = %path.display(), file_root = %f.root, "kept permissions are for another project; none apply");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "kept permissions unreadable; none apply");
            Vec::new()
        }
    }
}

/// Replaces the file atomically (a private temporary file, then rename).
fn write(path: &Path, root: &Path, rules: &[Grant]) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
        .create(dir)?;
    let file = KeptFile {
        root: root.display().to_string(),
        rules: rules.to_vec(),
    };
    let bytes = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .owner_only()
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(&bytes)?;
            f.sync_all()
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// `/permissions`: lists the kept rules; `/permissions revoke N` (or
/// `revoke all`) removes them.
pub fn command(kept: Option<&Kept>, args: &str) -> String {
    let Some(kept) = kept else {
        return "This session keeps no permissions for the project (it is not stored).".into();
    };
    let mut words = args.split_whitespace();
    match (words.next(), words.next(), words.next()) {
        (None, ..) => render(kept),
        (Some("revoke"), Some("all"), None) => match kept.revoke_all() {
            Ok(0) => "Nothing to revoke: no permissions are kept for this project.".into(),
            Ok(n) => format!(
                "Revoked all {n} kept permission{} for this project: those calls ask again.",
                plural(n)
            ),
            Err(e) => format!("Could not revoke: {e}"),
        },
        (Some("revoke"), Some(n), None) => match n.parse::<usize>() {
            Ok(n) if n >= 1 => match kept.revoke(n - 1) {
                Ok(Some(g)) => format!(
                    "Revoked: always allow {}. Such calls ask again.\n\n{}",
                    g.describe(),
                    render(kept)
                ),
                Ok(None) => format!("There is no kept permission {n}.\n\n{}", render(kept)),
                Err(e) => format!("Could not revoke: {e}"),
            },
            _ => usage(),
        },
        _ => usage(),
    }
}

fn usage() -> String {
    "Usage: `/permissions` lists the permissions kept for this project; `/permissions revoke N` revokes entry N, `/permissions revoke all` all of them.".into()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn render(kept: &Kept) -> String {
    let rules = kept.list();
    if rules.is_empty() {
        return format!(
            "No permissions are kept for this project ({}). Choose “Always allow for this project” in a permission request to keep one.",
            kept.root().display()
        );
    }
    let mut text = format!(
        "**Permissions kept for {}** (they hold in every session of this project):\n",
        kept.root().display()
    );
    for (i, g) in rules.iter().enumerate() {
        text.push_str(&format!("\n{}. Always allow {}", i + 1, g.describe()));
    }
    text.push_str(
        "\n\n`/permissions revoke N` revokes one, `/permissions revoke all` all of them.",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_rules_are_private_survive_reopening_and_revoke() {
        // Unix modes; `None` on Windows (the profile's ACL).
        let mode =
            |p: &Path| crate::platform::fs::mode(&std::fs::metadata(p).unwrap()).map(|m| m & 0o777);
        let data = tempfile::tempdir().unwrap();
        let root = PathBuf::from("/proj/kept-test-a");
        let cmd = Grant::Command {
            prefix: "cargo test".into(),
        };
        let tool = Grant::External {
            tool: "srv.query".into(),
        };
        {
            let k = Kept::open(data.path(), &root);
            k.add(vec![cmd.clone(), tool.clone(), cmd.clone()]).unwrap();
            assert_eq!(k.list(), [cmd.clone(), tool.clone()]);
        }
        let path = file_for(data.path(), &root);
        assert!(mode(&path).is_none_or(|m| m == 0o600));
        assert!(mode(path.parent().unwrap()).is_none_or(|m| m == 0o700));
        // Reopened (as after a restart): the rules are read back.
        let k = Kept::open(data.path(), &root);
        assert!(k.contains(&cmd) && k.contains(&tool));
        assert!(command(Some(&k), "").contains("2. Always allow the tool srv.query"));
        assert!(command(Some(&k), "revoke 1").starts_with("Revoked: always allow `cargo test …`"));
        assert!(!k.contains(&cmd) && k.contains(&tool));
        assert!(command(Some(&k), "revoke 5").starts_with("There is no kept permission 5"));
        assert!(command(Some(&k), "revoke x").starts_with("Usage"));
        assert!(command(Some(&k), "revoke all").starts_with("Revoked all 1"));
        assert!(k.list().is_empty());
    }

    /// Another project's file (a hash collision, a copied file) never applies.
    #[test]
    fn a_file_for_another_root_is_ignored() {
        let data = tempfile::tempdir().unwrap();
        let root = PathBuf::from("/proj/kept-test-b");
        let path = file_for(data.path(), &root);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            &path,
            r#"{"root":"/elsewhere","rules":[{"kind":"command","prefix":"rm"}]}"#,
        )
        .unwrap();
        assert!(Kept::open(data.path(), &root).list().is_empty());
    }
}
