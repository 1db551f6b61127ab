//! Reading one `SKILL.md`: YAML front matter, then the Markdown body.
//!
//! The rules are those of the Agent Skills specification
//! (agentskills.io/specification, "Frontmatter"):
//! - `name` (required): 1–64 characters, lowercase alphanumeric characters and
//!   hyphens only, not starting or ending with a hyphen, no `--`, and equal to
//!   the name of the folder holding `SKILL.md`;
//! - `description` (required): 1–1024 characters;
//! - `license` (optional): a license name or the name of a bundled file;
//! - `compatibility` (optional): 1–500 characters;
//! - `metadata` (optional): a map from string keys to string values;
//! - `allowed-tools` (optional, experimental): a space-delimited string or a
//!   YAML sequence of strings.
//!
//! Other keys are ignored (Claude Code and others add their own, and the point
//! is to read the skills users already have). The front matter is real YAML
//! (folded descriptions, quoted strings, lists), so it is read with
//! `yaml-rust2`, a maintained pure-Rust YAML 1.2 parser with no further
//! dependencies worth naming; `serde_yaml` is deprecated, and a flat
//! `key: value` reader would reject valid skills. YAML aliases are refused
//! before loading: the loader copies aliased nodes, so a few lines of nested
//! aliases (the "billion laughs") would take all the memory there is.
use std::collections::BTreeMap;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

/// Longest `name` (characters).
pub const NAME_MAX: usize = 64;
/// Longest `description` (characters).
pub const DESCRIPTION_MAX: usize = 1024;
/// Longest `compatibility` (characters).
pub const COMPATIBILITY_MAX: usize = 500;

/// The parsed front matter and body of a valid `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SkillFile {
    pub name: String,
    pub description: String,
    pub license: Option<String>,
    pub compatibility: Option<String>,
    pub metadata: BTreeMap<String, String>,
    pub allowed_tools: Vec<String>,
    pub body: String,
}

/// Why a `SKILL.md` was not accepted; the text says what to fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

fn invalid(msg: impl Into<String>) -> Invalid {
    Invalid(msg.into())
}

/// Parses `text`, the content of `<folder>/SKILL.md`.
pub fn parse(text: &str, folder: &str) -> Result<SkillFile, Invalid> {
    let (front, body) = split(text)?;
    let doc = load_yaml(front)?;
    let Yaml::Hash(map) = doc else {
        return Err(invalid(
            "the front matter must be a YAML mapping of `key: value` lines",
        ));
    };
    let field = |key: &str| map.get(&Yaml::String(key.to_owned()));
    let name = required_string(field("name"), "name")?;
    check_name(&name, folder)?;
    let description = required_string(field("description"), "description")?;
    check_len("description", &description, DESCRIPTION_MAX)?;
    let license = optional_string(field("license"), "license")?;
    let compatibility = optional_string(field("compatibility"), "compatibility")?;
    if let Some(c) = &compatibility {
        check_len("compatibility", c, COMPATIBILITY_MAX)?;
    }
    let metadata = match field("metadata") {
        None | Some(Yaml::Null) => BTreeMap::new(),
        Some(Yaml::Hash(m)) => m
            .iter()
            .map(|(k, v)| match (scalar(k), scalar(v)) {
                (Some(k), Some(v)) => Ok((k, v)),
                _ => Err(invalid(
                    "`metadata` must map string keys to string values (quote nested values)",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "`metadata` must be a mapping of `key: value` lines",
            ));
        }
    };
    let allowed_tools = match field("allowed-tools") {
        None | Some(Yaml::Null) => Vec::new(),
        Some(Yaml::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Yaml::Array(items)) => items
            .iter()
            .map(|i| scalar(i).ok_or_else(|| invalid("`allowed-tools` entries must be strings")))
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "`allowed-tools` must be a space-separated string or a list of strings",
            ));
        }
    };
    Ok(SkillFile {
        name,
        description,
        license,
        compatibility,
        metadata,
        allowed_tools,
        body: body.trim().to_owned(),
    })
}

