//! The ready-made editor configurations in `editors/`, the docs that quote
//! them, SECURITY.md's test references, and the protocol docs'
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
    let modes = ["read-only", "plan", "ask", "accept-edits", "full-auto"];
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

/// The hand-piped transcript of docs/protocol.md, run verbatim (with the
/// binary from this build), answers as the document says.
#[test]
fn protocol_doc_transcript_works_verbatim() {
    let readme = read(&repo().join("docs/protocol.md"));
    let section = readme
        .split("## Talking to it by hand")
        .nth(1)
        .expect("docs/protocol.md section 'Talking to it by hand'");
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

// ------------------------------------------------------ the first hour (issue 44)

/// What an editor configuration starts: command, arguments, the
/// environment it sets, and whether the editor passes its own environment
/// through (avante.nvim passes only PATH and the listed variables).
#[derive(Debug)]
struct Launch {
    file: &'static str,
    command: String,
    args: Vec<String>,
    /// (name, value); a value `$NAME` is the user's variable NAME.
    env: Vec<(String, String)>,
    inherits: bool,
}

/// The variables that would beat the saved login (flags > environment >
/// config file): no editor snippet may set them.
const LOGIN_OVERRIDES: [&str; 3] = ["OPENAI_BASE_URL", "OPENAI_API_KEY", "ACP_CODER_MODEL"];

/// The lines of a Lua table opened by `opener` (`env = {`), to its close.
fn lua_table<'a>(text: &'a str, opener: &str) -> Vec<&'a str> {
    let start = text.find(opener).unwrap_or_else(|| panic!("no {opener}")) + opener.len();
    let mut depth = 1;
    let mut lines = Vec::new();
    for line in text[start..].lines().skip(1) {
        let code = line.split("--").next().unwrap_or("");
        depth += code.matches('{').count();
        depth -= code.matches('}').count().min(depth);
        if depth == 0 {
            break;
        }
        lines.push(code.trim());
    }
    lines
}

/// `KEY = "value"` / `KEY = os.getenv("VAR")` entries of a Lua table's lines.
fn lua_env(lines: &[&str], names_are_variables: bool) -> Vec<(String, String)> {
    lines
        .iter()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l
                .trim_end_matches(',')
                .split_once('=')
                .expect("KEY = value");
            let v = v.trim();
            let value = if let Some(var) = v
                .strip_prefix("os.getenv(\"")
                .and_then(|r| r.strip_suffix("\")"))
            {
                format!("${var}")
            } else {
                let lit = v.trim_matches('"').to_owned();
                // CodeCompanion reads a value naming a variable from the shell.
                if names_are_variables && env_vars_in(&lit).contains(&lit) {
                    format!("${lit}")
                } else {
                    lit
                }
            };
            (k.trim().to_owned(), value)
        })
        .collect()
}

