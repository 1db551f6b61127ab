//! Slash commands (ACP §7 `available_commands_update`): built-in ones and user
//! prompt files from `.acp-coder/commands/*.md` (project) and the config dir.
//! A prompt whose first text starts with `/name` runs the command. Each skill
//! (issue 21) is a command too, after the others: a name already taken stays
//! with its built-in or prompt file.
use std::path::Path;

use crate::acp::{AvailableCommand, CommandInput, ContentBlock};
use crate::skills::Catalog;

const INIT: &str = include_str!("../../../prompts/init.md");
const REVIEW: &str = include_str!("../../../prompts/review.md");

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Summarize the conversation now.
    Compact,
    /// Show or change the mode.
    Mode,
    /// Show or change the model.
    Model,
    Status,
    Mcp,
    /// List the skills, or (`/skills reload`) read them again.
    Skills,
    /// Start the turn with this skill loaded and the input as the task.
    Skill(String),
    /// Send this text to the model as the prompt.
    Prompt(String),
    /// A command of a tool source (an MCP prompt), by name.
    Source(String),
    /// Restore the files of the last turn that changed any (issue 19).
    Undo,
    /// Go back N turns (issue 19).
    Rewind,
    /// Add a directory to the session (issue 18 item 1, `add_dir`).
    AddDir,
    /// List or revoke the permissions kept for the project (`kept`).
    Permissions,
    /// List the commands, one line each (issue 45 item 8, [`help`]).
    Help,
    /// Show or create the memory file, or add a line to it (issue 45 item 8).
    Memory,
}

#[derive(Debug, Clone)]
pub struct Command {
    pub name: String,
    pub description: String,
    pub hint: Option<String>,
    template: Template,
}

#[derive(Debug, Clone)]
enum Template {
    Builtin(fn() -> BuiltinKind),
    /// A prompt file's body; `placeholder` (`$ARGUMENTS`, `{{args}}`)
    /// stands for the arguments.
    Text {
        body: String,
        placeholder: &'static str,
    },
    /// A skill of the session, by name.
    Skill,
    /// A command of a tool source (issue 18 item 4: MCP prompts).
    Source,
}

#[derive(Debug, Clone, Copy)]
enum BuiltinKind {
    Compact,
    Init,
    Review,
    Mode,
    Model,
    Status,
    Mcp,
    Skills,
    Undo,
    Rewind,
    AddDir,
    Permissions,
    Help,
    Memory,
}

fn builtin(
    name: &str,
    description: &str,
    hint: Option<&str>,
    kind: fn() -> BuiltinKind,
) -> Command {
    Command {
        name: name.into(),
        description: description.into(),
        hint: hint.map(Into::into),
        template: Template::Builtin(kind),
    }
}

/// Built-ins first, then project commands (`.acp-coder/commands`, then
/// Claude Code's `.claude/commands` and Gemini CLI's `.gemini/commands`,
/// issue 45 item 1), then the user's (a name is taken once).
/// A project command that takes the name of one of the user's own says so in
/// its description, which every editor lists (issue 42 item 5), as `/skills`
/// names a shadowed skill.
pub fn available(cwd: &Path, config_dir: &Path) -> Vec<Command> {
    let mut list = builtins();
    let user_dir = config_dir.join("commands");
    let start = list.len();
    for kind in [Kind::Own, Kind::Claude, Kind::Gemini] {
        push_prompt_files(
            &mut list,
            prompt_files(&cwd.join(kind.dir()), kind, Some(cwd)),
        );
    }
    let project = start..list.len();
    let user = prompt_files(&user_dir, Kind::Own, None);
    for file in &user {
        let (name, path) = (&file.name, &file.path);
        if let Some(c) = list
            .iter_mut()
            .skip(project.start)
            .take(project.len())
            .find(|c| &c.name == name)
        {
            tracing::warn!(command = %name, user = %path.display(), "a project prompt command shadows the user's own command of the same name");
            c.description = format!(
                "{} (this project's command: it hides your own /{name} at {})",
                c.description,
                path.display()
            );
        }
    }
    push_prompt_files(&mut list, user);
    list
}

