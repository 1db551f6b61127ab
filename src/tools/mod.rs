//! tools
pub mod process;
