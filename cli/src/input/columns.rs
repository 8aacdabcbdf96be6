//! Arrow columns built value by value from parsed input (NDJSON lines, CSV records), for
//! `Collection::insert_record_batch`: one builder per field, each of one kind of value, a
//! missing value a null (which the columnar insert leaves out of the measurement, as a
//! document has no such field). A value of another kind than its column's, a field given
//! twice in a row, or a time field that is not a date in every row makes the batch
//! [`NotColumnar`]: Arrow columns cannot say exactly what documents would, and the input goes
//! through the document path instead.

use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
    StructArray, TimestampMillisecondArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

/// A batch that Arrow columns cannot hold exactly as the document path stores it (see the
/// module documentation); its input goes through the document path instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotColumnar;

/// The values of one field, of one kind (`Unset` until the first value).
enum Values {
    Unset,
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Double(Vec<f64>),
    Bool(Vec<bool>),
    /// Offsets (one more than rows) into the bytes.
    Str(Vec<i32>, Vec<u8>),
    /// Milliseconds since the epoch.
    Date(Vec<i64>),
    /// A sub-document: its fields, each a column of the same rows.
    Struct(Vec<Builder>),
}

/// The column of one field: a slot per row (`valid` false where the row lacks the field).
pub(crate) struct Builder {
    /// The field's name.
    pub(crate) name: String,
    values: Values,
    valid: Vec<bool>,
}

/// One value, as the parser gives it.
pub(crate) enum Scalar<'a> {
    /// An integer: int32 when it fits, int64 otherwise.
    Int(i64),
    /// An int64 whatever its value (a column typed `int64`).
    Long(i64),
    /// A double.
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(&'a str),
    /// A date, in ms since the epoch.
    Date(i64),
}

impl Builder {
    /// An empty column of field `name`.
    pub(crate) fn new(name: String) -> Builder {
        Builder {
            name,
            values: Values::Unset,
            valid: Vec::new(),
        }
    }

