//! Property tests: random columns of every lane and pattern round-trip bit for bit, through
//! a whole blob and through a single column body.

use proptest::prelude::*;
use tscoll_codec::{
    Column, RowStart, decode_bucket, decode_column, encode_bucket, encode_column, tag,
};

use crate::common;

/// One row's value, by kind.
#[derive(Clone, Debug)]
enum Row {
    Missing,
    Empty(u8),
    Int(u8, i64),
    Float(f64),
    Bytes(u8, Vec<u8>),
}

fn push(c: &mut Column, r: &Row) {
    match r {
        Row::Missing => c.push_missing(),
        Row::Empty(t) => c.push_empty(*t),
        Row::Int(t, v) => c.push_int(*t, *v),
        Row::Float(v) => c.push_float(*v),
        Row::Bytes(t, b) => c.push_bytes(*t, b),
    }
}

fn int_type() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![
        tag::INT32,
        tag::INT64,
        tag::DATETIME,
        tag::TIMESTAMP,
        tag::BOOLEAN,
    ])
}

fn bytes_type() -> impl Strategy<Value = u8> {
    prop::sample::select(vec![
        tag::STRING,
        tag::DOCUMENT,
        tag::ARRAY,
        tag::BINARY,
        tag::OBJECT_ID,
        tag::REGEX,
        tag::DB_POINTER,
        tag::JAVASCRIPT,
        tag::SYMBOL,
        tag::JAVASCRIPT_WITH_SCOPE,
        tag::DECIMAL128,
    ])
}

fn special_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        any::<u64>()
            .prop_map(|p| f64::from_bits(0x7FF0_0000_0000_0001 | (p & 0x800F_FFFF_FFFF_FFFF))),
        Just(-0.0),
        Just(0.0),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(5e-324),
        Just(f64::MAX),
    ]
}

/// A scalar value of any kind (fully random).
/// Up to 60 rows: of any types, or all of one type (a column of one lane, or of none).
fn mixed_or_one_type_rows() -> impl Strategy<Value = Vec<Row>> {
    prop_oneof![
        prop::collection::vec(any_row(), 0..60),
        (int_type(), prop::collection::vec(any::<i64>(), 0..60))
            .prop_map(|(t, v)| v.into_iter().map(|x| Row::Int(t, x)).collect()),
        prop::collection::vec(any::<u64>(), 0..60).prop_map(|v| v
            .into_iter()
            .map(|b| Row::Float(f64::from_bits(b)))
            .collect()),
        (0usize..60).prop_map(|n| vec![Row::Empty(tag::NULL); n]),
        (
            bytes_type(),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..12), 0..60)
        )
            .prop_map(|(t, v)| v.into_iter().map(|b| Row::Bytes(t, b)).collect()),
    ]
}

fn any_row() -> impl Strategy<Value = Row> {
    prop_oneof![
        Just(Row::Missing),
        prop::sample::select(vec![tag::NULL, tag::UNDEFINED, tag::MIN_KEY, tag::MAX_KEY])
            .prop_map(Row::Empty),
        (int_type(), any::<i64>()).prop_map(|(t, v)| Row::Int(t, v)),
        any::<u64>().prop_map(|b| Row::Float(f64::from_bits(b))),
        special_float().prop_map(Row::Float),
        (bytes_type(), prop::collection::vec(any::<u8>(), 0..40))
            .prop_map(|(t, b)| Row::Bytes(t, b)),
    ]
}

/// A column following one realistic pattern, with random skips and intruders.
fn pattern_column(rows: usize) -> impl Strategy<Value = Column> {
    let pattern = prop_oneof![
        // Regular or jittered timestamps.
        (
            any::<i64>(),
            prop::sample::select(vec![1i64, 1000, 60_000, 3_600_000]),
            0u32..3
        )
            .prop_map(|(base, step, jitter)| (0, base, step, jitter)),
        // Decimals with 0..4 digits.
        (-1_000_000i64..1_000_000, 0i64..4, 0u32..2).prop_map(|(b, e, n)| (1, b, e, n)),
        // Repeated strings.
        (0i64..1000, 1i64..6, 0u32..1).prop_map(|(b, k, _)| (2, b, k, 0)),
        // ObjectIds.
        (any::<u32>().prop_map(i64::from), 1i64..3, 0u32..1).prop_map(|(b, s, _)| (3, b, s, 0)),
        // Small ints with a common divisor.
        (any::<i32>().prop_map(i64::from), 1i64..5, 0u32..1).prop_map(|(b, g, _)| (4, b, g, 0)),
    ];
    (
        pattern,
        prop::collection::vec((0u8..100, any::<u64>(), any_row()), rows..=rows),
        0u8..40,
        0u8..20,
    )
        .prop_map(|((kind, base, k, flag), draws, skip_pct, mix_pct)| {
            let mut c = Column::new();
            for (i, (roll, rnd, intruder)) in draws.into_iter().enumerate() {
                let i64i = i as i64;
                if roll < skip_pct {
                    c.push_missing();
                    continue;
                }
                if roll >= 100 - mix_pct {
                    push(&mut c, &intruder);
                    continue;
                }
                match kind {
                    0 => {
                        let jitter = if flag == 0 { 0 } else { (rnd % 1000) as i64 };
                        c.push_int(
                            tag::DATETIME,
                            base.wrapping_add(k.wrapping_mul(i64i)).wrapping_add(jitter),
                        );
                    }
                    1 => {
                        let d = base + (rnd % 2000) as i64 - 1000;
                        let mut v = d as f64 / 10f64.powi(k as i32);
                        if flag == 1 && rnd % 7 == 0 {
                            v = f64::from_bits(v.to_bits().wrapping_add(rnd % 5).wrapping_sub(2));
                        }
                        if rnd % 11 == 0 {
                            c.push_int(tag::INT32, d);
                        } else {
                            c.push_float(v);
                        }
                    }
                    2 => {
                        let s = format!("word-{}", base + (rnd % k as u64) as i64);
                        c.push_bytes(tag::STRING, s.as_bytes());
                    }
                    3 => {
                        let id =
                            common::object_id(base as u32 + (i as u32) / 10, (i as u32) * k as u32);
                        c.push_bytes(tag::OBJECT_ID, &id);
                    }
                    _ => c.push_int(tag::INT32, base + k * 1000 * (rnd % 50) as i64),
                }
            }
            c
        })
}

