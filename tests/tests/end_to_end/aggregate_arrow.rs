//! Pipeline results as Arrow (`Collection::aggregate_arrow`) against `aggregate`: every BSON
//! type in the column docs/arrow.md ("Documents → Arrow") maps it to and read back to the
//! same value, mixed types as JSON text, nested documents and arrays as structs and lists,
//! batches of `DEFAULT_BATCH_ROWS`, and an empty result.

use std::str::FromStr;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMillisecondType, UInt32Type};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, TimeUnit};
use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document, Timestamp, doc};
use tscoll_engine::arrow::{BSON_TYPE_KEY, ENCODING_KEY, NULLS_KEY};
use tscoll_engine::{CatalogOptions, DEFAULT_BATCH_ROWS};
use tscoll_tests::spec::{at, insert_all, options, temp_collection};

/// Every row of `batches` as a document, read with the marks of docs/arrow.md: a null is a
/// missing field unless the column is marked `tscoll.nulls`.
fn read_back(batches: &[RecordBatch]) -> Vec<Document> {
    let mut out = Vec::new();
    for b in batches {
        for row in 0..b.num_rows() {
            let mut d = Document::new();
            for (field, col) in b.schema().fields().iter().zip(b.columns()) {
                if let Some(v) = cell(field, col, row) {
                    d.insert(field.name().clone(), v);
                }
            }
            out.push(d);
        }
    }
    out
}

