//! Unpacking buckets into measurements (SPEC §14.1): a bucket's segments are decoded (only
//! the columns a query needs, `decode_bucket_projected`) and read as rows; a measurement is
//! built as the time field, the meta field, then the bucket's other columns in column order
//! rows in stored order.

use bson::{Bson, DateTime, Document};
use tscoll_catalog::BucketId;
use tscoll_catalog::value::to_bson;
use tscoll_codec::{Bucket, Column, Lane, ValueRef, tag};

use super::QueryStats;
use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::storage::control::Control;

/// The rows of one decoded segment: times, and every decoded column but time, readable by
/// row. A column's values are laid out as one [`ValueRef`] per row when it is
/// *materialized* (for columns read row after row); otherwise a value is found by walking
/// the column (for the one row a last-point query builds).
pub(crate) struct SegmentView<'a> {
    /// Time of each row (ms).
    pub(crate) times: &'a [i64],
    /// The other decoded columns, in the segment's column order.
    cols: Vec<SegmentColumn<'a>>,
}

struct SegmentColumn<'a> {
    name: &'a str,
    column: &'a Column,
    values: Option<Vec<ValueRef<'a>>>,
}

impl<'a> SegmentView<'a> {
    /// Reads a decoded segment, every column materialized.
    ///
    /// # Errors
    /// A message when the segment has no time column, it holds a non-date, or a column has
    /// the wrong length.
    pub(crate) fn new(seg: &'a Bucket, time_field: &str) -> std::result::Result<Self, String> {
        let mut view = Self::lazy(seg, time_field)?;
        for c in &mut view.cols {
            c.values = Some(values_of(c.column));
        }
        Ok(view)
    }

    /// Reads a decoded segment, no column materialized.
    ///
    /// # Errors
    /// As [`SegmentView::new`].
    pub(crate) fn lazy(seg: &'a Bucket, time_field: &str) -> std::result::Result<Self, String> {
        let mut times: Option<&'a [i64]> = None;
        let mut cols = Vec::with_capacity(seg.columns.len());
        for (name, col) in &seg.columns {
            if col.len() != seg.row_count {
                return Err(format!("column '{name}' has the wrong length"));
            }
            if name == time_field {
                if col
                    .types()
                    .iter()
                    .fold(0, |acc, &t| acc | (t ^ tag::DATETIME))
                    != 0
                    || col.ints().len() != seg.row_count
                {
                    return Err("time column holds a non-date".to_owned());
                }
                times = Some(col.ints());
            } else {
                cols.push(SegmentColumn {
                    name: name.as_str(),
                    column: col,
                    values: None,
                });
            }
        }
        let times = times.ok_or_else(|| "segment without a time column".to_owned())?;
        Ok(SegmentView { times, cols })
    }

    /// Lays out column `col` (a [`SegmentView::position`]) for reads row after row.
    pub(crate) fn materialize(&mut self, col: usize) {
        if let Some(c) = self.cols.get_mut(col)
            && c.values.is_none()
        {
            c.values = Some(values_of(c.column));
        }
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.times.len()
    }

    /// Position of a decoded column.
    pub(crate) fn position(&self, field: &str) -> Option<usize> {
        self.cols.iter().position(|c| c.name == field)
    }

    /// Position of a decoded column, looked for from position `hint` on, then from the
    /// start: fields asked for in column order are each found at the first comparison.
    pub(crate) fn position_from(&self, field: &str, hint: usize) -> Option<usize> {
        let hint = hint.min(self.cols.len());
        let (before, after) = self.cols.split_at(hint);
        after
            .iter()
            .position(|c| c.name == field)
            .map(|p| p + hint)
            .or_else(|| before.iter().position(|c| c.name == field))
    }

