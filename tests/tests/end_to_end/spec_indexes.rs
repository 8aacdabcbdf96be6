//! SPEC §13 conformance: the default index (R-13.2), key conversion (R-13.3), rejections
//! (R-13.1, R-13.4, R-13.5, R-10.5), secondary indexes giving the same query results as a scan
//! (R-13.5, R-14.4.1), persistence, and the index requirement of query-based reopening
//! (R-6.8.4).

use std::path::Path;

use bson::{Bson, Document, doc};
use tscoll_engine::{
    CatalogOptions, Collection, CollectionStats, Database, DatabaseOptions, ErrorCode, FindOptions,
    IndexOptions, TimeseriesOptions,
};
use tscoll_tests::spec::{at, insert_all, options, temp_collection};

fn open(dir: &Path) -> Database {
    Database::open(dir, DatabaseOptions::default()).expect("open")
}

fn stats(coll: &Collection) -> CollectionStats {
    coll.stats().expect("stats")
}

fn create(coll: &Collection, key: Document) -> String {
    coll.create_index(&key, &IndexOptions::default())
        .unwrap_or_else(|e| panic!("create_index {key}: {e}"))
}

fn create_err(coll: &Collection, key: Document, options: &IndexOptions) -> (ErrorCode, String) {
    let e = coll
        .create_index(&key, options)
        .expect_err("create_index must fail");
    (e.code(), e.to_string())
}

fn names(coll: &Collection) -> Vec<String> {
    coll.list_indexes()
        .expect("list")
        .iter()
        .map(|d| d.get_str("name").expect("name").to_owned())
        .collect()
}

fn bucket_keys(coll: &Collection) -> Vec<Document> {
    coll.list_indexes_bucket_form()
        .expect("list")
        .iter()
        .map(|d| d.get_document("key").expect("key").clone())
        .collect()
}

/// Every measurement matching `filter`, sorted by `_id` (an integer in these tests).
fn find_by_id(coll: &Collection, filter: &Document) -> Vec<Document> {
    let mut v = coll
        .find(filter, &FindOptions::default())
        .unwrap_or_else(|e| panic!("find {filter}: {e}"));
    v.sort_by_key(|d| d.get_i64("_id").expect("_id"));
    v
}

fn buckets_read(coll: &Collection, filter: &Document) -> u64 {
    coll.find_with_stats(filter, &FindOptions::default())
        .expect("find")
        .1
        .buckets_read
}

#[test]
fn r_13_2_default_index_listed_and_droppable() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    assert_eq!(
        coll.list_indexes().expect("list"),
        [doc! { "v": 2, "key": { "m": 1, "t": 1 }, "name": "m_1_t_1" }]
    );
    assert_eq!(
        bucket_keys(&coll),
        [doc! { "meta": 1, "control.min.t": 1, "control.max.t": 1 }]
    );
    insert_all(
        &coll,
        &[
            doc! { "_id": 1_i64, "t": at(0), "m": "a", "x": 1 },
            doc! { "_id": 2_i64, "t": at(1_000), "m": "b", "x": 2 },
        ],
    );
    coll.drop_index("m_1_t_1").expect("drop the default index");
    assert!(names(&coll).is_empty());
    // The buckets are still all there and found, by meta too.
    assert_eq!(find_by_id(&coll, &doc! {}).len(), 2);
    assert_eq!(find_by_id(&coll, &doc! { "m": "b" }).len(), 1);
    let e = coll.drop_index("m_1_t_1").expect_err("already dropped");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
    // Re-created by key: the same index again.
    assert_eq!(create(&coll, doc! { "m": 1, "t": 1 }), "m_1_t_1");
    assert_eq!(names(&coll), ["m_1_t_1"]);
    coll.drop_index_by_key(&doc! { "m": 1, "t": 1 })
        .expect("drop by key");
    assert!(names(&coll).is_empty());
    // Re-created under another name.
    let o = IndexOptions::named("series_time");
    assert_eq!(
        coll.create_index(&doc! { "m": 1, "t": 1 }, &o)
            .expect("create"),
        "series_time"
    );
    assert_eq!(names(&coll), ["series_time"]);
    assert_eq!(find_by_id(&coll, &doc! { "m": "a" }).len(), 1);
}

