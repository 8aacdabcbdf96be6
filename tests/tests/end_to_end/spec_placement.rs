//! SPEC §6.2–§6.8 conformance for the placement rules the other files do not cover: which
//! marked buckets are candidates (§6.2 step 2), which rollovers disable query-based reopening
//! (step 3), archive-based before query-based reopening (step 4, R-6.8.1), the actions of
//! for buckets that are certainly full by size, R-6.3.5 (a new bucket always takes its
//! first measurement), the cache-derived limits of §6.5 step 2 and §6.6 (`bucket_min_size`
//! floor), the archived record picks, and loading a reopened bucket.
//!
//! Not covered because the public, single-writer API cannot reach them: the order of marked
//! candidates (§6.2 step 2: a soft-close- or archive-marked bucket still holding uncommitted
//! batches can only be a candidate for a measurement of another concurrent writer, since one
//! call sorts each series by time), `numBucketsClosedDueToReopening` and
//! `numDuplicateBucketsReopened` (R-6.8.5: need another writer to open or hold a bucket of the
//! key while a reopening runs), R-6.3.2 "another archived record with the same (key, min time)"
//! (needs two buckets of one series with the same min time in memory at once), the bucket
//! states of §6.7/§6.10 (need updates, deletes or a storage failure), and R-12.5 (no collMod).

use bson::{Document, doc};
use tscoll_engine::{CatalogOptions, Collection, CollectionStats, Database, TimeseriesOptions};
use tscoll_tests::spec::{T0, at, insert_all, insert_each, options, temp_collection};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

fn setup_with(catalog: CatalogOptions) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(catalog, &options(true))
}

fn setup() -> (tempfile::TempDir, Database, Collection) {
    setup_with(CatalogOptions::default())
}

fn stats(coll: &Collection) -> CollectionStats {
    coll.stats().expect("stats")
}

fn control(b: &Document) -> &Document {
    b.get_document("control").expect("control")
}

/// `(control.min.t − T0, control.count)` of every bucket, by min time then count.
fn layout(coll: &Collection) -> Vec<(i64, i64)> {
    let mut v: Vec<(i64, i64)> = coll
        .buckets()
        .expect("buckets")
        .iter()
        .map(|b| {
            let c = control(b);
            let min = c
                .get_document("min")
                .and_then(|m| m.get_datetime("t"))
                .expect("control.min.t")
                .timestamp_millis();
            (min - T0, c.get_i64("count").expect("control.count"))
        })
        .collect();
    v.sort_unstable();
    v
}

/// `n` measurements of series `m` holding a `len`-byte string, one second apart from `T0`.
fn big(m: &str, n: i64, len: usize) -> Vec<Document> {
    (0..n)
        .map(|i| doc! { "t": at(i * 1_000), "m": m, "x": "a".repeat(len) })
        .collect()
}

// ---- §6.2 step 2: candidates ----------------------------------------------------------------

/// §6.2 step 2: a bucket marked for a hard close (here schema change) while its batch is still
/// uncommitted is not a candidate for the next measurements of the same call, even one that
/// would be schema-compatible with it; only soft-close- and archive-marked buckets are
/// (MongoDB's `useAlternateBucket` skips `kNone` and `kHardClose`). One call, sorted by time:
/// {x: 1} opens A; {x: "s"} hard-closes A and opens B; {x: 2} cannot go to A, hard-closes B
/// (schema) and opens C.
#[test]
fn r_6_2_step_2_hard_close_marked_bucket_is_not_a_candidate_in_the_same_call() {
    let (_d, _db, coll) = setup();
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "a", "x": 1 },
            doc! { "t": at(1_000), "m": "a", "x": "s" },
            doc! { "t": at(2_000), "m": "a", "x": 2 },
        ],
    );
    let s = stats(&coll);
    assert_eq!(
        (
            s.bucket_count,
            s.execution.num_buckets_closed_due_to_schema_change
        ),
        (3, 2),
        "buckets, schema-change closures"
    );
    assert_eq!(layout(&coll), [(0, 1), (0, 1), (0, 1)]);
    assert_eq!(s.execution.num_commits, 3);
    assert_eq!(s.execution.num_bucket_inserts, 3);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 1);
}

// ---- §6.2 step 3: rollovers that disable query-based reopening --------------------------------

