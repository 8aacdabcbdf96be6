//! The one Arrow → BSON mapping (docs/arrow.md, "Arrow → BSON") on every Arrow type:
//! `insert_record_batch` stores what `tscoll_engine::arrow::documents_from_batch` reads
//! (the columnar path against the reader, value for value), `find_arrow`'s output goes back
//! in unchanged, types without a BSON form are refused naming their column, and the time
//! and meta fields can come from columns named otherwise (`RecordBatchOptions`).

use std::collections::{BTreeMap, HashMap};
use std::str::FromStr;
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Date32Array, Date64Array,
    Decimal32Array, Decimal128Array, Decimal256Array, DictionaryArray, DurationNanosecondArray,
    FixedSizeBinaryArray, FixedSizeListArray, Float16Array, Float32Array, Int8Array, Int64Array,
    LargeBinaryArray, LargeListArray, LargeStringArray, ListArray, ListViewArray, NullArray,
    RecordBatch, StringArray, StringViewArray, StructArray, Time32SecondArray,
    TimestampMillisecondArray, TimestampNanosecondArray, TimestampSecondArray, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow_buffer::{ScalarBuffer, i256};
use arrow_schema::{DataType, Field, Schema};
use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document, Timestamp, doc};
use tscoll_engine::arrow::{BSON_TYPE_KEY, ENCODING_KEY, NULLS_KEY, RecordBatchOptions};
use tscoll_engine::{
    ArrowOptions, Collection, Database, DatabaseOptions, FindOptions, InsertOptions,
    TimeseriesOptions,
};

fn open(dir: &std::path::Path) -> (Database, Collection, Collection) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let opts = TimeseriesOptions::new("t").meta_field("m");
    let a = db.create_collection("a", &opts).expect("create");
    let b = db.create_collection("b", &opts).expect("create");
    (db, a, b)
}

/// Every measurement by `_id` (an int64 of the batch's `_id` column).
fn stored(coll: &Collection) -> BTreeMap<String, Document> {
    coll.find(&doc! {}, &FindOptions::default())
        .expect("find")
        .into_iter()
        .map(|d| (format!("{:?}", d.get("_id")), d))
        .collect()
}

fn marked(name: &str, data_type: DataType, key: &str, value: &str) -> Field {
    Field::new(name, data_type, true)
        .with_metadata(HashMap::from([(key.to_owned(), value.to_owned())]))
}

