//! The ACP client side of the A2A server: the in-process agent sees an
//! editor that serves `fs/*` from the local disk (recording each file's
//! content before a task first writes it, for the diff artifact), turns
//! `session/request_permission` into the task's `input-required` state, and
//! streams `session/update`s into the running task (text as the `answer`
//! artifact, tool calls as status messages).
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::acp::method;
use crate::editor::local::{self, LocalEditor, WriteParams};
use crate::rpc::{Handler, Reply, RpcError};

use super::hub::Hub;
use super::wire;

pub struct A2aClient {
    pub hub: Arc<Hub>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionParams {
    session_id: String,
    #[serde(default)]
    tool_call: Value,
    #[serde(default)]
    options: Vec<Value>,
}

impl A2aClient {
    /// Writes the file, recording its content before the task's first
    /// write of it for the diff artifact.
    async fn write_text_file(&self, p: WriteParams) -> Result<Value, RpcError> {
        let path = local::absolute(&p.path)?;
        if let Some(task) = self.hub.active(&p.session_id) {
            task.record_before(path.to_owned(), || std::fs::read_to_string(path).ok());
        }
        local::write_text_file(&p).await
    }

    /// Pauses the task as `input-required` until the client answers
    /// (DESIGN "A2A mode": a permission request is a question to the client).
    async fn permission(&self, p: PermissionParams) -> Result<Value, RpcError> {
        let Some(task) = self.hub.active(&p.session_id) else {
            return Ok(json!({"outcome": {"outcome": "cancelled"}}));
        };
        let text = question_text(&p.tool_call, &p.options, &task.cwd);
        let message = wire::agent_message(
            &task.context_id,
            &task.id,
            vec![
                wire::text_part(&text),
                json!({"data": {"toolCall": p.tool_call, "options": p.options}}),
            ],
        );
        // An answer set the task working already (`Bridge::answer`); a
        // cancellation leaves it for the turn's end to mark canceled.
        let answer = task.ask(p.options.clone(), message).await.ok().flatten();
        Ok(match answer {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            None => json!({"outcome": {"outcome": "cancelled"}}),
        })
    }
}

/// What the agent asks, in words: the tool call's title, its command or
/// diff, and how to answer.
fn question_text(tool_call: &Value, options: &[Value], cwd: &Path) -> String {
    let title = tool_call
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("a tool call");
    let mut text = format!("Permission needed: {title}\n");
    if let Some(cmd) = tool_call
        .get("rawInput")
        .and_then(|r| r.get("command"))
        .and_then(Value::as_str)
    {
        text.push_str(&format!("Command: {cmd}\n"));
    }
    for item in local::shown(tool_call) {
        match item {
            local::Shown::Diff { path, old, new } => {
                text.push_str(&unified(&relative(Path::new(path), cwd), old, new));
            }
            local::Shown::Text(t) => {
                text.push_str(t);
                text.push('\n');
            }
        }
    }
    let choices: Vec<String> = options
        .iter()
        .map(|o| {
            format!(
                "{} ({})",
                o.get("optionId").and_then(Value::as_str).unwrap_or("?"),
                o.get("name").and_then(Value::as_str).unwrap_or("?")
            )
        })
        .collect();
    text.push_str(&format!(
        "Reply in this task with \"allow\", \"always\" or \"reject\" (or a data part {{\"optionId\": ...}}); options: {}",
        choices.join(", ")
    ));
    text
}

/// `path` relative to `cwd` when inside it.
pub fn relative(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

/// A unified diff (`similar`) of one file, `a/` and `b/` prefixed like git;
/// `/dev/null` for a side that does not exist.
pub fn unified(rel: &str, old: Option<&str>, new: &str) -> String {
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(500))
        .diff_lines(old.unwrap_or(""), new);
    let from = if old.is_some() {
        format!("a/{rel}")
    } else {
        "/dev/null".to_owned()
    };
    diff.unified_diff()
        .context_radius(3)
        .header(&from, &format!("b/{rel}"))
        .to_string()
}

#[async_trait::async_trait]
impl LocalEditor for A2aClient {
    type Permission = PermissionParams;
    async fn write_file(&self, p: WriteParams) -> Result<Value, RpcError> {
        self.write_text_file(p).await
    }
    async fn ask_permission(self: Arc<Self>, p: PermissionParams) -> Result<Value, RpcError> {
        self.permission(p).await
    }
}

impl Handler for A2aClient {
    fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'static, Result<Reply, RpcError>> {
        Box::pin(local::serve(self, method, params))
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        if method != method::SESSION_UPDATE {
            return;
        }
        // Typed and borrowed: most updates are read for two strings, and
        // the rest of each (tool inputs, diffs, plans) is skipped unbuilt.
        let Some(Ok(n)) = params.map(|p| serde_json::from_str::<UpdateParams>(p.get())) else {
            return;
        };
        let Some(task) = self.hub.active(&n.session_id) else {
            return;
        };
        let u = n.update;
        let title = || u.title.as_deref().unwrap_or("tool call");
        match &*u.session_update {
            "agent_message_chunk" => {
                let text = u
                    .content
                    .and_then(|c| serde_json::from_str::<UpdateContent>(c.get()).ok())
                    .and_then(|c| c.text);
                if let Some(t) = text {
                    task.push_text(&t);
                }
            }
            "tool_call" => task.note(&format!("Tool: {}", title())),
            "tool_call_update" => {
                if let Some(status @ ("completed" | "failed")) = u.status.as_deref() {
                    task.note(&format!("Tool {status}: {}", title()));
                }
            }
            _ => {}
        }
    }
}

