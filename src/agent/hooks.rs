//! Running the user's hooks (issue 45 item 6; the contract is Claude Code's,
//! see `docs/hooks.md`). A hook gets JSON on stdin (the session, its
//! directory, the event, and the tool call, its result or the prompt), runs
//! like a `run_command` command that runs unasked: in the sandbox with the
//! session's roots, without the secret variables, and stopped with its
//! process tree when its timeout passes.
//!
//! - exit 0: go on. stdout may hold JSON: `{"decision": "block", "reason":
//!   "…"}` blocks as exit 2 would, and `hookSpecificOutput.additionalContext`
//!   is added for the model; for `prompt`, plain stdout is context too.
//! - exit 2: block, with stderr as the reason.
//! - anything else (a crash, a timeout): a warning to the user; the call,
//!   prompt or turn goes on.
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::session::Session;
use crate::config::hooks::Hook;
use crate::config::{HookEvent, Settings};
use crate::tools::process::{CommandSpec, run_local};

/// How much of a hook's stdout and stderr is kept.
const OUTPUT_LIMIT: usize = 64 * 1024;
/// Longest reason or context taken from one hook (characters).
const TEXT_CHARS: usize = 8 * 1024;

/// What the hooks of one event said.
#[derive(Debug, Default, PartialEq)]
pub struct Verdict {
    /// The first hook that blocked, and its reason.
    pub blocked: Option<String>,
    /// Context the hooks added for the model, in order.
    pub context: Vec<String>,
}

impl Verdict {
    /// The context as one note, if any.
    pub fn context_note(&self) -> Option<String> {
        (!self.context.is_empty()).then(|| self.context.join("\n\n"))
    }
}

/// Runs the hooks of `event` (for `tool` on tool events) in file order,
/// each with `fields` added to the common input; stops at the first that
/// blocks. No hooks: nothing runs.
pub async fn run(
    session: &Session,
    settings: &Settings,
    event: HookEvent,
    tool: Option<&str>,
    fields: Value,
    cancel: &CancellationToken,
) -> Verdict {
    let mut verdict = Verdict::default();
    let hooks = settings.hooks.for_event(event, tool);
    if hooks.is_empty() {
        return verdict;
    }
    let mut input = json!({
        "session_id": session.id,
        "cwd": session.cwd,
        "hook_event_name": event.id(),
    });
    if let (Some(all), Some(more)) = (input.as_object_mut(), fields.as_object()) {
        all.extend(more.clone());
    }
    let stdin = input.to_string().into_bytes();
    for hook in hooks {
        if cancel.is_cancelled() {
            break;
        }
        match one(session, settings, hook, stdin.clone(), cancel).await {
            Said::Block(reason) => {
                tracing::info!(session = %session.id, event = event.id(), command = %hook.command, "a hook blocked");
                verdict.blocked = Some(reason);
                break;
            }
            Said::Context(text) => verdict.context.push(text),
            Said::Nothing => {}
        }
    }
    verdict
}

enum Said {
    Block(String),
    Context(String),
    Nothing,
}

/// Runs one hook and reads what it said; failures are warned about.
async fn one(
    session: &Session,
    settings: &Settings,
    hook: &Hook,
    stdin: Vec<u8>,
    cancel: &CancellationToken,
) -> Said {
    let roots = session.roots();
    let policy = crate::tools::sandbox::level().confines().then(|| {
        crate::tools::sandbox::policy_for(
            &roots,
            &session.cwd,
            settings.sandbox_network,
            &settings.sandbox_unreadable,
        )
    });
    let spec = CommandSpec {
        command: hook.command.clone(),
        cwd: session.cwd.clone(),
        env: vec![(
            "ACP_CODER_PROJECT_DIR".into(),
            session.cwd.display().to_string(),
        )],
        env_remove: settings.secret_env.clone(),
        timeout: hook.timeout,
        output_limit: OUTPUT_LIMIT,
        sandbox: policy,
        stdin: Some(stdin),
    };
    let shown = crate::tools::code_span(&hook.command, 80);
    let event = hook.event.id();
    let warn = |what: String| {
        tracing::warn!(session = %session.id, event, command = %hook.command, "{what}");
        crate::agent::engine::model_call::status(
            session,
            &format!("Hook {shown} ({event}) {what}; going on"),
        );
    };
    let result = match run_local(spec, cancel.child_token(), |_| {}).await {
        Ok(r) => r,
        Err(e) => {
            warn(format!("could not start: {e}"));
            return Said::Nothing;
        }
    };
    if result.cancelled {
        return Said::Nothing;
    }
    if result.timed_out {
        warn(format!(
            "ran longer than its {} s timeout and was stopped",
            hook.timeout.as_secs()
        ));
        return Said::Nothing;
    }
    match result.exit_code {
        Some(0) => read_stdout(hook.event, &result.stdout),
        Some(2) => Said::Block(
            clip(result.stderr.trim())
                .unwrap_or_else(|| format!("the hook {shown} gave no reason")),
        ),
        Some(code) => {
            let err = clip(result.stderr.trim())
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            warn(format!("failed with exit code {code}{err}"));
            Said::Nothing
        }
        None => {
            let signal = result.signal.unwrap_or_else(|| "a signal".into());
            warn(format!("was killed by {signal}"));
            Said::Nothing
        }
    }
}