/// Splits `---` front matter from the body (the file must start with it).
fn split(text: &str) -> Result<(&str, &str), Invalid> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = || {
        invalid(
            "SKILL.md must start with YAML front matter: a `---` line, `name:` and `description:` lines, then a closing `---` line",
        )
    };
    let first_end = text.find('\n').ok_or_else(missing)?;
    if text[..first_end].trim_end() != "---" {
        return Err(missing());
    }
    let rest = &text[first_end + 1..];
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..offset], &rest[offset + line.len()..]));
        }
        offset += line.len();
    }
    Err(invalid(
        "the front matter has no closing `---` line after its `key: value` lines",
    ))
}

fn load_yaml(front: &str) -> Result<Yaml, Invalid> {
    let bad = |e: yaml_rust2::ScanError| {
        invalid(format!(
            "the front matter is not valid YAML: {e} (quote a value that holds `: ` or starts with a quote, `[` or `{{`)"
        ))
    };
    let mut parser = Parser::new_from_str(front);
    loop {
        match parser.next_token().map_err(bad)?.0 {
            Event::StreamEnd => break,
            Event::Alias(_) => {
                return Err(invalid(
                    "the front matter uses a YAML alias (`*name`); write the value out instead",
                ));
            }
            _ => {}
        }
    }
    let mut docs = YamlLoader::load_from_str(front).map_err(bad)?;
    match docs.len() {
        0 => Err(invalid(
            "the front matter is empty: add `name:` and `description:` lines",
        )),
        1 => Ok(docs.remove(0)),
        _ => Err(invalid(
            "the front matter holds more than one YAML document",
        )),
    }
}

