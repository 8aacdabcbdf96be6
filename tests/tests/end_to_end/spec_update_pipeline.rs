//! Updates with an aggregation pipeline (MongoDB 8.0 manual, "Updates with Aggregation
//! Pipeline"): `$set`/`$addFields`, `$unset`, `$project`, `$replaceRoot`/`$replaceWith` with
//! expressions over the measurement's own fields, in `update_one`, `update_many` and upserts;
//! the updated measurement is checked and placed again (its series may change, its `_id` may
//! not). Also the aggregation stages `$replaceRoot` and `$replaceWith`.

use bson::{Bson, Document, doc};
use tscoll_engine::{CatalogOptions, Collection, ErrorCode, Update, UpdateOptions};
use tscoll_tests::spec::{at, find_sorted, insert_all, options, temp_collection};

const MINUTE: i64 = 60_000;

/// The manual's `students` scores as measurements of series "s", one a minute.
fn students() -> (tempfile::TempDir, tscoll_engine::Database, Collection) {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "_id": 1, "t": at(0), "m": "s", "test1": 95, "test2": 92, "test3": 90 },
            doc! { "_id": 2, "t": at(MINUTE), "m": "s", "test1": 98, "test2": 100, "test3": 102 },
            doc! { "_id": 3, "t": at(2 * MINUTE), "m": "s", "test1": 95, "test2": 110 },
        ],
    );
    (dir, db, coll)
}

/// Every measurement in time order, `t` and `m` left out.
fn rows(coll: &Collection) -> Vec<Document> {
    find_sorted(coll, doc! {})
        .into_iter()
        .map(|mut d| {
            d.remove("t");
            d.remove("m");
            d
        })
        .collect()
}

#[test]
fn update_one_with_set_and_unset_stages() {
    let (_d, _db, coll) = students();
    let r = coll
        .update_one(
            &doc! { "_id": 3 },
            [doc! { "$set": { "test3": 98 } }],
            &UpdateOptions::default(),
        )
        .expect("update");
    assert_eq!((r.matched, r.modified), (1, 1));
    coll.update_one(
        &doc! { "_id": 1 },
        vec![doc! { "$unset": ["test2", "test3"] }],
        &UpdateOptions::default(),
    )
    .expect("update");
    assert_eq!(
        rows(&coll),
        vec![
            doc! { "_id": 1, "test1": 95 },
            doc! { "_id": 2, "test1": 98, "test2": 100, "test3": 102 },
            doc! { "_id": 3, "test1": 95, "test2": 110, "test3": 98 },
        ]
    );
}

