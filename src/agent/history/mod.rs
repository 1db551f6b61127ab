//! What turns changed, and taking it back (issue 19 §2–3): the per-turn
//! [`checkpoint`]s, the hooks around tool calls that fill them and list what a
//! command changed ([`changes`]), and `/undo` / `/rewind` ([`undo`]).
pub mod changes;
pub mod checkpoint;
pub mod cursors;
pub mod tracker;
pub mod undo;
