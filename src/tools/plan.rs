//! `update_plan`: the model's task list, shown in the editor as a `plan` update (ACP §7).
use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, parse_args,
    sanitize_title,
};
use crate::acp::{Plan, PlanEntry, PlanPriority, PlanStatus, SessionUpdate, ToolKind};

pub struct UpdatePlan;

/// Longest plan entry shown (characters); the model is asked for a short sentence.
const PLAN_ENTRY_CHARS: usize = 500;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    content: String,
    status: PlanStatus,
    #[serde(default)]
    priority: Option<PlanPriority>,
}

#[async_trait::async_trait]
impl Tool for UpdatePlan {
    fn name(&self) -> &str {
        "update_plan"
    }
    fn description(&self) -> &str {
        "Only for a task of several steps: record or update your plan (never instead of \
         doing the work). Send the whole list each time (it replaces the last one); keep \
         exactly one entry in_progress while working, and mark each completed as soon as it \
         is done."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "entries": {
                    "type": "array",
                    "description": "The complete plan, in order.",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "description": "What this step does, in a short sentence."},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "priority": {"type": "string", "enum": ["high", "medium", "low"], "description": "Default medium."}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            }),
            &["entries"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }
    fn title(&self, _args: &Value) -> String {
        "Update plan".into()
    }
    async fn prepare(&self, args: Value, _ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let args: Args = parse_args(args)?;
        let entries: Vec<PlanEntry> = args
            .entries
            .into_iter()
            .map(|e| PlanEntry {
                // Shown as one line in the editor's plan, like a title: no
                // control characters or escape sequences from the model.
                content: sanitize_title(&e.content, PLAN_ENTRY_CHARS),
                status: e.status,
                priority: e.priority.unwrap_or(PlanPriority::Medium),
            })
            .collect();
        Ok(Invocation {
            title: "Update plan".into(),
            kind: ToolKind::Think,
            locations: Vec::new(),
            content: Vec::new(),
            access: Access::None,
            action: Box::new(Send_ { entries }),
        })
    }
}

struct Send_ {
    entries: Vec<PlanEntry>,
}

#[async_trait::async_trait]
impl Action for Send_ {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let done = self
            .entries
            .iter()
            .filter(|e| e.status == PlanStatus::Completed)
            .count();
        let total = self.entries.len();
        ctx.editor.update(&SessionUpdate::Plan(Plan {
            entries: self.entries,
        }));
        Ok(ToolOutput::text(format!(
            "Plan updated ({done} of {total} done)."
        )))
    }
}