    /// Pads the column with missing values up to `rows` rows.
    fn pad_to(&mut self, rows: usize) {
        let missing = rows.saturating_sub(self.valid.len());
        if missing == 0 {
            return;
        }
        self.valid.resize(rows, false);
        match &mut self.values {
            Values::Unset => {}
            Values::Int32(v) => v.resize(rows, 0),
            Values::Int64(v) | Values::Date(v) => v.resize(rows, 0),
            Values::Double(v) => v.resize(rows, 0.0),
            Values::Bool(v) => v.resize(rows, false),
            Values::Str(offsets, _) => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.resize(rows + 1, last);
            }
            Values::Struct(children) => {
                for c in children {
                    c.pad_to(rows);
                }
            }
        }
    }

    /// Opens row `row` of the column (padding the rows before it): fails when the row
    /// already holds a value (a field name repeated in one object).
    fn open_row(&mut self, row: usize) -> Result<(), NotColumnar> {
        if self.valid.len() > row {
            return Err(NotColumnar);
        }
        self.pad_to(row);
        self.valid.push(true);
        Ok(())
    }

    /// Appends a scalar as row `row`.
    pub(crate) fn push(&mut self, row: usize, value: Scalar<'_>) -> Result<(), NotColumnar> {
        self.open_row(row)?;
        if matches!(self.values, Values::Unset) {
            self.values = match value {
                Scalar::Int(i) if i32::try_from(i).is_ok() => Values::Int32(vec![0; row]),
                Scalar::Int(_) | Scalar::Long(_) => Values::Int64(vec![0; row]),
                Scalar::Double(_) => Values::Double(vec![0.0; row]),
                Scalar::Bool(_) => Values::Bool(vec![false; row]),
                Scalar::Str(_) => Values::Str(vec![0; row + 1], Vec::new()),
                Scalar::Date(_) => Values::Date(vec![0; row]),
            };
        }
        match (&mut self.values, value) {
            (Values::Int32(v), Scalar::Int(i)) => {
                v.push(i32::try_from(i).map_err(|_| NotColumnar)?)
            }
            (Values::Int64(v), Scalar::Int(i)) if i32::try_from(i).is_err() => v.push(i),
            (Values::Int64(v), Scalar::Long(i)) => v.push(i),
            (Values::Double(v), Scalar::Double(d)) => v.push(d),
            (Values::Bool(v), Scalar::Bool(b)) => v.push(b),
            (Values::Date(v), Scalar::Date(ms)) => v.push(ms),
            (Values::Str(offsets, bytes), Scalar::Str(s)) => {
                bytes.extend_from_slice(s.as_bytes());
                offsets.push(i32::try_from(bytes.len()).map_err(|_| NotColumnar)?);
            }
            _ => return Err(NotColumnar),
        }
        Ok(())
    }

    /// Opens row `row` as a sub-document and returns its fields.
    pub(crate) fn open_struct(&mut self, row: usize) -> Result<&mut Vec<Builder>, NotColumnar> {
        self.open_row(row)?;
        if matches!(self.values, Values::Unset) {
            self.values = Values::Struct(Vec::new());
        }
        match &mut self.values {
            Values::Struct(children) => Ok(children),
            _ => Err(NotColumnar),
        }
    }

    /// The Arrow field and array of the column's first `rows` rows.
    fn finish(mut self, rows: usize) -> Result<(Field, ArrayRef), NotColumnar> {
        self.pad_to(rows);
        let nulls = if self.valid.iter().all(|&v| v) {
            None
        } else {
            Some(NullBuffer::from(self.valid))
        };
        let array: ArrayRef = match self.values {
            Values::Unset => return Err(NotColumnar),
            Values::Int32(v) => Arc::new(Int32Array::new(ScalarBuffer::from(v), nulls)),
            Values::Int64(v) => Arc::new(Int64Array::new(ScalarBuffer::from(v), nulls)),
            Values::Double(v) => Arc::new(Float64Array::new(ScalarBuffer::from(v), nulls)),
            Values::Bool(v) => Arc::new(BooleanArray::new(BooleanBuffer::from(v), nulls)),
            Values::Date(v) => {
                Arc::new(TimestampMillisecondArray::new(ScalarBuffer::from(v), nulls))
            }
            Values::Str(offsets, bytes) => Arc::new(
                StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    Buffer::from_vec(bytes),
                    nulls,
                )
                .map_err(|_| NotColumnar)?,
            ),
            // A struct needs a child to have a length.
            Values::Struct(children) if children.is_empty() => return Err(NotColumnar),
            Values::Struct(children) => {
                let mut fields = Vec::with_capacity(children.len());
                let mut arrays = Vec::with_capacity(children.len());
                for c in children {
                    let (f, a) = c.finish(rows)?;
                    fields.push(f);
                    arrays.push(a);
                }
                Arc::new(
                    StructArray::try_new(Fields::from(fields), arrays, nulls)
                        .map_err(|_| NotColumnar)?,
                )
            }
        };
        let field = Field::new(self.name, array.data_type().clone(), true);
        Ok((field, array))
    }
}

/// Columns one object of a batch may have (at any depth): Arrow columns hold a slot for
/// every row of every column, so a batch of sparse fields (each line with fields of its own)
/// or of very wide objects goes through the document path instead, which stores only the
/// values there are.
pub(crate) const MAX_COLUMNS: usize = 1024;

/// The column of field `name` among `columns` (a new one, after the others, when the batch
/// has none yet), for a field that follows the one whose column is just before `next` in
/// its row; `next` moves past it. Rows list their fields in one order, so the column at
/// `next` is tried first.
///
/// # Errors
/// [`NotColumnar`] when the field's column comes before the previous field's: a bucket keeps
/// its fields in one order, that of their first appearance in it, and the columnar insert
/// meets each row's fields in the columns' order, so the row would be stored with its fields
/// in another order than the document path stores them; or when the object would have more
/// than [`MAX_COLUMNS`] columns.
pub(crate) fn next_column(
    columns: &mut Vec<Builder>,
    name: &str,
    next: &mut usize,
) -> Result<usize, NotColumnar> {
    let i = match columns.get(*next).filter(|c| c.name == name) {
        Some(_) => *next,
        None => match columns.iter().position(|c| c.name == name) {
            Some(i) => i,
            None if columns.len() >= MAX_COLUMNS => return Err(NotColumnar),
            None => {
                columns.push(Builder::new(name.to_owned()));
                columns.len() - 1
            }
        },
    };
    if i < *next {
        return Err(NotColumnar);
    }
    *next = i + 1;
    Ok(i)
}

