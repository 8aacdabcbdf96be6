//! Positional update operators on measurements (MongoDB 8.0 manual, "$ (update)", "$[]",
//! "$[<identifier>]"): `$` stands for the array element the query matched, `$[]` for every
//! element, `$[<identifier>]` for the elements an array filter matches; nested, and with
//! every update operator. The manual's examples, on measurements, and the errors with
//! MongoDB's codes.

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, ErrorCode, UpdateOptions};
use tscoll_tests::spec::{at, find_sorted, insert_all, options, temp_collection};

const MINUTE: i64 = 60_000;

/// Measurements at minute `i` of series "s", the fields of `docs[i]` after `t` and `m`.
fn collection(docs: &[Document]) -> (tempfile::TempDir, tscoll_engine::Database, Collection) {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let docs: Vec<Document> = (0i64..)
        .zip(docs)
        .map(|(i, d)| {
            let mut m = doc! { "t": at(i * MINUTE), "m": "s" };
            m.extend(d.clone());
            m
        })
        .collect();
    insert_all(&coll, &docs);
    (dir, db, coll)
}

/// The value of `field` in each measurement, by `_id`.
fn field(coll: &Collection, name: &str) -> Vec<(Bson, Bson)> {
    let mut v: Vec<_> = find_sorted(coll, doc! {})
        .into_iter()
        .map(|d| {
            (
                d.get("_id").cloned().unwrap_or(Bson::Null),
                d.get(name).cloned().unwrap_or(Bson::Null),
            )
        })
        .collect();
    v.sort_by_key(|(id, _)| id.to_string());
    v
}

fn filters(array_filters: Vec<Document>) -> UpdateOptions {
    UpdateOptions {
        array_filters,
        ..UpdateOptions::default()
    }
}

fn students() -> (tempfile::TempDir, tscoll_engine::Database, Collection) {
    collection(&[
        doc! { "_id": 1, "grades": [85, 80, 80] },
        doc! { "_id": 2, "grades": [88, 90, 92] },
        doc! { "_id": 3, "grades": [85, 100, 90] },
    ])
}

#[test]
fn positional_dollar_updates_the_first_matched_element() {
    let (_d, _db, coll) = students();
    let r = coll
        .update_one(
            &doc! { "_id": 1, "grades": 80 },
            &doc! { "$set": { "grades.$": 82 } },
            &UpdateOptions::default(),
        )
        .expect("update");
    assert_eq!((r.matched, r.modified), (1, 1));
    assert_eq!(
        field(&coll, "grades"),
        vec![
            (Bson::Int32(1), bson::bson!([85, 82, 80])),
            (Bson::Int32(2), bson::bson!([88, 90, 92])),
            (Bson::Int32(3), bson::bson!([85, 100, 90])),
        ]
    );
}

#[test]
fn positional_dollar_in_embedded_documents_and_with_elem_match() {
    let (_d, _db, coll) = collection(&[
        doc! { "_id": 4, "grades": [
            { "grade": 80, "mean": 75, "std": 8 },
            { "grade": 85, "mean": 90, "std": 5 },
            { "grade": 85, "mean": 85, "std": 8 },
        ] },
        doc! { "_id": 5, "grades": [
            { "grade": 80, "mean": 75, "std": 8 },
            { "grade": 85, "mean": 90, "std": 5 },
            { "grade": 90, "mean": 85, "std": 3 },
        ] },
    ]);
    coll.update_one(
        &doc! { "_id": 4, "grades.grade": 85 },
        &doc! { "$set": { "grades.$.std": 6 } },
        &UpdateOptions::default(),
    )
    .expect("update");
    coll.update_one(
        &doc! { "_id": 5, "grades": { "$elemMatch": { "grade": { "$lte": 90 }, "mean": { "$gt": 80 } } } },
        &doc! { "$set": { "grades.$.std": 6 } },
        &UpdateOptions::default(),
    )
    .expect("update");
    assert_eq!(
        field(&coll, "grades"),
        vec![
            (
                Bson::Int32(4),
                bson::bson!([
                    { "grade": 80, "mean": 75, "std": 8 },
                    { "grade": 85, "mean": 90, "std": 6 },
                    { "grade": 85, "mean": 85, "std": 8 },
                ])
            ),
            (
                Bson::Int32(5),
                bson::bson!([
                    { "grade": 80, "mean": 75, "std": 8 },
                    { "grade": 85, "mean": 90, "std": 6 },
                    { "grade": 90, "mean": 85, "std": 3 },
                ])
            ),
        ]
    );
}

