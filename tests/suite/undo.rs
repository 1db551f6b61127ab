//! Checkpoints, `/undo` and `/rewind N` (issue 19 §2), and the changed-files
//! list in command results (§3): after writes, edits and commands, through
//! the editor (its buffers checked) and locally, across a restart, with a
//! file the user changed since.

use super::tools_common::{Harness, Via, both};
use crate::support::{
    FakeEditor, FakeModel, PermissionDecision, Reply, SpawnOptions, Workspace, no_capabilities,
};
use serde_json::json;
use std::path::Path;

async fn auto(via: Via, ws: Workspace) -> Harness {
    let h = Harness::start(via, ws).await;
    h.set_mode("full-auto").await;
    h
}

/// Runs a slash command; returns what the agent said in that turn.
async fn slash(h: &Harness, text: &str) -> String {
    let before = h.editor.agent_text(&h.sid);
    let r = h.editor.prompt(&h.sid, text).await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    h.editor.agent_text(&h.sid)[before.len()..].to_owned()
}

/// One prompt turn in which the model makes `calls`, then answers.
async fn turn<'a, const N: usize>(
    h: &Harness,
    prompt: &str,
    calls: [(&'a str, &'a str, serde_json::Value); N],
) {
    h.model.push(Reply::tool_calls(calls));
    h.model.push(Reply::text("done"));
    h.editor.prompt(&h.sid, prompt).await;
}

