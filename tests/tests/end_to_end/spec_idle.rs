//! SPEC §6.9 conformance: idle buckets, when expiry runs, what it archives
//! and closes and in which order (R-6.9.3, with the §0 parameters
//! `timeseriesIdleBucketExpiryMemoryUsageThreshold` and `timeseriesIdleBucketExpiryMaxCountPerAttempt`
//! changed at run time as allow), what memory counts, and that memory stays
//! bounded at high cardinality. Reopening of expired buckets follows §6.8.
//!
//! Expiry works on the catalog stripe of the bucket being allocated or reopened (R-6.9.3, §0
//! "catalog stripes": stripe = hash of the bucket key % 32). The hash function is the engine's
//! choice, so the tests find series that share a stripe by behaviour (see [`stripe_mates`]).

use std::sync::OnceLock;
use std::time::Instant;

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, CollectionStats, Database};
use tscoll_tests::spec::{at, bucket_counts, insert_all, options, temp_collection};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;
const MIB: u64 = 1 << 20;
/// Catalog stripes (SPEC §0).
const STRIPES: u64 = 32;

fn catalog(threshold: u64) -> CatalogOptions {
    CatalogOptions {
        idle_bucket_expiry_memory_usage_threshold_bytes: threshold,
        ..CatalogOptions::default()
    }
}

fn setup(threshold: u64) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(catalog(threshold), &options(true))
}

/// Changes the memory threshold (and keeps every other parameter) at run time.
fn set_threshold(db: &Database, threshold: u64) {
    db.set_catalog_options(CatalogOptions {
        idle_bucket_expiry_memory_usage_threshold_bytes: threshold,
        ..db.catalog_options()
    });
}

fn stats(coll: &Collection) -> CollectionStats {
    coll.stats().expect("stats")
}

/// One measurement of series `meta` at `T0 + ms`, in its own insert call.
fn one(coll: &Collection, meta: &str, ms: i64) {
    insert_all(coll, &[doc! { "t": at(ms), "m": meta }]);
}

/// The series name used by the stripe probe: all of equal length, so every bucket of these
/// tests has the same shape and the same memory footprint.
fn series(i: usize) -> String {
    format!("s{i:04}")
}

/// Series sharing one catalog stripe (the first one is the probe's anchor) and series found to
/// be in other stripes.
struct Stripes {
    mates: Vec<String>,
    others: Vec<String>,
}

/// Finds 10 series in one stripe and a few outside it, by behaviour only (SPEC ):
/// with a 1-byte threshold every allocation expires the idle buckets *of its own stripe*. The
/// anchor series A is idle; a new candidate series C is inserted (allocation, expiry in C's
/// stripe), then A is inserted again. A was expired iff C shares its stripe, and then A's insert
/// has to reopen it (`numBucketsReopened` + 1); otherwise A's open bucket simply takes it.
///
/// The anchor's bucket gets one measurement per candidate: far below 1000, within the span.
fn stripe_mates() -> &'static Stripes {
    static PROBE: OnceLock<Stripes> = OnceLock::new();
    PROBE.get_or_init(|| {
        let (_d, _db, coll) = setup(1);
        let anchor = series(0);
        one(&coll, &anchor, 0);
        let mut found = Stripes {
            mates: vec![anchor.clone()],
            others: Vec::new(),
        };
        let mut i = 1;
        while found.mates.len() < 10 {
            assert!(i < 2_000, "no 10 series in one stripe among 2000");
            let candidate = series(i);
            one(&coll, &candidate, 0);
            let before = stats(&coll).execution.num_buckets_reopened;
            #[expect(clippy::cast_possible_wrap, reason = "i < 2000")]
            one(&coll, &anchor, i as i64);
            if stats(&coll).execution.num_buckets_reopened > before {
                found.mates.push(candidate);
            } else {
                found.others.push(candidate);
            }
            i += 1;
        }
        // If expiry were not stripe-local every candidate would look like a mate.
        assert!(
            found.others.len() >= 5,
            "expiry is not stripe-local: {} of {} candidates expired the anchor",
            found.mates.len() - 1,
            i - 1
        );
        found
    })
}

