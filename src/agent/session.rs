//! One session: its roots, mode, model, remembered permissions, history, the
//! cancellation tokens of its turns, and its persistence.
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use tokio_util::sync::CancellationToken;

use crate::acp::{
    ContentBlock, McpServer, SessionUpdate, ToolCall, ToolCallContent, ToolCallStatus,
};
use crate::editor::Editor;
use crate::llm::ChatMessage;
use crate::skills::Shelf;
use crate::tools::Registry;

use crate::agent::policy::permission::Grants;
use crate::agent::policy::protected::Protected;
use crate::agent::store::{self, Log, Record, StoredMessage, Summary};
use crate::config::Mode;

/// The conversation, held for the whole of a turn (turns of one session run one at a time).
#[derive(Default)]
pub struct History {
    pub messages: Vec<ChatMessage>,
    /// Tokens in context after the last model call (prompt + completion).
    pub context_tokens: u64,
    /// How many messages `context_tokens` covers (later ones are estimated).
    pub counted_messages: usize,
    /// Tokens and cost used by this session so far.
    pub total_prompt_tokens: u64,
    pub total_completion_tokens: u64,
    pub cost_usd: f64,
}

/// Settings of a session that change over its life and are persisted.
#[derive(Debug, Clone, Default)]
pub struct SessionMeta {
    pub title: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// Writes a session's records and follows tool calls to their final state.
pub struct Recorder {
    log: Option<Log>,
    calls: Mutex<HashMap<String, ToolCall>>,
    failed: AtomicBool,
    warned: AtomicBool,
    /// The last message or tool call sent live: where a session cursor can
    /// be anchored (`history::cursors`).
    last_entity: Mutex<Option<crate::acp::CursorAnchor>>,
}

impl Recorder {
    pub fn new(log: Option<Log>) -> Arc<Self> {
        Arc::new(Recorder {
            log,
            calls: Mutex::new(HashMap::new()),
            failed: AtomicBool::new(false),
            warned: AtomicBool::new(false),
            last_entity: Mutex::new(None),
        })
    }

    /// Whether nothing is written: the session is open read-only because
    /// another process holds its log (`session/load` of a session that
    /// `acp-coder a2a` has open).
    pub fn read_only(&self) -> bool {
        self.log.is_none()
    }

    /// Appends a record; failures are logged (and surfaced by [`Session::record`]).
    pub fn record(&self, record: &Record) {
        let Some(log) = &self.log else { return };
        match log.append(record) {
            Ok(()) => self.failed.store(false, Ordering::Relaxed),
            Err(e) => {
                if !self.failed.swap(true, Ordering::Relaxed) {
                    tracing::warn!(error = %e, "session record not saved");
                }
            }
        }
    }

    fn sync(&self) {
        if let Some(log) = &self.log {
            log.sync();
        }
    }

    /// Keeps what a reload must replay: tool calls in their final state, plans.
    pub fn observe(&self, update: &SessionUpdate) {
        self.note_entity(update);
        match update {
            SessionUpdate::ToolCall(call) => {
                self.calls
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(call.tool_call_id.clone(), call.clone());
            }
            SessionUpdate::ToolCallUpdate(u) => {
                let done = {
                    let mut calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
                    let Some(call) = calls.get_mut(&u.tool_call_id) else {
                        return;
                    };
                    call.apply(u);
                    if matches!(
                        call.status,
                        ToolCallStatus::Completed | ToolCallStatus::Failed
                    ) {
                        calls.remove(&u.tool_call_id)
                    } else {
                        None
                    }
                };
                if let Some(call) = done {
                    self.record(&Record::ToolCall {
                        call: Box::new(for_replay(call)),
                    });
                }
            }
            SessionUpdate::Plan(plan) => self.record(&Record::Plan {
                entries: plan.entries.clone(),
            }),
            _ => {}
        }
    }
}

impl Recorder {
    fn note_entity(&self, update: &SessionUpdate) {
        use crate::acp::{AnchorPosition::After, CursorAnchor};
        let anchor = match update {
            SessionUpdate::AgentMessageChunk(c) => {
                c.message_id
                    .clone()
                    .map(|message_id| CursorAnchor::AgentMessage {
                        message_id,
                        position: After,
                    })
            }
            SessionUpdate::AgentThoughtChunk(c) => {
                c.message_id
                    .clone()
                    .map(|message_id| CursorAnchor::AgentThought {
                        message_id,
                        position: After,
                    })
            }
            SessionUpdate::ToolCall(call) => Some(CursorAnchor::ToolCall {
                tool_call_id: call.tool_call_id.clone(),
                position: After,
            }),
            _ => None,
        };
        if let Some(a) = anchor {
            *self.last_entity.lock().unwrap_or_else(|e| e.into_inner()) = Some(a);
        }
    }

