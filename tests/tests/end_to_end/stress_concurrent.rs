//! Concurrent writers (SPEC §7): N = 2, 4 and 8 threads insert interleaved measurements of
//! the same series into one collection of a real database at once. Afterwards every
//! measurement is stored exactly once, every bucket keeps the invariants of SPEC §4 and §6
//! (count ≤ max, time span, one series, control min/max equal to the data), and the counters
//! of SPEC §8.1 add up.

use std::collections::{BTreeMap, HashMap};
use std::sync::Barrier;

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, InsertOptions};
use tscoll_tests::spec::{at, options, temp_collection};

const SERIES: i64 = 12;
const CALLS: i64 = 12;
const PER_CALL: i64 = 150;
const MAX_COUNT: u32 = 64;
const SPAN_MS: i64 = 3_600_000;

/// Measurement `i` of thread `w`: its own `_id`, a series shared by every thread and a time
/// that makes the threads overlap (each thread walks the same hour, so one thread's time is
/// often behind the series' open bucket: time-backward archives and reopening happen).
fn measurement(w: i64, i: i64) -> Document {
    let series = (i + w) % SERIES;
    let step = i / SERIES;
    doc! {
        "_id": w * 1_000_000 + i,
        "t": at(step * 997 + w * 13),
        "m": format!("s{series}"),
        "w": w,
        "v": (w * 31 + i) as f64 / 8.0,
    }
}

fn run(threads: i64, memory_threshold: Option<u64>) {
    let mut catalog = CatalogOptions {
        bucket_max_count: MAX_COUNT,
        ..CatalogOptions::default()
    };
    if let Some(bytes) = memory_threshold {
        catalog.idle_bucket_expiry_memory_usage_threshold_bytes = bytes;
    }
    let (_dir, _db, coll) = temp_collection(catalog, &options(true));
    let barrier = Barrier::new(usize::try_from(threads).expect("threads"));
    let inserted: Vec<usize> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let (coll, barrier) = (&coll, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let mut n = 0;
                    for call in 0..CALLS {
                        let docs: Vec<Document> = (call * PER_CALL..(call + 1) * PER_CALL)
                            .map(|i| measurement(w, i))
                            .collect();
                        let r = coll
                            .insert_many(&docs, &InsertOptions::default())
                            .expect("insert_many");
                        assert!(r.errors.is_empty(), "thread {w}: {:?}", r.errors);
                        n += r.inserted;
                    }
                    n
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("writer thread"))
            .collect()
    });
    let total = usize::try_from(threads * CALLS * PER_CALL).expect("total");
    for (w, n) in inserted.iter().enumerate() {
        assert_eq!(
            *n,
            usize::try_from(CALLS * PER_CALL).expect("n"),
            "thread {w}'s own count"
        );
    }
    check_every_measurement_once(&coll, total);
    let buckets = check_bucket_invariants(&coll);
    check_counters(&coll, total, buckets);
    if memory_threshold.is_some() {
        let e = coll.stats().expect("stats").execution;
        assert!(
            e.num_buckets_archived_due_to_memory_threshold > 0,
            "idle buckets were archived under memory pressure"
        );
    }
}

fn check_every_measurement_once(coll: &Collection, total: usize) {
    let found = coll
        .find(&doc! {}, &tscoll_engine::FindOptions::default())
        .expect("find");
    assert_eq!(found.len(), total, "measurements stored");
    let mut seen: HashMap<i64, Document> = HashMap::new();
    for d in found {
        let id = d.get_i64("_id").expect("_id");
        assert!(
            seen.insert(id, d.clone()).is_none(),
            "measurement {id} stored twice"
        );
        let expected = measurement(id / 1_000_000, id % 1_000_000);
        assert_eq!(d, expected, "measurement {id} as inserted");
    }
}

