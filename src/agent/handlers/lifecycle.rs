//! Session lifecycle handlers (ACP §5.1, §5.3, §5.4): new, load, resume,
//! list, close, delete.
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::acp::{
    AvailableCommandsUpdate, Empty, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse, SessionInfo,
    SessionInfoUpdate, SessionRef, SessionUpdate,
};
use crate::config::Settings;
use crate::editor::Editor;
use crate::llm::ChatMessage;
use crate::rpc::{Reply, RpcError};
use crate::skills::Shelf;
use crate::tools::paths::canonicalize_lenient;
use crate::tools::{Registry, SkillTools};

use crate::agent::policy::options;
use crate::agent::session::{Recorder, Session, SessionInit, SessionMeta};
use crate::agent::store::restore::{Restored, restore};
use crate::agent::store::{self, StoreError, Summary};
use crate::agent::{Agent, policy::commands};
use crate::config::Mode;

/// Sessions per `session/list` page.
const PAGE: usize = 50;

/// Where a session works: its cwd, additional directories and MCP servers.
type Place = (PathBuf, Vec<PathBuf>, Vec<McpServer>);

/// What differs between a new session and a restored one.
struct Opening {
    id: String,
    cwd: PathBuf,
    additional: Vec<PathBuf>,
    mcp_servers: Vec<McpServer>,
    mode: Mode,
    meta: SessionMeta,
    history: Vec<ChatMessage>,
    used_tool_ids: HashSet<String>,
    /// `None`: open read-only, another process holds the log.
    log: Option<store::Log>,
}

impl Opening {
    /// A session without history yet; a restored one fills in its past.
    fn fresh(
        id: &str,
        place: Place,
        mode: Mode,
        meta: SessionMeta,
        log: Option<store::Log>,
    ) -> Self {
        let (cwd, additional, mcp_servers) = place;
        Opening {
            id: id.to_string(),
            cwd,
            additional,
            mcp_servers,
            mode,
            meta,
            history: Vec::new(),
            used_tool_ids: HashSet::new(),
            log,
        }
    }
}

impl Agent {
    /// `session/new` (ACP §5.1).
    pub(in crate::agent) async fn new_session(
        self: &Arc<Self>,
        req: NewSessionRequest,
    ) -> Result<Reply, RpcError> {
        let cwd = existing_dir("params.cwd", &req.cwd)?;
        let additional = additional_dirs(&req.additional_directories)?;
        for (i, dir) in additional.iter().enumerate() {
            existing_dir(
                &format!("params.additionalDirectories[{i}]"),
                &dir.to_string_lossy(),
            )?;
        }
        let settings = self.usable_settings()?;
        let model = self.model()?;
        // What earlier requests set up (`initialize`'s capabilities, the
        // provider) is read; the slow rest (the model list, MCP servers) must
        // not hold up other sessions' requests, and no later request can
        // name this session before its id is answered.
        crate::rpc::release_order();
        let listed = self.catalog.listed(&settings, model.as_ref()).await;
        let now = store::now_rfc3339();
        let meta = SessionMeta {
            title: None,
            model: options::default_model(&settings, &listed),
            reasoning_effort: None,
            created_at: now.clone(),
            updated_at: now,
        };
        let id = new_session_id();
        let summary = Summary {
            session_id: id.clone(),
            cwd: req.cwd.clone(),
            additional_directories: req.additional_directories.clone(),
            title: None,
            created_at: meta.created_at.clone(),
            updated_at: meta.updated_at.clone(),
        };
        // The new session's log has this process as its one writer.
        let claim = self.store.claim(&id).map_err(|e| {
            tracing::warn!(session = %id, error = %e, "cannot lock the new session's log");
        });
        let log = self.store.create(&summary).hold(claim.ok());
        let mut unborn = Unborn::new(self, &id);
        let place = (cwd, additional, req.mcp_servers);
        let opening = Opening::fresh(&id, place, settings.default_mode, meta, Some(log));
        let session = self.open(opening, &settings).await;
        tracing::info!(session = %id, "session created");
        let reply = self.answer_new(id, session).await;
        unborn.born = true;
        reply
    }

    /// The answer to `session/new` and `session/fork` (ACP §5.1): the id, the
    /// modes and the options, then the commands.
    pub(super) async fn answer_new(
        &self,
        session_id: String,
        session: Arc<Session>,
    ) -> Result<Reply, RpcError> {
        let response = NewSessionResponse {
            session_id,
            modes: Mode::state(session.mode()),
            config_options: self.session_options(&session).await,
            meta: crate::llm::discover::first_session_notice(&self.settings())
                .map(|notice| serde_json::json!({"acp-coder": {"notice": notice}})),
        };
        self.reply_then_commands(&response, session)
    }