#[test]
fn r_13_2_no_default_index_without_meta_field() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(false));
    assert!(coll.list_indexes().expect("list").is_empty());
    assert!(bucket_keys(&coll).is_empty());
    let e = coll.drop_index("m_1_t_1").expect_err("no index");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
}

#[test]
fn r_13_3_measurement_field_key_conversion() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    assert_eq!(create(&coll, doc! { "x": 1 }), "x_1");
    assert_eq!(create(&coll, doc! { "y.z": -1 }), "y.z_-1");
    assert_eq!(create(&coll, doc! { "t": -1 }), "t_-1");
    assert_eq!(create(&coll, doc! { "m.a": 1, "t": 1 }), "m.a_1_t_1");
    assert_eq!(create(&coll, doc! { "m": -1, "x": -1 }), "m_-1_x_-1");
    assert_eq!(
        bucket_keys(&coll),
        [
            doc! { "meta": 1, "control.min.t": 1, "control.max.t": 1 },
            doc! { "control.min.x": 1, "control.max.x": 1 },
            doc! { "control.max.y.z": -1, "control.min.y.z": -1 },
            doc! { "control.max.t": -1, "control.min.t": -1 },
            doc! { "meta.a": 1, "control.min.t": 1, "control.max.t": 1 },
            doc! { "meta": -1, "control.max.x": -1, "control.min.x": -1 },
        ]
    );
    // listIndexes converts back to the user form.
    let user: Vec<Document> = coll
        .list_indexes()
        .expect("list")
        .iter()
        .map(|d| d.get_document("key").expect("key").clone())
        .collect();
    assert_eq!(
        user,
        [
            doc! { "m": 1, "t": 1 },
            doc! { "x": 1 },
            doc! { "y.z": -1 },
            doc! { "t": -1 },
            doc! { "m.a": 1, "t": 1 },
            doc! { "m": -1, "x": -1 },
        ]
    );
    // Measurement indexes keep their user form as originalSpec in the bucket form.
    let bucket_x = &coll.list_indexes_bucket_form().expect("list")[1];
    assert_eq!(
        bucket_x.get_document("originalSpec").expect("originalSpec"),
        &doc! { "v": 2, "key": { "x": 1 }, "name": "x_1" }
    );
}

#[test]
fn r_13_3_time_field_direction_must_be_numeric() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    for v in ["hashed", "2dsphere", "2d"] {
        let (code, msg) = create_err(&coll, doc! { "t": v }, &IndexOptions::default());
        assert_eq!(code, ErrorCode::BadValue, "{msg}");
        assert!(
            msg.contains("Indexes on the time field must be ascending or descending"),
            "{msg}"
        );
    }
}

#[test]
fn r_13_3_special_types_on_measurement_fields_rejected() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    for v in ["hashed", "2d", "geoHaystack"] {
        let (code, msg) = create_err(&coll, doc! { "x": v }, &IndexOptions::default());
        assert_eq!(code, ErrorCode::BadValue, "{msg}");
        assert!(
            msg.contains(
                "Indexes on measurement fields must be ascending or descending (numbers only), \
                 or '2dsphere'"
            ),
            "{msg}"
        );
    }
}

#[test]
fn r_13_5_geo_hashed_and_wildcard_indexes_unsupported() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    for key in [
        doc! { "x": "2dsphere" },
        doc! { "m": "hashed" },
        doc! { "m.loc": "2dsphere" },
        doc! { "m.loc": "2d" },
        doc! { "$**": 1 },
        doc! { "m.$**": 1 },
    ] {
        let (code, msg) = create_err(&coll, key.clone(), &IndexOptions::default());
        assert_eq!(code, ErrorCode::CannotCreateIndex, "{key}: {msg}");
        assert!(msg.contains("tscoll does not support"), "{msg}");
    }
    assert_eq!(names(&coll), ["m_1_t_1"]);
}

