//! Replays the committed fuzz corpus of the `decode_rollup` target (`fuzz/corpus/decode_rollup/`)
//! on stable with the same logic as the cargo-fuzz target (`fuzz/common/rollup.rs`).

#[path = "../../../fuzz/common/replay.rs"]
mod replay;
#[path = "../../../fuzz/common/rollup.rs"]
mod rollup;

#[test]
fn decode_rollup_corpus() {
    replay::replay(
        env!("CARGO_MANIFEST_DIR"),
        "decode_rollup",
        rollup::decode_rollup_target,
    );
}
