//! Windows rules as pure functions (compiled and tested on every system):
//! finding a program through `PATH` and `PATHEXT` as `cmd.exe` does,
//! quoting arguments for `CommandLineToArgvW` and for `cmd.exe /S /C`, and
//! comparing paths with drive letters, either slash, `\\?\` prefixes and
//! any case.

use std::path::{Path, PathBuf};

/// The shells a command line can run in on Windows, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShellKind {
    /// Git for Windows' `bash.exe` (what most models write for; what
    /// Claude Code uses on Windows).
    GitBash,
    /// PowerShell 7 (`pwsh.exe`) or Windows PowerShell (`powershell.exe`).
    PowerShell,
    /// `cmd.exe`, always there.
    Cmd,
}

/// The shell chosen, and the program that runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shell {
    pub kind: ShellKind,
    pub program: PathBuf,
}

/// What the machine has, for [`choose_shell`].
pub struct Probe<'a> {
    /// A variable of the agent's environment (`ProgramFiles`, `ComSpec`…).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// A program found on `PATH` through `PATHEXT` (`git`, `pwsh`).
    pub find: &'a dyn Fn(&str) -> Option<PathBuf>,
    /// Whether a file exists.
    pub exists: &'a dyn Fn(&Path) -> bool,
}

/// The shell commands run in: Git for Windows' `bash.exe` when it is
/// installed (found beside `git.exe` on `PATH`, or in the usual install
/// folders; never `System32\bash.exe`, which is WSL's launcher), then
/// PowerShell (`pwsh.exe` on `PATH`, then Windows PowerShell), then
/// `cmd.exe` (`%ComSpec%`).
///
/// `ACP_CODER_SHELL` overrides the choice: a program on `PATH` or a path
/// whose name says which shell it is (`bash`, `pwsh`, `powershell`, `cmd`).
pub fn choose_shell(probe: &Probe<'_>) -> Shell {
    if let Some(chosen) = (probe.env)("ACP_CODER_SHELL").and_then(|s| chosen_shell(probe, &s)) {
        return chosen;
    }
    let system_root = (probe.env)("SystemRoot").map(|r| normalize(&r));
    let not_system = |p: &Path| {
        system_root
            .as_deref()
            .is_none_or(|r| !starts_with(&p.to_string_lossy(), r))
    };
    // Windows spelling on every host (the rules are tested on Linux).
    let join = |dir: &str, tail: &str| PathBuf::from(format!("{}\\{tail}", normalize(dir)));
    let mut bash: Vec<PathBuf> = Vec::new();
    if let Some(git) = (probe.find)("git") {
        // `Git\cmd\git.exe`, `Git\bin\git.exe`, `Git\mingw64\bin\git.exe`.
        let mut dir = normalize(&git.to_string_lossy());
        for _ in 0..3 {
            let Some((parent, _)) = dir.rsplit_once('\\') else {
                break;
            };
            dir = parent.to_owned();
            bash.push(join(&dir, "bin\\bash.exe"));
        }
    }
    for (var, tail) in [
        ("ProgramFiles", "Git\\bin\\bash.exe"),
        ("ProgramW6432", "Git\\bin\\bash.exe"),
        ("ProgramFiles(x86)", "Git\\bin\\bash.exe"),
        ("LOCALAPPDATA", "Programs\\Git\\bin\\bash.exe"),
    ] {
        if let Some(base) = (probe.env)(var) {
            bash.push(join(&base, tail));
        }
    }
    if let Some(program) = bash
        .into_iter()
        .find(|p| not_system(p) && (probe.exists)(p))
    {
        return Shell {
            kind: ShellKind::GitBash,
            program,
        };
    }
    let windows_powershell = system_root
        .as_ref()
        .map(|r| join(r, "System32\\WindowsPowerShell\\v1.0\\powershell.exe"));
    let powershell = (probe.find)("pwsh")
        .or_else(|| windows_powershell.filter(|p| (probe.exists)(p)))
        .or_else(|| (probe.find)("powershell"));
    if let Some(program) = powershell {
        return Shell {
            kind: ShellKind::PowerShell,
            program,
        };
    }
    let cmd = (probe.env)("ComSpec")
        .map(PathBuf::from)
        .filter(|p| (probe.exists)(p))
        .unwrap_or_else(|| PathBuf::from("cmd.exe"));
    Shell {
        kind: ShellKind::Cmd,
        program: cmd,
    }
}