#[test]
fn r_13_4_unique_and_text_rejected() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let unique = IndexOptions {
        unique: true,
        ..IndexOptions::default()
    };
    let (code, msg) = create_err(&coll, doc! { "m.a": 1 }, &unique);
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(msg.contains("Unique indexes are not supported"), "{msg}");
    for key in [
        doc! { "x": "text" },
        doc! { "m": "text" },
        doc! { "m.a": 1, "x": "text" },
    ] {
        let (code, msg) = create_err(&coll, key, &IndexOptions::default());
        assert_eq!(code, ErrorCode::InvalidOptions);
        assert!(
            msg.contains("Text indexes are not supported on time-series collections"),
            "{msg}"
        );
    }
    let sparse = IndexOptions {
        sparse: true,
        ..IndexOptions::default()
    };
    let (code, msg) = create_err(&coll, doc! { "x": 1 }, &sparse);
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(msg.contains("Sparse indexes are not supported"), "{msg}");
    assert_eq!(names(&coll), ["m_1_t_1"]);
}

#[test]
fn r_13_4_ttl_index_needs_meta_partial_filter() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let ttl = |partial: Option<Document>| IndexOptions {
        expire_after_seconds: Some(3600),
        partial_filter_expression: partial,
        ..IndexOptions::default()
    };
    // On a measurement field or the time field without a partial filter on the meta field.
    for key in [doc! { "x": 1 }, doc! { "t": 1 }] {
        let (code, msg) = create_err(&coll, key, &ttl(None));
        assert_eq!(code, ErrorCode::InvalidOptions);
        assert!(
            msg.contains("require a partialFilterExpression on the metaField"),
            "{msg}"
        );
    }
    let (code, _) = create_err(
        &coll,
        doc! { "x": 1 },
        &ttl(Some(doc! { "x": { "$gt": 1 } })),
    );
    assert_eq!(code, ErrorCode::InvalidOptions);
    // With one: on a measurement field still rejected, compound too.
    let meta_filter = || Some(doc! { "m": "a" });
    let (code, msg) = create_err(&coll, doc! { "x": 1 }, &ttl(meta_filter()));
    assert_eq!(code, ErrorCode::InvalidOptions);
    assert!(msg.contains("non-time fields"), "{msg}");
    let (code, _) = create_err(&coll, doc! { "t": 1, "x": 1 }, &ttl(meta_filter()));
    assert_eq!(code, ErrorCode::CannotCreateIndex);
    // A partial TTL index on the time field: tscoll does not implement them (SPEC R-10.5).
    let (code, msg) = create_err(&coll, doc! { "t": 1 }, &ttl(meta_filter()));
    assert_eq!(code, ErrorCode::CannotCreateIndex);
    assert!(msg.contains("R-10.5"), "{msg}");
    assert_eq!(names(&coll), ["m_1_t_1"]);
}

#[test]
fn r_13_1_id_index_cannot_be_dropped_or_hidden() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    assert!(!names(&coll).contains(&"_id_".to_owned()));
    let e = coll.drop_index("_id_").expect_err("no _id index");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
    let e = coll.hide_index("_id_", true).expect_err("no _id index");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
    let e = coll.hide_index("nope", true).expect_err("no such index");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
}

