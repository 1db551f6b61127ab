//! `write_file`: create or overwrite a text file, shown to the user as a diff first.
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::display;
use super::text::{bounded_numbered, uses_crlf, with_line_endings};
use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, parse_args,
    resolve_arg,
};
use crate::acp::{ToolCallContent, ToolCallLocation, ToolKind};
use crate::editor::FileError;

pub struct WriteFile;

#[derive(Deserialize)]
struct Args {
    path: String,
    content: String,
}

#[async_trait::async_trait]
impl Tool for WriteFile {
    fn name(&self) -> &str {
        "write_file"
    }
    fn description(&self) -> &str {
        "Create a file, or replace its whole content (parent directories are created). To \
         change part of a file, prefer edit_file. Read an existing file first: otherwise you \
         get its content instead."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "path": {"type": "string", "description": "Absolute, or relative to the working directory."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            }),
            &["path", "content"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn title(&self, args: &Value) -> String {
        match args.get("path").and_then(Value::as_str) {
            Some(p) => format!("Write {p}"),
            None => "Write file".into(),
        }
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let args: Args = parse_args(args)?;
        let path = resolve_arg(ctx, &args.path)?;
        // Outside the roots the file is looked at only once the user has
        // allowed the write ([`ToolContext::may_preview`]).
        let previewed = ctx.may_preview(&path);
        let old = if previewed {
            existing(ctx, &path).await?
        } else {
            None
        };
        if let Some(old) = &old
            && !old.trim().is_empty()
            && old != &args.content
            && ctx.blind_overwrite(&path)
        {
            return Err(blind_overwrite(ctx, &path, &args.path, old));
        }
        // Keep the file's line-ending convention.
        let content = match &old {
            Some(old) if uses_crlf(old) => with_line_endings(&args.content, true),
            _ => args.content,
        };
        let shown = display(&path, &ctx.cwd);
        let title = if old.is_some() || !previewed {
            format!("Write {shown}")
        } else {
            format!("Create {shown}")
        };
        Ok(Invocation {
            title,
            kind: ToolKind::Edit,
            locations: vec![ToolCallLocation {
                path: path.display().to_string(),
                line: Some(1),
            }],
            content: vec![ToolCallContent::Diff {
                path: path.display().to_string(),
                old_text: old.clone(),
                new_text: content.clone(),
            }],
            access: Access::Write(vec![path.clone()]),
            action: Box::new(Write {
                path,
                shown,
                content,
                existed: previewed.then_some(old.is_some()),
            }),
        })
    }
}

/// Lines of a file shown to a model that has not read it, and about how many bytes.
const SHOWN_LINES: usize = 250;
const SHOWN_BYTES: usize = 12 * 1024;

/// A write over a file the model has not seen in this session: not done;
/// the model gets the file's content (which counts as seen from then on),
/// so it can edit it or knowingly replace it.
fn blind_overwrite(ctx: &ToolContext, path: &Path, given: &str, old: &str) -> ToolError {
    if let Some(seen) = &ctx.seen {
        seen.shown(path);
    }
    let lf = old.replace("\r\n", "\n");
    ToolError::Failed(format!(
        "{given} already exists and you have not read it in this session, so it was not overwritten. Its current content is below. To change part of it, call edit_file with old_string copied from it; to replace the whole file, call write_file again.\n{}",
        bounded_numbered(&lf, SHOWN_LINES, SHOWN_BYTES)
    ))
}

/// The file's current text, `None` when it does not exist; a binary file
/// is refused.
async fn existing(ctx: &ToolContext, path: &Path) -> Result<Option<String>, ToolError> {
    match ctx.editor.read_text_file(path).await {
        Ok(old) => Ok(Some(old)),
        Err(FileError::NotFound(_)) => Ok(None),
        Err(FileError::Binary(p)) => Err(ToolError::Failed(format!(
            "{} is a binary file; refusing to overwrite it with text",
            p.display()
        ))),
        Err(e) => Err(e.into()),
    }
}

struct Write {
    path: PathBuf,
    shown: String,
    content: String,
    /// Whether the file existed when the call was prepared; `None` when it
    /// was not looked at then (outside the roots).
    existed: Option<bool>,
}

#[async_trait::async_trait]
impl Action for Write {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let (content, existed) = match self.existed {
            Some(existed) => (self.content, existed),
            None => match existing(ctx, &self.path).await? {
                Some(old) if uses_crlf(&old) => (with_line_endings(&self.content, true), true),
                old => (self.content, old.is_some()),
            },
        };
        ctx.editor
            .write_text_file(&ctx.roots, &self.path, &content)
            .await?;
        let lines = content.lines().count();
        let verb = if existed { "Wrote" } else { "Created" };
        Ok(ToolOutput {
            for_model: format!("{verb} {} ({lines} lines).", self.shown),
            raw_output: Some(json!({"path": self.path, "lines": lines, "created": !existed})),
            ..Default::default()
        })
    }
}
