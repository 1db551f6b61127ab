//! A session's turns: the prompts registered in arrival order (the first
//! runs, the rest wait in line), `session/cancel` stopping the running one
//! only, and the steering messages (`_session/steering`) waiting for the
//! running turn's next model boundary.
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::acp::ContentBlock;

/// What became of a steering message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteerFate {
    /// A turn took it at a model boundary: the model reads it next.
    Delivered,
    /// Every turn ended, none cancelled, before one took it (it came as
    /// the last one finished): the caller treats the session as idle.
    Missed,
    /// The turns ended by `session/cancel` (or a close) before one took it.
    Cancelled,
}

/// A steering message waiting for a model boundary.
pub struct Steer {
    pub prompt: Vec<ContentBlock>,
    fate: oneshot::Sender<SteerFate>,
}

impl Steer {
    /// Tells the sender its message reached the model.
    pub fn delivered(self) {
        let _ = self.fate.send(SteerFate::Delivered);
    }
}

#[derive(Default)]
struct Inner {
    /// Registered turns in arrival order: the first is the running one.
    turns: Vec<(u64, CancellationToken)>,
    steering: Vec<Steer>,
}

/// The turns of one session (see the module docs).
#[derive(Default)]
pub struct Turns {
    inner: Mutex<Inner>,
    seq: AtomicU64,
    /// Woken whenever a turn ends, so the next in line looks again.
    ended: Notify,
}

impl Turns {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a turn at the end of the line: its number, its token, and
    /// how many turns are ahead of it.
    pub fn register(&self) -> (u64, CancellationToken, usize) {
        let token = CancellationToken::new();
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let mut inner = self.lock();
        let ahead = inner.turns.len();
        inner.turns.push((seq, token.clone()));
        (seq, token, ahead)
    }

    /// Ends turn `seq`. When it was the last one, steering messages nobody
    /// took are answered: cancelled if it was, missed otherwise.
    pub fn end(&self, seq: u64) {
        let (left, cancelled) = {
            let mut inner = self.lock();
            let cancelled = inner
                .turns
                .iter()
                .any(|(s, t)| *s == seq && t.is_cancelled());
            inner.turns.retain(|(s, _)| *s != seq);
            let left = if inner.turns.is_empty() {
                std::mem::take(&mut inner.steering)
            } else {
                Vec::new()
            };
            (left, cancelled)
        };
        let fate = if cancelled {
            SteerFate::Cancelled
        } else {
            SteerFate::Missed
        };
        for steer in left {
            let _ = steer.fate.send(fate);
        }
        self.ended.notify_waiters();
    }

    /// Waits until turn `seq` is first in line (prompts run in the order
    /// they arrived); `false` when it was cancelled while waiting.
    pub async fn wait_for_turn(&self, seq: u64, token: &CancellationToken) -> bool {
        loop {
            let ended = self.ended.notified();
            tokio::pin!(ended);
            // Registered before the check, so an end in between still wakes us.
            ended.as_mut().enable();
            if self.lock().turns.first().is_none_or(|(s, _)| *s == seq) {
                return true;
            }
            tokio::select! {
                biased;
                _ = token.cancelled() => return false,
                _ = ended => {}
            }
        }
    }

    /// `session/cancel`: stops the running turn (the first in line); the
    /// prompts waiting behind it stay queued.
    pub fn cancel_running(&self) {
        if let Some((_, token)) = self.lock().turns.first() {
            token.cancel();
        }
    }

    /// Stops every turn, running and queued (close, delete, shutdown).
    pub fn cancel_all(&self) {
        for (_, token) in self.lock().turns.iter() {
            token.cancel();
        }
    }

    /// How many turns are registered (running and queued).
    pub fn len(&self) -> usize {
        self.lock().turns.len()
    }

    /// Hands a steering message to the running turn; `None` when the
    /// session is idle. The receiver learns its fate.
    pub fn steer(&self, prompt: Vec<ContentBlock>) -> Option<oneshot::Receiver<SteerFate>> {
        let mut inner = self.lock();
        if inner.turns.is_empty() {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        inner.steering.push(Steer { prompt, fate: tx });
        Some(rx)
    }

    /// The steering messages waiting, oldest first (taken at a model boundary).
    pub fn take_steering(&self) -> Vec<Steer> {
        std::mem::take(&mut self.lock().steering)
    }

    /// Whether a steering message is waiting.
    pub fn has_steering(&self) -> bool {
        !self.lock().steering.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn line_order_cancel_and_steering() {
        let turns = Turns::default();
        assert!(turns.steer(vec![]).is_none(), "idle: nothing to steer");
        let (a, ta, ahead_a) = turns.register();
        let (b, tb, ahead_b) = turns.register();
        assert_eq!((ahead_a, ahead_b), (0, 1));
        assert!(turns.wait_for_turn(a, &ta).await);
        // Cancel stops the running turn only.
        turns.cancel_running();
        assert!(ta.is_cancelled() && !tb.is_cancelled());
        let rx = turns.steer(vec![ContentBlock::text("also")]).unwrap();
        turns.end(a);
        // b is next in line, and the message waits for it.
        assert!(turns.wait_for_turn(b, &tb).await);
        assert!(turns.has_steering());
        for s in turns.take_steering() {
            s.delivered();
        }
        assert_eq!(rx.await.unwrap(), SteerFate::Delivered);
        let rx = turns.steer(vec![]).unwrap();
        turns.end(b);
        assert_eq!(rx.await.unwrap(), SteerFate::Missed);
        assert_eq!(turns.len(), 0);
    }
}