/// Three rows holding a column of every Arrow type with a BSON form (nulls among them).
fn every_type() -> RecordBatch {
    let int_list = || {
        ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), None]),
            None,
            Some(vec![]),
        ])
    };
    let item = Arc::new(Field::new("item", DataType::Int32, true));
    let list_view = ListViewArray::new(
        Arc::clone(&item),
        ScalarBuffer::from(vec![0, 1, 0]),
        ScalarBuffer::from(vec![2, 1, 0]),
        Arc::new(arrow_array::Int32Array::from(vec![7, 8])),
        None,
    );
    let host: DictionaryArray<Int32Type> =
        vec![Some("a"), Some("b"), Some("a")].into_iter().collect();
    let region: DictionaryArray<Int32Type> =
        vec![Some("eu"), None, Some("eu")].into_iter().collect();
    let meta = StructArray::from(vec![
        (
            Arc::new(Field::new("host", host.data_type().clone(), true)),
            Arc::new(host) as ArrayRef,
        ),
        (
            Arc::new(Field::new("region", region.data_type().clone(), true)),
            Arc::new(region) as ArrayRef,
        ),
    ]);
    let oid = ObjectId::parse_str("65a1b2c3d4e5f60718293a4b").expect("oid");
    let dec = Decimal128::from_str("-1.50").expect("decimal");
    let ts_struct = StructArray::from(vec![
        (
            Arc::new(Field::new("t", DataType::UInt32, false)),
            Arc::new(UInt32Array::from(vec![5, 6, 7])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("i", DataType::UInt32, false)),
            Arc::new(UInt32Array::from(vec![1, 2, 3])) as ArrayRef,
        ),
    ]);
    let columns: Vec<(Field, ArrayRef)> = vec![
        (
            Field::new("_id", DataType::Int64, false),
            Arc::new(Int64Array::from(vec![1, 2, 3])),
        ),
        (
            Field::new(
                "t",
                DataType::Timestamp(arrow_schema::TimeUnit::Millisecond, None),
                false,
            ),
            Arc::new(TimestampMillisecondArray::from(vec![1000, 2000, 3000])),
        ),
        (
            Field::new("m", meta.data_type().clone(), true),
            Arc::new(meta),
        ),
        (
            Field::new("i8", DataType::Int8, true),
            Arc::new(Int8Array::from(vec![Some(-8), None, Some(8)])),
        ),
        (
            Field::new("u16", DataType::UInt16, true),
            Arc::new(UInt16Array::from(vec![Some(65535), Some(0), None])),
        ),
        (
            Field::new("u32", DataType::UInt32, true),
            Arc::new(UInt32Array::from(vec![Some(u32::MAX), None, Some(1)])),
        ),
        (
            Field::new("f16", DataType::Float16, true),
            Arc::new(Float16Array::from(vec![
                Some(half::f16::from_f32(1.5)),
                None,
                Some(half::f16::from_f32(-2.0)),
            ])),
        ),
        (
            Field::new("f32", DataType::Float32, true),
            Arc::new(Float32Array::from(vec![Some(0.25), Some(-0.0), None])),
        ),
        (
            Field::new("d128", DataType::Decimal128(10, 2), true),
            Arc::new(
                Decimal128Array::from(vec![Some(1234), None, Some(-5)])
                    .with_precision_and_scale(10, 2)
                    .expect("decimal"),
            ),
        ),
        (
            Field::new("d32", DataType::Decimal32(9, 3), true),
            Arc::new(
                Decimal32Array::from(vec![Some(1), Some(-1000), None])
                    .with_precision_and_scale(9, 3)
                    .expect("decimal"),
            ),
        ),
        (
            Field::new("d256", DataType::Decimal256(40, 0), true),
            Arc::new(
                Decimal256Array::from(vec![Some(i256::from_i128(99)), None, None])
                    .with_precision_and_scale(40, 0)
                    .expect("decimal"),
            ),
        ),
        (
            Field::new("large", DataType::LargeUtf8, true),
            Arc::new(LargeStringArray::from(vec![Some("x"), None, Some("")])),
        ),
        (
            Field::new("view", DataType::Utf8View, true),
            Arc::new(StringViewArray::from(vec![
                Some("a string longer than twelve bytes"),
                Some("short"),
                None,
            ])),
        ),
        (
            Field::new("bin", DataType::Binary, true),
            Arc::new(BinaryArray::from(vec![
                Some(b"ab".as_ref()),
                None,
                Some(b""),
            ])),
        ),
        (
            Field::new("lbin", DataType::LargeBinary, true),
            Arc::new(LargeBinaryArray::from(vec![
                Some(b"l".as_ref()),
                None,
                None,
            ])),
        ),
        (
            Field::new("vbin", DataType::BinaryView, true),
            Arc::new(BinaryViewArray::from(vec![Some(b"v".as_ref()), None, None])),
        ),
        (
            marked("uuid", DataType::Binary, BSON_TYPE_KEY, "binary:4"),
            Arc::new(BinaryArray::from(vec![
                Some([7u8; 16].as_ref()),
                None,
                None,
            ])),
        ),
        (
            marked(
                "oid",
                DataType::FixedSizeBinary(12),
                BSON_TYPE_KEY,
                "objectId",
            ),
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    vec![Some(oid.bytes()), None, Some(oid.bytes())].into_iter(),
                    12,
                )
                .expect("fixed"),
            ),
        ),
        (
            marked(
                "dbid",
                DataType::FixedSizeBinary(16),
                BSON_TYPE_KEY,
                "decimal128",
            ),
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    vec![Some(dec.bytes()), None, None].into_iter(),
                    16,
                )
                .expect("fixed"),
            ),
        ),
        (
            marked("tsbits", DataType::UInt64, BSON_TYPE_KEY, "timestamp"),
            Arc::new(UInt64Array::from(vec![Some((9u64 << 32) | 4), None, None])),
        ),
        (
            marked(
                "tsstruct",
                ts_struct.data_type().clone(),
                BSON_TYPE_KEY,
                "timestamp",
            ),
            Arc::new(ts_struct),
        ),
        (
            marked("json", DataType::Utf8, ENCODING_KEY, "json"),
            Arc::new(StringArray::from(vec![
                Some(r#"{"a": [1, "x", {"$date": "2024-01-01T00:00:00Z"}]}"#),
                Some(r#""just a string""#),
                None,
            ])),
        ),
        (
            marked("nul", DataType::Int64, NULLS_KEY, "null"),
            Arc::new(Int64Array::from(vec![None, Some(5), None])),
        ),
        (
            Field::new("none", DataType::Null, true),
            Arc::new(NullArray::new(3)),
        ),
        (
            Field::new("d32day", DataType::Date32, true),
            Arc::new(Date32Array::from(vec![Some(1), None, Some(-1)])),
        ),
        (
            Field::new("d64", DataType::Date64, true),
            Arc::new(Date64Array::from(vec![Some(86_400_000), None, None])),
        ),
        (
            Field::new(
                "tzns",
                DataType::Timestamp(
                    arrow_schema::TimeUnit::Nanosecond,
                    Some("Europe/Paris".into()),
                ),
                true,
            ),
            Arc::new(
                TimestampNanosecondArray::from(vec![Some(1_999_999), Some(-1), None])
                    .with_timezone("Europe/Paris"),
            ),
        ),
        (
            Field::new(
                "secs",
                DataType::Timestamp(arrow_schema::TimeUnit::Second, None),
                true,
            ),
            Arc::new(TimestampSecondArray::from(vec![Some(2), None, None])),
        ),
        (
            Field::new(
                "tod",
                DataType::Time32(arrow_schema::TimeUnit::Second),
                true,
            ),
            Arc::new(Time32SecondArray::from(vec![Some(3600), None, None])),
        ),
        (
            Field::new(
                "dur",
                DataType::Duration(arrow_schema::TimeUnit::Nanosecond),
                true,
            ),
            Arc::new(DurationNanosecondArray::from(vec![
                Some(1_500),
                None,
                Some(-2),
            ])),
        ),
        (
            Field::new("list", int_list().data_type().clone(), true),
            Arc::new(int_list()),
        ),
        (
            Field::new(
                "llist",
                DataType::LargeList(Arc::new(Field::new("item", DataType::Int32, true))),
                true,
            ),
            Arc::new(LargeListArray::from_iter_primitive::<Int32Type, _, _>(
                vec![Some(vec![Some(3)]), None, None],
            )),
        ),
        (
            Field::new(
                "fixed",
                DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Int32, true)), 2),
                true,
            ),
            Arc::new(FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
                vec![
                    Some(vec![Some(1), Some(2)]),
                    None,
                    Some(vec![None, Some(4)]),
                ],
                2,
            )),
        ),
        (
            Field::new("lview", list_view.data_type().clone(), true),
            Arc::new(list_view),
        ),
        (
            Field::new("flag", DataType::Boolean, true),
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        ),
    ];
    let (fields, arrays): (Vec<Field>, Vec<ArrayRef>) = columns.into_iter().unzip();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).expect("batch")
}

