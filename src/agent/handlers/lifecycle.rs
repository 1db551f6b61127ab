//! Opening sessions (ACP §5.1, §5.3, §5.4): new, load and resume (fork,
//! in `fork.rs`, ends here too). Listing, closing, deleting and retitling
//! stored sessions are in `stored.rs`; what a session is built with in
//! `setup.rs`; config options before and at setup in `config.rs`.
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::acp::{
    LoadSessionRequest, LoadSessionResponse, McpServer, NewSessionRequest, NewSessionResponse,
    SessionInfoUpdate, SessionUpdate,
};
use crate::config::Settings;
use crate::editor::Editor;
use crate::llm::ChatMessage;
use crate::rpc::{Reply, RpcError};

use super::config::initial_options;
use super::dirs::{absolute_dir, additional_dirs, existing_dir};
use super::setup::{find_skills, protected_for, send_commands, tools_for, watch_commands};
use crate::agent::Agent;
use crate::agent::policy::options;
use crate::agent::session::{Asker, Recorder, Session, SessionInit, SessionMeta};
use crate::agent::store::restore::{Restored, restore};
use crate::agent::store::{self, StoreError, Summary};
use crate::config::Mode;

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
        let initial = initial_options(req.config_options.as_ref())?;
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
        let mut project_model: Option<String> = None;
        let mut mode = settings.default_mode;
        // The project's own settings, for the user only (a guest's session
        // never reads them): applied now when trusted, asked about at the
        // first prompt otherwise.
        let mut project = crate::agent::project::State::default();
        let mut session_settings = (*settings).clone();
        if self.asker == Asker::User
            && let Some(file) = crate::agent::project::read(&cwd, &settings)
        {
            let root = crate::tools::paths::canonicalize_lenient(&cwd);
            project = crate::agent::project::at_new_session(
                file,
                root,
                &mut session_settings,
                &mut mode,
                &mut project_model,
            );
        }
        let place = (cwd, additional, req.mcp_servers);
        let opening = Opening::fresh(&id, place, mode, meta, Some(log));
        let session = self.open(opening, &session_settings).await;
        if let Some(m) = &project_model {
            session.store_model(m);
        }
        let report = project.applied.report.clone();
        let project_skills = !project.applied.skills.is_empty();
        *session.project.lock().unwrap_or_else(|e| e.into_inner()) = project;
        if project_skills {
            session.reload_skills();
        }
        self.apply_initial_options(&session, &initial).await;
        tracing::info!(session = %id, "session created");
        let mut reply = self.answer_new(id, session.clone()).await;
        if !report.is_empty()
            && let Ok(r) = reply.as_mut()
        {
            // After the response: the editor knows the session then.
            let then = r.after.take();
            r.after = Some(Box::new(move || {
                if let Some(then) = then {
                    then();
                }
                session.editor.update(&SessionUpdate::agent_text(
                    crate::agent::project::report_text(&report),
                    None,
                ));
            }));
        }
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
        let settings = self.settings();
        let notice = crate::llm::discover::first_session_notice(&settings);
        // Every answer names the local server in use (issue 42 item 8: many
        // clients never show a notice); the first also carries the notice.
        let mut ours = serde_json::Map::new();
        if let Some(server) = crate::llm::discover::chosen(&settings) {
            ours.insert("localServer".into(), server);
        }
        if let Some(notice) = &notice {
            ours.insert("notice".into(), notice.clone().into());
        }
        if let Some(disk) = self.disk() {
            ours.insert("disk".into(), disk.into());
        }
        let response = NewSessionResponse {
            session_id,
            modes: Mode::state(session.mode()),
            config_options: self.session_options(&session).await,
            meta: (!ours.is_empty()).then(|| serde_json::json!({"acp-coder": ours})),
        };
        let mut reply = self.reply_then_commands(&response, session.clone())?;
        // A client that shows notices also gets it as one, after the
        // response (the session is unknown to it before).
        if let Some(text) = notice {
            let then = reply.after.take();
            reply.after = Some(Box::new(move || {
                if let Some(then) = then {
                    then();
                }
                crate::agent::notices::send(&session, crate::agent::notices::local_model(text));
            }));
        }
        Ok(reply)
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
        let initial = initial_options(req.config_options.as_ref())?;
        let (session, restored) = self.restore_session(req).await?;
        self.apply_initial_options(&session, &initial).await;
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
        // Live in another connection of this `serve` process: a view of it,
        // never a second writer (the server shares the live copy's turns).
        let viewer = self
            .live_elsewhere
            .as_ref()
            .is_some_and(|live| live(&req.session_id));
        let claim = if viewer {
            None
        } else {
            match self.store.claim(&req.session_id) {
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
        let log = (held_by.is_none() && !viewer).then(|| self.store.open(&id).hold(claim));
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
            // The user's file, not the agent, is wrong: invalid params.
            return Err(RpcError::invalid_params(format!(
                "{e}; fix it, then restart the agent or call authenticate"
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
    async fn open(&self, mut o: Opening, settings: &Settings) -> Arc<Session> {
        crate::tools::sandbox::prefetch();
        // The server's window is asked now, not by the first turn (issue
        // 47 item 7): the first request does not wait for it.
        if let (Some(model_id), Ok(model)) = (&o.meta.model, self.model()) {
            crate::agent::engine::model_call::learn_window_in_background(
                &model, settings, model_id,
            );
        }
        // A guest's session (`acp-coder a2a`) works in the served directory
        // alone, in the server's mode at most: no directory an editor's
        // `/add-dir` left in a loaded conversation, no wider mode it had.
        if let Asker::Guest(ceiling) = self.asker {
            o.additional.clear();
            o.mode = o.mode.narrower(ceiling);
        }
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
            asker: self.asker,
            memory_names: settings.memory_files.clone(),
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
