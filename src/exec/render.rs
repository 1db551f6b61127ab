//! What `exec` shows: for a person, or one JSON event per line.
//!
//! For a person, the model's answer goes to stdout (so `exec … > answer.md`
//! keeps just the answer) and everything else — thoughts (dimmed), status
//! lines, tool activity, diffs, permission decisions, errors — to stderr.
//! Colour only on a terminal, never with `NO_COLOR`.
//!
//! With `--json` every `session/update` is printed to stdout as it arrived
//! (the notification's params, `{"sessionId":…,"update":{…}}`), plus
//! `{"type":"permission",…}` for each permission decision and a final
//! `{"type":"result","stopReason":…}` or `{"type":"error",…}`.
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::editor::status::status_text;
use crate::term::{Stream, Style};

use super::diff;

/// How a permission request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Allowed by `--yes`.
    AllowedByFlag,
    /// The person at the terminal chose an allow option.
    Allowed,
    /// The person at the terminal chose a reject option (or gave no answer).
    Rejected,
    /// Refused: no terminal to ask on and no `--yes`.
    RefusedNoTty,
}

impl Answer {
    pub fn allowed(self) -> bool {
        matches!(self, Answer::AllowedByFlag | Answer::Allowed)
    }
    fn id(self) -> &'static str {
        match self {
            Answer::AllowedByFlag => "allowed_by_flag",
            Answer::Allowed => "allowed",
            Answer::Rejected => "rejected",
            Answer::RefusedNoTty => "refused_no_terminal",
        }
    }
}

/// The end of the run.
pub enum Outcome<'a> {
    Stopped {
        stop_reason: &'a str,
        exit_code: u8,
    },
    Failed {
        code: Option<i64>,
        message: &'a str,
        data: Option<&'a Value>,
        exit_code: u8,
        hint: Option<&'a str>,
    },
}

pub enum Renderer {
    Human(Human),
    Json,
}

impl Renderer {
    pub fn new(json: bool, cwd: &Path) -> Self {
        if json {
            Renderer::Json
        } else {
            Renderer::Human(Human::new(cwd))
        }
    }

    /// One `session/update` notification's params.
    pub fn update(&mut self, params: &Value) {
        match self {
            Renderer::Json => Stream::Stdout.line(&params.to_string()),
            Renderer::Human(h) => h.update(params.get("update").unwrap_or(&Value::Null)),
        }
    }

    /// A permission decision made for `tool_call` (the request's `toolCall`).
    pub fn permission(&mut self, tool_call: &Value, answer: Answer, option_id: Option<&str>) {
        match self {
            Renderer::Json => Stream::Stdout.line(
                &json!({
                    "type": "permission",
                    "toolCallId": tool_call.get("toolCallId"),
                    "title": tool_call.get("title"),
                    "decision": answer.id(),
                    "optionId": option_id,
                })
                .to_string(),
            ),
            Renderer::Human(h) => h.permission(tool_call, answer),
        }
    }

    /// A line for the person only (ignored in JSON mode).
    pub fn note(&mut self, text: &str) {
        if let Renderer::Human(h) = self {
            h.note(text);
        }
    }

    /// Called before a prompt is shown on the terminal, so it starts on its own line.
    pub fn before_prompt(&mut self) {
        if let Renderer::Human(h) = self {
            h.break_lines();
        }
    }

    pub fn finish(&mut self, outcome: Outcome<'_>, refused: usize) {
        match self {
            Renderer::Json => {
                let line = match outcome {
                    Outcome::Stopped {
                        stop_reason,
                        exit_code,
                    } => json!({
                        "type": "result",
                        "stopReason": stop_reason,
                        "refusedPermissions": refused,
                        "exitCode": exit_code,
                    }),
                    Outcome::Failed {
                        code,
                        message,
                        data,
                        exit_code,
                        ..
                    } => json!({
                        "type": "error",
                        "code": code,
                        "message": message,
                        "data": data,
                        "exitCode": exit_code,
                    }),
                };
                Stream::Stdout.line(&line.to_string());
            }
            Renderer::Human(h) => h.finish(outcome, refused),
        }
    }
}

#[derive(Default)]
struct ToolState {
    title: String,
    kind: String,
    diffs: Vec<Value>,
    text: Option<String>,
    announced: bool,
    done: bool,
    diff_shown: bool,
}

pub struct Human {
    err: Style,
    cwd: PathBuf,
    /// stdout has text without a final newline.
    text_open: bool,
    /// stderr has a thought without a final newline.
    thought_open: bool,
    tools: HashMap<String, ToolState>,
}

impl Human {
    pub fn new(cwd: &Path) -> Self {
        Self {
            err: Style::for_stream(Stream::Stderr),
            cwd: cwd.to_owned(),
            text_open: false,
            thought_open: false,
            tools: HashMap::new(),
        }
    }

    fn break_lines(&mut self) {
        if self.text_open {
            Stream::Stdout.write("\n");
            self.text_open = false;
        }
        if self.thought_open {
            Stream::Stderr.write("\n");
            self.thought_open = false;
        }
    }

