//! The ACP registry entry (`editors/acp-registry/acp-coder/`) against the
//! registry's own checks, as `agentclientprotocol/registry` runs them on a
//! pull request (read at commit 172d5034b0aa7f91b24622ce4ee4459414e0e07e):
//!
//! - `agent.schema.json`: required fields and their forms, the platform
//!   names, and per target only `archive`, `sha256` (64 hex digits), `cmd`,
//!   `args`, `env`;
//! - `.github/workflows/build_registry.py`: the id is the folder's name, a
//!   semantic version, archives of that version (never `/latest/`) and not
//!   an installer (`.dmg`, `.pkg`, `.deb`, `.rpm`, `.msi`, `.appimage`), and
//!   `icon.svg` is required: an `<svg>`, 16×16, monochrome (`fill` and
//!   `stroke` only `currentColor`, `none` or `inherit`, `currentColor` used);
//! - `.github/workflows/client.py` (`--auth-check`): the agent, started with
//!   a fresh `HOME`, answers its `initialize` with at least one auth method
//!   of type `agent` (also a method with no `type`) or `terminal`.
//!
//! The rules are rewritten here (no Python, no network); the sums are the
//! ones `scripts/dist.sh --registry` wrote (checked in `editors.rs`). An
//! entry without a build for every system (darwin, linux, windows) is only
//! warned about at that commit (older versions refused it): the darwin
//! archives can only be linked on a Mac, and are added there.

use regex::Regex;
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn entry_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("editors/acp-registry/acp-coder")
}

const PLATFORMS: [&str; 6] = [
    "darwin-aarch64",
    "darwin-x86_64",
    "linux-aarch64",
    "linux-x86_64",
    "windows-aarch64",
    "windows-x86_64",
];

fn non_empty_string(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

/// `agent.schema.json` and `build_registry.py`'s `validate_agent` and
/// `validate_distribution_versions`: the errors, empty when the entry passes.
fn manifest_errors(entry: &Value, dir_name: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let Some(obj) = entry.as_object() else {
        return vec!["agent.json is not an object".into()];
    };
    for key in ["id", "name", "version", "description", "distribution"] {
        if !obj.contains_key(key) {
            errors.push(format!("missing required field {key}"));
        }
    }
    let id = entry["id"].as_str().unwrap_or_default();
    let id_form = Regex::new("^[a-z][a-z0-9-]*$").unwrap();
    if !id_form.is_match(id) {
        errors.push(format!(
            "id {id:?} must be lowercase letters, digits, hyphens"
        ));
    } else if id != dir_name {
        errors.push(format!("id {id:?} must match the folder name {dir_name:?}"));
    }
    for key in ["name", "description"] {
        if !non_empty_string(&entry[key]) {
            errors.push(format!("{key} must be a non-empty string"));
        }
    }
    let version = entry["version"].as_str().unwrap_or_default();
    if !Regex::new(r"^[0-9]+\.[0-9]+\.[0-9]+")
        .unwrap()
        .is_match(version)
    {
        errors.push(format!("version {version:?} must be semantic (1.0.0)"));
    }
    for key in ["repository", "website", "license_url"] {
        if let Some(v) = obj.get(key)
            && !v.as_str().is_some_and(|s| s.starts_with("https://"))
        {
            errors.push(format!("{key} must be a URL"));
        }
    }
    if let Some(authors) = obj.get("authors")
        && !authors
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string))
    {
        errors.push("authors must be a list of strings".into());
    }
    let Some(dist) = entry["distribution"].as_object().filter(|d| !d.is_empty()) else {
        errors.push("distribution must be a non-empty object".into());
        return errors;
    };
    for kind in dist.keys() {
        if !["binary", "npx", "uvx"].contains(&kind.as_str()) {
            errors.push(format!("unknown distribution type {kind}"));
        }
    }
    let Some(binary) = dist.get("binary") else {
        return errors;
    };
    let Some(binary) = binary.as_object().filter(|b| !b.is_empty()) else {
        errors.push("distribution.binary must be a non-empty object".into());
        return errors;
    };
    let sha_form = Regex::new("^[a-fA-F0-9]{64}$").unwrap();
    let url_version = Regex::new(r"/(?:download|releases)/v?([\d.]+)/").unwrap();
    for (platform, target) in binary {
        if !PLATFORMS.contains(&platform.as_str()) {
            errors.push(format!("unknown platform {platform}"));
        }
        let Some(target) = target.as_object() else {
            errors.push(format!("{platform} must be an object"));
            continue;
        };
        for key in target.keys() {
            if !["archive", "sha256", "cmd", "args", "env"].contains(&key.as_str()) {
                errors.push(format!("{platform}: field {key} is not allowed"));
            }
        }
        match target.get("archive").and_then(Value::as_str) {
            None => errors.push(format!("{platform}: missing archive")),
            Some(url) => {
                if !url.starts_with("https://") {
                    errors.push(format!("{platform}: archive {url} is not a URL"));
                }
                let lower = url.to_ascii_lowercase();
                for ext in [".dmg", ".pkg", ".deb", ".rpm", ".msi", ".appimage"] {
                    if lower.ends_with(ext) {
                        errors.push(format!("{platform}: archive uses unsupported {ext}"));
                    }
                }
                if url.contains("/latest/") {
                    errors.push(format!("{platform}: archive uses /latest/"));
                } else if let Some(c) = url_version.captures(url) {
                    // build_registry.py's normalize_version: x.y.z.
                    let mut parts: Vec<&str> = c[1].split('.').collect();
                    parts.resize(3.max(parts.len()), "0");
                    let found = parts[..3].join(".");
                    if found != version {
                        errors.push(format!(
                            "{platform}: archive is version {found}, the entry {version}"
                        ));
                    }
                }
            }
        }
        if !target.get("cmd").is_some_and(Value::is_string) {
            errors.push(format!("{platform}: missing cmd"));
        }
        if let Some(sha) = target.get("sha256")
            && !sha.as_str().is_some_and(|s| sha_form.is_match(s))
        {
            errors.push(format!("{platform}: sha256 must be 64 hex digits"));
        }
        if let Some(args) = target.get("args")
            && !args
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_string))
        {
            errors.push(format!("{platform}: args must be a list of strings"));
        }
        if let Some(env) = target.get("env")
            && !env
                .as_object()
                .is_some_and(|e| e.values().all(Value::is_string))
        {
            errors.push(format!("{platform}: env values must be strings"));
        }
    }
    errors
}

