//! The reusable prefix of a command line: what "Always allow `…`" records for
//! a command (DESIGN §3 "Modes and permissions"; issue 16).
//!
//! A prefix must name what the user saw run, so that a grant never approves a
//! different program: `cargo test --all` → `cargo test`; `python3 build.py`
//! → `python3 build.py` (never `python3`, which would approve any
//! `python3 -c …`); `npx prettier --check .` → `npx prettier`. A line whose
//! shape is not understood gets no prefix at all, and so no "always": chains,
//! pipes, redirections, substitutions, quoting or expansion inside the prefix
//! words, environment assignments, shell keywords, launchers that run their
//! arguments as code or as another user (`eval`, `sudo`, `xargs`, …), and
//! inline code given to an interpreter (`sh -c`, `python3 -c`, `node -e`,
//! `perl -e`, `python3 -m`, `deno eval`, …).

/// Characters that chain, redirect, substitute or continue a command line.
const OPERATORS: [&str; 12] = [
    ";", "&", "|", "`", "$(", ">", "<", "\n", "\r", "\\", "(", ")",
];

/// Characters that make a prefix word mean something else than its text:
/// POSIX shells' quoting, globs and expansions, and cmd.exe's (`%VAR%`,
/// `!VAR!` delayed expansion, the `^` escape).
const EXPANSIONS: [char; 13] = [
    '$', '\'', '"', '*', '?', '[', '{', '~', '#', '=', '%', '!', '^',
];

/// Shell keywords and launchers whose arguments are code, a different user,
/// or another command line built at run time: never an "always".
const NEVER: &[&str] = &[
    "!",
    "if",
    "then",
    "else",
    "for",
    "while",
    "until",
    "case",
    "select",
    "function",
    "coproc",
    "{",
    "[[",
    "eval",
    "source",
    ".",
    "exec",
    "command",
    "builtin",
    "env",
    "sudo",
    "doas",
    "su",
    "pkexec",
    "runuser",
    "xargs",
    "parallel",
    "find",
    "watch",
    "flock",
    "chroot",
    "unshare",
    "nsenter",
    "setsid",
    "strace",
    "ltrace",
    "gdb",
    "script",
    "busybox",
    "ssh",
    "timeout",
    "stdbuf",
    "ionice",
    "chrt",
    "taskset",
    "firejail",
    "bwrap",
    "systemd-run",
    "trap",
    // Windows: shells and launchers that run their arguments as a command
    // line (`cmd /c`, `start`, `call`, `wsl`), as another user (`runas`),
    // or as script text (`powershell`, `pwsh`: `-Command` is the default
    // for a bare argument).
    "cmd",
    "start",
    "call",
    "wsl",
    "runas",
    "powershell",
    "pwsh",
];

/// Launchers that run the command after them unchanged: the prefix is the
/// launcher plus the prefix of that command (`nohup cargo test` →
/// `nohup cargo test`, `time python3 a.py` → `time python3 a.py`).
const TRANSPARENT: &[&str] = &["nohup", "time", "nice"];

/// Interpreters: the prefix includes the script they run, and any option
/// before it (`-c`, `-e`, `-m`, `--eval`, `-p`, `-f`, …) means no "always".
/// awk and sed take their program as the first argument (and can run
/// commands from it), so they are here too.
const INTERPRETERS: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "ksh",
    "mksh",
    "fish",
    "csh",
    "tcsh",
    "python",
    "ipython",
    "pypy",
    "node",
    "nodejs",
    "tsx",
    "ts-node",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "r",
    "rscript",
    "julia",
    "osascript",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gsed",
];

/// Package runners: the prefix includes the package they run (`npx eslint`).
const RUNNERS: &[&str] = &["npx", "bunx", "pnpx", "uvx"];

/// Subcommands that run another command line (`uv run pytest` →
/// `uv run pytest`; `uv run python -c …` → no prefix).
const RUN_SUBCOMMANDS: [(&str, &str); 14] = [
    ("npm", "exec"),
    ("npm", "x"),
    ("pnpm", "exec"),
    ("pnpm", "dlx"),
    ("yarn", "exec"),
    ("yarn", "dlx"),
    ("uv", "run"),
    ("uv", "tool"),
    ("pipx", "run"),
    ("poetry", "run"),
    ("pdm", "run"),
    ("hatch", "run"),
    ("bundle", "exec"),
    ("cargo", "exec"),
];