/// The shell `ACP_CODER_SHELL` names, when its name says which it is and
/// it is there (a path, or a program on `PATH`).
fn chosen_shell(probe: &Probe<'_>, value: &str) -> Option<Shell> {
    let value = value.trim();
    let name = normalize(value);
    let stem = name
        .rsplit('\\')
        .next()
        .unwrap_or(&name)
        .to_ascii_lowercase();
    let stem = stem.strip_suffix(".exe").unwrap_or(&stem);
    let kind = match stem {
        "bash" => ShellKind::GitBash,
        "pwsh" | "powershell" => ShellKind::PowerShell,
        "cmd" => ShellKind::Cmd,
        _ => return None,
    };
    let program = if name.contains('\\') {
        Some(PathBuf::from(value)).filter(|p| (probe.exists)(p))
    } else {
        (probe.find)(stem)
    }?;
    Some(Shell { kind, program })
}

/// The shell's arguments before the command text: `bash -c`; PowerShell
/// without profile or prompts, the text encoded (no quoting to get wrong);
/// `cmd.exe /D /S /C` (no AutoRun; `/S`: the quotes around the text go,
/// the text's own stay).
pub fn shell_args(kind: ShellKind) -> &'static [&'static str] {
    match kind {
        ShellKind::GitBash => &["-c"],
        ShellKind::PowerShell => &["-NoProfile", "-NonInteractive", "-EncodedCommand"],
        ShellKind::Cmd => &["/D", "/S", "/C"],
    }
}

/// Why the command text cannot run whole in this shell, or `Ok`. cmd.exe
/// runs only the first line of `/C`'s text (the rest is lost, or printed
/// by an `echo`, and the exit code is the first line's): a text of
/// several lines is refused, with what to write instead.
pub fn check_text(kind: ShellKind, text: &str) -> Result<(), String> {
    if kind != ShellKind::Cmd {
        return Ok(());
    }
    let lines = text
        .split(['\n', '\r'])
        .filter(|l| !l.trim().is_empty())
        .count();
    if lines > 1 {
        return Err(
            "this command has several lines, and cmd.exe (the shell here) runs only the first line of a command: join the lines with ` && ` (stop at the first failure) or ` & ` (run each), or write them to a .cmd file and run that file"
                .into(),
        );
    }
    Ok(())
}

/// The command text as the shell's last argument: PowerShell's
/// `-EncodedCommand` takes base64 of UTF-16LE, with output switched to
/// UTF-8 first (else it comes in the console's code page); the others get
/// the text as it is (cmd.exe's quoting is [`cmd_argument`]'s).
pub fn shell_text(kind: ShellKind, text: &str) -> String {
    use base64::Engine as _;
    match kind {
        ShellKind::PowerShell => {
            let script = format!(
                "try {{ [Console]::OutputEncoding = [System.Text.UTF8Encoding]::new($false) }} catch {{}}\n$OutputEncoding = [System.Text.UTF8Encoding]::new($false)\n{text}"
            );
            let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
            base64::engine::general_purpose::STANDARD.encode(utf16)
        }
        ShellKind::GitBash | ShellKind::Cmd => text.to_owned(),
    }
}

/// For the `run_command` tool's description: which shell, and its syntax.
pub fn shell_description(kind: ShellKind) -> &'static str {
    match kind {
        ShellKind::GitBash => {
            "The shell is Git for Windows' bash (bash -c): POSIX syntax, forward slashes (C:\\x is /c/x), Windows programs (.exe, .cmd) run as usual"
        }
        ShellKind::PowerShell => {
            "The shell is PowerShell on Windows (no profile): PowerShell syntax (`;` between commands, `$env:NAME`, `Get-ChildItem`, `2>$null`), not POSIX sh; multi-line scripts are fine"
        }
        ShellKind::Cmd => {
            "The shell is cmd.exe on Windows (cmd /D /S /C): cmd syntax (`&&`, `%NAME%`, `2>nul`, `dir`, `type`, `del`), not POSIX sh (no `2>/dev/null`, no single quotes, no heredocs); one line only: join steps with ` && `"
        }
    }
}