    /// A stored session's records; a missing one is `unknown session`, an
    /// unreadable one says why (ACP §5.3).
    pub(super) fn read_records(&self, id: &str) -> Result<Vec<store::Record>, RpcError> {
        match self.store.read(id) {
            Ok(r) => Ok(r),
            Err(StoreError::Missing(_)) => Err(unknown_session(id)),
            // The session exists but its file cannot be read (permissions):
            // say exactly that rather than "internal error".
            Err(e) => Err(RpcError::not_found(format!(
                "session {id:?} cannot be read: {e}"
            ))),
        }
    }

    /// `session/load` (ACP §5.3): replays the whole conversation, then answers.
    pub(in crate::agent) async fn load_session(
        self: &Arc<Self>,
        req: LoadSessionRequest,
    ) -> Result<Reply, RpcError> {
        self.reopen(req, true).await
    }

    /// `session/resume` (ACP §5.4): restores the session without replaying it.
    pub(in crate::agent) async fn resume_session(
        self: &Arc<Self>,
        req: LoadSessionRequest,
    ) -> Result<Reply, RpcError> {
        self.reopen(req, false).await
    }

    async fn reopen(
        self: &Arc<Self>,
        req: LoadSessionRequest,
        replay: bool,
    ) -> Result<Reply, RpcError> {
        let (session, restored) = self.restore_session(req).await?;
        if replay {
            for update in &restored.replay {
                session.editor.replay(update);
            }
        }
        if let Some(holder) = &restored.held_by {
            session
                .editor
                .replay(&SessionUpdate::agent_text(read_only_note(holder), None));
        }
        let response = LoadSessionResponse {
            modes: Mode::state(session.mode()),
            config_options: self.session_options(&session).await,
        };
        self.reply_then_commands(&response, session)
    }