#[test]
fn positional_dollar_with_inc_push_pull_and_unset() {
    let (_d, _db, coll) = collection(&[doc! {
        "_id": 1,
        "a": [{ "k": 1, "n": 5, "l": [3, 1] }, { "k": 2, "n": 7, "l": [9] }],
        "b": [1, 2, 3],
    }]);
    let none = UpdateOptions::default();
    coll.update_one(&doc! { "a.k": 2 }, &doc! { "$inc": { "a.$.n": 3 } }, &none)
        .expect("inc");
    coll.update_one(&doc! { "a.k": 2 }, &doc! { "$mul": { "a.$.n": 2 } }, &none)
        .expect("mul");
    coll.update_one(
        &doc! { "a.k": 1 },
        &doc! { "$push": { "a.$.l": { "$each": [2, 0], "$sort": 1, "$slice": 3 } } },
        &none,
    )
    .expect("push");
    coll.update_one(&doc! { "a.k": 2 }, &doc! { "$pull": { "a.$.l": 9 } }, &none)
        .expect("pull");
    coll.update_one(&doc! { "b": 2 }, &doc! { "$unset": { "b.$": "" } }, &none)
        .expect("unset");
    coll.update_one(
        &doc! { "a.k": 1 },
        &doc! { "$max": { "a.$.n": 6, "b.0": 0 } },
        &none,
    )
    .expect("max");
    let d = &find_sorted(&coll, doc! {})[0];
    assert_eq!(
        d.get("a"),
        Some(&bson::bson!([{ "k": 1, "n": 6, "l": [0, 1, 2] }, { "k": 2, "n": 20, "l": [] }]))
    );
    // `$unset` of an array element leaves null in its place.
    assert_eq!(d.get("b"), Some(&bson::bson!([1, Bson::Null, 3])));
}

#[test]
fn positional_dollar_without_an_array_match_is_bad_value() {
    let (_d, _db, coll) = students();
    let before = find_sorted(&coll, doc! {});
    let e = coll
        .update_one(
            &doc! { "_id": 1 },
            &doc! { "$set": { "grades.$": 0 } },
            &UpdateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadValue, "{e}");
    assert!(
        e.to_string()
            .contains("The positional operator did not find the match needed from the query"),
        "{e}"
    );
    // A negation records no position either.
    let e = coll
        .update_one(
            &doc! { "grades": { "$ne": 7 } },
            &doc! { "$set": { "grades.$": 0 } },
            &UpdateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadValue, "{e}");
    // An upsert has no query match to stand for.
    let e = coll
        .update_one(
            &doc! { "_id": 9, "t": at(0), "m": "s" },
            &doc! { "$set": { "grades.$": 0 } },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::BadValue, "{e}");
    assert_eq!(find_sorted(&coll, doc! {}), before);
}

#[test]
fn all_positional_updates_every_element() {
    let (_d, _db, coll) = students();
    let r = coll
        .update_many(&doc! {}, &doc! { "$inc": { "grades.$[]": 10 } })
        .expect("update");
    assert_eq!((r.matched, r.modified), (3, 3));
    assert_eq!(
        field(&coll, "grades"),
        vec![
            (Bson::Int32(1), bson::bson!([95, 90, 90])),
            (Bson::Int32(2), bson::bson!([98, 100, 102])),
            (Bson::Int32(3), bson::bson!([95, 110, 100])),
        ]
    );
}

