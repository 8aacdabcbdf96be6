//! `Database::compact` / `Collection::compact`: after many small commits (one segment each),
//! compaction leaves every measurement readable, once, in its bucket, also after a reopen,
//! and the directory no larger than before.

use bson::{DateTime, Document, doc};
use tscoll_engine::{CatalogOptions, Database, DatabaseOptions, FindOptions, InsertOptions};
use tscoll_tests::spec::{T0, bucket_counts, find_sorted, options, temp_collection};

fn rows(batch: i64) -> Vec<Document> {
    (0..8)
        .map(|series| {
            doc! {
                "t": DateTime::from_millis(T0 + batch * 1000),
                "m": {"host": series, "dc": "eu"},
                "v": batch * 10 + series,
            }
        })
        .collect()
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).expect("read_dir") {
        let entry = entry.expect("entry");
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

#[test]
fn compaction_keeps_every_measurement_once_and_survives_a_reopen() {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    for batch in 0..200 {
        let r = coll
            .insert_many(&rows(batch), &InsertOptions::default())
            .expect("insert");
        assert_eq!(r.inserted, 8);
    }
    let before = find_sorted(&coll, doc! {});
    let counts = bucket_counts(&coll);
    assert_eq!(before.len(), 1600);
    let size_before = dir_bytes(dir.path());

    db.compact().expect("compact");
    assert_eq!(find_sorted(&coll, doc! {}), before);
    assert_eq!(bucket_counts(&coll), counts);
    // Idempotent, and inserts go on afterwards.
    db.compact().expect("compact again");
    let more = rows(200);
    coll.insert_many(&more, &InsertOptions::default())
        .expect("insert after compaction");
    assert!(dir_bytes(dir.path()) <= size_before + 64 * 1024);
    drop(coll);
    db.close().expect("close");
    drop(db);

    let db = Database::open(
        dir.path(),
        DatabaseOptions {
            catalog: CatalogOptions::default(),
            ..DatabaseOptions::default()
        },
    )
    .expect("reopen");
    let coll = db.collection("c").expect("collection");
    let after = coll.find(&doc! {}, &FindOptions::default()).expect("find");
    assert_eq!(after.len(), 1608);
    let mut values: Vec<i64> = after.iter().map(|d| d.get_i64("v").expect("v")).collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), 1608, "every measurement once");
}
