//! What an MCP server's slot tells the user (a server failed or is ready,
//! a sign-in link): the session shows it as a notice to a client that shows
//! notices, else as agent text (`manager`).
use crate::acp::{Notice, NoticeSeverity};

/// What to tell the user: `notice` for a client that shows notices, else `text`.
pub struct Told {
    pub text: String,
    pub notice: Notice,
}

impl Told {
    /// A server failed (to start, or while running).
    pub fn failed(text: String, title: String, description: String) -> Told {
        Told {
            text,
            notice: Notice::new(NoticeSeverity::Warning, title, Some(description)),
        }
    }

    /// Good news or a request to the user (a server is ready, a sign-in link).
    pub fn info(text: String, title: String, description: String) -> Told {
        Told {
            text,
            notice: Notice::new(NoticeSeverity::Info, title, Some(description)),
        }
    }
}
