//! SPEC §11.2 [8.0+] conformance: updates with any filter, operators on any field,
//! replacement and upsert. Matched measurements the update changes leave their bucket (the
//! rest is written back under the same `_id`, a bucket left empty is deleted) and are placed
//! again as new measurements; the whole operation is atomic; a measurement left without a
//! valid time field is `BadValue` and nothing changes.

use bson::{Bson, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, ErrorCode, IndexOptions, UpdateOptions, UpdateResult,
};
use tscoll_tests::spec::{
    assert_every_bucket_meta, at, bucket_counts, find_sorted, insert_all, options, temp_collection,
};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;

fn upsert() -> UpdateOptions {
    UpdateOptions {
        upsert: true,
        ..UpdateOptions::default()
    }
}

fn one() -> UpdateOptions {
    UpdateOptions::default()
}

/// Every measurement, in time order, with `_id` left out.
fn all(coll: &Collection) -> Vec<Document> {
    find_sorted(coll, doc! {})
        .into_iter()
        .map(|mut d| {
            d.remove("_id");
            d
        })
        .collect()
}

fn values(coll: &Collection, filter: Document) -> Vec<Bson> {
    find_sorted(coll, filter)
        .iter()
        .map(|d| d.get("v").cloned().unwrap_or(Bson::Null))
        .collect()
}

/// `(bucket _id, control.count, control.min.t)` of every stored bucket, by `_id`.
fn buckets(coll: &Collection) -> Vec<(Bson, i64, Bson)> {
    let mut v: Vec<_> = coll
        .buckets()
        .expect("buckets")
        .iter()
        .map(|b| {
            let control = b.get_document("control").expect("control");
            (
                b.get("_id").expect("_id").clone(),
                control.get_i64("count").expect("count"),
                control
                    .get_document("min")
                    .expect("min")
                    .get("t")
                    .expect("min.t")
                    .clone(),
            )
        })
        .collect();
    v.sort_by_key(|(id, _, _)| id.to_string());
    v
}

/// Series a: three measurements in one bucket; series b: one.
fn sample(coll: &Collection) {
    insert_all(
        coll,
        &[
            doc! { "t": at(0), "m": "a", "v": 1 },
            doc! { "t": at(MINUTE), "m": "a", "v": 2 },
            doc! { "t": at(2 * MINUTE), "m": "a", "v": 3 },
            doc! { "t": at(0), "m": "b", "v": 4 },
        ],
    );
    coll.flush().expect("flush");
}

fn counts(r: &UpdateResult) -> (u64, u64) {
    (r.matched, r.modified)
}

#[test]
fn r_11_2_any_filter_and_any_field() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let r = coll
        .update_many(
            &doc! { "v": { "$gte": 2 } },
            &doc! { "$inc": { "v": 10 }, "$set": { "w": true } },
        )
        .expect("update");
    assert_eq!(counts(&r), (3, 3));
    assert_eq!(r.upserted_id, None);
    assert_eq!(
        values(&coll, doc! { "m": "a" }),
        [Bson::Int32(1), Bson::Int32(12), Bson::Int32(13)]
    );
    assert_eq!(values(&coll, doc! { "w": true }).len(), 3);
    assert_eq!(values(&coll, doc! { "v": 14 }).len(), 1);
}

#[test]
fn r_11_2_unmatched_measurements_stay_in_the_same_bucket() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let before = buckets(&coll);
    let r = coll
        .update_many(&doc! { "m": "a", "v": 1 }, &doc! { "$set": { "v": 100 } })
        .expect("update");
    assert_eq!((counts(&r), r.buckets_modified), ((1, 1), 1));
    let after = buckets(&coll);
    // Series a's bucket keeps its _id and control.min time with the two unmatched
    // measurements; series b's is untouched; the updated measurement is in a new bucket.
    assert_eq!(after.len(), 3, "{after:?}");
    for (id, count, min) in &before {
        let kept = after.iter().find(|(i, _, _)| i == id).expect("bucket kept");
        assert_eq!(&kept.2, min);
        assert_eq!(kept.1, if *count == 3 { 2 } else { *count });
    }
    assert_eq!(
        values(&coll, doc! { "m": "a" }),
        [Bson::Int32(100), Bson::Int32(2), Bson::Int32(3)]
    );
}

