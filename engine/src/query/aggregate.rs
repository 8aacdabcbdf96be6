//! Aggregates over time windows (SPEC: `$group` answered from control fields where
//! possible): the measurements matching a filter are grouped by series (optionally) and by
//! fixed time window, and accumulators (count, min, max, sum, average, first, last) computed
//! per group. A bucket that matches the filter whole and lies within one window is
//! answered from its control record when every accumulator allows it (`control.count` for
//! counts, `control.min`/`control.max` for minimums and maximums, which are exact over the
//! bucket's values, R-4.3.2); the others are unpacked, decoding only the columns needed.
//!
//! Many candidates are read in parts of consecutive bucket ids, on the machine's cores
//! (`parallel.rs`), each into groups of its own, merged in part order. The parts depend on
//! the candidates only, not on the number of cores, so every machine gives the same answer;
//! integer sums are kept exactly, as if the buckets were read one after the other.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::mem::discriminant;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::{compare, to_bson};
use tscoll_codec::{Bucket, ValueRef, tag};

use tscoll_catalog::{BucketId, BucketSums, Compensated, FieldSums};

use super::QueryStats;
use super::bulk::{dense, id_order};
use super::control_view::ControlView;
use super::memory::{MemoryView, Reader};
use super::parallel::{self, run_parts};
use super::plan::{Candidate, Plan, Verdict};
use super::rowfilter::RowFilter;
use super::unpack::SegmentView;
use super::walk::{Collector, Take};
use crate::collection::Collection;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::field_value;

mod rollup;

/// How one output field of an aggregate is computed over the measurements of a group, as
/// MongoDB's `$group` accumulators do. A field is a measurement field name, a dotted path
/// into one (`"a.b"`, read as the expression `"$a.b"` is: through an array of documents, the
/// array of their values), or the time field; the meta field is not a measurement field
/// (group by series instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accumulator {
    /// Number of measurements (int64).
    Count,
    /// Number of numeric values (int32, int64, double, decimal128) of the field (int64):
    /// with [`Accumulator::Sum`], the parts of a mean that merge across groups (SQL's
    /// `count(field)` over a numeric column). Answered from the bucket sums.
    CountNumbers(String),
    /// Smallest value in BSON order (SPEC ); missing and `null` values are ignored;
    /// `null` when there is none.
    Min(String),
    /// Largest value in BSON order; missing and `null` values are ignored; `null` when there
    /// is none.
    Max(String),
    /// Sum of the numeric values (int32, int64, double, decimal128) as a double; other values
    /// are ignored; `0.0` when there is none.
    Sum(String),
    /// Sum of the numeric values typed as MongoDB's `$sum` types it: a double when a double
    /// (or decimal128) is among them or the integer sum passes the int64 range, else an
    /// int64 when an int64 is among them or the sum passes the int32 range, else an int32
    /// (`0` when there is none).
    SumTyped(String),
    /// Mean of the numeric values as a double; other values are ignored; `null` when there is
    /// none.
    Avg(String),
    /// The value of the measurement with the smallest time (`null` if it lacks the field).
    First(String),
    /// The value of the measurement with the greatest time (`null` if it lacks the field).
    Last(String),
    /// Population standard deviation of the numeric values (as doubles), as MongoDB's
    /// `$stdDevPop`; `null` when there is none.
    StdDevPop(String),
    /// Sample standard deviation of the numeric values (as doubles), as MongoDB's
    /// `$stdDevSamp`; `null` when there are fewer than two.
    StdDevSamp(String),
}

impl Accumulator {
    /// The field (or dotted path) the accumulator reads; `None` for [`Accumulator::Count`].
    #[must_use]
    pub fn field(&self) -> Option<&str> {
        match self {
            Accumulator::Count => None,
            Accumulator::CountNumbers(f)
            | Accumulator::Min(f)
            | Accumulator::Max(f)
            | Accumulator::Sum(f)
            | Accumulator::SumTyped(f)
            | Accumulator::Avg(f)
            | Accumulator::First(f)
            | Accumulator::Last(f)
            | Accumulator::StdDevPop(f)
            | Accumulator::StdDevSamp(f) => Some(f),
        }
    }
}

/// What [`Collection::aggregate_windows`] computes.
///
/// Each result is one group: `{_id: {<metaField>: <meta>, <timeField>: <window start>},
/// <output>: <value>, ...}`. The meta entry is there only with `by_series` and for a series
/// that has a meta value; the window start is a date, a multiple of `window_ms` from the
/// epoch (windows are `[start, start + window_ms)`). Outputs follow in the order given.
/// Groups are sorted by series (meta value in BSON order, the no-meta series first), then by
/// window. Equal times leave the choice of `First`/`Last` unspecified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AggregateSpec {
    /// Window length in ms (> 0), e.g. `3_600_000` for hourly windows.
    pub window_ms: i64,
    /// One group per series and window (`true`) or per window over all series (`false`).
    pub by_series: bool,
    /// `(output field name, accumulator)`, in result order. Names must be distinct, not
    /// `_id`, not empty and not start with `$`.
    pub outputs: Vec<(String, Accumulator)>,
}

pub(crate) fn aggregate_windows(
    coll: &Collection,
    filter: &Document,
    spec: &AggregateSpec,
) -> Result<Vec<Document>> {
    coll.aggregate_windows_with_stats(filter, spec)
        .map(|(d, _)| d)
}

pub(crate) fn aggregate_windows_with_stats(
    coll: &Collection,
    filter: &Document,
    spec: &AggregateSpec,
) -> Result<(Vec<Document>, QueryStats)> {
    let (batch, stats) = coll.aggregate_columns_with_stats(filter, spec)?;
    let spec_now = coll.inner.spec();
    let docs = (0..batch.len())
        .map(|i| batch.document(i, &spec_now.time_field, spec_now.meta_field.as_deref()))
        .collect();
    Ok((docs, stats))
}

pub(crate) fn aggregate_columns(
    coll: &Collection,
    filter: &Document,
    spec: &AggregateSpec,
) -> Result<AggregateBatch> {
    coll.aggregate_columns_with_stats(filter, spec)
        .map(|(b, _)| b)
}

pub(crate) fn aggregate_columns_with_stats(
    coll: &Collection,
    filter: &Document,
    spec: &AggregateSpec,
) -> Result<(AggregateBatch, QueryStats)> {
    let (grouped, stats) = grouped(coll, filter, spec)?;
    Ok((grouped.into_batch(spec), stats))
}

pub(crate) fn grouped(
    coll: &Collection,
    filter: &Document,
    spec: &AggregateSpec,
) -> Result<(Grouped, QueryStats)> {
    let mut stats = QueryStats::default();
    validate(spec)?;
    let plan = Plan::new(&coll.inner, filter)?;
    let rows = RowFilter::new(&plan.filter, &plan.spec.time_field);
    let memory = MemoryView::capture(&coll.inner, &plan, &|n| {
        rows.reads(n)
            || spec
                .outputs
                .iter()
                .any(|(_, a)| a.field().is_some_and(|f| f.split('.').next() == Some(n)))
    });
    let grouped = Reader::new(&coll.inner, &memory).aggregate(&plan, spec, &mut stats)?;
    Ok((grouped, stats))
}