/// The part of a `session/update` notification the task uses (ACP
/// "Agent Reports Output").
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams<'a> {
    #[serde(borrow)]
    session_id: Cow<'a, str>,
    #[serde(borrow)]
    update: Update<'a>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Update<'a> {
    #[serde(borrow)]
    session_update: Cow<'a, str>,
    /// A content block for message chunks, a list for tool calls: read
    /// only where it is a message's text.
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    title: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
}

/// A content block's text; other kinds of block have none.
#[derive(serde::Deserialize)]
struct UpdateContent<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_decode_whatever_their_content() {
        let chunk: UpdateParams = serde_json::from_str(
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}}"#,
        )
        .unwrap();
        let text = serde_json::from_str::<UpdateContent>(chunk.update.content.unwrap().get())
            .unwrap()
            .text;
        assert_eq!(text.as_deref(), Some("a\nb"));
        let call: UpdateParams = serde_json::from_str(
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"1","title":"Run ls","kind":"execute","status":"pending","rawInput":{"command":"ls"},"content":[{"type":"content","content":{"type":"text","text":"x"}}]}}"#,
        )
        .unwrap();
        assert_eq!(&*call.session_id, "s");
        assert_eq!(call.update.title.as_deref(), Some("Run ls"));
        assert_eq!(call.update.status.as_deref(), Some("pending"));
    }

    #[test]
    fn unified_diffs() {
        assert_eq!(
            unified("n.txt", None, "hello\n"),
            "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hello\n"
        );
        let d = unified("a.rs", Some("x\ny\n"), "x\nz\n");
        assert!(d.starts_with("--- a/a.rs\n+++ b/a.rs\n"), "{d}");
        assert!(d.contains("-y\n+z\n"), "{d}");
    }

    #[test]
    fn the_question_names_the_command_and_the_answers() {
        let t = question_text(
            &json!({"title": "Run `rm -rf x`", "rawInput": {"command": "rm -rf x"}}),
            &[json!({"optionId": "allow", "name": "Allow once", "kind": "allow_once"})],
            Path::new("/w"),
        );
        assert!(t.contains("Command: rm -rf x"), "{t}");
        assert!(t.contains("allow (Allow once)"), "{t}");
    }
}
