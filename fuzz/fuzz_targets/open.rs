//! The open decoder: arbitrary bytes as a batch of messages, both layouts under `collect`, then
//! encoded and decoded again (see `fuzz/check.rs`).
#![no_main]

#[path = "../alloc_cap.rs"]
mod alloc_cap;
#[path = "../check.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::decode(ticdc_rs::Protocol::Open, data));
