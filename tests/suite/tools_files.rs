//! read_file, write_file and edit_file end to end, through the editor's
//! `fs/*` methods and on the local disk.

use super::tools_common::{Harness, Via, both, content_text, diffs, edit_call, write_call};
use crate::support::{Reply, Workspace, chunk};
use serde_json::json;

/// In accept-edits mode edits in the project run without asking.
async fn editing(via: Via, ws: Workspace) -> Harness {
    let h = Harness::start(via, ws).await;
    h.set_mode("accept-edits").await;
    h
}

/// The editor saw fs requests only when it advertised them (the harness
/// fails on the other case); in editor mode they must really be used.
fn assert_fs_use(h: &Harness, via: Via) {
    let fs = h.reverse_methods("fs/");
    match via {
        Via::Editor => assert!(!fs.is_empty(), "editor mode must go through fs/*"),
        Via::Local => assert!(fs.is_empty(), "no fs/* without the capability: {fs:?}"),
    }
}

// ------------------------------------------------------------------ read_file

async fn read_file_numbers_and_pages(via: Via) {
    let ws = Workspace::builder()
        .file("notes.txt", "one\ntwo\nthree\nfour\nfive\n")
        .build();
    let h = Harness::start(via, ws).await;
    let args = json!({"path": "notes.txt"});
    let out = h.run_tool("r1", "read_file", args.clone()).await;
    assert_eq!(
        out,
        "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n"
    );
    h.assert_lifecycle("r1", "read", &args, true, true);
    // Locations: absolute path, 1-based line.
    let abs = h.ws.join("notes.txt").display().to_string();
    let located = h
        .call_updates("r1")
        .iter()
        .any(|u| u["locations"] == json!([{"path": abs, "line": 1}]));
    assert!(
        located,
        "read_file reports its location: {:?}",
        h.call_updates("r1")
    );

    let args = json!({"path": "notes.txt", "offset": 2, "limit": 2});
    let out = h.run_tool("r2", "read_file", args.clone()).await;
    assert!(
        out.starts_with("     2\ttwo\n     3\tthree\n"),
        "paged read: {out:?}"
    );
    assert!(!out.contains("\tfour"), "{out:?}");
    assert!(
        out.contains("lines 2–3 of 5") && out.contains("offset=4"),
        "paging note: {out:?}"
    );
    h.assert_lifecycle("r2", "read", &args, true, true);
    let located = h
        .call_updates("r2")
        .iter()
        .any(|u| u["locations"] == json!([{"path": abs, "line": 2}]));
    assert!(located, "{:?}", h.call_updates("r2"));

    // An absolute path inside the project needs no permission either.
    let args = json!({"path": abs, "offset": 5});
    let out = h.run_tool("r3", "read_file", args).await;
    assert!(out.starts_with("     5\tfive\n"), "{out:?}");
    assert!(h.editor.permission_requests().is_empty());

    // Absurd numbers are handled, not a crash.
    let out = h
        .run_tool(
            "r5",
            "read_file",
            json!({"path": "notes.txt", "offset": u64::MAX, "limit": 2}),
        )
        .await;
    assert!(out.contains("past the end"), "{out}");
    let out = h
        .run_tool(
            "r6",
            "read_file",
            json!({"path": "notes.txt", "offset": 4, "limit": u64::MAX}),
        )
        .await;
    assert!(out.starts_with("     4\tfour\n     5\tfive\n"), "{out}");
    // Past the end: said so.
    let out = h
        .run_tool(
            "r4",
            "read_file",
            json!({"path": "notes.txt", "offset": 99}),
        )
        .await;
    assert!(out.contains("only 5 lines"), "{out}");

    if via == Via::Editor {
        let reads = h.editor.reads();
        assert_eq!(reads.len(), 6, "{reads:?}");
        assert!(reads.iter().all(|r| r.path == h.ws.join("notes.txt")));
        assert!(reads.iter().all(|r| r.session_id == h.sid));
    }
    assert_fs_use(&h, via);
}
both!(read_file_numbers_and_pages);

// ----------------------------------------------------------------- write_file

