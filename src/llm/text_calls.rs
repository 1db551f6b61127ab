//! Tool calls a model wrote as text.
//!
//! Small local models often write their calls in the reply text instead of
//! the structured `tool_calls` field: their chat template asks for a
//! `<tool_call>` block (Qwen, Hermes), a `[TOOL_CALLS]` list (Mistral) or a
//! `<|python_tag|>` line (Llama 3.1), and the server does not parse it (or
//! the model gets the closing tag wrong). When a reply has no structured
//! call, [`extract`] finds these, so the agent runs them as calls; the text
//! around them is kept as prose. [`Holdback`] keeps such text from being
//! streamed to the user as the answer while the reply is still arriving.
//!
//! What counts as a call: a JSON object with a string `name` and an object
//! (or JSON-text) `arguments` / `parameters` (also inside `function`, as
//! OpenAI writes it). A tool that was not offered is still taken as a call
//! (so the agent can tell the model it does not exist) when the form says
//! "this is a call" (a tag, or a fence labelled `tool_call`) or the object
//! has nothing but those two keys; in a plain ```json fence or a bare object
//! only an offered name counts, since an answer may well show JSON.
//!
//! Text inside content is not a call (SECURITY.md "Text the model writes"):
//! a call inside explanatory prose (an example with more than a short
//! lead-in and trailer around it, or a lead-in that says "for example") is
//! an answer ([`extract`]), and so is a reply whose call is written, as it
//! stands, in a tool's result, the prompt or the system prompt
//! ([`quoted_in`]): the model quoting a file that holds a call does not
//! make the call. A call that is taken runs exactly as a structured one,
//! through the same permission check.
use serde_json::{Map, Value};

use super::ToolCallRequest;

/// Calls found in a reply's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextCalls {
    pub calls: Vec<ToolCallRequest>,
    /// The reply's text without the calls (trimmed).
    pub prose: String,
    /// The text of each part of the reply that held calls, as written.
    pub written: Vec<String>,
}

/// Openings that start a call in text (lower-case; matched without case).
const TAGS: [&str; 3] = ["<tool_call>", "[tool_calls]", "<|python_tag|>"];
/// Fence labels whose block may hold a call.
const FENCE_LABELS: [&str; 4] = ["json", "tool_call", "tool_calls", "tool_code"];
/// Where a call written after `<|python_tag|>` ends.
const PYTHON_TAG_ENDS: [&str; 3] = ["<|eom_id|>", "<|eot_id|>", "<|end_of_text|>"];

/// The calls to tools in `text`, if it holds any; `offered` are the names
/// of this turn's tools.
pub fn extract(text: &str, offered: &[&str]) -> Option<TextCalls> {
    let mut found: Vec<(std::ops::Range<usize>, Value)> = Vec::new();
    tagged(text, offered, &mut found);
    if found.is_empty() {
        fenced(text, offered, &mut found);
    }
    if found.is_empty() {
        let trimmed = text.trim();
        let start = text.len() - text.trim_start().len();
        // A fence line the model left unpaired (a closing ``` after the
        // calls, an opening ```json before them) is not prose.
        let bare = without_fence_lines(trimmed);
        for v in json_values(&bare).0 {
            push_calls(v, offered, false, start..start + trimmed.len(), &mut found);
        }
        // The whole reply must be the call(s): JSON inside prose is an answer.
        if json_values(&bare).1 != bare.len() {
            found.clear();
        }
    }
    if found.is_empty() {
        return None;
    }
    let mut prose = String::new();
    let mut at = 0;
    let mut spans: Vec<std::ops::Range<usize>> = found.iter().map(|(r, _)| r.clone()).collect();
    spans.sort_by_key(|r| r.start);
    spans.dedup();
    let first = spans.first().map_or(0, |r| r.start);
    let last = spans.iter().map(|r| r.end).max().unwrap_or(text.len());
    if in_prose(&text[..first], &text[last.min(text.len())..]) {
        return None;
    }
    let written = spans.iter().map(|r| text[r.clone()].to_owned()).collect();
    for r in &spans {
        if r.start >= at {
            prose.push_str(&text[at..r.start]);
            at = r.end;
        } else {
            at = at.max(r.end);
        }
    }
    prose.push_str(&text[at.min(text.len())..]);
    let calls = found
        .into_iter()
        .enumerate()
        .filter_map(|(i, (_, v))| to_request(&v, i))
        .collect::<Vec<_>>();
    (!calls.is_empty()).then(|| TextCalls {
        calls,
        prose: prose.trim().to_owned(),
        written,
    })
}