    pub(in crate::agent) async fn restore_session(
        self: &Arc<Self>,
        req: LoadSessionRequest,
    ) -> Result<(Arc<Session>, Restored), RpcError> {
        let cwd = absolute_dir("params.cwd", &req.cwd)?;
        let mut additional = additional_dirs(&req.additional_directories)?;
        let settings = self.usable_settings()?;
        let records = self.read_records(&req.session_id)?;
        // One writer per log: a session another process holds (`acp-coder
        // a2a` serving it as a context, another editor) opens read-only
        // (this process's own live copy shares the claim).
        let mut held_by = None;
        let claim = match self.store.claim(&req.session_id) {
            Ok(c) => Some(c),
            Err(StoreError::Locked { pid, .. }) => {
                tracing::info!(session = %req.session_id, holder = ?pid, "session open in another process: opened read-only");
                held_by = Some(pid);
                None
            }
            Err(e) => {
                tracing::warn!(session = %req.session_id, error = %e, "cannot lock the session's log; loading it unlocked");
                None
            }
        };
        // A live copy (the editor reopened a thread) is replaced by the stored one.
        if let Some(old) = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req.session_id)
        {
            old.cancel_all();
        }
        let restored = restore(records);
        // Directories `/add-dir` added (issue 18 item 1) come back with the
        // session; one removed since is left out.
        for dir in restored.added_directories.iter().map(PathBuf::from) {
            if !dir.is_dir() {
                tracing::warn!(session = %req.session_id, dir = %dir.display(), "a directory added with /add-dir is gone; not restored");
            } else if !additional.contains(&dir) {
                additional.push(dir);
            }
        }
        let model = self.model()?;
        let listed = self.catalog.listed(&settings, model.as_ref()).await;
        let mode = restored
            .mode
            .as_deref()
            .and_then(Mode::parse)
            .unwrap_or(settings.default_mode);
        let now = store::now_rfc3339();
        let meta = SessionMeta {
            title: restored.title.clone(),
            model: restored
                .model
                .clone()
                .or_else(|| options::default_model(&settings, &listed)),
            reasoning_effort: restored.reasoning_effort.clone(),
            created_at: restored.created_at.clone().unwrap_or_else(|| now.clone()),
            updated_at: now,
        };
        let id = req.session_id.clone();
        let place = (cwd, additional, req.mcp_servers);
        let log = held_by.is_none().then(|| self.store.open(&id).hold(claim));
        let mut opening = Opening::fresh(&id, place, mode, meta, log);
        opening.history = restored.history.clone();
        opening.used_tool_ids = restored.tool_ids.clone();
        let session = self.open(opening, &settings).await;
        tracing::info!(session = %id, messages = restored.history.len(), "session restored");
        let mut restored = restored;
        restored.held_by = held_by;
        Ok((session, restored))
    }

    /// The settings, if sessions can run on them: the config file loaded and
    /// credentials present (ACP §4 `auth_required` otherwise).
    pub(in crate::agent) fn usable_settings(
        &self,
    ) -> Result<Arc<crate::config::Settings>, RpcError> {
        self.check_logged_in()?;
        let settings = self.settings();
        if let Some(e) = &settings.load_error {
            return Err(RpcError::internal(format!(
                "{e}; fix the file, then restart the agent or call authenticate"
            )));
        }
        if let Some(what) = settings.missing_credentials() {
            return Err(RpcError::auth_required(what));
        }
        if let Some(e) = self.providers.disabled() {
            return Err(e);
        }
        Ok(settings)
    }

    /// Builds a new or restored session (its editor, skills, tools and MCP
    /// servers, which are (re)connected now: ACP §5.1, §5.3, §5.4) and
    /// registers it.
    async fn open(&self, o: Opening, settings: &Settings) -> Arc<Session> {
        crate::tools::sandbox::prefetch();
        let editor = Editor::new(self.peer.clone(), self.client_caps(), &o.id);
        let skills = find_skills(&o.cwd, &o.additional).await;
        let hooks = crate::mcp::Hooks {
            sampling: Arc::default(),
            acp_links: Some(self.mcp_links.clone()),
        };
        let registry = tools_for(
            &o.mcp_servers,
            settings,
            &o.cwd,
            &o.additional,
            &editor,
            &skills,
            &hooks,
        )
        .await;
        let sampling = hooks.sampling;
        let id = o.id.clone();
        let init = SessionInit {
            id: o.id,
            cwd: o.cwd,
            additional_dirs: o.additional,
            editor,
            mcp_servers: o.mcp_servers,
            mode: o.mode,
            registry,
            meta: o.meta,
            history: o.history,
            used_tool_ids: o.used_tool_ids,
            recorder: Recorder::new(o.log),
            protected: protected_for(settings),
            skills,
            sampling,
        };
        let session = Session::new(init, Some(self.store.clone()));
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, session.clone());
        session
    }

    /// The response, then (strictly after it) the session's commands and title.
    pub(super) fn reply_then_commands<T: serde::Serialize>(
        &self,
        response: &T,
        session: Arc<Session>,
    ) -> Result<Reply, RpcError> {
        let mut reply = crate::agent::to_raw(response)?;
        reply.after = Some(Box::new(move || {
            send_commands(&session);
            watch_commands(&session);
            let meta = session.meta();
            if meta.title.is_some() {
                session
                    .editor
                    .update(&SessionUpdate::SessionInfoUpdate(SessionInfoUpdate {
                        title: meta.title,
                        updated_at: Some(meta.updated_at),
                    }));
            }
        }));
        Ok(reply)
    }

    /// `session/list` (ACP §5.4): newest first, optionally only one cwd.
    pub(in crate::agent) fn list_sessions(
        &self,
        req: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, RpcError> {
        let offset = match req.cursor.as_deref() {
            None | Some("") => 0,
            Some(c) => decode_cursor(c).ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "params.cursor: {c:?} is not a cursor this agent issued"
                ))
            })?,
        };
        let filter = req
            .cwd
            .as_deref()
            .map(|c| canonicalize_lenient(Path::new(c)));
        let unborn = self
            .unborn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut all: Vec<Summary> = self
            .store
            .list()
            .into_iter()
            .filter(|s| !unborn.contains(&s.session_id))
            .filter(|s| {
                filter
                    .as_ref()
                    .is_none_or(|f| canonicalize_lenient(Path::new(&s.cwd)) == *f)
            })
            .collect();
        all.sort_by(|a, b| {
            b.updated_at
                .cmp(&a.updated_at)
                .then_with(|| a.session_id.cmp(&b.session_id))
        });
        let next = (offset + PAGE < all.len()).then(|| encode_cursor(offset + PAGE));
        let sessions = all
            .into_iter()
            .skip(offset)
            .take(PAGE)
            .map(|s| SessionInfo {
                session_id: s.session_id,
                cwd: s.cwd,
                additional_directories: s.additional_directories,
                title: s.title,
                updated_at: Some(s.updated_at),
            })
            .collect();
        Ok(ListSessionsResponse {
            sessions,
            next_cursor: next,
        })
    }

    /// `session/close` (ACP §5.4): cancels a running turn and frees the session.
    pub(in crate::agent) fn close_session(&self, req: SessionRef) -> Result<Empty, RpcError> {
        let session = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req.session_id);
        match session {
            Some(s) => {
                s.cancel_all();
                s.registry.shutdown();
                crate::tools::process::background::kill_session(&s.id);
                tracing::info!(session = %req.session_id, "session closed");
                Ok(Empty::default())
            }
            None => Err(unknown_session(&req.session_id)),
        }
    }

    /// `session/delete` (ACP §5.4): forgets a session; unknown ids succeed silently.
    pub(in crate::agent) fn delete_session(&self, req: SessionRef) -> Result<Empty, RpcError> {
        if let Some(s) = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&req.session_id)
        {
            s.cancel_all();
        }
        crate::tools::process::background::kill_session(&req.session_id);
        self.store.delete(&req.session_id).map_err(|e| match e {
            StoreError::Locked { .. } => locked(&req.session_id, &e),
            e => RpcError::internal(format!(
                "could not delete session {:?}: {e}",
                req.session_id
            )),
        })?;
        tracing::info!(session = %req.session_id, "session deleted");
        Ok(Empty::default())
    }
}