    fn err_line(&mut self, line: &str) {
        self.break_lines();
        Stream::Stderr.line(line);
    }

    fn note(&mut self, text: &str) {
        let line = self.err.dim(text);
        self.err_line(&line);
    }

    fn update(&mut self, u: &Value) {
        let kind = u.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
        match kind {
            "agent_message_chunk" => {
                if let Some(t) = chunk_text(u) {
                    if self.thought_open {
                        Stream::Stderr.write("\n");
                        self.thought_open = false;
                    }
                    Stream::Stdout.write(t);
                    self.text_open = !t.ends_with('\n');
                }
            }
            "agent_thought_chunk" => {
                if let Some(status) = status_text(u) {
                    let line = self.err.yellow(&format!("⋯ {status}"));
                    self.err_line(&line);
                } else if let Some(t) = chunk_text(u) {
                    if self.text_open {
                        Stream::Stdout.write("\n");
                        self.text_open = false;
                    }
                    Stream::Stderr.write(&self.err.italic_dim(t));
                    self.thought_open = !t.ends_with('\n');
                }
            }
            "tool_call" | "tool_call_update" => self.tool(u),
            "plan" => self.plan(u),
            "notice" => self.notice(u),
            _ => {}
        }
    }

    /// A notice (an MCP server that did not start, the local server in
    /// use): one line on stderr, never part of the answer.
    fn notice(&mut self, u: &Value) {
        let text = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or("").trim();
        let line = match text("description") {
            "" => text("title").to_owned(),
            d => format!("{}: {d}", text("title")),
        };
        if line.is_empty() {
            return;
        }
        let line = match text("severity") {
            "warning" | "error" => self.err.yellow(&format!("! {line}")),
            _ => self.err.dim(&format!("• {line}")),
        };
        self.err_line(&line);
    }

    fn tool(&mut self, u: &Value) {
        let Some(id) = u.get("toolCallId").and_then(Value::as_str) else {
            return;
        };
        let state = self.tools.entry(id.to_owned()).or_default();
        if let Some(t) = u.get("title").and_then(Value::as_str) {
            state.title = t.to_owned();
        }
        if let Some(k) = u.get("kind").and_then(Value::as_str) {
            state.kind = k.to_owned();
        }
        if let Some(content) = u.get("content").and_then(Value::as_array) {
            let diffs: Vec<Value> = content
                .iter()
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("diff"))
                .cloned()
                .collect();
            if !diffs.is_empty() {
                state.diffs = diffs;
            }
            let text: Vec<&str> = content
                .iter()
                .filter_map(|c| c.get("content")?.get("text")?.as_str())
                .collect();
            if !text.is_empty() {
                state.text = Some(text.join("\n"));
            }
        }
        let status = u.get("status").and_then(Value::as_str);
        let title = state.title.clone();
        let kind = state.kind.clone();
        match status {
            Some("in_progress") if kind == "execute" && !state.announced => {
                state.announced = true;
                let line = self.err.cyan(&format!("▸ {title}"));
                self.err_line(&line);
            }
            Some("completed") if !state.done => {
                state.done = true;
                let mut diffs = std::mem::take(&mut state.diffs);
                if state.diff_shown {
                    diffs.clear();
                }
                let text = state.text.take();
                let line = format!("{} {}", self.err.green("✓"), self.err.bold(&title));
                self.err_line(&line);
                for d in &diffs {
                    self.diff(d);
                }
                if kind == "execute"
                    && let Some(t) = text
                {
                    self.output_tail(&t, 12);
                }
            }
            Some("failed") if !state.done => {
                state.done = true;
                let reason = state
                    .text
                    .as_deref()
                    .and_then(|t| t.lines().find(|l| !l.trim().is_empty()))
                    .map(|l| format!(" — {}", l.trim()))
                    .unwrap_or_default();
                let line = format!(
                    "{} {}{}",
                    self.err.red("✗"),
                    self.err.bold(&title),
                    self.err.dim(&reason)
                );
                self.err_line(&line);
            }
            _ => {}
        }
    }

    fn output_tail(&mut self, text: &str, max: usize) {
        let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with("```")).collect();
        let skip = lines.len().saturating_sub(max);
        if skip > 0 {
            let l = self.err.dim(&format!("  … {skip} earlier lines"));
            self.err_line(&l);
        }
        for l in &lines[skip..] {
            let l = self.err.dim(&format!("  {l}"));
            self.err_line(&l);
        }
    }

    /// A unified diff of one `diff` content block, on stderr.
    fn diff(&mut self, d: &Value) {
        let path = d.get("path").and_then(Value::as_str).unwrap_or("?");
        let shown = relative_to(path, &self.cwd);
        let old = d.get("oldText").and_then(Value::as_str);
        let new = d.get("newText").and_then(Value::as_str).unwrap_or("");
        let text = render_diff(&shown, old, new, self.err);
        self.break_lines();
        Stream::Stderr.write(&text);
    }

    fn plan(&mut self, u: &Value) {
        let Some(entries) = u.get("entries").and_then(Value::as_array) else {
            return;
        };
        let header = self.err.bold("Plan:");
        self.err_line(&header);
        for e in entries {
            let content = e.get("content").and_then(Value::as_str).unwrap_or("");
            let mark = match e.get("status").and_then(Value::as_str) {
                Some("completed") => "[x]",
                Some("in_progress") => "[~]",
                _ => "[ ]",
            };
            let line = format!("  {mark} {content}");
            self.err_line(&line);
        }
    }

    fn permission(&mut self, tool_call: &Value, answer: Answer) {
        if answer == Answer::Allowed
            && let Some(id) = tool_call.get("toolCallId").and_then(Value::as_str)
        {
            // The person saw the diff in the question; don't repeat it.
            self.tools.entry(id.to_owned()).or_default().diff_shown = true;
        }
        let title = tool_call
            .get("title")
            .and_then(Value::as_str)
            .or_else(|| {
                let id = tool_call.get("toolCallId")?.as_str()?;
                self.tools.get(id).map(|t| t.title.as_str())
            })
            .unwrap_or("a tool call")
            .to_owned();
        let line = match answer {
            Answer::AllowedByFlag => self.err.dim(&format!("allowed (--yes): {title}")),
            Answer::Allowed => return,
            Answer::Rejected => self.err.yellow(&format!("rejected: {title}")),
            Answer::RefusedNoTty => self.err.yellow(&format!(
                "refused: {title} — no terminal to ask on; pass --yes, or --mode accept-edits / full-auto"
            )),
        };
        self.err_line(&line);
    }

    fn finish(&mut self, outcome: Outcome<'_>, refused: usize) {
        self.break_lines();
        if refused > 0 {
            let l = self.err.yellow(&format!(
                "{refused} permission request(s) refused because there was no terminal to ask on (use --yes or --mode)"
            ));
            self.err_line(&l);
        }
        match outcome {
            Outcome::Stopped { stop_reason, .. } => {
                let why = match stop_reason {
                    "end_turn" => return,
                    "refusal" => "the model refused to continue",
                    "max_tokens" => "the model hit its output token limit",
                    "max_turn_requests" => {
                        "the turn reached max_turn_requests model calls (see the config file)"
                    }
                    "cancelled" => "cancelled",
                    _ => "stopped",
                };
                let l = self.err.red(&format!(
                    "acp-coder: turn ended early ({stop_reason}): {why}"
                ));
                self.err_line(&l);
            }
            Outcome::Failed { message, hint, .. } => {
                let l = self.err.red(&format!("acp-coder: {message}"));
                self.err_line(&l);
                if let Some(h) = hint {
                    let l = self.err.dim(h);
                    self.err_line(&l);
                }
            }
        }
    }
}

