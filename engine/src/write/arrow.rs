//! The columnar insert: an Arrow `RecordBatch` (arrow-rs) read column by column into the
//! catalog's [`MeasurementColumns`], grouped by series and sorted by time, and staged a run of
//! rows at a time ([`tscoll_catalog::BucketCatalog::stage_call`]), with no document per row.
//!
//! The values are those of the engine's one Arrow → BSON mapping (`crate::arrow::values`,
//! docs/arrow.md). The common unmarked types are read here straight from their arrays:
//! `Float64`, `Float32` → double; `Int8`, `Int16`, `Int32`, `UInt8`, `UInt16` → int32;
//! `Int64`, `UInt32`, `UInt64` → int64 (a `UInt64` above `i64::MAX` rejects its row);
//! `Boolean` → bool; `Utf8`, `LargeUtf8`, `Utf8View` → string; `Timestamp` (any unit,
//! floored to ms), `Date32` and `Date64` → date; `FixedSizeBinary(12)` marked `objectId` →
//! ObjectId; `Struct` → document (its null children left out); dictionaries are unpacked
//! first (`crate::arrow::plain`). Every other column is read value by value by the mapping's
//! reader. A null is a missing field. A type with no BSON form is refused, naming its
//! column, before anything is inserted.

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type, Int64Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt8Type, UInt16Type, UInt32Type, UInt64Type,
};
use arrow_array::{Array, ArrayRef, FixedSizeBinaryArray, PrimitiveArray, RecordBatch};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, FieldRef, TimeUnit};
use bson::spec::ElementType;
use bson::{Bson, DateTime};
use tscoll_catalog::value::{element_size, push_value};
use tscoll_catalog::{BucketKey, Measurement, MeasurementColumns};
use tscoll_codec::{Column, RowStart, tag};

use crate::InsertOptions;
use crate::arrow::{BSON_TYPE_KEY, ENCODING_KEY, NULLS_KEY, RecordBatchOptions, plain, values};
use crate::collection::CollectionInner;
use crate::error::{Error, ErrorCode, Result};
use crate::write::ids;
use crate::write::meta_cache::lock;
use crate::write::series::{BuildFx, Fx, SeriesKeys};
use crate::write::{InsertResult, WriteError, long_name, take_outcome, too_large};

