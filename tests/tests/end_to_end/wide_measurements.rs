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
    // Four times the fields take about four times as long (the best of two runs of the
    // smaller, as the machine may be busy); a scan of the bucket's fields per field made it
    // sixteen times, and past 65 536 fields the codec refused the bucket.
    let small = insert_wide(25_000).min(insert_wide(25_000));
    let large = insert_wide(100_000);
    let ratio = large.as_secs_f64() / small.as_secs_f64().max(1e-3);
    assert!(
        ratio < 9.0,
        "100 000 fields took {large:?}, {ratio:.1} times 25 000 fields ({small:?})"
    );
}

#[test]
fn a_field_name_past_64_kib_rejects_its_measurement_alone() {
    // A field is a column of its bucket, and the codec keeps column names to 64 KiB: the
    // measurement is refused when it arrives, not its bucket when it is stored.
    let (_d, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let mut bad = doc! { "t": at(1), "m": "s" };
    bad.insert("n".repeat(65_537), 1);
    let docs = vec![
        doc! { "t": at(0), "m": "s", "v": 0 },
        bad,
        doc! { "t": at(2), "m": "s", "v": 2 },
    ];
    let unordered = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    let r = coll.insert_many(&docs, &unordered).expect("insert_many");
    assert_eq!(r.inserted, 2, "{:?}", r.errors);
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].index, 1);
    assert!(
        r.errors[0].message.contains("65537 bytes"),
        "{}",
        r.errors[0].message
    );
    let stored = find_sorted(&coll, Document::new());
    let values: Vec<Option<&Bson>> = stored.iter().map(|d| d.get("v")).collect();
    assert_eq!(values, [Some(&Bson::Int32(0)), Some(&Bson::Int32(2))]);
}
