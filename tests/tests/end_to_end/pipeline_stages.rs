//! The pipeline stages `$densify`, `$fill`, `$unwind`, `$sortByCount`, `$bucket`,
//! `$bucketAuto`, `$facet`, `$sample` and `$lookup`: the MongoDB manual's examples (their
//! documents inserted as measurements), gap filling of sensor series one row per minute,
//! and the errors with MongoDB's codes.

use std::collections::BTreeMap;

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, Database, DatabaseOptions, ErrorCode, TimeseriesOptions,
};
use tscoll_tests::spec::{insert_all, temp_collection};

const MINUTE: i64 = 60_000;
const HOUR: i64 = 3_600_000;
/// 2021-05-18T00:00:00Z.
const MAY_18: i64 = 1_621_296_000_000;

fn at(ms: i64) -> Bson {
    Bson::DateTime(DateTime::from_millis(ms))
}

/// A collection (time field `ts`, meta field `meta`) holding `docs`, each given `ts` (one
/// second apart) unless it has one.
fn with(docs: Vec<Document>) -> (tempfile::TempDir, Database, Collection) {
    let (dir, db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    let docs: Vec<Document> = docs
        .into_iter()
        .enumerate()
        .map(|(i, mut d)| {
            if !d.contains_key("ts") {
                d.insert("ts", at(MAY_18 + i64::try_from(i).expect("i") * 1000));
            }
            d
        })
        .collect();
    insert_all(&coll, &docs);
    (dir, db, coll)
}

/// Runs `pipeline`, then drops `_id` and `ts` from the results.
fn run(coll: &Collection, pipeline: &[Document]) -> Vec<Document> {
    let mut p = pipeline.to_vec();
    p.push(doc! { "$unset": ["_id", "ts"] });
    coll.aggregate(&p).expect("aggregate")
}

fn fails(coll: &Collection, pipeline: &[Document], code: ErrorCode) {
    let e = coll.aggregate(pipeline).expect_err("an error");
    assert_eq!(e.code(), code, "{pipeline:?}: {e}");
}

// $unwind: the manual's clothing example.

fn clothing() -> Vec<Document> {
    vec![
        doc! { "n": 1, "item": "Shirt", "sizes": ["S", "M", "L"] },
        doc! { "n": 2, "item": "Shorts", "sizes": [] },
        doc! { "n": 3, "item": "Hat", "sizes": "M" },
        doc! { "n": 4, "item": "Gloves" },
        doc! { "n": 5, "item": "Scarf", "sizes": null },
    ]
}

#[test]
fn unwind_string_form_drops_null_missing_and_empty() {
    let (_dir, _db, coll) = with(clothing());
    let out = run(
        &coll,
        &[doc! { "$sort": { "n": 1 } }, doc! { "$unwind": "$sizes" }],
    );
    assert_eq!(
        out,
        [
            doc! { "n": 1, "item": "Shirt", "sizes": "S" },
            doc! { "n": 1, "item": "Shirt", "sizes": "M" },
            doc! { "n": 1, "item": "Shirt", "sizes": "L" },
            doc! { "n": 3, "item": "Hat", "sizes": "M" },
        ]
    );
}

#[test]
fn unwind_document_form_with_index_and_preserve() {
    let (_dir, _db, coll) = with(clothing());
    let out = run(
        &coll,
        &[
            doc! { "$sort": { "n": 1 } },
            doc! { "$unwind": { "path": "$sizes", "includeArrayIndex": "arrayIndex", "preserveNullAndEmptyArrays": true } },
        ],
    );
    assert_eq!(
        out,
        [
            doc! { "n": 1, "item": "Shirt", "sizes": "S", "arrayIndex": 0_i64 },
            doc! { "n": 1, "item": "Shirt", "sizes": "M", "arrayIndex": 1_i64 },
            doc! { "n": 1, "item": "Shirt", "sizes": "L", "arrayIndex": 2_i64 },
            doc! { "n": 2, "item": "Shorts", "arrayIndex": null },
            doc! { "n": 3, "item": "Hat", "sizes": "M", "arrayIndex": null },
            doc! { "n": 4, "item": "Gloves", "arrayIndex": null },
            doc! { "n": 5, "item": "Scarf", "sizes": null, "arrayIndex": null },
        ]
    );
}

#[test]
fn unwind_errors_carry_mongodbs_codes() {
    let (_dir, _db, coll) = with(clothing());
    fails(
        &coll,
        &[doc! { "$unwind": "sizes" }],
        ErrorCode::Location(28818),
    );
    fails(&coll, &[doc! { "$unwind": 1 }], ErrorCode::Location(15981));
    fails(&coll, &[doc! { "$unwind": {} }], ErrorCode::Location(28812));
    fails(
        &coll,
        &[doc! { "$unwind": { "path": "$sizes", "x": 1 } }],
        ErrorCode::Location(28811),
    );
    fails(
        &coll,
        &[doc! { "$unwind": { "path": "$sizes", "preserveNullAndEmptyArrays": 1 } }],
        ErrorCode::Location(28809),
    );
}

// $sortByCount: the manual's exhibits.

fn exhibits() -> Vec<Document> {
    vec![
        doc! { "title": "The Pillars of Society", "tags": ["painting", "satire", "Expressionism", "caricature"] },
        doc! { "title": "Melancholy III", "tags": ["woodcut", "Expressionism"] },
        doc! { "title": "Dancer", "tags": ["oil", "Surrealism", "painting"] },
        doc! { "title": "The Great Wave off Kanagawa", "tags": ["woodblock", "ukiyo-e"] },
        doc! { "title": "The Persistence of Memory", "tags": ["Surrealism", "painting", "oil"] },
        doc! { "title": "Composition VII", "tags": ["oil", "painting", "abstract"] },
        doc! { "title": "The Scream", "tags": ["Expressionism", "painting", "oil"] },
        doc! { "title": "Blue Flower", "tags": ["abstract", "painting"] },
    ]
}

#[test]
fn sort_by_count_counts_and_sorts_descending() {
    let (_dir, _db, coll) = with(exhibits());
    let out = coll
        .aggregate(&[
            doc! { "$unwind": "$tags" },
            doc! { "$sortByCount": "$tags" },
        ])
        .expect("aggregate");
    let counts: BTreeMap<String, i32> = out
        .iter()
        .map(|d| {
            (
                d.get_str("_id").expect("_id").to_owned(),
                d.get_i32("count").expect("count"),
            )
        })
        .collect();
    let expected: BTreeMap<String, i32> = [
        ("painting", 6),
        ("oil", 4),
        ("Expressionism", 3),
        ("Surrealism", 2),
        ("abstract", 2),
        ("woodblock", 1),
        ("woodcut", 1),
        ("ukiyo-e", 1),
        ("satire", 1),
        ("caricature", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(counts, expected);
    let order: Vec<i32> = out
        .iter()
        .map(|d| d.get_i32("count").expect("count"))
        .collect();
    assert!(order.windows(2).all(|w| w[0] >= w[1]), "{order:?}");
    assert_eq!(out[0], doc! { "_id": "painting", "count": 6 });
    fails(
        &coll,
        &[doc! { "$sortByCount": "tags" }],
        ErrorCode::Location(40148),
    );
    fails(
        &coll,
        &[doc! { "$sortByCount": 1 }],
        ErrorCode::Location(40149),
    );
}

// $bucket and $bucketAuto: the manual's artists and artwork.

fn artists() -> Vec<Document> {
    vec![
        doc! { "last_name": "Bernard", "first_name": "Emil", "year_born": 1868 },
        doc! { "last_name": "Rippl-Ronai", "first_name": "Joszef", "year_born": 1861 },
        doc! { "last_name": "Ostroumova", "first_name": "Anna", "year_born": 1871 },
        doc! { "last_name": "Van Gogh", "first_name": "Vincent", "year_born": 1853 },
        doc! { "last_name": "Maurer", "first_name": "Alfred", "year_born": 1868 },
        doc! { "last_name": "Munch", "first_name": "Edvard", "year_born": 1863 },
        doc! { "last_name": "Redon", "first_name": "Odilon", "year_born": 1840 },
        doc! { "last_name": "Diriks", "first_name": "Edvard", "year_born": 1855 },
    ]
}

#[test]
fn bucket_groups_by_boundaries_with_outputs() {
    let (_dir, _db, coll) = with(artists());
    let out = coll
        .aggregate(&[
            doc! { "$sort": { "last_name": 1 } },
            doc! { "$bucket": {
                "groupBy": "$year_born",
                "boundaries": [1840, 1850, 1860, 1870, 1880],
                "default": "Other",
                "output": { "count": { "$sum": 1 }, "artists": { "$push": "$last_name" } },
            } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "_id": 1840, "count": 1, "artists": ["Redon"] },
            doc! { "_id": 1850, "count": 2, "artists": ["Diriks", "Van Gogh"] },
            doc! { "_id": 1860, "count": 4, "artists": ["Bernard", "Maurer", "Munch", "Rippl-Ronai"] },
            doc! { "_id": 1870, "count": 1, "artists": ["Ostroumova"] },
        ]
    );
    // Without output, a count; a value outside the boundaries goes to the default.
    let out = coll
        .aggregate(&[doc! { "$bucket": {
            "groupBy": "$year_born", "boundaries": [1850, 1860], "default": "Other",
        } }])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "_id": 1850, "count": 2 },
            doc! { "_id": "Other", "count": 6 }
        ]
    );
}

