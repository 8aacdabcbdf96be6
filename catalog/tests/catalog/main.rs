//! The integration tests of the bucket catalog, one test binary: SPEC conformance of placement,
//! commits, collMod and reopening, the columnar staging against the row one, and the committed
//! fuzz corpus. Each file of this folder is a module of it. The loom model checks are a
//! binary of their own (`loom_commit.rs`, built with `--cfg loom`).
//!
//! The tests of one file: `cargo test -p tscoll-catalog --test catalog spec_collmod::`.
//! proptest keeps the seeds of past failures in `catalog/tests/proptest-regressions/<module>.txt`
//! (beside the folder of this `main.rs`) and replays them before new cases.

/// The set-up of the SPEC tests.
mod common;

mod commit_waits;
mod fuzz_corpus;
mod spec_collmod;
mod spec_commit_protocol;
mod spec_rehydration;
mod stage_rows_differential;