async fn write_file_creates_and_overwrites(via: Via) {
    let ws = Workspace::builder().file("a.txt", "old\n").build();
    let h = editing(via, ws).await;

    let args = json!({"path": "sub/dir/new.txt", "content": "hello\nworld\n"});
    let out = h.run_tool("w1", "write_file", args.clone()).await;
    assert!(out.contains("new.txt"), "{out}");
    h.assert_lifecycle("w1", "edit", &args, true, true);
    assert_eq!(h.ws.read("sub/dir/new.txt"), "hello\nworld\n");
    let abs = h.ws.join("sub/dir/new.txt").display().to_string();
    let diff = h
        .call_updates("w1")
        .iter()
        .flat_map(diffs)
        .next()
        .unwrap_or_else(|| panic!("write_file shows a diff: {:?}", h.call_updates("w1")));
    assert_eq!(
        diff,
        json!({"type": "diff", "path": abs, "newText": "hello\nworld\n"}),
        "a new file's diff has no oldText"
    );

    let args = json!({"path": "a.txt", "content": "new\n"});
    h.run_tool("w2", "write_file", args.clone()).await;
    h.assert_lifecycle("w2", "edit", &args, true, true);
    assert_eq!(h.ws.read("a.txt"), "new\n");
    let abs = h.ws.join("a.txt").display().to_string();
    let diff = h.call_updates("w2").iter().flat_map(diffs).next().unwrap();
    assert_eq!(
        diff,
        json!({"type": "diff", "path": abs, "oldText": "old\n", "newText": "new\n"})
    );
    if via == Via::Editor {
        let writes = h.editor.writes();
        assert_eq!(writes.len(), 2, "{writes:?}");
        assert_eq!(writes[0].path, h.ws.join("sub/dir/new.txt"));
        assert_eq!(writes[1].content, "new\n");
    }
    assert_fs_use(&h, via);
}
both!(write_file_creates_and_overwrites);

// ------------------------------------------------------------------ edit_file

async fn edit_file_unique_match_and_replace_all(via: Via) {
    let ws = Workspace::builder()
        .file(
            "src/lib.rs",
            "fn a() {\n    let x = 1;\n}\nfn b() {\n    let x = 1;\n    let y = 2;\n}\n",
        )
        .build();
    let h = editing(via, ws).await;

    let args = json!({"path": "src/lib.rs", "old_string": "    let y = 2;", "new_string": "    let y = 3;"});
    let out = h.run_tool("e1", "edit_file", args.clone()).await;
    h.assert_lifecycle("e1", "edit", &args, true, true);
    assert!(out.contains("line 6"), "the model learns where: {out}");
    let after = "fn a() {\n    let x = 1;\n}\nfn b() {\n    let x = 1;\n    let y = 3;\n}\n";
    assert_eq!(h.ws.read("src/lib.rs"), after);
    let abs = h.ws.join("src/lib.rs").display().to_string();
    let updates = h.call_updates("e1");
    let diff = updates.iter().flat_map(diffs).next().unwrap();
    assert_eq!(diff["path"], abs.as_str());
    assert!(diff["oldText"].as_str().unwrap().contains("let y = 2;"));
    assert_eq!(diff["newText"], after);
    assert!(
        updates
            .iter()
            .any(|u| u["locations"] == json!([{"path": abs, "line": 6}])),
        "edit location: {updates:?}"
    );

    // Not unique: refused, nothing written.
    let args =
        json!({"path": "src/lib.rs", "old_string": "let x = 1;", "new_string": "let x = 9;"});
    let out = h.run_tool("e2", "edit_file", args.clone()).await;
    h.assert_lifecycle("e2", "edit", &args, false, false);
    assert!(
        out.contains("occurs 2 times") && out.contains("replace_all"),
        "{out}"
    );
    assert_eq!(h.ws.read("src/lib.rs"), after);

    // replace_all changes every occurrence.
    let args = json!({"path": "src/lib.rs", "old_string": "let x = 1;", "new_string": "let x = 9;", "replace_all": true});
    let out = h.run_tool("e3", "edit_file", args.clone()).await;
    h.assert_lifecycle("e3", "edit", &args, true, true);
    assert!(out.contains("2 occurrences"), "{out}");
    assert_eq!(
        h.ws.read("src/lib.rs"),
        after.replace("let x = 1;", "let x = 9;")
    );

    // No match: the nearest lines are shown to the model.
    let args = json!({"path": "src/lib.rs", "old_string": "let y = 3 // z", "new_string": "z"});
    let out = h.run_tool("e4", "edit_file", args.clone()).await;
    h.assert_lifecycle("e4", "edit", &args, false, false);
    assert!(out.contains("not found"), "{out}");
    assert!(
        out.contains("     6\t    let y = 3;"),
        "nearest lines: {out}"
    );
    assert_eq!(
        h.ws.read("src/lib.rs"),
        after.replace("let x = 1;", "let x = 9;")
    );
    assert_fs_use(&h, via);
}
both!(edit_file_unique_match_and_replace_all);