/// §6.2 step 3: a schema-change rollover disables query-based reopening for that measurement.
/// A (x int, min T0) is hard-closed by {x: "s"}, which opens B (min T0); {x: 2} then
/// hard-closes B and, although A is on disk, within the span and compatible, opens C.
#[test]
fn r_6_2_step_3_schema_change_disables_query_reopening() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a", "x": 1 },
            doc! { "t": at(1_000), "m": "a", "x": "s" },
            doc! { "t": at(2_000), "m": "a", "x": 2 },
        ],
    );
    let s = stats(&coll);
    let e = &s.execution;
    assert_eq!(s.bucket_count, 3);
    assert_eq!(layout(&coll), [(0, 1), (0, 1), (0, 1)]);
    assert_eq!(e.num_buckets_closed_due_to_schema_change, 2);
    assert_eq!(e.num_buckets_queried, 0);
    assert_eq!(e.num_buckets_reopened, 0);
    // Only the series' first measurement queried.
    assert_eq!(e.num_bucket_queries_failed, 1);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 1);
}

// ---- §6.2 step 4 / R-6.8.1: archive first -------------------------------------------------------

/// §6.2 step 4: with query-based reopening allowed (the open bucket failed for time backward
/// only), an archived bucket that can hold the time is reopened from the archive; no query runs.
#[test]
fn r_6_2_step_4_archive_based_reopening_is_tried_before_query_based() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            // A (min T0).
            doc! { "t": at(30_000), "m": "a" },
            // A archived (time backward), B (min T0 − 2 h).
            doc! { "t": at(-2 * HOUR), "m": "a" },
            // B soft-closed (time forward); A's record is a full span away: C (min T0 + 2 h).
            doc! { "t": at(2 * HOUR), "m": "a" },
            // C archived (time backward, query allowed); A's record holds T0 + 40 s.
            doc! { "t": at(40_000), "m": "a" },
        ],
    );
    let s = stats(&coll);
    let e = &s.execution;
    assert_eq!(e.num_buckets_fetched, 1);
    assert_eq!(e.num_buckets_queried, 0);
    assert_eq!(e.num_buckets_reopened, 1);
    // Queries: the series' first measurement and the time-backward one of B's allocation.
    assert_eq!(e.num_bucket_queries_failed, 2);
    assert_eq!(e.num_buckets_archived_due_to_time_backward, 2);
    assert_eq!(e.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(layout(&coll), [(-2 * HOUR, 1), (0, 2), (2 * HOUR, 1)]);
    // C's record remains; A is the open bucket.
    assert_eq!((s.num_archived_buckets, s.num_open_buckets), (1, 1));
}

// ---- certainly-full buckets are closed, not archived --------------------------------------

/// R-6.3.2 [master]: a bucket that is certainly full by size (estimate ≥ max size with count ≥
/// min count) is closed instead of archived on a time-backward rollover, counting as a size
/// closure. Ten 31 000-byte strings stay in one bucket by the min-count rule (§6.5 step 2), far
/// above 128 000 bytes.
#[test]
fn r_6_3_2_time_backward_on_bucket_full_by_size_closes_for_size_instead_of_archiving() {
    let (_d, _db, coll) = setup();
    insert_each(&coll, &big("a", 10, 31_000));
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        1
    );
    insert_each(&coll, &[doc! { "t": at(-1), "m": "a", "x": 1 }]);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 0);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 1);
    assert_eq!(s.num_archived_buckets, 0);
    assert_eq!(s.num_active_buckets, 1);
    assert_eq!(layout(&coll), [(-MINUTE, 1), (0, 10)]);
}

/// over the size limit but below the min count, a bucket is not certainly full: the
/// time-backward rollover archives it.
#[test]
fn r_6_3_2_time_backward_on_large_bucket_below_min_count_archives() {
    let (_d, _db, coll) = setup();
    insert_each(&coll, &big("a", 3, 31_000));
    insert_each(&coll, &[doc! { "t": at(-1), "m": "a", "x": 1 }]);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 1);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 0);
    assert_eq!(s.num_archived_buckets, 1);
    assert_eq!(s.num_active_buckets, 2);
    assert_eq!(layout(&coll), [(-MINUTE, 1), (0, 3)]);
}

// ---- R-6.3.5 / §6.5 / §6.6 -----------------------------------------------------------------------

