//! One tool call, start to end, as the editor sees it (ACP §9): `tool_call`
//! (pending) → permission if needed → `in_progress` → `completed` | `failed`.
//! Whatever happens, the model gets a result text and the call gets a final status.
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::acp::{
    PermissionOptionKind, PermissionOutcome, SessionUpdate, ToolCall, ToolCallContent,
    ToolCallStatus, ToolCallUpdate, ToolKind,
};
use crate::llm::ToolCallRequest;
use crate::tools::{Invocation, ToolContext, ToolError, ToolOutput, sanitize_title};

use crate::agent::policy::permission::{self, Decision, Scope};
use crate::agent::session::Session;
use crate::config::HookEvent;

/// Tool results longer than this are cut for the model (head and tail kept);
/// a small context window cuts them shorter ([`result_limit`]).
const MODEL_RESULT_LIMIT: usize = 64 * 1024;
/// The least a result keeps, however small the window.
const MIN_RESULT_LIMIT: usize = 2 * 1024;
/// Longest tool-call title (characters).
const TITLE_CHARS: usize = 200;
/// `rawOutput` text is capped: the editor already has the content.
const RAW_OUTPUT_LIMIT: usize = 16 * 1024;

pub struct CallResult {
    /// The text the model reads as this call's result.
    pub for_model: String,
    pub cancelled: bool,
    /// The call failed: an error, a refusal, or a command that exited
    /// non-zero (the turn's repeat check counts these).
    pub failed: bool,
    /// The turn must stop after this call ([`ToolError::halts`]).
    pub halted: bool,
    /// The user (or the mode) refused the call: the model must not try
    /// it again in another form.
    pub refused: bool,
    /// The images and audio the call returned, as model parts (issue 18
    /// item 7, [`crate::mcp::rich`]).
    pub media: Vec<crate::llm::UserPart>,
}

/// Runs one call requested by the model.
pub async fn run(
    session: &Arc<Session>,
    req: &ToolCallRequest,
    cancel: &CancellationToken,
    settings: &crate::config::Settings,
    limits: Limits,
) -> CallResult {
    let call = Call {
        session,
        id: session.claim_tool_id(&req.id),
        cancel,
        limits,
    };
    let mut done = match call.steps(req, settings).await {
        Ok(done) | Err(done) => done,
    };
    if done.failed
        && !done.cancelled
        && let Some(hint) = missing_path_hint(session, req).await
    {
        done.for_model = format!("{}\n{hint}", done.for_model);
    }
    if done.failed
        && req.name == "edit_file"
        && done.for_model.contains("old_string was not found in")
        && let Some(hint) = elsewhere_hint(session, req).await
    {
        done.for_model = format!("{}\n{hint}", done.for_model);
    }
    done
}

/// An edit whose `old_string` is not in the file it names, but is, exactly
/// once, in another file the model has read this session: that file.
async fn elsewhere_hint(session: &Session, req: &ToolCallRequest) -> Option<String> {
    /// Files larger than this are not searched.
    const MAX_BYTES: u64 = 1 << 20;
    let args: Value = serde_json::from_str(&req.arguments).ok()?;
    let named = session.cwd.join(args.get("path")?.as_str()?);
    let needle = args.get("old_string")?.as_str()?.replace("\r\n", "\n");
    if needle.trim().is_empty() {
        return None;
    }
    let roots = session.roots();
    let mut found = Vec::new();
    for path in session.tracker.seen_files() {
        if path == named || !crate::tools::paths::is_inside(&path, &roots) {
            continue;
        }
        match tokio::fs::metadata(&path).await {
            Ok(m) if m.is_file() && m.len() <= MAX_BYTES => {}
            _ => continue,
        }
        let Ok(text) = tokio::fs::read_to_string(&path).await else {
            continue;
        };
        match text.replace("\r\n", "\n").matches(needle.as_str()).count() {
            0 => {}
            1 => found.push(path),
            _ => return None,
        }
    }
    let [path] = found.as_slice() else {
        return None;
    };
    let shown = path.strip_prefix(&session.cwd).unwrap_or(path).display();
    Some(format!(
        "The old_string is, exactly once, in {shown}, a file you have read: if that is the file you meant, make the same edit_file call with path \"{shown}\"."
    ))
}

