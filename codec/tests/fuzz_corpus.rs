//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) on stable with the same logic as
//! the cargo-fuzz targets (`fuzz/common/targets.rs`).

#[path = "../../fuzz/common/targets.rs"]
mod targets;

use std::path::PathBuf;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_file() {
            let data = std::fs::read(&path).unwrap();
            let name = path.display().to_string();
            let result = std::panic::catch_unwind(|| run(&data));
            assert!(result.is_ok(), "{name} panics");
            n += 1;
        }
    }
    assert!(n >= 10, "{}: only {n} corpus files", dir.display());
}

#[test]
fn decode_bucket_corpus() {
    replay("decode_bucket", targets::decode_bucket_target);
}

#[test]
fn roundtrip_columns_corpus() {
    replay("roundtrip_columns", targets::roundtrip_bytes);
}