#[test]
fn bucket_errors_carry_mongodbs_codes() {
    let (_dir, _db, coll) = with(artists());
    let bucket = |spec: Document| [doc! { "$bucket": spec }];
    // No default and a value outside: $switch's failure, reported under $bucket's code.
    fails(
        &coll,
        &bucket(doc! { "groupBy": "$year_born", "boundaries": [1850, 1860] }),
        ErrorCode::Location(7_158_303),
    );
    fails(
        &coll,
        &bucket(doc! { "groupBy": "$year_born", "boundaries": [1850] }),
        ErrorCode::Location(40192),
    );
    fails(
        &coll,
        &bucket(doc! { "groupBy": "$year_born", "boundaries": [1860, 1850] }),
        ErrorCode::Location(40194),
    );
    fails(
        &coll,
        &bucket(doc! { "groupBy": "$year_born", "boundaries": [1850, "x"] }),
        ErrorCode::Location(40193),
    );
    fails(
        &coll,
        &bucket(doc! { "groupBy": "$year_born", "boundaries": [1850, 1870], "default": 1860 }),
        ErrorCode::Location(40199),
    );
    fails(
        &coll,
        &bucket(doc! { "groupBy": "year_born", "boundaries": [1850, 1870] }),
        ErrorCode::Location(40202),
    );
    fails(
        &coll,
        &bucket(doc! { "groupBy": "$year_born" }),
        ErrorCode::Location(40198),
    );
}

#[test]
fn bucket_auto_splits_evenly() {
    let prices = [199.99, 280.0, 76.04, 167.30, 483.0, 385.0, 159.0, 118.42];
    let (_dir, _db, coll) = with(prices.iter().map(|p| doc! { "price": *p }).collect());
    let out = coll
        .aggregate(&[doc! { "$bucketAuto": { "groupBy": "$price", "buckets": 4 } }])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "_id": { "min": 76.04, "max": 159.0 }, "count": 2 },
            doc! { "_id": { "min": 159.0, "max": 199.99 }, "count": 2 },
            doc! { "_id": { "min": 199.99, "max": 385.0 }, "count": 2 },
            doc! { "_id": { "min": 385.0, "max": 483.0 }, "count": 2 },
        ]
    );
    // Equal values stay in one bucket; the last bucket takes the rest; outputs.
    let (_dir2, _db2, coll) = with(
        [1, 1, 1, 2, 3, 4, 5]
            .iter()
            .map(|v| doc! { "v": *v })
            .collect(),
    );
    let out = coll
        .aggregate(&[doc! { "$bucketAuto": {
            "groupBy": "$v", "buckets": 3, "output": { "n": { "$sum": 1 }, "top": { "$max": "$v" } },
        } }])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "_id": { "min": 1, "max": 2 }, "n": 3, "top": 1 },
            doc! { "_id": { "min": 2, "max": 4 }, "n": 2, "top": 3 },
            doc! { "_id": { "min": 4, "max": 5 }, "n": 2, "top": 5 },
        ]
    );
    fails(
        &coll,
        &[doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 0 } }],
        ErrorCode::Location(40243),
    );
    fails(
        &coll,
        &[doc! { "$bucketAuto": { "groupBy": "$v" } }],
        ErrorCode::Location(40246),
    );
}

