//! A fake editor (ACP client) that drives the agent over any byte-stream pair.
//!
//! Every line the agent writes is recorded, parsed (a non-JSON line is a
//! protocol error) and validated against the official schema
//! ([`super::schema`]). Responses are routed to the pending requests;
//! `session/update` notifications are collected; reverse requests
//! (`fs/*`, `session/request_permission`, `terminal/*`) are answered
//! automatically and recorded.
//!
//! Protocol errors never pass silently: every wait fails fast on them, and
//! dropping the editor panics if any were recorded (unless the test is
//! already panicking or took them with [`FakeEditor::take_errors`]).
//! Failures print the whole transcript plus the agent's stderr.
//!
//! Here: the types a test handles and [`FakeEditor`] itself. Launching and
//! configuring it in `launch`, what it sends in `requests`, waiting and
//! reading in `waits`, its recorded state in `state`, the reader task in
//! `reader`, answers to the agent's requests in `reverse`, `terminal` and
//! `mcp_acp`.

use super::schema::{self, RpcId};
use super::shorten;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

mod launch;
mod mcp_acp;
mod reader;
mod requests;
mod reverse;
mod state;
mod terminal;
mod waits;

pub use launch::{SpawnOptions, agent_command};
use reader::*;
use reverse::*;
use state::*;
use terminal::*;

/// Default time any single wait may take before the test fails.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

type BoxWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// A JSON-RPC error object received from (or sent to) the agent.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    fn from_json(v: &Value) -> Self {
        RpcError {
            code: v["code"].as_i64().unwrap_or(i64::MIN),
            message: v["message"].as_str().unwrap_or_default().to_owned(),
            data: v.get("data").cloned(),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            v["data"] = data.clone();
        }
        v
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " (data: {data})")?;
        }
        Ok(())
    }
}

/// How the editor answers the next `session/request_permission`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Select the option of kind `allow_once`.
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// Answer `{"outcome":{"outcome":"cancelled"}}`.
    Cancelled,
    /// Never answer (until [`FakeEditor::cancel`] or
    /// [`FakeEditor::answer_held_permissions`]).
    NeverAnswer,
    /// Select the option with this `optionId`.
    Option(&'static str),
}

impl PermissionDecision {
    fn kind(&self) -> Option<&'static str> {
        match self {
            PermissionDecision::AllowOnce => Some("allow_once"),
            PermissionDecision::AllowAlways => Some("allow_always"),
            PermissionDecision::RejectOnce => Some("reject_once"),
            PermissionDecision::RejectAlways => Some("reject_always"),
            _ => None,
        }
    }
}

/// One `session/request_permission` the agent sent.
#[derive(Debug, Clone)]
pub struct PermissionRecord {
    pub id: RpcId,
    pub params: Value,
    pub decision: Option<PermissionDecision>,
    /// The `result` sent back; `None` while unanswered.
    pub result: Option<Value>,
}

/// One `fs/write_text_file` the agent sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWrite {
    pub session_id: String,
    pub path: PathBuf,
    pub content: String,
}

/// One `fs/read_text_file` the agent sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub session_id: String,
    pub path: PathBuf,
    pub line: Option<u64>,
    pub limit: Option<u64>,
    /// Served from an open (unsaved) buffer rather than from disk.
    pub from_buffer: bool,
}

/// One `terminal/*` request the agent sent.
#[derive(Debug, Clone)]
pub struct TerminalCall {
    pub method: String,
    pub params: Value,
}

/// Capabilities the editor advertised in `initialize`.
#[derive(Debug, Clone, Copy, Default)]
struct Caps {
    read: bool,
    write: bool,
    terminal: bool,
    /// `elicitation.form` / `elicitation.url` (present and not null).
    elicit_form: bool,
    elicit_url: bool,
}

/// `clientCapabilities` with everything on (fs read/write and terminal).
pub fn full_capabilities() -> Value {
    json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true})
}

/// `clientCapabilities` with everything off.
pub fn no_capabilities() -> Value {
    json!({"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false})
}

/// A response to an editor request that has not arrived yet. Await it
/// (`.await` or [`PendingRequest::response`]).
pub struct PendingRequest {
    id: RpcId,
    method: String,
    rx: oneshot::Receiver<Result<Value, RpcError>>,
    shared: Arc<Shared>,
}

impl PendingRequest {
    pub fn id(&self) -> &RpcId {
        &self.id
    }

    /// Waits for the response; fails the test on timeout, on a protocol
    /// error, or if the agent closes the connection first.
    pub async fn response(self) -> Result<Value, RpcError> {
        let PendingRequest {
            id,
            method,
            mut rx,
            shared,
        } = self;
        let timeout = shared.lock().timeout;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut version = shared.version.subscribe();
        loop {
            version.borrow_and_update();
            {
                let st = shared.lock();
                if !st.errors.is_empty() {
                    drop(st);
                    shared.fail(&format!(
                        "protocol error while waiting for the response to {method} (id {id})"
                    ));
                }
            }
            tokio::select! {
                r = &mut rx => match r {
                    Ok(r) => return r,
                    Err(_) => shared.fail(&format!(
                        "the agent closed the connection before answering {method} (id {id})"
                    )),
                },
                changed = tokio::time::timeout_at(deadline, version.changed()) => {
                    if changed.is_err() {
                        shared.fail(&format!(
                            "no response to {method} (id {id}) within {timeout:?}"
                        ));
                    }
                }
            }
        }
    }
}

impl std::future::IntoFuture for PendingRequest {
    type Output = Result<Value, RpcError>;
    type IntoFuture = std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.response())
    }
}

/// The fake editor. Construct with [`FakeEditor::spawn`] or
/// [`FakeEditor::connect`].
pub struct FakeEditor {
    shared: Arc<Shared>,
    child: Option<Child>,
    home_dir: Option<tempfile::TempDir>,
    home: Option<PathBuf>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for FakeEditor {
    fn drop(&mut self) {
        let (errors, groups) = {
            let st = self.shared.lock();
            let groups: Vec<i32> = st
                .terminals
                .values()
                .filter(|t| t.exit.borrow().is_none())
                .filter_map(|t| t.pgid)
                .collect();
            (st.errors.clone(), groups)
        };
        for g in groups {
            kill_group(g);
        }
        for t in &self.tasks {
            t.abort();
        }
        if !errors.is_empty() && !std::thread::panicking() {
            panic!(
                "the fake editor recorded {} protocol/harness error(s):\n{}",
                errors.len(),
                self.shared.transcript()
            );
        }
    }
}
