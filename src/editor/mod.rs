//! Typed calls to the editor, with local fallbacks (ACP §9, §10).
//!
//! The agent reaches the editor only through [`Editor`]. File reads and writes
//! go through `fs/read_text_file` / `fs/write_text_file` when the editor
//! advertised them (the model then sees unsaved buffers and the editor can
//! review edits) and to the local disk otherwise; `terminal/*` is only called
//! when the editor advertised `terminal`. Never calling an un-advertised method
//! is a hard rule of the protocol (ACP §2).
mod elicit;
mod files;
pub mod local;
pub mod status;

pub use elicit::{Answer, ElicitError, UrlElicitation};
pub use files::{FileError, looks_binary, read_local, write_local};

use std::path::Path;
use std::sync::Arc;

use crate::acp::{
    ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse, NameValue, PermissionOption,
    PermissionOutcome, ReadTextFileRequest, ReadTextFileResponse, RequestPermissionRequest,
    RequestPermissionResponse, SessionNotification, SessionUpdate, TerminalExitStatus,
    TerminalOutputResponse, TerminalRef, ToolCallUpdate, WriteTextFileRequest, method,
};
use crate::rpc::{Peer, RpcError};

/// Sees every `session/update` of a session before it is sent (persistence).
pub type UpdateObserver = Arc<dyn Fn(&SessionUpdate) + Send + Sync>;

/// The editor as seen from one session.
/// How long `terminal/kill` may go unanswered before the terminal is
/// released anyway.
pub const KILL_ANSWER: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Clone)]
pub struct Editor {
    peer: Peer,
    caps: Arc<ClientCapabilities>,
    session_id: Arc<str>,
    observer: Option<UpdateObserver>,
    divert: Option<Arc<Divert>>,
}

/// Where a subagent's traffic goes when the editor does not show child
/// sessions (`agent::subagent`): its updates to `updates` (which reports
/// them as progress of the parent's tool call), its permission requests
/// about that tool call, their titles prefixed.
#[derive(Clone)]
pub struct Divert {
    pub updates: UpdateObserver,
    pub tool_call_id: String,
    pub title_prefix: String,
}

impl Editor {
    pub fn new(peer: Peer, caps: Arc<ClientCapabilities>, session_id: &str) -> Self {
        Self {
            peer,
            caps,
            session_id: session_id.into(),
            observer: None,
            divert: None,
        }
    }

    /// The same editor for another session (a subagent shown as a child
    /// session), without this one's observer.
    pub fn for_session(&self, session_id: &str) -> Self {
        Self::new(self.peer.clone(), self.caps.clone(), session_id)
    }

    /// The same editor (same session id) with its updates diverted.
    pub fn diverted(&self, divert: Divert) -> Self {
        Self {
            observer: None,
            divert: Some(Arc::new(divert)),
            ..self.clone()
        }
    }

