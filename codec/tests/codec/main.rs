//! The integration tests of the codec, one test binary: round trips (properties and real
//! samples), the golden files of every format version (`codec/tests/golden/`), corruption and
//! truncation, the entropy-coded ints and the committed fuzz corpus. Each file of this folder
//! is a module of it.
//!
//! The tests of one file: `cargo test -p tscoll-codec --test codec golden::`. proptest keeps the
//! seeds of past failures in `codec/tests/proptest-regressions/<module>.txt` (beside the
//! folder of this `main.rs`) and replays them before new cases.

/// Sample buckets (the golden cases) and comparisons.
mod common;

mod api;
mod coded_ints;
mod corruption;
mod fuzz_corpus;
mod golden;
mod real_samples;
mod roundtrip_proptest;
mod truncation;
