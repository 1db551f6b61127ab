//! The prompt turn (ACP §6): stream the model's reply, run the tool calls it
//! asks for, feed their results back, and repeat until it stops calling tools.
//! Every await races the turn's cancellation token. Everything that completes
//! is recorded in the session log as it completes.
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::acp::{ContentBlock, Cost, SessionUpdate, StopReason, UsageUpdate};
use crate::llm::{ChatMessage, FinishReason, ToolCallRequest, Usage, UserPart};
use crate::rpc::RpcError;
use crate::secrets::redact_string;

use crate::agent::engine::model_call::{self, TurnEnv};
use crate::agent::engine::nudges::{self, Nudges};
use crate::agent::engine::repeats::{self, Repeats};
use crate::agent::engine::sampling::Lender;
use crate::agent::engine::{compact, named_files, tool_call};
use crate::agent::session::{History, Session};

/// What follows when the model ends its turn (it answers without calling
/// a tool): the turn ends, or goes on with a note from the agent that the
/// model gets as a user message (plan mode's hand-off, a stop hook).
pub enum Next {
    End,
    GoOn(String),
}

/// Decides what follows the model's end of a turn ([`Next`]); `Err` ends the
/// turn with that stop reason (a cancel while it asked the user). Called
/// with the history held: it must not lock it.
#[async_trait::async_trait]
pub trait Ending: Send + Sync {
    /// `planned`: the model recorded a plan (`update_plan`) since the turn
    /// began or last went on; `answer`: its last text.
    async fn ended(
        &self,
        session: &Arc<Session>,
        planned: bool,
        answer: &str,
        cancel: &CancellationToken,
    ) -> Result<Next, StopReason>;
}

/// The turn ends when the model ends it (subagents).
pub struct JustEnd;

#[async_trait::async_trait]
impl Ending for JustEnd {
    async fn ended(
        &self,
        _: &Arc<Session>,
        _: bool,
        _: &str,
        _: &CancellationToken,
    ) -> Result<Next, StopReason> {
        Ok(Next::End)
    }
}

/// Runs one turn for `prompt` (the editor's blocks, already expanded from a
/// slash command if any). Model failures that outlast the retries are JSON-RPC
/// errors; cancellation is the `cancelled` stop reason. When the model ends
/// the turn, `ending` says whether it goes on.
pub async fn run(
    env: &TurnEnv,
    session: &Arc<Session>,
    prompt: &[ContentBlock],
    cancel: &CancellationToken,
    ending: &dyn Ending,
) -> Result<StopReason, RpcError> {
    // The model is lent to the session's MCP servers while the turn runs
    // (issue 18 item 2); their sampling usage is counted after each call.
    let lender = Lender::new(env, session, cancel);
    let _lent = session.sampling.lend(lender.clone());
    tokio::select! {
        biased;
        _ = cancel.cancelled() => return Ok(StopReason::Cancelled),
        _ = env.learn_context_window() => {}
    }
    let small_model = env.settings.compact_prompt_for(env.context_window());
    let Some(mut history) = begin(session, prompt, small_model, cancel).await else {
        return Ok(StopReason::Cancelled);
    };
    let mut repeats = Repeats::default();
    let mut nudges = Nudges::new(small_model);
    // Where the turn began, or last went on after its end.
    let mut since = history.messages.len();
    for _ in 0..env.settings.max_turn_requests {
        // A model boundary: steering messages sent since join here.
        if !take_steering(session, &mut history, cancel).await {
            return Ok(StopReason::Cancelled);
        }
        if compact::needed(env, session, &history)
            && !compact_or_go_on(env, session, &mut history, cancel).await
        {
            return Ok(StopReason::Cancelled);
        }
        let turn = Turn {
            env,
            session,
            cancel,
            lender: &lender,
        };
        match request(&turn, &mut history, &mut repeats, &mut nudges).await? {
            // The model is done, but a steering message came meanwhile:
            // the turn goes on so the model reads it.
            Some(StopReason::EndTurn) if session.turns.has_steering() => {}
            Some(StopReason::EndTurn) => {
                let planned = made_plan(&history.messages[since.min(history.messages.len())..]);
                let answer = match history.messages.last() {
                    Some(ChatMessage::Assistant { text, .. }) => text.clone(),
                    _ => String::new(),
                };
                match ending.ended(session, planned, &answer, cancel).await {
                    Err(stop) => return Ok(stop),
                    Ok(Next::End) => return Ok(StopReason::EndTurn),
                    Ok(Next::GoOn(note)) => {
                        let msg = ChatMessage::User(vec![UserPart::Text(redact_string(note))]);
                        session.record_user(&[], &msg);
                        history.messages.push(msg);
                        since = history.messages.len();
                    }
                }
            }
            Some(stop) => return Ok(stop),
            None => {}
        }
        if let Some(why) = repeats.stop_reason() {
            tracing::info!(reason = %why, "turn ended: the model repeats itself");
            session
                .editor
                .update(&SessionUpdate::agent_text(format!("\n\n{why}"), None));
            return Ok(StopReason::EndTurn);
        }
    }
    Ok(StopReason::MaxTurnRequests)
}

