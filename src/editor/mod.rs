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
pub use files::{
    FileError, command_guard, looks_binary, read_local, remove_local, watch_background, write_local,
};

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
/// about that tool call, their titles (which lead with the action asked
/// for) followed by `title_suffix`.
#[derive(Clone)]
pub struct Divert {
    pub updates: UpdateObserver,
    pub tool_call_id: String,
    pub title_suffix: String,
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

    /// Sends a `notice` update (schema 1.20) if the client shows notices
    /// (`session.notices`) and it has a title; `false` when nothing was
    /// sent, so the caller says it the way it did before notices.
    pub fn notice(&self, notice: crate::acp::Notice) -> bool {
        if !self.caps.notices() || notice.title.trim().is_empty() {
            return false;
        }
        self.update(&SessionUpdate::Notice(notice));
        true
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
    ///
    /// The disk is asked first what the file is: a directory, a device or a
    /// file over [`files::MAX_TEXT_FILE`] is refused without asking the
    /// editor (an outside review saw the whole of an 8 GiB file asked for,
    /// in a turn and in `/undo`). A large file is read in ranges of lines
    /// (`line`/`limit`), so that no one answer outgrows a frame; the total
    /// stays within the same bound.
    pub async fn read_text_file(&self, path: &Path) -> Result<String, FileError> {
        if !self.can_read() {
            return files::read_local(path).await;
        }
        let text = match files::size_on_disk(path).await? {
            Some(len) if len > files::WHOLE_EDITOR_READ => self.read_ranges(path).await?,
            _ => self.read_range(path, None, None).await?,
        };
        if text.len() as u64 > files::MAX_TEXT_FILE {
            return Err(FileError::TooLarge {
                path: path.to_owned(),
                limit: files::MAX_TEXT_FILE,
            });
        }
        Ok(text)
    }

    /// One `fs/read_text_file` request: lines `line..line+limit` (1-based),
    /// or the whole file.
    async fn read_range(
        &self,
        path: &Path,
        line: Option<u64>,
        limit: Option<u64>,
    ) -> Result<String, FileError> {
        let path_str = path.to_string_lossy();
        let req = ReadTextFileRequest {
            session_id: &self.session_id,
            path: &path_str,
            line,
            limit,
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

    /// The file in ranges of lines of about [`files::EDITOR_RANGE_BYTES`]
    /// each (the line count follows the lines' length so far), until a range
    /// comes back short; stops past [`files::MAX_TEXT_FILE`].
    async fn read_ranges(&self, path: &Path) -> Result<String, FileError> {
        let mut text = String::new();
        let mut lines_read: u64 = 0;
        let mut limit: u64 = files::EDITOR_RANGE_FIRST_LINES;
        loop {
            let chunk = self
                .read_range(path, Some(lines_read + 1), Some(limit))
                .await?;
            let lines = chunk.split_inclusive('\n').count() as u64;
            if lines > limit {
                // The editor sent more than the range: it ignores ranges
                // and this is the whole file (asked at line 1).
                if lines_read == 0 {
                    return Ok(chunk);
                }
                return Err(FileError::Editor {
                    path: path.to_owned(),
                    message: "the editor answered a range of lines with more lines than asked; the file cannot be read in parts".into(),
                });
            }
            // Every range ends at a line break; an editor that leaves the
            // last one out of its answer still had it in the file.
            if !chunk.is_empty() && !text.is_empty() && !text.ends_with('\n') {
                text.push_str(if text.contains("\r\n") { "\r\n" } else { "\n" });
            }
            text.push_str(&chunk);
            lines_read += lines;
            if text.len() as u64 > files::MAX_TEXT_FILE {
                return Err(FileError::TooLarge {
                    path: path.to_owned(),
                    limit: files::MAX_TEXT_FILE,
                });
            }
            if lines < limit || chunk.is_empty() {
                return Ok(text);
            }
            let per_line = (text.len() as u64 / lines_read.max(1)).max(1);
            limit = (files::EDITOR_RANGE_BYTES / per_line).clamp(1, 1 << 20);
        }
    }

    /// Writes a whole text file through the editor (so it can show and review
    /// the change) or atomically to disk, beneath the root of `roots` that
    /// holds it (see [`write_local`]).
    ///
    /// The editor resolves the path itself, so what it is sent must have no
    /// symbolic link in it, checked right before; after it wrote, the file
    /// beneath the root must hold the content (or, for an editor that keeps
    /// the write in an unsaved buffer, its view of the path must, with no
    /// link on the path; a file beneath a root must at least exist there). Otherwise the write may have gone elsewhere:
    /// [`FileError::Moved`], which stops the turn.
    pub async fn write_text_file(
        &self,
        roots: &[std::path::PathBuf],
        path: &Path,
        content: &str,
    ) -> Result<(), FileError> {
        if !self.can_write() {
            return files::write_local(roots, path, content).await;
        }
        // While a command of the agent may be swapping folders, a write
        // beneath a root is made here, where no link can lead it out
        // (`files::gate`); the guard keeps commands from starting until the
        // editor's write is checked.
        let _no_command = if files::is_beneath_a_root(roots, path) {
            match files::editor_write_gate() {
                Some(guard) if !files::background_running() => Some(guard),
                _ => {
                    tracing::debug!(path = %path.display(), "a command is running: written beneath the root, not through the editor");
                    return files::write_local(roots, path, content).await;
                }
            }
        } else {
            None
        };
        files::check_no_link(path)?;
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
            })?;
        files::check_no_link(path)?;
        match files::landed(roots, path, content) {
            Some(true) => return Ok(()),
            // Beneath a root the disk is the proof: a file the editor wrote
            // that is not there went somewhere else (a folder swapped for a
            // link and back), and reading it again through the editor would
            // follow the same link.
            None if files::is_beneath_a_root(roots, path) => {
                return Err(FileError::Moved {
                    path: path.to_owned(),
                    detail: "after the editor wrote it, there is no such file beneath the project"
                        .into(),
                });
            }
            // An editor that keeps the write in its buffer: ask it.
            _ => {}
        }
        match self.read_text_file(path).await {
            Ok(now) if now == content => Ok(()),
            _ => Err(FileError::Moved {
                path: path.to_owned(),
                detail: "after the editor wrote it, the file there does not hold what was written"
                    .into(),
            }),
        }
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
                title: tool_call.title.map(|t| format!("{t}{}", d.title_suffix)),
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
        let cwd = crate::platform::fs::simplified(cwd).to_string_lossy();
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
