//! Shared helpers of the tool, permission and mode suites: a session over the
//! real binary, and readers of what one tool call looked like to the editor
//! and to the model.

use crate::support::{FakeEditor, FakeModel, Reply, Workspace, full_capabilities, no_capabilities};
use serde_json::{Value, json};

/// Generates `mod $name { editor(), local() }`, two tests running
/// `$body(Via::Editor)` and `$body(Via::Local)`; `both!(f)` names the
/// module after the function.
macro_rules! both {
    ($name:ident) => {
        both!($name, $name);
    };
    ($name:ident, $body:path) => {
        mod $name {
            use super::*;
            #[tokio::test]
            async fn editor() {
                $body(Via::Editor).await;
            }
            #[tokio::test]
            async fn local() {
                $body(Via::Local).await;
            }
        }
    };
}
pub(crate) use both;

/// How files and commands reach the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The editor advertises fs read/write and terminals: `fs/*`, `terminal/*`.
    Editor,
    /// The editor advertises nothing: local disk and local processes.
    Local,
}

impl Via {
    pub fn capabilities(self) -> Value {
        match self {
            Via::Editor => full_capabilities(),
            Via::Local => no_capabilities(),
        }
    }
}

/// A scripted tool call for [`Harness::run_calls`]: id, tool, arguments.
pub type Call<'a> = (&'a str, &'static str, Value);

/// A `write_file` call.
pub fn write_call<'a>(id: &'a str, path: impl serde::Serialize, content: &str) -> Call<'a> {
    (id, "write_file", json!({"path": path, "content": content}))
}

/// An `edit_file` call replacing `old` by `new`.
pub fn edit_call<'a>(id: &'a str, path: impl serde::Serialize, old: &str, new: &str) -> Call<'a> {
    let args = json!({"path": path, "old_string": old, "new_string": new});
    (id, "edit_file", args)
}

/// One agent process, one session (cwd `ws` or a directory in it).
pub struct Harness {
    pub model: FakeModel,
    pub editor: FakeEditor,
    pub ws: Workspace,
    pub sid: String,
}

impl Harness {
    /// A session with cwd = `ws`.
    pub async fn start(via: Via, ws: Workspace) -> Harness {
        Self::start_with(via.capabilities(), ws, "", Vec::new()).await
    }

    /// A session with cwd `ws/cwd` and extra environment for the agent
    /// (overriding the defaults).
    pub async fn start_with(
        caps: Value,
        ws: Workspace,
        cwd: &str,
        env: Vec<(String, String)>,
    ) -> Harness {
        let model = FakeModel::start().await;
        let mut envs = model.agent_env();
        envs.extend(env);
        let editor = FakeEditor::spawn(&[], envs);
        editor.initialize(caps).await;
        let cwd = if cwd.is_empty() {
            ws.path().to_path_buf()
        } else {
            ws.join(cwd)
        };
        let sid = editor.new_session(&cwd).await;
        Harness {
            model,
            editor,
            ws,
            sid,
        }
    }

    /// `session/set_mode`; fails the test on an error.
    pub async fn set_mode(&self, mode: &str) {
        self.editor.set_mode(&self.sid, mode).await;
    }

    /// Scripts `commands` as `run_command` calls `{prefix}0`, `{prefix}1`, …
    /// and then `last` (id, command) in one model reply, and runs the turn
    /// like [`Self::run_calls`]: attacks, then a command that must still work.
    #[cfg_attr(not(unix), allow(dead_code))] // the sandbox tests' (Unix)
    pub async fn run_commands(
        &self,
        prefix: &str,
        commands: &[impl AsRef<str>],
        last: (&str, &str),
    ) {
        let ids: Vec<String> = (0..commands.len())
            .map(|i| format!("{prefix}{i}"))
            .collect();
        let mut calls: Vec<(&str, &str, Value)> = commands
            .iter()
            .zip(&ids)
            .map(|(c, id)| (id.as_str(), "run_command", json!({"command": c.as_ref()})))
            .collect();
        calls.push((last.0, "run_command", json!({"command": last.1})));
        self.run_calls(&calls).await;
    }

    /// Scripts `calls` as one model reply, then a closing text reply; runs a
    /// prompt and expects `end_turn`.
    pub async fn run_calls(&self, calls: &[(&str, &str, Value)]) {
        self.model.push(Reply::tool_calls(
            calls
                .iter()
                .map(|(id, name, args)| (*id, *name, args.clone())),
        ));
        // Not "done": after calls that only made a plan, an answer that
        // says the work is done is pushed on (a plan is not a finish).
        self.model.push(Reply::text("ok"));
        let r = self.editor.prompt(&self.sid, "go").await;
        if r["stopReason"] != "end_turn" {
            self.editor
                .fail(&format!("expected stopReason end_turn, got {r}"));
        }
    }

    /// [`Harness::run_tool`] for a [`Call`].
    pub async fn run_call(&self, (id, name, args): Call<'_>) -> String {
        self.run_tool(id, name, args).await
    }

    /// Runs one tool call in a turn; returns what the model was told.
    pub async fn run_tool(&self, id: &str, name: &str, args: Value) -> String {
        self.run_calls(&[(id, name, args)]).await;
        self.tool_result(id)
    }

