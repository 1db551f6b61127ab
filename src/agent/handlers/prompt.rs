//! `session/prompt` (ACP §6): titles, slash commands, and the turn itself.
use std::sync::Arc;

use crate::acp::{
    ContentBlock, PromptRequest, PromptResponse, SessionInfoUpdate, SessionUpdate, StopReason,
};
use crate::config::{MODEL_ENV, Settings};
use crate::rpc::RpcError;

use crate::agent::Agent;
use crate::agent::engine::compact;
use crate::agent::engine::model_call::{TurnEnv, message_id};
use crate::agent::engine::turn;
use crate::agent::policy::commands::{self, Action};
use crate::agent::policy::options;
use crate::agent::session::{Asker, Session, TurnGuard};
use crate::agent::store::Record;
use crate::config::Mode;

/// Titles are the first line of the first prompt, this long at most.
const TITLE_CHARS: usize = 60;

impl Agent {
    /// `turn` was registered when the request was read, so a `session/cancel`
    /// right behind the prompt is not lost.
    pub(in crate::agent) async fn prompt(
        &self,
        req: PromptRequest,
        turn: Option<TurnGuard>,
    ) -> Result<PromptResponse, RpcError> {
        let session = self.session(&req.session_id)?;
        refuse_audio(&req.prompt)?;
        let turn = turn.unwrap_or_else(|| session.register_turn());
        let settings = self.usable_settings()?;
        if turn.ahead > 0 {
            crate::agent::notices::send(&session, crate::agent::notices::queued(turn.ahead));
        }
        self.title_from_prompt(&session, &req.prompt).await;
        tracing::info!(session = %session.id, prompt = %crate::agent::engine::model_text::summary(&req.prompt, 80), "turn start");
        session.registry.turn_started();
        session.registry.refresh().await;
        let before = tokens_used(&session).await;
        let result = self
            .run_prompt(&session, &settings, req.prompt, &turn)
            .await;
        let usage = turn_usage(before, tokens_used(&session).await);
        session.registry.turn_ended();
        drop(turn);
        session.touch().await;
        match &result {
            Ok(reason) => tracing::info!(session = %session.id, ?reason, "turn end"),
            Err(e) => tracing::warn!(session = %session.id, error = %e.message, "turn failed"),
        }
        result.map(|stop_reason| PromptResponse { stop_reason, usage })
    }

    async fn run_prompt(
        &self,
        session: &Arc<Session>,
        settings: &Arc<Settings>,
        mut prompt: Vec<ContentBlock>,
        turn: &TurnGuard,
    ) -> Result<StopReason, RpcError> {
        let token = &turn.token;
        if session.read_only() {
            let text = match self.store.claim(&session.id) {
                Err(crate::agent::store::StoreError::Locked { pid, .. }) => {
                    crate::agent::handlers::lifecycle::read_only_note(&pid)
                }
                _ => "The other acp-coder process has let this session go: open it again to \
                      continue it here (this copy stays read-only)."
                    .to_owned(),
            };
            say(session, &text);
            return Ok(StopReason::EndTurn);
        }
        self.settle_project(session).await;
        if let Some((name, args)) = commands::parse(&prompt)
            && let Some(stop) = self
                .slash_command(session, settings, &mut prompt, (&name, &args), token)
                .await?
        {
            return Ok(stop);
        }
        let env = self.turn_env(session, settings).await?;
        // The user's prompt hooks: one that blocks refuses the prompt (the
        // user sees why; the model never gets it); what they print is
        // context beside it.
        let said = crate::agent::hooks::run(
            session,
            settings,
            crate::config::HookEvent::Prompt,
            None,
            serde_json::json!({"prompt": crate::secrets::redact_string(prompt_text(&prompt))}),
            token,
        )
        .await;
        if token.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        if let Some(reason) = said.blocked {
            say(
                session,
                &format!("Your prompt was not sent: a prompt hook refused it: {reason}"),
            );
            return Ok(StopReason::EndTurn);
        }
        if let Some(context) = said.context_note() {
            prompt.push(ContentBlock::text(format!(
                "\n\nContext from the user's prompt hook:\n{context}"
            )));
        }
        crate::tools::process::background::set_limit(settings.max_background_commands);
        let title = crate::agent::engine::model_text::summary(&prompt, 80);
        let max = settings.checkpoint_max_bytes;
        // A queued turn waits here for those that came before it (first in,
        // first out); a cancel ends the wait.
        if !session.turns.wait_for_turn(turn.seq, token).await {
            return Ok(StopReason::Cancelled);
        }
        let gate = tokio::select! {
            biased;
            _ = token.cancelled() => return Ok(StopReason::Cancelled),
            g = session.tracker.gate.lock() => g,
        };
        let ending = crate::agent::handlers::plan::PromptEnding::new(self, settings);
        let run = turn::run(&env, session, &prompt, token, &ending);
        let stop =
            crate::agent::history::changes::checkpointed(session, &gate, &title, max, token, run)
                .await;
        // The turn's end, with its checkpoint, while the gate is held.
        crate::agent::history::cursors::after_turn(session);
        drop(gate);
        stop
    }