/// The user messages of the last model request.
fn user_texts(h: &Harness) -> Vec<String> {
    let reqs = h.model.chat_requests();
    let last = reqs.last().expect("a model request");
    last.messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

async fn undo_after_write_and_edit(via: Via) {
    let ws = Workspace::builder().file("a.txt", "one\n").build();
    let h = auto(via, ws).await;
    if via == Via::Editor {
        // An open buffer: the undo must reach it, not just the disk.
        h.editor.open_buffer(h.ws.join("a.txt"), "one\n");
    }
    turn(
        &h,
        "change things",
        [
            (
                "e1",
                "edit_file",
                json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
            ),
            (
                "w1",
                "write_file",
                json!({"path": "new.txt", "content": "fresh\n"}),
            ),
        ],
    )
    .await;
    assert_eq!(h.ws.read("a.txt"), "two\n");
    assert!(h.ws.exists("new.txt"));

    let said = slash(&h, "/undo").await;
    assert!(said.contains("Undid the turn"), "{said}");
    assert!(said.contains("Restored:\n- a.txt"), "{said}");
    assert!(said.contains("- new.txt"), "{said}");
    assert_eq!(h.ws.read("a.txt"), "one\n");
    assert!(!h.ws.exists("new.txt"));
    if via == Via::Editor {
        assert_eq!(
            h.editor.buffer(h.ws.join("a.txt")).as_deref(),
            Some("one\n")
        );
    }
    // The model no longer sees the undone turn.
    h.model.push(Reply::text("ok"));
    h.editor.prompt(&h.sid, "next question").await;
    let users = user_texts(&h);
    assert!(
        !users.iter().any(|u| u.contains("change things")),
        "{users:?}"
    );
    assert!(users.iter().any(|u| u.contains("next question")));
    // Nothing more to undo.
    let said = slash(&h, "/undo").await;
    assert!(said.contains("Nothing to undo"), "{said}");
}
both!(undo_restores_writes_and_edits, undo_after_write_and_edit);

async fn undo_after_command(via: Via) {
    let ws = Workspace::builder()
        .file("keep.txt", "K\n")
        .file("f.txt", "A\n")
        .build();
    let h = auto(via, ws).await;
    turn(
        &h,
        "run it",
        [
            (
                "w1",
                "write_file",
                json!({"path": "f.txt", "content": "B\n"}),
            ),
            (
                "c1",
                "run_command",
                json!({"command": "sed -i s/B/C/ f.txt && echo made > made.txt"}),
            ),
            ("c2", "run_command", json!({"command": "rm keep.txt"})),
        ],
    )
    .await;
    let result = h.tool_result("c1");
    assert!(result.contains("- created made.txt"), "{result}");
    assert!(h.tool_result("c2").contains("- deleted keep.txt"));
    // The model wrote f.txt earlier: the result says it is stale.
    assert!(result.contains("- changed f.txt — stale"), "{result}");
    if via == Via::Editor {
        assert!(result.contains("through the editor"), "{result}");
    }
    assert_eq!(h.ws.read("f.txt"), "C\n");

    let said = slash(&h, "/undo").await;
    // f.txt's content before the turn is known (the write recorded it).
    assert_eq!(h.ws.read("f.txt"), "A\n");
    // keep.txt was deleted by a command the model never read: its copy was
    // kept before the command ran, so it comes back, and made.txt goes.
    assert!(said.contains("- keep.txt"), "{said}");
    assert_eq!(h.ws.read("keep.txt"), "K\n");
    assert!(said.contains("- made.txt"), "{said}");
    assert!(!h.ws.exists("made.txt"));

    // A turn whose command only created a file: /undo deletes it.
    h.run_tool("c3", "run_command", json!({"command": "echo x > only.txt"}))
        .await;
    let said = slash(&h, "/undo").await;
    assert!(
        said.contains("Deleted (the turn created them):\n- only.txt"),
        "{said}"
    );
    assert!(!h.ws.exists("only.txt"));
}
both!(undo_restores_command_changes, undo_after_command);

/// A hostile or careless `mv`: the moved file comes back; and when no copy
/// of it could be kept (too big), the file it was moved to, its only copy,
/// is never deleted.
#[tokio::test]
async fn a_moved_file_is_never_lost() {
    let big = "x".repeat(1100 * 1024);
    let ws = Workspace::builder()
        .file("precious.txt", "data\n")
        .file("huge.txt", big.clone())
        .build();
    let h = auto(Via::Local, ws).await;
    h.run_tool(
        "m1",
        "run_command",
        json!({"command": "mv precious.txt elsewhere.txt"}),
    )
    .await;
    let said = slash(&h, "/undo").await;
    assert!(said.contains("Restored:\n- precious.txt"), "{said}");
    assert_eq!(h.ws.read("precious.txt"), "data\n");
    assert!(!h.ws.exists("elsewhere.txt"), "{said}");

    h.run_tool(
        "m2",
        "run_command",
        json!({"command": "mv huge.txt moved.txt"}),
    )
    .await;
    let said = slash(&h, "/undo").await;
    assert!(
        said.contains("huge.txt: not restored: a command changed or deleted it, and no copy was kept before it ran: it held 1100 KiB, more than the 1024 KiB kept per file"),
        "{said}"
    );
    assert!(said.contains("moved.txt: kept"), "{said}");
    assert_eq!(h.ws.read("moved.txt"), big);
}

async fn skips_files_changed_since(via: Via) {
    let ws = Workspace::builder()
        .file("a.txt", "one\n")
        .file("b.txt", "x\n")
        .build();
    let h = auto(via, ws).await;
    turn(
        &h,
        "write",
        [
            (
                "w1",
                "write_file",
                json!({"path": "a.txt", "content": "agent\n"}),
            ),
            (
                "w2",
                "write_file",
                json!({"path": "b.txt", "content": "agent b\n"}),
            ),
        ],
    )
    .await;
    // The user edits a.txt afterwards: in the editor's buffer, or on disk.
    match via {
        Via::Editor => h.editor.open_buffer(h.ws.join("a.txt"), "user edit\n"),
        Via::Local => h.ws.write("a.txt", "user edit\n"),
    }
    let said = slash(&h, "/undo").await;
    assert!(said.contains("a.txt: it changed after that turn"), "{said}");
    assert_eq!(h.ws.read("b.txt"), "x\n");
    match via {
        Via::Editor => assert_eq!(
            h.editor.buffer(h.ws.join("a.txt")).as_deref(),
            Some("user edit\n")
        ),
        Via::Local => assert_eq!(h.ws.read("a.txt"), "user edit\n"),
    }
}
both!(undo_skips_what_the_user_changed, skips_files_changed_since);

async fn rewind_n_turns(via: Via) {
    let ws = Workspace::builder().file("f.txt", "v0\n").build();
    let h = auto(via, ws).await;
    for i in 1..=3 {
        h.model.push(Reply::tool_call(
            &format!("w{i}"),
            "write_file",
            json!({"path": "f.txt", "content": format!("v{i}\n")}),
        ));
        h.model.push(Reply::text("ok"));
        h.editor.prompt(&h.sid, &format!("turn {i}")).await;
    }
    // A turn without file changes counts as a turn too.
    h.model.push(Reply::text("just talking"));
    h.editor.prompt(&h.sid, "turn 4").await;
    assert_eq!(h.ws.read("f.txt"), "v3\n");
    let said = slash(&h, "/rewind 3").await;
    assert!(said.contains("Rewound 3 turns"), "{said}");
    // Two turns wrote f.txt: it is listed once.
    assert!(said.contains("Restored:\n- f.txt"), "{said}");
    assert_eq!(said.matches("f.txt").count(), 1, "{said}");
    assert_eq!(h.ws.read("f.txt"), "v1\n");
    h.model.push(Reply::text("ok"));
    h.editor.prompt(&h.sid, "after rewind").await;
    let users = user_texts(&h);
    assert!(users.iter().any(|u| u.contains("turn 1")), "{users:?}");
    for gone in ["turn 2", "turn 3", "turn 4"] {
        assert!(!users.iter().any(|u| u.contains(gone)), "{users:?}");
    }
    let said = slash(&h, "/rewind 9").await;
    assert!(said.contains("Cannot rewind 9 turns"), "{said}");
    let said = slash(&h, "/rewind x").await;
    assert!(said.contains("takes a number"), "{said}");
}
both!(rewind_goes_back_n_turns, rewind_n_turns);

fn spawn_in(home: &Path, model: &FakeModel) -> FakeEditor {
    FakeEditor::spawn_with(SpawnOptions {
        envs: model.agent_env(),
        home: Some(home.to_path_buf()),
        ..SpawnOptions::default()
    })
}

/// A new agent process on the same HOME, with session `sid` loaded.
async fn restarted(home: &Path, model: &FakeModel, sid: &str, cwd: &Path) -> FakeEditor {
    let editor = spawn_in(home, model);
    editor.initialize(no_capabilities()).await;
    editor.load_session(sid, cwd).await;
    editor
}

/// The user messages of the model's last request, as JSON text.
fn user_messages(model: &FakeModel) -> Vec<String> {
    model
        .chat_requests()
        .last()
        .unwrap()
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect()
}

/// Checkpoints live in the session's data directory: `session/load` in a
/// new agent process, then `/undo`, restores the files and the history.
#[tokio::test]
async fn undo_works_across_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder().file("a.txt", "before\n").build();
    let model = FakeModel::start().await;
    let editor = spawn_in(home.path(), &model);
    editor.initialize(no_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.set_mode(&sid, "full-auto").await;
    model.push(Reply::text("hi"));
    editor.prompt(&sid, "first question").await;
    model.push(Reply::tool_call(
        "w1",
        "write_file",
        json!({"path": "a.txt", "content": "after\n"}),
    ));
    model.push(Reply::text("written"));
    editor.prompt(&sid, "please write").await;
    assert_eq!(ws.read("a.txt"), "after\n");
    editor.shut_down().await;

    let editor = restarted(home.path(), &model, &sid, ws.path()).await;
    let before = editor.agent_text(&sid);
    editor.prompt(&sid, "/undo").await;
    let said = editor.agent_text(&sid)[before.len()..].to_owned();
    assert!(said.contains("Restored:\n- a.txt"), "{said}");
    assert!(said.contains("no longer sees that turn"), "{said}");
    assert_eq!(ws.read("a.txt"), "before\n");
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "again").await;
    let users = user_messages(&model);
    assert!(
        users.iter().any(|u| u.contains("first question")),
        "{users:?}"
    );
    assert!(
        !users.iter().any(|u| u.contains("please write")),
        "{users:?}"
    );

    // The undo itself is in the log: after another restart the history
    // still lacks the undone turn.
    editor.shut_down().await;
    let editor = restarted(home.path(), &model, &sid, ws.path()).await;
    model.push(Reply::text("ok"));
    editor.prompt(&sid, "third start").await;
    let users = user_messages(&model);
    assert!(
        !users.iter().any(|u| u.contains("please write")),
        "{users:?}"
    );
}

