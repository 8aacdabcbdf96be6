//! SPEC §6.8 conformance: reopening buckets after the database is closed and opened again
//! (query-based reopening, R-6.8.2, R-6.8.4, R-4.4.1) and durability of data across reopening.

use std::path::Path;

use bson::{Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, CollectionStats, Database, DatabaseOptions, FindOptions,
    TimeseriesOptions,
};
use tscoll_tests::spec::{at, bucket_counts, find_sorted, insert_all};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;

fn open(dir: &Path, catalog: &CatalogOptions) -> Database {
    Database::open(
        dir,
        DatabaseOptions {
            catalog: catalog.clone(),
            ..DatabaseOptions::default()
        },
    )
    .expect("open")
}

/// Creates the collection, runs `before` on it, closes the database, reopens it and returns the
/// reopened database and collection.
fn with_reopen(
    dir: &Path,
    catalog: &CatalogOptions,
    opts: &TimeseriesOptions,
    before: impl FnOnce(&Collection),
) -> (Database, Collection) {
    {
        let db = open(dir, catalog);
        let coll = db.create_collection("c", opts).expect("create");
        before(&coll);
        db.close().expect("close");
    }
    let db = open(dir, catalog);
    let coll = db.collection("c").expect("collection after reopening");
    (db, coll)
}

fn stats(coll: &Collection) -> CollectionStats {
    coll.stats().expect("stats")
}

fn all(coll: &Collection) -> Vec<Document> {
    find_sorted(coll, doc! {})
}

fn meta_opts() -> TimeseriesOptions {
    TimeseriesOptions::new("t").meta_field("m")
}

#[test]
fn r_6_8_2_insert_after_reopen_continues_the_same_bucket() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        let docs: Vec<Document> = (0..5)
            .map(|i| doc! { "t": at(i * 1_000), "m": "a", "x": i })
            .collect();
        insert_all(c, &docs);
        assert_eq!(stats(c).bucket_count, 1);
    });
    // Counters are per process: a fresh catalog.
    assert_eq!(stats(&coll).execution.num_commits, 0);
    insert_all(
        &coll,
        &[doc! { "t": at(10 * MINUTE), "m": "a", "x": 5_i64 }],
    );
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.measurement_count, 6);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
    assert_eq!(s.execution.num_bucket_queries_failed, 0);
    assert_eq!(s.execution.num_bucket_inserts, 0);
    assert_eq!(s.execution.num_bucket_updates, 1);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 0);
    assert_eq!(bucket_counts(&coll), [6]);
    let xs: Vec<i64> = all(&coll)
        .iter()
        .map(|d| d.get_i64("x").expect("x"))
        .collect();
    assert_eq!(xs, [0, 1, 2, 3, 4, 5]);
}

#[test]
fn r_6_8_4_collection_without_meta_field_cannot_query_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(
        dir.path(),
        &CatalogOptions::default(),
        &TimeseriesOptions::new("t"),
        |c| {
            insert_all(c, &[doc! { "t": at(0), "x": 1 }]);
        },
    );
    insert_all(&coll, &[doc! { "t": at(1_000), "x": 2 }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_bucket_queries_failed, 1);
    assert_eq!(s.execution.num_buckets_queried, 0);
    assert_eq!(s.execution.num_buckets_reopened, 0);
    assert_eq!(s.execution.num_bucket_inserts, 1);
    assert_eq!(bucket_counts(&coll), [1, 1]);
    assert_eq!(all(&coll).len(), 2);
}

#[test]
fn r_6_8_data_from_before_reopen_is_all_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = CatalogOptions {
        bucket_max_count: 7,
        ..CatalogOptions::default()
    };
    let mut before = Vec::new();
    let (_db, coll) = with_reopen(dir.path(), &catalog, &meta_opts(), |c| {
        // Several series, several buckets per series, some buckets left open.
        for i in 0..60_i64 {
            let series = ["a", "b", "c"][(i % 3) as usize];
            insert_all(
                c,
                &[doc! { "t": at(i * 20 * MINUTE), "m": series, "x": i, "s": format!("v{i}") }],
            );
        }
        // And one multi-measurement call.
        let docs: Vec<Document> = (60..80_i64)
            .map(|i| doc! { "t": at(i * 1_000), "m": "d", "x": i })
            .collect();
        insert_all(c, &docs);
        before = all(c);
    });
    let after = all(&coll);
    assert_eq!(after.len(), 80);
    assert_eq!(after, before);
    let s = stats(&coll);
    assert_eq!(s.measurement_count, 80);
    // Filters work on reopened data.
    assert_eq!(
        coll.find(&doc! { "m": "b" }, &FindOptions::default())
            .expect("find")
            .len(),
        20
    );
    assert_eq!(
        coll.find(&doc! { "m": "d" }, &FindOptions::default())
            .expect("find")
            .len(),
        20
    );
    let late = coll
        .find(
            &doc! { "t": { "$gte": at(59 * 20 * MINUTE) } },
            &FindOptions::default(),
        )
        .expect("find");
    assert_eq!(late.len(), 1);
    assert_eq!(late[0].get_i64("x").ok(), Some(59));
}

