//! Session persistence under `$XDG_DATA_HOME/acp-coder/sessions/`.
//!
//! Each session is an append-only JSON Lines log (`<id>.jsonl`): one record per
//! line, written with a single `write` as soon as the thing it records is
//! complete, so a `kill -9` loses at most the message in flight. A torn or
//! unreadable line is skipped with a log line, never a failure to load. A small
//! sidecar (`<id>.json`, replaced atomically) holds what `session/list` shows.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::acp::{ContentBlock, PlanEntry, ToolCall};
use crate::llm::{ChatMessage, ToolCallRequest, UserPart};

mod message;
pub use message::{StoredAssistant, StoredMessage, StoredPart, StoredToolCall};

pub(in crate::agent) mod lock;
pub(in crate::agent) mod restore;
pub(in crate::agent) mod sync;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot write session data in {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("session {0:?} is not stored")]
    Missing(String),
    /// Another process holds the session open (its log has one writer).
    #[error("session {id:?} is open in another acp-coder process{}; close it there (or end that process) first", pid.map(|p| format!(" (pid {p})")).unwrap_or_default())]
    Locked { id: String, pid: Option<u32> },
}

/// What `session/list` needs, kept beside the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub session_id: String,
    pub cwd: String,
    #[serde(default)]
    pub additional_directories: Vec<String>,
    #[serde(default)]
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum Record {
    /// First line: where the session lives.
    Meta {
        v: u32,
        cwd: String,
        #[serde(default)]
        additional_directories: Vec<String>,
        created_at: String,
    },
    /// A prompt: the editor's blocks (for replay) and what the model got.
    User {
        prompt: Vec<ContentBlock>,
        message: StoredMessage,
    },
    Assistant(StoredAssistant),
    /// A tool call's final state as the editor saw it.
    ToolCall {
        call: Box<ToolCall>,
    },
    /// A tool result as the model got it.
    ToolResult {
        tool_call_id: String,
        content: String,
    },
    Plan {
        entries: Vec<PlanEntry>,
    },
    Mode {
        mode: String,
    },
    Model {
        model: String,
    },
    ReasoningEffort {
        effort: Option<String>,
    },
    Title {
        title: String,
    },
    /// The model history after a compaction (replaces everything before).
    Compaction {
        history: Vec<StoredMessage>,
    },
    /// `/undo` or `/rewind` (issue 19) removed these messages, `[start,
    /// end)`, from the model history as it stood then.
    Undo {
        start: usize,
        end: usize,
    },
    /// `/add-dir` added this additional directory (issue 18 item 1); load
    /// and resume keep it.
    AddDir {
        path: String,
    },
    /// A session cursor announced here (`cursor_update`, unstable): a fork
    /// at it keeps the records before it, and the files as they were when
    /// checkpoint `checkpoint` (0: none) was the last.
    Cursor {
        id: String,
        checkpoint: u64,
    },
    /// Something a newer version wrote; skipped.
    #[serde(other)]
    Unknown,
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// An open session log. Appends are serialized; a failing disk is reported
/// (the returned error) and retried on the next record: what could not be
/// written yet stays queued, byte-exact, and goes out first once the disk
/// takes it again, so a full or unwritable disk loses nothing while the
/// agent runs and never leaves a torn line in the middle of the log.
pub struct Log {
    path: PathBuf,
    file: Mutex<LogState>,
    /// The session's lock, held as long as the log is open ([`crate::agent::store::lock`]).
    _claim: Option<std::sync::Arc<crate::agent::store::lock::Claim>>,
}

#[derive(Default)]
struct LogState {
    file: Option<std::fs::File>,
    /// Bytes of complete records not yet written (the tail of a partly written one first).
    backlog: Vec<u8>,
}

/// Past this much unwritten data the backlog is given up (with a line break,
/// so the next record starts a line of its own).
const MAX_BACKLOG: usize = 64 * 1024 * 1024;

/// Sessions hold conversations, file contents and command output: only the
/// user may read them.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
        .create(dir)
}