/// `build_registry.py`'s `validate_icon`: `None` is a missing file.
fn icon_errors(svg: Option<&str>) -> Vec<String> {
    let Some(svg) = svg else {
        return vec!["icon.svg is missing (icon is required)".into()];
    };
    let mut errors = Vec::new();
    let body = Regex::new(r"(?s)<\?xml.*?\?>|<!--.*?-->").unwrap();
    let body = body.replace_all(svg, "");
    let Some(root) = Regex::new(r"(?s)^\s*<svg\b([^>]*)>")
        .unwrap()
        .captures(&body)
    else {
        return vec!["the root element must be <svg>".into()];
    };
    if !body.trim_end().ends_with("</svg>") {
        errors.push("the <svg> element is not closed at the end".into());
    }
    let attrs = &root[1];
    let attr = |name: &str| {
        Regex::new(&format!(r#"\s{name}\s*=\s*["']([^"']*)["']"#))
            .unwrap()
            .captures(attrs)
            .map(|c| c[1].trim().to_owned())
    };
    let number = |s: String| {
        s.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%')
            .parse::<f64>()
            .ok()
    };
    let mut size = attr("width")
        .and_then(number)
        .zip(attr("height").and_then(number));
    if size.is_none() {
        size = attr("viewBox").and_then(|vb| {
            let parts: Vec<f64> = vb
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            (parts.len() == 4).then(|| (parts[2], parts[3]))
        });
    }
    match size {
        None => errors.push("icon has neither width/height nor a viewBox".into()),
        Some((w, h)) if w != 16.0 || h != 16.0 => {
            errors.push(format!("icon must be 16x16 (got {w}x{h})"));
        }
        Some(_) => {}
    }
    let allowed = ["currentcolor", "none", "inherit"];
    let mut uses_current = false;
    let mut check = |what: &str, value: &str| {
        let v = value.trim().to_ascii_lowercase();
        if v == "currentcolor" {
            uses_current = true;
        } else if !allowed.contains(&v.as_str()) {
            errors.push(format!("icon has a hardcoded {what} {value:?}"));
        }
    };
    // Attributes `fill=` and `stroke=` (not `stroke-width=`).
    let attribute = Regex::new(r#"(?i)\s(fill|stroke)\s*=\s*["']([^"']*)["']"#).unwrap();
    for c in attribute.captures_iter(&body) {
        check(&c[1], &c[2]);
    }
    // `style="fill: …"` and `<style>` blocks.
    let css = Regex::new(r"(?i)(?:^|[;{\s])(fill|stroke)\s*:\s*([^;}\s]+)").unwrap();
    let styles =
        Regex::new(r#"(?is)\sstyle\s*=\s*["']([^"']*)["']|<style[^>]*>(.*?)</style>"#).unwrap();
    for s in styles.captures_iter(&body) {
        let text = s.get(1).or_else(|| s.get(2)).map_or("", |m| m.as_str());
        for c in css.captures_iter(text) {
            check(&c[1], &c[2]);
        }
    }
    if !uses_current {
        errors.push("icon must use currentColor for fills/strokes to support theming".into());
    }
    errors
}

/// `client.py`'s `parse_auth_methods` and `validate_auth_methods`.
fn auth_errors(init_result: &Value) -> Vec<String> {
    let methods = init_result["authMethods"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if methods.is_empty() {
        return vec!["no authMethods in the initialize response".into()];
    }
    let kind = |m: &Value| -> String {
        if let Some(t) = m["type"].as_str() {
            return t.to_owned();
        }
        let meta = &m["_meta"];
        if meta.get("terminal-auth").is_some() {
            "terminal".into()
        } else {
            "agent".into()
        }
    };
    if methods
        .iter()
        .any(|m| ["agent", "terminal"].contains(&kind(m).as_str()))
    {
        Vec::new()
    } else {
        let found: Vec<String> = methods.iter().map(kind).collect();
        vec![format!(
            "no auth method of type agent or terminal: {found:?}"
        )]
    }
}

/// The agent's answer to `client.py`'s exact `initialize` (a fresh `HOME`,
/// `TERM=dumb`, nothing else configured).
fn registry_initialize() -> Value {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .current_dir(home.path())
        .env("HOME", home.path())
        .env("USERPROFILE", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("TERM", "dumb")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start acp-coder");
    let request = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": 1,
            "clientInfo": {"name": "ACP Registry Validator", "version": "1.0.0"},
            "clientCapabilities": {
                "terminal": true,
                "fs": {"readTextFile": true, "writeTextFile": true},
                "_meta": {"terminal_output": true, "terminal-auth": true}
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{request}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    drop(stdin);
    let _ = child.wait();
    let response: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("initialize answered {line:?}: {e}"));
    assert!(response.get("error").is_none(), "{response}");
    response["result"].clone()
}

#[test]
fn registry_entry_passes_the_registrys_checks() {
    let dir = entry_dir();
    let text = std::fs::read_to_string(dir.join("agent.json")).unwrap();
    let entry: Value = serde_json::from_str(&text).unwrap();
    let dir_name = dir.file_name().unwrap().to_str().unwrap();
    assert_eq!(manifest_errors(&entry, dir_name), Vec::<String>::new());
    let icon = std::fs::read_to_string(dir.join("icon.svg")).ok();
    assert_eq!(icon_errors(icon.as_deref()), Vec::<String>::new());
    let init = registry_initialize();
    assert_eq!(auth_errors(&init), Vec::<String>::new(), "{init}");
    // The terminal method the check sees runs a subcommand that exists.
    let terminal = init["authMethods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "terminal")
        .expect("a terminal auth method for a client with terminal-auth");
    assert_eq!(terminal["args"], json!(["login"]));
    let help = Command::new(env!("CARGO_BIN_EXE_acp-coder"))
        .args(["login", "--help"])
        .output()
        .unwrap();
    assert!(help.status.success(), "acp-coder login --help failed");
}

#[test]
fn registry_checks_catch_what_the_registry_rejects() {
    let good = json!({
        "id": "acp-coder", "name": "acp-coder", "version": "1.2.3", "description": "d",
        "distribution": {"binary": {"linux-x86_64": {
            "archive": "https://github.com/o/r/releases/download/v1.2.3/a.tar.gz",
            "sha256": "ab".repeat(32), "cmd": "./acp-coder", "args": []
        }}}
    });
    assert_eq!(manifest_errors(&good, "acp-coder"), Vec::<String>::new());
    let bad = |edit: &dyn Fn(&mut Value), dir: &str| {
        let mut v = good.clone();
        edit(&mut v);
        let errors = manifest_errors(&v, dir);
        assert!(!errors.is_empty(), "accepted {v}");
    };
    let target = "/distribution/binary/linux-x86_64";
    bad(&|_| {}, "other-folder");
    bad(&|v| v["id"] = json!("ACP-coder"), "ACP-coder");
    bad(&|v| v["version"] = json!("1.2"), "acp-coder");
    bad(
        &|v| {
            v.as_object_mut().unwrap().remove("description");
        },
        "acp-coder",
    );
    bad(
        &|v| {
            v["distribution"]["binary"]["linux-riscv64"] =
                json!({"archive": "https://x/a.zip", "cmd": "x"})
        },
        "acp-coder",
    );
    bad(&|v| v["distribution"]["brew"] = json!({}), "acp-coder");
    bad(
        &|v| v.pointer_mut(target).unwrap()["sha256"] = json!("abc"),
        "acp-coder",
    );
    bad(
        &|v| v.pointer_mut(target).unwrap()["sha512"] = json!("ab"),
        "acp-coder",
    );
    bad(
        &|v| {
            v.pointer_mut(target)
                .unwrap()
                .as_object_mut()
                .unwrap()
                .remove("cmd");
        },
        "acp-coder",
    );
    bad(
        &|v| {
            v.pointer_mut(target).unwrap()["archive"] =
                json!("https://github.com/o/r/releases/download/v1.2.4/a.tar.gz")
        },
        "acp-coder",
    );
    bad(
        &|v| {
            v.pointer_mut(target).unwrap()["archive"] =
                json!("https://github.com/o/r/releases/latest/download/a.tar.gz")
        },
        "acp-coder",
    );
    bad(
        &|v| {
            v.pointer_mut(target).unwrap()["archive"] =
                json!("https://github.com/o/r/releases/download/v1.2.3/a.deb")
        },
        "acp-coder",
    );

    let svg = |attrs: &str, inner: &str| {
        format!(r#"<svg xmlns="http://www.w3.org/2000/svg" {attrs}>{inner}</svg>"#)
    };
    let shape = r#"<path d="M1 1h14v14H1z" fill="currentColor"/>"#;
    assert_eq!(
        icon_errors(Some(&svg(r#"width="16" height="16""#, shape))),
        Vec::<String>::new()
    );
    assert_eq!(
        icon_errors(Some(&svg(r#"viewBox="0 0 16 16""#, shape))),
        Vec::<String>::new()
    );
    assert_eq!(
        icon_errors(None),
        ["icon.svg is missing (icon is required)"]
    );
    for wrong in [
        svg(r#"width="24" height="24""#, shape),
        svg(r#"width="16" height="12""#, shape),
        svg("", shape),
        svg(
            r#"viewBox="0 0 16 16""#,
            r##"<path d="M1 1h14v14H1z" fill="#ff0000"/>"##,
        ),
        svg(
            r#"viewBox="0 0 16 16""#,
            r#"<path d="M1 1h14v14H1z" stroke="black" fill="currentColor"/>"#,
        ),
        svg(
            r#"viewBox="0 0 16 16""#,
            r#"<path d="M1 1h14v14H1z" style="fill: red"/>"#,
        ),
        svg(
            r#"viewBox="0 0 16 16""#,
            r##"<style>path { stroke: #000 }</style><path d="M1 1" fill="currentColor"/>"##,
        ),
        svg(r#"viewBox="0 0 16 16""#, r#"<path d="M1 1h14v14H1z"/>"#),
        r#"<div width="16" height="16" fill="currentColor"></div>"#.to_owned(),
    ] {
        assert!(!icon_errors(Some(&wrong)).is_empty(), "accepted {wrong}");
    }

    assert_eq!(
        auth_errors(&json!({"authMethods": [{"id": "a", "name": "A"}]})),
        Vec::<String>::new()
    );
    assert_eq!(
        auth_errors(
            &json!({"authMethods": [{"id": "t", "name": "T", "_meta": {"terminal-auth": {}}}]})
        ),
        Vec::<String>::new()
    );
    assert!(!auth_errors(&json!({"authMethods": []})).is_empty());
    assert!(!auth_errors(&json!({})).is_empty());
    assert!(
        !auth_errors(&json!({"authMethods": [{"id": "e", "name": "E", "type": "env_var"}]}))
            .is_empty()
    );
}
