//! Arbitrary bytes → a stored bucket rollup (`BucketRollup::decode`, `RollupLayout`): `Err`
//! or a value, never a panic. Logic in `fuzz/common/rollup.rs`, replayed on stable by
//! `catalog/tests/catalog/fuzz_corpus.rs`.
#![no_main]

#[path = "../common/rollup.rs"]
mod rollup;

libfuzzer_sys::fuzz_target!(|data: &[u8]| rollup::decode_rollup_target(data));
