//! The policy table, grant scopes and the attacks on them (issue 14 item 1,
//! item 4; issue 16's prefix finding is in `prefix.rs`).
use super::*;

fn roots() -> Vec<PathBuf> {
    vec![PathBuf::from("/proj")]
}

fn decide_in(mode: Mode, access: &Access, tool: &str, g: &Grants) -> Decision {
    let roots = roots();
    let protected = Protected::default();
    let bounds = Bounds {
        roots: &roots,
        protected: &protected,
        skill_dirs: &[],
    };
    decide(mode, access, tool, &bounds, g)
}

fn cmd(c: &str) -> Access {
    Access::Execute {
        command: c.into(),
        cwd: "/proj".into(),
    }
}

fn read(p: &str) -> Access {
    Access::Read(vec![p.into()])
}

/// A user-wide skill's own files are read without asking (they are its
/// content); anything beside the folder, and its scripts, still ask.
#[test]
fn reads_in_a_user_skill_folder_do_not_ask() {
    let roots = roots();
    let protected = Protected::default();
    let skills = vec![PathBuf::from("/home/u/.agents/skills/pdf")];
    let bounds = Bounds {
        roots: &roots,
        protected: &protected,
        skill_dirs: &skills,
    };
    let g = Grants::default();
    let d = |a: &Access| decide(Mode::Ask, a, "read_file", &bounds, &g);
    assert_eq!(
        d(&read("/home/u/.agents/skills/pdf/reference/forms.md")),
        Decision::Allow
    );
    assert!(asks(&d(&read("/home/u/.agents/skills/pdf-other/x.md"))));
    assert!(asks(&d(&read("/home/u/.ssh/id_ed25519"))));
    let script = Access::Execute {
        command: "python /home/u/.agents/skills/pdf/scripts/fill.py".into(),
        cwd: "/proj".into(),
    };
    assert!(asks(&decide(
        Mode::Ask,
        &script,
        "run_command",
        &bounds,
        &g
    )));
}

fn write(p: &str) -> Access {
    Access::Write(vec![p.into()])
}

fn asks(d: &Decision) -> bool {
    matches!(d, Decision::Ask(_))
}

#[test]
fn mode_table() {
    let g = Grants::default();
    let exec = cmd("cargo test");
    for mode in Mode::ALL {
        assert_eq!(
            decide_in(mode, &read("/proj/a"), "read_file", &g),
            Decision::Allow
        );
        assert!(asks(&decide_in(mode, &read("/etc/hosts"), "read_file", &g)));
        // Protected paths: reads stay allowed in every mode.
        assert_eq!(
            decide_in(mode, &read("/proj/.git/config"), "read_file", &g),
            Decision::Allow
        );
    }
    assert!(matches!(
        decide_in(Mode::ReadOnly, &write("/proj/a"), "write_file", &g),
        Decision::Refuse(_)
    ));
    assert_eq!(
        decide_in(Mode::Ask, &write("/proj/a"), "write_file", &g),
        Decision::Ask(Scope::Edits("write_file".into()))
    );
    for mode in [Mode::AcceptEdits, Mode::FullAuto] {
        assert_eq!(
            decide_in(mode, &write("/proj/a"), "write_file", &g),
            Decision::Allow
        );
    }
    assert!(matches!(
        decide_in(Mode::ReadOnly, &exec, "run_command", &g),
        Decision::Refuse(_)
    ));
    assert!(asks(&decide_in(Mode::Ask, &exec, "run_command", &g)));
    assert!(asks(&decide_in(
        Mode::AcceptEdits,
        &exec,
        "run_command",
        &g
    )));
    // Full-auto runs a command unasked only where the probed sandbox
    // confines it (issue 42.11). The unit tests run without the agent's
    // launcher, so nothing confines their commands: full-auto asks.
    assert!(!crate::tools::sandbox::level().confines());
    assert!(asks(&decide_in(Mode::FullAuto, &exec, "run_command", &g)));
    assert_eq!(
        decide_in(Mode::FullAuto, &write("/etc/passwd"), "write_file", &g),
        Decision::Ask(Scope::Write(vec!["/etc/passwd".into()]))
    );
    assert!(matches!(
        decide_in(Mode::ReadOnly, &write("/etc/passwd"), "write_file", &g),
        Decision::Refuse(_)
    ));
}