// ---- idle list ---------------------------------------------------------------------

/// a bucket is idle once its insert call has finished; reusing it takes it off the
/// idle list and puts it back at the front, so it is no longer the least recently idled one.
#[test]
fn r_6_9_1_bucket_is_idle_after_its_call_and_reuse_moves_it_to_the_front() {
    let mates = &stripe_mates().mates;
    let (s1, s2, s3, s4) = (&mates[0], &mates[1], &mates[2], &mates[3]);
    let (_d, db, coll) = setup(u64::MAX);
    one(&coll, s1, 0);
    let s = stats(&coll);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (1, 1));
    one(&coll, s2, MINUTE);
    one(&coll, s3, 2 * MINUTE);
    let s = stats(&coll);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (3, 3));
    // Reuse s1: still 3 idle buckets after the call, and the idle order is now s2, s3, s1.
    one(&coll, s1, 1_000);
    let s = stats(&coll);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (3, 3));
    assert_eq!(s.bucket_count, 3);

    // A threshold one byte below the current memory: the next allocation in this stripe
    // archives exactly one bucket (an archived record is smaller than an open bucket), the
    // least recently idled one.
    set_threshold(&db, s.memory_usage - 1);
    one(&coll, s4, 3 * MINUTE);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_memory_threshold, 0);
    assert_eq!(s.num_archived_buckets, 1);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (3, 3));
    assert_eq!(s.num_active_buckets, 4);

    // Which one: s1 and s3 are still open, s2 comes back from the archive.
    set_threshold(&db, u64::MAX);
    one(&coll, s1, 2_000);
    one(&coll, s3, 2 * MINUTE + 1_000);
    assert_eq!(stats(&coll).execution.num_buckets_reopened, 0);
    one(&coll, s2, MINUTE + 1_000);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_fetched, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(s.execution.num_buckets_queried, 0);
    assert_eq!(s.bucket_count, 4);
    assert_eq!(s.measurement_count, 8);
}

// ---- when expiry runs ----------------------------------------------------------------

/// lowering the threshold does nothing by itself, nor does an insert into an open
/// bucket, nor an allocation in another stripe; the next allocation in the stripe expires.
#[test]
fn r_6_9_2_expiry_runs_only_when_a_bucket_is_allocated_or_reopened() {
    let found = stripe_mates();
    let (s1, s2, s3, s4) = (
        &found.mates[0],
        &found.mates[1],
        &found.mates[2],
        &found.mates[3],
    );
    let other = &found.others[0];
    let (_d, db, coll) = setup(u64::MAX);
    one(&coll, s1, 0);
    one(&coll, s2, MINUTE);
    let before = stats(&coll);
    assert_eq!(before.num_idle_buckets, 2);

    set_threshold(&db, 1);
    let s = stats(&coll);
    assert_eq!(s.num_idle_buckets, 2);
    assert_eq!(s.num_archived_buckets, 0);
    assert_eq!(s.memory_usage, before.memory_usage);
    assert_eq!(s.execution, before.execution);

    // An insert into an open bucket allocates nothing: no expiry (and s1 is now the most
    // recently idled bucket).
    one(&coll, s1, 1_000);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 0);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (2, 2));

    // An allocation in another stripe expires nothing of this stripe.
    one(&coll, other, 0);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 0);
    assert_eq!(s.execution.num_buckets_closed_due_to_memory_threshold, 0);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (3, 3));

    // An allocation in this stripe: s2 then s1 are archived, then their records are dropped
    // (4 = MaxCountPerAttempt + 1 expiries).
    one(&coll, s3, 2 * MINUTE);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_memory_threshold, 2);
    assert_eq!(s.num_archived_buckets, 0);
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (2, 2));
    assert_eq!(s.num_active_buckets, 2);

    // A reopening runs expiry too: with the threshold high s4 joins s3; with it low again, the
    // query-based reopening of s1 (its record was dropped) archives s3 and s4 and drops their
    // records first.
    set_threshold(&db, u64::MAX);
    one(&coll, s4, 3 * MINUTE);
    set_threshold(&db, 1);
    one(&coll, s1, 2_000);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_queried, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 4);
    assert_eq!(s.execution.num_buckets_closed_due_to_memory_threshold, 4);
    assert_eq!(s.num_archived_buckets, 0);
    // Open now: `other` (another stripe) and s1.
    assert_eq!((s.num_open_buckets, s.num_idle_buckets), (2, 2));
    assert_eq!(s.bucket_count, 5);
    assert_eq!(s.measurement_count, 7);
}