/// A call that failed on a `path` that does not exist: where files of that
/// name are in the project ([`crate::tools::missing`]).
async fn missing_path_hint(session: &Session, req: &ToolCallRequest) -> Option<String> {
    let args: Value = serde_json::from_str(&req.arguments).ok()?;
    let path = args.get("path")?.as_str()?.to_owned();
    let cwd = session.cwd.clone();
    let roots = session.roots();
    tokio::task::spawn_blocking(move || {
        crate::tools::missing::same_name_elsewhere(&path, &cwd, &roots)
    })
    .await
    .ok()
    .flatten()
}

/// One call in flight: what each step reports to. A step that ends the call
/// early (unknown tool, bad arguments, refused, cancelled) returns `Err` with
/// the call's result, already reported to the editor.
struct Call<'a> {
    session: &'a Arc<Session>,
    id: String,
    cancel: &'a CancellationToken,
    limits: Limits,
}

/// What a call may do, set by the turn from the model's window.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Bytes of a result the model reads ([`result_limit`]).
    pub result_bytes: usize,
    /// The small-model mode: `write_file` does not overwrite a file the
    /// model has not seen ([`crate::tools::SeenFiles::guards_overwrites`]).
    pub guard_overwrites: bool,
}

type Step<T> = Result<T, CallResult>;

