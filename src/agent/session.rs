//! One session: its roots, mode, remembered permissions, history and the
//! cancellation token of the running turn.
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::acp::McpServer;
use crate::editor::Editor;
use crate::llm::ChatMessage;
use crate::tools::Registry;

use super::modes::Mode;
use super::permission::Grants;

/// The conversation, held for the whole of a turn (turns of one session run one at a time).
#[derive(Default)]
pub struct History {
    pub messages: Vec<ChatMessage>,
    /// Prompt tokens of the last model call (the context in use).
    pub context_tokens: u64,
}

pub struct Session {
    pub id: String,
    /// As given by the editor (absolute).
    pub cwd: PathBuf,
    pub additional_dirs: Vec<PathBuf>,
    /// cwd and additional directories, canonicalised.
    pub roots: Vec<PathBuf>,
    pub editor: Editor,
    pub mcp_servers: Vec<McpServer>,
    pub system_prompt: String,
    pub registry: Registry,
    pub history: tokio::sync::Mutex<History>,
    mode: Mutex<Mode>,
    pub grants: Mutex<Grants>,
    /// Running (or queued) turns: their numbers and tokens.
    turns: Mutex<Vec<(u64, CancellationToken)>>,
    turn_seq: AtomicU64,
    used_tool_ids: Mutex<HashSet<String>>,
    tool_seq: AtomicU64,
}

impl Session {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: String,
        cwd: PathBuf,
        additional_dirs: Vec<PathBuf>,
        editor: Editor,
        mcp_servers: Vec<McpServer>,
        mode: Mode,
        registry: Registry,
    ) -> Arc<Self> {
        let roots = std::iter::once(&cwd)
            .chain(additional_dirs.iter())
            .map(|d| crate::tools::paths::canonicalize_lenient(d))
            .collect();
        let system_prompt = super::prompt::system_prompt(&cwd, &additional_dirs);
        Arc::new(Self {
            id,
            cwd,
            additional_dirs,
            roots,
            editor,
            mcp_servers,
            system_prompt,
            registry,
            history: tokio::sync::Mutex::new(History::default()),
            mode: Mutex::new(mode),
            grants: Mutex::new(Grants::default()),
            turns: Mutex::new(Vec::new()),
            turn_seq: AtomicU64::new(0),
            used_tool_ids: Mutex::new(HashSet::new()),
            tool_seq: AtomicU64::new(0),
        })
    }

    pub fn mode(&self) -> Mode {
        *self.mode.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Switches mode; returns whether it changed.
    pub fn set_mode(&self, mode: Mode) -> bool {
        let mut m = self.mode.lock().unwrap_or_else(|e| e.into_inner());
        let changed = *m != mode;
        *m = mode;
        changed
    }

    /// Starts a turn: a fresh token that `cancel` will trigger, and the turn's number.
    pub fn begin_turn(&self) -> (u64, CancellationToken) {
        let token = CancellationToken::new();
        let seq = self.turn_seq.fetch_add(1, Ordering::Relaxed);
        self.turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((seq, token.clone()));
        (seq, token)
    }

    /// Registers a turn that ends (is unregistered) when the guard is dropped,
    /// however the prompt finishes.
    pub fn register_turn(self: &Arc<Self>) -> TurnGuard {
        let (seq, token) = self.begin_turn();
        TurnGuard {
            session: self.clone(),
            seq,
            token,
        }
    }

    /// Ends turn `seq`.
    pub fn end_turn(&self, seq: u64) {
        self.turns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(s, _)| *s != seq);
    }

    /// `session/cancel`: stops the running turn and any queued one (a no-op when idle).
    pub fn cancel(&self) {
        for (_, token) in self.turns.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            token.cancel();
        }
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
    seq: u64,
    pub token: CancellationToken,
}

impl Drop for TurnGuard {
    fn drop(&mut self) {
        self.session.end_turn(self.seq);
    }
}