/// Whether `messages` hold an `update_plan` call that worked.
fn made_plan(messages: &[ChatMessage]) -> bool {
    let ids: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m {
            ChatMessage::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        })
        .flatten()
        .filter(|c| c.name == PLAN_TOOL)
        .map(|c| c.id.as_str())
        .collect();
    messages.iter().any(|m| {
        matches!(m, ChatMessage::Tool { tool_call_id, content }
            if ids.contains(&tool_call_id.as_str()) && content.starts_with("Plan updated"))
    })
}

/// Adds the steering messages waiting (`_session/steering`) to the history
/// and the log, as user messages at this point of the turn (a load
/// replays them here); `false` when the turn was cancelled meanwhile.
async fn take_steering(
    session: &Session,
    history: &mut History,
    cancel: &CancellationToken,
) -> bool {
    for steer in session.turns.take_steering() {
        let user = tokio::select! {
            biased;
            _ = cancel.cancelled() => return false,
            m = crate::agent::engine::model_text::user_message(&steer.prompt, &session.editor, &session.registry) => m,
        };
        let user = redacted_user(user);
        session.record_user(&steer.prompt, &user);
        history.messages.push(user);
        tracing::info!(session = %session.id, "steering message joined the turn");
        steer.delivered();
    }
    true
}

/// Takes the session's history for the turn and adds the prompt to it (and
/// to the log); `None` when the turn was cancelled first. For a small model
/// the files the prompt names come with it ([`named_files`]).
async fn begin<'a>(
    session: &'a Session,
    prompt: &[ContentBlock],
    small_model: bool,
    cancel: &CancellationToken,
) -> Option<tokio::sync::MutexGuard<'a, History>> {
    let mut history = tokio::select! {
        biased;
        _ = cancel.cancelled() => return None,
        h = session.history.lock() => h,
    };
    let user = tokio::select! {
        biased;
        _ = cancel.cancelled() => return None,
        m = crate::agent::engine::model_text::user_message(prompt, &session.editor, &session.registry) => m,
    };
    let user = match small_model {
        true => tokio::select! {
            biased;
            _ = cancel.cancelled() => return None,
            m = with_named_files(session, prompt, user) => m,
        },
        false => user,
    };
    let user = redacted_user(user);
    session.record_user(prompt, &user);
    history.messages.push(user);
    Some(history)
}

/// `user` with the text of the project files `prompt`'s text names, which
/// the model then counts as read.
async fn with_named_files(
    session: &Session,
    prompt: &[ContentBlock],
    user: ChatMessage,
) -> ChatMessage {
    let words: String = prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let named = named_files::read(&words, &session.cwd, &session.roots(), &session.editor).await;
    let ChatMessage::User(mut parts) = user else {
        return user;
    };
    if named.is_empty() {
        return ChatMessage::User(parts);
    }
    for n in named.iter().filter(|n| !n.is_dir) {
        session.tracker.mark_shown(&n.path);
    }
    tracing::info!(files = named.len(), "files the prompt names added to it");
    let block = named_files::block(&named);
    match parts.last_mut() {
        Some(UserPart::Text(text)) => text.push_str(&block),
        _ => parts.push(UserPart::Text(block.trim_start().to_owned())),
    }
    ChatMessage::User(parts)
}

/// What one request of a turn works with.
struct Turn<'a> {
    env: &'a TurnEnv,
    session: &'a Arc<Session>,
    cancel: &'a CancellationToken,
    lender: &'a Lender,
}

