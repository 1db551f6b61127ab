//! Shared integration-test support.
//!
//! - [`fake_model`]: a scripted OpenAI-compatible server ([`FakeModel`], [`Reply`], [`chunk`]).
//! - [`schema`]: validation of ACP messages against the official schema.
//! - [`editor`]: a fake editor (ACP client) driving the agent ([`FakeEditor`]).
//! - [`waits`]: waiting for effects without a message (a process gone, a
//!   file written) by polling with a deadline.
//! - here: [`Workspace`] temp dirs, [`init_tracing`], [`assert_json_include`],
//!   [`http_client`].
//!
//! A typical test:
//!
//! ```ignore
//! let model = FakeModel::start().await;
//! model.push(Reply::tool_call("call_1", "read_file", json!({"path": "a.txt"})));
//! model.push(Reply::text("done"));
//! let ws = Workspace::builder().file("a.txt", "hi\n").build();
//! let editor = spawn_agent(&model); // or FakeEditor::connect(reader, writer)
//! editor.initialize(full_capabilities()).await;
//! let sid = editor.new_session(ws.path()).await;
//! editor.push_permission(PermissionDecision::AllowOnce);
//! let result = editor.prompt(&sid, "read a.txt").await;
//! assert_eq!(result["stopReason"], "end_turn");
//! assert_eq!(editor.agent_text(&sid), "done");
//! assert_json_include(&model.chat_requests()[1].messages()[2], &json!({"role": "tool"}));
//! ```
//!
//! Everything the agent sends is schema-checked; any protocol error fails
//! the test (at the next wait, or when the editor is dropped).
pub mod editor;
pub mod fake_model;
pub mod remote;
pub mod schema;
#[cfg(test)]
mod selftest;
pub mod waits;

pub use editor::{
    FakeEditor, PendingRequest, PermissionDecision, RpcError, SpawnOptions, agent_command,
    full_capabilities, no_capabilities,
};
pub use fake_model::{FAKE_MODEL_ID, FakeModel, Flood, RecordedRequest, Reply, chunk};
pub use schema::RpcId;
pub use waits::{eventually, process_alive, wait_for_text_in, wait_gone, wait_pid_file};

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A generous default for test waits.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// `s` cut to at most `max` bytes (at a char boundary), saying how long it
/// was: for long texts in failure messages.
/// The permission bits of `path` (Unix); `None` on Windows, whose files
/// keep the ACL of the folder they are made in. `assert_private` style
/// checks use `is_none_or`.
pub fn mode_of(path: &Path) -> Option<u32> {
    acp_coder::platform::fs::mode(&std::fs::metadata(path).unwrap()).map(|m| m & 0o777)
}

/// Sets `path`'s permission bits where the system has them (Unix).
pub fn set_mode(path: &Path, mode: u32) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
}

pub fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

/// Spawns the agent binary against a fake model with a clean temp HOME:
/// `OPENAI_BASE_URL`, `OPENAI_API_KEY=test-key`, `ACP_CODER_MODEL=fake-model`.
pub fn spawn_agent(model: &FakeModel) -> FakeEditor {
    FakeEditor::spawn(&[], model.agent_env())
}

/// Installs the ring rustls provider once. reqwest (built with
/// `rustls-no-provider`) panics when building a client without one, even for
/// plain http.
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// A reqwest client for loopback tests (10 s timeout).
pub fn http_client() -> reqwest::Client {
    install_crypto_provider();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("reqwest client")
}

/// `GET url` with [`http_client`] → the body as JSON; fails the test when
/// there is none.
pub async fn get_json(url: &str) -> Value {
    let resp = http_client()
        .get(url)
        .send()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: {e}"));
    resp.json()
        .await
        .unwrap_or_else(|e| panic!("GET {url}: no JSON body: {e}"))
}

/// Tracing output for in-process tests, captured by the test harness.
/// Filter from `RUST_LOG` (default `warn`). Safe to call many times.
pub fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_test_writer()
        .try_init();
}

// ---------------------------------------------------------------- workspace

/// A temporary project directory. Its path is canonical.
pub struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

/// Builds a [`Workspace`]: `Workspace::builder().file("src/main.rs", "…").git().build()`.
#[derive(Default)]
pub struct WorkspaceBuilder {
    files: Vec<(PathBuf, Vec<u8>)>,
    dirs: Vec<PathBuf>,
    git: bool,
    outside_temp: bool,
}

