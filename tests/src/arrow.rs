//! Arrow results read back as documents (the inverse of docs/arrow.md's mapping), and the
//! normal form in which a `find` result and an Arrow result of the same query are equal.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float64Type, Int32Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, TimeUnit};
use bson::oid::ObjectId;
use bson::{Bson, DateTime, Document, Timestamp};
use tscoll_engine::ENCODING_KEY;

/// Every row of `batches` as a document: a column's null is a missing field.
///
/// # Panics
/// On a column type the mapping does not produce, or a JSON text that does not parse.
#[must_use]
pub fn documents(batches: &[RecordBatch]) -> Vec<Document> {
    let mut out = Vec::new();
    for b in batches {
        let schema = b.schema();
        for row in 0..b.num_rows() {
            let mut d = Document::new();
            for (field, col) in schema.fields().iter().zip(b.columns()) {
                let json = field.metadata().get(ENCODING_KEY).map(String::as_str) == Some("json");
                if let Some(v) = value(col, row, json) {
                    d.insert(field.name().clone(), v);
                }
            }
            out.push(d);
        }
    }
    out
}

/// Row `row` of a column as a value; `None` for a null.
///
/// # Panics
/// As [`documents`].
#[must_use]
pub fn value(col: &ArrayRef, row: usize, json: bool) -> Option<Bson> {
    if col.is_null(row) || matches!(col.data_type(), DataType::Null) {
        return None;
    }
    Some(match col.data_type() {
        DataType::Int32 => Bson::Int32(col.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => Bson::Int64(col.as_primitive::<Int64Type>().value(row)),
        DataType::Float64 => Bson::Double(col.as_primitive::<Float64Type>().value(row)),
        DataType::Boolean => Bson::Boolean(col.as_boolean().value(row)),
        DataType::Timestamp(unit, _) => Bson::DateTime(DateTime::from_millis(match unit {
            TimeUnit::Second => col.as_primitive::<TimestampSecondType>().value(row) * 1000,
            TimeUnit::Millisecond => col.as_primitive::<TimestampMillisecondType>().value(row),
            TimeUnit::Microsecond => {
                col.as_primitive::<TimestampMicrosecondType>().value(row) / 1000
            }
            TimeUnit::Nanosecond => {
                col.as_primitive::<TimestampNanosecondType>().value(row) / 1_000_000
            }
        })),
        DataType::UInt64 => {
            let u = col.as_primitive::<UInt64Type>().value(row);
            #[expect(clippy::cast_possible_truncation, reason = "the two halves")]
            Bson::Timestamp(Timestamp {
                time: (u >> 32) as u32,
                increment: u as u32,
            })
        }
        DataType::Utf8 => {
            let s = col.as_string::<i32>().value(row);
            if json {
                let v: serde_json::Value = serde_json::from_str(s).expect("JSON text");
                Bson::try_from(v).expect("Extended JSON")
            } else {
                Bson::String(s.to_owned())
            }
        }
        DataType::Binary => tscoll_engine_binary(col.as_binary::<i32>().value(row)),
        DataType::FixedSizeBinary(12) => Bson::ObjectId(ObjectId::from_bytes(
            col.as_fixed_size_binary()
                .value(row)
                .try_into()
                .expect("12 bytes"),
        )),
        DataType::Dictionary(_, _) => {
            let d = col.as_dictionary::<Int32Type>();
            let key = usize::try_from(d.keys().value(row)).expect("key");
            return value(d.values(), key, json);
        }
        DataType::Struct(fields) => {
            let s = col.as_struct();
            let mut doc = Document::new();
            for (f, c) in fields.iter().zip(s.columns()) {
                let json = f.metadata().get(ENCODING_KEY).map(String::as_str) == Some("json");
                if let Some(v) = value(c, row, json) {
                    doc.insert(f.name().clone(), v);
                }
            }
            Bson::Document(doc)
        }
        other => panic!("no BSON type maps to {other}"),
    })
}

fn tscoll_engine_binary(bytes: &[u8]) -> Bson {
    Bson::Binary(bson::Binary {
        subtype: bson::spec::BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

/// A value in the form both a document result and an Arrow result give it: every number a
/// double, null and undefined dropped from documents (a null column cell is a missing
/// field), symbols as strings, binaries generic; documents and arrays element-wise.
#[must_use]
pub fn normal(v: &Bson) -> Option<Bson> {
    #[expect(clippy::cast_precision_loss, reason = "numbers compared as doubles")]
    Some(match v {
        Bson::Null | Bson::Undefined => return None,
        Bson::Int32(i) => Bson::Double(f64::from(*i)),
        Bson::Int64(i) => Bson::Double(*i as f64),
        Bson::Decimal128(d) => Bson::Double(d.to_string().parse().unwrap_or(f64::NAN)),
        Bson::Symbol(s) => Bson::String(s.clone()),
        Bson::Binary(b) => tscoll_engine_binary(&b.bytes),
        Bson::Document(d) => Bson::Document(normal_document(d)),
        Bson::Array(a) => Bson::Array(a.iter().map(|v| normal(v).unwrap_or(Bson::Null)).collect()),
        other => other.clone(),
    })
}

/// A document in [`normal`] form.
#[must_use]
pub fn normal_document(d: &Document) -> Document {
    d.iter()
        .filter_map(|(k, v)| normal(v).map(|v| (k.clone(), v)))
        .collect()
}

/// The batches of [`Collection::find_arrow`](tscoll_engine::Collection::find_arrow) with
/// default Arrow options, and what the query did.
///
/// # Panics
/// When the query fails.
#[must_use]
pub fn find_arrow(
    coll: &tscoll_engine::Collection,
    filter: &Document,
    options: &tscoll_engine::FindOptions,
) -> (Vec<RecordBatch>, tscoll_engine::QueryStats) {
    let mut cursor = coll
        .find_arrow(filter, options, &tscoll_engine::ArrowOptions::default())
        .expect("find_arrow");
    let batches = cursor
        .by_ref()
        .collect::<Result<Vec<_>, _>>()
        .expect("batches");
    (batches, cursor.stats())
}

/// The time column (the first) of every row of `batches`, in ms.
///
/// # Panics
/// When the first column is not a timestamp.
#[must_use]
pub fn times(batches: &[RecordBatch]) -> Vec<i64> {
    batches
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_primitive::<TimestampMillisecondType>()
                .values()
                .to_vec()
        })
        .collect()
}
