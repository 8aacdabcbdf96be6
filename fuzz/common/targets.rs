//! Logic of the fuzz targets, shared by `fuzz/fuzz_targets/*.rs` (cargo-fuzz, nightly) and by
//! `codec/tests/codec/fuzz_corpus.rs` (replays the committed corpus on stable with `cargo test`).

#![allow(dead_code, unreachable_pub)]

use arbitrary::{Arbitrary, Unstructured};
use tscoll_codec::{Column, decode_bucket, decode_bucket_projected, decode_column, encode_bucket};
use tscoll_codec::{encode_column, read_header, tag};

/// `decode_bucket` target: arbitrary bytes must decode to `Err` or to a bucket that
/// round-trips. The same bytes are also tried with their checksum fixed up (so the column
/// decoders behind it are reached) and as a bare column body.
pub fn decode_bucket_target(data: &[u8]) {
    check_blob(data);
    if data.len() >= 9 {
        let mut fixed = data.to_vec();
        let split = fixed.len() - 4;
        let crc = crc32(&fixed[..split]);
        fixed[split..].copy_from_slice(&crc.to_le_bytes());
        check_blob(&fixed);
    }
    if let Some((&rows, body)) = data.split_first() {
        // A body of up to 255 rows (and, scaled, of up to 255·64).
        for rows in [usize::from(rows), usize::from(rows) * 64] {
            if let Ok(col) = decode_column(body, rows) {
                assert_eq!(col.len(), rows);
                let (again, _) = encode_column(&col).expect("a decoded column re-encodes");
                let back = decode_column(&again, rows).expect("a re-encoded column decodes");
                assert!(back.bitwise_eq(&col));
            }
        }
    }
}

fn check_blob(blob: &[u8]) {
    let header = read_header(blob);
    let Ok(bucket) = decode_bucket(blob) else {
        return;
    };
    let header = header.expect("a decodable blob has a readable header");
    assert_eq!(header.row_count, bucket.row_count);
    assert_eq!(header.columns.len(), bucket.columns.len());
    for (col_name, col) in &bucket.columns {
        assert_eq!(col.len(), bucket.row_count);
        let _ = col_name;
    }
    // Projection keeps exactly the accepted columns.
    let mut flip = false;
    let projected = decode_bucket_projected(blob, &mut |_| {
        flip = !flip;
        flip
    })
    .expect("projection of a decodable blob decodes");
    let expected: Vec<_> = bucket.columns.iter().step_by(2).collect();
    assert_eq!(projected.columns.len(), expected.len());
    for ((n1, c1), (n2, c2)) in projected.columns.iter().zip(expected) {
        assert_eq!(n1, n2);
        assert!(c1.bitwise_eq(c2));
    }
    // Re-encoding gives the same rows.
    let cols: Vec<(&str, &Column)> = bucket
        .columns
        .iter()
        .map(|(n, c)| (n.as_str(), c))
        .collect();
    let again = encode_bucket(bucket.row_count, &cols).expect("a decoded bucket re-encodes");
    let back = decode_bucket(&again).expect("a re-encoded bucket decodes");
    assert_eq!(back.row_count, bucket.row_count);
    for ((n1, c1), (n2, c2)) in back.columns.iter().zip(&bucket.columns) {
        assert_eq!(n1, n2);
        assert!(c1.bitwise_eq(c2));
    }
}

/// CRC-32 (IEEE), bitwise: the fuzz crate does not depend on crc32fast.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Structured input of the `roundtrip_columns` target: a few named columns of one row count,
/// each drawn from a value pattern with random interruptions (skips, other types).
#[derive(Debug)]
pub struct Columns {
    /// Rows of every column.
    pub rows: usize,
    /// `(name, column)`, names unique.
    pub columns: Vec<(String, Column)>,
}

const INT_TYPES: [u8; 5] = [
    tag::INT32,
    tag::INT64,
    tag::DATETIME,
    tag::TIMESTAMP,
    tag::BOOLEAN,
];
const EMPTY_TYPES: [u8; 4] = [tag::NULL, tag::UNDEFINED, tag::MIN_KEY, tag::MAX_KEY];
const BYTES_TYPES: [u8; 11] = [
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
];
const WORDS: [&str; 8] = [
    "N",
    "NNW",
    "SE",
    "ESE",
    "rain",
    "drizzle",
    "",
    "a longer string value",
];