// ---- what expiry does ----------------------------------------------------------------

/// Expected state after one step of [`expiry_scenario`]: counters and gauges.
#[derive(Debug, PartialEq, Eq)]
struct Expiry {
    archived_due_to_memory: u64,
    closed_due_to_memory: u64,
    archived_records: u64,
    open: u64,
}

fn expiry(coll: &Collection) -> Expiry {
    let s = stats(coll);
    assert_eq!(
        s.num_active_buckets,
        s.num_open_buckets + s.num_archived_buckets
    );
    Expiry {
        archived_due_to_memory: s.execution.num_buckets_archived_due_to_memory_threshold,
        closed_due_to_memory: s.execution.num_buckets_closed_due_to_memory_threshold,
        archived_records: s.num_archived_buckets,
        open: s.num_open_buckets,
    }
}

/// How a series' next measurement found its bucket again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Back {
    /// Its bucket was still open.
    Open,
    /// Reopened from its archived record.
    Archive,
    /// Its record had been dropped: reopened by query.
    Query,
}

/// Series S1..S6 of one stripe become idle in that order (S_i at `T0 + i min`, so the order
/// in which they are archived is also the order of their min times: "oldest-first" has one
/// meaning here). With a 1-byte threshold (memory always above it) S7, S8 and S9 are opened;
/// `after` holds the expected state after each of the three allocations. Then, with the
/// threshold high again (no more expiry), S1..S9 each get a measurement in their span, one call
/// each; `back[i - 1]` is how S_i must find its bucket.
fn expiry_scenario(max_count_per_attempt: u32, after: [Expiry; 3], back: [Back; 9]) {
    let mates = &stripe_mates().mates;
    let (_d, db, coll) = temp_collection(
        CatalogOptions {
            idle_bucket_expiry_max_count_per_attempt: max_count_per_attempt,
            ..catalog(u64::MAX)
        },
        &options(true),
    );
    let min_of = |i: usize| {
        #[expect(clippy::cast_possible_wrap, reason = "i < 10")]
        let i = i as i64;
        i * MINUTE
    };
    for (i, m) in mates.iter().enumerate().take(7).skip(1) {
        one(&coll, m, min_of(i));
    }
    assert_eq!(
        expiry(&coll),
        Expiry {
            archived_due_to_memory: 0,
            closed_due_to_memory: 0,
            archived_records: 0,
            open: 6
        }
    );
    set_threshold(&db, 1);
    for (step, i) in (7..=9).enumerate() {
        one(&coll, &mates[i], min_of(i));
        assert_eq!(expiry(&coll), after[step], "after opening S{i}");
    }

    set_threshold(&db, u64::MAX);
    let mut actual = Vec::new();
    for (i, m) in mates.iter().enumerate().take(10).skip(1) {
        let before = stats(&coll).execution;
        one(&coll, m, min_of(i) + 1_000);
        let e = stats(&coll).execution;
        let how = match (
            e.num_buckets_fetched - before.num_buckets_fetched,
            e.num_buckets_queried - before.num_buckets_queried,
            e.num_buckets_reopened - before.num_buckets_reopened,
        ) {
            (0, 0, 0) => Back::Open,
            (1, 0, 1) => Back::Archive,
            (0, 1, 1) => Back::Query,
            other => panic!("S{i}: fetched/queried/reopened went up by {other:?}"),
        };
        actual.push(how);
    }
    assert_eq!(actual, back);
    let st = stats(&coll);
    let e = &st.execution;
    // No new bucket: every series continued its own bucket.
    assert_eq!(st.bucket_count, 9);
    assert_eq!(st.measurement_count, 18);
    assert_eq!(e.num_bucket_inserts, 9);
    assert_eq!(e.num_bucket_updates, 9);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 9);
    assert_eq!(e.num_bucket_fetches_failed, 0);
    // Every new series queried once and missed.
    assert_eq!(e.num_bucket_queries_failed, 9);
    assert_eq!(st.num_archived_buckets, 0);
    assert_eq!(st.num_open_buckets, 9);
}