/// Row `row` of column `col` of `field`: `None` for a null that is a missing field.
fn cell(field: &Field, col: &ArrayRef, row: usize) -> Option<Bson> {
    if col.is_null(row) || col.data_type() == &DataType::Null {
        return field
            .metadata()
            .contains_key(NULLS_KEY)
            .then_some(Bson::Null);
    }
    let mark = field.metadata().get(BSON_TYPE_KEY).map(String::as_str);
    Some(match col.data_type() {
        DataType::Float64 => Bson::Double(col.as_primitive::<Float64Type>().value(row)),
        DataType::Int32 => Bson::Int32(col.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Bson::Int64(col.as_primitive::<Int64Type>().value(row)),
        DataType::Boolean => Bson::Boolean(col.as_boolean().value(row)),
        DataType::Utf8 => {
            let s = col.as_string::<i32>().value(row);
            if field.metadata().get(ENCODING_KEY).map(String::as_str) == Some("json") {
                let v: serde_json::Value = serde_json::from_str(s).expect("JSON text");
                Bson::try_from(v).expect("Extended JSON")
            } else {
                Bson::String(s.to_owned())
            }
        }
        DataType::Timestamp(TimeUnit::Millisecond, _) => Bson::DateTime(DateTime::from_millis(
            col.as_primitive::<TimestampMillisecondType>().value(row),
        )),
        DataType::FixedSizeBinary(12) => {
            let bytes = col.as_fixed_size_binary().value(row);
            Bson::ObjectId(ObjectId::from_bytes(bytes.try_into().expect("12 bytes")))
        }
        DataType::FixedSizeBinary(16) => {
            assert_eq!(mark, Some("decimal128"));
            let bytes = col.as_fixed_size_binary().value(row);
            Bson::Decimal128(Decimal128::from_bytes(bytes.try_into().expect("16 bytes")))
        }
        DataType::Binary => Bson::Binary(Binary {
            subtype: mark
                .and_then(|m| m.strip_prefix("binary:"))
                .and_then(|n| n.parse::<u8>().ok())
                .map_or(BinarySubtype::Generic, BinarySubtype::from),
            bytes: col.as_binary::<i32>().value(row).to_vec(),
        }),
        DataType::Struct(_) if mark == Some("timestamp") => {
            let s = col.as_struct();
            Bson::Timestamp(Timestamp {
                time: s.column(0).as_primitive::<UInt32Type>().value(row),
                increment: s.column(1).as_primitive::<UInt32Type>().value(row),
            })
        }
        DataType::Struct(fields) => {
            let s = col.as_struct();
            let mut d = Document::new();
            for (f, c) in fields.iter().zip(s.columns()) {
                if let Some(v) = cell(f, c, row) {
                    d.insert(f.name().clone(), v);
                }
            }
            Bson::Document(d)
        }
        DataType::List(item) => {
            let list = col.as_list::<i32>();
            let values = list.value(row);
            Bson::Array(
                (0..values.len())
                    .map(|i| cell(item, &values, i).unwrap_or(Bson::Null))
                    .collect(),
            )
        }
        other => panic!("the mapping makes no {other}"),
    })
}

/// A measurement holding a value of every BSON type (those with no Arrow type of their own
/// too), nested documents and arrays.
fn every_type(i: i64) -> Document {
    doc! {
        "t": at(i * 1_000),
        "m": format!("s{}", i % 2),
        "d": i as f64 + 0.5,
        "i": i as i32,
        "l": Bson::Int64(i << 40),
        "b": i % 2 == 0,
        "s": format!("str {i}"),
        "dt": DateTime::from_millis(-i - 1),
        "oid": ObjectId::from_bytes([i as u8; 12]),
        "bin": Binary { subtype: BinarySubtype::Generic, bytes: vec![i as u8, 1] },
        "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![i as u8; 16] },
        "dec": Decimal128::from_str(&format!("{i}.10")).expect("decimal"),
        "ts": Timestamp { time: i as u32, increment: 7 },
        "doc": { "a": i, "b": { "c": [1, 2, i as i32] } },
        "arr": [{ "k": i }, { "k": i + 1, "z": "x" }],
        "re": bson::Regex { pattern: "a.c".try_into().expect("pattern"), options: "i".try_into().expect("options") },
        "code": Bson::JavaScriptCode("f()".into()),
        "min": Bson::MinKey,
        "max": Bson::MaxKey,
        "nul": Bson::Null,
    }
}

#[test]
fn every_bson_type_reads_back_from_its_column() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let docs: Vec<Document> = (0..6).map(every_type).collect();
    insert_all(&coll, &docs);
    let pipeline = [
        doc! { "$sort": { "t": 1 } },
        doc! { "$project": { "_id": 0 } },
    ];
    let want = coll.aggregate(&pipeline).expect("aggregate");
    let got = coll.aggregate_arrow(&pipeline).expect("aggregate_arrow");
    assert_eq!(got.num_rows(), 6);
    assert!(
        got.notes.is_empty() || got.notes.iter().all(|n| n.contains("as JSON text")),
        "{:?}",
        got.notes
    );
    let types: Vec<(String, DataType)> = got
        .schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect();
    let of = |name: &str| {
        types
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| panic!("no column {name}: {types:?}"))
    };
    assert_eq!(
        of("t"),
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
    );
    assert_eq!(of("d"), DataType::Float64);
    assert_eq!(of("i"), DataType::Int32);
    assert_eq!(of("l"), DataType::Int64);
    assert_eq!(of("b"), DataType::Boolean);
    assert_eq!(of("s"), DataType::Utf8);
    assert_eq!(of("oid"), DataType::FixedSizeBinary(12));
    assert_eq!(of("dec"), DataType::FixedSizeBinary(16));
    assert_eq!(of("nul"), DataType::Null);
    assert!(matches!(of("doc"), DataType::Struct(_)));
    assert!(matches!(of("arr"), DataType::List(_)));
    for name in ["re", "code", "min", "max"] {
        let field = got.schema.field_with_name(name).expect("column");
        assert_eq!(field.metadata()[ENCODING_KEY], "json", "{name}");
    }
    assert_eq!(read_back(&got.batches), want);
}

