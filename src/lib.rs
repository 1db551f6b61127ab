//! acp-coder: a coding agent speaking the Agent Client Protocol (ACP v1) over stdio.
//!
//! Layering (an arrow is "may use"; README.md "Layout" lists the folders): `rpc`,
//! `acp`, `llm` and `utf8` know nothing of the rest; `editor` uses `rpc` and
//! `acp`; `tools` use `editor` and `acp`; `mcp` uses `acp`, `tools` and
//! `config`; `agent` ties everything together; `a2a` drives the agent in
//! process, as `exec` does.
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
pub mod utf8;
