//! Replays the committed fuzz corpus of the `wire_decode` target (`fuzz/corpus/wire_decode/`)
//! on stable with the same logic as the cargo-fuzz target (`fuzz/common/wire_decode.rs`).

#[path = "../../fuzz/common/replay.rs"]
mod replay;
#[path = "../../fuzz/common/wire_decode.rs"]
mod wire_decode;

#[test]
fn wire_decode_corpus() {
    replay::replay(
        env!("CARGO_MANIFEST_DIR"),
        "wire_decode",
        wire_decode::wire_decode_target,
    );
}