impl WorkspaceBuilder {
    /// Adds a file (parent directories are created).
    pub fn file(mut self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> Self {
        self.files
            .push((rel.as_ref().to_path_buf(), content.as_ref().to_vec()));
        self
    }

    /// Adds an empty directory.
    pub fn dir(mut self, rel: impl AsRef<Path>) -> Self {
        self.dirs.push(rel.as_ref().to_path_buf());
        self
    }

    /// Builds it under the target directory instead of the system temp
    /// directory, which sandboxed commands may write by design: for tests of
    /// what a command may do to a directory next to the project.
    pub fn outside_temp(mut self) -> Self {
        self.outside_temp = true;
        self
    }

    /// Makes it a git repository with everything committed.
    pub fn git(mut self) -> Self {
        self.git = true;
        self
    }

    pub fn build(self) -> Workspace {
        let mut builder = tempfile::Builder::new();
        builder.prefix("acp-coder-ws-");
        let dir = if self.outside_temp {
            builder.tempdir_in(outside_temp_base())
        } else {
            builder.tempdir()
        }
        .expect("temp workspace");
        let root = dunce::canonicalize(dir.path()).expect("canonical workspace path");
        for d in &self.dirs {
            std::fs::create_dir_all(root.join(d)).expect("create dir");
        }
        for (rel, content) in &self.files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("create parent dir");
            }
            std::fs::write(&path, content).expect("write workspace file");
        }
        if self.git {
            let git = |args: &[&str]| {
                let out = std::process::Command::new("git")
                    .args(args)
                    .current_dir(&root)
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("HOME", &root)
                    .output()
                    .expect("run git");
                assert!(
                    out.status.success(),
                    "git {args:?} failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            git(&["init", "-q", "-b", "main"]);
            git(&["config", "user.email", "test@example.invalid"]);
            git(&["config", "user.name", "Test"]);
            git(&["add", "-A"]);
            git(&["commit", "-q", "--allow-empty", "-m", "initial"]);
        }
        Workspace { _dir: dir, root }
    }
}

/// A directory that is neither the system temp directory nor under it
/// (sandboxed commands may write there by design), for things that must be
/// "outside" to a sandboxed command: the target directory's scratch space
/// when the checkout is not itself under the temp directory (a clone in
/// `/tmp`), else `/var/tmp`, else `$HOME`.
pub fn outside_temp_base() -> PathBuf {
    let temps: Vec<PathBuf> = [std::env::temp_dir(), PathBuf::from("/tmp")]
        .iter()
        .filter_map(|t| dunce::canonicalize(t).ok())
        .collect();
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp/acp-coder-tests")),
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/acp-coder-tests")),
    ];
    for dir in candidates.into_iter().flatten() {
        if std::fs::create_dir_all(&dir).is_err() {
            continue;
        }
        let Ok(canon) = dunce::canonicalize(dir) else {
            continue;
        };
        if !temps.iter().any(|t| canon.starts_with(t)) {
            return canon;
        }
    }
    panic!("no writable directory outside the temp directory for the sandbox tests");
}

/// Whether the agent's full command sandbox (Landlock and the mount
/// namespace) works on this machine: commands that run without asking are
/// then confined by the kernel instead of judged by their command line.
pub fn full_sandbox() -> bool {
    std::process::Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .args(["sandbox-exec", "--probe"])
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Workspace {
    /// An empty workspace.
    pub fn new() -> Workspace {
        Self::builder().build()
    }

    pub fn builder() -> WorkspaceBuilder {
        WorkspaceBuilder::default()
    }

    /// The canonical absolute root.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `root/rel`, with the system's separator (`src/lib.rs` is
    /// `src\lib.rs` on Windows, as the agent shows it).
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        let mut path = self.root.clone();
        path.extend(rel.as_ref().components());
        path
    }

    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dir");
        }
        std::fs::write(path, content).expect("write workspace file");
    }

    #[track_caller]
    pub fn read(&self, rel: impl AsRef<Path>) -> String {
        let path = self.join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.join(rel).exists()
    }
}

// --------------------------------------------------------------------- json

/// The config option `id` of a result or update carrying `configOptions`
/// (ACP §8); fails the test when there is none.
#[track_caller]
pub fn config_option(carrier: &Value, id: &str) -> Value {
    carrier["configOptions"]
        .as_array()
        .and_then(|options| options.iter().find(|o| o["id"] == id))
        .cloned()
        .unwrap_or_else(|| panic!("no config option {id:?} in {carrier}"))
}