/// Programs driven by subcommands whose global options change what runs
/// (`git -c core.pager=… log`, `cargo --config …`, `docker -H …`): an option
/// before the subcommand means no "always", since the prefix would be the
/// bare program and cover every subcommand.
const SUBCOMMAND_TOOLS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "go",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "gh",
    "uv",
    "pip",
    "poetry",
    "rustup",
    "dotnet",
    "mvn",
    "gradle",
    "terraform",
    "systemctl",
    "brew",
    "apt",
    "apt-get",
    "dnf",
    "nix",
];

/// The reusable prefix of `command`, or `None` when it gets no "always".
pub fn command_prefix(command: &str) -> Option<String> {
    if OPERATORS.iter().any(|op| command.contains(op)) {
        return None;
    }
    let words: Vec<&str> = command.split_whitespace().collect();
    prefix_of(&words).map(|w| w.join(" "))
}

/// Whether the command line is covered by a remembered prefix.
pub fn matches_prefix(command: &str, prefix: &str) -> bool {
    command_prefix(command).is_some_and(|p| p == prefix)
}

fn prefix_of<'a>(words: &[&'a str]) -> Option<Vec<&'a str>> {
    let (&first, rest) = words.split_first()?;
    if first.starts_with('-') || first.contains(EXPANSIONS) {
        return None; // `FOO=1 make`, `$CMD`, `~/x`, `'quoted'`, globs.
    }
    let name = program_name(first);
    if NEVER.contains(&name.as_str()) {
        return None;
    }
    if TRANSPARENT.contains(&name.as_str()) {
        let mut inner = prefix_of(rest)?;
        inner.insert(0, first);
        return Some(inner);
    }
    if name == "deno" || name == "bun" {
        return scripted_subcommand(first, rest);
    }
    if INTERPRETERS.contains(&name.as_str()) {
        let script = plain_word(rest.first()?)?;
        return Some(vec![first, script]);
    }
    if RUNNERS.contains(&name.as_str()) {
        let package = plain_word(rest.first()?)?;
        return Some(vec![first, package]);
    }
    let second = rest.first().copied();
    if let Some(sub) = second
        && RUN_SUBCOMMANDS.contains(&(name.as_str(), sub))
    {
        let mut inner = prefix_of(&rest[1..])?;
        inner.splice(0..0, [first, sub]);
        return Some(inner);
    }
    if second.is_some_and(|s| s.starts_with('-')) && SUBCOMMAND_TOOLS.contains(&name.as_str()) {
        return None;
    }
    match second {
        Some(second)
            if !second.starts_with('-') && !second.contains('/') && !second.contains('.') =>
        {
            if second.contains(EXPANSIONS) {
                return None;
            }
            Some(vec![first, second])
        }
        _ => Some(vec![first]),
    }
}

/// `deno run main.ts`, `bun test`, `bun script.ts`; `deno eval …`, `bun -e …`
/// and options before the script get no prefix.
fn scripted_subcommand<'a>(first: &'a str, rest: &[&'a str]) -> Option<Vec<&'a str>> {
    let second = plain_word(rest.first()?)?;
    match second {
        "eval" | "repl" | "x" | "exec" | "e" => None,
        "run" | "test" | "task" | "bench" | "compile" | "check" => {
            let script = rest
                .get(1)
                .map_or(Some(None), |w| plain_word(w).map(Some))?;
            Some([first, second].into_iter().chain(script).collect())
        }
        script => Some(vec![first, script]),
    }
}

/// A word that names a file or a package: no option, no expansion.
fn plain_word<'a>(word: &&'a str) -> Option<&'a str> {
    (!word.starts_with('-') && !word.contains(EXPANSIONS)).then_some(*word)
}

