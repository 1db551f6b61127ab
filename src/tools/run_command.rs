//! `run_command`: a shell command in the editor's terminal when it offers one
//! (`terminal/create` → embedded terminal → `wait_for_exit` with a timeout →
//! `output` → `release`, ACP §10), otherwise as a local `sh -c` process in its
//! own process group. Either way the model gets the exit status and the tail of
//! the output, and cancel or timeout kills the command.
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::display;
use super::process::{CommandSpec, run_local};
use super::sandbox;
use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, code_span,
    parse_args, resolve_arg, sanitize_title,
};
use crate::acp::session::NameValue;
use crate::acp::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, SessionUpdate, ToolCallContent,
    ToolCallUpdate, ToolKind,
};
use crate::editor::Editor;

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output kept for the model: the tail, where errors and summaries are.
const MODEL_OUTPUT_LIMIT: usize = 32 * 1024;
/// Output the editor's terminal keeps (it truncates from the beginning).
const TERMINAL_OUTPUT_LIMIT: u64 = 256 * 1024;
/// Live output shown in the tool call while a local command runs.
const LIVE_PREVIEW_LIMIT: usize = 8 * 1024;

pub struct RunCommand;

#[derive(Deserialize)]
struct Args {
    command: String,
    #[serde(default)]
    cwd: Option<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    background: bool,
}

/// The tool's description, naming the shell of this system and its syntax
/// (issue 43.2: `sh -c` made models write POSIX for cmd.exe).
fn description(shell: &str) -> String {
    format!(
        "Run a shell command; returns its exit code and output (stdout and stderr together; \
         the last 32 KB if longer). {shell}. No TTY and no input: use non-interactive flags. \
         The result lists the project's files the command created, changed or deleted. For \
         servers, watchers and long builds set background: true: you get a handle (e.g. \
         `bg1`) and the first output at once while the command keeps running; read it with \
         command_output, stop it with command_kill. Handles last until killed or the session \
         ends."
    )
}

#[async_trait::async_trait]
impl Tool for RunCommand {
    fn name(&self) -> &str {
        "run_command"
    }
    fn description(&self) -> &str {
        static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        TEXT.get_or_init(|| description(crate::platform::process::shell_description()))
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "command": {"type": "string", "description": "The shell command line."},
                "cwd": {"type": "string", "description": "Directory to run in. Default: the working directory."},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS, "description": "Milliseconds before the command is killed (not in the background). Default 120000."},
                "background": {"type": "boolean", "description": "Run in the background and return a handle at once. Default false."}
            }),
            &["command"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, args: &Value) -> String {
        match args.get("command").and_then(Value::as_str) {
            Some(c) => format!("Run {}", quote(c)),
            None => "Run command".into(),
        }
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let a: Args = parse_args(args)?;
        if a.command.trim().is_empty() {
            return Err(ToolError::InvalidArgs("command: must not be empty".into()));
        }
        // Whole or not at all (cmd.exe would run the first line only).
        crate::platform::process::check_shell_text(&a.command)
            .map_err(|why| ToolError::InvalidArgs(format!("command: {why}")))?;
        let cwd = match a.cwd.as_deref().filter(|c| !c.trim().is_empty()) {
            Some(c) => resolve_arg(ctx, c)?,
            None => super::paths::canonicalize_lenient(&ctx.cwd),
        };
        match tokio::fs::metadata(&cwd).await {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(ToolError::InvalidArgs(format!(
                    "cwd: {} is not a directory",
                    cwd.display()
                )));
            }
            Err(_) => {
                return Err(ToolError::InvalidArgs(format!(
                    "cwd: {} does not exist",
                    cwd.display()
                )));
            }
        }
        let timeout = Duration::from_millis(
            // 0 (a small model filling every parameter) is the default,
            // not a command killed at once.
            a.timeout_ms
                .filter(|&t| t > 0)
                .unwrap_or(DEFAULT_TIMEOUT_MS)
                .clamp(1, MAX_TIMEOUT_MS),
        );
        let mut title = format!("Run {}", quote(&a.command));
        let shown = display(&cwd, &ctx.cwd);
        if shown != "." {
            title.push_str(&format!(" in {}", sanitize_title(&shown, 60)));
        }
        Ok(Invocation {
            title,
            kind: ToolKind::Execute,
            locations: Vec::new(),
            // The full command, verbatim, for review in the permission dialog.
            content: vec![ToolCallContent::text(format!(
                "```sh\n{}\n```",
                a.command.replace("```", "`\u{200b}``")
            ))],
            access: Access::Execute {
                command: a.command.clone(),
                cwd: cwd.clone(),
            },
            action: Box::new(Run {
                command: a.command,
                cwd,
                timeout,
                background: a.background,
            }),
        })
    }
}