/// with the default `timeseriesIdleBucketExpiryMaxCountPerAttempt` = 3: up to 4
/// expiries per attempt; least recently idled buckets are archived first; archived records are
/// dropped oldest-first only once no idle bucket is left in the stripe. A dropped record's
/// bucket comes back by query, an archived one by archive.
#[test]
fn r_6_9_3_expiry_archives_lru_first_then_drops_records_default_max_count() {
    use Back::{Archive, Open, Query};
    // Opening S7: archive S1, S2, S3, S4 (4). Opening S8: archive S5, S6, S7 (3), no idle left:
    // drop S1's record (1). Opening S9: archive S8, drop S2, S3, S4.
    expiry_scenario(
        3,
        [
            Expiry {
                archived_due_to_memory: 4,
                closed_due_to_memory: 0,
                archived_records: 4,
                open: 3,
            },
            Expiry {
                archived_due_to_memory: 7,
                closed_due_to_memory: 1,
                archived_records: 6,
                open: 1,
            },
            Expiry {
                archived_due_to_memory: 8,
                closed_due_to_memory: 4,
                archived_records: 4,
                open: 1,
            },
        ],
        [
            Query, Query, Query, Query, Archive, Archive, Archive, Archive, Open,
        ],
    );
}

/// with `timeseriesIdleBucketExpiryMaxCountPerAttempt` = 2: up to 3 expiries per attempt.
#[test]
fn r_6_9_3_expiry_archives_lru_first_then_drops_records_max_count_2() {
    use Back::{Archive, Open, Query};
    // Opening S7: archive S1, S2, S3. Opening S8: archive S4, S5, S6. Opening S9: archive S7,
    // S8, no idle left: drop S1's record.
    expiry_scenario(
        2,
        [
            Expiry {
                archived_due_to_memory: 3,
                closed_due_to_memory: 0,
                archived_records: 3,
                open: 4,
            },
            Expiry {
                archived_due_to_memory: 6,
                closed_due_to_memory: 0,
                archived_records: 6,
                open: 2,
            },
            Expiry {
                archived_due_to_memory: 8,
                closed_due_to_memory: 1,
                archived_records: 7,
                open: 1,
            },
        ],
        [
            Query, Archive, Archive, Archive, Archive, Archive, Archive, Archive, Open,
        ],
    );
}

/// with §6.2 step 4 and R-6.8.1 (reading closest to MongoDB's source, where the archived
/// candidate is found and its bucket fetched *before* `loadBucketIntoCatalog` runs
/// `expireIdleBuckets`): the archive lookup happens before the expiry that precedes the
/// reopening, so a record that expiry would drop is still used. Here the series' open bucket is
/// soft-closed (time forward), which disables query-based reopening; the archived bucket must
/// still take the measurement.
#[test]
fn r_6_9_2_archived_candidate_is_chosen_before_expiry_runs() {
    let mates = &stripe_mates().mates;
    let (s1, s2) = (&mates[0], &mates[1]);
    let (_d, db, coll) = setup(u64::MAX);
    // s1: A (min T0) archived by a time-backward measurement, B (min T0 − 2 h) open.
    one(&coll, s1, 30_000);
    one(&coll, s1, -2 * HOUR);
    // s2 idle in the same stripe.
    one(&coll, s2, MINUTE);
    let s = stats(&coll);
    assert_eq!(s.num_archived_buckets, 1);
    assert_eq!(s.num_open_buckets, 2);
    // A measurement of s1 in A's span: B is soft-closed (time forward, query disabled); A is
    // the archived candidate. Expiry (1-byte threshold) then archives s2 and drops records, A's
    // first (the oldest), but A was already chosen and is reopened.
    set_threshold(&db, 1);
    one(&coll, s1, 40_000);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(
        (
            s.execution.num_buckets_fetched,
            s.execution.num_buckets_reopened,
            s.bucket_count
        ),
        (1, 1, 3),
        "fetched, reopened, buckets"
    );
    let counts = bucket_counts(&coll);
    assert_eq!(counts, [1, 1, 2]);
}

