//! Logic of the `decode_rollup` fuzz target, shared by `fuzz/fuzz_targets/decode_rollup.rs`
//! (cargo-fuzz, nightly) and by `catalog/tests/catalog/fuzz_corpus.rs` (replays the committed
//! corpus on stable with `cargo test`).

#![allow(dead_code, unreachable_pub)]

use tscoll_catalog::{BucketRollup, RollupLayout, RollupNames};

/// Arbitrary bytes as a stored bucket rollup (the first byte picks the resolution): `Err`, or
/// a rollup whose encoding decodes back to the same encoding; reading the layout and every
/// field never panics either.
pub fn decode_rollup_target(data: &[u8]) {
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let res = [1_i64, 1000, 60_000, 3_600_000, 86_400_000, i64::MAX][usize::from(pick % 6)];
    let names = |_: u32, n: usize| {
        if n > 1 << 16 {
            return Err("too many names".to_owned());
        }
        Ok((0..n).map(|i| format!("f{i}")).collect())
    };
    let mut layout = RollupLayout::default();
    if let Ok(kind) = layout.read(res, bytes) {
        let mut out = Vec::new();
        for j in 0..layout.fields() {
            let _ = layout.read_field(bytes, j, &mut out);
        }
        assert!(matches!(
            kind,
            RollupNames::Inline(_) | RollupNames::Hashed(..)
        ));
    }
    if let Ok(rollup) = BucketRollup::decode(res, bytes, names) {
        let hashed = match layout.read(res, bytes) {
            Ok(RollupNames::Hashed(h, _)) => Some(h),
            _ => None,
        };
        let again = rollup.encode(res, hashed);
        let back = BucketRollup::decode(res, &again, names).expect("a re-encoded rollup decodes");
        assert_eq!(back.encode(res, hashed), again);
    }
}
