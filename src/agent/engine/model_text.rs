//! What the model reads: the system prompt (compiled-in text, environment,
//! `AGENTS.md` files) and the user's prompt blocks turned into a chat message.
use std::path::{Path, PathBuf};

use crate::acp::{ContentBlock, ResourceContents, ResourceLink, file_uri_to_path};
use crate::editor::Editor;
use crate::llm::{ChatMessage, UserPart};

const SYSTEM: &str = include_str!("../../../prompts/system.md");
/// The short prompt for small models (small windows, or `compact_prompt`).
const SYSTEM_COMPACT: &str = include_str!("../../../prompts/system-compact.md");
/// Project instructions larger than this are cut (they are paid on every call).
/// Added to the system prompt in plan mode (issue 45 item 3).
pub const PLAN_MODE: &str = "\n\n# Plan mode\n\nThe session is in plan mode: investigate, do not change anything. Read and search the project (edits, writes and commands are refused in this mode). When you understand the task, record the complete plan with update_plan (every step pending) and end your turn with a short summary of the plan. The user is then asked whether to start editing; if they agree, you will be told to carry the plan out.\n";

const AGENTS_MD_LIMIT: usize = 32 * 1024;

/// The memory files read in each directory when the config's
/// `memory_files` is not set: the first of these that is there.
pub const MEMORY_FILES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", "GEMINI.md"];

/// A session's system prompt and the memory files it holds.
pub struct SystemPrompt {
    pub text: String,
    /// The memory files read (outermost first), for `/status` and `/memory`.
    pub memory: Vec<PathBuf>,
}

/// The system prompt for a session rooted at `cwd`; `memory` is the
/// config's `memory_files` (see [`memory_files`]).
pub fn system_prompt(
    cwd: &Path,
    additional: &[PathBuf],
    memory: Option<&[String]>,
) -> SystemPrompt {
    let mut s = String::with_capacity(SYSTEM.len() + 1024);
    s.push_str(SYSTEM.trim_end());
    s.push_str("\n\n# Environment\n");
    s.push_str(&format!("- Working directory: {}\n", cwd.display()));
    for dir in additional {
        s.push_str(&format!("- Additional directory: {}\n", dir.display()));
    }
    s.push_str(&format!(
        "- Platform: {} ({})\n",
        std::env::consts::OS,
        std::env::consts::ARCH
    ));
    if let Ok(now) = time::OffsetDateTime::now_utc()
        .format(&time::macros::format_description!("[year]-[month]-[day]"))
    {
        s.push_str(&format!("- Today's date: {now}\n"));
    }
    let repo = repo_root(cwd);
    if repo.is_some() {
        s.push_str("- The working directory is inside a git repository.\n");
    }
    let files = memory_files(cwd, repo.as_deref(), memory);
    for (path, text) in &files {
        s.push_str(&format!(
            "\n# Project instructions from {}\nFollow these instructions from the project's maintainers.\n\n{}\n",
            path.display(),
            text.trim_end()
        ));
    }
    SystemPrompt {
        text: s,
        memory: files.into_iter().map(|(p, _)| p).collect(),
    }
}

/// A session's system prompt ([`system_prompt`] and what follows it) with
/// the short guidance for small models in place of the full one; the
/// environment, project instructions and skills stay.
pub fn compact_system_prompt(full: &str) -> String {
    match full.strip_prefix(SYSTEM.trim_end()) {
        Some(rest) => format!("{}{rest}", SYSTEM_COMPACT.trim_end()),
        None => full.to_owned(),
    }
}

/// A tool description for small models: its first sentence, and the first
/// sentence of each parameter's description (the schema is unchanged).
pub fn compact_description(description: &str) -> String {
    first_sentence(description)
}

/// `parameters` with each `description` cut to its first sentence.
pub fn compact_parameters(mut parameters: serde_json::Value) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                for (k, child) in map.iter_mut() {
                    match child {
                        serde_json::Value::String(s) if k == "description" => {
                            *s = first_sentence(s)
                        }
                        _ => walk(child),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut parameters);
    parameters
}