/// One column's main pattern.
#[derive(Clone, Copy, Debug)]
enum Pattern {
    Time {
        base: i64,
        step: i64,
        jitter: u8,
    },
    Ints {
        ty: u8,
        base: i64,
        spread: u8,
    },
    Decimal {
        exp: u8,
        base: i64,
        spread: u16,
        noisy: bool,
    },
    FloatBits,
    /// Multiples of a factor that changes at row `switch` (the float lane's Mult encoding),
    /// rounded to `decimals` decimals when non-zero.
    Scaled {
        factor: f64,
        switch: u16,
        base: i64,
        spread: u16,
        decimals: u8,
    },
    /// A clock of `step` that jumps by `skip` every `1024 / rate` rows (missed readings: the
    /// Sparse int section).
    Clock {
        base: i64,
        step: i64,
        rate: u8,
        skip: i64,
    },
    Words {
        pool: u8,
    },
    Unique,
    ObjectIds {
        base: u32,
        step: u8,
    },
    Payload {
        ty: u8,
        max: u8,
    },
}

fn pattern(u: &mut Unstructured<'_>) -> arbitrary::Result<Pattern> {
    Ok(match u.int_in_range(0u8..=9)? {
        9 => Pattern::Clock {
            base: u.arbitrary()?,
            step: *u.choose(&[1, 60_000, 300_000, 86_400_000, 0, -7])?,
            rate: u.arbitrary()?,
            skip: u.arbitrary()?,
        },
        8 => Pattern::Scaled {
            factor: f64::from(u.int_in_range(1u32..=u32::MAX)?)
                / f64::from(u.arbitrary::<u16>()?.max(1)),
            switch: u.arbitrary()?,
            base: u.int_in_range(-1_000_000..=1_000_000)?,
            spread: u.arbitrary()?,
            decimals: *u.choose(&[0, 6, 9, 12, 15])?,
        },
        0 => Pattern::Time {
            base: u.arbitrary()?,
            step: *u.choose(&[1, 1000, 60_000, 3_600_000, -5, 0])?,
            jitter: u.arbitrary()?,
        },
        1 => Pattern::Ints {
            ty: *u.choose(&INT_TYPES)?,
            base: u.arbitrary()?,
            spread: u.arbitrary()?,
        },
        2 => Pattern::Decimal {
            exp: u.int_in_range(0..=6)?,
            base: u.int_in_range(-100_000..=100_000)?,
            spread: u.arbitrary()?,
            noisy: u.arbitrary()?,
        },
        3 => Pattern::FloatBits,
        4 => Pattern::Words {
            pool: u.int_in_range(1..=8)?,
        },
        5 => Pattern::Unique,
        6 => Pattern::ObjectIds {
            base: u.arbitrary()?,
            step: u.arbitrary()?,
        },
        _ => Pattern::Payload {
            ty: *u.choose(&BYTES_TYPES)?,
            max: u.arbitrary()?,
        },
    })
}

