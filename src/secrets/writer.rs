//! A redacting `io::Write` for the log file and stderr: tracing's formatter
//! hands each event over in one `write`, so a secret is never split across
//! two calls.
use std::io::{self, Write};

/// Wraps a writer; each buffer it is given is redacted before it is passed on.
pub struct Writer<W>(pub W);

impl<W: Write> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = super::current();
        if r.is_empty() {
            self.0.write_all(buf)?;
        } else {
            let text = String::from_utf8_lossy(buf);
            self.0.write_all(r.redact(&text).as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_are_redacted() {
        super::super::learn(["log-secret-value-42".to_owned()]);
        let mut w = Writer(Vec::new());
        w.write_all(b"INFO got log-secret-value-42 back\n").unwrap();
        assert_eq!(w.0, b"INFO got [redacted] back\n");
    }
}
