//! `load_skill`: the second step of progressive disclosure (Agent Skills,
//! agentskills.io/specification "Progressive disclosure"; issue 21). The
//! model sees each skill's name and description in the system prompt and
//! calls this for the body, which comes with the absolute paths of the
//! skill's other files.
//!
//! Kind `read`, and it never asks (`Access::None`), even for a user-wide skill
//! outside the session roots: it returns only the `SKILL.md` the agent itself
//! discovered at session start (held in memory) and the names of the files
//! beside it. Reading those files (`read_file`) or running its scripts
//! (`run_command`) goes through the ordinary permission rules, and
//! `allowed-tools` is shown as guidance, never as a grant.
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, ToolSource, args_schema,
    parse_args,
};
use crate::acp::{ToolCallLocation, ToolKind};
use crate::skills::Shelf;

/// The tool; it reads the session's current catalog on each call.
pub struct LoadSkill {
    shelf: Shelf,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    name: String,
}

#[async_trait::async_trait]
impl Tool for LoadSkill {
    fn name(&self) -> &str {
        "load_skill"
    }
    fn description(&self) -> &str {
        "Load a skill listed under Skills in the system prompt: returns its instructions and the absolute paths of its files."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({"name": {"type": "string", "description": "The skill's name."}}),
            &["name"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn title(&self, args: &Value) -> String {
        match args.get("name").and_then(Value::as_str) {
            Some(n) => format!("Load skill {n}"),
            None => "Load skill".into(),
        }
    }
    async fn prepare(&self, args: Value, _ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let args: Args = parse_args(args)?;
        let catalog = self.shelf.get();
        let Some(skill) = catalog.get(args.name.trim()) else {
            let names: Vec<&str> = catalog.skills.iter().map(|s| s.name()).collect();
            return Err(ToolError::InvalidArgs(format!(
                "name: there is no skill {:?}; the skills are: {}",
                args.name,
                if names.is_empty() {
                    "(none)".to_owned()
                } else {
                    names.join(", ")
                }
            )));
        };
        let text = skill.render();
        Ok(Invocation {
            title: format!("Load skill {}", skill.name()),
            kind: ToolKind::Read,
            locations: vec![ToolCallLocation {
                path: skill.dir.join("SKILL.md").display().to_string(),
                line: None,
            }],
            content: Vec::new(),
            access: Access::None,
            action: Box::new(Loaded { text }),
        })
    }
}

struct Loaded {
    text: String,
}

#[async_trait::async_trait]
impl Action for Loaded {
    async fn run(self: Box<Self>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(self.text))
    }
}

/// Offers `load_skill` while the session has skills, so a session without
/// any pays nothing for it in its requests, and `/skills reload` can bring it.
pub struct SkillTools {
    tool: Arc<dyn Tool>,
    shelf: Shelf,
}

impl SkillTools {
    pub fn new(shelf: Shelf) -> Self {
        SkillTools {
            tool: Arc::new(LoadSkill {
                shelf: shelf.clone(),
            }),
            shelf,
        }
    }
}

impl ToolSource for SkillTools {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        if self.shelf.get().skills.is_empty() {
            Vec::new()
        } else {
            vec![self.tool.clone()]
        }
    }
}
