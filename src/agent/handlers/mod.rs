//! The ACP method handlers (ACP §3–§6), as methods of [`super::Agent`]:
//! the handshake and session options, the session lifecycle, and prompts.
pub(super) mod config;
pub(super) mod dirs;
pub(super) mod fork;
pub(super) mod handshake;
pub(super) mod lifecycle;
pub(super) mod logout;
pub(super) mod plan;
pub(super) mod prompt;
pub(super) mod providers;
pub mod requests;
pub(super) mod setup;
pub(super) mod steering;
pub(super) mod stored;
