//! The process's stdin and stdout as async streams for the connection
//! (see [`crate::platform::stdio`]: on Linux a pipe is reopened through
//! `/proc/self/fd` and driven by the reactor, never changing the flags of
//! the description the agent inherited; elsewhere tokio's streams).
//!
//! Must be called inside the runtime (the reactor registers the descriptors).
pub use crate::platform::stdio::{Stdin, Stdout, stdin, stdout};
