//! Project settings (issue 45 item 5): `.acp-coder/config.toml` in the
//! session's directory. Read only once the user trusted the project (asked
//! on `session/new`, kept per project like kept permissions, asked again
//! when the file changes), and then only the safe keys apply: `model`,
//! `default_mode` (never wider than the user's own), `instructions`,
//! `mcp_servers` (each asked before its first start) and `skills` (folders
//! inside the project). Every other key could
//! widen the sandbox, the network, the permissions or send the prompts
//! elsewhere: it is refused and reported, never applied.
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::acp::{
    PermissionOption, PermissionOptionKind, PermissionOutcome, SessionUpdate, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolKind,
};
use crate::config::{McpServerConfig, McpServerSpec, McpTransportSpec, Mode, Settings};
use crate::editor::Editor;

/// Where the file is, relative to the session's directory.
pub const FILE: &str = ".acp-coder/config.toml";
/// The largest file read.
const MAX_BYTES: u64 = 64 * 1024;
/// The longest `instructions` kept (bytes).
const MAX_INSTRUCTIONS: usize = 16 * 1024;
/// Where the trust answers are kept, under the data directory.
const DIR: &str = "trusted-projects";

/// The project's file, read and sorted.
#[derive(Debug, Default)]
pub struct ProjectFile {
    pub path: PathBuf,
    /// SHA-256 of its bytes (hex): a trust answer holds for this content.
    pub hash: String,
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub instructions: Option<String>,
    pub mcp_servers: Vec<McpServerSpec>,
    /// `skills`: skill folders inside the project, relative to its root.
    pub skills: Vec<PathBuf>,
    /// The keys it sets that may apply, for the question.
    pub safe_keys: Vec<String>,
    /// Keys refused, each with why.
    pub refused: Vec<(String, String)>,
}

/// What a session took from its project's file, for the report and `/status`.
#[derive(Debug, Default, Clone)]
pub struct Applied {
    pub instructions: Option<String>,
    /// Skill folders the file added (absolute, beneath the project's root).
    pub skills: Vec<PathBuf>,
    /// One line each: what was applied, refused or not started.
    pub report: Vec<String>,
}

/// Reads `cwd/.acp-coder/config.toml`: `None` when there is none. A file
/// that is a link, too large or not TOML is a report with nothing safe.
pub fn read(cwd: &Path, user: &Settings) -> Option<ProjectFile> {
    let path = cwd.join(FILE);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    let mut file = ProjectFile {
        path: path.clone(),
        ..ProjectFile::default()
    };
    let refuse_all = |file: &mut ProjectFile, why: &str| {
        file.refused.push((FILE.into(), why.into()));
    };
    let inside = std::fs::canonicalize(&path)
        .ok()
        .zip(std::fs::canonicalize(cwd).ok())
        .is_some_and(|(p, root)| p.starts_with(root));
    if !meta.file_type().is_file() || !inside {
        refuse_all(&mut file, "not a regular file inside the project");
        return Some(file);
    }
    if meta.len() > MAX_BYTES {
        refuse_all(&mut file, "larger than 64 KiB");
        return Some(file);
    }
    let Ok(bytes) = std::fs::read(&path) else {
        refuse_all(&mut file, "cannot be read");
        return Some(file);
    };
    file.hash = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let table: toml::Table = match std::str::from_utf8(&bytes)
        .map_err(|e| e.to_string())
        .and_then(|t| toml::from_str(t).map_err(|e| e.to_string()))
    {
        Ok(t) => t,
        Err(e) => {
            refuse_all(&mut file, &format!("not valid TOML: {e}"));
            return Some(file);
        }
    };
    for (key, value) in table {
        match sort(&mut file, &key, value, user) {
            Ok(()) => file.safe_keys.push(key),
            Err(why) => file.refused.push((key, why)),
        }
    }
    Some(file)
}

