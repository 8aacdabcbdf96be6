//! A field name with a NUL byte cannot be stored in BSON (`e_name` is a C string). Such a
//! measurement is rejected at its input position and every other measurement is kept exactly;
//! such a name in a filter, projection, update, index specification or collMod is refused.
//! Before the check, a NUL in a measurement's key stripped its whole batch to time and meta and
//! broke later inserts into the series, and a NUL in a meta key made the collection unreadable.

use bson::{Bson, Document, doc};
use tscoll_engine::{
    Accumulator, AggregateSpec, CatalogOptions, Collection, Database, Error, ErrorCode,
    FindOptions, IndexOptions, InsertResult, TimeseriesOptions,
};
use tscoll_tests::spec::{at, find_sorted, options, temp_collection};

fn setup() -> (tempfile::TempDir, Database, Collection) {
    temp_collection(CatalogOptions::default(), &options(true))
}

fn insert(coll: &Collection, docs: &[Document], ordered: bool) -> InsertResult {
    tscoll_tests::spec::insert_checked(coll, docs, ordered)
}

fn assert_rejected_at(r: &InsertResult, index: usize) {
    let e = r
        .errors
        .iter()
        .find(|e| e.index == index)
        .unwrap_or_else(|| panic!("no error at {index}: {:?}", r.errors));
    assert_eq!(e.code, ErrorCode::BadValue, "{e:?}");
    assert!(e.message.contains("NUL"), "{}", e.message);
}

fn assert_bad_value(result: Result<impl std::fmt::Debug, Error>, what: &str) {
    match result {
        Err(Error::Rejected { code, message }) => {
            assert_eq!(code, ErrorCode::BadValue, "{what}: {message}");
            assert!(message.contains("NUL"), "{what}: {message}");
        }
        other => panic!("{what}: expected BadValue, got {other:?}"),
    }
}

#[test]
fn a_nul_in_a_measurement_field_name_is_rejected_and_the_batch_kept_exactly() {
    let (_d, _db, coll) = setup();
    let good0 = doc! { "_id": 1, "t": at(0), "m": "s", "v": 3, "w": 4 };
    let bad = doc! { "_id": 2, "t": at(1000), "m": "s", "v": 3, "a\0b": 1, "w": 4 };
    let good2 = doc! { "_id": 3, "t": at(2000), "m": "s", "v": 5, "w": 6 };
    let r = insert(&coll, &[good0.clone(), bad, good2.clone()], false);
    assert_eq!(r.inserted, 2);
    assert_eq!(r.errors.len(), 1);
    assert_rejected_at(&r, 1);
    assert_eq!(find_sorted(&coll, doc! {}), [good0.clone(), good2.clone()]);

    // A later insert into the same series works and reads back with the rest.
    let later = doc! { "_id": 4, "t": at(3000), "m": "s", "v": 7, "w": 8 };
    assert_eq!(
        insert(&coll, std::slice::from_ref(&later), true).inserted,
        1
    );
    assert_eq!(find_sorted(&coll, doc! {}), [good0, good2, later]);
}

#[test]
fn a_nul_in_a_nested_field_name_is_rejected_at_any_depth() {
    let (_d, _db, coll) = setup();
    let docs = [
        doc! { "_id": 1, "t": at(0), "m": "s", "x": { "y\0": 1 } },
        doc! { "_id": 2, "t": at(1), "m": "s", "x": [1, { "\0": 2 }] },
        doc! { "_id": 3, "t": at(2), "m": "s", "x": { "ok": [ { "deep": { "z\0z": 0 } } ] } },
        doc! { "_id": 4, "t": at(3), "m": "s", "x": { "ok": 1 } },
    ];
    let r = insert(&coll, &docs, false);
    assert_eq!(r.inserted, 1);
    for i in 0..3 {
        assert_rejected_at(&r, i);
    }
    assert_eq!(find_sorted(&coll, doc! {}), [docs[3].clone()]);
}

#[test]
fn a_nul_in_a_meta_field_name_is_rejected_and_the_collection_stays_readable() {
    let (_d, _db, coll) = setup();
    let good = doc! { "_id": 1, "t": at(0), "m": { "host": "a" }, "v": 1 };
    let bad = doc! { "_id": 2, "t": at(1), "m": { "ho\0st": "a" }, "v": 2 };
    let r = insert(&coll, &[good.clone(), bad], false);
    assert_eq!(r.inserted, 1);
    assert_rejected_at(&r, 1);
    assert_eq!(find_sorted(&coll, doc! {}), std::slice::from_ref(&good));
    assert_eq!(coll.count(&doc! {}).expect("count"), 1);
    assert_eq!(coll.stats().expect("stats").bucket_count, 1);
    assert_eq!(
        coll.delete_many(&doc! { "m.host": "a" })
            .expect("delete")
            .deleted,
        1
    );
    assert_eq!(coll.count(&doc! {}).expect("count"), 0);
}