impl Call<'_> {
    /// The steps in order: find the tool, prepare it, ask if needed, run it.
    async fn steps(
        &self,
        req: &ToolCallRequest,
        settings: &crate::config::Settings,
    ) -> Step<CallResult> {
        let (tool, args, first_title) = self.start(req)?;
        let mut ctx = self.context(&settings.secret_env);
        let invocation = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(self.cancelled()),
            r = contained(tool.prepare(args.clone(), &ctx)) => r,
        }
        .map_err(|e| self.fail(e.to_string()))?;
        let details = self.details(&*tool, &first_title, &invocation);
        let Invocation { access, action, .. } = invocation;
        // The user's pre_tool hooks: one that blocks stops the call before
        // anything is asked or run, and the model reads why.
        let fields = crate::agent::hooks::tool_fields(tool.name(), &args);
        let pre = crate::agent::hooks::run(
            self.session,
            settings,
            HookEvent::PreTool,
            Some(tool.name()),
            fields.clone(),
            self.cancel,
        )
        .await;
        if let Some(reason) = pre.blocked {
            return Err(self.refuse(format!(
                "blocked by the user's pre_tool hook: {reason}. Nothing was run."
            )));
        }
        // Issue 14: a command that runs without the user allowing it (the mode, a
        // remembered grant) is confined; one the user just allowed runs as
        // allowed. An A2A guest's answer never lets a command out.
        let unasked = self
            .authorize(tool.name(), &access, &details, &args)
            .await?;
        let confined = unasked || !ctx.may_leave_sandbox;
        if let (true, crate::tools::Access::Execute { cwd, .. }) = (confined, &access) {
            ctx.sandbox = Some(crate::tools::sandbox::policy_for(
                &self.session.roots(),
                cwd,
                settings.sandbox_network,
                &settings.sandbox_unreadable,
            ));
        }
        let mut done = self.execute(tool.name(), &access, action, &ctx).await;
        if let Some(context) = pre.context_note() {
            done.for_model = format!(
                "{}\n\nFrom the user's pre_tool hook: {context}",
                done.for_model
            );
        }
        if done.cancelled {
            return Ok(done);
        }
        // The user's post_tool hooks read the result; what they say goes to
        // the model beside it.
        let mut fields = fields;
        if let Some(f) = fields.as_object_mut() {
            // As the model will read it: a secret the call read is redacted.
            let response = crate::secrets::redact_string(done.for_model.clone());
            f.insert("tool_response".into(), Value::String(response));
            f.insert("tool_failed".into(), Value::Bool(done.failed));
        }
        let post = crate::agent::hooks::run(
            self.session,
            settings,
            HookEvent::PostTool,
            Some(tool.name()),
            fields,
            self.cancel,
        )
        .await;
        if let Some(reason) = &post.blocked {
            done.for_model = format!(
                "{}\n\nThe user's post_tool hook objects to this result: {reason}",
                done.for_model
            );
        }
        if let Some(context) = post.context_note() {
            done.for_model = format!(
                "{}\n\nFrom the user's post_tool hook: {context}",
                done.for_model
            );
        }
        Ok(done)
    }

    /// Finds the tool and reports the call (its first title, from the raw
    /// arguments); the arguments must be a JSON object.
    fn start(&self, req: &ToolCallRequest) -> Step<(Arc<dyn crate::tools::Tool>, Value, String)> {
        let args: Value = match serde_json::from_str(&req.arguments) {
            Ok(v) => v,
            Err(e) => Value::String(format!("{e}")),
        };
        let tool = self.find(req, &args)?;
        // Titles quote model output (paths, commands): never let control
        // characters or escape sequences reach the editor's one-line displays.
        let first_title = sanitize_title(&tool.title(&args), TITLE_CHARS);
        announce(
            self.session,
            &self.id,
            Some(tool.name()),
            &first_title,
            tool.kind(),
            args.clone(),
        );
        if !args.is_object() {
            return Err(self.fail(format!(
                "the arguments of {} must be a JSON object matching its schema; got {:?}",
                req.name,
                crate::utf8::shorten(&req.arguments, 200)
            )));
        }
        Ok((tool, args, first_title))
    }

    /// What the tool sees of the session (confined later if the call runs
    /// unasked).
    fn context(&self, secret_env: &[String]) -> ToolContext {
        ToolContext {
            session_id: self.session.id.clone(),
            cwd: self.session.cwd.clone(),
            roots: self.session.roots(),
            editor: self.session.editor.clone(),
            cancel: self.cancel.clone(),
            tool_call_id: self.id.clone(),
            secret_env: secret_env.to_vec(),
            sandbox: None,
            may_leave_sandbox: self.session.asker == crate::agent::session::Asker::User,
            seen: Some(Arc::new(SessionSeen(
                self.session.clone(),
                self.limits.guard_overwrites,
            ))),
        }
    }

    /// The call as prepared (title, kind, content such as a diff, locations),
    /// shown to the editor when it adds to the first report.
    fn details(
        &self,
        tool: &dyn crate::tools::Tool,
        first_title: &str,
        inv: &Invocation,
    ) -> ToolCallUpdate {
        let title = sanitize_title(&inv.title, TITLE_CHARS);
        let details = ToolCallUpdate {
            title: Some(title.clone()),
            kind: Some(inv.kind),
            content: Some(inv.content.clone()),
            locations: Some(inv.locations.clone()),
            ..ToolCallUpdate::new(&self.id)
        };
        if title != first_title
            || inv.kind != tool.kind()
            || !inv.content.is_empty()
            || !inv.locations.is_empty()
        {
            self.session
                .editor
                .update(&SessionUpdate::ToolCallUpdate(details.clone()));
        }
        details
    }

    /// The tool the model named, or the call fails naming the tools there are.
    fn find(&self, req: &ToolCallRequest, args: &Value) -> Step<Arc<dyn crate::tools::Tool>> {
        if let Some(tool) = self.session.registry.get(&req.name) {
            return Ok(tool);
        }
        announce(
            self.session,
            &self.id,
            None,
            &sanitize_title(&format!("Unknown tool {}", req.name), TITLE_CHARS),
            ToolKind::Other,
            args.clone(),
        );
        Err(self.fail(format!(
            "there is no tool named {:?}; available tools: {}",
            req.name,
            self.session.registry.names().join(", ")
        )))
    }

    /// The permission step (DESIGN §3): the policy decides, and asks the
    /// user when it must. `Ok(true)` when the call runs without having asked.
    async fn authorize(
        &self,
        tool: &str,
        access: &crate::tools::Access,
        details: &ToolCallUpdate,
        args: &Value,
    ) -> Step<bool> {
        let session = self.session;
        let roots = session.roots();
        let skill_dirs = session.skills.get().user_dirs();
        let bounds = permission::Bounds {
            roots: &roots,
            protected: &session.protected,
            skill_dirs: &skill_dirs,
        };
        let (decision, can_keep) = {
            let grants = session.grants.lock().unwrap_or_else(|e| e.into_inner());
            let decision = permission::decide(session.mode(), access, tool, &bounds, &grants);
            (decision, grants.kept().is_some())
        };
        let scope = match decision {
            Decision::Allow => return Ok(true),
            Decision::Refuse(reason) => {
                return Err(self.refuse(format!("not allowed: {reason}. Nothing was changed.")));
            }
            // An A2A guest's fetch is asked each time: no "always" for a
            // domain (issue 45 item 2).
            Decision::Ask(permission::Scope::Fetch(_))
                if session.asker != crate::agent::session::Asker::User =>
            {
                permission::Scope::Once
            }
            Decision::Ask(scope) => scope,
        };
        let mut request = ToolCallUpdate {
            status: Some(ToolCallStatus::Pending),
            raw_input: Some(args.clone()),
            ..details.clone()
        };
        // The options are a few words; what "always" covers is said here.
        if let Some(covers) = permission::covers(&scope) {
            request
                .content
                .get_or_insert_with(Vec::new)
                .push(crate::acp::ToolCallContent::text(covers));
        }
        // Only the user's answers may be kept for the project: an A2A
        // guest is not offered the option (DESIGN "Who holds which rights").
        let user = session.asker == crate::agent::session::Asker::User;
        let keep = user && can_keep && permission::keepable(&scope, &bounds);
        let options = permission::options_keeping(&scope, keep);
        let outcome = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => return Err(self.cancelled()),
            r = session.editor.request_permission(request, options.clone()) => r,
        };
        let chosen = match outcome {
            Ok(PermissionOutcome::Selected { option_id }) => {
                options.iter().find(|o| o.option_id == option_id)
            }
            Ok(PermissionOutcome::Cancelled) => return Err(self.cancelled()),
            Err(e) => {
                tracing::warn!(error = %e, "permission request failed");
                return Err(self.fail(format!(
                    "the permission request failed ({}); nothing was done",
                    e.message
                )));
            }
        };
        if keep && chosen.is_some_and(|o| o.option_id == permission::ALLOW_PROJECT) {
            remember(session, &scope, true);
            keep_for_project(session, &scope);
            return Ok(false);
        }
        match chosen.map(|o| o.kind) {
            Some(PermissionOptionKind::AllowOnce) => Ok(false),
            Some(PermissionOptionKind::AllowAlways) => {
                remember(session, &scope, true);
                Ok(false)
            }
            Some(PermissionOptionKind::RejectAlways) => {
                remember(session, &scope, false);
                Err(self.refuse(rejected_text()))
            }
            Some(PermissionOptionKind::RejectOnce) | None => Err(self.refuse(rejected_text())),
        }
    }

    /// Runs the prepared action and reports how it ended.
    async fn execute(
        &self,
        tool: &str,
        access: &crate::tools::Access,
        action: Box<dyn crate::tools::Action>,
        ctx: &ToolContext,
    ) -> CallResult {
        let editor = &self.session.editor;
        editor.update(&SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(&self.id).status(ToolCallStatus::InProgress),
        ));
        // Issue 19: the turn's checkpoint, and what a command changed.
        let pre = crate::agent::history::changes::before(self.session, tool, access).await;
        let result = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(ToolError::Cancelled),
            r = contained(action.run(ctx)) => r,
        };
        let result = match result {
            Ok(mut out) => {
                crate::agent::history::changes::after(
                    self.session,
                    tool,
                    access,
                    pre,
                    Some(&mut out),
                )
                .await;
                Ok(out)
            }
            Err(e) => {
                // A cancelled or failed command may still have changed files.
                crate::agent::history::changes::after(self.session, tool, access, pre, None).await;
                Err(e)
            }
        };
        match result {
            Ok(ToolOutput {
                for_model,
                content,
                locations,
                raw_output,
            }) => {
                let raw = raw_output.unwrap_or_else(
                    || json!({ "output": crate::utf8::shorten(&for_model, RAW_OUTPUT_LIMIT) }),
                );
                let failed = raw["exitCode"].as_i64().is_some_and(|c| c != 0);
                let media = crate::mcp::rich::media_of(&content);
                editor.update(&SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                    status: Some(ToolCallStatus::Completed),
                    content: (!content.is_empty()).then_some(content),
                    locations,
                    raw_output: Some(raw),
                    ..ToolCallUpdate::new(&self.id)
                }));
                CallResult {
                    for_model: trim_to(for_model, self.limits.result_bytes),
                    cancelled: false,
                    failed,
                    halted: false,
                    refused: false,
                    media,
                }
            }
            Err(ToolError::Cancelled) => self.cancelled(),
            Err(e) if e.halts() => {
                let msg = e.to_string();
                tracing::error!(error = %msg, "a write may have left the project; the turn stops");
                editor.update(&SessionUpdate::agent_text(
                    format!("\n\n> ⚠ **Stopped.** {msg}\n\n"),
                    None,
                ));
                CallResult {
                    halted: true,
                    ..self.fail(msg)
                }
            }
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// Reports the call failed with `msg`, which the model reads too.
    fn fail(&self, msg: String) -> CallResult {
        failed(self.session, &self.id, msg)
    }

    /// Reports the call was refused (by the user or the mode) with `msg`.
    fn refuse(&self, msg: String) -> CallResult {
        CallResult {
            refused: true,
            ..self.fail(msg)
        }
    }

    fn cancelled(&self) -> CallResult {
        cancelled(self.session, &self.id)
    }
}