/// The command as a code span for a title: one line, control characters removed.
fn quote(command: &str) -> String {
    code_span(command, 100)
}

struct Run {
    command: String,
    cwd: PathBuf,
    timeout: Duration,
    background: bool,
}

#[async_trait::async_trait]
impl Action for Run {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // No editor write beneath a root while this command runs, or while
        // a background one starts (issue 42 item 9, `editor::files::gate`).
        let _running = crate::editor::command_guard().await;
        let policy = ctx.sandbox.as_ref().filter(|_| sandbox::level().confines());
        if self.background {
            return self.start_background(ctx, policy).await;
        }
        let first = self.once(ctx, policy).await?;
        let Some(policy) = policy else {
            return Ok(first);
        };
        if !failed(&first) || !sandbox::looks_denied(&first.for_model) {
            return Ok(first);
        }
        // A client that shows notices learns of the denial as one (others
        // see it in the question below or the tool's result, as before).
        ctx.editor.notice(denied_notice(&self.command));
        // Issue 14: the sandbox probably stopped a write (or the network);
        // the user (never an A2A guest) may let this one command run again
        // without it.
        if ctx.may_leave_sandbox && self.ask_unsandboxed(ctx, policy, &first).await? {
            let mut second = self.once(ctx, None).await?;
            second.for_model = format!(
                "The first run, in the sandbox, failed on a denied write or connection; the user allowed running the command once more without the sandbox. This second run:\n{}",
                second.for_model
            );
            return Ok(second);
        }
        let mut first = first;
        let note = sandbox::unreadable_note(&first.for_model, policy, ctx.may_leave_sandbox)
            .map(|n| format!(" {n}"))
            .unwrap_or_default();
        let declined = match ctx.may_leave_sandbox {
            true => "The user declined to run it without the sandbox",
            false => "Commands of this client (A2A) never run without the sandbox",
        };
        first.for_model.push_str(&format!(
            "\n\n[The command ran in the sandbox: it may write only inside the project and its own temp directory (.git/config, hooks and other files that tools run on their own are read-only), may not read credential stores or the agent's own files, and reaches no outside UNIX socket; the failure looks like a denied write, read or connection.{note} {declined}: do not retry it in another form; work inside the project or ask the user.]",
        ));
        Ok(first)
    }
}

/// The `notice` for a command whose failure looks like a sandbox denial
/// (`sandbox::looks_denied`).
fn denied_notice(command: &str) -> crate::acp::Notice {
    crate::acp::Notice {
        severity: crate::acp::NoticeSeverity::Warning,
        title: "The sandbox denied a command's access".into(),
        description: Some(format!(
            "{} failed on a denied write, read or connection. It ran in the sandbox, which allows writes only inside the project and its temp directory, no credential stores and, unless allowed, no network.",
            quote(command)
        )),
    }
}

/// Whether a command's result is a failure (non-zero exit, signal, timeout).
fn failed(out: &ToolOutput) -> bool {
    out.raw_output.as_ref().is_some_and(|r| {
        r["exitCode"].as_i64() != Some(0) || !r["signal"].is_null() || r["timedOut"] == true
    })
}

/// Releases an editor terminal even when the call is dropped mid-way (cancel):
/// the protocol requires every created terminal to be released.
struct TerminalGuard {
    editor: Editor,
    id: String,
    armed: bool,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if self.armed {
            let editor = self.editor.clone();
            let id = std::mem::take(&mut self.id);
            tokio::spawn(async move {
                let _ = editor.terminal_kill(&id).await;
                let _ = editor.terminal_release(&id).await;
            });
        }
    }
}

