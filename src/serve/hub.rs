//! Several clients on one session (issue 46 item 6).
//!
//! A session lives in one connection's agent, its owner (the one whose
//! `session/new`, `session/load` or `session/resume` opened it as writer).
//! Another connection that loads it while it is live becomes a viewer: its
//! own agent replays the history read-only (never a second writer of the
//! log), and from then on the server
//! - hands the viewer's requests and notifications for the session to the
//!   owner's agent (ids rewritten, answers routed back to the viewer);
//! - copies every `session/update` of the live copy to every viewer, and
//!   each prompt (as `user_message_chunk`s) to the members that did not send it;
//! - sends `session/request_permission` to every member; the first answer
//!   is the one the agent gets, the others are told `$/cancel_request` and
//!   see the outcome in the `tool_call_update` that follows.
//!
//! Frames of a session go only to its owner and the connections that loaded
//! it: a connection that never named the session hears nothing of it.
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::{Value, json};

use super::conn::Conn;

struct Share {
    owner: Weak<Conn>,
    owner_id: String,
    viewers: Vec<Weak<Conn>>,
    /// Permission requests of the live copy not answered yet, by the
    /// owner's request id (JSON text): who was asked under which id.
    asks: HashMap<String, Vec<(Weak<Conn>, Value)>>,
    /// Asks answered by a viewer: the owner's own answer comes too late.
    answered: std::collections::HashSet<String>,
}

/// The outcome of a client's answer to a request of a session's agent.
pub enum Answer {
    /// Not a shared permission request: pass it on as usual.
    NotShared,
    /// The first answer: the agent gets it (under its own id); the other
    /// members are told the request is withdrawn.
    First,
    /// Someone answered first: dropped.
    Late,
}

/// The prefix of the ids the server makes; refused in clients' requests.
pub const ID_PREFIX: &str = "acp-coder-";