/// One request to the model and what follows from its reply: the tool calls
/// it asks for are run, or the turn ends with the returned stop reason.
async fn request(
    turn: &Turn<'_>,
    history: &mut History,
    repeats: &mut Repeats,
    nudges: &mut Nudges,
) -> Result<Option<StopReason>, RpcError> {
    let Turn {
        env,
        session,
        cancel,
        ..
    } = *turn;
    let request = model_call::turn_request(env, session, history);
    let offered: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
    nudges.commands_offered(offered.iter().any(|t| t == COMMAND_TOOL));
    let completion = match model_call::call_model(env, session, &request, cancel, true).await? {
        model_call::Outcome::Cancelled { partial } => {
            if !partial.is_empty() {
                let text = redact_string(partial);
                remember(session, history, assistant(text, String::new(), Vec::new()));
            }
            return Ok(Some(StopReason::Cancelled));
        }
        model_call::Outcome::Done(c) => c,
    };
    account(env, session, history, completion.usage);
    // What the model said goes into history and the log as the editor saw
    // it: a secret it repeated is redacted (SECURITY.md §3). Tool calls
    // run as remembered: a known secret in their arguments is replaced
    // before they run, so no route (an editor write, a local write, a
    // command line) lets the model use or send one on.
    let calls: Vec<ToolCallRequest> = completion
        .tool_calls
        .into_iter()
        .map(|c| ToolCallRequest {
            arguments: redact_string(c.arguments),
            ..c
        })
        .collect();
    let text = redact_string(completion.text);
    let reasoning = redact_string(completion.reasoning);
    if calls.is_empty()
        && let Some(error) = broken_call(&text, &offered)
    {
        remember(session, history, assistant(text, reasoning, calls));
        // A call that does not parse goes back with the parser's error,
        // never to the user as the answer.
        if nudges.broken_calls_sent < nudges::BROKEN_CALL_TRIES {
            nudges.broken_calls_sent += 1;
            tracing::info!(%error, "the model's call does not parse; sent back");
            let msg = ChatMessage::User(vec![UserPart::Text(nudges::broken_call(&error))]);
            session.record_user(&[], &msg);
            history.messages.push(msg);
            return Ok(None);
        }
        session.editor.update(&SessionUpdate::agent_text(
            format!("The model wrote a tool call that could not be read ({error}), so nothing was run. Rephrase the request, or try a stronger model."),
            None,
        ));
        return Ok(Some(StopReason::EndTurn));
    }
    let nudge = calls
        .is_empty()
        .then(|| nudges.on_final_reply(&text))
        .flatten();
    remember(session, history, assistant(text, reasoning, calls.clone()));
    if let Some(nudge) = nudge
        && completion.finish_reason != Some(FinishReason::Length)
    {
        // The small-model mode pushes a too-early answer on (see
        // [`Nudges`]): the turn goes on with a word from the agent.
        tracing::info!(nudge, "the model's answer came too early; the turn goes on");
        let msg = ChatMessage::User(vec![UserPart::Text(nudge.to_owned())]);
        session.record_user(&[], &msg);
        history.messages.push(msg);
        return Ok(None);
    }
    if calls.is_empty() && completion.finish_reason != Some(FinishReason::Length) {
        // The end of a turn tells the truth (for every model): an answer
        // that claims changes or commands the turn's record does not have
        // is told once; if it still claims them, the user gets the record.
        let last_text = history.messages.last().and_then(|m| match m {
            ChatMessage::Assistant { text, .. } => Some(text.clone()),
            _ => None,
        });
        if let Some(text) = last_text {
            if let Some(told) = nudges.on_false_claim(&text) {
                tracing::info!("the answer claims what the turn did not do; the model is told");
                let msg = ChatMessage::User(vec![UserPart::Text(told)]);
                session.record_user(&[], &msg);
                history.messages.push(msg);
                return Ok(None);
            }
            if let Some(record) = nudges.record_after(&text) {
                model_call::status(session, &record);
            }
        }
    }
    if calls.is_empty() {
        return Ok(Some(match completion.finish_reason {
            Some(FinishReason::Length) => StopReason::MaxTokens,
            Some(FinishReason::ContentFilter) => StopReason::Refusal,
            _ => StopReason::EndTurn,
        }));
    }
    Ok(run_calls(turn, history, &calls, repeats, nudges).await)
}

/// Serde_json's error for a reply that plainly attempts a call written as
/// text but does not parse ([`crate::llm::text_calls::broken_call`]).
fn broken_call(text: &str, offered: &[String]) -> Option<String> {
    if offered.is_empty() {
        return None;
    }
    let offered: Vec<&str> = offered.iter().map(String::as_str).collect();
    crate::llm::text_calls::broken_call(text, &offered)
}