// $facet.

#[test]
fn facet_runs_sub_pipelines_over_the_same_input() {
    let (_dir, _db, coll) = with(artists());
    let out = coll
        .aggregate(&[doc! { "$facet": {
            "byDecade": [
                { "$bucket": { "groupBy": "$year_born", "boundaries": [1840, 1850, 1860, 1870, 1880] } },
            ],
            "total": [ { "$count": "n" } ],
            "first": [ { "$sort": { "year_born": 1 } }, { "$limit": 1 }, { "$project": { "_id": 0, "last_name": 1 } } ],
        } }])
        .expect("aggregate");
    assert_eq!(
        out,
        [doc! {
            "byDecade": [
                { "_id": 1840, "count": 1 },
                { "_id": 1850, "count": 2 },
                { "_id": 1860, "count": 4 },
                { "_id": 1870, "count": 1 },
            ],
            "total": [ { "n": 8 } ],
            "first": [ { "last_name": "Redon" } ],
        }]
    );
    fails(
        &coll,
        &[doc! { "$facet": { "a": [ { "$facet": { "b": [ { "$limit": 1 } ] } } ] } }],
        ErrorCode::Location(40600),
    );
    fails(
        &coll,
        &[doc! { "$facet": { "a": [] } }],
        ErrorCode::Location(40171),
    );
    fails(&coll, &[doc! { "$facet": {} }], ErrorCode::Location(40169));
}

#[test]
fn facet_keeps_its_input_in_a_file_past_the_memory_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(
        dir.path(),
        DatabaseOptions {
            sort_memory_bytes: 4096,
            ..DatabaseOptions::default()
        },
    )
    .expect("open");
    let coll = db
        .create_collection("c", &TimeseriesOptions::new("ts").meta_field("meta"))
        .expect("create");
    let docs: Vec<Document> = (0..2000)
        .map(|i: i64| doc! { "ts": at(MAY_18 + i * 1000), "meta": i % 3, "v": i })
        .collect();
    insert_all(&coll, &docs);
    let out = coll
        .aggregate(&[doc! { "$facet": {
            "sum": [ { "$group": { "_id": null, "s": { "$sum": "$v" } } } ],
            "count": [ { "$count": "n" } ],
            "perMeta": [ { "$sortByCount": "$meta" }, { "$sort": { "_id": 1 } } ],
        } }])
        .expect("aggregate");
    assert_eq!(
        out,
        [doc! {
            // Longs sum to a long.
            "sum": [ { "_id": null, "s": 1_999_000_i64 } ],
            "count": [ { "n": 2000 } ],
            "perMeta": [ { "_id": 0_i64, "count": 667 }, { "_id": 1_i64, "count": 667 }, { "_id": 2_i64, "count": 666 } ],
        }]
    );
}

// $sample, $skip and $limit.

#[test]
fn sample_picks_distinct_input_documents() {
    let (_dir, _db, coll) = with((0..20).map(|i| doc! { "k": i }).collect());
    let out = run(&coll, &[doc! { "$sample": { "size": 5 } }]);
    assert_eq!(out.len(), 5);
    let mut ks: Vec<i32> = out.iter().map(|d| d.get_i32("k").expect("k")).collect();
    ks.sort_unstable();
    ks.dedup();
    assert_eq!(ks.len(), 5);
    assert!(ks.iter().all(|k| (0..20).contains(k)));
    // More than the input: all of it.
    let all = run(&coll, &[doc! { "$sample": { "size": 100 } }]);
    let mut ks: Vec<i32> = all.iter().map(|d| d.get_i32("k").expect("k")).collect();
    ks.sort_unstable();
    assert_eq!(ks, (0..20).collect::<Vec<_>>());
    // Uniform: over many draws of 1 of 20, every document comes.
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let one = run(&coll, &[doc! { "$sample": { "size": 1 } }]);
        seen.insert(one[0].get_i32("k").expect("k"));
    }
    assert!(seen.len() >= 15, "{seen:?}");
    fails(
        &coll,
        &[doc! { "$sample": { "size": -1 } }],
        ErrorCode::Location(28747),
    );
    fails(
        &coll,
        &[doc! { "$sample": { "size": "x" } }],
        ErrorCode::Location(28746),
    );
    fails(&coll, &[doc! { "$sample": {} }], ErrorCode::Location(28749));
}

#[test]
fn skip_and_limit_work_after_any_stage() {
    let (_dir, _db, coll) = with(clothing());
    let out = run(
        &coll,
        &[
            doc! { "$sort": { "n": 1 } },
            doc! { "$unwind": "$sizes" },
            doc! { "$skip": 1 },
            doc! { "$limit": 2 },
        ],
    );
    assert_eq!(
        out,
        [
            doc! { "n": 1, "item": "Shirt", "sizes": "M" },
            doc! { "n": 1, "item": "Shirt", "sizes": "L" },
        ]
    );
    let out = coll
        .aggregate(&[
            doc! { "$unwind": "$sizes" },
            doc! { "$sortByCount": "$sizes" },
            doc! { "$skip": 0 },
            doc! { "$limit": 1 },
        ])
        .expect("aggregate");
    assert_eq!(out, [doc! { "_id": "M", "count": 2 }]);
    let out = coll
        .aggregate(&[
            doc! { "$facet": { "a": [ { "$count": "n" } ] } },
            doc! { "$skip": 1 },
        ])
        .expect("aggregate");
    assert!(out.is_empty());
}