fn launches() -> Vec<Launch> {
    let editors = repo().join("editors");
    let json = |file: &'static str| {
        let v: Value = serde_json::from_str(&read(&editors.join(file))).unwrap();
        let e = &v["agent_servers"]["acp-coder"];
        Launch {
            file,
            command: e["command"].as_str().unwrap().to_owned(),
            args: e["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap().to_owned())
                .collect(),
            env: e["env"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect(),
            inherits: true,
        }
    };
    let avante = read(&editors.join("neovim/avante.lua"));
    assert!(avante.contains("command = \"acp-coder\"") && avante.contains("args = {}"));
    let companion = read(&editors.join("neovim/codecompanion.lua"));
    let default = companion
        .split("default = {")
        .nth(1)
        .and_then(|s| s.split('}').next())
        .expect("commands.default");
    let mut argv: Vec<String> = default
        .split(',')
        .map(|a| a.trim().trim_matches('"').to_owned())
        .filter(|a| !a.is_empty())
        .collect();
    let el = read(&editors.join("emacs/acp-coder-agent-shell.el"));
    let el_command = el
        .split("'(\"")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("acp-coder-agent-shell-command");
    let mut el_argv: Vec<String> = el_command
        .split('"')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    let el_env = el
        .split("(agent-shell-make-environment-variables")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("the environment");
    let mut el_pairs = Vec::new();
    let strings: Vec<&str> = el_env.split('"').skip(1).step_by(2).collect();
    for pair in strings.chunks(2) {
        el_pairs.push((pair[0].to_owned(), pair.get(1).unwrap_or(&"").to_string()));
    }
    vec![
        json("zed/settings.json"),
        json("jetbrains/acp.json"),
        Launch {
            file: "neovim/avante.lua",
            command: "acp-coder".into(),
            args: Vec::new(),
            env: lua_env(&lua_table(&avante, "env = {"), false),
            inherits: false,
        },
        Launch {
            file: "neovim/codecompanion.lua",
            command: argv.remove(0),
            args: argv,
            env: lua_env(&lua_table(&companion, "env = {"), true),
            inherits: true,
        },
        Launch {
            file: "emacs/acp-coder-agent-shell.el",
            command: el_argv.remove(0),
            args: el_argv,
            env: el_pairs,
            inherits: el_env.contains(":inherit-env t"),
        },
    ]
}

/// No snippet sets what would beat the saved login.
#[test]
fn editor_snippets_never_fight_the_saved_login() {
    let all = launches();
    assert_eq!(all.len(), 5);
    for l in &all {
        assert_eq!(l.command, "acp-coder", "{}", l.file);
        for (k, _) in &l.env {
            assert!(
                !LOGIN_OVERRIDES.contains(&k.as_str()),
                "{} sets {k}, which beats `acp-coder login`",
                l.file
            );
        }
    }
}

/// The code blocks of a Markdown file with their info string.
fn code_blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines = md.lines();
    while let Some(line) = lines.next() {
        if let Some(info) = line.strip_prefix("```") {
            let mut body = String::new();
            for l in lines.by_ref() {
                if l.starts_with("```") {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            out.push((info.trim().to_owned(), body));
        }
    }
    out
}

/// One snippet per editor: README.md and docs/editors.md quote the files
/// of `editors/` exactly (every editor block there is one of them), the
/// README the Zed and JetBrains ones, docs/editors.md all of them.
#[test]
fn the_docs_quote_the_editor_snippets_exactly() {
    let editors = repo().join("editors");
    let files: Vec<(String, String)> = launches()
        .iter()
        .map(|l| (l.file.to_owned(), read(&editors.join(l.file))))
        .collect();
    for (doc, must_quote) in [
        (
            "README.md",
            &["zed/settings.json", "jetbrains/acp.json"][..],
        ),
        (
            "docs/editors.md",
            &[
                "zed/settings.json",
                "jetbrains/acp.json",
                "neovim/avante.lua",
                "neovim/codecompanion.lua",
                "emacs/acp-coder-agent-shell.el",
            ][..],
        ),
    ] {
        let text = read(&repo().join(doc));
        let blocks = code_blocks(&text);
        for (info, body) in &blocks {
            let editor_block = matches!(info.as_str(), "json" | "lua" | "elisp")
                && (body.contains("agent_servers")
                    || body.contains("acp_providers")
                    || body.contains("adapters")
                    || body.contains("agent-shell"));
            if editor_block {
                assert!(
                    files.iter().any(|(_, f)| f == body),
                    "{doc} has a {info} editor snippet that is not a file of editors/:\n{body}"
                );
            }
        }
        for want in must_quote {
            let (_, f) = files.iter().find(|(n, _)| n == want).unwrap();
            assert!(
                blocks.iter().any(|(_, b)| b == f),
                "{doc} does not quote editors/{want}"
            );
        }
    }
}

/// Done when (issue 44): following the README, `acp-coder login` then each
/// editor's configuration from `editors/`, started as that editor starts it
/// (the command found on PATH, its arguments, its environment on top of the
/// user's, or alone for avante.nvim), finishes a turn on the saved login,
/// and so does `exec`, with no variable set.
#[tokio::test]
async fn each_editor_config_finishes_a_turn_on_the_saved_login() {
    use crate::support::{
        FAKE_MODEL_ID, FakeEditor, FakeModel, Reply, SpawnOptions, Workspace, full_capabilities,
    };
    let model = FakeModel::start().await;
    let user = super::cli_common::CliEnv::new();
    const KEY: &str = "sk-saved-by-login";
    user.run(&[
        "login",
        "--no-input",
        "--base-url",
        &model.base_url(),
        "--api-key",
        KEY,
        "--model",
        FAKE_MODEL_ID,
    ])
    .await
    .assert_code(0);
    assert!(user.default_config().is_file());

    // `acp-coder` on the user's PATH, as `cargo install` puts it.
    let bin = tempfile::tempdir().unwrap();
    let exe = format!("acp-coder{}", std::env::consts::EXE_SUFFIX);
    acp_coder::platform::fs::symlink(env!("CARGO_BIN_EXE_acp-coder"), bin.path().join(&exe))
        .unwrap();
    let mut dirs = vec![bin.path().to_owned()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(dirs).unwrap().into_string().unwrap();
    let home = user.home().to_owned();
    let user_env: Vec<(String, String)> = vec![
        ("PATH".into(), path.clone()),
        ("HOME".into(), home.display().to_string()),
    ];

    for launch in launches() {
        let mut envs = if launch.inherits {
            user_env.clone()
        } else {
            vec![("PATH".to_owned(), path.clone())]
        };
        for (k, v) in &launch.env {
            let value = match v.strip_prefix('$') {
                Some(var) => user_env
                    .iter()
                    .find(|(n, _)| n == var)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
                None => v.clone(),
            };
            envs.retain(|(n, _)| n != k);
            envs.push((k.clone(), value));
        }
        let program = std::env::split_paths(&path)
            .map(|d| {
                d.join(format!(
                    "{}{}",
                    launch.command,
                    std::env::consts::EXE_SUFFIX
                ))
            })
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{}: {} is not on PATH", launch.file, launch.command));
        let editor = FakeEditor::spawn_with(SpawnOptions {
            args: launch.args.clone(),
            envs,
            home: Some(home.clone()),
            cwd: None,
            program: Some(program),
        });
        editor.initialize(full_capabilities()).await;
        let ws = Workspace::new();
        let sid = editor.new_session(ws.path()).await;
        model.push(Reply::text("Hello from acp-coder."));
        let done = editor.prompt(&sid, "Say hello").await;
        assert_eq!(done["stopReason"], "end_turn", "{}", launch.file);
        assert_eq!(
            editor.agent_text(&sid),
            "Hello from acp-coder.",
            "{}",
            launch.file
        );
        let req = model.chat_requests().pop().unwrap();
        assert_eq!(req.body["model"], FAKE_MODEL_ID, "{}", launch.file);
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {KEY}").as_str()),
            "{}: the saved key",
            launch.file
        );
    }

    // And `exec`, as the README's quickstart runs it.
    let ws = Workspace::new();
    model.push(Reply::text("It is a test project."));
    let run = user
        .cwd(ws.path())
        .run(&["exec", "What does this project do?"])
        .await;
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "It is a test project.", "{}", run.stderr);
}

// --------------------------------------------------------------- SECURITY.md

/// `a_{x,y}_b` → `a_x_b`, `a_y_b`.
fn expand_braces(name: &str) -> Vec<String> {
    match (name.find('{'), name.find('}')) {
        (Some(open), Some(close)) if open < close => name[open + 1..close]
            .split(',')
            .map(|alt| format!("{}{alt}{}", &name[..open], &name[close + 1..]))
            .collect(),
        _ => vec![name.to_owned()],
    }
}

/// Whether `text` defines a test (or anything) called `name`: `fn name`,
/// or a macro that makes tests from it (`both!(name)` → `name_editor`, …).
fn defines(text: &str, name: &str, base: &str) -> bool {
    let fn_named = |n: &str| {
        text.match_indices(&format!("fn {n}")).any(|(at, m)| {
            !text[at + m.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
        })
    };
    fn_named(name) || text.contains(&format!("!({base})"))
}

/// The Rust files of `src/` for a module path (`agent::policy::permission`):
/// the module's file, and the test files it names (`#[path = "…"]`).
fn module_files(segs: &[&str]) -> Vec<PathBuf> {
    let base = repo().join("src").join(segs.join("/"));
    let mut out = Vec::new();
    for f in [base.with_extension("rs"), base.join("mod.rs")] {
        if f.is_file() {
            let text = read(&f);
            for part in text.split("#[path = \"").skip(1) {
                if let Some(rel) = part.split('"').next() {
                    out.push(f.parent().unwrap().join(rel));
                }
            }
            out.push(f);
        }
    }
    if base.is_dir() && out.is_empty() {
        out.push(base);
    }
    out
}

/// Issue 44: every test SECURITY.md cites (`file::test` for tests/suite,
/// `module::path` or `module::tests::test` for unit tests) exists where it
/// says. Searched in the sources, so sections added later are checked too.
#[test]
fn every_test_security_md_cites_exists() {
    let text = read(&repo().join("SECURITY.md"));
    let suite = repo().join("tests/suite");
    let mut cited = BTreeSet::new();
    for (i, part) in text.split('`').enumerate() {
        let looks = i % 2 == 1
            && part.contains("::")
            && part.starts_with(|c: char| c.is_ascii_lowercase())
            && part
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_:{},".contains(c));
        if looks && !part.starts_with("clippy::") {
            cited.insert(part.to_owned());
        }
    }
    assert!(cited.len() > 40, "{cited:?}");
    let mut missing = Vec::new();
    for c in &cited {
        let segs: Vec<&str> = c.split("::").collect();
        let last = *segs.last().unwrap();
        let base = last.split("_{").next().unwrap();
        let suite_file = suite.join(format!("{}.rs", segs[0]));
        let in_suite = segs.len() == 2
            && suite_file.is_file()
            && expand_braces(last)
                .iter()
                .all(|n| defines(&read(&suite_file), n, base));
        // A module, or a function in a module (`tests` is its inline test module).
        let modules: Vec<&str> = segs.iter().copied().filter(|s| *s != "tests").collect();
        let is_module = !module_files(&modules).is_empty();
        // The file holding the test: the module's, or its `tests` module's.
        let mut files = module_files(&modules[..modules.len() - 1]);
        files.extend(module_files(&segs[..segs.len() - 1]));
        // Or a function of an inline module (`platform::fs::…` lives in
        // `platform/mod.rs`): the nearest enclosing module with a file.
        let enclosing = (1..segs.len())
            .rev()
            .map(|k| module_files(&segs[..k]))
            .find(|fs| fs.iter().any(|f| f.is_file()))
            .unwrap_or_default();
        files.extend(enclosing);
        let in_module = files.iter().filter(|f| f.is_file()).any(|f| {
            expand_braces(last)
                .iter()
                .all(|n| defines(&read(f), n, base))
        });
        if !(in_suite || is_module || in_module) {
            missing.push(c.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "SECURITY.md cites tests or modules that do not exist: {missing:?}"
    );
}

// ------------------------------------------------------------------- the docs

/// README.md is for users (issue 44): short, the two set-up commands first
/// (the test command the one `.ci/run` runs), no source paths or function
/// names, and every relative link of it and of `docs/` leads somewhere.
#[test]
fn the_readme_is_short_and_its_links_resolve() {
    let readme = read(&repo().join("README.md"));
    assert!(
        readme.lines().count() < 300,
        "README.md has {} lines",
        readme.lines().count()
    );
    let (_, first) = code_blocks(&readme)
        .into_iter()
        .next()
        .expect("a code block");
    let commands: Vec<&str> = first
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(
        commands,
        [
            "cargo run --release --locked -- exec \"What does this project do?\"",
            "scripts/test.sh"
        ]
    );
    assert!(read(&repo().join(".ci/run")).contains("\nscripts/test.sh"));
    for word in ["::", "fn ", "src/", "crate"] {
        assert!(
            !readme.contains(word),
            "README.md names {word:?}: that is for docs/"
        );
    }
    let mut docs: Vec<PathBuf> = files_under(&repo().join("docs"));
    docs.push(repo().join("README.md"));
    docs.push(repo().join("CHANGELOG.md"));
    docs.push(repo().join("editors/README.md"));
    for doc in docs {
        let text = read(&doc);
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap();
            let path = target.split('#').next().unwrap();
            if path.is_empty() || path.contains("://") {
                continue;
            }
            let resolved = doc.parent().unwrap().join(path);
            assert!(
                resolved.exists(),
                "{}: link {target} leads nowhere",
                doc.display()
            );
        }
    }
}
