//! Measurements written as Parquet (arrow-rs' `parquet` crate), row group by row group, in
//! the schema a first pass found ([`super::shape`]).
//!
//! BSON types and the Arrow types they are written as (read back by
//! [`crate::input::parquet`] to the same BSON values):
//!
//! | BSON | Arrow (Parquet) | field metadata `tscoll.bson_type` |
//! |---|---|---|
//! | double | `Float64` | |
//! | int (int32) | `Int32` | |
//! | long (int64) | `Int64` | |
//! | bool | `Boolean` | |
//! | string | `Utf8` | |
//! | date | `Timestamp(ms, "UTC")` | |
//! | objectId | `FixedSizeBinary(12)` | `objectId` |
//! | binData, subtype 0 | `Binary` | |
//! | binData, subtype N | `Binary` | `binary:N` |
//! | decimal (Decimal128) | `FixedSizeBinary(16)`, the IEEE 754-2008 BID bytes | `decimal128` |
//! | timestamp | `Struct{t: UInt32, i: UInt32}` | `timestamp` |
//! | object (embedded document) | `Struct` of its fields | |
//! | array | `List` of its elements' type | |
//! | null | a null; metadata `tscoll.nulls: null` | |
//!
//! A missing field is a null. A null is read back as BSON null when the column carries
//! `tscoll.nulls` (written when no document lacks the field) and as a missing field
//! otherwise. A field holding numbers of several types is widened (int and long to long; int
//! or long with double to double) with a note on stderr. Regular expressions, JavaScript,
//! symbols, DBPointers, undefined, MinKey and MaxKey, a field holding values of two other
//! types and a field of only empty documents have no Parquet form: the export fails naming
//! the field, before anything is written.

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, FixedSizeBinaryBuilder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder, TimestampMillisecondBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, ListArray, NullArray, RecordBatch, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, SchemaRef};
use bson::{Bson, Document};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::shape::{BSON_TYPE_KEY, join};

/// Measurements buffered before they are written as one row group.
pub(crate) const ROWS_PER_GROUP: usize = 64 * 1024;

/// Writes documents of one schema as a Parquet file.
pub(crate) struct ParquetOut<W: Write + Send> {
    writer: ArrowWriter<W>,
    schema: SchemaRef,
    columns: Vec<Builder>,
    rows: usize,
}

impl<W: Write + Send> ParquetOut<W> {
    /// A Parquet file of `schema` (zstd-compressed pages) on `out`.
    ///
    /// # Errors
    /// The schema has no Parquet form, or the header cannot be written.
    pub(crate) fn new(out: W, schema: SchemaRef) -> Result<Self, String> {
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
            .map_err(|e| format!("parquet: {e}"))?;
        let columns = schema.fields().iter().map(|f| Builder::new(f)).collect();
        Ok(Self {
            writer,
            schema,
            columns,
            rows: 0,
        })
    }

    /// Adds one document (writing a row group when enough are buffered).
    ///
    /// # Errors
    /// The document does not fit the schema (the collection changed since the first pass),
    /// or writing fails.
    pub(crate) fn push(&mut self, doc: &Document) -> Result<(), String> {
        append_fields(self.schema.fields(), &mut self.columns, doc, "")?;
        self.rows += 1;
        if self.rows == ROWS_PER_GROUP {
            self.write_batch()?;
        }
        Ok(())
    }

    fn write_batch(&mut self) -> Result<(), String> {
        let arrays = self.columns.iter_mut().map(Builder::finish).collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays)
            .map_err(|e| format!("parquet: {e}"))?;
        self.rows = 0;
        self.writer
            .write(&batch)
            .and_then(|()| self.writer.flush())
            .map_err(|e| format!("parquet: {e}"))
    }

    /// Writes the buffered documents and the file's footer; returns the output.
    ///
    /// # Errors
    /// Writing fails.
    pub(crate) fn finish(mut self) -> Result<W, String> {
        if self.rows > 0 {
            self.write_batch()?;
        }
        self.writer
            .into_inner()
            .map_err(|e| format!("parquet: {e}"))
    }
}