#[test]
fn mixed_types_are_widened_or_json_and_nested_values_nest() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(true));
    let docs = [
        doc! { "t": at(0), "m": "a", "v": 1, "x": "one", "n": { "k": [1, "a"] } },
        doc! { "t": at(1), "m": "a", "v": 2.5, "x": 1, "n": { "k": [] } },
        doc! { "t": at(2), "m": "b", "v": Bson::Int64(3), "x": { "y": 1 } },
    ];
    insert_all(&coll, &docs);
    let pipeline = [
        doc! { "$sort": { "t": 1 } },
        doc! { "$group": {
            "_id": "$m",
            "rows": { "$push": { "v": "$v", "x": "$x" } },
            "sum": { "$sum": "$v" },
        } },
        doc! { "$sort": { "_id": 1 } },
    ];
    let got = coll.aggregate_arrow(&pipeline).expect("aggregate_arrow");
    // `aggregate` gives `v` as int, double and long, `sum` as double and long: widened.
    let want = [
        doc! {
            "_id": "a",
            "rows": [{ "v": 1.0, "x": "one" }, { "v": 2.5, "x": 1 }],
            "sum": 3.5,
        },
        doc! { "_id": "b", "rows": [{ "v": 3.0, "x": { "y": 1 } }], "sum": 3.0 },
    ];
    assert_eq!(read_back(&got.batches), want);
    let DataType::List(item) = got.schema.field(1).data_type() else {
        panic!("rows: {:?}", got.schema)
    };
    let DataType::Struct(fields) = item.data_type() else {
        panic!("rows[]: {item:?}")
    };
    assert_eq!(fields[0].data_type(), &DataType::Float64, "v widened");
    assert_eq!(fields[1].metadata()[ENCODING_KEY], "json", "x mixed");
    assert_eq!(
        got.notes,
        [
            "field 'rows[].v': int and long widened to double",
            "field 'rows[].x': string and int and object as JSON text",
            "field 'sum': long widened to double",
        ]
    );
    // A nested document with an array of mixed elements.
    let nested = coll
        .aggregate_arrow(&[
            doc! { "$sort": { "t": 1 } },
            doc! { "$project": { "_id": 0, "n": 1 } },
        ])
        .expect("aggregate_arrow");
    let DataType::Struct(n) = nested.schema.field(0).data_type() else {
        panic!("n: {:?}", nested.schema)
    };
    let DataType::List(k) = n[0].data_type() else {
        panic!("n.k: {n:?}")
    };
    assert_eq!(k.metadata()[ENCODING_KEY], "json");
    let back = read_back(&nested.batches);
    assert_eq!(back[0], doc! { "n": { "k": [1, "a"] } });
    assert_eq!(back[1], doc! { "n": { "k": [] } });
    assert_eq!(back[2], doc! {}, "a missing document stays missing");
}

#[test]
fn an_empty_result_has_no_column_and_many_rows_fill_batches() {
    let (_dir, _db, coll) = temp_collection(CatalogOptions::default(), &options(false));
    let none = coll
        .aggregate_arrow(&[doc! { "$match": { "v": 1 } }])
        .expect("aggregate_arrow");
    assert!(none.schema.fields().is_empty());
    assert!(none.batches.is_empty());
    let n = DEFAULT_BATCH_ROWS as i64 + 10;
    let docs: Vec<Document> = (0..n).map(|i| doc! { "t": at(i), "v": i }).collect();
    insert_all(&coll, &docs);
    let got = coll
        .aggregate_arrow(&[
            doc! { "$sort": { "t": 1 } },
            doc! { "$project": { "_id": 0, "v": 1 } },
        ])
        .expect("aggregate_arrow");
    let sizes: Vec<usize> = got.batches.iter().map(RecordBatch::num_rows).collect();
    assert_eq!(sizes, [DEFAULT_BATCH_ROWS, 10]);
    let last = got.batches[1].column(0).as_primitive::<Int64Type>();
    assert_eq!(last.value(9), n - 1);
    // A bad pipeline fails as `aggregate` does.
    let e = coll
        .aggregate_arrow(&[doc! { "$nope": {} }])
        .expect_err("unknown stage");
    assert_eq!(e.code().code(), 40324);
}
