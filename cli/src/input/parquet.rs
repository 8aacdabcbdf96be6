//! Parquet input (arrow-rs' `parquet` crate): each record batch goes to
//! `Collection::insert_record_batch` when the engine takes its columns as they are, and is
//! read row by row into documents otherwise.
//!
//! Arrow types and the BSON values they become — the reverse of the mapping
//! [`crate::output::parquet`] writes, plus the types other tools write: `Float64`,
//! `Float32` → double; `Int8`, `Int16`, `Int32`, `UInt8`, `UInt16` → int; `Int64`,
//! `UInt32`, `UInt64` → long (a `UInt64` past the long range rejects its row); `Boolean` →
//! bool; `Utf8`, `LargeUtf8`, `Utf8View` → string; `Timestamp` (any unit, floored to ms),
//! `Date64`, `Date32` → date; `FixedSizeBinary(12)` marked `objectId` → ObjectId;
//! `FixedSizeBinary(16)` marked `decimal128` → Decimal128; `Decimal128(p, s)` → Decimal128
//! of the same digits; other binaries → binData (subtype from a `binary:N` mark, else 0);
//! `Struct{t, i}` marked `timestamp` → timestamp; `Struct` → embedded document; `List`,
//! `LargeList`, `FixedSizeList` → array (a null element is BSON null); `Dictionary` → its
//! values' type. A null is a missing field, or BSON null where the column is marked
//! `tscoll.nulls`. Any other type is refused, naming the field, before anything is read.

use std::fs::File;
use std::io;
use std::str::FromStr;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int8Type, Int16Type,
    Int32Type, Int64Type, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, StructArray};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, DateTime, Decimal128, Document, Timestamp};

use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};

use tscoll_engine::arrow::{BSON_TYPE_KEY, NULLS_KEY};

/// Opens Parquet file `path` (`-`: stdin, copied to a temporary file first) for reading in
/// record batches of `batch_size` rows.
///
/// # Errors
/// The file cannot be read, is not Parquet, or has a column with no BSON form (named).
pub(crate) fn open(path: &str, batch_size: usize) -> Result<ParquetRecordBatchReader, String> {
    if path == "-" {
        return open_stream("<stdin>", &mut io::stdin().lock(), batch_size);
    }
    let file = File::open(path).map_err(|e| format!("{path}: {e}"))?;
    open_file(path, file, batch_size)
}

/// The first bytes of every Parquet file.
pub(crate) const MAGIC: &[u8] = b"PAR1";

/// Opens the Parquet file `reader` streams (input `name`: stdin, a decompressed file),
/// copied to a temporary file first (Parquet is read from its end).
///
/// # Errors
/// As [`open`].
pub(crate) fn open_stream(
    name: &str,
    reader: &mut dyn io::Read,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader, String> {
    let mut file = tempfile::tempfile().map_err(|e| format!("{name}: {e}"))?;
    io::copy(reader, &mut file).map_err(|e| format!("{name}: {e}"))?;
    open_file(name, file, batch_size)
}

fn open_file(
    path: &str,
    file: File,
    batch_size: usize,
) -> Result<ParquetRecordBatchReader, String> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| format!("{path}: not a readable Parquet file: {e}"))?;
    check_schema(builder.schema()).map_err(|e| format!("{path}: {e}"))?;
    builder
        .with_batch_size(batch_size.max(1))
        .build()
        .map_err(|e| format!("{path}: {e}"))
}

/// Checks that every column of `schema` has a BSON form.
///
/// # Errors
/// The first field (dotted path) of a type tscoll cannot store.
pub(crate) fn check_schema(schema: &Schema) -> Result<(), String> {
    schema
        .fields()
        .iter()
        .try_for_each(|f| check_type(f.name(), f.data_type()))
}

fn check_type(path: &str, data_type: &DataType) -> Result<(), String> {
    match data_type {
        t if engine_scalar(t) => Ok(()),
        DataType::Null
        | DataType::Utf8View
        | DataType::Date32
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_)
        | DataType::Decimal128(_, _) => Ok(()),
        DataType::Struct(fields) => fields
            .iter()
            .try_for_each(|f| check_type(&format!("{path}.{}", f.name()), f.data_type())),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            check_type(&format!("{path}[]"), item.data_type())
        }
        DataType::Dictionary(_, values) => check_type(path, values),
        other => Err(format!(
            "field '{path}' has Parquet/Arrow type {other}, which has no BSON form"
        )),
    }
}

