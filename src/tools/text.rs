//! Text helpers shared by the editing tools: line endings and match reporting.

/// The file's line ending: CRLF when most of its line breaks are CRLF.
pub fn uses_crlf(text: &str) -> bool {
    let crlf = text.matches("\r\n").count();
    crlf > 0 && crlf * 2 >= text.matches('\n').count()
}

/// Converts LF line breaks to the file's convention.
pub fn with_line_endings(text: &str, crlf: bool) -> String {
    let lf = text.replace("\r\n", "\n");
    if crlf { lf.replace('\n', "\r\n") } else { lf }
}

/// 1-based line of a byte offset.
pub fn line_of(text: &str, byte: usize) -> usize {
    text[..byte].matches('\n').count() + 1
}

/// Numbered lines `from..=to` (1-based, clamped) of `text`.
pub fn numbered(text: &str, from: usize, to: usize) -> String {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .take(to.saturating_sub(from.max(1)) + 1)
        .map(|(i, l)| format!("{:>6}\t{}\n", i + 1, l))
        .collect()
}

/// The lines of `text` most like the first line of `needle`, with context, to
/// show the model what it probably meant when an exact match failed.
pub fn nearest_lines(text: &str, needle: &str) -> Option<String> {
    let probe = needle.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut best: Option<(usize, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let score = similarity(line.trim(), probe);
        if score > 0 && best.is_none_or(|(_, s)| score > s) {
            best = Some((i + 1, score));
        }
    }
    let (line, score) = best?;
    // Require a meaningful overlap: at least half the probe's characters.
    if score * 2 < probe.chars().count().min(40) {
        return None;
    }
    let span = needle.lines().count().max(1);
    Some(numbered(
        text,
        line.saturating_sub(2).max(1),
        line + span + 1,
    ))
}

/// Where `needle` matches whole lines of `text` once whitespace is ignored
/// (indentation, and runs of spaces inside a line compared as one).
#[derive(Debug, PartialEq, Eq)]
pub enum Loose {
    None,
    /// The byte range of the matching lines (without the last line break)
    /// and the indentation of the first of them.
    One {
        range: std::ops::Range<usize>,
        indent: String,
    },
    Many(usize),
}

/// Matches `needle` against `text` (both with LF line breaks) line by line,
/// blank lines around `needle` left out.
pub fn loose_match(text: &str, needle: &str) -> Loose {
    let wanted: Vec<String> = trim_blank_lines(needle).lines().map(squash).collect();
    if wanted.is_empty() || wanted.iter().all(String::is_empty) {
        return Loose::None;
    }
    let mut lines = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        lines.push((at, l.trim_end_matches('\n')));
        at += l.len();
    }
    let squashed: Vec<String> = lines.iter().map(|(_, l)| squash(l)).collect();
    let starts: Vec<usize> = (0..lines.len().saturating_sub(wanted.len() - 1))
        .filter(|&i| squashed[i..i + wanted.len()] == wanted[..])
        .collect();
    match starts[..] {
        [] => Loose::None,
        [i] => {
            let (start, first) = lines[i];
            let (last_at, last) = lines[i + wanted.len() - 1];
            Loose::One {
                range: start..last_at + last.len(),
                indent: indentation(first).to_owned(),
            }
        }
        _ => Loose::Many(starts.len()),
    }
}

/// `replacement` for lines matched by [`loose_match`]: blank lines around
/// it left out, and re-indented from `needle`'s indentation to `indent`.
pub fn reindent(replacement: &str, needle: &str, indent: &str) -> String {
    let from = trim_blank_lines(needle)
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(indentation)
        .unwrap_or("");
    trim_blank_lines(replacement)
        .lines()
        .map(|l| match l.strip_prefix(from) {
            Some(rest) if !l.trim().is_empty() => format!("{indent}{rest}"),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn squash(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn indentation(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// `text` without its leading and trailing whitespace-only lines.
fn trim_blank_lines(text: &str) -> &str {
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else {
        return "";
    };
    let last = lines
        .iter()
        .rposition(|l| !l.trim().is_empty())
        .unwrap_or(first);
    let start: usize = lines[..first].iter().map(|l| l.len() + 1).sum();
    let end: usize = lines[..=last].iter().map(|l| l.len() + 1).sum::<usize>() - 1;
    &text[start..end]
}

/// The start of a file for a model that has not read it: at most
/// `max_lines` numbered lines and about `max_bytes`, with a note on what
/// was left out.
pub fn bounded_numbered(text: &str, max_lines: usize, max_bytes: usize) -> String {
    let total = text.lines().count();
    let mut out = String::new();
    let mut shown = 0;
    for (i, l) in text.lines().enumerate().take(max_lines) {
        let line = format!("{:>6}\t{}\n", i + 1, l);
        if out.len() + line.len() > max_bytes && shown > 0 {
            break;
        }
        out.push_str(&line);
        shown += 1;
    }
    if total == 0 {
        out.push_str("(empty file)\n");
    } else if shown < total {
        out.push_str(&format!(
            "[… lines {}–{total} not shown; read_file with offset={} shows them]\n",
            shown + 1,
            shown + 1
        ));
    }
    out
}

/// Length of the longest common substring (in chars), capped for speed.
fn similarity(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(200).collect();
    let b: Vec<char> = b.chars().take(200).collect();
    let mut prev = vec![0usize; b.len() + 1];
    let mut best = 0;
    for &ca in &a {
        let mut cur = vec![0usize; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            if ca == cb {
                cur[j + 1] = prev[j] + 1;
                best = best.max(cur[j + 1]);
            }
        }
        prev = cur;
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings() {
        assert!(uses_crlf("a\r\nb\r\n"));
        assert!(!uses_crlf("a\nb\n"));
        assert_eq!(with_line_endings("a\nb\r\n", true), "a\r\nb\r\n");
        assert_eq!(with_line_endings("a\r\nb", false), "a\nb");
    }

    #[test]
    fn nearest() {
        let text = "fn main() {\n    let x = 1;\n    println(x);\n}\n";
        let near = nearest_lines(text, "    let  x = 1;\n").unwrap();
        assert!(near.contains("     2\t    let x = 1;"), "{near}");
        assert!(nearest_lines(text, "completely unrelated zzz").is_none());
    }
}