/// `path` relative to `cwd` when it is inside, else as given.
pub fn relative_to(path: &str, cwd: &Path) -> String {
    Path::new(path)
        .strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_owned())
}

fn chunk_text(u: &Value) -> Option<&str> {
    let c = u.get("content")?;
    if c.get("type").and_then(Value::as_str) != Some("text") {
        return None;
    }
    c.get("text").and_then(Value::as_str)
}

/// A diff of a whole-file change as `--- a/… +++ b/… @@ … @@` text.
pub fn render_diff(path: &str, old: Option<&str>, new: &str, style: Style) -> String {
    let mut s = String::new();
    // git's a/ b/ prefixes for relative paths; absolute paths as they are.
    let (a, b) = if path.starts_with('/') {
        (path.to_owned(), path.to_owned())
    } else {
        (format!("a/{path}"), format!("b/{path}"))
    };
    let (from, to) = match old {
        None => ("/dev/null".to_owned(), b),
        Some(_) => (a, b),
    };
    s.push_str(&style.bold(&format!("--- {from}\n+++ {to}")));
    s.push('\n');
    for h in diff::hunks(old.unwrap_or(""), new, 3) {
        s.push_str(&style.cyan(&format!(
            "@@ -{},{} +{},{} @@",
            h.old_start, h.old_len, h.new_start, h.new_len
        )));
        s.push('\n');
        for l in h.lines {
            let t = &l.text;
            let line = match l.tag {
                diff::Tag::Context => format!(" {t}"),
                diff::Tag::Removed => style.red(&format!("-{t}")),
                diff::Tag::Added => style.green(&format!("+{t}")),
            };
            s.push_str(&line);
            s.push('\n');
            if l.missing_newline {
                s.push_str("\\ No newline at end of file\n");
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_text() {
        let plain = Style { enabled: false };
        let d = render_diff("a.txt", Some("one\ntwo\n"), "one\n2\n", plain);
        assert_eq!(
            d,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
        );
        let d = render_diff("b.txt", Some("one"), "two", plain);
        assert_eq!(
            d,
            "--- a/b.txt\n+++ b/b.txt\n@@ -1,1 +1,1 @@\n-one\n\\ No newline at end of file\n+two\n\\ No newline at end of file\n"
        );
        let d = render_diff("n.txt", None, "x\n", plain);
        assert_eq!(d, "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,1 @@\n+x\n");
    }
}
