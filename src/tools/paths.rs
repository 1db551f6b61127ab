//! Paths as tools see them: relative to the session cwd, `~` expanded, `..`
//! and symlinks resolved, so "inside the project" means what it says.
use std::path::{Component, Path, PathBuf};

/// Resolves `~`, `.` and `..` and symlinks (of the longest existing ancestor) of
/// a path, relative paths against `cwd`.
pub fn resolve(path: &str, cwd: &Path) -> PathBuf {
    let expanded = if path == "~" || path.starts_with("~/") {
        match crate::platform::fs::home() {
            Some(home) => home.join(path.trim_start_matches('~').trim_start_matches('/')),
            None => PathBuf::from(path),
        }
    } else {
        PathBuf::from(path)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    canonicalize_lenient(&lexical_normalize(&joined))
}

fn lexical_normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Canonicalises the longest existing ancestor and appends the rest, so paths
/// of files not yet created still resolve symlinked directories. Dangling
/// symlinks are followed too: writing through one creates its target.
pub fn canonicalize_lenient(path: &Path) -> PathBuf {
    canonicalize_following(path, 0)
}

/// Symlink hops followed through dangling links (as the kernel's ELOOP limit).
const MAX_LINK_HOPS: u32 = 40;

fn canonicalize_following(path: &Path, hops: u32) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(canon) = crate::platform::fs::canonicalize(&existing) {
            let mut out = canon;
            // What does not exist yet is spelled as it would be created
            // (Windows: `foo.` and `foo ` are `foo`).
            for part in rest.iter().rev() {
                out.push(crate::platform::fs::created_name(part));
            }
            return out;
        }
        if hops < MAX_LINK_HOPS
            && let Ok(target) = std::fs::read_link(&existing)
        {
            let base = existing
                .parent()
                .map(|p| canonicalize_following(p, hops + 1))
                .unwrap_or_default();
            let mut next = lexical_normalize(&base.join(target));
            for part in rest.iter().rev() {
                next.push(part);
            }
            return canonicalize_following(&next, hops + 1);
        }
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether a resolved path lies inside one of the (canonical) roots.
pub fn is_inside(path: &Path, roots: &[PathBuf]) -> bool {
    roots
        .iter()
        .any(|r| crate::platform::fs::is_beneath(path, r))
}

/// Paths a shell command line names that lie outside the roots, resolved
/// (`~`, `$HOME`, `..`, symlinks). Best effort, for the permission policy:
/// a command can always reach further (variables, `cd` in a script), which
/// is why commands still ask in every mode but full-auto.
///
/// Counted: every word or `NAME=value` / `--opt=value` value that is an
/// absolute path (whose top-level directory exists, so `grep "/api/v1"` is not
/// taken for a path), starts with `~` or `$HOME`, contains `..`, or names a
/// symlink in `cwd` that points outside. Not counted: harmless devices
/// (`/dev/null`, …) and a program run by absolute path in command position
/// (`/usr/bin/env python3 x.py`); its arguments are still checked.
pub fn outside_paths_in_command(command: &str, cwd: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    outside_paths_with(command, cwd, roots, crate::platform::fs::home(), &|name| {
        std::env::var(name).ok()
    })
}

/// [`outside_paths_in_command`] with the home and the environment given.
/// Variables in cmd.exe's (`%NAME%`) and PowerShell's (`$env:NAME`)
/// spelling are expanded first, as those shells would: `%USERPROFILE%\.ssh`
/// is the home's `.ssh` (issue 42.12).
fn outside_paths_with(
    command: &str,
    cwd: &Path,
    roots: &[PathBuf],
    home: Option<PathBuf>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    const DEVICES: [&str; 8] = [
        "/dev/null",
        "/dev/zero",
        "/dev/random",
        "/dev/urandom",
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
    ];
    let mut out: Vec<PathBuf> = Vec::new();
    for (word, command_position) in shell_words(command) {
        let word = expand_windows_vars(&word, env);
        let mut candidates = vec![word.as_str()];
        if let Some((_, value)) = word.split_once('=') {
            candidates.push(value);
        }
        for c in candidates {
            let expanded = match (c, &home) {
                ("~", Some(h)) | ("$HOME", Some(h)) | ("${HOME}", Some(h)) => h.clone(),
                (c, Some(h)) if c.starts_with("~/") => h.join(&c[2..]),
                (c, Some(h)) if c.starts_with("$HOME/") => h.join(&c[6..]),
                (c, Some(h)) if c.starts_with("${HOME}/") => h.join(&c[8..]),
                (c, _) if c.starts_with('-') || c.is_empty() => continue,
                (c, _) => PathBuf::from(c),
            };
            let text = expanded.to_string_lossy();
            if DEVICES.contains(&text.as_ref()) || text.starts_with("/dev/fd/") {
                continue;
            }
            let joined = if expanded.is_absolute() {
                let top = expanded.components().nth(1);
                let top_exists = top.is_some_and(|t| Path::new("/").join(t).exists());
                if !top_exists && expanded != Path::new("/") {
                    continue;
                }
                if command_position && is_executable(&expanded) {
                    continue;
                }
                expanded
            } else {
                let has_parent = expanded
                    .components()
                    .any(|c| matches!(c, Component::ParentDir));
                let joined = cwd.join(&expanded);
                // A bare word is a path only if it is a symlink here.
                let path_like = expanded.components().count() > 1
                    || std::fs::symlink_metadata(&joined).is_ok_and(|m| m.file_type().is_symlink());
                if !has_parent && !path_like {
                    continue;
                }
                joined
            };
            // Lexically (what the tools do) and physically (what the shell
            // does: `link/..` is the link target's parent).
            let lexical = canonicalize_lenient(&lexical_normalize(&joined));
            let physical = canonicalize_lenient(&joined);
            let physical_is_clean = !physical
                .components()
                .any(|c| matches!(c, Component::ParentDir));
            let found = if !is_inside(&lexical, roots) {
                Some(lexical)
            } else if physical_is_clean && !is_inside(&physical, roots) {
                Some(physical)
            } else {
                None
            };
            if let Some(p) = found
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
    }
    out
}

/// `word` with cmd.exe's `%NAME%` and PowerShell's `$env:NAME` /
/// `${env:NAME}` replaced by the variables' values; a variable that is not
/// set stays as written (as cmd.exe leaves it).
fn expand_windows_vars(word: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    fn is_name(n: &str) -> bool {
        n.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '(' | ')'))
    }
    let mut out = String::with_capacity(word.len());
    let mut rest = word;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('%')
            && let Some((name, tail)) = after.split_once('%')
            && is_name(name)
            && let Some(value) = env(name)
        {
            out.push_str(&value);
            rest = tail;
            continue;
        }
        let ps = ["${env:", "$env:", "$ENV:", "${ENV:"]
            .iter()
            .find_map(|p| rest.strip_prefix(p).map(|r| (p.starts_with("${"), r)));
        if let Some((braced, after)) = ps {
            let end = if braced {
                after.find('}')
            } else {
                Some(
                    after
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(after.len()),
                )
            };
            if let Some(end) = end
                && is_name(&after[..end])
                && let Some(value) = env(&after[..end])
            {
                out.push_str(&value);
                rest = &after[end + usize::from(braced)..];
                continue;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| crate::platform::fs::is_executable(path, &m))
}

/// The words of a shell command line with quotes removed, each with whether
/// it starts a command (first word, or after `;`, `&`, `|`, `(`, a backtick,
/// `$(` or a newline). Redirection operators split words too.
fn shell_words(command: &str) -> Vec<(String, bool)> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut command_position = true;
    let mut word_starts_command = true;
    let mut chars = command.chars().peekable();
    let flush =
        |word: &mut String, in_word: &mut bool, words: &mut Vec<(String, bool)>, starts: bool| {
            if *in_word {
                words.push((std::mem::take(word), starts));
                *in_word = false;
            }
        };
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if !in_word {
                    word_starts_command = command_position;
                }
                in_word = true;
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            '\'' | '"' => {
                if !in_word {
                    word_starts_command = command_position;
                }
                in_word = true;
                while let Some(n) = chars.next() {
                    if n == c {
                        break;
                    }
                    if c == '"' && n == '\\' {
                        if let Some(e) = chars.next() {
                            word.push(e);
                        }
                        continue;
                    }
                    word.push(n);
                }
            }
            ';' | '&' | '|' | '(' | ')' | '`' | '\n' | '\r' => {
                flush(&mut word, &mut in_word, &mut words, word_starts_command);
                command_position = c != ')';
            }
            '$' if chars.peek() == Some(&'(') => {
                chars.next();
                flush(&mut word, &mut in_word, &mut words, word_starts_command);
                command_position = true;
            }
            '<' | '>' => {
                flush(&mut word, &mut in_word, &mut words, word_starts_command);
                command_position = false;
            }
            c if c.is_whitespace() => {
                if in_word {
                    flush(&mut word, &mut in_word, &mut words, word_starts_command);
                    // `FOO=1 cmd`: an assignment keeps the command position.
                    let assignment = words
                        .last()
                        .is_some_and(|(w, _)| w.contains('=') && !w.starts_with('-'));
                    command_position = command_position && assignment;
                }
            }
            c => {
                if !in_word {
                    word_starts_command = command_position;
                }
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut word, &mut in_word, &mut words, word_starts_command);
    words
}