#[test]
fn r_13_index_name_and_key_conflicts() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    assert_eq!(create(&coll, doc! { "x": 1 }), "x_1");
    // The same key twice: a no-op success.
    assert_eq!(create(&coll, doc! { "x": 1 }), "x_1");
    assert_eq!(create(&coll, doc! { "m": 1, "t": 1 }), "m_1_t_1");
    assert_eq!(names(&coll), ["m_1_t_1", "x_1"]);
    // Same name, another key.
    let (code, _) = create_err(&coll, doc! { "y": 1 }, &IndexOptions::named("x_1"));
    assert_eq!(code, ErrorCode::IndexKeySpecsConflict);
    // Same key, another name.
    let (code, msg) = create_err(&coll, doc! { "x": 1 }, &IndexOptions::named("other"));
    assert_eq!(code, ErrorCode::IndexOptionsConflict);
    assert!(msg.contains("x_1"), "{msg}");
    let (code, _) = create_err(&coll, doc! { "m": 1, "t": 1 }, &IndexOptions::named("d"));
    assert_eq!(code, ErrorCode::IndexOptionsConflict);
    // Same name and key, other options.
    let hidden = IndexOptions {
        hidden: true,
        ..IndexOptions::default()
    };
    let (code, _) = create_err(&coll, doc! { "x": 1 }, &hidden);
    assert_eq!(code, ErrorCode::IndexOptionsConflict);
    // Bad specifications.
    let (code, _) = create_err(&coll, doc! {}, &IndexOptions::default());
    assert_eq!(code, ErrorCode::CannotCreateIndex);
    let (code, _) = create_err(&coll, doc! { "x": 0 }, &IndexOptions::default());
    assert_eq!(code, ErrorCode::CannotCreateIndex);
    let (code, _) = create_err(&coll, doc! { "m.a": true }, &IndexOptions::default());
    assert_eq!(code, ErrorCode::CannotCreateIndex);
    // Dropping.
    let e = coll.drop_index("nope").expect_err("unknown");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
    let e = coll
        .drop_index_by_key(&doc! { "y": 1 })
        .expect_err("unknown");
    assert_eq!(e.code(), ErrorCode::IndexNotFound);
    coll.drop_index_by_key(&doc! { "x": 1 })
        .expect("drop by key");
    assert_eq!(names(&coll), ["m_1_t_1"]);
    create(&coll, doc! { "x": 1 });
    create(&coll, doc! { "y": -1 });
    coll.drop_index("*").expect("drop every index");
    assert!(names(&coll).is_empty());
}

#[test]
fn r_13_indexes_survive_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs: Vec<Document> = (0..50_i64)
        .map(|i| doc! { "_id": i, "t": at(i * 1_000), "m": { "a": i % 3 }, "x": i })
        .collect();
    let listed = {
        let db = open(dir.path());
        let coll = db.create_collection("c", &options(true)).expect("create");
        insert_all(&coll, &docs[..25]);
        create(&coll, doc! { "x": -1 });
        coll.create_index(
            &doc! { "m.a": 1 },
            &IndexOptions {
                name: Some("by_a".into()),
                hidden: true,
                ..IndexOptions::default()
            },
        )
        .expect("create");
        coll.drop_index("m_1_t_1").expect("drop default");
        db.close().expect("close");
        coll.list_indexes().expect("list")
    };
    let db = open(dir.path());
    let coll = db.collection("c").expect("collection");
    assert_eq!(coll.list_indexes().expect("list"), listed);
    assert_eq!(names(&coll), ["x_-1", "by_a"]);
    // The index keeps serving queries, and is maintained after reopening.
    insert_all(&coll, &docs[25..]);
    let got = find_by_id(&coll, &doc! { "x": { "$gte": 20, "$lt": 30 } });
    assert_eq!(got.len(), 10);
    coll.hide_index("by_a", false).expect("unhide");
    assert_eq!(find_by_id(&coll, &doc! { "m.a": 2 }).len(), 16);
}