/// A scalar as text (numbers and booleans as written, e.g. `version: 1.0`).
fn scalar(y: &Yaml) -> Option<String> {
    match y {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn required_string(y: Option<&Yaml>, key: &str) -> Result<String, Invalid> {
    match optional_string(y, key)? {
        Some(s) => Ok(s),
        None => Err(invalid(format!(
            "the front matter has no `{key}` (it is required)"
        ))),
    }
}

fn optional_string(y: Option<&Yaml>, key: &str) -> Result<Option<String>, Invalid> {
    match y {
        None | Some(Yaml::Null) => Ok(None),
        Some(Yaml::String(s)) if s.trim().is_empty() => {
            Err(invalid(format!("`{key}` is empty: give it a value")))
        }
        Some(Yaml::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err(invalid(format!("`{key}` must be a string (quote it)"))),
    }
}

fn check_len(key: &str, value: &str, max: usize) -> Result<(), Invalid> {
    let n = value.chars().count();
    if n > max {
        return Err(invalid(format!(
            "`{key}` is {n} characters long; the limit is {max}"
        )));
    }
    Ok(())
}

/// The `name` rules of the specification (see the module doc).
pub fn check_name(name: &str, folder: &str) -> Result<(), Invalid> {
    let n = name.chars().count();
    if n > NAME_MAX {
        return Err(invalid(format!(
            "`name` {name:?} is {n} characters long; the limit is {NAME_MAX}"
        )));
    }
    if !name
        .chars()
        .all(|c| c == '-' || (c.is_alphanumeric() && !c.is_uppercase()))
    {
        return Err(invalid(format!(
            "`name` {name:?} may only hold lowercase letters, digits and hyphens"
        )));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(invalid(format!(
            "`name` {name:?} must not start or end with a hyphen nor hold `--`"
        )));
    }
    if name != folder {
        return Err(invalid(format!(
            "`name` {name:?} differs from its folder name {folder:?}: rename one to match"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_specification_example() {
        let text = "---\nname: pdf-processing\ndescription: >-\n  Extract PDF text, fill forms.\n  Use when handling PDFs.\nlicense: Apache-2.0\ncompatibility: Requires python3\nmetadata:\n  author: example-org\n  version: \"1.0\"\n  rev: 2\nallowed-tools: Bash(git:*) Read\nuser-invocable: true\n---\n\n# PDF\n\nRun scripts/extract.py.\n";
        let s = parse(text, "pdf-processing").unwrap();
        assert_eq!(s.name, "pdf-processing");
        assert_eq!(
            s.description,
            "Extract PDF text, fill forms. Use when handling PDFs."
        );
        assert_eq!(s.license.as_deref(), Some("Apache-2.0"));
        assert_eq!(s.compatibility.as_deref(), Some("Requires python3"));
        assert_eq!(s.metadata["version"], "1.0");
        assert_eq!(s.metadata["rev"], "2");
        assert_eq!(s.allowed_tools, ["Bash(git:*)", "Read"]);
        assert_eq!(s.body, "# PDF\n\nRun scripts/extract.py.");
        // A list form of allowed-tools, CRLF line ends.
        let text = "---\r\nname: a\r\ndescription: 'x: y'\r\nallowed-tools:\r\n  - Read\r\n  - Grep\r\n---\r\nbody\r\n";
        let s = parse(text, "a").unwrap();
        assert_eq!(s.description, "x: y");
        assert_eq!(s.allowed_tools, ["Read", "Grep"]);
        assert_eq!(s.body, "body");
    }

    #[test]
    fn names_follow_the_rules() {
        for ok in ["a", "pdf-processing", "v2", "données", &"x".repeat(64)] {
            assert_eq!(check_name(ok, ok), Ok(()), "{ok}");
        }
        for bad in [
            "PDF-Processing",
            "-pdf",
            "pdf-",
            "pdf--processing",
            "pdf_processing",
            "a b",
            "../x",
            &"x".repeat(65),
        ] {
            assert!(check_name(bad, bad).is_err(), "{bad}");
        }
        let e = check_name("pdf", "pdf-tools").unwrap_err();
        assert!(e.0.contains("folder name \"pdf-tools\""), "{e}");
    }

    #[test]
    fn broken_files_say_what_to_fix() {
        let cases = [
            (
                "no front matter",
                "# Title\n",
                "must start with YAML front matter",
            ),
            (
                "unclosed",
                "---\nname: a\ndescription: d\n",
                "no closing `---`",
            ),
            ("no name", "---\ndescription: d\n---\n", "no `name`"),
            ("no description", "---\nname: a\n---\n", "no `description`"),
            (
                "empty description",
                "---\nname: a\ndescription: ''\n---\n",
                "`description` is empty",
            ),
            (
                "list name",
                "---\nname: [a]\ndescription: d\n---\n",
                "`name` must be a string",
            ),
            (
                "not yaml",
                "---\nname: a\ndescription: [x\n---\n",
                "not valid YAML",
            ),
            ("scalar", "---\njust text\n---\n", "must be a YAML mapping"),
            (
                "metadata",
                "---\nname: a\ndescription: d\nmetadata: [1]\n---\n",
                "`metadata` must be",
            ),
            (
                "nested metadata",
                "---\nname: a\ndescription: d\nmetadata:\n  k: {x: 1}\n---\n",
                "string values",
            ),
            (
                "tools",
                "---\nname: a\ndescription: d\nallowed-tools: {a: 1}\n---\n",
                "`allowed-tools` must be",
            ),
            (
                "alias",
                "---\nname: &n a\ndescription: *n\n---\n",
                "YAML alias",
            ),
            (
                "colon",
                "---\nname: a\ndescription: Use it: always\n---\n",
                "quote a value that holds `: `",
            ),
        ];
        for (what, text, needle) in cases {
            let e = parse(text, "a").unwrap_err();
            assert!(e.0.contains(needle), "{what}: {e}");
        }
        let long = format!("---\nname: a\ndescription: {}\n---\n", "d".repeat(1025));
        assert!(parse(&long, "a").unwrap_err().0.contains("limit is 1024"));
        let long = format!(
            "---\nname: a\ndescription: d\ncompatibility: {}\n---\n",
            "c".repeat(501)
        );
        assert!(parse(&long, "a").unwrap_err().0.contains("limit is 500"));
    }

    /// Nested aliases would expand exponentially in the loader: refused first.
    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("---\nname: a\ndescription: d\nx0: &a0 [lol, lol]\n");
        for i in 1..40 {
            let p = i - 1;
            text.push_str(&format!(
                "x{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        text.push_str("---\n");
        assert!(parse(&text, "a").unwrap_err().0.contains("YAML alias"));
    }
}