#[test]
fn every_arrow_type_stores_what_the_mapping_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, columnar, documents) = open(dir.path());
    let batch = every_type();
    let docs = tscoll_engine::arrow::documents_from_batch(&batch).expect("documents");
    assert_eq!(docs.len(), 3);
    // The values the mapping gives (docs/arrow.md), row 0 and the nulls of row 1.
    let d = &docs[0];
    let oid = ObjectId::parse_str("65a1b2c3d4e5f60718293a4b").expect("oid");
    let expected = doc! {
        "_id": 1_i64,
        "t": DateTime::from_millis(1000),
        "m": { "host": "a", "region": "eu" },
        "i8": -8,
        "u16": 65535,
        "u32": i64::from(u32::MAX),
        "f16": 1.5,
        "f32": 0.25,
        "d128": Decimal128::from_str("12.34").expect("decimal"),
        "d32": Decimal128::from_str("0.001").expect("decimal"),
        "d256": Decimal128::from_str("99").expect("decimal"),
        "large": "x",
        "view": "a string longer than twelve bytes",
        "bin": Binary { subtype: BinarySubtype::Generic, bytes: b"ab".to_vec() },
        "lbin": Binary { subtype: BinarySubtype::Generic, bytes: b"l".to_vec() },
        "vbin": Binary { subtype: BinarySubtype::Generic, bytes: b"v".to_vec() },
        "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] },
        "oid": oid,
        "dbid": Decimal128::from_str("-1.50").expect("decimal"),
        "tsbits": Timestamp { time: 9, increment: 4 },
        "tsstruct": Timestamp { time: 5, increment: 1 },
        "json": { "a": [1, "x", DateTime::from_millis(1_704_067_200_000)] },
        "nul": Bson::Null,
        "d32day": DateTime::from_millis(86_400_000),
        "d64": DateTime::from_millis(86_400_000),
        "tzns": DateTime::from_millis(1),
        "secs": DateTime::from_millis(2000),
        "tod": 3600_i64,
        "dur": 1500_i64,
        "list": [1, Bson::Null],
        "llist": [3],
        "fixed": [1, 2],
        "lview": [7, 8],
        "flag": true,
    };
    assert_eq!(d, &expected);
    assert_eq!(docs[1].get("nul"), Some(&Bson::Int64(5)));
    assert_eq!(docs[2].get("nul"), Some(&Bson::Null));
    assert_eq!(
        docs[1].get_document("m").expect("meta"),
        &doc! { "host": "b" }
    );
    assert_eq!(
        docs[1].get("json"),
        Some(&Bson::String("just a string".into()))
    );
    assert_eq!(
        docs[1].get("tzns"),
        Some(&Bson::DateTime(DateTime::from_millis(-1)))
    );
    assert_eq!(docs[2].get("lview"), Some(&Bson::Array(vec![])));
    // The columnar insert stores exactly what the reader gives, through insert_many.
    let r = columnar
        .insert_record_batch(&batch, &InsertOptions::default())
        .expect("insert_record_batch");
    assert_eq!((r.inserted, r.errors.len()), (3, 0));
    let r = documents
        .insert_many(&docs, &InsertOptions::default())
        .expect("insert_many");
    assert_eq!((r.inserted, r.errors.len()), (3, 0));
    let (a, b) = (stored(&columnar), stored(&documents));
    assert_eq!(a.len(), 3);
    assert_eq!(a, b);
    // Dictionary-encoded meta strings group as plain ones: two series.
    assert_eq!(
        columnar.buckets().expect("buckets").len(),
        documents.buckets().expect("buckets").len()
    );
}