/// One Arrow column read as values of one BSON type. Each kind reads its Arrow arrays
/// directly (no call through a pointer per value).
enum Source<'a> {
    Double(Doubles<'a>),
    Int32(Int32s<'a>),
    Int64(Int64s<'a>),
    Bool(&'a arrow_array::BooleanArray),
    Str(Strs<'a>),
    Date(Dates<'a>),
    /// `FixedSizeBinary(12)` marked `objectId`.
    ObjectId(&'a FixedSizeBinaryArray),
    /// A `Struct`: a document of its children.
    Struct(Vec<Field<'a>>),
    /// Any other column, read value by value by the mapping's reader.
    Value(values::Column<'a>),
}

/// Arrow arrays read as doubles.
enum Doubles<'a> {
    F64(&'a PrimitiveArray<Float64Type>),
    F32(&'a PrimitiveArray<Float32Type>),
}

impl Doubles<'_> {
    #[inline]
    fn value(&self, row: usize) -> f64 {
        match self {
            Doubles::F64(a) => a.value(row),
            Doubles::F32(a) => f64::from(a.value(row)),
        }
    }
}

/// Arrow arrays read as int32s.
enum Int32s<'a> {
    I8(&'a PrimitiveArray<Int8Type>),
    I16(&'a PrimitiveArray<Int16Type>),
    I32(&'a PrimitiveArray<Int32Type>),
    U8(&'a PrimitiveArray<UInt8Type>),
    U16(&'a PrimitiveArray<UInt16Type>),
}

impl Int32s<'_> {
    #[inline]
    fn value(&self, row: usize) -> i32 {
        match self {
            Int32s::I8(a) => i32::from(a.value(row)),
            Int32s::I16(a) => i32::from(a.value(row)),
            Int32s::I32(a) => a.value(row),
            Int32s::U8(a) => i32::from(a.value(row)),
            Int32s::U16(a) => i32::from(a.value(row)),
        }
    }
}

/// Arrow arrays read as int64s (`None`: a `UInt64` past `i64::MAX`).
enum Int64s<'a> {
    I64(&'a PrimitiveArray<Int64Type>),
    U32(&'a PrimitiveArray<UInt32Type>),
    U64(&'a PrimitiveArray<UInt64Type>),
}

impl Int64s<'_> {
    #[inline]
    fn value(&self, row: usize) -> Option<i64> {
        match self {
            Int64s::I64(a) => Some(a.value(row)),
            Int64s::U32(a) => Some(i64::from(a.value(row))),
            Int64s::U64(a) => i64::try_from(a.value(row)).ok(),
        }
    }
}

/// Arrow arrays read as strings.
enum Strs<'a> {
    Utf8(&'a arrow_array::StringArray),
    Large(&'a arrow_array::LargeStringArray),
    View(&'a arrow_array::StringViewArray),
}

impl<'a> Strs<'a> {
    #[inline]
    fn value(&self, row: usize) -> &'a str {
        match self {
            Strs::Utf8(a) => a.value(row),
            Strs::Large(a) => a.value(row),
            Strs::View(a) => a.value(row),
        }
    }
}

/// Arrow arrays read as dates (ms since the epoch; finer units truncated toward the past).
enum Dates<'a> {
    Date64(&'a PrimitiveArray<Date64Type>),
    Date32(&'a PrimitiveArray<Date32Type>),
    Seconds(&'a PrimitiveArray<TimestampSecondType>),
    Millis(&'a PrimitiveArray<TimestampMillisecondType>),
    Micros(&'a PrimitiveArray<TimestampMicrosecondType>),
    Nanos(&'a PrimitiveArray<TimestampNanosecondType>),
}

impl Dates<'_> {
    #[inline]
    fn value(&self, row: usize) -> i64 {
        match self {
            Dates::Date64(a) => a.value(row),
            Dates::Date32(a) => i64::from(a.value(row)) * 86_400_000,
            Dates::Seconds(a) => a.value(row).saturating_mul(1000),
            Dates::Millis(a) => a.value(row),
            Dates::Micros(a) => a.value(row).div_euclid(1000),
            Dates::Nanos(a) => a.value(row).div_euclid(1_000_000),
        }
    }
}

/// A column of the batch: its name, values and nulls.
struct Field<'a> {
    name: &'a str,
    /// The column's logical nulls.
    nulls: Option<NullBuffer>,
    source: Source<'a>,
}

impl Field<'_> {
    /// Whether row `row` is null.
    #[inline]
    fn is_null(&self, row: usize) -> bool {
        match &self.source {
            Source::Value(c) => c.is_null(row),
            _ => self.nulls.as_ref().is_some_and(|n| n.is_null(row)),
        }
    }

    /// The value of row `row` as BSON (`None`: a missing field, or a value with no BSON
    /// form: [`Field::error`] says which).
    fn bson(&self, row: usize) -> Option<Bson> {
        if self.is_null(row) {
            return match &self.source {
                Source::Value(c) => c.value(row).ok().flatten(),
                _ => None,
            };
        }
        Some(match &self.source {
            Source::Double(f) => Bson::Double(f.value(row)),
            Source::Int32(f) => Bson::Int32(f.value(row)),
            Source::Int64(f) => Bson::Int64(f.value(row)?),
            Source::Bool(a) => Bson::Boolean(a.value(row)),
            Source::Str(f) => Bson::String(f.value(row).to_owned()),
            Source::Date(f) => Bson::DateTime(DateTime::from_millis(f.value(row))),
            Source::ObjectId(a) => Bson::ObjectId(object_id(a, row)),
            Source::Struct(children) => Bson::Document(
                children
                    .iter()
                    .filter_map(|c| Some((c.name.to_owned(), c.bson(row)?)))
                    .collect(),
            ),
            Source::Value(c) => return c.value(row).ok().flatten(),
        })
    }

    /// Why row `row`'s value has no BSON form (at any depth), if it has none.
    fn error(&self, row: usize) -> Option<String> {
        match &self.source {
            _ if self.nulls.as_ref().is_some_and(|n| n.is_null(row)) => None,
            Source::Int64(f) if f.value(row).is_none() => Some(format!(
                "'{}' holds an unsigned integer past the int64 range",
                self.name
            )),
            Source::Struct(children) => children.iter().find_map(|c| c.error(row)),
            Source::Value(c) => c.value(row).err(),
            _ => None,
        }
    }

    /// Writes the value of row `row` as [`tscoll_catalog::write_as_written`] writes the
    /// value [`Field::bson`] gives, without building it; nothing when that is `None`. (A
    /// struct with two children of one name writes both, where `bson` keeps one: such bytes
    /// are never another value's, so they still name one series.)
    fn write_as_written(&self, row: usize, out: &mut Vec<u8>) {
        if let Source::Value(_) = &self.source {
            if let Some(v) = self.bson(row) {
                tscoll_catalog::write_as_written(&v, out);
            }
            return;
        }
        if self.absent(row) {
            return;
        }
        out.push(self.element_type() as u8);
        self.write_payload(row, out);
    }

    /// The BSON type of the values [`Field::bson`] gives, for a source of one type.
    fn element_type(&self) -> ElementType {
        match &self.source {
            Source::Double(_) => ElementType::Double,
            Source::Int32(_) => ElementType::Int32,
            Source::Int64(_) => ElementType::Int64,
            Source::Bool(_) => ElementType::Boolean,
            Source::Str(_) => ElementType::String,
            Source::Date(_) => ElementType::DateTime,
            Source::ObjectId(_) => ElementType::ObjectId,
            Source::Struct(_) => ElementType::EmbeddedDocument,
            // Written from its value ([`Field::write_element`]).
            Source::Value(_) => ElementType::Null,
        }
    }

    /// Writes row `row` as an element of a document (type, name, value), nothing when it
    /// is absent.
    fn write_element(&self, row: usize, out: &mut Vec<u8>) {
        if let Source::Value(_) = &self.source {
            let Some(v) = self.bson(row) else {
                return;
            };
            let mut value = Vec::new();
            tscoll_catalog::write_as_written(&v, &mut value);
            if let Some((code, payload)) = value.split_first() {
                out.push(*code);
                out.extend_from_slice(self.name.as_bytes());
                out.push(0);
                out.extend_from_slice(payload);
            }
            return;
        }
        if self.absent(row) {
            return;
        }
        out.push(self.element_type() as u8);
        out.extend_from_slice(self.name.as_bytes());
        out.push(0);
        self.write_payload(row, out);
    }

    /// The BSON value bytes of row `row`, which is not absent (a source of one type).
    fn write_payload(&self, row: usize, out: &mut Vec<u8>) {
        match &self.source {
            Source::Double(f) => out.extend_from_slice(&f.value(row).to_le_bytes()),
            Source::Int32(f) => out.extend_from_slice(&f.value(row).to_le_bytes()),
            Source::Int64(f) => {
                out.extend_from_slice(&f.value(row).unwrap_or_default().to_le_bytes());
            }
            Source::Bool(a) => out.push(u8::from(a.value(row))),
            Source::Str(f) => {
                let s = f.value(row);
                let len = i32::try_from(s.len() + 1).unwrap_or(i32::MAX);
                out.extend_from_slice(&len.to_le_bytes());
                out.extend_from_slice(s.as_bytes());
                out.push(0);
            }
            Source::Date(f) => out.extend_from_slice(&f.value(row).to_le_bytes()),
            Source::ObjectId(a) => out.extend_from_slice(a.value(row)),
            Source::Struct(children) => {
                let start = out.len();
                out.extend_from_slice(&[0; 4]);
                for c in children {
                    c.write_element(row, out);
                }
                out.push(0);
                let len = i32::try_from(out.len() - start).unwrap_or(i32::MAX);
                out[start..start + 4].copy_from_slice(&len.to_le_bytes());
            }
            Source::Value(_) => {}
        }
    }

    /// Whether [`Field::bson`] gives `None` for row `row`.
    fn absent(&self, row: usize) -> bool {
        match &self.source {
            Source::Value(c) => !matches!(c.value(row), Ok(Some(_))),
            Source::Int64(f) => self.is_null(row) || f.value(row).is_none(),
            _ => self.is_null(row),
        }
    }

    /// Whether rows `a` and `b` hold the same value (both null included), without building
    /// either.
    fn same_value(&self, a: usize, b: usize) -> bool {
        let mut same = [true];
        self.same_rows(&[(a, b)], &mut same);
        same[0]
    }

    /// The bytes [`Field::write_as_written`] writes for row `row`.
    fn written(&self, row: usize) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_as_written(row, &mut out);
        out
    }

    /// Mixes every row's value into its entry of `hashes`, column by column (equal values
    /// mix alike).
    fn hash_rows(&self, hashes: &mut [u64]) {
        if let Source::Struct(children) = &self.source {
            for c in children {
                c.hash_rows(hashes);
            }
        }
        // Strings without nulls (the usual meta tags) in a loop of their own per array type.
        if self.nulls.is_none()
            && let Source::Str(strs) = &self.source
        {
            match strs {
                Strs::Utf8(a) => hash_strings(hashes, |row| a.value(row)),
                Strs::Large(a) => hash_strings(hashes, |row| a.value(row)),
                Strs::View(a) => hash_strings(hashes, |row| a.value(row)),
            }
            return;
        }
        for (row, h) in hashes.iter_mut().enumerate() {
            let mut fx = Fx::with_state(*h);
            if let Source::Value(_) = &self.source {
                fx.write(&self.written(row));
            } else if self.is_null(row) {
                fx.write_u8(0);
            } else {
                match &self.source {
                    Source::Double(f) => fx.write_u64(f.value(row).to_bits()),
                    Source::Int32(f) => fx.write_i32(f.value(row)),
                    Source::Int64(f) => fx.write_i64(f.value(row).unwrap_or(i64::MIN)),
                    Source::Bool(x) => fx.write_u8(u8::from(x.value(row))),
                    Source::Str(f) => fx.write(f.value(row).as_bytes()),
                    Source::Date(f) => fx.write_i64(f.value(row)),
                    Source::ObjectId(a) => fx.write(a.value(row)),
                    Source::Struct(_) | Source::Value(_) => {}
                }
                fx.write_u8(0xff);
            }
            *h = fx.finish();
        }
    }

    /// Clears `same[i]` where rows `pairs[i]` hold different values (both null counts as the
    /// same), column by column.
    fn same_rows(&self, pairs: &[(usize, usize)], same: &mut [bool]) {
        if self.nulls.is_none()
            && let Source::Str(strs) = &self.source
        {
            match strs {
                Strs::Utf8(a) => same_strings(pairs, same, |row| a.value(row)),
                Strs::Large(a) => same_strings(pairs, same, |row| a.value(row)),
                Strs::View(a) => same_strings(pairs, same, |row| a.value(row)),
            }
            return;
        }
        for (&(a, b), s) in pairs.iter().zip(same.iter_mut()) {
            if !*s {
                continue;
            }
            if let Source::Value(_) = &self.source {
                *s = a == b || self.written(a) == self.written(b);
                continue;
            }
            *s = match (self.is_null(a), self.is_null(b)) {
                (true, true) => true,
                (false, false) => match &self.source {
                    Source::Double(f) => f.value(a).to_bits() == f.value(b).to_bits(),
                    Source::Int32(f) => f.value(a) == f.value(b),
                    Source::Int64(f) => f.value(a) == f.value(b),
                    Source::Bool(x) => x.value(a) == x.value(b),
                    Source::Str(f) => f.value(a) == f.value(b),
                    Source::Date(f) => f.value(a) == f.value(b),
                    Source::ObjectId(x) => x.value(a) == x.value(b),
                    Source::Struct(_) | Source::Value(_) => true,
                },
                _ => false,
            };
        }
        if let Source::Struct(children) = &self.source {
            for c in children {
                c.same_rows(pairs, same);
            }
        }
    }

    /// The BSON element size of row `row` (0 for a skip) as [`Field::push`] gives it, without
    /// appending it anywhere but, for a struct, to `scratch`.
    ///
    /// # Errors
    /// Why the value has no BSON form ([`Field::error`]).
    fn size(&self, row: usize, scratch: &mut Column) -> std::result::Result<u64, String> {
        let head = 2 + self.name.len() as u64;
        if let Source::Value(c) = &self.source {
            return Ok(c.value(row)?.map_or(0, |v| element_size(self.name, &v)));
        }
        if self.is_null(row) {
            return Ok(0);
        }
        Ok(match &self.source {
            Source::Double(_) | Source::Date(_) => head + 8,
            Source::Int32(_) => head + 4,
            Source::Int64(f) => {
                if f.value(row).is_none() {
                    return Err(self.error(row).unwrap_or_default());
                }
                head + 8
            }
            Source::Bool(_) => head + 1,
            Source::Str(f) => head + 5 + f.value(row).len() as u64,
            Source::ObjectId(_) => head + 12,
            Source::Struct(_) => {
                if let Some(e) = self.error(row) {
                    return Err(e);
                }
                scratch.clear();
                return Ok(self.push(row, scratch));
            }
            Source::Value(_) => 0,
        })
    }

    /// Appends row `row` to `column`; returns its BSON element size (0 for a skip). A row
    /// whose value has no BSON form ([`Field::error`]) was rejected before: it is a skip.
    fn push(&self, row: usize, column: &mut Column) -> u64 {
        let head = 2 + self.name.len() as u64;
        let absent = match &self.source {
            Source::Value(_) | Source::Struct(_) => false,
            _ => self.is_null(row),
        };
        if absent {
            column.push_missing();
            return 0;
        }
        match &self.source {
            Source::Double(f) => {
                column.push_float(f.value(row));
                head + 8
            }
            Source::Int32(f) => {
                column.push_int(tag::INT32, i64::from(f.value(row)));
                head + 4
            }
            Source::Int64(f) => {
                column.push_int(tag::INT64, f.value(row).unwrap_or_default());
                head + 8
            }
            Source::Bool(a) => {
                column.push_int(tag::BOOLEAN, i64::from(a.value(row)));
                head + 1
            }
            Source::Str(f) => {
                let s = f.value(row);
                column.push_bytes(tag::STRING, s.as_bytes());
                head + 5 + s.len() as u64
            }
            Source::Date(f) => {
                column.push_int(tag::DATETIME, f.value(row));
                head + 8
            }
            Source::ObjectId(a) => {
                column.push_bytes(tag::OBJECT_ID, a.value(row));
                head + 12
            }
            Source::Struct(_) | Source::Value(_) => match self.bson(row) {
                Some(doc) => {
                    let mut scratch = Vec::new();
                    push_value(column, &doc, &mut scratch);
                    element_size(self.name, &doc)
                }
                None => {
                    column.push_missing();
                    0
                }
            },
        }
    }
}

/// The ObjectId of row `row` of a `FixedSizeBinary(12)` column.
fn object_id(a: &FixedSizeBinaryArray, row: usize) -> bson::oid::ObjectId {
    let mut bytes = [0u8; 12];
    if let Some(value) = a.value(row).get(..12) {
        bytes.copy_from_slice(value);
    }
    bson::oid::ObjectId::from_bytes(bytes)
}
/// [`Field::hash_rows`] of a string column without nulls: each row's string and an end mark,
/// as the general loop mixes a present value.
fn hash_strings<'s>(hashes: &mut [u64], value: impl Fn(usize) -> &'s str) {
    for (row, h) in hashes.iter_mut().enumerate() {
        let mut fx = Fx::with_state(*h);
        fx.write(value(row).as_bytes());
        fx.write_u8(0xff);
        *h = fx.finish();
    }
}

/// [`Field::same_rows`] of a string column without nulls.
fn same_strings<'s>(pairs: &[(usize, usize)], same: &mut [bool], value: impl Fn(usize) -> &'s str) {
    for (&(a, b), s) in pairs.iter().zip(same.iter_mut()) {
        if *s && a != b {
            *s = value(a) == value(b);
        }
    }
}

/// Per-row sums of [`MeasurementColumns`] filled column by column: BSON element bytes, name
/// bytes (`name + 1` per present field) and present fields.
struct RowSizes<'a> {
    raw: &'a mut [u64],
    names: &'a mut [u64],
    present: &'a mut [u32],
}

impl RowSizes<'_> {
    /// Counts a present field of `size` element bytes and `names` name bytes at row `at`.
    fn add(&mut self, at: usize, size: u64, names: u64) {
        if let (Some(r), Some(n), Some(p)) = (
            self.raw.get_mut(at),
            self.names.get_mut(at),
            self.present.get_mut(at),
        ) {
            *r += size;
            *n += names;
            *p += 1;
        }
    }

    /// As [`RowSizes::add`] for every row from `at` on, `len` of them.
    fn add_each(&mut self, at: usize, len: usize, size: u64, names: u64) {
        let rows = at..at + len;
        for (r, (n, p)) in self
            .raw
            .get_mut(rows.clone())
            .unwrap_or_default()
            .iter_mut()
            .zip(
                self.names
                    .get_mut(rows.clone())
                    .unwrap_or_default()
                    .iter_mut()
                    .zip(self.present.get_mut(rows).unwrap_or_default()),
            )
        {
            *r += size;
            *n += names;
            *p += 1;
        }
    }
}

impl<'a> Field<'a> {
    /// The BSON value bytes of every value of a fixed-size type (double, date, int64: 8;
    /// int32: 4; bool: 1), `None` for strings and documents.
    fn fixed_size(&self) -> Option<u64> {
        match &self.source {
            Source::Double(_) | Source::Date(_) | Source::Int64(_) => Some(8),
            Source::Int32(_) => Some(4),
            Source::Bool(_) => Some(1),
            Source::ObjectId(_) => Some(12),
            Source::Str(_) | Source::Struct(_) | Source::Value(_) => None,
        }
    }

    /// Whether [`Field::push_rows`] appends any rows of this field as one run: a column of a
    /// fixed-size type without nulls.
    fn pushes_as_run(&self) -> bool {
        self.fixed_size().is_some() && self.nulls.is_none()
    }

    /// Adds each row's BSON element size as [`Field::size`] gives it to its entry of `sizes`
    /// (all rows of the batch), and sets `bad` where a row's value has no BSON form (the
    /// first reason kept). A column of a fixed-size type is counted without reading its
    /// values.
    fn add_sizes(&self, sizes: &mut [u64], bad: &mut [Option<String>], scratch: &mut Column) {
        // A `UInt64` column is read row by row: a value past `i64::MAX` rejects its row.
        let fixed = self
            .fixed_size()
            .filter(|_| !matches!(self.source, Source::Int64(Int64s::U64(_))));
        if let Some(size) = fixed {
            let size = 2 + self.name.len() as u64 + size;
            match &self.nulls {
                None => sizes.iter_mut().for_each(|s| *s += size),
                Some(nulls) => {
                    for (row, s) in sizes.iter_mut().enumerate() {
                        if nulls.is_valid(row) {
                            *s += size;
                        }
                    }
                }
            }
            return;
        }
        for (row, (s, b)) in sizes.iter_mut().zip(bad.iter_mut()).enumerate() {
            match self.size(row, scratch) {
                Ok(size) => *s += size,
                Err(e) => {
                    b.get_or_insert(e);
                }
            }
        }
    }

    /// Appends batch rows `rows` to `column`, in order, and counts each one's size into
    /// `sizes` from row `at` on (the rows' positions in the columns). A column without nulls
    /// of a fixed-size type is appended as one run.
    fn push_rows(&self, rows: &[usize], at: usize, column: &mut Column, sizes: &mut RowSizes<'_>) {
        let head = 2 + self.name.len() as u64;
        let names = self.name.len() as u64 + 1;
        if self.nulls.is_none() {
            let appended = match &self.source {
                Source::Double(f) => {
                    column.extend_floats(rows.iter().map(|&r| f.value(r)));
                    true
                }
                Source::Int32(f) => {
                    column.extend_ints(tag::INT32, rows.iter().map(|&r| i64::from(f.value(r))));
                    true
                }
                Source::Date(f) => {
                    column.extend_ints(tag::DATETIME, rows.iter().map(|&r| f.value(r)));
                    true
                }
                // A row with a `UInt64` past `i64::MAX` was rejected before.
                Source::Int64(f) => {
                    column.extend_ints(
                        tag::INT64,
                        rows.iter().map(|&r| f.value(r).unwrap_or_default()),
                    );
                    true
                }
                Source::Bool(a) => {
                    column.extend_ints(tag::BOOLEAN, rows.iter().map(|&r| i64::from(a.value(r))));
                    true
                }
                _ => false,
            };
            if appended && let Some(size) = self.fixed_size() {
                sizes.add_each(at, rows.len(), head + size, names);
                return;
            }
        }
        for (i, &row) in rows.iter().enumerate() {
            let size = self.push(row, column);
            if size > 0 {
                sizes.add(at + i, size, names);
            }
        }
    }
}

/// Reads column `array` of field `f` (`path`: its dotted name in messages), or says why it
/// is refused.
fn field<'a>(
    f: &'a arrow_schema::Field,
    array: &'a dyn Array,
    path: &str,
) -> std::result::Result<Field<'a>, String> {
    let name = f.name().as_str();
    // BSON field names are C strings, at every depth.
    if name.as_bytes().contains(&0) {
        return Err(format!(
            "field name {name:?} holds a NUL byte, which BSON cannot store"
        ));
    }
    values::check_type(path, f.data_type())?;
    check_names(f.data_type())?;
    let metadata = f.metadata();
    let object_id = metadata.get(BSON_TYPE_KEY).map(String::as_str) == Some("objectId");
    // A mark changes what the values are (or makes a null BSON null): the mapping's reader
    // reads them.
    let marked = metadata.contains_key(BSON_TYPE_KEY)
        || metadata.contains_key(ENCODING_KEY)
        || (metadata.contains_key(NULLS_KEY) && array.logical_null_count() > 0);
    let source = match array.data_type() {
        DataType::FixedSizeBinary(12) if object_id => {
            Source::ObjectId(array.as_fixed_size_binary())
        }
        _ if marked => Source::Value(values::Column::new(f, array, path)),
        DataType::Float64 => {
            let a = array.as_primitive::<Float64Type>();
            Source::Double(Doubles::F64(a))
        }
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            Source::Double(Doubles::F32(a))
        }
        DataType::Int8 => {
            let a = array.as_primitive::<Int8Type>();
            Source::Int32(Int32s::I8(a))
        }
        DataType::Int16 => {
            let a = array.as_primitive::<Int16Type>();
            Source::Int32(Int32s::I16(a))
        }
        DataType::Int32 => {
            let a = array.as_primitive::<Int32Type>();
            Source::Int32(Int32s::I32(a))
        }
        DataType::UInt8 => {
            let a = array.as_primitive::<UInt8Type>();
            Source::Int32(Int32s::U8(a))
        }
        DataType::UInt16 => {
            let a = array.as_primitive::<UInt16Type>();
            Source::Int32(Int32s::U16(a))
        }
        DataType::Int64 => {
            let a = array.as_primitive::<Int64Type>();
            Source::Int64(Int64s::I64(a))
        }
        DataType::UInt32 => {
            let a = array.as_primitive::<UInt32Type>();
            Source::Int64(Int64s::U32(a))
        }
        DataType::UInt64 => {
            let a = array.as_primitive::<UInt64Type>();
            Source::Int64(Int64s::U64(a))
        }
        DataType::Boolean => Source::Bool(array.as_boolean()),
        DataType::Utf8 => Source::Str(Strs::Utf8(array.as_string::<i32>())),
        DataType::LargeUtf8 => Source::Str(Strs::Large(array.as_string::<i64>())),
        DataType::Utf8View => Source::Str(Strs::View(array.as_string_view())),
        DataType::Date64 => {
            let a = array.as_primitive::<Date64Type>();
            Source::Date(Dates::Date64(a))
        }
        DataType::Date32 => {
            let a = array.as_primitive::<Date32Type>();
            Source::Date(Dates::Date32(a))
        }
        DataType::Timestamp(unit, _) => match unit {
            TimeUnit::Second => {
                let a = array.as_primitive::<TimestampSecondType>();
                Source::Date(Dates::Seconds(a))
            }
            TimeUnit::Millisecond => {
                let a = array.as_primitive::<TimestampMillisecondType>();
                Source::Date(Dates::Millis(a))
            }
            TimeUnit::Microsecond => {
                let a = array.as_primitive::<TimestampMicrosecondType>();
                Source::Date(Dates::Micros(a))
            }
            TimeUnit::Nanosecond => {
                let a = array.as_primitive::<TimestampNanosecondType>();
                Source::Date(Dates::Nanos(a))
            }
        },
        DataType::Struct(fields) => {
            let a = array.as_struct();
            let children = fields
                .iter()
                .zip(a.columns())
                .map(|(f, c)| field(f, c.as_ref(), &format!("{path}.{}", f.name())))
                .collect::<std::result::Result<Vec<_>, String>>()?;
            Source::Struct(children)
        }
        _ => Source::Value(values::Column::new(f, array, path)),
    };
    Ok(Field {
        name,
        nulls: array.logical_nulls(),
        source,
    })
}

/// Checks that no struct field name inside a column of type `data_type` (in lists and
/// dictionaries too) holds a NUL byte, which BSON cannot store.
fn check_names(data_type: &DataType) -> std::result::Result<(), String> {
    match data_type {
        DataType::Struct(fields) => fields.iter().try_for_each(|f| {
            if f.name().as_bytes().contains(&0) {
                return Err(format!(
                    "field name {:?} holds a NUL byte, which BSON cannot store",
                    f.name()
                ));
            }
            check_names(f.data_type())
        }),
        DataType::List(item)
        | DataType::LargeList(item)
        | DataType::FixedSizeList(item, _)
        | DataType::ListView(item)
        | DataType::LargeListView(item) => check_names(item.data_type()),
        DataType::Dictionary(_, values) => check_names(values),
        _ => Ok(()),
    }
}

/// The rows of a batch read into columns.
struct ColumnarInput {
    keys: Vec<Arc<BucketKey>>,
    columns: MeasurementColumns,
    errors: Vec<WriteError>,
}

fn bad_value(message: String) -> Error {
    Error::Rejected {
        code: ErrorCode::BadValue,
        message,
    }
}

impl CollectionInner {
    pub(crate) fn insert_record_batch(
        &self,
        batch: &RecordBatch,
        options: &InsertOptions,
        mapping: &RecordBatchOptions,
    ) -> Result<InsertResult> {
        let batch = &mapping.apply(batch, &self.spec())?;
        let columns = batch
            .schema_ref()
            .fields()
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| plain::plain(f, c))
            .collect::<std::result::Result<Vec<_>, String>>()
            .map_err(bad_value)?;
        let input = self.read_batch(&columns, batch.num_rows(), options.ordered)?;
        self.insert_call(input.errors, options.durability, |writer, call| {
            let source = crate::write::reopen::Reopener { coll: self };
            let mut batches = Vec::new();
            let outcome =
                self.catalog
                    .stage_call(writer, &input.keys, &input.columns, None, &source);
            take_outcome(outcome, &mut batches, &mut call.result);
            let failed = self.commit_staged(
                writer,
                batches,
                Some(&input.columns),
                options.durability,
                call,
            )?;
            if failed.is_empty() {
                return Ok(());
            }
            // Rows of batches another writer's failure aborted are placed again from
            // documents, as `insert_many` places them (SPEC ).
            let again: std::collections::HashSet<usize> =
                failed.iter().map(|(index, _)| *index).collect();
            let cols = &input.columns;
            let mut docs = Vec::new();
            for (g, range) in cols.groups.iter().enumerate() {
                for row in range.clone() {
                    let (Some(&index), Some(&time)) = (cols.indices.get(row), cols.times.get(row))
                    else {
                        continue;
                    };
                    if again.contains(&index) {
                        let doc = cols.row_document(row).map_err(bad_value)?;
                        docs.push((g, index, time, doc));
                    }
                }
            }
            let mut todo: Vec<Vec<Measurement<'_>>> = vec![Vec::new(); input.keys.len()];
            for (g, index, time, doc) in &docs {
                if let Some(group) = todo.get_mut(*g) {
                    group.push(Measurement {
                        index: *index,
                        time: *time,
                        doc,
                        generated_id: None,
                    });
                }
            }
            let meta_field = self.spec().meta_field;
            let columns = MeasurementColumns::from_measurements(&todo, meta_field.as_deref());
            self.place_with_retries(
                writer,
                &input.keys,
                todo,
                columns,
                batch.num_rows(),
                options.durability,
                call,
            )
        })
    }

    /// Reads the columns of a batch of `n` rows (dictionaries unpacked) into columns grouped
    /// by series, each group in time order.
    fn read_batch(
        &self,
        columns: &[(FieldRef, ArrayRef)],
        n: usize,
        ordered: bool,
    ) -> Result<ColumnarInput> {
        let spec = self.spec();
        let mut time = None;
        let mut meta = None;
        let mut fields = Vec::new();
        for (f, array) in columns {
            let name = f.name().as_str();
            if name.as_bytes().contains(&0) {
                return Err(bad_value(format!(
                    "field name {name:?} holds a NUL byte, which BSON cannot store"
                )));
            }
            if name.len() > tscoll_codec::MAX_NAME_LEN {
                return Err(bad_value(long_name(name.len())));
            }
            let column = field(f, array.as_ref(), name).map_err(bad_value)?;
            if Some(name) == spec.meta_field.as_deref() {
                meta = Some(column);
            } else {
                if name == spec.time_field {
                    if !matches!(column.source, Source::Date(_)) {
                        return Err(bad_value(format!(
                            "'{name}' must be a Timestamp, Date32 or Date64 column, not {}",
                            f.data_type()
                        )));
                    }
                    time = Some(fields.len());
                }
                fields.push(column);
            }
        }
        let Some(time) = time else {
            return Err(bad_value(format!(
                "'{}' must be present and contain a valid BSON UTC datetime value",
                spec.time_field
            )));
        };
        let id_field = fields.iter().position(|f| f.name == "_id");
        let has_id = id_field.is_some();
        // Series: the key of each distinct meta value, found from a hash of the value as
        // the batch holds it (in this batch, or in the collection's cache of values seen
        // before); only a value new to both is built and normalized.
        let mut keys = SeriesKeys::default();
        // Group of each distinct meta value, and the distinct value of each row.
        let mut meta_groups: Vec<usize> = Vec::new();
        let mut row_meta: Vec<u32> = Vec::with_capacity(n);
        if let Some(f) = &meta {
            // Each row's meta value hashed column by column; a row whose hash was seen joins
            // that value once a comparison (also column by column) confirms it.
            let mut hashes = vec![0u64; n];
            f.hash_rows(&mut hashes);
            // Hash → (a row holding the value, its index in `meta_groups`).
            let mut first: HashMap<u64, (usize, u32), BuildFx> = HashMap::default();
            let mut pairs = Vec::with_capacity(n);
            for (row, &hash) in hashes.iter().enumerate() {
                let &mut (rep, _) = first.entry(hash).or_insert((row, u32::MAX));
                pairs.push((rep, row));
            }
            let mut same = vec![true; n];
            f.same_rows(&pairs, &mut same);
            // Rows whose hash another value has: (hash, row holding the value, index).
            let mut others: Vec<(u64, usize, u32)> = Vec::new();
            // The written bytes of a value new to the batch (`write::meta_cache`).
            let mut written = Vec::new();
            for row in 0..n {
                let hash = hashes[row];
                let known = if same[row] {
                    first.get(&hash).map(|&(_, i)| i).filter(|&i| i != u32::MAX)
                } else {
                    others
                        .iter()
                        .find(|&&(h, r, _)| h == hash && f.same_value(r, row))
                        .map(|&(_, _, i)| i)
                };
                if let Some(i) = known {
                    row_meta.push(i);
                    continue;
                }
                let i = u32::try_from(meta_groups.len()).unwrap_or(u32::MAX);
                if same[row] {
                    if let Some(slot) = first.get_mut(&hash) {
                        slot.1 = i;
                    }
                } else {
                    others.push((hash, row, i));
                }
                row_meta.push(i);
                written.clear();
                f.write_as_written(row, &mut written);
                let cached = lock(&self.meta_cache).get(hash, &written).cloned();
                let key = match cached {
                    Some(key) => key,
                    None => {
                        // A null meta is no meta, as a null field is no field.
                        let key = Arc::new(BucketKey::from_meta(f.bson(row).as_ref()));
                        lock(&self.meta_cache).insert(hash, &written, Arc::clone(&key));
                        key
                    }
                };
                meta_groups.push(keys.group_of(key));
            }
        } else {
            keys.group_of(Arc::new(BucketKey::no_meta()));
            meta_groups.push(0);
            row_meta.resize(n, 0);
        }
        // The accepted rows' group and time, in input order; then grouped (a counting sort)
        // and each group sorted by time (stable, R-6.2.2).
        let mut errors = Vec::new();
        let mut accepted: Vec<(u32, i64, usize)> = Vec::with_capacity(n);
        let mut group_rows = vec![0usize; keys.len()];
        let Source::Date(times) = &fields[time].source else {
            return Err(bad_value(format!(
                "'{}' must be a Timestamp, Date32 or Date64 column",
                spec.time_field
            )));
        };
        let time_column = &fields[time];
        // Each row's size and a field holding a UInt64 past i64::MAX, column by column.
        let mut scratch = Column::new();
        let mut sizes = vec![0u64; n];
        let mut bad: Vec<Option<String>> = vec![None; n];
        for f in &fields {
            f.add_sizes(&mut sizes, &mut bad, &mut scratch);
        }
        for (row, &mi) in row_meta.iter().enumerate() {
            let reject = |message: String| WriteError {
                index: row,
                code: ErrorCode::BadValue,
                message,
            };
            if time_column.is_null(row) {
                errors.push(reject(format!(
                    "'{}' must be present and contain a valid BSON UTC datetime value",
                    spec.time_field
                )));
                if ordered {
                    break;
                }
                continue;
            }
            let t = times.value(row);
            // The row's size and UInt64 values past i64::MAX.
            // A row without an `_id` gets a generated one.
            let id_absent = id_field
                .and_then(|i| fields.get(i))
                .is_none_or(|f| f.absent(row));
            let raw = sizes.get(row).copied().unwrap_or_default()
                + if id_absent { 2 + 3 + 12 } else { 0 };
            let g = meta_groups.get(mi as usize).copied().unwrap_or_default();
            // A value with no BSON form, in a field or in the meta value.
            let reason = bad
                .get_mut(row)
                .and_then(Option::take)
                .or_else(|| meta.as_ref().and_then(|m| m.error(row)));
            if let Some(reason) = reason {
                errors.push(reject(reason));
                if ordered {
                    break;
                }
                continue;
            }
            if let Some(e) = keys.get(g).and_then(|k| too_large(row, raw, k)) {
                errors.push(e);
                if ordered {
                    break;
                }
                continue;
            }
            if let Some(c) = group_rows.get_mut(g) {
                *c += 1;
                accepted.push((u32::try_from(g).unwrap_or(u32::MAX), t, row));
            }
        }
        // Where each group's rows begin, then the rows placed group by group.
        let total = accepted.len();
        let mut next = Vec::with_capacity(keys.len());
        let mut at = 0;
        for &c in &group_rows {
            next.push(at);
            at += c;
        }
        let mut order = vec![(0i64, 0usize); total];
        for &(g, t, row) in &accepted {
            if let Some(slot) = next.get_mut(g as usize)
                && let Some(o) = order.get_mut(*slot)
            {
                *o = (t, row);
                *slot += 1;
            }
        }
        drop(accepted);
        // Columns: a generated `_id` first, then the batch's fields.
        let mut out = MeasurementColumns {
            times: Vec::with_capacity(total),
            indices: Vec::with_capacity(total),
            raw: Vec::with_capacity(total),
            names: Vec::with_capacity(total),
            present: Vec::with_capacity(total),
            groups: Vec::with_capacity(group_rows.len()),
            ..MeasurementColumns::default()
        };
        if !has_id {
            out.fields
                .push(("_id".to_owned(), Column::with_capacity(total)));
        }
        out.fields.extend(
            fields
                .iter()
                .map(|f| (f.name.to_owned(), Column::with_capacity(total))),
        );
        // Rows in staging order: each group's, in time order.
        let mut start = 0;
        for &c in &group_rows {
            let group = order.get_mut(start..start + c).unwrap_or_default();
            group.sort_by_key(|&(t, _)| t);
            for &(t, row) in &*group {
                out.times.push(t);
                out.indices.push(row);
            }
            out.groups.push(start..start + c);
            start += c;
        }
        out.raw.resize(total, 0);
        out.names.resize(total, 0);
        out.present.resize(total, 0);
        // Then column by column: each value read once from its array, straight into its
        // column.
        let nf = out.fields.len();
        out.starts
            .resize(group_rows.len() * nf, RowStart::default());
        let order = &out.indices;
        let mut sizes = RowSizes {
            raw: &mut out.raw,
            names: &mut out.names,
            present: &mut out.present,
        };
        let generated = usize::from(!has_id);
        // The `_id`s generated for rows without one, in staging order.
        let missing = match id_field.and_then(|i| fields.get(i)) {
            Some(f) => order.iter().filter(|&&row| f.absent(row)).count(),
            None => order.len(),
        };
        let mut new_ids = ids::generate(missing);
        let mut new_id = || new_ids.next().unwrap_or_default().bytes();
        for (k, (name, column)) in out.fields.iter_mut().enumerate() {
            let field = k.checked_sub(generated).and_then(|i| fields.get(i));
            if let Some(f) = field.filter(|f| name != "_id" && f.pushes_as_run()) {
                // Every group's rows in one run; then where each group starts.
                f.push_rows(order, 0, column, &mut sizes);
                let mut at = RowStart::default();
                for (g, range) in out.groups.iter().enumerate() {
                    at = column.row_start_after(at, range.start);
                    if let Some(s) = out.starts.get_mut(g * nf + k) {
                        *s = at;
                    }
                }
                continue;
            }
            for (g, range) in out.groups.iter().enumerate() {
                if let Some(s) = out.starts.get_mut(g * nf + k) {
                    *s = column.end();
                }
                let Some(rows) = order.get(range.clone()) else {
                    continue;
                };
                let at = range.start;
                match field {
                    // A null `_id` is a missing one: generated, as for a document.
                    Some(f) if name == "_id" => {
                        for (i, &row) in rows.iter().enumerate() {
                            if f.absent(row) {
                                column.push_bytes(tag::OBJECT_ID, &new_id());
                                sizes.add(at + i, 2 + 3 + 12, 4);
                            } else {
                                let size = f.push(row, column);
                                if size > 0 {
                                    sizes.add(at + i, size, f.name.len() as u64 + 1);
                                }
                            }
                        }
                    }
                    Some(f) => f.push_rows(rows, at, column, &mut sizes),
                    None => {
                        for i in 0..rows.len() {
                            column.push_bytes(tag::OBJECT_ID, &new_id());
                            sizes.add(at + i, 2 + 3 + 12, 4);
                        }
                    }
                }
            }
        }
        Ok(ColumnarInput {
            keys: keys.keys,
            columns: out,
            errors,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BooleanArray, Float64Array, Int32Array, Int64Array, StringArray, StructArray,
        TimestampMillisecondArray, UInt64Array,
    };
    use arrow_buffer::NullBuffer;
    use arrow_schema::Field as ArrowField;

    use super::*;

    /// A struct of every meta type, with null rows, null children and a `UInt64` past
    /// `i64::MAX`.
    fn meta_column() -> StructArray {
        let children: Vec<(Arc<ArrowField>, ArrayRef)> = vec![
            (
                Arc::new(ArrowField::new("host", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![
                    Some("a"),
                    None,
                    Some(""),
                    Some("a"),
                ])),
            ),
            (
                Arc::new(ArrowField::new("d", DataType::Float64, true)),
                Arc::new(Float64Array::from(vec![
                    Some(-0.0),
                    Some(1.5),
                    None,
                    Some(0.0),
                ])),
            ),
            (
                Arc::new(ArrowField::new("i", DataType::Int32, true)),
                Arc::new(Int32Array::from(vec![Some(1), Some(-7), Some(0), None])),
            ),
            (
                Arc::new(ArrowField::new("l", DataType::Int64, true)),
                Arc::new(Int64Array::from(vec![
                    Some(1),
                    None,
                    Some(i64::MIN),
                    Some(5),
                ])),
            ),
            (
                Arc::new(ArrowField::new("u", DataType::UInt64, true)),
                Arc::new(UInt64Array::from(vec![
                    Some(u64::MAX),
                    Some(3),
                    None,
                    Some(4),
                ])),
            ),
            (
                Arc::new(ArrowField::new("b", DataType::Boolean, true)),
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    Some(false),
                    None,
                    Some(true),
                ])),
            ),
            (
                Arc::new(ArrowField::new(
                    "t",
                    DataType::Timestamp(TimeUnit::Millisecond, None),
                    true,
                )),
                Arc::new(TimestampMillisecondArray::from(vec![
                    Some(-1),
                    Some(1_700_000_000_000),
                    None,
                    Some(0),
                ])),
            ),
        ];
        let inner = StructArray::from(children);
        let outer = StructArray::from(vec![(
            Arc::new(ArrowField::new("inner", inner.data_type().clone(), true)),
            Arc::new(inner) as ArrayRef,
        )]);
        let (fields, columns, _) = outer.into_parts();
        StructArray::new(
            fields,
            columns,
            Some(NullBuffer::from(vec![true, true, false, true])),
        )
    }

    #[test]
    fn a_row_writes_the_bytes_of_its_bson_value_as_written() {
        let meta = meta_column();
        let m = ArrowField::new("m", meta.data_type().clone(), true);
        let f = field(&m, &meta, "m").expect("a supported type");
        for row in 0..meta.len() {
            let mut direct = Vec::new();
            f.write_as_written(row, &mut direct);
            let mut via_bson = Vec::new();
            if let Some(v) = f.bson(row) {
                tscoll_catalog::write_as_written(&v, &mut via_bson);
            }
            assert_eq!(direct, via_bson, "row {row}: {:?}", f.bson(row));
        }
        // The null row writes nothing; the others are documents.
        let mut null_row = Vec::new();
        f.write_as_written(2, &mut null_row);
        assert!(null_row.is_empty());
    }
}
