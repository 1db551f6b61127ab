//! The ACP client side of `exec`: serves `fs/*` from the local disk, answers
//! permission requests (`--yes`, a question on the terminal, or a refusal),
//! and hands every `session/update` to the renderer.
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::acp::method;
use crate::editor::local::{self, LocalEditor};
use crate::rpc::{Handler, Reply, RpcError, decode_params};
use crate::term::{Style, Tty};

use super::render::{Answer, Renderer, relative_to, render_diff};

/// How permission requests are answered.
/// What the agent did last, for the "waiting for the model" indicator.
#[derive(Debug, Clone, Copy, Default)]
pub struct Activity {
    pub frames: u64,
    pub waiting_on_model: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permissions {
    /// `--yes`: allow everything that asks.
    AllowAll,
    /// Ask the person on the controlling terminal.
    AskTty,
    /// No terminal and no `--yes`: refuse, report, let the turn go on.
    Refuse,
}

pub struct ExecClient {
    pub renderer: Arc<Mutex<Renderer>>,
    pub permissions: Permissions,
    /// Requests refused because nobody could be asked.
    pub refused: AtomicUsize,
    /// Requests not allowed: refused, or rejected at the terminal.
    pub declined: AtomicUsize,
    /// Updated on every frame from the agent (for the "waiting" indicator).
    pub activity: tokio::sync::watch::Sender<Activity>,
    /// The session's directory, to show paths relative to it.
    pub cwd: std::path::PathBuf,
}

impl ExecClient {
    fn render(&self) -> std::sync::MutexGuard<'_, Renderer> {
        self.renderer.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a frame; `waiting_on_model` says whether the next wait would
    /// be for the model (not for a running tool or for the person).
    fn bump(&self, waiting_on_model: Option<bool>) {
        self.activity.send_modify(|a| {
            a.frames += 1;
            if let Some(w) = waiting_on_model {
                a.waiting_on_model = w;
            }
        });
    }
}

#[async_trait::async_trait]
impl LocalEditor for ExecClient {
    type Permission = Value;

    /// `--yes`, a question on the terminal, or a refusal (see `Permissions`).
    async fn ask_permission(self: Arc<Self>, params: Value) -> Result<Value, RpcError> {
        let tool_call = params.get("toolCall").cloned().unwrap_or(Value::Null);
        let options: Vec<Value> = params
            .get("options")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let find = |kinds: &[&str]| -> Option<String> {
            kinds.iter().find_map(|k| {
                options
                    .iter()
                    .find(|o| o.get("kind").and_then(Value::as_str) == Some(k))
                    .and_then(|o| o.get("optionId")?.as_str().map(str::to_owned))
            })
        };
        // `--yes` allows what the turn asks for, never trusting a project's
        // own settings or servers: those need a person's answer.
        let trust = crate::agent::project::is_trust_question(&tool_call);
        let (answer, option) = match self.permissions {
            Permissions::AllowAll if trust => {
                self.render().note(
                    "--yes does not trust a project's own settings or servers: answer on a terminal without --yes, or in an editor, to apply them",
                );
                (Answer::Rejected, find(&["reject_once", "reject_always"]))
            }
            Permissions::AllowAll => (Answer::AllowedByFlag, find(&["allow_once", "allow_always"])),
            Permissions::Refuse => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                (
                    Answer::RefusedNoTty,
                    find(&["reject_once", "reject_always"]),
                )
            }
            Permissions::AskTty => {
                self.bump(Some(false));
                self.render().before_prompt();
                let (tc, opts, cwd) = (tool_call.clone(), options.clone(), self.cwd.clone());
                let chosen = tokio::task::spawn_blocking(move || ask_on_tty(&tc, &opts, &cwd))
                    .await
                    .ok()
                    .flatten();
                match chosen {
                    Some((id, true)) => (Answer::Allowed, Some(id)),
                    Some((id, false)) => (Answer::Rejected, Some(id)),
                    None => (Answer::Rejected, find(&["reject_once", "reject_always"])),
                }
            }
        };
        self.bump(Some(true));
        // Not trusting a project is no refused edit or command (exit code 7).
        if !answer.allowed() && !trust {
            self.declined.fetch_add(1, Ordering::Relaxed);
        }
        self.render()
            .permission(&tool_call, answer, option.as_deref());
        Ok(match option {
            Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
            // No option to pick from: the only other answer the protocol has.
            None => json!({"outcome": {"outcome": "cancelled"}}),
        })
    }
}

/// Shows the request on the terminal and reads a choice: the option id and
/// whether it allows. `None` when there is no terminal or no answer.
fn ask_on_tty(tool_call: &Value, options: &[Value], cwd: &Path) -> Option<(String, bool)> {
    let mut tty = Tty::open()?;
    let style: Style = tty.style();
    let title = tool_call
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("A tool call");
    let mut text = format!("\n{} {}\n", style.yellow("?"), style.bold(title));
    for item in local::shown(tool_call) {
        match item {
            local::Shown::Diff { path, old, new } => {
                text.push_str(&render_diff(&relative_to(path, cwd), old, new, style));
            }
            local::Shown::Text(t) => {
                text.push_str(t);
                text.push('\n');
            }
        }
    }
    for (i, o) in options.iter().enumerate() {
        let name = o.get("name").and_then(Value::as_str).unwrap_or("?");
        text.push_str(&format!("  {}) {name}\n", i + 1));
    }
    tty.write(&text);
    loop {
        let answer = tty.ask(&format!("Choose 1-{} [reject]: ", options.len()))?;
        let answer = answer.trim().to_ascii_lowercase();
        let pick = |kinds: &[&str]| {
            options.iter().find(|o| {
                o.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| kinds.contains(&k))
            })
        };
        let chosen = if answer.is_empty() || answer == "n" || answer == "no" {
            pick(&["reject_once", "reject_always"])
        } else if answer == "y" || answer == "yes" {
            pick(&["allow_once", "allow_always"])
        } else {
            answer
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| options.get(i))
        };
        if let Some(o) = chosen {
            let id = o.get("optionId")?.as_str()?.to_owned();
            let allows = o
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| k.starts_with("allow"));
            return Some((id, allows));
        }
        tty.write("Please answer with a number from the list, y or n.\n");
    }
}

impl Handler for ExecClient {
    fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> BoxFuture<'static, Result<Reply, RpcError>> {
        self.bump(None);
        Box::pin(local::serve(self, method, params))
    }

    /// One request at a time: permission questions never overlap on the terminal.
    fn sequential(&self, _method: &str) -> bool {
        true
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        if method != method::SESSION_UPDATE {
            self.bump(None);
            return;
        }
        if let Ok(v) = decode_params::<Value>(params) {
            let update = &v["update"];
            let tool_running = matches!(
                update["sessionUpdate"].as_str(),
                Some("tool_call" | "tool_call_update")
            ) && update["status"] == "in_progress";
            let tool_done = matches!(update["status"].as_str(), Some("completed" | "failed"));
            let waiting = if tool_running {
                Some(false)
            } else if tool_done
                || update["sessionUpdate"]
                    .as_str()
                    .is_some_and(|k| k.starts_with("agent_"))
            {
                Some(true)
            } else {
                None
            };
            self.bump(waiting);
            self.render().update(&v);
        }
    }
}