/// Extensions that make a file a program on Windows (`PATHEXT`'s default
/// and PowerShell's scripts): `python.exe` is `python`, `npx.cmd` is `npx`.
/// Dropped on every system: a name is only compared with the lists above.
const PROGRAM_EXTENSIONS: &[&str] = &[".exe", ".com", ".bat", ".cmd", ".ps1"];

/// The program's name without its directory (either slash), program
/// extension and version (`/usr/bin/python3.12` → `python`, `perl5.36` →
/// `perl`, `Rscript` → `rscript`, `C:\Python312\python.EXE` → `python`).
fn program_name(word: &str) -> String {
    let mut base = word
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(word)
        .to_ascii_lowercase();
    // `python.exe.`, `cmd.exe ` name the same file to Windows (`.` stays).
    let trim_dots = |b: &mut String| {
        let len = b.trim_end_matches(['.', ' ']).len();
        if len > 0 {
            b.truncate(len);
        }
    };
    trim_dots(&mut base);
    while let Some(ext) = PROGRAM_EXTENSIONS
        .iter()
        .find(|e| base.len() > e.len() && base.ends_with(*e))
    {
        base.truncate(base.len() - ext.len());
        trim_dots(&mut base);
    }
    let trimmed = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if trimmed.is_empty() {
        base
    } else {
        trimmed.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(c: &str) -> Option<String> {
        command_prefix(c)
    }

    #[test]
    fn ordinary_commands_keep_their_subcommand() {
        assert_eq!(p("cargo test --all").as_deref(), Some("cargo test"));
        assert_eq!(p("ls -la").as_deref(), Some("ls"));
        assert_eq!(p("cat README.md").as_deref(), Some("cat"));
        assert_eq!(p("./run.sh fast").as_deref(), Some("./run.sh fast"));
        assert_eq!(p("git status -s").as_deref(), Some("git status"));
        assert!(matches_prefix("git status -s", "git status"));
        assert!(!matches_prefix("git push", "git status"));
    }

    #[test]
    fn interpreters_include_the_script() {
        assert_eq!(p("python3 script.py").as_deref(), Some("python3 script.py"));
        assert_eq!(
            p("python3 script.py --fast x").as_deref(),
            Some("python3 script.py")
        );
        assert_eq!(
            p("/usr/bin/python3.12 tools/gen.py").as_deref(),
            Some("/usr/bin/python3.12 tools/gen.py")
        );
        assert_eq!(p("bash build.sh").as_deref(), Some("bash build.sh"));
        assert_eq!(p("node server.js").as_deref(), Some("node server.js"));
        assert_eq!(p("php artisan migrate").as_deref(), Some("php artisan"));
        assert_eq!(p("deno run main.ts").as_deref(), Some("deno run main.ts"));
        assert_eq!(p("bun test").as_deref(), Some("bun test"));
        assert_eq!(p("npx prettier --check .").as_deref(), Some("npx prettier"));
        assert_eq!(p("uv run pytest -x").as_deref(), Some("uv run pytest"));
        assert_eq!(
            p("nohup python3 a.py").as_deref(),
            Some("nohup python3 a.py")
        );
        // A script grant does not approve another script or inline code.
        assert!(!matches_prefix("python3 evil.py", "python3 script.py"));
        assert!(!matches_prefix(
            "python3 -c 'import os'",
            "python3 script.py"
        ));
        assert!(!matches_prefix("python3", "python3 script.py"));
    }

    #[test]
    fn hostile_lines_get_no_prefix() {
        for line in [
            // inline code
            "python3 -c 'import os; os.system(\"rm -rf ~\")'",
            "python3 -m http.server",
            "python3 -u script.py",
            "python3",
            "sh -c 'rm -rf ~'",
            "bash -c rm",
            "bash --norc script.sh",
            "zsh -ic x",
            "node -e require('fs')",
            "node --eval x",
            "perl -e 'unlink glob q(*)'",
            "ruby -e 'File.delete(*Dir[%q(*)])'",
            "php -r 'system(1);'",
            "deno eval 'Deno.remove(x)'",
            "deno run -A main.ts",
            "bun -e x",
            "bun x cowsay",
            "npx -y pkg",
            "npx -c 'rm -rf /'",
            "uv run python -c x",
            "npm exec -- rm -rf x",
            "uvx --from x y",
            // launchers that run their arguments, or as another user
            "env rm -rf x",
            "env -i sh",
            "sudo rm -rf /",
            "xargs rm",
            "eval rm -rf x",
            "exec rm -rf x",
            "command rm -rf x",
            "nohup sh -c x",
            "time bash -c x",
            "timeout 5 rm -rf x",
            "nice -n 5 rm -rf x",
            "awk '{system(x)}' f",
            "awk -f prog.awk",
            "sed -i s/a/b/ f",
            "R -e x",
            "git -c core.fsmonitor=x status",
            "git --exec-path=/tmp status",
            "cargo --config x build",
            "docker -H tcp://x ps",
            "find . -delete",
            "watch rm x",
            ". ./env.sh",
            "source env.sh",
            // shell syntax and expansion
            "echo hi; rm x",
            "cat a > b",
            "cat < /etc/passwd",
            "a && b",
            "a || b",
            "a | b",
            "a & b",
            "echo $(rm x)",
            "echo `rm x`",
            "(rm x)",
            "rm\\\n -rf x",
            "FOO=1 make",
            "$CMD x",
            "${CMD} x",
            "~/bin/tool x",
            "'rm' -rf x",
            "\"rm\" -rf x",
            "r* -rf x",
            "cargo $SUB",
            "git 'push' x",
            "! rm x",
            "if true then rm x fi",
            "",
            "   ",
        ] {
            assert_eq!(p(line), None, "{line:?}");
        }
    }

    #[test]
    fn program_names_drop_paths_and_versions() {
        assert_eq!(program_name("/usr/bin/python3.12"), "python");
        assert_eq!(program_name("perl5.36"), "perl");
        assert_eq!(program_name("Rscript"), "rscript");
        assert_eq!(program_name("7z"), "7z");
        assert_eq!(program_name("x11"), "x");
    }

    /// Issue 42.12: on Windows `python.exe`, `PowerShell.EXE` and
    /// `C:\Python312\python.exe` are the interpreters themselves; "Always
    /// allow" must not become a grant of the bare program.
    #[test]
    fn windows_program_extensions_are_dropped() {
        assert_eq!(program_name("python.exe"), "python");
        assert_eq!(program_name("PYTHON3.12.EXE"), "python");
        assert_eq!(program_name("C:\\Python312\\python.exe"), "python");
        assert_eq!(program_name("npx.cmd"), "npx");
        assert_eq!(program_name("Sudo.Bat"), "sudo");
        assert_eq!(program_name("cmd.exe."), "cmd");
        assert_eq!(program_name("bash.exe"), "bash");
        // An interpreter named with its extension still needs its script.
        assert_eq!(
            p("python.exe build.py --fast").as_deref(),
            Some("python.exe build.py")
        );
        assert!(!matches_prefix("python.exe -c x", "python.exe"));
        assert!(!matches_prefix("python.exe evil.py", "python.exe build.py"));
        assert_eq!(p("python.exe"), None);
        assert_eq!(p("python.EXE -c print(1)"), None);
        assert_eq!(p("node.exe -e x"), None);
        assert_eq!(
            p("npx.cmd prettier --check .").as_deref(),
            Some("npx.cmd prettier")
        );
    }

    /// Issue 42.12: Windows' shells and launchers never get an "always",
    /// and cmd.exe's expansions are expansions.
    #[test]
    fn windows_launchers_and_expansions_get_no_prefix() {
        for line in [
            "cmd /c del x",
            "cmd.exe /d /s /c del x",
            "CMD /K x",
            "start evil.exe",
            "start.exe x",
            "call build.bat",
            "wsl rm -rf x",
            "wsl.exe -e sh",
            "runas /user:Administrator x",
            "powershell Remove-Item x",
            "powershell.exe -Command x",
            "PowerShell.EXE script.ps1",
            "pwsh -c x",
            "pwsh.exe x.ps1",
            "%COMSPEC% /c x",
            "git %CMD%",
            "cargo !SUB!",
            "del^ x",
            "%USERPROFILE%",
        ] {
            assert_eq!(p(line), None, "{line:?}");
        }
    }
}
