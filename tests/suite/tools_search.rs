//! grep, glob and list_directory end to end: .gitignore, hidden and binary
//! files, sorted output, paths relative to the session cwd. The search runs
//! in the agent either way; with and without editor capabilities it must
//! behave the same and never touch fs/*.

use super::tools_common::{Harness, Via, both};
use crate::support::Workspace;
use serde_json::json;

/// A project with ignored, hidden and binary files that all contain `needle`.
/// The editor variant is a git repository, the local one a plain directory:
/// .gitignore counts in both.
fn project(via: Via) -> Workspace {
    let b = Workspace::builder()
        .file(".gitignore", "target/\n*.log\n")
        .file("src/lib.rs", "// needle here\nfn x() {}\n")
        .file("src/deep/mod.rs", "fn needle() {}\n")
        .file("README.md", "Needle in caps\n")
        .file("b.txt", "needle\nctx1\nctx2\n")
        .file("target/out.rs", "needle\n")
        .file("debug.log", "needle\n")
        .file(".hidden/secret.rs", "needle\n")
        .file(".env", "needle\n")
        .file("blob.bin", b"needle\0\0binary\n");
    match via {
        Via::Editor => b.git().build(),
        Via::Local => b.build(),
    }
}

/// The `path:line:text` lines of a grep result (the count leading them
/// and the notes left out).
fn hit_lines(out: &str) -> Vec<&str> {
    out.lines()
        .enumerate()
        .filter(|(i, l)| *i > 0 || !l.contains(" matching line"))
        .map(|(_, l)| l)
        .filter(|l| !l.starts_with('[') && !l.starts_with('(') && !l.trim().is_empty())
        .collect()
}

async fn grep_respects_ignores_and_sorts(via: Via) {
    let h = Harness::start(via, project(via)).await;
    let args = json!({"pattern": "needle"});
    let out = h.run_tool("g1", "grep", args.clone()).await;
    h.assert_lifecycle("g1", "search", &args, true, true);
    // The count leads: a model asked "how many" reads it, not the lines.
    assert!(out.starts_with("3 matching lines in 3 files:\n"), "{out}");
    assert_eq!(
        hit_lines(&out),
        [
            "b.txt:1:needle",
            "src/deep/mod.rs:1:fn needle() {}",
            "src/lib.rs:1:// needle here",
        ],
        "full output: {out}"
    );
    // The editor can jump to the hits: absolute paths, 1-based lines.
    let last = h.final_update("g1");
    let locations = last["locations"].as_array().cloned().unwrap_or_default();
    assert!(
        locations
            .contains(&json!({"path": h.ws.join("src/lib.rs").display().to_string(), "line": 1})),
        "{last}"
    );
    assert!(
        locations
            .iter()
            .all(|l| l["path"].as_str().unwrap().starts_with('/')),
        "{last}"
    );

    // Case-insensitive, restricted by glob.
    let args = json!({"pattern": "NEEDLE", "case_insensitive": true, "glob": "*.md"});
    let out = h.run_tool("g2", "grep", args.clone()).await;
    assert_eq!(hit_lines(&out), ["README.md:1:Needle in caps"], "{out}");
    // Case-sensitive by default.
    let out = h.run_tool("g3", "grep", json!({"pattern": "Needle"})).await;
    assert_eq!(hit_lines(&out), ["README.md:1:Needle in caps"], "{out}");

    // Context lines, and a sub-directory as the root (paths stay relative
    // to the cwd).
    let out = h
        .run_tool(
            "g4",
            "grep",
            json!({"pattern": "^needle$", "path": "b.txt", "context": 1}),
        )
        .await;
    assert!(
        out.contains("b.txt:1:needle") && out.contains("b.txt-2-ctx1"),
        "{out}"
    );
    assert!(!out.contains("ctx2"), "{out}");
    let out = h
        .run_tool(
            "g5",
            "grep",
            json!({"pattern": "needle", "path": "src/deep"}),
        )
        .await;
    assert_eq!(
        hit_lines(&out),
        ["src/deep/mod.rs:1:fn needle() {}"],
        "{out}"
    );

    // Nothing found is a result, not a failure.
    let out = h
        .run_tool("g6", "grep", json!({"pattern": "haystack"}))
        .await;
    assert_eq!(h.final_status("g6"), "completed");
    assert!(!out.contains(':'), "{out}");
    assert!(h.editor.permission_requests().is_empty());
    assert!(h.reverse_methods("fs/").is_empty());
}
both!(grep_respects_ignores_and_sorts);

