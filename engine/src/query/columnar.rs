//! A columnar result: the measurements a query finds as one vector per field, built straight
//! from the decoded bucket columns without a document per measurement.

use std::collections::HashMap;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::to_bson;
use tscoll_codec::{Bucket, tag};

use super::control_view::ControlView;
use super::memory::{MemoryView, Reader};
use super::plan::{Candidate, Candidates, Plan, Verdict};
use super::projection::Projection;
use super::rowfilter::RowFilter;
use super::sort::SortPlan;
use super::topk::{TopK, order_candidates};
use super::unpack::SegmentView;
use super::walk::{Collector, Take};
use super::{FindOptions, QueryStats, SortOrder};
use crate::collection::Collection;
use crate::error::{Error, ErrorCode, Result};

/// The measurements a query found, column by column (row `i` of every vector is the same
/// measurement).
///
/// * `times[i]`: the time, in ms since the Unix epoch (always present, whatever the
///   projection).
/// * `series[i]`: the measurement's series, an index into `metas`.
/// * `metas`: the meta value of each series in the result (`None` for the series without a
///   meta value), in order of first appearance.
/// * `fields`: `(name, values)` per measurement field the result holds (the time and meta
///   fields excluded), in order of first appearance; `values[i]` is `None` when measurement
///   `i` lacks the field (SPEC §4.8 skips).
///
/// Row order follows [`FindOptions`] as for [`Collection::find`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ColumnBatch {
    /// Time of each measurement (ms since the epoch).
    pub times: Vec<i64>,
    /// Series of each measurement: an index into [`ColumnBatch::metas`].
    pub series: Vec<u32>,
    /// Meta value of each series (`None` = no meta value).
    pub metas: Vec<Option<Bson>>,
    /// `(field name, value per measurement)`; `None` = missing.
    pub fields: Vec<(String, Vec<Option<Bson>>)>,
}

impl ColumnBatch {
    /// Number of measurements.
    #[must_use]
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether there is no measurement.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The values of one field, if the result holds it.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&[Option<Bson>]> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Measurement `row` as a document: `time_field`, `meta_field` (when the series has a meta
    /// value), then the fields it has in [`ColumnBatch::fields`] order (which may differ from
    /// a bucket's column order).
    ///
    /// # Panics
    /// When `row` is out of range.
    #[must_use]
    pub fn document(&self, row: usize, time_field: &str, meta_field: Option<&str>) -> Document {
        let mut d = Document::new();
        d.insert(time_field, DateTime::from_millis(self.times[row]));
        if let (Some(name), Some(Some(m))) = (meta_field, self.metas.get(self.series[row] as usize))
        {
            d.insert(name, m.clone());
        }
        for (name, values) in &self.fields {
            if let Some(v) = &values[row] {
                d.insert(name.clone(), v.clone());
            }
        }
        d
    }
}

impl Collection {
    /// As [`Collection::find`] (same filter, projection, sort and limit), with the result as
    /// columns ([`ColumnBatch`]) built from the decoded bucket columns: no document is made
    /// per measurement, and only the columns the projection and filter need are decoded.
    ///
    /// ```
    /// # use bson::{Bson, DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..4).map(|i| doc! { "t": DateTime::from_millis(i), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let opts = FindOptions { projection: Some(doc! { "v": 1 }), ..Default::default() };
    /// let batch = coll.find_columns(&doc! { "v": { "$gte": 2 } }, &opts)?;
    /// assert_eq!(batch.times, [2, 3]);
    /// assert_eq!(batch.field("v").unwrap(), [Some(Bson::Int64(2)), Some(Bson::Int64(3))]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn find_columns(&self, filter: &Document, options: &FindOptions) -> Result<ColumnBatch> {
        self.find_columns_with_stats(filter, options)
            .map(|(b, _)| b)
    }

