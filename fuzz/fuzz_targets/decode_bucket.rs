//! Arbitrary bytes → `decode_bucket` (and the column decoders behind it): `Err` or a value,
//! never a panic. Logic in `fuzz/common/targets.rs`, replayed on stable by
//! `codec/tests/codec/fuzz_corpus.rs`.
#![no_main]

#[path = "../common/targets.rs"]
mod targets;

libfuzzer_sys::fuzz_target!(|data: &[u8]| targets::decode_bucket_target(data));
