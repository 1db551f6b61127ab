//! acp-coder: a coding agent speaking the Agent Client Protocol (ACP v1) over stdio.
//!
//! Layering (an arrow is "may use"): `rpc` and `acp` know nothing of the rest;
//! `editor` uses both; `llm` stands alone; `tools` use `editor` and `acp`;
//! `agent` ties everything together. See `DESIGN` notes in README.md.
pub mod a2a;
pub mod acp;
pub mod agent;
pub mod config;
pub mod doctor;
pub mod editor;
pub mod exec;
pub mod llm;
pub mod login;
pub mod mcp;
pub mod rpc;
pub mod secrets;
pub mod skills;
pub mod term;
pub mod tools;
pub mod trace;