#[test]
fn unknown_stages_answer_40324() {
    let (_dir, _db, coll) = with(clothing());
    let e = coll.aggregate(&[doc! { "$nope": {} }]).expect_err("error");
    assert_eq!(e.code(), ErrorCode::Location(40324));
    assert!(e.to_string().contains("$nope"), "{e}");
    fails(
        &coll,
        &[doc! { "$limit": 1, "$skip": 1 }],
        ErrorCode::Location(40323),
    );
}

// $lookup.

#[test]
fn lookup_joins_a_second_time_series_collection_by_meta() {
    let (_dir, db, readings) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    let sensors = db
        .create_collection("sensors", &TimeseriesOptions::new("ts").meta_field("meta"))
        .expect("create");
    insert_all(
        &sensors,
        &[
            doc! { "ts": at(MAY_18), "meta": { "sensor": "a" }, "room": "kitchen" },
            doc! { "ts": at(MAY_18), "meta": { "sensor": "b" }, "room": "hall" },
            doc! { "ts": at(MAY_18 + HOUR), "meta": { "sensor": "b" }, "room": "attic" },
        ],
    );
    insert_all(
        &readings,
        &[
            doc! { "ts": at(MAY_18), "meta": { "sensor": "a" }, "t": 20.5 },
            doc! { "ts": at(MAY_18 + MINUTE), "meta": { "sensor": "a" }, "t": 20.7 },
            doc! { "ts": at(MAY_18), "meta": { "sensor": "b" }, "t": 18.0 },
            doc! { "ts": at(MAY_18), "meta": { "sensor": "c" }, "t": 15.0 },
        ],
    );
    let out = readings
        .aggregate(&[
            doc! { "$sort": { "meta.sensor": 1, "ts": 1 } },
            doc! { "$lookup": {
                "from": "sensors", "localField": "meta", "foreignField": "meta",
                "pipeline": [ { "$sort": { "ts": 1 } }, { "$project": { "_id": 0, "room": 1 } } ],
                "as": "where",
            } },
            doc! { "$project": { "_id": 0, "t": 1, "where": 1 } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "t": 20.5, "where": [ { "room": "kitchen" } ] },
            doc! { "t": 20.7, "where": [ { "room": "kitchen" } ] },
            doc! { "t": 18.0, "where": [ { "room": "hall" }, { "room": "attic" } ] },
            doc! { "t": 15.0, "where": [] },
        ]
    );
    // The plain form: whole foreign documents, matched on a sub-field of the meta field.
    let out = readings
        .aggregate(&[
            doc! { "$match": { "meta.sensor": "a" } },
            doc! { "$lookup": { "from": "sensors", "localField": "meta.sensor", "foreignField": "meta.sensor", "as": "s" } },
        ])
        .expect("aggregate");
    assert_eq!(out.len(), 2);
    for d in &out {
        let s = d.get_array("s").expect("s");
        assert_eq!(s.len(), 1);
        let s = s[0].as_document().expect("doc");
        assert_eq!(s.get_str("room").ok(), Some("kitchen"));
        assert_eq!(s.get_document("meta").ok(), Some(&doc! { "sensor": "a" }));
    }
    // A collection that does not exist is empty.
    let out = readings
        .aggregate(&[
            doc! { "$lookup": { "from": "nothing", "localField": "meta", "foreignField": "meta", "as": "x" } },
            doc! { "$project": { "_id": 0, "x": 1 } },
        ])
        .expect("aggregate");
    assert_eq!(out.len(), 4);
    assert!(out.iter().all(|d| d == &doc! { "x": [] }));
    fails(
        &readings,
        &[doc! { "$lookup": { "from": "sensors", "localField": "meta", "foreignField": "meta" } }],
        ErrorCode::FailedToParse,
    );
    fails(
        &readings,
        &[doc! { "$lookup": { "from": "sensors", "localField": "meta", "as": "x" } }],
        ErrorCode::FailedToParse,
    );
}

// $densify.

