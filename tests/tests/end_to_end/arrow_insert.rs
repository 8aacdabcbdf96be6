//! The columnar insert (`Collection::insert_record_batch`) against `insert_many` of the same
//! measurements as documents: random batches (series in any order, times out of order, nulls,
//! a struct meta, every supported type, small buckets so that runs roll over) store the same measurements,
//! with the same buckets; bad rows are rejected with their position (SPEC) and refused
//! columns insert nothing.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray, TimestampMillisecondArray, UInt64Array,
};
use arrow_schema::{DataType, Field};
use bson::{Bson, DateTime, Document, doc};
use proptest::prelude::*;
use tscoll_engine::{
    CatalogOptions, Collection, Database, DatabaseOptions, ErrorCode, FindOptions, InsertOptions,
    TimeseriesOptions,
};

/// One row: `(id, host, seconds, cpu, count, flag, label)`.
type Row = (
    i64,
    u8,
    i64,
    Option<f64>,
    Option<i64>,
    Option<bool>,
    Option<u8>,
);

fn open(dir: &std::path::Path, max_count: u32) -> (Database, Collection, Collection) {
    let db = Database::open(
        dir,
        DatabaseOptions {
            catalog: CatalogOptions {
                bucket_max_count: max_count,
                ..CatalogOptions::default()
            },
            ..DatabaseOptions::default()
        },
    )
    .expect("open");
    let opts = TimeseriesOptions::new("t").meta_field("host");
    let docs = db.create_collection("docs", &opts).expect("create");
    let cols = db.create_collection("cols", &opts).expect("create");
    (db, docs, cols)
}

fn documents(rows: &[Row]) -> Vec<Document> {
    rows.iter()
        .map(|&(id, host, secs, cpu, count, flag, label)| {
            let mut d = doc! {
                "_id": id,
                "t": DateTime::from_millis(secs * 1000),
                "host": { "name": format!("h{host}"), "rack": i32::from(host % 2) },
            };
            if let Some(v) = cpu {
                d.insert("cpu", v);
            }
            if let Some(v) = count {
                d.insert("count", v);
            }
            if let Some(v) = flag {
                d.insert("flag", v);
            }
            if let Some(v) = label {
                d.insert("label", format!("l{v}"));
            }
            d
        })
        .collect()
}

fn record_batch(rows: &[Row]) -> RecordBatch {
    let col = |a: ArrayRef| a;
    RecordBatch::try_from_iter([
        (
            "_id",
            col(Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.0),
            ))),
        ),
        (
            "t",
            col(Arc::new(TimestampMillisecondArray::from_iter_values(
                rows.iter().map(|r| r.2 * 1000),
            ))),
        ),
        (
            "host",
            col(Arc::new(StructArray::from(vec![
                (
                    Arc::new(Field::new("name", DataType::Utf8, false)),
                    col(Arc::new(StringArray::from_iter_values(
                        rows.iter().map(|r| format!("h{}", r.1)),
                    ))),
                ),
                (
                    Arc::new(Field::new("rack", DataType::Int32, false)),
                    col(Arc::new(Int32Array::from_iter_values(
                        rows.iter().map(|r| i32::from(r.1 % 2)),
                    ))),
                ),
            ]))),
        ),
        (
            "cpu",
            col(Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.3)))),
        ),
        (
            "count",
            col(Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.4)))),
        ),
        (
            "flag",
            col(Arc::new(BooleanArray::from_iter(rows.iter().map(|r| r.5)))),
        ),
        (
            "label",
            col(Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.6.map(|v| format!("l{v}"))),
            ))),
        ),
    ])
    .expect("batch")
}

/// Every measurement by `_id`, its fields sorted by name.
fn stored(coll: &Collection) -> BTreeMap<i64, BTreeMap<String, Bson>> {
    coll.find(&doc! {}, &FindOptions::default())
        .expect("find")
        .into_iter()
        .map(|d| {
            let id = d.get_i64("_id").expect("_id");
            (id, d.into_iter().collect())
        })
        .collect()
}

/// Every bucket's meta and control, sorted.
fn buckets(coll: &Collection) -> Vec<String> {
    let mut out: Vec<String> = coll
        .buckets()
        .expect("buckets")
        .into_iter()
        .map(|b| format!("{:?} {:?}", b.get("meta"), b.get("control")))
        .collect();
    out.sort();
    out
}

