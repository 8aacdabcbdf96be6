//! Helpers shared by the integration tests: sample buckets (the golden cases) and comparisons.
#![allow(dead_code, unreachable_pub)]

pub mod samples;

use tscoll_codec::{Bucket, Column, tag};

/// Parses a sample token list (see `samples.rs`); `time` makes ints dates.
pub fn parse_sample(text: &str, time: bool) -> Column {
    let mut c = Column::new();
    for tok in text.split_whitespace() {
        let (k, v) = tok.split_once(':').unwrap_or((tok, ""));
        match k {
            "i" if time => c.push_int(tag::DATETIME, v.parse().unwrap()),
            "i" => c.push_int(tag::INT32, v.parse().unwrap()),
            "f" => c.push_float(v.parse().unwrap()),
            "s" => c.push_bytes(tag::STRING, v.replace('_', " ").as_bytes()),
            "n" => c.push_empty(tag::NULL),
            "m" => c.push_missing(),
            other => panic!("bad sample token {other}"),
        }
    }
    c
}

/// A deterministic pseudo-random sequence (SplitMix64).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Sequential ObjectIds as a driver generates them (timestamp, fixed process part, counter).
pub fn object_id(ts: u32, counter: u32) -> [u8; 12] {
    let mut id = [0u8; 12];
    id[..4].copy_from_slice(&ts.to_be_bytes());
    id[4..9].copy_from_slice(&[0x65, 0x1A, 0x2B, 0x3C, 0x4D]);
    id[9..].copy_from_slice(&(counter & 0x00FF_FFFF).to_be_bytes()[1..]);
    id
}

/// Names of the golden cases; each must stay constructible forever (never change a case:
/// add a new one).
pub const CASES: &[&str] = &[
    "empty",
    "no_rows",
    "weather",
    "nab",
    "object_ids",
    "all_types",
    "int_extremes",
    "floats_special",
    "text",
    "tsbs_cpu",
    "adjusted_prices",
    "clock_gaps",
];

