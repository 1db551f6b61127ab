//! The ready-made editor configurations in `editors/` and the README's
//! hand-piped transcript: they must parse, name the `acp-coder` binary, and
//! use only flags, subcommands and environment variables the binary has.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// `--help` of the binary and of every subcommand, concatenated.
fn help_text() -> String {
    let mut all = String::new();
    for args in [
        &["--help"][..],
        &["exec", "--help"],
        &["doctor", "--help"],
        &["login", "--help"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_acp-coder"))
            .args(args)
            .env_clear()
            .stdin(Stdio::null())
            .output()
            .expect("run acp-coder --help");
        assert!(out.status.success(), "{args:?}");
        all.push_str(&String::from_utf8_lossy(&out.stdout));
    }
    all
}

fn subcommands(help: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut in_commands = false;
    for line in help.lines() {
        if line.starts_with("Commands:") {
            in_commands = true;
            continue;
        }
        if in_commands {
            match line.strip_prefix("  ") {
                Some(rest) if !rest.starts_with(' ') => {
                    names.insert(rest.split_whitespace().next().unwrap().to_owned());
                }
                _ => in_commands = false,
            }
        }
    }
    names
}

/// Tokens like `--flag` in `text`.
fn flags_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i + 2 < b.len() {
        let starts = b[i] == b'-'
            && b[i + 1] == b'-'
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric() && b[i - 1] != b'-');
        if starts && b[i + 2].is_ascii_lowercase() {
            let end = (i + 2..b.len())
                .find(|&j| !(b[j].is_ascii_lowercase() || b[j] == b'-'))
                .unwrap_or(b.len());
            out.insert(text[i..end].trim_end_matches('-').to_owned());
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Environment-variable-looking tokens (`WORD_WORD`, upper case).
fn env_vars_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        let looks = word.len() > 3
            && word.contains('_')
            && word.starts_with(|c: char| c.is_ascii_uppercase())
            && word
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
        if looks {
            out.insert(word.to_owned());
        }
    }
    out
}

