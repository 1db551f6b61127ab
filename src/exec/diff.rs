//! Unified line diffs for showing edits in the terminal, computed by
//! `similar` (DESIGN §2: a maintained crate, not a hand-written LCS): its
//! Myers diff with a deadline, so a huge rewrite still answers quickly.
use similar::{ChangeTag, TextDiff};

/// What one line of a hunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    Context,
    Removed,
    Added,
}

/// One line of a hunk, without its line ending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub tag: Tag,
    pub text: String,
    /// The last line of a text without a final newline: shown with
    /// "\ No newline at end of file", as `diff -u` and git do.
    pub missing_newline: bool,
}

/// A hunk: start lines in the old and new text as a unified diff writes
/// them (1-based; for an empty side, the line before it), and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<Line>,
}

/// How long `similar` may search for the smallest diff before it settles
/// for a larger correct one.
const DEADLINE: std::time::Duration = std::time::Duration::from_millis(500);

/// The hunks of a unified diff from `old` to `new`, with `context` lines
/// around each change.
pub fn hunks(old: &str, new: &str, context: usize) -> Vec<Hunk> {
    let diff = TextDiff::configure().timeout(DEADLINE).diff_lines(old, new);
    let mut out = Vec::new();
    for group in diff.grouped_ops(context) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let lines = group
            .iter()
            .flat_map(|op| diff.iter_changes(op))
            .map(|c| {
                let value = c.value();
                Line {
                    tag: match c.tag() {
                        ChangeTag::Equal => Tag::Context,
                        ChangeTag::Delete => Tag::Removed,
                        ChangeTag::Insert => Tag::Added,
                    },
                    text: value.trim_end_matches(['\n', '\r']).to_owned(),
                    missing_newline: c.missing_newline(),
                }
            })
            .collect();
        let start = |r: &std::ops::Range<usize>| r.start + usize::from(!r.is_empty());
        out.push(Hunk {
            old_start: start(&old_range),
            old_len: old_range.len(),
            new_start: start(&new_range),
            new_len: new_range.len(),
            lines,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(tag: Tag, text: &str) -> Line {
        Line {
            tag,
            text: text.to_owned(),
            missing_newline: false,
        }
    }

    #[test]
    fn small_edit() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\ni\n";
        let h = hunks(old, new, 1);
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len),
            (3, 3, 3, 3)
        );
        assert_eq!(
            h[0].lines,
            vec![
                line(Tag::Context, "c"),
                line(Tag::Removed, "d"),
                line(Tag::Added, "D"),
                line(Tag::Context, "e")
            ]
        );
        assert_eq!(h[1].lines.last(), Some(&line(Tag::Added, "i")));
    }

    #[test]
    fn new_file_and_no_change() {
        let h = hunks("", "x\ny\n", 3);
        assert_eq!(
            (h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len),
            (0, 0, 1, 2)
        );
        assert!(hunks("same\n", "same\n", 3).is_empty());
    }

    #[test]
    fn a_missing_final_newline_is_marked() {
        let h = hunks("a\nb", "a\nb\n", 3);
        assert_eq!(h.len(), 1);
        let removed: Vec<_> = h[0]
            .lines
            .iter()
            .filter(|l| l.tag == Tag::Removed)
            .collect();
        assert_eq!(removed.len(), 1);
        assert!(removed[0].missing_newline && removed[0].text == "b");
        assert!(
            h[0].lines
                .iter()
                .filter(|l| l.tag == Tag::Added)
                .all(|l| !l.missing_newline)
        );
    }
}
