//! Arrow results (`Collection::find_arrow`) against `find`: the same measurements in the same
//! order, every BSON type in the column docs/arrow.md maps it to, for filters that match
//! buckets whole and row by row, projections (dotted paths too), sorts with skips and
//! limits, small batches, parts of one scan, and buckets stored, in memory, and both.

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, TimeUnit};
use bson::oid::ObjectId;
use bson::{Bson, Document, Timestamp, doc};
use tscoll_engine::{
    ArrowOptions, CatalogOptions, Collection, Error, ErrorCode, FindOptions, SortOrder,
};
use tscoll_tests::Rng;
use tscoll_tests::arrow::{documents, normal_document};
use tscoll_tests::spec::{at, insert_all, options, temp_collection};

const SERIES: i64 = 6;

/// Measurement `i`: a unique time; fields of every type, some missing or null.
fn measurement(i: i64, rng: &mut Rng) -> Document {
    let series = i % SERIES;
    let mut d = doc! {
        "t": at(i * 1_000 + series),
        "m": { "host": format!("h{series}"), "rack": (series % 3) as i32 },
        "i32": (i % 1000) as i32,
    };
    if series == 5 {
        d.insert("m", doc! { "host": "h5", "dc": "east" });
    }
    match rng.below(4) {
        0 => d.insert("mix", (i % 50) as i32),
        1 => d.insert("mix", i * 3),
        2 => d.insert("mix", i as f64 / 4.0),
        _ => None,
    };
    if rng.below(5) > 0 {
        d.insert(
            "s",
            if rng.below(6) == 0 {
                Bson::Null
            } else {
                Bson::String(format!("s{}", i % 7))
            },
        );
    }
    if rng.below(3) == 0 {
        d.insert("doc", doc! { "a": i, "b": [1, "x", { "c": i % 4 }] });
    }
    d.insert(
        "odd",
        if rng.below(2) == 0 {
            Bson::Int32(1)
        } else {
            Bson::String("one".into())
        },
    );
    d.insert("flag", i % 3 == 0);
    d.insert("when", at(i * 7));
    d.insert(
        "oid",
        ObjectId::from_bytes([u8::try_from(i % 251).unwrap_or(0); 12]),
    );
    d.insert(
        "bin",
        tscoll_catalog_binary(vec![1, 2, u8::try_from(i % 200).unwrap_or(0)]),
    );
    d.insert(
        "ts",
        Timestamp {
            time: u32::try_from(i).unwrap_or(0),
            increment: 7,
        },
    );
    d
}

fn tscoll_catalog_binary(bytes: Vec<u8>) -> Bson {
    Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes,
    })
}

/// A collection with 1 200 measurements in 6 series: the first 900 stored, the rest in
/// memory (some in buckets stored in part).
fn collection() -> (tempfile::TempDir, tscoll_engine::Database, Collection) {
    let (dir, db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let mut rng = Rng(7);
    let docs: Vec<Document> = (0..1200).map(|i| measurement(i, &mut rng)).collect();
    insert_all(&coll, &docs[..900]);
    coll.flush().expect("flush");
    insert_all(&coll, &docs[900..]);
    (dir, db, coll)
}

fn arrow(
    coll: &Collection,
    filter: &Document,
    opts: &FindOptions,
    arrow: &ArrowOptions,
) -> Vec<RecordBatch> {
    let cursor = coll.find_arrow(filter, opts, arrow).expect("find_arrow");
    let schema = cursor.schema();
    let batches: Vec<RecordBatch> = cursor.collect::<Result<_, _>>().expect("batches");
    for b in &batches {
        assert_eq!(b.schema(), schema, "every batch has the cursor's schema");
    }
    batches
}

fn same(coll: &Collection, filter: &Document, opts: &FindOptions, ctx: &str) {
    let want: Vec<Document> = coll
        .find(filter, opts)
        .expect("find")
        .iter()
        .map(normal_document)
        .collect();
    for rows in [8192, 7] {
        let a = ArrowOptions {
            batch_rows: rows,
            ..ArrowOptions::default()
        };
        let got: Vec<Document> = documents(&arrow(coll, filter, opts, &a))
            .iter()
            .map(normal_document)
            .map(|mut d| {
                // The time column is in every Arrow result, whatever the projection.
                if want.first().is_some_and(|w| !w.contains_key("t")) {
                    d.remove("t");
                }
                d
            })
            .collect();
        assert_eq!(got.len(), want.len(), "{ctx}: rows ({rows} per batch)");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{ctx}: row {i} ({rows} per batch)");
        }
    }
}

