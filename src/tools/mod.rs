//! Model-facing tools: the [`Tool`] trait, the [`Registry`], and one file per tool.
//!
//! A call runs in two phases so the user can review it before anything happens:
//! [`Tool::prepare`] validates the arguments and computes what the call would do
//! (title, locations, a diff preview, which paths or command it touches), then the
//! agent decides on permission, then [`Action::run`] does it. Tool failures are
//! results for the model ([`ToolError`]), never JSON-RPC errors to the editor.
mod ask_user;
mod background;
mod edit_file;
mod find;
mod load_skill;
pub mod missing;
pub mod paths;
mod plan;
pub mod process;
mod read_file;
mod run_command;
pub mod sandbox;
pub mod search;
pub mod snapshot;
mod text;
pub mod web_fetch;
mod write_file;

pub use ask_user::AskUser;
pub use background::{CommandKill, CommandOutput};
pub use edit_file::EditFile;
pub use find::{Glob, Grep, ListDirectory};
pub use load_skill::{LoadSkill, SkillTools};
pub use plan::UpdatePlan;
pub use read_file::ReadFile;
pub use run_command::RunCommand;
pub use write_file::WriteFile;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::acp::{ToolCallContent, ToolCallLocation, ToolKind};
use crate::editor::{Editor, FileError};

/// Everything a tool may use while it runs.
#[derive(Clone)]
pub struct ToolContext {
    pub session_id: String,
    /// The session's working directory (absolute, as given by the editor).
    pub cwd: PathBuf,
    /// cwd and additional directories, canonicalised: the session roots.
    pub roots: Vec<PathBuf>,
    pub editor: Editor,
    /// Cancelled when the turn is cancelled.
    pub cancel: CancellationToken,
    pub tool_call_id: String,
    /// Environment variables never passed to child processes.
    pub secret_env: Vec<String>,
    /// How a command of this call is confined (issue 14): set by the agent
    /// once the permission decision is made; `None` runs it unconfined (the
    /// user allowed this very command, or there is no sandbox).
    pub sandbox: Option<sandbox::Policy>,
    /// Whether the one who answers this session's questions may let a
    /// command out of the sandbox: the user, never an A2A guest (DESIGN
    /// "Who holds which rights"). A guest's commands run confined even when
    /// the guest allowed them, and a denied one is not offered a run
    /// without the sandbox.
    pub may_leave_sandbox: bool,
    /// The files the session's model has seen; `None` where nothing is
    /// tracked. The editing tools answer a blind edit with the file.
    pub seen: Option<Arc<dyn SeenFiles>>,
}

/// The files a session's model has seen (read, written, or been shown whole).
pub trait SeenFiles: Send + Sync {
    fn has_seen(&self, path: &std::path::Path) -> bool;
    /// Whether `write_file` refuses to overwrite an unseen file (the
    /// small-model mode: a weak model overwrites what it never read).
    fn guards_overwrites(&self) -> bool;
    /// The model was just shown the file's content.
    fn shown(&self, path: &std::path::Path);
}

impl ToolContext {
    /// Whether the model has not seen `path` in this session.
    pub fn unseen(&self, path: &std::path::Path) -> bool {
        self.seen.as_ref().is_some_and(|s| !s.has_seen(path))
    }

    /// Whether overwriting `path` now is blind and must not happen ([`SeenFiles::guards_overwrites`]).
    pub fn blind_overwrite(&self, path: &std::path::Path) -> bool {
        self.seen
            .as_ref()
            .is_some_and(|s| s.guards_overwrites() && !s.has_seen(path))
    }
    /// Whether a tool may read `path` while it prepares a call, before the
    /// permission step: only inside the session roots (DESIGN §3: outside
    /// them, reads ask in every mode). A file elsewhere is read once the
    /// user has allowed the call, so none of it reaches the model (in an
    /// error such as `edit_file`'s "closest lines") or the editor (as an
    /// `fs/read_text_file` for the preview) unasked.
    pub fn may_preview(&self, path: &std::path::Path) -> bool {
        paths::is_inside(path, &self.roots)
    }
}

/// What a call touches; the permission policy decides from this.
#[derive(Debug, Clone, PartialEq)]
pub enum Access {
    /// Nothing outside the agent (plans, thinking).
    None,
    Read(Vec<PathBuf>),
    Write(Vec<PathBuf>),
    Execute {
        command: String,
        cwd: PathBuf,
    },
    /// A URL fetched by `web_fetch` (issue 45 item 2): asked per domain.
    Fetch {
        domain: String,
    },
    /// An MCP tool; `read_only` and `destructive` from its annotations
    /// (`readOnlyHint`, an explicit `destructiveHint: true`).
    External {
        tool: String,
        read_only: bool,
        destructive: bool,
    },
}