/// What `terminal/create` gets on Windows: `(command, args, env)`.
pub type TerminalRequest = (String, Vec<String>, Vec<(String, String)>);

/// The variable that carries the command line to cmd.exe in an editor's
/// terminal ([`terminal_request`]).
pub const LINE_VAR: &str = "ACP_CODER_LINE";
/// The variable that carries the command text to bash there.
pub const COMMAND_VAR: &str = "ACP_CODER_COMMAND";

/// The `terminal/create` request that runs `text` in `shell`, built so
/// that it means the same to both kinds of editor (issue 43.4): Zed joins
/// `command` and `args` with spaces, unquoted, and runs the line in its
/// own shell (PowerShell, Git bash or cmd.exe: `task::ShellBuilder`);
/// JetBrains starts `command` with `args` as an argument vector, quoted
/// by the usual rules. So no part has a space, a quote or a character any
/// of those shells reads: the text travels in `env` (cmd.exe expands
/// `%ACP_CODER_LINE%` before it reads operators, so `&&` and `|` work),
/// or base64-encoded (PowerShell's `-EncodedCommand`).
pub fn terminal_request(shell: &Shell, text: &str) -> TerminalRequest {
    let via_cmd = |line: String, mut env: Vec<(String, String)>| {
        env.insert(0, (LINE_VAR.to_owned(), line));
        (
            "cmd.exe".to_owned(),
            vec!["/D".to_owned(), "/C".to_owned(), format!("%{LINE_VAR}%")],
            env,
        )
    };
    match shell.kind {
        ShellKind::Cmd => via_cmd(text.to_owned(), Vec::new()),
        ShellKind::GitBash => via_cmd(
            format!(
                "{} -c \"eval \\\"${COMMAND_VAR}\\\"\"",
                quote_arg(&shell.program.to_string_lossy())
            ),
            vec![(COMMAND_VAR.to_owned(), text.to_owned())],
        ),
        ShellKind::PowerShell => {
            // The name only (on `PATH` in every Windows): a path may hold
            // a space (`C:\Program Files\PowerShell\7\pwsh.exe`).
            let path = shell.program.to_string_lossy();
            let name = path.rsplit(['\\', '/']).next().unwrap_or_default();
            let program = if name.is_empty() {
                "powershell.exe"
            } else {
                name
            }
            .to_owned();
            let mut args: Vec<String> = shell_args(ShellKind::PowerShell)
                .iter()
                .map(|a| (*a).to_owned())
                .collect();
            args.push(shell_text(ShellKind::PowerShell, text));
            (program, args, Vec::new())
        }
    }
}

/// `PATHEXT` when the variable is unset (cmd.exe's own default).
pub const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The file `program` names, found as `cmd.exe` would: a name with a
/// directory part is taken relative to nothing else; a bare name is looked
/// up in each `PATH` entry (`;`-separated, quotes allowed). A name without
/// one of the `PATHEXT` extensions gets each in turn (`npx` → `npx.cmd`);
/// one with such an extension is tried as given first.
pub fn resolve(
    program: &str,
    path: &std::ffi::OsStr,
    pathext: Option<&str>,
    is_file: impl Fn(&std::path::Path) -> bool,
) -> Option<std::path::PathBuf> {
    let path = path.to_string_lossy();
    candidates(program, &path, pathext.unwrap_or(DEFAULT_PATHEXT))
        .into_iter()
        .map(std::path::PathBuf::from)
        .find(|p| is_file(p))
}

/// Every file name [`resolve`] tries, in order.
pub fn candidates(program: &str, path: &str, pathext: &str) -> Vec<String> {
    let exts: Vec<&str> = pathext
        .split(';')
        .map(str::trim)
        .filter(|e| e.starts_with('.') && e.len() > 1)
        .collect();
    let has_ext = exts.iter().any(|e| ends_with_ci(program, e));
    let names = |base: &str| {
        let mut v = Vec::new();
        if has_ext {
            v.push(base.to_owned());
        }
        v.extend(
            exts.iter()
                .map(|e| format!("{base}{}", e.to_ascii_lowercase())),
        );
        v
    };
    if program.contains(['\\', '/', ':']) {
        return names(program);
    }
    path.split(';')
        .map(|d| d.trim().trim_matches('"'))
        .filter(|d| !d.is_empty())
        .flat_map(|d| {
            let dir = d.trim_end_matches(['\\', '/']);
            names(&format!("{dir}\\{program}"))
        })
        .collect()
}