/// Sends the session's commands (ACP §7 `available_commands_update`):
/// built-ins, prompt files, then its skills.
pub(in crate::agent) fn send_commands(session: &Session) {
    let available = commands::to_acp(&session_commands(session));
    session
        .editor
        .update(&SessionUpdate::AvailableCommandsUpdate(
            AvailableCommandsUpdate {
                available_commands: available,
            },
        ));
}

/// Every command the session offers now.
pub(in crate::agent) fn session_commands(session: &Session) -> Vec<commands::Command> {
    let config_dir = crate::config::config_home().join("acp-coder");
    let list = commands::with_skills(
        commands::available(&session.cwd, &config_dir),
        &session.skills.get(),
    );
    commands::with_sources(list, session.registry.source_commands())
}

/// Sends the commands again whenever a tool source's change (an MCP server
/// got ready or stopped, or sent `prompts/list_changed`).
fn watch_commands(session: &Arc<Session>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    for mut rx in session.registry.commands_changed() {
        let weak = Arc::downgrade(session);
        rt.spawn(async move {
            while rx.changed().await.is_ok() {
                match weak.upgrade() {
                    Some(s) => send_commands(&s),
                    None => return,
                }
            }
        });
    }
}

/// The skills of a session rooted at `cwd` (issue 21), read off the runtime's
/// workers (a few small files, but file-system work all the same).
async fn find_skills(cwd: &Path, additional: &[PathBuf]) -> Shelf {
    let places = crate::skills::places_for_session(cwd, additional);
    match tokio::task::spawn_blocking(move || crate::skills::discover(&places)).await {
        Ok(catalog) => Shelf::new(catalog),
        Err(e) => {
            tracing::warn!(error = %e, "skills not read");
            Shelf::default()
        }
    }
}

/// The built-in tools, `load_skill` while there are skills, and the tools of
/// the session's MCP servers (the editor's and the configured ones, started
/// concurrently within a bounded time).
async fn tools_for(
    servers: &[crate::acp::McpServer],
    settings: &crate::config::Settings,
    cwd: &Path,
    additional: &[PathBuf],
    editor: &Editor,
    skills: &Shelf,
    hooks: &crate::mcp::Hooks,
) -> Registry {
    // The editor's MCP env values and headers are secrets from now on.
    for server in servers {
        let pairs = match server {
            crate::acp::McpServer::Http(h) | crate::acp::McpServer::Sse(h) => &h.headers,
            crate::acp::McpServer::Stdio(s) | crate::acp::McpServer::StdioUntagged(s) => &s.env,
            crate::acp::McpServer::Acp(_) => continue,
        };
        for p in pairs {
            crate::secrets::learn_named(&p.name, &p.value);
        }
    }
    let mut registry = Registry::builtin();
    // `ask_user` exists only where the editor can show its form (issue 17).
    if editor.can_elicit_form() {
        registry.add(Arc::new(crate::tools::AskUser));
    }
    registry.add_source(Arc::new(SkillTools::new(skills.clone())));
    crate::mcp::attach(
        &mut registry,
        servers,
        settings,
        cwd,
        additional,
        editor,
        hooks,
    )
    .await;
    registry
}

/// A `session/new` still being answered. Dropped before it is (`$/cancel_request`
/// aborted the request, say while an MCP server was slow to start), it
/// takes the session back: out of the live sessions (its MCP servers
/// stopped) and off the disk, so that no session the editor was told failed
/// shows in `session/list` (an outside review found one, with its server
/// still running). Once answered (`born`) it does nothing.
struct Unborn {
    agent: Arc<Agent>,
    id: String,
    born: bool,
}

