//! Measurements of many fields, and batches whose measurements each have fields of their own,
//! are stored whole. Before, a batch of 5000 measurements
//! with a field each was refused as a whole ("5000 rows × 5002 columns exceed the limit of
//! 16777216 cells"), and placing a measurement scanned the bucket's fields for each of its
//! own (a document of 100 000 fields took minutes).

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
        reopened(_d.path(), db, coll, check);
    }
}

/// Stores one measurement of `fields` fields (`f0`, `f1`, ...) and checks it reads back whole,
/// before and after a reopen.
fn insert_wide(fields: usize) {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let mut d = doc! { "t": at(0), "m": "s" };
    for i in 0..fields {
        d.insert(format!("f{i}"), i64::try_from(i).expect("small"));
    }
    let r = coll
        .insert_many(std::slice::from_ref(&d), &InsertOptions::default())
        .expect("insert_many");
    assert_eq!(
        (r.inserted, r.errors.len()),
        (1, 0),
        "{:?}",
        r.errors.first()
    );
    let check = |coll: &tscoll_engine::Collection| {
        let stored = coll
            .find(&Document::new(), &FindOptions::default())
            .expect("find");
        assert_eq!(stored.len(), 1);
        // `_id`, `t`, `m` and the fields, in the order they were given.
        assert_eq!(stored[0].len(), fields + 3);
        for (i, (name, value)) in stored[0].iter().skip(3).enumerate() {
            assert_eq!(name, &format!("f{i}"));
            assert_eq!(value, &Bson::Int64(i64::try_from(i).expect("small")));
        }
    };
    check(&coll);
    reopened(dir.path(), db, coll, check);
}

/// Closes `db` (holding `coll`, named "c") at `dir`, opens it again and runs `check` on the
/// collection read back from disk.
fn reopened(
    dir: &std::path::Path,
    db: tscoll_engine::Database,
    coll: tscoll_engine::Collection,
    check: impl Fn(&tscoll_engine::Collection),
) {
    drop(coll);
    db.close().expect("close");
    drop(db);
    let db = tscoll_engine::Database::open(dir, tscoll_engine::DatabaseOptions::default())
        .expect("reopen");
    check(&db.collection("c").expect("collection"));
}

#[test]
fn a_measurement_of_100000_fields_is_stored_whole() {
    // Past 65 536 fields the codec refused the bucket. Placing a measurement once scanned the
    // bucket's fields for each of its own, which made this test take minutes; its speed is
    // measured by `tscoll bench`, not asserted here (a timed assertion fails on a busy machine).
    insert_wide(100_000);
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
