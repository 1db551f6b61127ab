//! The seccomp step of the sandbox (the `seccompiler` crate): `ioctl`s that
//! push input into a terminal are refused with `EPERM`. `TIOCSTI` types
//! characters into a terminal's input queue (a command could type a command
//! line into the user's outside shell through an inherited terminal; root
//! may do it even where `dev.tty.legacy_tiocsti` is off), and `TIOCLINUX`
//! can paste the Linux console's selection into it. Codex's Linux sandbox
//! blocks the same.
use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("cannot build the seccomp filter against terminal injection: {0}")]
    Build(String),
    #[error("cannot install the seccomp filter against terminal injection: {0}")]
    Apply(seccompiler::Error),
}

/// The ioctl requests refused. (`libc::Ioctl` is `c_ulong` on glibc and
/// `c_int` on musl: the cast is needed on some targets.)
#[allow(clippy::unnecessary_cast)]
const DENIED_IOCTLS: [u64; 2] = [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// Installs the filter on the calling thread (the single-threaded launcher)
/// and so on everything it starts. Sets `no_new_privs` (Landlock did too).
pub fn deny_terminal_injection() -> Result<(), SeccompError> {
    let build = |e: seccompiler::BackendError| SeccompError::Build(e.to_string());
    let rules = DENIED_IOCTLS
        .iter()
        .map(|&request| {
            // The request is an `unsigned int` in the kernel: compare 32 bits.
            SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, request)
                .and_then(|c| SeccompRule::new(vec![c]))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(build)?;
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| SeccompError::Build(e.to_string()))?;
    let filter = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_ioctl, rules)]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(build)?;
    let program: BpfProgram = filter.try_into().map_err(build)?;
    seccompiler::apply_filter(&program).map_err(SeccompError::Apply)
}