/// The groups of an aggregate in result order, as [`AggregateBatch`] has them but for the
/// outputs: result `i`'s accumulators are `accs[order[i] * width..(order[i] + 1) * width]`.
pub(crate) struct Grouped {
    pub(crate) series: Vec<u32>,
    pub(crate) metas: Vec<Option<Bson>>,
    pub(crate) windows: Vec<i64>,
    order: Vec<usize>,
    accs: Vec<Acc>,
    width: usize,
}

impl Grouped {
    /// Puts the groups in the order their accumulators are kept in, which [`Self::take_rows`]
    /// then reads front to back (the result order visits them all over memory).
    pub(crate) fn unordered(&mut self) {
        let mut rows: Vec<(usize, u32, i64)> = self
            .order
            .iter()
            .zip(&self.series)
            .zip(&self.windows)
            .map(|((&g, &s), &w)| (g, s, w))
            .collect();
        rows.sort_unstable_by_key(|r| r.0);
        self.order = rows.iter().map(|r| r.0).collect();
        self.series = rows.iter().map(|r| r.1).collect();
        self.windows = rows.iter().map(|r| r.2).collect();
    }

    /// Gives `f(k, value)` the value of each output `k` of each group, group after group in
    /// result order (the accumulators are taken: a second call gives counts of 0).
    ///
    /// # Errors
    /// The first error of `f`.
    pub(crate) fn take_rows<E>(
        &mut self,
        mut f: impl FnMut(usize, Bson) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let width = self.width;
        for &g in &self.order {
            for (k, acc) in self.accs[g * width..(g + 1) * width].iter_mut().enumerate() {
                f(k, std::mem::replace(acc, Acc::Count(0)).result())?;
            }
        }
        Ok(())
    }

    fn into_batch(mut self, spec: &AggregateSpec) -> AggregateBatch {
        let n = self.order.len();
        let mut outputs: Vec<(String, OutputValues)> = spec
            .outputs
            .iter()
            .map(|(name, acc)| (name.clone(), OutputValues::for_accumulator(acc, n)))
            .collect();
        // Group after group (its accumulators side by side): counts and doubles read off
        // their accumulators in place, other values moved out of them.
        let width = self.width;
        for &g in &self.order {
            let accs = &mut self.accs[g * width..(g + 1) * width];
            for (acc, (_, values)) in accs.iter_mut().zip(outputs.iter_mut()) {
                match values {
                    OutputValues::Int64(v) => v.push(acc.count()),
                    OutputValues::Double(v) => v.push(acc.number()),
                    OutputValues::Bson(v) => {
                        v.push(std::mem::replace(acc, Acc::Count(0)).result());
                    }
                }
            }
        }
        AggregateBatch {
            series: self.series,
            metas: self.metas,
            windows: self.windows,
            outputs,
        }
    }
}

/// The groups of an aggregate as columns: group `i` is series `series[i]`, window
/// `windows[i]`, output values `outputs[k].1[i]`. Same groups, order and values as
/// [`Collection::aggregate_windows`] (see [`AggregateSpec`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AggregateBatch {
    /// Series of each group: an index into [`AggregateBatch::metas`] (0 when not grouped by
    /// series).
    pub series: Vec<u32>,
    /// Meta value of each series in the result, in result order (`None` = no meta value, or
    /// not grouped by series).
    pub metas: Vec<Option<Bson>>,
    /// Start of each group's window, ms since the epoch.
    pub windows: Vec<i64>,
    /// `(output name, value per group)`, in the order of [`AggregateSpec::outputs`].
    pub outputs: Vec<(String, OutputValues)>,
}

/// The values of one output of an aggregate, one per group, typed by its accumulator: counts
/// as integers, sums, means and deviations as doubles (8 bytes a group rather than a
/// [`Bson`]), the others as BSON values.
#[derive(Clone, Debug, PartialEq)]
pub enum OutputValues {
    /// [`Accumulator::Count`] and [`Accumulator::CountNumbers`]: never null.
    Int64(Vec<i64>),
    /// [`Accumulator::Sum`] (never null), [`Accumulator::Avg`],
    /// [`Accumulator::StdDevPop`] and [`Accumulator::StdDevSamp`]: `None` where the value
    /// is `null`.
    Double(Vec<Option<f64>>),
    /// Every other accumulator.
    Bson(Vec<Bson>),
}

impl OutputValues {
    /// Empty values of the type `acc` gives, with room for `n` groups.
    fn for_accumulator(acc: &Accumulator, n: usize) -> OutputValues {
        match acc {
            Accumulator::Count | Accumulator::CountNumbers(_) => {
                OutputValues::Int64(Vec::with_capacity(n))
            }
            Accumulator::Sum(_)
            | Accumulator::Avg(_)
            | Accumulator::StdDevPop(_)
            | Accumulator::StdDevSamp(_) => OutputValues::Double(Vec::with_capacity(n)),
            Accumulator::Min(_)
            | Accumulator::Max(_)
            | Accumulator::SumTyped(_)
            | Accumulator::First(_)
            | Accumulator::Last(_) => OutputValues::Bson(Vec::with_capacity(n)),
        }
    }

    /// Number of groups.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            OutputValues::Int64(v) => v.len(),
            OutputValues::Double(v) => v.len(),
            OutputValues::Bson(v) => v.len(),
        }
    }

    /// Whether there is no group.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Group `i`'s value as BSON (an int64, a double or `null`, or the value kept); `None`
    /// when `i` is out of range.
    #[must_use]
    pub fn get(&self, i: usize) -> Option<Bson> {
        match self {
            OutputValues::Int64(v) => v.get(i).map(|&n| Bson::Int64(n)),
            OutputValues::Double(v) => v.get(i).map(|d| d.map_or(Bson::Null, Bson::Double)),
            OutputValues::Bson(v) => v.get(i).cloned(),
        }
    }
}

impl AggregateBatch {
    /// Number of groups.
    #[must_use]
    pub fn len(&self) -> usize {
        self.windows.len()
    }