#[derive(Default)]
pub struct Hub {
    shares: Mutex<HashMap<String, Share>>,
    next: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hub {
    /// An id no client uses (`acp-coder-KIND-N`).
    pub fn fresh_id(&self, kind: &str) -> Value {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        Value::String(format!("{ID_PREFIX}{kind}-{n}"))
    }

    /// The connection the session is live in, if it is another than `conn`.
    pub fn owner_elsewhere(&self, session: &str, conn: &str) -> Option<Arc<Conn>> {
        let shares = lock(&self.shares);
        let share = shares.get(session)?;
        if share.owner_id == conn {
            return None;
        }
        share.owner.upgrade()
    }

    /// `conn`'s agent opened the session as its writer.
    pub fn own(&self, session: &str, conn: &Arc<Conn>) {
        let mut shares = lock(&self.shares);
        if let Some(s) = shares.get(session)
            && s.owner_id != conn.id
            && s.owner.strong_count() > 0
        {
            return;
        }
        shares.insert(
            session.to_owned(),
            Share {
                owner: Arc::downgrade(conn),
                owner_id: conn.id.clone(),
                viewers: Vec::new(),
                asks: HashMap::new(),
                answered: Default::default(),
            },
        );
    }

    /// `viewer` loads the session live elsewhere.
    pub fn join(&self, session: &str, viewer: &Arc<Conn>) {
        if let Some(s) = lock(&self.shares).get_mut(session) {
            s.viewers
                .retain(|v| v.upgrade().is_some_and(|v| v.id != viewer.id));
            s.viewers.push(Arc::downgrade(viewer));
        }
    }

    /// `conn` is done with the session: a viewer leaves; the owner closing
    /// it ends the sharing.
    pub fn leave(&self, session: &str, conn: &str) {
        let mut shares = lock(&self.shares);
        let Some(s) = shares.get_mut(session) else {
            return;
        };
        if s.owner_id == conn {
            shares.remove(session);
        } else {
            s.viewers
                .retain(|v| v.upgrade().is_some_and(|v| v.id != conn));
        }
    }

    /// A connection ended: its sessions are no longer live, it views none.
    pub fn ended(&self, conn: &str) {
        let mut shares = lock(&self.shares);
        shares.retain(|_, s| s.owner_id != conn);
        for s in shares.values_mut() {
            s.viewers
                .retain(|v| v.upgrade().is_some_and(|v| v.id != conn));
        }
    }

    /// The viewers of a session `owner` holds live.
    pub fn viewers(&self, session: &str, owner: &str) -> Vec<Arc<Conn>> {
        lock(&self.shares)
            .get(session)
            .filter(|s| s.owner_id == owner)
            .map(|s| s.viewers.iter().filter_map(Weak::upgrade).collect())
            .unwrap_or_default()
    }

    /// Every member of the session (owner first), but `except`.
    fn members(&self, session: &str, except: &str) -> Vec<Arc<Conn>> {
        let shares = lock(&self.shares);
        let Some(s) = shares.get(session) else {
            return Vec::new();
        };
        std::iter::once(&s.owner)
            .chain(&s.viewers)
            .filter_map(Weak::upgrade)
            .filter(|c| c.id != except)
            .collect()
    }

    /// A permission request of the live copy, asked of these members.
    pub fn ask(&self, session: &str, request: String, asked: Vec<(Weak<Conn>, Value)>) {
        if let Some(s) = lock(&self.shares).get_mut(session) {
            s.asks.insert(request, asked);
        }
    }

    /// A member's answer to request `request` (the owner's id, JSON text) of
    /// the session's agent. On the first, the others are told
    /// `$/cancel_request` under the id they were asked with.
    pub fn answer(&self, session: &str, request: &str, from: &str) -> Answer {
        let asked = {
            let mut shares = lock(&self.shares);
            let Some(s) = shares.get_mut(session) else {
                return Answer::NotShared;
            };
            match s.asks.remove(request) {
                Some(asked) => {
                    if from != s.owner_id {
                        s.answered.insert(request.to_owned());
                    }
                    asked
                }
                None if from == s.owner_id && s.answered.remove(request) => return Answer::Late,
                None => return Answer::NotShared,
            }
        };
        for (member, id) in asked {
            let Some(member) = member.upgrade() else {
                continue;
            };
            if member.id == from {
                continue;
            }
            member.forget_ask(&id);
            let cancel = json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}});
            member.sink(session).push(cancel.to_string().into());
        }
        Answer::First
    }

    /// The live copy's agent withdrew request `request` (its
    /// `$/cancel_request`, e.g. the turn was cancelled): the viewers asked
    /// the same question are told too, under their ids.
    pub fn withdraw(&self, owner: &str, request: &str) {
        let found = {
            let mut shares = lock(&self.shares);
            shares
                .iter_mut()
                .filter(|(_, s)| s.owner_id == owner)
                .find_map(|(session, s)| Some((session.clone(), s.asks.remove(request)?)))
        };
        let Some((session, asked)) = found else {
            return;
        };
        for (member, id) in asked {
            let Some(member) = member.upgrade() else {
                continue;
            };
            if member.id == owner {
                continue;
            }
            member.forget_ask(&id);
            let cancel = json!({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": id}});
            member.sink(&session).push(cancel.to_string().into());
        }
    }

    /// A prompt sent to a shared session, shown to the members that did
    /// not send it (ACP has no echo of prompts; `user_message_chunk` is how
    /// a replay shows them).
    pub fn echo_prompt(&self, session: &str, params: &Value, from: &str) {
        let members = self.members(session, from);
        if members.is_empty() {
            return;
        }
        let blocks = params
            .get("prompt")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for block in blocks
            .iter()
            .filter(|b| b.get("type").is_some_and(Value::is_string))
        {
            let update = json!({"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": session,
                "update": {"sessionUpdate": "user_message_chunk", "content": block}}});
            let frame: Arc<str> = update.to_string().into();
            for m in &members {
                m.sink(session).push(frame.clone());
            }
        }
    }
}
