//! `edit_file`: exact string replacement, reviewed as a diff before it is written.
//!
//! The match must be exact and unique unless `replace_all`. Matching ignores the
//! difference between CRLF and LF, and the file keeps its own line endings.
//! When there is no exact match, whole lines that match once whitespace and
//! indentation are ignored are replaced (the new lines take the file's
//! indentation). An edit that does not apply to a file the model has not
//! seen in this session answers with the file's content, and an edit that
//! changes nothing with the part of the file it names: weak models land
//! their edit on the next try instead of giving up. If
//! the file changes while the user reviews the edit, the edit is re-applied to
//! the new content (or refused), so the user's own changes are never lost.
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::display;
use super::text::{
    Loose, bounded_numbered, line_of, loose_match, nearest_lines, numbered, reindent, uses_crlf,
    with_line_endings,
};
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
                "path": {"type": "string", "description": "Absolute, or relative to the working directory."},
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
        let path = resolve_arg(ctx, &args.path)?;
        let shown = display(&path, &ctx.cwd);
        if !ctx.may_preview(&path) {
            if args.old_string == args.new_string {
                return Err(ToolError::InvalidArgs(
                    "old_string and new_string are identical; nothing to change".into(),
                ));
            }
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
        if args.old_string == args.new_string {
            return Err(unchanged(&old, &args.old_string, &shown));
        }
        let edit = apply(&old, &args, &shown).map_err(|e| with_content(e, ctx, &path, &old))?;
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

/// Lines of a file shown to a model that has not read it, and about how many bytes.
const SHOWN_LINES: usize = 250;
const SHOWN_BYTES: usize = 12 * 1024;

/// A missing `old_string` in a file this small gets the whole file back
/// (a weak model that is told to read it again re-reads and repeats).
const WHOLE_LINES: usize = 80;
const WHOLE_BYTES: usize = 6 * 1024;
/// Said before a whole file shown with an error.
const WHOLE_FILE: &str = "The whole file is below; copy old_string from it exactly (without the line-number prefix) and call edit_file again:";
const READ_AGAIN: &str = " Read the file again to see its current content.";

/// An edit that does not apply to a file the model has not seen: the error
/// with the file's content, which counts as seen from then on.
fn with_content(e: ToolError, ctx: &ToolContext, path: &std::path::Path, old: &str) -> ToolError {
    let ToolError::Failed(msg) = e else { return e };
    if !ctx.unseen(path) {
        return ToolError::Failed(msg);
    }
    if let Some(seen) = &ctx.seen {
        seen.shown(path);
    }
    if msg.contains(WHOLE_FILE) {
        return ToolError::Failed(msg);
    }
    // The content follows: no need to read it again.
    let msg = msg.strip_suffix(READ_AGAIN).unwrap_or(&msg);
    let lf = old.replace("\r\n", "\n");
    ToolError::Failed(format!(
        "{msg}\nYou have not read this file in this session. Its current content is below; copy old_string from it exactly (without the line-number prefix) and call edit_file again:\n{}",
        bounded_numbered(&lf, SHOWN_LINES, SHOWN_BYTES)
    ))
}

/// `old_string` equal to `new_string`: the part of the file it names, so
/// the model sees what is there and what to change.
fn unchanged(old: &str, needle: &str, shown: &str) -> ToolError {
    let text = old.replace("\r\n", "\n");
    let needle = needle.replace("\r\n", "\n");
    let at = text.find(&needle).or(match loose_match(&text, &needle) {
        Loose::One { range, .. } => Some(range.start),
        _ => None,
    });
    let msg = "old_string and new_string are identical, so this edit would change nothing; put the new text in new_string";
    ToolError::Failed(match at {
        Some(at) => {
            let first = line_of(&text, at);
            let last = first + needle.trim_end_matches('\n').matches('\n').count();
            format!(
                "{msg}. That part of {shown} is now:\n{}",
                numbered(&text, first.saturating_sub(3).max(1), last + 3)
            )
        }
        None => format!(
            "{msg}. old_string is not in {shown} either; its current content:\n{}",
            bounded_numbered(&text, SHOWN_LINES, SHOWN_BYTES)
        ),
    })
}

#[derive(Debug)]
struct Applied {
    new_text: String,
    first_line: usize,
    count: usize,
    /// 1-based line range of the replacement in the new text.
    changed: (usize, usize),
    /// Matched only once whitespace and indentation were ignored.
    loose: bool,
}

fn apply(old: &str, args: &Args, shown: &str) -> Result<Applied, ToolError> {
    let crlf = uses_crlf(old);
    let text = old.replace("\r\n", "\n");
    let needle = args.old_string.replace("\r\n", "\n");
    let replacement = args.new_string.replace("\r\n", "\n");
    let positions: Vec<usize> = text.match_indices(&needle).map(|(i, _)| i).collect();
    if positions.is_empty()
        && let Loose::One { range, indent } = loose_match(&text, &needle)
    {
        let first_line = line_of(&text, range.start);
        let new_lines = reindent(&replacement, &needle, &indent);
        let new_lf = format!("{}{new_lines}{}", &text[..range.start], &text[range.end..]);
        let end = first_line + new_lines.matches('\n').count();
        return Ok(Applied {
            new_text: with_line_endings(&new_lf, crlf),
            first_line,
            count: 1,
            changed: (first_line, end),
            loose: true,
        });
    }
    if positions.is_empty() {
        let mut msg = format!("old_string was not found in {shown}.");
        match nearest_lines(&text, &needle) {
            Some(near) => msg.push_str(&format!(
                " The closest lines are:\n{near}Copy the text exactly (without the line-number prefix), or read the file again."
            )),
            None if text.lines().count() <= WHOLE_LINES && text.len() <= WHOLE_BYTES => {
                msg.push_str(&format!(
                    " Nothing like it is in the file. {WHOLE_FILE}\n{}",
                    bounded_numbered(&text, WHOLE_LINES, WHOLE_BYTES)
                ))
            }
            None => msg.push_str(READ_AGAIN),
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
        loose: false,
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
        let what = if edit.loose {
            "the lines that match old_string when whitespace and indentation are ignored (the new lines take the file's indentation)".to_owned()
        } else if edit.count == 1 {
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

    /// A weak model's old_string with the wrong indentation and spacing:
    /// the one place it matches is replaced, re-indented, nothing else.
    #[test]
    fn whitespace_insensitive_unique_match_is_applied() {
        let file = "def f(x):\n    if x:\n        return  1\n    return 0\n";
        let e = apply(
            file,
            &args("if x:\n    return 1\n", "if x:\n    return 2\n", false),
            "f",
        )
        .unwrap();
        assert_eq!(
            e.new_text,
            "def f(x):\n    if x:\n        return 2\n    return 0\n"
        );
        assert!(e.loose);
        assert_eq!(e.changed, (2, 3));
        // Two loose matches: not applied.
        let err = apply("a\n  b\nb\n", &args("b  ", "c", false), "f").unwrap_err();
        assert!(err.to_string().contains("not found"), "{err}");
        // CRLF files keep CRLF.
        let e = apply("x\r\n\ty = 1\r\n", &args("y = 1", "y = 2", false), "f").unwrap();
        assert_eq!(e.new_text, "x\r\n\ty = 2\r\n");
        let e = apply("x\r\n\ty  =  1\r\n", &args("y = 1", "y = 2", false), "f").unwrap();
        assert_eq!(e.new_text, "x\r\n\ty = 2\r\n");
    }

    #[test]
    fn identical_strings_show_that_part_of_the_file() {
        let file = (1..=20).map(|i| format!("line {i}\n")).collect::<String>();
        let err = unchanged(&file, "line 10\n", "f").to_string();
        assert!(err.contains("would change nothing"), "{err}");
        assert!(
            err.contains("    10\tline 10") && err.contains("     7\tline 7"),
            "{err}"
        );
        assert!(!err.contains("line 1\n"), "{err}");
        let err = unchanged(&file, "nope", "f").to_string();
        assert!(
            err.contains("not in f either") && err.contains("    20\tline 20"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_old_string_in_a_small_file_gets_the_whole_file() {
        // Nothing near it: a small file comes back whole, a large one does not.
        let small = "def add(a, b):\n    return a - b\n";
        let err = apply(small, &args("return self.value / 2", "x", false), "ops.py")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Nothing like it is in the file")
                && err.contains("     1\tdef add(a, b):")
                && !err.contains("read the file again")
                && !err.contains("Read the file again"),
            "{err}"
        );
        let large: String = (1..=200).map(|i| format!("value_{i} = {i}\n")).collect();
        let err = apply(&large, &args("zzzz qqqq", "x", false), "big.py")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("Read the file again") && !err.contains("value_100"),
            "{err}"
        );
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
            &args("let  x = 1 ;", "z", false),
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