    /// As [`Collection::find_columns`], also returning what the query did ([`QueryStats`]).
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn find_columns_with_stats(
        &self,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<(ColumnBatch, QueryStats)> {
        let mut stats = QueryStats::default();
        let plan = Plan::new(&self.inner, filter)?;
        let memory = {
            let projection = Projection::parse(options.projection.as_ref())?;
            let rows = RowFilter::new(&plan.filter, &plan.spec.time_field);
            MemoryView::capture(&self.inner, &plan, &|n| {
                projection.keeps(n) || rows.reads(n)
            })
        };
        let batch = Reader::new(&self.inner, &memory).find_columns(&plan, options, &mut stats)?;
        Ok((batch, stats))
    }
}

/// Which rows are kept while buckets are visited.
enum Keep {
    All,
    First(usize),
    Top(TopK<usize>),
}

/// A batch being built.
struct Builder {
    batch: ColumnBatch,
    /// Batch series index by candidate series.
    series: HashMap<usize, u32>,
    /// Position in `batch.fields` by name.
    fields: HashMap<String, usize>,
    /// Rows the batch is expected to hold (the columns are allocated for them).
    rows_hint: usize,
}

impl Builder {
    fn field(&mut self, name: &str) -> usize {
        if let Some(&i) = self.fields.get(name) {
            return i;
        }
        let i = self.batch.fields.len();
        let mut values = Vec::with_capacity(self.rows_hint.max(self.batch.times.len()));
        values.resize(self.batch.times.len(), None);
        self.batch.fields.push((name.to_owned(), values));
        self.fields.insert(name.to_owned(), i);
        i
    }
}

impl Reader<'_> {
    fn find_columns(
        &self,
        plan: &Plan,
        options: &FindOptions,
        stats: &mut QueryStats,
    ) -> Result<ColumnBatch> {
        let projection = Projection::parse(options.projection.as_ref())?;
        let options = &match SortPlan::of(options, &plan.spec.time_field)? {
            SortPlan::Time(sort) => options.time_sorted(sort),
            SortPlan::Fields(_) => {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    "find_columns sorts on the time field only; use find for a sort on other \
                     fields",
                ));
            }
        };
        let rows = RowFilter::new(&plan.filter, &plan.spec.time_field);
        let mut cands = self.candidates(plan, stats)?;
        let keep = match (options.sort, options.keep()) {
            (Some(order), Some(k)) => {
                order_candidates(&mut cands.buckets, order);
                Keep::Top(TopK::new(k, order))
            }
            (None, Some(n)) => Keep::First(n),
            _ => Keep::All,
        };
        let all = matches!(keep, Keep::All);
        let mut collector = Columns {
            reader: *self,
            plan,
            projection: &projection,
            rows: &rows,
            cands: &cands,
            sort: options.sort,
            b: Builder {
                batch: ColumnBatch::default(),
                series: HashMap::new(),
                fields: HashMap::new(),
                rows_hint: 0,
            },
            keep,
        };
        // With every row kept, the buckets are judged first and unpacked after, so that the
        // columns are sized once (the sum of their counts).
        self.collect_in_order(
            plan,
            &mut cands.buckets.iter().copied().map(Ok),
            all,
            &mut collector,
            stats,
        )?;
        let Columns { b, keep, .. } = collector;
        let mut batch = b.batch;
        let order: Option<Vec<usize>> = match keep {
            Keep::Top(top) => Some(top.into_sorted().into_iter().map(|(_, r)| r).collect()),
            // Rows met in the order asked for (one series read in index order, say) stay.
            Keep::All if options.sort == Some(SortOrder::Ascending) && batch.times.is_sorted() => {
                None
            }
            Keep::All
                if options.sort == Some(SortOrder::Descending)
                    && batch.times.is_sorted_by(|a, b| a >= b) =>
            {
                None
            }
            Keep::All if options.sort.is_some() => {
                let mut idx: Vec<usize> = (0..batch.len()).collect();
                match options.sort {
                    Some(SortOrder::Descending) => {
                        idx.sort_by_key(|&i| std::cmp::Reverse(batch.times[i]));
                    }
                    _ => idx.sort_by_key(|&i| batch.times[i]),
                }
                Some(idx)
            }
            _ => None,
        };
        let skip = options.skip.min(batch.len());
        match order {
            Some(order) => batch = gather(batch, order.get(skip..).unwrap_or_default()),
            None if skip > 0 => {
                let rest: Vec<usize> = (skip..batch.len()).collect();
                batch = gather(batch, &rest);
            }
            None => {}
        }
        if projection.cuts() {
            for (name, values) in &mut batch.fields {
                for v in values.iter_mut() {
                    *v = v.take().and_then(|v| projection.cut(name, v));
                }
            }
            if let Some(meta_field) = plan.spec.meta_field.as_deref() {
                for m in &mut batch.metas {
                    *m = m.take().and_then(|v| projection.cut(meta_field, v));
                }
            }
        }
        stats.rows_returned = batch.len() as u64;
        Ok(batch)
    }
}