#[test]
fn arrow_results_match_find() {
    let (_dir, _db, coll) = collection();
    let none = FindOptions::default();
    same(&coll, &doc! {}, &none, "everything");
    same(
        &coll,
        &doc! { "mix": { "$gte": 20 } },
        &none,
        "a field range (row by row)",
    );
    same(
        &coll,
        &doc! { "m.host": "h1", "t": { "$gte": at(100_000), "$lt": at(700_000) } },
        &none,
        "a series and a time range",
    );
    same(&coll, &doc! { "s": "s3" }, &none, "a string equality");
    let project = |p: Document| FindOptions {
        projection: Some(p),
        ..FindOptions::default()
    };
    same(
        &coll,
        &doc! {},
        &project(doc! { "s": 1, "doc.a": 1, "m.host": 1 }),
        "an inclusion with paths",
    );
    same(
        &coll,
        &doc! {},
        &project(doc! { "doc.b": 0, "odd": 0, "m": 0 }),
        "an exclusion",
    );
    for (sort, skip, limit) in [
        (SortOrder::Ascending, 0, None),
        (SortOrder::Descending, 0, None),
        (SortOrder::Ascending, 5, Some(30)),
        (SortOrder::Descending, 3, Some(1)),
    ] {
        let opts = FindOptions {
            sort: Some(sort),
            skip,
            limit,
            ..FindOptions::default()
        };
        same(
            &coll,
            &doc! { "i32": { "$lt": 500 } },
            &opts,
            &format!("{sort:?} skip {skip} limit {limit:?}"),
        );
    }
    same(
        &coll,
        &doc! {},
        &FindOptions {
            skip: 10,
            limit: Some(25),
            ..FindOptions::default()
        },
        "unsorted skip and limit",
    );
}

#[test]
fn every_bson_type_has_its_arrow_type() {
    let (_dir, _db, coll) = collection();
    let schema = coll.arrow_schema(&doc! {}, None).expect("schema");
    let ty = |n: &str| schema.field_with_name(n).expect(n).data_type().clone();
    let json = |n: &str| {
        schema
            .field_with_name(n)
            .expect(n)
            .metadata()
            .get("tscoll.encoding")
            .cloned()
    };
    let utc = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
    assert_eq!(schema.field(0).name(), "t");
    assert_eq!(ty("t"), utc);
    assert_eq!(schema.field(1).name(), "m");
    let DataType::Struct(meta) = ty("m") else {
        panic!("meta {:?}", ty("m"))
    };
    let names: Vec<&str> = meta.iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["host", "rack", "dc"]);
    assert!(matches!(meta[0].data_type(), DataType::Dictionary(_, v) if **v == DataType::Utf8));
    assert_eq!(meta[1].data_type(), &DataType::Int32);
    assert_eq!(ty("i32"), DataType::Int32);
    assert_eq!(ty("mix"), DataType::Float64);
    assert_eq!((ty("s"), json("s")), (DataType::Utf8, None));
    assert_eq!(
        (ty("doc"), json("doc").as_deref()),
        (DataType::Utf8, Some("json"))
    );
    assert_eq!(
        (ty("odd"), json("odd").as_deref()),
        (DataType::Utf8, Some("json"))
    );
    assert_eq!(ty("flag"), DataType::Boolean);
    assert_eq!(ty("when"), utc);
    assert_eq!(ty("oid"), DataType::FixedSizeBinary(12));
    assert_eq!(ty("bin"), DataType::Binary);
    assert_eq!(ty("ts"), DataType::UInt64);
    // Only int32 and int64 in a field: Int64.
    let (_d2, _db2, c2) = temp_collection(CatalogOptions::default(), &options(false));
    insert_all(
        &c2,
        &[doc! { "t": at(0), "v": 1 }, doc! { "t": at(1), "v": 2_i64 }],
    );
    let s2 = c2.arrow_schema(&doc! {}, None).expect("schema");
    let names: Vec<&str> = s2.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        ["t", "_id", "v"],
        "no meta column without a meta field"
    );
    assert_eq!(
        s2.field_with_name("v").expect("v").data_type(),
        &DataType::Int64
    );
}