/// The bucket of a golden case.
pub fn case(name: &str) -> Bucket {
    let mut columns: Vec<(String, Column)> = Vec::new();
    let rows;
    match name {
        "empty" => rows = 0,
        "no_rows" => {
            rows = 0;
            columns.push(("a".into(), Column::new()));
            columns.push(("b".into(), Column::new()));
        }
        "weather" => {
            rows = 256;
            columns.push(("ts".into(), parse_sample(samples::BEIJING_TS, true)));
            columns.push(("TEMP".into(), parse_sample(samples::BEIJING_TEMP, false)));
            columns.push(("PRES".into(), parse_sample(samples::BEIJING_PRES, false)));
            columns.push(("PM2.5".into(), parse_sample(samples::BEIJING_PM25, false)));
            columns.push(("wd".into(), parse_sample(samples::BEIJING_WD, false)));
            let mut sparse = Column::new();
            for i in 0..rows {
                if i % 50 == 7 {
                    sparse.push_float(f64::from(i as u32) / 4.0);
                } else {
                    sparse.push_missing();
                }
            }
            columns.push(("sparse".into(), sparse));
        }
        "nab" => {
            rows = 256;
            columns.push(("ts".into(), parse_sample(samples::NAB_TS, true)));
            columns.push(("value".into(), parse_sample(samples::NAB_VALUE, false)));
        }
        "object_ids" => {
            rows = 500;
            let mut ids = Column::new();
            let mut random = Column::new();
            let mut rng = Rng(7);
            for i in 0..rows as u32 {
                ids.push_bytes(
                    tag::OBJECT_ID,
                    &object_id(1_700_000_000 + i / 37, 0x00AB_CDEF + i),
                );
                let mut r = [0u8; 12];
                for b in &mut r {
                    *b = rng.next() as u8;
                }
                random.push_bytes(tag::OBJECT_ID, &r);
            }
            columns.push(("_id".into(), ids));
            columns.push(("ref".into(), random));
        }
        "all_types" => {
            rows = 40;
            let mut c = Column::new();
            let doc: &[u8] = &[0x0C, 0, 0, 0, 0x10, b'a', 0, 1, 0, 0, 0, 0];
            let arr: &[u8] = &[0x0C, 0, 0, 0, 0x08, b'0', 0, 1, 0, 0, 0, 0];
            for i in 0..rows {
                match i % 20 {
                    0 => c.push_missing(),
                    1 => c.push_float(-0.0),
                    2 => c.push_bytes(tag::STRING, "héllo wörld".as_bytes()),
                    3 => c.push_bytes(tag::DOCUMENT, doc),
                    4 => c.push_bytes(tag::ARRAY, arr),
                    5 => c.push_bytes(tag::BINARY, &[3, 0, 0, 0, 0x80, 1, 2, 3]),
                    6 => c.push_empty(tag::UNDEFINED),
                    7 => c.push_bytes(tag::OBJECT_ID, &object_id(5, i as u32)),
                    8 => c.push_int(tag::BOOLEAN, (i / 20) as i64),
                    9 => c.push_int(tag::DATETIME, -62_135_596_800_000 + i as i64),
                    10 => c.push_empty(tag::NULL),
                    11 => c.push_bytes(tag::REGEX, b"^a.*\0i\0"),
                    12 => c.push_bytes(
                        tag::DB_POINTER,
                        &[2, 0, 0, 0, b'x', 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
                    ),
                    13 => c.push_bytes(tag::JAVASCRIPT, b"function() {}"),
                    14 => c.push_bytes(tag::SYMBOL, b"sym"),
                    15 => c.push_bytes(tag::JAVASCRIPT_WITH_SCOPE, &[9, 0, 0, 0, 1, 0, 0, 0, 0]),
                    16 => c.push_int(tag::INT32, i32::MIN as i64 + i as i64),
                    17 => c.push_int(tag::TIMESTAMP, (u64::MAX - i as u64) as i64),
                    18 => c.push_int(tag::INT64, i64::MAX - i as i64),
                    _ => {
                        c.push_bytes(tag::DECIMAL128, &[i as u8; 16]);
                    }
                }
            }
            let mut keys = Column::new();
            for i in 0..rows {
                keys.push_empty(if i % 2 == 0 {
                    tag::MIN_KEY
                } else {
                    tag::MAX_KEY
                });
            }
            columns.push(("mixed".into(), c));
            columns.push(("keys".into(), keys));
        }
        "int_extremes" => {
            rows = 300;
            let mut wrap = Column::new();
            let mut random = Column::new();
            let mut secs = Column::new();
            let mut rng = Rng(11);
            for i in 0..rows {
                wrap.push_int(tag::INT64, if i % 2 == 0 { i64::MIN } else { i64::MAX });
                random.push_int(tag::INT64, rng.next() as i64);
                secs.push_int(
                    tag::DATETIME,
                    1_500_000_000_000 + 60_000 * (rng.below(1000) as i64),
                );
            }
            columns.push(("wrap".into(), wrap));
            columns.push(("random".into(), random));
            columns.push(("minutes".into(), secs));
        }
        "floats_special" => {
            rows = 300;
            let mut special = Column::new();
            let mut full = Column::new();
            let mut rng = Rng(3);
            let specials = [
                f64::NAN,
                f64::from_bits(0x7FF0_0000_0000_0001),
                f64::from_bits(0xFFF8_DEAD_BEEF_0001),
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                0.0,
                5e-324,
                f64::MAX,
                f64::MIN,
                1.7919999999999998,
                95.19255849999999,
            ];
            for i in 0..rows {
                if i % 3 == 0 {
                    special.push_float(specials[(i / 3) % specials.len()]);
                } else {
                    special.push_float((i as f64) * 0.25 - 10.0);
                }
                full.push_float(f64::from_bits(rng.next() >> 2) * 1e-10);
            }
            columns.push(("special".into(), special));
            columns.push(("full".into(), full));
        }
        "text" => {
            rows = 64;
            columns.push(("place".into(), parse_sample(samples::USGS_PLACE, false)));
            let mut code = Column::new();
            for i in 0..rows {
                code.push_bytes(
                    tag::JAVASCRIPT,
                    format!("function f{i}() {{ return {i} * 2; }}").as_bytes(),
                );
            }
            columns.push(("code".into(), code));
        }
        "adjusted_prices" => {
            // Daily closes adjusted for dividends, as price histories publish them: cents
            // times a factor that changes at each dividend, rounded to 12 decimals (the float
            // lane's Mult encoding), with a gap and an unadjusted outlier.
            rows = 400;
            let mut rng = Rng(1962);
            let mut cents = 12_000i64;
            let mut adjusted = Column::new();
            for i in 0..rows {
                cents += rng.below(301) as i64 - 150;
                let factor = [0.812_345_678_9, 0.815_432_109_8, 0.819_876_543_2][i / 150];
                let v = match i {
                    77 => f64::NAN,
                    78 => -0.0,
                    201 => cents as f64 / 100.0,
                    _ => (cents as f64 * factor / 100.0 * 1e12).round() / 1e12,
                };
                adjusted.push_float(v);
            }
            columns.push(("adj_close".into(), adjusted));
        }
        "clock_gaps" => {
            // A glucose monitor's 5-minute clock with two missed stretches (the Sparse int
            // section), a status code that is 200 but at a few rows, and a field present at
            // all but a few rows (its type stream's indices are sparse too).
            rows = 256;
            columns.push(("ts".into(), parse_sample(samples::GLUCOSE_TS, true)));
            let mut status = Column::new();
            let mut note = Column::new();
            for i in 0..rows {
                let code = match i {
                    17 => 404,
                    90 | 91 => 503,
                    200 => -1,
                    _ => 200,
                };
                status.push_int(tag::INT32, code);
                if i % 97 == 40 {
                    note.push_missing();
                } else {
                    note.push_float(f64::from(i as u32) / 8.0);
                }
            }
            columns.push(("status".into(), status));
            columns.push(("note".into(), note));
        }
        "tsbs_cpu" => {
            // One host-hour of the TSBS cpu-only workload: 10-second timestamps, then fields
            // that walk in [0, 100] (kept in 1/16 units, moved by a sum of four uniform steps,
            // truncated); plus a mostly-idle counter with rare bursts and a walk on multiples
            // of 5, so every kind of entropy-coded int section appears. Integer arithmetic
            // only: the case is the same on every platform.
            rows = 360;
            let mut rng = Rng(2016);
            let mut time = Column::new();
            for i in 0..rows as i64 {
                time.push_int(tag::DATETIME, 1_451_606_400_000 + 10_000 * i);
            }
            columns.push(("time".into(), time));
            for f in 0..10 {
                let mut w = rng.below(1601) as i64;
                let mut c = Column::new();
                for _ in 0..rows {
                    let step: i64 = (0..4).map(|_| rng.below(29) as i64 - 14).sum();
                    w = (w + step).clamp(0, 1600);
                    c.push_int(tag::INT32, w / 16);
                }
                columns.push((format!("usage_{f}"), c));
            }
            let mut bursts = Column::new();
            let mut cents = Column::new();
            let mut price = 10_000i64;
            for _ in 0..rows {
                let r = rng.below(1000);
                bursts.push_int(
                    tag::INT64,
                    match r {
                        0..700 => 0,
                        700..950 => 1,
                        950..995 => 2 + (r % 3) as i64,
                        _ => 1_000_000 + rng.next() as i64 % 1000,
                    },
                );
                price += 5 * [0, 0, 0, 1, -1, 2, -2, 1][rng.below(8) as usize];
                cents.push_int(tag::INT64, price);
            }
            columns.push(("bursts".into(), bursts));
            columns.push(("cents".into(), cents));
        }
        other => panic!("unknown golden case {other}"),
    }
    for (n, c) in &columns {
        assert_eq!(c.len(), rows, "case {name} column {n}");
    }
    Bucket {
        row_count: rows,
        columns,
    }
}

/// Encodes a bucket.
pub fn encode(b: &Bucket) -> Vec<u8> {
    let cols: Vec<(&str, &Column)> = b.columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
    tscoll_codec::encode_bucket(b.row_count, &cols).expect("encode")
}

/// Whether two buckets are equal bit for bit.
pub fn same(a: &Bucket, b: &Bucket) -> bool {
    a.row_count == b.row_count
        && a.columns.len() == b.columns.len()
        && a.columns
            .iter()
            .zip(&b.columns)
            .all(|((n1, c1), (n2, c2))| n1 == n2 && c1.bitwise_eq(c2))
}

/// Overwrites the checksum of a (possibly modified) blob so the decoders behind it are reached.
pub fn fix_crc(blob: &mut [u8]) {
    if blob.len() >= 9 {
        let split = blob.len() - 4;
        let crc = crc32fast::hash(&blob[..split]);
        blob[split..].copy_from_slice(&crc.to_le_bytes());
    }
}
