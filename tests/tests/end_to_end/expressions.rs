//! The aggregation expression operators through the public API: `$project` and `$match`
//! stages of `aggregate`, and `$expr` in `find` filters (strings, regular expressions,
//! conversions, arithmetic, arrays, `$switch`, system variables), with MongoDB's error codes.

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, Database, ErrorCode, FindOptions, TimeseriesOptions,
};
use tscoll_tests::spec::{insert_all, temp_collection};

const T0: i64 = 1_700_000_000_000;

/// Three readings of two sensors: time `t`, meta `m`.
fn readings() -> (tempfile::TempDir, Database, Collection) {
    let (dir, db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("t").meta_field("m"),
    );
    let at = |i: i64| DateTime::from_millis(T0 + i * 60_000);
    insert_all(
        &coll,
        &[
            doc! { "t": at(0), "m": { "sensor": "north-1" }, "temp": 21.46, "note": "  door OPEN ", "tags": ["a", "b", "c"], "code": "17" },
            doc! { "t": at(1), "m": { "sensor": "north-1" }, "temp": 30.5, "note": "fan: ok", "tags": [], "code": "x" },
            doc! { "t": at(2), "m": { "sensor": "south-2" }, "temp": -4.0, "note": "café ☕ busy", "tags": ["b"] },
        ],
    );
    (dir, db, coll)
}

fn sorted() -> Document {
    doc! { "$sort": { "t": 1 } }
}