#[test]
fn null_rows_are_missing_fields_unless_marked() {
    let docs = tscoll_engine::arrow::documents_from_batch(&every_type()).expect("documents");
    // Row 0 of `nul` is null in a column marked `tscoll.nulls`: BSON null, not missing.
    assert_eq!(docs[0].get("nul"), Some(&Bson::Null));
    for name in [
        "i8", "f16", "d128", "large", "bin", "oid", "list", "none", "flag",
    ] {
        assert!(
            !docs[1].contains_key(name),
            "{name} of row 1 is null: {:?}",
            docs[1]
        );
    }
}

/// Measurements of every BSON type `find_arrow` has a column kind for, each field of one
/// type so that the column holds its values exactly.
fn varied(n: i64) -> Vec<Document> {
    (0..n)
        .map(|i| {
            let mut d = doc! {
                "_id": ObjectId::from_bytes([u8::try_from(i).unwrap_or(0); 12]),
                "t": DateTime::from_millis(1_700_000_000_000 + i * 1000),
                "m": { "host": format!("h{}", i % 3), "rack": i32::try_from(i % 2).unwrap_or(0) },
                "i": i32::try_from(i).unwrap_or(0),
                "l": i * 10_000_000_000,
                "d": i as f64 + 0.5,
                "s": format!("s{i}"),
                "b": i % 2 == 0,
                "when": DateTime::from_millis(i * 86_400_000),
                "ts": Timestamp { time: u32::MAX - u32::try_from(i).unwrap_or(0), increment: 7 },
                "bin": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, u8::try_from(i).unwrap_or(0)] },
                "doc": { "x": i32::try_from(i).unwrap_or(0), "y": [1, "two", { "z": true }] },
                "arr": [1.5, "s", Bson::Null],
            };
            if i % 4 == 1 {
                d.remove("s");
                d.insert("only", "sometimes");
            }
            d
        })
        .collect()
}