#[test]
fn all_positional_in_documents_and_missing_or_scalar_arrays() {
    let (_d, _db, coll) = collection(&[
        doc! { "_id": 1, "grades": [{ "grade": 80, "std": 8 }, { "grade": 85, "std": 5 }] },
        doc! { "_id": 2, "grades": 3 },
        doc! { "_id": 3 },
    ]);
    coll.update_one(
        &doc! { "_id": 1 },
        &doc! { "$inc": { "grades.$[].std": -2 } },
        &UpdateOptions::default(),
    )
    .expect("update");
    assert_eq!(
        find_sorted(&coll, doc! { "_id": 1 })[0].get("grades"),
        Some(&bson::bson!([{ "grade": 80, "std": 6 }, { "grade": 85, "std": 3 }]))
    );
    for id in [2, 3] {
        let e = coll
            .update_one(
                &doc! { "_id": id },
                &doc! { "$set": { "grades.$[]": 1 } },
                &UpdateOptions::default(),
            )
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::BadValue, "{e}");
    }
    // An upsert whose filter gives the array by equality works on it.
    let r = coll
        .update_one(
            &doc! { "_id": 7, "t": at(0), "m": "s", "l": [1, 2] },
            &doc! { "$inc": { "l.$[]": 1 } },
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )
        .expect("upsert");
    assert_eq!(r.upserted_id, Some(Bson::Int32(7)));
    assert_eq!(
        find_sorted(&coll, doc! { "_id": 7 })[0].get("l"),
        Some(&bson::bson!([2, 3]))
    );
}

#[test]
fn filtered_positional_updates_the_elements_an_array_filter_matches() {
    let (_d, _db, coll) = collection(&[
        doc! { "_id": 1, "grades": [95, 92, 90] },
        doc! { "_id": 2, "grades": [98, 100, 102] },
        doc! { "_id": 3, "grades": [95, 110, 100] },
    ]);
    let r = coll
        .update_many_with(
            &doc! {},
            &doc! { "$set": { "grades.$[element]": 100 } },
            &filters(vec![doc! { "element": { "$gte": 100 } }]),
        )
        .expect("update");
    assert_eq!((r.matched, r.modified), (3, 2));
    assert_eq!(
        field(&coll, "grades"),
        vec![
            (Bson::Int32(1), bson::bson!([95, 92, 90])),
            (Bson::Int32(2), bson::bson!([98, 100, 100])),
            (Bson::Int32(3), bson::bson!([95, 100, 100])),
        ]
    );
}

#[test]
fn filtered_positional_in_documents_with_several_conditions() {
    let (_d, _db, coll) = collection(&[
        doc! { "_id": 1, "grades": [
            { "grade": 80, "mean": 75, "std": 6 },
            { "grade": 85, "mean": 90, "std": 4 },
            { "grade": 85, "mean": 85, "std": 6 },
        ] },
        doc! { "_id": 2, "grades": [
            { "grade": 90, "mean": 75, "std": 6 },
            { "grade": 87, "mean": 90, "std": 3 },
            { "grade": 85, "mean": 85, "std": 4 },
        ] },
    ]);
    coll.update_many_with(
        &doc! {},
        &doc! { "$set": { "grades.$[elem].mean": 100 } },
        &filters(vec![doc! { "elem.grade": { "$gte": 85 } }]),
    )
    .expect("update");
    coll.update_many_with(
        &doc! {},
        &doc! { "$inc": { "grades.$[elem].std": -1 } },
        &filters(vec![
            doc! { "elem.grade": { "$gte": 80 }, "elem.std": { "$gt": 5 } },
        ]),
    )
    .expect("update");
    assert_eq!(
        field(&coll, "grades"),
        vec![
            (
                Bson::Int32(1),
                bson::bson!([
                    { "grade": 80, "mean": 75, "std": 5 },
                    { "grade": 85, "mean": 100, "std": 4 },
                    { "grade": 85, "mean": 100, "std": 5 },
                ])
            ),
            (
                Bson::Int32(2),
                bson::bson!([
                    { "grade": 90, "mean": 100, "std": 5 },
                    { "grade": 87, "mean": 100, "std": 3 },
                    { "grade": 85, "mean": 100, "std": 4 },
                ])
            ),
        ]
    );
}

