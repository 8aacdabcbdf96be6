//! One Arrow column being filled from decoded bucket columns: the values are copied from the
//! codec's lanes ([`Column::ints`], [`Column::floats`], [`Column::bytes`]) into the Arrow
//! buffers, a whole lane at a time when every row of a segment has the column's type and
//! every row is taken; no BSON value is made but for JSON columns.

use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMillisecondType, UInt64Type};
use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, FixedSizeBinaryArray, NullArray, PrimitiveArray,
    StringArray,
};
use arrow_buffer::{Buffer, NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use bson::Bson;
use tscoll_catalog::value::to_bson;
use tscoll_codec::{Column, ValueRef, tag};

use super::kind::{Kind, UTC};

/// Why a value was not appended.
#[derive(Debug)]
pub(crate) enum AppendError {
    /// The stored value does not read (corrupt data).
    Corrupt(String),
    /// A value of BSON type `.0` in a column of another kind.
    Mismatch(u8),
}

impl From<String> for AppendError {
    fn from(reason: String) -> Self {
        AppendError::Corrupt(reason)
    }
}

/// Which rows of a segment are taken.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    /// Every row.
    All,
    /// These rows, ascending.
    Some(&'a [u32]),
}

/// The values of a column, as Arrow lays them out.
enum Values {
    Null,
    I32(Vec<i32>),
    /// `Int64`, `Timestamp(ms)`.
    I64(Vec<i64>),
    U64(Vec<u64>),
    F64(Vec<f64>),
    Bool(BooleanBufferBuilder),
    /// `Utf8` (strings, JSON texts) and `Binary`: offsets (first 0) and bytes.
    Bytes {
        offsets: Vec<i32>,
        data: Vec<u8>,
    },
    /// `FixedSizeBinary(12)`.
    Fixed(Vec<u8>),
}

/// An Arrow column being built.
pub(crate) struct ColumnBuilder {
    kind: Kind,
    values: Values,
    nulls: NullBufferBuilder,
    len: usize,
}

impl ColumnBuilder {
    /// An empty column of `kind`, with room for `rows`.
    pub(crate) fn new(kind: Kind, rows: usize) -> ColumnBuilder {
        let values = match kind {
            Kind::Null => Values::Null,
            Kind::Int32 => Values::I32(Vec::with_capacity(rows)),
            Kind::Int64 | Kind::Date => Values::I64(Vec::with_capacity(rows)),
            Kind::Timestamp => Values::U64(Vec::with_capacity(rows)),
            Kind::Float64 => Values::F64(Vec::with_capacity(rows)),
            Kind::Boolean => Values::Bool(BooleanBufferBuilder::new(rows)),
            Kind::String | Kind::Json | Kind::Binary => {
                let mut offsets = Vec::with_capacity(rows + 1);
                offsets.push(0);
                Values::Bytes {
                    offsets,
                    data: Vec::new(),
                }
            }
            Kind::ObjectId => Values::Fixed(Vec::with_capacity(rows * 12)),
        };
        ColumnBuilder {
            kind,
            values,
            nulls: NullBufferBuilder::new(rows),
            len: 0,
        }
    }

    /// Appends `n` nulls (rows without the field).
    pub(crate) fn append_nulls(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        match &mut self.values {
            Values::Null => {}
            Values::I32(v) => v.resize(v.len() + n, 0),
            Values::I64(v) => v.resize(v.len() + n, 0),
            Values::U64(v) => v.resize(v.len() + n, 0),
            Values::F64(v) => v.resize(v.len() + n, 0.0),
            Values::Bool(b) => b.append_n(n, false),
            Values::Bytes { offsets, .. } => {
                let last = offsets.last().copied().unwrap_or(0);
                offsets.resize(offsets.len() + n, last);
            }
            Values::Fixed(v) => v.resize(v.len() + 12 * n, 0),
        }
        self.nulls.append_n_nulls(n);
        self.len += n;
    }

    /// Appends rows `rows` of a decoded column.
    ///
    /// # Errors
    /// [`AppendError::Mismatch`] for a value this column's kind does not take;
    /// [`AppendError::Corrupt`] for a value that does not read.
    pub(crate) fn append_column(
        &mut self,
        col: &Column,
        rows: Rows<'_>,
    ) -> Result<(), AppendError> {
        let types = col.types();
        let uniform = types
            .first()
            .filter(|&&t| types.iter().fold(0, |acc, &x| acc | (x ^ t)) == 0);
        if let Some(&t) = uniform
            && self.append_lane(col, t, rows)?
        {
            return Ok(());
        }
        match rows {
            Rows::All => {
                for v in col.iter() {
                    self.append_value(v)?;
                }
            }
            Rows::Some(rows) => {
                let mut next = rows.iter().copied().peekable();
                for (i, v) in col.iter().enumerate() {
                    match next.peek() {
                        None => break,
                        Some(&r) if r as usize == i => {
                            next.next();
                            self.append_value(v)?;
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Appends the rows of a column whose every row has type `t` straight from its lane;
    /// `false` when no lane copy fits (the caller goes value by value).
    fn append_lane(&mut self, col: &Column, t: u8, rows: Rows<'_>) -> Result<bool, AppendError> {
        fn pick<T: Copy, U>(lane: &[T], rows: Rows<'_>, out: &mut Vec<U>, f: impl Fn(T) -> U) {
            match rows {
                Rows::All => out.extend(lane.iter().map(|&x| f(x))),
                Rows::Some(rows) => out.extend(rows.iter().map(|&r| f(lane[r as usize]))),
            }
        }
        let n = match rows {
            Rows::All => col.len(),
            Rows::Some(r) => r.len(),
        };
        let ints = col.ints();
        let int_lane = ints.len() == col.len();
        match (&mut self.values, t) {
            (_, tag::MISSING | tag::NULL | tag::UNDEFINED) => {
                self.append_nulls(n);
                return Ok(true);
            }
            (Values::I32(v), tag::INT32) if int_lane => {
                // An int32 lane value out of range is corrupt data.
                let in_range = |x: i64| i32::try_from(x).is_ok();
                let ok = match rows {
                    Rows::All => ints.iter().all(|&x| in_range(x)),
                    Rows::Some(rows) => rows.iter().all(|&r| in_range(ints[r as usize])),
                };
                if !ok {
                    return Err(AppendError::Corrupt("int32 out of range".to_owned()));
                }
                #[expect(clippy::cast_possible_truncation, reason = "checked above")]
                pick(ints, rows, v, |x| x as i32);
            }
            (Values::I64(v), tag::INT32 | tag::INT64) if self.kind == Kind::Int64 && int_lane => {
                pick(ints, rows, v, |x| x);
            }
            (Values::I64(v), tag::DATETIME) if self.kind == Kind::Date && int_lane => {
                pick(ints, rows, v, |x| x);
            }
            #[expect(clippy::cast_sign_loss, reason = "a timestamp's u64 bits")]
            (Values::U64(v), tag::TIMESTAMP) if int_lane => pick(ints, rows, v, |x| x as u64),
            (Values::F64(v), tag::DOUBLE) if col.floats().len() == col.len() => {
                pick(col.floats(), rows, v, |x| x);
            }
            #[expect(clippy::cast_precision_loss, reason = "the documented widening")]
            (Values::F64(v), tag::INT32 | tag::INT64) if int_lane => {
                pick(ints, rows, v, |x| x as f64);
            }
            (Values::Bool(b), tag::BOOLEAN) if int_lane => match rows {
                Rows::All => ints.iter().for_each(|&x| b.append(x != 0)),
                Rows::Some(rows) => rows.iter().for_each(|&r| b.append(ints[r as usize] != 0)),
            },
            _ => return Ok(false),
        }
        self.nulls.append_n_non_nulls(n);
        self.len += n;
        Ok(true)
    }

    /// Appends one value.
    ///
    /// # Errors
    /// As [`ColumnBuilder::append_column`].
    pub(crate) fn append_value(&mut self, v: ValueRef<'_>) -> Result<(), AppendError> {
        let code = match v {
            ValueRef::Missing => tag::MISSING,
            ValueRef::Empty(t) | ValueRef::Int(t, _) | ValueRef::Bytes(t, _) => t,
            ValueRef::Float(_) => tag::DOUBLE,
        };
        if !self.kind.accepts(code) {
            return Err(AppendError::Mismatch(code));
        }
        if matches!(Kind::of_type(code), Kind::Null) {
            self.append_nulls(1);
            return Ok(());
        }
        if self.kind == Kind::Json {
            let value = to_bson(v)?;
            self.append_json(value.as_ref());
            return Ok(());
        }
        match (&mut self.values, v) {
            (Values::I32(out), ValueRef::Int(_, x)) => {
                out.push(i32::try_from(x).map_err(|_| "int32 out of range".to_owned())?);
            }
            (Values::I64(out), ValueRef::Int(_, x)) => out.push(x),
            #[expect(clippy::cast_sign_loss, reason = "a timestamp's u64 bits")]
            (Values::U64(out), ValueRef::Int(_, x)) => out.push(x as u64),
            #[expect(clippy::cast_precision_loss, reason = "the documented widening")]
            (Values::F64(out), ValueRef::Int(_, x)) => out.push(x as f64),
            (Values::F64(out), ValueRef::Float(x)) => out.push(x),
            (Values::F64(out), ValueRef::Bytes(tag::DECIMAL128, _)) => {
                let d = match to_bson(v)? {
                    Some(Bson::Decimal128(d)) => d.to_string(),
                    _ => String::new(),
                };
                out.push(decimal_to_f64(&d));
            }
            (Values::Bool(b), ValueRef::Int(_, x)) => b.append(x != 0),
            (Values::Bytes { offsets, data }, ValueRef::Bytes(t, p)) => {
                let bytes = if t == tag::BINARY {
                    // Length (4 bytes), subtype, then the bytes.
                    p.get(5..).ok_or_else(|| "short binary value".to_owned())?
                } else {
                    std::str::from_utf8(p).map_err(|_| "string is not UTF-8".to_owned())?;
                    p
                };
                data.extend_from_slice(bytes);
                offsets.push(offset(data.len())?);
            }
            (Values::Fixed(out), ValueRef::Bytes(_, p)) if p.len() == 12 => {
                out.extend_from_slice(p)
            }
            _ => {
                return Err(AppendError::Corrupt(format!(
                    "a value of type {code:#04x} that does not read"
                )));
            }
        }
        self.nulls.append_non_null();
        self.len += 1;
        Ok(())
    }

    /// Appends a value given as BSON (a meta value, or a value cut by a projection); `None`
    /// is a null.
    ///
    /// # Errors
    /// [`AppendError::Mismatch`] for a value this column's kind does not take.
    pub(crate) fn append_bson(&mut self, v: Option<&Bson>) -> Result<(), AppendError> {
        let Some(v) = v else {
            self.append_nulls(1);
            return Ok(());
        };
        let code = tscoll_catalog::value::type_code(v);
        if !self.kind.accepts(code) {
            return Err(AppendError::Mismatch(code));
        }
        if self.kind == Kind::Json && Kind::of_type(code) != Kind::Null {
            self.append_json(Some(v));
            return Ok(());
        }
        let mut col = Column::with_capacity(1);
        let mut scratch = Vec::new();
        tscoll_catalog::value::push_value(&mut col, v, &mut scratch);
        let value = col.iter().next().unwrap_or(ValueRef::Missing);
        self.append_value(value)
    }

    /// Appends a value as its relaxed Extended JSON text (`None`: a null).
    fn append_json(&mut self, v: Option<&Bson>) {
        let (Some(v), Values::Bytes { offsets, data }) = (v, &mut self.values) else {
            self.append_nulls(1);
            return;
        };
        let text = crate::arrow::json::json_text(v);
        data.extend_from_slice(text.as_bytes());
        match offset(data.len()) {
            Ok(o) => offsets.push(o),
            Err(_) => {
                data.truncate(offsets.last().map_or(0, |&o| o as usize));
                self.append_nulls(1);
                return;
            }
        }
        self.nulls.append_non_null();
        self.len += 1;
    }

    /// The column built.
    ///
    /// # Errors
    /// A message when the values do not form a valid array (a string that is not UTF-8
    /// cannot get here: each was checked).
    pub(crate) fn finish(mut self) -> Result<ArrayRef, String> {
        let nulls = self.nulls.finish();
        let len = self.len;
        let err = |e: arrow_schema::ArrowError| e.to_string();
        Ok(match self.values {
            Values::Null => Arc::new(NullArray::new(len)),
            Values::I32(v) => Arc::new(PrimitiveArray::<Int32Type>::new(
                ScalarBuffer::from(v),
                nulls,
            )),
            Values::I64(v) if self.kind == Kind::Date => Arc::new(
                PrimitiveArray::<TimestampMillisecondType>::new(ScalarBuffer::from(v), nulls)
                    .with_timezone(UTC),
            ),
            Values::I64(v) => Arc::new(PrimitiveArray::<Int64Type>::new(
                ScalarBuffer::from(v),
                nulls,
            )),
            Values::U64(v) => Arc::new(PrimitiveArray::<UInt64Type>::new(
                ScalarBuffer::from(v),
                nulls,
            )),
            Values::F64(v) => Arc::new(PrimitiveArray::<Float64Type>::new(
                ScalarBuffer::from(v),
                nulls,
            )),
            Values::Bool(mut b) => Arc::new(BooleanArray::new(b.finish(), nulls)),
            Values::Bytes { offsets, data } => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                let data = Buffer::from_vec(data);
                if self.kind == Kind::Binary {
                    Arc::new(BinaryArray::try_new(offsets, data, nulls).map_err(err)?)
                } else {
                    // Every value was checked as UTF-8 when appended.
                    Arc::new(StringArray::try_new(offsets, data, nulls).map_err(err)?)
                }
            }
            Values::Fixed(v) => Arc::new(
                FixedSizeBinaryArray::try_new(12, Buffer::from_vec(v), nulls).map_err(err)?,
            ),
        })
    }
}

/// An Arrow `i32` offset, or an error past 2 GiB of bytes in one column of one batch.
fn offset(len: usize) -> Result<i32, String> {
    i32::try_from(len).map_err(|_| "a batch column of more than 2 GiB".to_owned())
}

/// The double nearest a Decimal128's text (`NaN`, `Infinity` included); NaN when it does not
/// parse.
fn decimal_to_f64(text: &str) -> f64 {
    text.parse::<f64>().unwrap_or(f64::NAN)
}
