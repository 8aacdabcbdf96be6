//! Replaying a committed fuzz corpus (`fuzz/corpus/<target>/`) on stable with `cargo test`:
//! shared by `codec/tests/codec/fuzz_corpus.rs`, `catalog/tests/catalog/fuzz_corpus.rs` and
//! `server/tests/fuzz_corpus.rs`.

#![allow(dead_code, unreachable_pub)]

use std::path::Path;

/// Runs `run` on every file of the corpus of `target` (under `fuzz/corpus/`, from the crate
/// at `manifest_dir`); panics when one panics or the corpus has fewer than 10 files.
pub fn replay(manifest_dir: &str, target: &str, run: fn(&[u8])) {
    let dir = Path::new(manifest_dir).join("../fuzz/corpus").join(target);
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