#[test]
fn r_11_2_a_fully_matched_bucket_is_deleted() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let before = buckets(&coll);
    coll.update_many(&doc! { "m": "b" }, &doc! { "$set": { "v": 5 } })
        .expect("update");
    let after = buckets(&coll);
    let b_bucket = before.iter().find(|(_, c, _)| *c == 1).expect("b");
    assert!(
        after.iter().all(|(id, _, _)| id != &b_bucket.0),
        "{after:?}"
    );
    assert_eq!(after.len(), 2);
    assert_eq!(values(&coll, doc! { "m": "b" }), [Bson::Int32(5)]);
}

#[test]
fn r_11_2_unchanged_measurements_are_matched_not_modified() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let before = buckets(&coll);
    let r = coll
        .update_many(&doc! { "v": { "$lte": 2 } }, &doc! { "$max": { "v": 2 } })
        .expect("update");
    assert_eq!(counts(&r), (2, 1));
    let r = coll
        .update_many(&doc! { "v": 3 }, &doc! { "$set": { "v": 3 } })
        .expect("update");
    assert_eq!((counts(&r), r.buckets_modified), ((1, 0), 0));
    assert_eq!(before.len(), buckets(&coll).len() - 1);
}

#[test]
fn r_11_2_multi_false_updates_one_measurement() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let r = coll
        .update_one(&doc! { "m": "a" }, &doc! { "$set": { "v": 0 } }, &one())
        .expect("update");
    assert_eq!(counts(&r), (1, 1));
    assert_eq!(values(&coll, doc! { "v": 0 }).len(), 1);
    assert_eq!(coll.count(&doc! { "m": "a" }).expect("count"), 3);
    let r = coll
        .update_one(&doc! { "m": "zz" }, &doc! { "$set": { "v": 0 } }, &one())
        .expect("update");
    assert_eq!(r, UpdateResult::default());
}

#[test]
fn r_11_2_replacement_keeps_the_id() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let id = find_sorted(&coll, doc! { "m": "b" })[0]
        .get("_id")
        .cloned()
        .expect("_id");
    let r = coll
        .replace_one(
            &doc! { "m": "b" },
            &doc! { "t": at(HOUR), "m": "c", "x": "new" },
            &one(),
        )
        .expect("replace");
    assert_eq!(counts(&r), (1, 1));
    let got = find_sorted(&coll, doc! { "m": "c" });
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].get("_id"), Some(&id));
    assert_eq!(got[0].get_str("x").expect("x"), "new");
    assert!(
        got[0].get("v").is_none(),
        "a replacement drops the other fields"
    );
    assert!(find_sorted(&coll, doc! { "m": "b" }).is_empty());
    // update_one accepts a replacement too; a multi update does not.
    coll.update_one(
        &doc! { "m": "c" },
        &doc! { "t": at(HOUR), "m": "d" },
        &one(),
    )
    .expect("replacement");
    assert_eq!(coll.count(&doc! { "m": "d" }).expect("count"), 1);
    let e = coll
        .update_many(&doc! {}, &doc! { "t": at(0), "m": "e" })
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::FailedToParse, "{e}");
    let e = coll
        .replace_one(&doc! {}, &doc! { "$set": { "v": 1 } }, &one())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::FailedToParse, "{e}");
}

