//! Relays a model's streamed text and thoughts to the editor, batching what
//! arrives faster than it could be written.
//!
//! The first chunk of a message goes out at once. After it, chunks are
//! appended to a buffer, and a small flusher task sends the buffer as one
//! `session/update` once the runtime has nothing else to run (it yields
//! once, and yielded tasks run when the worker is about to wait for I/O),
//! i.e. when the HTTP connection has no further chunk already read. So a
//! chunk that arrives alone goes out after one scheduler turn, while a
//! backlog (a model streaming faster than the editor is written to) becomes
//! one frame instead of thousands: perf of a fast stream had shown a
//! serialise-queue-write per chunk and, before this, a yield (and so an I/O
//! poll) per chunk. A batch is also sent when it reaches `MAX_BATCH` bytes,
//! and when the relay is dropped, which the model call does before it
//! returns (or is cancelled), so updates keep their order.
//!
//! Text passes a [`StreamRedactor`] per kind first: a secret the model repeats
//! (say, a key a command printed) is replaced even when it arrives split over
//! chunks; the few bytes that could start a secret wait for the next chunk or
//! the end of the message (SECURITY.md §3).
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::acp::SessionUpdate;
use crate::editor::Editor;
use crate::secrets::StreamRedactor;

/// Largest batch, in bytes of text.
const MAX_BATCH: usize = 4096;

/// Largest piece of text relayed at once. The model client hands over
/// everything it has read in one event (up to about a megabyte when the
/// model outpaces us); relaying it in pieces, each after the queue to the
/// editor has room (`Editor::writable`), keeps frames small and the queue
/// bounded, so a response (e.g. to `session/cancel`) never waits behind a
/// megabyte frame (issue 14, "bounded memory").
const PIECE: usize = 16 * 1024;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Thought,
}

struct Buffer {
    kind: Kind,
    text: String,
    text_started: bool,
    thought_started: bool,
    text_guard: StreamRedactor,
    thought_guard: StreamRedactor,
}

impl Buffer {
    fn guard(&mut self, kind: Kind) -> &mut StreamRedactor {
        match kind {
            Kind::Text => &mut self.text_guard,
            Kind::Thought => &mut self.thought_guard,
        }
    }
}

struct Shared {
    editor: Editor,
    text_id: String,
    thought_id: String,
    buffer: Mutex<Buffer>,
    wake: Notify,
}

/// The relay of one model call; flushes and stops its task when dropped.
pub struct Relay {
    shared: Arc<Shared>,
    flusher: tokio::task::JoinHandle<()>,
}

impl Relay {
    pub fn new(editor: &Editor, text_id: &str, thought_id: &str) -> Relay {
        let shared = Arc::new(Shared {
            editor: editor.clone(),
            text_id: text_id.to_owned(),
            thought_id: thought_id.to_owned(),
            buffer: Mutex::new(Buffer {
                kind: Kind::Text,
                text: String::new(),
                text_started: false,
                thought_started: false,
                text_guard: StreamRedactor::default(),
                thought_guard: StreamRedactor::default(),
            }),
            wake: Notify::new(),
        });
        let s = shared.clone();
        let flusher = tokio::spawn(async move {
            loop {
                s.wake.notified().await;
                // Run again only once everything runnable now has run.
                tokio::task::yield_now().await;
                s.flush();
            }
        });
        Relay { shared, flusher }
    }

    pub async fn text(&self, text: String) {
        self.paced(Kind::Text, text).await;
    }

    pub async fn thought(&self, text: String) {
        self.paced(Kind::Thought, text).await;
    }

    /// Pushes `text` in pieces of at most [`PIECE`] bytes, each once the
    /// editor's queue has room.
    async fn paced(&self, kind: Kind, text: String) {
        if text.len() <= PIECE {
            self.shared.editor.writable().await;
            self.push(kind, text);
            return;
        }
        let mut rest = text.as_str();
        while !rest.is_empty() {
            let cut = crate::utf8::floor_boundary(rest, PIECE);
            let (piece, tail) = rest.split_at(cut);
            self.shared.editor.writable().await;
            self.push(kind, piece.to_owned());
            rest = tail;
        }
    }

    fn push(&self, kind: Kind, text: String) {
        if text.is_empty() {
            return;
        }
        let mut b = self.shared.lock();
        if b.kind != kind {
            self.shared.finish(&mut b);
            b.kind = kind;
        }
        let text = b.guard(kind).push_string(text);
        if text.is_empty() {
            return;
        }
        let started = match kind {
            Kind::Text => std::mem::replace(&mut b.text_started, true),
            Kind::Thought => std::mem::replace(&mut b.thought_started, true),
        };
        if !started {
            // The first chunk of a message goes out alone, at once.
            self.shared.update(kind, text);
            return;
        }
        let was_empty = b.text.is_empty();
        b.text.push_str(&text);
        if b.text.len() >= MAX_BATCH {
            self.shared.send(&mut b);
        } else if was_empty {
            drop(b);
            self.shared.wake.notify_one();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.flusher.abort();
        let mut b = self.shared.lock();
        self.shared.finish(&mut b);
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Buffer> {
        self.buffer.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn flush(&self) {
        let mut b = self.lock();
        self.send(&mut b);
    }

    /// Sends the buffer and what the current kind's redactor still holds
    /// (its message ended).
    fn finish(&self, b: &mut Buffer) {
        let kind = b.kind;
        let tail = b.guard(kind).finish();
        if tail.is_empty() {
            self.send(b);
            return;
        }
        let started = match kind {
            Kind::Text => std::mem::replace(&mut b.text_started, true),
            Kind::Thought => std::mem::replace(&mut b.thought_started, true),
        };
        if started {
            b.text.push_str(&tail);
            self.send(b);
        } else {
            self.update(kind, tail);
        }
    }

    /// Sends the buffer; called with the lock held, so that sends keep the
    /// order in which the text arrived.
    fn send(&self, b: &mut Buffer) {
        if !b.text.is_empty() {
            let text = std::mem::take(&mut b.text);
            self.update(b.kind, text);
        }
    }

    fn update(&self, kind: Kind, text: String) {
        let update = match kind {
            Kind::Text => SessionUpdate::agent_text(text, Some(self.text_id.clone())),
            Kind::Thought => SessionUpdate::agent_thought(text, Some(self.thought_id.clone())),
        };
        self.editor.update(&update);
    }
}
