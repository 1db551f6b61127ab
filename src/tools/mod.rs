//! tools
pub mod search;
