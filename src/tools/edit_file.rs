//! `edit_file`: exact string replacement, reviewed as a diff before it is written.
//!
//! The match must be exact and unique unless `replace_all`. Matching ignores the
//! difference between CRLF and LF, and the file keeps its own line endings. If
//! the file changes while the user reviews the edit, the edit is re-applied to
//! the new content (or refused), so the user's own changes are never lost.
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::display;
use super::text::{line_of, nearest_lines, numbered, uses_crlf, with_line_endings};
use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, parse_args,
    resolve_arg,
};
use crate::acp::{ToolCallContent, ToolCallLocation, ToolKind};
use crate::editor::FileError;

pub struct EditFile;

#[derive(Deserialize, Clone)]
struct Args {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait::async_trait]
impl Tool for EditFile {
    fn name(&self) -> &str {
        "edit_file"
    }
    fn description(&self) -> &str {
        "Replace text in a file. old_string must match the file exactly (whitespace and indentation \
         included; without the line-number prefix read_file shows) and be unique in the file: include \
         enough surrounding lines. Set replace_all to change every occurrence. Use write_file to create files."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "path": {"type": "string", "description": "File path, absolute or relative to the working directory."},
                "old_string": {"type": "string", "description": "Exact text to replace."},
                "new_string": {"type": "string", "description": "Replacement text (must differ from old_string)."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."}
            }),
            &["path", "old_string", "new_string"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn title(&self, args: &Value) -> String {
        match args.get("path").and_then(Value::as_str) {
            Some(p) => format!("Edit {p}"),
            None => "Edit file".into(),
        }
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let args: Args = parse_args(args)?;
        if args.old_string.is_empty() {
            return Err(ToolError::InvalidArgs(
                "old_string is empty; to create a file or replace all of it use write_file".into(),
            ));
        }
        if args.old_string == args.new_string {
            return Err(ToolError::InvalidArgs(
                "old_string and new_string are identical; nothing to change".into(),
            ));
        }
        let path = resolve_arg(ctx, &args.path)?;
        let shown = display(&path, &ctx.cwd);
        if !ctx.may_preview(&path) {
            // Outside the roots: the file is read only once the user allowed
            // the edit; the request shows the replacement alone.
            return Ok(Invocation {
                title: format!("Edit {shown}"),
                kind: ToolKind::Edit,
                locations: vec![ToolCallLocation {
                    path: path.display().to_string(),
                    line: None,
                }],
                content: vec![ToolCallContent::Diff {
                    path: path.display().to_string(),
                    old_text: Some(args.old_string.clone()),
                    new_text: args.new_string.clone(),
                }],
                access: Access::Write(vec![path.clone()]),
                action: Box::new(Edit {
                    path,
                    shown,
                    args,
                    prepared: None,
                }),
            });
        }
        let old = read_existing(ctx, &path, &shown).await?;
        let edit = apply(&old, &args, &shown)?;
        Ok(Invocation {
            title: format!("Edit {shown}"),
            kind: ToolKind::Edit,
            locations: vec![ToolCallLocation {
                path: path.display().to_string(),
                line: Some(edit.first_line as u64),
            }],
            content: vec![ToolCallContent::Diff {
                path: path.display().to_string(),
                old_text: Some(old.clone()),
                new_text: edit.new_text.clone(),
            }],
            access: Access::Write(vec![path.clone()]),
            action: Box::new(Edit {
                path,
                shown,
                args,
                prepared: Some((old, edit)),
            }),
        })
    }
}

async fn read_existing(
    ctx: &ToolContext,
    path: &std::path::Path,
    shown: &str,
) -> Result<String, ToolError> {
    match ctx.editor.read_text_file(path).await {
        Ok(t) => Ok(t),
        Err(FileError::NotFound(_)) => Err(ToolError::Failed(format!(
            "{shown} does not exist; use write_file to create it"
        ))),
        Err(e) => Err(e.into()),
    }
}

#[derive(Debug)]
struct Applied {
    new_text: String,
    first_line: usize,
    count: usize,
    /// 1-based line range of the replacement in the new text.
    changed: (usize, usize),
}

fn apply(old: &str, args: &Args, shown: &str) -> Result<Applied, ToolError> {
    let crlf = uses_crlf(old);
    let text = old.replace("\r\n", "\n");
    let needle = args.old_string.replace("\r\n", "\n");
    let replacement = args.new_string.replace("\r\n", "\n");
    let positions: Vec<usize> = text.match_indices(&needle).map(|(i, _)| i).collect();
    if positions.is_empty() {
        let mut msg = format!("old_string was not found in {shown}.");
        match nearest_lines(&text, &needle) {
            Some(near) => msg.push_str(&format!(
                " The closest lines are:\n{near}Copy the text exactly (without the line-number prefix), or read the file again."
            )),
            None => msg.push_str(" Read the file again to see its current content."),
        }
        return Err(ToolError::Failed(msg));
    }
    if positions.len() > 1 && !args.replace_all {
        let lines: Vec<String> = positions
            .iter()
            .take(10)
            .map(|&p| line_of(&text, p).to_string())
            .collect();
        return Err(ToolError::Failed(format!(
            "old_string occurs {} times in {shown} (lines {}); include more surrounding lines to make it unique, or set replace_all to true",
            positions.len(),
            lines.join(", ")
        )));
    }
    let first_line = line_of(&text, positions[0]);
    let new_lf = if args.replace_all {
        text.replace(&needle, &replacement)
    } else {
        text.replacen(&needle, &replacement, 1)
    };
    let start = first_line;
    let end = start + replacement.matches('\n').count();
    Ok(Applied {
        new_text: if crlf {
            with_line_endings(&new_lf, true)
        } else {
            new_lf
        },
        first_line,
        count: positions.len(),
        changed: (start, end),
    })
}

struct Edit {
    path: PathBuf,
    shown: String,
    args: Args,
    /// The content the edit was prepared from and the edit; `None` when the
    /// file was not read before the permission step ([`ToolContext::may_preview`]).
    prepared: Option<(String, Applied)>,
}

#[async_trait::async_trait]
impl Action for Edit {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // The user may have typed in the file while reviewing: re-apply to what is there now.
        let current = read_existing(ctx, &self.path, &self.shown).await?;
        let edit = match self.prepared {
            Some((from, edit)) if from == current => edit,
            Some(_) => apply(&current, &self.args, &self.shown).map_err(|e| {
                ToolError::Failed(format!("{} changed while the edit waited for approval, and the edit no longer applies: {e}", self.shown))
            })?,
            None => apply(&current, &self.args, &self.shown)?,
        };
        ctx.editor
            .write_text_file(&ctx.roots, &self.path, &edit.new_text)
            .await?;
        let lf = edit.new_text.replace("\r\n", "\n");
        let (a, b) = edit.changed;
        let snippet = numbered(&lf, a.saturating_sub(3).max(1), b + 3);
        let what = if edit.count == 1 {
            "1 occurrence".to_owned()
        } else {
            format!("{} occurrences", edit.count)
        };
        Ok(ToolOutput {
            for_model: format!(
                "Edited {}: replaced {what} (first at line {}). The result around the change:\n{snippet}",
                self.shown, edit.first_line
            ),
            content: vec![ToolCallContent::Diff {
                path: self.path.display().to_string(),
                old_text: Some(current),
                new_text: edit.new_text,
            }],
            raw_output: Some(
                json!({"path": self.path, "replacements": edit.count, "line": edit.first_line}),
            ),
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(old: &str, new: &str, all: bool) -> Args {
        Args {
            path: "f".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn unique_exact_replacement_keeps_crlf_and_final_newline() {
        let old = "a\r\nb\r\nc\r\n";
        let e = apply(old, &args("b\n", "B\nB2\n", false), "f").unwrap();
        assert_eq!(e.new_text, "a\r\nB\r\nB2\r\nc\r\n");
        assert_eq!(e.first_line, 2);
        let e = apply("x = 1", &args("1", "2", false), "f").unwrap();
        assert_eq!(e.new_text, "x = 2");
    }

    #[test]
    fn ambiguous_and_missing_matches_explain() {
        let err = apply("x\nx\n", &args("x", "y", false), "f")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("occurs 2 times") && err.contains("lines 1, 2"),
            "{err}"
        );
        let e = apply("x\nx\n", &args("x", "y", true), "f").unwrap();
        assert_eq!((e.new_text.as_str(), e.count), ("y\ny\n", 2));
        let err = apply(
            "fn main() {\n    let x = 1;\n}\n",
            &args("let  x = 1;", "z", false),
            "f",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("not found") && err.contains("     2\t    let x = 1;"),
            "{err}"
        );
    }
}
