//! SPEC §8 conformance: the per-collection statistics of §8.1 (increment points of,
//! `avgNumMeasurementsPerCommit`, the gauge `numActiveBuckets` of, the names and order
//! of the current master counter list of including every
//! `numBucketReopeningsFailedDueTo*` of) and the engine-level catalog statistics of
//! §8.2 (`serverStatus.bucketCatalog`: omitted until something happened, sums over
//! collections, `numArchivedBuckets` = `numBuckets` − `numOpenBuckets`).

use bson::{Bson, Document, doc};
use tscoll_engine::{
    CatalogOptions, CollectionStats, Database, DatabaseOptions, InsertOptions, StatsSnapshot,
};
use tscoll_tests::spec::{at, insert_all, insert_each, options, temp_collection};

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;

/// The execution counters of the SPEC §8.1 table for current master, in output order, with
/// `avgNumMeasurementsPerCommit` (present only when `numCommits > 0`) after
/// `numMeasurementsCommitted`. `numBucketReopeningsFailed` is the [6.3–8.0] counter that master
/// splits into the `numBucketReopeningsFailedDueTo*` ones (R-6.8.3, in the order lists
/// the reasons).
const MASTER_COUNTERS: [&str; 38] = [
    "numBucketInserts",
    "numBucketUpdates",
    "numBucketsOpenedDueToMetadata",
    "numBucketsClosedDueToCount",
    "numBucketsClosedDueToSchemaChange",
    "numBucketsClosedDueToSize",
    "numBucketsClosedDueToTimeForward",
    "numBucketsClosedDueToMemoryThreshold",
    "numCommits",
    "numWaits",
    "numMeasurementsCommitted",
    "avgNumMeasurementsPerCommit",
    "numBucketsClosedDueToReopening",
    "numBucketsArchivedDueToMemoryThreshold",
    "numBucketsArchivedDueToTimeBackward",
    "numBucketsReopened",
    "numBucketsKeptOpenDueToLargeMeasurements",
    "numBucketsClosedDueToCachePressure",
    "numBucketsFrozen",
    "numCompressedBucketsConvertedToUnsorted",
    "numBucketsFetched",
    "numBucketFetchesFailed",
    "numBucketsQueried",
    "numBucketQueriesFailed",
    "numBucketReopeningsFailedDueToEraMismatch",
    "numBucketReopeningsFailedDueToMalformedIdField",
    "numBucketReopeningsFailedDueToHashCollision",
    "numBucketReopeningsFailedDueToMarkedFrozen",
    "numBucketReopeningsFailedDueToValidator",
    "numBucketReopeningsFailedDueToMarkedClosed",
    "numBucketReopeningsFailedDueToMinMaxCalculation",
    "numBucketReopeningsFailedDueToSchemaGeneration",
    "numBucketReopeningsFailedDueToUncompressedTimeColumn",
    "numBucketReopeningsFailedDueToCompressionFailure",
    "numBucketReopeningsFailedDueToWriteConflict",
    "numDuplicateBucketsReopened",
    "numBucketDocumentsTooLargeInsert",
    "numBucketDocumentsTooLargeUpdate",
];

/// The §8.1 counters expected in a document, without or with `avgNumMeasurementsPerCommit`.
fn counters(with_avg: bool) -> Vec<&'static str> {
    MASTER_COUNTERS
        .iter()
        .copied()
        .filter(|n| with_avg || *n != "avgNumMeasurementsPerCommit")
        .collect()
}

/// Names that must not appear: removed or renamed counters (§8.1 "Removed/renamed", the split
/// `numBucketReopeningsFailed`) and the fields MongoDB omits for time-series (`count`,
/// `avgObjSize`).
const ABSENT: [&str; 5] = [
    "numBucketsClosedDueToTimeBackward",
    "numBucketsArchivedDueToTimeForward",
    "numBucketReopeningsFailed",
    "count",
    "avgObjSize",
];

fn setup() -> (tempfile::TempDir, Database, tscoll_engine::Collection) {
    temp_collection(CatalogOptions::default(), &options(true))
}

fn stats(coll: &tscoll_engine::Collection) -> CollectionStats {
    coll.stats().expect("stats")
}

fn keys(d: &Document) -> Vec<&str> {
    d.keys().map(String::as_str).collect()
}

fn int64(d: &Document, key: &str) -> i64 {
    match d.get(key) {
        Some(Bson::Int64(v)) => *v,
        other => panic!("{key}: {other:?} is not an int64"),
    }
}