/// The scalar types `Collection::insert_record_batch` takes (its documentation lists
/// them), read to the same values as [`Rows`] reads them.
fn engine_scalar(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Float64
            | DataType::Float32
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Boolean
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Date64
            | DataType::Timestamp(_, _)
    )
}

/// Whether `Collection::insert_record_batch` takes the columns of `schema` as they are
/// (with the same values this module would give): unmarked columns of its types.
pub(crate) fn engine_takes(schema: &Schema) -> bool {
    fn takes(field: &Field) -> bool {
        let marked = field.metadata().contains_key(BSON_TYPE_KEY)
            || field.metadata().contains_key(NULLS_KEY);
        !marked
            && match field.data_type() {
                DataType::Struct(fields) => fields.iter().all(|f| takes(f)),
                t => engine_scalar(t),
            }
    }
    schema.fields().iter().all(|f| takes(f))
}

/// How the columns of a Parquet input become measurements when they are not named as the
/// collection's fields: the time column to rename, and flat columns to gather into the meta
/// document (`--csv-time-column`, `--csv-meta-columns`, as for CSV).
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    /// The collection's time field, and the input's column of it when named otherwise.
    pub(crate) time: (String, Option<String>),
    /// The collection's meta field, and the columns of its document (none: as they are).
    pub(crate) meta: (Option<String>, Vec<String>),
}

/// A [`Mapping`] resolved against a schema: each batch of the input is reshaped alike.
#[derive(Clone, Debug)]
pub(crate) struct Reshape {
    /// The schema of a reshaped batch.
    schema: Arc<Schema>,
    /// Per column of a reshaped batch: the input column it is, or the meta columns it gathers.
    sources: Vec<Source>,
}

/// Where a column of a reshaped batch comes from.
#[derive(Clone, Debug)]
enum Source {
    Column(usize),
    Meta(Vec<usize>),
}

impl Reshape {
    /// Resolves `mapping` against the columns of `schema`; `None` when it changes nothing.
    ///
    /// # Errors
    /// A named column is not in the schema, is named twice, or meta columns are given for a
    /// collection without a meta field (or alongside a column named as the meta field).
    pub(crate) fn new(schema: &Schema, mapping: &Mapping) -> Result<Option<Reshape>, String> {
        let (time_field, time_column) = &mapping.time;
        let (meta_field, meta_columns) = &mapping.meta;
        let position = |name: &str, option: &str| {
            schema
                .index_of(name)
                .map_err(|_| format!("{option}: no column '{name}' in the Parquet schema"))
        };
        let time = time_column
            .as_deref()
            .filter(|c| c != time_field)
            .map(|c| position(c, "--csv-time-column"))
            .transpose()?;
        if meta_columns.is_empty() && time.is_none() {
            return Ok(None);
        }
        let meta = if meta_columns.is_empty() {
            None
        } else {
            let field = meta_field.as_deref().ok_or(
                "--csv-meta-columns given, but the collection has no meta field".to_owned(),
            )?;
            if !meta_columns.iter().any(|c| c == field) && schema.index_of(field).is_ok() {
                return Err(format!(
                    "--csv-meta-columns: the Parquet input has a column '{field}' (the meta \
                     field) already"
                ));
            }
            let prefix = format!("{field}.");
            let mut columns: Vec<(usize, String)> = Vec::with_capacity(meta_columns.len());
            for name in meta_columns {
                let i = position(name, "--csv-meta-columns")?;
                if columns.iter().any(|(j, _)| *j == i) || Some(i) == time {
                    return Err(format!("--csv-meta-columns: column '{name}' named twice"));
                }
                let key = name.strip_prefix(&prefix).filter(|k| !k.is_empty());
                columns.push((i, key.unwrap_or(name).to_owned()));
            }
            Some((field, columns))
        };
        let first_meta = meta
            .as_ref()
            .and_then(|(_, c)| c.iter().map(|(i, _)| *i).min());
        let mut fields: Vec<Field> = Vec::with_capacity(schema.fields().len());
        let mut sources = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            if let Some((name, columns)) = &meta {
                if Some(i) == first_meta {
                    let children: Vec<Field> = columns
                        .iter()
                        .map(|(j, key)| schema.field(*j).clone().with_name(key.clone()))
                        .collect();
                    fields.push(Field::new(*name, DataType::Struct(children.into()), true));
                    sources.push(Source::Meta(columns.iter().map(|(j, _)| *j).collect()));
                }
                if columns.iter().any(|(j, _)| *j == i) {
                    continue;
                }
            }
            let field = if Some(i) == time {
                field.as_ref().clone().with_name(time_field.clone())
            } else {
                field.as_ref().clone()
            };
            fields.push(field);
            sources.push(Source::Column(i));
        }
        Ok(Some(Reshape {
            schema: Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
            sources,
        }))
    }

    /// `batch` (of the schema this was resolved against) reshaped: the time column renamed,
    /// the meta columns gathered into one struct column. No value is copied.
    ///
    /// # Errors
    /// Arrow refuses the reshaped columns (not expected: their types are the schema's).
    pub(crate) fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch, String> {
        let columns = self
            .schema
            .fields()
            .iter()
            .zip(&self.sources)
            .map(|(field, source)| match (source, field.data_type()) {
                (Source::Column(i), _) => Ok(Arc::clone(batch.column(*i))),
                (Source::Meta(columns), DataType::Struct(children)) => {
                    let arrays = columns
                        .iter()
                        .map(|i| Arc::clone(batch.column(*i)))
                        .collect();
                    let meta = StructArray::try_new(children.clone(), arrays, None)
                        .map_err(|e| e.to_string())?;
                    Ok(Arc::new(meta) as ArrayRef)
                }
                (Source::Meta(_), _) => Err("the meta column is not a struct".to_owned()),
            })
            .collect::<Result<Vec<_>, String>>()?;
        RecordBatch::try_new(Arc::clone(&self.schema), columns).map_err(|e| e.to_string())
    }
}