/// Takes one key, or says why not.
fn sort(
    file: &mut ProjectFile,
    key: &str,
    value: toml::Value,
    user: &Settings,
) -> Result<(), String> {
    let text = |v: toml::Value| match v {
        toml::Value::String(s) if !s.trim().is_empty() => Ok(s),
        _ => Err("must be a non-empty string".to_owned()),
    };
    match key {
        "model" => file.model = Some(text(value)?),
        "default_mode" => {
            let id = text(value)?;
            let mode =
                Mode::parse(&id).ok_or_else(|| format!("{id:?} is not one of {}", Mode::ids()))?;
            if mode == Mode::FullAuto || mode.rank() > user.default_mode.rank() {
                return Err(format!(
                    "{id} is wider than your own default mode ({}); a project may only narrow it",
                    user.default_mode.id()
                ));
            }
            file.mode = Some(mode);
        }
        "instructions" => {
            let mut s = text(value)?;
            if s.len() > MAX_INSTRUCTIONS {
                s.truncate(crate::utf8::floor_boundary(&s, MAX_INSTRUCTIONS));
            }
            file.instructions = Some(s);
        }
        "skills" => {
            let dirs: Vec<String> = value
                .try_into()
                .map_err(|_| "must be a list of folders inside the project".to_owned())?;
            for d in dirs {
                let rel = PathBuf::from(&d);
                let inside = !d.trim().is_empty()
                    && rel
                        .components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)));
                if !inside {
                    return Err(format!(
                        "{d:?} is not a folder inside the project (a relative path without `..`)"
                    ));
                }
                file.skills.push(rel);
            }
        }
        "mcp_servers" => {
            let servers: std::collections::BTreeMap<String, McpServerConfig> = value
                .try_into()
                .map_err(|e: toml::de::Error| e.message().to_owned())?;
            for (name, server) in servers {
                match server.to_spec(&name, &file.path) {
                    Ok(Some(spec)) => file.mcp_servers.push(spec),
                    Ok(None) => {}
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        "hooks" => return Err("hooks run commands: only your own config file may set them".into()),
        "base_url" | "api_key" | "api_key_env" | "require_api_key" | "headers" | "a2a_token" => {
            return Err(
                "it changes where the prompts and keys go: only your own config file may set it"
                    .into(),
            );
        }
        "sandbox_network"
        | "sandbox_unreadable"
        | "full_auto_without_sandbox"
        | "protected_paths" => {
            return Err(
                "it changes the sandbox or what asks: only your own config file may set it".into(),
            );
        }
        _ => {
            return Err(
                "not a project setting (a project may set model, default_mode, instructions, mcp_servers and skills)".into(),
            );
        }
    }
    Ok(())
}

/// The file's `skills` folders that are inside the project once links are
/// resolved (a folder linked out of the project is reported, not read).
fn skill_dirs(file: &ProjectFile, root: &Path, report: &mut Vec<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for rel in &file.skills {
        let dir = root.join(rel);
        match crate::platform::fs::canonicalize(&dir) {
            Ok(real) if crate::platform::fs::is_beneath(&real, root) => {
                report.push(format!("skills in `{}` from {FILE}", rel.display()));
                out.push(real);
            }
            Ok(_) => report.push(format!(
                "skills in `{}` from {FILE} not read: the folder is a link out of the project",
                rel.display()
            )),
            Err(e) => report.push(format!(
                "skills in `{}` from {FILE} not read: {e}",
                rel.display()
            )),
        }
    }
    out
}

/// What was kept for a project: the file's hash it was trusted with, and
/// the MCP servers the user let start.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Trust {
    root: PathBuf,
    hash: String,
    #[serde(default)]
    servers: Vec<String>,
}

fn trust_file(data_dir: &Path, root: &Path) -> PathBuf {
    let digest = Sha256::digest(root.as_os_str().as_encoded_bytes());
    let hash: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    data_dir.join(DIR).join(format!("{hash}.json"))
}

fn read_trust(data_dir: &Path, root: &Path) -> Option<Trust> {
    let text = std::fs::read_to_string(trust_file(data_dir, root)).ok()?;
    serde_json::from_str::<Trust>(&text)
        .ok()
        .filter(|t| t.root == root)
}

fn write_trust(data_dir: &Path, trust: &Trust) {
    let path = trust_file(data_dir, &trust.root);
    let result = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, serde_json::to_vec_pretty(trust).unwrap_or_default()));
    if let Err(e) = result {
        tracing::warn!(path = %path.display(), error = %e, "the project's trust is not kept");
    }
}

/// A server's identity for the kept answer: its name and what it runs.
fn server_key(spec: &McpServerSpec) -> String {
    let what = match &spec.transport {
        McpTransportSpec::Stdio { command, args, .. } => format!("{command} {}", args.join(" ")),
        McpTransportSpec::Http { url, .. } | McpTransportSpec::Sse { url, .. } => url.clone(),
        McpTransportSpec::Acp { server_id } => format!("acp:{server_id}"),
    };
    format!("{}={what}", spec.name)
}

/// The report as the session shows it.
pub fn report_text(report: &[String]) -> String {
    format!("Project settings:\n- {}\n\n", report.join("\n- "))
}

/// What one question got.
enum Answer {
    Yes,
    No,
}

/// `_meta` of a permission request that asks whether to trust the
/// project's own settings or servers: `{"acp-coder": {"trust": true}}`.
pub fn trust_question_meta() -> serde_json::Map<String, serde_json::Value> {
    let mut meta = serde_json::Map::new();
    meta.insert("acp-coder".into(), json!({"trust": true}));
    meta
}

