//! SPEC §2 conformance: measurement validation, `_id`, size and
//! ordered/unordered batches.

use bson::{Bson, Document, Timestamp, doc, oid::ObjectId};
use tscoll_engine::{CatalogOptions, Collection, Database, ErrorCode, InsertResult};
use tscoll_tests::spec::{T0, at, find_sorted, options, temp_collection};

fn setup(meta: bool) -> (tempfile::TempDir, Database, Collection) {
    temp_collection(CatalogOptions::default(), &options(meta))
}

fn insert(coll: &Collection, docs: &[Document], ordered: bool) -> InsertResult {
    tscoll_tests::spec::insert_checked(coll, docs, ordered)
}

fn all(coll: &Collection) -> Vec<Document> {
    find_sorted(coll, doc! {})
}

const TIME_MESSAGE: &str = "'t' must be present and contain a valid BSON UTC datetime value";

fn assert_bad_time(coll: &Collection, bad: Document) {
    let r = insert(coll, std::slice::from_ref(&bad), true);
    assert_eq!(r.inserted, 0, "{bad}");
    assert_eq!(r.errors.len(), 1, "{bad}");
    assert_eq!(r.errors[0].index, 0);
    assert_eq!(r.errors[0].code, ErrorCode::BadValue, "{bad}");
    assert_eq!(r.errors[0].message, TIME_MESSAGE, "{bad}");
}

// ---- R-2.1 -------------------------------------------------------------------------------

#[test]
fn r_2_1_missing_time_is_bad_value() {
    let (_d, _db, coll) = setup(true);
    assert_bad_time(&coll, doc! { "m": 1, "x": 1 });
    assert_eq!(coll.stats().expect("stats").bucket_count, 0);
}

#[test]
fn r_2_1_string_time_is_bad_value() {
    let (_d, _db, coll) = setup(true);
    assert_bad_time(&coll, doc! { "t": "2021-04-22T20:10:14.134Z", "m": 1 });
}

#[test]
fn r_2_1_timestamp_time_is_bad_value() {
    let (_d, _db, coll) = setup(true);
    assert_bad_time(
        &coll,
        doc! { "t": Timestamp { time: 1_700_000_000, increment: 1 }, "m": 1 },
    );
}

#[test]
fn r_2_1_number_time_is_bad_value() {
    let (_d, _db, coll) = setup(true);
    assert_bad_time(&coll, doc! { "t": T0, "m": 1 });
    assert_bad_time(&coll, doc! { "t": 1_i32, "m": 1 });
    assert_bad_time(&coll, doc! { "t": 1.5, "m": 1 });
}

#[test]
fn r_2_1_null_time_is_bad_value() {
    let (_d, _db, coll) = setup(true);
    assert_bad_time(&coll, doc! { "t": Bson::Null, "m": 1 });
    assert_bad_time(&coll, doc! { "t": { "$date": T0 }, "m": 1 });
    assert_eq!(all(&coll).len(), 0);
}

#[test]
fn r_2_1_bad_time_without_meta_field_is_bad_value() {
    let (_d, _db, coll) = setup(false);
    assert_bad_time(&coll, doc! { "x": 1 });
}

#[test]
fn r_2_1_date_time_is_accepted() {
    let (_d, _db, coll) = setup(true);
    let r = insert(&coll, &[doc! { "t": at(0), "m": 1 }], true);
    assert_eq!((r.inserted, r.errors.len()), (1, 0));
}

// ---- R-2.2 -------------------------------------------------------------------------------

#[test]
fn r_2_2_any_meta_type_is_accepted() {
    let (_d, _db, coll) = setup(true);
    let metas = [
        Bson::Null,
        Bson::Array(vec![Bson::Int32(1), Bson::String("a".into())]),
        Bson::Document(doc! { "a": { "b": [1, { "c": 2 }] } }),
        Bson::Boolean(true),
        Bson::ObjectId(ObjectId::new()),
        Bson::String("s".into()),
        Bson::DateTime(at(0)),
        Bson::Undefined,
        Bson::MinKey,
    ];
    let docs: Vec<Document> = metas
        .iter()
        .map(|m| doc! { "t": at(0), "m": m.clone() })
        .collect();
    let r = insert(&coll, &docs, true);
    assert_eq!(
        (r.inserted, r.errors.len()),
        (metas.len(), 0),
        "{:?}",
        r.errors
    );
    assert_eq!(
        coll.stats().expect("stats").bucket_count,
        metas.len() as u64
    );
}

// ---- R-2.5 -------------------------------------------------------------------------------

