//! Entropy-coded int sections ([`IntEncoding::Coded`]): chosen where they pay, bit-exact on
//! their edge cases (escapes to large values, all-equal runs, `i64` extremes, short sections,
//! common divisors), and corrupt in blobs older than format version 3.

use proptest::prelude::*;
use tscoll_codec::{
    Column, Error, FORMAT_VERSION, IntEncoding, decode_bucket, decode_column, encode_bucket,
    encode_column, tag,
};

use crate::common;

fn int_column(values: &[i64]) -> Column {
    let mut c = Column::new();
    values.iter().for_each(|&v| c.push_int(tag::INT64, v));
    c
}

/// The int lane's encoding and delta order.
fn int_layout(c: &Column) -> Option<(IntEncoding, u8)> {
    encode_column(c)
        .unwrap()
        .1
        .ints
        .map(|l| (l.encoding, l.order))
}

fn check(c: &Column) -> Result<(), TestCaseError> {
    let (body, layout) = encode_column(c).unwrap();
    prop_assert_eq!(body.len(), layout.encoded_len);
    let back = decode_column(&body, c.len()).unwrap();
    prop_assert!(back.bitwise_eq(c), "column body differs");
    let blob = encode_bucket(c.len(), &[("v", c)]).unwrap();
    let bucket = decode_bucket(&blob).unwrap();
    prop_assert!(bucket.columns[0].1.bitwise_eq(c), "blob differs");
    // Every prefix of the body is an error, never a panic.
    for len in [0, 1, body.len() / 2, body.len().saturating_sub(1)] {
        if len < body.len() {
            prop_assert!(decode_column(&body[..len], c.len()).is_err());
        }
    }
    Ok(())
}

/// A peaked step distribution: mostly 0 and ±1, sometimes ±2..5.
fn skewed_step() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => Just(0i64),
        4 => Just(1),
        4 => Just(-1),
        2 => Just(2),
        2 => Just(-2),
        1 => -5i64..6,
    ]
}

/// Rare values far from the others.
fn escape() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MAX),
        Just(0i64),
        any::<i64>(),
        -100_000i64..100_000,
    ]
}

/// `(step, escape, escape here?)` per row.
fn draws(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<(i64, i64, u8)>> {
    prop::collection::vec((skewed_step(), escape(), any::<u8>()), len)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Walks with peaked steps, and jumps to far values (at 0..8 % of the rows).
    #[test]
    fn walks_with_escapes_round_trip(
        start in any::<i64>(),
        rows in draws(0..1200),
        escape_per_256 in prop_oneof![Just(0u8), 1u8..20],
    ) {
        let mut v = start;
        let values: Vec<i64> = rows
            .iter()
            .map(|&(d, e, roll)| {
                v = if roll < escape_per_256 { e } else { v.wrapping_add(d) };
                v
            })
            .collect();
        check(&int_column(&values))?;
    }

    /// Values (not walks) from a small skewed alphabet over any base, with outliers.
    #[test]
    fn skewed_values_round_trip(
        base in any::<i64>(),
        rows in draws(0..1200),
        escape_per_256 in prop_oneof![Just(0u8), 1u8..10],
    ) {
        let values: Vec<i64> = rows
            .iter()
            .map(|&(d, e, roll)| if roll < escape_per_256 { e } else { base.wrapping_add(d.abs()) })
            .collect();
        check(&int_column(&values))?;
    }

    /// Walks on multiples of a divisor (up to 2^62), around any start.
    #[test]
    fn walks_on_a_divisor_round_trip(
        start in any::<i64>(),
        g in prop_oneof![2i64..1000, Just(1 << 40), Just(1 << 62), Just(3_600_000)],
        rows in draws(0..1200),
    ) {
        let mut v = start;
        let values: Vec<i64> = rows
            .iter()
            .map(|&(d, _, _)| {
                v = v.wrapping_add(d.wrapping_mul(g));
                v
            })
            .collect();
        check(&int_column(&values))?;
    }

    /// Sections about as short as entropy coding is tried for.
    #[test]
    fn short_sections_round_trip(start in -1000i64..1000, rows in draws(10..40)) {
        let mut v = start;
        let values: Vec<i64> = rows
            .iter()
            .map(|&(d, _, _)| {
                v += d;
                v
            })
            .collect();
        check(&int_column(&values))?;
    }

    /// Runs of one value with a few others, at the edges of the `i64` range.
    #[test]
    fn all_equal_and_extremes_round_trip(
        c in prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), any::<i64>()],
        len in 0usize..1200,
        outliers in prop::collection::vec((any::<usize>(), escape()), 0..4),
    ) {
        let mut values = vec![c; len];
        for (at, v) in outliers {
            if len > 0 {
                values[at % len] = v;
            }
        }
        check(&int_column(&values))?;
        // Alternating extremes with small steps: deltas wrap around the whole range.
        let alternating: Vec<i64> = (0..len as i64)
            .map(|i| if i % 3 == 0 { i64::MIN + i % 5 } else { i64::MAX - i % 7 })
            .collect();
        check(&int_column(&alternating))?;
    }

    /// The int lane between skips and other types (its count comes from the type stream).
    #[test]
    fn interrupted_walks_round_trip(start in any::<i32>(), rows in draws(0..1000)) {
        let mut c = Column::new();
        let mut v = i64::from(start);
        for (i, &(d, _, roll)) in rows.iter().enumerate() {
            v = v.wrapping_add(d);
            match roll % 16 {
                0 => c.push_missing(),
                1 => c.push_float(i as f64 / 8.0),
                _ => c.push_int(tag::INT32, v),
            }
        }
        check(&c)?;
    }
}

