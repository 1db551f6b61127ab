//! `read_file`: a text file through the editor (unsaved changes included), paged by lines.
use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::display;
use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, parse_args,
    resolve_arg,
};
use crate::acp::{ToolCallLocation, ToolKind};

/// Lines returned when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut (minified files would flood the context).
const MAX_LINE_CHARS: usize = 2000;

pub struct ReadFile;

#[derive(Deserialize)]
struct Args {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

#[async_trait::async_trait]
impl Tool for ReadFile {
    fn name(&self) -> &str {
        "read_file"
    }
    fn description(&self) -> &str {
        "Read a text file. Returns numbered lines (`  LINE\\tTEXT`; the number and tab are not part \
         of the file). Reads at most 2000 lines at a time; use offset/limit to page through long files."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "path": {"type": "string", "description": "Absolute, or relative to the working directory."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based). Default 1."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines to read. Default 2000."}
            }),
            &["path"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn title(&self, args: &Value) -> String {
        match args.get("path").and_then(Value::as_str) {
            Some(p) => format!("Read {p}"),
            None => "Read file".into(),
        }
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let args: Args = parse_args(args)?;
        let path = resolve_arg(ctx, &args.path)?;
        let offset = args.offset.unwrap_or(1).max(1);
        // A limit of 0 (a small model filling every parameter) is no limit
        // given, not one line.
        let limit = args.limit.filter(|&l| l > 0);
        let shown = display(&path, &ctx.cwd);
        let title = match (args.offset, limit) {
            (None, None) => format!("Read {shown}"),
            (_, Some(limit)) => format!(
                "Read {shown} (lines {offset}–{})",
                offset.saturating_add(limit.max(1) - 1)
            ),
            (Some(_), None) => format!("Read {shown} (from line {offset})"),
        };
        Ok(Invocation {
            title,
            kind: ToolKind::Read,
            locations: vec![ToolCallLocation {
                path: path.display().to_string(),
                line: Some(offset),
            }],
            content: Vec::new(),
            access: Access::Read(vec![path.clone()]),
            action: Box::new(Read {
                path,
                shown,
                offset: offset as usize,
                limit: limit.map_or(DEFAULT_LIMIT, |l| l as usize),
            }),
        })
    }
}

struct Read {
    path: std::path::PathBuf,
    shown: String,
    offset: usize,
    limit: usize,
}

#[async_trait::async_trait]
impl Action for Read {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let text = ctx.editor.read_text_file(&self.path).await?;
        let (body, first, last, total) = page(&text, self.offset, self.limit);
        let mut out = body;
        if total == 0 {
            out.push_str("(empty file)");
        } else if first > total {
            out = format!(
                "{} has only {total} lines; offset {} is past the end.",
                self.shown, self.offset
            );
        } else if last < total || first > 1 {
            out.push_str(&format!(
                "\n[Showing lines {first}–{last} of {total}.{}]",
                if last < total {
                    format!(" Use offset={} to read more.", last + 1)
                } else {
                    String::new()
                }
            ));
        }
        Ok(ToolOutput {
            for_model: out,
            raw_output: Some(
                json!({"path": self.path, "firstLine": first, "lastLine": last, "totalLines": total}),
            ),
            ..Default::default()
        })
    }
}

/// Numbered lines `offset..offset+limit`; returns (text, first, last, total).
fn page(text: &str, offset: usize, limit: usize) -> (String, usize, usize, usize) {
    let total = if text.is_empty() {
        0
    } else {
        text.lines().count()
    };
    let mut out = String::new();
    let mut last = offset.saturating_sub(1);
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        let n = i + 1;
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.chars().count() > MAX_LINE_CHARS {
            let cut: String = line.chars().take(MAX_LINE_CHARS).collect();
            out.push_str(&format!(
                "{n:>6}\t{cut}… [line cut at {MAX_LINE_CHARS} characters]\n"
            ));
        } else {
            out.push_str(&format!("{n:>6}\t{line}\n"));
        }
        last = n;
    }
    (out, offset, last, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_with_numbers() {
        let text = "a\r\nb\nc\n";
        let (out, first, last, total) = page(text, 2, 1);
        assert_eq!((out.as_str(), first, last, total), ("     2\tb\n", 2, 2, 3));
        let (out, ..) = page(text, 1, 10);
        assert_eq!(out, "     1\ta\n     2\tb\n     3\tc\n");
        assert_eq!(page("", 1, 10).3, 0);
    }
}
