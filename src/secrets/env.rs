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
use std::ffi::{CStr, c_char};
use std::sync::{Mutex, PoisonError};

static SAVED: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

unsafe extern "C" {
    static mut environ: *mut *mut c_char;
}

/// Removes the variables `names` from the process: their values are kept for
/// [`var`] and learned as secrets, their bytes in the original environment
/// block are overwritten, and they are unset. Returns how many were found.
///
/// # Safety
///
/// Must run before any other thread exists (it writes the environment, which
/// other threads could be reading with `getenv`).
pub unsafe fn scrub(names: &[String]) -> usize {
    let mut saved = SAVED.lock().unwrap_or_else(PoisonError::into_inner);
    let saved = saved.get_or_insert_with(HashMap::new);
    let mut found = 0;
    // SAFETY: `environ` is a NULL-terminated array of NUL-terminated strings
    // owned by the C library; no other thread touches it (caller's contract).
    // Each string's bytes after `NAME=` are ours to overwrite in place: the
    // string keeps its length (it just becomes `NAME=` followed by NULs).
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            let entry = *p;
            let bytes = CStr::from_ptr(entry).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                let name = String::from_utf8_lossy(&bytes[..eq]).into_owned();
                if names.contains(&name) {
                    let value = String::from_utf8_lossy(&bytes[eq + 1..]).into_owned();
                    let len = bytes.len() - eq - 1;
                    std::ptr::write_bytes(entry.add(eq + 1), 0, len);
                    if !value.is_empty() {
                        saved.insert(name, value);
                        found += 1;
                    }
                }
            }
            p = p.add(1);
        }
        for name in names {
            std::env::remove_var(name);
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