/// TSBS-like fields: integer walks in `[0, 100]`.
fn walk(rows: usize, seed: u64) -> Vec<i64> {
    let mut rng = common::Rng(seed);
    let mut w = rng.below(1601) as i64;
    (0..rows)
        .map(|_| {
            let step: i64 = (0..4).map(|_| rng.below(29) as i64 - 14).sum();
            w = (w + step).clamp(0, 1600);
            w / 16
        })
        .collect()
}

#[test]
fn coded_sections_are_chosen_where_they_pay() {
    for rows in [360, 1000] {
        let coded = (0..20)
            .filter(|&seed| {
                int_layout(&int_column(&walk(rows, seed))) == Some((IntEncoding::Coded, 1))
            })
            .count();
        assert!(coded >= 15, "{rows} rows: {coded} of 20 coded");
    }
    // Mostly 0 with rare bursts: values from their minimum (order 0), with raw bits.
    let mut rng = common::Rng(5);
    let bursts: Vec<i64> = (0..1000)
        .map(|_| match rng.below(100) {
            0..80 => 0,
            80..99 => 1 + rng.below(3) as i64,
            _ => 1 << 40,
        })
        .collect();
    assert_eq!(
        int_layout(&int_column(&bursts)),
        Some((IntEncoding::Coded, 0))
    );
    // Sums of a walk: their second differences are the walk's steps (order 2).
    let mut sum = 1_000_000i64;
    let sums: Vec<i64> = walk(1000, 9)
        .iter()
        .map(|&w| {
            sum += w;
            sum
        })
        .collect();
    assert_eq!(
        int_layout(&int_column(&sums)),
        Some((IntEncoding::Coded, 2))
    );
    check(&int_column(&sums)).unwrap();
    // Uniform noise and regular clocks stay bit-packed.
    let noise: Vec<i64> = (0..1000).map(|_| rng.below(1 << 20) as i64).collect();
    assert_eq!(
        int_layout(&int_column(&noise)).unwrap().0,
        IntEncoding::Packed
    );
    let clock: Vec<i64> = (0..1000).map(|i| 1_451_606_400_000 + 10_000 * i).collect();
    assert_eq!(
        int_layout(&int_column(&clock)).unwrap().0,
        IntEncoding::Packed
    );
    // Too short to pay for a table.
    assert_ne!(
        int_layout(&int_column(&walk(12, 3))).unwrap().0,
        IntEncoding::Coded
    );
}

#[test]
fn random_walks_cost_little_more_than_their_entropy() {
    let (mut bits, mut n) = (0usize, 0usize);
    for seed in 0..50 {
        let c = int_column(&walk(1000, seed));
        bits += 8 * encode_column(&c).unwrap().0.len();
        n += c.len();
    }
    let per_value = bits as f64 / n as f64;
    // The steps' entropy is about 2.1 bits; bit-packing their deltas costs 3.2.
    assert!(per_value < 2.45, "{per_value} bits/value");
}

#[test]
fn coded_sections_are_corrupt_before_version_3() {
    const { assert!(FORMAT_VERSION >= 3) };
    let c = int_column(&walk(360, 1));
    let mut blob = encode_bucket(360, &[("v", &c)]).unwrap();
    assert!(decode_bucket(&blob).is_ok());
    blob[4] = 2;
    common::fix_crc(&mut blob);
    assert!(
        matches!(decode_bucket(&blob), Err(Error::Corruption(_))),
        "{:?}",
        decode_bucket(&blob)
    );
}