#[test]
fn r_11_2_upsert_inserts_from_the_filter_equalities() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let r = coll
        .update_one(
            &doc! { "m": "z", "k": { "$eq": 7 }, "v": { "$gt": 1 } },
            &doc! { "$set": { "t": at(5 * MINUTE) }, "$setOnInsert": { "new": true } },
            &upsert(),
        )
        .expect("upsert");
    assert_eq!(counts(&r), (0, 0));
    let Some(Bson::ObjectId(id)) = r.upserted_id else {
        panic!("an ObjectId is generated: {r:?}");
    };
    let got = find_sorted(&coll, doc! { "m": "z" });
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].get_object_id("_id").expect("_id"), id);
    assert_eq!(got[0].get_i32("k").expect("k"), 7);
    assert!(
        got[0].get("v").is_none(),
        "only equalities seed the document"
    );
    assert!(got[0].get_bool("new").expect("$setOnInsert"));
    // A match: no insert, and $setOnInsert does nothing.
    let r = coll
        .update_many_with(
            &doc! { "m": "z" },
            &doc! { "$set": { "k": 8 }, "$setOnInsert": { "other": 1 } },
            &upsert(),
        )
        .expect("update");
    assert_eq!((counts(&r), r.upserted_id), ((1, 1), None));
    assert!(find_sorted(&coll, doc! { "other": 1 }).is_empty());
    // A replacement upsert takes the filter's _id.
    let r = coll
        .replace_one(
            &doc! { "_id": 42 },
            &doc! { "t": at(0), "m": "r" },
            &upsert(),
        )
        .expect("upsert");
    assert_eq!(r.upserted_id, Some(Bson::Int32(42)));
    assert_eq!(find_sorted(&coll, doc! { "_id": 42 }).len(), 1);
}

#[test]
fn r_11_2_upsert_without_a_time_is_bad_value() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let before = all(&coll);
    let e = coll
        .update_one(&doc! { "m": "z" }, &doc! { "$set": { "v": 1 } }, &upsert())
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadValue, "{e}");
    assert_eq!(all(&coll), before);
}

#[test]
fn r_11_2_a_result_without_a_valid_time_is_bad_value_and_nothing_changes() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    let before = all(&coll);
    let before_buckets = buckets(&coll);
    for update in [
        doc! { "$unset": { "t": "" } },
        doc! { "$set": { "t": "noon" } },
        doc! { "$rename": { "t": "time" } },
    ] {
        // Every bucket matches: the last measurement's failure undoes the others'.
        let e = coll.update_many(&doc! {}, &update).unwrap_err();
        assert_eq!(e.code(), ErrorCode::BadValue, "{update}: {e}");
        assert_eq!(all(&coll), before, "{update}");
        assert_eq!(buckets(&coll), before_buckets, "{update}");
    }
    // Only one measurement fails: still nothing changes.
    let e = coll
        .update_many(
            &doc! {},
            &doc! { "$set": { "w": 1 }, "$max": { "t": at(2 * MINUTE) } },
        )
        .map(|r| r.modified);
    assert_eq!(e.expect("dates compare with dates"), 4);
    // Strings sort before dates (BSON order): `$max` keeps every date, `$min` replaces
    // them all and is refused.
    let r = coll
        .update_many(&doc! {}, &doc! { "$max": { "t": "noon" } })
        .expect("$max keeps the dates");
    assert_eq!(counts(&r), (4, 0));
    let after = all(&coll);
    let e = coll
        .update_many(&doc! {}, &doc! { "$min": { "t": "noon" } })
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadValue, "{e}");
    assert_eq!(all(&coll), after);
}

#[test]
fn r_11_2_operator_errors_are_mongodbs_and_change_nothing() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    insert_all(
        &coll,
        &[doc! { "t": at(3 * MINUTE), "m": "a", "v": "text", "arr": 1 }],
    );
    let before = all(&coll);
    let cases = [
        (doc! { "$inc": { "v": 1 } }, ErrorCode::TypeMismatch),
        (doc! { "$inc": { "v": "1" } }, ErrorCode::TypeMismatch),
        (doc! { "$mul": { "v": 2 } }, ErrorCode::TypeMismatch),
        (
            doc! { "$set": { "v": 1 }, "$inc": { "v": 1 } },
            ErrorCode::ConflictingUpdateOperators,
        ),
        (
            doc! { "$set": { "a.b": 1, "a": 2 } },
            ErrorCode::ConflictingUpdateOperators,
        ),
        (
            doc! { "$set": { "v": 1 }, "w": 2 },
            ErrorCode::FailedToParse,
        ),
        (doc! { "$bogus": { "v": 1 } }, ErrorCode::FailedToParse),
        (doc! { "$set": 1 }, ErrorCode::FailedToParse),
        (doc! { "$set": { "v.x": 1 } }, ErrorCode::PathNotViable),
        (doc! { "$push": { "arr": 2 } }, ErrorCode::BadValue),
        (doc! { "$pull": { "arr": 2 } }, ErrorCode::BadValue),
        (doc! { "$set": { "v.$": 1 } }, ErrorCode::BadValue),
        (doc! { "$set": { "v..x": 1 } }, ErrorCode::BadValue),
        (doc! { "$rename": { "v": 3 } }, ErrorCode::BadValue),
        (doc! { "$currentDate": { "d": "yes" } }, ErrorCode::BadValue),
        (doc! { "$pop": { "arr": 2 } }, ErrorCode::BadValue),
    ];
    for (update, code) in cases {
        let e = coll.update_many(&doc! {}, &update).unwrap_err();
        assert_eq!(e.code(), code, "{update}: {e}");
        assert_eq!(all(&coll), before, "{update}");
    }
}