async fn line_endings_and_final_newline_are_kept(via: Via) {
    let ws = Workspace::builder()
        .file("dos.txt", "alpha\r\nbeta\r\ngamma\r\n")
        .file("dos2.txt", "one\r\ntwo\r\n")
        .file("nl.txt", "x = 1\ny = 2\n")
        .file("nonl.txt", "x = 1\ny = 2")
        .build();
    let h = editing(via, ws).await;
    h.run_calls(&[
        edit_call("c1", "dos.txt", "beta\n", "BETA\nbeta2\n"),
        write_call("c2", "dos2.txt", "three\nfour\n"),
        edit_call("c3", "nl.txt", "y = 2", "y = 3"),
        edit_call("c4", "nonl.txt", "y = 2", "y = 3"),
    ])
    .await;
    h.assert_completed(&["c1", "c2", "c3", "c4"]);
    assert_eq!(h.ws.read("dos.txt"), "alpha\r\nBETA\r\nbeta2\r\ngamma\r\n");
    assert_eq!(h.ws.read("dos2.txt"), "three\r\nfour\r\n");
    assert_eq!(h.ws.read("nl.txt"), "x = 1\ny = 3\n");
    assert_eq!(h.ws.read("nonl.txt"), "x = 1\ny = 3");
    // The model reads CRLF files without the CRs.
    let out = h
        .run_tool("c5", "read_file", json!({"path": "dos.txt"}))
        .await;
    assert_eq!(
        out,
        "     1\talpha\n     2\tBETA\n     3\tbeta2\n     4\tgamma\n"
    );
    assert_fs_use(&h, via);
}
both!(line_endings_and_final_newline_are_kept);

// -------------------------------------------------------------- refusals

async fn binary_missing_and_directory_are_explained(via: Via) {
    let bin = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRtext\0\0";
    let ws = Workspace::builder()
        .file("img.png", bin)
        .file("src/main.rs", "fn main() {}\n")
        .build();
    let h = editing(via, ws).await;
    let calls = [
        ("b1", "read_file", json!({"path": "img.png"})),
        edit_call("b2", "img.png", "text", "TEXT"),
        write_call("b3", "img.png", "x"),
        ("m1", "read_file", json!({"path": "missing.txt"})),
        edit_call("m2", "missing.txt", "a", "b"),
        ("d1", "read_file", json!({"path": "src"})),
        edit_call("d2", "src", "a", "b"),
        write_call("d3", "src", "x"),
    ];
    h.run_calls(&calls).await;
    for (id, name, args) in &calls {
        let kind = if *name == "read_file" { "read" } else { "edit" };
        // Read failures happen while running; edit checks fail before asking.
        let ran = *name == "read_file";
        h.assert_lifecycle(id, kind, args, ran, false);
        let out = h.tool_result(id);
        assert!(out.starts_with("Error:"), "{id}: {out}");
        let final_text = content_text(&h.final_update(id));
        assert!(!final_text.is_empty(), "{id}: the editor sees why");
    }
    for id in ["b1", "b2", "b3"] {
        assert!(
            h.tool_result(id).contains("binary"),
            "{id}: {}",
            h.tool_result(id)
        );
    }
    assert!(
        h.tool_result("m1").contains("does not exist"),
        "{}",
        h.tool_result("m1")
    );
    assert!(
        h.tool_result("m2").contains("does not exist")
            && h.tool_result("m2").contains("write_file"),
        "{}",
        h.tool_result("m2")
    );
    for id in ["d1", "d2", "d3"] {
        assert!(
            h.tool_result(id).contains("directory"),
            "{id}: {}",
            h.tool_result(id)
        );
    }
    assert_eq!(std::fs::read(h.ws.join("img.png")).unwrap(), bin);
    assert!(h.ws.join("src").is_dir());
    assert!(!h.ws.exists("missing.txt"));
    assert!(h.editor.writes().is_empty());
}
both!(binary_missing_and_directory_are_explained);

