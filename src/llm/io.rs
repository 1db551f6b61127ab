//! The model I/O thread, and the queue that carries a reply's events from it
//! to the turn that asked for them.
//!
//! Why a thread of its own: a streamed reply costs, per chunk, a hand-off
//! between hyper's connection task and the task that reads the body. On the
//! agent's multi-threaded runtime those two tasks bounce between workers,
//! and waking the other worker (a futex and a context switch) cost more
//! than decoding the chunk: perf of a fast stream put the agent at 40 % of
//! the chunk rate a plain client reads (issue 7). On one current-thread
//! runtime that hand-off is a queue push. The events then cross to the
//! agent's runtime through [`queue`], which merges text arriving while the
//! turn is busy, so the turn wakes once per batch rather than per chunk.
//!
//! (Streams from plain `http://` servers now skip hyper altogether, see
//! [`super::h1`]; the thread still keeps each connection, pooled or not,
//! on the runtime that opened it, and keeps a stream's reads off the
//! runtime that runs tools and writes to the editor.)
//!
//! The thread only does HTTP and decoding; every decision stays with the
//! turn. Dropping a [`Receiver`] aborts the task feeding it, which drops the
//! request (cancel).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};

use futures::Stream;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

use super::{Event, LlmError};

/// Runs `fut` on the model I/O thread, started on first use (or on the
/// caller's runtime if that thread could not be started).
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match handle() {
        Some(h) => h.spawn(fut),
        None => tokio::spawn(fut),
    }
}

/// Whether the caller runs on the model I/O thread (not on the fallback of
/// the caller's runtime): only there may a reader block briefly.
pub fn on_io_thread() -> bool {
    std::thread::current().name() == Some(THREAD_NAME)
}

const THREAD_NAME: &str = "model-io";

fn handle() -> Option<&'static Handle> {
    static HANDLE: OnceLock<Option<Handle>> = OnceLock::new();
    HANDLE.get_or_init(start).as_ref()
}

fn start() -> Option<Handle> {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::warn!(error = %e, "no model I/O runtime; streaming on the main one");
            return None;
        }
    };
    let handle = rt.handle().clone();
    // The thread parks in `block_on` and runs what `spawn` hands it until the
    // process exits; it holds no resource that needs an orderly shutdown.
    let started = std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || rt.block_on(std::future::pending::<()>()));
    match started {
        Ok(_) => Some(handle),
        Err(e) => {
            tracing::warn!(error = %e, "no model I/O thread; streaming on the main runtime");
            None
        }
    }
}

type Item = Result<Event, LlmError>;

#[derive(Default)]
struct State {
    items: VecDeque<Item>,
    /// The sender is gone: after `items`, the stream ends.
    closed: bool,
    /// The receiver waiting for an item.
    waker: Option<Waker>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// A queue of one reply's events that merges consecutive text (and
/// consecutive reasoning) into one event while the receiver is busy.
pub fn queue() -> (Sender, Receiver) {
    let state = Arc::new(Mutex::new(State::default()));
    (Sender(state.clone()), Receiver { state, task: None })
}

pub struct Sender(Arc<Mutex<State>>);

impl Sender {
    /// Queues `items` (under one lock), merging text into the last queued
    /// text event, and wakes the receiver if it waits.
    pub fn send_all(&self, items: &mut Vec<Item>) {
        self.queue(items);
        self.signal();
    }

    pub fn send(&self, item: Item) {
        self.send_all(&mut vec![item]);
    }

    /// Queues `items` without waking the receiver: a reader with more input
    /// at hand queues it all and then calls [`Sender::signal`] once. Waking
    /// a receiver on another thread costs more than a chunk's decoding.
    pub fn queue(&self, items: &mut Vec<Item>) {
        if items.is_empty() {
            return;
        }
        let mut s = lock(&self.0);
        for item in items.drain(..) {
            push_merged(&mut s.items, item);
        }
    }

    /// Wakes the receiver if it waits and something is queued.
    pub fn signal(&self) {
        let waker = {
            let mut s = lock(&self.0);
            if s.items.is_empty() {
                return;
            }
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

fn push_merged(items: &mut VecDeque<Item>, item: Item) {
    match (items.back_mut(), item) {
        (Some(Ok(Event::Text(last))), Ok(Event::Text(more)))
        | (Some(Ok(Event::Reasoning(last))), Ok(Event::Reasoning(more))) => last.push_str(&more),
        (_, item) => items.push_back(item),
    }
}

impl Drop for Sender {
    fn drop(&mut self) {
        let waker = {
            let mut s = lock(&self.0);
            s.closed = true;
            s.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The turn's end of a [`queue`]; aborts the task feeding it when dropped.
pub struct Receiver {
    state: Arc<Mutex<State>>,
    task: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Ties the task that feeds this queue to the receiver's lifetime.
    pub fn owning(mut self, task: JoinHandle<()>) -> Receiver {
        self.task = Some(task);
        self
    }
}

impl Stream for Receiver {
    type Item = Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let mut s = lock(&self.state);
        if let Some(item) = s.items.pop_front() {
            return Poll::Ready(Some(item));
        }
        if s.closed {
            return Poll::Ready(None);
        }
        if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            s.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn text(t: &str) -> Item {
        Ok(Event::Text(t.into()))
    }

    #[tokio::test]
    async fn text_merges_while_the_receiver_is_busy() {
        let (tx, mut rx) = queue();
        tx.send_all(&mut vec![
            text("a"),
            text("b"),
            Ok(Event::Reasoning("r".into())),
        ]);
        tx.send(Ok(Event::Reasoning("s".into())));
        tx.send(text("c"));
        drop(tx);
        assert_eq!(rx.next().await.unwrap().unwrap(), Event::Text("ab".into()));
        assert_eq!(
            rx.next().await.unwrap().unwrap(),
            Event::Reasoning("rs".into())
        );
        assert_eq!(rx.next().await.unwrap().unwrap(), Event::Text("c".into()));
        assert!(rx.next().await.is_none());
    }

    #[tokio::test]
    async fn a_waiting_receiver_is_woken_across_runtimes() {
        let (tx, mut rx) = queue();
        let task = spawn(async move {
            tokio::task::yield_now().await;
            tx.send(text("from the I/O thread"));
        });
        let rx_task = rx.next();
        assert_eq!(
            rx_task.await.unwrap().unwrap(),
            Event::Text("from the I/O thread".into())
        );
        task.await.unwrap();
        assert!(rx.next().await.is_none());
    }

    #[tokio::test]
    async fn dropping_the_receiver_aborts_the_feeding_task() {
        let (tx, rx) = queue();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
        let task = spawn(async move {
            let _keep = (tx, done_tx);
            std::future::pending::<()>().await;
        });
        drop(rx.owning(task));
        // The task's captures (and so the oneshot sender) are dropped by the abort.
        assert!(done_rx.await.is_err());
    }
}