impl Run {
    /// `background: true` (issue 19 §1): same permission decision and the
    /// same sandbox as a foreground run; the job outlives the call.
    async fn start_background(
        &self,
        ctx: &ToolContext,
        policy: Option<&sandbox::Policy>,
    ) -> Result<ToolOutput, ToolError> {
        use super::process::background;
        let started = if ctx.editor.has_terminal() {
            background::start_terminal(
                &ctx.session_id,
                &ctx.editor,
                &self.command,
                self.terminal_argv(policy)?,
                self.cwd.clone(),
                TERMINAL_OUTPUT_LIMIT,
            )
            .await
        } else {
            background::start_local(&ctx.session_id, self.local_spec(ctx, policy)).await
        };
        let (job, chunk) = started?;
        let mut out = super::background::chunk_output(&job.handle, &chunk, job.terminal_id());
        if chunk.running {
            out.for_model = format!(
                "Started in the background as {h}. Read its output with command_output {{\"handle\": \"{h}\"}} and stop it with command_kill; the handle stays valid in later turns.\n{}",
                out.for_model,
                h = job.handle
            );
        } else {
            background::forget_if_done(&ctx.session_id, &job, &chunk).await;
        }
        Ok(out)
    }

    /// The argv for an editor terminal: the launcher confines `sh -c` (issue
    /// 14) and the editor still shows the output live.
    /// The editor is given the launcher's path: refused when the binary
    /// there is no longer the agent's own (a command may have replaced it).
    /// Where the system shapes the request itself (Windows, no launcher:
    /// `platform::process::terminal_request`), that request, whose `env`
    /// may carry the command text.
    fn terminal_argv(
        &self,
        policy: Option<&sandbox::Policy>,
    ) -> Result<(String, Vec<String>, Vec<NameValue>), ToolError> {
        if let Some((command, args, env)) =
            crate::platform::process::terminal_request(&self.command)
        {
            let env = env
                .into_iter()
                .map(|(name, value)| NameValue { name, value })
                .collect();
            return Ok((command, args, env));
        }
        sandbox::launcher_unchanged().map_err(ToolError::Failed)?;
        let (shell, shell_args) = crate::platform::process::shell();
        let mut argv = shell_args.to_vec();
        let text = crate::platform::process::shell_text(&self.command);
        argv.push(&text);
        Ok(match sandbox::wrap(shell, &argv, policy, None) {
            Some((exe, args)) => (
                exe.to_string_lossy().into_owned(),
                args.iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
                Vec::new(),
            ),
            None => (
                shell.to_owned(),
                argv.iter().map(|a| (*a).to_owned()).collect(),
                Vec::new(),
            ),
        })
    }

    fn local_spec(&self, ctx: &ToolContext, policy: Option<&sandbox::Policy>) -> CommandSpec {
        CommandSpec {
            command: self.command.clone(),
            cwd: self.cwd.clone(),
            env: vec![
                ("PAGER".into(), "cat".into()),
                ("GIT_PAGER".into(), "cat".into()),
                ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ],
            env_remove: ctx.secret_env.clone(),
            timeout: self.timeout,
            output_limit: MODEL_OUTPUT_LIMIT,
            sandbox: policy.cloned(),
            stdin: None,
        }
    }

    async fn once(
        &self,
        ctx: &ToolContext,
        policy: Option<&sandbox::Policy>,
    ) -> Result<ToolOutput, ToolError> {
        if ctx.editor.has_terminal() {
            self.in_terminal(ctx, policy).await
        } else {
            self.locally(ctx, policy).await
        }
    }