fn rows_strategy() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..5, 5usize..300, Just(128), Just(129), Just(1000)]
}

fn bucket_strategy() -> impl Strategy<Value = (usize, Vec<Column>)> {
    rows_strategy().prop_flat_map(|rows| {
        let col = prop_oneof![
            3 => pattern_column(rows),
            1 => prop::collection::vec(any_row(), rows..=rows).prop_map(|rs| {
                let mut c = Column::new();
                rs.iter().for_each(|r| push(&mut c, r));
                c
            }),
        ];
        (Just(rows), prop::collection::vec(col, 0..5))
    })
}

fn check(rows: usize, cols: &[Column]) -> Result<(), TestCaseError> {
    let names: Vec<String> = (0..cols.len()).map(|i| format!("field{i}")).collect();
    let pairs: Vec<(&str, &Column)> = names.iter().map(String::as_str).zip(cols).collect();
    let blob = encode_bucket(rows, &pairs).unwrap();
    let bucket = decode_bucket(&blob).unwrap();
    prop_assert_eq!(bucket.row_count, rows);
    prop_assert_eq!(bucket.columns.len(), cols.len());
    for ((name, got), (want_name, want)) in bucket.columns.iter().zip(&pairs) {
        prop_assert_eq!(name, want_name);
        prop_assert!(got.bitwise_eq(want), "column {} differs", name);
    }
    for c in cols {
        let (body, layout) = encode_column(c).unwrap();
        prop_assert_eq!(body.len(), layout.encoded_len);
        prop_assert!(decode_column(&body, rows).unwrap().bitwise_eq(c));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn buckets_round_trip((rows, cols) in bucket_strategy()) {
        check(rows, &cols)?;
    }

    /// `gather` takes rows as pushing them one by one would; `pop_row` undoes a push.
    #[test]
    fn gather_and_pop_row_agree_with_pushing_rows(
        rows in mixed_or_one_type_rows(),
        order in prop::collection::vec(0u32..70, 0..90),
        pops in 0usize..70,
    ) {
        let mut c = Column::new();
        rows.iter().for_each(|r| push(&mut c, r));
        let mut want = Column::new();
        for &r in &order {
            match rows.get(r as usize) {
                Some(row) => push(&mut want, row),
                None => want.push_missing(),
            }
        }
        prop_assert!(c.gather(&order).bitwise_eq(&want));
        let keep = rows.len().saturating_sub(pops);
        let mut popped = c.clone();
        (0..pops).for_each(|_| popped.pop_row());
        let mut kept = Column::new();
        rows.iter().take(keep).for_each(|r| push(&mut kept, r));
        prop_assert!(popped.bitwise_eq(&kept));
    }

    /// Where a row starts in each lane, found from the start, from an earlier row or from
    /// the end, is where counting the rows before it says (columns of one lane included,
    /// whose starts are not counted).
    #[test]
    fn row_starts_agree_with_counting(
        rows in mixed_or_one_type_rows(),
        picks in prop::collection::vec((0usize..70, 0usize..70), 0..8),
    ) {
        let mut c = Column::new();
        rows.iter().for_each(|r| push(&mut c, r));
        // Counted: values of each lane in the rows before `row`.
        let counted = |row: usize| {
            let mut s = RowStart { row: row.min(rows.len()), ..RowStart::default() };
            for r in rows.iter().take(row) {
                match r {
                    Row::Int(..) => s.int += 1,
                    Row::Float(_) => s.float += 1,
                    Row::Bytes(..) => s.bytes += 1,
                    Row::Missing | Row::Empty(_) => {}
                }
            }
            s
        };
        for &(a, b) in &picks {
            let (a, b) = (a.min(b), a.max(b));
            prop_assert_eq!(c.row_start(a), counted(a));
            prop_assert_eq!(c.row_start_from_end(a), counted(a));
            prop_assert_eq!(c.row_start_after(c.row_start(a), b), counted(b));
        }
    }

    #[test]
    fn int_lane_round_trips(values in prop::collection::vec(any::<i64>(), 0..600), ty in int_type()) {
        let mut c = Column::new();
        values.iter().for_each(|&v| c.push_int(ty, v));
        check(values.len(), &[c])?;
    }

    #[test]
    fn small_deltas_round_trip(start in any::<i64>(), deltas in prop::collection::vec(-3i64..4, 0..600)) {
        let mut c = Column::new();
        let mut v = start;
        for d in deltas {
            v = v.wrapping_add(d);
            c.push_int(tag::INT64, v);
        }
        check(c.len(), &[c])?;
    }

    /// A clock or counter with rare exceptions (the Sparse int section): a constant step, and
    /// at a few random rows a step of any size, in any delta order.
    #[test]
    fn rare_exceptions_round_trip(
        start in any::<i64>(),
        step in prop_oneof![Just(0i64), Just(1), Just(300_000), any::<i64>()],
        len in 0usize..1200,
        exceptions in prop::collection::vec((0usize..1200, any::<i64>(), 0u32..64), 0..12),
        order in 0u8..3,
    ) {
        let mut steps = vec![step; len];
        for (at, v, shift) in exceptions {
            if let Some(s) = steps.get_mut(at) {
                *s = v >> shift;
            }
        }
        let mut c = Column::new();
        let (mut v, mut d) = (start, 0i64);
        for s in steps {
            match order {
                0 => v = s,
                1 => v = v.wrapping_add(s),
                _ => {
                    d = d.wrapping_add(s);
                    v = v.wrapping_add(d);
                }
            }
            c.push_int(tag::DATETIME, v);
        }
        check(c.len(), &[c])?;
    }

    #[test]
    fn float_lane_round_trips(bits in prop::collection::vec(any::<u64>(), 0..600)) {
        let mut c = Column::new();
        bits.iter().for_each(|&b| c.push_float(f64::from_bits(b)));
        check(c.len(), &[c])?;
    }

    #[test]
    fn decimals_round_trip(digits in prop::collection::vec(-10_000_000i64..10_000_000, 0..600), e in 0i32..8) {
        let mut c = Column::new();
        digits.iter().for_each(|&d| c.push_float(d as f64 / 10f64.powi(e)));
        check(c.len(), &[c])?;
    }

    /// Values that are multiples of bases (the float lane's Mult encoding): a walk of integer
    /// multipliers times a factor that changes at random rows, optionally rounded to a number
    /// of decimals, with special values and outliers anywhere.
    #[test]
    fn scaled_decimals_round_trip(
        start in -1_000_000i64..1_000_000,
        steps in prop::collection::vec(-500i64..500, 0..600),
        factors in prop::collection::vec((0usize..600, 1e-6f64..1e6), 1..6),
        decimals in prop::option::of(6i32..16),
        odd in prop::collection::vec((0usize..600, prop_oneof![special_float(), any::<f64>()]), 0..8),
    ) {
        let mut m = start;
        let mut values: Vec<f64> = steps
            .iter()
            .enumerate()
            .map(|(i, &step)| {
                m += step;
                let factor = factors
                    .iter()
                    .filter(|(from, _)| *from <= i)
                    .map(|&(_, f)| f)
                    .next_back()
                    .unwrap_or(factors[0].1);
                let v = m as f64 * factor;
                match decimals {
                    Some(d) => (v * 10f64.powi(d)).round() / 10f64.powi(d),
                    None => v,
                }
            })
            .collect();
        for (i, x) in odd {
            if let Some(slot) = values.get_mut(i) {
                *slot = x;
            }
        }
        let mut c = Column::new();
        values.iter().for_each(|&v| c.push_float(v));
        check(c.len(), &[c])?;
    }

    #[test]
    fn bytes_lane_round_trips(
        values in prop::collection::vec((bytes_type(), prop::collection::vec(any::<u8>(), 0..30)), 0..300),
        repeat in any::<bool>(),
    ) {
        let mut c = Column::new();
        for (i, (t, b)) in values.iter().enumerate() {
            if repeat { c.push_bytes(*t, &values[i % 3].1) } else { c.push_bytes(*t, b) }
        }
        check(c.len(), &[c])?;
    }

    #[test]
    fn object_ids_round_trip(ids in prop::collection::vec(any::<[u8; 12]>(), 0..300)) {
        let mut c = Column::new();
        ids.iter().for_each(|id| c.push_bytes(tag::OBJECT_ID, id));
        check(c.len(), &[c])?;
    }
}
