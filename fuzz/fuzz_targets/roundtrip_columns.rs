//! Structured columns (via `arbitrary`) → encode → decode → the same columns, bit for bit.
//! Logic in `fuzz/common/targets.rs`, replayed on stable by `codec/tests/codec/fuzz_corpus.rs`.
#![no_main]

#[path = "../common/targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::roundtrip_bytes(data));