    /// Whether there is no group.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// The values of one output, if the spec has it.
    #[must_use]
    pub fn output(&self, name: &str) -> Option<&OutputValues> {
        self.outputs.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// Group `i` as [`Collection::aggregate_windows`] returns it: `{_id: {<meta_field>: <meta>,
    /// <time_field>: <window start>}, <output>: <value>, ...}`.
    ///
    /// # Panics
    /// When `i` is out of range.
    #[must_use]
    pub fn document(&self, i: usize, time_field: &str, meta_field: Option<&str>) -> Document {
        let mut id = Document::new();
        if let (Some(name), Some(Some(m))) = (meta_field, self.metas.get(self.series[i] as usize)) {
            id.insert(name, m.clone());
        }
        id.insert(time_field, DateTime::from_millis(self.windows[i]));
        let mut d = Document::new();
        d.insert("_id", id);
        for (name, values) in &self.outputs {
            d.insert(name.clone(), values.get(i).unwrap_or(Bson::Null));
        }
        d
    }
}

fn validate(spec: &AggregateSpec) -> Result<()> {
    let bad = |m: String| Err(Error::rejected(ErrorCode::BadValue, m));
    if spec.window_ms <= 0 {
        return bad(format!(
            "window_ms must be positive, not {}",
            spec.window_ms
        ));
    }
    for (i, (name, acc)) in spec.outputs.iter().enumerate() {
        crate::document::require_nul_free("output name", name)?;
        if let Some(field) = acc.field() {
            crate::document::require_nul_free("accumulator field", field)?;
        }
        if name.is_empty() || name == "_id" || name.starts_with('$') {
            return bad(format!("bad output name '{name}'"));
        }
        if spec.outputs[..i].iter().any(|(n, _)| n == name) {
            return bad(format!("output '{name}' given twice"));
        }
        if acc
            .field()
            .is_some_and(|f| f.is_empty() || f.split('.').any(str::is_empty))
        {
            return bad(format!("output '{name}': empty field path"));
        }
    }
    Ok(())
}

/// The running state of one accumulator.
#[derive(Clone, Debug)]
enum Acc {
    Count(u64),
    /// The numbers counted.
    Numbers(u64),
    Min(Extreme),
    Max(Extreme),
    Sum(Total),
    /// A sum typed as `$sum` types it.
    SumTyped(Total),
    Avg(Total, u64),
    First(Timed),
    Last(Timed),
    /// Count, mean and sum of squared deviations (Welford), and whether the sample
    /// deviation is wanted.
    Std(u64, f64, f64, bool),
}

/// The kept value of a `$min` or `$max`, boxed: most groups of a query hold sums and counts,
/// and an unboxed value would double every accumulator's size.
type Extreme = Option<Box<Bson>>;

/// The kept value of a `$first` or `$last` and its time, boxed as [`Extreme`].
type Timed = Option<Box<(i64, Bson)>>;

/// Puts `v` in a box, reusing the one there.
fn keep<T>(slot: &mut Option<Box<T>>, v: T) {
    match slot {
        Some(b) => **b = v,
        None => *slot = Some(Box::new(v)),
    }
}

/// A sum kept exactly where it can be: integers in 128 bits (no rounding, whatever the
/// order in which the parts of a query add them), doubles and decimals apart, compensated
/// (the bucket sums of control records are kept the same way, `tscoll_catalog::FieldSums`).
/// Its value is the integer sum rounded once to a double, plus the double sum.
#[derive(Clone, Copy, Debug, Default)]
struct Total {
    int: i128,
    float: Compensated,
    /// Whether an int64 was added.
    longs: bool,
    /// Whether a double (or decimal128) was added.
    doubles: bool,
}

impl Total {
    #[expect(clippy::cast_precision_loss, reason = "a sum is a double")]
    fn value(self) -> f64 {
        let mut total = self.float;
        total.add(self.int as f64);
        total.value()
    }

    /// The sum as `$sum` types it (see [`Accumulator::SumTyped`]).
    fn typed(self) -> Bson {
        match i64::try_from(self.int) {
            Ok(n) if !self.doubles => {
                if self.longs {
                    Bson::Int64(n)
                } else {
                    i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
                }
            }
            _ => Bson::Double(self.value()),
        }
    }

    fn add(&mut self, n: Num) {
        match n {
            Num::Int(i, long) => {
                self.int += i128::from(i);
                self.longs |= long;
            }
            Num::Float(f) => {
                self.float.add(f);
                self.doubles = true;
            }
        }
    }

    /// Adds a double lane.
    fn add_floats(&mut self, v: &[f64]) {
        v.iter().for_each(|x| self.float.add(*x));
        self.doubles |= !v.is_empty();
    }

    /// Adds a bucket's sums of a field.
    fn add_sums(&mut self, s: &FieldSums) {
        self.int += s.ints;
        self.float.merge(s.floats);
        self.longs |= s.longs;
        self.doubles |= s.doubles;
    }

    /// Adds an int lane of one type: int32 values are summed in 64 bits (no overflow below
    /// 2^32 values), int64 values in 128 bits.
    fn add_ints(&mut self, ty: u8, v: &[i64]) {
        self.longs |= ty == tag::INT64 && !v.is_empty();
        if ty == tag::INT32 {
            self.int += i128::from(v.iter().fold(0i64, |a, &x| a.wrapping_add(x)));
        } else {
            self.int += v.iter().map(|&x| i128::from(x)).sum::<i128>();
        }
    }

    fn merge(&mut self, other: Total) {
        self.int += other.int;
        self.float.merge(other.float);
        self.longs |= other.longs;
        self.doubles |= other.doubles;
    }
}

/// A number of a sum: integers are added exactly.
#[derive(Clone, Copy)]
enum Num {
    /// An integer, and whether it is an int64.
    Int(i64, bool),
    Float(f64),
}

impl Acc {
    fn new(a: &Accumulator) -> Acc {
        match a {
            Accumulator::Count => Acc::Count(0),
            Accumulator::CountNumbers(_) => Acc::Numbers(0),
            Accumulator::Min(_) => Acc::Min(None),
            Accumulator::Max(_) => Acc::Max(None),
            Accumulator::Sum(_) => Acc::Sum(Total::default()),
            Accumulator::SumTyped(_) => Acc::SumTyped(Total::default()),
            Accumulator::Avg(_) => Acc::Avg(Total::default(), 0),
            Accumulator::First(_) => Acc::First(None),
            Accumulator::Last(_) => Acc::Last(None),
            Accumulator::StdDevPop(_) => Acc::Std(0, 0.0, 0.0, false),
            Accumulator::StdDevSamp(_) => Acc::Std(0, 0.0, 0.0, true),
        }
    }

    /// The value of a count (of measurements or numbers).
    fn count(&self) -> i64 {
        match self {
            Acc::Count(n) | Acc::Numbers(n) => i64::try_from(*n).unwrap_or(i64::MAX),
            _ => 0,
        }
    }

    /// The value of a sum, mean or deviation as a double (`None`: `null`), as
    /// [`Acc::result`] gives it.
    fn number(&self) -> Option<f64> {
        match self {
            Acc::Sum(s) => Some(s.value()),
            #[expect(clippy::cast_precision_loss, reason = "a mean is a double")]
            Acc::Avg(s, n) => (*n != 0).then(|| s.value() / *n as f64),
            #[expect(clippy::cast_precision_loss, reason = "a deviation is a double")]
            Acc::Std(n, _, m2, sample) => {
                let d = if *sample { n.saturating_sub(1) } else { *n };
                (d != 0).then(|| (m2 / d as f64).sqrt())
            }
            _ => None,
        }
    }

    fn result(self) -> Bson {
        match self {
            Acc::Count(n) | Acc::Numbers(n) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
            Acc::Min(v) | Acc::Max(v) => v.map_or(Bson::Null, |b| *b),
            Acc::Sum(s) => Bson::Double(s.value()),
            Acc::SumTyped(s) => s.typed(),
            #[expect(clippy::cast_precision_loss, reason = "a mean is a double")]
            Acc::Avg(s, n) => {
                if n == 0 {
                    Bson::Null
                } else {
                    Bson::Double(s.value() / n as f64)
                }
            }
            Acc::First(v) | Acc::Last(v) => v.map_or(Bson::Null, |b| b.1),
            #[expect(clippy::cast_precision_loss, reason = "a deviation is a double")]
            Acc::Std(n, _, m2, sample) => {
                let d = if sample { n.saturating_sub(1) } else { n };
                if d == 0 {
                    Bson::Null
                } else {
                    Bson::Double((m2 / d as f64).sqrt())
                }
            }
        }
    }