    /// Asks whether to run the command again without the sandbox (refused
    /// by `exec` without a terminal, like any other question).
    async fn ask_unsandboxed(
        &self,
        ctx: &ToolContext,
        policy: &sandbox::Policy,
        first: &ToolOutput,
    ) -> Result<bool, ToolError> {
        let roots: Vec<String> = policy
            .roots
            .iter()
            .map(|r| r.display().to_string())
            .collect();
        let mut dropped = 0;
        let note = sandbox::unreadable_note(&first.for_model, policy, ctx.may_leave_sandbox)
            .map(|n| format!("\n\n{n}"))
            .unwrap_or_default();
        let text = format!(
            "The sandbox stopped this command: it may write only in {} and its own temp directory (.git/config, hooks and other files that tools run on their own are read-only), may not read credential stores or the agent's own files, and reaches no outside UNIX socket{}.{note} Its output ends with:\n{}\n\nRun it once more, **without the sandbox**, with your permissions?\n```sh\n{}\n```",
            roots.join(", "),
            if policy.network {
                ""
            } else {
                " nor the network"
            },
            fenced(&tail(&first.for_model, 2048, &mut dropped)),
            self.command.replace("```", "`\u{200b}``"),
        );
        let request =
            ToolCallUpdate::new(&ctx.tool_call_id).content(vec![ToolCallContent::text(text)]);
        let options = vec![
            PermissionOption {
                option_id: "run-unsandboxed".into(),
                name: "Run once without the sandbox".into(),
                kind: PermissionOptionKind::AllowOnce,
            },
            PermissionOption {
                option_id: "keep-sandboxed".into(),
                name: "Don't run it again".into(),
                kind: PermissionOptionKind::RejectOnce,
            },
        ];
        let outcome = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            r = ctx.editor.request_permission(request, options) => r,
        };
        match outcome {
            Ok(PermissionOutcome::Selected { option_id }) => Ok(option_id == "run-unsandboxed"),
            Ok(PermissionOutcome::Cancelled) => Err(ToolError::Cancelled),
            Err(e) => {
                tracing::warn!(error = %e.message, "asking to run without the sandbox failed");
                Ok(false)
            }
        }
    }

    async fn in_terminal(
        &self,
        ctx: &ToolContext,
        policy: Option<&sandbox::Policy>,
    ) -> Result<ToolOutput, ToolError> {
        let editor = &ctx.editor;
        let (program, args, env) = self.terminal_argv(policy)?;
        let id = editor
            .terminal_create(&program, args, env, &self.cwd, TERMINAL_OUTPUT_LIMIT)
            .await
            .map_err(|e| {
                ToolError::Failed(format!(
                    "the editor could not start a terminal: {}",
                    e.message
                ))
            })?;
        let mut guard = TerminalGuard {
            editor: editor.clone(),
            id: id.clone(),
            armed: true,
        };
        editor.update(&SessionUpdate::ToolCallUpdate(
            ToolCallUpdate::new(&ctx.tool_call_id).content(vec![ToolCallContent::Terminal {
                terminal_id: id.clone(),
            }]),
        ));
        let timed_out = tokio::time::timeout(self.timeout, editor.terminal_wait_for_exit(&id))
            .await
            .is_err();
        if timed_out {
            let _ = editor.terminal_kill(&id).await;
        }
        let out = editor.terminal_output(&id).await;
        guard.armed = false;
        let released = editor.terminal_release(&id).await;
        if let Err(e) = released {
            tracing::warn!(terminal = %id, error = %e.message, "terminal/release failed");
        }
        let out = out.map_err(|e| {
            ToolError::Failed(format!(
                "could not read the terminal's output: {}",
                e.message
            ))
        })?;
        let status = out.exit_status.unwrap_or_default();
        let mut dropped = 0u64;
        let text = tail(&out.output, MODEL_OUTPUT_LIMIT, &mut dropped);
        let summary = summarize(
            status.exit_code,
            status.signal.as_deref(),
            timed_out,
            false,
            self.timeout,
        );
        Ok(ToolOutput {
            for_model: model_text(&summary, &text, dropped, out.truncated),
            content: vec![ToolCallContent::Terminal { terminal_id: id }],
            raw_output: Some(
                json!({"exitCode": status.exit_code, "signal": status.signal, "timedOut": timed_out}),
            ),
            ..Default::default()
        })
    }

    async fn locally(
        &self,
        ctx: &ToolContext,
        policy: Option<&sandbox::Policy>,
    ) -> Result<ToolOutput, ToolError> {
        let spec = self.local_spec(ctx, policy);
        let editor = ctx.editor.clone();
        let call_id = ctx.tool_call_id.clone();
        let mut live = String::new();
        let result = run_local(spec, ctx.cancel.clone(), move |chunk: &str| {
            live.push_str(chunk);
            if live.len() > LIVE_PREVIEW_LIMIT * 2 {
                let cut = crate::utf8::ceil_boundary(&live, live.len() - LIVE_PREVIEW_LIMIT);
                live.drain(..cut);
            }
            // A preview the next one replaces: skipped while the editor is
            // behind, so a flood of output cannot grow the queue to it.
            if editor.has_room() {
                editor.update(&SessionUpdate::ToolCallUpdate(
                    ToolCallUpdate::new(&call_id)
                        .content(vec![ToolCallContent::text(fenced(&live))]),
                ));
            }
        })
        .await
        .map_err(|e| ToolError::Failed(e.to_string()))?;
        if result.cancelled {
            return Err(ToolError::Cancelled);
        }
        let summary = summarize(
            result.exit_code.map(i64::from),
            result.signal.as_deref(),
            result.timed_out,
            false,
            self.timeout,
        );
        let mut shown = 0;
        let preview = tail(&result.output, LIVE_PREVIEW_LIMIT, &mut shown);
        Ok(ToolOutput {
            for_model: model_text(&summary, &result.output, result.truncated_bytes, false),
            content: vec![ToolCallContent::text(format!(
                "{}\n{summary}",
                fenced(&preview)
            ))],
            raw_output: Some(json!({
                "exitCode": result.exit_code,
                "signal": result.signal,
                "timedOut": result.timed_out,
                "truncatedBytes": result.truncated_bytes,
            })),
            ..Default::default()
        })
    }
}