fn ends_with_ci(s: &str, suffix: &str) -> bool {
    s.len() >= suffix.len()
        && s.is_char_boundary(s.len() - suffix.len())
        && s[s.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// One argument as `CommandLineToArgvW` (and every MSVC program) reads
/// it back: quoted when empty or holding a space, tab or quote; a quote is
/// `\"`, and the backslashes before a quote (or the closing one) doubled.
pub fn quote_arg(arg: &str) -> String {
    if !arg.is_empty() && !arg.contains([' ', '\t', '\n', '"']) {
        return arg.to_owned();
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    let mut backslashes = 0usize;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
                continue;
            }
            _ => {}
        }
        if c != '\\' {
            out.extend(std::iter::repeat_n('\\', backslashes));
            backslashes = 0;
            out.push(c);
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes * 2));
    out.push('"');
    out
}

/// The raw argument `cmd.exe /D /S /C` gets for `command`: with `/S`,
/// cmd.exe removes exactly the first and the last quote and runs the rest
/// as typed, so the command's own quotes survive.
pub fn cmd_argument(command: &str) -> String {
    format!("\"{command}\"")
}

/// A path in one spelling: `\` separators, no `\\?\` (or `\\?\UNC\`)
/// prefix, an upper-case drive letter, no repeated or trailing separator
/// (but `C:\`), `.` components dropped, each name as [`file_name`] reads
/// it (no stream suffix, no trailing dots or spaces). `..` is kept: it is
/// resolved by the file system, not by spelling. 8.3 short names
/// (`PROGRA~1`) need the disk: the Windows side expands them first.
pub fn normalize(path: &str) -> String {
    let p = path.replace('/', "\\");
    let (prefix, rest) = if let Some(r) = p.strip_prefix("\\\\?\\UNC\\") {
        ("\\\\".to_owned(), r.to_owned())
    } else if let Some(r) = p.strip_prefix("\\\\?\\") {
        (String::new(), r.to_owned())
    } else if let Some(r) = p.strip_prefix("\\\\") {
        ("\\\\".to_owned(), r.to_owned())
    } else {
        (String::new(), p)
    };
    let mut parts: Vec<String> = rest
        .split('\\')
        .filter(|c| !c.is_empty() && *c != ".")
        .map(str::to_owned)
        .collect();
    let drive = prefix.is_empty()
        && parts.first().is_some_and(|d| {
            d.len() == 2 && d.ends_with(':') && d.as_bytes()[0].is_ascii_alphabetic()
        });
    let first_name = usize::from(drive || !prefix.is_empty());
    for part in parts.iter_mut().skip(first_name) {
        let name = file_name(part);
        if name.len() != part.len() {
            *part = name.to_owned();
        }
    }
    if drive {
        parts[0] = parts[0].to_ascii_uppercase();
        if parts.len() == 1 {
            return format!("{}\\", parts[0]);
        }
    }
    let absolute = !drive && prefix.is_empty() && rest.starts_with('\\');
    let joined = parts.join("\\");
    if absolute {
        format!("\\{joined}")
    } else {
        format!("{prefix}{joined}")
    }
}

/// The file a name opens, as Windows reads the name: a stream suffix
/// (`.envrc::$DATA`, `a:stream`) dropped, for the default stream is the
/// file and any other lives in it; then trailing dots and spaces
/// (`tasks.json.`, `x `), which Win32 path parsing strips. `.` and `..`
/// stay, and so does a name that would become empty.
pub fn file_name(name: &str) -> &str {
    if name == "." || name == ".." {
        return name;
    }
    let base = name.split(':').next().unwrap_or(name);
    match without_trailing(base) {
        "" => name,
        trimmed => trimmed,
    }
}