    /// Adds one measurement's value (`v`, already looked up; `None` = missing) at time `t`.
    fn add(&mut self, t: i64, v: Value<'_>) -> std::result::Result<(), String> {
        match self {
            Acc::Count(n) => *n += 1,
            Acc::Numbers(n) => *n += u64::from(v.number()?.is_some()),
            Acc::Min(slot) => extreme(slot, v, Ordering::Less)?,
            Acc::Max(slot) => extreme(slot, v, Ordering::Greater)?,
            Acc::Sum(s) | Acc::SumTyped(s) => {
                if let Some(x) = v.number()? {
                    s.add(x);
                }
            }
            Acc::Avg(s, n) => {
                if let Some(x) = v.number()? {
                    s.add(x);
                    *n += 1;
                }
            }
            Acc::First(slot) => {
                if slot.as_ref().is_none_or(|b| t < b.0) {
                    keep(slot, (t, v.to_bson()?.unwrap_or(Bson::Null)));
                }
            }
            Acc::Last(slot) => {
                if slot.as_ref().is_none_or(|b| t >= b.0) {
                    keep(slot, (t, v.to_bson()?.unwrap_or(Bson::Null)));
                }
            }
            Acc::Std(n, mean, m2, _) => {
                if let Some(x) = v.number()? {
                    #[expect(clippy::cast_precision_loss, reason = "deviations are doubles")]
                    let x = match x {
                        Num::Int(i, _) => i as f64,
                        Num::Float(f) => f,
                    };
                    *n += 1;
                    let delta = x - *mean;
                    *mean += delta / *n as f64;
                    *m2 += delta * (x - *mean);
                }
            }
        }
        Ok(())
    }

    /// Adds a whole bucket's sums of the accumulator's field (a sum, mean or deviation).
    fn add_sums(&mut self, s: &FieldSums) {
        match self {
            Acc::Sum(total) | Acc::SumTyped(total) => total.add_sums(s),
            Acc::Numbers(n) => *n += s.count,
            Acc::Avg(total, n) => {
                total.add_sums(s);
                *n += s.count;
            }
            Acc::Std(n, mean, m2, _) => merge_std((n, mean, m2), s.count, s.mean(), s.m2),
            _ => {}
        }
    }
}

/// Merges the count, mean and squared deviations of other values into `(n, mean, m2)`
/// (Chan et al.'s pairwise update).
#[expect(clippy::cast_precision_loss, reason = "counts as doubles")]
fn merge_std(
    (n, mean, m2): (&mut u64, &mut f64, &mut f64),
    nb: u64,
    mean_b: Option<f64>,
    m2b: f64,
) {
    let Some(mean_b) = mean_b.filter(|_| nb > 0) else {
        return;
    };
    if *n == 0 {
        (*n, *mean, *m2) = (nb, mean_b, m2b);
        return;
    }
    let (na, nbf) = (*n as f64, nb as f64);
    let total = na + nbf;
    let delta = mean_b - *mean;
    *m2 += m2b + delta * delta * na * nbf / total;
    *mean += delta * nbf / total;
    *n += nb;
}

impl Acc {
    /// Adds the state of the same accumulator over later rows (a later part of the query):
    /// the result is the one of adding those rows one by one, but for the rounding of double
    /// sums.
    fn merge(&mut self, other: Acc) {
        match (self, other) {
            (Acc::Count(a), Acc::Count(b)) | (Acc::Numbers(a), Acc::Numbers(b)) => *a += b,
            (Acc::Min(slot), Acc::Min(Some(b))) => offer_extreme(slot, *b, Ordering::Less),
            (Acc::Max(slot), Acc::Max(Some(b))) => offer_extreme(slot, *b, Ordering::Greater),
            (Acc::Sum(a), Acc::Sum(b)) | (Acc::SumTyped(a), Acc::SumTyped(b)) => a.merge(b),
            (Acc::Avg(a, n), Acc::Avg(b, m)) => {
                a.merge(b);
                *n += m;
            }
            (Acc::First(slot), Acc::First(Some(b))) if slot.as_ref().is_none_or(|a| b.0 < a.0) => {
                *slot = Some(b);
            }
            (Acc::Last(slot), Acc::Last(Some(b))) if slot.as_ref().is_none_or(|a| b.0 >= a.0) => {
                *slot = Some(b);
            }
            (Acc::Std(n, mean, m2, _), Acc::Std(nb, mean_b, m2b, _)) => {
                merge_std((n, mean, m2), nb, Some(mean_b), m2b);
            }
            _ => {}
        }
    }
}

/// One measurement's value of an accumulator's field.
#[derive(Clone, Copy)]
enum Value<'a> {
    /// A stored value (top-level field).
    Stored(ValueRef<'a>),
    /// A looked-up value (dotted path), `None` = missing.
    Looked(Option<&'a Bson>),
}

impl Value<'_> {
    fn to_bson(self) -> std::result::Result<Option<Bson>, String> {
        match self {
            Value::Stored(v) => to_bson(v),
            Value::Looked(b) => Ok(b.cloned()),
        }
    }

    fn number(self) -> std::result::Result<Option<Num>, String> {
        Ok(match self {
            Value::Stored(ValueRef::Int(ty @ (tag::INT32 | tag::INT64), i)) => {
                Some(Num::Int(i, ty == tag::INT64))
            }
            Value::Stored(ValueRef::Float(d)) => Some(Num::Float(d)),
            Value::Stored(v @ ValueRef::Bytes(tag::DECIMAL128, _)) => {
                to_bson(v)?.as_ref().and_then(number)
            }
            Value::Stored(_) => None,
            Value::Looked(b) => b.and_then(number),
        })
    }
}

fn number(b: &Bson) -> Option<Num> {
    match b {
        Bson::Int32(i) => Some(Num::Int(i64::from(*i), false)),
        Bson::Int64(i) => Some(Num::Int(*i, true)),
        Bson::Double(d) => Some(Num::Float(*d)),
        Bson::Decimal128(d) => d.to_string().parse().ok().map(Num::Float),
        _ => None,
    }
}

/// `$min`/`$max`: keeps `v` if it is `want` (less / greater) than the kept value; missing,
/// null and undefined are ignored; on a tie the kept value stays.
fn extreme(slot: &mut Extreme, v: Value<'_>, want: Ordering) -> std::result::Result<(), String> {
    // Strings against a string: compared in place, converted only when kept.
    if let Value::Stored(r @ ValueRef::Bytes(tag::STRING, bytes)) = v
        && let Some(Bson::String(cur)) = slot.as_deref()
    {
        if bytes.cmp(cur.as_bytes()) == want
            && let Some(b) = to_bson(r)?
        {
            keep(slot, b);
        }
        return Ok(());
    }
    let b = match v.to_bson()? {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(()),
        Some(b) => b,
    };
    offer_extreme(slot, b, want);
    Ok(())
}

fn offer_extreme(slot: &mut Extreme, b: Bson, want: Ordering) {
    match slot {
        Some(cur) if compare(&b, cur) != want => {}
        _ => keep(slot, b),
    }
}

/// The groups of one query (or of one part of it). Group `g` is `keys[g]` = (series: its
/// position in the candidates' series, 0 when not by series; window start), its accumulators
/// `accs[g * width..(g + 1) * width]`, one per output.
struct Groups<'s> {
    spec: &'s AggregateSpec,
    width: usize,
    keys: Vec<(usize, i64)>,
    accs: Vec<Acc>,
    /// Group numbers by series and window number, for the keys within its range.
    dense: Option<DenseGroups>,
    /// Group numbers of the other keys.
    index: HashMap<(usize, i64), usize, BuildHasherDefault<GroupHasher>>,
}

