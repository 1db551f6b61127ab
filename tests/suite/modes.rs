//! Session modes end to end: advertised by session/new (as modes and as the
//! `mode` config option), switched by session/set_mode or
//! session/set_config_option (both kept in sync), and each mode's behaviour.

use super::tools_common::{Harness, Via, edit_call, write_call};
use crate::support::{PermissionDecision, Workspace};
use serde_json::{Value, json};

const MODES: [&str; 5] = ["read-only", "plan", "ask", "accept-edits", "full-auto"];

#[tokio::test]
async fn new_session_advertises_modes_and_the_mode_option() {
    let h = Harness::start(Via::Local, Workspace::new()).await;
    let result = h.editor.new_session_full(h.ws.path()).await;
    assert_eq!(result["modes"]["currentModeId"], "ask");
    let ids: Vec<&str> = result["modes"]["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, MODES);
    for m in result["modes"]["availableModes"].as_array().unwrap() {
        assert!(m["name"].as_str().is_some_and(|n| !n.is_empty()), "{m}");
    }
    let options = result["configOptions"].as_array().unwrap();
    // The mode option comes first (array order is priority); the model option follows.
    let ids: Vec<&str> = options.iter().map(|o| o["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["mode", "model"]);
    let mode = &options[0];
    assert_eq!(mode["id"], "mode");
    assert_eq!(mode["type"], "select");
    assert_eq!(mode["currentValue"], "ask");
    let values: Vec<&str> = mode["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, MODES);
}

/// The `current_mode_update` and `config_option_update` sent since message `from`.
fn mode_updates(h: &Harness, from: usize) -> (Vec<Value>, Vec<Value>) {
    let updates: Vec<Value> = h.editor.messages()[from..]
        .iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == h.sid.as_str())
        .map(|m| m["params"]["update"].clone())
        .collect();
    let current = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "current_mode_update")
        .cloned()
        .collect();
    let config = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "config_option_update")
        .cloned()
        .collect();
    (current, config)
}

#[tokio::test]
async fn set_mode_and_set_config_option_stay_in_sync() {
    let h = Harness::start(Via::Local, Workspace::new()).await;

    let from = h.editor.message_count();
    let r = h
        .editor
        .request(
            "session/set_mode",
            json!({"sessionId": h.sid, "modeId": "full-auto"}),
        )
        .await
        .unwrap();
    assert_eq!(r, json!({}));
    h.editor
        .wait_for_after(from, |m| {
            m["params"]["update"]["sessionUpdate"] == "config_option_update"
        })
        .await;
    let (current, config) = mode_updates(&h, from);
    assert_eq!(
        current,
        [json!({"sessionUpdate": "current_mode_update", "currentModeId": "full-auto"})]
    );
    assert_eq!(config.len(), 1);
    assert_eq!(config[0]["configOptions"][0]["id"], "mode");
    assert_eq!(config[0]["configOptions"][0]["currentValue"], "full-auto");

    let from = h.editor.message_count();
    let r = h
        .editor
        .request(
            "session/set_config_option",
            json!({"sessionId": h.sid, "configId": "mode", "value": "read-only"}),
        )
        .await
        .unwrap();
    assert_eq!(r["configOptions"][0]["currentValue"], "read-only");
    h.editor
        .wait_for_after(from, |m| {
            m["params"]["update"]["sessionUpdate"] == "config_option_update"
        })
        .await;
    let (current, config) = mode_updates(&h, from);
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["currentModeId"], "read-only");
    assert_eq!(config.len(), 1);
    assert_eq!(config[0]["configOptions"][0]["currentValue"], "read-only");

    // Unknown modes and options are invalid params, and change nothing.
    let from = h.editor.message_count();
    let e = h
        .editor
        .request(
            "session/set_mode",
            json!({"sessionId": h.sid, "modeId": "yolo"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    assert!(
        e.message.contains("yolo") && e.message.contains("full-auto"),
        "{e}"
    );
    let e = h
        .editor
        .request(
            "session/set_config_option",
            json!({"sessionId": h.sid, "configId": "mode", "value": "yolo"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    let e = h
        .editor
        .request(
            "session/set_config_option",
            json!({"sessionId": h.sid, "configId": "colour", "value": "red"}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602, "{e}");
    let (current, config) = mode_updates(&h, from);
    assert!(current.is_empty() && config.is_empty());
    // Still read-only: an edit is refused without asking.
    let out = h.run_call(write_call("w1", "a.txt", "x")).await;
    assert_eq!(h.final_status("w1"), "failed", "{out}");
    assert!(!h.ws.exists("a.txt"));
}

/// What one mode does with each kind of call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Runs without asking.
    Run,
    /// Asks (answered "allow once"), then runs.
    Ask,
    /// Fails without asking.
    Refuse,
}
use Expect::{Ask, Refuse, Run};

/// Calls: read/write/edit/command in the project, read/write/command outside.
const CALLS: [&str; 7] = [
    "read",
    "write",
    "edit",
    "cmd",
    "read_out",
    "write_out",
    "cmd_out",
];

fn table(mode: &str) -> [Expect; 7] {
    match mode {
        "read-only" | "plan" => [Run, Refuse, Refuse, Refuse, Ask, Refuse, Refuse],
        "ask" => [Run, Ask, Ask, Ask, Ask, Ask, Ask],
        "accept-edits" => [Run, Run, Run, Ask, Ask, Ask, Ask],
        "full-auto" => [Run, Run, Run, Run, Ask, Ask, Ask],
        other => panic!("unknown mode {other}"),
    }
}

async fn mode_behaviour(via: Via, mode: &str, switch_with_config_option: bool) {
    let ws = Workspace::builder()
        .file("proj/in.txt", "inside\n")
        .file("proj/edit.txt", "before\n")
        .file("outside/out.txt", "outside\n")
        .build();
    let h = Harness::start_with(via.capabilities(), ws, "proj", Vec::new()).await;
    h.editor
        .set_default_permission(Some(PermissionDecision::AllowOnce));
    if switch_with_config_option {
        h.editor
            .request(
                "session/set_config_option",
                json!({"sessionId": h.sid, "configId": "mode", "value": mode}),
            )
            .await
            .unwrap();
    } else if mode != "ask" {
        h.set_mode(mode).await;
    }
    let outside = h.ws.join("outside");
    h.run_calls(&[
        ("read", "read_file", json!({"path": "in.txt"})),
        write_call("write", "new.txt", "new\n"),
        edit_call("edit", "edit.txt", "before", "after"),
        ("cmd", "run_command", json!({"command": "touch ran"})),
        (
            "read_out",
            "read_file",
            json!({"path": outside.join("out.txt")}),
        ),
        write_call("write_out", "../outside/new.txt", "new\n"),
        (
            "cmd_out",
            "run_command",
            json!({"command": "touch ran", "cwd": outside}),
        ),
    ])
    .await;

    let asked = h.editor.asked_ids();
    let expect = table(mode);
    let expected_asks: Vec<&str> = CALLS
        .iter()
        .zip(expect)
        .filter(|(_, e)| *e == Ask)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(asked, expected_asks, "{mode}: which calls ask");
    for (id, e) in CALLS.iter().zip(expect) {
        let statuses = h.statuses(id);
        match e {
            Run | Ask => assert_eq!(
                statuses,
                ["pending", "in_progress", "completed"],
                "{mode} {id}: {}",
                h.tool_result(id)
            ),
            Refuse => {
                assert_eq!(statuses, ["pending", "failed"], "{mode} {id}");
                let out = h.tool_result(id);
                assert!(
                    out.contains("not allowed") && out.contains("mode"),
                    "{mode} {id}: {out}"
                );
            }
        }
    }
    // The effects match.
    let ran = |e: Expect| e != Refuse;
    assert_eq!(h.ws.exists("proj/new.txt"), ran(expect[1]), "{mode} write");
    assert_eq!(
        h.ws.read("proj/edit.txt"),
        if ran(expect[2]) {
            "after\n"
        } else {
            "before\n"
        },
        "{mode} edit"
    );
    assert_eq!(h.ws.exists("proj/ran"), ran(expect[3]), "{mode} command");
    assert_eq!(
        h.ws.exists("outside/new.txt"),
        ran(expect[5]),
        "{mode} write outside"
    );
    assert_eq!(
        h.ws.exists("outside/ran"),
        ran(expect[6]),
        "{mode} command outside"
    );
    if via == Via::Editor {
        h.editor.assert_all_terminals_released();
    }
}

macro_rules! mode_tests {
    ($($name:ident: $mode:literal,)*) => {
        $(
            mod $name {
                use super::*;
                #[tokio::test]
                async fn editor() {
                    mode_behaviour(Via::Editor, $mode, false).await;
                }
                #[tokio::test]
                async fn local() {
                    mode_behaviour(Via::Local, $mode, false).await;
                }
                #[tokio::test]
                async fn set_by_config_option() {
                    mode_behaviour(Via::Local, $mode, true).await;
                }
            }
        )*
    };
}

mode_tests! {
    read_only: "read-only",
    plan: "plan",
    ask: "ask",
    accept_edits: "accept-edits",
    full_auto: "full-auto",
}

/// A mode switch applies to the very next call of a running session.
#[tokio::test]
async fn switching_mode_takes_effect_between_calls() {
    let ws = Workspace::builder().file("a.txt", "0\n").build();
    let h = Harness::start(Via::Editor, ws).await;
    h.editor.push_permission(PermissionDecision::AllowOnce);
    h.run_call(write_call("w1", "a.txt", "1\n")).await;
    assert_eq!(h.editor.permission_requests().len(), 1);
    h.set_mode("accept-edits").await;
    h.run_call(write_call("w2", "a.txt", "2\n")).await;
    assert_eq!(
        h.editor.permission_requests().len(),
        1,
        "accept-edits does not ask"
    );
    h.set_mode("read-only").await;
    h.run_call(write_call("w3", "a.txt", "3\n")).await;
    assert_eq!(h.final_status("w3"), "failed");
    assert_eq!(h.ws.read("a.txt"), "2\n");
    h.set_mode("ask").await;
    h.editor.push_permission(PermissionDecision::RejectOnce);
    h.run_call(write_call("w4", "a.txt", "4\n")).await;
    assert_eq!(h.editor.permission_requests().len(), 2);
    assert_eq!(h.ws.read("a.txt"), "2\n");
}