#[test]
fn r_2_5_ordered_stops_at_first_bad_and_keeps_earlier() {
    let (_d, _db, coll) = setup(true);
    let docs = [
        doc! { "t": at(0), "m": 1, "x": 0 },
        doc! { "t": at(1_000), "m": 1, "x": 1 },
        doc! { "m": 1, "x": 2 },
        doc! { "t": at(3_000), "m": 1, "x": 3 },
        doc! { "t": "bad", "m": 1, "x": 4 },
    ];
    let r = insert(&coll, &docs, true);
    assert_eq!(r.inserted, 2);
    assert_eq!(r.errors.len(), 1, "{:?}", r.errors);
    assert_eq!(r.errors[0].index, 2);
    assert_eq!(r.errors[0].code, ErrorCode::BadValue);
    assert_eq!(r.errors[0].message, TIME_MESSAGE);
    let xs: Vec<i32> = all(&coll)
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [0, 1]);
}

#[test]
fn r_2_5_ordered_first_bad_keeps_nothing() {
    let (_d, _db, coll) = setup(true);
    let r = insert(&coll, &[doc! { "m": 1 }, doc! { "t": at(0), "m": 1 }], true);
    assert_eq!(r.inserted, 0);
    assert_eq!(r.errors.iter().map(|e| e.index).collect::<Vec<_>>(), [0]);
    assert!(all(&coll).is_empty());
}

#[test]
fn r_2_5_unordered_keeps_every_good_one_and_reports_every_bad_index() {
    let (_d, _db, coll) = setup(true);
    let docs = [
        doc! { "t": at(0), "m": 1, "x": 0 },
        doc! { "t": Bson::Null, "m": 1, "x": 1 },
        doc! { "t": at(2_000), "m": 2, "x": 2 },
        doc! { "m": 1, "x": 3 },
        doc! { "t": at(4_000), "m": 1, "x": 4 },
        doc! { "t": Timestamp { time: 5, increment: 0 }, "m": 2, "x": 5 },
    ];
    let r = insert(&coll, &docs, false);
    assert_eq!(r.inserted, 3);
    assert_eq!(
        r.errors.iter().map(|e| e.index).collect::<Vec<_>>(),
        [1, 3, 5]
    );
    assert!(
        r.errors
            .iter()
            .all(|e| e.code == ErrorCode::BadValue && e.message == TIME_MESSAGE),
        "{:?}",
        r.errors
    );
    let xs: Vec<i32> = all(&coll)
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [0, 2, 4]);
}

#[test]
fn r_2_5_errors_report_original_index_after_sorting() {
    // the group is sorted by time, but errors keep input positions.
    let (_d, _db, coll) = setup(true);
    let docs = [
        doc! { "t": at(5_000), "m": 1 },
        doc! { "t": at(1_000), "m": 1 },
        doc! { "t": 7, "m": 1 },
        doc! { "t": at(3_000), "m": 1 },
    ];
    let r = insert(&coll, &docs, false);
    assert_eq!(r.inserted, 3);
    assert_eq!(r.errors.iter().map(|e| e.index).collect::<Vec<_>>(), [2]);
}

// ---- R-2.3 -------------------------------------------------------------------------------

#[test]
fn r_2_3_id_generated_when_absent() {
    let (_d, _db, coll) = setup(true);
    let docs: Vec<Document> = (0..5)
        .map(|i| doc! { "t": at(i * 1_000), "m": 1, "x": i })
        .collect();
    assert_eq!(insert(&coll, &docs, true).inserted, 5);
    let found = all(&coll);
    assert_eq!(found.len(), 5);
    let mut ids = Vec::new();
    for d in &found {
        match d.get("_id") {
            Some(Bson::ObjectId(o)) => ids.push(*o),
            other => panic!("expected an ObjectId _id, got {other:?} in {d}"),
        }
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 5, "generated ids are distinct");
}

#[test]
fn r_2_3_id_generated_without_meta_field() {
    let (_d, _db, coll) = setup(false);
    assert_eq!(
        insert(&coll, &[doc! { "t": at(0), "x": 1 }], true).inserted,
        1
    );
    let found = all(&coll);
    assert!(
        matches!(found[0].get("_id"), Some(Bson::ObjectId(_))),
        "{}",
        found[0]
    );
}

#[test]
fn r_2_3_given_id_is_kept() {
    let (_d, _db, coll) = setup(true);
    let id = ObjectId::new();
    insert(
        &coll,
        &[
            doc! { "_id": id, "t": at(0), "m": 1 },
            doc! { "_id": "s", "t": at(1), "m": 2 },
        ],
        true,
    );
    let found = all(&coll);
    assert_eq!(found[0].get("_id"), Some(&Bson::ObjectId(id)));
    assert_eq!(found[1].get("_id"), Some(&Bson::String("s".into())));
}