#[test]
fn r_11_2_array_operators() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "a", "s": [3, 1], "set": ["x"], "scores": [{ "k": 1 }, { "k": 9 }], "n": [1, 2, 3, 4] },
        ],
    );
    coll.update_many(
        &doc! {},
        &doc! {
            "$push": { "s": { "$each": [5, 2], "$sort": -1, "$slice": 3 }, "fresh": 1 },
            "$addToSet": { "set": { "$each": ["x", "y", "y"] } },
            "$pull": { "scores": { "k": { "$gte": 5 } }, "n": { "$in": [2, 3] } },
        },
    )
    .expect("update");
    coll.update_many(
        &doc! {},
        &doc! { "$pop": { "n": -1 }, "$pullAll": { "set": ["x"] } },
    )
    .expect("update");
    let d = &all(&coll)[0];
    assert_eq!(
        d.get_array("s").expect("s"),
        &vec![Bson::Int32(5), Bson::Int32(3), Bson::Int32(2)]
    );
    assert_eq!(d.get_array("fresh").expect("fresh"), &vec![Bson::Int32(1)]);
    assert_eq!(
        d.get_array("set").expect("set"),
        &vec![Bson::String("y".into())]
    );
    assert_eq!(
        d.get_array("scores").expect("scores"),
        &vec![Bson::Document(doc! { "k": 1 })]
    );
    assert_eq!(d.get_array("n").expect("n"), &vec![Bson::Int32(4)]);
    // $position inserts at an index; a numeric path part reaches an element.
    coll.update_many(
        &doc! {},
        &doc! { "$push": { "s": { "$each": [0], "$position": 1 } }, "$set": { "scores.0.k": 2 } },
    )
    .expect("update");
    let d = &all(&coll)[0];
    assert_eq!(
        d.get_array("s").expect("s"),
        &vec![
            Bson::Int32(5),
            Bson::Int32(0),
            Bson::Int32(3),
            Bson::Int32(2)
        ]
    );
    assert_eq!(
        d.get_array("scores").expect("scores"),
        &vec![Bson::Document(doc! { "k": 2 })]
    );
}

#[test]
fn r_11_2_scalar_operators_and_current_date() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "a", "i": 2_147_483_647, "f": 1.5, "lo": 5, "hi": 5, "gone": 1, "old": "x" },
        ],
    );
    coll.update_many(
        &doc! {},
        &doc! {
            "$inc": { "i": 1, "new": 3 },
            "$mul": { "f": 2, "absent": 4 },
            "$min": { "lo": 1 },
            "$max": { "hi": 9 },
            "$unset": { "gone": "" },
            "$rename": { "old": "sub.renamed" },
            "$currentDate": { "d": true, "ts": { "$type": "timestamp" } },
        },
    )
    .expect("update");
    let d = &all(&coll)[0];
    assert_eq!(
        d.get("i"),
        Some(&Bson::Int64(2_147_483_648)),
        "int32 overflow promotes"
    );
    assert_eq!(d.get("new"), Some(&Bson::Int32(3)));
    assert_eq!(d.get("f"), Some(&Bson::Double(3.0)));
    assert_eq!(d.get("absent"), Some(&Bson::Int32(0)));
    assert_eq!(
        (d.get_i32("lo").ok(), d.get_i32("hi").ok()),
        (Some(1), Some(9))
    );
    assert!(d.get("gone").is_none() && d.get("old").is_none());
    assert_eq!(
        d.get_document("sub").expect("sub"),
        &doc! { "renamed": "x" }
    );
    assert!(matches!(d.get("d"), Some(Bson::DateTime(_))));
    assert!(matches!(d.get("ts"), Some(Bson::Timestamp(_))));
}

