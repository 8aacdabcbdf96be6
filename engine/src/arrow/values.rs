//! Arrow values read as BSON values, row by row: the one Arrow → BSON mapping of every type
//! (docs/arrow.md, "Arrow → BSON"). The columnar insert (`write/arrow.rs`) reads the common
//! scalar types straight into bucket columns and hands every other column to a [`Column`]
//! of this file, which gives the same values.
//!
//! | Arrow | BSON |
//! |---|---|
//! | `Null` | missing |
//! | `Boolean` | bool |
//! | `Int8`, `Int16`, `Int32`, `UInt8`, `UInt16` | int32 |
//! | `Int64`, `UInt32`, `UInt64` | int64 (a `UInt64` past `i64::MAX` rejects its row) |
//! | `UInt64` marked `timestamp` | timestamp (seconds in the high 32 bits) |
//! | `Float16`, `Float32`, `Float64` | double |
//! | `Decimal32`, `Decimal64`, `Decimal128`, `Decimal256` | Decimal128 of the same digits (more than 34 digits rejects the row) |
//! | `Utf8`, `LargeUtf8`, `Utf8View` | string |
//! | `Utf8` marked `tscoll.encoding = json` | the value its relaxed Extended JSON text holds |
//! | `Timestamp` (any unit, any time zone) | date (ms since the epoch, finer units floored) |
//! | `Date32`, `Date64` | date |
//! | `Time32`, `Time64`, `Duration` | int64, the count of the column's unit |
//! | `Binary`, `LargeBinary`, `BinaryView`, `FixedSizeBinary` | binData (subtype from a `binary:N` mark, else 0) |
//! | `FixedSizeBinary(12)` marked `objectId` | ObjectId |
//! | `FixedSizeBinary(16)` marked `decimal128` | Decimal128 (its IEEE 754-2008 BID bytes) |
//! | `Struct{t, i}` marked `timestamp` | timestamp |
//! | `Struct` | embedded document (its null children left out) |
//! | `List`, `LargeList`, `FixedSizeList`, `ListView`, `LargeListView` | array (a null element is BSON null) |
//! | `Dictionary` | its values' type |
//! | `Map`, `Union`, `Interval`, `RunEndEncoded` | refused, naming the column |
//!
//! A null is a missing field, or BSON null where the field is marked `tscoll.nulls`. The
//! marks are field metadata ([`super::BSON_TYPE_KEY`], [`super::NULLS_KEY`],
//! [`super::ENCODING_KEY`]), as `find_arrow` writes them.

use std::str::FromStr;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal32Type, Decimal64Type, Decimal128Type, Decimal256Type,
    DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType,
    Float16Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, TimeUnit};
use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document, Timestamp};

use super::{BSON_TYPE_KEY, ENCODING_KEY, NULLS_KEY};

/// Checks that a column of type `data_type` (field `path`, dotted for struct children,
/// `[]` for list elements) has a BSON form.
///
/// # Errors
/// The first type without one, naming its field.
pub(crate) fn check_type(path: &str, data_type: &DataType) -> Result<(), String> {
    match data_type {
        DataType::Struct(fields) => fields
            .iter()
            .try_for_each(|f| check_type(&format!("{path}.{}", f.name()), f.data_type())),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::ListView(item)
        | DataType::LargeListView(item) => check_type(&format!("{path}[]"), item.data_type()),
        DataType::Dictionary(_, values) => check_type(path, values),
        DataType::Map(_, _)
        | DataType::Union(_, _)
        | DataType::Interval(_)
        | DataType::RunEndEncoded(_, _) => Err(format!(
            "field '{path}' has Arrow type {data_type}, which has no BSON form"
        )),
        _ => Ok(()),
    }
}

/// The binary subtype a `binary:N` mark names.
pub(crate) fn binary_subtype(mark: &str) -> Option<BinarySubtype> {
    let n: u8 = mark.strip_prefix("binary:")?.parse().ok()?;
    Some(BinarySubtype::from(n))
}