async fn bad_arguments_fail_the_call_not_the_turn(via: Via) {
    let ws = Workspace::builder().file("a.txt", "a\n").build();
    let h = editing(via, ws).await;
    let calls = [
        ("x1", "read_file", json!({})),
        ("x2", "read_file", json!({"path": 42})),
        ("x3", "read_file", json!({"path": "a.txt", "offset": "two"})),
        (
            "x4",
            "edit_file",
            json!({"path": "a.txt", "old_string": "a"}),
        ),
        (
            "x5",
            "write_file",
            json!({"path": "a.txt", "content": ["a"]}),
        ),
        ("x6", "run_command", json!({"cmd": "ls"})),
        (
            "x7",
            "update_plan",
            json!({"entries": [{"content": "x", "status": "someday"}]}),
        ),
        ("x8", "grep", json!({"pattern": "("})),
    ];
    h.run_calls(&calls).await;
    let expect = [
        ("x1", "path"),
        ("x2", "path"),
        ("x3", "offset"),
        ("x4", "new_string"),
        ("x5", "content"),
        ("x6", "command"),
        ("x7", "status"),
        ("x8", "("),
    ];
    for (id, field) in expect {
        assert_eq!(h.final_status(id), "failed", "{id}");
        let out = h.tool_result(id);
        assert!(
            out.starts_with("Error:") && out.contains(field),
            "{id}: the model is told what is wrong with {field}: {out}"
        );
    }
    assert_eq!(h.ws.read("a.txt"), "a\n");
    assert!(h.editor.writes().is_empty());
    assert!(h.editor.terminal_calls().is_empty());
    assert!(h.editor.permission_requests().is_empty());

    // Arguments that are not JSON at all, and an unknown tool.
    h.model.push(Reply::stream([
        chunk::role(),
        chunk::tool_call_start(0, "j1", "read_file"),
        chunk::tool_call_args(0, "{\"path\": \"a.t"),
        chunk::tool_call_start(1, "j2", "delete_everything"),
        chunk::tool_call_args(1, "{}"),
        chunk::finish("tool_calls"),
    ]));
    h.model.push(Reply::text("ok"));
    let r = h.editor.prompt(&h.sid, "again").await;
    assert_eq!(r["stopReason"], "end_turn");
    assert_eq!(h.final_status("j1"), "failed");
    let out = h.tool_result("j1");
    assert!(out.starts_with("Error:") && out.contains("JSON"), "{out}");
    assert_eq!(h.final_status("j2"), "failed");
    let out = h.tool_result("j2");
    assert!(
        out.contains("delete_everything") && out.contains("read_file"),
        "{out}"
    );
}
both!(bad_arguments_fail_the_call_not_the_turn);

// ------------------------------------------------------ the editor's buffers

/// With fs capabilities the model sees (and edits) the unsaved buffer, not
/// the file on disk; the write goes to the editor.
#[tokio::test]
async fn unsaved_buffer_is_read_and_edited() {
    let ws = Workspace::builder()
        .file("main.py", "print('saved')\n")
        .build();
    let h = editing(Via::Editor, ws).await;
    let path = h.ws.join("main.py");
    h.editor
        .open_buffer(&path, "print('unsaved')\nprint('more')\n");
    h.editor.set_write_to_disk(false);

    let out = h
        .run_tool("u1", "read_file", json!({"path": "main.py"}))
        .await;
    assert_eq!(out, "     1\tprint('unsaved')\n     2\tprint('more')\n");
    assert!(h.editor.reads().iter().all(|r| r.from_buffer));

    let args = json!({"path": "main.py", "old_string": "print('unsaved')", "new_string": "print('edited')"});
    h.run_tool("u2", "edit_file", args.clone()).await;
    h.assert_lifecycle("u2", "edit", &args, true, true);
    let diff = h.call_updates("u2").iter().flat_map(diffs).next().unwrap();
    assert_eq!(diff["oldText"], "print('unsaved')\nprint('more')\n");
    assert_eq!(diff["newText"], "print('edited')\nprint('more')\n");
    let writes = h.editor.writes();
    assert_eq!(writes.len(), 1, "{writes:?}");
    assert_eq!(writes[0].path, path);
    assert_eq!(writes[0].content, "print('edited')\nprint('more')\n");
    assert_eq!(
        h.editor.buffer(&path).as_deref(),
        Some("print('edited')\nprint('more')\n")
    );
    // The agent never touched the disk itself.
    assert_eq!(h.ws.read("main.py"), "print('saved')\n");

    // An edit that only matches the disk content fails: the buffer wins.
    let out = h
        .run_call(edit_call("u3", "main.py", "print('saved')", "x"))
        .await;
    assert_eq!(h.final_status("u3"), "failed", "{out}");
    assert_eq!(h.editor.writes().len(), 1);
}

