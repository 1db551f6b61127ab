//! Where a reply's body ends (RFC 9112 §6.3), and the chunked coding
//! (§7.1), decoded in place over whole socket reads.
use super::SendError;

/// How the body's end is known (RFC 9112 §6.3).
#[derive(Debug)]
pub(super) enum Framing {
    Length(u64),
    Chunked(Chunked),
    /// Until the server closes the connection.
    Close,
    Done,
}

impl Framing {
    pub(super) fn of(status: u16, headers: &[(String, String)]) -> Result<Framing, SendError> {
        fn get<'h>(
            headers: &'h [(String, String)],
            name: &'static str,
        ) -> impl Iterator<Item = &'h str> {
            headers
                .iter()
                .filter(move |(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }
        // (An error reply's body is only shown as text: its status and
        // Retry-After matter more than a garbled message.)
        if let Some(enc) = get(headers, "content-encoding")
            .find(|v| !v.eq_ignore_ascii_case("identity"))
            .filter(|_| (200..300).contains(&status))
        {
            return Err(SendError(format!(
                "the server compressed its reply (content-encoding: {enc}) though no encoding was accepted"
            )));
        }
        if status == 204 || status == 304 {
            return Ok(Framing::Done);
        }
        let codings: Vec<&str> = get(headers, "transfer-encoding")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if let Some(last) = codings.last() {
            return Ok(if last.eq_ignore_ascii_case("chunked") {
                Framing::Chunked(Chunked::default())
            } else {
                Framing::Close
            });
        }
        let lengths: Vec<&str> = get(headers, "content-length")
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        if let Some(&first) = lengths.first() {
            // §6.3: differing values make the framing unknowable.
            let len = first
                .parse::<u64>()
                .ok()
                .filter(|_| lengths.iter().all(|l| *l == first))
                .ok_or_else(|| {
                    SendError(format!(
                        "the server sent an invalid content-length: {:?}",
                        lengths.join(", ")
                    ))
                })?;
            return Ok(if len == 0 {
                Framing::Done
            } else {
                Framing::Length(len)
            });
        }
        Ok(Framing::Close)
    }