/// What a hook that exited 0 said on stdout.
fn read_stdout(event: HookEvent, stdout: &str) -> Said {
    let text = stdout.trim();
    if text.is_empty() {
        return Said::Nothing;
    }
    let Ok(Value::Object(answer)) = serde_json::from_str::<Value>(text) else {
        // Plain text is context for a prompt (as Claude Code's
        // UserPromptSubmit); for the other events it is only logged.
        return match event {
            HookEvent::Prompt => clip(text).map_or(Said::Nothing, Said::Context),
            _ => {
                tracing::debug!(event = event.id(), "hook stdout (not JSON) ignored");
                Said::Nothing
            }
        };
    };
    let str_of = |v: Option<&Value>| v.and_then(Value::as_str).and_then(clip);
    let specific = answer.get("hookSpecificOutput");
    let denied = specific
        .and_then(|s| s.get("permissionDecision"))
        .and_then(Value::as_str)
        == Some("deny");
    if answer.get("decision").and_then(Value::as_str) == Some("block") || denied {
        let reason = str_of(answer.get("reason"))
            .or_else(|| str_of(specific.and_then(|s| s.get("permissionDecisionReason"))))
            .unwrap_or_else(|| "the hook gave no reason".into());
        return Said::Block(reason);
    }
    match str_of(specific.and_then(|s| s.get("additionalContext"))) {
        Some(context) => Said::Context(context),
        None => Said::Nothing,
    }
}

/// `text` cut to [`TEXT_CHARS`]; `None` when empty.
fn clip(text: &str) -> Option<String> {
    let text = text.trim();
    (!text.is_empty()).then(|| crate::utf8::shorten(text, TEXT_CHARS))
}

/// The input fields of a tool event.
pub fn tool_fields(tool: &str, input: &Value) -> Value {
    json!({"tool_name": tool, "tool_input": input})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(event: HookEvent, out: &str) -> (Option<String>, Option<String>) {
        match read_stdout(event, out) {
            Said::Block(r) => (Some(r), None),
            Said::Context(c) => (None, Some(c)),
            Said::Nothing => (None, None),
        }
    }

    #[test]
    fn stdout_is_read_as_claude_codes_hooks_write_it() {
        assert_eq!(
            said(
                HookEvent::PreTool,
                r#"{"decision":"block","reason":"no rm"}"#
            ),
            (Some("no rm".into()), None)
        );
        assert_eq!(
            said(
                HookEvent::PreTool,
                r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"nope"}}"#
            ),
            (Some("nope".into()), None)
        );
        assert_eq!(
            said(
                HookEvent::PostTool,
                r#"{"hookSpecificOutput":{"additionalContext":"lint: 2 warnings"}}"#
            ),
            (None, Some("lint: 2 warnings".into()))
        );
        assert_eq!(
            said(HookEvent::Prompt, "branch: main\n"),
            (None, Some("branch: main".into()))
        );
        assert_eq!(said(HookEvent::PostTool, "plain text"), (None, None));
        assert_eq!(
            said(HookEvent::Stop, "{\"decision\":\"approve\"}"),
            (None, None)
        );
    }
}
