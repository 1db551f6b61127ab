//! The terminal side of the command-line subcommands (`exec`, `doctor`, `login`).
//!
//! In agent mode stdout carries protocol frames only and nothing here is used.
//! The subcommands print for a person, and this module is the one place that
//! writes to stdout for them (through an explicit locked writer, never
//! `println!`). It also decides on colour (only on a terminal, never with
//! `NO_COLOR`) and talks to the controlling terminal (`/dev/tty`) for prompts,
//! so prompts work with stdin and stdout redirected.
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};

/// One of the two output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// Whether this stream is a terminal.
    pub fn is_terminal(self) -> bool {
        match self {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        }
    }

    /// Whether to colour this stream: a terminal, and `NO_COLOR` unset or empty.
    pub fn wants_color(self) -> bool {
        color_allowed() && self.is_terminal()
    }

    /// Writes `text` and flushes. Errors (a closed pipe) are ignored: there is
    /// no one left to tell.
    pub fn write(self, text: &str) {
        match self {
            Stream::Stdout => {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(text.as_bytes());
                let _ = out.flush();
            }
            Stream::Stderr => {
                let mut err = std::io::stderr().lock();
                let _ = err.write_all(text.as_bytes());
                let _ = err.flush();
            }
        }
    }

    /// Writes `text` and a newline.
    pub fn line(self, text: &str) {
        self.write(&format!("{text}\n"));
    }
}

/// `NO_COLOR` (https://no-color.org): present and non-empty disables colour.
pub fn color_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// ANSI styles, applied only when enabled.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub enabled: bool,
}

impl Style {
    pub fn for_stream(stream: Stream) -> Self {
        Self {
            enabled: stream.wants_color(),
        }
    }
    fn wrap(self, code: &str, text: &str) -> String {
        if self.enabled && !text.is_empty() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
    pub fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
    pub fn italic_dim(self, text: &str) -> String {
        self.wrap("2;3", text)
    }
    pub fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }
    pub fn red(self, text: &str) -> String {
        self.wrap("31", text)
    }
    pub fn green(self, text: &str) -> String {
        self.wrap("32", text)
    }
    pub fn yellow(self, text: &str) -> String {
        self.wrap("33", text)
    }
    pub fn cyan(self, text: &str) -> String {
        self.wrap("36", text)
    }
}

/// The controlling terminal, for questions that must reach a person even when
/// stdin and stdout are redirected. `None` when there is none (CI, a pipe
/// from an editor, `setsid`).
pub struct Tty {
    reader: BufReader<File>,
    writer: File,
}

impl Tty {
    pub fn open() -> Option<Tty> {
        let (file, writer) = crate::platform::term::open()?;
        Some(Tty {
            reader: BufReader::new(file),
            writer,
        })
    }

    /// Whether a controlling terminal can be opened.
    pub fn available() -> bool {
        Tty::open().is_some()
    }

    /// Colour for text written to the terminal.
    pub fn style(&self) -> Style {
        Style {
            enabled: color_allowed(),
        }
    }

    pub fn write(&mut self, text: &str) {
        let _ = self.writer.write_all(text.as_bytes());
        let _ = self.writer.flush();
    }

    /// Asks and reads one line (without its newline); `None` at end of input.
    pub fn ask(&mut self, question: &str) -> Option<String> {
        self.write(question);
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
        }
    }

    /// Like [`Tty::ask`] with echo off (for secrets); the answer is never shown.
    pub fn ask_hidden(&mut self, question: &str) -> Option<String> {
        let quiet = crate::platform::term::echo_off(self.reader.get_ref());
        let answer = self.ask(question);
        if quiet.is_some() {
            drop(quiet);
            self.write(crate::platform::term::AFTER_HIDDEN);
        }
        answer
    }
}