/// Appends `doc`'s fields to the builders of `fields`; a field it lacks gets a null.
fn append_fields(
    fields: &Fields,
    columns: &mut [Builder],
    doc: &Document,
    path: &str,
) -> Result<(), String> {
    let mut matched = 0;
    for (field, column) in fields.iter().zip(columns.iter_mut()) {
        let value = doc.get(field.name());
        matched += usize::from(value.is_some());
        column.append(value, field.name())?;
    }
    if matched < doc.len() {
        let extra = doc
            .keys()
            .find(|k| fields.find(k).is_none())
            .map_or("?", String::as_str);
        return Err(changed(&join(path, extra)));
    }
    Ok(())
}

/// The error of a value the first pass did not see.
fn changed(path: &str) -> String {
    format!(
        "field '{path}' has a value the schema (found in a first pass) does not hold: the \
         collection changed during the export; run it again"
    )
}

/// The builder of one column.
enum Builder {
    Null(usize),
    Double(Float64Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    Date(TimestampMillisecondBuilder),
    ObjectId(FixedSizeBinaryBuilder),
    Decimal128(FixedSizeBinaryBuilder),
    Binary(BinaryBuilder),
    Timestamp {
        t: UInt32Builder,
        i: UInt32Builder,
        nulls: NullBufferBuilder,
    },
    Struct {
        fields: Fields,
        children: Vec<Builder>,
        nulls: NullBufferBuilder,
    },
    List {
        item: FieldRef,
        offsets: Vec<i32>,
        element: Box<Builder>,
        nulls: NullBufferBuilder,
    },
}

impl Builder {
    /// The builder of a field of the schema [`super::shape::DocShape::schema`] makes.
    fn new(field: &Field) -> Self {
        let bson_type = field.metadata().get(BSON_TYPE_KEY).map(String::as_str);
        match (field.data_type(), bson_type) {
            (DataType::Float64, _) => Builder::Double(Float64Builder::new()),
            (DataType::Int32, _) => Builder::Int32(Int32Builder::new()),
            (DataType::Int64, _) => Builder::Int64(Int64Builder::new()),
            (DataType::Boolean, _) => Builder::Bool(BooleanBuilder::new()),
            (DataType::Utf8, _) => Builder::Str(StringBuilder::new()),
            (DataType::Timestamp(_, tz), _) => {
                Builder::Date(TimestampMillisecondBuilder::new().with_timezone_opt(tz.clone()))
            }
            (DataType::FixedSizeBinary(16), _) => {
                Builder::Decimal128(FixedSizeBinaryBuilder::new(16))
            }
            (DataType::FixedSizeBinary(_), _) => Builder::ObjectId(FixedSizeBinaryBuilder::new(12)),
            (DataType::Binary, _) => Builder::Binary(BinaryBuilder::new()),
            (DataType::Struct(_), Some("timestamp")) => Builder::Timestamp {
                t: UInt32Builder::new(),
                i: UInt32Builder::new(),
                nulls: NullBufferBuilder::new(0),
            },
            (DataType::Struct(fields), _) => Builder::Struct {
                fields: fields.clone(),
                children: fields.iter().map(|f| Builder::new(f)).collect(),
                nulls: NullBufferBuilder::new(0),
            },
            (DataType::List(item), _) => Builder::List {
                item: item.clone(),
                offsets: vec![0],
                element: Box::new(Builder::new(item)),
                nulls: NullBufferBuilder::new(0),
            },
            _ => Builder::Null(0),
        }
    }