// ---- increment points ----------------------------------------------------------------

/// one commit per finished batch, i.e. per bucket an insert call touches — here 3
/// series in one call, one of them spread over 3 buckets by the count limit.
#[test]
fn r_8_1_2_one_call_commits_once_per_bucket_it_touches() {
    let (_d, _db, coll) = temp_collection(
        CatalogOptions {
            bucket_max_count: 3,
            ..CatalogOptions::default()
        },
        &options(true),
    );
    let mut docs: Vec<Document> = (0..7)
        .map(|i| doc! { "t": at(i * 1_000), "m": "a" })
        .collect();
    docs.push(doc! { "t": at(0), "m": "b" });
    docs.push(doc! { "t": at(1_000), "m": "b" });
    docs.push(doc! { "t": at(0), "m": "c" });
    insert_all(&coll, &docs);
    let e = stats(&coll).execution;
    assert_eq!(e.num_commits, 5);
    assert_eq!(e.num_bucket_inserts, 5);
    assert_eq!(e.num_bucket_updates, 0);
    assert_eq!(e.num_measurements_committed, 10);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 3);
    assert_eq!(e.num_buckets_closed_due_to_count, 2);

    // a's open bucket holds 1 (update); b's holds 2: one more fits (update), the next rolls
    // over for count (insert); d is new (insert): 4 commits.
    insert_all(
        &coll,
        &[
            doc! { "t": at(7_000), "m": "a" },
            doc! { "t": at(2_000), "m": "b" },
            doc! { "t": at(3_000), "m": "b" },
            doc! { "t": at(0), "m": "d" },
        ],
    );
    let s = stats(&coll);
    let e = &s.execution;
    assert_eq!(e.num_commits, 9);
    assert_eq!(e.num_bucket_inserts, 7);
    assert_eq!(e.num_bucket_updates, 2);
    assert_eq!(e.num_measurements_committed, 14);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 4);
    assert_eq!(e.num_buckets_closed_due_to_count, 3);
    assert_eq!(s.bucket_count, 7);
    assert_eq!(s.measurement_count, 14);
    assert_eq!(int64(&s.to_document(), "avgNumMeasurementsPerCommit"), 1);
}

/// a commit is a bucket insert when the bucket had no committed measurement
/// before, an update otherwise — also for buckets reopened by query or from the
/// archive.
#[test]
fn r_8_1_2_bucket_inserts_and_updates_across_calls() {
    let (_d, _db, coll) = setup();
    // A (min T0): insert, then update.
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(1_000), "m": "a" },
        ],
    );
    insert_all(&coll, &[doc! { "t": at(2_000), "m": "a" }]);
    let e = stats(&coll).execution;
    assert_eq!((e.num_bucket_inserts, e.num_bucket_updates), (1, 1));
    // Time forward: B (min T0 + 1 h) is inserted.
    insert_all(&coll, &[doc! { "t": at(HOUR), "m": "a" }]);
    let e = stats(&coll).execution;
    assert_eq!((e.num_bucket_inserts, e.num_bucket_updates), (2, 1));
    // Back to A's span: B is archived (time backward), A reopened by query: an update.
    insert_all(&coll, &[doc! { "t": at(HOUR / 2), "m": "a" }]);
    let e = stats(&coll).execution;
    assert_eq!((e.num_bucket_inserts, e.num_bucket_updates), (2, 2));
    assert_eq!((e.num_buckets_queried, e.num_buckets_fetched), (1, 0));
    // Forward into B's span: A is soft-closed, B reopened from the archive: an update.
    insert_all(&coll, &[doc! { "t": at(HOUR + 1_000), "m": "a" }]);
    let s = stats(&coll);
    let e = &s.execution;
    assert_eq!((e.num_bucket_inserts, e.num_bucket_updates), (2, 3));
    assert_eq!((e.num_buckets_queried, e.num_buckets_fetched), (1, 1));
    assert_eq!(e.num_buckets_reopened, 2);
    assert_eq!(e.num_commits, 5);
    assert_eq!(e.num_measurements_committed, 6);
    assert_eq!(e.num_buckets_closed_due_to_time_forward, 2);
    assert_eq!(e.num_buckets_archived_due_to_time_backward, 1);
    assert_eq!(e.num_buckets_opened_due_to_metadata, 1);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.measurement_count, 6);
}