fn row() -> impl Strategy<Value = (u8, i64, Option<f64>, Option<i64>, Option<bool>, Option<u8>)> {
    (
        0u8..6,
        0i64..20_000,
        proptest::option::of(-1e6f64..1e6),
        proptest::option::of(any::<i64>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(0u8..4),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn record_batches_store_what_documents_store(
        batches in prop::collection::vec(prop::collection::vec(row(), 1..120), 1..4),
        max_count in 2u32..40,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_db, docs, cols) = open(dir.path(), max_count);
        let mut id = 0;
        for batch in batches {
            let rows: Vec<Row> = batch
                .into_iter()
                .map(|(host, secs, cpu, count, flag, label)| {
                    id += 1;
                    (id, host, secs, cpu, count, flag, label)
                })
                .collect();
            let a = docs.insert_many(&documents(&rows), &InsertOptions::default()).expect("insert");
            // The rows as a slice of a longer batch: arrays read from their offset on.
            let mut padded = vec![(0, 9, 0, None, None, None, None)];
            padded.extend_from_slice(&rows);
            padded.push((0, 8, 0, Some(1.0), None, None, Some(3)));
            let sliced = record_batch(&padded).slice(1, rows.len());
            let b = cols.insert_record_batch(&sliced, &InsertOptions::default()).expect("insert");
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(a.inserted, rows.len());
        }
        prop_assert_eq!(stored(&docs), stored(&cols));
        prop_assert_eq!(buckets(&docs), buckets(&cols));
    }
}

#[test]
fn bad_rows_are_rejected_with_their_position() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, _docs, cols) = open(dir.path(), 1000);
    let batch = RecordBatch::try_from_iter([
        (
            "t",
            Arc::new(TimestampMicrosecondArray::from(vec![
                Some(1_000_000),
                None,
                Some(3_000_999),
                Some(4_000_000),
            ])) as ArrayRef,
        ),
        (
            "host",
            Arc::new(Int32Array::from(vec![Some(1), Some(1), None, Some(2)])) as ArrayRef,
        ),
        (
            "big",
            Arc::new(UInt64Array::from(vec![1, 2, 3, u64::MAX])) as ArrayRef,
        ),
    ])
    .expect("batch");
    // Unordered: every good row is kept; ordered: the rows before the first bad one.
    let unordered = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    let r = cols
        .insert_record_batch(&batch, &unordered)
        .expect("insert");
    assert_eq!(r.inserted, 2);
    let bad: Vec<(usize, ErrorCode)> = r.errors.iter().map(|e| (e.index, e.code)).collect();
    assert_eq!(bad, [(1, ErrorCode::BadValue), (3, ErrorCode::BadValue)]);
    // Ordered: stopped at row 1, an error holding the result.
    let err = cols
        .insert_record_batch(&batch, &InsertOptions::default())
        .expect_err("stopped");
    assert!(err.to_string().contains("BulkWriteError"), "{err}");
    let r = err.into_insert_result().expect("a BulkWrite error");
    assert_eq!((r.inserted, r.errors.len()), (1, 1));
    assert_eq!(r.errors[0].index, 1);
    // Stored: microseconds truncated to ms, a generated ObjectId, a null meta as no meta.
    let found = cols.find(&doc! {}, &FindOptions::default()).expect("find");
    assert_eq!(found.len(), 3);
    let at = |ms: i64| {
        found
            .iter()
            .filter(|d| d.get_datetime("t").ok().map(|t| t.timestamp_millis()) == Some(ms))
            .count()
    };
    assert_eq!((at(1000), at(3000)), (2, 1));
    assert!(found.iter().all(|d| d.get_object_id("_id").is_ok()));
    let no_meta = found
        .iter()
        .find(|d| d.get_datetime("t").ok().map(|t| t.timestamp_millis()) == Some(3000))
        .expect("row 2");
    assert!(!no_meta.contains_key("host"), "{no_meta}");
    assert_eq!(no_meta.get("big"), Some(&Bson::Int64(3)));
}