#[test]
fn densify_time_series_hourly_within_bounds() {
    // The manual's weather example: readings at 0h, 4h, 8h and 12h.
    let (_dir, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("timestamp").meta_field("metadata"),
    );
    let meta = doc! { "sensorId": 5578, "type": "temperature" };
    insert_all(
        &coll,
        &[
            doc! { "metadata": meta.clone(), "timestamp": at(MAY_18), "temp": 12 },
            doc! { "metadata": meta.clone(), "timestamp": at(MAY_18 + 4 * HOUR), "temp": 11 },
            doc! { "metadata": meta.clone(), "timestamp": at(MAY_18 + 8 * HOUR), "temp": 11 },
            doc! { "metadata": meta.clone(), "timestamp": at(MAY_18 + 12 * HOUR), "temp": 12 },
        ],
    );
    let out = coll
        .aggregate(&[
            doc! { "$densify": { "field": "timestamp", "range": {
                "step": 1, "unit": "hour", "bounds": [at(MAY_18), at(MAY_18 + 8 * HOUR)],
            } } },
            doc! { "$unset": "_id" },
        ])
        .expect("aggregate");
    let mut expected = Vec::new();
    for h in 0..=12 {
        let t = at(MAY_18 + h * HOUR);
        match h {
            0 | 12 => expected.push(doc! { "timestamp": t, "metadata": meta.clone(), "temp": 12 }),
            4 | 8 => expected.push(doc! { "timestamp": t, "metadata": meta.clone(), "temp": 11 }),
            9..=11 => {}
            _ => expected.push(doc! { "timestamp": t }),
        }
    }
    // Stored measurements come back time field first, then meta; compare as maps.
    let norm = |d: &Document| {
        let mut v: Vec<(String, Bson)> = d.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    assert_eq!(
        out.iter().map(norm).collect::<Vec<_>>(),
        expected.iter().map(norm).collect::<Vec<_>>()
    );
}

fn coffee() -> Vec<Document> {
    vec![
        doc! { "altitude": 600, "variety": "Arabica Typica", "score": 68.3 },
        doc! { "altitude": 750, "variety": "Arabica Typica", "score": 69.5 },
        doc! { "altitude": 950, "variety": "Arabica Typica", "score": 70.5 },
        doc! { "altitude": 1250, "variety": "Gesha", "score": 88.15 },
        doc! { "altitude": 1600, "variety": "Gesha", "score": 87.5 },
    ]
}

/// `(variety, altitude, whether made)` of each output document.
fn altitudes(out: &[Document]) -> Vec<(String, i32, bool)> {
    out.iter()
        .map(|d| {
            (
                d.get_str("variety").expect("variety").to_owned(),
                d.get_i32("altitude").expect("altitude"),
                !d.contains_key("score"),
            )
        })
        .collect()
}

#[test]
fn densify_partitions_full_and_partition_bounds() {
    let (_dir, _db, coll) = with(coffee());
    let a = "Arabica Typica".to_owned();
    let g = "Gesha".to_owned();
    // "full": every partition from the least (600) to the greatest (1600) value.
    let out = run(
        &coll,
        &[
            doc! { "$densify": { "field": "altitude", "partitionByFields": ["variety"], "range": { "bounds": "full", "step": 200 } } },
        ],
    );
    let mut got = altitudes(&out);
    got.sort();
    let mut expected = vec![
        (a.clone(), 600, false),
        (a.clone(), 750, false),
        (a.clone(), 800, true),
        (a.clone(), 950, false),
        (a.clone(), 1000, true),
        (a.clone(), 1200, true),
        (a.clone(), 1400, true),
        (a.clone(), 1600, true),
        (g.clone(), 600, true),
        (g.clone(), 800, true),
        (g.clone(), 1000, true),
        (g.clone(), 1200, true),
        (g.clone(), 1250, false),
        (g.clone(), 1400, true),
        (g.clone(), 1600, false),
    ];
    expected.sort();
    assert_eq!(got, expected);
    // A document made holds only the field and the partition fields.
    assert!(
        out.iter()
            .filter(|d| !d.contains_key("score"))
            .all(|d| d.len() == 2)
    );
    // "partition": each partition over its own range, on steps from its least value, in
    // order of partition then altitude.
    let out = run(
        &coll,
        &[
            doc! { "$densify": { "field": "altitude", "partitionByFields": ["variety"], "range": { "bounds": "partition", "step": 200 } } },
        ],
    );
    assert_eq!(
        altitudes(&out),
        [
            (a.clone(), 600, false),
            (a.clone(), 750, false),
            (a.clone(), 800, true),
            (a.clone(), 950, false),
            (g.clone(), 1250, false),
            (g.clone(), 1450, true),
            (g.clone(), 1600, false),
        ]
    );
}

#[test]
fn densify_numbers_within_explicit_bounds_and_by_quarter() {
    let (_dir, _db, coll) = with(vec![
        doc! { "v": 1 },
        doc! { "v": 7 },
        doc! { "v": null },
        doc! { "v": 12 },
    ]);
    let out = run(
        &coll,
        &[doc! { "$densify": { "field": "v", "range": { "step": 3, "bounds": [0, 10] } } }],
    );
    // Null first (sorted), then 0 3 6 9 made around 1 and 7; 12 above the range passes.
    assert_eq!(
        out,
        [
            doc! { "v": null },
            doc! { "v": 0 },
            doc! { "v": 1 },
            doc! { "v": 3 },
            doc! { "v": 6 },
            doc! { "v": 7 },
            doc! { "v": 9 },
            doc! { "v": 12 },
        ]
    );
    // Calendar units: quarters from January 1st.
    let jan = 1_704_067_200_000_i64; // 2024-01-01
    let (_dir2, _db2, coll) = with(vec![
        doc! { "d": at(jan), "v": 1 },
        doc! { "d": at(1_727_740_800_000), "v": 2 }, // 2024-10-01
    ]);
    let out = run(
        &coll,
        &[
            doc! { "$densify": { "field": "d", "range": { "step": 1, "unit": "quarter", "bounds": "full" } } },
            doc! { "$project": { "d": 1 } },
        ],
    );
    assert_eq!(
        out,
        [
            doc! { "d": at(jan) },
            doc! { "d": at(1_711_929_600_000) }, // 2024-04-01
            doc! { "d": at(1_719_792_000_000) }, // 2024-07-01
            doc! { "d": at(1_727_740_800_000) },
        ]
    );
}

#[test]
fn densify_caps_and_errors_carry_mongodbs_codes() {
    let (_dir, _db, coll) = with(vec![
        doc! { "v": 0 },
        doc! { "v": 1_000_000 },
        doc! { "s": "x" },
    ]);
    let densify = |range: Document| doc! { "$densify": { "field": "v", "range": range } };
    // 999 999 documents to make: past MongoDB's 500 000.
    fails(
        &coll,
        &[densify(doc! { "step": 1, "bounds": "full" })],
        ErrorCode::Location(5_897_900),
    );
    // 1000 made is fine.
    let out = run(&coll, &[densify(doc! { "step": 1000, "bounds": "full" })]);
    assert_eq!(out.len(), 1002);
    fails(
        &coll,
        &[doc! { "$densify": { "field": "s", "range": { "step": 1, "bounds": "full" } } }],
        ErrorCode::Location(5_733_201),
    );
    fails(
        &coll,
        &[densify(
            doc! { "step": 1, "unit": "hour", "bounds": "full" },
        )],
        ErrorCode::Location(6_053_600),
    );
    fails(
        &coll,
        &[densify(doc! { "step": 0, "bounds": "full" })],
        ErrorCode::Location(5_733_401),
    );
    fails(
        &coll,
        &[densify(doc! { "step": 1, "bounds": "partition" })],
        ErrorCode::Location(5_733_408),
    );
    fails(
        &coll,
        &[densify(doc! { "step": 1, "bounds": [10, 0] })],
        ErrorCode::Location(5_733_402),
    );
    fails(
        &coll,
        &[densify(doc! { "step": 1, "bounds": [0, 10.0] })],
        ErrorCode::Location(5_876_900),
    );
    fails(
        &coll,
        &[densify(doc! { "step": 1, "bounds": "all" })],
        ErrorCode::Location(5_946_802),
    );
    fails(
        &coll,
        &[doc! { "$densify": { "field": "v" } }],
        ErrorCode::IdlFailedToParse,
    );
}

// $fill: the manual's examples.

#[test]
fn fill_with_a_constant_value() {
    let (_dir, _db, coll) = with(vec![
        doc! { "day": 1, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12 },
        doc! { "day": 2, "bootsSold": 7, "sneakersSold": 8 },
        doc! { "day": 3, "sneakersSold": 5 },
    ]);
    let out = run(
        &coll,
        &[
            doc! { "$sort": { "day": 1 } },
            doc! { "$fill": { "output": {
                "bootsSold": { "value": 0 }, "sandalsSold": { "value": 0 }, "sneakersSold": { "value": 0 },
            } } },
        ],
    );
    assert_eq!(
        out,
        [
            doc! { "day": 1, "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12 },
            doc! { "day": 2, "bootsSold": 7, "sneakersSold": 8, "sandalsSold": 0 },
            doc! { "day": 3, "sneakersSold": 5, "bootsSold": 0, "sandalsSold": 0 },
        ]
    );
}

#[test]
fn fill_linear_and_locf() {
    // The manual's stock prices, every 5 minutes from 09:00.
    let t0 = 1_615_194_000_000_i64; // 2021-03-08T09:00:00Z
    let prices = [Some(500.0), None, Some(515.0), None, None, Some(530.0)];
    let (_dir, _db, coll) = with(
        prices
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let t = at(t0 + i64::try_from(i).expect("i") * 5 * MINUTE);
                match p {
                    Some(p) => doc! { "time": t, "price": *p },
                    None => doc! { "time": t, "price": null },
                }
            })
            .collect(),
    );
    let out = run(
        &coll,
        &[
            doc! { "$fill": { "sortBy": { "time": 1 }, "output": { "price": { "method": "linear" } } } },
            doc! { "$project": { "price": 1 } },
        ],
    );
    let got: Vec<f64> = out
        .iter()
        .map(|d| d.get_f64("price").expect("price"))
        .collect();
    assert_eq!(got, [500.0, 507.5, 515.0, 520.0, 525.0, 530.0]);
    // The manual's restaurant reviews: the last observation carried forward, per
    // restaurant; nothing before the first observation.
    let (_dir2, _db2, coll) = with(vec![
        doc! { "day": 1, "restaurant": "Joe's Pizza", "score": 90 },
        doc! { "day": 2, "restaurant": "Joe's Pizza", "score": 92 },
        doc! { "day": 3, "restaurant": "Joe's Pizza" },
        doc! { "day": 4, "restaurant": "Joe's Pizza", "score": 85 },
        doc! { "day": 5, "restaurant": "Joe's Pizza", "score": null },
        doc! { "day": 1, "restaurant": "Sally's Deli" },
        doc! { "day": 2, "restaurant": "Sally's Deli", "score": 75 },
        doc! { "day": 3, "restaurant": "Sally's Deli" },
    ]);
    let out = run(
        &coll,
        &[
            doc! { "$fill": { "partitionByFields": ["restaurant"], "sortBy": { "day": 1 }, "output": { "score": { "method": "locf" } } } },
            doc! { "$project": { "restaurant": 1, "day": 1, "score": 1 } },
        ],
    );
    assert_eq!(
        out,
        [
            doc! { "day": 1, "restaurant": "Joe's Pizza", "score": 90 },
            doc! { "day": 2, "restaurant": "Joe's Pizza", "score": 92 },
            doc! { "day": 3, "restaurant": "Joe's Pizza", "score": 92 },
            doc! { "day": 4, "restaurant": "Joe's Pizza", "score": 85 },
            doc! { "day": 5, "restaurant": "Joe's Pizza", "score": 85 },
            doc! { "day": 1, "restaurant": "Sally's Deli" },
            doc! { "day": 2, "restaurant": "Sally's Deli", "score": 75 },
            doc! { "day": 3, "restaurant": "Sally's Deli", "score": 75 },
        ]
    );
    fails(
        &coll,
        &[doc! { "$fill": { "output": { "score": { "method": "locf" } } } }],
        ErrorCode::FailedToParse,
    );
    fails(
        &coll,
        &[
            doc! { "$fill": { "partitionBy": "$restaurant", "partitionByFields": ["restaurant"], "sortBy": { "day": 1 }, "output": { "score": { "method": "locf" } } } },
        ],
        ErrorCode::Location(6_050_204),
    );
}