/// The one offered tool whose parameters the arguments of a call to a tool
/// that does not exist fit (every required one there, every one given a
/// parameter of its type): a model that calls `create_file` with
/// `write_file`'s arguments means `write_file`. Never a command tool.
fn fitting_tool(env: &TurnEnv, session: &Session, req: &ToolCallRequest) -> Option<String> {
    if session.registry.get(&req.name).is_some() || env.is_task(&req.name) {
        return None;
    }
    let args: serde_json::Value = serde_json::from_str(&req.arguments).ok()?;
    let args = args.as_object().filter(|a| !a.is_empty())?;
    let mut fits = session
        .registry
        .specs()
        .into_iter()
        .filter(|t| fits_schema(args, &t.parameters))
        // A command is never run under a name the model guessed: it is
        // told the tools there are, and calls the one it means.
        .filter(|t| {
            session
                .registry
                .get(&t.name)
                .is_some_and(|tool| tool.kind() != crate::acp::ToolKind::Execute)
        });
    match (fits.next(), fits.next()) {
        (Some(t), None) => Some(t.name),
        _ => None,
    }
}

fn fits_schema(
    args: &serde_json::Map<String, serde_json::Value>,
    schema: &serde_json::Value,
) -> bool {
    use serde_json::Value;
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return false;
    };
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    let typed = |p: &Value, v: &Value| match p.get("type").and_then(Value::as_str) {
        Some("string") => v.is_string(),
        Some("boolean") => v.is_boolean(),
        Some("integer") => v.is_i64() || v.is_u64(),
        Some("number") => v.is_number(),
        Some("array") => v.is_array(),
        Some("object") => v.is_object(),
        _ => true,
    };
    required.iter().all(|r| args.contains_key(*r))
        && args
            .iter()
            .all(|(k, v)| props.get(k).is_some_and(|p| typed(p, v)))
}

/// The answer to an edit made again right after it succeeded: not run,
/// with the file's text where the edit put its new text.
async fn already_applied(session: &Session, req: &ToolCallRequest) -> String {
    let args: serde_json::Value = serde_json::from_str(&req.arguments).unwrap_or_default();
    let path = args
        .get("path")
        .and_then(|p| p.as_str())
        .unwrap_or_default();
    let new = args
        .get("new_string")
        .and_then(|p| p.as_str())
        .unwrap_or_default();
    let mut out = "Error: already applied: this same edit_file call succeeded just before, and nothing else has changed since, so it was not run again (it would apply a second time). Go on with the next step, or answer the user.".to_owned();
    let full = session.cwd.join(path);
    if !path.is_empty()
        && crate::tools::paths::is_inside(&full, &session.roots())
        && let Ok(text) = tokio::fs::read_to_string(&full).await
    {
        let at = text
            .find(new)
            .map_or(0, |i| text[..i].matches('\n').count());
        let lines: Vec<&str> = text.lines().collect();
        let from = at.saturating_sub(3);
        let to = (at + new.matches('\n').count() + 4).min(lines.len());
        out.push_str(&format!("\nThe current text of {path} there:\n"));
        for (n, line) in lines.iter().enumerate().take(to).skip(from) {
            out.push_str(&format!("{:>6}\t{line}\n", n + 1));
        }
    }
    out
}

/// The prompt as the model and the log get it: a secret the user pasted is
/// redacted like everywhere else (SECURITY.md §3).
fn redacted_user(user: ChatMessage) -> ChatMessage {
    match user {
        ChatMessage::User(parts) => ChatMessage::User(
            parts
                .into_iter()
                .map(|p| match p {
                    UserPart::Text(t) => UserPart::Text(redact_string(t)),
                    other => other,
                })
                .collect(),
        ),
        other => other,
    }
}

fn assistant(text: String, reasoning: String, tool_calls: Vec<ToolCallRequest>) -> ChatMessage {
    ChatMessage::Assistant {
        text,
        reasoning,
        tool_calls,
    }
}

/// A finished message into the log and the history, in that order.
fn remember(session: &Session, history: &mut History, msg: ChatMessage) {
    session.record_message(&msg);
    history.messages.push(msg);
}