/// Lead-ins that present what follows as an example, not as a call.
const EXAMPLE_LEADS: [&str; 7] = [
    "for example",
    "an example",
    "example:",
    "e.g.",
    "for instance",
    "would look like",
    "looks like this",
];

/// Whether calls with `before` and `after` around them sit inside
/// explanatory prose: the lead-in presents an example, or there is text
/// after the calls and the two together are more than a short lead-in and
/// a short closing line (a model that calls a tool stops to wait for it).
fn in_prose(before: &str, after: &str) -> bool {
    let (before, after) = (before.trim(), after.trim());
    let lead = before.to_lowercase();
    if EXAMPLE_LEADS.iter().any(|w| lead.contains(w)) {
        return true;
    }
    let short = |s: &str| s.chars().count() <= 160 && s.lines().count() <= 2;
    let framed = short(before) && short(after);
    !after.is_empty() && !framed
}

/// Whether a call in `found` is written, as it stands, in one of
/// `contents` (tool results, the prompt, the system prompt): then the
/// model quoted content, and the reply is an answer. Compared without
/// case, whitespace, call tags, fences and the line numbers `read_file`
/// puts before each line.
pub fn quoted_in(found: &TextCalls, contents: &[&str]) -> bool {
    let calls: Vec<String> = found
        .written
        .iter()
        .map(|w| normalised(w))
        .filter(|w| w.len() >= 8)
        .collect();
    if calls.is_empty() {
        return false;
    }
    contents.iter().any(|c| {
        let c = normalised(&without_line_numbers(c));
        calls.iter().any(|w| c.contains(w.as_str()))
    })
}