/// "One row per minute even where the sensor was silent": two sensors reporting every few
/// minutes with gaps, `$densify` by minute per series, then `$fill` interpolating the
/// temperature and carrying the status forward.
#[test]
fn one_row_per_minute_per_sensor() {
    let (_dir, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    // Minutes at which each sensor reported, its temperature a linear function of time
    // (so that interpolation is exact), its status changing now and then.
    let reports: [(&str, &[i64]); 2] = [
        ("s1", &[0, 1, 2, 5, 6, 7, 15, 16, 30, 31, 32, 59]),
        ("s2", &[3, 4, 10, 11, 12, 13, 40, 44, 45, 50]),
    ];
    let temp = |sensor: &str, m: i64| -> f64 {
        #[expect(clippy::cast_precision_loss, reason = "test minutes")]
        let m = m as f64;
        if sensor == "s1" {
            20.0 + 0.25 * m
        } else {
            15.0 - 0.5 * m
        }
    };
    let status = |m: i64| if m < 30 { "ok" } else { "warm" };
    let mut docs = Vec::new();
    for (sensor, minutes) in reports {
        for &m in minutes {
            docs.push(doc! {
                "ts": at(MAY_18 + m * MINUTE),
                "meta": { "sensor": sensor, "site": "plant-1" },
                "temp": temp(sensor, m),
                "status": status(m),
            });
        }
    }
    insert_all(&coll, &docs);
    let out = coll
        .aggregate(&[
            doc! { "$densify": { "field": "ts", "partitionByFields": ["meta"], "range": { "step": 1, "unit": "minute", "bounds": "partition" } } },
            doc! { "$fill": { "partitionByFields": ["meta"], "sortBy": { "ts": 1 }, "output": {
                "temp": { "method": "linear" }, "status": { "method": "locf" },
            } } },
            doc! { "$project": { "_id": 0, "ts": 1, "sensor": "$meta.sensor", "temp": 1, "status": 1 } },
        ])
        .expect("aggregate");
    for (sensor, minutes) in reports {
        let rows: Vec<&Document> = out
            .iter()
            .filter(|d| d.get_str("sensor").ok() == Some(sensor))
            .collect();
        let first = minutes[0];
        let last = minutes[minutes.len() - 1];
        // One row per minute from the first report to the last, in order.
        let got: Vec<i64> = rows
            .iter()
            .map(|d| (d.get_datetime("ts").expect("ts").timestamp_millis() - MAY_18) / MINUTE)
            .collect();
        assert_eq!(got, (first..=last).collect::<Vec<_>>(), "{sensor}");
        for (d, m) in rows.iter().zip(first..=last) {
            let t = d.get_f64("temp").expect("temp");
            assert!(
                (t - temp(sensor, m)).abs() < 1e-9,
                "{sensor} minute {m}: {t}"
            );
            // The status of the last report at or before the minute.
            let reported = minutes.iter().rev().find(|&&r| r <= m).expect("reported");
            assert_eq!(
                d.get_str("status").ok(),
                Some(status(*reported)),
                "{sensor} minute {m}"
            );
        }
    }
    assert_eq!(out.len(), 60 + 48);
}

#[test]
fn densify_explicit_bounds_per_partition_finish_after_the_input() {
    let (_dir, _db, coll) = with(vec![
        doc! { "p": "a", "v": 2 },
        doc! { "p": "a", "v": 4 },
        doc! { "p": "b", "v": 5 },
        doc! { "p": "b", "v": -3 },
    ]);
    let out = run(
        &coll,
        &[
            doc! { "$densify": { "field": "v", "partitionByFields": ["p"], "range": { "step": 2, "bounds": [0, 8] } } },
        ],
    );
    // Each partition from 0 up to its last document, in partition then value order (a
    // document below the range passes); then the rest of each range, up to 8 excluded.
    assert_eq!(
        out,
        [
            doc! { "p": "a", "v": 0 },
            doc! { "p": "a", "v": 2 },
            doc! { "p": "a", "v": 4 },
            doc! { "p": "b", "v": -3 },
            doc! { "p": "b", "v": 0 },
            doc! { "p": "b", "v": 2 },
            doc! { "p": "b", "v": 4 },
            doc! { "p": "b", "v": 5 },
            doc! { "p": "a", "v": 6 },
            doc! { "p": "b", "v": 6 },
        ]
    );
    // No partitions, no document with a value: the whole range is made.
    let out = run(
        &coll,
        &[
            doc! { "$match": { "p": "none" } },
            doc! { "$densify": { "field": "v", "range": { "step": 2, "bounds": [0, 5] } } },
        ],
    );
    assert_eq!(out, [doc! { "v": 0 }, doc! { "v": 2 }, doc! { "v": 4 }]);
}

#[test]
fn lookup_into_the_same_collection() {
    let (_dir, _db, coll) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    insert_all(
        &coll,
        &[
            doc! { "ts": at(MAY_18), "meta": "a", "v": 1 },
            doc! { "ts": at(MAY_18 + MINUTE), "meta": "a", "v": 2 },
            doc! { "ts": at(MAY_18), "meta": "b", "v": 3 },
        ],
    );
    let name = coll.name().to_owned();
    let out = coll
        .aggregate(&[
            doc! { "$sort": { "meta": 1, "ts": 1 } },
            doc! { "$lookup": { "from": name, "localField": "meta", "foreignField": "meta", "as": "same" } },
            doc! { "$project": { "_id": 0, "v": 1, "vs": "$same.v" } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "v": 1, "vs": [1, 2] },
            doc! { "v": 2, "vs": [1, 2] },
            doc! { "v": 3, "vs": [3] },
        ]
    );
}

#[test]
fn bucket_auto_rounds_boundaries_to_a_granularity() {
    let (_dir, _db, coll) = with((1..=10).map(|v| doc! { "v": v }).collect());
    let auto =
        |g: &str| doc! { "$bucketAuto": { "groupBy": "$v", "buckets": 3, "granularity": g } };
    // R5 (1, 1.6, 2.5, 4, 6.3 and their multiples of ten): 1 2 3 | 4 5 6 | 7 8 9 10, the
    // boundaries rounded up past each bucket's greatest value; the first minimum rounded
    // down, the last maximum up.
    let out = coll.aggregate(&[auto("R5")]).expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "_id": { "min": 63.0 * 0.01, "max": 40.0 * 0.1 }, "count": 3 },
            doc! { "_id": { "min": 40.0 * 0.1, "max": 63.0 * 0.1 }, "count": 3 },
            doc! { "_id": { "min": 63.0 * 0.1, "max": 16.0 }, "count": 4 },
        ]
    );
    // Powers of two: 7 is below 8, the boundary after 6, so joins the second bucket.
    let out = coll.aggregate(&[auto("POWERSOF2")]).expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "_id": { "min": 0.5, "max": 4 }, "count": 3 },
            doc! { "_id": { "min": 4, "max": 8 }, "count": 4 },
            doc! { "_id": { "min": 8, "max": 16 }, "count": 3 },
        ]
    );
    fails(&coll, &[auto("R7")], ErrorCode::Location(40257));
    let (_dir2, _db2, coll) = with(vec![doc! { "v": -1 }]);
    fails(&coll, &[auto("R5")], ErrorCode::Location(40260));
}

