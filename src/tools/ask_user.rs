//! `ask_user`: the model asks the user a question through the editor (issue
//! 17 item 1; DESIGN §3 tool table). The question becomes a form-mode
//! `elicitation/create` tied to the tool call (ACP §10); the answer, or
//! "declined"/"cancelled", is the tool result. Offered only when the editor
//! advertises `elicitation.form`; it touches nothing, so every mode allows it
//! without a permission request (`Access::None`).
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    Access, Action, Invocation, Tool, ToolContext, ToolError, ToolOutput, args_schema, parse_args,
};
use crate::acp::ToolKind;
use crate::editor::Answer;

pub struct AskUser;

/// The form field holding the answer.
const ANSWER: &str = "answer";
/// The free-text field offered next to a list of options.
const OTHER: &str = "other";
/// Limits that keep a form readable (the model is told them).
const MAX_OPTIONS: usize = 20;
const MAX_QUESTION: usize = 2000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    question: String,
    #[serde(default)]
    options: Vec<Choice>,
    #[serde(default)]
    multi_select: bool,
    #[serde(default)]
    allow_free_text: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Choice {
    label: String,
    #[serde(default)]
    description: Option<String>,
}

#[async_trait::async_trait]
impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }
    fn description(&self) -> &str {
        "Ask the user a question and wait for the answer. Use it when you need a decision or a \
         fact only the user has (which approach to take, a missing requirement); do not use it \
         for things you can find out with the other tools, and never ask for passwords or keys. \
         Give `options` for a choice (the user picks one, or several with `multi_select`); \
         `allow_free_text` adds a free-text field next to the options (default: true without \
         options, false with them). The result is the user's answer, or says they declined or \
         cancelled."
    }
    fn parameters(&self) -> Value {
        args_schema(
            json!({
                "question": {"type": "string", "description": "The question, in one or two sentences."},
                "options": {
                    "type": "array",
                    "description": "Choices to offer (at most 20).",
                    "items": {
                        "type": "object",
                        "properties": {
                            "label": {"type": "string", "description": "Short text of the choice."},
                            "description": {"type": "string", "description": "What choosing it means."}
                        },
                        "required": ["label"],
                        "additionalProperties": false
                    }
                },
                "multi_select": {"type": "boolean", "description": "Let the user pick several options."},
                "allow_free_text": {"type": "boolean", "description": "Offer a free-text answer as well."}
            }),
            &["question"],
        )
    }
    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }
    fn title(&self, args: &Value) -> String {
        match args.get("question").and_then(Value::as_str) {
            Some(q) => format!("Ask: {q}"),
            None => "Ask the user".into(),
        }
    }
    async fn prepare(&self, args: Value, _ctx: &ToolContext) -> Result<Invocation, ToolError> {
        let args: Args = parse_args(args)?;
        let schema = form_schema(&args)?;
        Ok(Invocation {
            title: format!("Ask: {}", args.question),
            kind: ToolKind::Think,
            locations: Vec::new(),
            content: Vec::new(),
            access: Access::None,
            action: Box::new(Ask {
                question: args.question,
                schema,
            }),
        })
    }
}

/// The form for a question: one `answer` field (free text, one option or
/// several), plus an optional free-text `other` field next to options.
fn form_schema(args: &Args) -> Result<Value, ToolError> {
    let question = args.question.trim();
    if question.is_empty() {
        return Err(ToolError::InvalidArgs("question: must not be empty".into()));
    }
    if question.chars().count() > MAX_QUESTION {
        return Err(ToolError::InvalidArgs(format!(
            "question: at most {MAX_QUESTION} characters; put details in the options' descriptions"
        )));
    }
    if args.options.len() > MAX_OPTIONS {
        return Err(ToolError::InvalidArgs(format!(
            "options: at most {MAX_OPTIONS}; ask a narrower question"
        )));
    }
    let mut seen = std::collections::HashSet::new();
    for (i, c) in args.options.iter().enumerate() {
        if c.label.trim().is_empty() {
            return Err(ToolError::InvalidArgs(format!(
                "options[{i}].label: must not be empty"
            )));
        }
        if !seen.insert(c.label.as_str()) {
            return Err(ToolError::InvalidArgs(format!(
                "options[{i}].label: {:?} appears twice; labels must differ",
                c.label
            )));
        }
    }
    if args.multi_select && args.options.is_empty() {
        return Err(ToolError::InvalidArgs(
            "multi_select: needs options to select from".into(),
        ));
    }
    let free_text = args.allow_free_text.unwrap_or(args.options.is_empty());
    let choices: Vec<Value> = args
        .options
        .iter()
        .map(|c| {
            let mut o = json!({"const": c.label, "title": c.label});
            if let Some(d) = &c.description {
                o["description"] = json!(d);
            }
            o
        })
        .collect();
    let mut properties = Map::new();
    let mut required = Vec::new();
    if args.options.is_empty() {
        properties.insert(ANSWER.into(), json!({"type": "string", "title": "Answer"}));
        required.push(ANSWER);
    } else {
        let field = if args.multi_select {
            json!({"type": "array", "title": "Choose", "items": {"anyOf": choices}})
        } else {
            json!({"type": "string", "title": "Choose", "oneOf": choices})
        };
        properties.insert(ANSWER.into(), field);
        if free_text {
            properties.insert(
                OTHER.into(),
                json!({"type": "string", "title": "Other", "description": "Your own answer, if none of the choices fits."}),
            );
        } else if !args.multi_select {
            required.push(ANSWER);
        }
    }
    Ok(json!({"type": "object", "properties": properties, "required": required}))
}