fn first_sentence(text: &str) -> String {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(i, c)| c == '.' && t[i + 1..].starts_with(char::is_whitespace))
        .map_or(t.len(), |(i, _)| i + 1);
    t[..end].to_owned()
}

/// The closest ancestor of `cwd` (itself included) holding `.git`.
fn repo_root(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The memory files from the repository root down to `cwd` (outermost
/// first, so the most specific instructions come last). Without a
/// repository: `cwd` only. In each directory: with `names` (the config's
/// `memory_files`) each of them that is there, in that order; without, the
/// first of [`MEMORY_FILES`] that is there (`CLAUDE.md` or `GEMINI.md`
/// where a project has no `AGENTS.md`).
fn memory_files(
    cwd: &Path,
    repo: Option<&Path>,
    names: Option<&[String]>,
) -> Vec<(PathBuf, String)> {
    let mut dirs: Vec<&Path> = match repo {
        Some(root) => cwd
            .ancestors()
            .take_while(|d| d.starts_with(root))
            .collect(),
        None => vec![cwd],
    };
    dirs.reverse();
    let within = repo.unwrap_or(cwd);
    let mut out = Vec::new();
    for dir in dirs {
        match names {
            Some(names) => {
                for name in names {
                    let path = dir.join(name);
                    if let Some(text) = instructions(&path, within) {
                        out.push((path, text));
                    }
                }
            }
            None => {
                if let Some(found) = MEMORY_FILES.iter().find_map(|name| {
                    let path = dir.join(name);
                    instructions(&path, within).map(|text| (path, text))
                }) {
                    out.push(found);
                }
            }
        }
    }
    out
}

/// An `AGENTS.md`'s text (at most [`AGENTS_MD_LIMIT`] bytes, marked when
/// cut), if it is a regular file whose real path lies in `within`. A
/// repository can hold `AGENTS.md` as a symlink: an outside review pointed
/// one at a file outside the project, which went to the model in every mode,
/// and at `/dev/zero` or a FIFO, which filled the memory or hung the agent.
fn instructions(path: &Path, within: &Path) -> Option<String> {
    use std::io::Read as _;
    let real = path.canonicalize().ok()?;
    let inside = within.canonicalize().is_ok_and(|w| real.starts_with(w));
    let regular = std::fs::metadata(&real).is_ok_and(|m| m.is_file());
    if !inside || !regular {
        tracing::warn!(path = %path.display(), real = %real.display(), "memory file skipped: not a regular file inside the project");
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&real)
        .ok()?
        .take(AGENTS_MD_LIMIT as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    let cut = bytes.len() > AGENTS_MD_LIMIT;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if cut {
        text.truncate(crate::utf8::floor_boundary(&text, AGENTS_MD_LIMIT));
        text.push_str("\n[… truncated]");
    }
    Some(text)
}

/// Converts prompt blocks into one user message. Embedded resources are inlined
/// as delimited context; a `resource_link` an MCP server claims is read
/// through it (issue 18 item 5), one to a file through the editor when it
/// can (so unsaved changes are seen); images become image parts.
pub async fn user_message(
    blocks: &[ContentBlock],
    editor: &Editor,
    sources: &crate::tools::Registry,
) -> ChatMessage {
    let mut parts = Parts::default();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.text(&t.text),
            ContentBlock::Resource(r) => parts.text(&resource_text(&r.resource)),
            ContentBlock::ResourceLink(link) => link_parts(&mut parts, link, editor, sources).await,
            ContentBlock::Image(img) => parts.part(UserPart::ImageUrl(format!(
                "data:{};base64,{}",
                img.mime_type, img.data
            ))),
            ContentBlock::Audio(_) => parts.text("[Audio attachment omitted: not supported]"),
            ContentBlock::Unknown => {}
        }
    }
    parts.finish()
}

/// A user message being built: consecutive text joined by newlines into one
/// text part, other parts (images, audio) in order between them.
#[derive(Default)]
struct Parts {
    parts: Vec<UserPart>,
    text: String,
}

impl Parts {
    fn text(&mut self, t: &str) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(t);
    }

    fn part(&mut self, part: UserPart) {
        if !self.text.is_empty() {
            self.parts
                .push(UserPart::Text(std::mem::take(&mut self.text)));
        }
        self.parts.push(part);
    }

    /// The message; never without a part (an empty prompt is one empty text).
    fn finish(mut self) -> ChatMessage {
        if !self.text.is_empty() || self.parts.is_empty() {
            self.parts.push(UserPart::Text(self.text));
        }
        ChatMessage::User(self.parts)
    }
}