fn private_file(path: &Path, append: bool) -> std::io::Result<std::fs::File> {
    use crate::platform::fs::OwnerOnly as _;
    let mut o = std::fs::OpenOptions::new();
    if append {
        o.append(true);
    } else {
        o.write(true).truncate(true);
    }
    o.create(true).owner_only().open(path)
}

pub fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".into())
}

/// Session ids become file names: only a safe alphabet is accepted.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl Store {
    pub fn new(data_dir: &Path) -> Self {
        Store {
            dir: data_dir.join("sessions"),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The agent's data directory, where the sessions directory is.
    pub fn data_dir(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }

    fn log_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Where a session's `/undo` checkpoints live (issue 19).
    pub fn checkpoints_dir(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.checkpoints"))
    }

    fn summary_path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    fn io(&self, path: &Path, source: std::io::Error) -> StoreError {
        StoreError::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// Creates the log of a new session with its meta record.
    ///
    /// Never loses the meta record: when the directory cannot be written the
    /// error is logged and the record waits in the log's backlog (the first
    /// record that cannot be written either is reported to the user).
    pub fn create(&self, summary: &Summary) -> Log {
        let log = self.open(&summary.session_id);
        let saved = log
            .append(&Record::Meta {
                v: 1,
                cwd: summary.cwd.clone(),
                additional_directories: summary.additional_directories.clone(),
                created_at: summary.created_at.clone(),
            })
            .and_then(|()| self.write_summary(summary));
        if let Err(e) = saved {
            tracing::warn!(error = %e, "cannot save the new session yet; retrying with its next record");
        }
        log
    }

    /// Opens an existing log for appending.
    pub fn open(&self, id: &str) -> Log {
        Log {
            path: self.log_path(id),
            file: Mutex::new(LogState::default()),
            _claim: None,
        }
    }

    /// Takes the session's lock for this process ([`crate::agent::store::lock`]).
    pub fn claim(
        &self,
        id: &str,
    ) -> Result<std::sync::Arc<crate::agent::store::lock::Claim>, StoreError> {
        if !valid_id(id) {
            return Err(StoreError::Missing(id.to_owned()));
        }
        crate::agent::store::lock::claim(&self.dir, id)
    }

    pub fn exists(&self, id: &str) -> bool {
        valid_id(id) && self.log_path(id).is_file()
    }

    /// Reads a session's records, skipping (and logging) lines that cannot be read.
    pub fn read(&self, id: &str) -> Result<Vec<Record>, StoreError> {
        if !valid_id(id) {
            return Err(StoreError::Missing(id.to_owned()));
        }
        let path = self.log_path(id);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(StoreError::Missing(id.to_owned()));
            }
            Err(e) => return Err(self.io(&path, e)),
        };
        let mut records = Vec::new();
        let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Record>(line) {
                Ok(Record::Unknown) => tracing::debug!(
                    session = id,
                    line = i + 1,
                    "skipping a record of an unknown kind"
                ),
                Ok(r) => records.push(r),
                Err(e) if i == last => {
                    tracing::warn!(session = id, error = %e, "skipping a torn last record (the agent was stopped mid-write)")
                }
                Err(e) => {
                    tracing::warn!(session = id, line = i + 1, error = %e, "skipping an unreadable record")
                }
            }
        }
        Ok(records)
    }

    pub fn summary(&self, id: &str) -> Option<Summary> {
        let text = std::fs::read(self.summary_path(id)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Replaces the sidecar atomically (write a temporary file, rename).
    pub fn write_summary(&self, summary: &Summary) -> Result<(), StoreError> {
        let path = self.summary_path(&summary.session_id);
        let tmp = self.dir.join(format!(".{}.json.tmp", summary.session_id));
        // The title comes from the first prompt: it passes the redactor too.
        let text = serde_json::to_string(summary).unwrap_or_default();
        let bytes = crate::secrets::redact_string(text).into_bytes();
        private_dir(&self.dir)
            .and_then(|()| private_file(&tmp, false)?.write_all(&bytes))
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| {
                let _ = std::fs::remove_file(&tmp);
                self.io(&path, e)
            })
    }

    /// Every stored session's summary. A session whose sidecar is missing or
    /// unreadable is rebuilt from its log's first record.
    pub fn list(&self) -> Vec<Summary> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".jsonl") else {
                continue;
            };
            if !valid_id(id) {
                continue;
            }
            match self.summary(id) {
                Some(s) => out.push(s),
                None => {
                    if let Some(s) = self.rebuild_summary(id) {
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    fn rebuild_summary(&self, id: &str) -> Option<Summary> {
        let records = self.read(id).ok()?;
        let mut summary = None;
        for r in records {
            match r {
                Record::Meta {
                    cwd,
                    additional_directories,
                    created_at,
                    ..
                } => {
                    summary = Some(Summary {
                        session_id: id.to_owned(),
                        cwd,
                        additional_directories,
                        title: None,
                        updated_at: created_at.clone(),
                        created_at,
                    })
                }
                Record::Title { title } => {
                    if let Some(s) = summary.as_mut() {
                        s.title = Some(title);
                    }
                }
                _ => {}
            }
        }
        let mut summary = summary?;
        if let Ok(modified) = std::fs::metadata(self.log_path(id)).and_then(|m| m.modified()) {
            let t: time::OffsetDateTime = modified.into();
            if let Ok(s) = t.format(&time::format_description::well_known::Rfc3339) {
                summary.updated_at = s;
            }
        }
        Some(summary)
    }

    /// Removes a session's files; a missing session is not an error, one
    /// open in another process is ([`StoreError::Locked`]).
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        if !valid_id(id) || !self.dir.is_dir() {
            return Ok(());
        }
        let claim = self.claim(id)?;
        let lock = claim.path().to_owned();
        for path in [self.log_path(id), self.summary_path(id), lock] {
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(self.io(&path, e)),
            }
        }
        let checkpoints = self.checkpoints_dir(id);
        match std::fs::remove_dir_all(&checkpoints) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(self.io(&checkpoints, e)),
        }
        Ok(())
    }
}

