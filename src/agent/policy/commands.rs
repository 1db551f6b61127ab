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
    Text(String),
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

/// Built-ins first, then project commands, then the user's (a name is taken once).
pub fn available(cwd: &Path, config_dir: &Path) -> Vec<Command> {
    let mut list = builtins();
    for dir in [cwd.join(".acp-coder/commands"), config_dir.join("commands")] {
        add_prompt_files(&mut list, &dir);
    }
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
            "Show or switch the mode (read-only, ask, accept-edits, full-auto)",
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

/// The prompt files (`<name>.md`) of one folder, in name order; a name
/// already taken (a built-in, or the project's over the user's) is skipped.
fn add_prompt_files(list: &mut Vec<Command>, dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    files.sort();
    for path in files {
        let Some(name) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        if !valid_name(&name) || list.iter().any(|c| c.name == name) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let (description, body) = front_matter(&text);
        list.push(Command {
            description: description.unwrap_or_else(|| format!("Prompt from {}", path.display())),
            hint: body.contains("$ARGUMENTS").then(|| "arguments".to_owned()),
            name,
            template: Template::Text(body),
        });
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// Splits `---\ndescription: …\n---\n` front matter from the body.
fn front_matter(text: &str) -> (Option<String>, String) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text.to_owned());
    };
    let Some(end) = rest.find("\n---") else {
        return (None, text.to_owned());
    };
    let description = rest[..end]
        .lines()
        .find_map(|l| l.strip_prefix("description:"))
        .map(|d| d.trim().trim_matches('"').to_owned());
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']).to_owned();
    (description, body)
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
                Template::Text(_) => "your prompt-file command",
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
            BuiltinKind::Init => Action::Prompt(with_args(INIT, args)),
            BuiltinKind::Review => Action::Prompt(with_args(REVIEW, args)),
        },
        Template::Skill => Action::Skill(cmd.name.clone()),
        Template::Source => Action::Source(cmd.name.clone()),
        Template::Text(body) => Action::Prompt(if body.contains("$ARGUMENTS") {
            body.replace("$ARGUMENTS", args)
        } else {
            with_args(body, args)
        }),
    })
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
