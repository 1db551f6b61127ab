//! Cutting text at a byte limit without splitting a character: the one
//! helper every byte-limited cut uses (tool output, stderr lines, AGENTS.md,
//! streamed chunks, transcripts), and [`ellipsize`] for titles counted in
//! characters. Uses nothing of ours (DESIGN §2).

/// The largest char boundary of `s` at or below `i` (`s.len()` when `i` is past the end).
pub fn floor_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` at or above `i` (`s.len()` when `i` is past the end).
pub fn ceil_boundary(s: &str, i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    let mut i = i;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// At most the first `max` bytes of `s`.
pub fn head(s: &str, max: usize) -> &str {
    &s[..floor_boundary(s, max)]
}

/// At most the last `max` bytes of `s`.
pub fn tail(s: &str, max: usize) -> &str {
    &s[ceil_boundary(s, s.len().saturating_sub(max))..]
}

/// `s` itself when it fits in `max` bytes; otherwise its head and how many
/// bytes were left out, so a reader (the model, a log) knows it was cut.
pub fn shorten(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let head = head(s, max);
    format!("{head}… [{} more bytes]", s.len() - head.len())
}

/// `s` when it has at most `max` characters; otherwise its first `max - 1`
/// and an ellipsis, for one-line titles counted in characters.
pub fn ellipsize(s: &str, max: usize) -> String {
    if s.chars().count() > max {
        s.chars().take(max.saturating_sub(1)).collect::<String>() + "…"
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_never_split_a_character() {
        let s = "aé€😀b"; // 1 + 2 + 3 + 4 + 1 bytes
        for i in 0..=s.len() + 2 {
            assert!(s.is_char_boundary(floor_boundary(s, i)));
            assert!(s.is_char_boundary(ceil_boundary(s, i)));
            assert!(head(s, i).len() <= i);
            assert!(tail(s, i).len() <= i);
        }
        assert_eq!(head(s, 2), "a");
        assert_eq!(head(s, 3), "aé");
        assert_eq!(tail(s, 4), "b");
        assert_eq!(tail(s, 5), "😀b");
        assert_eq!(head(s, 100), s);
        assert_eq!(tail(s, 100), s);
    }

    #[test]
    fn shorten_says_what_was_left_out() {
        assert_eq!(shorten("short", 10), "short");
        assert_eq!(shorten("aé€", 2), "a… [5 more bytes]");
    }

    #[test]
    fn ellipsize_counts_characters() {
        assert_eq!(ellipsize("héllo", 5), "héllo");
        assert_eq!(ellipsize("héllo", 4), "hél…");
        assert_eq!(ellipsize("héllo", 0), "…");
    }
}