/// Checks each stored bucket and returns how many there are.
fn check_bucket_invariants(coll: &Collection) -> u64 {
    let buckets = coll.buckets().expect("buckets");
    for b in &buckets {
        let control = b.get_document("control").expect("control");
        let count = control.get_i64("count").expect("count");
        assert!(count >= 1 && count <= i64::from(MAX_COUNT), "count {count}");
        let data = b.get_document("data").expect("data");
        let (min, max) = (
            control.get_document("min").expect("min"),
            control.get_document("max").expect("max"),
        );
        let times = column(data, "t");
        assert_eq!(times.len() as i64, count, "control.count = rows");
        let t = |v: &Bson| v.as_datetime().expect("date").timestamp_millis();
        let (lo, hi) = (
            times.values().map(t).min().expect("rows"),
            times.values().map(t).max().expect("rows"),
        );
        let min_t = t(min.get("t").expect("min t"));
        assert!(
            min_t <= lo && lo - min_t < 60_000,
            "control.min.t is the rounded min"
        );
        assert_eq!(t(max.get("t").expect("max t")), hi, "control.max.t");
        assert!(hi - min_t < SPAN_MS, "bucket span");
        for field in ["w", "v", "_id"] {
            let col = column(data, field);
            assert_eq!(col.len() as i64, count, "{field}: a value per row");
            let lo = col.values().min_by(|a, b| cmp(a, b)).expect("rows");
            let hi = col.values().max_by(|a, b| cmp(a, b)).expect("rows");
            assert_eq!(min.get(field), Some(lo), "control.min.{field}");
            assert_eq!(max.get(field), Some(hi), "control.max.{field}");
        }
        // One series per bucket: the meta value and the measurements' own series agree.
        let meta = b.get_str("meta").expect("meta");
        for id in column(data, "_id").values() {
            let id = id.as_i64().expect("id");
            let expected = measurement(id / 1_000_000, id % 1_000_000);
            assert_eq!(expected.get_str("m").expect("m"), meta, "series of {id}");
        }
    }
    buckets.len() as u64
}