#[test]
fn refused_columns_insert_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, _docs, cols) = open(dir.path(), 1000);
    let times = || Arc::new(TimestampMillisecondArray::from(vec![0, 1])) as ArrayRef;
    let unsupported = RecordBatch::try_from_iter([
        ("t", times()),
        (
            "v",
            Arc::new(arrow_array::IntervalYearMonthArray::from(vec![1, 2])) as ArrayRef,
        ),
    ])
    .expect("batch");
    let no_time =
        RecordBatch::try_from_iter([("v", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef)])
            .expect("batch");
    let time_not_a_date =
        RecordBatch::try_from_iter([("t", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef)])
            .expect("batch");
    let nul_name = RecordBatch::try_from_iter([("t", times()), ("a\0b", times())]).expect("batch");
    // A NUL in the name of a struct's child, in a field and in the meta.
    let nul_child = || {
        Arc::new(StructArray::from(vec![(
            Arc::new(Field::new("x\0y", DataType::Int32, false)),
            Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
        )])) as ArrayRef
    };
    let nul_in_field =
        RecordBatch::try_from_iter([("t", times()), ("s", nul_child())]).expect("batch");
    let nul_in_meta =
        RecordBatch::try_from_iter([("t", times()), ("host", nul_child())]).expect("batch");
    for batch in [
        unsupported,
        no_time,
        time_not_a_date,
        nul_name,
        nul_in_field,
        nul_in_meta,
    ] {
        let err = cols
            .insert_record_batch(&batch, &InsertOptions::default())
            .expect_err("refused");
        assert!(err.to_string().contains("BadValue"), "{err}");
    }
    assert_eq!(cols.count(&doc! {}).expect("count"), 0);
}

/// A null in the `_id` column is a missing `_id`: that row gets a generated ObjectId, as a
/// document without `_id` does; the other rows keep theirs.
#[test]
fn a_null_id_is_generated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, _docs, cols) = open(dir.path(), 1000);
    let batch = RecordBatch::try_from_iter([
        (
            "t",
            Arc::new(TimestampMillisecondArray::from(vec![0, 1, 2])) as ArrayRef,
        ),
        (
            "_id",
            Arc::new(Int32Array::from(vec![Some(7), None, Some(9)])) as ArrayRef,
        ),
    ])
    .expect("batch");
    let result = cols
        .insert_record_batch(&batch, &InsertOptions::default())
        .expect("insert");
    assert_eq!(result.inserted, 3);
    let found = cols
        .find(&doc! {}, &tscoll_engine::FindOptions::default())
        .expect("find");
    let mut ids: Vec<&Bson> = found.iter().filter_map(|d| d.get("_id")).collect();
    ids.sort_by_key(|b| format!("{b:?}"));
    assert_eq!(ids.len(), 3, "{found:?}");
    assert!(ids.contains(&&Bson::Int32(7)) && ids.contains(&&Bson::Int32(9)));
    assert!(
        ids.iter().any(|b| matches!(b, Bson::ObjectId(_))),
        "{found:?}"
    );
}

