//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) on stable with the same logic as
//! the cargo-fuzz targets (`fuzz/common/targets.rs`).

#[path = "../../../fuzz/common/targets.rs"]
mod targets;

#[path = "../../../fuzz/common/replay.rs"]
mod replay;

fn replay(target: &str, run: fn(&[u8])) {
    replay::replay(env!("CARGO_MANIFEST_DIR"), target, run);
}

#[test]
fn decode_bucket_corpus() {
    replay("decode_bucket", targets::decode_bucket_target);
}

#[test]
fn roundtrip_columns_corpus() {
    replay("roundtrip_columns", targets::roundtrip_bytes);
}