/// Whether a `session/request_permission`'s tool call is a question of trust
/// ([`trust_question_meta`]).
pub fn is_trust_question(tool_call: &serde_json::Value) -> bool {
    tool_call["_meta"]["acp-coder"]["trust"] == json!(true)
}

/// Asks the user with a tool call of its own.
async fn ask(editor: &Editor, id: &str, title: &str, text: String, yes: &str, no: &str) -> Answer {
    editor.update(&SessionUpdate::ToolCall(ToolCall {
        tool_call_id: id.to_owned(),
        title: crate::tools::sanitize_title(title, 200),
        name: None,
        kind: ToolKind::Other,
        status: ToolCallStatus::Pending,
        content: vec![ToolCallContent::text(text)],
        locations: Vec::new(),
        raw_input: Some(json!({"file": FILE})),
        raw_output: None,
        meta: None,
    }));
    let options = vec![
        PermissionOption {
            option_id: "yes".into(),
            name: yes.into(),
            kind: PermissionOptionKind::AllowAlways,
        },
        PermissionOption {
            option_id: "no".into(),
            name: no.into(),
            kind: PermissionOptionKind::RejectOnce,
        },
    ];
    // Marked as a question of trust: `exec --yes` allows what the model asks
    // for, never a project's own settings or servers (src/exec/client.rs).
    let mut update = ToolCallUpdate::new(id);
    update.meta = Some(trust_question_meta());
    let answer = match editor.request_permission(update, options).await {
        Ok(PermissionOutcome::Selected { option_id }) if option_id == "yes" => Answer::Yes,
        _ => Answer::No,
    };
    let done = match answer {
        Answer::Yes => "Allowed.",
        Answer::No => "Not allowed.",
    };
    editor.update(&SessionUpdate::ToolCallUpdate(
        ToolCallUpdate::new(id)
            .status(ToolCallStatus::Completed)
            .content(vec![ToolCallContent::text(done)]),
    ));
    answer
}

/// A session's project settings: applied, or still to be asked about at
/// its first prompt (the editor knows the session only once `session/new`
/// is answered, so the questions wait for it).
#[derive(Debug, Default)]
pub struct State {
    pub root: PathBuf,
    /// An untrusted file: the trust question is still to come.
    pub pending: Option<ProjectFile>,
    /// Servers of a trusted file not allowed yet: asked before they start.
    pub servers_to_ask: Vec<McpServerSpec>,
    pub applied: Applied,
    /// Set once the questions were asked.
    pub settled: bool,
}

/// Whether the user trusted exactly this content of the project's file.
fn trusted(file: &ProjectFile, root: &Path, data_dir: &Path) -> Option<Trust> {
    read_trust(data_dir, root).filter(|t| !file.hash.is_empty() && t.hash == file.hash)
}

/// The report lines of the refused keys.
fn refused_lines(file: &ProjectFile) -> Vec<String> {
    file.refused
        .iter()
        .map(|(k, why)| format!("`{k}` refused: {why}"))
        .collect()
}

/// At `session/new` (the user's sessions only): a trusted file applies now
/// (its model, mode and servers the user let start before go into the
/// session's setup); an untrusted one waits for the first prompt.
pub fn at_new_session(
    file: ProjectFile,
    root: PathBuf,
    settings: &mut Settings,
    mode: &mut Mode,
    model: &mut Option<String>,
) -> State {
    let mut state = State {
        root,
        ..State::default()
    };
    let Some(trust) = trusted(&file, &state.root, &settings.data_dir) else {
        if file.safe_keys.is_empty() {
            state.applied.report = refused_lines(&file);
            state.settled = true;
        } else {
            state.pending = Some(file);
        }
        return state;
    };
    let report = &mut state.applied.report;
    if let Some(m) = &file.model {
        *model = Some(m.clone());
        report.push(format!("`model` = `{m}` from {FILE}"));
    }
    if let Some(m) = file.mode {
        *mode = m;
        report.push(format!("`default_mode` = `{}` from {FILE}", m.id()));
    }
    if let Some(i) = &file.instructions {
        state.applied.instructions = Some(i.clone());
        report.push(format!("`instructions` from {FILE}"));
    }
    let skills = skill_dirs(&file, &state.root, report);
    state.applied.skills = skills;
    for spec in &file.mcp_servers {
        if settings.mcp_servers.iter().any(|s| s.name == spec.name) {
            report.push(format!(
                "MCP server `{}` from {FILE} not started: your own config has a server of that name",
                spec.name
            ));
        } else if trust.servers.contains(&server_key(spec)) {
            report.push(format!("MCP server `{}` from {FILE}", spec.name));
            settings.mcp_servers.push(spec.clone());
        } else {
            state.servers_to_ask.push(spec.clone());
        }
    }
    report.extend(refused_lines(&file));
    state.settled = state.servers_to_ask.is_empty();
    state
}