fn fenced(text: &str) -> String {
    format!(
        "```\n{}\n```",
        text.trim_end_matches('\n').replace("```", "`\u{200b}``")
    )
}

fn summarize(
    code: Option<i64>,
    signal: Option<&str>,
    timed_out: bool,
    _cancelled: bool,
    timeout: Duration,
) -> String {
    if timed_out {
        return format!("Timed out after {} ms and was killed.", timeout.as_millis());
    }
    match (code, signal) {
        (Some(c), _) => format!("Exit code: {c}"),
        (None, Some(s)) => format!("Killed by signal {s}"),
        (None, None) => "Exit status unknown".into(),
    }
}

fn model_text(summary: &str, output: &str, dropped: u64, editor_truncated: bool) -> String {
    let mut s = String::from(summary);
    if output.trim().is_empty() {
        s.push_str("\n(no output)");
        return s;
    }
    s.push_str("\nOutput:\n");
    if dropped > 0 || editor_truncated {
        s.push_str("[… earlier output omitted; showing the end …]\n");
    }
    s.push_str(output.trim_end_matches('\n'));
    s
}

/// The last `limit` bytes of `text` at a char boundary; counts what was dropped.
fn tail(text: &str, limit: usize, dropped: &mut u64) -> String {
    let kept = crate::utf8::tail(text, limit);
    *dropped += (text.len() - kept.len()) as u64;
    kept.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_cannot_be_spoofed() {
        let t = quote("echo hi\n\x1b[2K\rrm -rf /");
        assert!(
            !t.contains('\x1b') && !t.contains('\n') && !t.contains('\r'),
            "{t}"
        );
        // Backticks are shown as they are (a quote would mean the opposite).
        assert_eq!(quote("ls `pwd`"), "`` ls `pwd` ``");
    }

    /// Issue 43.2: the model is told the shell of this system (cmd.exe,
    /// PowerShell or bash on Windows), never a fixed `sh -c`.
    #[test]
    fn the_description_names_this_systems_shell() {
        let d = RunCommand.description();
        assert!(
            d.contains(crate::platform::process::shell_description()),
            "{d}"
        );
        let cmd = description(crate::platform::win::shell_description(
            crate::platform::win::ShellKind::Cmd,
        ));
        assert!(cmd.contains("cmd.exe") && !cmd.contains("sh -c"), "{cmd}");
    }

    #[test]
    fn model_text_shapes() {
        assert_eq!(
            model_text("Exit code: 0", "", 0, false),
            "Exit code: 0\n(no output)"
        );
        let t = model_text("Exit code: 1", "boom\n", 10, false);
        assert!(t.contains("earlier output omitted") && t.ends_with("boom"));
        let mut d = 0;
        assert_eq!(tail("héllo", 3, &mut d), "llo");
        assert_eq!(d, 3);
    }
}
