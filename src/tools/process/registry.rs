//! The registry of live process groups: what [`kill_all_children`] reaches at
//! agent exit.
use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, MutexGuard, PoisonError};

use crate::platform::process::{Signal, is_foreign_tree, release_tree, signal_tree};

static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::default);

/// Kill (`SIGKILL`) every process group still registered, i.e. every group
/// this process started and that is not finished yet. Meant for agent exit:
/// afterwards the registry is closed and any group registered later is killed
/// on the spot (a command racing with shutdown cannot slip through).
///
/// Idempotent, fast, synchronous. It takes a mutex, so call it from normal
/// code or a `tokio::signal` task, not from a raw `sigaction` handler.
pub fn kill_all_children() {
    REGISTRY.kill_all();
}

/// Track process group `pgid` so that [`kill_all_children`] reaches it.
/// Nonsensical ids (`<= 1`, or the agent's own group) are ignored.
pub fn register_group(pgid: i32) {
    REGISTRY.register(pgid);
}

/// Stop tracking `pgid`. Call it *before* reaping the group leader (after
/// which the id may be recycled), and after the group's last signal (on
/// Windows this closes the tree's Job Object, ending what is left in it).
pub fn unregister_group(pgid: i32) {
    REGISTRY.unregister(pgid);
    release_tree(pgid);
}

#[derive(Default)]
pub(super) struct Registry {
    state: Mutex<RegistryState>,
}

#[derive(Default)]
pub(super) struct RegistryState {
    pub(super) groups: HashSet<i32>,
    closed: bool,
}

impl Registry {
    pub(super) fn lock(&self) -> MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn register(&self, pgid: i32) {
        if !is_foreign_group(pgid) {
            tracing::warn!(pgid, "refusing to register a bogus process group");
            return;
        }
        let mut state = self.lock();
        if state.closed {
            drop(state);
            tracing::debug!(pgid, "registry closed (agent exiting): killing new group");
            kill_group(pgid, Signal::Kill);
        } else {
            state.groups.insert(pgid);
        }
    }

    pub(super) fn unregister(&self, pgid: i32) {
        self.lock().groups.remove(&pgid);
    }

    pub(super) fn kill_all(&self) {
        // The lock is held while signalling: an owner unregisters before it
        // reaps its leader, so no group id here can have been recycled.
        let mut state = self.lock();
        state.closed = true;
        for pgid in state.groups.drain() {
            kill_group(pgid, Signal::Kill);
        }
    }
}

/// A group id that is safe to signal: not 0/1 (which `killpg` treats as "my
/// group"/init) and not the agent's own group.
pub(super) fn is_foreign_group(pgid: i32) -> bool {
    is_foreign_tree(pgid)
}

/// Signals process group `pgid` (on Windows: ends its Job Object), unless
/// it is not ours to signal (0, 1, the agent's own group); a group that is
/// already gone is not an error.
pub fn kill_group(pgid: i32, signal: Signal) {
    signal_tree(pgid, signal);
}