/// What the session's model has seen, for the editing tools.
struct SessionSeen(Arc<Session>, bool);

impl crate::tools::SeenFiles for SessionSeen {
    fn has_seen(&self, path: &std::path::Path) -> bool {
        self.0.tracker.has_seen(path)
    }
    fn guards_overwrites(&self) -> bool {
        self.1
    }
    fn shown(&self, path: &std::path::Path) {
        self.0.tracker.mark_shown(path)
    }
}

/// A panic inside a tool (a bug) fails that call instead of the whole turn.
async fn contained<T>(
    fut: impl std::future::Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(fut).catch_unwind().await {
        Ok(r) => r,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %what, "a tool panicked");
            Err(ToolError::Failed(
                "the tool failed unexpectedly (an internal error in acp-coder; details are in its log)".into(),
            ))
        }
    }
}

fn rejected_text() -> String {
    "the user rejected this call. Nothing was changed; do not retry it in another form — ask the user how to proceed".into()
}

fn remember(session: &Session, scope: &Scope, allow: bool) {
    session
        .grants
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remember(scope, allow);
}

/// "Always allow … for this project": kept in the agent's data directory
/// (`policy::kept`). If it cannot be saved, the session grant still holds and
/// the user is told.
fn keep_for_project(session: &Session, scope: &Scope) {
    let kept = session
        .grants
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .kept()
        .cloned();
    let Some(kept) = kept else { return };
    if let Err(e) = kept.add(scope.grants()) {
        tracing::warn!(error = %e, "kept permission not saved");
        session.editor.update(&SessionUpdate::agent_text(
            format!("\n\n> ⚠ {e}. The permission holds for this session only.\n\n"),
            None,
        ));
    }
}