/// §8.1: `avgNumMeasurementsPerCommit` = floor(`numMeasurementsCommitted` / `numCommits`),
/// right after `numMeasurementsCommitted`, and omitted while `numCommits` is 0 — also when the
/// only insert call had every measurement rejected.
#[test]
fn r_8_1_avg_num_measurements_per_commit_is_the_floor_and_absent_without_commits() {
    let (_d, _db, coll) = setup();
    let d = stats(&coll).to_document();
    assert!(!d.contains_key("avgNumMeasurementsPerCommit"), "{d}");
    assert_eq!(int64(&d, "numCommits"), 0);

    // Rejected measurements commit nothing.
    let r = coll
        .insert_many(
            &[doc! { "t": "not a date", "m": "a" }],
            &InsertOptions::default(),
        )
        .expect_err("rejected")
        .into_insert_result()
        .expect("a BulkWrite error");
    assert_eq!((r.inserted, r.errors.len()), (0, 1));
    let d = stats(&coll).to_document();
    assert!(!d.contains_key("avgNumMeasurementsPerCommit"), "{d}");
    assert_eq!(int64(&d, "numMeasurementsCommitted"), 0);

    // 4 + 3 + 3 measurements in 3 commits: floor(10 / 3) = 3.
    let batch = |n: i64, from: i64| -> Vec<Document> {
        (from..from + n)
            .map(|i| doc! { "t": at(i * 1_000), "m": "a" })
            .collect()
    };
    insert_all(&coll, &batch(4, 0));
    let d = stats(&coll).to_document();
    assert_eq!(int64(&d, "avgNumMeasurementsPerCommit"), 4);
    insert_all(&coll, &batch(3, 4));
    insert_all(&coll, &batch(3, 7));
    let s = stats(&coll);
    assert_eq!(s.execution.num_commits, 3);
    assert_eq!(s.execution.num_measurements_committed, 10);
    let d = s.to_document();
    assert_eq!(int64(&d, "avgNumMeasurementsPerCommit"), 3);
    assert_eq!(int64(&d, "numMeasurementsCommitted"), 10);
    let k = keys(&d);
    let at_committed = k
        .iter()
        .position(|n| *n == "numMeasurementsCommitted")
        .expect("numMeasurementsCommitted");
    assert_eq!(k[at_committed + 1], "avgNumMeasurementsPerCommit");
}

