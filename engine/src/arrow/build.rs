//! The second pass of documents → Arrow ([`BatchBuilder`]): documents appended, value by
//! value, to the column builders of a schema [`super::DocumentShape`] found, and taken out
//! as record batches (docs/arrow.md, "Documents → Arrow").

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, FixedSizeBinaryBuilder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder, TimestampMillisecondBuilder, UInt32Builder,
};
use arrow_array::{ArrayRef, ListArray, NullArray, RecordBatch, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, SchemaRef};
use bson::{Bson, Document};

use super::json::json_text;
use super::shape::{join, timestamp_type};
use super::{BSON_TYPE_KEY, ENCODING_KEY};
use crate::error::{Error, ErrorCode, Result};

/// Fills record batches of one schema (made by [`super::DocumentShape::schema`]) with
/// documents: each document is a row, a field it lacks a null.
///
/// ```
/// use bson::doc;
/// use tscoll_engine::arrow::{BatchBuilder, DocumentShape};
///
/// let docs = [doc! { "a": 1 }, doc! { "b": "x" }];
/// let mut shape = DocumentShape::new();
/// docs.iter().for_each(|d| shape.add(d));
/// let mut builder = BatchBuilder::new(shape.schema());
/// for d in &docs {
///     builder.push(d)?;
/// }
/// let batch = builder.finish()?;
/// assert_eq!((batch.num_rows(), batch.num_columns()), (2, 2));
/// assert_eq!(builder.rows(), 0);
/// # Ok::<(), tscoll_engine::Error>(())
/// ```
pub struct BatchBuilder {
    schema: SchemaRef,
    columns: Vec<Builder>,
    rows: usize,
}

impl std::fmt::Debug for BatchBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchBuilder")
            .field("schema", &self.schema)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl BatchBuilder {
    /// A builder of batches of `schema`: a schema [`super::DocumentShape::schema`] made
    /// (another schema's columns of types it would not make are filled with nulls only).
    #[must_use]
    pub fn new(schema: SchemaRef) -> Self {
        let columns = schema.fields().iter().map(|f| Builder::new(f)).collect();
        BatchBuilder {
            schema,
            columns,
            rows: 0,
        }
    }

    /// The schema of the batches.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Rows appended since the last batch was taken.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Appends one document as a row.
    ///
    /// # Errors
    /// [`Error::Rejected`] (`TypeMismatch`) naming the field (dotted path, `[]` for array
    /// elements) when the document has a field or a value of a type the schema does not
    /// hold (it is not one of the documents the schema was found from); the row is then
    /// only partly appended, and the builder must not be used further.
    pub fn push(&mut self, doc: &Document) -> Result<()> {
        append_fields(self.schema.fields(), &mut self.columns, doc, "")?;
        self.rows += 1;
        Ok(())
    }

    /// The rows appended since the last call as a record batch (of no row when none was).
    ///
    /// # Errors
    /// [`Error::Rejected`] (`BadValue`) when Arrow refuses the columns: more than 2 GiB of
    /// strings or binary data in one column of the batch.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let arrays = self
            .columns
            .iter_mut()
            .map(Builder::finish)
            .collect::<Result<Vec<_>>>()?;
        let rows = std::mem::take(&mut self.rows);
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
        RecordBatch::try_new_with_options(SchemaRef::clone(&self.schema), arrays, &options)
            .map_err(|e| Error::rejected(ErrorCode::BadValue, format!("arrow: {e}")))
    }
}

/// Appends `doc`'s fields to the builders of `fields`; a field it lacks gets a null.
fn append_fields(
    fields: &Fields,
    columns: &mut [Builder],
    doc: &Document,
    path: &str,
) -> Result<()> {
    let mut matched = 0;
    for (field, column) in fields.iter().zip(columns.iter_mut()) {
        let value = doc.get(field.name());
        matched += usize::from(value.is_some());
        column.append(value, &join(path, field.name()))?;
    }
    if matched < doc.len() {
        let extra = doc
            .keys()
            .find(|k| fields.find(k).is_none())
            .map_or("?", String::as_str);
        return Err(not_held(&join(path, extra)));
    }
    Ok(())
}

/// The error of a value the schema does not hold.
fn not_held(path: &str) -> Error {
    Error::rejected(
        ErrorCode::TypeMismatch,
        format!("field '{path}' has a value the schema does not hold"),
    )
}

/// Checks that `more` bytes fit after the `held` bytes of a string or binary column (its
/// offsets are `i32`).
fn room(held: usize, more: usize, path: &str) -> Result<()> {
    if held.saturating_add(more) > i32::MAX as usize {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!(
                "field '{path}': more than 2 GiB of strings or bytes in one batch; use smaller batches"
            ),
        ));
    }
    Ok(())
}