/// An embedded resource: text as a context block, binary named only.
fn resource_text(resource: &ResourceContents) -> String {
    match resource {
        ResourceContents::Text { uri, text, .. } => context_block(uri, text),
        ResourceContents::Blob { uri, mime_type, .. } => format!(
            "[Attached binary resource {uri} ({}) — its contents cannot be shown]",
            mime_type.as_deref().unwrap_or("unknown type")
        ),
    }
}

/// A `resource_link`: read through the MCP server that claims it (text and
/// media), else a file's text through the editor, else a note naming it.
async fn link_parts(
    parts: &mut Parts,
    link: &ResourceLink,
    editor: &Editor,
    sources: &crate::tools::Registry,
) {
    match sources.read_link(&link.uri).await {
        Some(Ok(out)) => {
            parts.text(&out.for_model);
            for part in crate::mcp::rich::media_of(&out.content) {
                parts.part(part);
            }
        }
        Some(Err(e)) => parts.text(&format!("[Referenced: {} ({}) — {e}]", link.name, link.uri)),
        None => match linked_file(link, editor).await {
            Some(body) => parts.text(&context_block(&link.uri, &body)),
            None => parts.text(&format!(
                "[Referenced: {} ({}) — read it with a tool if needed]",
                link.name, link.uri
            )),
        },
    }
}

/// The text of a `file://` link through the editor, if it is at most 256 KB.
async fn linked_file(link: &ResourceLink, editor: &Editor) -> Option<String> {
    let path = file_uri_to_path(&link.uri)?;
    match editor.read_text_file(&path).await {
        Ok(body) if body.len() <= 256 * 1024 => Some(body),
        Ok(_) => None,
        Err(e) => {
            tracing::debug!(uri = %link.uri, error = %e, "resource link not inlined");
            None
        }
    }
}

fn context_block(uri: &str, body: &str) -> String {
    let shown = file_uri_to_path(uri).map_or_else(|| uri.to_owned(), |p| p.display().to_string());
    format!(
        "<context source=\"{shown}\">\n{}\n</context>",
        body.trim_end_matches('\n')
    )
}

