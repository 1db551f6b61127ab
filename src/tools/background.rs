//! `command_output` and `command_kill`: the model's hold on background
//! commands (issue 19 §1; started by `run_command` with `background: true`,
//! see [`super::process::background`]). Handles live as long as the session,
//! across turns.
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::process::background::{self, Chunk, JobError};
use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, code_span,
    parse_args, sanitize_title,
};
use crate::acp::{ToolCallContent, ToolKind};

pub struct CommandOutput;
pub struct CommandKill;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputArgs {
    handle: String,
    #[serde(default)]
    wait_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KillArgs {
    handle: String,
}

impl From<JobError> for ToolError {
    fn from(e: JobError) -> Self {
        ToolError::Failed(e.to_string())
    }
}

#[async_trait::async_trait]
impl Tool for CommandOutput {
    fn name(&self) -> &str {
        "command_output"
    }
    fn description(&self) -> &str {
        "Read a background command's new output (the last 64 KB at most), whether it still runs, and its exit code once it ended. wait_ms waits for it to end first: use it to wait for a build instead of polling."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "handle": handle_property(),
                "wait_ms": {"type": "integer", "minimum": 0, "maximum": background::MAX_WAIT.as_millis() as u64, "description": "Wait up to this long for the command to end. Default 0."}
            }),
            &["handle"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, args: &Value) -> String {
        title_of("Output of", args)
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let a: OutputArgs = parse_args(args)?;
        let job = background::get(&ctx.session_id, &a.handle)?;
        Ok(Invocation {
            title: job_title("Output of", &job),
            kind: ToolKind::Execute,
            locations: Vec::new(),
            content: job
                .terminal_id()
                .map(|id| {
                    vec![ToolCallContent::Terminal {
                        terminal_id: id.to_owned(),
                    }]
                })
                .unwrap_or_default(),
            // Reading what an already-approved command printed changes nothing.
            access: Access::None,
            action: Box::new(ReadOutput {
                handle: job.handle.clone(),
                wait: Duration::from_millis(a.wait_ms.unwrap_or(0)),
            }),
        })
    }
}

struct ReadOutput {
    handle: String,
    wait: Duration,
}

#[async_trait::async_trait]
impl Action for ReadOutput {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let job = background::get(&ctx.session_id, &self.handle)?;
        let chunk = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            r = background::read(&ctx.session_id, &self.handle, self.wait) => r?,
        };
        background::forget_if_done(&ctx.session_id, &job, &chunk).await;
        Ok(chunk_output(&job.handle, &chunk, job.terminal_id()))
    }
}

#[async_trait::async_trait]
impl Tool for CommandKill {
    fn name(&self) -> &str {
        "command_kill"
    }
    fn description(&self) -> &str {
        "Stop a background command and every process it started (its whole process group); returns its last output. The handle is gone afterwards."
    }
    fn parameters(&self) -> Value {
        args_schema(json!({"handle": handle_property()}), &["handle"])
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn title(&self, args: &Value) -> String {
        title_of("Stop", args)
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let a: KillArgs = parse_args(args)?;
        let job = background::get(&ctx.session_id, &a.handle)?;
        Ok(Invocation {
            title: job_title("Stop", &job),
            kind: ToolKind::Execute,
            locations: Vec::new(),
            content: Vec::new(),
            // Stopping a command the model started needs no new permission.
            access: Access::None,
            action: Box::new(Kill {
                handle: job.handle.clone(),
            }),
        })
    }
}

struct Kill {
    handle: String,
}

#[async_trait::async_trait]
impl Action for Kill {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let chunk = background::kill(&ctx.session_id, &self.handle).await?;
        let mut out = chunk_output(&self.handle, &chunk, None);
        out.for_model = format!("Stopped {}.\n{}", self.handle, out.for_model);
        Ok(out)
    }
}

/// The `handle` parameter both tools take.
fn handle_property() -> Value {
    json!({"type": "string", "description": "The handle from run_command (e.g. `bg1`)."})
}

/// A call's title before its handle is looked up.
fn title_of(verb: &str, args: &Value) -> String {
    format!(
        "{verb} {}",
        sanitize_title(args["handle"].as_str().unwrap_or("background command"), 40)
    )
}

/// A call's title naming the command behind the handle.
fn job_title(verb: &str, job: &background::Job) -> String {
    format!("{verb} {} ({})", job.handle, code_span(&job.command, 80))
}

/// The text the model gets for one read of a background command.
pub fn chunk_output(handle: &str, chunk: &Chunk, terminal: Option<&str>) -> ToolOutput {
    let status = if chunk.running {
        format!("{handle} is still running.")
    } else {
        match (chunk.exit_code, &chunk.signal) {
            (Some(c), _) => format!("{handle} has ended. Exit code: {c}"),
            (None, Some(s)) => format!("{handle} has ended. Killed by signal {s}"),
            (None, None) => format!("{handle} has ended."),
        }
    };
    let mut text = status.clone();
    if chunk.dropped > 0 {
        text.push_str(&format!(
            "\n[{} bytes of earlier output were dropped; only the last 64 KB since the previous read are kept: read more often]",
            chunk.dropped
        ));
    } else if chunk.dropped_unknown {
        text.push_str("\n[the editor's terminal dropped earlier output]");
    }
    if chunk.output.trim().is_empty() {
        text.push_str("\n(no new output)");
    } else {
        text.push_str("\nNew output:\n");
        text.push_str(chunk.output.trim_end_matches('\n'));
    }
    let content = match terminal {
        Some(id) => vec![
            ToolCallContent::Terminal {
                terminal_id: id.to_owned(),
            },
            ToolCallContent::text(status),
        ],
        None => vec![ToolCallContent::text(text.clone())],
    };
    ToolOutput {
        for_model: text,
        content,
        raw_output: Some(json!({
            "handle": handle,
            "running": chunk.running,
            "exitCode": chunk.exit_code,
            "signal": chunk.signal,
            "droppedBytes": chunk.dropped,
        })),
        ..Default::default()
    }
}