    /// A slash command (ACP §10.4, DESIGN "Slash commands"): `Some(stop)` when
    /// the command answered the prompt itself, `None` when the prompt (as the
    /// command rewrote it, or as typed if it is no command) goes to the model.
    async fn slash_command(
        &self,
        session: &Arc<Session>,
        settings: &Arc<Settings>,
        prompt: &mut Vec<ContentBlock>,
        (name, args): (&str, &str),
        token: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<StopReason>, RpcError> {
        let available = crate::agent::handlers::setup::session_commands(session);
        // Not a command: the model gets the text as typed.
        let Some(action) = commands::resolve(&available, name, args) else {
            return Ok(None);
        };
        if let Asker::Guest(_) = session.asker
            && let Some(refusal) = commands::refused_to_guest(&action, name, args)
        {
            tracing::warn!(session = %session.id, command = name, "slash command refused to an A2A client");
            say(session, &refusal);
            return Ok(Some(StopReason::EndTurn));
        }
        let text = match action {
            Action::Prompt(text) => {
                replace_command_text(prompt, text);
                return Ok(None);
            }
            Action::Source(name) => {
                return source_command(session, prompt, &name, args, token).await;
            }
            Action::Skill(name) => {
                let skills = session.skills.get();
                if let Some(skill) = skills.get(&name) {
                    tracing::info!(session = %session.id, skill = %name, "skill command");
                    replace_command_text(prompt, commands::skill_prompt(skill, args));
                }
                return Ok(None);
            }
            Action::Skills => {
                self.skills_command(session, args).await;
                return Ok(Some(StopReason::EndTurn));
            }
            Action::Mode => return self.mode_command(session, args).await.map(Some),
            Action::Model => return self.model_command(session, args).await.map(Some),
            Action::Compact => {
                return self
                    .compact_command(session, settings, args, token)
                    .await
                    .map(Some);
            }
            Action::Memory => {
                let outcome = crate::agent::policy::memory::run(session, args, token).await;
                return Ok(Some(match outcome {
                    crate::agent::policy::memory::Outcome::Done => StopReason::EndTurn,
                    crate::agent::policy::memory::Outcome::Cancelled => StopReason::Cancelled,
                }));
            }
            Action::Status => self.status_text(session, settings).await,
            Action::Mcp => self.mcp_command(session, args),
            Action::Help => commands::help(&available),
            Action::AddDir => crate::agent::policy::add_dir::run(session, args),
            Action::Undo => crate::agent::history::undo::undo(session).await,
            Action::Rewind => crate::agent::history::undo::rewind(session, args).await,
            Action::Permissions => {
                let kept = session
                    .grants
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .kept()
                    .cloned();
                crate::agent::policy::kept::command(kept.as_deref(), args)
            }
        };
        say(session, &text);
        Ok(Some(StopReason::EndTurn))
    }

    /// `/compact [focus]`: summarizes the whole conversation now.
    async fn compact_command(
        &self,
        session: &Arc<Session>,
        settings: &Arc<Settings>,
        args: &str,
        token: &tokio_util::sync::CancellationToken,
    ) -> Result<StopReason, RpcError> {
        let env = self.turn_env(session, settings).await?;
        let mut history = tokio::select! {
            biased;
            _ = token.cancelled() => return Ok(StopReason::Cancelled),
            h = session.history.lock() => h,
        };
        let focus = (!args.is_empty()).then_some(args);
        let why = compact::Why::Manual;
        let done = compact::run(&env, session, &mut history, token, why, focus).await?;
        if token.is_cancelled() {
            return Ok(StopReason::Cancelled);
        }
        if !done {
            say(session, "Nothing to compact yet.");
        }
        Ok(StopReason::EndTurn)
    }

    /// `/mcp` (the servers' state) and `/mcp logout <server>`.
    fn mcp_command(&self, session: &Session, args: &str) -> String {
        match args.trim().strip_prefix("logout") {
            Some(server) if !server.trim().is_empty() => session
                .registry
                .sign_out(server.trim())
                .unwrap_or_else(|| format!("No MCP server is named `{}`.", server.trim())),
            Some(_) => "Usage: `/mcp logout <server>`.".to_owned(),
            None => self.mcp_status(session),
        }
    }

    /// The model and its settings for this session's next call.
    async fn turn_env(
        &self,
        session: &Session,
        settings: &Arc<Settings>,
    ) -> Result<TurnEnv, RpcError> {
        let model = self.model()?;
        let meta = session.meta();
        let model_id = match meta.model {
            Some(m) => m,
            None => {
                // Nothing configured and nothing listed at session start: try again now.
                let listed = self.catalog.listed(settings, model.as_ref()).await;
                let m = options::default_model(settings, &listed).ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "no model is configured and {}/models lists none: set {MODEL_ENV}, pass --model, or set model in the config file",
                        settings.base_url
                    ))
                })?;
                session.meta.lock().unwrap_or_else(|e| e.into_inner()).model = Some(m.clone());
                m
            }
        };
        let reasoning_effort =
            options::effective_effort(settings, &model_id, meta.reasoning_effort.as_deref());
        Ok(TurnEnv {
            model,
            model_id,
            reasoning_effort,
            settings: settings.clone(),
            tasks: Some(Arc::new(crate::agent::subagent::Subagents)),
        })
    }

    /// Gives a session its title from its first prompt (ACP `session_info_update`).
    async fn title_from_prompt(&self, session: &Arc<Session>, prompt: &[ContentBlock]) {
        let title = {
            let mut meta = session.meta.lock().unwrap_or_else(|e| e.into_inner());
            if meta.title.is_some() {
                return;
            }
            let title = crate::agent::engine::model_text::summary(prompt, TITLE_CHARS);
            if title.is_empty() {
                return;
            }
            meta.title = Some(title.clone());
            title
        };
        session.record(&Record::Title {
            title: title.clone(),
        });
        session.touch().await;
        session
            .editor
            .update(&SessionUpdate::SessionInfoUpdate(SessionInfoUpdate {
                title: Some(title),
                updated_at: Some(session.meta().updated_at),
            }));
    }

    async fn mode_command(&self, session: &Session, args: &str) -> Result<StopReason, RpcError> {
        if args.is_empty() {
            let list: Vec<String> = Mode::ALL
                .iter()
                .map(|m| {
                    let mark = if *m == session.mode() {
                        " ← current"
                    } else {
                        ""
                    };
                    format!("- `{}` — {}{mark}", m.id(), m.description())
                })
                .collect();
            say(
                session,
                &format!("Modes (switch with `/mode ID`):\n{}", list.join("\n")),
            );
            return Ok(StopReason::EndTurn);
        }
        match Mode::parse(args) {
            Some(mode) => {
                self.apply_mode(session, mode).await;
                say(
                    session,
                    &format!("Mode is now **{}**: {}.", mode.name(), mode.description()),
                );
            }
            None => say(
                session,
                &format!("Unknown mode `{args}`. Modes: {}.", Mode::ids()),
            ),
        }
        Ok(StopReason::EndTurn)
    }

    async fn model_command(&self, session: &Session, args: &str) -> Result<StopReason, RpcError> {
        let options = self.session_options(session).await;
        let models: Vec<String> = options
            .iter()
            .find(|o| o.id == options::MODEL)
            .map(|o| o.options.iter().map(|v| v.value.clone()).collect())
            .unwrap_or_default();
        let current = session.meta().model.unwrap_or_else(|| "(none)".into());
        if args.is_empty() {
            let list: Vec<String> = models
                .iter()
                .map(|m| format!("- `{m}`{}", if *m == current { " ← current" } else { "" }))
                .collect();
            say(
                session,
                &format!(
                    "Current model: `{current}`. Available (switch with `/model ID`):\n{}",
                    list.join("\n")
                ),
            );
        } else if models.iter().any(|m| m == args) || models.is_empty() {
            self.apply_model(session, args).await;
            say(session, &format!("Model is now `{args}`."));
        } else {
            say(
                session,
                &format!("Unknown model `{args}`. Available: {}", models.join(", ")),
            );
        }
        Ok(StopReason::EndTurn)
    }

    async fn status_text(&self, session: &Session, settings: &Settings) -> String {
        let meta = session.meta();
        let model = meta
            .model
            .clone()
            .unwrap_or_else(|| "(none configured)".into());
        let (window, window_from) = self
            .window_and_source(settings, meta.model.as_deref())
            .await;
        let history = session.history.lock().await;
        let used = if history.context_tokens > 0 {
            history.context_tokens
        } else {
            compact::estimate(session, &history)
        };
        let left = window.saturating_sub(used);
        let pct = if window > 0 {
            used as f64 * 100.0 / window as f64
        } else {
            0.0
        };
        let mut lines = vec![
            format!("- **Model**: `{model}` at {}", settings.base_url),
            format!(
                "- **Mode**: {} — {}",
                session.mode().name(),
                session.mode().description()
            ),
            format!(
                "- **Context**: {used} of {window} tokens used ({pct:.0} %), {left} left; window {window_from}"
            ),
            format!(
                "- **Tokens this session**: {} in, {} out",
                history.total_prompt_tokens, history.total_completion_tokens
            ),
        ];
        if let Some(effort) =
            options::effective_effort(settings, &model, meta.reasoning_effort.as_deref())
        {
            lines.push(format!("- **Reasoning effort**: {effort}"));
        }
        let priced = settings
            .model_config(&model)
            .is_some_and(|c| c.input_cost_per_mtok.is_some() && c.output_cost_per_mtok.is_some());
        if priced {
            lines.push(format!("- **Cost this session**: ${:.4}", history.cost_usd));
        }
        lines.extend(crate::llm::discover::status_line(settings));
        lines.push(format!(
            "- **Working directory**: {}",
            session.cwd.display()
        ));
        let memory = session.memory_files();
        lines.push(if memory.is_empty() {
            "- **Memory files**: none (add an `AGENTS.md` with `/memory` or `/init`)".to_owned()
        } else {
            let shown: Vec<String> = memory
                .iter()
                .map(|p| format!("`{}`", p.display()))
                .collect();
            format!("- **Memory files**: {}", shown.join(", "))
        });
        match self.disk() {
            Some("agent") => lines.push(
                "- **Files and commands**: the agent's machine (served over the network; the client's fs and terminals are not used)".to_owned(),
            ),
            Some(_) => lines.push(
                "- **Files and commands**: the client's (it opted in with `clientFs`)".to_owned(),
            ),
            None => {}
        }
        lines.extend(session.skills.get().status_line());
        lines.extend(crate::agent::history::undo::background_status(session));
        lines.push(format!("- **Session**: `{}`", session.id));
        let project = session
            .project
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .applied
            .report
            .clone();
        if !project.is_empty() {
            lines.push(format!(
                "- **Project settings** ({}):\n  - {}",
                crate::agent::project::FILE,
                project.join("\n  - ")
            ));
        }
        format!("**Status**\n{}", lines.join("\n"))
    }

    /// The window the turns use ([`TurnEnv::context_window`]) and where it
    /// comes from: the config, the server (asked now if not yet, bounded),
    /// or the default.
    async fn window_and_source(&self, settings: &Settings, model: Option<&str>) -> (u64, String) {
        if let Some(n) = model.and_then(|m| settings.configured_context_window(m)) {
            return (n, "from the config file".to_owned());
        }
        let learned = match (self.model(), model) {
            (Ok(client), Some(id)) => {
                client.context_window(id).await;
                client.known_server_window(id)
            }
            _ => None,
        };
        match learned {
            Some(w) => (w.tokens, format!("reported by the server ({})", w.source)),
            None => (
                settings.context_window,
                "the default (set `context_window`; the server did not say)".to_owned(),
            ),
        }
    }

    /// `/skills` lists the skills; `/skills reload` reads them from disk
    /// again and sends the new command list (issue 21).
    async fn skills_command(&self, session: &Arc<Session>, args: &str) {
        match args {
            "" => {
                let config_dir = crate::config::config_home().join("acp-coder");
                let catalog = session.skills.get();
                let without = commands::skills_without_command(
                    &commands::available(&session.cwd, &config_dir),
                    &catalog,
                );
                say(session, &catalog.describe(&without));
            }
            "reload" => {
                let s = session.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || s.reload_skills()).await {
                    tracing::warn!(error = %e, "skills not reloaded");
                }
                crate::agent::handlers::setup::send_commands(session);
                let catalog = session.skills.get();
                let mut text = format!(
                    "Skills reloaded: {} found{}.",
                    catalog.skills.len(),
                    if catalog.broken.is_empty() {
                        String::new()
                    } else {
                        format!(", {} broken (see `/skills`)", catalog.broken.len())
                    }
                );
                if !catalog.left_out.is_empty() {
                    text.push_str(&format!(
                        " {} left out of the model's index for room.",
                        catalog.left_out.len()
                    ));
                }
                say(session, &text);
            }
            other => say(
                session,
                &format!(
                    "Unknown `/skills` argument `{other}`: use `/skills` or `/skills reload`."
                ),
            ),
        }
    }

    fn mcp_status(&self, session: &Session) -> String {
        let described = session.registry.describe_sources();
        if described.is_empty() {
            return "No MCP servers are configured for this session (the editor gave none and the config file has no `[mcp_servers]`).".into();
        }
        format!("**MCP servers**\n{}", described.join("\n"))
    }
}