/// `find_columns`' collector: the matching rows of the buckets visited, appended to the
/// batch's columns.
struct Columns<'a> {
    reader: Reader<'a>,
    plan: &'a Plan,
    projection: &'a Projection,
    rows: &'a RowFilter<'a>,
    cands: &'a Candidates,
    sort: Option<SortOrder>,
    b: Builder,
    keep: Keep,
}

impl Collector for Columns<'_> {
    fn closed(&mut self, cand: &Candidate) -> bool {
        match &self.keep {
            Keep::First(n) => self.b.batch.len() >= *n,
            Keep::Top(top) => {
                top.closed_to(cand.min_time, self.plan.last_possible_time(cand.min_time))
            }
            Keep::All => false,
        }
    }

    fn control(
        &mut self,
        _k: usize,
        control: &ControlView<'_>,
        _verdict: Verdict,
        stats: &mut QueryStats,
    ) -> Result<Take> {
        if let Keep::Top(top) = &self.keep
            && self.sort == Some(SortOrder::Descending)
            && top.kth().is_some_and(|kth| control.max_time <= kth)
        {
            stats.buckets_skipped += 1;
            return Ok(Take::Done);
        }
        if matches!(self.keep, Keep::All) {
            self.b.rows_hint += usize::try_from(control.count).unwrap_or(0);
        }
        Ok(Take::Unpack)
    }

    fn reads(&self, field: &str, whole: bool) -> bool {
        let whole = whole || self.rows.is_empty();
        self.projection.keeps(field) || (!whole && self.rows.reads(field))
    }

    fn bucket(
        &mut self,
        k: usize,
        segments: Vec<Bucket>,
        control: Option<(&ControlView<'_>, Verdict)>,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let Some((control, verdict)) = control else {
            return Ok(());
        };
        let (plan, projection, rows) = (self.plan, self.projection, self.rows);
        let b = &mut self.b;
        if b.rows_hint > 0 {
            // Sized once, before the first rows (every control record was read).
            b.batch.times.reserve(b.rows_hint);
            b.batch.series.reserve(b.rows_hint);
            b.rows_hint = 0;
        }
        let cand = &self.cands.buckets[k];
        let meta = self.cands.series[cand.series].meta(&self.reader)?;
        let fields: Vec<&str> = control.field_names().collect();
        let time_field = plan.spec.time_field.as_str();
        let whole = verdict == Verdict::Whole || rows.is_empty();
        let corrupt = |r| self.reader.corrupt_data(&cand.id, r);
        let series = match b.series.get(&cand.series) {
            Some(&s) => s,
            None => {
                let s = u32::try_from(b.batch.metas.len()).unwrap_or(u32::MAX);
                b.batch.metas.push(meta.cloned());
                b.series.insert(cand.series, s);
                s
            }
        };
        let keep = &mut self.keep;
        for seg in &segments {
            let mut view = SegmentView::lazy(seg, time_field).map_err(corrupt)?;
            let bound = (!whole).then(|| rows.bind(&mut view, time_field, meta));
            // (batch field, where its values are) of the projected fields this segment has.
            let cols: Vec<(usize, Cells<'_>)> = fields
                .iter()
                .filter(|n| **n != time_field && projection.keeps(n))
                .filter_map(|n| view.position(n).map(|p| (b.field(n), p)))
                .collect::<Vec<_>>()
                .into_iter()
                .map(|(f, p)| (f, Cells::of(&mut view, p)))
                .collect();
            let absent: Vec<usize> = (0..b.batch.fields.len())
                .filter(|f| !cols.iter().any(|(c, _)| c == f))
                .collect();
            for row in 0..view.rows() {
                stats.rows_examined += 1;
                if let Some(bf) = &bound {
                    stats.rows_filtered += 1;
                    if !bf.matches(&view, row).map_err(corrupt)? {
                        continue;
                    }
                }
                let t = view.times[row];
                match keep {
                    Keep::First(n) if b.batch.len() >= *n => return Ok(()),
                    Keep::Top(top) if !top.accepts(t) => continue,
                    Keep::Top(top) => top.push(t, b.batch.len()),
                    _ => {}
                }
                b.batch.times.push(t);
                b.batch.series.push(series);
                for (f, cells) in &cols {
                    let v = cells.get(&view, row).map_err(corrupt)?;
                    b.batch.fields[*f].1.push(v);
                }
                for &f in &absent {
                    b.batch.fields[f].1.push(None);
                }
            }
        }
        Ok(())
    }
}

