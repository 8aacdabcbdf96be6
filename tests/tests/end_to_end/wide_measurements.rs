//! Measurements of many fields, and batches whose measurements each have fields of their own,
//! are stored whole and in time linear in their fields. Before, a batch of 5000 measurements
//! with a field each was refused as a whole ("5000 rows × 5002 columns exceed the limit of
//! 16777216 cells"), and placing a measurement scanned the bucket's fields for each of its
//! own (a document of 100 000 fields took minutes).

use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, FindOptions, InsertOptions};
use tscoll_tests::spec::{at, find_sorted, options, temp_collection};

#[test]
fn a_batch_of_measurements_with_fields_of_their_own_is_stored_whole() {
    for meta in [false, true] {
        let (_d, db, coll) = temp_collection(CatalogOptions::default(), &options(meta));
        let docs: Vec<Document> = (0..5000)
            .map(|i| {
                let mut d = doc! { "t": at(i) };
                d.insert(format!("f{i}"), i);
                if meta {
                    d.insert("m", "s");
                }
                d
            })
            .collect();
        let r = coll
            .insert_many(&docs, &InsertOptions::default())
            .expect("insert_many");
        assert_eq!(
            (r.inserted, r.errors.len()),
            (5000, 0),
            "{:?}",
            r.errors.first()
        );
        let check = |coll: &tscoll_engine::Collection| {
            let stored = find_sorted(coll, Document::new());
            assert_eq!(stored.len(), 5000);
            for (i, d) in stored.iter().enumerate() {
                let i = i64::try_from(i).expect("small");
                assert_eq!(d.get(format!("f{i}")), Some(&Bson::Int64(i)), "{d}");
            }
        };
        check(&coll);
        // And they read back the same from disk.
        let dir = _d.path().to_owned();
        drop(coll);
        db.close().expect("close");
        drop(db);
        let db = tscoll_engine::Database::open(&dir, tscoll_engine::DatabaseOptions::default())
            .expect("reopen");
        check(&db.collection("c").expect("collection"));
    }
}

/// Stores one measurement of `fields` fields (`f0`, `f1`, ...) and checks it reads back;
/// returns the time the insert took.
fn insert_wide(fields: usize) -> Duration {
    let (_d, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let mut d = doc! { "t": at(0), "m": "s" };
    for i in 0..fields {
        d.insert(format!("f{i}"), i64::try_from(i).expect("small"));
    }
    let start = Instant::now();
    let r = coll
        .insert_many(std::slice::from_ref(&d), &InsertOptions::default())
        .expect("insert_many");
    let took = start.elapsed();
    assert_eq!(
        (r.inserted, r.errors.len()),
        (1, 0),
        "{:?}",
        r.errors.first()
    );
    let stored = coll
        .find(&Document::new(), &FindOptions::default())
        .expect("find");
    assert_eq!(stored.len(), 1);
    // `_id`, `t`, `m` and the fields.
    assert_eq!(stored[0].len(), fields + 3);
    assert_eq!(
        stored[0].get(format!("f{}", fields - 1)),
        Some(&Bson::Int64(i64::try_from(fields - 1).expect("small")))
    );
    took
}

#[test]
fn a_measurement_of_100000_fields_is_stored_in_linear_time() {
    // Linear, it takes about a second of CPU in a debug build; a scan of the bucket's fields
    // per field took minutes (over 9 in a release build). The insert runs on a thread of its
    // own, so a slow one fails the test at its deadline rather than hanging it; the deadline
    // leaves room for a loaded machine.
    let limit = Duration::from_secs(20);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(insert_wide(100_000)));
    let took = rx
        .recv_timeout(limit)
        .unwrap_or_else(|_| panic!("100 000 fields: not stored within {limit:?}"));
    assert!(took < limit, "100 000 fields: {took:?}");
}