#[test]
fn lookup_with_let_variables_in_the_pipeline() {
    // The manual's orders and warehouses.
    let (_dir, db, orders) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    let warehouses = db
        .create_collection("warehouses", &TimeseriesOptions::new("ts"))
        .expect("create");
    insert_all(
        &warehouses,
        &[
            doc! { "ts": at(MAY_18), "stock_item": "almonds", "warehouse": "A", "instock": 120 },
            doc! { "ts": at(MAY_18), "stock_item": "pecans", "warehouse": "A", "instock": 80 },
            doc! { "ts": at(MAY_18), "stock_item": "almonds", "warehouse": "B", "instock": 60 },
            doc! { "ts": at(MAY_18), "stock_item": "cookies", "warehouse": "B", "instock": 40 },
            doc! { "ts": at(MAY_18), "stock_item": "cookies", "warehouse": "A", "instock": 80 },
        ],
    );
    insert_all(
        &orders,
        &[
            doc! { "ts": at(MAY_18), "n": 1, "item": "almonds", "price": 12, "ordered": 2 },
            doc! { "ts": at(MAY_18 + 1), "n": 2, "item": "pecans", "price": 20, "ordered": 1 },
            doc! { "ts": at(MAY_18 + 2), "n": 3, "item": "cookies", "price": 10, "ordered": 60 },
        ],
    );
    let out = orders
        .aggregate(&[
            doc! { "$sort": { "n": 1 } },
            doc! { "$lookup": {
                "from": "warehouses",
                "let": { "order_item": "$item", "order_qty": "$ordered" },
                "pipeline": [
                    { "$match": { "$expr": { "$and": [
                        { "$eq": ["$stock_item", "$$order_item"] },
                        { "$gte": ["$instock", "$$order_qty"] },
                    ] } } },
                    { "$sort": { "warehouse": 1 } },
                    { "$project": { "_id": 0, "warehouse": 1, "instock": 1 } },
                ],
                "as": "stockdata",
            } },
            doc! { "$project": { "_id": 0, "item": 1, "stockdata": 1 } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "item": "almonds", "stockdata": [ { "warehouse": "A", "instock": 120 }, { "warehouse": "B", "instock": 60 } ] },
            doc! { "item": "pecans", "stockdata": [ { "warehouse": "A", "instock": 80 } ] },
            doc! { "item": "cookies", "stockdata": [ { "warehouse": "A", "instock": 80 } ] },
        ]
    );
    fails(
        &orders,
        &[
            doc! { "$lookup": { "from": "warehouses", "let": { "Bad": 1 }, "pipeline": [], "as": "x" } },
        ],
        ErrorCode::FailedToParse,
    );
}

