//! SPEC in bytes: the catalog's memory usage (what the idle-bucket expiry threshold is
//! compared with) counts what its open buckets really hold on the heap. A counting allocator
//! measures the heap the catalog keeps after many series each commit a few measurements (the
//! high-cardinality case, where the threshold decides how many buckets stay open), and the
//! accounted usage must be close to it: an undercount lets the process hold several times the
//! threshold.
//!
//! Its own test binary: the allocator counts the whole process, so nothing else may run in it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, Ordering};

use bson::{DateTime, Document, doc};
use tscoll_catalog::{
    BucketCatalog, BucketKey, BucketingSpec, CatalogOptions, Measurement, NoStorage, WriterId,
};

/// The system allocator, counting the bytes live.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const HOUR: i64 = 3_600_000;
const SERIES: usize = 2000;
const POINTS: usize = 4;

/// A TSBS-like measurement: ten tags in the meta, ten double fields.
fn measurement(series: usize, point: usize) -> Document {
    let mut d = doc! {
        "t": DateTime::from_millis(1000 * HOUR + point as i64 * 10_000),
        "m": { "hostname": format!("host_{series}"), "region": "eu-west-1", "rack": "65" },
    };
    for f in 0..10 {
        d.insert(
            format!("usage_{f}"),
            (series * 31 + point * 7 + f) as f64 / 3.0,
        );
    }
    d
}

#[test]
fn memory_usage_counts_the_heap_open_buckets_hold() {
    let catalog = Arc::new(BucketCatalog::new(
        BucketingSpec {
            time_field: "t".to_owned(),
            meta_field: Some("m".to_owned()),
            max_span_ms: HOUR,
            rounding_ms: 60_000,
        },
        CatalogOptions {
            idle_bucket_expiry_memory_usage_threshold_bytes: u64::MAX,
            ..CatalogOptions::default()
        },
    ));
    let docs: Vec<Vec<Document>> = (0..POINTS)
        .map(|p| (0..SERIES).map(|s| measurement(s, p)).collect())
        .collect();
    let keys: Vec<BucketKey> = (0..SERIES)
        .map(|s| BucketKey::from_meta(docs[0][s].get("m")))
        .collect();
    let before = LIVE.load(Ordering::Relaxed);
    for (p, round) in docs.iter().enumerate() {
        for (s, d) in round.iter().enumerate() {
            let m = [Measurement {
                index: p * SERIES + s,
                time: d.get_datetime("t").expect("t").timestamp_millis(),
                doc: d,
                generated_id: None,
            }];
            let out = catalog.stage(WriterId(1), &keys[s], &m, &NoStorage);
            for batch in out.batches {
                catalog
                    .claim(&batch)
                    .expect("commit rights")
                    .prepare()
                    .expect("prepare")
                    .finish();
            }
        }
    }
    let held = LIVE.load(Ordering::Relaxed) - before;
    let accounted = catalog.memory_usage();
    assert_eq!(
        catalog.stats().num_measurements_committed,
        (SERIES * POINTS) as u64
    );
    let held = u64::try_from(held).expect("the catalog holds memory");
    let ratio = accounted as f64 / held as f64;
    eprintln!(
        "{SERIES} buckets: {held} bytes held, {accounted} accounted ({:.0} / {:.0} per bucket, ratio {ratio:.2})",
        held as f64 / SERIES as f64,
        accounted as f64 / SERIES as f64
    );
    assert!(
        (0.7..=1.5).contains(&ratio),
        "accounted {accounted} bytes for {held} held (ratio {ratio:.2})"
    );
}