/// Creates `c`, runs `before`, closes and reopens the database, then inserts one more
/// measurement of series `"a"` and returns the collection's stats.
fn insert_after_reopen(
    opts: &TimeseriesOptions,
    before: impl FnOnce(&Collection),
) -> CollectionStats {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let db = open(dir.path());
        let coll = db.create_collection("c", opts).expect("create");
        insert_all(
            &coll,
            &(0..5)
                .map(|i| doc! { "t": at(i * 1_000), "m": "a", "x": i })
                .collect::<Vec<_>>(),
        );
        before(&coll);
        db.close().expect("close");
    }
    let db = open(dir.path());
    let coll = db.collection("c").expect("collection");
    insert_all(&coll, &[doc! { "t": at(10_000), "m": "a", "x": 5 }]);
    assert_eq!(find_by_time(&coll), 6);
    stats(&coll)
}

fn find_by_time(coll: &Collection) -> usize {
    coll.find(&doc! {}, &FindOptions::default())
        .expect("find")
        .len()
}

#[test]
fn r_6_8_4_dropped_default_index_disables_query_reopening() {
    // With the default index the bucket is reopened by query.
    let s = insert_after_reopen(&options(true), |_| {});
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
    assert_eq!(s.execution.num_bucket_queries_failed, 0);
    // Without it the query counts as failed and a new bucket is opened.
    let s = insert_after_reopen(&options(true), |c| {
        c.drop_index("m_1_t_1").expect("drop");
    });
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_buckets_queried, 0);
    assert_eq!(s.execution.num_bucket_queries_failed, 1);
    assert_eq!(s.execution.num_buckets_reopened, 0);
    assert_eq!(s.execution.num_bucket_inserts, 1);
    // Re-created: reopening works again.
    let s = insert_after_reopen(&options(true), |c| {
        c.drop_index("m_1_t_1").expect("drop");
        create(c, doc! { "m": 1, "t": 1 });
    });
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
}

#[test]
fn r_6_8_4_meta_time_prefixed_index_qualifies() {
    // Extra trailing keys are fine.
    let s = insert_after_reopen(&options(true), |c| {
        c.drop_index("m_1_t_1").expect("drop");
        create(c, doc! { "m": 1, "t": 1, "x": 1 });
    });
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
    // Another leading field, a descending time, or a partial filter do not qualify.
    for (key, partial) in [
        (doc! { "t": 1, "m": 1 }, None),
        (doc! { "m": 1, "t": -1 }, None),
        (doc! { "m.a": 1, "t": 1 }, None),
        (doc! { "m": 1, "t": 1 }, Some(doc! { "m": "a" })),
    ] {
        let s = insert_after_reopen(&options(true), |c| {
            c.drop_index("m_1_t_1").expect("drop");
            c.create_index(
                &key,
                &IndexOptions {
                    partial_filter_expression: partial.clone(),
                    ..IndexOptions::default()
                },
            )
            .expect("create");
        });
        assert_eq!(s.bucket_count, 2, "{key} {partial:?}");
        assert_eq!(s.execution.num_bucket_queries_failed, 1, "{key}");
    }
}

#[test]
fn r_6_8_4_time_index_enables_reopening_without_meta_field() {
    let no_meta = TimeseriesOptions::new("t");
    let s = insert_after_reopen(&no_meta, |_| {});
    assert_eq!(s.bucket_count, 2);
    assert_eq!(s.execution.num_bucket_queries_failed, 1);
    let s = insert_after_reopen(&no_meta, |c| {
        create(c, doc! { "t": 1 });
    });
    assert_eq!(s.bucket_count, 1);
    assert_eq!(s.execution.num_buckets_queried, 1);
    assert_eq!(s.execution.num_bucket_queries_failed, 0);
}