#[test]
fn r_11_2_meta_changed_by_any_update_is_renormalized() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(&coll, &[doc! { "t": at(0), "m": { "host": "a" }, "v": 1 }]);
    let r = coll
        .update_many(
            &doc! { "v": 1 },
            &doc! { "$set": { "m": { "host": "a", "dc": "x" }, "v": 2 } },
        )
        .expect("update");
    assert_eq!(counts(&r), (1, 1));
    insert_all(
        &coll,
        &[doc! { "t": at(MINUTE), "m": { "dc": "x", "host": "a" }, "v": 3 }],
    );
    assert_eq!(
        values(&coll, doc! { "m": { "dc": "x", "host": "a" } }),
        [Bson::Int32(2), Bson::Int32(3)]
    );
    assert_every_bucket_meta(&coll, &doc! { "dc": "x", "host": "a" });
    // A meta value written in another field order but equal once normalized is no change.
    let r = coll
        .update_many(
            &doc! { "v": 2 },
            &doc! { "$set": { "m": { "host": "a", "dc": "x" } } },
        )
        .expect("update");
    assert_eq!(counts(&r), (1, 0));
}

#[test]
fn r_11_2_a_measurement_moved_in_time_is_placed_again() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    sample(&coll);
    coll.update_many(
        &doc! { "v": 2 },
        &doc! { "$set": { "t": at(3 * HOUR + 30_000) } },
    )
    .expect("update");
    assert_eq!(
        values(&coll, doc! { "t": { "$gte": at(3 * HOUR) } }),
        [Bson::Int32(2)]
    );
    // Its new bucket's control.min time is the new time rounded down to the minute (R-1.3).
    let rounded = buckets(&coll)
        .into_iter()
        .filter(|(_, _, min)| min == &Bson::DateTime(at(3 * HOUR)))
        .count();
    assert_eq!(rounded, 1);
    assert_eq!(bucket_counts(&coll), [1, 1, 2]);
    // Time-range queries still see every measurement (the span covers the moved one).
    assert_eq!(
        coll.count(&doc! { "t": { "$lt": at(HOUR) } })
            .expect("count"),
        3
    );
}

#[test]
fn r_11_2_updates_keep_secondary_indexes_and_the_store_consistent() {
    let (_dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    coll.create_index(&doc! { "v": 1 }, &IndexOptions::default())
        .expect("index");
    sample(&coll);
    coll.update_many(&doc! { "v": { "$gt": 1 } }, &doc! { "$inc": { "v": 100 } })
        .expect("update");
    coll.update_one(&doc! { "v": 1 }, &doc! { "$set": { "m": "b" } }, &one())
        .expect("update");
    let report = db.verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
    assert_eq!(
        values(&coll, doc! { "v": { "$gte": 100 } }),
        [Bson::Int32(104), Bson::Int32(102), Bson::Int32(103)]
    );
    drop(coll);
    db.close().expect("close");
}

#[test]
fn r_11_2_updates_survive_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let expected;
    {
        let db =
            tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
                .expect("open");
        let coll = db.create_collection("c", &options(true)).expect("create");
        sample(&coll);
        coll.update_many(
            &doc! { "v": { "$in": [1, 4] } },
            &doc! { "$set": { "v": 0, "t": at(HOUR) } },
        )
        .expect("update");
        expected = all(&coll);
        db.crash().expect("crash");
    }
    let db = tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
        .expect("reopen");
    let coll = db.collection("c").expect("collection");
    assert_eq!(all(&coll), expected);
    assert_eq!(values(&coll, doc! { "v": 0 }).len(), 2);
}