    /// The last entity sent live since the last call (a position after it).
    pub fn take_last_entity(&self) -> Option<crate::acp::CursorAnchor> {
        self.last_entity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }
}

/// Terminals are released when a call ends; a replayed call shows their output as text.
fn for_replay(mut call: ToolCall) -> ToolCall {
    let output = store::raw_output_text(&call.raw_output).map(str::to_owned);
    // A subagent's child session is not restored: no reference to it.
    call.content
        .retain(|c| !matches!(c, ToolCallContent::Session { .. }));
    for item in &mut call.content {
        if matches!(item, ToolCallContent::Terminal { .. }) {
            let text = match &output {
                Some(o) if !o.trim().is_empty() => format!("```\n{}\n```", o.trim_end()),
                _ => "(terminal output not kept)".to_owned(),
            };
            *item = ToolCallContent::text(text);
        }
    }
    call
}

/// Who sends a session's prompts and answers its permission requests
/// (DESIGN "Who holds which rights").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Asker {
    /// The user at the editor: the rights the mode gives, and whatever the
    /// user grants by answering; only the user's answers may be kept for
    /// the project.
    #[default]
    User,
    /// An A2A client of `acp-coder a2a`: a guest inside the mode (the
    /// ceiling, from `--mode`) and the directory the server was started
    /// with. It gets no slash command that changes rights or state
    /// (`policy::commands::refused_to_guest`), and its answers are never
    /// kept for the project.
    Guest(Mode),
}

/// What a new or restored session starts from.
pub struct SessionInit {
    pub id: String,
    pub cwd: PathBuf,
    pub additional_dirs: Vec<PathBuf>,
    pub editor: Editor,
    pub mcp_servers: Vec<McpServer>,
    pub mode: Mode,
    pub registry: Registry,
    pub meta: SessionMeta,
    pub history: Vec<ChatMessage>,
    pub used_tool_ids: HashSet<String>,
    pub recorder: Arc<Recorder>,
    /// Paths whose writes ask in every mode (the defaults and the config's).
    pub protected: Protected,
    /// The session's skills (issue 21), shared with its `load_skill` tool.
    pub skills: Shelf,
    /// Shared with its MCP servers: turns lend them the model (MCP sampling).
    pub sampling: Arc<crate::mcp::sampling::Hub>,
    pub asker: Asker,
    /// The config's `memory_files` (`None`: the first of `AGENTS.md`,
    /// `CLAUDE.md`, `GEMINI.md` in each directory).
    pub memory_names: Option<Vec<String>>,
}