/// How a path is shown in titles and results: relative to cwd when inside it.
pub fn display(path: &Path, cwd: &Path) -> String {
    let cwd_canon = canonicalize_lenient(cwd);
    for base in [cwd, cwd_canon.as_path()] {
        if let Ok(rel) = path.strip_prefix(base) {
            let s = rel.display().to_string();
            return if s.is_empty() { ".".into() } else { s };
        }
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_handles_dots_tilde_and_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        crate::platform::fs::symlink("/etc", root.join("link")).unwrap();
        assert_eq!(resolve("a/../b.txt", &root), root.join("b.txt"));
        assert_eq!(resolve("../x", &root.join("real")), root.join("x"));
        assert!(!is_inside(
            &resolve("../../etc/passwd", &root),
            std::slice::from_ref(&root)
        ));
        assert!(!is_inside(
            &resolve("link/new-file", &root),
            std::slice::from_ref(&root)
        ));
        assert!(is_inside(
            &resolve("real/new/deep.txt", &root),
            std::slice::from_ref(&root)
        ));
        // Dangling links resolve to where a write through them would land.
        crate::platform::fs::symlink("../elsewhere/new.txt", root.join("real/dangling")).unwrap();
        assert_eq!(
            resolve("real/dangling", &root),
            root.join("elsewhere/new.txt")
        );
        crate::platform::fs::symlink("/nonexistent-dir", root.join("dlink")).unwrap();
        assert_eq!(
            resolve("dlink/a/b.txt", &root),
            PathBuf::from("/nonexistent-dir/a/b.txt")
        );
        crate::platform::fs::symlink("loop2", root.join("loop1")).unwrap();
        crate::platform::fs::symlink("loop1", root.join("loop2")).unwrap();
        let _ = resolve("loop1", &root); // terminates
        let home = crate::platform::fs::home().unwrap();
        assert!(resolve("~/x", &root).starts_with(home.canonicalize().unwrap_or(home)));
    }

    #[test]
    fn commands_naming_paths_outside_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        crate::platform::fs::symlink("/etc", root.join("etc-link")).unwrap();
        let roots = std::slice::from_ref(&root);
        let outside = |cmd: &str| outside_paths_in_command(cmd, &root, roots);
        for inside in [
            "cargo test --all",
            "ls -la src",
            "grep -rn \"/api/v1\" src",
            "cat src/../Cargo.toml",
            "echo hi > /dev/null 2>&1",
            "/usr/bin/env python3 src/x.py",
            "git log HEAD~3..HEAD",
            "FOO=bar make -C src",
        ] {
            assert_eq!(outside(inside), Vec::<PathBuf>::new(), "{inside}");
        }
        for (cmd, path) in [
            ("rm -rf /etc/hosts", PathBuf::from("/etc/hosts")),
            (
                "cat ../secret.txt",
                root.parent().unwrap().join("secret.txt"),
            ),
            ("touch etc-link/x", PathBuf::from("/etc/x")),
            ("echo x >'/tmp/out file'", PathBuf::from("/tmp/out file")),
            ("make OUT=/etc/y", PathBuf::from("/etc/y")),
            (
                "cd src && rm -rf \"../..\"",
                root.parent().unwrap().parent().unwrap().to_path_buf(),
            ),
            ("x=$(cat /etc/passwd)", PathBuf::from("/etc/passwd")),
        ] {
            assert!(outside(cmd).contains(&path), "{cmd}: {:?}", outside(cmd));
        }
        let home = crate::platform::fs::home().unwrap();
        let home = home.canonicalize().unwrap_or(home);
        assert!(outside("rm -rf ~/.ssh").contains(&home.join(".ssh")));
        assert!(outside("ls $HOME").contains(&home));
        assert!(!outside("/bin/rm -rf /usr/lib/x").is_empty());
    }

    /// Issue 42.12: `%USERPROFILE%` and `$env:USERPROFILE` are the home to
    /// cmd.exe and PowerShell; other variables expand as set, and unset
    /// ones stay literal.
    #[test]
    fn windows_variables_in_commands_are_expanded() {
        let dir = tempfile::tempdir().unwrap();
        let root = crate::platform::fs::canonicalize(dir.path()).unwrap();
        let roots = std::slice::from_ref(&root);
        let profile = root.parent().unwrap().to_path_buf();
        let project = root.to_string_lossy().into_owned();
        let env = |name: &str| match name {
            "USERPROFILE" => Some(profile.to_string_lossy().into_owned()),
            "PROJ" => Some(project.clone()),
            _ => None,
        };
        let outside = |cmd: &str| outside_paths_with(cmd, &root, roots, None, &env);
        for cmd in [
            "type %USERPROFILE%/secret.txt",
            "del %USERPROFILE%",
            "Get-Content $env:USERPROFILE/secret.txt",
            "Get-Content ${env:USERPROFILE}/secret.txt",
            "copy x \"%USERPROFILE%/secret.txt\"",
        ] {
            let found = outside(cmd);
            assert!(
                found
                    .iter()
                    .any(|p| p.starts_with(&profile) && !p.starts_with(&root)),
                "{cmd}: {found:?}"
            );
        }
        for cmd in ["type %PROJ%/a.txt", "echo %UNSET%", "date +%Y-%m-%d"] {
            assert_eq!(outside(cmd), Vec::<PathBuf>::new(), "{cmd}");
        }
        assert_eq!(
            expand_windows_vars("%USERPROFILE%x%UNSET%$env:PROJ;", &env),
            format!("{}x%UNSET%{project};", profile.display())
        );
    }

    /// A part that does not exist yet is spelled as it will be once created
    /// (issue 43 item 3): on Windows `new.` and `new ` are `new`, so a check
    /// of the lenient path is a check of the file that gets made.
    #[test]
    fn parts_that_do_not_exist_yet_are_spelled_as_created() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["made. ", "made.", "made "] {
            let lenient = canonicalize_lenient(&dir.path().join(name).join("f.txt"));
            std::fs::create_dir(dir.path().join(name)).unwrap();
            let made = crate::platform::fs::canonicalize(&dir.path().join(name)).unwrap();
            assert_eq!(lenient, made.join("f.txt"), "{name:?}");
            std::fs::remove_dir(&made).unwrap();
        }
    }

    /// Issue 43.3: a resolved path is one Windows programs accept: no
    /// `\\?\` prefix (cmd.exe runs in `C:\Windows` when its working
    /// directory has one, and editors show it raw). Runs everywhere; it
    /// can only fail where `canonicalize` adds the prefix (Windows).
    #[test]
    fn resolved_paths_have_no_verbatim_prefix() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub dir")).unwrap();
        for path in [
            resolve("sub dir", dir.path()),
            resolve("sub dir/new.txt", dir.path()),
            canonicalize_lenient(dir.path()),
        ] {
            let text = path.to_string_lossy();
            assert!(!text.starts_with("\\\\?\\"), "{text}");
            assert!(path.is_absolute(), "{text}");
        }
        assert_eq!(
            crate::platform::fs::simplified(Path::new("/a/b")),
            Path::new("/a/b")
        );
    }

    #[test]
    fn display_is_relative_inside_cwd() {
        assert_eq!(
            display(Path::new("/p/src/a.rs"), Path::new("/p")),
            "src/a.rs"
        );
        assert_eq!(display(Path::new("/q/a.rs"), Path::new("/p")), "/q/a.rs");
        assert_eq!(display(Path::new("/p"), Path::new("/p")), ".");
    }
}