#[test]
fn update_many_computes_fields_from_the_measurement() {
    let (_d, _db, coll) = students();
    let pipeline = vec![
        doc! { "$set": {
            "total": { "$add": ["$test1", "$test2", { "$ifNull": ["$test3", 0] }] },
        } },
        doc! { "$set": {
            "average": { "$divide": ["$total", 3] },
        } },
        doc! { "$addFields": {
            "grade": { "$cond": [{ "$gte": ["$average", 95] }, "A", "B"] },
        } },
    ];
    let r = coll.update_many(&doc! {}, &pipeline).expect("update");
    assert_eq!((r.matched, r.modified), (3, 3));
    let got: Vec<(Bson, Bson, Bson)> = rows(&coll)
        .iter()
        .map(|d| {
            (
                d.get("total").cloned().unwrap_or(Bson::Null),
                d.get("average").cloned().unwrap_or(Bson::Null),
                d.get("grade").cloned().unwrap_or(Bson::Null),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (Bson::Int32(277), Bson::Double(277.0 / 3.0), Bson::from("B")),
            (Bson::Int32(300), Bson::Double(100.0), Bson::from("A")),
            (Bson::Int32(205), Bson::Double(205.0 / 3.0), Bson::from("B")),
        ]
    );
    // A pipeline that leaves a measurement as it was does not modify it.
    let r = coll
        .update_many(&doc! {}, [doc! { "$set": { "test1": "$test1" } }])
        .expect("update");
    assert_eq!((r.matched, r.modified), (3, 0));
}

#[test]
fn replace_with_and_project_keep_the_id() {
    let (_d, _db, coll) = students();
    coll.update_one(
        &doc! { "_id": 1 },
        [doc! { "$replaceWith": {
            "t": "$t", "m": "$m", "sum": { "$add": ["$test1", "$test2"] },
        } }],
        &UpdateOptions::default(),
    )
    .expect("update");
    coll.update_one(
        &doc! { "_id": 2 },
        [doc! { "$project": { "t": 1, "m": 1, "test2": 1 } }],
        &UpdateOptions::default(),
    )
    .expect("update");
    coll.update_one(
        &doc! { "_id": 3 },
        [
            doc! { "$replaceRoot": { "newRoot": "$$ROOT" } },
            doc! { "$set": { "copy": "$$ROOT.test2" } },
        ],
        &UpdateOptions::default(),
    )
    .expect("update");
    assert_eq!(
        rows(&coll),
        vec![
            // `_id` comes back first when the new document has none.
            doc! { "_id": 1, "sum": 187 },
            doc! { "_id": 2, "test2": 100 },
            doc! { "_id": 3, "test1": 95, "test2": 110, "copy": 110 },
        ]
    );
}

#[test]
fn a_pipeline_changing_the_meta_field_moves_the_measurement() {
    let (_d, _db, coll) = students();
    coll.update_many(
        &doc! { "test1": 95 },
        [doc! { "$set": { "m": { "$cond": [{ "$gte": ["$test2", 100] }, "high", "low"] } } }],
    )
    .expect("update");
    assert_eq!(coll.count(&doc! { "m": "high" }).expect("count"), 1);
    assert_eq!(coll.count(&doc! { "m": "low" }).expect("count"), 1);
    assert_eq!(coll.count(&doc! { "m": "s" }).expect("count"), 1);
    assert_eq!(
        find_sorted(&coll, doc! { "m": "high" })[0].get("_id"),
        Some(&Bson::Int32(3))
    );
}

#[test]
fn upsert_runs_the_pipeline_on_the_filter_equalities() {
    let (_d, _db, coll) = students();
    let r = coll
        .update_one(
            &doc! { "_id": 10, "t": at(5 * MINUTE), "m": "s", "test1": 70 },
            [doc! { "$set": {
                "test2": { "$ifNull": ["$test2", 0] },
                "total": { "$add": ["$test1", 5] },
            } }],
            &UpdateOptions {
                upsert: true,
                ..UpdateOptions::default()
            },
        )
        .expect("upsert");
    assert_eq!(r.upserted_id, Some(Bson::Int32(10)));
    assert_eq!(
        rows(&coll)[3],
        doc! { "_id": 10, "test1": 70, "test2": 0, "total": 75 }
    );
}

#[test]
fn pipeline_update_errors_have_mongodb_codes_and_change_nothing() {
    let (_d, _db, coll) = students();
    let before = find_sorted(&coll, doc! {});
    let cases: Vec<(Vec<Document>, ErrorCode)> = vec![
        (
            vec![doc! { "$match": { "test1": 95 } }],
            ErrorCode::InvalidOptions,
        ),
        (
            vec![doc! { "$set": { "a": 1 } }, doc! { "$sort": { "a": 1 } }],
            ErrorCode::InvalidOptions,
        ),
        (
            vec![doc! { "$set": { "_id": 99 } }],
            ErrorCode::ImmutableField,
        ),
        (vec![doc! { "$nosuch": {} }], ErrorCode::Location(40324)),
        (
            vec![doc! { "$replaceWith": { "_id": 7, "t": "$t" } }],
            ErrorCode::ImmutableField,
        ),
        (
            vec![doc! { "$replaceWith": "$test1" }],
            ErrorCode::Location(40228),
        ),
        (
            vec![doc! { "$replaceRoot": { "newRoot": "$nothing" } }],
            ErrorCode::Location(40228),
        ),
        // The time field must stay a date.
        (vec![doc! { "$unset": "t" }], ErrorCode::BadValue),
        (
            vec![doc! { "$replaceWith": { "x": 1 } }],
            ErrorCode::BadValue,
        ),
        (
            vec![doc! { "$set": { "q": { "$divide": ["$test1", 0] } } }],
            ErrorCode::Location(16608),
        ),
    ];
    for (pipeline, code) in cases {
        let e = coll
            .update_many(&doc! {}, Update::Pipeline(pipeline.clone()))
            .unwrap_err();
        assert_eq!(e.code(), code, "{pipeline:?}: {e}");
        assert_eq!(find_sorted(&coll, doc! {}), before, "{pipeline:?}");
    }
    let e = coll
        .update_many(&doc! {}, [doc! { "$match": {} }])
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("$match is not allowed to be used within an update"),
        "{e}"
    );
    // arrayFilters go with update operators only.
    let e = coll
        .update_many_with(
            &doc! {},
            [doc! { "$set": { "a": 1 } }],
            &UpdateOptions {
                array_filters: vec![doc! { "x": 1 }],
                ..UpdateOptions::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::FailedToParse, "{e}");
    assert_eq!(find_sorted(&coll, doc! {}), before);
}

#[test]
fn aggregation_replace_root_and_replace_with() {
    let (_d, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": "s", "name": "Arlene", "pets": { "dogs": 2, "cats": 1 } },
            doc! { "t": at(MINUTE), "m": "s", "name": "Sam", "pets": { "dogs": 1 } },
        ],
    );
    let got = coll
        .aggregate(&[
            doc! { "$sort": { "t": 1 } },
            doc! { "$replaceRoot": { "newRoot": "$pets" } },
        ])
        .expect("aggregate");
    assert_eq!(got, vec![doc! { "dogs": 2, "cats": 1 }, doc! { "dogs": 1 }]);
    let got = coll
        .aggregate(&[
            doc! { "$sort": { "t": 1 } },
            doc! { "$replaceWith": { "who": "$name", "all": { "$add": ["$pets.dogs", { "$ifNull": ["$pets.cats", 0] }] }, "doc": "$$ROOT.name" } },
        ])
        .expect("aggregate");
    assert_eq!(
        got,
        vec![
            doc! { "who": "Arlene", "all": 3, "doc": "Arlene" },
            doc! { "who": "Sam", "all": 1, "doc": "Sam" },
        ]
    );
    let cases: Vec<(Document, ErrorCode)> = vec![
        (
            doc! { "$replaceRoot": { "newRoot": "$name" } },
            ErrorCode::Location(40228),
        ),
        (
            doc! { "$replaceWith": "$missing" },
            ErrorCode::Location(40228),
        ),
        (doc! { "$replaceRoot": "$pets" }, ErrorCode::Location(40229)),
        (
            doc! { "$replaceRoot": { "newRoot": "$pets", "x": 1 } },
            ErrorCode::Location(40230),
        ),
        (doc! { "$replaceRoot": {} }, ErrorCode::Location(40231)),
    ];
    for (stage, code) in cases {
        let e = coll.aggregate(std::slice::from_ref(&stage)).unwrap_err();
        assert_eq!(e.code(), code, "{stage}: {e}");
    }
}