pub struct Session {
    pub id: String,
    /// As given by the editor (absolute).
    pub cwd: PathBuf,
    /// As given by the editor, then those `/add-dir` added (see
    /// [`Self::additional_dirs`]).
    additional_dirs: RwLock<Vec<PathBuf>>,
    /// cwd and additional directories, canonicalised (see [`Self::roots`]).
    roots: RwLock<Vec<PathBuf>>,
    pub editor: Editor,
    pub mcp_servers: Vec<McpServer>,
    /// Rebuilt when `/skills reload` changes the skill index.
    system_prompt: RwLock<String>,
    /// The config's `memory_files` (see [`SessionInit::memory_names`]).
    memory_names: Option<Vec<String>>,
    /// The memory files the system prompt holds (outermost first).
    memory: RwLock<Vec<PathBuf>>,
    pub skills: Shelf,
    pub registry: Registry,
    pub history: tokio::sync::Mutex<History>,
    pub meta: Mutex<SessionMeta>,
    /// The session's own mode; [`Self::mode`] narrows it to the guest's
    /// ceiling and to the parent's mode as it is now.
    mode: Mutex<Mode>,
    /// Who asks (the user, or an A2A guest); a subagent's is its parent's.
    pub asker: Asker,
    /// A subagent's parent, whose current mode bounds the child's.
    parent: Option<Weak<Session>>,
    pub grants: Mutex<Grants>,
    pub protected: Protected,
    /// Running and queued turns, and steering messages for them.
    pub turns: super::turns::Turns,
    used_tool_ids: Mutex<HashSet<String>>,
    tool_seq: AtomicU64,
    recorder: Arc<Recorder>,
    store: Option<store::Store>,
    /// Checkpoints for `/undo` and what the tools saw (issue 19).
    /// Shared with its subagents: their changes join the turn's checkpoint.
    pub tracker: Arc<super::history::tracker::Tracker>,
    /// 0 for a session the editor opened; a subagent is one deeper than its parent.
    pub depth: u32,
    /// Subagents of this session's family running at once (`agent::subagent`),
    /// shared with its children; sized from the settings at first use.
    pub subagent_slots: std::sync::OnceLock<Arc<tokio::sync::Semaphore>>,
    /// What the session took from its project's `.acp-coder/config.toml`
    /// (`agent::project`), and the questions still to ask about it.
    pub project: Mutex<crate::agent::project::State>,
    /// What its MCP servers' sampling requests use (issue 18 item 2).
    pub sampling: Arc<crate::mcp::sampling::Hub>,
}

impl Session {
    /// Open read-only: another process holds the session's log
    /// ([`Recorder::read_only`]); prompts are refused with a note.
    pub fn read_only(&self) -> bool {
        self.recorder.read_only()
    }

    pub fn new(init: SessionInit, store: Option<store::Store>) -> Arc<Self> {
        Arc::new(Self::build(init, store))
    }

    /// A subagent of `parent` (`agent::subagent`): its own id, context and
    /// tool calls, shown through `editor`; the parent's roots, tools,
    /// protected paths, skills, model choice, asker and permissions (kept
    /// ones included), one level deeper, sharing its checkpoints and its
    /// limit on running subagents. Not stored. Its mode is `mode` (full-auto:
    /// no bound of its own) narrowed to the parent's mode as it is at each
    /// call (DESIGN "Who holds which rights"): a narrower mode set on the
    /// parent applies to the running child at once.
    pub fn new_child(parent: &Arc<Session>, id: String, editor: Editor, mode: Mode) -> Arc<Self> {
        let meta = parent.meta();
        let init = SessionInit {
            id,
            cwd: parent.cwd.clone(),
            additional_dirs: parent.additional_dirs(),
            editor,
            mcp_servers: parent.mcp_servers.clone(),
            mode,
            registry: parent.registry.clone(),
            meta: SessionMeta {
                model: meta.model,
                reasoning_effort: meta.reasoning_effort,
                ..SessionMeta::default()
            },
            history: Vec::new(),
            used_tool_ids: HashSet::new(),
            recorder: Recorder::new(None),
            protected: parent.protected.clone(),
            skills: parent.skills.clone(),
            sampling: Arc::new(crate::mcp::sampling::Hub::default()),
            asker: parent.asker,
            memory_names: parent.memory_names.clone(),
        };
        let mut child = Self::build(init, None);
        child.parent = Some(Arc::downgrade(parent));
        child.tracker = parent.tracker.clone();
        child.depth = parent.depth + 1;
        child.subagent_slots = parent.subagent_slots.clone();
        *child.grants.get_mut().unwrap_or_else(|e| e.into_inner()) = parent
            .grants
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        Arc::new(child)
    }