    /// Decodes one read of the body, handing its payload to `sink`; true if
    /// `input` went past the body's end (the connection then carries
    /// something no request asked for, and must not be reused).
    pub(super) fn decode(
        &mut self,
        input: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<bool, String> {
        match self {
            Framing::Length(left) => {
                let n = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                if n > 0 {
                    sink(&input[..n]);
                }
                *left -= n as u64;
                if *left == 0 {
                    *self = Framing::Done;
                }
                Ok(n < input.len())
            }
            Framing::Chunked(c) => match c.decode(input, sink)? {
                Some(extra) => {
                    *self = Framing::Done;
                    Ok(extra > 0)
                }
                None => Ok(false),
            },
            Framing::Close => {
                if !input.is_empty() {
                    sink(input);
                }
                Ok(false)
            }
            Framing::Done => Ok(!input.is_empty()),
        }
    }

    /// The connection closed: fine only for a body that ends that way.
    pub(super) fn eof(&mut self) -> Result<(), String> {
        match self {
            Framing::Close | Framing::Done => {
                *self = Framing::Done;
                Ok(())
            }
            _ => Err("the server closed the connection before the reply's end".into()),
        }
    }
}

/// Where a chunked body's decoding is (RFC 9112 §7.1). Line ends may be
/// `\r\n` or a bare `\n`; chunk extensions and trailers are skipped.
#[derive(Debug)]
pub(super) enum Chunked {
    /// Reading a chunk-size line: the size so far, whether it has a digit,
    /// and whether the rest of the line is skipped (extensions).
    Size {
        size: u64,
        digits: bool,
        rest: bool,
    },
    /// Data of the current chunk still to come.
    Data(u64),
    /// The line end after a chunk's data.
    DataEnd,
    /// Trailer lines after the last chunk; true at the start of a line.
    Trailer(bool),
    Done,
}

impl Default for Chunked {
    fn default() -> Self {
        Chunked::Size {
            size: 0,
            digits: false,
            rest: false,
        }
    }
}

impl Chunked {
    /// Consumes `input` up to the body's end: once the body is complete,
    /// `Some` of how many bytes of `input` were left after it.
    pub(super) fn decode(
        &mut self,
        mut input: &[u8],
        sink: &mut dyn FnMut(&[u8]),
    ) -> Result<Option<usize>, String> {
        while let Some(&b) = input.first() {
            if let Chunked::Data(left) = self {
                let n = input
                    .len()
                    .min(usize::try_from(*left).unwrap_or(usize::MAX));
                sink(&input[..n]);
                input = &input[n..];
                *left -= n as u64;
                if *left == 0 {
                    *self = Chunked::DataEnd;
                }
                continue;
            }
            input = &input[1..];
            match self {
                Chunked::Size { size, digits, rest } => match b {
                    b'\n' => {
                        if !*digits {
                            return Err("malformed chunked body: a chunk without a size".into());
                        }
                        *self = if *size == 0 {
                            Chunked::Trailer(true)
                        } else {
                            Chunked::Data(*size)
                        };
                    }
                    b'\r' => {}
                    _ if *rest => {}
                    b';' | b' ' | b'\t' => *rest = true,
                    _ => {
                        let d = (b as char).to_digit(16).ok_or_else(|| {
                            format!("malformed chunked body: {:?} in a chunk size", b as char)
                        })?;
                        *size = size
                            .checked_mul(16)
                            .and_then(|s| s.checked_add(u64::from(d)))
                            .ok_or("malformed chunked body: a chunk size over 64 bits")?;
                        *digits = true;
                    }
                },
                Chunked::DataEnd => match b {
                    b'\r' => {}
                    b'\n' => *self = Chunked::default(),
                    _ => return Err("malformed chunked body: no line end after a chunk".into()),
                },
                Chunked::Trailer(line_start) => match b {
                    b'\n' if *line_start => {
                        *self = Chunked::Done;
                        return Ok(Some(input.len()));
                    }
                    b'\n' => *line_start = true,
                    b'\r' => {}
                    _ => *line_start = false,
                },
                // (The byte taken above was past the end.)
                Chunked::Done => return Ok(Some(input.len() + 1)),
                Chunked::Data(_) => unreachable!("handled above"),
            }
        }
        Ok(matches!(self, Chunked::Done).then_some(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(parts: &[&[u8]]) -> Result<(Vec<u8>, bool), String> {
        let mut c = Chunked::default();
        let mut out = Vec::new();
        let mut done = false;
        for p in parts {
            done = c.decode(p, &mut |b| out.extend_from_slice(b))?.is_some();
        }
        Ok((out, done))
    }

    #[test]
    fn chunked_bodies_decode_across_any_split() {
        let body = b"5\r\nhello\r\n7;ext=1\r\n, world\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nx-trailer: 1\r\n\r\n";
        let want = b"hello, worldabcdefghijklmnopqrstuvwxyz".to_vec();
        assert_eq!(decode_all(&[body]).unwrap(), (want.clone(), true));
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(
                decode_all(&[a, b]).unwrap(),
                (want.clone(), true),
                "cut {cut}"
            );
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(decode_all(&bytes).unwrap(), (want, true));
    }

    #[test]
    fn chunked_bodies_accept_bare_line_feeds_and_report_what_is_wrong() {
        assert_eq!(
            decode_all(&[b"3\nabc\n0\n\n"]).unwrap(),
            (b"abc".to_vec(), true)
        );
        assert_eq!(decode_all(&[b"3\r\nab"]).unwrap(), (b"ab".to_vec(), false));
        let err = |b: &[u8]| decode_all(&[b]).unwrap_err();
        assert!(err(b"zz\r\n").contains("in a chunk size"));
        assert!(err(b"\r\n").contains("without a size"));
        assert!(err(b"3\r\nabcX").contains("no line end"));
        assert!(err(b"fffffffffffffffff\r\n").contains("64 bits"));
    }

    fn framing(status: u16, headers: &[(&str, &str)]) -> Result<Framing, SendError> {
        let h: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        Framing::of(status, &h)
    }

    #[test]
    fn the_body_framing_follows_rfc_9112() {
        assert!(matches!(
            framing(
                200,
                &[("transfer-encoding", "chunked"), ("content-length", "5")]
            ),
            Ok(Framing::Chunked(_))
        ));
        assert!(matches!(
            framing(200, &[("content-length", "5")]),
            Ok(Framing::Length(5))
        ));
        assert!(matches!(
            framing(200, &[("content-length", "0")]),
            Ok(Framing::Done)
        ));
        assert!(matches!(framing(200, &[]), Ok(Framing::Close)));
        assert!(matches!(
            framing(200, &[("transfer-encoding", "gzip")]),
            Ok(Framing::Close)
        ));
        assert!(matches!(framing(204, &[]), Ok(Framing::Done)));
        assert!(framing(200, &[("content-length", "x")]).is_err());
        let e = framing(200, &[("content-encoding", "gzip")]).err().unwrap();
        assert!(e.0.contains("content-encoding: gzip"), "{}", e.0);
        assert!(matches!(
            framing(
                200,
                &[("content-encoding", "identity"), ("content-length", "2")]
            ),
            Ok(Framing::Length(2))
        ));
        // An error reply keeps its status even when a proxy compressed it.
        assert!(matches!(
            framing(
                503,
                &[("content-encoding", "gzip"), ("content-length", "9")]
            ),
            Ok(Framing::Length(9))
        ));
        assert!(matches!(
            framing(200, &[("content-length", "5, 5")]),
            Ok(Framing::Length(5))
        ));
        let e = framing(200, &[("content-length", "5"), ("content-length", "6")])
            .err()
            .unwrap();
        assert!(e.0.contains("\"5, 6\""), "{}", e.0);
    }

    #[test]
    fn bytes_past_the_body_end_are_reported() {
        let mut sink = |_: &[u8]| {};
        let mut f = Framing::Chunked(Chunked::default());
        assert!(!f.decode(b"3\r\nabc\r\n", &mut sink).unwrap());
        assert!(f.decode(b"0\r\n\r\nHTTP/1.1 200", &mut sink).unwrap());
        assert!(matches!(f, Framing::Done));
        let mut f = Framing::Chunked(Chunked::default());
        assert!(!f.decode(b"0\r\n\r\n", &mut sink).unwrap());
        assert!(f.decode(b"x", &mut sink).unwrap(), "after the end");
        let mut f = Framing::Length(3);
        assert!(!f.decode(b"ab", &mut sink).unwrap());
        assert!(f.decode(b"cd", &mut sink).unwrap());
    }
}
