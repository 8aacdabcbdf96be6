//! Operations on a collection decoded from the input (inserts, queries, deletes, meta-only
//! updates, TTL passes, collMod, close and reopen, log checkpoints, crash and restart),
//! applied to the engine in a temporary directory and to an in-memory model; any divergence
//! panics (SPEC §10, §11, §12, §14; recovery, `docs/durability.md`). Logic
//! in `fuzz/common/engine_ops.rs`, run on stable by `tests/tests/end_to_end/model_ops.rs`, which
//! also replays the committed corpus.
#![no_main]

#[path = "../common/engine_ops.rs"]
mod engine_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    engine_ops::run_bytes(data);
});