/// Where the values of one column of a segment are read.
enum Cells<'a> {
    /// Every row an int32: the int lane.
    Int32(&'a [i64]),
    /// Every row an int64: the int lane.
    Int64(&'a [i64]),
    /// Every row a double: the float lane.
    Double(&'a [f64]),
    /// Any other column, materialized: the value of each row through [`to_bson`].
    Values(usize),
}

impl<'a> Cells<'a> {
    /// The cells of column `c` (a [`SegmentView::position`]).
    fn of(view: &mut SegmentView<'a>, c: usize) -> Self {
        if let Some(col) = view.column(c)
            && let Some(&t) = col.types().first()
            && col.types().iter().fold(0, |acc, &x| acc | (x ^ t)) == 0
        {
            match t {
                tag::INT32 if col.ints().len() == col.len() => return Cells::Int32(col.ints()),
                tag::INT64 if col.ints().len() == col.len() => return Cells::Int64(col.ints()),
                tag::DOUBLE if col.floats().len() == col.len() => {
                    return Cells::Double(col.floats());
                }
                _ => {}
            }
        }
        view.materialize(c);
        Cells::Values(c)
    }

    /// The value at `row` (`None` = missing).
    fn get(&self, view: &SegmentView<'_>, row: usize) -> std::result::Result<Option<Bson>, String> {
        Ok(Some(match self {
            Cells::Int32(v) => {
                Bson::Int32(i32::try_from(v[row]).map_err(|_| "int32 out of range".to_owned())?)
            }
            Cells::Int64(v) => Bson::Int64(v[row]),
            Cells::Double(v) => Bson::Double(v[row]),
            Cells::Values(c) => return to_bson(view.value(*c, row)),
        }))
    }
}

/// The rows `order` selects, in that order; series renumbered by first appearance.
fn gather(mut batch: ColumnBatch, order: &[usize]) -> ColumnBatch {
    let mut renumber: HashMap<u32, u32> = HashMap::new();
    let mut metas = Vec::new();
    let series = order
        .iter()
        .map(|&i| {
            let s = batch.series[i];
            *renumber.entry(s).or_insert_with(|| {
                metas.push(std::mem::take(&mut batch.metas[s as usize]));
                u32::try_from(metas.len() - 1).unwrap_or(u32::MAX)
            })
        })
        .collect();
    ColumnBatch {
        times: order.iter().map(|&i| batch.times[i]).collect(),
        series,
        metas,
        fields: batch
            .fields
            .into_iter()
            .map(|(name, mut values)| {
                let v = order.iter().map(|&i| values[i].take()).collect();
                (name, v)
            })
            .collect(),
    }
}