#[test]
fn now_is_one_date_for_the_whole_update() {
    // The manual's `updateMany` example: `lastUpdate: "$$NOW"`.
    let (_d, _db, coll) = students();
    let before = bson::DateTime::now();
    let r = coll
        .update_many(
            &doc! {},
            vec![doc! { "$set": { "status": "Modified", "lastUpdate": "$$NOW" } }],
        )
        .expect("update");
    let after = bson::DateTime::now();
    assert_eq!((r.matched, r.modified), (3, 3));
    let dates: Vec<bson::DateTime> = rows(&coll)
        .iter()
        .map(|d| {
            assert_eq!(d.get_str("status").ok(), Some("Modified"));
            *d.get_datetime("lastUpdate").expect("a date")
        })
        .collect();
    assert_eq!(dates.len(), 3);
    assert!(dates.iter().all(|d| *d == dates[0]), "{dates:?}");
    assert!(before <= dates[0] && dates[0] <= after);
    // The filter's `$expr` and every stage read the same date (dates are in milliseconds).
    std::thread::sleep(std::time::Duration::from_millis(2));
    let r = coll
        .update_many_with(
            &doc! { "$expr": { "$eq": ["$lastUpdate", "$$NOW"] } },
            vec![
                doc! { "$set": { "a": "$$NOW" } },
                doc! { "$set": { "b": "$$NOW", "same": { "$eq": ["$a", "$$NOW"] } } },
            ],
            &UpdateOptions::default(),
        )
        .expect("update");
    assert_eq!(r.matched, 0, "an earlier update's date is not this one's");
    let r = coll
        .update_many_with(
            &doc! { "$expr": { "$lt": ["$lastUpdate", "$$NOW"] } },
            vec![
                doc! { "$set": { "a": "$$NOW" } },
                doc! { "$set": { "b": "$$NOW", "same": { "$eq": ["$a", "$$NOW"] } } },
            ],
            &UpdateOptions::default(),
        )
        .expect("update");
    assert_eq!(r.matched, 3);
    for d in rows(&coll) {
        assert_eq!(d.get("a"), d.get("b"), "{d}");
        assert_eq!(d.get_bool("same").ok(), Some(true), "{d}");
    }
}

