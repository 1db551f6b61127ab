//! Windows rules as pure functions (compiled and tested on every system):
//! finding a program through `PATH` and `PATHEXT` as `cmd.exe` does,
//! quoting arguments for `CommandLineToArgvW` and for `cmd.exe /S /C`, and
//! comparing paths with drive letters, either slash, `\\?\` prefixes and
//! any case.

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
    let trimmed = base.trim_end_matches(['.', ' ']);
    if trimmed.is_empty() { name } else { trimmed }
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
}