impl Log {
    /// Keeps the session's lock for as long as this log is open.
    pub fn hold(mut self, claim: Option<std::sync::Arc<crate::agent::store::lock::Claim>>) -> Log {
        self._claim = claim;
        self
    }

    /// Appends one record as one line, after whatever earlier records could
    /// not be written yet. On error the unwritten bytes stay queued.
    pub fn append(&self, record: &Record) -> Result<(), StoreError> {
        // Every record passes the one redactor: tool calls' content, what the
        // model said, errors (SECURITY.md §3).
        let line = serde_json::to_string(record).unwrap_or_default();
        let mut line = crate::secrets::redact_string(line).into_bytes();
        line.push(b'\n');
        let mut st = self.file.lock().unwrap_or_else(|e| e.into_inner());
        let io = |source| StoreError::Io {
            path: self.path.clone(),
            source,
        };
        if st.backlog.len() + line.len() > MAX_BACKLOG {
            tracing::error!(path = %self.path.display(), bytes = st.backlog.len(), "giving up on unsaved session records");
            st.backlog.clear();
            st.backlog.push(b'\n');
        }
        st.backlog.extend_from_slice(&line);
        if st.file.is_none() {
            if let Some(dir) = self.path.parent() {
                private_dir(dir).map_err(io)?;
            }
            st.file = Some(private_file(&self.path, true).map_err(io)?);
        }
        let LogState { file, backlog } = &mut *st;
        let f = file.as_mut().expect("opened above");
        while !backlog.is_empty() {
            match f.write(backlog) {
                Ok(0) => {
                    *file = None;
                    return Err(io(std::io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => {
                    backlog.drain(..n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Reopen next time (the file may have been removed or the disk freed).
                    *file = None;
                    return Err(io(e));
                }
            }
        }
        Ok(())
    }

    /// Flushes to stable storage (end of a turn).
    pub fn sync(&self) {
        if let Some(f) = self
            .file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .file
            .as_ref()
        {
            let _ = f.sync_data();
        }
    }
}

/// `rawOutput`-style helper: a JSON value's `output` string, if any.
pub fn raw_output_text(raw: &Option<Value>) -> Option<&str> {
    raw.as_ref()?.get("output")?.as_str()
}

#[cfg(test)]
mod tests;