/// A formatter-like command that rewrites a file in place, and the list
/// when nothing changed.
async fn changed_files_list(via: Via) {
    let ws = Workspace::builder()
        .file("src/main.txt", "fn  main( ) {}\n")
        .build();
    let h = auto(via, ws).await;
    // The model reads the file, then a "formatter" rewrites it via a rename.
    h.run_calls(&[("r1", "read_file", json!({"path": "src/main.txt"}))])
        .await;
    let out = h
        .run_tool(
            "f1",
            "run_command",
            json!({"command": "tr -s ' ' < src/main.txt > src/.fmt.tmp && mv src/.fmt.tmp src/main.txt"}),
        )
        .await;
    assert!(
        out.contains("- changed src/main.txt — stale: you saw this file earlier"),
        "{out}"
    );
    let out = h
        .run_tool("n1", "run_command", json!({"command": "echo quiet"}))
        .await;
    assert!(!out.contains("Files the command"), "{out}");
}
both!(changed_files_are_listed, changed_files_list);

/// A file a command changed is restorable whether or not the model read
/// it: the content of the files under the roots is kept before each
/// command.
async fn undo_after_sed_of_a_read_file(via: Via) {
    let ws = Workspace::builder()
        .file("a.txt", "old line\n")
        .file("unread.txt", "old too\n")
        .build();
    let h = auto(via, ws).await;
    h.run_calls(&[("r1", "read_file", json!({"path": "a.txt"}))])
        .await;
    let out = h
        .run_tool(
            "s1",
            "run_command",
            json!({"command": "sed -i s/old/new/ a.txt unread.txt"}),
        )
        .await;
    assert!(out.contains("- changed a.txt — stale"), "{out}");
    assert!(
        out.contains("- changed unread.txt\n") || out.ends_with("- changed unread.txt"),
        "{out}"
    );
    assert_eq!(h.ws.read("a.txt"), "new line\n");
    let said = slash(&h, "/undo").await;
    assert!(said.contains("Restored:\n- a.txt\n- unread.txt"), "{said}");
    assert_eq!(h.ws.read("a.txt"), "old line\n");
    assert_eq!(h.ws.read("unread.txt"), "old too\n");
    // A file the model read and a command deleted comes back too.
    h.run_tool("s2", "run_command", json!({"command": "rm a.txt"}))
        .await;
    let said = slash(&h, "/undo").await;
    assert!(said.contains("Restored:\n- a.txt"), "{said}");
    assert_eq!(h.ws.read("a.txt"), "old line\n");
}
both!(
    undo_restores_what_a_command_changed_in_a_read_file,
    undo_after_sed_of_a_read_file
);