/// the first measurement of a new bucket is never refused by §6.3: with a 1-byte size
/// limit and min count 1 every measurement gets a bucket of its own (and every second one
/// closes the previous bucket for size) — one per call and all in one call alike.
#[test]
fn r_6_3_5_new_bucket_always_takes_its_first_measurement() {
    let catalog = CatalogOptions {
        bucket_max_size: 1,
        bucket_min_count: 1,
        ..CatalogOptions::default()
    };
    let docs: Vec<Document> = (0..4)
        .map(|i| doc! { "t": at(i * 1_000), "m": "a", "x": i })
        .collect();
    for one_call in [false, true] {
        let (_d, _db, coll) = setup_with(catalog.clone());
        if one_call {
            insert_all(&coll, &docs);
        } else {
            insert_each(&coll, &docs);
        }
        let s = stats(&coll);
        assert_eq!(s.bucket_count, 4, "one call: {one_call}");
        assert_eq!(layout(&coll), [(0, 1); 4]);
        assert_eq!(s.execution.num_buckets_closed_due_to_size, 3);
        assert_eq!(s.execution.num_bucket_inserts, 4);
        assert_eq!(s.execution.num_bucket_updates, 0);
    }
}

/// §6.5 step 2 with §6.6: below the min count, a bucket whose estimate would pass a
/// cache-derived ceiling (< 12 582 912) rolls over for cache pressure, not size. Cache 400 000
/// bytes and one active bucket: derived = ceiling = 200 000. A 100 000-byte string is
/// estimated at ~300 000 bytes (data, min and max copies): each is still accepted by its new
/// bucket, the next one closes it.
#[test]
fn r_6_5_cache_derived_ceiling_below_min_count_is_cache_pressure() {
    let (_d, _db, coll) = temp_collection(
        CatalogOptions {
            cache_size_bytes: 400_000,
            ..CatalogOptions::default()
        },
        &TimeseriesOptions::new("t"),
    );
    let docs: Vec<Document> = (0..3)
        .map(|i| doc! { "t": at(i * 1_000), "x": "a".repeat(100_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 3);
    assert_eq!(s.execution.num_buckets_closed_due_to_cache_pressure, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 0);
    assert_eq!(
        s.execution.num_buckets_kept_open_due_to_large_measurements,
        0
    );
}

/// §6.6: the cache-derived size is floored at `timeseriesBucketMinSize` (5 120). Cache
/// 400 000 bytes with 51 active buckets gives 400 000 / 102 = 3 921, raised to 5 120. Each
/// measurement `{_id: int32, t, x: 1000-byte string}` adds (classic estimate, §6.4) 3 120 as a
/// bucket's first and 1 026 afterwards, plus ~11 for the meta "a": 2 fit (4 157), a third
/// (5 183) passes the 5 120 ceiling below the min count: cache pressure. Without the floor a
/// bucket would hold 1.
#[test]
fn r_6_6_derived_size_limit_is_floored_at_bucket_min_size() {
    let (_d, _db, coll) = setup_with(CatalogOptions {
        cache_size_bytes: 400_000,
        ..CatalogOptions::default()
    });
    let others: Vec<Document> = (0..50)
        .map(|i| doc! { "t": at(0), "m": format!("o{i:02}") })
        .collect();
    insert_all(&coll, &others);
    assert_eq!(stats(&coll).num_active_buckets, 50);
    let docs: Vec<Document> = (0..6)
        .map(|i| doc! { "_id": i32::try_from(i).expect("small"), "t": at(i * 1_000), "m": "a", "x": "z".repeat(1_000) })
        .collect();
    insert_each(&coll, &docs);
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_closed_due_to_cache_pressure, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_size, 0);
    let mut a: Vec<i64> = coll
        .buckets()
        .expect("buckets")
        .iter()
        .filter(|b| b.get_str("meta").ok() == Some("a"))
        .map(|b| control(b).get_i64("count").expect("count"))
        .collect();
    a.sort_unstable();
    assert_eq!(a, [2, 2, 2]);
}

// ---- which archived record ----------------------------------------------------------------

/// among the archived records of the key, the one with the largest min time ≤ the
/// measurement's time is taken. X (min T0 + 30 min) and Y (min T0) are archived; T0 + 40 min
/// could fit both, it goes to X.
#[test]
fn r_6_8_1_archive_takes_the_record_with_the_largest_min_time_not_after_the_time() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(30 * MINUTE), "m": "a" }, // X
            doc! { "t": at(0), "m": "a" },           // X archived, Y
            doc! { "t": at(-2 * HOUR), "m": "a" },   // Y archived, Z
            // Z soft-closed (time forward, query disabled): archive lookup.
            doc! { "t": at(40 * MINUTE), "m": "a" },
        ],
    );
    let s = stats(&coll);
    assert_eq!(s.execution.num_buckets_fetched, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(s.execution.num_buckets_archived_due_to_time_backward, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(layout(&coll), [(-2 * HOUR, 1), (0, 1), (30 * MINUTE, 2)]);
    // Y's record is still there.
    assert_eq!((s.num_archived_buckets, s.num_open_buckets), (1, 1));
}

/// an archived record is usable iff `time − minTime < span`: a measurement a full span
/// after its min time opens a new bucket (the record stays), 1 ms less reopens it.:
/// the reopened bucket becomes the series' open bucket and its record is dropped.
#[test]
fn r_6_8_1_archived_record_is_usable_only_within_the_span() {
    for (offset, reopens) in [(HOUR, false), (HOUR - 1, true)] {
        let (_d, _db, coll) = setup();
        insert_each(
            &coll,
            &[
                doc! { "t": at(30_000), "m": "a" },       // A (min T0)
                doc! { "t": at(-30 * MINUTE), "m": "a" }, // A archived, B (min T0 − 30 min)
                // B soft-closed (time forward, query disabled).
                doc! { "t": at(offset), "m": "a" },
            ],
        );
        let s = stats(&coll);
        let e = &s.execution;
        assert_eq!(e.num_buckets_closed_due_to_time_forward, 1, "{offset}");
        assert_eq!(e.num_bucket_fetches_failed, 0);
        if reopens {
            assert_eq!((e.num_buckets_fetched, e.num_buckets_reopened), (1, 1));
            assert_eq!(layout(&coll), [(-30 * MINUTE, 1), (0, 2)]);
            // A is the open (idle) bucket, no archived record left.
            assert_eq!(
                (
                    s.num_active_buckets,
                    s.num_open_buckets,
                    s.num_idle_buckets,
                    s.num_archived_buckets
                ),
                (1, 1, 1, 0)
            );
            // And it takes the next measurement of its span without reopening.
            insert_each(&coll, &[doc! { "t": at(offset - 1), "m": "a" }]);
            let s = stats(&coll);
            assert_eq!(s.execution.num_buckets_reopened, 1);
            assert_eq!(layout(&coll), [(-30 * MINUTE, 1), (0, 3)]);
        } else {
            assert_eq!((e.num_buckets_fetched, e.num_buckets_reopened), (0, 0));
            assert_eq!(layout(&coll), [(-30 * MINUTE, 1), (0, 1), (HOUR, 1)]);
            assert_eq!(
                (
                    s.num_active_buckets,
                    s.num_open_buckets,
                    s.num_archived_buckets
                ),
                (2, 1, 1)
            );
        }
    }
}

// ---- loading --------------------------------------------------------------------------------

/// a bucket reopened by query becomes the open bucket of its key. The previous open
/// bucket had already rolled over for time backward (archived, step 3), so nothing is closed
/// "due to reopening"; later measurements of the span go to the reopened bucket directly.
#[test]
fn r_6_8_5_query_reopened_bucket_becomes_the_open_bucket() {
    let (_d, _db, coll) = setup();
    insert_each(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },            // A (min T0)
            doc! { "t": at(HOUR), "m": "a" },         // A soft-closed, B (min T0 + 1 h)
            doc! { "t": at(HOUR / 2), "m": "a" },     // B archived, A reopened by query
            doc! { "t": at(HOUR / 2 + 1), "m": "a" }, // into A, no reopening
        ],
    );
    let s = stats(&coll);
    let e = &s.execution;
    assert_eq!(e.num_buckets_queried, 1);
    assert_eq!(e.num_buckets_reopened, 1);
    assert_eq!(e.num_buckets_closed_due_to_reopening, 0);
    assert_eq!(e.num_buckets_archived_due_to_time_backward, 1);
    assert_eq!(e.num_duplicate_buckets_reopened, 0);
    assert_eq!(
        (
            s.num_active_buckets,
            s.num_open_buckets,
            s.num_archived_buckets
        ),
        (2, 1, 1)
    );
    assert_eq!(layout(&coll), [(0, 3), (HOUR, 1)]);
}