/// A table of group numbers for the series `0..series` and the window numbers (window start
/// / window length) `first..first + windows`; [`NO_GROUP`] where there is none yet.
struct DenseGroups {
    series: usize,
    first: i64,
    windows: usize,
    slots: Vec<u32>,
}

const NO_GROUP: u32 = u32::MAX;

/// Largest [`DenseGroups`] table (entries); a query with more series × windows looks its
/// groups up by hash.
const MAX_DENSE_GROUPS: usize = 1 << 20;

/// The range of series and window numbers a query's groups will mostly fall in:
/// `(series, first window, windows)`.
type GroupRange = (usize, i64, usize);

impl<'s> Groups<'s> {
    /// Groups for about `expected` keys (space is reserved for them).
    fn new(spec: &'s AggregateSpec, range: Option<GroupRange>, expected: usize) -> Self {
        let dense = range.map(|(series, first, windows)| DenseGroups {
            series,
            first,
            windows,
            slots: vec![NO_GROUP; series * windows],
        });
        Groups {
            spec,
            width: spec.outputs.len(),
            keys: Vec::with_capacity(expected),
            accs: Vec::with_capacity(expected * spec.outputs.len()),
            dense,
            index: HashMap::default(),
        }
    }

    /// The group of `series` holding time `t`.
    fn get(&mut self, series: usize, t: i64) -> usize {
        self.slot(series, t.div_euclid(self.spec.window_ms))
    }

    /// The group of `series` and window number `n` (window start / window length).
    fn slot(&mut self, series: usize, n: i64) -> usize {
        match self.find(series, n) {
            Ok(g) => g,
            Err(at) => {
                let outputs = self.spec.outputs.iter();
                self.accs.extend(outputs.map(|(_, a)| Acc::new(a)));
                self.add_key(series, n, at)
            }
        }
    }

    /// The group of `series` and window number `n`, or where a new one is registered.
    fn find(&self, series: usize, n: i64) -> std::result::Result<usize, Place> {
        let at = self.dense.as_ref().and_then(|d| {
            let w = usize::try_from(n.checked_sub(d.first)?).ok()?;
            (series < d.series && w < d.windows).then_some(series * d.windows + w)
        });
        if let (Some(k), Some(d)) = (at, &self.dense) {
            return match d.slots[k] {
                NO_GROUP => Err(Place::Dense(k)),
                g => Ok(g as usize),
            };
        }
        let window = window_start(n, self.spec.window_ms);
        self.index
            .get(&(series, window))
            .copied()
            .ok_or(Place::Index)
    }

    /// Registers a new group (its accumulators already pushed) at `at`.
    fn add_key(&mut self, series: usize, n: i64, at: Place) -> usize {
        let window = window_start(n, self.spec.window_ms);
        self.keys.push((series, window));
        let g = self.keys.len() - 1;
        match at {
            Place::Dense(k) => {
                if let (Some(d), Ok(g32)) = (&mut self.dense, u32::try_from(g)) {
                    d.slots[k] = g32;
                } else {
                    self.index.insert((series, window), g);
                }
            }
            Place::Index => {
                self.index.insert((series, window), g);
            }
        }
        g
    }

    /// The accumulators of group `g`.
    fn accs(&mut self, g: usize) -> &mut [Acc] {
        &mut self.accs[g * self.width..(g + 1) * self.width]
    }

    /// The group numbers ordered by series (in `series_order`, which lists every series
    /// that has groups; `series` = the number of series) and window: read off the table
    /// when every group is in it, else sorted.
    fn ordered(&self, series_order: &[usize], series: usize) -> Vec<usize> {
        if let Some(d) = &self.dense
            && self.index.is_empty()
        {
            let mut out = Vec::with_capacity(self.keys.len());
            for &s in series_order {
                let row = &d.slots[s * d.windows..(s + 1) * d.windows];
                out.extend(row.iter().filter(|&&g| g != NO_GROUP).map(|&g| g as usize));
            }
            return out;
        }
        let mut rank = vec![0usize; series];
        for (r, &s) in series_order.iter().enumerate() {
            rank[s] = r;
        }
        let mut out: Vec<usize> = (0..self.keys.len()).collect();
        out.sort_unstable_by_key(|&g| (rank[self.keys[g].0], self.keys[g].1));
        out
    }

    /// Adds the groups of a later part of the query.
    fn merge(&mut self, other: Groups<'_>) {
        let width = self.width;
        let mut accs = other.accs.into_iter();
        for (series, window) in other.keys {
            let n = window.div_euclid(self.spec.window_ms);
            match self.find(series, n) {
                Ok(g) => {
                    for acc in self.accs(g) {
                        if let Some(part) = accs.next() {
                            acc.merge(part);
                        }
                    }
                }
                // A group new here takes the part's accumulators as they are.
                Err(at) => {
                    self.accs.extend(accs.by_ref().take(width));
                    self.add_key(series, n, at);
                }
            }
        }
    }
}

/// Where a new group is registered: a slot of the dense table, or the hash index.
#[derive(Clone, Copy)]
enum Place {
    Dense(usize),
    Index,
}

/// The start (ms) of window number `n` of `window_ms`: the first window of dates near the
/// lowest date starts before it, at a time no date can hold, and is reported as starting at
/// the lowest date (likewise at the other end).
fn window_start(n: i64, window_ms: i64) -> i64 {
    n.saturating_mul(window_ms)
}

/// The hash of a group key `(series, window start)`: a multiply-xorshift of the two
/// integers (the keys come from the query, not from outside, so no keyed hash is needed).
#[derive(Clone, Copy, Default)]
struct GroupHasher(u64);

impl Hasher for GroupHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(23) ^ n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    #[expect(clippy::cast_sign_loss, reason = "the bits of the key")]
    fn write_i64(&mut self, n: i64) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^ (h >> 33)
    }
}

/// Whether a value taken from control min/max can stand for the bucket's extreme: a scalar of
/// a type compared by value (not null, objects or arrays), the same type in min and max.
fn exact_extremes(min: &Bson, max: &Bson) -> bool {
    discriminant(min) == discriminant(max)
        && matches!(
            min,
            Bson::Double(_)
                | Bson::Int32(_)
                | Bson::Int64(_)
                | Bson::Decimal128(_)
                | Bson::String(_)
                | Bson::DateTime(_)
                | Bson::ObjectId(_)
                | Bson::Boolean(_)
                | Bson::Timestamp(_)
        )
}

/// Where an accumulator reads its field in a segment.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// `Count`: no field.
    None,
    /// The time field.
    Time,
    /// A column whose every row is an int32 or int64 of this type: its int lane.
    Ints(u8, &'a [i64]),
    /// A column whose every row is a double, none NaN: its float lane.
    Floats(&'a [f64]),
    /// A (materialized) column read row by row, or a dotted path into it.
    Column(usize),
    /// A field this segment does not have.
    Absent,
}

/// The source of each accumulator's field in a segment. Lanes are used only for top-level
/// fields and when `row_by_row` is false; other columns are materialized.
fn sources_of<'a>(
    view: &mut SegmentView<'a>,
    paths: &[Option<Vec<String>>],
    time_field: &str,
    row_by_row: bool,
) -> Vec<Source<'a>> {
    // Outputs usually follow the column order: each search starts after the last column found.
    let mut hint = 0;
    paths
        .iter()
        .map(|p| {
            let Some(p) = p else {
                return Source::None;
            };
            if p[0] == time_field {
                return if p.len() == 1 {
                    Source::Time
                } else {
                    Source::Absent
                };
            }
            let Some(c) = view.position_from(&p[0], hint) else {
                return Source::Absent;
            };
            hint = c + 1;
            if !row_by_row
                && p.len() == 1
                && let Some(col) = view.column(c)
                && let Some(&t) = col.types().first()
                && all_equal(col.types(), t)
            {
                if matches!(t, tag::INT32 | tag::INT64) && col.ints().len() == col.len() {
                    return Source::Ints(t, col.ints());
                }
                if t == tag::DOUBLE
                    && col.floats().len() == col.len()
                    && !col.floats().iter().any(|f| f.is_nan())
                {
                    return Source::Floats(col.floats());
                }
            }
            view.materialize(c);
            Source::Column(c)
        })
        .collect()
}