#[test]
fn lookup_let_variables_in_match_expr_and_a_later_project() {
    let (_dir, db, orders) = temp_collection(
        CatalogOptions::default(),
        &TimeseriesOptions::new("ts").meta_field("meta"),
    );
    let warehouses = db
        .create_collection("warehouses", &TimeseriesOptions::new("ts"))
        .expect("create");
    insert_all(
        &warehouses,
        &[
            doc! { "ts": at(MAY_18), "stock_item": "almonds", "warehouse": "A", "instock": 120 },
            doc! { "ts": at(MAY_18), "stock_item": "almonds", "warehouse": "B", "instock": 60 },
            doc! { "ts": at(MAY_18), "stock_item": "pecans", "warehouse": "A", "instock": 80 },
        ],
    );
    // Two orders share an item with different quantities, two share both: the variables'
    // values, not the item alone, decide the matches.
    insert_all(
        &orders,
        &[
            doc! { "ts": at(MAY_18), "n": 1, "item": "almonds", "ordered": 100 },
            doc! { "ts": at(MAY_18 + 1), "n": 2, "item": "almonds", "ordered": 10 },
            doc! { "ts": at(MAY_18 + 2), "n": 3, "item": "pecans", "ordered": 5 },
            doc! { "ts": at(MAY_18 + 3), "n": 4, "item": "almonds", "ordered": 10 },
            doc! { "ts": at(MAY_18 + 4), "n": 5, "item": "walnuts" },
        ],
    );
    let out = orders
        .aggregate(&[
            doc! { "$sort": { "n": 1 } },
            doc! { "$lookup": {
                "from": "warehouses",
                "let": { "want": "$item", "qty": "$ordered", "order": { "n": "$n" } },
                "pipeline": [
                    { "$match": { "$expr": { "$and": [
                        { "$eq": ["$stock_item", "$$want"] },
                        { "$gte": ["$instock", "$$qty"] },
                    ] } } },
                    { "$sort": { "warehouse": 1 } },
                    { "$project": {
                        "_id": 0,
                        "warehouse": 1,
                        "left": { "$subtract": ["$instock", "$$qty"] },
                        "for": "$$order.n",
                        "what": { "$literal": "$$want" },
                    } },
                ],
                "as": "stock",
            } },
            doc! { "$project": { "_id": 0, "n": 1, "stock": 1 } },
        ])
        .expect("aggregate");
    assert_eq!(
        out,
        [
            doc! { "n": 1, "stock": [
                { "warehouse": "A", "left": 20, "for": 1, "what": "$$want" },
            ] },
            doc! { "n": 2, "stock": [
                { "warehouse": "A", "left": 110, "for": 2, "what": "$$want" },
                { "warehouse": "B", "left": 50, "for": 2, "what": "$$want" },
            ] },
            doc! { "n": 3, "stock": [
                { "warehouse": "A", "left": 75, "for": 3, "what": "$$want" },
            ] },
            doc! { "n": 4, "stock": [
                { "warehouse": "A", "left": 110, "for": 4, "what": "$$want" },
                { "warehouse": "B", "left": 50, "for": 4, "what": "$$want" },
            ] },
            // A missing `ordered`: `$gte` of a number and missing holds, nothing is "walnuts".
            doc! { "n": 5, "stock": [] },
        ]
    );
}

#[test]
fn count_errors_carry_mongodbs_codes() {
    let (_dir, _db, coll) = with(clothing());
    assert_eq!(
        coll.aggregate(&[doc! { "$count": "n" }])
            .expect("aggregate"),
        [doc! { "n": 5 }]
    );
    for (name, code) in [
        (Bson::Int32(1), 40156),
        (Bson::String(String::new()), 40157),
        (Bson::String("$n".into()), 40158),
        (Bson::String("a.b".into()), 40160),
    ] {
        fails(&coll, &[doc! { "$count": name }], ErrorCode::Location(code));
    }
}
