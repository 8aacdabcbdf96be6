//! Open buckets keep their committed rows in memory, and a bucket that leaves memory is
//! merged into one blob from those rows instead of reading back and decoding its segments.
//! Both paths must store exactly what was inserted: fields that appear late or are missing
//! in some commits, mixed types, out-of-order rows, and buckets reopened from storage (whose
//! earlier rows are not in memory) merged from storage.

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, Database, DatabaseOptions, FindOptions, SortOrder};
use tscoll_tests::spec::{at, find_sorted, insert_all, options, temp_collection};

/// Measurements of two series, one commit each, whose fields change from commit to commit.
fn commits() -> Vec<Document> {
    let mut out = Vec::new();
    for i in 0..40_i64 {
        let mut d = doc! { "_id": i, "t": at((i % 7) * 1000 + (i / 7) * 10_000), "m": i % 2 };
        match i % 5 {
            0 => {
                d.insert("v", i);
            }
            1 => {
                d.insert("v", i as f64 / 3.0);
                d.insert("late", "x");
            }
            2 => {
                d.insert("w", Bson::Null);
            }
            3 => {
                d.insert("v", vec![Bson::Int64(i), Bson::String("a".into())]);
                d.insert("late", doc! { "k": i });
            }
            _ => {}
        }
        out.push(d);
    }
    out
}

fn sorted_by_id(mut docs: Vec<Document>) -> Vec<Document> {
    docs.sort_by_key(|d| d.get_i64("_id").expect("_id"));
    docs
}

#[test]
fn buckets_merged_from_memory_hold_exactly_what_was_inserted() {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let docs = commits();
    for d in &docs {
        insert_all(&coll, std::slice::from_ref(d)); // one commit (and segment) each
    }
    // Before close: every measurement, from the stored segments.
    assert_eq!(sorted_by_id(find_sorted(&coll, doc! {})), docs);
    db.close().expect("close");
    drop((coll, db));
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("reopen");
    let coll = db.collection("c").expect("collection");
    assert_eq!(sorted_by_id(find_sorted(&coll, doc! {})), docs);
    // Each bucket is one blob now: a projection on a late field reads back the same values.
    let late: Vec<Document> = coll
        .find(
            &doc! {},
            &FindOptions {
                projection: Some(doc! { "late": 1, "_id": 1 }),
                sort: Some(SortOrder::Ascending),
                ..FindOptions::default()
            },
        )
        .expect("find");
    let want: Vec<Option<Bson>> = docs.iter().map(|d| d.get("late").cloned()).collect();
    let got: Vec<Option<Bson>> = sorted_by_id(late)
        .iter()
        .map(|d| d.get("late").cloned())
        .collect();
    assert_eq!(got, want);
}

#[test]
fn a_reopened_bucket_is_merged_from_storage_and_loses_nothing() {
    // Hour 1, then hour 0 (time going backward archives hour 1's bucket), then hour 1 again
    // (its bucket is reopened from storage), one commit each.
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let hour = 3_600_000;
    let times = [hour, hour + 1000, 0, 1000, hour + 2000, hour + 3000, 2000];
    let docs: Vec<Document> = times
        .iter()
        .zip(0_i64..)
        .map(|(&t, i)| doc! { "_id": i, "t": at(t), "m": "s", "v": i * 10 })
        .collect();
    for d in &docs {
        insert_all(&coll, std::slice::from_ref(d));
    }
    let stats = coll.stats().expect("stats").execution;
    assert!(stats.num_buckets_reopened > 0, "{stats:?}");
    db.close().expect("close");
    drop((coll, db));
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("reopen");
    let coll = db.collection("c").expect("collection");
    assert_eq!(sorted_by_id(find_sorted(&coll, doc! {})), docs);
    assert_eq!(coll.stats().expect("stats").bucket_count, 2);
}