/// Whether every type code is `t` (one pass without early exit, which vectorizes).
fn all_equal(types: &[u8], t: u8) -> bool {
    types.iter().fold(0u8, |acc, &x| acc | (x ^ t)) == 0
}

/// Adds row `row` to an accumulator.
fn add_row(
    acc: &mut Acc,
    source: Source<'_>,
    path: &Option<Vec<String>>,
    view: &SegmentView<'_>,
    row: usize,
) -> std::result::Result<(), String> {
    let t = view.times[row];
    let stored = match source {
        Source::None | Source::Absent => ValueRef::Missing,
        Source::Time => ValueRef::Int(tag::DATETIME, t),
        Source::Ints(ty, v) => ValueRef::Int(ty, v[row]),
        Source::Floats(v) => ValueRef::Float(v[row]),
        Source::Column(c) => view.value(c, row),
    };
    let rest = path.as_deref().map_or(&[][..], |p| &p[1..]);
    if rest.is_empty() {
        acc.add(t, Value::Stored(stored))
    } else {
        // A dotted path as an aggregation expression reads it (through arrays of documents).
        let b = to_bson(stored)?;
        let v = field_value(b.as_ref().map(Cow::Borrowed), rest);
        acc.add(t, Value::Looked(v.as_deref()))
    }
}

/// Adds the rows `range` (all in one group) to an accumulator: counts, sums, minimums and
/// maximums of int or double lanes in one pass over the slice, the rest row by row.
fn add_run(
    acc: &mut Acc,
    source: Source<'_>,
    path: &Option<Vec<String>>,
    view: &SegmentView<'_>,
    range: std::ops::Range<usize>,
) -> std::result::Result<(), String> {
    let times = &view.times[range.clone()];
    match (&mut *acc, source) {
        (Acc::Count(n), _) | (Acc::Numbers(n), Source::Ints(..) | Source::Floats(_)) => {
            *n += times.len() as u64;
        }
        (Acc::Sum(s) | Acc::SumTyped(s), Source::Ints(ty, v)) => s.add_ints(ty, &v[range]),
        (Acc::Sum(s) | Acc::SumTyped(s), Source::Floats(v)) => s.add_floats(&v[range]),
        (Acc::Avg(s, n), Source::Ints(ty, v)) => {
            s.add_ints(ty, &v[range]);
            *n += times.len() as u64;
        }
        (Acc::Avg(s, n), Source::Floats(v)) => {
            s.add_floats(&v[range]);
            *n += times.len() as u64;
        }
        (Acc::Min(slot), Source::Ints(ty, v)) => {
            if let Some(m) = v[range]
                .iter()
                .copied()
                .reduce(|m, x| if x < m { x } else { m })
            {
                offer_extreme(slot, int_bson(ty, m)?, Ordering::Less);
            }
        }
        (Acc::Max(slot), Source::Ints(ty, v)) => {
            if let Some(m) = v[range]
                .iter()
                .copied()
                .reduce(|m, x| if x > m { x } else { m })
            {
                offer_extreme(slot, int_bson(ty, m)?, Ordering::Greater);
            }
        }
        (Acc::Min(slot), Source::Floats(v)) => {
            if let Some(m) = v[range]
                .iter()
                .copied()
                .reduce(|m, x| if x < m { x } else { m })
            {
                offer_extreme(slot, Bson::Double(m), Ordering::Less);
            }
        }
        (Acc::Max(slot), Source::Floats(v)) => {
            if let Some(m) = v[range]
                .iter()
                .copied()
                .reduce(|m, x| if x > m { x } else { m })
            {
                offer_extreme(slot, Bson::Double(m), Ordering::Greater);
            }
        }
        _ => {
            for row in range {
                add_row(acc, source, path, view, row)?;
            }
        }
    }
    Ok(())
}

/// Adds the rows of a segment that pass the row filter, one by one.
fn add_filtered(
    groups: &mut Groups<'_>,
    series: usize,
    view: &mut SegmentView<'_>,
    (rows, meta): (&RowFilter<'_>, Option<&Bson>),
    paths: &[Option<Vec<String>>],
    time_field: &str,
) -> std::result::Result<(), crate::mql::expr::EvalError> {
    let bound = rows.bind(view, time_field, meta);
    let sources = sources_of(view, paths, time_field, true);
    let view = &*view;
    let window_ms = groups.spec.window_ms;
    let mut current: Option<(i64, usize)> = None; // (window, group)
    for row in 0..view.rows() {
        if !bound.matches(view, row)? {
            continue;
        }
        let t = view.times[row];
        let window = t.div_euclid(window_ms);
        let g = match current {
            Some((w, g)) if w == window => g,
            _ => {
                let g = groups.get(series, t);
                current = Some((window, g));
                g
            }
        };
        for ((acc, source), path) in groups.accs(g).iter_mut().zip(&sources).zip(paths) {
            add_row(acc, *source, path, view, row)?;
        }
    }
    Ok(())
}

/// Adds every row of a segment: runs of rows in one window at once. When the rows are in
/// time order (`sorted`, from control), a run ends where a binary search finds the next
/// window; otherwise at the first row outside the window.
fn add_whole(
    groups: &mut Groups<'_>,
    series: usize,
    view: &mut SegmentView<'_>,
    sorted: bool,
    paths: &[Option<Vec<String>>],
    time_field: &str,
) -> std::result::Result<(), String> {
    let sources = sources_of(view, paths, time_field, false);
    let view = &*view;
    let window_ms = groups.spec.window_ms;
    let times = view.times;
    let mut start = 0;
    while start < times.len() {
        let from = times[start].div_euclid(window_ms) * window_ms;
        let to = from.saturating_add(window_ms);
        let end = if sorted {
            start + times[start..].partition_point(|&t| t < to)
        } else {
            times[start..]
                .iter()
                .position(|&t| t < from || t >= to)
                .map_or(times.len(), |n| start + n)
        };
        let g = groups.get(series, times[start]);
        for ((acc, source), path) in groups.accs(g).iter_mut().zip(&sources).zip(paths) {
            add_run(acc, *source, path, view, start..end)?;
        }
        start = end;
    }
    Ok(())
}

fn int_bson(ty: u8, v: i64) -> std::result::Result<Bson, String> {
    Ok(if ty == tag::INT32 {
        Bson::Int32(i32::try_from(v).map_err(|_| "int32 out of range".to_owned())?)
    } else {
        Bson::Int64(v)
    })
}

/// Candidates per part of an aggregate read on several threads (at least).
const PART_MIN: usize = 512;

/// Candidates from which an aggregate that reads control records is cut into parts: below,
/// its work (about a microsecond per control record, unless many buckets are unpacked) is
/// too short to gain from a second thread, which on a busy machine may start late.
const PARALLEL_CONTROL_MIN: usize = 8192;

/// Parts of one aggregate, at most (each part scans its own id range).
const MAX_PARTS: usize = 16;

/// The candidate buckets of one aggregate and what every part needs to read them. The
/// candidates are taken in id order and cut into parts of consecutive ids; each part reads
/// its control records, then the segments of the buckets control did not answer, into its
/// own groups; the parts' groups are merged in part order.
struct Job<'a> {
    reader: Reader<'a>,
    plan: &'a Plan,
    rows: &'a RowFilter<'a>,
    /// The meta value of each series, when the row filter reads it (else empty).
    metas: &'a [Option<Bson>],
    spec: &'a AggregateSpec,
    paths: &'a [Option<Vec<String>>],
    cands: &'a [Candidate],
    /// Positions in `cands`, in id order.
    order: Vec<usize>,
    /// Candidates per part.
    part_len: usize,
    /// Whether control records are read. They are not when the filter has no time or
    /// measurement predicate (every bucket matches whole) and no accumulator can be answered
    /// from control: every candidate is unpacked.
    read_control: bool,
    /// Whether the candidates are a large share of their id range, read by scans
    /// ([`dense`]).
    dense: bool,
    /// Where the groups will fall, when few enough for a table ([`DenseGroups`]).
    range: Option<GroupRange>,
}