#[test]
fn nested_positional_operators() {
    let grades = || {
        bson::bson!([
            { "type": "quiz", "questions": [10, 8, 5] },
            { "type": "quiz", "questions": [8, 9, 6] },
            { "type": "hw", "questions": [5, 4, 3] },
            { "type": "exam", "questions": [25, 10, 23, 0] },
        ])
    };
    let (_d, _db, coll) = collection(&[
        doc! { "_id": 1, "grades": grades() },
        doc! { "_id": 2, "grades": grades() },
    ]);
    coll.update_one(
        &doc! { "_id": 1 },
        &doc! { "$inc": { "grades.$[].questions.$[score]": 2 } },
        &filters(vec![doc! { "score": { "$gte": 8 } }]),
    )
    .expect("update");
    coll.update_one(
        &doc! { "_id": 2 },
        &doc! { "$inc": { "grades.$[t].questions.$[score]": 2 } },
        &filters(vec![
            doc! { "t.type": "quiz" },
            doc! { "score": { "$gte": 8 } },
        ]),
    )
    .expect("update");
    assert_eq!(
        field(&coll, "grades"),
        vec![
            (
                Bson::Int32(1),
                bson::bson!([
                    { "type": "quiz", "questions": [12, 10, 5] },
                    { "type": "quiz", "questions": [10, 11, 6] },
                    { "type": "hw", "questions": [5, 4, 3] },
                    { "type": "exam", "questions": [27, 12, 25, 0] },
                ])
            ),
            (
                Bson::Int32(2),
                bson::bson!([
                    { "type": "quiz", "questions": [12, 10, 5] },
                    { "type": "quiz", "questions": [10, 11, 6] },
                    { "type": "hw", "questions": [5, 4, 3] },
                    { "type": "exam", "questions": [25, 10, 23, 0] },
                ])
            ),
        ]
    );
}

#[test]
fn filtered_positional_with_array_operators() {
    let (_d, _db, coll) = collection(&[doc! {
        "_id": 1,
        "degrees": [
            { "level": "Bachelor's", "tags": ["a"], "n": [1, 2, 3] },
            { "level": "Master's", "tags": ["b"], "n": [4, 5] },
            { "level": "PhD", "tags": [], "n": [] },
        ],
    }]);
    coll.update_one(
        &doc! {},
        &doc! {
            "$addToSet": { "degrees.$[d].tags": { "$each": ["b", "c"] } },
            "$pop": { "degrees.$[d].n": -1 },
            "$set": { "degrees.$[d].campaign": true },
        },
        &filters(vec![doc! { "d.level": { "$ne": "Bachelor's" } }]),
    )
    .expect("update");
    coll.update_one(
        &doc! {},
        &doc! { "$pullAll": { "degrees.$[].n": [2, 5] }, "$min": { "degrees.$[x].rank": 1 } },
        &filters(vec![doc! { "x.tags": "c" }]),
    )
    .expect("update");
    let d = &find_sorted(&coll, doc! {})[0];
    assert_eq!(
        d.get("degrees"),
        Some(&bson::bson!([
            { "level": "Bachelor's", "tags": ["a"], "n": [1, 3] },
            { "level": "Master's", "tags": ["b", "c"], "n": [], "campaign": true, "rank": 1 },
            { "level": "PhD", "tags": ["b", "c"], "n": [], "campaign": true, "rank": 1 },
        ]))
    );
}

#[test]
fn positional_paths_move_a_measurement_to_its_new_series() {
    // A meta field holding an array: updating an element changes the series.
    let (_d, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "_id": 1, "t": at(0), "m": { "tags": ["x", "y"] }, "v": 1 },
            doc! { "_id": 2, "t": at(MINUTE), "m": { "tags": ["x", "y"] }, "v": 2 },
        ],
    );
    coll.update_one(
        &doc! { "v": 2, "m.tags": "y" },
        &doc! { "$set": { "m.tags.$": "z" } },
        &UpdateOptions::default(),
    )
    .expect("update");
    coll.update_many_with(
        &doc! { "m.tags": "x" },
        &doc! { "$set": { "m.tags.$[e]": "w" } },
        &filters(vec![doc! { "e": "x" }]),
    )
    .expect("update");
    assert_eq!(
        field(&coll, "m"),
        vec![
            (Bson::Int32(1), bson::bson!({ "tags": ["w", "y"] })),
            (Bson::Int32(2), bson::bson!({ "tags": ["w", "z"] })),
        ]
    );
    assert_eq!(
        coll.count(&doc! { "m": { "tags": ["w", "z"] } })
            .expect("count"),
        1
    );
}

