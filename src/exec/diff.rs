//! A small unified line diff for showing edits in the terminal.
//!
//! Common prefix and suffix are trimmed first; the middle is diffed with an LCS
//! table when it is small enough, and shown as a whole replacement otherwise.

/// One line of a diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    Context(&'a str),
    Removed(&'a str),
    Added(&'a str),
}

/// A hunk: 1-based start lines in the old and new text, and its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk<'a> {
    pub old_start: usize,
    pub old_len: usize,
    pub new_start: usize,
    pub new_len: usize,
    pub lines: Vec<Line<'a>>,
}

/// Largest LCS table (cells) before falling back to a whole replacement.
const MAX_CELLS: usize = 4_000_000;

/// The line-level edit script from `old` to `new`.
pub fn diff_lines<'a>(old: &'a str, new: &'a str) -> Vec<Line<'a>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    let mut out: Vec<Line<'a>> = a[..prefix].iter().map(|l| Line::Context(l)).collect();
    if am.len().saturating_mul(bm.len()) > MAX_CELLS {
        out.extend(am.iter().map(|l| Line::Removed(l)));
        out.extend(bm.iter().map(|l| Line::Added(l)));
    } else {
        // lcs[i][j] = LCS length of am[i..] and bm[j..].
        let w = bm.len() + 1;
        let mut lcs = vec![0u32; (am.len() + 1) * w];
        for i in (0..am.len()).rev() {
            for j in (0..bm.len()).rev() {
                lcs[i * w + j] = if am[i] == bm[j] {
                    lcs[(i + 1) * w + j + 1] + 1
                } else {
                    lcs[(i + 1) * w + j].max(lcs[i * w + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < am.len() || j < bm.len() {
            if i < am.len() && j < bm.len() && am[i] == bm[j] {
                out.push(Line::Context(am[i]));
                i += 1;
                j += 1;
            } else if i < am.len() && (j == bm.len() || lcs[(i + 1) * w + j] >= lcs[i * w + j + 1])
            {
                out.push(Line::Removed(am[i]));
                i += 1;
            } else {
                out.push(Line::Added(bm[j]));
                j += 1;
            }
        }
    }
    out.extend(a[a.len() - suffix..].iter().map(|l| Line::Context(l)));
    out
}

/// Groups an edit script into hunks with `context` lines around changes.
pub fn hunks<'a>(lines: &[Line<'a>], context: usize) -> Vec<Hunk<'a>> {
    let changed: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !matches!(l, Line::Context(_)))
        .map(|(i, _)| i)
        .collect();
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for &i in &changed {
        let start = i.saturating_sub(context);
        let end = (i + context + 1).min(lines.len());
        match ranges.last_mut() {
            Some((_, e)) if start <= *e => *e = end.max(*e),
            _ => ranges.push((start, end)),
        }
    }
    // Line numbers at each index.
    let mut old_no = Vec::with_capacity(lines.len());
    let mut new_no = Vec::with_capacity(lines.len());
    let (mut o, mut n) = (1, 1);
    for l in lines {
        old_no.push(o);
        new_no.push(n);
        match l {
            Line::Context(_) => {
                o += 1;
                n += 1;
            }
            Line::Removed(_) => o += 1,
            Line::Added(_) => n += 1,
        }
    }
    ranges
        .into_iter()
        .map(|(s, e)| {
            let slice = &lines[s..e];
            let old_len = slice
                .iter()
                .filter(|l| !matches!(l, Line::Added(_)))
                .count();
            let new_len = slice
                .iter()
                .filter(|l| !matches!(l, Line::Removed(_)))
                .count();
            Hunk {
                old_start: if old_len == 0 {
                    old_no[s] - 1
                } else {
                    old_no[s]
                },
                old_len,
                new_start: if new_len == 0 {
                    new_no[s] - 1
                } else {
                    new_no[s]
                },
                new_len,
                lines: slice.to_vec(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_edit() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nD\ne\nf\ng\nh\ni\n";
        let script = diff_lines(old, new);
        let h = hunks(&script, 1);
        assert_eq!(h.len(), 2);
        assert_eq!(
            (h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len),
            (3, 3, 3, 3)
        );
        assert_eq!(
            h[0].lines,
            vec![
                Line::Context("c"),
                Line::Removed("d"),
                Line::Added("D"),
                Line::Context("e")
            ]
        );
        assert_eq!(h[1].lines.last(), Some(&Line::Added("i")));
    }

    #[test]
    fn new_file_and_no_change() {
        let h = hunks(&diff_lines("", "x\ny\n"), 3);
        assert_eq!(
            (h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len),
            (0, 0, 1, 2)
        );
        assert!(hunks(&diff_lines("same\n", "same\n"), 3).is_empty());
    }
}