/// step 6 with: a series whose bucket was expired from memory has no open bucket;
/// a measurement outside the archived bucket's span opens a new bucket "due to metadata" again.
#[test]
fn r_6_2_step_6_series_expired_from_memory_opens_due_to_metadata_again() {
    let mates = &stripe_mates().mates;
    let (s1, s2) = (&mates[0], &mates[1]);
    let (_d, db, coll) = setup(u64::MAX);
    one(&coll, s1, 0);
    set_threshold(&db, 1);
    one(&coll, s2, MINUTE);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 1);
    set_threshold(&db, u64::MAX);
    one(&coll, s1, 2 * HOUR);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 3);
    assert_eq!(s.execution.num_buckets_fetched, 0);
    assert_eq!(s.execution.num_buckets_reopened, 0);
    assert_eq!(s.bucket_count, 3);
}

/// with and §8.2 (reading closest to MongoDB, whose bucket catalog and memory
/// threshold are global to the server): the threshold is compared with the memory of the whole
/// catalog, i.e. of every collection of the database, not with one collection's share.
#[test]
fn r_6_9_3_threshold_applies_to_the_memory_of_all_collections() {
    let mates = &stripe_mates().mates;
    let (s1, s2) = (&mates[0], &mates[1]);
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(
        dir.path(),
        tscoll_engine::DatabaseOptions {
            catalog: catalog(u64::MAX),
            ..tscoll_engine::DatabaseOptions::default()
        },
    )
    .expect("open");
    let big = db.create_collection("big", &options(true)).expect("create");
    let small = db
        .create_collection("small", &options(true))
        .expect("create");
    let docs: Vec<Document> = (0..40).map(|i| doc! { "t": at(0), "m": i }).collect();
    insert_all(&big, &docs);
    one(&small, s1, 0);
    let per_bucket = stats(&small).memory_usage;
    let total = db.catalog_stats().expect("catalog stats").memory_usage;
    assert!(total > 20 * per_bucket);
    // Above what `small` holds, below what the catalog holds.
    set_threshold(&db, 10 * per_bucket);
    one(&small, s2, MINUTE);
    let e = stats(&small).execution;
    assert_eq!(e.num_buckets_archived_due_to_memory_threshold, 1);
    assert_eq!(e.num_buckets_closed_due_to_memory_threshold, 1);
}

// ---- what memory counts ----------------------------------------------------------------

fn one_mib_meta(i: usize) -> String {
    let mut s = format!("{i:04}");
    s.push_str(&"x".repeat(usize::try_from(MIB).expect("1 MiB") - 4));
    s
}

/// the stored meta value counts, so 70 buckets with distinct 1 MiB meta values hold
/// more than 70 MiB, above a 10 MiB threshold.
#[test]
fn r_6_9_5_seventy_1_mib_meta_values_exceed_a_10_mib_threshold() {
    let (_d, _db, coll) = setup(u64::MAX);
    for i in 0..70 {
        insert_all(&coll, &[doc! { "t": at(0), "m": one_mib_meta(i) }]);
    }
    let s = stats(&coll);
    assert_eq!(s.num_open_buckets, 70);
    assert!(s.memory_usage >= 70 * MIB, "{} bytes", s.memory_usage);
    assert!(s.memory_usage > 10 * MIB);
    assert_eq!(s.execution.num_buckets_archived_due_to_memory_threshold, 0);
}