#[test]
fn command_prefix_grants_are_scoped() {
    let mut g = Grants::default();
    g.remember(
        &Scope::Command {
            prefix: "cargo test".into(),
            paths: vec![],
        },
        true,
    );
    assert_eq!(
        decide_in(Mode::Ask, &cmd("cargo test --all"), "run_command", &g),
        Decision::Allow
    );
    assert_eq!(
        decide_in(
            Mode::Ask,
            &cmd("cargo test && rm -rf target"),
            "run_command",
            &g
        ),
        Decision::Ask(Scope::Once)
    );
    assert!(asks(&decide_in(
        Mode::Ask,
        &cmd("cargo build"),
        "run_command",
        &g
    )));
    // The prefix inside the project does not cover it reaching outside.
    assert!(matches!(
        decide_in(Mode::Ask, &cmd("cargo test --manifest-path /etc/x"), "run_command", &g),
        Decision::Ask(Scope::Command { ref paths, .. }) if paths == &[PathBuf::from("/etc/x")]
    ));
    // A script grant (issue 16): never the bare interpreter.
    let mut g = Grants::default();
    g.remember(
        &Scope::Command {
            prefix: "python3 gen.py".into(),
            paths: vec![],
        },
        true,
    );
    assert_eq!(
        decide_in(Mode::Ask, &cmd("python3 gen.py --all"), "run_command", &g),
        Decision::Allow
    );
    for other in ["python3 -c 'print(1)'", "python3 other.py", "python3"] {
        assert!(
            asks(&decide_in(Mode::Ask, &cmd(other), "run_command", &g)),
            "{other}"
        );
    }
}

#[test]
fn edit_grants_are_per_tool_and_rejections_stick() {
    let mut g = Grants::default();
    g.remember(&Scope::Edits("edit_file".into()), false);
    assert!(matches!(
        decide_in(Mode::Ask, &write("/proj/x"), "edit_file", &g),
        Decision::Refuse(_)
    ));
    assert!(asks(&decide_in(
        Mode::Ask,
        &write("/proj/x"),
        "write_file",
        &g
    )));
    // An MCP tool called like a built-in one is a different grant.
    g.remember(&Scope::External("write_file".into()), true);
    assert!(asks(&decide_in(
        Mode::Ask,
        &write("/proj/x"),
        "write_file",
        &g
    )));
}

/// Finding 1a: "always allow" on reading a file outside let a later write go through.
#[test]
fn a_read_grant_never_writes_or_runs() {
    let mut g = Grants::default();
    g.remember(&Scope::Read(vec!["/tmp/out/notes.txt".into()]), true);
    assert_eq!(
        decide_in(Mode::Ask, &read("/tmp/out/notes.txt"), "read_file", &g),
        Decision::Allow
    );
    for mode in [Mode::Ask, Mode::AcceptEdits, Mode::FullAuto] {
        assert_eq!(
            decide_in(mode, &write("/tmp/out/notes.txt"), "write_file", &g),
            Decision::Ask(Scope::Write(vec!["/tmp/out/notes.txt".into()])),
            "{mode:?}"
        );
        assert!(asks(&decide_in(
            mode,
            &cmd("rm /tmp/out/notes.txt"),
            "run_command",
            &g
        )));
        assert!(asks(&decide_in(
            mode,
            &cmd("cat /tmp/out/notes.txt"),
            "run_command",
            &g
        )));
    }
    // A path grant is exact: nothing under it, nothing beside it.
    assert!(asks(&decide_in(
        Mode::Ask,
        &read("/tmp/out/notes.txt/x"),
        "read_file",
        &g
    )));
    assert!(asks(&decide_in(
        Mode::Ask,
        &read("/tmp/out"),
        "read_file",
        &g
    )));
    // And a write grant does not read.
    let mut g = Grants::default();
    g.remember(&Scope::Write(vec!["/tmp/out/log".into()]), true);
    assert_eq!(
        decide_in(Mode::Ask, &write("/tmp/out/log"), "write_file", &g),
        Decision::Allow
    );
    assert!(asks(&decide_in(
        Mode::Ask,
        &read("/tmp/out/log"),
        "read_file",
        &g
    )));
}