/// The built-in commands, in the order the editor lists them.
fn builtins() -> Vec<Command> {
    vec![
        builtin(
            "compact",
            "Summarize the conversation to free context",
            Some("optional focus for the summary"),
            || BuiltinKind::Compact,
        ),
        builtin(
            "init",
            "Write or update AGENTS.md from a look at the project",
            None,
            || BuiltinKind::Init,
        ),
        builtin(
            "review",
            "Review the uncommitted changes",
            Some("optional focus"),
            || BuiltinKind::Review,
        ),
        builtin(
            "mode",
            "Show or switch the mode (read-only, plan, ask, accept-edits, full-auto)",
            Some("mode id"),
            || BuiltinKind::Mode,
        ),
        builtin(
            "model",
            "Show or switch the model",
            Some("model id"),
            || BuiltinKind::Model,
        ),
        builtin(
            "status",
            "Model, mode, tokens used, context left and cost",
            None,
            || BuiltinKind::Status,
        ),
        builtin(
            "mcp",
            "MCP servers, their state, tools and sign-in; `/mcp logout <server>` signs out",
            Some("logout <server>"),
            || BuiltinKind::Mcp,
        ),
        builtin(
            "skills",
            "List the skills; `/skills reload` reads them from disk again",
            Some("reload"),
            || BuiltinKind::Skills,
        ),
        builtin(
            "undo",
            "Restore the files of the last turn that changed any, and drop that turn",
            None,
            || BuiltinKind::Undo,
        ),
        builtin(
            "rewind",
            "Go back N turns: restore their files and drop them from the conversation",
            Some("number of turns (default 1)"),
            || BuiltinKind::Rewind,
        ),
        builtin(
            "add-dir",
            "Add a directory to the session: the model may work in it, MCP servers see it as a root",
            Some("path of an existing directory"),
            || BuiltinKind::AddDir,
        ),
        builtin(
            "permissions",
            "List the permissions kept for this project; `/permissions revoke N` (or `all`) revokes them",
            Some("revoke N | revoke all"),
            || BuiltinKind::Permissions,
        ),
        builtin(
            "memory",
            "Open the memory file (AGENTS.md), or create it; `/memory add TEXT` adds a line",
            Some("add TEXT"),
            || BuiltinKind::Memory,
        ),
        builtin("help", "List the commands, one line each", None, || {
            BuiltinKind::Help
        }),
    ]
}

/// `/help`: each command of the session (built-ins, prompt files, skills,
/// MCP prompts) with the first line of its description.
pub fn help(commands: &[Command]) -> String {
    let mut lines = vec!["Commands:".to_owned()];
    for c in commands {
        let first = c.description.lines().next().unwrap_or_default().trim();
        let hint = c
            .hint
            .as_deref()
            .map(|h| format!(" <{h}>"))
            .unwrap_or_default();
        lines.push(format!("- `/{}`{hint}: {first}", c.name));
    }
    lines.join("\n")
}

/// The most a prompt file may hold; a bigger one is skipped (an outside
/// review linked one to `/dev/zero` and the agent's memory grew to 525 MiB).
const PROMPT_FILE_MAX: u64 = 64 * 1024;

/// The kinds of prompt files: acp-coder's own, Claude Code's and Gemini
/// CLI's.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// `<name>.md` with optional front matter, `$ARGUMENTS`.
    Own,
    /// `.claude/commands/**/<name>.md`: as [`Kind::Own`]; a subfolder
    /// names no command, it is shown in the description (`project:ns`).
    Claude,
    /// `.gemini/commands/**/<name>.toml` (`prompt`, `description`,
    /// `{{args}}`); a subfolder is a namespace: `ns/name.toml` is `/ns:name`.
    Gemini,
}

impl Kind {
    fn dir(self) -> &'static str {
        match self {
            Kind::Own => ".acp-coder/commands",
            Kind::Claude => ".claude/commands",
            Kind::Gemini => ".gemini/commands",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Kind::Gemini => "toml",
            Kind::Own | Kind::Claude => "md",
        }
    }

    /// Subfolders read beneath the commands folder.
    fn depth(self) -> usize {
        match self {
            Kind::Own => 0,
            Kind::Claude | Kind::Gemini => 3,
        }
    }
}

