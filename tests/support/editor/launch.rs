//! Launching the agent (or connecting to one) and configuring how the
//! editor answers it.
use super::*;

/// How to launch the agent binary.
#[derive(Debug, Clone, Default)]
pub struct SpawnOptions {
    pub args: Vec<String>,
    pub envs: Vec<(String, String)>,
    /// HOME for the agent; a fresh temp dir (owned by the editor) if None.
    pub home: Option<PathBuf>,
    /// Working directory of the agent process.
    pub cwd: Option<PathBuf>,
    /// The binary to start instead of the one cargo built (a link to it).
    pub program: Option<PathBuf>,
}

/// A `Command` for the real `acp-coder` binary with a clean environment:
/// PATH, HOME = `home`, XDG_{CONFIG,DATA,STATE,CACHE}_HOME under it,
/// RUST_BACKTRACE=1, RUST_LOG/TMPDIR if set, then `opts.envs`; stdio piped.
pub fn agent_command(opts: &SpawnOptions, home: &Path) -> Command {
    let program = opts
        .program
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_acp-coder")));
    let mut cmd = Command::new(program);
    cmd.args(&opts.args)
        .env_clear()
        .env(
            "PATH",
            std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        )
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("RUST_BACKTRACE", "1")
        // No probing of the machine's own local model servers.
        .env("ACP_CODER_LOCAL_SERVERS", "");
    // ACP_CODER_SHELL: the shell the Windows run under Wine picks (cmd.exe).
    for var in ["RUST_LOG", "TMPDIR", "ACP_CODER_SHELL"] {
        if let Some(v) = std::env::var_os(var) {
            cmd.env(var, v);
        }
    }
    for (k, v) in &opts.envs {
        cmd.env(k, v);
    }
    if let Some(cwd) = &opts.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

impl FakeEditor {
    /// Spawns the real `acp-coder` binary with piped stdio, a clean
    /// environment (PATH, a temp HOME and XDG dirs, RUST_BACKTRACE, RUST_LOG
    /// if set) plus `envs`, and `args`.
    pub fn spawn<I, K, V>(args: &[&str], envs: I) -> FakeEditor
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        Self::spawn_with(SpawnOptions {
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            envs: envs
                .into_iter()
                .map(|(k, v)| {
                    (
                        k.as_ref().to_string_lossy().into_owned(),
                        v.as_ref().to_string_lossy().into_owned(),
                    )
                })
                .collect(),
            ..SpawnOptions::default()
        })
    }

    /// Spawns the agent binary with full control over its launch.
    pub fn spawn_with(opts: SpawnOptions) -> FakeEditor {
        let (home_dir, home) = match opts.home.clone() {
            Some(h) => (None, h),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("acp-coder-home-")
                    .tempdir()
                    .expect("temp HOME");
                let path = dir.path().to_path_buf();
                (Some(dir), path)
            }
        };
        let mut cmd = agent_command(&opts, &home);
        let mut child = spawn_retrying(&mut cmd).expect("spawn the acp-coder binary");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut editor = Self::connect(stdout, stdin);
        let shared = editor.shared.clone();
        let echo = std::env::var_os("ACP_TEST_ECHO_STDERR").is_some();
        editor.tasks.push(tokio::spawn(async move {
            let mut stderr = stderr;
            let mut buf = vec![0u8; 8192];
            loop {
                match stderr.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if echo {
                            eprint!("[agent stderr] {}", String::from_utf8_lossy(&buf[..n]));
                        }
                        shared
                            .stderr
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .extend_from_slice(&buf[..n]);
                        shared.bump();
                    }
                }
            }
        }));
        editor.child = Some(child);
        editor.home_dir = home_dir;
        editor.home = Some(home);
        editor
    }

    /// Drives an agent over any reader (the agent's output) and writer (its
    /// input), e.g. the halves of `tokio::io::duplex`.
    pub fn connect<R, W>(reader: R, writer: W) -> FakeEditor
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new()),
            version: watch::channel(0).0,
            writer: tokio::sync::Mutex::new(Some(Box::new(writer))),
            next_id: AtomicI64::new(1),
            stderr: Mutex::new(Vec::new()),
        });
        let reader_task = tokio::spawn(reader_loop(shared.clone(), reader));
        FakeEditor {
            shared,
            child: None,
            home_dir: None,
            home: None,
            tasks: vec![reader_task],
        }
    }

    // ----------------------------------------------------------------- config

    /// The agent's HOME (spawned agents only).
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// Per-wait timeout (default [`DEFAULT_TIMEOUT`]).
    pub fn set_timeout(&self, timeout: Duration) {
        self.shared.lock().timeout = timeout;
    }

    /// Opens an (unsaved) buffer: `fs/read_text_file` serves this content
    /// instead of the file on disk; writes update it.
    pub fn open_buffer(&self, path: impl AsRef<Path>, content: &str) {
        self.shared
            .lock()
            .buffers
            .insert(normalize(path.as_ref()), content.to_owned());
    }

    /// Current content of an open buffer.
    pub fn buffer(&self, path: impl AsRef<Path>) -> Option<String> {
        self.shared
            .lock()
            .buffers
            .get(&normalize(path.as_ref()))
            .cloned()
    }

    /// Whether `fs/write_text_file` also writes to disk (default true).
    pub fn set_write_to_disk(&self, on: bool) {
        self.shared.lock().write_to_disk = on;
    }

    /// Runs `hook` with the path before each `fs/write_text_file` is
    /// served (what another process does at that very moment).
    pub fn set_before_write(&self, hook: impl Fn(&std::path::Path) + Send + Sync + 'static) {
        self.shared.lock().before_write = Some(std::sync::Arc::new(hook));
    }

    /// Leaves every agent request of `method` unanswered, as a broken editor
    /// would, until the agent withdraws it (`$/cancel_request`; then it is
    /// answered `-32800`).
    pub fn ignore_requests(&self, method: &str) {
        self.shared.lock().ignored.insert(method.to_owned());
    }

    /// Requests held by [`Self::ignore_requests`] and not withdrawn.
    pub fn ignored_requests(&self) -> usize {
        self.shared.lock().held_ignored.len()
    }

    /// Queues the answer to the next permission request.
    pub fn push_permission(&self, decision: PermissionDecision) {
        self.shared.lock().permission_queue.push_back(decision);
    }

    /// Answer for permission requests when the queue is empty. With `None`
    /// (the default) an unscripted permission request is a test error (and
    /// is answered `cancelled`).
    pub fn set_default_permission(&self, decision: Option<PermissionDecision>) {
        self.shared.lock().default_permission = decision;
    }

    /// Answers every agent request of `method` (e.g. `fs/write_text_file`,
    /// `terminal/create`) with `error` instead of serving it; `None` serves
    /// it again. Nothing happens on disk for a failed request.
    pub fn fail_requests(&self, method: &str, error: Option<RpcError>) {
        let mut st = self.shared.lock();
        match error {
            Some(e) => st.failing.insert(method.to_owned(), e),
            None => st.failing.remove(method),
        };
    }
}

/// Spawns `cmd`, trying again when Wine answers process creation with its
/// transient `ERROR_INTERNAL_ERROR` (1359): about one spawn in a few hundred
/// in the Windows run under Wine (CI's `scripts/wine-test.sh`), never the
/// binary's fault. No other error, and no other system, is retried.
fn spawn_retrying(cmd: &mut Command) -> std::io::Result<tokio::process::Child> {
    const WINE_INTERNAL_ERROR: i32 = 1359;
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(WINE_INTERNAL_ERROR) && tries < 5 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50 * tries));
            }
            spawned => return spawned,
        }
    }
}