    /// The decoded columns of `names` (those it has) and their positions, found in time
    /// linear in the names when they come in column order (a bucket's field order).
    pub(crate) fn positions<'n>(
        &self,
        names: impl IntoIterator<Item = &'n str>,
    ) -> Vec<(&'n str, usize)> {
        let mut next = 0;
        names
            .into_iter()
            .filter_map(|n| {
                let p = self.position_from(n, next)?;
                next = p + 1;
                Some((n, p))
            })
            .collect()
    }

    /// The decoded column at `col`.
    pub(crate) fn column(&self, col: usize) -> Option<&'a Column> {
        self.cols.get(col).map(|c| c.column)
    }

    /// Value of column `col` (a [`SegmentView::position`]) at `row`: O(1) when the column is
    /// materialized, O(row) otherwise.
    pub(crate) fn value(&self, col: usize, row: usize) -> ValueRef<'a> {
        let found = self.cols.get(col).and_then(|c| match &c.values {
            Some(v) => v.get(row).copied(),
            None => value_at(c.column, row),
        });
        found.unwrap_or(ValueRef::Missing)
    }
}

/// The value of one row of a column, found by counting the rows of its lane before it.
fn value_at(col: &Column, row: usize) -> Option<ValueRef<'_>> {
    let types = col.types();
    let t = *types.get(row)?;
    let lane = Lane::of(t)?;
    let before = || {
        types[..row]
            .iter()
            .filter(|&&x| Lane::of(x) == Some(lane))
            .count()
    };
    Some(match lane {
        Lane::Empty if t == tag::MISSING => ValueRef::Missing,
        Lane::Empty => ValueRef::Empty(t),
        Lane::Int => ValueRef::Int(t, *col.ints().get(before())?),
        Lane::Float => ValueRef::Float(*col.floats().get(before())?),
        Lane::Bytes => {
            let i = before();
            let start = if i == 0 { 0 } else { *col.ends().get(i - 1)? };
            let end = *col.ends().get(i)?;
            ValueRef::Bytes(t, col.bytes().get(start as usize..end as usize)?)
        }
    })
}

/// One [`ValueRef`] per row of a column; a column of one int or double type is read straight
/// from its lane.
fn values_of(col: &Column) -> Vec<ValueRef<'_>> {
    let types = col.types();
    if let Some(&t) = types.first()
        && types.iter().all(|&x| x == t)
    {
        match Lane::of(t) {
            Some(Lane::Int) if col.ints().len() == types.len() => {
                return col.ints().iter().map(|&i| ValueRef::Int(t, i)).collect();
            }
            Some(Lane::Float) if col.floats().len() == types.len() => {
                return col.floats().iter().map(|&f| ValueRef::Float(f)).collect();
            }
            _ => {}
        }
    }
    let mut v = Vec::with_capacity(types.len());
    v.extend(col.iter());
    v
}

/// What a built measurement holds besides its columns (SPEC ).
#[derive(Clone, Copy)]
pub(crate) struct Shape<'a> {
    /// The time field's name, when the time is part of the result.
    pub(crate) time: Option<&'a str>,
    /// `(meta field name, meta value)`, when the bucket has a meta value and it is part of
    /// the result.
    pub(crate) meta: Option<(&'a str, &'a Bson)>,
}

/// Builds one measurement: time, meta, then `cols` (`(name, position)`, column order) where
/// the row has a value.
///
/// # Errors
/// A message when a stored value is corrupt.
pub(crate) fn build_row(
    seg: &SegmentView<'_>,
    row: usize,
    shape: Shape<'_>,
    cols: &[(&str, usize)],
) -> std::result::Result<Document, String> {
    let mut doc = Document::new();
    if let Some(name) = shape.time {
        doc.insert(name, DateTime::from_millis(seg.times[row]));
    }
    if let Some((name, m)) = shape.meta {
        doc.insert(name, m.clone());
    }
    for &(name, c) in cols {
        if let Some(v) = to_bson(seg.value(c, row))? {
            doc.insert(name, v);
        }
    }
    Ok(doc)
}

