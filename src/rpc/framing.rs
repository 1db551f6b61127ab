//! Newline-delimited frames with a size cap.
//!
//! `LinesCodec` stops yielding after an over-long line (see NOTES); this reader
//! reports the line as [`Frame::TooLong`], discards it without buffering it, and
//! carries on with the next line.
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line read from the input.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line without its terminator (`\n`, and a `\r` before it).
    Line(Vec<u8>),
    /// A line longer than the limit; its `len` bytes were discarded.
    TooLong { len: usize },
}

pub struct LineReader<R> {
    inner: R,
    max: usize,
    buf: Vec<u8>,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        Self {
            inner,
            max,
            buf: Vec::new(),
        }
    }

    /// The next frame, or `None` at end of input. A final line without `\n` counts.
    pub async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        self.buf.clear();
        let mut discarded: Option<usize> = None;
        loop {
            let available = self.inner.fill_buf().await?;
            if available.is_empty() {
                // EOF: flush a partial last line.
                return Ok(match discarded {
                    Some(len) => Some(Frame::TooLong { len }),
                    None if self.buf.is_empty() => None,
                    None => Some(Frame::Line(strip_cr(std::mem::take(&mut self.buf)))),
                });
            }
            let (chunk, found) = match memchr(available) {
                Some(i) => (&available[..i], Some(i)),
                None => (available, None),
            };
            match discarded.as_mut() {
                Some(len) => *len += chunk.len(),
                None if self.buf.len() + chunk.len() > self.max => {
                    discarded = Some(self.buf.len() + chunk.len());
                    self.buf = Vec::new();
                }
                None => self.buf.extend_from_slice(chunk),
            }
            let consumed = found.map_or(chunk.len(), |i| i + 1);
            self.inner.consume(consumed);
            if found.is_some() {
                return Ok(Some(match discarded {
                    Some(len) => Frame::TooLong { len },
                    None => Frame::Line(strip_cr(std::mem::take(&mut self.buf))),
                }));
            }
        }
    }
}

fn memchr(haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == b'\n')
}

fn strip_cr(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut reader = LineReader::new(tokio::io::BufReader::with_capacity(4, input), max);
        let mut out = Vec::new();
        while let Some(frame) = reader.next().await.unwrap() {
            out.push(frame);
        }
        out
    }

    #[tokio::test]
    async fn splits_lines_and_strips_crlf() {
        let got = frames(b"a\r\nbc\n\nlast", 100).await;
        assert_eq!(
            got,
            vec![
                Frame::Line(b"a".to_vec()),
                Frame::Line(b"bc".to_vec()),
                Frame::Line(Vec::new()),
                Frame::Line(b"last".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn too_long_line_is_reported_and_reading_continues() {
        let got = frames(b"0123456789abcdef\nok\n0123456789", 8).await;
        assert_eq!(
            got,
            vec![
                Frame::TooLong { len: 16 },
                Frame::Line(b"ok".to_vec()),
                Frame::TooLong { len: 10 },
            ]
        );
    }

    #[tokio::test]
    async fn exact_limit_is_accepted() {
        let got = frames(b"12345678\n", 8).await;
        assert_eq!(got, vec![Frame::Line(b"12345678".to_vec())]);
    }
}