impl<'a> Job<'a> {
    fn parts(&self) -> usize {
        self.order.len().div_ceil(self.part_len).max(1)
    }

    /// Reads part `i` into groups of its own.
    fn part(&self, i: usize) -> Result<(Groups<'a>, QueryStats)> {
        let spec = self.spec;
        let from = (i * self.part_len).min(self.order.len());
        let positions = &self.order[from..(from + self.part_len).min(self.order.len())];
        let ids: Vec<BucketId> = positions.iter().map(|&p| self.cands[p].id).collect();
        let mut stats = QueryStats::default();
        // About one group per bucket (a bucket spans one or two windows; a window, one or two
        // buckets of a series).
        let mut part = Part {
            job: self,
            ids: &ids,
            positions,
            series: positions
                .iter()
                .map(|&p| {
                    if spec.by_series {
                        self.cands[p].series
                    } else {
                        0
                    }
                })
                .collect(),
            groups: Groups::new(spec, self.range, positions.len()),
            flags: vec![(false, false); ids.len()],
        };
        // Buckets answered from control are added as their control records are read; the
        // others (partial or not, rows in time order or not) when unpacked.
        self.reader
            .collect_bulk(self.plan, &ids, self.dense, &mut part, &mut stats)?;
        Ok((part.groups, stats))
    }
}

/// One part of an aggregate: its candidates' groups.
struct Part<'j, 'a> {
    job: &'j Job<'a>,
    ids: &'j [BucketId],
    /// The position in `job.cands` of each candidate.
    positions: &'j [usize],
    /// The series (group position) of each candidate.
    series: Vec<usize>,
    groups: Groups<'a>,
    /// `(partial, sorted)` of each candidate unpacked: filtered row by row; rows in time
    /// order.
    flags: Vec<(bool, bool)>,
}

impl Collector for Part<'_, '_> {
    fn needs_control(&self) -> bool {
        self.job.read_control
    }

    fn control(
        &mut self,
        k: usize,
        control: &ControlView<'_>,
        verdict: Verdict,
        stats: &mut QueryStats,
    ) -> Result<Take> {
        let spec = self.job.spec;
        if control.count == 0 {
            return Ok(Take::Done);
        }
        let one_window = control.min_time.div_euclid(spec.window_ms)
            == control.max_time.div_euclid(spec.window_ms);
        let time_field = self.job.plan.spec.time_field.as_str();
        if verdict == Verdict::Whole
            && one_window
            && from_control(
                &mut self.groups,
                self.series[k],
                control,
                self.job.paths,
                time_field,
            )
        {
            stats.buckets_from_control += 1;
            return Ok(Take::Done);
        }
        self.flags[k] = (verdict == Verdict::Partial, control.sorted);
        Ok(Take::Unpack)
    }

    fn reads(&self, field: &str, _whole: bool) -> bool {
        self.job.paths.iter().flatten().any(|p| p[0] == field) || self.job.rows.reads(field)
    }