    /// The same editor with an observer of this session's updates.
    pub fn with_observer(mut self, observer: UpdateObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Sends an update without showing it to the observer (history replay).
    pub fn replay(&self, update: &SessionUpdate) {
        self.peer.notify(
            method::SESSION_UPDATE,
            &SessionNotification {
                session_id: &self.session_id,
                update,
            },
        );
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }
    pub fn capabilities(&self) -> &ClientCapabilities {
        &self.caps
    }
    pub fn can_read(&self) -> bool {
        self.caps.fs.read_text_file
    }
    pub fn can_write(&self) -> bool {
        self.caps.fs.write_text_file
    }
    pub fn has_terminal(&self) -> bool {
        self.caps.terminal
    }

    /// Sends one `session/update` for this session.
    pub fn update(&self, update: &SessionUpdate) {
        if let Some(observer) = &self.observer {
            observer(update);
        }
        if let Some(divert) = &self.divert {
            (divert.updates)(update);
            return;
        }
        self.peer.notify(
            method::SESSION_UPDATE,
            &SessionNotification {
                session_id: &self.session_id,
                update,
            },
        );
    }

    /// Waits while too much output to the editor is queued (back-pressure for
    /// bulk producers such as a model's stream; see `rpc::Peer::writable`).
    pub async fn writable(&self) {
        self.peer.writable().await;
    }

    /// Whether output to the editor has room now; updates that the next one
    /// replaces (a live preview) are skipped when it has not.
    pub fn has_room(&self) -> bool {
        self.peer.has_room()
    }

    /// Reads a whole text file: the editor's view (unsaved changes included)
    /// when it offers `fs.readTextFile`, the disk otherwise.
    pub async fn read_text_file(&self, path: &Path) -> Result<String, FileError> {
        if !self.can_read() {
            return files::read_local(path).await;
        }
        let path_str = path.to_string_lossy();
        let req = ReadTextFileRequest {
            session_id: &self.session_id,
            path: &path_str,
            line: None,
            limit: None,
        };
        match self
            .peer
            .request::<_, ReadTextFileResponse>(method::FS_READ, &req)
            .await
        {
            Ok(resp) => {
                if resp.content.contains('\0') {
                    return Err(FileError::Binary(path.to_owned()));
                }
                Ok(resp.content)
            }
            Err(err) => Err(files::classify_editor_error(path, err).await),
        }
    }

    /// Writes a whole text file through the editor (so it can show and review
    /// the change) or atomically to disk.
    pub async fn write_text_file(&self, path: &Path, content: &str) -> Result<(), FileError> {
        if !self.can_write() {
            return files::write_local(path, content).await;
        }
        let path_str = path.to_string_lossy();
        let req = WriteTextFileRequest {
            session_id: &self.session_id,
            path: &path_str,
            content,
        };
        // The content goes out verbatim: redaction is for what leaves for the
        // model, the log, the trace and the store, never for a file's bytes.
        self.peer
            .request_verbatim::<_, serde_json::Value>(method::FS_WRITE, &req)
            .await
            .map(|_| ())
            .map_err(|e| FileError::Editor {
                path: path.to_owned(),
                message: e.message,
            })
    }

    /// Asks the user; `Cancelled` when the editor cancelled the request.
    pub async fn request_permission(
        &self,
        tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<PermissionOutcome, RpcError> {
        let tool_call = match &self.divert {
            None => tool_call,
            // About the parent's call, which stays in progress.
            Some(d) => ToolCallUpdate {
                tool_call_id: d.tool_call_id.clone(),
                title: tool_call.title.map(|t| format!("{}{t}", d.title_prefix)),
                status: None,
                ..tool_call
            },
        };
        let req = RequestPermissionRequest {
            session_id: &self.session_id,
            tool_call,
            options,
        };
        self.peer
            .request::<_, RequestPermissionResponse>(method::REQUEST_PERMISSION, &req)
            .await
            .map(|r| r.outcome)
    }

    /// `terminal/create`. Only call when [`Editor::has_terminal`].
    pub async fn terminal_create(
        &self,
        command: &str,
        args: Vec<String>,
        env: Vec<NameValue>,
        cwd: &Path,
        output_byte_limit: u64,
    ) -> Result<String, RpcError> {
        let cwd = cwd.to_string_lossy();
        let req = CreateTerminalRequest {
            session_id: &self.session_id,
            command,
            args,
            env,
            cwd: Some(&cwd),
            output_byte_limit: Some(output_byte_limit),
        };
        self.peer
            .request::<_, CreateTerminalResponse>(method::TERMINAL_CREATE, &req)
            .await
            .map(|r| r.terminal_id)
    }

    fn terminal_ref<'a>(&'a self, id: &'a str) -> TerminalRef<'a> {
        TerminalRef {
            session_id: &self.session_id,
            terminal_id: id,
        }
    }

    pub async fn terminal_output(&self, id: &str) -> Result<TerminalOutputResponse, RpcError> {
        self.peer
            .request(method::TERMINAL_OUTPUT, &self.terminal_ref(id))
            .await
    }

    pub async fn terminal_wait_for_exit(&self, id: &str) -> Result<TerminalExitStatus, RpcError> {
        self.peer
            .request(method::TERMINAL_WAIT, &self.terminal_ref(id))
            .await
    }

    /// `terminal/kill`, waiting [`KILL_ANSWER`] at most: the release that
    /// follows it is a MUST (ACP §10), and an editor that never answered the
    /// kill kept its terminal forever (an outside review). Given up, the
    /// request is withdrawn (`$/cancel_request`, as every dropped request).
    pub async fn terminal_kill(&self, id: &str) -> Result<(), RpcError> {
        let target = self.terminal_ref(id);
        let kill = self
            .peer
            .request::<_, serde_json::Value>(method::TERMINAL_KILL, &target);
        match tokio::time::timeout(KILL_ANSWER, kill).await {
            Ok(answer) => answer.map(|_| ()),
            Err(_) => Err(RpcError::internal(format!(
                "the editor did not answer terminal/kill for {id} within {} s",
                KILL_ANSWER.as_secs()
            ))),
        }
    }

    pub async fn terminal_release(&self, id: &str) -> Result<(), RpcError> {
        self.peer
            .request::<_, serde_json::Value>(method::TERMINAL_RELEASE, &self.terminal_ref(id))
            .await
            .map(|_| ())
    }
}