/// One column (or child, or list element) read as BSON values.
pub(crate) struct Column<'a> {
    path: String,
    array: &'a dyn Array,
    /// The column's nulls, as Arrow's logical nulls (those of a `Null` array and of a
    /// dictionary's values included).
    nulls: Option<NullBuffer>,
    /// A null is BSON null (not a missing field).
    null_is_bson: bool,
    read: Read<'a>,
}

/// How a column's values are read.
enum Read<'a> {
    Null,
    Double(Box<dyn Fn(usize) -> f64 + 'a>),
    Int32(Box<dyn Fn(usize) -> i32 + 'a>),
    Int64(Box<dyn Fn(usize) -> Option<i64> + 'a>),
    Bool,
    Str(Box<dyn Fn(usize) -> &'a str + 'a>),
    Json(Box<dyn Fn(usize) -> &'a str + 'a>),
    Date(Box<dyn Fn(usize) -> i64 + 'a>),
    ObjectId,
    Decimal128,
    DecimalText,
    Binary(BinarySubtype),
    Timestamp,
    TimestampBits,
    Struct(Vec<(&'a str, Column<'a>)>),
    List(Box<Column<'a>>),
    Dictionary(Vec<usize>, Box<Column<'a>>),
}

impl<'a> Column<'a> {
    /// Reads `array`, the column of `field` (named `path` in errors); its type must have
    /// passed [`check_type`] (one that has not reads as nulls).
    pub(crate) fn new(field: &'a Field, array: &'a dyn Array, path: &str) -> Self {
        let metadata = field.metadata();
        let bson_type = metadata.get(BSON_TYPE_KEY).map(String::as_str);
        let json = metadata.get(ENCODING_KEY).map(String::as_str) == Some("json");
        let read = Self::read(field.data_type(), array, path, bson_type, json);
        Column {
            path: path.to_owned(),
            array,
            nulls: array.logical_nulls(),
            null_is_bson: metadata.contains_key(NULLS_KEY),
            read,
        }
    }

    fn read(
        data_type: &'a DataType,
        array: &'a dyn Array,
        path: &str,
        bson_type: Option<&str>,
        json: bool,
    ) -> Read<'a> {
        macro_rules! prim {
            ($variant:ident, $t:ty, $f:expr) => {{
                let a = array.as_primitive::<$t>();
                Read::$variant(Box::new(move |r| $f(a.value(r))))
            }};
        }
        let floor = |v: i64, per_ms: i64| v.div_euclid(per_ms);
        match data_type {
            DataType::Float64 => prim!(Double, Float64Type, |v| v),
            DataType::Float32 => prim!(Double, Float32Type, f64::from),
            DataType::Float16 => prim!(Double, Float16Type, |v: half::f16| v.to_f64()),
            DataType::Int8 => prim!(Int32, Int8Type, i32::from),
            DataType::Int16 => prim!(Int32, Int16Type, i32::from),
            DataType::Int32 => prim!(Int32, Int32Type, |v| v),
            DataType::UInt8 => prim!(Int32, UInt8Type, i32::from),
            DataType::UInt16 => prim!(Int32, UInt16Type, i32::from),
            DataType::Int64 => prim!(Int64, Int64Type, Some),
            DataType::UInt32 => prim!(Int64, UInt32Type, |v| Some(i64::from(v))),
            DataType::UInt64 if bson_type == Some("timestamp") => Read::TimestampBits,
            DataType::UInt64 => prim!(Int64, UInt64Type, |v| i64::try_from(v).ok()),
            DataType::Time32(TimeUnit::Second) => {
                prim!(Int64, Time32SecondType, |v| Some(i64::from(v)))
            }
            DataType::Time32(_) => prim!(Int64, Time32MillisecondType, |v| Some(i64::from(v))),
            DataType::Time64(TimeUnit::Microsecond) => prim!(Int64, Time64MicrosecondType, Some),
            DataType::Time64(_) => prim!(Int64, Time64NanosecondType, Some),
            DataType::Duration(TimeUnit::Second) => prim!(Int64, DurationSecondType, Some),
            DataType::Duration(TimeUnit::Millisecond) => {
                prim!(Int64, DurationMillisecondType, Some)
            }
            DataType::Duration(TimeUnit::Microsecond) => {
                prim!(Int64, DurationMicrosecondType, Some)
            }
            DataType::Duration(TimeUnit::Nanosecond) => {
                prim!(Int64, DurationNanosecondType, Some)
            }
            DataType::Boolean => Read::Bool,
            DataType::Utf8 if json => {
                let a = array.as_string::<i32>();
                Read::Json(Box::new(move |r| a.value(r)))
            }
            DataType::Utf8 => {
                let a = array.as_string::<i32>();
                Read::Str(Box::new(move |r| a.value(r)))
            }
            DataType::LargeUtf8 => {
                let a = array.as_string::<i64>();
                Read::Str(Box::new(move |r| a.value(r)))
            }
            DataType::Utf8View => {
                let a = array.as_string_view();
                Read::Str(Box::new(move |r| a.value(r)))
            }
            DataType::Timestamp(TimeUnit::Second, _) => {
                prim!(Date, TimestampSecondType, |v: i64| v.saturating_mul(1000))
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                prim!(Date, TimestampMillisecondType, |v| v)
            }
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                prim!(Date, TimestampMicrosecondType, |v| floor(v, 1000))
            }
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                prim!(Date, TimestampNanosecondType, |v| floor(v, 1_000_000))
            }
            DataType::Date64 => prim!(Date, Date64Type, |v| v),
            DataType::Date32 => prim!(Date, Date32Type, |v| i64::from(v) * 86_400_000),
            DataType::FixedSizeBinary(12) if bson_type == Some("objectId") => Read::ObjectId,
            DataType::FixedSizeBinary(16) if bson_type == Some("decimal128") => Read::Decimal128,
            DataType::Decimal32(_, _)
            | DataType::Decimal64(_, _)
            | DataType::Decimal128(_, _)
            | DataType::Decimal256(_, _) => Read::DecimalText,
            DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_) => Read::Binary(
                bson_type
                    .and_then(binary_subtype)
                    .unwrap_or(BinarySubtype::Generic),
            ),
            DataType::Struct(_) if bson_type == Some("timestamp") => Read::Timestamp,
            DataType::Struct(fields) => {
                let a = array.as_struct();
                Read::Struct(
                    fields
                        .iter()
                        .zip(a.columns())
                        .map(|(f, c)| {
                            let child = format!("{path}.{}", f.name());
                            (f.name().as_str(), Column::new(f, c.as_ref(), &child))
                        })
                        .collect(),
                )
            }
            DataType::List(item) => {
                let a = array.as_list::<i32>();
                Read::List(Box::new(Column::element(item, a.values().as_ref(), path)))
            }
            DataType::LargeList(item) => {
                let a = array.as_list::<i64>();
                Read::List(Box::new(Column::element(item, a.values().as_ref(), path)))
            }
            DataType::FixedSizeList(item, _) => {
                let a = array.as_fixed_size_list();
                Read::List(Box::new(Column::element(item, a.values().as_ref(), path)))
            }
            DataType::ListView(item) => {
                let a = array.as_list_view::<i32>();
                Read::List(Box::new(Column::element(item, a.values().as_ref(), path)))
            }
            DataType::LargeListView(item) => {
                let a = array.as_list_view::<i64>();
                Read::List(Box::new(Column::element(item, a.values().as_ref(), path)))
            }
            DataType::Dictionary(_, _) => {
                // The values are read with the dictionary field's marks; a null among them
                // is read as the dictionary column's null (its logical nulls hold both).
                let d = array.as_any_dictionary();
                let values = d.values().as_ref();
                let values = Column {
                    path: path.to_owned(),
                    array: values,
                    nulls: values.logical_nulls(),
                    null_is_bson: false,
                    read: Self::read(values.data_type(), values, path, bson_type, json),
                };
                // (A dictionary without values has only null keys.)
                let keys = if values.array.is_empty() {
                    Vec::new()
                } else {
                    d.normalized_keys()
                };
                Read::Dictionary(keys, Box::new(values))
            }
            _ => Read::Null,
        }
    }

    /// The column of a list's elements: a null element is BSON null.
    fn element(item: &'a Field, values: &'a dyn Array, path: &str) -> Self {
        let mut column = Column::new(item, values, &format!("{path}[]"));
        column.null_is_bson = true;
        column
    }

    /// Whether row `row` is null.
    pub(crate) fn is_null(&self, row: usize) -> bool {
        matches!(self.read, Read::Null) || self.nulls.as_ref().is_some_and(|n| n.is_null(row))
    }

    /// The value at `row`: `None` for a null that is a missing field.
    ///
    /// # Errors
    /// A value with no BSON form (a `UInt64` past the int64 range, a decimal of more than
    /// 34 digits, a JSON text that is not Extended JSON), naming the field.
    pub(crate) fn value(&self, row: usize) -> Result<Option<Bson>, String> {
        if self.is_null(row) {
            return Ok(self.null_is_bson.then_some(Bson::Null));
        }
        Ok(Some(match &self.read {
            Read::Null => Bson::Null,
            Read::Double(f) => Bson::Double(f(row)),
            Read::Int32(f) => Bson::Int32(f(row)),
            Read::Int64(f) => Bson::Int64(f(row).ok_or_else(|| {
                format!(
                    "'{}' holds an unsigned integer past the int64 range",
                    self.path
                )
            })?),
            Read::Bool => Bson::Boolean(self.array.as_boolean().value(row)),
            Read::Str(f) => Bson::String(f(row).to_owned()),
            Read::Json(f) => {
                let json: serde_json::Value =
                    serde_json::from_str(f(row)).map_err(|_| self.bad("Extended JSON"))?;
                Bson::try_from(json).map_err(|_| self.bad("Extended JSON"))?
            }
            Read::Date(f) => Bson::DateTime(DateTime::from_millis(f(row))),
            Read::ObjectId => {
                let bytes = self.array.as_fixed_size_binary().value(row);
                let bytes: [u8; 12] = bytes.try_into().map_err(|_| self.bad("objectId"))?;
                Bson::ObjectId(ObjectId::from_bytes(bytes))
            }
            Read::Decimal128 => {
                let bytes = self.array.as_fixed_size_binary().value(row);
                let bytes: [u8; 16] = bytes.try_into().map_err(|_| self.bad("decimal128"))?;
                Bson::Decimal128(Decimal128::from_bytes(bytes))
            }
            Read::DecimalText => {
                let text = decimal_text(self.array, row);
                Bson::Decimal128(Decimal128::from_str(&text).map_err(|_| {
                    format!(
                        "'{}' holds the decimal {text}, which a Decimal128 cannot hold",
                        self.path
                    )
                })?)
            }
            Read::Binary(subtype) => Bson::Binary(Binary {
                subtype: *subtype,
                bytes: binary_bytes(self.array, row).to_vec(),
            }),
            Read::TimestampBits => {
                let bits = self.array.as_primitive::<UInt64Type>().value(row);
                Bson::Timestamp(Timestamp {
                    time: u32::try_from(bits >> 32).unwrap_or(u32::MAX),
                    increment: u32::try_from(bits & u64::from(u32::MAX)).unwrap_or(u32::MAX),
                })
            }
            Read::Timestamp => {
                let s = self.array.as_struct();
                let part = |name: &str| {
                    s.column_by_name(name)
                        .and_then(|c| c.as_primitive_opt::<UInt32Type>())
                        .map(|c| c.value(row))
                        .ok_or_else(|| self.bad("timestamp"))
                };
                Bson::Timestamp(Timestamp {
                    time: part("t")?,
                    increment: part("i")?,
                })
            }
            Read::Struct(children) => {
                let mut doc = Document::new();
                for (name, child) in children {
                    if let Some(v) = child.value(row)? {
                        doc.insert(*name, v);
                    }
                }
                Bson::Document(doc)
            }
            Read::List(element) => {
                let range = list_range(self.array, row);
                Bson::Array(
                    range
                        .map(|i| element.value(i).map(|v| v.unwrap_or(Bson::Null)))
                        .collect::<Result<_, _>>()?,
                )
            }
            Read::Dictionary(keys, values) => {
                let Some(&key) = keys.get(row) else {
                    return Ok(self.null_is_bson.then_some(Bson::Null));
                };
                match values.value(key)? {
                    Some(v) => v,
                    None => return Ok(self.null_is_bson.then_some(Bson::Null)),
                }
            }
        }))
    }

    fn bad(&self, what: &str) -> String {
        format!(
            "'{}' holds a value that is not a valid {what} value",
            self.path
        )
    }
}

/// The decimal text of row `row` of a decimal column (any width).
fn decimal_text(array: &dyn Array, row: usize) -> String {
    match array.data_type() {
        DataType::Decimal32(_, _) => array.as_primitive::<Decimal32Type>().value_as_string(row),
        DataType::Decimal64(_, _) => array.as_primitive::<Decimal64Type>().value_as_string(row),
        DataType::Decimal256(_, _) => array.as_primitive::<Decimal256Type>().value_as_string(row),
        _ => array.as_primitive::<Decimal128Type>().value_as_string(row),
    }
}

/// The bytes of a binary value (any binary type).
fn binary_bytes(array: &dyn Array, row: usize) -> &[u8] {
    match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().value(row),
        DataType::LargeBinary => array.as_binary::<i64>().value(row),
        DataType::BinaryView => array.as_binary_view().value(row),
        _ => array.as_fixed_size_binary().value(row),
    }
}