#[test]
fn r_2_3_duplicate_ids_are_kept() {
    let (_d, _db, coll) = setup(true);
    let docs = [
        doc! { "_id": 1, "t": at(0), "m": 1, "x": "a" },
        doc! { "_id": 1, "t": at(1_000), "m": 1, "x": "b" },
    ];
    let r = insert(&coll, &docs, true);
    assert_eq!((r.inserted, r.errors.len()), (2, 0));
    // Again in a separate call.
    let r = insert(
        &coll,
        &[doc! { "_id": 1, "t": at(2_000), "m": 1, "x": "c" }],
        true,
    );
    assert_eq!((r.inserted, r.errors.len()), (1, 0));
    let found = all(&coll);
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|d| d.get("_id") == Some(&Bson::Int32(1))));
    let xs: Vec<&str> = found.iter().map(|d| d.get_str("x").expect("x")).collect();
    assert_eq!(xs, ["a", "b", "c"]);
}

// ---- R-2.4 -------------------------------------------------------------------------------

const MIB16: usize = 16 * 1024 * 1024;

#[test]
fn r_2_4_data_string_over_16_mib_is_bson_object_too_large() {
    let (_d, _db, coll) = setup(true);
    let big = "x".repeat(MIB16 + 1);
    let r = insert(&coll, &[doc! { "t": at(0), "m": 1, "big": big }], true);
    assert_eq!(r.inserted, 0);
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].index, 0);
    assert_eq!(r.errors[0].code, ErrorCode::BsonObjectTooLarge);
    assert_eq!(coll.stats().expect("stats").bucket_count, 0);
}

#[test]
fn r_2_4_meta_string_over_16_mib_is_bson_object_too_large() {
    let (_d, _db, coll) = setup(true);
    let big = "x".repeat(MIB16 + 1);
    let r = insert(&coll, &[doc! { "t": at(0), "m": big }], true);
    assert_eq!(r.inserted, 0);
    assert_eq!(
        r.errors
            .iter()
            .map(|e| (e.index, e.code))
            .collect::<Vec<_>>(),
        [(0, ErrorCode::BsonObjectTooLarge)]
    );
    assert_eq!(coll.stats().expect("stats").bucket_count, 0);
}

#[test]
fn r_2_4_min_and_max_copies_count_toward_16_mib() {
    // ~6 MB of field data: the bucket (data + control.min + control.max) would exceed 16 MiB.
    let (_d, _db, coll) = setup(true);
    let r = insert(
        &coll,
        &[doc! { "t": at(0), "m": 1, "big": "y".repeat(6_000_000) }],
        true,
    );
    assert_eq!(
        r.errors
            .iter()
            .map(|e| (e.index, e.code))
            .collect::<Vec<_>>(),
        [(0, ErrorCode::BsonObjectTooLarge)]
    );
    assert_eq!(r.inserted, 0);
}

#[test]
fn r_2_4_too_large_in_unordered_batch_keeps_the_rest() {
    let (_d, _db, coll) = setup(true);
    let docs = [
        doc! { "t": at(0), "m": 1, "x": 0 },
        doc! { "t": at(1_000), "m": 1, "x": 1, "big": "z".repeat(MIB16 + 1) },
        doc! { "t": at(2_000), "m": 1, "x": 2 },
    ];
    let r = insert(&coll, &docs, false);
    assert_eq!(r.inserted, 2);
    assert_eq!(
        r.errors
            .iter()
            .map(|e| (e.index, e.code))
            .collect::<Vec<_>>(),
        [(1, ErrorCode::BsonObjectTooLarge)]
    );
    assert_eq!(all(&coll).len(), 2);
}

#[test]
fn r_2_4_too_large_in_ordered_batch_stops_there() {
    let (_d, _db, coll) = setup(true);
    let docs = [
        doc! { "t": at(0), "m": 1, "x": 0 },
        doc! { "t": at(1_000), "m": 1, "x": 1, "big": "z".repeat(MIB16 + 1) },
        doc! { "t": at(2_000), "m": 1, "x": 2 },
    ];
    let r = insert(&coll, &docs, true);
    assert_eq!(r.inserted, 1);
    assert_eq!(
        r.errors
            .iter()
            .map(|e| (e.index, e.code))
            .collect::<Vec<_>>(),
        [(1, ErrorCode::BsonObjectTooLarge)]
    );
    let xs: Vec<i32> = all(&coll)
        .iter()
        .map(|d| d.get_i32("x").expect("x"))
        .collect();
    assert_eq!(xs, [0]);
}

#[test]
fn r_2_4_four_mb_measurement_is_accepted() {
    let (_d, _db, coll) = setup(true);
    let r = insert(
        &coll,
        &[doc! { "t": at(0), "m": 1, "big": "w".repeat(4_000_000) }],
        true,
    );
    assert_eq!((r.inserted, r.errors.len()), (1, 0), "{:?}", r.errors);
    let found = all(&coll);
    assert_eq!(found[0].get_str("big").expect("big").len(), 4_000_000);
}
