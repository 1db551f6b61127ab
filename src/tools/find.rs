//! `grep`, `glob` and `list_directory`: the model-facing wrappers of the
//! in-process search engine (`tools::search`), run off the async threads and
//! stopped promptly when the turn is cancelled.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use serde_json::{Value, json};

use super::paths::display;
use super::search::{self, GlobOptions, GrepOptions, SearchError, SearchLimits, SearchOutput};
use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, parse_args,
    resolve_arg,
};
use crate::acp::{ToolCallContent, ToolCallLocation, ToolKind};

/// Editor-side preview of results is capped; the model gets the full (capped) text.
const PREVIEW_CHARS: usize = 4000;

fn root_of(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    match path.filter(|p| !p.trim().is_empty()) {
        Some(p) => resolve_arg(ctx, p),
        None => Ok(super::paths::canonicalize_lenient(&ctx.cwd)),
    }
}

/// Runs a blocking search, raising its cancel flag when the turn is cancelled.
async fn run_search<F>(f: F) -> Result<SearchOutput, ToolError>
where
    F: FnOnce(&AtomicBool) -> Result<SearchOutput, SearchError> + Send + 'static,
{
    let flag = Arc::new(AtomicBool::new(false));
    let worker_flag = flag.clone();
    let task = tokio::task::spawn_blocking(move || f(&worker_flag));
    // Dropped on cancel (agent/engine/tool_call.rs races the token): the guard raises the flag so the walk stops.
    struct Raise(Arc<AtomicBool>);
    impl Drop for Raise {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let _raise = Raise(flag);
    match task.await {
        Ok(Ok(out)) => Ok(out),
        Ok(Err(SearchError::Cancelled)) => Err(ToolError::Cancelled),
        Ok(Err(e)) => Err(ToolError::Failed(e.to_string())),
        Err(e) => Err(ToolError::Failed(format!(
            "the search failed unexpectedly: {e}"
        ))),
    }
}

fn output(out: SearchOutput) -> ToolOutput {
    let preview: String = out.text.chars().take(PREVIEW_CHARS).collect();
    let preview = if preview.len() < out.text.len() {
        preview + "\n…"
    } else {
        preview
    };
    let locations = out
        .first_lines
        .iter()
        .map(|(p, l)| ToolCallLocation {
            path: p.display().to_string(),
            line: Some(*l),
        })
        .collect::<Vec<_>>();
    ToolOutput {
        raw_output: Some(json!({"matches": out.matches, "truncated": out.truncated})),
        content: vec![ToolCallContent::text(format!("```\n{preview}\n```"))],
        locations: (!locations.is_empty()).then_some(locations),
        for_model: out.text,
    }
}

/// grep's output, led by how many lines matched in how many files: a
/// model asked "how many" reads the number instead of counting lines.
fn grep_output(out: SearchOutput) -> ToolOutput {
    let files = out.files.len();
    let header = (out.matches > 0).then(|| {
        let lines = if out.matches == 1 { "line" } else { "lines" };
        let in_files = if files == 1 {
            "1 file".to_owned()
        } else if out.truncated {
            format!("{files}+ files")
        } else {
            format!("{files} files")
        };
        format!("{} matching {lines} in {in_files}:\n", out.matches)
    });
    let mut shown = output(out);
    if let Some(header) = header {
        shown.for_model = format!("{header}{}", shown.for_model);
    }
    shown
}

fn list_output(out: SearchOutput) -> ToolOutput {
    ToolOutput {
        for_model: out.text,
        raw_output: Some(json!({"entries": out.matches, "truncated": out.truncated})),
        ..Default::default()
    }
}

/// A search to run on a blocking thread, given the cancel flag.
type Search = Box<dyn FnOnce(&AtomicBool) -> Result<SearchOutput, SearchError> + Send>;

/// The action of all three tools: one search, and how its result is shown.
struct RunSearch {
    search: Search,
    shape: fn(SearchOutput) -> ToolOutput,
}

#[async_trait::async_trait]
impl Action for RunSearch {
    async fn run(self: Box<Self>, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let shape = self.shape;
        run_search(self.search).await.map(shape)
    }
}

/// A read-only search of `root` (the permission policy sees `root`).
fn invocation(
    title: String,
    root: PathBuf,
    search: Search,
    shape: fn(SearchOutput) -> ToolOutput,
) -> Invocation {
    Invocation {
        title,
        kind: ToolKind::Search,
        locations: Vec::new(),
        content: Vec::new(),
        access: Access::Read(vec![root]),
        action: Box::new(RunSearch { search, shape }),
    }
}

/// The title before the arguments are checked: `verb` and the raw `key` argument.
fn early_title(args: &Value, key: &str, verb: &str, missing: &str) -> String {
    match args.get(key).and_then(Value::as_str) {
        Some(p) => format!("{verb} {}", super::sanitize_title(p, 80)),
        None => missing.into(),
    }
}

/// `verb pattern`, then ` in dir` when the search does not start at the cwd.
fn search_title(verb: &str, pattern: &str, root: &Path, cwd: &Path) -> String {
    let mut title = format!("{verb} {}", super::sanitize_title(pattern, 80));
    let shown = display(root, cwd);
    if shown != "." {
        title.push_str(&format!(" in {shown}"));
    }
    title
}

/// An optional text argument given as `""` (or spaces) is not given:
/// small models fill every parameter of the schema, the optional ones with
/// empty strings.
fn blank_is_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<String>::deserialize(d)?;
    Ok(v.filter(|s| !s.trim().is_empty()))
}

