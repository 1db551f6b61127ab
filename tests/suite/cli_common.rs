//! Running the `acp-coder` binary as a command-line tool (`exec`, `doctor`,
//! `login`, `--help`): clean environment and temp HOME like the fake editor's
//! agents, stdin from a string or `/dev/null`, and no controlling terminal
//! (its own session), so nothing can prompt.

use crate::support::{FakeModel, SpawnOptions, agent_command};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// The outcome of one run.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "exit code\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Fails the test, showing stdout, unless stdout holds `needle`.
    #[track_caller]
    pub fn assert_stdout_has(&self, needle: &str) -> &Self {
        assert!(
            self.stdout.contains(needle),
            "{needle:?} not in:\n{}",
            self.stdout
        );
        self
    }

    /// Fails the test, showing stderr, unless stderr holds `needle`.
    #[track_caller]
    pub fn assert_stderr_has(&self, needle: &str) -> &Self {
        assert!(
            self.stderr.contains(needle),
            "{needle:?} not in:\n{}",
            self.stderr
        );
        self
    }

    /// stdout and stderr together, for "never printed" checks.
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

/// A clean environment to run the binary in.
pub struct CliEnv {
    home: tempfile::TempDir,
    pub envs: Vec<(String, String)>,
    pub cwd: Option<PathBuf>,
}

impl CliEnv {
    pub fn new() -> Self {
        Self {
            home: tempfile::Builder::new()
                .prefix("acp-coder-cli-home-")
                .tempdir()
                .expect("temp HOME"),
            envs: Vec::new(),
            cwd: None,
        }
    }

    /// Pointed at `model` (base URL, key `test-key`, model id).
    pub fn with_model(model: &FakeModel) -> Self {
        let mut env = Self::new();
        env.envs = model.agent_env();
        env
    }

    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.envs.retain(|(k, _)| k != key);
        self.envs.push((key.into(), value.into()));
        self
    }

    pub fn without_env(mut self, key: &str) -> Self {
        self.envs.retain(|(k, _)| k != key);
        self
    }

    pub fn cwd(mut self, dir: &Path) -> Self {
        self.cwd = Some(dir.to_owned());
        self
    }

    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `$XDG_CONFIG_HOME/acp-coder/config.toml` of this environment.
    pub fn default_config(&self) -> PathBuf {
        self.home().join(".config/acp-coder/config.toml")
    }

    pub async fn run(&self, args: &[&str]) -> Run {
        self.run_with_stdin(args, None).await
    }

    pub async fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Run {
        let opts = SpawnOptions {
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            envs: self.envs.clone(),
            home: Some(self.home().to_owned()),
            cwd: self.cwd.clone(),
            program: None,
        };
        let mut cmd = agent_command(&opts, self.home());
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        // No controlling terminal, so /dev/tty cannot be opened (as in CI).
        acp_coder::platform::process::without_terminal(&mut cmd);
        let mut child = cmd.spawn().expect("spawn acp-coder");
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("stdin");
            pipe.write_all(input.as_bytes()).await.expect("write stdin");
            drop(pipe);
        }
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("acp-coder did not exit within 60 s")
            .expect("wait for acp-coder");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}