/// What the first prompt's questions decided, to apply to the session.
#[derive(Debug, Default)]
pub struct Decided {
    pub model: Option<String>,
    pub mode: Option<Mode>,
    pub instructions: Option<String>,
    /// Skill folders to read from now on (absolute, beneath the root).
    pub skills: Vec<PathBuf>,
    pub report: Vec<String>,
}

/// The questions of the first prompt: trust for an untrusted file, then
/// each MCP server not allowed yet. A server the user allows starts with
/// the project's next session (this one's servers are already running).
pub async fn settle(
    state: &mut State,
    editor: &Editor,
    session_id: &str,
    data_dir: &Path,
) -> Decided {
    let mut decided = Decided::default();
    state.settled = true;
    if let Some(file) = state.pending.take() {
        let shown = file.path.display().to_string();
        let refused = refused_lines(&file);
        let mut text = format!("{shown} sets: {}.", file.safe_keys.join(", "));
        if !refused.is_empty() {
            text.push_str(&format!(" Never applied: {}.", refused.join("; ")));
        }
        text.push_str(" Trust it for this project? You are asked again when the file changes.");
        let title = format!(
            "Trust the project settings in {FILE} ({})?",
            file.safe_keys.join(", ")
        );
        let id = format!("{session_id}_project_trust");
        let yes = ask(
            editor,
            &id,
            &title,
            text,
            "Trust this project's settings",
            "Do not apply them",
        )
        .await;
        if let Answer::No = yes {
            decided.report.push(format!(
                "The project's settings in {shown} are not trusted, so none applied ({}).",
                file.safe_keys.join(", ")
            ));
            decided.report.extend(refused);
            return decided;
        }
        write_trust(
            data_dir,
            &Trust {
                root: state.root.clone(),
                hash: file.hash.clone(),
                servers: Vec::new(),
            },
        );
        if let Some(m) = &file.model {
            decided.model = Some(m.clone());
            decided.report.push(format!("`model` = `{m}` from {FILE}"));
        }
        if let Some(m) = file.mode {
            decided.mode = Some(m);
            decided
                .report
                .push(format!("`default_mode` = `{}` from {FILE}", m.id()));
        }
        if let Some(i) = &file.instructions {
            decided.instructions = Some(i.clone());
            decided.report.push(format!("`instructions` from {FILE}"));
        }
        decided.skills = skill_dirs(&file, &state.root, &mut decided.report);
        decided.report.extend(refused);
        state.servers_to_ask = file.mcp_servers;
    }
    let Some(mut trust) = read_trust(data_dir, &state.root) else {
        return decided;
    };
    for spec in std::mem::take(&mut state.servers_to_ask) {
        let key = server_key(&spec);
        let title = format!("Start the MCP server {} from {FILE}?", spec.name);
        let text = format!(
            "The project's settings start the MCP server {key}. It runs with your rights, outside the command sandbox."
        );
        let id = format!("{session_id}_project_mcp_{}", spec.name);
        match ask(
            editor,
            &id,
            &title,
            text,
            "Start it in this project",
            "Do not start it",
        )
        .await
        {
            Answer::Yes => {
                trust.servers.push(key);
                decided.report.push(format!(
                    "MCP server `{}` from {FILE} allowed: it starts with the project's next session",
                    spec.name
                ));
            }
            Answer::No => decided.report.push(format!(
                "MCP server `{}` from {FILE} not started: you said no",
                spec.name
            )),
        }
    }
    write_trust(data_dir, &trust);
    decided
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_safe_keys_are_taken() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".acp-coder")).unwrap();
        std::fs::write(
            dir.path().join(FILE),
            "model = \"m\"\ndefault_mode = \"full-auto\"\ninstructions = \"be brief\"\nbase_url = \"http://evil\"\nsandbox_network = true\n[[hooks.stop]]\ncommand = \"x\"\n",
        )
        .unwrap();
        let f = read(dir.path(), &Settings::default()).unwrap();
        assert_eq!(f.model.as_deref(), Some("m"));
        assert_eq!(f.instructions.as_deref(), Some("be brief"));
        assert_eq!(f.mode, None);
        let refused: Vec<&str> = f.refused.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            refused,
            ["base_url", "default_mode", "hooks", "sandbox_network"]
        );
        assert_eq!(f.safe_keys, ["instructions", "model"]);
    }
}
