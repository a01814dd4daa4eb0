//! Arbitrary rows of an arbitrary table (structured through `arbitrary`), in the typed layout,
//! through each protocol's encoder and decoded again: the same rows must come back (see
//! `fuzz/check.rs`). The first byte picks the protocol.
#![no_main]

#[path = "../alloc_cap.rs"]
mod alloc_cap;
#[path = "../check.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&choice, rest)) = data.split_first() else { return };
    check::differential(check::TARGETS[choice as usize % 5].1, rest);
});