/// with: with the threshold at 10 MiB, the same 70 buckets are expired as they
/// go idle. Expiry only looks at the stripe of the bucket being opened, so each of the 32
/// stripes may keep its most recent bucket: memory stays at most threshold + 32 buckets, well
/// below the 70 buckets opened.
#[test]
fn r_6_9_5_expiry_bounds_memory_with_1_mib_meta_values() {
    let threshold = 10 * MIB;
    let (_d, db, coll) = setup(threshold);
    insert_all(&coll, &[doc! { "t": at(0), "m": one_mib_meta(0) }]);
    let per_bucket = stats(&coll).memory_usage;
    assert!(per_bucket >= MIB);
    let bound = threshold + STRIPES * per_bucket;
    let mut peak = 0;
    for i in 1..70 {
        insert_all(&coll, &[doc! { "t": at(0), "m": one_mib_meta(i) }]);
        let mem = db.catalog_stats().expect("catalog stats").memory_usage;
        peak = peak.max(mem);
        assert!(mem <= bound, "after {} series: {mem} > {bound}", i + 1);
    }
    let s = stats(&coll);
    assert!(peak < 70 * per_bucket);
    assert!(s.execution.num_buckets_archived_due_to_memory_threshold > 0);
    assert!(s.execution.num_buckets_closed_due_to_memory_threshold > 0);
    assert!(s.num_open_buckets < 70);
    assert_eq!(s.bucket_count, 70);
    assert_eq!(s.measurement_count, 70);
}

// ---- memory bound at high cardinality ------------------------------------------------------------

/// at high cardinality: 100 000 series (int meta), two measurements each, in
/// `insert_many` calls of 1000 measurements (one per series), with a 4 MiB threshold. After
/// every call the catalog memory is at most threshold + the bytes of the buckets that call
/// opened or reopened: those are not idle (not expirable) until their batches are committed.
/// Every second measurement continues its series' bucket (open, archived or queried back), so
/// there are exactly 100 000 buckets of 2.
#[test]
fn r_6_9_3_memory_stays_bounded_with_100000_series() {
    const SERIES: i32 = 100_000;
    const CALL: usize = 1_000;
    let threshold = 4 * MIB;
    let started = Instant::now();
    let (_d, db, coll) = setup(threshold);
    let mut per_bucket = 0;
    let mut peak = 0;
    for pass in 0..2_i64 {
        for start in (0..SERIES).step_by(CALL) {
            let docs: Vec<Document> = (start..SERIES)
                .take(CALL)
                .map(|m| doc! { "t": at(pass * 1_000), "m": m })
                .collect();
            insert_all(&coll, &docs);
            let mem = db.catalog_stats().expect("catalog stats").memory_usage;
            if per_bucket == 0 {
                // The first call opens 1000 buckets of the same shape, under the threshold.
                assert!(mem < threshold);
                per_bucket = mem / CALL as u64;
            }
            let allowance = CALL as u64 * per_bucket;
            peak = peak.max(mem);
            assert!(
                mem <= threshold + allowance,
                "pass {pass}, series {start}..: {mem} > {threshold} + {allowance}"
            );
        }
    }
    let s = stats(&coll);
    let e = &s.execution;
    assert_eq!(s.measurement_count, 200_000);
    assert_eq!(s.bucket_count, 100_000);
    assert!(
        e.num_buckets_archived_due_to_memory_threshold
            + e.num_buckets_closed_due_to_memory_threshold
            > 0
    );
    assert_eq!(e.num_bucket_inserts, 100_000);
    assert_eq!(e.num_bucket_updates, 100_000);
    assert_eq!(e.num_commits, 200_000);
    assert_eq!(e.num_measurements_committed, 200_000);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 100_000);
    assert_eq!(e.num_bucket_queries_failed, 100_000);
    assert_eq!(
        e.num_buckets_reopened,
        e.num_buckets_fetched + e.num_buckets_queried
    );
    assert_eq!(e.num_bucket_fetches_failed, 0);
    assert!(e.num_buckets_reopened > 0);
    let sample = coll
        .find(&doc! { "m": 4_242 }, &tscoll_engine::FindOptions::default())
        .expect("find");
    assert_eq!(sample.len(), 2);
    assert!(
        sample
            .iter()
            .all(|d| d.get("m") == Some(&Bson::Int32(4_242)))
    );
    eprintln!(
        "100 000 series: peak catalog memory {peak} bytes (threshold {threshold}, {per_bucket} \
         bytes per bucket), {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