#[test]
fn root_and_current_are_the_measurement_before_the_stage() {
    let (_d, _db, coll) = students();
    coll.update_one(
        &doc! { "_id": 1 },
        [
            doc! { "$set": { "copy": "$$ROOT" } },
            doc! { "$set": { "first": "$$CURRENT.copy.test1" } },
        ],
        &UpdateOptions::default(),
    )
    .expect("update");
    let got = find_sorted(&coll, doc! { "_id": 1 });
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].get_document("copy").expect("a copy"),
        &doc! { "_id": 1, "t": at(0), "m": "s", "test1": 95, "test2": 92, "test3": 90 }
    );
    assert_eq!(got[0].get_i32("first").ok(), Some(95));
}

#[test]
fn let_variables_in_the_filter_expr_and_the_pipeline() {
    // The manual's `updateMany` example with `let`.
    let (_d, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    insert_all(
        &coll,
        &[
            doc! { "_id": 1, "t": at(0), "m": "c", "flavor": "chocolate" },
            doc! { "_id": 2, "t": at(MINUTE), "m": "c", "flavor": "strawberry" },
            doc! { "_id": 3, "t": at(2 * MINUTE), "m": "c", "flavor": "cherry" },
        ],
    );
    let with_let = |l: Document| UpdateOptions {
        let_vars: Some(l),
        ..UpdateOptions::default()
    };
    let r = coll
        .update_many_with(
            &doc! { "$expr": { "$eq": ["$flavor", "$$targetFlavor"] } },
            [doc! { "$set": { "flavor": "$$newFlavor" } }],
            &with_let(doc! { "targetFlavor": "strawberry", "newFlavor": "orange" }),
        )
        .expect("update");
    assert_eq!((r.matched, r.modified), (1, 1));
    let flavors: Vec<String> = rows(&coll)
        .iter()
        .map(|d| d.get_str("flavor").expect("flavor").to_owned())
        .collect();
    assert_eq!(flavors, ["chocolate", "orange", "cherry"]);

    // Values are expressions evaluated once, read with paths; `$literal` is left alone, and
    // operator-style updates use `let` in the filter.
    coll.update_one(
        &doc! { "_id": 1 },
        [doc! { "$set": {
            "n": { "$add": ["$$k", 1] },
            "site": "$$cfg.site",
            "raw": { "$literal": "$$k" },
            "gone": "$$cfg.nothing",
        } }],
        &with_let(doc! { "k": { "$multiply": [2, 3] }, "cfg": { "$literal": { "site": "p1" } } }),
    )
    .expect("update");
    let r = coll
        .update_many_with(
            &doc! { "$expr": { "$in": ["$flavor", "$$these"] } },
            &doc! { "$set": { "picked": true } },
            &with_let(doc! { "these": ["cherry", "orange"] }),
        )
        .expect("update");
    assert_eq!((r.matched, r.modified), (2, 2));
    assert_eq!(
        rows(&coll),
        vec![
            doc! { "_id": 1, "flavor": "chocolate", "n": 7, "site": "p1", "raw": "$$k" },
            doc! { "_id": 2, "flavor": "orange", "picked": true },
            doc! { "_id": 3, "flavor": "cherry", "picked": true },
        ]
    );
}

#[test]
fn malformed_let_variables_fail_and_change_nothing() {
    let (_d, _db, coll) = students();
    let fails = |l: Document, update: Update| {
        coll.update_many_with(
            &doc! {},
            update,
            &UpdateOptions {
                let_vars: Some(l),
                ..UpdateOptions::default()
            },
        )
        .expect_err("fails")
        .code()
    };
    let set_x = || Update::from(vec![doc! { "$set": { "x": "$$x" } }]);
    // System variables cannot be redefined, and names begin with a lowercase letter.
    assert_eq!(
        fails(doc! { "NOW": 1 }, set_x()),
        ErrorCode::Location(16867)
    );
    assert_eq!(fails(doc! { "1x": 1 }, set_x()), ErrorCode::Location(16867));
    // `let` is evaluated before any document is read.
    assert_eq!(
        fails(doc! { "x": "$test1" }, set_x()),
        ErrorCode::Location(4890500)
    );
    // A variable `let` does not define.
    assert_eq!(fails(doc! { "y": 1 }, set_x()), ErrorCode::Location(17276));
    assert_eq!(
        rows(&coll),
        vec![
            doc! { "_id": 1, "test1": 95, "test2": 92, "test3": 90 },
            doc! { "_id": 2, "test1": 98, "test2": 100, "test3": 102 },
            doc! { "_id": 3, "test1": 95, "test2": 110 },
        ]
    );
}