/// A prompt file read: its command name, description, input hint, body
/// with the placeholder for the arguments, and path.
struct PromptFile {
    name: String,
    description: Option<String>,
    hint: Option<String>,
    body: String,
    placeholder: &'static str,
    path: std::path::PathBuf,
}

/// Pushes the files whose names are free (a built-in, or the project's over
/// the user's, keeps its name).
fn push_prompt_files(list: &mut Vec<Command>, files: Vec<PromptFile>) {
    for f in files {
        if list.iter().any(|c| c.name == f.name) {
            continue;
        }
        let takes_args = f.body.contains(f.placeholder);
        list.push(Command {
            description: f
                .description
                .unwrap_or_else(|| format!("Prompt from {}", f.path.display())),
            hint: f
                .hint
                .or_else(|| takes_args.then(|| "arguments".to_owned())),
            name: f.name,
            template: Template::Text {
                body: f.body,
                placeholder: f.placeholder,
            },
        });
    }
}

/// The prompt files of one folder of `kind`, in path order. Each is read
/// like any other project file (issue 42 item 5): with `within` (a
/// project's folder), a file whose real path is not beneath it is skipped
/// (a link to another project's notes); only regular files are read, opened
/// without waiting (a FIFO hung `session/new`) and checked on the open
/// file, and at most [`PROMPT_FILE_MAX`] bytes. Subfolders are walked only
/// as real folders (a linked folder is not followed).
fn prompt_files(dir: &Path, kind: Kind, within: Option<&Path>) -> Vec<PromptFile> {
    let mut found = Vec::new();
    walk(dir, &mut Vec::new(), kind, &mut found);
    found.sort();
    let within = within.and_then(|w| w.canonicalize().ok());
    let mut out = Vec::new();
    for (folders, path) in found {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let name = match kind {
            Kind::Gemini => folders
                .iter()
                .cloned()
                .chain(std::iter::once(stem))
                .collect::<Vec<_>>()
                .join(":"),
            Kind::Own | Kind::Claude => stem,
        };
        if !valid_name(&name) || (kind != Kind::Gemini && name.contains(':')) {
            continue;
        }
        let file = read_prompt_file(&path, within.as_deref())
            .and_then(|text| parse_prompt_file(kind, &text, &folders));
        match file {
            Ok((description, hint, body, placeholder)) => out.push(PromptFile {
                name,
                description,
                hint,
                body,
                placeholder,
                path,
            }),
            Err(why) => {
                tracing::warn!(path = %path.display(), "prompt command skipped: {why}");
            }
        }
    }
    out
}

/// The files of `kind` beneath `dir`, with the folders that lead to each.
fn walk(
    dir: &Path,
    folders: &mut Vec<String>,
    kind: Kind,
    out: &mut Vec<(Vec<String>, std::path::PathBuf)>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // The entry's own type: a link to a folder is not followed.
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if is_dir {
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if folders.len() < kind.depth()
                && valid_name(name)
                && !name.starts_with('.')
                && !name.contains(':')
            {
                folders.push(name.to_owned());
                walk(&path, folders, kind, out);
                folders.pop();
            }
        } else if path.extension().is_some_and(|e| e == kind.extension()) {
            out.push((folders.clone(), path));
        }
    }
}