/// The name a file or folder gets when it is created as `name`: without
/// trailing dots and spaces (`foo.` and `foo ` name `foo`), which Win32
/// path parsing strips; `.`, `..` and a name that would become empty stay.
pub fn created_name(name: &str) -> &str {
    if name == "." || name == ".." {
        return name;
    }
    match without_trailing(name) {
        "" => name,
        trimmed => trimmed,
    }
}

fn without_trailing(name: &str) -> &str {
    name.trim_end_matches(['.', ' '])
}

/// Whether `path` is `root` or beneath it, comparing names as Windows
/// does (case-insensitively) after [`normalize`].
pub fn starts_with(path: &str, root: &str) -> bool {
    let (p, r) = (fold(&normalize(path)), fold(&normalize(root)));
    let r = r.trim_end_matches('\\');
    p == r || p.strip_prefix(r).is_some_and(|rest| rest.starts_with('\\'))
}

/// The part of `path` beneath `root` in [`normalize`]'s spelling (`""`
/// for the root itself), compared as [`starts_with`] does; `None` when
/// `path` is not beneath `root`.
pub fn relative(path: &str, root: &str) -> Option<String> {
    let (p, r) = (normalize(path), normalize(root));
    let r = r.trim_end_matches('\\');
    // Case folding can change a name's length (rarely): compare by names.
    let pn: Vec<&str> = p.split('\\').collect();
    let rn: Vec<&str> = r.split('\\').collect();
    if pn.len() < rn.len() || !pn.iter().zip(&rn).all(|(a, b)| fold(a) == fold(b)) {
        return None;
    }
    Some(pn[rn.len()..].join("\\"))
}

/// Whether two paths name the same file by spelling (case-insensitive).
pub fn same(a: &str, b: &str) -> bool {
    fold(&normalize(a)) == fold(&normalize(b))
}