/// Meta values met again in later calls are found from the collection's cache of meta values:
/// a struct meta with a null child is the value without that child, and a row whose meta is
/// null has no meta, in every call as in the first.
#[test]
fn meta_values_seen_before_find_their_series() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, docs, cols) = open(dir.path(), 1000);
    let batch = |ids: std::ops::Range<i64>| {
        let rack: Vec<Option<i32>> = ids.clone().map(|i| (i % 3 != 0).then_some(1)).collect();
        let name = StringArray::from_iter(ids.clone().map(|i| Some(format!("h{}", i % 2))));
        let meta = StructArray::from(vec![
            (
                Arc::new(Field::new("name", DataType::Utf8, true)),
                Arc::new(name) as ArrayRef,
            ),
            (
                Arc::new(Field::new("rack", DataType::Int32, true)),
                Arc::new(Int32Array::from(rack)) as ArrayRef,
            ),
        ]);
        // Every fifth row has a null meta.
        let nulls = arrow_buffer::NullBuffer::from_iter(ids.clone().map(|i| i % 5 != 0));
        let (fields, arrays, _) = meta.into_parts();
        let meta = StructArray::new(fields, arrays, Some(nulls));
        RecordBatch::try_from_iter([
            (
                "_id",
                Arc::new(Int64Array::from_iter_values(ids.clone())) as ArrayRef,
            ),
            (
                "t",
                Arc::new(TimestampMillisecondArray::from_iter_values(
                    ids.clone().map(|i| i * 1000),
                )) as ArrayRef,
            ),
            ("host", Arc::new(meta) as ArrayRef),
        ])
        .expect("batch")
    };
    let documents = |ids: std::ops::Range<i64>| -> Vec<Document> {
        ids.map(|i| {
            let mut d = doc! { "_id": i, "t": DateTime::from_millis(i * 1000) };
            if i % 5 != 0 {
                let mut host = doc! { "name": format!("h{}", i % 2) };
                if i % 3 != 0 {
                    host.insert("rack", 1);
                }
                d.insert("host", host);
            }
            d
        })
        .collect()
    };
    for ids in [0..30, 30..60, 60..90] {
        let a = docs
            .insert_many(&documents(ids.clone()), &InsertOptions::default())
            .expect("insert");
        let b = cols
            .insert_record_batch(&batch(ids), &InsertOptions::default())
            .expect("insert");
        assert_eq!(a, b);
        assert_eq!(b.inserted, 30);
    }
    assert_eq!(stored(&docs), stored(&cols));
    let metas = |c: &Collection| {
        let mut out: Vec<String> = c
            .buckets()
            .expect("buckets")
            .into_iter()
            .map(|b| format!("{:?}", b.get("meta")))
            .collect();
        out.sort();
        out
    };
    // h0 and h1, each with and without a rack, and no meta: five series.
    assert_eq!(metas(&docs).len(), 5);
    assert_eq!(metas(&docs), metas(&cols));
}

#[test]
fn meta_values_with_nulls_group_as_their_documents_do() {
    // Null struct rows (no meta), null children (left out of the meta) and values that differ
    // only in one child: grouped column by column, they make the series the documents make.
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, docs, cols) = open(dir.path(), 1000);
    let n = 84_i64;
    let null_meta = |i: i64| i % 7 == 0;
    let null_name = |i: i64| i % 3 == 0;
    let documents: Vec<Document> = (0..n)
        .map(|i| {
            let mut d = doc! { "_id": i, "t": DateTime::from_millis(i * 1000) };
            if !null_meta(i) {
                let mut host = Document::new();
                if !null_name(i) {
                    host.insert("name", format!("h{}", i % 4));
                }
                host.insert("rack", i32::try_from(i % 2).expect("small"));
                d.insert("host", host);
            }
            d
        })
        .collect();
    let names = StringArray::from_iter(
        (0..n).map(|i| (!null_name(i) && !null_meta(i)).then(|| format!("h{}", i % 4))),
    );
    let racks = Int32Array::from_iter(
        (0..n).map(|i| (!null_meta(i)).then(|| i32::try_from(i % 2).expect("small"))),
    );
    let host = StructArray::try_new(
        vec![
            Arc::new(Field::new("name", DataType::Utf8, true)),
            Arc::new(Field::new("rack", DataType::Int32, true)),
        ]
        .into(),
        vec![Arc::new(names) as ArrayRef, Arc::new(racks) as ArrayRef],
        Some((0..n).map(|i| !null_meta(i)).collect()),
    )
    .expect("struct");
    let batch = RecordBatch::try_from_iter([
        (
            "_id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "t",
            Arc::new(TimestampMillisecondArray::from_iter_values(
                (0..n).map(|i| i * 1000),
            )) as ArrayRef,
        ),
        ("host", Arc::new(host) as ArrayRef),
    ])
    .expect("batch");
    let a = docs
        .insert_many(&documents, &InsertOptions::default())
        .expect("insert");
    let b = cols
        .insert_record_batch(&batch, &InsertOptions::default())
        .expect("insert");
    assert_eq!((a.inserted, b.inserted), (84, 84));
    assert_eq!(stored(&docs), stored(&cols));
    // No meta, and {rack} or {name, rack} for 2 racks × 4 names (with a name, the rack
    // follows from it): 1 + 2 + 4 series.
    assert_eq!(buckets(&docs).len(), 7);
    assert_eq!(buckets(&docs), buckets(&cols));
}