/// Hostile: after changing files the model read, the command puts links to
/// files outside the roots in their place (the file itself, and a
/// directory on its path) holding the same content, so the files look
/// untouched since the turn; `/undo` must not write through them.
#[tokio::test]
async fn undo_does_not_write_through_links() {
    let outside = tempfile::tempdir().unwrap();
    let out = dunce::canonicalize(outside.path()).unwrap();
    std::fs::create_dir(out.join("dir")).unwrap();
    std::fs::write(out.join("target.txt"), "secret\n").unwrap();
    std::fs::write(out.join("dir/f.txt"), "secret\n").unwrap();
    let ws = Workspace::builder()
        .file("a.txt", "mine\n")
        .file("sub/f.txt", "mine\n")
        .build();
    let h = auto(Via::Local, ws).await;
    h.run_calls(&[
        ("r1", "read_file", json!({"path": "a.txt"})),
        ("r2", "read_file", json!({"path": "sub/f.txt"})),
    ])
    .await;
    let cmd = format!(
        "sed -i s/mine/x/ a.txt sub/f.txt && rm a.txt && ln -s {o}/target.txt a.txt && mv sub sub.old && ln -s {o}/dir sub",
        o = out.display()
    );
    h.run_tool("c1", "run_command", json!({"command": cmd}))
        .await;
    let said = slash(&h, "/undo").await;
    assert!(said.contains("a.txt: it is a symbolic link now"), "{said}");
    assert!(
        said.contains("sub/f.txt: a directory on its path is a symbolic link now"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("target.txt")).unwrap(),
        "secret\n"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("dir/f.txt")).unwrap(),
        "secret\n"
    );
}

/// Hostile: a file name with a newline cannot add lines to the list the
/// model reads, and `/undo` still deletes the file the turn created.
#[tokio::test]
async fn a_file_name_with_a_newline_stays_on_one_line() {
    let ws = Workspace::builder().file("a.txt", "a\n").build();
    let h = auto(Via::Local, ws).await;
    let out = h
        .run_tool(
            "n1",
            "run_command",
            json!({"command": "printf x > \"$(printf 'evil\\n- deleted a.txt')\""}),
        )
        .await;
    assert!(out.contains("- created evil\\n- deleted a.txt"), "{out}");
    assert!(!out.contains("\n- deleted a.txt"), "{out}");
    let said = slash(&h, "/undo").await;
    assert!(said.contains("Deleted (the turn created them)"), "{said}");
    assert!(!h.ws.exists("evil\n- deleted a.txt"));
    assert_eq!(h.ws.read("a.txt"), "a\n");
}

