//! Criterion benches of the codec, per column kind.
//!
//! One group per [`ColumnKind`] (`codec/<kind>`), with the encode and decode of one 1000-row
//! synthetic column ([`tscoll_benches::columns::generate`]), and one group (`codec/bucket`)
//! with the encode and decode of a 1000-row bucket of one column of every kind. Throughput is
//! in raw column bytes ([`tscoll_benches::columns::raw_bytes`]: 8 per number, the payload of
//! strings), so criterion's MB/s compare across kinds. The encoded size of each column is
//! printed to stderr before its group.
//!
//! `cargo bench -p tscoll-benches --bench codec [-- <filter>]`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use tscoll_benches::columns::{ColumnKind, generate, raw_bytes};
use tscoll_codec::{Column, decode_bucket, decode_column, encode_bucket, encode_column};

/// Rows of every benched column (one bucket's worth).
const ROWS: usize = 1000;

/// Seed of the synthetic columns.
const SEED: u64 = 1;

/// A group with short timings, so the whole bench runs in a couple of minutes.
fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
    raw: u64,
) -> BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Bytes(raw));
    g
}

fn bench_kinds(c: &mut Criterion) {
    for kind in ColumnKind::ALL {
        let col = generate(kind, ROWS, SEED);
        let raw = raw_bytes(&col);
        let (body, layout) = encode_column(&col).expect("encode");
        let decoded = decode_column(&body, ROWS).expect("decode");
        assert!(decoded.bitwise_eq(&col), "{kind}: round trip differs");
        eprintln!(
            "codec/{kind}: {raw} raw bytes -> {} encoded ({:.2} bits/row, zstd {}), {layout:?}",
            body.len(),
            body.len() as f64 * 8.0 / ROWS as f64,
            layout.zstd,
        );

        let mut g = group(c, &format!("codec/{kind}"), raw);
        g.bench_function("encode", |b| {
            b.iter(|| encode_column(black_box(&col)).expect("encode"));
        });
        g.bench_function("decode", |b| {
            b.iter(|| decode_column(black_box(&body), ROWS).expect("decode"));
        });
        g.finish();
    }
}

fn bench_bucket(c: &mut Criterion) {
    let names = [
        "ts", "received", "volume", "temp", "lat", "price", "signal", "wind_dir", "title",
    ];
    let columns: Vec<Column> = ColumnKind::ALL
        .iter()
        .map(|&kind| generate(kind, ROWS, SEED))
        .collect();
    let named: Vec<(&str, &Column)> = names.iter().copied().zip(&columns).collect();
    let raw: u64 = columns.iter().map(raw_bytes).sum();
    let blob = encode_bucket(ROWS, &named).expect("encode");
    let bucket = decode_bucket(&blob).expect("decode");
    assert_eq!(bucket.row_count, ROWS);
    eprintln!(
        "codec/bucket: {} columns, {raw} raw bytes -> {} byte blob",
        named.len(),
        blob.len()
    );

    let mut g = group(c, "codec/bucket", raw);
    g.bench_function("encode", |b| {
        b.iter(|| encode_bucket(ROWS, black_box(&named)).expect("encode"));
    });
    g.bench_function("decode", |b| {
        b.iter(|| decode_bucket(black_box(&blob)).expect("decode"));
    });
    g.finish();
}

criterion_group!(benches, bench_kinds, bench_bucket);
criterion_main!(benches);