/// Automatic compaction before a request that would fill the window;
/// `false` when the turn was cancelled meanwhile.
async fn compact_or_go_on(
    env: &TurnEnv,
    session: &Arc<Session>,
    history: &mut History,
    cancel: &CancellationToken,
) -> bool {
    match compact::run(env, session, history, cancel, compact::Why::Auto, None).await {
        Ok(true) | Ok(false) => {}
        Err(e) if cancel.is_cancelled() => {
            tracing::debug!(error = %e.message, "compaction cancelled");
            return false;
        }
        // A failed compaction is not fatal: the call may still fit.
        Err(e) => tracing::warn!(error = %e.message, "automatic compaction failed"),
    }
    !cancel.is_cancelled()
}

/// Runs the model's tool calls in order and feeds their results back (ACP
/// §6.2); once the turn is cancelled, or a write may have left the project
/// (`CallResult::halted`), the rest are answered "not run". Returns the stop
/// reason when the turn ends here: cancelled, or refused after such a write.
/// A call the model keeps repeating gets a note in its result ([`Repeats`]).
async fn run_calls(
    turn: &Turn<'_>,
    history: &mut History,
    calls: &[ToolCallRequest],
    repeats: &mut Repeats,
    nudges: &mut Nudges,
) -> Option<StopReason> {
    let Turn {
        env,
        session,
        cancel,
        lender,
    } = *turn;
    let window = env.context_window();
    let limits = tool_call::Limits {
        result_bytes: tool_call::result_limit(window),
        guard_overwrites: env.settings.compact_prompt_for(window),
    };
    let mut was_cancelled = false;
    // A write may have left the project (`CallResult::halted`): the
    // rest of the model's calls are not run and the turn ends.
    let mut halted = false;
    let mut media = Vec::new();
    let images_on = env.settings.model_accepts_images(&env.model_id);
    let audio_on = env.settings.model_accepts_audio(&env.model_id);
    for req in calls {
        let content = if was_cancelled {
            "Error: not run; the user cancelled the turn.".to_owned()
        } else if halted {
            "Error: not run; the turn was stopped (see the previous result).".to_owned()
        } else if req.name == EDIT_TOOL && repeats.just_applied(req) {
            // A repeated success is a repeat: the same edit again would
            // apply a second time.
            let text = already_applied(session, req).await;
            if let Some(note) = repeats.record(req, repeats::Outcome::Failed) {
                redact_string(format!("{text}\n\n{note}"))
            } else {
                redact_string(text)
            }
        } else {
            let renamed = fitting_tool(env, session, req);
            let taken_as;
            let original = req.name.clone();
            let req = match renamed {
                Some(name) => {
                    tracing::info!(from = %original, to = %name, "an unknown tool taken as the one its arguments fit");
                    taken_as = ToolCallRequest {
                        name,
                        ..req.clone()
                    };
                    &taken_as
                }
                None => req,
            };
            let task = env.tasks.as_ref().filter(|t| t.name() == req.name);
            let result = if let Some(task) = task {
                task.run(env, session, history, req, cancel).await
            } else {
                tool_call::run(session, req, cancel, &env.settings, limits).await
            };
            was_cancelled = result.cancelled || cancel.is_cancelled();
            let done = outcome(session, req, result.failed);
            nudges.call_finished(done, result.refused, result.cancelled);
            if !result.refused && !result.cancelled {
                let (file, command) = record_of(session, req, result.failed);
                nudges.ran(file, command);
            }
            let mut note_repeat = repeats.record(req, done);
            // In plan mode a plan is the work: no push to carry it out.
            if done == repeats::Outcome::Noted
                && !repeats.acted()
                && session.mode() != crate::config::Mode::Plan
            {
                note_repeat.get_or_insert_with(|| NOTHING_DONE_YET.to_owned());
            }
            halted = result.halted;
            // Sampling a server asked for during the call counts in the turn.
            lender.count(history);
            let mut text = result.for_model;
            let (kept, note) = crate::mcp::rich::accepted(result.media, images_on, audio_on);
            media.extend(kept.into_iter().map(|p| (req.id.clone(), p)));
            if let Some(note) = note {
                text = format!("{text}\n{note}");
            }
            if let Some(repeated) = note_repeat {
                text = format!("{text}\n\n{repeated}");
            }
            if original != req.name {
                text = format!(
                    "Note: there is no tool named `{original}`; this call ran as `{}`, the one tool whose parameters its arguments fit. Call `{}` by that name.\n\n{text}",
                    req.name, req.name
                );
            }
            // The one choke point of every tool's (built-in or MCP)
            // result: a secret it read never reaches the model or the log.
            redact_string(text)
        };
        let msg = ChatMessage::Tool {
            tool_call_id: req.id.clone(),
            content,
        };
        remember(session, history, msg);
    }
    if let Some(msg) = crate::mcp::rich::media_message(&media) {
        session.record_user(&[], &msg);
        history.messages.push(msg);
    }
    if was_cancelled {
        Some(StopReason::Cancelled)
    } else if halted {
        Some(StopReason::Refusal)
    } else {
        None
    }
}

