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

use super::permission::{self, Decision, Scope};
use super::session::Session;

/// Tool results longer than this are cut for the model (head and tail kept).
const MODEL_RESULT_LIMIT: usize = 64 * 1024;
/// Longest tool-call title (characters).
const TITLE_CHARS: usize = 200;
/// `rawOutput` text is capped: the editor already has the content.
const RAW_OUTPUT_LIMIT: usize = 16 * 1024;

pub struct CallResult {
    /// The text the model reads as this call's result.
    pub for_model: String,
    pub cancelled: bool,
}

/// Runs one call requested by the model.
pub async fn run(
    session: &Arc<Session>,
    req: &ToolCallRequest,
    cancel: &CancellationToken,
    secret_env: &[String],
    sandbox_network: bool,
) -> CallResult {
    let id = session.claim_tool_id(&req.id);
    let editor = &session.editor;
    let fail = |title: Option<String>, msg: String| {
        editor.update(&SessionUpdate::ToolCallUpdate(ToolCallUpdate {
            title,
            status: Some(ToolCallStatus::Failed),
            content: Some(vec![ToolCallContent::text(msg.clone())]),
            raw_output: Some(json!({ "error": msg })),
            ..ToolCallUpdate::new(&id)
        }));
        CallResult {
            for_model: format!("Error: {msg}"),
            cancelled: false,
        }
    };

    let args: Value = match serde_json::from_str(&req.arguments) {
        Ok(v @ Value::Object(_)) => v,
        Ok(other) => other,
        Err(e) => Value::String(format!("{e}")),
    };
    let Some(tool) = session.registry.get(&req.name) else {
        announce(
            session,
            &id,
            &sanitize_title(&format!("Unknown tool {}", req.name), TITLE_CHARS),
            ToolKind::Other,
            args,
        );
        let names = session.registry.names();
        return fail(
            None,
            format!(
                "there is no tool named {:?}; available tools: {}",
                req.name,
                names.join(", ")
            ),
        );
    };
    // Titles quote model output (paths, commands): never let control
    // characters or escape sequences reach the editor's one-line displays.
    let first_title = sanitize_title(&tool.title(&args), TITLE_CHARS);
    announce(session, &id, &first_title, tool.kind(), args.clone());
    if !args.is_object() {
        return fail(
            None,
            format!(
                "the arguments of {} must be a JSON object matching its schema; got {:?}",
                req.name,
                truncate(&req.arguments, 200)
            ),
        );
    }

    let mut ctx = ToolContext {
        session_id: session.id.clone(),
        cwd: session.cwd.clone(),
        roots: session.roots.clone(),
        editor: editor.clone(),
        cancel: cancel.clone(),
        tool_call_id: id.clone(),
        secret_env: secret_env.to_vec(),
        sandbox: None,
    };
    let invocation = tokio::select! {
        biased;
        _ = cancel.cancelled() => return cancelled(session, &id),
        r = contained(tool.prepare(args.clone(), &ctx)) => r,
    };
    let Invocation {
        title,
        kind,
        locations,
        content,
        access,
        action,
    } = match invocation {
        Ok(inv) => inv,
        Err(e) => return fail(None, e.to_string()),
    };
    let title = sanitize_title(&title, TITLE_CHARS);
    let details = ToolCallUpdate {
        title: Some(title.clone()),
        kind: Some(kind),
        content: Some(content.clone()),
        locations: Some(locations.clone()),
        ..ToolCallUpdate::new(&id)
    };
    if title != first_title || kind != tool.kind() || !content.is_empty() || !locations.is_empty() {
        editor.update(&SessionUpdate::ToolCallUpdate(details.clone()));
    }

    let decision = {
        let grants = session.grants.lock().unwrap_or_else(|e| e.into_inner());
        let bounds = permission::Bounds {
            roots: &session.roots,
            protected: &session.protected,
        };
        permission::decide(session.mode(), &access, tool.name(), &bounds, &grants)
    };
    // Issue 14: a command that runs without the user allowing it (the mode, a
    // remembered grant) is confined; one the user just allowed runs as allowed.
    let unasked = decision == Decision::Allow;
    match decision {
        Decision::Allow => {}
        Decision::Refuse(reason) => {
            return fail(None, format!("not allowed: {reason}. Nothing was changed."));
        }
        Decision::Ask(scope) => {
            let request = ToolCallUpdate {
                status: Some(ToolCallStatus::Pending),
                raw_input: Some(args.clone()),
                ..details.clone()
            };
            let options = permission::options(&scope);
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => return cancelled(session, &id),
                r = editor.request_permission(request, options.clone()) => r,
            };
            let kind = match outcome {
                Ok(PermissionOutcome::Selected { option_id }) => options
                    .iter()
                    .find(|o| o.option_id == option_id)
                    .map(|o| o.kind),
                Ok(PermissionOutcome::Cancelled) => return cancelled(session, &id),
                Err(e) => {
                    tracing::warn!(error = %e, "permission request failed");
                    return fail(
                        None,
                        format!(
                            "the permission request failed ({}); nothing was done",
                            e.message
                        ),
                    );
                }
            };
            match kind {
                Some(PermissionOptionKind::AllowOnce) => {}
                Some(PermissionOptionKind::AllowAlways) => remember(session, &scope, true),
                Some(PermissionOptionKind::RejectAlways) => {
                    remember(session, &scope, false);
                    return fail(None, rejected_text());
                }
                Some(PermissionOptionKind::RejectOnce) | None => {
                    return fail(None, rejected_text());
                }
            }
        }
    }

    if let (true, crate::tools::Access::Execute { cwd, .. }) = (unasked, &access) {
        ctx.sandbox = Some(crate::tools::sandbox::policy_for(
            &session.roots,
            cwd,
            sandbox_network,
        ));
    }
    editor.update(&SessionUpdate::ToolCallUpdate(
        ToolCallUpdate::new(&id).status(ToolCallStatus::InProgress),
    ));
    // Issue 19: the turn's checkpoint, and what a command changed.
    let pre = super::changes::before(session, tool.name(), &access).await;
    let result = tokio::select! {
        biased;
        _ = cancel.cancelled() => Err(ToolError::Cancelled),
        r = contained(action.run(&ctx)) => r,
    };
    let result = match result {
        Ok(mut out) => {
            super::changes::after(session, tool.name(), &access, pre, Some(&mut out)).await;
            Ok(out)
        }
        Err(e) => {
            // A cancelled or failed command may still have changed files.
            super::changes::after(session, tool.name(), &access, pre, None).await;
            Err(e)
        }
    };
    match result {
        Ok(ToolOutput {
            for_model,
            content: out_content,
            locations: out_locations,
            raw_output,
        }) => {
            let raw = raw_output
                .unwrap_or_else(|| json!({ "output": truncate(&for_model, RAW_OUTPUT_LIMIT) }));
            editor.update(&SessionUpdate::ToolCallUpdate(ToolCallUpdate {
                status: Some(ToolCallStatus::Completed),
                content: (!out_content.is_empty()).then_some(out_content),
                locations: out_locations,
                raw_output: Some(raw),
                ..ToolCallUpdate::new(&id)
            }));
            CallResult {
                for_model: trim_for_model(for_model),
                cancelled: false,
            }
        }
        Err(ToolError::Cancelled) => cancelled(session, &id),
        Err(e) => fail(None, e.to_string()),
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

fn announce(session: &Session, id: &str, title: &str, kind: ToolKind, raw_input: Value) {
    session.editor.update(&SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.to_owned(),
        title: title.to_owned(),
        kind,
        status: ToolCallStatus::Pending,
        content: Vec::new(),
        locations: Vec::new(),
        raw_input: Some(raw_input),
        raw_output: None,
        meta: None,
    }));
}

/// Reports a call stopped by `session/cancel` (v1 has no "cancelled" status).
fn cancelled(session: &Session, id: &str) -> CallResult {
    session.editor.update(&SessionUpdate::ToolCallUpdate(
        ToolCallUpdate::new(id)
            .status(ToolCallStatus::Failed)
            .content(vec![ToolCallContent::text("Cancelled")]),
    ));
    CallResult {
        for_model: "Error: the user cancelled this call before it finished.".into(),
        cancelled: true,
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}… [{} more bytes]", &s[..cut], s.len() - cut)
}

/// Keeps the head and the tail of a long result, saying what was dropped.
pub fn trim_for_model(text: String) -> String {
    if text.len() <= MODEL_RESULT_LIMIT {
        return text;
    }
    let half = MODEL_RESULT_LIMIT / 2;
    let mut head = half;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - half;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
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
        let t = trim_for_model(text);
        assert!(t.starts_with('a') && t.ends_with('z') && !t.contains("MIDDLE"));
        assert!(t.contains("bytes omitted"));
        assert_eq!(trim_for_model("short".into()), "short");
    }
}