/// Replaces the `/command args` text with the command's prompt.
/// An MCP prompt used as a command (issue 18 item 4): its messages are the
/// prompt.
async fn source_command(
    session: &Session,
    prompt: &mut Vec<ContentBlock>,
    name: &str,
    args: &str,
    token: &tokio_util::sync::CancellationToken,
) -> Result<Option<StopReason>, RpcError> {
    let Some(run) = session.registry.run_source_command(name, args) else {
        say(session, &format!("/{name} is no longer available."));
        return Ok(Some(StopReason::EndTurn));
    };
    let fetched = tokio::select! {
        biased;
        _ = token.cancelled() => return Ok(Some(StopReason::Cancelled)),
        r = run => r,
    };
    match fetched {
        Ok(blocks) => {
            *prompt = blocks;
            Ok(None)
        }
        Err(e) => {
            say(session, &format!("/{name}: {e}"));
            Ok(Some(StopReason::EndTurn))
        }
    }
}

fn replace_command_text(prompt: &mut [ContentBlock], text: String) {
    if let Some(ContentBlock::Text(t)) = prompt
        .iter_mut()
        .find(|b| matches!(b, ContentBlock::Text(_)))
    {
        t.text = text;
    }
}

/// A reply from the agent itself (slash commands), not from the model.
impl Agent {
    /// The project settings' questions, at the session's first prompt
    /// (`agent::project`): what the user trusts applies from this turn on.
    async fn settle_project(&self, session: &Arc<Session>) {
        let mut state = {
            let mut s = session.project.lock().unwrap_or_else(|e| e.into_inner());
            if s.settled || session.depth > 0 || session.asker != Asker::User {
                return;
            }
            std::mem::take(&mut *s)
        };
        let settings = self.settings();
        let decided = crate::agent::project::settle(
            &mut state,
            &session.editor,
            &session.id,
            &settings.data_dir,
        )
        .await;
        if let Some(m) = &decided.model {
            self.apply_model(session, m).await;
        }
        if let Some(m) = decided.mode {
            self.apply_mode(session, m).await;
        }
        if decided.instructions.is_some() {
            state.applied.instructions = decided.instructions;
        }
        let new_skills = !decided.skills.is_empty();
        state.applied.skills.extend(decided.skills);
        state.applied.report.extend(decided.report.iter().cloned());
        *session.project.lock().unwrap_or_else(|e| e.into_inner()) = state;
        if new_skills {
            let s = session.clone();
            if let Err(e) = tokio::task::spawn_blocking(move || s.reload_skills()).await {
                tracing::warn!(error = %e, "skills not reloaded");
            }
            crate::agent::handlers::setup::send_commands(session);
        }
        if !decided.report.is_empty() {
            say(
                session,
                &crate::agent::project::report_text(&decided.report),
            );
        }
    }
}

