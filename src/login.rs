//! `acp-coder login`: saves the endpoint, the API key and the default model
//! to the config file.
//!
//! Interactive on a terminal (questions on `/dev/tty`, the key read without
//! echo, the endpoint's models listed to pick from); non-interactive when
//! there is no terminal, or when everything is given with flags. Editors that
//! support terminal auth run it as `<agent command> login`.
//!
//! The file is written with mode 0600 (directories created 0700), atomically,
//! keeping every other key and comment; the key is never printed.
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::{self, BASE_URL_ENV, DEFAULT_BASE_URL, MODEL_ENV};
use crate::llm::{Model, OpenAiModel};
use crate::term::{Stream, Style, Tty};

/// Values given on the command line (flags only, not the environment).
#[derive(Debug, Clone, Default)]
pub struct LoginOptions {
    /// The config file to write (default `$XDG_CONFIG_HOME/acp-coder/config.toml`).
    pub config: Option<PathBuf>,
    pub base_url: Option<String>,
    /// A literal key, saved as `api_key`.
    pub api_key: Option<String>,
    /// The name of the variable holding the key, saved as `api_key_env`.
    pub api_key_env: Option<String>,
    pub model: Option<String>,
    /// Never ask, even on a terminal.
    pub no_input: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error(
        "no terminal to ask on: pass what to save with --base-url, --api-key-env NAME (or --api-key), and --model"
    )]
    NoTerminal,
    #[error("{0}")]
    Invalid(String),
    #[error("the config file {path} is not valid TOML ({message}); fix or move it first")]
    Existing { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cancelled")]
    Cancelled,
}

impl LoginError {
    /// 2 for usage problems, 1 for the rest.
    pub fn exit_code(&self) -> u8 {
        match self {
            LoginError::NoTerminal | LoginError::Invalid(_) => 2,
            _ => 1,
        }
    }
}

/// One key to set in the root table of the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub key: &'static str,
    pub value: String,
}

/// Runs `login` and returns the path written.
pub async fn run(opts: LoginOptions) -> Result<PathBuf, LoginError> {
    let path = opts
        .config
        .clone()
        .unwrap_or_else(|| config::config_home().join("acp-coder").join("config.toml"));
    let existing = read_existing(&path)?;
    let complete = opts.base_url.is_some()
        && (opts.api_key.is_some() || opts.api_key_env.is_some())
        && opts.model.is_some();
    let given = opts.base_url.is_some()
        || opts.api_key.is_some()
        || opts.api_key_env.is_some()
        || opts.model.is_some();
    let changes = if opts.no_input || complete {
        if !given {
            return Err(LoginError::NoTerminal);
        }
        from_flags(&opts)?
    } else if let Some(tty) = Tty::open() {
        interactive(tty, &opts, &existing, &path).await?
    } else if given {
        from_flags(&opts)?
    } else {
        return Err(LoginError::NoTerminal);
    };
    write_config(&path, &changes)?;
    let style = Style::for_stream(Stream::Stdout);
    let keys: Vec<&str> = changes.iter().map(|c| c.key).collect();
    Stream::Stdout.line(&format!(
        "{} Saved {} to {} (mode 0600).",
        style.green("✓"),
        keys.join(", "),
        path.display()
    ));
    if let Some(var) = changes
        .iter()
        .find(|c| c.key == "api_key_env")
        .map(|c| c.value.as_str())
        && std::env::var_os(var).is_none()
    {
        Stream::Stdout.line(&style.dim(&format!(
            "  {var} is not set in this shell: set it where your editor starts acp-coder."
        )));
    }
    if changes.iter().any(|c| c.key == "api_key")
        && let Some(var) = existing
            .api_key_env
            .as_deref()
            .or(Some(config::API_KEY_ENV))
        && std::env::var_os(var).is_some()
    {
        Stream::Stdout.line(&style.dim(&format!(
            "  Note: {var} is set in this environment and takes precedence over the saved key."
        )));
    }
    Stream::Stdout.line(&style.dim("  Check the setup with `acp-coder doctor`."));
    Ok(path)
}

