//! Replies as small local models wrote them (Qwen2.5-Coder 1.5B under
//! llama-server with its own template, Hermes-style, Mistral, Llama 3.1).
use super::*;

const TOOLS: [&str; 5] = [
    "read_file",
    "edit_file",
    "write_file",
    "run_command",
    "find",
];

fn calls(text: &str) -> Vec<(String, Value)> {
    extract(text, &TOOLS)
        .map(|t| {
            t.calls
                .into_iter()
                .map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn qwen_tool_call_closed_by_tools() {
    // Qwen2.5-Coder 1.5B, llama-server --jinja with the model's own template.
    let text = "<tool_call>\n{\"name\": \"run_command\", \"arguments\": {\"command\": \"ls -la\"}}\n</tools>";
    assert_eq!(
        calls(text),
        [(
            "run_command".into(),
            serde_json::json!({"command": "ls -la"})
        )]
    );
    let t = extract(text, &TOOLS).unwrap();
    assert_eq!(t.prose, "");
}

#[test]
fn tool_call_closed_properly_unclosed_and_several() {
    let text = "I will read the file first.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/lib.rs\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"find\", \"arguments\": {\"pattern\": \"*.toml\"}}";
    let t = extract(text, &TOOLS).unwrap();
    assert_eq!(t.calls.len(), 2);
    assert_eq!(t.calls[0].name, "read_file");
    assert_eq!(t.calls[1].name, "find");
    assert_eq!(t.prose, "I will read the file first.");
    assert_ne!(t.calls[0].id, t.calls[1].id);
}

#[test]
fn fenced_json_with_arguments_or_parameters() {
    let text = "To count the lines, run:\n\n```json\n{\n  \"name\": \"run_command\",\n  \"arguments\": {\n    \"command\": \"wc -l data.txt\"\n  }\n}\n```";
    assert_eq!(
        calls(text),
        [(
            "run_command".into(),
            serde_json::json!({"command": "wc -l data.txt"})
        )]
    );
    let text =
        "```tool_call\n{\"name\": \"read_file\", \"parameters\": {\"path\": \"README.md\"}}\n```";
    assert_eq!(
        calls(text),
        [("read_file".into(), serde_json::json!({"path": "README.md"}))]
    );
    // Arguments as JSON text, and the OpenAI `function` shape.
    let text = "```json\n{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.py\\\"}\"}}\n```";
    assert_eq!(
        calls(text),
        [("read_file".into(), serde_json::json!({"path": "a.py"}))]
    );
}

#[test]
fn bare_object_that_is_the_whole_reply() {
    let text = "  {\"name\": \"edit_file\", \"arguments\": {\"path\": \"a.py\", \"old_string\": \"x = 1\", \"new_string\": \"x = 2\"}}\n";
    assert_eq!(calls(text).len(), 1);
    // JSON inside prose is an answer, not a call.
    let text = "The config should be {\"name\": \"read_file\", \"arguments\": {}} as shown.";
    assert!(extract(text, &TOOLS).is_none());
}

#[test]
fn mistral_tool_calls_both_forms() {
    let text = "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"main.go\"}}, {\"name\": \"run_command\", \"arguments\": {\"command\": \"go test ./...\"}}]";
    let c = calls(text);
    assert_eq!(c.len(), 2);
    assert_eq!(c[1].1["command"], "go test ./...");
    let text = "[TOOL_CALLS]run_command[ARGS]{\"command\": \"pytest -q\"}";
    assert_eq!(
        calls(text),
        [(
            "run_command".into(),
            serde_json::json!({"command": "pytest -q"})
        )]
    );
}

#[test]
fn llama_python_tag() {
    let text = "<|python_tag|>{\"name\": \"run_command\", \"parameters\": {\"command\": \"cargo test\"}}<|eom_id|>";
    assert_eq!(
        calls(text),
        [(
            "run_command".into(),
            serde_json::json!({"command": "cargo test"})
        )]
    );
    let text = "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}";
    assert_eq!(calls(text).len(), 2);
}

#[test]
fn unknown_names_only_where_the_form_says_call() {
    // A tag: taken as a call so the agent can say the tool does not exist.
    let c =
        calls("<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"cmd\": \"ls\"}}\n</tool_call>");
    assert_eq!(c[0].0, "bash");
    // A bare object of exactly name + arguments is a call too.
    assert_eq!(
        calls("{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}")[0].0,
        "shell"
    );
    // JSON data in an answer with an unknown name is not.
    let text = "Here is the package file:\n```json\n{\"name\": \"my-app\", \"version\": \"1.0.0\", \"scripts\": {}}\n```";
    assert!(extract(text, &TOOLS).is_none());
    let text =
        "```json\n{\"name\": \"widget\", \"parameters\": {\"size\": 3}, \"color\": \"red\"}\n```";
    assert!(extract(text, &TOOLS).is_none());
    // Other code fences are left alone.
    assert!(extract("```python\nprint({'name': 1})\n```", &TOOLS).is_none());
    assert!(extract("Just an answer.", &TOOLS).is_none());
}

#[test]
fn holdback_streams_prose_and_keeps_calls() {
    let mut h = Holdback::default();
    let mut shown = String::new();
    for piece in [
        "Let me ",
        "look. <to",
        "ol_call>\n{\"name\": ",
        "\"read_file\"}",
    ] {
        shown.push_str(&h.push(piece));
    }
    assert_eq!(shown, "Let me look. ");
    assert!(h.finish().starts_with("<tool_call>"));

    // A reply that starts like JSON is held whole.
    let mut h = Holdback::default();
    assert_eq!(h.push("  "), "");
    assert_eq!(h.push("{\"name\""), "");
    assert_eq!(h.finish(), "  {\"name\"");

    // A fence is held until its label is known.
    let mut h = Holdback::default();
    assert_eq!(h.push("Run:\n``"), "Run:\n");
    assert_eq!(h.push("`py"), "```py");
    let mut h = Holdback::default();
    assert_eq!(h.push("Run:\n```"), "Run:\n");
    assert_eq!(h.push("JSON\n{}"), "");
    // Plain prose streams at once, multi-byte text included.
    let mut h = Holdback::default();
    assert_eq!(h.push("Grüße, "), "Grüße, ");
    assert_eq!(h.push("done <"), "done ");
    assert_eq!(h.push("b>"), "<b>");
}

#[test]
fn several_bare_objects_with_a_stray_fence() {
    // Qwen2.5-Coder 1.5B (llama-server, its own template), after an
    // edit_file error: two calls, one per line, and a closing fence it
    // never opened.
    let text = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"greet.py\"}}\n{\"name\": \"edit_file\", \"arguments\": {\"path\": \"greet.py\", \"old_string\": \"Syntax error\", \"new_string\": \"Hello, world!\", \"replace_all\": false}}\n```";
    let got = calls(text);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].0, "read_file");
    assert_eq!(got[1].0, "edit_file");
    assert_eq!(got[1].1["old_string"], "Syntax error");
    // Prose around the objects still makes it an answer.
    assert!(
        calls("Here is how:\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```")
            .is_empty()
    );
}

#[test]
fn doubled_braces_around_a_bare_call() {
    // Qwen2.5-Coder 1.5B asked to fix a syntax error (bench task 07): it
    // copied the doubled braces of a template that escapes them, and closed
    // with two more than it opened.
    let text = r#"{{"name": "edit_file", "arguments": {"path": "greet.py", "old_string": "def greet(name):", "new_string": "def greet(name) -> None:", "replace_all": false}}}}"#;
    assert_eq!(
        calls(text),
        [(
            "edit_file".into(),
            serde_json::json!({"path": "greet.py", "old_string": "def greet(name):", "new_string": "def greet(name) -> None:", "replace_all": false})
        )]
    );
    assert_eq!(extract(text, &TOOLS).unwrap().prose, "");
    // Stray closing braces after a tagged call too.
    let text = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.py\"}}}\n</tool_call>";
    assert_eq!(
        calls(text),
        [("read_file".into(), serde_json::json!({"path": "a.py"}))]
    );
    // Prose with braces in it is still an answer.
    assert!(calls("{{ a template }} is how Jinja prints a value.").is_empty());
    assert!(calls(r#"{"name": "read_file", "arguments": {"path": "a"}} and then }"#).is_empty());
}

#[test]
fn arguments_as_a_bare_list_fill_the_tools_one_list_parameter() {
    // Qwen2.5-Coder 1.5B (bench task 02): the plan's entries without
    // their parameter name.
    let text = "```json\n{\n    \"name\": \"update_plan\",\n    \"arguments\": [\n        {\n            \"content\": \"Implement is_palindrome\",\n            \"status\": \"in_progress\"\n        }\n    ]\n}\n```";
    let found = extract(text, &["update_plan"]).unwrap();
    let mut call = found.calls[0].clone();
    let plan_schema = serde_json::json!({"type": "object", "properties": {
        "entries": {"type": "array", "items": {"type": "object"}}
    }, "required": ["entries"]});
    fill_sole_parameter(&mut call, &plan_schema);
    assert_eq!(
        serde_json::from_str::<Value>(&call.arguments).unwrap(),
        serde_json::json!({"entries": [{"content": "Implement is_palindrome", "status": "in_progress"}]})
    );
    // A tool with no list parameter, or two, keeps the list: its own
    // argument check answers the model.
    let mut call = found.calls[0].clone();
    fill_sole_parameter(
        &mut call,
        &serde_json::json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    );
    assert!(call.arguments.starts_with('['));
    let mut call = found.calls[0].clone();
    fill_sole_parameter(
        &mut call,
        &serde_json::json!({"type": "object", "properties": {
            "a": {"type": "array"}, "b": {"type": "array"}}}),
    );
    assert!(call.arguments.starts_with('['));
    // Arguments that are an object are never touched.
    let mut call = calls_of(r#"{"name": "read_file", "arguments": {"path": "a"}}"#);
    fill_sole_parameter(&mut call, &plan_schema);
    assert_eq!(call.arguments, r#"{"path":"a"}"#);
}

fn calls_of(text: &str) -> ToolCallRequest {
    extract(text, &TOOLS).unwrap().calls.remove(0)
}

#[test]
fn the_name_under_function() {
    // Qwen2.5-Coder 1.5B (bench task 02), in a json fence.
    let text = "```json\n{\"function\": \"edit_file\", \"arguments\": {\"path\": \"text.py\", \"old_string\": \"raise NotImplementedError\", \"new_string\": \"return s == s[::-1]\", \"replace_all\": false}}\n```";
    assert_eq!(
        calls(text),
        [(
            "edit_file".into(),
            serde_json::json!({"path": "text.py", "old_string": "raise NotImplementedError", "new_string": "return s == s[::-1]", "replace_all": false})
        )]
    );
    // A JSON answer that merely has a `function` key stays an answer.
    assert!(calls("```json\n{\"function\": \"main\", \"line\": 3}\n```").is_empty());
}

#[test]
fn a_call_shown_as_an_example_in_prose_is_not_a_call() {
    // Issue 42 item 4: an explanation with a fenced example of a call.
    let call = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"example.txt\", \"content\": \"hello\"}}\n```";
    let text = format!(
        "The agent writes files with the write_file tool. A call has a name and arguments, for example:\n{call}\nThis would create example.txt holding hello."
    );
    assert!(extract(&text, &TOOLS).is_none());
    // A lead-in that says "example" is enough, and so is a long
    // explanation on both sides.
    assert!(extract(&format!("Here is an example:\n{call}"), &TOOLS).is_none());
    let long = "The write_file tool takes a path and the whole new content of the file, and replaces what was there. ".repeat(3);
    assert!(extract(&format!("{long}\n{call}\n{long}"), &TOOLS).is_none());
    // A short lead-in, or a short line after, is still a call.
    assert_eq!(calls(&format!("I will write it now.\n{call}")).len(), 1);
    assert_eq!(
        calls(&format!("Writing the file.\n{call}\nI will check it next.")).len(),
        1
    );
}

#[test]
fn a_call_quoted_from_content_is_not_a_call() {
    let file = "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"Makefile\", \"content\": \"all:\\n\\techo hi\\n\"}}\n</tool_call>\n";
    // As read_file shows it: numbered lines.
    let shown: String = file
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{:>6}\t{l}\n", i + 1))
        .collect();
    // Quoted verbatim, or with other spacing and another wrapper.
    for reply in [
        file.to_owned(),
        "```json\n{\"name\":\"write_file\",\n \"arguments\":{\"path\":\"Makefile\",\"content\":\"all:\\n\\techo hi\\n\"}}\n```"
            .to_owned(),
    ] {
        let found = extract(&reply, &TOOLS).expect("a call by form");
        assert!(quoted_in(&found, &["other", &shown]), "{reply}");
        assert!(quoted_in(&found, &[file]), "{reply}");
    }
    // A call of the model's own is not in the content.
    let own = extract(
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"Makefile\"}}\n</tool_call>",
        &TOOLS,
    )
    .unwrap();
    assert!(!quoted_in(&own, &[&shown, "read Makefile please"]));
}

#[test]
fn broken_json_that_models_write_is_repaired() {
    // Issue 47 item 1, as traced: a docstring's `"""` unescaped inside
    // new_string, a `\ ` escape, inner quotes unescaped, plus trailing
    // commas, single quotes and a raw line break.
    let text = "```json\n{\"name\": \"edit_file\", \"arguments\": {\"path\": \"m.py\", \"old_string\": \"def f():\\n    pass\", \"new_string\": \"def f():\\n    \"\"\"Say hi.\"\"\"\\n    return 1\"}}\n```";
    let c = calls(text);
    assert_eq!(c.len(), 1, "{text}");
    assert_eq!(
        c[0].1["new_string"],
        "def f():\n    \"\"\"Say hi.\"\"\"\n    return 1"
    );
    let text = "<tool_call>\n{\"name\": \"run_command\", \"arguments\": {\"command\": \"ls my\\ dir\"}}\n</tool_call>";
    assert_eq!(calls(text)[0].1["command"], "ls my\\ dir");
    let text = "{\"name\": \"edit_file\", \"arguments\": {\"path\": \"c.json\", \"old_string\": \"\"port\": 8080,\", \"new_string\": \"\"port\": 9090,\"}}";
    let c = calls(text);
    assert_eq!(c[0].1["old_string"], "\"port\": 8080,");
    assert_eq!(c[0].1["new_string"], "\"port\": 9090,");
    let text = "<tool_call>\n{'name': 'write_file', 'arguments': {'path': 'a.txt', 'content': 'it\\'s\nhere',},}\n</tool_call>";
    let c = calls(text);
    assert_eq!(
        c[0].1,
        serde_json::json!({"path": "a.txt", "content": "it's\nhere"})
    );
    // Valid JSON is never touched, and prose is no call.
    assert_eq!(repaired("{\"a\": \"b\"}"), "{\"a\": \"b\"}");
    assert!(extract("{ this is not json } and prose", &TOOLS).is_none());
}

#[test]
fn a_call_that_does_not_parse_is_named_with_the_error() {
    let text = "<tool_call>\n{\"name\": \"edit_file\", \"arguments\": {\"path\": \"a\", \"old_string\": [1, 2}\n</tool_call>";
    let err = broken_call(text, &TOOLS).expect("a broken call");
    assert!(err.contains("line") && err.contains("column"), "{err}");
    // A call that parses, prose, and JSON data are not broken calls.
    assert!(
        broken_call(
            "<tool_call>{\"name\": \"find\", \"arguments\": {}}</tool_call>",
            &TOOLS
        )
        .is_none()
    );
    assert!(broken_call("It is done.", &TOOLS).is_none());
    assert!(broken_call("```json\n{\"name\": \"app\", \"version\": [}\n```", &TOOLS).is_none());
}