#[test]
fn r_13_5_secondary_index_reads_fewer_buckets() {
    let catalog = CatalogOptions {
        bucket_max_count: 10,
        ..CatalogOptions::default()
    };
    let (_dir, _db, coll) = temp_collection(catalog, &options(true));
    let docs: Vec<Document> = (0..200_i64)
        .map(|i| doc! { "_id": i, "t": at(i * 1_000), "m": { "host": i % 4 }, "x": i })
        .collect();
    insert_all(&coll, &docs);
    let narrow = doc! { "x": { "$gte": 100, "$lt": 110 } };
    let scan = buckets_read(&coll, &narrow);
    let expected = find_by_id(&coll, &narrow);
    assert_eq!(expected.len(), 10);
    create(&coll, doc! { "x": 1 });
    assert!(buckets_read(&coll, &narrow) < scan);
    assert_eq!(find_by_id(&coll, &narrow), expected);
    // Hidden: maintained but not used.
    coll.hide_index("x_1", true).expect("hide");
    assert_eq!(buckets_read(&coll, &narrow), scan);
    insert_all(
        &coll,
        &[doc! { "_id": 1_000_i64, "t": at(200_000), "m": { "host": 9 }, "x": 105_i64 }],
    );
    coll.hide_index("x_1", false).expect("unhide");
    assert_eq!(find_by_id(&coll, &narrow).len(), 11);
    assert_eq!(
        coll.list_indexes().expect("list")[1]
            .get_bool("hidden")
            .ok(),
        None
    );
}

/// A small deterministic generator (SplitMix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn int(&mut self, n: i64) -> i64 {
        i64::try_from(self.below(n.unsigned_abs())).unwrap_or(0)
    }
}

/// The meta values of the random series: sub-fields of several types, arrays, a missing
/// meta and a missing sub-field.
fn metas() -> Vec<Option<Bson>> {
    vec![
        Some(bson::bson!({ "a": 1, "tags": ["r", "g"] })),
        Some(bson::bson!({ "a": 2.5, "tags": ["b"] })),
        Some(bson::bson!({ "a": 2_i64, "tags": [] })),
        Some(bson::bson!({ "a": "two", "tags": "r" })),
        Some(bson::bson!({ "a": null, "tags": [["g"], "b"] })),
        Some(bson::bson!({ "tags": ["r"] })),
        Some(bson::bson!({ "a": 7, "b": { "c": 1 } })),
        None,
    ]
}

/// A random measurement: `x` mostly a number of any type, sometimes a string or missing; `s`
/// a string or missing; `o.z` nested.
fn measurement(rng: &mut Rng, id: i64) -> Document {
    let mut d = doc! { "_id": id, "t": at(id * 5_000 + rng.int(4_000)) };
    if let Some(m) = &metas()[usize::try_from(rng.below(8)).unwrap_or(0)] {
        d.insert("m", m.clone());
    }
    match rng.below(10) {
        0 => {}
        1 => {
            d.insert("x", format!("s{}", rng.below(5)));
        }
        9 if rng.below(3) == 0 => {
            // An array: control min/max are per position (the index must read the bucket).
            d.insert(
                "x",
                vec![Bson::Int64(rng.int(50)), Bson::Int64(rng.int(50))],
            );
        }
        2 => {
            d.insert("x", rng.int(50) as f64 + 0.5);
        }
        3 => {
            d.insert("x", i32::try_from(rng.int(50)).unwrap_or(0));
        }
        _ => {
            d.insert("x", rng.int(50));
        }
    }
    if rng.below(4) != 0 {
        d.insert("s", letter(rng));
    }
    d.insert("o", doc! { "z": rng.int(20) });
    d
}

/// One of the strings `a` to `f`.
fn letter(rng: &mut Rng) -> String {
    char::from(b'a' + u8::try_from(rng.below(6)).unwrap_or(0)).to_string()
}