fn column(data: &Document, field: &str) -> BTreeMap<usize, Bson> {
    data.get_document(field)
        .map(|c| {
            c.iter()
                .map(|(k, v)| (k.parse().expect("row key"), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

fn cmp(a: &Bson, b: &Bson) -> std::cmp::Ordering {
    match (a, b) {
        (Bson::Int64(x), Bson::Int64(y)) => x.cmp(y),
        (Bson::Double(x), Bson::Double(y)) => x.total_cmp(y),
        _ => panic!("unexpected types {a:?} {b:?}"),
    }
}

fn check_counters(coll: &Collection, total: usize, buckets: u64) {
    let s = coll.stats().expect("stats");
    let e = &s.execution;
    assert_eq!(e.num_measurements_committed, total as u64);
    assert_eq!(s.measurement_count, total as u64);
    assert_eq!(s.bucket_count, buckets);
    assert_eq!(
        e.num_bucket_inserts, buckets,
        "every stored bucket was inserted by exactly one commit"
    );
    assert_eq!(e.num_commits, e.num_bucket_inserts + e.num_bucket_updates);
    assert!(e.num_commits >= buckets);
    assert_eq!(
        s.num_active_buckets,
        s.num_open_buckets + s.num_archived_buckets
    );
    assert_eq!(
        s.num_idle_buckets, s.num_open_buckets,
        "no writer left: all idle"
    );
    // At least one bucket per series, and count rollovers happened.
    assert!(buckets >= SERIES as u64);
    assert!(e.num_buckets_closed_due_to_count > 0);
}

#[test]
fn two_writers() {
    run(2, None);
}

#[test]
fn four_writers() {
    run(4, None);
}

#[test]
fn eight_writers() {
    run(8, None);
}

/// Idle expiry (SPEC §6.9) runs while other writers stage and commit into the same stripes.
#[test]
fn eight_writers_under_memory_pressure() {
    run(8, Some(4 * 1024));
}

/// Direct writes (SPEC) race inserts: while 4 writers insert, a fifth thread keeps
/// deleting measurements with an odd `_id` (rewriting buckets, some of them open) and moving
/// series `s0` to `s0x` and back. A rewrite that dropped a row committed between its read and
/// its write, a commit into a bucket being rewritten, or rows another writer was storing
/// landing after the rewrite, would lose measurements or leave control records that no longer
/// match the rows.
#[test]
fn deletes_and_meta_updates_during_inserts_lose_nothing() {
    let threads = 4;
    let catalog = CatalogOptions {
        bucket_max_count: MAX_COUNT,
        ..CatalogOptions::default()
    };
    let (_dir, db, coll) = temp_collection(catalog, &options(true));
    let done = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for w in 0..threads {
            let (coll, done) = (&coll, &done);
            s.spawn(move || {
                // Small calls, so that the direct writes fall between many commits.
                for call in 0..CALLS * 5 {
                    let docs: Vec<Document> = (call * PER_CALL / 5..(call + 1) * PER_CALL / 5)
                        .map(|i| measurement(w, i))
                        .collect();
                    let r = coll
                        .insert_many(&docs, &InsertOptions::default())
                        .expect("insert_many");
                    assert!(r.errors.is_empty(), "thread {w}: {:?}", r.errors);
                }
                done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        let (coll, done) = (&coll, &done);
        s.spawn(move || {
            let odd: Vec<i64> = (0..threads)
                .flat_map(|w| (0..CALLS * PER_CALL).map(move |i| w * 1_000_000 + i))
                .filter(|id| id % 2 == 1)
                .collect();
            let mut round = 0;
            while done.load(std::sync::atomic::Ordering::SeqCst) < threads as usize {
                // One series at a time: its buckets are rewritten, the others only scanned.
                let series = format!("s{}", 1 + round % 3);
                let ids = &odd[round % 7 * 100..round % 7 * 100 + 400];
                coll.delete_many(&doc! { "m": series, "_id": { "$in": ids } })
                    .expect("delete");
                let (from, to) = if round % 2 == 0 {
                    ("s0", "s0x")
                } else {
                    ("s0x", "s0")
                };
                coll.update_many(&doc! { "m": from }, &doc! { "$set": { "m": to } })
                    .expect("update");
                round += 1;
            }
            coll.update_many(&doc! { "m": "s0x" }, &doc! { "$set": { "m": "s0" } })
                .expect("update");
        });
    });
    coll.delete_many(&doc! { "_id": { "$in": (0..threads)
    .flat_map(|w| (0..CALLS * PER_CALL).map(move |i| w * 1_000_000 + i))
    .filter(|id| id % 2 == 1)
    .collect::<Vec<_>>() } })
        .expect("final delete");
    let found = coll
        .find(&doc! {}, &tscoll_engine::FindOptions::default())
        .expect("find");
    let mut ids: Vec<i64> = found
        .iter()
        .map(|d| d.get_i64("_id").expect("_id"))
        .collect();
    ids.sort_unstable();
    let expected: Vec<i64> = (0..threads)
        .flat_map(|w| (0..CALLS * PER_CALL).map(move |i| w * 1_000_000 + i))
        .filter(|id| id % 2 == 0)
        .collect();
    assert_eq!(
        ids.len(),
        expected.len(),
        "even measurements kept, once each"
    );
    assert_eq!(ids, expected);
    for d in &found {
        let id = d.get_i64("_id").expect("_id");
        assert_eq!(
            d,
            &measurement(id / 1_000_000, id % 1_000_000),
            "{id} as inserted"
        );
    }
    let s = coll.stats().expect("stats");
    assert_eq!(
        s.measurement_count,
        expected.len() as u64,
        "control counts add up"
    );
    // Every bucket's control record matches its segments and has its index entry: a part
    // stored after a direct write read the bucket would break one or the other.
    let report = db.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.problems);
}