/// Finding 1b: "always allow" on listing `../tmp/victim` let `rm -rf ../tmp/victim` run.
#[test]
fn a_listing_grant_never_runs_a_command_on_the_directory() {
    let mut g = Grants::default();
    g.remember(&Scope::Read(vec!["/tmp/victim".into()]), true);
    assert_eq!(
        decide_in(Mode::FullAuto, &read("/tmp/victim"), "list_directory", &g),
        Decision::Allow
    );
    let rm = cmd("rm -rf /tmp/victim");
    assert_eq!(
        decide_in(Mode::FullAuto, &rm, "run_command", &g),
        Decision::Ask(Scope::Command {
            prefix: "rm".into(),
            paths: vec!["/tmp/victim".into()]
        })
    );
    // A command grant on the path covers that prefix there, nothing else.
    g.remember(
        &Scope::Command {
            prefix: "ls".into(),
            paths: vec!["/tmp/victim".into()],
        },
        true,
    );
    assert_eq!(
        decide_in(Mode::Ask, &cmd("ls -la /tmp/victim"), "run_command", &g),
        Decision::Allow
    );
    assert!(asks(&decide_in(Mode::FullAuto, &rm, "run_command", &g)));
    assert!(asks(&decide_in(
        Mode::FullAuto,
        &cmd("ls /tmp/victim/sub"),
        "run_command",
        &g
    )));
    assert!(asks(&decide_in(
        Mode::FullAuto,
        &write("/tmp/victim"),
        "write_file",
        &g
    )));
    // An outside command with an untrusted shape offers no "always" at all.
    assert_eq!(
        decide_in(
            Mode::FullAuto,
            &cmd("ls /tmp/victim; rm -rf /tmp/victim"),
            "run_command",
            &g
        ),
        Decision::Ask(Scope::Once)
    );
    // A command run from a cwd outside asks about that cwd.
    let outside_cwd = Access::Execute {
        command: "make".into(),
        cwd: "/tmp/victim".into(),
    };
    assert!(matches!(
        decide_in(Mode::FullAuto, &outside_cwd, "run_command", &g),
        Decision::Ask(Scope::Command { ref paths, .. }) if paths == &[PathBuf::from("/tmp/victim")]
    ));
}

/// Finding 4: accept-edits let the model plant `core.fsmonitor` in `.git/config`.
#[test]
fn protected_paths_ask_in_every_mode_and_grants_stay_exact() {
    let mut g = Grants::default();
    for mode in [Mode::Ask, Mode::AcceptEdits, Mode::FullAuto] {
        for p in [
            "/proj/.git/config",
            "/proj/.git/hooks/pre-commit",
            "/proj/.envrc",
            "/proj/.vscode/tasks.json",
            "/proj/.acp-coder/commands/x.md",
        ] {
            assert_eq!(
                decide_in(mode, &write(p), "write_file", &g),
                Decision::Ask(Scope::Write(vec![p.into()])),
                "{mode:?} {p}"
            );
        }
    }
    assert!(matches!(
        decide_in(
            Mode::ReadOnly,
            &write("/proj/.git/config"),
            "write_file",
            &g
        ),
        Decision::Refuse(_)
    ));
    // "Always allow edits by edit_file" never covers a protected file.
    g.remember(&Scope::Edits("edit_file".into()), true);
    assert!(asks(&decide_in(
        Mode::Ask,
        &write("/proj/.git/config"),
        "edit_file",
        &g
    )));
    // "Always allow writing .git/config" covers that file, not the hooks.
    g.remember(&Scope::Write(vec!["/proj/.git/config".into()]), true);
    assert_eq!(
        decide_in(Mode::FullAuto, &write("/proj/.git/config"), "edit_file", &g),
        Decision::Allow
    );
    assert!(asks(&decide_in(
        Mode::FullAuto,
        &write("/proj/.git/hooks/post-checkout"),
        "edit_file",
        &g
    )));
    // The config's globs add to the list.
    let roots = roots();
    let protected = Protected::new(&["deploy/*.sh".into()]).unwrap();
    let bounds = Bounds {
        roots: &roots,
        protected: &protected,
        skill_dirs: &[],
    };
    assert!(asks(&decide(
        Mode::FullAuto,
        &write("/proj/deploy/prod.sh"),
        "write_file",
        &bounds,
        &Grants::default()
    )));
}