impl Unborn {
    fn new(agent: &Arc<Agent>, id: &str) -> Unborn {
        agent
            .unborn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_owned());
        Unborn {
            agent: agent.clone(),
            id: id.to_owned(),
            born: false,
        }
    }
}

impl Drop for Unborn {
    fn drop(&mut self) {
        self.agent
            .unborn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        if self.born {
            return;
        }
        let live = self
            .agent
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        if let Some(s) = live {
            s.cancel_all();
            s.registry.shutdown();
        }
        // The aborted request still holds the session's log (and its lock)
        // while it is being dropped: the files go once it is gone.
        let (store, id) = (self.agent.store.clone(), self.id.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                match store.delete(&id) {
                    Ok(()) => tracing::info!(session = %id, "session/new was aborted; its files are removed"),
                    Err(e) => tracing::warn!(session = %id, error = %e, "cannot remove an aborted session's files"),
                }
            });
        }
    }
}

/// A fresh, unguessable session id (also a safe file name, `store::valid_id`).
pub(in crate::agent) fn new_session_id() -> String {
    format!("sess_{:016x}{:08x}", fastrand::u64(..), fastrand::u32(..))
}

pub(in crate::agent) fn unknown_session(id: &str) -> RpcError {
    RpcError::not_found(format!(
        "unknown session {id:?}: create one with session/new first"
    ))
    .with_data(serde_json::json!({ "sessionId": id }))
}

/// What a session opened read-only says, at the end of its replay and to
/// each prompt: who holds it and how to go on.
pub(in crate::agent) fn read_only_note(holder: &Option<u32>) -> String {
    let who = match holder {
        Some(pid) => {
            format!("another acp-coder process (pid {pid}), such as `acp-coder a2a` serving it,")
        }
        None => "another acp-coder process, such as `acp-coder a2a` serving it,".to_owned(),
    };
    format!(
        "This session is open in {who} so it is shown here read-only: prompts are not run and \
         nothing is saved. To continue it here, let that process finish with it (an A2A \
         server lets a conversation go 30 minutes after its last task, or when it stops), \
         then open the session again; or start a new session."
    )
}

/// A session held by another process (its log has one writer): the error
/// names the session and the holder's pid.
fn locked(id: &str, e: &StoreError) -> RpcError {
    let pid = match e {
        StoreError::Locked { pid, .. } => *pid,
        _ => None,
    };
    RpcError::new(crate::rpc::codes::INTERNAL_ERROR, e.to_string())
        .with_data(serde_json::json!({ "sessionId": id, "holderPid": pid }))
}

fn encode_cursor(offset: usize) -> String {
    format!("o{offset:x}")
}

fn decode_cursor(c: &str) -> Option<usize> {
    usize::from_str_radix(c.strip_prefix('o')?, 16).ok()
}

pub(in crate::agent) fn absolute_dir(field: &str, path: &str) -> Result<PathBuf, RpcError> {
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "{field}: expected an absolute path, got {path:?}"
        )));
    }
    Ok(p.to_path_buf())
}

/// An absolute path naming a directory that exists now: a new session's
/// working directory and its extra roots (a missing one or a file would
/// only fail later, in the middle of a turn).
fn existing_dir(field: &str, path: &str) -> Result<PathBuf, RpcError> {
    let p = absolute_dir(field, path)?;
    match std::fs::metadata(&p) {
        Ok(m) if m.is_dir() => Ok(p),
        Ok(_) => Err(RpcError::invalid_params(format!(
            "{field}: {path:?} is a file, not a directory; send the project's directory"
        ))),
        Err(e) => Err(RpcError::invalid_params(format!(
            "{field}: {path:?} is not a readable directory ({e}); send an existing directory"
        ))),
    }
}

fn additional_dirs(dirs: &[String]) -> Result<Vec<PathBuf>, RpcError> {
    dirs.iter()
        .enumerate()
        .map(|(i, d)| absolute_dir(&format!("params.additionalDirectories[{i}]"), d))
        .collect()
}

/// The protected paths of a new session: the built-in list plus the config's
/// (checked when the config was loaded).
fn protected_for(settings: &crate::config::Settings) -> crate::agent::policy::protected::Protected {
    crate::agent::policy::protected::Protected::new(&settings.protected_paths).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "protected_paths: using the built-in list only");
        crate::agent::policy::protected::Protected::default()
    })
}