#[test]
fn parts_of_one_scan_read_every_bucket_once_with_one_schema() {
    let (_dir, _db, coll) = collection();
    let schema = coll.arrow_schema(&doc! {}, None).expect("schema");
    let mut times = Vec::new();
    for i in 0..3 {
        let a = ArrowOptions {
            schema: Some(Arc::clone(&schema)),
            partition: Some((i, 3)),
            ..ArrowOptions::default()
        };
        for d in documents(&arrow(&coll, &doc! {}, &FindOptions::default(), &a)) {
            times.push(d.get_datetime("t").expect("t").timestamp_millis());
        }
    }
    times.sort_unstable();
    let all: Vec<i64> = documents(&arrow(
        &coll,
        &doc! {},
        &FindOptions::default(),
        &ArrowOptions::default(),
    ))
    .iter()
    .map(|d| d.get_datetime("t").expect("t").timestamp_millis())
    .collect();
    let mut sorted = all.clone();
    sorted.sort_unstable();
    assert_eq!(times, sorted);
    assert_eq!(all.len(), 1200);
}

#[test]
fn a_given_schema_is_kept_and_a_value_it_cannot_take_is_refused() {
    let (_dir, _db, coll) = collection();
    let schema = coll.arrow_schema(&doc! {}, None).expect("schema");
    // A query reading only some buckets still has the table's schema.
    let a = ArrowOptions {
        schema: Some(Arc::clone(&schema)),
        ..ArrowOptions::default()
    };
    let batches = arrow(&coll, &doc! { "m.host": "h2" }, &FindOptions::default(), &a);
    assert!(batches.iter().all(|b| b.schema() == schema));
    assert_eq!(
        batches.iter().map(RecordBatch::num_rows).sum::<usize>(),
        200
    );
    // A string where the schema has Int32.
    insert_all(
        &coll,
        &[doc! { "t": at(5_000_000), "m": { "host": "h9" }, "i32": "x" }],
    );
    let err = coll
        .find_arrow(&doc! {}, &FindOptions::default(), &a)
        .expect("cursor")
        .collect::<Result<Vec<_>, _>>()
        .expect_err("a string in an Int32 column");
    assert!(
        matches!(
            &err,
            Error::Rejected {
                code: ErrorCode::TypeMismatch,
                ..
            }
        ),
        "{err}"
    );
    // The schema made now takes it (the field becomes JSON).
    let now = coll.arrow_schema(&doc! {}, None).expect("schema");
    assert_eq!(
        now.field_with_name("i32").expect("i32").data_type(),
        &DataType::Utf8
    );
    assert_eq!(
        documents(&arrow(
            &coll,
            &doc! {},
            &FindOptions::default(),
            &ArrowOptions::default()
        ))
        .len(),
        1201
    );
}

#[test]
fn a_scan_of_many_buckets_reads_them_in_id_order_with_the_same_rows() {
    // 1 300 series, each with a stored bucket and rows in memory: more than a thousand
    // candidates, all of the collection, read by scans in id order.
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let doc_of = |s: i64, k: i64| doc! { "t": at(k * 60_000 + s), "m": { "host": format!("h{s}") }, "v": s * 10 + k };
    let stored: Vec<Document> = (0..1300)
        .flat_map(|s| (0..2).map(move |k| doc_of(s, k)))
        .collect();
    insert_all(&coll, &stored);
    coll.flush().expect("flush");
    let memory: Vec<Document> = (0..1300).step_by(3).map(|s| doc_of(s, 2)).collect();
    insert_all(&coll, &memory);
    let key = |d: &Document| {
        (
            d.get_datetime("t").expect("t").timestamp_millis(),
            d.get_object_id("_id").expect("_id"),
        )
    };
    let mut want: Vec<Document> = coll.find(&doc! {}, &FindOptions::default()).expect("find");
    want.sort_by_key(key);
    let (batches, stats) =
        tscoll_tests::arrow::find_arrow(&coll, &doc! {}, &FindOptions::default());
    let mut got = documents(&batches);
    got.sort_by_key(key);
    assert_eq!(got.len(), 2600 + 434);
    assert_eq!(got, want);
    assert_eq!(stats.buckets_unpacked, 1300);
    // In parts: ranges of ids, every row once.
    let schema = coll.arrow_schema(&doc! {}, None).expect("schema");
    let mut parts = Vec::new();
    for i in 0..4 {
        let a = ArrowOptions {
            schema: Some(Arc::clone(&schema)),
            partition: Some((i, 4)),
            ..ArrowOptions::default()
        };
        parts.extend(documents(&arrow(
            &coll,
            &doc! {},
            &FindOptions::default(),
            &a,
        )));
    }
    parts.sort_by_key(key);
    assert_eq!(parts, want);
}

/// A document's canonical text: keys sorted at every depth, numbers as doubles.
fn canonical(d: &Document) -> String {
    fn sorted(v: &Bson) -> Bson {
        match v {
            Bson::Document(d) => {
                let mut keys: Vec<&String> = d.keys().collect();
                keys.sort();
                Bson::Document(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&d[k])))
                        .collect(),
                )
            }
            other => other.clone(),
        }
    }
    sorted(&Bson::Document(normal_document(d))).to_string()
}

