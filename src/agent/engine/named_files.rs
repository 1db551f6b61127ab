//! The project files a request names, shown with it to a small model.
//!
//! A weak model edits files it never read, or answers a question about a
//! file from nothing. When the user's words name files of the project
//! (`calc/ops.py`, `greet.py`), the small-model mode adds their current
//! text to the request, as an editor's `@file` mention would, and counts
//! them as read: the model starts from what the files hold. A directory it
//! names comes as a listing (as `list_directory` gives it). Bounded: small
//! text files and directories inside the roots only, a few of them.
use std::path::{Path, PathBuf};

use crate::editor::Editor;
use crate::tools::paths;

/// At most this many files (and directories) are added to one request.
pub const MAX_FILES: usize = 4;
/// A file larger than this is named, not added.
pub const MAX_FILE_BYTES: u64 = 8 * 1024;
/// All added files together.
pub const MAX_TOTAL_BYTES: usize = 16 * 1024;

/// A file the request names, with its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub path: PathBuf,
    /// As the user would write it: relative to the working directory.
    pub shown: String,
    /// The file's text, or the directory's listing.
    pub text: String,
    pub is_dir: bool,
}

/// The words of `text` that look like file paths (`a/b.py`, `greet.py`,
/// `./run.sh`), in order, each once.
pub fn path_words(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let is_path_char = |c: char| c.is_alphanumeric() || "_./-~".contains(c);
    for word in text.split(|c: char| !is_path_char(c)) {
        let word = word.trim_end_matches(['.', '-']);
        let looks_like_path = word.contains('/') || has_extension(word);
        // `https://host/x.html` splits into `https` and `//host/x.html`.
        if word.starts_with("//")
            || word.is_empty()
            || word.len() > 255
            || !looks_like_path
            || out.contains(&word)
        {
            continue;
        }
        out.push(word);
    }
    out
}

/// `name.ext`, with a name and an extension that has a letter in it.
fn has_extension(word: &str) -> bool {
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.trim_start_matches('.').is_empty()
                && !ext.is_empty()
                && ext.chars().all(char::is_alphanumeric)
                && ext.chars().any(char::is_alphabetic)
        }
        None => false,
    }
}

/// The files of the project that `text` names, read (through the editor
/// when it reads files, so an unsaved buffer is what the model sees).
/// Files outside `roots`, directories, large files and files that are not
/// text are left out.
pub async fn read(text: &str, cwd: &Path, roots: &[PathBuf], editor: &Editor) -> Vec<Named> {
    let roots: Vec<PathBuf> = roots
        .iter()
        .map(|r| paths::canonicalize_lenient(r))
        .collect();
    let mut out: Vec<Named> = Vec::new();
    let mut total = 0;
    for word in path_words(text) {
        if out.len() == MAX_FILES {
            break;
        }
        let path = paths::resolve(word, cwd);
        if !paths::is_inside(&path, &roots) || out.iter().any(|n| n.path == path) {
            continue;
        }
        let Ok(meta) = tokio::fs::metadata(&path).await else {
            continue;
        };
        let text = if meta.is_dir() {
            match listing(&path).await {
                Some(text) => text,
                None => continue,
            }
        } else if meta.is_file() && meta.len() <= MAX_FILE_BYTES {
            match editor.read_text_file(&path).await {
                Ok(text) => text,
                Err(_) => continue,
            }
        } else {
            continue;
        };
        if total + text.len() > MAX_TOTAL_BYTES || text.contains('\0') {
            continue;
        }
        total += text.len();
        out.push(Named {
            shown: paths::display(&path, cwd),
            path,
            text,
            is_dir: meta.is_dir(),
        });
    }
    out
}

/// Entries a named directory's listing shows.
const LISTED_ENTRIES: usize = 50;

/// `dir` one level deep, as `list_directory` shows it.
async fn listing(dir: &Path) -> Option<String> {
    let dir = dir.to_owned();
    let limits = crate::tools::search::SearchLimits {
        max_results: LISTED_ENTRIES,
        ..Default::default()
    };
    tokio::task::spawn_blocking(move || {
        crate::tools::search::list_directory(&dir, &dir, &limits).ok()
    })
    .await
    .ok()
    .flatten()
    .map(|out| out.text)
}

