//! One remembered answer to a permission question ([`Grant`]): what a
//! session's "always" grants hold (`permission.rs`) and what the project's
//! kept rules store (`kept.rs`).
use std::path::PathBuf;

/// One remembered answer: an access kind and what it applies to. Kept
/// ones are stored as JSON (`kept.rs`); a permission's scope is turned
/// into grants in `permission.rs` (`Scope::grants`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Grant {
    Edits { tool: String },
    External { tool: String },
    Read { path: PathBuf },
    Write { path: PathBuf },
    Command { prefix: String },
    CommandOn { prefix: String, path: PathBuf },
    Fetch { domain: String },
}

impl Grant {
    /// What the grant allows, as in the options' names.
    pub fn describe(&self) -> String {
        match self {
            Grant::Edits { tool } => {
                format!("edits by {tool} inside the project (protected files excepted)")
            }
            Grant::External { tool } => format!("the tool {tool}"),
            Grant::Read { path } => format!("reading {}", path.display()),
            Grant::Write { path } => format!("writing {}", path.display()),
            Grant::Command { prefix } => format!("`{prefix} …` inside the project"),
            Grant::CommandOn { prefix, path } => {
                format!("`{prefix} …` on {}", path.display())
            }
            Grant::Fetch { domain } => format!("fetching URLs of {domain}"),
        }
    }
}