#[test]
fn aggregate_groups_as_record_batches_equal_the_documents() {
    use tscoll_engine::{Accumulator, AggregateSpec};
    let (_dir, _db, coll) = collection();
    let spec = AggregateSpec {
        window_ms: 7_000,
        by_series: true,
        outputs: vec![
            ("n".into(), Accumulator::Count),
            ("s".into(), Accumulator::Sum("i32".into())),
            ("hi".into(), Accumulator::Max("i32".into())),
            ("total".into(), Accumulator::SumTyped("mix".into())),
            ("numbers".into(), Accumulator::CountNumbers("mix".into())),
            ("avg".into(), Accumulator::Avg("mix".into())),
        ],
    };
    let whole = coll.arrow_schema(&doc! {}, None).expect("schema");
    let mut fields = vec![whole.field(0).clone(), whole.field(1).clone()];
    for (name, ty) in [
        ("n", DataType::Int64),
        ("s", DataType::Float64),
        ("hi", DataType::Int32),
        ("total", DataType::Float64),
        ("numbers", DataType::Int64),
        ("avg", DataType::Float64),
    ] {
        fields.push(arrow_schema::Field::new(name, ty, true));
    }
    let schema = Arc::new(arrow_schema::Schema::new(fields));
    // The reference: the groups as documents, `_id` flattened.
    let mut want: Vec<String> = coll
        .aggregate_windows(&doc! {}, &spec)
        .expect("aggregate")
        .iter()
        .map(|g| {
            let mut d = g.get_document("_id").expect("_id").clone();
            for (k, v) in g.iter().filter(|(k, _)| *k != "_id") {
                d.insert(k.clone(), v.clone());
            }
            canonical(&d)
        })
        .collect();
    want.sort();
    let groups: std::collections::BTreeSet<(i64, i64)> = (0..1200_i64)
        .map(|i| (i % SERIES, (i * 1_000 + i % SERIES).div_euclid(7_000)))
        .collect();
    assert_eq!(want.len(), groups.len());
    let batch = coll
        .aggregate_columns(&doc! {}, &spec)
        .expect("aggregate")
        .to_record_batch(&schema, true)
        .expect("record batch");
    let direct = coll
        .aggregate_record_batch(&doc! {}, &spec, &schema, true)
        .expect("record batch");
    for b in [batch, direct] {
        let mut got: Vec<String> = documents(&[b]).iter().map(canonical).collect();
        got.sort();
        assert_eq!(got, want);
    }
    // A double sum in an Int64 column is refused, and so is a schema of another width.
    let mut narrow: Vec<arrow_schema::Field> =
        schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    narrow[5] = arrow_schema::Field::new("total", DataType::Int64, true);
    let narrow = Arc::new(arrow_schema::Schema::new(narrow));
    let err = coll
        .aggregate_record_batch(&doc! {}, &spec, &narrow, true)
        .expect_err("doubles in Int64");
    assert_eq!(err.code(), ErrorCode::TypeMismatch, "{err}");
    let err = coll
        .aggregate_record_batch(&doc! {}, &spec, &schema, false)
        .expect_err("one column too many");
    assert_eq!(err.code(), ErrorCode::BadValue, "{err}");
}

#[test]
fn fields_after_a_regular_expression_have_their_type_in_the_schema() {
    // Control records are read in place; a value the reader could not step over (a regular
    // expression) used to hide the fields after it, so `v` was typed from the other series
    // alone and the string failed the cursor.
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let regex = bson::Regex {
        pattern: bson::raw::CString::try_from("a.c").expect("pattern"),
        options: bson::raw::CString::try_from("i").expect("options"),
    };
    insert_all(
        &coll,
        &[
            doc! { "_id": 0_i64, "t": at(0), "m": "a", "x": Bson::RegularExpression(regex), "v": "s" },
            doc! { "_id": 1_i64, "t": at(0), "m": "b", "v": 1_i32 },
        ],
    );
    for stored in [false, true] {
        if stored {
            coll.flush().expect("flush");
        }
        let opts = FindOptions {
            projection: Some(doc! { "v": 1 }),
            ..FindOptions::default()
        };
        same(&coll, &doc! {}, &opts, "a field after a regular expression");
        let schema = coll.arrow_schema(&doc! {}, None).expect("schema");
        let v = schema.field_with_name("v").expect("v");
        assert_eq!(
            v.data_type(),
            &DataType::Utf8,
            "int32 and string: JSON text"
        );
    }
}