#[test]
fn an_ordered_insert_stops_at_a_nul_field_name_and_keeps_what_came_before() {
    let (_d, _db, coll) = setup();
    let docs = [
        doc! { "_id": 1, "t": at(0), "m": "s", "v": 1 },
        doc! { "_id": 2, "t": at(1), "m": "s", "\0": 2 },
        doc! { "_id": 3, "t": at(2), "m": "s", "v": 3 },
    ];
    let r = insert(&coll, &docs, true);
    assert_eq!(r.inserted, 1);
    assert_eq!(r.errors.len(), 1);
    assert_rejected_at(&r, 1);
    assert_eq!(find_sorted(&coll, doc! {}), [docs[0].clone()]);
}

#[test]
fn a_nul_field_name_in_a_request_is_refused() {
    let (_d, db, coll) = setup();
    insert(&coll, &[doc! { "t": at(0), "m": "s", "v": 1 }], true);

    assert_bad_value(
        coll.find(&doc! { "v\0": 1 }, &FindOptions::default()),
        "filter",
    );
    assert_bad_value(
        coll.find(
            &doc! { "v": { "$in": [ { "a\0": 1 } ] } },
            &FindOptions::default(),
        ),
        "filter value",
    );
    assert_bad_value(coll.count(&doc! { "m\0": "s" }), "count filter");
    assert_bad_value(coll.delete_many(&doc! { "a\0": 1 }), "delete filter");
    assert_bad_value(
        coll.find(
            &doc! {},
            &FindOptions {
                projection: Some(doc! { "v\0": 1 }),
                ..FindOptions::default()
            },
        ),
        "projection",
    );
    assert_bad_value(
        coll.update_many(&doc! { "m": "s" }, &doc! { "$set": { "m": { "k\0": 1 } } }),
        "update",
    );
    assert_bad_value(
        coll.create_index(&doc! { "v\0": 1 }, &IndexOptions::default()),
        "index key",
    );
    assert_bad_value(
        coll.create_index(&doc! { "v": 1 }, &IndexOptions::named("n\0")),
        "index name",
    );
    assert_bad_value(coll.coll_mod(&doc! { "x\0": 1 }), "collMod");
    assert_bad_value(
        coll.aggregate_windows(
            &doc! {},
            &AggregateSpec {
                window_ms: 1000,
                by_series: false,
                outputs: vec![("n\0".into(), Accumulator::Count)],
            },
        ),
        "aggregate output",
    );
    let created = db.create_collection("d", &TimeseriesOptions::new("t\0"));
    assert!(
        matches!(&created, Err(Error::Rejected { message, .. }) if message.contains("NUL")),
        "{created:?}"
    );

    // Nothing of the refused requests changed the data.
    let all = find_sorted(&coll, doc! {});
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].get("v"), Some(&Bson::Int32(1)));
    assert_eq!(coll.list_indexes().expect("indexes").len(), 1);
}

/// A meta value is checked once per call and series, not once per measurement: a bad one is
/// never remembered as checked, so every measurement carrying it is rejected, in this call
/// and in the next.
#[test]
fn a_bad_meta_value_met_again_is_rejected_again() {
    let (_d, _db, coll) = setup();
    let good = |id: i32| doc! { "_id": id, "t": at(id.into()), "m": { "host": "a" }, "v": id };
    let bad = |id: i32| doc! { "_id": id, "t": at(id.into()), "m": { "ho\0st": "a" }, "v": id };
    let r = insert(&coll, &[good(1), bad(2), good(3), bad(4)], false);
    assert_eq!(r.inserted, 2);
    assert_eq!(r.errors.iter().map(|e| e.index).collect::<Vec<_>>(), [1, 3]);
    let r = insert(&coll, &[bad(5), good(6)], false);
    assert_eq!(r.inserted, 1);
    assert_rejected_at(&r, 0);
    assert_eq!(find_sorted(&coll, doc! {}), [good(1), good(3), good(6)]);
}