/// `text` without the `  LINE\t` prefix `read_file` gives each line.
fn without_line_numbers(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            match (digits > 0, t[digits..].strip_prefix('\t')) {
                (true, Some(rest)) => rest,
                _ => l,
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lower case, without whitespace and without the tags and fences that
/// wrap a call written as text.
fn normalised(text: &str) -> String {
    let mut s: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    for token in TAGS.iter().chain(&PYTHON_TAG_ENDS).chain(&[
        "</tool_call>",
        "</tools>",
        "</tool>",
        "[args]",
    ]) {
        s = s.replace(token, "");
    }
    for label in FENCE_LABELS {
        s = s.replace(&format!("```{label}"), "");
    }
    s.replace("```", "")
}

/// `<tool_call>…`, `[TOOL_CALLS]…` and `<|python_tag|>…`: each runs to its
/// closing tag (`</tool_call>`, or the wrong `</tools>`), the next opening,
/// or the end of the reply.
fn tagged(text: &str, offered: &[&str], found: &mut Vec<(std::ops::Range<usize>, Value)>) {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some((start, tag)) = TAGS
        .iter()
        .filter_map(|t| lower[from..].find(t).map(|i| (from + i, *t)))
        .min_by_key(|(i, _)| *i)
    {
        let body_start = start + tag.len();
        let rest = &lower[body_start..];
        let next_open = TAGS
            .iter()
            .filter_map(|t| rest.find(t))
            .min()
            .unwrap_or(rest.len());
        let closers: &[&str] = match tag {
            "<tool_call>" => &["</tool_call>", "</tools>", "</tool>"],
            "<|python_tag|>" => &PYTHON_TAG_ENDS,
            _ => &[],
        };
        let (body_end, end) = closers
            .iter()
            .filter_map(|c| rest.find(c).map(|i| (i, i + c.len())))
            .filter(|(i, _)| *i <= next_open)
            .min_by_key(|(i, _)| *i)
            .unwrap_or((next_open, next_open));
        let body = &text[body_start..body_start + body_end];
        let span = start..body_start + end;
        if tag == "[tool_calls]" {
            mistral(body, offered, span.clone(), found);
        } else {
            // Llama may put several calls on the line, separated by `;`.
            let mut rest = strip_fence(body).trim();
            loop {
                let (values, used) = json_values(rest);
                if values.is_empty() {
                    break;
                }
                for v in values {
                    push_calls(v, offered, true, span.clone(), found);
                }
                match rest[used..].trim_start().strip_prefix(';') {
                    Some(more) => rest = more.trim_start(),
                    None => break,
                }
            }
        }
        from = span.end.max(body_start);
    }
}

/// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]`, or the newer
/// `[TOOL_CALLS]name[ARGS]{…}`.
fn mistral(
    body: &str,
    offered: &[&str],
    span: std::ops::Range<usize>,
    found: &mut Vec<(std::ops::Range<usize>, Value)>,
) {
    let trimmed = body.trim();
    if let Some((name, args)) = trimmed.split_once("[ARGS]") {
        if let Some(v) = json_values(args.trim()).0.into_iter().next() {
            let call = serde_json::json!({"name": name.trim(), "arguments": v});
            push_calls(call, offered, true, span, found);
        }
        return;
    }
    for v in json_values(trimmed).0 {
        push_calls(v, offered, true, span.clone(), found);
    }
}

/// Fenced blocks labelled json / tool_call (or unlabelled, holding JSON).
fn fenced(text: &str, offered: &[&str], found: &mut Vec<(std::ops::Range<usize>, Value)>) {
    let mut from = 0;
    while let Some(i) = text[from..].find("```") {
        let open = from + i;
        let after = open + 3;
        let line_end = text[after..].find('\n').map_or(text.len(), |j| after + j);
        let label = text[after..line_end].trim().to_ascii_lowercase();
        let body_start = (line_end + 1).min(text.len());
        let (body_end, end) = match text[body_start..].find("```") {
            Some(j) => (body_start + j, body_start + j + 3),
            None => (text.len(), text.len()),
        };
        let body = &text[body_start..body_end];
        let labelled = FENCE_LABELS.contains(&label.as_str());
        if labelled || (label.is_empty() && body.trim_start().starts_with(['{', '['])) {
            let explicit = label.starts_with("tool_c");
            for v in json_values(body.trim()).0 {
                push_calls(v, offered, explicit, open..end, found);
            }
        }
        from = end.max(after);
    }
}

/// `text` without its lines that are only a code fence (```` ``` ````,
/// ```` ```json ````).
fn without_fence_lines(text: &str) -> String {
    text.lines()
        .filter(|l| match l.trim().strip_prefix("```") {
            Some(info) => info.contains(['`', ' ', '{', '[']),
            None => true,
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// A fence around a tag's body (some models write both).
fn strip_fence(body: &str) -> &str {
    let t = body.trim();
    match t.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.split_once('\n').map_or("", |(_, r)| r);
            rest.trim_end().strip_suffix("```").unwrap_or(rest)
        }
        None => t,
    }
}

/// The JSON values at the start of `s`, one after another (whitespace
/// between), and how many bytes of `s` they took. A model imitating a
/// template that escapes braces writes `{{"name": …}}`: one doubled opening
/// brace is dropped, and closing braces left over after the values are
/// taken with them.
fn json_values(s: &str) -> (Vec<Value>, usize) {
    let plain = plain_json_values(s);
    if !plain.0.is_empty() {
        return with_stray_closers(s, plain);
    }
    if !s.starts_with("{{") {
        return plain;
    }
    let (values, used) = plain_json_values(&s[1..]);
    if values.is_empty() {
        return plain;
    }
    with_stray_closers(s, (values, used + 1))
}

/// `(values, used)` of `s` with the `}` that follow the values taken too,
/// when nothing but whitespace follows them.
fn with_stray_closers(s: &str, (values, used): (Vec<Value>, usize)) -> (Vec<Value>, usize) {
    let rest = &s[used..];
    let closers = rest.trim_start_matches(|c: char| c == '}' || c.is_whitespace());
    if closers.len() < rest.len() && closers.is_empty() && rest.contains('}') {
        (values, s.len())
    } else {
        (values, used)
    }
}

/// The JSON values at the start of `s`; when it does not parse as JSON but
/// reads as an attempt at it (it starts with `{` or `[`), the values of
/// [`repaired`] `s`, which then take the whole of `s`.
fn plain_json_values(s: &str) -> (Vec<Value>, usize) {
    let plain = strict_json_values(s);
    if !plain.0.is_empty() || !s.trim_start().starts_with(['{', '[']) {
        return plain;
    }
    let fixed = repaired(s);
    let (values, used) = strict_json_values(&fixed);
    if values.is_empty() || !fixed[used..].trim().is_empty() {
        return plain;
    }
    (values, s.len())
}

/// `s` with what models commonly break in JSON mended, so that serde_json
/// (which stays the decoder) can read it: inside strings, a quote that
/// cannot end the string (not followed by `:` for a key, or by `,` `}` `]`
/// or the end for a value; so `"""` and `"port": 8080` quoted unescaped),
/// an invalid escape such as `\ ` (the backslash kept as text), raw line
/// breaks and tabs; outside strings, single-quoted strings and trailing
/// commas.
pub fn repaired(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 16);
    // The open containers: `true` for an object.
    let mut stack: Vec<bool> = Vec::new();
    // In an object, whether the next string is a key.
    let mut expect_key = false;
    let mut i = 0;
    let next_solid = |from: usize| {
        chars[from..]
            .iter()
            .position(|c| !c.is_whitespace())
            .map(|p| from + p)
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                let quote = c;
                let key = expect_key && stack.last() == Some(&true);
                out.push('"');
                i += 1;
                while i < chars.len() {
                    let c = chars[i];
                    if c == '\\' {
                        match chars.get(i + 1) {
                            Some(&n) if "\"\\/bfnrtu".contains(n) => {
                                out.push('\\');
                                out.push(n);
                                i += 2;
                            }
                            Some('\'') => {
                                out.push('\'');
                                i += 2;
                            }
                            _ => {
                                out.push_str("\\\\");
                                i += 1;
                            }
                        }
                        continue;
                    }
                    if c == quote {
                        let after = next_solid(i + 1).map(|j| chars[j]);
                        let ends = match (key, after) {
                            (true, Some(':')) | (false, None) => true,
                            (false, Some('}' | ']')) => true,
                            (false, Some(',')) => {
                                // Followed by the next key or item.
                                let k = next_solid(i + 1).and_then(|j| next_solid(j + 1));
                                k.is_none_or(|k| "\"'{[-0123456789tfn}]".contains(chars[k]))
                            }
                            _ => false,
                        };
                        if ends {
                            i += 1;
                            break;
                        }
                    }
                    match c {
                        '"' => out.push_str("\\\""),
                        '\n' => out.push_str("\\n"),
                        '\r' => out.push_str("\\r"),
                        '\t' => out.push_str("\\t"),
                        c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
                        c => out.push(c),
                    }
                    i += 1;
                }
                out.push('"');
                expect_key = false;
                continue;
            }
            '{' => {
                stack.push(true);
                expect_key = true;
            }
            '[' => stack.push(false),
            '}' | ']' => {
                stack.pop();
            }
            ',' => {
                if next_solid(i + 1).is_some_and(|j| matches!(chars[j], '}' | ']')) {
                    i += 1;
                    continue;
                }
                expect_key = stack.last() == Some(&true);
            }
            ':' => expect_key = false,
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Why the call `text` plainly attempts does not parse, even repaired:
/// serde_json's error, with its line and column. A call is plainly
/// attempted when the reply is a call tag, a fence or a bare object whose
/// text names a key of a call (`"name"` with `"arguments"` or
/// `"parameters"`) and one of the `offered` tools, outside explanatory prose.
pub fn broken_call(text: &str, offered: &[&str]) -> Option<String> {
    if extract(text, offered).is_some() {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let start = TAGS
        .iter()
        .chain(&["```"])
        .filter_map(|t| lower.find(t))
        .min()
        .or_else(|| {
            text.trim_start()
                .starts_with('{')
                .then(|| text.len() - text.trim_start().len())
        })?;
    let attempt = &text[start..];
    let names_a_tool = offered
        .iter()
        .any(|n| attempt.contains(&format!("\"{n}\"")));
    let call_keys = attempt.contains("\"name\"")
        && (attempt.contains("\"arguments\"") || attempt.contains("\"parameters\""));
    if !names_a_tool || !call_keys || in_prose(&text[..start], "") {
        return None;
    }
    let open = attempt.find('{')?;
    let body = without_fence_lines(&attempt[open..]);
    let body = TAGS
        .iter()
        .chain(&PYTHON_TAG_ENDS)
        .chain(&["</tool_call>", "</tools>", "</tool>"])
        .fold(body, |b, t| {
            let l = b.to_ascii_lowercase();
            match l.find(t) {
                Some(i) => b[..i].to_owned(),
                None => b,
            }
        });
    let err = match serde_json::from_str::<Value>(repaired(body.trim()).trim()) {
        Err(e) => e,
        Ok(_) => match serde_json::from_str::<Value>(body.trim()) {
            Err(e) => e,
            Ok(_) => return None,
        },
    };
    Some(format!("{err}"))
}

fn strict_json_values(s: &str) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut it = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    let mut used = 0;
    while let Some(Ok(v)) = it.next() {
        out.push(v);
        used = it.byte_offset();
    }
    let used = used + (s.len() - used - s[used..].trim_start().len());
    (out, used)
}

/// Adds the call(s) in `v` (an object, or a list of them) to `found`.
fn push_calls(
    v: Value,
    offered: &[&str],
    explicit: bool,
    span: std::ops::Range<usize>,
    found: &mut Vec<(std::ops::Range<usize>, Value)>,
) {
    match v {
        Value::Array(items) => {
            for item in items {
                push_calls(item, offered, explicit, span.clone(), found);
            }
        }
        Value::Object(obj) => {
            if let Some(call) = call_of(obj, offered, explicit) {
                found.push((span, call));
            }
        }
        _ => {}
    }
}

/// The call an object describes, normalised to `{name, arguments}`.
fn call_of(mut obj: Map<String, Value>, offered: &[&str], explicit: bool) -> Option<Value> {
    if let Some(Value::Object(f)) = obj.get("function")
        && f.get("name").is_some_and(Value::is_string)
    {
        let f = f.clone();
        return call_of(f, offered, explicit);
    }
    // `{"function": "edit_file", "arguments": {…}}`: the name under `function`.
    if !obj.contains_key("name")
        && let Some(Value::String(f)) = obj.remove("function")
    {
        obj.insert("name".into(), Value::String(f));
    }
    let name = obj.get("name")?.as_str()?.trim().to_owned();
    if name.is_empty() {
        return None;
    }
    let key = ["arguments", "parameters", "args", "input"]
        .into_iter()
        .find(|k| obj.contains_key(*k));
    let args = match key.and_then(|k| obj.remove(k)) {
        Some(Value::Object(m)) => Value::Object(m),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
            Ok(Value::Object(m)) => Value::Object(m),
            _ => return None,
        },
        Some(Value::Null) | None => Value::Object(Map::new()),
        // The value of the tool's one parameter, without its name (a
        // plan's entries as a bare list): [`fill_sole_parameter`] names it.
        Some(Value::Array(items)) => Value::Array(items),
        Some(_) => return None,
    };
    let only_call_keys = obj.keys().all(|k| k == "name" || k == "type" || k == "id");
    let known = offered.contains(&name.as_str());
    let shaped = only_call_keys && key.is_some();
    (known || ((explicit || shaped) && only_call_keys))
        .then(|| serde_json::json!({"name": name, "arguments": args}))
}

/// Arguments written as a bare list, for a tool whose parameters have one
/// list-valued property (`{"entries": [...]}` written as `[...]`): the list
/// becomes that property. Any other call is returned as it was, and the
/// tool's own argument check tells the model what is wrong.
pub fn fill_sole_parameter(call: &mut ToolCallRequest, parameters: &Value) {
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&call.arguments) else {
        return;
    };
    let Some(props) = parameters.get("properties").and_then(Value::as_object) else {
        return;
    };
    let mut lists = props
        .iter()
        .filter(|(_, p)| p.get("type").and_then(Value::as_str) == Some("array"));
    if let (Some((name, _)), None) = (lists.next(), lists.next()) {
        call.arguments = serde_json::json!({ name: items }).to_string();
    }
}

fn to_request(v: &Value, i: usize) -> Option<ToolCallRequest> {
    Some(ToolCallRequest {
        id: format!("call_text_{:08x}_{i}", fastrand::u32(..)),
        name: v.get("name")?.as_str()?.to_owned(),
        arguments: v.get("arguments")?.to_string(),
    })
}

/// Keeps back streamed text that may be a call written as text, so it is
/// not shown as the answer before the reply is complete: from an opening
/// tag or a ```json / ```tool_call fence on, and a whole reply that starts
/// like JSON. Text before it streams as usual.
#[derive(Debug, Default)]
pub struct Holdback {
    pending: String,
    held: bool,
    shown_any: bool,
}

/// Openings held back (lower-case, matched without case).
const OPENINGS: [&str; 6] = [
    "<tool_call>",
    "[tool_calls]",
    "<|python_tag|>",
    "```json",
    "```tool_c",
    "```\n{",
];

impl Holdback {
    /// Takes a chunk of text; returns what may be shown now.
    pub fn push(&mut self, t: &str) -> String {
        self.pending.push_str(t);
        if self.held {
            return String::new();
        }
        if !self.shown_any {
            let start = self.pending.trim_start();
            if start.is_empty() {
                return String::new();
            }
            if start.starts_with(['{', '[']) {
                self.held = true;
                return String::new();
            }
        }
        let lower = self.pending.to_ascii_lowercase();
        if let Some(i) = OPENINGS.iter().filter_map(|o| lower.find(o)).min() {
            self.held = true;
            let shown: String = self.pending.drain(..i).collect();
            self.shown_any |= !shown.is_empty();
            return shown;
        }
        // Keep a tail that may be the start of an opening.
        let keep = (1..=lower.len())
            .rev()
            .map(|n| lower.len() - n)
            .filter(|&i| lower.is_char_boundary(i))
            .find(|&i| OPENINGS.iter().any(|o| o.starts_with(&lower[i..])))
            .unwrap_or(lower.len());
        let shown: String = self.pending.drain(..keep).collect();
        self.shown_any |= !shown.is_empty();
        shown
    }

    /// The text still held back at the end of the reply.
    pub fn finish(self) -> String {
        self.pending
    }
}

#[cfg(test)]
#[path = "text_calls_tests.rs"]
mod tests;