    fn bucket(
        &mut self,
        k: usize,
        segments: Vec<Bucket>,
        _control: Option<(&ControlView<'_>, Verdict)>,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let job = self.job;
        let time_field = job.plan.spec.time_field.as_str();
        let (partial, sorted) = self.flags[k];
        let series = self.series[k];
        let corrupt = |r| job.reader.corrupt_data(&self.ids[k], r);
        for seg in &segments {
            let mut view = SegmentView::lazy(seg, time_field).map_err(corrupt)?;
            stats.rows_examined += view.rows() as u64;
            if partial {
                stats.rows_filtered += view.rows() as u64;
                let meta = self
                    .positions
                    .get(k)
                    .and_then(|&p| job.cands.get(p))
                    .and_then(|c| job.metas.get(c.series))
                    .and_then(Option::as_ref);
                add_filtered(
                    &mut self.groups,
                    series,
                    &mut view,
                    (job.rows, meta),
                    job.paths,
                    time_field,
                )
                .map_err(|e| e.into_error("", corrupt))?;
            } else {
                add_whole(
                    &mut self.groups,
                    series,
                    &mut view,
                    sorted,
                    job.paths,
                    time_field,
                )
                .map_err(corrupt)?;
            }
        }
        Ok(())
    }
}

/// The series and window numbers a query's groups fall in, from its candidates (a bucket's
/// rows lie within its span from its min time), when the table is small enough.
fn group_range(
    spec: &AggregateSpec,
    cands: &[Candidate],
    series: usize,
    span_ms: i64,
) -> Option<GroupRange> {
    let lo = cands.iter().map(|c| c.min_time).min()?;
    let hi = cands.iter().map(|c| c.min_time).max()?;
    let first = lo.div_euclid(spec.window_ms);
    let last = hi.saturating_add(span_ms).div_euclid(spec.window_ms);
    let windows = usize::try_from(last.checked_sub(first)?.checked_add(1)?).ok()?;
    let series = if spec.by_series { series } else { 1 };
    (series.checked_mul(windows)? <= MAX_DENSE_GROUPS).then_some((series, first, windows))
}

/// Whether some bucket of the query could be answered from its control record: every
/// accumulator is a count, a min or max of a top-level measurement field, or the max of the
/// time field (what [`from_control`] takes).
fn control_may_answer(
    spec: &AggregateSpec,
    paths: &[Option<Vec<String>>],
    time_field: &str,
) -> bool {
    spec.outputs
        .iter()
        .zip(paths)
        .all(|((_, acc), path)| match (acc, path.as_deref()) {
            (Accumulator::Count, _) => true,
            (Accumulator::Max(_), Some([_])) => true,
            (Accumulator::Min(_), Some([f])) => f != time_field,
            (acc, Some([_])) => from_sums(acc),
            _ => false,
        })
}

impl Reader<'_> {
    fn aggregate(
        &self,
        plan: &Plan,
        spec: &AggregateSpec,
        stats: &mut QueryStats,
    ) -> Result<Grouped> {
        let time_field = plan.spec.time_field.as_str();
        let rows = RowFilter::new(&plan.filter, time_field);
        let mut cands = self.candidates(plan, stats)?;
        let paths: Vec<Option<Vec<String>>> = spec
            .outputs
            .iter()
            .map(|(_, a)| a.field().map(|f| f.split('.').map(str::to_owned).collect()))
            .collect();
        let range = group_range(spec, &cands.buckets, cands.series.len(), plan.span_ms);
        // Buckets answered by their rollups are left out of the parts.
        let (rolled, done) = match rollup::resolution(plan, spec) {
            Some(rollup) => {
                let (g, done) = self.rollup_groups(plan, spec, &cands, rollup, range, stats)?;
                (Some(g), done)
            }
            None => (None, Vec::new()),
        };
        let all_ids: Vec<BucketId> = cands.buckets.iter().map(|c| c.id).collect();
        let order: Vec<usize> = id_order(&all_ids)
            .into_iter()
            .filter(|&p| !done.get(p).copied().unwrap_or(false))
            .collect();
        let ids: Vec<BucketId> = order.iter().map(|&p| all_ids[p]).collect();
        let read_control = !rows.is_empty() || control_may_answer(spec, &paths, time_field);
        // The parts depend on the candidates only, not on the number of cores, so that double
        // sums (added part by part) come out the same on every machine.
        let parts = if read_control && ids.len() < PARALLEL_CONTROL_MIN {
            1
        } else {
            (ids.len() / PART_MIN).clamp(1, MAX_PARTS)
        };
        let threads = parallel::threads();
        // The series' meta values, when the row filter reads them (a clause such as
        // `$or: [{meta: …}, {field: …}]`).
        let metas: Vec<Option<Bson>> = if rows.needs_meta() {
            cands.metas(self)?
        } else {
            Vec::new()
        };
        let job = Job {
            reader: *self,
            plan,
            rows: &rows,
            metas: &metas,
            spec,
            paths: &paths,
            cands: &cands.buckets,
            order,
            part_len: ids.len().div_ceil(parts).max(1),
            read_control,
            dense: dense(ids.len(), cands.in_range),
            range,
        };
        let results = if ids.is_empty() {
            Vec::new()
        } else {
            run_parts(job.parts(), threads, &|i| job.part(i))?
        };
        let expected = results.iter().map(|(g, _)| g.keys.len()).sum::<usize>()
            + rolled.as_ref().map_or(0, |g| g.keys.len());
        let mut groups = Groups::new(spec, job.range, expected);
        if let Some(rolled) = rolled {
            groups.merge(rolled);
        }
        for (part, part_stats) in results {
            stats.add(&part_stats);
            groups.merge(part);
        }
        // Groups by series (meta value in BSON order, the no-meta series first), then window.
        let n_series = if spec.by_series {
            cands.series.len().max(1)
        } else {
            1
        };
        let mut used = vec![false; n_series];
        for (s, _) in &groups.keys {
            if let Some(u) = used.get_mut(*s) {
                *u = true;
            }
        }
        let mut metas: Vec<(usize, Option<&Bson>)> = Vec::new();
        for s in (0..n_series).filter(|&s| used[s]) {
            let meta = if spec.by_series {
                cands.series[s].meta(self)?
            } else {
                None
            };
            metas.push((s, meta));
        }
        metas.sort_by(|(_, a), (_, b)| match (a, b) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => compare(x, y),
        });
        let series_order: Vec<usize> = metas.iter().map(|(s, _)| *s).collect();
        let order = groups.ordered(&series_order, n_series);
        stats.rows_returned = order.len() as u64;
        let mut rank = vec![0u32; n_series];
        for (r, &s) in series_order.iter().enumerate() {
            rank[s] = u32::try_from(r).unwrap_or(u32::MAX);
        }
        let (series, windows) = order
            .iter()
            .map(|&g| {
                let (s, window) = groups.keys[g];
                (rank[s], window)
            })
            .unzip();
        // Each group is in `order` once: its accumulators are taken, not cloned.
        Ok(Grouped {
            series,
            metas: series_order
                .iter()
                .map(|&s| {
                    if spec.by_series {
                        cands.series[s].take_meta()
                    } else {
                        None
                    }
                })
                .collect(),
            windows,
            order,
            width: groups.width,
            accs: groups.accs,
        })
    }
}

/// Whether a whole bucket's contribution to `acc` is read off its sums (`control.sums`).
fn from_sums(acc: &Accumulator) -> bool {
    matches!(
        acc,
        Accumulator::CountNumbers(_)
            | Accumulator::Sum(_)
            | Accumulator::SumTyped(_)
            | Accumulator::Avg(_)
            | Accumulator::StdDevPop(_)
            | Accumulator::StdDevSamp(_)
    )
}

/// What a control record adds to one accumulator.
enum Update {
    /// Nothing but the count.
    Nothing,
    /// A min or max candidate.
    Extreme(Bson),
    /// The bucket's sums of the field.
    Sums(FieldSums),
}

/// Adds a whole bucket lying in one window from its control record alone, if every
/// accumulator allows it; `false` (nothing added) otherwise.
fn from_control(
    groups: &mut Groups<'_>,
    series: usize,
    control: &ControlView<'_>,
    paths: &[Option<Vec<String>>],
    time_field: &str,
) -> bool {
    let mut updates: Vec<Update> = Vec::with_capacity(paths.len());
    // Decoded on first use.
    let mut sums: Option<(BucketSums, Vec<&[u8]>)> = None;
    for ((_, acc), path) in groups.spec.outputs.iter().zip(paths) {
        let field = match path.as_deref() {
            None => {
                updates.push(Update::Nothing);
                continue;
            }
            Some([f]) => f.as_str(),
            Some(_) => return false, // dotted: unpack
        };
        let update = match acc {
            Accumulator::Max(_) if field == time_field => {
                Update::Extreme(Bson::DateTime(DateTime::from_millis(control.max_time)))
            }
            Accumulator::Min(_) | Accumulator::Max(_) if field != time_field => {
                match (control.min_of(field), control.max_of(field)) {
                    (None, None) => Update::Nothing, // no measurement has the field
                    (Some(a), Some(b)) if exact_extremes(&a, &b) => {
                        Update::Extreme(if matches!(acc, Accumulator::Min(_)) {
                            a
                        } else {
                            b
                        })
                    }
                    _ => return false,
                }
            }
            acc if from_sums(acc) => {
                if sums.is_none() {
                    sums = control.sums().map(|s| (s, control.field_keys()));
                }
                let Some(s) = sums
                    .as_ref()
                    .and_then(|(s, keys)| ControlView::field_sums(s, keys, field))
                else {
                    return false; // unknown: unpack
                };
                Update::Sums(s)
            }
            _ => return false,
        };
        updates.push(update);
    }
    let g = groups.get(series, control.min_time);
    for (acc, update) in groups.accs(g).iter_mut().zip(updates) {
        match (acc, update) {
            (Acc::Count(n), _) => *n += control.count,
            (Acc::Min(slot), Update::Extreme(b)) => offer_extreme(slot, b, Ordering::Less),
            (Acc::Max(slot), Update::Extreme(b)) => offer_extreme(slot, b, Ordering::Greater),
            (acc, Update::Sums(s)) => acc.add_sums(&s),
            _ => {}
        }
    }
    true
}