fn announce(
    session: &Session,
    id: &str,
    name: Option<&str>,
    title: &str,
    kind: ToolKind,
    raw_input: Value,
) {
    session.editor.update(&SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.to_owned(),
        title: title.to_owned(),
        name: name.map(str::to_owned),
        kind,
        status: ToolCallStatus::Pending,
        content: Vec::new(),
        locations: Vec::new(),
        raw_input: Some(raw_input),
        raw_output: None,
        meta: None,
    }));
}

/// Reports call `id` failed with `msg`, which the model reads too.
pub(crate) fn failed(session: &Session, id: &str, msg: String) -> CallResult {
    session
        .editor
        .update(&SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            status: Some(ToolCallStatus::Failed),
            content: Some(vec![ToolCallContent::text(msg.clone())]),
            raw_output: Some(json!({ "error": msg })),
            ..ToolCallUpdate::new(id)
        }));
    CallResult {
        for_model: format!("Error: {msg}"),
        cancelled: false,
        failed: true,
        halted: false,
        refused: false,
        media: Vec::new(),
    }
}

/// Reports a call stopped by `session/cancel` (v1 has no "cancelled" status).
pub(crate) fn cancelled(session: &Session, id: &str) -> CallResult {
    session.editor.update(&SessionUpdate::ToolCallUpdate(
        ToolCallUpdate::new(id)
            .status(ToolCallStatus::Failed)
            .content(vec![ToolCallContent::text("Cancelled")]),
    ));
    CallResult {
        for_model: "Error: the user cancelled this call before it finished.".into(),
        cancelled: true,
        failed: true,
        halted: false,
        refused: false,
        media: Vec::new(),
    }
}