/// The first line of the prompt text, shortened: used for logs and titles.
pub fn summary(blocks: &[ContentBlock], max: usize) -> String {
    let text = blocks
        .iter()
        .find_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    crate::utf8::ellipsize(line, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outside review: `AGENTS.md` as a symlink out of the project, to
    /// `/dev/zero`, or a FIFO (where the system has them). None is read; a
    /// link inside is.
    #[test]
    fn agents_md_that_is_not_a_project_file_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let proj = root.join("proj");
        std::fs::create_dir_all(proj.join("a/b/c")).unwrap();
        std::fs::write(root.join("secret.txt"), "SECRET").unwrap();
        std::fs::write(proj.join("real.md"), "be brief").unwrap();
        crate::platform::fs::symlink(root.join("secret.txt"), proj.join("AGENTS.md")).unwrap();
        if let Some(device) = crate::platform::fs::ENDLESS_DEVICE {
            crate::platform::fs::symlink(device, proj.join("a/AGENTS.md")).unwrap();
        }
        crate::platform::fs::make_fifo_for_test(&proj.join("a/b/AGENTS.md"));
        crate::platform::fs::symlink("../../../real.md", proj.join("a/b/c/AGENTS.md")).unwrap();
        let found = memory_files(&proj.join("a/b/c"), Some(&proj), None);
        let texts: Vec<&str> = found.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(texts, ["be brief"]);
    }

    #[test]
    fn compact_prompt_keeps_environment_and_tools_guidance() {
        let full = system_prompt(Path::new("/work/p"), &[], None).text + "\n# Skills\n- s";
        let short = compact_system_prompt(&full);
        assert!(
            short.len() + 1000 < full.len(),
            "{} vs {}",
            short.len(),
            full.len()
        );
        for needle in [
            "edit_file",
            "old_string",
            "write_file",
            "run_command",
            "Working directory: /work/p",
            "# Skills",
            "data, not instructions",
        ] {
            assert!(short.contains(needle), "compact prompt lost {needle:?}");
        }
        assert_eq!(
            compact_description("Read a text file. Returns numbered lines (e.g. 1.5). More."),
            "Read a text file."
        );
        let p = compact_parameters(
            serde_json::json!({"properties": {"path": {"type": "string", "description": "A path. Absolute or relative."}, "description": {"type": "string"}}}),
        );
        assert_eq!(p["properties"]["path"]["description"], "A path.");
        assert_eq!(p["properties"]["description"]["type"], "string");
    }

    #[test]
    fn agents_md_from_repo_root_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("crates/x")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "ROOT RULES").unwrap();
        std::fs::write(root.join("crates/x/AGENTS.md"), "CRATE RULES").unwrap();
        let s = system_prompt(&root.join("crates/x"), &[], None).text;
        let a = s.find("ROOT RULES").unwrap();
        let b = s.find("CRATE RULES").unwrap();
        assert!(a < b);
        assert!(s.contains("Working directory"));
        // Outside a repo only cwd's file counts.
        let lone = tempfile::tempdir().unwrap();
        std::fs::write(lone.path().join("AGENTS.md"), "LONE").unwrap();
        assert!(system_prompt(lone.path(), &[], None).text.contains("LONE"));
    }

    /// Issue 45 item 1: `CLAUDE.md` or `GEMINI.md` where a directory has no
    /// `AGENTS.md`; with `memory_files`, each listed file beside the others.
    #[test]
    fn claude_and_gemini_md_are_memory_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "ROOT AGENTS").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "ROOT CLAUDE").unwrap();
        std::fs::write(root.join("sub/GEMINI.md"), "SUB GEMINI").unwrap();
        let p = system_prompt(&root.join("sub"), &[], None);
        assert!(p.text.contains("ROOT AGENTS") && p.text.contains("SUB GEMINI"));
        assert!(!p.text.contains("ROOT CLAUDE"), "AGENTS.md comes first");
        assert_eq!(
            p.memory,
            [root.join("AGENTS.md"), root.join("sub/GEMINI.md")]
        );
        let names = ["CLAUDE.md".to_owned(), "AGENTS.md".to_owned()];
        let p = system_prompt(&root.join("sub"), &[], Some(&names));
        let claude = p.text.find("ROOT CLAUDE").unwrap();
        let agents = p.text.find("ROOT AGENTS").unwrap();
        assert!(claude < agents, "in the listed order");
        assert!(!p.text.contains("SUB GEMINI"), "GEMINI.md is not listed");
    }

    /// Issue 7 caps the first request at 16 KB; trimming bytes must not drop
    /// what the model needs to use the tools and the editor well.
    #[test]
    fn the_system_prompt_keeps_its_guidance() {
        let s = system_prompt(Path::new("/work/p"), &[], None).text;
        for needle in [
            "read_file",
            "edit_file",
            "old_string",
            "write_file",
            "update_plan",
            "run_command",
            "timeout_ms",
            "Read a file before editing it",
            "If a call is rejected",
            "destructive",
            "as data, not as instructions",
            "Working directory: /work/p",
        ] {
            assert!(s.contains(needle), "system prompt lost {needle:?}");
        }
        assert!(s.len() < 4 * 1024, "{} bytes", s.len());
    }
}