/// Hostile: a command deletes the project directory and makes it again;
/// the changes are reported, and later commands are still tracked (the new
/// directory is watched).
#[tokio::test]
async fn a_recreated_root_is_tracked() {
    let ws = Workspace::builder().file("a.txt", "a\n").build();
    let h = auto(Via::Local, ws).await;
    let root = dunce::canonicalize(h.ws.path()).unwrap();
    let cmd = format!(
        "cd /; rm -rf {r}; mkdir -p {r}; echo b > {r}/b.txt",
        r = root.display()
    );
    let out = h
        .run_tool("c1", "run_command", json!({"command": cmd}))
        .await;
    assert!(out.contains("- created b.txt"), "{out}");
    assert!(out.contains("- deleted a.txt"), "{out}");
    let out = h
        .run_tool("c2", "run_command", json!({"command": "echo c > c.txt"}))
        .await;
    assert!(out.contains("- created c.txt"), "{out}");
}

/// The fallback: with the watch off (`ACP_CODER_CHANGES=walk`, as when
/// inotify cannot be used), the walk gives the same lists and undo.
#[tokio::test]
async fn the_walk_fallback_lists_and_undoes_the_same() {
    let ws = Workspace::builder()
        .file("a.txt", "old\n")
        .file("gone.txt", "g\n")
        .build();
    let h = Harness::start_with(
        Via::Local.capabilities(),
        ws,
        "",
        vec![("ACP_CODER_CHANGES".into(), "walk".into())],
    )
    .await;
    h.set_mode("full-auto").await;
    h.run_calls(&[("r1", "read_file", json!({"path": "a.txt"}))])
        .await;
    let out = h
        .run_tool(
            "c1",
            "run_command",
            json!({"command": "sed -i s/old/new/ a.txt && rm gone.txt && echo n > n.txt"}),
        )
        .await;
    assert!(out.contains("- created n.txt"), "{out}");
    assert!(out.contains("- changed a.txt — stale"), "{out}");
    assert!(out.contains("- deleted gone.txt"), "{out}");
    let said = slash(&h, "/undo").await;
    assert!(said.contains("Restored:\n- a.txt"), "{said}");
    assert_eq!(h.ws.read("a.txt"), "old\n");
}

