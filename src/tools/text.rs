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
