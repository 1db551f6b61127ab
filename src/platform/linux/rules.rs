//! The Landlock step of the sandbox (the `landlock` crate, best effort up to
//! [`TARGET_ABI`]): the launcher restricts itself, and so everything it
//! starts, to writing beneath the given trees and the usual devices; reads
//! and execution stay allowed everywhere. Connecting to abstract UNIX
//! sockets made outside the sandbox (X11's `@/tmp/.X11-unix/X0`, a D-Bus
//! bus) is denied (ABI ≥ 6), the network on or off; with it off, TCP
//! `bind` and `connect` are denied too (ABI ≥ 4).
use std::path::PathBuf;

use landlock::{
    ABI, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

/// The newest Landlock ABI whose rights this code knows and is tested with.
/// (ABI 9 adds `ResolveUnix`, which would cut commands off from ssh-agent,
/// D-Bus and Docker sockets: a behaviour change to decide on, not inherit.)
pub const TARGET_ABI: ABI = ABI::V7;
/// Below this ABI truncation (ABI 3) is not controlled: no sandbox then.
pub const MIN_ABI: i32 = 3;

/// Devices every command may write (and `ioctl`, for terminals).
const DEVICES: [&str; 9] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error(
        "Landlock is not available (kernel Landlock ABI {0}; the sandbox needs ABI {MIN_ABI}, Linux 6.2 or newer, with `landlock` in the boot parameter lsm=)"
    )]
    Unavailable(i32),
    #[error(
        "the network cannot be turned off for commands: Landlock ABI {0} has no network rules (needs 4, Linux 6.7) and no network namespace could be made; set sandbox_network = true or upgrade the kernel"
    )]
    NoNetworkRules(i32),
    #[error("Landlock refused the rules: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("Landlock did not enforce the rules")]
    NotEnforced,
}

/// The kernel's Landlock ABI version (0 when Landlock is missing or disabled).
pub fn kernel_abi() -> i32 {
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION with a null attribute only
    // returns the version (or -1 with ENOSYS/EOPNOTSUPP).
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}

/// Restricts the calling thread (the single-threaded launcher) and its future
/// children. `netns`: a fresh network namespace already cuts the network off.
pub fn restrict(writable: &[PathBuf], network: bool, netns: bool) -> Result<(), RulesError> {
    let kernel = kernel_abi();
    if kernel < MIN_ABI {
        return Err(RulesError::Unavailable(kernel));
    }
    if !network && kernel < 4 && !netns {
        return Err(RulesError::NoNetworkRules(kernel));
    }
    let abi = TARGET_ABI;
    let write = AccessFs::from_write(abi);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(write)?
        .scope(Scope::AbstractUnixSocket)?;
    if !network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let status = ruleset
        .create()?
        .add_rules(path_beneath_rules(writable, write))?
        .add_rules(path_beneath_rules(DEVICES, write))?
        .restrict_self()?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(RulesError::NotEnforced);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_kernel_reports_an_abi() {
        // 0 where Landlock is missing; otherwise a small positive version.
        let v = kernel_abi();
        assert!((0..100).contains(&v), "{v}");
        assert!(AccessFs::from_write(TARGET_ABI).contains(AccessFs::Truncate));
    }
}
