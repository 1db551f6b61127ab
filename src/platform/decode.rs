//! Text of what commands write to a pipe ([`super::console`]): UTF-8 where
//! it is UTF-8; on Windows, output that is not is decoded in the console's
//! code page (cmd.exe's builtins and most console programs write the OEM
//! code page, e.g. 850 or 437, to a pipe). Read in chunks: a character cut
//! at the end of one read is kept for the next.

/// Decodes one stream of command output, read in chunks.
#[derive(Debug, Default)]
pub struct Decoder {
    /// The end of the last read that is not a whole character yet.
    carry: Vec<u8>,
    /// The code page this stream turned out to be in: set, for the rest
    /// of the stream, at its first bytes that are not UTF-8 (only where the
    /// system has one, [`super::os::console::output_code_page`]).
    code_page: Option<u32>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the text of `bytes`, the stream's next read, to `out`.
    pub fn push(&mut self, bytes: &[u8], out: &mut String) {
        if let Some(cp) = self.code_page {
            return super::os::console::decode(cp, &mut self.carry, bytes, out);
        }
        self.carry.extend_from_slice(bytes);
        let not_utf8 = std::str::from_utf8(&self.carry)
            .err()
            .is_some_and(|e| e.error_len().is_some());
        if not_utf8 && let Some(cp) = super::os::console::output_code_page() {
            self.code_page = Some(cp);
            return super::os::console::decode(cp, &mut self.carry, &[], out);
        }
        decode_utf8(&mut self.carry, &[], out);
    }

    /// Appends what is left at the end of the stream (a cut character,
    /// as U+FFFD) to `out`.
    pub fn finish(&mut self, out: &mut String) {
        let carry = std::mem::take(&mut self.carry);
        if !carry.is_empty() {
            out.push_str(&String::from_utf8_lossy(&carry));
        }
    }
}

/// Decodes `carry ++ bytes` as UTF-8 into `out`, replacing invalid
/// sequences with U+FFFD and leaving an incomplete trailing sequence in
/// `carry`.
pub(super) fn decode_utf8(carry: &mut Vec<u8>, bytes: &[u8], out: &mut String) {
    carry.extend_from_slice(bytes);
    let mut i = 0;
    while i < carry.len() {
        match std::str::from_utf8(&carry[i..]) {
            Ok(text) => {
                out.push_str(text);
                i = carry.len();
            }
            Err(err) => {
                let valid = err.valid_up_to();
                out.push_str(std::str::from_utf8(&carry[i..i + valid]).unwrap_or_default());
                i += valid;
                match err.error_len() {
                    Some(bad) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        i += bad;
                    }
                    None => break, // incomplete: wait for more bytes
                }
            }
        }
    }
    carry.drain(..i);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(chunks: &[&[u8]]) -> String {
        let mut d = Decoder::new();
        let mut out = String::new();
        for c in chunks {
            d.push(c, &mut out);
        }
        d.finish(&mut out);
        out
    }

    /// UTF-8 passes through as it is on every system (Git bash, programs
    /// that print UTF-8), also with a character cut between two reads.
    #[test]
    fn utf8_output_passes_through_even_cut_between_reads() {
        let text = "héllo → 日本\n";
        assert_eq!(decode(&[text.as_bytes()]), text);
        let b = text.as_bytes();
        for cut in 0..b.len() {
            assert_eq!(decode(&[&b[..cut], &b[cut..]]), text, "cut at {cut}");
        }
        // A character cut at the very end is shown as U+FFFD.
        assert_eq!(decode(&[&"é".as_bytes()[..1]]), "\u{fffd}");
    }
}