    /// Appends one value (`None` or BSON null: a null).
    fn append(&mut self, value: Option<&Bson>, path: &str) -> Result<(), String> {
        let value = value.filter(|v| !matches!(v, Bson::Null));
        match (self, value) {
            (Builder::Null(n), None) => *n += 1,
            (Builder::Double(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Double(x)) => Some(*x),
                Some(Bson::Int32(x)) => Some(f64::from(*x)),
                #[allow(clippy::cast_precision_loss)] // the documented widening
                Some(Bson::Int64(x)) => Some(*x as f64),
                Some(_) => return Err(changed(path)),
            }),
            (Builder::Int32(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Int32(x)) => Some(*x),
                Some(_) => return Err(changed(path)),
            }),
            (Builder::Int64(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Int64(x)) => Some(*x),
                Some(Bson::Int32(x)) => Some(i64::from(*x)),
                Some(_) => return Err(changed(path)),
            }),
            (Builder::Bool(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Boolean(x)) => Some(*x),
                Some(_) => return Err(changed(path)),
            }),
            (Builder::Str(b), v) => match v {
                None => b.append_null(),
                Some(Bson::String(s)) => b.append_value(s),
                Some(_) => return Err(changed(path)),
            },
            (Builder::Date(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                Some(_) => return Err(changed(path)),
            }),
            (Builder::ObjectId(b), v) => match v {
                None => b.append_null(),
                Some(Bson::ObjectId(id)) => {
                    b.append_value(id.bytes()).map_err(|e| e.to_string())?
                }
                Some(_) => return Err(changed(path)),
            },
            (Builder::Decimal128(b), v) => match v {
                None => b.append_null(),
                Some(Bson::Decimal128(d)) => {
                    b.append_value(d.bytes()).map_err(|e| e.to_string())?;
                }
                Some(_) => return Err(changed(path)),
            },
            (Builder::Binary(b), v) => match v {
                None => b.append_null(),
                Some(Bson::Binary(bin)) => b.append_value(&bin.bytes),
                Some(_) => return Err(changed(path)),
            },
            (Builder::Timestamp { t, i, nulls }, v) => match v {
                None => {
                    t.append_value(0);
                    i.append_value(0);
                    nulls.append_null();
                }
                Some(Bson::Timestamp(ts)) => {
                    t.append_value(ts.time);
                    i.append_value(ts.increment);
                    nulls.append_non_null();
                }
                Some(_) => return Err(changed(path)),
            },
            (
                Builder::Struct {
                    fields,
                    children,
                    nulls,
                },
                v,
            ) => match v {
                None => {
                    for (child, field) in children.iter_mut().zip(fields.iter()) {
                        child.append(None, &join(path, field.name()))?;
                    }
                    nulls.append_null();
                }
                Some(Bson::Document(d)) => {
                    append_fields(fields, children, d, path)?;
                    nulls.append_non_null();
                }
                Some(_) => return Err(changed(path)),
            },
            (
                Builder::List {
                    offsets,
                    element,
                    nulls,
                    ..
                },
                v,
            ) => match v {
                None => {
                    offsets.push(*offsets.last().unwrap_or(&0));
                    nulls.append_null();
                }
                Some(Bson::Array(items)) => {
                    let item_path = format!("{path}[]");
                    for item in items {
                        element.append(Some(item), &item_path)?;
                    }
                    let end = offsets.last().unwrap_or(&0)
                        + i32::try_from(items.len()).map_err(|_| changed(path))?;
                    offsets.push(end);
                    nulls.append_non_null();
                }
                Some(_) => return Err(changed(path)),
            },
            (Builder::Null(_), Some(_)) => return Err(changed(path)),
        }
        Ok(())
    }

    /// The column of the values appended since the last call.
    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Null(n) => Arc::new(NullArray::new(std::mem::take(n))),
            Builder::Double(b) => Arc::new(b.finish()),
            Builder::Int32(b) => Arc::new(b.finish()),
            Builder::Int64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::Date(b) => Arc::new(b.finish()),
            Builder::ObjectId(b) | Builder::Decimal128(b) => Arc::new(b.finish()),
            Builder::Binary(b) => Arc::new(b.finish()),
            Builder::Timestamp { t, i, nulls } => {
                let fields = Fields::from(vec![
                    Field::new("t", DataType::UInt32, false),
                    Field::new("i", DataType::UInt32, false),
                ]);
                let children: Vec<ArrayRef> = vec![Arc::new(t.finish()), Arc::new(i.finish())];
                Arc::new(StructArray::new(fields, children, nulls.finish()))
            }
            Builder::Struct {
                fields,
                children,
                nulls,
            } => {
                let arrays = children.iter_mut().map(Builder::finish).collect();
                Arc::new(StructArray::new(fields.clone(), arrays, nulls.finish()))
            }
            Builder::List {
                item,
                offsets,
                element,
                nulls,
            } => {
                let ends = std::mem::replace(offsets, vec![0]);
                let values = element.finish();
                Arc::new(ListArray::new(
                    item.clone(),
                    OffsetBuffer::new(ScalarBuffer::from(ends)),
                    values,
                    nulls.finish(),
                ))
            }
        }
    }
}