#[test]
fn r_6_8_2_query_reopen_respects_the_span() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        insert_all(c, &[doc! { "t": at(0), "m": "a" }]);
    });
    insert_all(&coll, &[doc! { "t": at(HOUR), "m": "a" }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_reopened, 0);
    assert_eq!(s.execution.num_bucket_queries_failed, 1);
    assert_eq!(s.execution.num_buckets_opened_due_to_metadata, 1);
}

#[test]
fn r_6_8_2_query_reopen_matches_the_series() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        insert_all(c, &[doc! { "t": at(0), "m": { "a": 1, "b": 2 } }]);
    });
    // Another series: no reopening. The same series (other field order): reopened.
    insert_all(&coll, &[doc! { "t": at(1_000), "m": { "a": 1, "b": 3 } }]);
    let s = stats(&coll);
    assert_eq!(
        (
            s.bucket_count,
            s.execution.num_buckets_reopened,
            s.execution.num_bucket_queries_failed
        ),
        (2, 0, 1)
    );
    insert_all(&coll, &[doc! { "t": at(2_000), "m": { "b": 2, "a": 1 } }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
    assert_eq!(bucket_counts(&coll), [1, 2]);
}

#[test]
fn r_6_8_2_no_meta_series_reopens_in_meta_collection() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        insert_all(
            c,
            &[
                doc! { "t": at(0), "x": 1 },
                doc! { "t": at(0), "m": null_meta(), "x": 2 },
            ],
        );
    });
    insert_all(&coll, &[doc! { "t": at(1_000), "x": 3 }]);
    insert_all(&coll, &[doc! { "t": at(1_000), "m": null_meta(), "x": 4 }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_reopened, 2);
    assert_eq!(bucket_counts(&coll), [2, 2]);
}

fn null_meta() -> bson::Bson {
    bson::Bson::Null
}

#[test]
fn r_6_8_full_bucket_is_not_continued_after_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let catalog = CatalogOptions {
        bucket_max_count: 3,
        ..CatalogOptions::default()
    };
    let (_db, coll) = with_reopen(dir.path(), &catalog, &meta_opts(), |c| {
        let docs: Vec<Document> = (0..3)
            .map(|i| doc! { "t": at(i * 1_000), "m": "a" })
            .collect();
        insert_all(c, &docs);
    });
    insert_all(&coll, &[doc! { "t": at(5_000), "m": "a" }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(bucket_counts(&coll), [1, 3]);
}

#[test]
fn r_4_4_1_reopened_bucket_keeps_its_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        insert_all(
            c,
            &[doc! { "t": at(0), "m": "a", "x": 1, "o": { "p": "s" } }],
        );
    });
    // Compatible: reopened and appended.
    insert_all(
        &coll,
        &[doc! { "t": at(1_000), "m": "a", "x": 2.5, "o": { "q": 1 } }],
    );
    let s = stats(&coll);
    assert_eq!((s.bucket_count, s.execution.num_buckets_reopened), (1, 1));
    // Incompatible with the schema rebuilt from control.min/max (o.p is a string).
    insert_all(&coll, &[doc! { "t": at(2_000), "m": "a", "o": { "p": 1 } }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_closed_due_to_schema_change, 1);
}

#[test]
fn r_4_2_2_out_of_order_after_reopen_makes_bucket_unsorted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        insert_all(c, &[doc! { "t": at(30_000), "m": "a", "x": 1 }]);
    });
    // Earlier than the last one but not below the rounded min: reopened, appended, v3.
    insert_all(&coll, &[doc! { "t": at(10_000), "m": "a", "x": 2 }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(s.execution.num_compressed_buckets_converted_to_unsorted, 1);
    let b = &coll.buckets().expect("buckets")[0];
    assert_eq!(
        b.get_document("control")
            .expect("control")
            .get_i32("version")
            .ok(),
        Some(3)
    );
    let xs: Vec<i32> = coll
        .find(&doc! {}, &FindOptions::default())
        .expect("find")
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [1, 2]);
}

#[test]
fn r_6_8_reopen_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = with_reopen(dir.path(), &CatalogOptions::default(), &meta_opts(), |c| {
        insert_all(c, &[doc! { "t": at(0), "m": "a" }]);
    });
    insert_all(&coll, &[doc! { "t": at(1_000), "m": "a" }]);
    db.close().expect("close");
    drop(coll);
    drop(db);
    let db = open(dir.path(), &CatalogOptions::default());
    let coll = db.collection("c").expect("collection");
    insert_all(&coll, &[doc! { "t": at(2_000), "m": "a" }]);
    let s = stats(&coll);
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_reopened, 1);
    assert_eq!(bucket_counts(&coll), [3]);
    assert_eq!(all(&coll).len(), 3);
}