/// R-6.1.3 / §8.1: `numActiveBuckets` is a gauge of open + archived buckets: an archive keeps
/// the bucket active, a soft or hard close does not.
#[test]
fn r_6_1_3_num_active_buckets_is_open_plus_archived() {
    let (_d, db, coll) = setup();
    // (numActiveBuckets, open, archived), also checked against the document.
    let gauges = |c: &tscoll_engine::Collection| {
        let s = stats(c);
        #[expect(clippy::cast_possible_wrap, reason = "small")]
        let active = s.num_active_buckets as i64;
        assert_eq!(int64(&s.to_document(), "numActiveBuckets"), active);
        (
            s.num_active_buckets,
            s.num_open_buckets,
            s.num_archived_buckets,
        )
    };
    insert_each(&coll, &[doc! { "t": at(30_000), "m": "a" }]);
    assert_eq!(gauges(&coll), (1, 1, 0));
    // Time backward: A (min T0) is archived, B (min T0 − 1 h) opened.
    insert_each(&coll, &[doc! { "t": at(-HOUR), "m": "a" }]);
    assert_eq!(gauges(&coll), (2, 1, 1));
    insert_each(&coll, &[doc! { "t": at(0), "m": "b" }]);
    assert_eq!(gauges(&coll), (3, 2, 1));
    // Time forward from B (soft close): A's record cannot take T0 + 1 h (a full span after
    // its min), a new bucket replaces B.
    insert_each(&coll, &[doc! { "t": at(HOUR), "m": "a" }]);
    assert_eq!(gauges(&coll), (3, 2, 1));
    let e = stats(&coll).execution;
    assert_eq!(e.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(e.num_buckets_fetched, 0);
    // Hard close (count, with the limit lowered to 1 at run time): b's bucket is replaced.
    db.set_catalog_options(CatalogOptions {
        bucket_max_count: 1,
        ..CatalogOptions::default()
    });
    insert_each(&coll, &[doc! { "t": at(1_000), "m": "b" }]);
    assert_eq!(gauges(&coll), (3, 2, 1));
    assert_eq!(stats(&coll).execution.num_buckets_closed_due_to_count, 1);
    // A new series adds one.
    insert_each(&coll, &[doc! { "t": at(0), "m": "c" }]);
    assert_eq!(gauges(&coll), (4, 3, 1));
    // Stored: a's three buckets, b's two, c's one.
    assert_eq!(stats(&coll).bucket_count, 6);
}

// ---- §8.1 output shape -------------------------------------------------------------------------

/// R-8.1.1 / §8.1: `to_document()` has `bucketsNs`, `bucketCount`, `avgBucketSize` (only when
/// `bucketCount > 0`), then `numActiveBuckets` and every counter of the current master table,
/// in table order, each an int64; no removed counter and no `count` / `avgObjSize`.
#[test]
fn r_8_1_1_to_document_has_every_master_counter_in_table_order() {
    let (_d, _db, coll) = setup();
    let check = |d: &Document, with_buckets: bool, with_avg: bool| {
        let mut expected = vec!["bucketsNs", "bucketCount"];
        if with_buckets {
            expected.push("avgBucketSize");
        }
        expected.push("numActiveBuckets");
        expected.extend(counters(with_avg));
        let k = keys(d);
        assert!(k.len() >= expected.len(), "{k:?}");
        assert_eq!(k[..expected.len()], expected[..], "{d}");
        for name in &expected[1..] {
            int64(d, name);
        }
        for name in ABSENT {
            assert!(!d.contains_key(name), "{name} in {d}");
        }
        assert_eq!(d.get_str("bucketsNs").ok(), Some("system.buckets.c"));
    };
    check(&stats(&coll).to_document(), false, false);

    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(1_000), "m": "a" },
        ],
    );
    let s = stats(&coll);
    let d = s.to_document();
    check(&d, true, true);
    // The values are the struct's.
    assert_eq!(int64(&d, "bucketCount"), 1);
    assert_eq!(int64(&d, "numCommits"), 1);
    assert_eq!(int64(&d, "numMeasurementsCommitted"), 2);
    assert_eq!(int64(&d, "numBucketQueriesFailed"), 1);
    #[expect(clippy::cast_possible_wrap, reason = "small")]
    let avg = s.avg_bucket_size as i64;
    assert_eq!(int64(&d, "avgBucketSize"), avg);
    assert!(avg > 0);
    // Every named counter of the snapshot is one of the table's, in the same order.
    let named: Vec<&str> = s.execution.named().iter().map(|(n, _)| *n).collect();
    assert_eq!(named, counters(false));
}

// ---- §8.2 engine-level stats -------------------------------------------------------------------

/// §8.2: the section is omitted while no collection has catalog state or counters.
#[test]
fn r_8_2_catalog_stats_absent_until_something_happened() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    assert_eq!(db.catalog_stats(), None);
    let coll = db.create_collection("c", &options(true)).expect("create");
    assert_eq!(db.catalog_stats(), None);
    insert_all(&coll, &[doc! { "t": at(0), "m": "a" }]);
    let g = db.catalog_stats().expect("catalog stats after an insert");
    assert_eq!(
        (
            g.num_buckets,
            g.num_open_buckets,
            g.num_idle_buckets,
            g.num_archived_buckets
        ),
        (1, 1, 1, 0)
    );
    assert_eq!(g.execution.num_commits, 1);
    assert!(g.memory_usage > 0);
}