/// Appends `value` as row `row` of field `name`'s column, found as [`next_column`] finds it.
///
/// # Errors
/// As [`next_column`] and [`Builder::push`].
pub(crate) fn push_field(
    columns: &mut Vec<Builder>,
    name: &str,
    next: &mut usize,
    row: usize,
    value: Scalar<'_>,
) -> Result<(), NotColumnar> {
    let i = next_column(columns, name, next)?;
    columns.get_mut(i).ok_or(NotColumnar)?.push(row, value)
}

/// Rows of columns, one builder per top-level field, and the field values of each row.
pub(crate) struct Table<'a> {
    time_field: &'a str,
    meta_field: Option<&'a str>,
    columns: Vec<Builder>,
    /// Field values per row: its fields but the time and meta fields.
    field_values: Vec<u64>,
}

impl<'a> Table<'a> {
    /// Empty columns for a collection with these time and meta fields.
    pub(crate) fn new(time_field: &'a str, meta_field: Option<&'a str>) -> Self {
        Table {
            time_field,
            meta_field,
            columns: Vec::new(),
            field_values: Vec::new(),
        }
    }

    /// The collection's time and meta fields.
    pub(crate) fn special(&self) -> (&'a str, Option<&'a str>) {
        (self.time_field, self.meta_field)
    }

    /// The row being filled (rows filled so far) and the columns.
    pub(crate) fn next_row(&mut self) -> (usize, &mut Vec<Builder>) {
        (self.field_values.len(), &mut self.columns)
    }

    /// Ends the row being filled, which holds `field_values` fields but the time and meta
    /// fields.
    pub(crate) fn end_row(&mut self, field_values: u64) {
        self.field_values.push(field_values);
    }

    /// Field values of each row: its fields but the time and meta fields.
    pub(crate) fn field_values(&self) -> &[u64] {
        &self.field_values
    }

    /// The record batch of every row.
    ///
    /// # Errors
    /// [`NotColumnar`] when the time field is not a date in every row, or `_id` is missing
    /// from some row (that row would get no generated one).
    pub(crate) fn finish(self) -> Result<RecordBatch, NotColumnar> {
        let rows = self.field_values.len();
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays = Vec::with_capacity(self.columns.len());
        let mut has_time = false;
        for c in self.columns {
            let (field, array) = c.finish(rows)?;
            let name = field.name().as_str();
            if name == self.time_field || name == "_id" {
                let whole = array.null_count() == 0;
                let date = matches!(
                    array.data_type(),
                    DataType::Timestamp(TimeUnit::Millisecond, _)
                );
                if !whole || (name == self.time_field && !date) {
                    return Err(NotColumnar);
                }
                has_time |= name == self.time_field;
            }
            fields.push(field);
            arrays.push(array);
        }
        if !has_time {
            return Err(NotColumnar);
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays).map_err(|_| NotColumnar)
    }
}

/// Inserts `batch` and `docs` (the same measurements) into two new collections of `db`
/// (time field `t`, meta field `m`) named after `name`, unordered, and returns what each
/// stored (every measurement as relaxed Extended JSON without its generated `_id`, sorted)
/// and the input positions each rejected.
#[cfg(test)]
pub(crate) fn stored_both_ways(
    db: &tscoll_engine::Database,
    name: &str,
    batch: &RecordBatch,
    docs: &[bson::Document],
) -> [(Vec<String>, Vec<usize>); 2] {
    use tscoll_engine::{Collection, FindOptions, InsertOptions, InsertResult, TimeseriesOptions};
    let stored = |coll: &Collection| {
        let mut docs: Vec<String> = coll
            .find(&bson::Document::new(), &FindOptions::default())
            .expect("find")
            .into_iter()
            .map(|mut d| {
                d.remove("_id");
                crate::cmd::to_extjson(d)
            })
            .collect();
        docs.sort();
        docs
    };
    let options = TimeseriesOptions::new("t").meta_field("m");
    let a = db
        .create_collection(&format!("{name}a"), &options)
        .expect("create");
    let b = db
        .create_collection(&format!("{name}b"), &options)
        .expect("create");
    let unordered = InsertOptions {
        ordered: false,
        ..InsertOptions::default()
    };
    let ra = a.insert_record_batch(batch, &unordered).expect("insert");
    let rb = b.insert_many(docs, &unordered).expect("insert");
    let errors = |r: &InsertResult| r.errors.iter().map(|e| e.index).collect();
    [(stored(&a), errors(&ra)), (stored(&b), errors(&rb))]
}