fn read_existing(path: &Path) -> Result<Existing, LoginError> {
    match std::fs::read_to_string(path) {
        Ok(text) => match text.parse::<toml::Table>() {
            // Keys this version does not know are kept but not interpreted.
            Ok(table) => Ok(toml::Value::Table(table)
                .try_into::<Existing>()
                .unwrap_or_default()),
            Err(e) => Err(LoginError::Existing {
                path: path.to_owned(),
                message: e.message().to_owned(),
            }),
        },
        Err(_) => Ok(Existing::default()),
    }
}

/// The keys `login` reads from an existing file (other keys are kept, not read).
#[derive(serde::Deserialize, Default, Clone)]
struct Existing {
    base_url: Option<String>,
    api_key: Option<String>,
    api_key_env: Option<String>,
    model: Option<String>,
}

fn check_base_url(url: &str) -> Result<String, LoginError> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(LoginError::Invalid(format!(
            "base URL {url:?} must start with http:// or https://"
        )));
    }
    Ok(url.to_owned())
}

fn check_env_name(name: &str) -> Result<String, LoginError> {
    let ok = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if ok {
        Ok(name.to_owned())
    } else {
        Err(LoginError::Invalid(format!(
            "--api-key-env {name:?} is not an environment variable name"
        )))
    }
}

fn from_flags(opts: &LoginOptions) -> Result<Vec<Change>, LoginError> {
    let mut changes = Vec::new();
    if let Some(u) = &opts.base_url {
        changes.push(Change {
            key: "base_url",
            value: check_base_url(u)?,
        });
    }
    if let Some(name) = &opts.api_key_env {
        changes.push(Change {
            key: "api_key_env",
            value: check_env_name(name)?,
        });
    }
    if let Some(k) = &opts.api_key {
        if k.trim().is_empty() {
            return Err(LoginError::Invalid("--api-key is empty".into()));
        }
        changes.push(Change {
            key: "api_key",
            value: k.trim().to_owned(),
        });
    }
    if let Some(m) = &opts.model {
        changes.push(Change {
            key: "model",
            value: m.trim().to_owned(),
        });
    }
    Ok(changes)
}

async fn interactive(
    tty: Tty,
    opts: &LoginOptions,
    existing: &Existing,
    path: &Path,
) -> Result<Vec<Change>, LoginError> {
    let opts = opts.clone();
    let existing = existing.clone();
    let path = path.to_owned();
    // The questions block on the terminal; the model listing needs the runtime.
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || ask_all(tty, &opts, &existing, &path, &handle))
        .await
        .map_err(|_| LoginError::Cancelled)?
}

/// The questions, in order: endpoint, key, model (from the endpoint's list).
fn ask_all(
    mut tty: Tty,
    opts: &LoginOptions,
    existing: &Existing,
    path: &Path,
    rt: &tokio::runtime::Handle,
) -> Result<Vec<Change>, LoginError> {
    let style = tty.style();
    tty.write(&format!(
        "{}\nSettings are saved to {}. Press Enter to keep the value in [brackets].\n\n",
        style.bold("acp-coder login"),
        path.display()
    ));
    let mut changes = Vec::new();
    let base_url = ask_endpoint(&mut tty, opts, existing)?;
    changes.push(Change {
        key: "base_url",
        value: base_url.clone(),
    });
    let key = ask_key(&mut tty, opts, existing, &base_url, &mut changes)?;
    let models = list_models(&mut tty, &base_url, key, rt);
    if let Some(m) = ask_model(&mut tty, opts, existing, &models)? {
        changes.push(Change {
            key: "model",
            value: m,
        });
    }
    Ok(changes)
}

/// The endpoint's base URL, asked until it is valid.
fn ask_endpoint(
    tty: &mut Tty,
    opts: &LoginOptions,
    existing: &Existing,
) -> Result<String, LoginError> {
    let current_url = opts
        .base_url
        .clone()
        .or_else(|| std::env::var(BASE_URL_ENV).ok().filter(|v| !v.is_empty()))
        .or_else(|| existing.base_url.clone())
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
    loop {
        let answer = tty
            .ask(&format!(
                "Endpoint base URL (OpenAI-compatible) [{current_url}]: "
            ))
            .ok_or(LoginError::Cancelled)?;
        let answer = if answer.trim().is_empty() {
            current_url.clone()
        } else {
            answer
        };
        match check_base_url(&answer) {
            Ok(u) => return Ok(u),
            Err(e) => tty.write(&format!("{e}\n")),
        }
    }
}