/// The element indices of list `row` (any list type).
fn list_range(array: &dyn Array, row: usize) -> std::ops::Range<usize> {
    let span = |start: usize, len: usize| start..start + len;
    match array.data_type() {
        DataType::List(_) => {
            let o = array.as_list::<i32>().value_offsets();
            usize::try_from(o[row]).unwrap_or(0)..usize::try_from(o[row + 1]).unwrap_or(0)
        }
        DataType::LargeList(_) => {
            let o = array.as_list::<i64>().value_offsets();
            usize::try_from(o[row]).unwrap_or(0)..usize::try_from(o[row + 1]).unwrap_or(0)
        }
        DataType::ListView(_) => {
            let a = array.as_list_view::<i32>();
            span(
                usize::try_from(a.value_offsets()[row]).unwrap_or(0),
                usize::try_from(a.value_sizes()[row]).unwrap_or(0),
            )
        }
        DataType::LargeListView(_) => {
            let a = array.as_list_view::<i64>();
            span(
                usize::try_from(a.value_offsets()[row]).unwrap_or(0),
                usize::try_from(a.value_sizes()[row]).unwrap_or(0),
            )
        }
        _ => {
            let a = array.as_fixed_size_list();
            let n = usize::try_from(a.value_length()).unwrap_or(0);
            span(usize::try_from(a.value_offset(row)).unwrap_or(0), n)
        }
    }
}

/// The rows of `batch` as documents, each column a field (its null rows left out, or BSON
/// null where marked `tscoll.nulls`), by the mapping of this module.
///
/// # Errors
/// `BadValue`: a column of a type with no BSON form (named), or the first value with none
/// (its row and field).
pub(crate) fn documents(batch: &RecordBatch) -> crate::Result<Vec<Document>> {
    let schema = batch.schema_ref();
    for f in schema.fields() {
        check_type(f.name(), f.data_type()).map_err(bad_value)?;
    }
    let columns: Vec<(&str, Column<'_>)> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, a)| (f.name().as_str(), Column::new(f, a.as_ref(), f.name())))
        .collect();
    (0..batch.num_rows())
        .map(|row| {
            let mut doc = Document::new();
            for (name, column) in &columns {
                let value = column
                    .value(row)
                    .map_err(|e| bad_value(format!("row {row}: {e}")))?;
                if let Some(v) = value {
                    doc.insert(*name, v);
                }
            }
            Ok(doc)
        })
        .collect()
}

fn bad_value(message: String) -> crate::Error {
    crate::Error::Rejected {
        code: crate::ErrorCode::BadValue,
        message,
    }
}