/// The columns of a batch, ready to read row by row.
pub(crate) struct Rows<'a> {
    columns: Vec<(&'a str, Column<'a>)>,
}

impl<'a> Rows<'a> {
    /// Prepares the columns of `batch` (whose schema passed [`check_schema`]).
    pub(crate) fn new(batch: &'a RecordBatch) -> Self {
        let schema = batch.schema_ref();
        let columns = schema
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, a)| (f.name().as_str(), Column::new(f, a.as_ref(), f.name())))
            .collect();
        Self { columns }
    }

    /// Row `row` as a document (its null fields left out, or null where marked).
    ///
    /// # Errors
    /// A value with no BSON form (a `UInt64` past the long range), naming the field.
    pub(crate) fn document(&self, row: usize) -> Result<Document, String> {
        let mut doc = Document::new();
        for (name, column) in &self.columns {
            if let Some(v) = column.value(row)? {
                doc.insert(*name, v);
            }
        }
        Ok(doc)
    }
}

/// One column (or child) read as BSON values.
struct Column<'a> {
    path: String,
    array: &'a dyn Array,
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
    Date(Box<dyn Fn(usize) -> i64 + 'a>),
    ObjectId,
    Decimal128,
    DecimalText,
    Binary(BinarySubtype),
    Timestamp,
    Struct(Vec<(&'a str, Column<'a>)>),
    List(Box<Column<'a>>),
    Dictionary(Vec<usize>, Box<Column<'a>>),
}

impl<'a> Column<'a> {
    fn new(field: &'a Field, array: &'a dyn Array, path: &str) -> Self {
        let bson_type = field.metadata().get(BSON_TYPE_KEY).map(String::as_str);
        let null_is_bson = field.metadata().contains_key(NULLS_KEY);
        let read = Self::read(field.data_type(), array, path, bson_type);
        Column {
            path: path.to_owned(),
            array,
            null_is_bson,
            read,
        }
    }

    fn read(
        data_type: &'a DataType,
        array: &'a dyn Array,
        path: &str,
        bson_type: Option<&str>,
    ) -> Read<'a> {
        macro_rules! prim {
            ($variant:ident, $t:ty, $f:expr) => {{
                let a = array.as_primitive::<$t>();
                Read::$variant(Box::new(move |r| $f(a.value(r))))
            }};
        }
        match data_type {
            DataType::Float64 => prim!(Double, Float64Type, |v| v),
            DataType::Float32 => prim!(Double, Float32Type, f64::from),
            DataType::Int8 => prim!(Int32, Int8Type, i32::from),
            DataType::Int16 => prim!(Int32, Int16Type, i32::from),
            DataType::Int32 => prim!(Int32, Int32Type, |v| v),
            DataType::UInt8 => prim!(Int32, UInt8Type, i32::from),
            DataType::UInt16 => prim!(Int32, UInt16Type, i32::from),
            DataType::Int64 => prim!(Int64, Int64Type, Some),
            DataType::UInt32 => prim!(Int64, UInt32Type, |v| Some(i64::from(v))),
            DataType::UInt64 => prim!(Int64, UInt64Type, |v| i64::try_from(v).ok()),
            DataType::Boolean => Read::Bool,
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
                prim!(Date, TimestampMicrosecondType, |v: i64| v.div_euclid(1000))
            }
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                prim!(Date, TimestampNanosecondType, |v: i64| v
                    .div_euclid(1_000_000))
            }
            DataType::Date64 => prim!(Date, Date64Type, |v| v),
            DataType::Date32 => prim!(Date, Date32Type, |v| i64::from(v) * 86_400_000),
            DataType::FixedSizeBinary(12) if bson_type == Some("objectId") => Read::ObjectId,
            DataType::FixedSizeBinary(16) if bson_type == Some("decimal128") => Read::Decimal128,
            DataType::Decimal128(_, _) => Read::DecimalText,
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
            DataType::Dictionary(_, _) => {
                // The values are read with the dictionary field's marks; a null among them
                // is read as the dictionary column's null.
                let d = array.as_any_dictionary();
                let values = d.values().as_ref();
                let values = Column {
                    path: path.to_owned(),
                    array: values,
                    null_is_bson: false,
                    read: Self::read(values.data_type(), values, path, bson_type),
                };
                Read::Dictionary(d.normalized_keys(), Box::new(values))
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

    /// The value at `row`: `None` for a null that is a missing field.
    fn value(&self, row: usize) -> Result<Option<Bson>, String> {
        let null = match self.read {
            Read::Null => true,
            Read::Dictionary(..) => false,
            _ => self.array.is_null(row),
        };
        if null {
            return Ok(self.null_is_bson.then_some(Bson::Null));
        }
        Ok(Some(match &self.read {
            Read::Null => Bson::Null,
            Read::Double(f) => Bson::Double(f(row)),
            Read::Int32(f) => Bson::Int32(f(row)),
            Read::Int64(f) => {
                Bson::Int64(f(row).ok_or_else(|| {
                    format!("field '{}': a UInt64 past the long range", self.path)
                })?)
            }
            Read::Bool => Bson::Boolean(self.array.as_boolean().value(row)),
            Read::Str(f) => Bson::String(f(row).to_owned()),
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
                let a = self.array.as_primitive::<Decimal128Type>();
                let text = a.value_as_string(row);
                Bson::Decimal128(Decimal128::from_str(&text).map_err(|_| self.bad("decimal"))?)
            }
            Read::Binary(subtype) => Bson::Binary(Binary {
                subtype: *subtype,
                bytes: binary_bytes(self.array, row).to_vec(),
            }),
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
                if self.array.is_null(row) {
                    return Ok(self.null_is_bson.then_some(Bson::Null));
                }
                match values.value(keys[row])? {
                    Some(v) => v,
                    None => return Ok(self.null_is_bson.then_some(Bson::Null)),
                }
            }
        }))
    }

    fn bad(&self, what: &str) -> String {
        format!("field '{}': not a valid {what} value", self.path)
    }
}

/// The binary subtype a `binary:N` mark names.
fn binary_subtype(name: &str) -> Option<BinarySubtype> {
    let n: u8 = name.strip_prefix("binary:")?.parse().ok()?;
    Some(BinarySubtype::from(n))
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
    match array.data_type() {
        DataType::List(_) => {
            let o = array.as_list::<i32>().value_offsets();
            o[row] as usize..o[row + 1] as usize
        }
        DataType::LargeList(_) => {
            let o = array.as_list::<i64>().value_offsets();
            usize::try_from(o[row]).unwrap_or(0)..usize::try_from(o[row + 1]).unwrap_or(0)
        }
        _ => {
            let a = array.as_fixed_size_list();
            let n = a.value_length() as usize;
            let start = usize::try_from(a.value_offset(row)).unwrap_or(0);
            start..start + n
        }
    }
}