/// Added to a plan made before any call of the turn read or changed
/// anything: small models mark the plan done and stop there.
const NOTHING_DONE_YET: &str = "Note: a plan changes nothing by itself, and no tool has read or changed anything in this turn yet, so no step is done. Now carry out the first step with the tools (read_file, edit_file, run_command, …); answer only when the task is done.";

/// What a call that ran adds to the turn's record: the file it changed
/// (an edit that worked), the command it ran (whether or not it passed).
fn record_of(
    session: &Session,
    req: &ToolCallRequest,
    failed: bool,
) -> (Option<String>, Option<String>) {
    use crate::acp::ToolKind;
    let args: serde_json::Value = serde_json::from_str(&req.arguments).unwrap_or_default();
    let arg = |k: &str| args.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    match session.registry.get(&req.name).map(|t| t.kind()) {
        Some(ToolKind::Edit | ToolKind::Delete | ToolKind::Move) if !failed => {
            (Some(arg("path").unwrap_or_else(|| req.name.clone())), None)
        }
        Some(ToolKind::Execute) => (
            None,
            Some(arg("command").unwrap_or_else(|| req.name.clone())),
        ),
        Some(ToolKind::Read | ToolKind::Search | ToolKind::Fetch | ToolKind::Think) => (None, None),
        // An MCP tool or a subagent's task may have done either.
        _ if !failed => {
            let through = format!("(through {})", req.name);
            (Some(through.clone()), Some(through))
        }
        _ => (None, None),
    }
}

/// The edit tool ([`crate::tools`]' `edit_file`).
const EDIT_TOOL: &str = "edit_file";

/// The command tool ([`crate::tools`]' `run_command`).
const COMMAND_TOOL: &str = "run_command";

/// The plan tool ([`crate::tools`]' `update_plan`).
const PLAN_TOOL: &str = "update_plan";

/// What a finished call did, as far as repeats go: a tool that only looks
/// (reads, searches, plans) changes nothing a failing call depends on.
fn outcome(session: &Session, req: &ToolCallRequest, failed: bool) -> repeats::Outcome {
    use crate::acp::ToolKind;
    if failed {
        return repeats::Outcome::Failed;
    }
    match session.registry.get(&req.name).map(|t| t.kind()) {
        // Only the plan notes without looking: `ask_user` (also a think
        // tool) brings the user's answer in.
        Some(ToolKind::Think) if req.name == PLAN_TOOL => repeats::Outcome::Noted,
        Some(ToolKind::Read | ToolKind::Search | ToolKind::Fetch | ToolKind::Think) => {
            repeats::Outcome::Looked
        }
        _ => repeats::Outcome::Changed,
    }
}

/// Token and cost accounting after a call, reported as `usage_update` (ACP §7).
pub fn account(env: &TurnEnv, session: &Session, history: &mut History, usage: Option<Usage>) {
    let Some(u) = usage else { return };
    history.context_tokens = u.prompt_tokens + u.completion_tokens;
    history.counted_messages = history.messages.len() + 1;
    history.total_prompt_tokens += u.prompt_tokens;
    history.total_completion_tokens += u.completion_tokens;
    let prices = env
        .settings
        .model_config(&env.model_id)
        .and_then(|c| Some((c.input_cost_per_mtok?, c.output_cost_per_mtok?)));
    if let Some((input, output)) = prices {
        history.cost_usd +=
            u.prompt_tokens as f64 * input / 1e6 + u.completion_tokens as f64 * output / 1e6;
    }
    session
        .editor
        .update(&SessionUpdate::UsageUpdate(UsageUpdate {
            used: history.context_tokens,
            size: env.context_window(),
            cost: prices.map(|_| Cost {
                amount: (history.cost_usd * 1e6).round() / 1e6,
                currency: "USD".into(),
            }),
        }));
}