pub struct Grep;

#[derive(Deserialize)]
struct GrepArgs {
    pattern: String,
    #[serde(default, deserialize_with = "blank_is_none")]
    path: Option<String>,
    #[serde(default, deserialize_with = "blank_is_none")]
    glob: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    context: Option<u32>,
}

#[async_trait::async_trait]
impl Tool for Grep {
    fn name(&self) -> &str {
        "grep"
    }
    fn description(&self) -> &str {
        "Search file contents with a regular expression (ripgrep syntax). Returns `path:line:text` \
         lines, sorted, paths relative to the working directory. Respects .gitignore; skips hidden \
         and binary files."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "pattern": {"type": "string", "description": "Regular expression to search for."},
                "path": {"type": "string", "description": "File or directory to search. Default: the working directory."},
                "glob": {"type": "string", "description": "Only files whose path matches this glob (e.g. `*.rs`, `src/**/*.ts`)."},
                "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
                "context": {"type": "integer", "minimum": 0, "maximum": 10, "description": "Lines of context around each match. Default 0."}
            }),
            &["pattern"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn title(&self, args: &Value) -> String {
        early_title(args, "pattern", "grep", "grep")
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let a: GrepArgs = parse_args(args)?;
        let root = root_of(ctx, a.path.as_deref())?;
        let mut title = search_title("grep", &a.pattern, &root, &ctx.cwd);
        if let Some(g) = &a.glob {
            title.push_str(&format!(" ({})", super::sanitize_title(g, 40)));
        }
        let opts = GrepOptions {
            pattern: a.pattern,
            root: root.clone(),
            display_base: ctx.cwd.clone(),
            glob: a.glob,
            case_insensitive: a.case_insensitive,
            context: a.context.unwrap_or(0).min(10) as usize,
            limits: SearchLimits::default(),
        };
        let search: Search = Box::new(move |c| search::grep(&opts, c));
        Ok(invocation(title, root, search, grep_output))
    }
}

pub struct Glob;

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
    #[serde(default, deserialize_with = "blank_is_none")]
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for Glob {
    fn name(&self) -> &str {
        "glob"
    }
    fn description(&self) -> &str {
        "Find files by path pattern (e.g. `**/*.rs`, `src/**/test_*.py`; a pattern \
         without `/` matches file names at any depth). Returns sorted paths relative to the working \
         directory. Respects .gitignore and skips hidden files."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "pattern": {"type": "string", "description": "Glob pattern."},
                "path": {"type": "string", "description": "Directory to search. Default: the working directory."}
            }),
            &["pattern"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn title(&self, args: &Value) -> String {
        early_title(args, "pattern", "Find", "Find files")
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let a: GlobArgs = parse_args(args)?;
        let root = root_of(ctx, a.path.as_deref())?;
        let title = search_title("Find", &a.pattern, &root, &ctx.cwd);
        let opts = GlobOptions {
            pattern: a.pattern,
            root: root.clone(),
            display_base: ctx.cwd.clone(),
            limits: SearchLimits::default(),
        };
        let search: Search = Box::new(move |c| search::glob(&opts, c));
        Ok(invocation(title, root, search, output))
    }
}

pub struct ListDirectory;

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default, deserialize_with = "blank_is_none")]
    path: Option<String>,
}

#[async_trait::async_trait]
impl Tool for ListDirectory {
    fn name(&self) -> &str {
        "list_directory"
    }
    fn description(&self) -> &str {
        "List one directory: subdirectories first (ending in /), then files with sizes. Hidden and \
         .gitignored entries are skipped (and counted)."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "path": {"type": "string", "description": "Directory to list. Default: the working directory."}
            }),
            &[],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }
    fn title(&self, args: &Value) -> String {
        early_title(args, "path", "List", "List .")
    }
    async fn prepare(&self, args: Value, ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let a: ListArgs = parse_args(args)?;
        let dir = root_of(ctx, a.path.as_deref())?;
        let title = format!("List {}", display(&dir, &ctx.cwd));
        let (listed, base) = (dir.clone(), ctx.cwd.clone());
        let search: Search =
            Box::new(move |_| search::list_directory(&listed, &base, &SearchLimits::default()));
        let mut inv = invocation(title, dir.clone(), search, list_output);
        inv.locations = vec![ToolCallLocation {
            path: dir.display().to_string(),
            line: None,
        }];
        Ok(inv)
    }
}