/// How many bytes of one tool result the model reads with a context window
/// of `window` tokens: 64 KiB, but at most about a quarter of the window
/// (a token is about four bytes), so one result cannot fill a small one.
pub fn result_limit(window: u64) -> usize {
    let quarter = usize::try_from(window).unwrap_or(usize::MAX);
    quarter.clamp(MIN_RESULT_LIMIT, MODEL_RESULT_LIMIT)
}

/// Keeps the head and the tail of a result longer than `limit`, saying
/// what was dropped.
pub fn trim_to(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let half = limit / 2;
    let head = crate::utf8::floor_boundary(&text, half);
    let tail = crate::utf8::ceil_boundary(&text, text.len() - half);
    format!(
        "{}\n\n[… {} bytes omitted from the middle of this output; narrow the request to see them …]\n\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_results_keep_head_and_tail() {
        let text = "a".repeat(MODEL_RESULT_LIMIT) + "MIDDLE" + &"z".repeat(MODEL_RESULT_LIMIT);
        let t = trim_to(text, MODEL_RESULT_LIMIT);
        assert!(t.starts_with('a') && t.ends_with('z') && !t.contains("MIDDLE"));
        assert!(t.contains("bytes omitted"));
        assert_eq!(trim_to("short".into(), MODEL_RESULT_LIMIT), "short");
    }

    /// A 16k-token window reads at most 16 KiB of one result, an 8k one
    /// 8 KiB; large windows keep the 64 KiB cap.
    #[test]
    fn result_limit_follows_the_window() {
        assert_eq!(result_limit(16_384), 16_384);
        assert_eq!(result_limit(8_192), 8_192);
        assert_eq!(result_limit(128_000), MODEL_RESULT_LIMIT);
        assert_eq!(result_limit(1_000), MIN_RESULT_LIMIT);
        let t = trim_to("x".repeat(20_000), result_limit(8_192));
        assert!(
            t.len() < 8_400 && t.contains("bytes omitted"),
            "{}",
            t.len()
        );
    }
}