fn push_pattern(
    u: &mut Unstructured<'_>,
    col: &mut Column,
    p: Pattern,
    i: usize,
) -> arbitrary::Result<()> {
    let i64i = i as i64;
    match p {
        Pattern::Time { base, step, jitter } => {
            let j = if jitter == 0 {
                0
            } else {
                i64::from(u.int_in_range(0..=jitter)?)
            };
            col.push_int(
                tag::DATETIME,
                base.wrapping_add(step.wrapping_mul(i64i)).wrapping_add(j),
            );
        }
        Pattern::Clock {
            base,
            step,
            rate,
            skip,
        } => col.push_int(
            tag::DATETIME,
            base.wrapping_add(step.wrapping_mul(i64i))
                .wrapping_add(skip.wrapping_mul(i64i * i64::from(rate) / 1024)),
        ),
        Pattern::Ints { ty, base, spread } => {
            let v = if ty == tag::BOOLEAN {
                i64::from(u.arbitrary::<bool>()?)
            } else if spread == 255 {
                u.arbitrary()?
            } else {
                base.wrapping_add(i64::from(u.int_in_range(0..=spread)?))
            };
            col.push_int(ty, v);
        }
        Pattern::Decimal {
            exp,
            base,
            spread,
            noisy,
        } => {
            let d = base + i64::from(u.int_in_range(0..=spread)?);
            let mut v = d as f64 / 10f64.powi(i32::from(exp));
            if noisy && u.arbitrary::<bool>()? {
                let ulps: i8 = u.arbitrary()?;
                v = f64::from_bits(v.to_bits().wrapping_add(ulps as u64));
            }
            col.push_float(v);
        }
        Pattern::FloatBits => col.push_float(f64::from_bits(u.arbitrary()?)),
        Pattern::Scaled {
            factor,
            switch,
            base,
            spread,
            decimals,
        } => {
            let m = base + i64::from(u.int_in_range(0..=spread)?);
            let factor = if i >= usize::from(switch) {
                factor * 1.003
            } else {
                factor
            };
            let mut v = m as f64 * factor;
            if decimals > 0 {
                let p = 10f64.powi(i32::from(decimals));
                v = (v * p).round() / p;
            }
            col.push_float(v);
        }
        Pattern::Words { pool } => {
            let w = WORDS[usize::from(u.int_in_range(0..=pool - 1)?)];
            col.push_bytes(tag::STRING, w.as_bytes());
        }
        Pattern::Unique => col.push_bytes(
            tag::STRING,
            format!("value-{i}-{}", u.arbitrary::<u16>()?).as_bytes(),
        ),
        Pattern::ObjectIds { base, step } => {
            let mut id = [0u8; 12];
            id[..4].copy_from_slice(&base.wrapping_add(i as u32 / 16).to_be_bytes());
            id[4..9].copy_from_slice(&[0x65, 0x1A, 0x2B, 0x3C, 0x4D]);
            let ctr = (i as u32).wrapping_mul(u32::from(step)) & 0x00FF_FFFF;
            id[9..].copy_from_slice(&ctr.to_be_bytes()[1..]);
            col.push_bytes(tag::OBJECT_ID, &id);
        }
        Pattern::Payload { ty, max } => {
            let len = usize::from(u.int_in_range(0..=max)?);
            let bytes = u.bytes(len.min(u.len()))?;
            col.push_bytes(ty, bytes);
        }
    }
    Ok(())
}

impl<'a> Arbitrary<'a> for Columns {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let rows = usize::from(u.int_in_range(0u16..=700)?);
        let n_cols = u.int_in_range(0u8..=4)?;
        let mut columns = Vec::new();
        for c in 0..n_cols {
            let main = pattern(u)?;
            let other = pattern(u)?;
            // Chance (in 1/256) that a row is a skip, another type, or an empty type.
            let skip: u8 = u.arbitrary()?;
            let mix: u8 = u.arbitrary()?;
            let mut col = Column::new();
            for i in 0..rows {
                let roll: u8 = if u.is_empty() { 255 } else { u.arbitrary()? };
                if roll < skip / 2 {
                    col.push_missing();
                } else if roll < skip / 2 + mix / 4 {
                    push_pattern(u, &mut col, other, i)?;
                } else if roll == skip / 2 + mix / 4 {
                    col.push_empty(*u.choose(&EMPTY_TYPES)?);
                } else {
                    push_pattern(u, &mut col, main, i)?;
                }
            }
            columns.push((format!("c{c}"), col));
        }
        Ok(Columns { rows, columns })
    }
}

/// `roundtrip_columns` target: structured columns → blob → the same columns, bit for bit; the
/// same for each column body alone.
pub fn roundtrip_target(input: &Columns) {
    let cols: Vec<(&str, &Column)> = input.columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
    let blob = encode_bucket(input.rows, &cols).expect("valid columns encode");
    let bucket = decode_bucket(&blob).expect("an encoded bucket decodes");
    assert_eq!(bucket.row_count, input.rows);
    assert_eq!(bucket.columns.len(), input.columns.len());
    for ((n1, c1), (n2, c2)) in bucket.columns.iter().zip(&input.columns) {
        assert_eq!(n1, n2);
        assert!(
            c1.bitwise_eq(c2),
            "column {n1} differs after the round trip"
        );
    }
    for (_, col) in &input.columns {
        let (body, layout) = encode_column(col).expect("valid column encodes");
        assert_eq!(body.len(), layout.encoded_len);
        let back = decode_column(&body, col.len()).expect("an encoded column decodes");
        assert!(back.bitwise_eq(col));
    }
}

/// Runs the `roundtrip_columns` target on raw fuzzer bytes.
pub fn roundtrip_bytes(data: &[u8]) {
    if let Ok(input) = Columns::arbitrary_take_rest(Unstructured::new(data)) {
        roundtrip_target(&input);
    }
}