/// The editor said it wrote a new file beneath the project, but no such
/// file is there, and the editor's own read says it holds the content. That
/// is what a folder swapped for a link and back looks like (the editor
/// wrote through the link, and reads through it again): the write is not
/// taken as done, and the turn stops. An editor's unsaved buffer over a
/// file that exists on disk still counts (above).
#[tokio::test]
async fn a_new_file_that_is_not_beneath_the_project_after_the_write_stops_the_turn() {
    let ws = Workspace::builder().file("keep.txt", "k\n").build();
    let h = editing(Via::Editor, ws).await;
    h.editor.set_write_to_disk(false);
    let (id, name, args) = write_call("n1", "new.txt", "echo pwned\n");
    h.model.push(Reply::tool_calls([(id, name, args)]));
    let r = h.editor.prompt(&h.sid, "go").await;
    assert_eq!(r["stopReason"], "refusal", "{r}");
    assert_eq!(h.final_status("n1"), "failed");
    let shown = content_text(&h.final_update("n1"));
    assert!(
        shown.contains("there is no such file beneath the project"),
        "{shown}"
    );
    let said = h.editor.agent_text(&h.sid);
    assert!(said.contains("was not written safely"), "{said}");
}

/// Without fs capabilities the agent reads and writes the disk, and the
/// harness proves it never calls fs/* (an error otherwise).
#[tokio::test]
async fn local_files_never_touch_the_editor() {
    let ws = Workspace::builder().file("a.txt", "hello\n").build();
    let h = editing(Via::Local, ws).await;
    h.run_calls(&[
        ("l1", "read_file", json!({"path": "a.txt"})),
        edit_call("l2", "a.txt", "hello", "bye"),
        write_call("l3", "b.txt", "b\n"),
    ])
    .await;
    h.assert_completed(&["l1", "l2", "l3"]);
    assert_eq!(h.ws.read("a.txt"), "bye\n");
    assert_eq!(h.ws.read("b.txt"), "b\n");
    assert!(h.editor.reverse_requests().is_empty());
    // No temp files left behind by the atomic write.
    let names: Vec<String> = std::fs::read_dir(h.ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// An editor that offers reading but not writing: reads go to the editor
/// (its buffer), writes to the disk, and fs/write_text_file is never called
/// (the harness fails the test if it is).
#[tokio::test]
async fn read_only_fs_capability_writes_locally() {
    let ws = Workspace::builder().file("a.txt", "disk\n").build();
    let caps = json!({"fs": {"readTextFile": true, "writeTextFile": false}, "terminal": false});
    let h = Harness::start_with(caps, ws, "", Vec::new()).await;
    h.set_mode("accept-edits").await;
    h.editor.open_buffer(h.ws.join("a.txt"), "buffer\n");
    h.run_calls(&[
        ("r1", "read_file", json!({"path": "a.txt"})),
        edit_call("e1", "a.txt", "buffer", "edited"),
    ])
    .await;
    assert_eq!(h.tool_result("r1"), "     1\tbuffer\n");
    assert_eq!(h.final_status("e1"), "completed", "{}", h.tool_result("e1"));
    assert_eq!(h.ws.read("a.txt"), "edited\n");
    assert!(h.editor.writes().is_empty());
    assert!(h.reverse_methods("fs/write").is_empty());
}

#[cfg(unix)] // signals, file modes and FIFOs are Unix's
/// An outside review: `read_file /dev/zero`, once allowed, grew the agent by
/// 1.5 GB a second and went on after the turn was cancelled; a FIFO in the
/// project blocked the read. Files that are not regular are refused at once
/// (on the local disk; an editor reads for itself).
#[tokio::test]
async fn devices_and_fifos_are_refused() {
    let ws = Workspace::new();
    let fifo = std::ffi::CString::new(ws.join("pipe").to_str().unwrap()).unwrap();
    // SAFETY: a valid C string for mkfifo(3).
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let h = Harness::start(Via::Local, ws).await;
    h.editor
        .set_default_permission(Some(crate::support::PermissionDecision::AllowOnce));
    h.run_calls(&[
        ("z", "read_file", json!({"path": "/dev/zero"})),
        ("u", "read_file", json!({"path": "/dev/urandom"})),
        ("p", "read_file", json!({"path": "pipe"})),
    ])
    .await;
    for id in ["z", "u", "p"] {
        assert_eq!(h.final_status(id), "failed", "{id}");
        assert!(
            h.tool_result(id).contains("not a regular file"),
            "{id}: {}",
            h.tool_result(id)
        );
    }
}

/// An 8 GiB file (sparse) is refused by its size on disk: the editor is
/// never asked for it, in a turn or by `/undo` (it used to be asked for the
/// whole of it both times).
#[tokio::test]
async fn a_huge_file_is_refused_without_asking_the_editor() {
    let ws = Workspace::builder().file("notes.txt", "small\n").build();
    let h = Harness::start(Via::Editor, ws).await;
    h.set_mode("full-auto").await;
    let huge = h.ws.join("huge.log");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let out = h
        .run_tool("r1", "read_file", json!({"path": "huge.log"}))
        .await;
    assert!(out.contains("holds more than 32 MiB"), "{out}");
    let asked = |h: &Harness| {
        h.editor
            .reads()
            .iter()
            .filter(|r| r.path.ends_with("huge.log") || r.path.ends_with("notes.txt"))
            .count()
    };
    assert_eq!(asked(&h), 0, "{:?}", h.editor.reads());

    // A turn writes notes.txt; then it grows to 8 GiB; /undo must not ask
    // the editor for it either, and says why it leaves it.
    h.model.push(Reply::tool_calls([(
        "w1",
        "write_file",
        json!({"path": "notes.txt", "content": "agent\n"}),
    )]));
    h.model.push(Reply::text("done"));
    h.editor.prompt(&h.sid, "write").await;
    let before = asked(&h);
    std::fs::OpenOptions::new()
        .write(true)
        .open(h.ws.join("notes.txt"))
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let text_before = h.editor.agent_text(&h.sid);
    let r = h.editor.prompt(&h.sid, "/undo").await;
    assert_eq!(r["stopReason"], "end_turn", "{r}");
    let said = h.editor.agent_text(&h.sid)[text_before.len()..].to_owned();
    assert_eq!(asked(&h), before, "{:?}", h.editor.reads());
    assert!(said.contains("notes.txt"), "{said}");
    assert_eq!(
        std::fs::metadata(h.ws.join("notes.txt")).unwrap().len(),
        8 << 30,
        "the file was left alone"
    );
}

/// A file over 4 MiB is read from the editor in ranges of lines, each
/// answer well under a frame; the whole text arrives intact.
#[tokio::test]
async fn a_large_file_is_read_from_the_editor_in_ranges() {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < (5 << 20) {
        n += 1;
        text.push_str(&format!("line {n:07} {}\n", "y".repeat(80)));
    }
    let ws = Workspace::builder().file("big.txt", &text).build();
    let h = Harness::start(Via::Editor, ws).await;
    let out = h
        .run_tool(
            "r1",
            "read_file",
            json!({"path": "big.txt", "offset": n - 1, "limit": 2}),
        )
        .await;
    assert!(out.contains(&format!("line {:07}", n - 1)), "{out}");
    assert!(out.contains(&format!("line {n:07}")), "{out}");
    assert!(out.contains(&format!("of {n}")), "{out}");
    let reads: Vec<_> = h
        .editor
        .reads()
        .into_iter()
        .filter(|r| r.path.ends_with("big.txt"))
        .collect();
    assert!(reads.len() >= 2, "{reads:?}");
    assert!(
        reads.iter().all(|r| r.line.is_some() && r.limit.is_some()),
        "{reads:?}"
    );
    assert_eq!(reads[0].line, Some(1));
}

/// Small models fill every parameter: `offset: 0, limit: 0` reads the file
/// from its start, as if neither was given (not one line).
#[tokio::test]
async fn zero_offset_and_limit_read_the_whole_file() {
    let ws = Workspace::builder()
        .file("notes.txt", "one\ntwo\nthree\n")
        .build();
    let h = Harness::start(Via::Local, ws).await;
    let out = h
        .run_tool(
            "r1",
            "read_file",
            json!({"path": "notes.txt", "offset": 0, "limit": 0}),
        )
        .await;
    assert_eq!(out, "     1\tone\n     2\ttwo\n     3\tthree\n");
}