async fn glob_respects_ignores_and_sorts(via: Via) {
    let h = Harness::start(via, project(via)).await;
    let args = json!({"pattern": "*.rs"});
    let out = h.run_tool("f1", "glob", args.clone()).await;
    h.assert_lifecycle("f1", "search", &args, true, true);
    assert_eq!(
        hit_lines(&out),
        ["src/deep/mod.rs", "src/lib.rs"],
        "ignored and hidden files are skipped: {out}"
    );
    let out = h
        .run_tool("f2", "glob", json!({"pattern": "**/*", "path": "src"}))
        .await;
    assert_eq!(hit_lines(&out), ["src/deep/mod.rs", "src/lib.rs"], "{out}");
    let out = h.run_tool("f3", "glob", json!({"pattern": "*.log"})).await;
    assert!(
        hit_lines(&out).iter().all(|l| !l.contains("debug.log")),
        "{out}"
    );
    assert!(h.editor.permission_requests().is_empty());
    assert!(h.reverse_methods("fs/").is_empty());
}
both!(glob_respects_ignores_and_sorts);

async fn list_directory_respects_ignores_and_sorts(via: Via) {
    let h = Harness::start(via, project(via)).await;
    let args = json!({});
    let out = h.run_tool("l1", "list_directory", args.clone()).await;
    h.assert_lifecycle("l1", "search", &args, true, true);
    let names: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with('[') && !l.starts_with('('))
        .map(|l| l.split(" (").next().unwrap())
        .collect();
    assert_eq!(
        names,
        ["src/", "README.md", "b.txt", "blob.bin"],
        "directories first, then files, sorted; hidden and ignored left out: {out}"
    );
    let out = h
        .run_tool("l2", "list_directory", json!({"path": "src"}))
        .await;
    let names: Vec<&str> = out.lines().map(|l| l.split(" (").next().unwrap()).collect();
    assert_eq!(names, ["deep/", "lib.rs"], "{out}");
    // A file where a directory is needed.
    let out = h
        .run_tool("l3", "list_directory", json!({"path": "b.txt"}))
        .await;
    assert_eq!(h.final_status("l3"), "failed");
    assert!(out.contains("not a directory"), "{out}");
    assert!(h.reverse_methods("fs/").is_empty());
}
both!(list_directory_respects_ignores_and_sorts);

/// A one-line file over grep's 16 MiB line limit is not read into memory
/// whole (an outside review saw 438 MiB taken by a 300 MiB one): it is
/// skipped, and the answer names it and says how to look at it instead.
#[tokio::test]
async fn grep_skips_a_file_with_an_over_long_line_and_says_so() {
    let mut line = "a".repeat(17 << 20);
    line.push_str("needle\n");
    let ws = Workspace::builder()
        .file("bundle.min.js", line)
        .file("src/lib.rs", "// needle here\n")
        .build();
    let h = Harness::start(Via::Local, ws).await;
    let out = h.run_tool("g1", "grep", json!({"pattern": "needle"})).await;
    assert_eq!(hit_lines(&out), ["src/lib.rs:1:// needle here"], "{out}");
    assert!(
        out.contains("[1 file not searched: a line longer than 16 MiB (bundle.min.js)"),
        "{out}"
    );
}

/// Small models fill every parameter, the optional ones with `""`
/// (Qwen2.5-Coder 1.5B sent `"glob": ""` and got "the glob is empty"): a
/// blank optional path or glob is not given.
#[tokio::test]
async fn blank_optional_arguments_are_not_given() {
    let h = Harness::start(Via::Local, project(Via::Local)).await;
    let out = h
        .run_tool(
            "g1",
            "grep",
            json!({"pattern": "needle", "path": "", "glob": " ", "context": 0}),
        )
        .await;
    assert_eq!(
        hit_lines(&out),
        [
            "b.txt:1:needle",
            "src/deep/mod.rs:1:fn needle() {}",
            "src/lib.rs:1:// needle here"
        ],
        "{out}"
    );
    let out = h
        .run_tool("f1", "glob", json!({"pattern": "*.rs", "path": ""}))
        .await;
    assert!(out.contains("src/lib.rs"), "{out}");
    let out = h
        .run_tool("l1", "list_directory", json!({"path": ""}))
        .await;
    assert!(out.contains("src/"), "{out}");
}