/// A prepared call, ready to be shown, approved and run.
pub struct Invocation {
    pub title: String,
    pub kind: ToolKind,
    pub locations: Vec<ToolCallLocation>,
    /// Preview shown in the `tool_call` and the permission request (e.g. a diff).
    pub content: Vec<ToolCallContent>,
    pub access: Access,
    pub action: Box<dyn Action>,
}

/// The part of a call that has effects.
#[async_trait::async_trait]
pub trait Action: Send {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// The result of a call, for the model and for the editor.
#[derive(Debug, Clone, Default)]
pub struct ToolOutput {
    /// What the model reads as the tool result.
    pub for_model: String,
    /// Tool-call content shown in the editor (replaces the preview when non-empty).
    pub content: Vec<ToolCallContent>,
    /// Locations to show once done (e.g. search hits), if they changed.
    pub locations: Option<Vec<ToolCallLocation>>,
    pub raw_output: Option<Value>,
}

impl ToolOutput {
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            for_model: text.into(),
            ..Default::default()
        }
    }
}

/// A failed call. The message is written for the model: it says what was
/// wrong and what to do instead.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments: {0}")]
    InvalidArgs(String),
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{0}")]
    Failed(String),
    #[error("the user cancelled the turn")]
    Cancelled,
}

impl ToolError {
    /// Whether the turn must stop here: a write may have gone somewhere
    /// other than where it was approved ([`FileError::Moved`]).
    pub fn halts(&self) -> bool {
        matches!(self, ToolError::File(FileError::Moved { .. }))
    }
}

/// A model-facing tool.
#[async_trait::async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls (a contract: DESIGN §3).
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// JSON Schema of the arguments object.
    fn parameters(&self) -> Value;
    fn kind(&self) -> ToolKind;
    /// A title from unvalidated arguments, for the first report of the call.
    fn title(&self, args: &Value) -> String {
        let _ = args;
        self.name().to_owned()
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError>;
}

/// Decodes tool arguments, naming the bad field for the model.
pub fn parse_args<T: serde::de::DeserializeOwned>(args: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            ToolError::InvalidArgs(inner.to_string())
        } else {
            ToolError::InvalidArgs(format!("{path}: {inner}"))
        }
    })
}

/// The JSON Schema of a tool's arguments: an object of `properties` with
/// the `required` ones, and nothing else (a misspelt argument is refused
/// rather than ignored; OpenAI's strict mode asks the same).
pub fn args_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = serde_json::json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = serde_json::json!(required);
    }
    schema["additionalProperties"] = Value::Bool(false);
    schema
}

/// Resolves a model-given path against the session (relative to cwd, `~`,
/// `..` and symlinks resolved).
pub fn resolve_arg(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError::InvalidArgs("path: must not be empty".into()));
    }
    if path.contains('\0') {
        return Err(ToolError::InvalidArgs(
            "path: must not contain NUL characters".into(),
        ));
    }
    Ok(paths::resolve(path, &ctx.cwd))
}