fn fold(s: &str) -> String {
    s.chars().flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn machine(files: &[&str], on_path: &[(&str, &str)]) -> Shell {
        let files: Vec<String> = files.iter().map(|f| normalize(f)).collect();
        let on_path: Vec<(String, PathBuf)> = on_path
            .iter()
            .map(|(n, p)| ((*n).to_owned(), PathBuf::from(p)))
            .collect();
        let env = |v: &str| match v {
            "ProgramFiles" | "ProgramW6432" => Some("C:\\Program Files".to_owned()),
            "SystemRoot" => Some("C:\\Windows".to_owned()),
            "ComSpec" => Some("C:\\Windows\\system32\\cmd.exe".to_owned()),
            _ => None,
        };
        let find = |n: &str| on_path.iter().find(|(k, _)| k == n).map(|(_, p)| p.clone());
        let exists = |p: &Path| files.iter().any(|f| same(f, &p.to_string_lossy()));
        choose_shell(&Probe {
            env: &env,
            find: &find,
            exists: &exists,
        })
    }

    /// Issue 43.2: Git for Windows' bash first (never WSL's
    /// `System32\bash.exe`), then PowerShell, then cmd.exe.
    #[test]
    fn the_shell_is_git_bash_then_powershell_then_cmd() {
        let git_bash = "C:\\Program Files\\Git\\bin\\bash.exe";
        let ps = "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe";
        let cmd = "C:\\Windows\\system32\\cmd.exe";
        let s = machine(&[git_bash, ps, cmd], &[]);
        assert_eq!((s.kind, s.program), (ShellKind::GitBash, git_bash.into()));
        // Found beside git.exe on PATH, wherever Git is installed.
        let s = machine(
            &["D:\\Tools\\Git\\bin\\bash.exe", ps],
            &[("git", "D:\\Tools\\Git\\cmd\\git.exe")],
        );
        assert_eq!(s.program, PathBuf::from("D:\\Tools\\Git\\bin\\bash.exe"));
        // WSL's bash is not Git's.
        let s = machine(
            &["C:\\Windows\\bin\\bash.exe", ps],
            &[("git", "C:\\Windows\\cmd\\git.exe")],
        );
        assert_eq!(s.kind, ShellKind::PowerShell);
        let s = machine(&[ps, cmd], &[]);
        assert_eq!((s.kind, s.program), (ShellKind::PowerShell, ps.into()));
        let s = machine(
            &[ps],
            &[("pwsh", "C:\\Program Files\\PowerShell\\7\\pwsh.exe")],
        );
        assert_eq!(
            s.program,
            PathBuf::from("C:\\Program Files\\PowerShell\\7\\pwsh.exe")
        );
        let s = machine(&[cmd], &[]);
        assert_eq!((s.kind, s.program), (ShellKind::Cmd, cmd.into()));
        assert_eq!(shell_args(ShellKind::Cmd), ["/D", "/S", "/C"]);
        assert_eq!(
            shell_args(ShellKind::PowerShell),
            ["-NoProfile", "-NonInteractive", "-EncodedCommand"]
        );
    }

    /// `ACP_CODER_SHELL` picks the shell when its name says which one it is
    /// and it is there; otherwise the usual order holds.
    #[test]
    fn acp_coder_shell_overrides_the_choice() {
        let ps = "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe";
        let cmd = "C:\\Windows\\system32\\cmd.exe";
        let pick = |value: &str| {
            let files = [normalize(ps), normalize(cmd)];
            let env = |v: &str| match v {
                "ACP_CODER_SHELL" => Some(value.to_owned()),
                "SystemRoot" => Some("C:\\Windows".to_owned()),
                "ComSpec" => Some(cmd.to_owned()),
                _ => None,
            };
            let find = |n: &str| (n == "cmd").then(|| PathBuf::from(cmd));
            let exists = |p: &Path| files.iter().any(|f| same(f, &p.to_string_lossy()));
            choose_shell(&Probe {
                env: &env,
                find: &find,
                exists: &exists,
            })
        };
        assert_eq!(pick("cmd").kind, ShellKind::Cmd);
        assert_eq!(pick("CMD.EXE").program, PathBuf::from(cmd));
        assert_eq!(pick(cmd).kind, ShellKind::Cmd);
        // Not there, or a name that says no shell: the usual order.
        assert_eq!(pick("D:\\nowhere\\cmd.exe").kind, ShellKind::PowerShell);
        assert_eq!(pick("fish").kind, ShellKind::PowerShell);
    }

    /// Issue 43.2: cmd.exe runs only the first line of `/C`'s text; such
    /// a command is refused whole, never run in part.
    #[test]
    fn cmd_refuses_several_lines_others_take_them() {
        let two = "echo line-one\nset /a 40+2";
        let err = check_text(ShellKind::Cmd, two).unwrap_err();
        assert!(
            err.contains("only the first line") && err.contains("&&"),
            "{err}"
        );
        assert!(check_text(ShellKind::Cmd, "echo a\r\n").is_ok());
        assert!(check_text(ShellKind::Cmd, "echo a && echo b").is_ok());
        assert!(check_text(ShellKind::Cmd, "a\r\nb").is_err());
        assert!(check_text(ShellKind::PowerShell, two).is_ok());
        assert!(check_text(ShellKind::GitBash, two).is_ok());
    }

    /// Issue 43.4: the exact `terminal/create` request per shell. Nothing
    /// in `command` or `args` needs quoting (Zed joins them with spaces and
    /// runs the line in its own shell; JetBrains passes them as argv), and
    /// cmd.exe never gets `/S /C <text>` quoted twice.
    #[test]
    fn terminal_requests_survive_joining_and_argv() {
        let text = "echo \"a b\" && dir /b | findstr x";
        let cmd = Shell {
            kind: ShellKind::Cmd,
            program: "C:\\Windows\\system32\\cmd.exe".into(),
        };
        assert_eq!(
            terminal_request(&cmd, text),
            (
                "cmd.exe".to_owned(),
                vec![
                    "/D".to_owned(),
                    "/C".to_owned(),
                    "%ACP_CODER_LINE%".to_owned()
                ],
                vec![("ACP_CODER_LINE".to_owned(), text.to_owned())]
            )
        );
        let bash = Shell {
            kind: ShellKind::GitBash,
            program: "C:\\Program Files\\Git\\bin\\bash.exe".into(),
        };
        let (command, args, env) = terminal_request(&bash, text);
        assert_eq!(command, "cmd.exe");
        assert_eq!(args, ["/D", "/C", "%ACP_CODER_LINE%"]);
        assert_eq!(
            env,
            [
                (
                    "ACP_CODER_LINE".to_owned(),
                    "\"C:\\Program Files\\Git\\bin\\bash.exe\" -c \"eval \\\"$ACP_CODER_COMMAND\\\"\""
                        .to_owned()
                ),
                ("ACP_CODER_COMMAND".to_owned(), text.to_owned()),
            ]
        );
        let ps = Shell {
            kind: ShellKind::PowerShell,
            program: "C:\\Windows\\System32\\WindowsPowerShell\\v1.0\\powershell.exe".into(),
        };
        let (command, args, env) = terminal_request(&ps, text);
        assert_eq!(command, "powershell.exe");
        assert_eq!(
            args[..3],
            ["-NoProfile", "-NonInteractive", "-EncodedCommand"]
        );
        assert_eq!(args[3], shell_text(ShellKind::PowerShell, text));
        assert!(env.is_empty());
        // No part a shell or an argv quoter would touch.
        for shell in [&cmd, &bash, &ps] {
            let (command, args, _) = terminal_request(shell, text);
            for part in std::iter::once(&command).chain(&args) {
                assert!(
                    !part.contains([' ', '"', '\'', '&', '|', '<', '>', '^', '$', '`', ';']),
                    "{part}"
                );
            }
        }
    }

    /// PowerShell gets the text as `-EncodedCommand`: base64 of UTF-16LE,
    /// quotes and newlines untouched, output in UTF-8.
    #[test]
    fn powershell_text_is_encoded() {
        use base64::Engine as _;
        let text = "Write-Output \"a 'b'\"\nexit 3";
        let enc = shell_text(ShellKind::PowerShell, text);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(enc)
            .unwrap();
        let units: Vec<u16> = bytes
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        let script = String::from_utf16(&units).unwrap();
        assert!(script.ends_with(&format!("\n{text}")), "{script}");
        assert!(script.contains("UTF8Encoding"));
        assert_eq!(shell_text(ShellKind::GitBash, text), text);
        for kind in [ShellKind::GitBash, ShellKind::PowerShell, ShellKind::Cmd] {
            assert!(!shell_description(kind).contains("is sh -c"));
        }
    }

    #[test]
    fn pathext_finds_scripts_named_without_extension() {
        let files = ["C:\\Program Files\\nodejs\\npx.cmd", "C:\\tools\\uvx.exe"];
        let found = |p: &std::path::Path| files.iter().any(|f| p.as_os_str() == *f);
        let path = OsStr::new("C:\\Windows;\"C:\\Program Files\\nodejs\\\";C:\\tools\\");
        assert_eq!(
            resolve("npx", path, Some(".COM;.EXE;.BAT;.CMD"), found).unwrap(),
            std::path::PathBuf::from(files[0])
        );
        assert_eq!(
            resolve("uvx", path, None, found).unwrap(),
            std::path::PathBuf::from(files[1])
        );
        assert_eq!(resolve("missing", path, None, found), None);
    }

    #[test]
    fn pathext_order_and_given_extensions() {
        assert_eq!(
            candidates("npx", "C:\\a", ".EXE;.CMD"),
            ["C:\\a\\npx.exe", "C:\\a\\npx.cmd"]
        );
        // An extension PATHEXT knows is tried as given first, any case.
        assert_eq!(
            candidates("npx.CMD", "C:\\a", ".CMD"),
            ["C:\\a\\npx.CMD", "C:\\a\\npx.CMD.cmd"]
        );
        // A path is not looked up in PATH.
        assert_eq!(
            candidates("..\\bin\\tool", "C:\\a", ".EXE"),
            ["..\\bin\\tool.exe"]
        );
        // Empty and odd entries are skipped.
        assert_eq!(candidates("x", ";;C:\\a;", "EXE;.;.BAT"), ["C:\\a\\x.bat"]);
    }

    #[test]
    fn arguments_round_trip_through_commandlinetoargvw_rules() {
        assert_eq!(quote_arg("plain"), "plain");
        assert_eq!(quote_arg(""), "\"\"");
        assert_eq!(quote_arg("two words"), "\"two words\"");
        assert_eq!(quote_arg("say \"hi\""), "\"say \\\"hi\\\"\"");
        assert_eq!(
            quote_arg("C:\\dir with space\\"),
            "\"C:\\dir with space\\\\\""
        );
        assert_eq!(quote_arg("a\\\\\"b"), "\"a\\\\\\\\\\\"b\"");
        assert_eq!(quote_arg("C:\\no\\space"), "C:\\no\\space");
    }

    #[test]
    fn cmd_keeps_the_command_as_typed() {
        assert_eq!(
            cmd_argument("git commit -m \"a b\" && echo ok"),
            "\"git commit -m \"a b\" && echo ok\""
        );
    }

    #[test]
    fn paths_normalise() {
        assert_eq!(normalize("c:/Users/Me/proj/"), "C:\\Users\\Me\\proj");
        assert_eq!(normalize("\\\\?\\C:\\Users\\me"), "C:\\Users\\me");
        assert_eq!(
            normalize("\\\\?\\UNC\\server\\share\\x"),
            "\\\\server\\share\\x"
        );
        assert_eq!(
            normalize("\\\\server\\share\\\\x\\.\\y"),
            "\\\\server\\share\\x\\y"
        );
        assert_eq!(normalize("c:"), "C:\\");
        assert_eq!(normalize("C:\\"), "C:\\");
        assert_eq!(normalize("\\dir\\x"), "\\dir\\x");
        assert_eq!(normalize("a\\..\\b"), "a\\..\\b");
    }

    #[test]
    fn roots_and_protected_paths_compare_without_case() {
        assert!(starts_with(
            "c:\\users\\me\\PROJ\\src\\a.rs",
            "C:\\Users\\Me\\proj"
        ));
        assert!(starts_with(
            "\\\\?\\C:\\Users\\Me\\proj",
            "c:/users/me/proj/"
        ));
        assert!(!starts_with(
            "C:\\Users\\Me\\projector",
            "C:\\Users\\Me\\proj"
        ));
        assert!(starts_with("C:\\anything", "c:\\"));
        assert!(starts_with(
            "\\\\?\\UNC\\srv\\share\\p\\x",
            "\\\\SRV\\Share\\p"
        ));
        assert!(same("C:\\Repo\\.GIT\\config", "c:/repo/.git/CONFIG"));
        // Streams, trailing dots and spaces name the same file (42.12).
        assert!(same("C:\\p\\.envrc::$DATA", "C:\\p\\.envrc"));
        assert!(same(
            "C:\\p\\.vscode\\tasks.json.",
            "C:\\p\\.vscode\\tasks.json"
        ));
        assert!(same(
            "C:\\p\\.vscode. \\tasks.json .",
            "C:\\p\\.vscode\\tasks.json"
        ));
        assert!(same(
            "\\\\?\\C:\\p\\.git\\config:x:$DATA",
            "c:\\p\\.git\\config"
        ));
        assert!(starts_with("C:\\proj. \\x", "C:\\proj"));
        assert!(!same("C:\\p\\a.b", "C:\\p\\a"));
        assert_eq!(
            relative("c:\\P\\.VSCODE\\tasks.json.", "C:\\p").as_deref(),
            Some(".VSCODE\\tasks.json")
        );
        assert_eq!(relative("C:\\p", "c:\\P\\").as_deref(), Some(""));
        assert_eq!(relative("C:\\pq\\x", "C:\\p"), None);
        assert_eq!(relative("C:\\x", "C:\\").as_deref(), Some("x"));
        assert_eq!(file_name(".."), "..");
        assert_eq!(file_name("..."), "...");
        assert_eq!(file_name("a.txt::$DATA"), "a.txt");
        assert!(!same("C:\\repo\\a", "D:\\repo\\a"));
    }

    /// A name that does not exist yet is created without its trailing dots
    /// and spaces; a stream name stays (it names a stream, not the file).
    #[test]
    fn created_names_lose_trailing_dots_and_spaces() {
        assert_eq!(created_name("foo."), "foo");
        assert_eq!(created_name("foo "), "foo");
        assert_eq!(created_name("foo. . "), "foo");
        assert_eq!(created_name("tasks.json"), "tasks.json");
        assert_eq!(created_name(".env"), ".env");
        assert_eq!(created_name("a:b."), "a:b");
        for kept in [".", "..", "...", " "] {
            assert_eq!(created_name(kept), kept);
        }
    }
}
