//! Policy (DESIGN §3 "Modes and permissions"): what runs, asks or is refused,
//! the session modes and config options, and the slash commands.
pub(super) mod add_dir;
pub(super) mod commands;
pub mod grant;
pub mod kept;
pub(super) mod memory;
pub mod modes;
pub(super) mod options;
pub mod permission;
mod prefix;
pub mod protected;
pub mod unreadable;