/// Checks that `actual` includes `expected`: every key of an expected object
/// must be present and match recursively (extra keys in `actual` are fine);
/// arrays must have the same length and match element-wise; other values
/// must be equal. The error names the JSON pointer of the first mismatch.
pub fn json_includes(actual: &Value, expected: &Value) -> Result<(), String> {
    fn walk(actual: &Value, expected: &Value, path: &mut String) -> Result<(), String> {
        let here = |p: &str| {
            if p.is_empty() {
                "/".to_owned()
            } else {
                p.to_owned()
            }
        };
        match (actual, expected) {
            (Value::Object(a), Value::Object(e)) => {
                for (k, ev) in e {
                    let len = path.len();
                    path.push('/');
                    path.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    match a.get(k) {
                        Some(av) => walk(av, ev, path)?,
                        None => return Err(format!("at {path}: missing key (expected {ev})")),
                    }
                    path.truncate(len);
                }
                Ok(())
            }
            (Value::Array(a), Value::Array(e)) => {
                if a.len() != e.len() {
                    return Err(format!(
                        "at {}: array has {} elements, expected {}",
                        here(path),
                        a.len(),
                        e.len()
                    ));
                }
                for (i, (av, ev)) in a.iter().zip(e).enumerate() {
                    let len = path.len();
                    path.push_str(&format!("/{i}"));
                    walk(av, ev, path)?;
                    path.truncate(len);
                }
                Ok(())
            }
            (a, e) if a == e => Ok(()),
            (a, e) => Err(format!("at {}: found {a}, expected {e}", here(path))),
        }
    }
    walk(actual, expected, &mut String::new())
}

/// `actual` reduced to the keys present in `expected` (for readable diffs).
fn project(actual: &Value, expected: &Value) -> Value {
    match (actual, expected) {
        (Value::Object(a), Value::Object(e)) => Value::Object(
            e.iter()
                .filter_map(|(k, ev)| a.get(k).map(|av| (k.clone(), project(av, ev))))
                .collect(),
        ),
        (Value::Array(a), Value::Array(e)) if a.len() == e.len() => {
            Value::Array(a.iter().zip(e).map(|(av, ev)| project(av, ev)).collect())
        }
        (a, _) => a.clone(),
    }
}

/// Asserts [`json_includes`], printing a diff of the relevant part.
#[track_caller]
pub fn assert_json_include(actual: &Value, expected: &Value) {
    if let Err(e) = json_includes(actual, expected) {
        let projected = project(actual, expected);
        panic!(
            "JSON does not include the expected value: {e}\n{}\nfull actual value:\n{}",
            pretty_assertions::Comparison::new(&PrettyJson(&projected), &PrettyJson(expected)),
            serde_json::to_string_pretty(actual).unwrap_or_default()
        );
    }
}

/// Debug-prints JSON pretty, for pretty_assertions diffs.
struct PrettyJson<'a>(&'a Value);

impl std::fmt::Debug for PrettyJson<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&serde_json::to_string_pretty(self.0).unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_include_semantics() {
        let actual = json!({"a": 1, "b": {"c": [1, {"d": 2, "e": 3}], "f": "x"}, "g": null});
        assert!(json_includes(&actual, &json!({"b": {"c": [1, {"d": 2}]}})).is_ok());
        assert!(json_includes(&actual, &json!({})).is_ok());
        let err = json_includes(&actual, &json!({"b": {"c": [1, {"d": 3}]}})).unwrap_err();
        assert!(err.starts_with("at /b/c/1/d:"), "{err}");
        let err = json_includes(&actual, &json!({"b": {"c": [1]}})).unwrap_err();
        assert!(err.contains("/b/c"), "{err}");
        let err = json_includes(&actual, &json!({"z": null})).unwrap_err();
        assert!(err.contains("missing"), "{err}");
        assert_json_include(&actual, &json!({"g": null, "b": {"f": "x"}}));
        let caught = std::panic::catch_unwind(|| {
            assert_json_include(&actual, &json!({"b": {"f": "y"}}));
        });
        assert!(caught.is_err());
    }

    #[test]
    fn workspace_builder() {
        let ws = Workspace::builder()
            .file("src/lib.rs", "pub fn x() {}\n")
            .dir("empty")
            .git()
            .build();
        assert!(ws.path().is_absolute());
        assert_eq!(ws.read("src/lib.rs"), "pub fn x() {}\n");
        assert!(ws.join("empty").is_dir());
        assert!(ws.join(".git").is_dir());
        ws.write("a/b.txt", "hi");
        assert!(ws.exists("a/b.txt"));
    }
}