#[test]
fn find_arrow_output_goes_back_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, source, copy) = open(dir.path());
    let docs = varied(40);
    let r = source
        .insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    assert_eq!(r.inserted, 40);
    let options = ArrowOptions {
        batch_rows: 16,
        ..ArrowOptions::default()
    };
    let batches = source
        .find_arrow(&doc! {}, &FindOptions::default(), &options)
        .expect("find_arrow")
        .collect::<Result<Vec<_>, _>>()
        .expect("batches");
    assert!(batches.len() > 1);
    // The meta strings come dictionary-encoded; they go back as they are.
    let meta = batches[0].column_by_name("m").expect("meta");
    assert!(
        format!("{:?}", meta.data_type()).contains("Dictionary"),
        "{:?}",
        meta.data_type()
    );
    for batch in &batches {
        let r = copy
            .insert_record_batch(batch, &InsertOptions::default())
            .expect("insert_record_batch");
        assert_eq!(r.errors, []);
    }
    assert_eq!(stored(&copy), stored(&source));
    assert_eq!(
        copy.buckets().expect("buckets").len(),
        source.buckets().expect("buckets").len()
    );
}

#[test]
fn types_without_a_bson_form_are_refused_naming_the_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll, _) = open(dir.path());
    let mut map = arrow_array::builder::MapBuilder::new(
        None,
        arrow_array::builder::StringBuilder::new(),
        arrow_array::builder::Int32Builder::new(),
    );
    for _ in 0..2 {
        map.keys().append_value("k");
        map.values().append_value(1);
        map.append(true).expect("map");
    }
    let map: ArrayRef = Arc::new(map.finish());
    let times = || Arc::new(TimestampMillisecondArray::from(vec![0, 1])) as ArrayRef;
    let top =
        RecordBatch::try_from_iter([("t", times()), ("tags", Arc::clone(&map))]).expect("batch");
    let inner = StructArray::from(vec![(
        Arc::new(Field::new("tags", map.data_type().clone(), true)),
        Arc::clone(&map),
    )]);
    let nested = RecordBatch::try_from_iter([("t", times()), ("s", Arc::new(inner) as ArrayRef)])
        .expect("batch");
    for (batch, name) in [(top, "'tags'"), (nested, "'s.tags'")] {
        let err = coll
            .insert_record_batch(&batch, &InsertOptions::default())
            .expect_err("refused");
        let text = err.to_string();
        assert!(
            text.contains("BadValue") && text.contains(name) && text.contains("Map"),
            "{text}"
        );
        let err = tscoll_engine::arrow::documents_from_batch(&batch).expect_err("refused");
        assert!(err.to_string().contains(name), "{err}");
    }
    assert_eq!(coll.count(&doc! {}).expect("count"), 0);
}