#[test]
fn project_computes_strings_regexes_conversions_and_arrays() {
    let (_dir, _db, coll) = readings();
    let out = coll
        .aggregate(&[
            sorted(),
            doc! { "$project": {
                "_id": 0,
                "sensor": { "$toUpper": "$m.sensor" },
                "site": { "$arrayElemAt": [{ "$split": ["$m.sensor", "-"] }, 0] },
                "note": { "$trim": { "input": "$note" } },
                "len": { "$strLenCP": "$note" },
                "word": { "$regexFind": { "input": "$note", "regex": "([a-zé]+)\\s", "options": "i" } },
                "code": { "$convert": { "input": "$code", "to": "int", "onError": -1, "onNull": 0 } },
                "rounded": { "$round": ["$temp", 1] },
                "band": { "$switch": { "branches": [
                    { "case": { "$lt": ["$temp", 0] }, "then": "freezing" },
                    { "case": { "$lt": ["$temp", 25] }, "then": "mild" },
                ], "default": "hot" } },
                "ntags": { "$size": "$tags" },
                "bs": { "$filter": { "input": "$tags", "cond": { "$ne": ["$$this", "b"] } } },
                "joined": { "$reduce": { "input": "$tags", "initialValue": "", "in": { "$concat": ["$$value", "$$this"] } } },
                "minute": { "$toString": { "$minute": "$t" } },
            } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        vec![
            doc! {
                "sensor": "NORTH-1", "site": "north", "note": "door OPEN", "len": 12,
                "word": { "match": "door ", "idx": 2, "captures": ["door"] },
                "code": 17, "rounded": 21.5, "band": "mild", "ntags": 3, "bs": ["a", "c"],
                "joined": "abc", "minute": "13",
            },
            doc! {
                "sensor": "NORTH-1", "site": "north", "note": "fan: ok", "len": 7,
                "word": Bson::Null,
                "code": -1, "rounded": 30.5, "band": "hot", "ntags": 0, "bs": [],
                "joined": "", "minute": "14",
            },
            doc! {
                "sensor": "SOUTH-2", "site": "south", "note": "café ☕ busy", "len": 11,
                "word": { "match": "café ", "idx": 0, "captures": ["café"] },
                "code": 0, "rounded": -4.0, "band": "freezing", "ntags": 1, "bs": [],
                "joined": "b", "minute": "15",
            },
        ]
    );
}

#[test]
fn find_filters_with_expression_operators() {
    let (_dir, _db, coll) = readings();
    let find = |f: Document| {
        coll.find(&f, &FindOptions::default())
            .expect("find")
            .iter()
            .map(|d| d.get_f64("temp").expect("temp"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        find(doc! { "$expr": { "$regexMatch": { "input": "$note", "regex": "^fan|busy$" } } }),
        vec![30.5, -4.0]
    );
    assert_eq!(
        find(doc! { "$expr": { "$in": ["b", "$tags"] } }),
        vec![21.46, -4.0]
    );
    assert_eq!(
        find(doc! { "$expr": { "$gt": [{ "$size": { "$ifNull": ["$tags", []] } }, 1] } }),
        vec![21.46]
    );
    assert_eq!(
        find(doc! { "$expr": { "$eq": [{ "$substrCP": ["$m.sensor", 0, 5] }, "south"] } }),
        vec![-4.0]
    );
    assert_eq!(
        find(doc! { "$expr": { "$gte": [{ "$sqrt": { "$abs": "$temp" } }, 5] } }),
        vec![30.5]
    );
    // A failing expression fails the query with MongoDB's code.
    let err = coll
        .find(
            &doc! { "$expr": { "$switch": { "branches": [{ "case": { "$gt": ["$temp", 100] }, "then": true }] } } },
            &FindOptions::default(),
        )
        .expect_err("no branch matches");
    assert_eq!(err.code(), ErrorCode::Location(40066));
    let err = coll
        .find(
            &doc! { "$expr": { "$ln": "$temp" } },
            &FindOptions::default(),
        )
        .expect_err("ln of a negative");
    assert_eq!(err.code(), ErrorCode::Location(28766));
    // A find filter has no whole document: $$ROOT is refused.
    let err = coll
        .find(
            &doc! { "$expr": { "$eq": ["$$ROOT.temp", 30.5] } },
            &FindOptions::default(),
        )
        .expect_err("no $$ROOT in find");
    assert_eq!(err.code(), ErrorCode::BadValue);
}

#[test]
fn pipeline_stages_read_root_and_remove() {
    let (_dir, _db, coll) = readings();
    // A leading $match reading $$ROOT runs as a stage, over whole documents.
    let out = coll
        .aggregate(&[
            doc! { "$match": { "$expr": { "$eq": ["$$ROOT.m.sensor", "south-2"] } } },
            doc! { "$project": {
                "_id": 0,
                "fields": { "$size": { "$filter": {
                    "input": ["$$ROOT.t", "$$CURRENT.temp", "$code"],
                    "as": "f",
                    "cond": { "$ne": [{ "$type": "$$f" }, "null"] },
                } } },
                "code": { "$ifNull": ["$code", "$$REMOVE"] },
                "later": { "$lt": ["$t", "$$NOW"] },
            } },
        ])
        .expect("aggregate");
    assert_eq!(out, vec![doc! { "fields": 2, "later": true }]);
    // $group collects whole documents with $$ROOT.
    let out = coll
        .aggregate(&[
            sorted(),
            doc! { "$group": { "_id": "$m.sensor", "all": { "$push": "$$ROOT" } } },
            doc! { "$sort": { "_id": 1 } },
            doc! { "$project": { "n": { "$size": "$all" }, "temps": { "$map": { "input": "$all", "in": "$$this.temp" } } } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        vec![
            doc! { "_id": "north-1", "n": 2, "temps": [21.46, 30.5] },
            doc! { "_id": "south-2", "n": 1, "temps": [-4.0] },
        ]
    );
    // Errors carry MongoDB's codes through the stage.
    let err = coll
        .aggregate(&[doc! { "$project": { "x": { "$toInt": "$note" } } }])
        .expect_err("not a number");
    assert_eq!(err.code(), ErrorCode::ConversionFailure);
    let err = coll
        .aggregate(&[doc! { "$addFields": { "x": { "$range": [0, 100_000_000] } } }])
        .expect_err("too large a range");
    assert_eq!(err.code(), ErrorCode::ExceededMemoryLimit);
}

#[test]
fn a_match_after_a_stage_judges_an_expr_reading_no_field() {
    let (_dir, _db, coll) = readings();
    for (expr, n) in [
        (doc! { "$eq": [1, 2] }, 0),
        (doc! { "$eq": [1, 1] }, 3),
        (doc! { "$lt": ["$$NOW", { "$toDate": 0_i64 }] }, 0),
    ] {
        let out = coll
            .aggregate(&[
                doc! { "$project": { "temp": 1 } },
                doc! { "$match": { "$expr": expr.clone() } },
            ])
            .expect("aggregate");
        assert_eq!(out.len(), n, "{expr}");
        // The same filter in find.
        let found = coll
            .find(&doc! { "$expr": expr.clone() }, &FindOptions::default())
            .expect("find");
        assert_eq!(found.len(), n, "{expr}");
    }
}