    fn build(init: SessionInit, store: Option<store::Store>) -> Self {
        let roots: Vec<PathBuf> = std::iter::once(&init.cwd)
            .chain(init.additional_dirs.iter())
            .map(|d| crate::tools::paths::canonicalize_lenient(d))
            .collect();
        let prompt = crate::agent::engine::model_text::system_prompt(
            &init.cwd,
            &init.additional_dirs,
            init.memory_names.as_deref(),
        );
        let system_prompt = prompt.text + &init.skills.get().index;
        let checkpoints = store.as_ref().map(|s| s.checkpoints_dir(&init.id));
        // The project's kept permissions: keyed by the canonical cwd.
        let kept = store
            .as_ref()
            .zip(roots.first())
            .map(|(s, root)| crate::agent::policy::kept::Kept::open(s.data_dir(), root));
        let recorder = init.recorder.clone();
        let editor = init
            .editor
            .with_observer(Arc::new(move |u| recorder.observe(u)));
        Self {
            id: init.id,
            cwd: init.cwd,
            additional_dirs: RwLock::new(init.additional_dirs),
            roots: RwLock::new(roots),
            editor,
            mcp_servers: init.mcp_servers,
            system_prompt: RwLock::new(system_prompt),
            memory_names: init.memory_names,
            memory: RwLock::new(prompt.memory),
            skills: init.skills,
            registry: init.registry,
            history: tokio::sync::Mutex::new(History {
                messages: init.history,
                ..History::default()
            }),
            meta: Mutex::new(init.meta),
            mode: Mutex::new(init.mode),
            asker: init.asker,
            parent: None,
            grants: Mutex::new(Grants::with_kept(kept)),
            protected: init.protected,
            turns: super::turns::Turns::default(),
            used_tool_ids: Mutex::new(init.used_tool_ids),
            tool_seq: AtomicU64::new(0),
            recorder: init.recorder,
            tracker: Arc::new(super::history::tracker::Tracker::new(checkpoints)),
            depth: 0,
            subagent_slots: std::sync::OnceLock::new(),
            project: Mutex::default(),
            sampling: init.sampling,
            store,
        }
    }