/// The key (typed, hidden, or `$NAME` of a variable): records the change
/// and returns the key to list the models with.
fn ask_key(
    tty: &mut Tty,
    opts: &LoginOptions,
    existing: &Existing,
    base_url: &str,
    changes: &mut Vec<Change>,
) -> Result<Option<String>, LoginError> {
    let style = tty.style();
    let env_name = opts
        .api_key_env
        .clone()
        .or_else(|| existing.api_key_env.clone())
        .unwrap_or_else(|| config::API_KEY_ENV.to_owned());
    let env_has_key = std::env::var(&env_name).is_ok_and(|v| !v.is_empty());
    let keep = if opts.api_key.is_some() {
        "the key given with --api-key"
    } else if existing.api_key.is_some() {
        "the saved key"
    } else if env_has_key {
        // The variable is set: Enter keeps reading it from there.
        "$VAR"
    } else if config::is_local_endpoint(base_url) {
        "none; local servers need no key"
    } else {
        "none"
    };
    let keep_shown = if keep == "$VAR" {
        format!("${env_name}")
    } else {
        keep.to_owned()
    };
    tty.write(&format!(
        "{}\n",
        style.dim(
            "Type the API key (input is hidden), or $NAME to read it from the environment variable NAME."
        )
    ));
    let answer = tty
        .ask_hidden(&format!("API key [{keep_shown}]: "))
        .ok_or(LoginError::Cancelled)?;
    let answer = answer.trim().to_owned();
    let key_for_listing;
    if let Some(var) = answer.strip_prefix('$') {
        let var = check_env_name(var)?;
        key_for_listing = std::env::var(&var).ok();
        changes.push(Change {
            key: "api_key_env",
            value: var,
        });
    } else if !answer.is_empty() {
        key_for_listing = Some(answer.clone());
        changes.push(Change {
            key: "api_key",
            value: answer,
        });
    } else if let Some(k) = &opts.api_key {
        key_for_listing = Some(k.clone());
        changes.push(Change {
            key: "api_key",
            value: k.clone(),
        });
    } else {
        if opts.api_key_env.is_some() {
            changes.push(Change {
                key: "api_key_env",
                value: env_name.clone(),
            });
        }
        key_for_listing = existing
            .api_key
            .clone()
            .or_else(|| std::env::var(&env_name).ok());
    }
    Ok(key_for_listing)
}

/// The endpoint's models, shown numbered (none when it lists none or fails).
fn list_models(
    tty: &mut Tty,
    base_url: &str,
    key: Option<String>,
    rt: &tokio::runtime::Handle,
) -> Vec<String> {
    let style = tty.style();
    tty.write(&format!(
        "{}\n",
        style.dim(&format!("Listing models at {base_url}/models …"))
    ));
    let listed = rt.block_on(async {
        let m = OpenAiModel::new(
            base_url,
            key,
            &[],
            Duration::from_secs(5),
            Duration::from_secs(10),
        )
        .ok()?;
        Some(m.list_models().await)
    });
    match listed {
        Some(Ok(models)) if !models.is_empty() => {
            for (i, m) in models.iter().take(40).enumerate() {
                tty.write(&format!("  {:>2}) {m}\n", i + 1));
            }
            if models.len() > 40 {
                tty.write(&format!("  … and {} more\n", models.len() - 40));
            }
            models
        }
        Some(Ok(_)) => {
            tty.write("The endpoint lists no models.\n");
            Vec::new()
        }
        Some(Err(e)) => {
            tty.write(&format!(
                "{}\n",
                style.yellow(&format!("Could not list models: {e}"))
            ));
            Vec::new()
        }
        None => Vec::new(),
    }
}

