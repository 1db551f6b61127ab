//! `/add-dir <path>` (issue 18 item 1; Claude Code's command of that name):
//! the user adds a directory to a running session, with the consequences of
//! one in `session/new`'s `additionalDirectories` ([`Session::add_dir`]):
//! a session root for permissions (DESIGN §3) and the sandbox, named in the
//! system prompt, and an MCP root (servers get `roots/list_changed`). Only
//! the user can do it: it is a slash command of the prompt the editor sends
//! (`commands::parse`), no tool offers it, and prompt files, skills or MCP
//! prompts expand to text for the model, never to another command.
use std::path::{Path, PathBuf};

use crate::agent::session::Session;
use crate::tools::paths::is_inside;

/// Runs `/add-dir input`; what happened, for the user.
pub fn run(session: &Session, input: &str) -> String {
    let dir = match resolve(&session.cwd, input) {
        Ok(dir) => dir,
        Err(why) => return why,
    };
    if let Some(root) = session
        .roots()
        .into_iter()
        .find(|r| is_inside(&dir, std::slice::from_ref(r)))
    {
        return format!(
            "`{}` is already part of the session (inside `{}`).",
            dir.display(),
            root.display()
        );
    }
    tracing::info!(session = %session.id, dir = %dir.display(), "directory added with /add-dir");
    session.add_dir(dir.clone());
    format!(
        "Added `{}` to the session: the model may work in it as in the project (as the mode allows), \
         and MCP servers see it as a root. Loading or resuming this session keeps it.",
        dir.display()
    )
}

/// The directory `input` names: `~` is the home directory, a relative path
/// is relative to the session's cwd; symlinks are resolved. It must exist
/// and be a directory.
fn resolve(cwd: &Path, input: &str) -> Result<PathBuf, String> {
    let text = input.trim();
    let text = ['"', '\'']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .unwrap_or(text);
    if text.is_empty() {
        return Err(
            "Usage: `/add-dir <path>`: an existing directory, absolute, relative to the session's directory, or under `~`."
                .to_owned(),
        );
    }
    let home = crate::platform::fs::home;
    let path = match text.strip_prefix('~') {
        Some("") => home(),
        Some(rest) if rest.starts_with('/') => home().map(|h| h.join(&rest[1..])),
        _ => Some(cwd.join(text)),
    }
    .ok_or_else(|| {
        format!("Cannot add `{text}`: HOME is not set, so `~` means nothing; give the full path.")
    })?;
    let dir = crate::platform::fs::canonicalize(&path).map_err(|e| {
        format!(
            "Cannot add `{text}`: `{}` cannot be resolved ({e}). Give an existing directory.",
            path.display()
        )
    })?;
    if !dir.is_dir() {
        return Err(format!(
            "Cannot add `{text}`: `{}` is not a directory.",
            dir.display()
        ));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_existing_directories_only() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(base.join("proj/lib")).unwrap();
        std::fs::write(base.join("file"), "x").unwrap();
        crate::platform::fs::symlink(base.join("proj/lib"), base.join("link")).unwrap();
        let cwd = base.join("proj");
        assert_eq!(resolve(&cwd, "lib").unwrap(), base.join("proj/lib"));
        assert_eq!(resolve(&cwd, " '../link' ").unwrap(), base.join("proj/lib"));
        let abs = base.join("proj").display().to_string();
        assert_eq!(resolve(&cwd, &format!("\"{abs}\"")).unwrap(), cwd);
        assert!(
            resolve(&cwd, "../file")
                .unwrap_err()
                .contains("is not a directory")
        );
        assert!(
            resolve(&cwd, "nope")
                .unwrap_err()
                .contains("cannot be resolved")
        );
        assert!(resolve(&cwd, "  ").unwrap_err().starts_with("Usage"));
    }
}