#[test]
fn values_without_a_bson_form_reject_their_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll, _) = open(dir.path());
    let batch = RecordBatch::try_from_iter([
        (
            "t",
            Arc::new(TimestampMillisecondArray::from(vec![0, 1, 2])) as ArrayRef,
        ),
        (
            "big",
            Arc::new(
                Decimal256Array::from(vec![Some(i256::from_i128(1)), Some(i256::MAX), None])
                    .with_precision_and_scale(76, 0)
                    .expect("decimal"),
            ) as ArrayRef,
        ),
    ])
    .expect("batch");
    let unordered = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    let r = coll
        .insert_record_batch(&batch, &unordered)
        .expect("insert");
    assert_eq!(r.inserted, 2);
    assert_eq!(r.errors.len(), 1);
    assert_eq!(r.errors[0].index, 1);
    assert!(
        r.errors[0].message.contains("'big'"),
        "{}",
        r.errors[0].message
    );
    // check() makes the unordered rejections the error an ordered insert returns.
    let err = r.clone().check().expect_err("rejections");
    assert_eq!(err.code(), tscoll_engine::ErrorCode::BadValue);
    assert_eq!(err.into_insert_result().expect("BulkWrite"), r);
    let ok = tscoll_engine::InsertResult {
        inserted: 2,
        errors: Vec::new(),
    };
    assert_eq!(ok.clone().check().expect("no rejection"), ok);
    assert_eq!(coll.count(&doc! {}).expect("count"), 2);
}

#[test]
fn time_and_meta_fields_from_columns_named_otherwise() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, coll, _) = open(dir.path());
    let batch = RecordBatch::try_from_iter([
        (
            "when",
            Arc::new(TimestampSecondArray::from(vec![10, 20, 30])) as ArrayRef,
        ),
        (
            "host",
            Arc::new(StringArray::from(vec![Some("a"), Some("b"), None])) as ArrayRef,
        ),
        ("v", Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef),
        (
            "m.rack",
            Arc::new(StringArray::from(vec!["r1", "r1", "r2"])) as ArrayRef,
        ),
    ])
    .expect("batch");
    let mapping = RecordBatchOptions {
        time_column: Some("when".into()),
        meta_columns: vec!["host".into(), "m.rack".into()],
    };
    let r = coll
        .insert_record_batch_with(&batch, &InsertOptions::default(), &mapping)
        .expect("insert");
    assert_eq!(r.inserted, 3);
    let found = coll
        .find(
            &doc! {},
            &FindOptions {
                projection: Some(doc! { "_id": 0 }),
                ..FindOptions::default()
            },
        )
        .expect("find");
    let mut found: Vec<String> = found.iter().map(|d| format!("{d}")).collect();
    found.sort();
    let mut want: Vec<String> = [
        doc! { "t": DateTime::from_millis(10_000), "m": { "host": "a", "rack": "r1" }, "v": 1_i64 },
        doc! { "t": DateTime::from_millis(20_000), "m": { "host": "b", "rack": "r1" }, "v": 2_i64 },
        doc! { "t": DateTime::from_millis(30_000), "m": { "rack": "r2" }, "v": 3_i64 },
    ]
    .iter()
    .map(|d| format!("{d}"))
    .collect();
    want.sort();
    assert_eq!(found, want);
    // Mappings that cannot apply are refused before anything is inserted.
    let bad = [
        RecordBatchOptions {
            time_column: Some("nope".into()),
            ..RecordBatchOptions::default()
        },
        RecordBatchOptions {
            time_column: Some("when".into()),
            meta_columns: vec!["host".into(), "host".into()],
        },
        RecordBatchOptions {
            time_column: Some("when".into()),
            meta_columns: vec!["when".into()],
        },
    ];
    for mapping in bad {
        let err = coll
            .insert_record_batch_with(&batch, &InsertOptions::default(), &mapping)
            .expect_err("refused");
        assert!(err.to_string().contains("BadValue"), "{err}");
    }
    assert_eq!(coll.count(&doc! {}).expect("count"), 3);
}