/// The user-message texts and tool-call ids `session/load` replayed.
fn replayed(editor: &FakeEditor, sid: &str) -> (Vec<String>, Vec<String>) {
    let users = editor
        .updates_of_kind(sid, "user_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
        .collect();
    let calls = editor
        .updates_of_kind(sid, "tool_call")
        .iter()
        .filter_map(|u| u["toolCallId"].as_str().map(str::to_owned))
        .collect();
    (users, calls)
}

/// A reloaded session shows what the model sees: after `/undo` and after
/// `/rewind`, `session/load` replays neither the undone user message nor
/// its tool call and diff.
#[tokio::test]
async fn a_reloaded_session_does_not_replay_undone_turns() {
    let home = tempfile::tempdir().unwrap();
    let ws = Workspace::builder().file("a.txt", "before\n").build();
    let model = FakeModel::start().await;
    let editor = spawn_in(home.path(), &model);
    editor.initialize(no_capabilities()).await;
    let sid = editor.new_session(ws.path()).await;
    editor.set_mode(&sid, "full-auto").await;
    model.push(Reply::text("hi"));
    editor.prompt(&sid, "first question").await;
    let write = |id: &str, content: &str| {
        Reply::tool_call(
            id,
            "write_file",
            json!({"path": "a.txt", "content": content}),
        )
    };
    model.push(write("w_undone", "after\n"));
    model.push(Reply::text("written"));
    editor.prompt(&sid, "please write").await;
    editor.prompt(&sid, "/undo").await;
    assert_eq!(ws.read("a.txt"), "before\n");
    model.push(write("w_kept", "kept\n"));
    model.push(Reply::text("written"));
    editor.prompt(&sid, "write it again").await;
    model.push(write("w_rewound", "rewound\n"));
    model.push(Reply::text("written"));
    editor.prompt(&sid, "and once more").await;
    editor.prompt(&sid, "/rewind 1").await;
    assert_eq!(ws.read("a.txt"), "kept\n");
    editor.shut_down().await;

    let editor = restarted(home.path(), &model, &sid, ws.path()).await;
    let (users, calls) = replayed(&editor, &sid);
    assert!(users.iter().any(|u| u == "first question"), "{users:?}");
    assert!(users.iter().any(|u| u == "write it again"), "{users:?}");
    assert!(!users.iter().any(|u| u == "please write"), "{users:?}");
    assert!(!users.iter().any(|u| u == "and once more"), "{users:?}");
    assert_eq!(
        calls,
        ["w_kept"],
        "the undone turns' diffs are not replayed"
    );
}

/// `/undo` restores what a command changed, whether or not the model read
/// it: files it edited and deleted come back, files it created go; a file
/// too big to keep and a file the user changed since are named, with why.
async fn undo_restores_unread_files(via: Via) {
    let big = format!("{}\n", "y".repeat(1100 * 1024));
    let ws = Workspace::builder()
        .file("b.txt", "b before\n")
        .file("src/d.txt", "d before\n")
        .file("e.txt", "e before\n")
        .file("big.txt", big.clone())
        .build();
    let h = auto(via, ws).await;
    h.run_tool(
        "c1",
        "run_command",
        json!({"command": "sed -i s/before/after/ b.txt e.txt big.txt && rm src/d.txt && mkdir -p gen && echo new > gen/c.txt"}),
    )
    .await;
    assert_eq!(h.ws.read("b.txt"), "b after\n");
    // The user edits e.txt after the turn.
    std::fs::write(h.ws.join("e.txt"), "e mine\n").unwrap();
    if via == Via::Editor {
        h.editor.open_buffer(h.ws.join("b.txt"), "b after\n");
    }
    let said = slash(&h, "/undo").await;
    assert_eq!(h.ws.read("b.txt"), "b before\n", "{said}");
    assert_eq!(h.ws.read("src/d.txt"), "d before\n", "{said}");
    assert!(!h.ws.exists("gen/c.txt"), "{said}");
    assert!(said.contains("- b.txt"), "{said}");
    assert!(said.contains("- src/d.txt"), "{said}");
    assert!(said.contains("- gen/c.txt"), "{said}");
    assert!(
        said.contains("e.txt: it changed after that turn (on disk or in the editor), so it was not overwritten"),
        "{said}"
    );
    assert_eq!(h.ws.read("e.txt"), "e mine\n");
    assert!(
        said.contains("big.txt: not restored: a command changed or deleted it, and no copy was kept before it ran: it held 1101 KiB, more than the 1024 KiB kept per file"),
        "{said}"
    );
    if via == Via::Editor {
        assert_eq!(
            h.editor.buffer(h.ws.join("b.txt")).as_deref(),
            Some("b before\n"),
            "the editor's buffer follows"
        );
    }
}
both!(
    undo_restores_files_the_model_never_read,
    undo_restores_unread_files
);

/// `/undo` after a command in words every shell the agent may choose
/// understands (`echo x> file`): the file the command made goes. The undo
/// test that runs on Windows too (scripts/wine-test.sh).
async fn undo_after_a_command_of_any_shell(via: Via) {
    let ws = Workspace::builder().file("keep.txt", "K\n").build();
    let h = auto(via, ws).await;
    // Where there is no command sandbox (Windows), full-auto asks first.
    h.editor
        .set_default_permission(Some(PermissionDecision::AllowOnce));
    turn(
        &h,
        "make a file",
        [(
            "c1",
            "run_command",
            json!({"command": "echo made> made.txt"}),
        )],
    )
    .await;
    let result = h.tool_result("c1");
    assert!(result.contains("- created made.txt"), "{result}");
    assert!(h.ws.exists("made.txt"));
    let said = slash(&h, "/undo").await;
    assert!(
        said.contains("Deleted (the turn created them):\n- made.txt"),
        "{said}"
    );
    assert!(!h.ws.exists("made.txt"));
    assert_eq!(h.ws.read("keep.txt"), "K\n");
}
both!(
    undo_removes_what_any_shell_made,
    undo_after_a_command_of_any_shell
);
