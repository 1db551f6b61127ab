//! Taking secrets out of the agent's process image (issue 14, SECURITY.md §3).
//!
//! `/proc/<pid>/environ` shows the environment block the kernel copied onto
//! the stack at `execve`, not the C library's current `environ` list, so
//! `unsetenv` alone leaves the key readable by any same-user process (a
//! command the model runs could read `/proc/$PPID/environ`). The value bytes
//! in that block are therefore overwritten with NULs, then the variable is
//! removed; the agent keeps the value in memory for itself ([`var`]).
//!
//! The process is also marked non-dumpable (`platform::harden`; on Linux
//! `PR_SET_DUMPABLE` 0): its
//! `/proc/<pid>/{environ,mem,maps,…}` then belong to root and it cannot be
//! ptrace-attached, so a same-user child cannot read its memory either. The
//! flag is not inherited across `execve`, so the commands and servers it
//! starts are ordinary processes. Root (CAP_SYS_PTRACE) is not stopped by it.
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

static SAVED: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// Removes the variables `names` from the process: their values are kept for
/// [`var`] and learned as secrets, their bytes in the original environment
/// block are overwritten where the system has one that others can read
/// (`platform::harden::take_env`), and they are unset. Returns how many were
/// found.
///
/// # Safety
///
/// Must run before any other thread exists (it writes the environment, which
/// other threads could be reading with `getenv`).
pub unsafe fn scrub(names: &[String]) -> usize {
    let mut saved = SAVED.lock().unwrap_or_else(PoisonError::into_inner);
    let saved = saved.get_or_insert_with(HashMap::new);
    // SAFETY: the caller's contract is take_env's.
    let taken = unsafe { crate::platform::harden::take_env(names) };
    let mut found = 0;
    for (name, value) in taken {
        if !value.is_empty() {
            saved.insert(name, value);
            found += 1;
        }
    }
    super::learn(saved.values().cloned());
    found
}

/// An environment variable as the process started with it: a scrubbed one
/// from memory, any other from the environment. Empty values count as unset.
pub fn var(name: &str) -> Option<String> {
    let saved = SAVED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .and_then(|m| m.get(name).cloned());
    saved
        .or_else(|| std::env::var(name).ok())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unscrubbed_variables_come_from_the_environment() {
        assert_eq!(var("ACP_CODER_SURELY_UNSET_VARIABLE"), None);
        assert!(var("PATH").is_some());
    }
}
