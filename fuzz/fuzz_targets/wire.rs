//! Fuzzes everything the agent does with the bytes an editor sends before any
//! handler runs: line framing, envelope classification, and decoding the
//! params (or results) of every method into the agent's own types. The
//! invariants are in `acp_coder::agent::decode::check_input`; the corpus replay
//! test in the main crate runs the same function on every corpus file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acp_coder::agent::decode::fuzz_one(data);
});