    /// The additional directories: the editor's, then those `/add-dir` added.
    pub fn additional_dirs(&self) -> Vec<PathBuf> {
        self.additional_dirs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The session roots: cwd and additional directories, canonicalised.
    /// Inside them the mode decides (`policy::permission`); sandboxed
    /// commands may write there (`tools::sandbox`).
    pub fn roots(&self) -> Vec<PathBuf> {
        self.roots.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Adds `dir` (absolute, an existing directory) as an additional
    /// directory (`/add-dir`, `policy::add_dir`): the same consequences as
    /// one in `session/new`'s `additionalDirectories` (a root for
    /// permissions and the sandbox, named in the system prompt, its skills
    /// found, an MCP root: servers get `roots/list_changed`), recorded in the
    /// session log so load and resume keep it.
    pub fn add_dir(&self, dir: PathBuf) {
        self.additional_dirs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(dir.clone());
        self.roots
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(crate::tools::paths::canonicalize_lenient(&dir));
        self.record(&Record::AddDir {
            path: dir.display().to_string(),
        });
        self.reload_skills();
        let meta = self.meta();
        if let Some(store) = &self.store
            && let Err(e) = store.write_summary(&self.summary_of(&meta))
        {
            tracing::warn!(error = %e, "session summary not saved");
        }
        self.registry.roots_changed(&crate::mcp::client::root_dirs(
            &self.cwd,
            &self.additional_dirs(),
        ));
    }

    /// The system prompt the next model call gets.
    pub fn system_prompt(&self) -> String {
        self.system_prompt
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Reads the skills on disk again (`/skills reload`, issue 21): the index
    /// in the system prompt, `load_skill` and the skill commands follow.
    pub fn reload_skills(&self) {
        let additional = self.additional_dirs();
        // The project's own skill folders (its trusted settings' `skills`)
        // first: they are the most specific.
        let mut places: Vec<crate::skills::Place> = self
            .project
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .applied
            .skills
            .iter()
            .map(|dir| crate::skills::Place {
                dir: dir.clone(),
                scope: crate::skills::Scope::Project,
            })
            .collect();
        places.extend(crate::skills::places_for_session(&self.cwd, &additional));
        let catalog = crate::skills::discover(&places);
        let prompt = crate::agent::engine::model_text::system_prompt(
            &self.cwd,
            &additional,
            self.memory_names.as_deref(),
        );
        let text = prompt.text + &catalog.index;
        self.skills.set(catalog);
        *self
            .system_prompt
            .write()
            .unwrap_or_else(|e| e.into_inner()) = text;
        *self.memory.write().unwrap_or_else(|e| e.into_inner()) = prompt.memory;
    }

    /// Reads the memory files again (`/memory`): the system prompt follows,
    /// with the same skills.
    pub fn reread_memory(&self) {
        let prompt = crate::agent::engine::model_text::system_prompt(
            &self.cwd,
            &self.additional_dirs(),
            self.memory_names.as_deref(),
        );
        let text = prompt.text + &self.skills.get().index;
        *self
            .system_prompt
            .write()
            .unwrap_or_else(|e| e.into_inner()) = text;
        *self.memory.write().unwrap_or_else(|e| e.into_inner()) = prompt.memory;
    }

    /// The memory files the system prompt holds (outermost first).
    pub fn memory_files(&self) -> Vec<PathBuf> {
        self.memory
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The config's `memory_files`, or `None` for the default.
    pub fn memory_names(&self) -> Option<&[String]> {
        self.memory_names.as_deref()
    }

    /// The mode in force: the session's own, no wider than a guest's
    /// ceiling, and for a subagent no wider than its parent's now (read-only
    /// once the parent is gone).
    pub fn mode(&self) -> Mode {
        let mut mode = *self.mode.lock().unwrap_or_else(|e| e.into_inner());
        if let Asker::Guest(ceiling) = self.asker {
            mode = mode.narrower(ceiling);
        }
        match self.parent.as_ref().map(Weak::upgrade) {
            None => mode,
            Some(Some(parent)) => mode.narrower(parent.mode()),
            Some(None) => Mode::ReadOnly,
        }
    }

    /// A subagent's parent, while it lives.
    pub fn parent(&self) -> Option<Arc<Session>> {
        self.parent.as_ref().and_then(Weak::upgrade)
    }

    /// Switches mode; returns whether it changed.
    pub fn set_mode(&self, mode: Mode) -> bool {
        let changed = {
            let mut m = self.mode.lock().unwrap_or_else(|e| e.into_inner());
            let changed = *m != mode;
            *m = mode;
            changed
        };
        if changed {
            self.record(&Record::Mode {
                mode: mode.id().into(),
            });
        }
        changed
    }

    /// Sets the model used from the next model call on and records it;
    /// whether it changed.
    pub fn store_model(&self, model: &str) -> bool {
        let changed = {
            let mut meta = self.meta.lock().unwrap_or_else(|e| e.into_inner());
            let changed = meta.model.as_deref() != Some(model);
            meta.model = Some(model.to_owned());
            changed
        };
        if changed {
            self.record(&Record::Model {
                model: model.to_owned(),
            });
        }
        changed
    }

    /// Sets the reasoning effort and records it.
    pub fn store_effort(&self, effort: &str) {
        self.meta
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reasoning_effort = Some(effort.to_owned());
        self.record(&Record::ReasoningEffort {
            effort: Some(effort.to_owned()),
        });
    }

    pub fn meta(&self) -> SessionMeta {
        self.meta.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The recorder (the last live entity, for session cursors).
    pub fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    /// Appends a record to the session log. The first failure in a row is told
    /// to the user once: the conversation goes on, but may not be restorable.
    pub fn record(&self, record: &Record) {
        self.recorder.record(record);
        // Told inside a turn only: a strict client drops (or fails on) agent
        // text outside one (a mode switch is recorded between turns). A
        // failure then is told at the next one inside a turn.
        if self.recorder.failed.load(Ordering::Relaxed)
            && self.turns.len() > 0
            && !self.recorder.warned.swap(true, Ordering::Relaxed)
        {
            let dir = self
                .store
                .as_ref()
                .map(|s| s.dir().display().to_string())
                .unwrap_or_default();
            self.editor.update(&SessionUpdate::agent_text(
                format!(
                    "\n\n> ⚠ This session could not be saved to {dir} (see the log for the reason). \
                     It keeps working, but it may not be restorable after a restart.\n\n"
                ),
                None,
            ));
        }
    }

    /// Records a prompt (blocks for replay, the model's message for history).
    pub fn record_user(&self, prompt: &[ContentBlock], message: &ChatMessage) {
        if let Some(message) = StoredMessage::from_chat(message) {
            let prompt = prompt
                .iter()
                .filter(|b| !matches!(b, ContentBlock::Unknown))
                .cloned()
                .collect();
            self.record(&Record::User { prompt, message });
        }
    }

    /// Records a finished assistant message.
    pub fn record_message(&self, message: &ChatMessage) {
        match StoredMessage::from_chat(message) {
            Some(StoredMessage::Assistant(a)) => self.record(&Record::Assistant(a)),
            Some(StoredMessage::Tool {
                tool_call_id,
                content,
            }) => self.record(&Record::ToolResult {
                tool_call_id,
                content,
            }),
            _ => {}
        }
    }

    /// Ends a turn for persistence: stable storage and a fresh `updatedAt`.
    ///
    /// The disk work runs off the runtime's workers: an fsync can take tens of
    /// milliseconds, and on this runtime's worker it held up the tasks queued
    /// behind the turn, among them the writer with the turn's last
    /// `agent_message_chunk` (the bench's paced stream saw its last chunk
    /// arrive 10–28 ms late). The caller still waits for it, so a turn is on
    /// disk before its response is sent. It runs on one long-lived thread,
    /// not tokio's blocking pool, which grew by a thread now and then
    /// (`store::sync`).
    pub async fn touch(self: &Arc<Self>) {
        let session = self.clone();
        store::sync::run(move || session.touch_now()).await;
    }

    fn touch_now(&self) {
        self.recorder.sync();
        let summary = {
            let mut meta = self.meta.lock().unwrap_or_else(|e| e.into_inner());
            meta.updated_at = store::now_rfc3339();
            self.summary_of(&meta)
        };
        if let Some(store) = &self.store
            && let Err(e) = store.write_summary(&summary)
        {
            tracing::warn!(error = %e, "session summary not saved");
        }
    }

    pub fn summary_of(&self, meta: &SessionMeta) -> Summary {
        Summary {
            session_id: self.id.clone(),
            cwd: self.cwd.display().to_string(),
            additional_directories: self
                .additional_dirs()
                .iter()
                .map(|d| d.display().to_string())
                .collect(),
            title: meta.title.clone(),
            created_at: meta.created_at.clone(),
            updated_at: meta.updated_at.clone(),
        }
    }

    /// Registers a turn at the end of the session's line; it ends (is
    /// unregistered) when the guard is dropped, however the prompt finishes.
    pub fn register_turn(self: &Arc<Self>) -> TurnGuard {
        let (seq, token, ahead) = self.turns.register();
        TurnGuard {
            session: self.clone(),
            seq,
            token,
            ahead,
        }
    }

    /// `session/cancel`: stops the running turn; queued prompts stay queued.
    pub fn cancel(&self) {
        self.turns.cancel_running();
    }

    /// Stops every turn, running and queued (close, delete, reload, shutdown).
    pub fn cancel_all(&self) {
        self.turns.cancel_all();
    }

    /// A tool-call id unique in this session: the model's own id when it is
    /// unused, a generated one otherwise (DESIGN §4).
    pub fn claim_tool_id(&self, model_id: &str) -> String {
        let mut used = self.used_tool_ids.lock().unwrap_or_else(|e| e.into_inner());
        if !model_id.is_empty() && used.insert(model_id.to_owned()) {
            return model_id.to_owned();
        }
        loop {
            let n = self.tool_seq.fetch_add(1, Ordering::Relaxed) + 1;
            let id = format!("tool_{n}");
            if used.insert(id.clone()) {
                return id;
            }
        }
    }
}

/// A registered turn (see [`Session::register_turn`]).
pub struct TurnGuard {
    session: Arc<Session>,
    pub seq: u64,
    pub token: CancellationToken,
    /// Turns ahead of this one in the line when it was registered.
    pub ahead: usize,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.session.turns.end(self.seq);
    }
}