/// A random filter over the indexed fields, with operands of matching and other types.
fn filter(rng: &mut Rng) -> Document {
    let op = ["$eq", "$gt", "$gte", "$lt", "$lte"][usize::try_from(rng.below(5)).unwrap_or(0)];
    let number = |rng: &mut Rng| -> Bson {
        match rng.below(4) {
            0 => Bson::Double(rng.int(50) as f64 + 0.25),
            1 => Bson::Int32(i32::try_from(rng.int(50)).unwrap_or(0)),
            _ => Bson::Int64(rng.int(50)),
        }
    };
    let mut f = match rng.below(12) {
        0 | 1 => doc! { "x": { op: number(rng) } },
        2 => doc! { "x": { op: format!("s{}", rng.below(5)) } },
        3 => doc! { "x": { "$in": [number(rng), number(rng), "s1"] } },
        4 => doc! { "s": { op: letter(rng) } },
        5 => doc! { "m.a": { op: number(rng) } },
        6 => {
            let choices = [Bson::Null, Bson::String("two".into()), Bson::Int32(1)];
            let v = choices[usize::try_from(rng.below(3)).unwrap_or(0)].clone();
            doc! { "m.a": v }
        }
        7 => {
            let tag = ["r", "g", "b"][usize::try_from(rng.below(3)).unwrap_or(0)];
            doc! { "m.tags": tag }
        }
        8 => doc! { "m.a": { "$in": [1, 2, Bson::Null] } },
        9 => doc! { "t": { op: at(rng.int(600) * 1_000) } },
        10 => doc! { "o.z": { op: rng.int(20) } },
        _ => doc! { "x": { "$gte": number(rng) }, "m.a": { "$lte": 2 } },
    };
    if rng.below(4) == 0 {
        f.insert("t", doc! { "$lt": at(rng.int(600) * 1_000) });
    }
    f
}

fn indexed_keys() -> Vec<Document> {
    vec![
        doc! { "x": 1 },
        doc! { "s": -1 },
        doc! { "m.a": 1, "t": 1 },
        doc! { "m.tags": -1 },
        doc! { "t": -1 },
        doc! { "o.z": 1, "m.a": 1 },
    ]
}

/// Runs the same random filters on `plain` (no secondary index) and on each of `indexed`,
/// and checks that the indexes made the queries read fewer buckets in all.
fn assert_same_results(rng: &mut Rng, plain: &Collection, indexed: &[&Collection], round: &str) {
    let mut read = vec![0; indexed.len()];
    let mut read_plain = 0;
    for _ in 0..150 {
        let f = filter(rng);
        let expected = find_by_id(plain, &f);
        read_plain += buckets_read(plain, &f);
        for (c, n) in indexed.iter().zip(&mut read) {
            let got = find_by_id(c, &f);
            if got != expected {
                let ids = |v: &[Document]| -> Vec<i64> {
                    v.iter().map(|d| d.get_i64("_id").expect("_id")).collect()
                };
                panic!(
                    "{round}: filter {f}: ids {:?}, expected {:?}",
                    ids(&got),
                    ids(&expected)
                );
            }
            *n += buckets_read(c, &f);
        }
    }
    for n in read {
        assert!(
            n < read_plain,
            "{round}: {n} buckets read with indexes, {read_plain} without"
        );
    }
}