/// The text blocks of a prompt, one after the other.
fn prompt_text(prompt: &[ContentBlock]) -> String {
    prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn say(session: &Session, text: &str) {
    session.editor.update(&SessionUpdate::agent_text(
        text.to_owned(),
        Some(message_id()),
    ));
}

/// Audio in a prompt is refused with `-32602`: `initialize` advertises
/// `promptCapabilities.audio: false` (ACP §3: a client must not send content
/// types the agent did not advertise), and a refusal the editor can show beats
/// a turn the model answers without hearing the attachment (issue 17).
fn refuse_audio(prompt: &[ContentBlock]) -> Result<(), RpcError> {
    match prompt
        .iter()
        .position(|b| matches!(b, ContentBlock::Audio(_)))
    {
        Some(i) => Err(RpcError::invalid_params(format!(
            "params.prompt[{i}]: audio content is not supported (promptCapabilities.audio is false); send the prompt without the audio block"
        ))),
        None => Ok(()),
    }
}

/// The session's (input, output) token totals so far.
async fn tokens_used(session: &Session) -> (u64, u64) {
    let h = session.history.lock().await;
    (h.total_prompt_tokens, h.total_completion_tokens)
}

/// What a turn used, for `PromptResponse.usage` (issue 17 item 7); `None`
/// when the endpoint reported no usage during the turn.
fn turn_usage(before: (u64, u64), after: (u64, u64)) -> Option<crate::acp::TurnUsage> {
    let input = after.0.saturating_sub(before.0);
    let output = after.1.saturating_sub(before.1);
    (input + output > 0).then_some(crate::acp::TurnUsage {
        total_tokens: input + output,
        input_tokens: input,
        output_tokens: output,
    })
}