/// §8.2: the gauges and every execution counter are the sums over the collections;
/// `numArchivedBuckets` = `numBuckets` − `numOpenBuckets`; `to_document()` lists the gauges,
/// then every counter of the §8.1 table (without the per-collection `numActiveBuckets`, which
/// `numBuckets` is).
#[test]
fn r_8_2_catalog_stats_are_the_sums_over_collections() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(
        dir.path(),
        DatabaseOptions {
            catalog: CatalogOptions {
                bucket_max_count: 2,
                ..CatalogOptions::default()
            },
            ..DatabaseOptions::default()
        },
    )
    .expect("open");
    let c1 = db.create_collection("c1", &options(true)).expect("create");
    let c2 = db.create_collection("c2", &options(true)).expect("create");
    // c1: series a: A archived by time backward, B open; series b: 3 measurements in one call,
    // 2 + 1 (one count closure): 4 commits.
    insert_each(
        &c1,
        &[
            doc! { "t": at(30_000), "m": "a" },
            doc! { "t": at(-HOUR), "m": "a" },
        ],
    );
    insert_all(
        &c1,
        &[
            doc! { "t": at(0), "m": "b" },
            doc! { "t": at(1_000), "m": "b" },
            doc! { "t": at(2_000), "m": "b" },
        ],
    );
    // c2: one series, time forward (soft close), then back to its first bucket (the second is
    // archived by time backward, the first reopened by query): 3 commits.
    insert_each(
        &c2,
        &[
            doc! { "t": at(0), "m": "a" },
            doc! { "t": at(HOUR), "m": "a" },
            doc! { "t": at(MINUTE), "m": "a" },
        ],
    );
    let s1 = stats(&c1);
    let s2 = stats(&c2);
    // c1: a → archived + open, b → open: 3 active, 2 open, 1 archived.
    assert_eq!(
        (
            s1.num_active_buckets,
            s1.num_open_buckets,
            s1.num_archived_buckets
        ),
        (3, 2, 1)
    );
    // c2: the bucket at T0 + 1 h archived by time backward, the first one reopened.
    assert_eq!(
        (
            s2.num_active_buckets,
            s2.num_open_buckets,
            s2.num_archived_buckets
        ),
        (2, 1, 1)
    );
    let g = db.catalog_stats().expect("catalog stats");
    assert_eq!(g.num_buckets, 5);
    assert_eq!(g.num_open_buckets, 3);
    assert_eq!(
        g.num_idle_buckets,
        s1.num_idle_buckets + s2.num_idle_buckets
    );
    assert_eq!(g.num_idle_buckets, 3);
    assert_eq!(g.num_archived_buckets, 2);
    assert_eq!(g.num_archived_buckets, g.num_buckets - g.num_open_buckets);
    assert_eq!(g.memory_usage, s1.memory_usage + s2.memory_usage);
    let mut sum = StatsSnapshot::default();
    sum.add(&s1.execution);
    sum.add(&s2.execution);
    assert_eq!(g.execution, sum);
    // Spot checks of the sums against the scenario.
    assert_eq!(g.execution.num_commits, 4 + 3);
    assert_eq!(g.execution.num_measurements_committed, 8);
    assert_eq!(g.execution.num_buckets_archived_due_to_time_backward, 2);
    assert_eq!(g.execution.num_buckets_closed_due_to_count, 1);
    assert_eq!(g.execution.num_buckets_closed_due_to_time_forward, 1);
    assert_eq!(g.execution.num_buckets_queried, 1);
    assert_eq!(g.execution.num_buckets_opened_due_to_metadata, 3);

    let d = g.to_document();
    let mut expected = vec![
        "numBuckets",
        "numOpenBuckets",
        "numIdleBuckets",
        "numArchivedBuckets",
        "memoryUsage",
    ];
    expected.extend(counters(true));
    assert_eq!(keys(&d), expected);
    assert_eq!(int64(&d, "numBuckets"), 5);
    assert_eq!(int64(&d, "numArchivedBuckets"), 2);
    assert_eq!(int64(&d, "numCommits"), 7);
    assert_eq!(int64(&d, "avgNumMeasurementsPerCommit"), 1);
    #[expect(clippy::cast_possible_wrap, reason = "small")]
    let mem = g.memory_usage as i64;
    assert_eq!(int64(&d, "memoryUsage"), mem);
}

/// dropping a collection clears its buckets from the catalog (the §8.2 gauges and
/// memory go back to zero) and its counters go with it: a collection created again under the
/// same name starts from zero.
#[test]
fn r_7_4_2_drop_clears_buckets_and_stats() {
    let (_dir, db, coll) = setup();
    let docs: Vec<Document> = (0..6_i64)
        .map(|i| doc! { "t": at(i * MINUTE), "m": i % 3, "x": i })
        .collect();
    insert_all(&coll, &docs);
    let before = db.catalog_stats().expect("catalog stats");
    assert_eq!(before.num_buckets, 3);
    assert!(before.memory_usage > 0);
    assert!(db.drop_collection("c").expect("drop"));
    assert!(
        db.catalog_stats().is_none(),
        "nothing left in the catalog: {:?}",
        db.catalog_stats()
    );
    let again = db.create_collection("c", &options(true)).expect("create");
    let s = stats(&again);
    assert_eq!(s.execution, StatsSnapshot::default());
    assert_eq!(
        (s.bucket_count, s.num_active_buckets, s.memory_usage),
        (0, 0, 0)
    );
    assert!(
        again
            .find(&doc! {}, &Default::default())
            .expect("find")
            .is_empty()
    );
}
