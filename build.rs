//! Links the `acp-coder` executable at a fixed address (not PIE) on Linux.
//!
//! Why (issue 15, BENCHMARKS.md "start-up"): as a position-independent
//! executable the binary carries ~36,000 relative relocations (vtables,
//! `&'static str` tables, tracing call sites). The dynamic loader applies
//! them at every start, copying-on-write the ~150 pages of
//! `.data.rel.ro`/`.got`: about 1.5 ms of page faults per launch on the
//! benchmark machine and 1 MB of private memory per process. Editors start
//! the agent for every chat and the command sandbox re-executes it for
//! every command, so that cost is paid often. Linked at a fixed address
//! there is nothing to relocate. The objects stay position-independent
//! (rustc's default); only the final link changes.
//!
//! The trade-off is that the executable's own code is not randomised by
//! ASLR (the stack, heap, shared libraries and mappings still are); Go
//! links this way by default. Distributors whose policy requires PIE build
//! with `ACP_CODER_PIE=1` (SECURITY.md).
fn main() {
    println!("cargo:rerun-if-env-changed=ACP_CODER_PIE");
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let keep_pie = std::env::var_os("ACP_CODER_PIE").is_some_and(|v| v != "0" && !v.is_empty());
    if linux && !keep_pie {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