impl CollectionInner {
    /// Decodes only the last segment of a bucket (where a time-sorted bucket keeps its latest
    /// measurement); counts the bucket as unpacked.
    ///
    /// # Errors
    /// [`Error::Storage`] or [`Error::Codec`] when the segment cannot be read.
    pub(crate) fn decode_last_segment(
        &self,
        id: &BucketId,
        stats: &mut QueryStats,
    ) -> Result<Option<Bucket>> {
        stats.buckets_unpacked += 1;
        let Some(v) = self.store.last_segment(id)? else {
            return Ok(None);
        };
        Ok(Some(tscoll_codec::decode_bucket(&v)?))
    }

    /// The [`Error::Corruption`] of a bad bucket segment.
    pub(crate) fn corrupt_data(&self, id: &BucketId, reason: String) -> Error {
        self.store.corrupt_data(id, reason)
    }

    /// Unpacks a bucket into measurements (SPEC §14.1): time, meta, then the other columns in
    /// the bucket's column order (the order of `control.min`); rows in stored order. Only the
    /// fields `keep` accepts are decoded and put in the documents; `meta` is added under the
    /// meta field's name when given. Returns `(time in ms, document)` pairs.
    ///
    /// # Errors
    /// [`Error::Storage`], [`Error::Codec`] or [`Error::Corruption`] when stored data cannot be
    /// read.
    pub(crate) fn unpack_bucket(
        &self,
        id: &BucketId,
        control: &Control,
        meta: Option<&Bson>,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Vec<(i64, Document)>> {
        let spec = self.spec();
        let time_field = spec.time_field.as_str();
        let order: Vec<&str> = control
            .min
            .keys()
            .map(String::as_str)
            .filter(|n| *n != time_field && keep(n))
            .collect();
        let shape = Shape {
            time: keep(time_field).then_some(time_field),
            meta: match (meta, spec.meta_field.as_deref()) {
                (Some(m), Some(name)) if keep(name) => Some((name, m)),
                _ => None,
            },
        };
        let segments = self.read_segments(id, &mut |n| n == time_field || keep(n))?;
        let mut out = Vec::with_capacity(control.count as usize);
        for (_, seg) in &segments {
            let view = SegmentView::new(seg, time_field).map_err(|r| self.corrupt_data(id, r))?;
            let cols = view.positions(order.iter().copied());
            for row in 0..view.rows() {
                let doc =
                    build_row(&view, row, shape, &cols).map_err(|r| self.corrupt_data(id, r))?;
                out.push((view.times[row], doc));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use bson::{Bson, doc};
    use tscoll_catalog::value::push_value;

    use super::*;

    #[test]
    fn lazy_and_materialized_reads_agree() {
        let values = [
            Some(Bson::Int32(1)),
            None,
            Some(Bson::String("ab".into())),
            Some(Bson::Double(2.5)),
            Some(Bson::Null),
            Some(Bson::Document(doc! { "x": 1 })),
            Some(Bson::String(String::new())),
            Some(Bson::Int64(-7)),
        ];
        let (mut time, mut col, mut scratch) = (Column::new(), Column::new(), Vec::new());
        for (i, v) in values.iter().enumerate() {
            time.push_int(tag::DATETIME, i64::try_from(i).expect("i"));
            match v {
                Some(b) => push_value(&mut col, b, &mut scratch),
                None => col.push_missing(),
            }
        }
        let seg = Bucket {
            row_count: values.len(),
            columns: vec![("t".into(), time), ("v".into(), col)],
        };
        let lazy = SegmentView::lazy(&seg, "t").expect("view");
        let full = SegmentView::new(&seg, "t").expect("view");
        for (row, v) in values.iter().enumerate() {
            assert_eq!(lazy.value(0, row), full.value(0, row));
            assert_eq!(
                to_bson(lazy.value(0, row)).expect("value").as_ref(),
                v.as_ref()
            );
        }
        assert_eq!(lazy.times, [0, 1, 2, 3, 4, 5, 6, 7]);
    }
}