/// The text added to the request for `named`.
pub fn block(named: &[Named]) -> String {
    let mut s = String::from(
        "\n\nThe files named above, as they are now (already read: copy old_string for edit_file from here):",
    );
    for n in named {
        let tag = if n.is_dir { "directory" } else { "file" };
        s.push_str(&format!(
            "\n<{tag} path=\"{}\">\n{}\n</{tag}>",
            n.shown,
            n.text.trim_end_matches('\n')
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An editor without fs capabilities: files are read from the disk.
    fn local_editor() -> Editor {
        let conn = crate::rpc::Connection::new(crate::rpc::ServeOptions::default());
        Editor::new(conn.peer.clone(), std::sync::Arc::default(), "s")
    }

    #[test]
    fn path_words_are_paths_and_names_with_extensions() {
        let words = path_words(
            "The test in calc/test_ops.py fails (run: cd calc && python3 -m unittest test_ops). \
             Fix the bug in calc/ops.py, see `./run.sh`, \"config.json\" and README.md. \
             Version 1.4.2, e.g. 2.0 or 3.5MB; calc/ops.py again; see https://example.com/x.html",
        );
        assert_eq!(
            words,
            [
                "calc/test_ops.py",
                "calc/ops.py",
                "./run.sh",
                "config.json",
                "README.md",
                // Candidates only: no file has these names.
                "e.g",
                "3.5MB",
            ]
        );
        assert!(path_words("a sentence. Another one.").is_empty());
        assert_eq!(path_words("in logs/app.log: count"), ["logs/app.log"]);
        assert_eq!(path_words("the shop/ directory"), ["shop/"]);
    }

    #[tokio::test]
    async fn only_small_text_files_inside_the_roots_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("proj");
        std::fs::create_dir_all(root.join("calc")).unwrap();
        std::fs::write(
            root.join("calc/ops.py"),
            "def add(a, b):\n    return a - b\n",
        )
        .unwrap();
        std::fs::write(
            root.join("big.txt"),
            "x".repeat(MAX_FILE_BYTES as usize + 1),
        )
        .unwrap();
        std::fs::write(root.join("blob.bin"), b"\0\x01\x02").unwrap();
        std::fs::write(base.join("secret.txt"), "outside").unwrap();
        // A link out of the project.
        crate::platform::fs::symlink(base.join("secret.txt"), root.join("link.txt")).unwrap();
        let editor = local_editor();
        let named = read(
            "Fix calc/ops.py; see big.txt, blob.bin, ../secret.txt, link.txt, calc/, ../ and missing.py",
            &root,
            std::slice::from_ref(&root),
            &editor,
        )
        .await;
        assert_eq!(
            named,
            [
                Named {
                    path: root.join("calc/ops.py"),
                    shown: "calc/ops.py".into(),
                    text: "def add(a, b):\n    return a - b\n".into(),
                    is_dir: false,
                },
                Named {
                    path: root.join("calc"),
                    shown: "calc".into(),
                    text: "ops.py (32 B)".into(),
                    is_dir: true,
                }
            ]
        );
        let b = block(&named);
        assert!(
            b.contains("<file path=\"calc/ops.py\">\ndef add(a, b):\n    return a - b\n</file>"),
            "{b}"
        );
        assert!(
            b.contains("<directory path=\"calc\">\nops.py (32 B)\n</directory>"),
            "{b}"
        );
    }

    #[tokio::test]
    async fn a_few_files_and_a_bounded_total() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mut prompt = String::new();
        for i in 0..6 {
            std::fs::write(root.join(format!("f{i}.txt")), "y".repeat(5000)).unwrap();
            prompt.push_str(&format!("f{i}.txt "));
        }
        let editor = local_editor();
        let named = read(&prompt, &root, std::slice::from_ref(&root), &editor).await;
        assert_eq!(named.len(), 3, "16 KiB hold three files of 5000 bytes");
        std::fs::write(root.join("a.txt"), "a").unwrap();
        let prompt = (0..6).fold(String::from("a.txt "), |p, i| p + &format!("f{i}.txt "));
        let named = read(&prompt, &root, std::slice::from_ref(&root), &editor).await;
        assert_eq!(named.len(), MAX_FILES);
    }
}
