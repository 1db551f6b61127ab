//! The directories a session request names (`session/new`, `load`,
//! `resume`, `fork`, `session/options`): absolute paths, and for a new
//! session directories that exist now.
use std::path::{Path, PathBuf};

use crate::rpc::RpcError;

/// A directory a session request names (`params.cwd`,
/// `additionalDirectories[i]`): it must be an absolute path (`field` names
/// it in the error).
pub(in crate::agent) fn absolute_dir(field: &str, path: &str) -> Result<PathBuf, RpcError> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "{field}: expected an absolute path, got {path:?}"
        )));
    }
    Ok(p.to_path_buf())
}

/// An absolute path naming a directory that exists now: a new session's
/// working directory and its extra roots (a missing one or a file would
/// only fail later, in the middle of a turn).
pub(super) fn existing_dir(field: &str, path: &str) -> Result<PathBuf, RpcError> {
    let p = absolute_dir(field, path)?;
    match std::fs::metadata(&p) {
        Ok(m) if m.is_dir() => Ok(p),
        Ok(_) => Err(RpcError::invalid_params(format!(
            "{field}: {path:?} is a file, not a directory; send the project's directory"
        ))),
        Err(e) => Err(RpcError::invalid_params(format!(
            "{field}: {path:?} is not a readable directory ({e}); send an existing directory"
        ))),
    }
}

/// `additionalDirectories`, each an absolute path ([`absolute_dir`]).
pub(in crate::agent) fn additional_dirs(dirs: &[String]) -> Result<Vec<PathBuf>, RpcError> {
    dirs.iter()
        .enumerate()
        .map(|(i, d)| absolute_dir(&format!("params.additionalDirectories[{i}]"), d))
        .collect()
}