/// Balanced (), [], {} outside strings and comments, for Lua and Emacs Lisp.
fn check_balanced(text: &str, lisp: bool) -> Result<(), String> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
        }
        let next = chars.get(i + 1).copied();
        if !lisp && c == '-' && next == Some('-') {
            // A comment to the end of the line.
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if lisp && c == ';' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if lisp && c == '?' {
            // A character literal like ?( or ?\".
            i += if next == Some('\\') { 3 } else { 2 };
            continue;
        }
        if c == '"' || (!lisp && c == '\'') {
            let quote = c;
            i += 1;
            while i < chars.len() && chars[i] != quote {
                if chars[i] == '\\' {
                    i += 1;
                }
                if chars.get(i) == Some(&'\n') {
                    line += 1;
                }
                i += 1;
            }
            if i >= chars.len() {
                return Err(format!("unterminated string starting before line {line}"));
            }
            i += 1;
            continue;
        }
        match c {
            '(' | '[' | '{' => stack.push((c, line)),
            ')' | ']' | '}' => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                match stack.pop() {
                    Some((open, _)) if open == want => {}
                    Some((open, l)) => {
                        return Err(format!("line {line}: {c} closes {open} from line {l}"));
                    }
                    None => return Err(format!("line {line}: unmatched {c}")),
                }
            }
            _ => {}
        }
        i += 1;
    }
    match stack.pop() {
        Some((open, l)) => Err(format!("{open} from line {l} is never closed")),
        None => Ok(()),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn editor_configs_parse_and_use_only_what_exists() {
    let help = help_text();
    let subs = subcommands(&help);
    assert!(
        ["exec", "doctor", "login"]
            .iter()
            .all(|s| subs.contains(*s)),
        "{subs:?}"
    );
    let known_flags = flags_in(&help);
    let known_env = env_vars_in(&help);
    let modes = ["read-only", "ask", "accept-edits", "full-auto"];
    let editors = repo().join("editors");
    let guide = read(&editors.join("README.md"));
    let files = files_under(&editors);
    let mut kinds = BTreeSet::new();

    for path in &files {
        let rel = path.strip_prefix(&editors).unwrap().display().to_string();
        let text = read(path);
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if rel == "README.md" {
            continue;
        }
        assert!(
            guide.contains(&rel),
            "editors/README.md does not mention {rel}"
        );
        assert!(text.contains("acp-coder"), "{rel} does not name acp-coder");
        for flag in flags_in(&text) {
            assert!(
                known_flags.contains(&flag),
                "{rel} uses {flag}, which acp-coder does not have"
            );
        }
        for var in env_vars_in(&text) {
            assert!(
                known_env.contains(&var),
                "{rel} sets {var}, which acp-coder does not read"
            );
        }
        match ext {
            "json" => {
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{rel} is not valid JSON: {e}"));
                if let Some(servers) = v.get("agent_servers") {
                    let entry = &servers["acp-coder"];
                    assert!(
                        entry["command"]
                            .as_str()
                            .is_some_and(|c| c == "acp-coder" || c.ends_with("/acp-coder")),
                        "{rel}: command"
                    );
                    for arg in entry["args"].as_array().expect("args") {
                        let arg = arg.as_str().unwrap();
                        assert!(
                            known_flags.contains(arg) || subs.contains(arg),
                            "{rel}: unknown argument {arg}"
                        );
                    }
                    for (k, val) in entry["env"].as_object().expect("env") {
                        assert!(known_env.contains(k), "{rel}: env {k}");
                        assert!(val.is_string(), "{rel}: env {k} must be a string");
                    }
                    if let Some(m) = entry.get("default_mode") {
                        assert!(
                            modes.contains(&m.as_str().unwrap()),
                            "{rel}: default_mode {m}"
                        );
                    }
                    kinds.insert(if entry.get("type").is_some() {
                        "zed"
                    } else {
                        "jetbrains"
                    });
                } else {
                    check_registry_manifest(path, &v, &known_flags, &subs);
                    kinds.insert("registry");
                }
            }
            "lua" => {
                check_balanced(&text, false).unwrap_or_else(|e| panic!("{rel}: {e}"));
                if text.contains("codecompanion") {
                    for key in [
                        "adapters",
                        "acp",
                        "commands",
                        "default = { \"acp-coder\" }",
                        "env =",
                    ] {
                        assert!(text.contains(key), "{rel}: missing {key}");
                    }
                    kinds.insert("codecompanion");
                } else {
                    for key in [
                        "acp_providers",
                        "command = \"acp-coder\"",
                        "args = {}",
                        "env =",
                        "provider = \"acp-coder\"",
                    ] {
                        assert!(text.contains(key), "{rel}: missing {key}");
                    }
                    kinds.insert("avante");
                }
            }
            "el" => {
                check_balanced(&text, true).unwrap_or_else(|e| panic!("{rel}: {e}"));
                for key in [
                    "agent-shell-make-agent-config",
                    ":client-maker",
                    ":command",
                    "'(\"acp-coder\")",
                    "agent-shell-make-environment-variables",
                    "(provide '",
                ] {
                    assert!(text.contains(key), "{rel}: missing {key}");
                }
                kinds.insert("agent-shell");
            }
            // The registry entry's icon (its rules: acp_registry.rs).
            "svg" if rel.starts_with("acp-registry/") => {
                kinds.insert("registry icon");
            }
            other => panic!("{rel}: unexpected file type {other:?}"),
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from([
            "agent-shell",
            "avante",
            "codecompanion",
            "jetbrains",
            "registry",
            "registry icon",
            "zed"
        ]),
    );
}

fn check_registry_manifest(
    path: &Path,
    v: &Value,
    flags: &BTreeSet<String>,
    subs: &BTreeSet<String>,
) {
    let id = v["id"].as_str().expect("id");
    assert!(
        id.starts_with(|c: char| c.is_ascii_lowercase())
            && id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
        "id {id}"
    );
    assert_eq!(path.file_name().unwrap(), "agent.json");
    assert_eq!(
        path.parent().unwrap().file_name().unwrap(),
        id,
        "folder name = id"
    );
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        v["version"], version,
        "manifest version = Cargo.toml version"
    );
    for key in ["name", "description", "license", "repository"] {
        assert!(v[key].as_str().is_some_and(|s| !s.is_empty()), "{key}");
    }
    let binary = v["distribution"]["binary"]
        .as_object()
        .expect("distribution.binary");
    assert!(!binary.is_empty());
    let platforms = [
        "darwin-aarch64",
        "darwin-x86_64",
        "linux-aarch64",
        "linux-x86_64",
        "windows-aarch64",
        "windows-x86_64",
    ];
    for (platform, target) in binary {
        assert!(platforms.contains(&platform.as_str()), "{platform}");
        let archive = target["archive"].as_str().expect("archive");
        assert!(archive.starts_with("https://"), "{archive}");
        assert!(
            archive.contains(&format!("/v{version}/")),
            "{archive} is not the v{version} release"
        );
        let exe = if platform.starts_with("windows") {
            "./acp-coder.exe"
        } else {
            "./acp-coder"
        };
        assert_eq!(target["cmd"], exe, "{platform}");
        // Every target listed was built (scripts/dist.sh --registry).
        let sha = target["sha256"].as_str().unwrap_or_default();
        assert!(
            sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{platform}: sha256 {sha:?}"
        );
        for arg in target["args"].as_array().into_iter().flatten() {
            let arg = arg.as_str().unwrap();
            assert!(
                flags.contains(arg) || subs.contains(arg),
                "unknown argument {arg}"
            );
        }
    }
}

#[test]
fn the_checker_catches_mistakes() {
    assert!(check_balanced("x = { a = { 1, 2 } }", false).is_ok());
    assert!(check_balanced("x = { a = \"}\" -- }\n}", false).is_ok());
    assert!(check_balanced("x = { a = { 1 }", false).is_err());
    assert!(check_balanced("(a \"(\" ?( ; )\n b)", true).is_ok());
    assert!(check_balanced("(a (b)", true).is_err());
    assert_eq!(
        flags_in("acp-coder --trace x --log-level=debug -y"),
        BTreeSet::from(["--log-level".to_owned(), "--trace".to_owned()])
    );
    assert_eq!(
        env_vars_in("OPENAI_API_KEY = x, HOME, PATH"),
        BTreeSet::from(["OPENAI_API_KEY".to_owned()])
    );
}

/// The hand-piped transcript of README.md, run verbatim (with the binary
/// from this build), answers as the README says.
#[test]
fn readme_transcript_works_verbatim() {
    let readme = read(&repo().join("README.md"));
    let section = readme
        .split("## Talking to it by hand")
        .nth(1)
        .expect("README section 'Talking to it by hand'");
    let sh = section
        .split("```sh\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the sh block");
    let lines: Vec<&str> = sh
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches('\\').trim();
            l.strip_prefix('\'')?.strip_suffix('\'')
        })
        .collect();
    assert!(lines.len() >= 3, "{sh}");
    assert!(
        sh.contains("| OPENAI_BASE_URL=http://localhost:11434/v1 acp-coder"),
        "{sh}"
    );
    let expected = section
        .split("```text\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the answers block");

    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .env_clear()
        .env("HOME", home.path())
        .env("OPENAI_BASE_URL", "http://localhost:11434/v1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for l in &lines {
            writeln!(stdin, "{l}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let got: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want: Vec<&str> = expected.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    let by_id = |id: i64| {
        got.iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer {id}"))
    };
    for w in want {
        // A notification line: one of that kind must have been sent.
        if !w.contains("\"id\":") {
            let kind = w
                .split("\"sessionUpdate\":\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .unwrap_or_else(|| panic!("a notification line names its update kind: {w}"));
            assert!(
                got.iter().any(|m| m["method"] == "session/update"
                    && m["params"]["update"]["sessionUpdate"] == kind),
                "no {kind} notification in {got:#?}"
            );
            continue;
        }
        // The README abridges with …; compare what is written out.
        let id: i64 = w
            .split("\"id\":")
            .nth(1)
            .and_then(|s| s.split(',').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no id in {w}"));
        let g = by_id(id);
        if w.contains("\"error\"") {
            let code: i64 = w
                .split("\"code\":")
                .nth(1)
                .and_then(|s| s.split(',').next())
                .and_then(|s| s.parse().ok())
                .unwrap();
            assert_eq!(g["error"]["code"], code, "{g}");
            let at = w.find("\"message\":").unwrap() + "\"message\":".len();
            let msg = json_string_at(&w[at..]);
            assert_eq!(g["error"]["message"].as_str().unwrap(), msg, "{g}");
        } else {
            assert!(g["result"].is_object(), "{g}");
            for key in [
                "protocolVersion",
                "agentCapabilities",
                "authMethods",
                "agentInfo",
                "sessionId",
                "modes",
                "configOptions",
            ] {
                if w.contains(&format!("\"{key}\"")) {
                    assert!(!g["result"][key].is_null(), "{key} missing in {g}");
                }
            }
        }
    }
}

/// The JSON string literal at the start of `s`, decoded.
fn json_string_at(s: &str) -> String {
    let mut end = 1;
    let b = s.as_bytes();
    assert_eq!(b[0], b'"', "{s}");
    while b[end] != b'"' {
        end += if b[end] == b'\\' { 2 } else { 1 };
    }
    serde_json::from_str(&s[..=end]).unwrap()
}
