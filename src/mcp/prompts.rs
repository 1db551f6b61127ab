//! MCP prompts as slash commands (issue 18 item 4; MCP 2025-11-25 "Server
//! features: Prompts"; ACP §7 slash commands). Each prompt of a server is
//! offered as `/<server>.<prompt>` with the prompt's description and an input
//! hint listing its arguments. Running one fetches the prompt (`prompts/get`)
//! with the arguments parsed from the command input and sends its messages
//! as the turn's prompt.
use std::time::Duration;

use rmcp::model::GetPromptRequestParams;
use rmcp::service::{Peer, RoleClient};
use serde_json::{Map, Value};

use crate::acp::ContentBlock;
use crate::tools::SourceCommand;

/// The command name of prompt `prompt` of server `server`: both parts with
/// anything but ASCII letters, digits, `-` and `_` replaced by `_`.
pub fn command_name(server: &str, prompt: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("{}.{}", clean(server), clean(prompt))
}

/// The command offered for one prompt (`prompt` as `prompts/list` gave it).
pub fn command(server: &str, prompt: &Value) -> Option<SourceCommand> {
    let name = prompt["name"].as_str()?;
    let description = prompt["description"]
        .as_str()
        .or(prompt["title"].as_str())
        .map(|d| crate::tools::sanitize_title(d, 300))
        .unwrap_or_else(|| format!("Prompt {name} of the MCP server {server}"));
    let args = arguments(prompt);
    let hint = (!args.is_empty()).then(|| {
        args.iter()
            .map(|a| {
                if a.required {
                    format!("{}=…", a.name)
                } else {
                    format!("[{}=…]", a.name)
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    });
    Some(SourceCommand {
        name: command_name(server, name),
        description,
        hint,
    })
}

struct Argument {
    name: String,
    required: bool,
}

fn arguments(prompt: &Value) -> Vec<Argument> {
    prompt["arguments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| {
            Some(Argument {
                name: a["name"].as_str()?.to_owned(),
                required: a["required"].as_bool().unwrap_or(false),
            })
        })
        .collect()
}

/// The arguments of `/<server>.<prompt> input`: `name=value` pairs (a value
/// runs to the next `name=`, so it may hold spaces); without any `=`, the
/// whole input is the first argument. A missing required argument is an
/// error naming what the command takes.
pub fn parse_input(prompt: &Value, input: &str) -> Result<Map<String, Value>, String> {
    let args = arguments(prompt);
    let mut out = Map::new();
    let input = input.trim();
    let starts: Vec<(usize, &Argument)> = args
        .iter()
        .flat_map(|a| {
            let key = format!("{}=", a.name);
            input
                .match_indices(&key)
                .filter(|(i, _)| *i == 0 || input[..*i].ends_with(char::is_whitespace))
                .map(move |(i, _)| (i, a))
                .collect::<Vec<_>>()
        })
        .collect();
    if starts.is_empty() {
        if let (Some(first), false) = (args.first(), input.is_empty()) {
            out.insert(first.name.clone(), Value::String(input.to_owned()));
        }
    } else {
        let mut starts = starts;
        starts.sort_by_key(|(i, _)| *i);
        if starts[0].0 > 0 {
            return Err(format!(
                "unexpected text {:?} before the first name=value",
                input[..starts[0].0].trim()
            ));
        }
        for (n, (i, a)) in starts.iter().enumerate() {
            let end = starts.get(n + 1).map_or(input.len(), |(j, _)| *j);
            let value = input[i + a.name.len() + 1..end].trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            out.insert(a.name.clone(), Value::String(value.to_owned()));
        }
    }
    let missing: Vec<&str> = args
        .iter()
        .filter(|a| a.required && !out.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing required argument{} {}; this command takes: {}",
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            args.iter()
                .map(|a| if a.required {
                    format!("{}=…", a.name)
                } else {
                    format!("[{}=…]", a.name)
                })
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    Ok(out)
}

/// One server's `prompts/get`.
pub struct Fetch {
    pub peer: Peer<RoleClient>,
    /// Answers its input requests (`input_required`, `super::input`).
    pub asker: std::sync::Arc<super::input::Asker>,
    pub server: String,
}

impl Fetch {
    /// `prompts/get`, its messages as the blocks of the turn's prompt; the
    /// server's input requests are answered in between.
    pub async fn run(
        self,
        prompt: String,
        arguments: Map<String, Value>,
        timeout: Duration,
    ) -> Result<Vec<ContentBlock>, String> {
        use super::input::Round;
        use rmcp::model::GetPromptResponse;
        let Fetch {
            peer,
            asker,
            server,
        } = self;
        let get = asker.drive(None, |input_responses, request_state| {
            let mut params = GetPromptRequestParams::new(prompt.clone());
            if !arguments.is_empty() {
                params = params.with_arguments(arguments.clone());
            }
            params.input_responses = input_responses;
            params.request_state = request_state;
            let peer = peer.clone();
            async move {
                match peer.get_prompt_once(params).await? {
                    GetPromptResponse::Complete(r) => Ok(Round::Done(r)),
                    GetPromptResponse::InputRequired(r) => Ok(Round::Input(r)),
                    _ => Err(rmcp::service::ServiceError::UnexpectedResponse),
                }
            }
        });
        let result = match tokio::time::timeout(timeout, get).await {
            Err(_) => {
                return Err(format!(
                    "the MCP server {server} did not return the prompt {prompt} within {} s",
                    timeout.as_secs()
                ));
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "the MCP server {server} could not give the prompt {prompt}: {e}"
                ));
            }
            Ok(Ok(r)) => r,
        };
        blocks_of(&server, &prompt, &result)
    }
}

fn blocks_of(
    server: &str,
    prompt: &str,
    result: &rmcp::model::GetPromptResult,
) -> Result<Vec<ContentBlock>, String> {
    let value = serde_json::to_value(result).unwrap_or(Value::Null);
    let blocks = to_blocks(&value);
    if blocks.is_empty() {
        return Err(format!(
            "the prompt {prompt} of the MCP server {server} has no messages"
        ));
    }
    Ok(blocks)
}

/// A `GetPromptResult`'s messages as prompt blocks; a message of role
/// `assistant` is introduced as such (a prompt turn is one user message).
pub fn to_blocks(result: &Value) -> Vec<ContentBlock> {
    let mut blocks = Vec::new();
    for m in result["messages"].as_array().into_iter().flatten() {
        let block: ContentBlock =
            serde_json::from_value(m["content"].clone()).unwrap_or(ContentBlock::Unknown);
        if matches!(block, ContentBlock::Unknown) {
            continue;
        }
        if m["role"] == "assistant" {
            blocks.push(ContentBlock::text(
                "(The prompt continues with this assistant message:)",
            ));
        }
        blocks.push(block);
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args_prompt() -> Value {
        json!({"name": "args-prompt", "description": "Weather",
               "arguments": [{"name": "city", "required": true}, {"name": "state"}]})
    }

    #[test]
    fn commands_and_arguments() {
        let c = command("my server", &args_prompt()).unwrap();
        assert_eq!(c.name, "my_server.args-prompt");
        assert_eq!(c.hint.as_deref(), Some("city=… [state=…]"));
        assert!(command("s", &json!({"name": "p"})).unwrap().hint.is_none());

        let p = args_prompt();
        let parsed = parse_input(&p, "city=New York state=\"NY\"").unwrap();
        assert_eq!(parsed["city"], "New York");
        assert_eq!(parsed["state"], "NY");
        assert_eq!(parse_input(&p, "Paris").unwrap()["city"], "Paris");
        // `xcity=` is not `city=`.
        assert_eq!(parse_input(&p, "xcity=1").unwrap()["city"], "xcity=1");
        let err = parse_input(&p, "state=NY").unwrap_err();
        assert!(err.contains("missing required argument city"), "{err}");
        assert!(parse_input(&p, "").is_err());
        assert!(parse_input(&p, "hello city=x").is_err());
    }

    #[test]
    fn messages_become_blocks() {
        let blocks = to_blocks(&json!({"messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "assistant", "content": {"type": "text", "text": "sure"}},
            {"role": "user", "content": {"type": "hologram"}}
        ]}));
        assert_eq!(blocks.len(), 3);
    }
}