    /// What the model was told as the result of call `id` (from the last
    /// model request that carries it).
    #[track_caller]
    pub fn tool_result(&self, id: &str) -> String {
        self.model.tool_result_for(id).unwrap_or_else(|| {
            self.editor
                .fail(&format!("no tool result for {id} reached the model"))
        })
    }

    /// The `tool_call` and `tool_call_update`s of call `id`, in order.
    pub fn call_updates(&self, id: &str) -> Vec<Value> {
        self.editor
            .updates_for(&self.sid)
            .into_iter()
            .filter(|u| {
                (u["sessionUpdate"] == "tool_call" || u["sessionUpdate"] == "tool_call_update")
                    && u["toolCallId"] == id
            })
            .collect()
    }

    /// The statuses call `id` went through, in order (updates without a
    /// status are skipped).
    pub fn statuses(&self, id: &str) -> Vec<String> {
        self.call_updates(id)
            .iter()
            .filter_map(|u| u["status"].as_str().map(str::to_owned))
            .collect()
    }

    /// The last status of call `id`.
    #[track_caller]
    pub fn final_status(&self, id: &str) -> String {
        self.statuses(id)
            .pop()
            .unwrap_or_else(|| self.editor.fail(&format!("call {id} has no status")))
    }

    /// Every call in `ids` ended `completed` (the failing one's result is
    /// shown).
    #[track_caller]
    pub fn assert_completed(&self, ids: &[&str]) {
        for id in ids {
            assert_eq!(
                self.final_status(id),
                "completed",
                "{id}: {}",
                self.tool_result(id)
            );
        }
    }

    /// The last update of call `id` carrying a status.
    #[track_caller]
    pub fn final_update(&self, id: &str) -> Value {
        self.call_updates(id)
            .into_iter()
            .rev()
            .find(|u| u.get("status").is_some())
            .unwrap_or_else(|| self.editor.fail(&format!("call {id} has no status")))
    }

    /// Asserts the reporting contract of one call: a `tool_call` (pending,
    /// title, `kind`, rawInput = `args`) first; statuses pending → (in_progress
    /// → completed|failed) or straight to failed; rawOutput on the final
    /// update. `ran` says whether the call was expected to run (reach
    /// in_progress), `ok` whether it should end completed.
    #[track_caller]
    pub fn assert_lifecycle(&self, id: &str, kind: &str, args: &Value, ran: bool, ok: bool) {
        let updates = self.call_updates(id);
        let Some(first) = updates.first() else {
            self.editor.fail(&format!("call {id} was never reported"));
        };
        let check = |cond: bool, what: &str| {
            if !cond {
                self.editor.fail(&format!(
                    "call {id}: {what}\nupdates: {}",
                    serde_json::to_string_pretty(&updates).unwrap_or_default()
                ));
            }
        };
        check(
            first["sessionUpdate"] == "tool_call",
            "the first report must be a tool_call",
        );
        check(
            first["status"] == "pending",
            "the tool_call must be pending",
        );
        check(
            first["title"].as_str().is_some_and(|t| !t.is_empty()),
            "the tool_call needs a title",
        );
        check(first["kind"] == kind, &format!("kind must be {kind}"));
        check(
            first["rawInput"] == *args,
            "rawInput must be the model's arguments",
        );
        check(
            updates[1..]
                .iter()
                .all(|u| u["sessionUpdate"] == "tool_call_update"),
            "only one tool_call per id",
        );
        let statuses = self.statuses(id);
        let end = if ok { "completed" } else { "failed" };
        let expected: Vec<&str> = if ran {
            vec!["pending", "in_progress", end]
        } else {
            vec!["pending", end]
        };
        check(
            statuses
                .iter()
                .map(String::as_str)
                .eq(expected.iter().copied()),
            &format!("statuses {statuses:?}, expected {expected:?}"),
        );
        let last = self.final_update(id);
        check(
            last.get("rawOutput").is_some() || !ok,
            "a completed call carries rawOutput",
        );
        if !ok {
            // The failure is explained in the editor too.
            check(
                last["content"].as_array().is_some_and(|c| !c.is_empty()),
                "a failed call explains itself in content",
            );
        }
    }

    /// Every reverse request the agent sent with this method prefix.
    pub fn reverse_methods(&self, prefix: &str) -> Vec<String> {
        self.editor
            .reverse_requests()
            .iter()
            .filter_map(|r| r["method"].as_str())
            .filter(|m| m.starts_with(prefix))
            .map(str::to_owned)
            .collect()
    }
}

/// The `content` of the final update of a call, as `diff` items.
pub fn diffs(update: &Value) -> Vec<Value> {
    update["content"]
        .as_array()
        .map(|c| c.iter().filter(|x| x["type"] == "diff").cloned().collect())
        .unwrap_or_default()
}

/// Text of all `content` blocks of an update.
pub fn content_text(update: &Value) -> String {
    update["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|x| x["content"]["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// A command that starts `sleep 30` in the background, records its pid in
/// `pidfile` (relative to the command's cwd), and waits for it.
pub fn sleeper(pidfile: &str) -> String {
    format!("sleep 30 & echo $! > {pidfile}.tmp && mv {pidfile}.tmp {pidfile}; wait")
}