#[test]
fn r_13_5_secondary_indexes_return_the_same_results_as_a_scan() {
    let catalog = CatalogOptions {
        bucket_max_count: 8,
        ..CatalogOptions::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(
        dir.path(),
        DatabaseOptions {
            catalog,
            ..DatabaseOptions::default()
        },
    )
    .expect("open");
    let plain = db
        .create_collection("plain", &options(true))
        .expect("create");
    // Indexes created before the data (maintained by commits) and after (built), and with
    // the default index dropped (the planner uses the secondary index even with meta
    // equalities).
    let before = db
        .create_collection("before", &options(true))
        .expect("create");
    let after = db
        .create_collection("after", &options(true))
        .expect("create");
    for k in indexed_keys() {
        create(&before, k);
    }
    before.drop_index("m_1_t_1").expect("drop default");
    let all = [&plain, &before, &after];
    let mut rng = Rng(0x5eed);
    let mut next_id = 0;
    let mut insert_round = |rng: &mut Rng, n: i64| {
        let docs: Vec<Document> = (next_id..next_id + n)
            .map(|i| measurement(rng, i))
            .collect();
        next_id += n;
        // Several calls so that buckets get several commits.
        for chunk in docs.chunks(37) {
            for c in &all {
                insert_all(c, chunk);
            }
        }
    };
    insert_round(&mut rng, 300);
    for k in indexed_keys() {
        create(&after, k);
    }
    assert!(stats(&plain).bucket_count > 30);
    assert_same_results(&mut rng, &plain, &[&before, &after], "inserted");

    // Deletes rewrite and remove buckets; meta updates move them to other series.
    for f in [
        doc! { "x": { "$gte": 10, "$lt": 30 } },
        doc! { "s": "b" },
        doc! { "m.a": 2.5 },
    ] {
        let n = plain.delete_many(&f).expect("delete").deleted;
        for c in [&before, &after] {
            assert_eq!(c.delete_many(&f).expect("delete").deleted, n, "delete {f}");
        }
    }
    for c in &all {
        c.update_many(
            &doc! { "m.a": 1 },
            &doc! { "$set": { "m.a": 3, "m.tags": ["b", "x"] } },
        )
        .expect("update");
    }
    assert_same_results(
        &mut rng,
        &plain,
        &[&before, &after],
        "after deletes and updates",
    );

    // More inserts (reopening rewritten buckets) and closing the database.
    insert_round(&mut rng, 200);
    db.close().expect("close");
    assert_same_results(&mut rng, &plain, &[&before, &after], "after more inserts");
    drop((plain, before, after));
    drop(db);
    let db = open(dir.path());
    let [plain, before, after] = ["plain", "before", "after"].map(|n| db.collection(n).expect("c"));
    assert_same_results(&mut rng, &plain, &[&before, &after], "after reopening");
}

#[test]
fn r_13_partial_index_used_only_when_implied() {
    let catalog = CatalogOptions {
        bucket_max_count: 10,
        ..CatalogOptions::default()
    };
    let (_dir, _db, coll) = temp_collection(catalog, &options(true));
    let docs: Vec<Document> = (0..200_i64)
        .map(|i| doc! { "_id": i, "t": at(i * 1_000), "m": { "host": (i / 10) % 2 }, "x": i % 50 })
        .collect();
    insert_all(&coll, &docs);
    let partial = IndexOptions {
        partial_filter_expression: Some(doc! { "m.host": 1 }),
        ..IndexOptions::default()
    };
    coll.create_index(&doc! { "x": 1 }, &partial)
        .expect("create");
    assert_eq!(
        coll.list_indexes().expect("list")[1]
            .get_document("partialFilterExpression")
            .ok(),
        Some(&doc! { "m.host": 1 })
    );
    let implied = doc! { "m.host": 1, "x": 7 };
    let not_implied = doc! { "x": 7 };
    assert_eq!(find_by_id(&coll, &implied).len(), 2);
    assert_eq!(find_by_id(&coll, &not_implied).len(), 4);
    let all_buckets = buckets_read(&coll, &doc! { "m.host": 1 });
    assert!(buckets_read(&coll, &implied) < all_buckets);
}

#[test]
fn r_13_dropped_collection_takes_its_indexes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let coll = db.create_collection("c", &options(true)).expect("create");
    insert_all(&coll, &[doc! { "_id": 1_i64, "t": at(0), "m": 1, "x": 5 }]);
    create(&coll, doc! { "x": 1 });
    assert!(db.drop_collection("c").expect("drop"));
    // The same name (and collection number) again: no index, no stale entries.
    let coll = db.create_collection("c", &options(true)).expect("create");
    assert_eq!(names(&coll), ["m_1_t_1"]);
    insert_all(&coll, &[doc! { "_id": 2_i64, "t": at(0), "m": 1, "x": 6 }]);
    create(&coll, doc! { "x": 1 });
    assert!(find_by_id(&coll, &doc! { "x": 5 }).is_empty());
    assert_eq!(find_by_id(&coll, &doc! { "x": { "$gte": 5 } }).len(), 1);
}