/// The builder of one column.
enum Builder {
    Null(usize),
    Double(Float64Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    /// Every value as its relaxed Extended JSON text.
    Json(StringBuilder),
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
    /// The builder of a field of a schema [`super::DocumentShape::schema`] makes.
    fn new(field: &Field) -> Self {
        let bson_type = field.metadata().get(BSON_TYPE_KEY).map(String::as_str);
        let json = field.metadata().get(ENCODING_KEY).map(String::as_str) == Some("json");
        match (field.data_type(), bson_type) {
            (DataType::Utf8, _) if json => Builder::Json(StringBuilder::new()),
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
            (DataType::FixedSizeBinary(12), _) => {
                Builder::ObjectId(FixedSizeBinaryBuilder::new(12))
            }
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

    /// Appends one value (`None` or BSON null: a null) of the field at `path`.
    fn append(&mut self, value: Option<&Bson>, path: &str) -> Result<()> {
        let value = value.filter(|v| !matches!(v, Bson::Null));
        match (self, value) {
            (Builder::Null(n), None) => *n += 1,
            (Builder::Double(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Double(x)) => Some(*x),
                Some(Bson::Int32(x)) => Some(f64::from(*x)),
                #[expect(clippy::cast_precision_loss, reason = "the documented widening")]
                Some(Bson::Int64(x)) => Some(*x as f64),
                Some(_) => return Err(not_held(path)),
            }),
            (Builder::Int32(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Int32(x)) => Some(*x),
                Some(_) => return Err(not_held(path)),
            }),
            (Builder::Int64(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Int64(x)) => Some(*x),
                Some(Bson::Int32(x)) => Some(i64::from(*x)),
                Some(_) => return Err(not_held(path)),
            }),
            (Builder::Bool(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::Boolean(x)) => Some(*x),
                Some(_) => return Err(not_held(path)),
            }),
            (Builder::Str(b), v) => match v {
                None => b.append_null(),
                Some(Bson::String(s)) => {
                    room(b.values_slice().len(), s.len(), path)?;
                    b.append_value(s);
                }
                Some(_) => return Err(not_held(path)),
            },
            (Builder::Json(b), v) => match v {
                None => b.append_null(),
                Some(v) => {
                    let text = json_text(v);
                    room(b.values_slice().len(), text.len(), path)?;
                    b.append_value(text);
                }
            },
            (Builder::Date(b), v) => b.append_option(match v {
                None => None,
                Some(Bson::DateTime(d)) => Some(d.timestamp_millis()),
                Some(_) => return Err(not_held(path)),
            }),
            (Builder::ObjectId(b), v) => match v {
                None => b.append_null(),
                Some(Bson::ObjectId(id)) => b.append_value(id.bytes()).map_err(|e| {
                    Error::rejected(ErrorCode::BadValue, format!("field '{path}': {e}"))
                })?,
                Some(_) => return Err(not_held(path)),
            },
            (Builder::Decimal128(b), v) => match v {
                None => b.append_null(),
                Some(Bson::Decimal128(d)) => b.append_value(d.bytes()).map_err(|e| {
                    Error::rejected(ErrorCode::BadValue, format!("field '{path}': {e}"))
                })?,
                Some(_) => return Err(not_held(path)),
            },
            (Builder::Binary(b), v) => match v {
                None => b.append_null(),
                Some(Bson::Binary(bin)) => {
                    room(b.values_slice().len(), bin.bytes.len(), path)?;
                    b.append_value(&bin.bytes);
                }
                Some(_) => return Err(not_held(path)),
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
                Some(_) => return Err(not_held(path)),
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
                Some(_) => return Err(not_held(path)),
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
                    let end = i32::try_from(items.len())
                        .ok()
                        .and_then(|n| offsets.last().unwrap_or(&0).checked_add(n))
                        .ok_or_else(|| {
                            Error::rejected(
                                ErrorCode::BadValue,
                                format!(
                                    "field '{path}': more than 2^31 array elements in one batch"
                                ),
                            )
                        })?;
                    offsets.push(end);
                    nulls.append_non_null();
                }
                Some(_) => return Err(not_held(path)),
            },
            (Builder::Null(_), Some(_)) => return Err(not_held(path)),
        }
        Ok(())
    }

    /// The column of the values appended since the last call.
    fn finish(&mut self) -> Result<ArrayRef> {
        let arrow = |e: arrow_schema::ArrowError| {
            Error::rejected(ErrorCode::BadValue, format!("arrow: {e}"))
        };
        Ok(match self {
            Builder::Null(n) => Arc::new(NullArray::new(std::mem::take(n))),
            Builder::Double(b) => Arc::new(b.finish()),
            Builder::Int32(b) => Arc::new(b.finish()),
            Builder::Int64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Str(b) | Builder::Json(b) => Arc::new(b.finish()),
            Builder::Date(b) => Arc::new(b.finish()),
            Builder::ObjectId(b) | Builder::Decimal128(b) => Arc::new(b.finish()),
            Builder::Binary(b) => Arc::new(b.finish()),
            Builder::Timestamp { t, i, nulls } => {
                let DataType::Struct(fields) = timestamp_type() else {
                    return Err(arrow(arrow_schema::ArrowError::SchemaError(
                        "timestamp type".into(),
                    )));
                };
                let children: Vec<ArrayRef> = vec![Arc::new(t.finish()), Arc::new(i.finish())];
                Arc::new(StructArray::try_new(fields, children, nulls.finish()).map_err(arrow)?)
            }
            Builder::Struct {
                fields,
                children,
                nulls,
            } => {
                let arrays = children
                    .iter_mut()
                    .map(Builder::finish)
                    .collect::<Result<Vec<_>>>()?;
                let len = nulls.len();
                let nulls = nulls.finish();
                if fields.is_empty() {
                    Arc::new(StructArray::new_empty_fields(len, nulls))
                } else {
                    Arc::new(StructArray::try_new(fields.clone(), arrays, nulls).map_err(arrow)?)
                }
            }
            Builder::List {
                item,
                offsets,
                element,
                nulls,
            } => {
                let ends = std::mem::replace(offsets, vec![0]);
                let values = element.finish()?;
                Arc::new(
                    ListArray::try_new(
                        item.clone(),
                        OffsetBuffer::new(ScalarBuffer::from(ends)),
                        values,
                        nulls.finish(),
                    )
                    .map_err(arrow)?,
                )
            }
        })
    }
}
