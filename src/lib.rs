//! acp-coder: a coding agent speaking the Agent Client Protocol (ACP v1) over stdio.
//!
//! Layering: docs/architecture.md "Layout" lists every folder and which module may use
//! which. In short, `rpc`, `acp`, `utf8` and `secrets` use nothing of ours;
//! `editor` and `tools` build on them; `mcp` on `tools` and `config`; `agent`
//! ties everything together; `exec` and `a2a` drive the agent in process.
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
pub mod net;
pub mod platform;
pub mod rpc;
pub mod secrets;
pub mod serve;
pub mod skills;
pub mod term;
pub mod tools;
pub mod trace;
pub mod utf8;