struct Ask {
    question: String,
    schema: Value,
}

#[async_trait::async_trait]
impl Action for Ask {
    async fn run(self: Box<Self>, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let asked = ctx
            .editor
            .elicit_form(Some(&ctx.tool_call_id), &self.question, &self.schema);
        // Cancelling the turn drops the request, which withdraws the
        // question in the editor (`$/cancel_request`, issue 17 item 3).
        let answer = tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
            a = asked => a.map_err(|e| ToolError::Failed(e.to_string()))?,
        };
        let text = describe(&answer);
        let mut out = ToolOutput::text(text.clone());
        out.content = vec![crate::acp::ToolCallContent::text(text)];
        out.raw_output = Some(match &answer {
            Answer::Accept(content) => json!({"action": "accept", "content": content}),
            Answer::Decline => json!({"action": "decline"}),
            Answer::Cancel => json!({"action": "cancel"}),
        });
        Ok(out)
    }
}

/// The tool result the model reads.
fn describe(answer: &Answer) -> String {
    match answer {
        Answer::Decline => "The user declined to answer.".into(),
        Answer::Cancel => "The user cancelled the question without answering.".into(),
        Answer::Accept(content) => {
            let value = |v: &Value| match v {
                Value::String(s) => s.clone(),
                Value::Array(items) => items
                    .iter()
                    .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            let answer = content.get(ANSWER).map(value).filter(|s| !s.is_empty());
            let other = content.get(OTHER).map(value).filter(|s| !s.is_empty());
            match (answer, other) {
                (Some(a), Some(o)) => format!("The user answered: {a}\nThey added: {o}"),
                (Some(a), None) => format!("The user answered: {a}"),
                (None, Some(o)) => format!("The user answered: {o}"),
                (None, None) => "The user accepted without giving an answer.".into(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> Args {
        parse_args(v).unwrap()
    }

    #[test]
    fn schemas() {
        let s = form_schema(&args(json!({"question": "Name?"}))).unwrap();
        assert_eq!(s["properties"]["answer"]["type"], "string");
        assert_eq!(s["required"], json!(["answer"]));

        let s = form_schema(&args(json!({"question": "Which?", "options": [
            {"label": "A", "description": "first"}, {"label": "B"}]})))
        .unwrap();
        assert_eq!(s["properties"]["answer"]["oneOf"][0]["const"], "A");
        assert_eq!(
            s["properties"]["answer"]["oneOf"][0]["description"],
            "first"
        );
        assert!(s["properties"].get("other").is_none());

        let s = form_schema(&args(json!({"question": "Which?", "multi_select": true,
            "allow_free_text": true, "options": [{"label": "A"}, {"label": "B"}]})))
        .unwrap();
        assert_eq!(s["properties"]["answer"]["type"], "array");
        assert_eq!(s["properties"]["answer"]["items"]["anyOf"][1]["const"], "B");
        assert_eq!(s["properties"]["other"]["type"], "string");
        assert_eq!(s["required"], json!([]));
    }

    #[test]
    fn bad_arguments_name_the_field() {
        let e = |v| form_schema(&args(v)).unwrap_err().to_string();
        assert!(e(json!({"question": " "})).contains("question"));
        assert!(
            e(json!({"question": "q", "options": [{"label": "A"}, {"label": "A"}]}))
                .contains("options[1].label")
        );
        assert!(e(json!({"question": "q", "multi_select": true})).contains("multi_select"));
    }

    #[test]
    fn answers_for_the_model() {
        let mut c = Map::new();
        c.insert("answer".into(), json!(["A", "B"]));
        c.insert("other".into(), json!("and C"));
        assert_eq!(
            describe(&Answer::Accept(c)),
            "The user answered: A, B\nThey added: and C"
        );
        assert!(describe(&Answer::Decline).contains("declined"));
        assert!(describe(&Answer::Cancel).contains("cancelled"));
    }
}