/// The default model: a number from the list, an id, or Enter for the current one.
fn ask_model(
    tty: &mut Tty,
    opts: &LoginOptions,
    existing: &Existing,
    models: &[String],
) -> Result<Option<String>, LoginError> {
    let current_model = opts
        .model
        .clone()
        .or_else(|| std::env::var(MODEL_ENV).ok().filter(|v| !v.is_empty()))
        .or_else(|| existing.model.clone())
        .or_else(|| models.first().cloned());
    let question = match &current_model {
        Some(m) => format!("Default model (number or id) [{m}]: "),
        None => "Default model (number or id; empty for the first one the endpoint lists): ".into(),
    };
    let answer = tty.ask(&question).ok_or(LoginError::Cancelled)?;
    let answer = answer.trim();
    let model = if answer.is_empty() {
        current_model
    } else if let Some(m) = answer
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| models.get(i))
    {
        Some(m.clone())
    } else {
        Some(answer.to_owned())
    };
    Ok(model)
}

/// Sets `changes` in the root table of the TOML file at `path`, keeping every
/// other line, and writes it atomically with mode 0600.
pub fn write_config(path: &Path, changes: &[Change]) -> Result<(), LoginError> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let text = apply_changes(&old, changes).map_err(|message| LoginError::Existing {
        path: path.to_owned(),
        message,
    })?;
    write_private(path, text.as_bytes()).map_err(|source| LoginError::Write {
        path: path.to_owned(),
        source,
    })
}

/// The new file text: each key replaced where it is in the root table, or
/// added at the end of the root table. The result is checked to parse and to
/// hold the new values.
pub fn apply_changes(old: &str, changes: &[Change]) -> Result<String, String> {
    let mut lines: Vec<String> = old.lines().map(str::to_owned).collect();
    // The root table ends at the first table header.
    let mut root_end = lines
        .iter()
        .position(|l| l.trim_start().starts_with('['))
        .unwrap_or(lines.len());
    for c in changes {
        let value = toml::Value::String(c.value.clone()).to_string();
        let new_line = format!("{} = {value}", c.key);
        let found = lines[..root_end].iter().position(|l| {
            let t = l.trim_start();
            t.strip_prefix(c.key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        });
        match found {
            Some(i) => lines[i] = new_line,
            None => {
                // After the last non-blank line of the root table.
                let mut at = root_end;
                while at > 0 && lines[at - 1].trim().is_empty() {
                    at -= 1;
                }
                lines.insert(at, new_line);
                root_end += 1;
            }
        }
    }
    let mut text = lines.join("\n");
    text.push('\n');
    let parsed: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_owned())?;
    for c in changes {
        if parsed.get(c.key).and_then(toml::Value::as_str) != Some(c.value.as_str()) {
            return Err(format!("could not set {} in place", c.key));
        }
    }
    Ok(text)
}

pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use crate::platform::fs::OwnerOnly as _;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .owner_only()
        .create(dir)?;
    let tmp = dir.join(format!(".config.toml.{}.tmp", fastrand::u64(..)));
    crate::mcp::oauth::replace_private(&tmp, path, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ch(key: &'static str, value: &str) -> Change {
        Change {
            key,
            value: value.into(),
        }
    }

    #[test]
    fn keeps_other_keys_and_comments() {
        let old = "# my settings\nmodel = \"old\"\ndefault_mode = \"accept-edits\"\n\n[headers]\n\"X-A\" = \"1\"\n";
        let new = apply_changes(old, &[ch("model", "new"), ch("base_url", "http://h/v1")]).unwrap();
        assert_eq!(
            new,
            "# my settings\nmodel = \"new\"\ndefault_mode = \"accept-edits\"\nbase_url = \"http://h/v1\"\n\n[headers]\n\"X-A\" = \"1\"\n"
        );
    }

    #[test]
    fn empty_file_and_quoting() {
        let new = apply_changes("", &[ch("api_key", "a\"b\\c")]).unwrap();
        let t: toml::Table = new.parse().unwrap();
        assert_eq!(t["api_key"].as_str(), Some("a\"b\\c"));
    }

    #[test]
    fn key_prefixes_do_not_match_other_keys() {
        let old = "api_key_env = \"X\"\n";
        let new = apply_changes(old, &[ch("api_key", "k")]).unwrap();
        let t: toml::Table = new.parse().unwrap();
        assert_eq!(t["api_key_env"].as_str(), Some("X"));
        assert_eq!(t["api_key"].as_str(), Some("k"));
    }
}