/// Text safe for a one-line title or permission prompt: control characters and
/// ANSI escape sequences from model output are removed, whitespace runs become
/// one space, and the result is cut to `max` characters.
pub fn sanitize_title(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    let mut chars = text.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI `ESC [ … final` and OSC `ESC ] … BEL|ESC \`; other escapes drop one char.
            match chars.peek() {
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.peek() == Some(&'\\')) {
                            break;
                        }
                    }
                }
                _ => {
                    chars.next();
                }
            }
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if c.is_control()
            || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        {
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    crate::utf8::ellipsize(&out, max)
}

/// `text` made safe as by [`sanitize_title`], as a Markdown code span that
/// shows it as it is: a backtick inside stays a backtick (the fence is one
/// longer than the longest run inside, CommonMark §6.1). Backticks used to
/// be shown as `'`, which in a shell means the opposite: an outside review's
/// ``ls `touch p` `` was titled `ls 'touch p'`, a harmless literal.
pub fn code_span(text: &str, max: usize) -> String {
    let text = sanitize_title(text, max);
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// Tools that come and go while a session runs (the tools of its MCP
/// servers, `crate::mcp`): the registry asks for the current list each time.
pub trait ToolSource: Send + Sync {
    /// The tools available right now, in a stable order.
    fn tools(&self) -> Vec<Arc<dyn Tool>>;
    /// A prompt turn starts: a moment to tell the user what happened since
    /// the last one (e.g. a server failed to start).
    fn turn_started(&self) {}
    /// The prompt turn ended.
    fn turn_ended(&self) {}
    /// A prompt turn is about to call the model: brings [`Self::tools`] up
    /// to date where it may be stale (MCP servers of protocol 2026-07-28,
    /// whose list changes a server may never announce, issue 45 item 10).
    fn refresh(&self) -> Option<RefreshFuture> {
        None
    }
    /// The session closes or the agent exits: stop whatever backs the tools.
    fn shutdown(&self) {}
    /// A Markdown description of the source's state for the user (`/mcp`).
    fn describe(&self) -> Option<String> {
        None
    }
    /// `/mcp logout <server>`: signs out of `server` if this source has it
    /// (what happened, in words); `None` when it does not know the server.
    fn sign_out(&self, _server: &str) -> Option<String> {
        None
    }
    /// Slash commands the source offers now (issue 18 item 4: MCP prompts).
    fn commands(&self) -> Vec<SourceCommand> {
        Vec::new()
    }
    /// Runs command `name` with `input`: the blocks of the turn's prompt,
    /// or what went wrong for the user. `None`: not this source's command.
    fn run_command(&self, name: &str, input: &str) -> Option<CommandFuture> {
        let _ = (name, input);
        None
    }
    /// Reads a `resource_link` of the user's prompt whose `uri` this source
    /// claims (issue 18 item 5: an MCP server's resource); the future gives
    /// `None` when no server of the source claims it.
    fn read_link(&self, uri: &str) -> Option<LinkFuture> {
        let _ = uri;
        None
    }
    /// The session's roots changed (`/add-dir`): MCP servers are told
    /// (`notifications/roots/list_changed`, issue 18 item 1).
    fn roots_changed(&self, roots: &[PathBuf]) {
        let _ = roots;
    }
    /// Changes whenever [`Self::commands`] changed.
    fn commands_changed(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        None
    }
}

/// How a tool describes itself to the model (name, description, JSON
/// Schema of its parameters); the agent turns it into the model client's
/// type, so `tools` does not use `llm` (DESIGN §2).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// A slash command of a [`ToolSource`].
#[derive(Debug, Clone, PartialEq)]
pub struct SourceCommand {
    pub name: String,
    pub description: String,
    pub hint: Option<String>,
}

/// The prompt a [`ToolSource`] command produces, or a message for the user.
pub type CommandFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Vec<crate::acp::ContentBlock>, String>> + Send>,
>;

/// What [`ToolSource::refresh`] returns.
pub type RefreshFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A prompt link read by a [`ToolSource`]: `None` when it does not claim the
/// URI; else its contents (text for the model, images as image content) or
/// why reading it failed.
pub type LinkFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Option<Result<ToolOutput, String>>> + Send>>;

/// The tools of a session, by name: built-in ones, then those of its
/// [`ToolSource`]s.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    order: Vec<String>,
    sources: Vec<Arc<dyn ToolSource>>,
}

impl Registry {
    /// The built-in tools.
    pub fn builtin() -> Self {
        let mut r = Registry::default();
        r.add(Arc::new(ReadFile));
        r.add(Arc::new(WriteFile));
        r.add(Arc::new(EditFile));
        r.add(Arc::new(ListDirectory));
        r.add(Arc::new(Glob));
        r.add(Arc::new(Grep));
        r.add(Arc::new(RunCommand));
        r.add(Arc::new(CommandOutput));
        r.add(Arc::new(CommandKill));
        r.add(Arc::new(UpdatePlan));
        r
    }

    pub fn add(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.name().to_owned();
        if self.tools.insert(name.clone(), tool).is_none() {
            self.order.push(name);
        }
    }

    /// Adds a source of dynamic tools (their names must not clash with the
    /// fixed ones: a fixed tool wins).
    pub fn add_source(&mut self, source: Arc<dyn ToolSource>) {
        self.sources.push(source);
    }

    /// The slash commands of the sources.
    pub fn source_commands(&self) -> Vec<SourceCommand> {
        self.sources.iter().flat_map(|s| s.commands()).collect()
    }

    /// Runs a source's command (the first source that knows `name`).
    pub fn run_source_command(&self, name: &str, input: &str) -> Option<CommandFuture> {
        self.sources.iter().find_map(|s| s.run_command(name, input))
    }

    /// Receivers that change when a source's commands change.
    pub fn commands_changed(&self) -> Vec<tokio::sync::watch::Receiver<u64>> {
        self.sources
            .iter()
            .filter_map(|s| s.commands_changed())
            .collect()
    }

    pub fn remove(&mut self, name: &str) {
        if self.tools.remove(name).is_some() {
            self.order.retain(|n| n != name);
        }
    }

    /// Number of fixed (non-source) tools.
    pub fn fixed_len(&self) -> usize {
        self.order.len()
    }

    fn dynamic(&self) -> impl Iterator<Item = Arc<dyn Tool>> + '_ {
        self.sources
            .iter()
            .flat_map(|s| s.tools())
            .filter(|t| !self.tools.contains_key(t.name()))
    }

    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools
            .get(name)
            .cloned()
            .or_else(|| self.dynamic().find(|t| t.name() == name))
    }

    pub fn names(&self) -> Vec<String> {
        self.order
            .iter()
            .cloned()
            .chain(self.dynamic().map(|t| t.name().to_owned()))
            .collect()
    }

    /// Tool specs for the model: fixed tools in registration order, then the sources'.
    pub fn specs(&self) -> Vec<ToolDescription> {
        let spec = |t: &Arc<dyn Tool>| ToolDescription {
            name: t.name().to_owned(),
            description: t.description().to_owned(),
            parameters: t.parameters(),
        };
        self.order
            .iter()
            .filter_map(|n| self.tools.get(n))
            .map(spec)
            .chain(self.dynamic().map(|t| spec(&t)))
            .collect()
    }

    /// See [`ToolSource::turn_started`].
    pub fn turn_started(&self) {
        self.sources.iter().for_each(|s| s.turn_started());
    }

    /// See [`ToolSource::refresh`]: every source's, together.
    pub async fn refresh(&self) {
        futures::future::join_all(self.sources.iter().filter_map(|s| s.refresh())).await;
    }

    /// See [`ToolSource::turn_ended`].
    pub fn turn_ended(&self) {
        self.sources.iter().for_each(|s| s.turn_ended());
    }

    /// What each source says about itself (see [`ToolSource::describe`]).
    pub fn describe_sources(&self) -> Vec<String> {
        self.sources.iter().filter_map(|s| s.describe()).collect()
    }

    /// See [`ToolSource::sign_out`].
    pub fn sign_out(&self, server: &str) -> Option<String> {
        self.sources.iter().find_map(|s| s.sign_out(server))
    }

    /// See [`ToolSource::read_link`]: the first source that claims `uri`.
    pub async fn read_link(&self, uri: &str) -> Option<Result<ToolOutput, String>> {
        for source in &self.sources {
            if let Some(read) = source.read_link(uri)
                && let Some(got) = read.await
            {
                return Some(got);
            }
        }
        None
    }

    /// See [`ToolSource::roots_changed`].
    pub fn roots_changed(&self, roots: &[PathBuf]) {
        self.sources.iter().for_each(|s| s.roots_changed(roots));
    }

    /// See [`ToolSource::shutdown`].
    pub fn shutdown(&self) {
        self.sources.iter().for_each(|s| s.shutdown());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_spans_show_backticks_as_backticks() {
        assert_eq!(code_span("cargo test", 100), "`cargo test`");
        assert_eq!(code_span("ls `touch p4`", 100), "`` ls `touch p4` ``");
        assert_eq!(code_span("a ``b`` c", 100), "```a ``b`` c```");
        assert_eq!(code_span("echo x\u{1b}[2K\nrm y", 100), "`echo x rm y`");
    }

    #[test]
    fn titles_are_sanitized() {
        assert_eq!(sanitize_title("a\x1b[31mred\x1b[0m\nb\t c", 50), "ared b c");
        assert_eq!(sanitize_title("x\x1b]0;evil title\x07y", 50), "xy");
        assert_eq!(sanitize_title("ok\u{202e}txt.exe", 50), "oktxt.exe");
        assert_eq!(sanitize_title("abcdef", 4), "abc…");
        assert_eq!(
            Registry::builtin().names(),
            [
                "read_file",
                "write_file",
                "edit_file",
                "list_directory",
                "glob",
                "grep",
                "run_command",
                "command_output",
                "command_kill",
                "update_plan"
            ]
        );
    }
}