#[test]
fn array_filter_and_path_errors_have_mongodb_codes() {
    let (_d, _db, coll) = students();
    let before = find_sorted(&coll, doc! {});
    let cases: Vec<(Document, Vec<Document>, ErrorCode, &str)> = vec![
        (
            doc! { "$set": { "grades.$[x]": 1 } },
            vec![],
            ErrorCode::BadValue,
            "No array filter found for identifier 'x'",
        ),
        (
            doc! { "$set": { "grades.$[x]": 1 } },
            vec![doc! { "x": 1 }, doc! { "y": 2 }],
            ErrorCode::FailedToParse,
            "The array filter for identifier 'y' was not used",
        ),
        (
            doc! { "$set": { "grades.$[X]": 1 } },
            vec![doc! { "X": 1 }],
            ErrorCode::BadValue,
            "must be an alphanumeric string beginning with a lowercase letter",
        ),
        (
            doc! { "$set": { "grades.$[x]": 1 } },
            vec![doc! { "x": 1 }, doc! { "x": 2 }],
            ErrorCode::FailedToParse,
            "Found multiple array filters with the same top-level field name x",
        ),
        (
            doc! { "$set": { "grades.$[x]": 1 } },
            vec![doc! { "x": 1, "y": 2 }],
            ErrorCode::FailedToParse,
            "Expected a single top-level field name",
        ),
        (
            doc! { "$set": { "grades.$[x]": 1 } },
            vec![doc! {}],
            ErrorCode::FailedToParse,
            "without a top-level field name",
        ),
        (
            doc! { "$set": { "grades.$.a.$": 1 } },
            vec![],
            ErrorCode::BadValue,
            "Too many positional",
        ),
        (
            doc! { "$set": { "$[]": 1 } },
            vec![],
            ErrorCode::BadValue,
            "first position",
        ),
        (
            doc! { "$rename": { "grades.$[]": "g" } },
            vec![],
            ErrorCode::BadValue,
            "may not be dynamic",
        ),
        (
            doc! { "$set": { "grades.$[]": 1, "grades.0": 2 } },
            vec![],
            ErrorCode::ConflictingUpdateOperators,
            "conflict",
        ),
        (
            doc! { "$set": { "grades.$[x]": 1 }, "$inc": { "grades.$[y]": 1 } },
            vec![doc! { "x": { "$gte": 0 } }, doc! { "y": 85 }],
            ErrorCode::ConflictingUpdateOperators,
            "conflict",
        ),
        (
            doc! { "_id": 1, "grades": [] },
            vec![doc! { "x": 1 }],
            ErrorCode::FailedToParse,
            "was not used",
        ),
    ];
    for (update, array_filters, code, text) in cases {
        let e = coll
            .update_many_with(&doc! { "_id": 1 }, &update, &filters(array_filters))
            .unwrap_err();
        assert_eq!(e.code(), code, "{update}: {e}");
        assert!(e.to_string().contains(text), "{update}: {e}");
    }
    assert_eq!(find_sorted(&coll, doc! {}), before);
}

#[test]
fn all_positional_with_push_position_and_pull_conditions() {
    let (_d, _db, coll) = collection(&[doc! {
        "_id": 1,
        "runs": [
            { "n": [1, 2], "s": [{ "k": 1 }, { "k": 8 }] },
            { "n": [3], "s": [{ "k": 9 }] },
        ],
    }]);
    coll.update_one(
        &doc! {},
        &doc! {
            "$push": { "runs.$[].n": { "$each": [0], "$position": 0 } },
            "$pull": { "runs.$[].s": { "k": { "$gte": 8 } } },
        },
        &UpdateOptions::default(),
    )
    .expect("update");
    coll.update_one(
        &doc! {},
        &doc! { "$mul": { "runs.$[r].n.$[]": 10 } },
        &filters(vec![doc! { "r.n": 3 }]),
    )
    .expect("update");
    assert_eq!(
        find_sorted(&coll, doc! {})[0].get("runs"),
        Some(&bson::bson!([
            { "n": [0, 1, 2], "s": [{ "k": 1 }] },
            { "n": [0, 30], "s": [] },
        ]))
    );
    // `$inc` through a positional path reaching a string: MongoDB's TypeMismatch.
    let r = coll
        .update_one(
            &doc! {},
            &doc! { "$set": { "runs.$[].s": "x" }, "$inc": { "runs.$[].n.0": 1 } },
            &UpdateOptions::default(),
        )
        .expect("update");
    assert_eq!(r.modified, 1);
    let e = coll
        .update_one(
            &doc! {},
            &doc! { "$inc": { "runs.$[].s": 1 } },
            &UpdateOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::TypeMismatch, "{e}");
}