/// A prompt file's description, input hint, body and argument placeholder.
type Parsed = (Option<String>, Option<String>, String, &'static str);

fn parse_prompt_file(kind: Kind, text: &str, folders: &[String]) -> Result<Parsed, String> {
    match kind {
        Kind::Own | Kind::Claude => {
            let (mut description, hint, body) = front_matter(text);
            if kind == Kind::Claude && !folders.is_empty() {
                let ns = format!("(project:{})", folders.join(":"));
                description = Some(match description {
                    Some(d) => format!("{d} {ns}"),
                    None => format!("Claude Code command {ns}"),
                });
            }
            Ok((description, hint, body, "$ARGUMENTS"))
        }
        Kind::Gemini => {
            #[derive(serde::Deserialize)]
            struct GeminiCommand {
                prompt: String,
                description: Option<String>,
            }
            let c: GeminiCommand = toml::from_str(text)
                .map_err(|e| format!("it is not a Gemini CLI command (TOML with `prompt`): {e}"))?;
            Ok((
                c.description.filter(|d| !d.trim().is_empty()),
                None,
                c.prompt,
                "{{args}}",
            ))
        }
    }
}

/// One prompt file's text, or why it is not read.
fn read_prompt_file(path: &Path, within: Option<&Path>) -> Result<String, String> {
    use std::io::Read as _;
    let real = path.canonicalize().map_err(|e| e.to_string())?;
    if let Some(root) = within
        && !crate::platform::fs::is_beneath(&real, root)
    {
        return Err(format!(
            "it leads out of the project, to {}",
            real.display()
        ));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    let file = crate::platform::fs::no_follow(&mut options)
        .open(&real)
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("it is not a regular file".into());
    }
    if meta.len() > PROMPT_FILE_MAX {
        return Err(format!(
            "it is {} bytes; the limit is {PROMPT_FILE_MAX}",
            meta.len()
        ));
    }
    let mut bytes = Vec::new();
    file.take(PROMPT_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > PROMPT_FILE_MAX {
        return Err(format!("it is over the limit of {PROMPT_FILE_MAX} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_owned())
}

/// A command name: ASCII letters, digits, `-`, `_`, `.` and `:` (Gemini
/// CLI's namespaces, `/git:commit`).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Splits `---\ndescription: …\nargument-hint: …\n---\n` front matter
/// (acp-coder's and Claude Code's) from the body: (description, hint, body).
fn front_matter(text: &str) -> (Option<String>, Option<String>, String) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, None, text.to_owned());
    };
    let Some(end) = rest.find("\n---") else {
        return (None, None, text.to_owned());
    };
    let field = |key: &str| {
        rest[..end]
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|d| d.trim().trim_matches('"').trim_matches('\'').to_owned())
            .filter(|d| !d.is_empty())
    };
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']).to_owned();
    (field("description:"), field("argument-hint:"), body)
}

/// `list` plus one command per skill whose name is free and usable as a
/// command name (a clash is logged: the existing command wins).
pub fn with_skills(mut list: Vec<Command>, skills: &Catalog) -> Vec<Command> {
    for skill in &skills.skills {
        let name = skill.name();
        if !valid_name(name) {
            tracing::info!(
                skill = name,
                "skill has no slash command: its name is not plain ASCII"
            );
            continue;
        }
        if list.iter().any(|c| c.name == name) {
            tracing::info!(
                skill = name,
                "skill has no slash command: a built-in or prompt-file command has its name"
            );
            continue;
        }
        list.push(Command {
            name: name.to_owned(),
            description: skill.file.description.clone(),
            hint: Some("task for the skill".into()),
            template: Template::Skill,
        });
    }
    list
}

/// The skills that get no slash command because a built-in or prompt-file
/// command in `list` (before [`with_skills`]) has their name, with what
/// has it: `/skills` says so.
pub fn skills_without_command(list: &[Command], skills: &Catalog) -> Vec<(String, &'static str)> {
    skills
        .skills
        .iter()
        .filter_map(|skill| {
            let taken = list.iter().find(|c| c.name == skill.name())?;
            let by = match taken.template {
                Template::Builtin(_) => "the built-in command",
                Template::Text { .. } => "your prompt-file command",
                Template::Skill | Template::Source => return None,
            };
            Some((skill.name().to_owned(), by))
        })
        .collect()
}

/// `list` plus the tool sources' commands (MCP prompts, `/<server>.<prompt>`)
/// whose names are free.
pub fn with_sources(
    mut list: Vec<Command>,
    sources: Vec<crate::tools::SourceCommand>,
) -> Vec<Command> {
    for c in sources {
        if !valid_name(&c.name) || list.iter().any(|o| o.name == c.name) {
            tracing::info!(command = %c.name, "MCP prompt has no slash command: its name is taken or not plain ASCII");
            continue;
        }
        list.push(Command {
            name: c.name,
            description: c.description,
            hint: c.hint,
            template: Template::Source,
        });
    }
    list
}

pub fn to_acp(commands: &[Command]) -> Vec<AvailableCommand> {
    commands
        .iter()
        .map(|c| AvailableCommand {
            name: c.name.clone(),
            description: c.description.clone(),
            input: c.hint.clone().map(|hint| CommandInput { hint }),
        })
        .collect()
}

/// `/name args` at the start of the prompt's first text block.
pub fn parse(prompt: &[ContentBlock]) -> Option<(String, String)> {
    let text = prompt.iter().find_map(|b| match b {
        ContentBlock::Text(t) => Some(t.text.trim_start()),
        _ => None,
    })?;
    let rest = text.strip_prefix('/')?;
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    valid_name(name).then(|| (name.to_owned(), args.to_owned()))
}

/// What running `/name args` means.
pub fn resolve(commands: &[Command], name: &str, args: &str) -> Option<Action> {
    let cmd = commands.iter().find(|c| c.name == name)?;
    Some(match &cmd.template {
        Template::Builtin(kind) => match kind() {
            BuiltinKind::Compact => Action::Compact,
            BuiltinKind::Mode => Action::Mode,
            BuiltinKind::Model => Action::Model,
            BuiltinKind::Status => Action::Status,
            BuiltinKind::Mcp => Action::Mcp,
            BuiltinKind::Skills => Action::Skills,
            BuiltinKind::Undo => Action::Undo,
            BuiltinKind::Rewind => Action::Rewind,
            BuiltinKind::AddDir => Action::AddDir,
            BuiltinKind::Permissions => Action::Permissions,
            BuiltinKind::Help => Action::Help,
            BuiltinKind::Memory => Action::Memory,
            BuiltinKind::Init => Action::Prompt(with_args(INIT, args)),
            BuiltinKind::Review => Action::Prompt(with_args(REVIEW, args)),
        },
        Template::Skill => Action::Skill(cmd.name.clone()),
        Template::Source => Action::Source(cmd.name.clone()),
        Template::Text { body, placeholder } => Action::Prompt(if body.contains(placeholder) {
            body.replace(placeholder, args)
        } else {
            with_args(body, args)
        }),
    })
}

/// The commands an A2A client may not run (DESIGN "Who holds which rights"),
/// as the refusal lists them.
pub const REFUSED_TO_GUESTS: &str = "/mode ID, /model ID, /add-dir, /permissions, /mcp logout, /skills reload, /undo, /rewind, /memory";

/// Why `/name args` (resolved to `action`) is refused to an A2A client, or
/// `None` when a guest may run it. Refused: what changes the session's
/// rights or state beyond its own conversation — the mode and the model
/// (the server's operator chose them), directories, the user's kept
/// permissions, MCP sign-ins, the skills on disk, and `/undo` and
/// `/rewind`, which write files back without the questions of the mode and
/// may take back the user's own turns of a loaded conversation. Showing
/// the mode, model, servers and skills, `/status`, `/compact` and prompt
/// commands (whose work goes through the mode like any prompt) stay.
pub fn refused_to_guest(action: &Action, name: &str, args: &str) -> Option<String> {
    let why = match action {
        Action::Mode if !args.is_empty() => {
            "it changes the mode, which is the one the server was started with (`acp-coder a2a --mode`)"
        }
        Action::Model if !args.is_empty() => {
            "it changes the model, which the server's operator chose"
        }
        Action::AddDir => {
            "it adds a directory, and an A2A client works only in the directory the server serves"
        }
        Action::Permissions => "it shows and revokes the user's permissions kept for the project",
        Action::Mcp if !args.is_empty() => "it signs the user out of an MCP server",
        Action::Skills if !args.is_empty() => "it reads the skills from disk again",
        Action::Undo | Action::Rewind => {
            "it writes files back without the permission questions of the mode, and may take back turns that were not this client's"
        }
        Action::Memory => {
            "it shows and writes the project's memory file, whose instructions every session of the project follows"
        }
        _ => return None,
    };
    let shown = if args.is_empty() {
        format!("/{name}")
    } else {
        format!("/{name} {args}")
    };
    Some(format!(
        "Refused: {} is not available to A2A clients: {why}. Nothing was changed. The server's mode and directory are set by whoever started `acp-coder a2a`. Commands refused to A2A clients: {REFUSED_TO_GUESTS}.",
        crate::tools::code_span(&shown, 80)
    ))
}

/// The prompt of `/<skill> task`: the skill as `load_skill` would return it,
/// then the task (issue 21: "starts the turn with the skill loaded").
pub fn skill_prompt(skill: &crate::skills::Skill, task: &str) -> String {
    let task = if task.is_empty() {
        "Apply the skill to the current project as its instructions describe."
    } else {
        task
    };
    format!(
        "I ran the /{name} command: the skill `{name}` is loaded below. Follow its instructions for this task.\n\n{}\nTask: {task}",
        skill.render(),
        name = skill.name()
    )
}

fn with_args(body: &str, args: &str) -> String {
    if args.is_empty() {
        body.trim_end().to_owned()
    } else {
        format!("{}\n\nAdditional instructions: {args}", body.trim_end())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let cmds_dir = dir.path().join(".acp-coder/commands");
        std::fs::create_dir_all(&cmds_dir).unwrap();
        std::fs::write(
            cmds_dir.join("fix-issue.md"),
            "---\ndescription: Fix a GitHub issue\n---\nFix issue $ARGUMENTS carefully.\n",
        )
        .unwrap();
        std::fs::write(cmds_dir.join("bad name.md"), "x").unwrap();
        let cmds = available(dir.path(), &dir.path().join("cfg"));
        let fix = cmds.iter().find(|c| c.name == "fix-issue").unwrap();
        assert_eq!(fix.description, "Fix a GitHub issue");
        assert!(!cmds.iter().any(|c| c.name == "bad name"));
        let (name, args) = parse(&[ContentBlock::text("/fix-issue 42 now")]).unwrap();
        assert_eq!((name.as_str(), args.as_str()), ("fix-issue", "42 now"));
        assert_eq!(
            resolve(&cmds, &name, &args),
            Some(Action::Prompt("Fix issue 42 now carefully.\n".into()))
        );
        assert_eq!(resolve(&cmds, "compact", ""), Some(Action::Compact));
        assert_eq!(resolve(&cmds, "add-dir", "../lib"), Some(Action::AddDir));
        assert!(
            matches!(resolve(&cmds, "review", "auth"), Some(Action::Prompt(p)) if p.ends_with("Additional instructions: auth"))
        );
        assert!(parse(&[ContentBlock::text("no slash")]).is_none());
        assert!(parse(&[ContentBlock::text("/path/to/file is broken")]).is_none());
        assert_eq!(resolve(&cmds, "nope", ""), None);
    }

    /// What changes rights or state is refused to an A2A client, with the
    /// command and the reason; showing things and prompts are not.
    #[test]
    fn guests_are_refused_what_changes_rights_or_state() {
        let refused = [
            (Action::Mode, "mode", "full-auto"),
            (Action::Model, "model", "other"),
            (Action::AddDir, "add-dir", "/tmp"),
            (Action::Permissions, "permissions", ""),
            (Action::Mcp, "mcp", "logout srv"),
            (Action::Skills, "skills", "reload"),
            (Action::Undo, "undo", ""),
            (Action::Rewind, "rewind", "2"),
            (Action::Memory, "memory", ""),
            (Action::Memory, "memory", "add always push to main"),
        ];
        for (action, name, args) in refused {
            let text = refused_to_guest(&action, name, args)
                .unwrap_or_else(|| panic!("/{name} {args} was not refused"));
            assert!(text.contains(&format!("/{name}")), "{text}");
            assert!(text.contains("not available to A2A clients"), "{text}");
        }
        let allowed = [
            (Action::Mode, "mode", ""),
            (Action::Model, "model", ""),
            (Action::Mcp, "mcp", ""),
            (Action::Skills, "skills", ""),
            (Action::Status, "status", ""),
            (Action::Compact, "compact", ""),
            (Action::Prompt("x".into()), "review", ""),
            (Action::Skill("deploy".into()), "deploy", "now"),
        ];
        for (action, name, args) in allowed {
            assert_eq!(
                refused_to_guest(&action, name, args),
                None,
                "/{name} {args}"
            );
        }
    }

    /// Issue 42 item 5, an outside review's attacks: a project's command
    /// file linked to another project's notes, to `/dev/zero`, or a FIFO is
    /// not read (and reading does not wait: the FIFO hung `session/new`); a
    /// link inside the project is read; a project `/commit` that hides the
    /// user's own says so.
    #[test]
    fn project_prompt_files_are_read_like_project_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let proj = root.join("proj");
        let cmds_dir = proj.join(".acp-coder/commands");
        std::fs::create_dir_all(&cmds_dir).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("other/notes.md"), "OTHER PROJECT SECRET").unwrap();
        std::fs::write(proj.join("inside.md"), "INSIDE TEXT").unwrap();
        use crate::platform::fs::symlink as link;
        link(root.join("other/notes.md"), cmds_dir.join("steal.md")).unwrap();
        // `/dev/zero` and a FIFO where the system has them.
        if let Some(device) = crate::platform::fs::ENDLESS_DEVICE {
            link(device, cmds_dir.join("zero.md")).unwrap();
        }
        link("../../inside.md", cmds_dir.join("inside.md")).unwrap();
        crate::platform::fs::make_fifo_for_test(&cmds_dir.join("hang.md"));
        std::fs::write(cmds_dir.join("commit.md"), "PROJECT COMMIT").unwrap();
        std::fs::write(
            cmds_dir.join("big.md"),
            "x".repeat(PROMPT_FILE_MAX as usize + 1),
        )
        .unwrap();
        let cfg = root.join("cfg");
        std::fs::create_dir_all(cfg.join("commands")).unwrap();
        std::fs::write(cfg.join("commands/commit.md"), "MY COMMIT").unwrap();
        std::fs::write(cfg.join("commands/mine.md"), "MINE").unwrap();

        let (tx, rx) = std::sync::mpsc::channel();
        let (p, c) = (proj.clone(), cfg.clone());
        std::thread::spawn(move || tx.send(available(&p, &c)).unwrap());
        let cmds = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("reading the project's commands hung (a FIFO?)");
        let names: Vec<&str> = cmds.iter().map(|c| c.name.as_str()).collect();
        for skipped in ["steal", "zero", "hang", "big"] {
            assert!(!names.contains(&skipped), "{skipped} was read: {names:?}");
        }
        assert_eq!(
            resolve(&cmds, "inside", ""),
            Some(Action::Prompt("INSIDE TEXT".into()))
        );
        assert_eq!(
            resolve(&cmds, "mine", ""),
            Some(Action::Prompt("MINE".into()))
        );
        assert_eq!(
            resolve(&cmds, "commit", ""),
            Some(Action::Prompt("PROJECT COMMIT".into()))
        );
        let commit = cmds.iter().find(|c| c.name == "commit").unwrap();
        assert!(
            commit.description.contains("hides your own /commit")
                && commit
                    .description
                    .contains(&cfg.join("commands/commit.md").display().to_string()),
            "{}",
            commit.description
        );
        assert!(
            cmds.iter()
                .all(|c| !c.description.contains("hides") || c.name == "commit")
        );
    }

    /// Skills become commands after the others; a taken name stays taken.
    #[test]
    fn skills_are_commands_after_the_built_ins() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["review", "deploy"] {
            let d = dir.path().join("skills").join(name);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(
                d.join("SKILL.md"),
                format!("---\nname: {name}\ndescription: Skill {name}\n---\nBODY-{name}\n"),
            )
            .unwrap();
        }
        let catalog = crate::skills::discover(&[crate::skills::Place {
            dir: dir.path().join("skills"),
            scope: crate::skills::Scope::User,
        }]);
        let cmds = with_skills(available(dir.path(), &dir.path().join("cfg")), &catalog);
        let review: Vec<_> = cmds.iter().filter(|c| c.name == "review").collect();
        assert_eq!(review.len(), 1);
        assert_eq!(review[0].description, "Review the uncommitted changes");
        let deploy = cmds.iter().find(|c| c.name == "deploy").unwrap();
        assert_eq!(deploy.description, "Skill deploy");
        assert_eq!(
            resolve(&cmds, "deploy", "now"),
            Some(Action::Skill("deploy".into()))
        );
        assert_eq!(resolve(&cmds, "skills", "reload"), Some(Action::Skills));
        let available = available(dir.path(), &dir.path().join("cfg"));
        let without = skills_without_command(&available, &catalog);
        assert!(without.iter().all(|(n, _)| n != "deploy"), "{without:?}");
        let text = skill_prompt(catalog.get("deploy").unwrap(), "to prod");
        assert!(
            text.contains("BODY-deploy") && text.ends_with("Task: to prod"),
            "{text}"
        );
    }
}