#[test]
fn option_names_are_a_few_words_and_the_tool_call_says_what_always_covers() {
    let names =
        |scope: &Scope| -> Vec<String> { options(scope).into_iter().map(|o| o.name).collect() };
    assert_eq!(
        names(&Scope::Read(vec!["/x/y".into()])),
        [
            "Allow once",
            "Always allow in this session",
            "Reject",
            "Always reject in this session"
        ]
    );
    assert_eq!(
        options_keeping(&Scope::Edits("write_file".into()), true)
            .into_iter()
            .map(|o| o.name)
            .collect::<Vec<_>>(),
        [
            "Allow once",
            "Always allow in this session",
            "Always allow for this project",
            "Reject",
            "Always reject in this session"
        ]
    );
    for o in options_keeping(&Scope::Edits("write_file".into()), true) {
        assert!(o.name.split(' ').count() <= 5, "{}", o.name);
    }
    assert_eq!(
        covers(&Scope::Read(vec!["/x/y".into()])).unwrap(),
        "Always allow covers reading /x/y."
    );
    assert_eq!(
        covers(&Scope::Write(vec!["/p/.git/config".into()])).unwrap(),
        "Always allow covers writing /p/.git/config."
    );
    assert_eq!(
        covers(&Scope::Command {
            prefix: "cargo test".into(),
            paths: vec![]
        })
        .unwrap(),
        "Always allow covers `cargo test …` inside the project."
    );
    assert_eq!(
        covers(&Scope::Command {
            prefix: "rm".into(),
            paths: vec!["/tmp/victim".into()]
        })
        .unwrap(),
        "Always allow covers `rm …` on /tmp/victim."
    );
    assert_eq!(
        covers(&Scope::Edits("write_file".into())).unwrap(),
        "Always allow covers edits by write_file inside the project (protected files excepted)."
    );
    assert_eq!(names(&Scope::Once), ["Allow once", "Reject"]);
    assert!(covers(&Scope::Once).is_none());
    let hostile = covers(&Scope::Command {
        prefix: "echo\x1b[2K\rhi".into(),
        paths: vec![],
    })
    .unwrap();
    assert!(!hostile.contains(['\x1b', '\r']), "{hostile}");
}

/// Issue 18 item 9: MCP tool annotations pick the rule.
#[test]
fn mcp_annotations_drive_the_decision() {
    let g = Grants::default();
    let ext = |read_only, destructive| Access::External {
        tool: "mcp__s__t".into(),
        read_only,
        destructive,
    };
    for mode in Mode::ALL {
        // readOnlyHint counts as a read: allowed in every mode.
        assert_eq!(
            decide_in(mode, &ext(true, false), "mcp__s__t", &g),
            Decision::Allow
        );
    }
    // destructiveHint asks even where the mode would allow the call.
    assert!(asks(&decide_in(
        Mode::FullAuto,
        &ext(false, true),
        "mcp__s__t",
        &g
    )));
    assert!(asks(&decide_in(
        Mode::AcceptEdits,
        &ext(false, true),
        "mcp__s__t",
        &g
    )));
    assert_eq!(
        decide_in(Mode::FullAuto, &ext(false, false), "mcp__s__t", &g),
        Decision::Allow
    );
    assert!(matches!(
        decide_in(Mode::ReadOnly, &ext(false, false), "mcp__s__t", &g),
        Decision::Refuse(_)
    ));
    // The user's "always" still counts for a destructive tool.
    let mut g = Grants::default();
    g.remember(&Scope::External("mcp__s__t".into()), true);
    assert_eq!(
        decide_in(Mode::FullAuto, &ext(false, true), "mcp__s__t", &g),
        Decision::Allow
    );
}
