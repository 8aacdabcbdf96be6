//! Aggregates over time windows (SPEC R-14.4.7: `$group` answered from control fields where
//! possible): the measurements matching a filter are grouped by series (optionally) and by
//! fixed time window, and accumulators (count, min, max, sum, average, first, last) computed
//! per group. A bucket that matches the filter whole (R-14.4.4) and lies within one window is
//! answered from its control record when every accumulator allows it (`control.count` for
//! counts, `control.min`/`control.max` for minimums and maximums, which are exact over the
//! bucket's values, R-4.3.2); the others are unpacked, decoding only the columns needed.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::mem::discriminant;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::{compare, to_bson};
use tscoll_codec::{ValueRef, tag};

use tscoll_catalog::BucketId;

use super::QueryStats;
use super::bulk::dense;
use super::control_view::ControlView;
use super::plan::{Plan, Verdict};
use super::rowfilter::RowFilter;
use super::unpack::SegmentView;
use crate::collection::{Collection, CollectionInner};
use crate::error::{Error, ErrorCode, Result};
use crate::filter::lookup;

/// How one output field of an aggregate is computed over the measurements of a group, as
/// MongoDB's `$group` accumulators do. A field is a measurement field name, a dotted path
/// into one (`"a.b"`), or the time field; the meta field is not a measurement field (group
/// by series instead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Accumulator {
    /// Number of measurements (int64).
    Count,
    /// Smallest value in BSON order (SPEC R-4.3.4); missing and `null` values are ignored;
    /// `null` when there is none.
    Min(String),
    /// Largest value in BSON order; missing and `null` values are ignored; `null` when there
    /// is none.
    Max(String),
    /// Sum of the numeric values (int32, int64, double, decimal128) as a double; other values
    /// are ignored; `0.0` when there is none.
    Sum(String),
    /// Mean of the numeric values as a double; other values are ignored; `null` when there is
    /// none.
    Avg(String),
    /// The value of the measurement with the smallest time (`null` if it lacks the field).
    First(String),
    /// The value of the measurement with the greatest time (`null` if it lacks the field).
    Last(String),
}

impl Accumulator {
    fn field(&self) -> Option<&str> {
        match self {
            Accumulator::Count => None,
            Accumulator::Min(f)
            | Accumulator::Max(f)
            | Accumulator::Sum(f)
            | Accumulator::Avg(f)
            | Accumulator::First(f)
            | Accumulator::Last(f) => Some(f),
        }
    }
}

/// What [`Collection::aggregate`] computes.
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

impl Collection {
    /// Aggregates the measurements matching `filter` (same filters as [`Collection::find`])
    /// per time window and optionally per series (SPEC R-14.4.7); see [`AggregateSpec`] for
    /// the result shape. Buckets that match whole and lie in one window are answered from
    /// their control record when every accumulator allows it (`Count`; `Min`/`Max` of a
    /// top-level field whose control min and max have the same type, R-4.3.2; `Max` of the
    /// time field): [`QueryStats::buckets_from_control`] counts them.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..120).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let spec = AggregateSpec {
    ///     window_ms: 3_600_000,
    ///     by_series: true,
    ///     outputs: vec![("n".into(), Accumulator::Count), ("top".into(), Accumulator::Max("v".into()))],
    /// };
    /// let (groups, stats) = coll.aggregate_with_stats(&doc! {}, &spec)?;
    /// assert_eq!(groups[1], doc! { "_id": { "m": "a", "t": DateTime::from_millis(3_600_000) }, "n": 60_i64, "top": 119_i64 });
    /// assert_eq!(stats.buckets_unpacked, 0); // one bucket per hour, answered from control
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `BadValue` for a bad spec (window ≤ 0, a bad or repeated output name, an empty field)
    /// or filter; as [`Collection::find`] when stored data cannot be read.
    pub fn aggregate(&self, filter: &Document, spec: &AggregateSpec) -> Result<Vec<Document>> {
        self.aggregate_with_stats(filter, spec).map(|(d, _)| d)
    }

    /// As [`Collection::aggregate`], also returning what the query did ([`QueryStats`];
    /// `rows_returned` is the number of groups).
    ///
    /// # Errors
    /// As [`Collection::aggregate`].
    pub fn aggregate_with_stats(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<(Vec<Document>, QueryStats)> {
        let (batch, stats) = self.aggregate_columns_with_stats(filter, spec)?;
        let spec_now = self.inner.spec();
        let docs = (0..batch.len())
            .map(|i| batch.document(i, &spec_now.time_field, spec_now.meta_field.as_deref()))
            .collect();
        Ok((docs, stats))
    }

    /// As [`Collection::aggregate`], with the groups as columns ([`AggregateBatch`]): each
    /// series' meta value once instead of once per group, no document per group.
    ///
    /// # Errors
    /// As [`Collection::aggregate`].
    pub fn aggregate_columns(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<AggregateBatch> {
        self.aggregate_columns_with_stats(filter, spec)
            .map(|(b, _)| b)
    }

    /// As [`Collection::aggregate_columns`], also returning what the query did
    /// ([`QueryStats`]).
    ///
    /// # Errors
    /// As [`Collection::aggregate`].
    pub fn aggregate_columns_with_stats(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<(AggregateBatch, QueryStats)> {
        let mut stats = QueryStats::default();
        let batch = self.inner.aggregate(filter, spec, &mut stats)?;
        Ok((batch, stats))
    }
}

/// The groups of an aggregate as columns: group `i` is series `series[i]`, window
/// `windows[i]`, output values `outputs[k].1[i]`. Same groups, order and values as
/// [`Collection::aggregate`] (see [`AggregateSpec`]).
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
    pub outputs: Vec<(String, Vec<Bson>)>,
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
    pub fn output(&self, name: &str) -> Option<&[Bson]> {
        self.outputs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }

    /// Group `i` as [`Collection::aggregate`] returns it: `{_id: {<meta_field>: <meta>,
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
            d.insert(name.clone(), values[i].clone());
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
    Min(Option<Bson>),
    Max(Option<Bson>),
    Sum(f64),
    Avg(f64, u64),
    First(Option<(i64, Bson)>),
    Last(Option<(i64, Bson)>),
}

impl Acc {
    fn new(a: &Accumulator) -> Acc {
        match a {
            Accumulator::Count => Acc::Count(0),
            Accumulator::Min(_) => Acc::Min(None),
            Accumulator::Max(_) => Acc::Max(None),
            Accumulator::Sum(_) => Acc::Sum(0.0),
            Accumulator::Avg(_) => Acc::Avg(0.0, 0),
            Accumulator::First(_) => Acc::First(None),
            Accumulator::Last(_) => Acc::Last(None),
        }
    }

    fn result(self) -> Bson {
        match self {
            Acc::Count(n) => Bson::Int64(i64::try_from(n).unwrap_or(i64::MAX)),
            Acc::Min(v) | Acc::Max(v) => v.unwrap_or(Bson::Null),
            Acc::Sum(s) => Bson::Double(s),
            #[expect(clippy::cast_precision_loss, reason = "a mean is a double")]
            Acc::Avg(s, n) => {
                if n == 0 {
                    Bson::Null
                } else {
                    Bson::Double(s / n as f64)
                }
            }
            Acc::First(v) | Acc::Last(v) => v.map_or(Bson::Null, |(_, b)| b),
        }
    }

    /// Adds one measurement's value (`v`, already looked up; `None` = missing) at time `t`.
    fn add(&mut self, t: i64, v: Value<'_>) -> std::result::Result<(), String> {
        match self {
            Acc::Count(n) => *n += 1,
            Acc::Min(slot) => extreme(slot, v, Ordering::Less)?,
            Acc::Max(slot) => extreme(slot, v, Ordering::Greater)?,
            Acc::Sum(s) => {
                if let Some(x) = v.number()? {
                    *s += x;
                }
            }
            Acc::Avg(s, n) => {
                if let Some(x) = v.number()? {
                    *s += x;
                    *n += 1;
                }
            }
            Acc::First(slot) => {
                if slot.as_ref().is_none_or(|(t0, _)| t < *t0) {
                    *slot = Some((t, v.to_bson()?.unwrap_or(Bson::Null)));
                }
            }
            Acc::Last(slot) => {
                if slot.as_ref().is_none_or(|(t0, _)| t >= *t0) {
                    *slot = Some((t, v.to_bson()?.unwrap_or(Bson::Null)));
                }
            }
        }
        Ok(())
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

    #[expect(clippy::cast_precision_loss, reason = "sums and means are doubles")]
    fn number(self) -> std::result::Result<Option<f64>, String> {
        Ok(match self {
            Value::Stored(ValueRef::Int(tag::INT32 | tag::INT64, i)) => Some(i as f64),
            Value::Stored(ValueRef::Float(d)) => Some(d),
            Value::Stored(v @ ValueRef::Bytes(tag::DECIMAL128, _)) => {
                to_bson(v)?.as_ref().and_then(number)
            }
            Value::Stored(_) => None,
            Value::Looked(b) => b.and_then(number),
        })
    }
}

#[expect(clippy::cast_precision_loss, reason = "sums and means are doubles")]
fn number(b: &Bson) -> Option<f64> {
    match b {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

/// `$min`/`$max`: keeps `v` if it is `want` (less / greater) than the kept value; missing,
/// null and undefined are ignored; on a tie the kept value stays.
fn extreme(
    slot: &mut Option<Bson>,
    v: Value<'_>,
    want: Ordering,
) -> std::result::Result<(), String> {
    // Strings against a string: compared in place, converted only when kept.
    if let Value::Stored(r @ ValueRef::Bytes(tag::STRING, bytes)) = v
        && let Some(Bson::String(cur)) = &*slot
    {
        if bytes.cmp(cur.as_bytes()) == want {
            *slot = to_bson(r)?;
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

fn offer_extreme(slot: &mut Option<Bson>, b: Bson, want: Ordering) {
    match slot {
        Some(cur) if compare(&b, cur) != want => {}
        _ => *slot = Some(b),
    }
}

/// A group: its series (position in the candidates' series, 0 when not by series), window
/// start and accumulators.
struct Group {
    series: usize,
    window: i64,
    accs: Vec<Acc>,
}

/// The groups of one query.
struct Groups<'s> {
    spec: &'s AggregateSpec,
    index: HashMap<(usize, i64), usize>,
    groups: Vec<Group>,
}

impl Groups<'_> {
    fn get(&mut self, series: usize, t: i64) -> usize {
        let window = t.div_euclid(self.spec.window_ms) * self.spec.window_ms;
        *self.index.entry((series, window)).or_insert_with(|| {
            self.groups.push(Group {
                series,
                window,
                accs: self.spec.outputs.iter().map(|(_, a)| Acc::new(a)).collect(),
            });
            self.groups.len() - 1
        })
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
            let Some(c) = view.position(&p[0]) else {
                return Source::Absent;
            };
            if !row_by_row
                && p.len() == 1
                && let Some(col) = view.column(c)
                && let Some(&t) = col.types().first()
                && col.types().iter().all(|&x| x == t)
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
        let b = to_bson(stored)?;
        acc.add(t, Value::Looked(lookup(b.as_ref(), rest)))
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
    #[expect(clippy::cast_precision_loss, reason = "sums and means are doubles")]
    match (&mut *acc, source) {
        (Acc::Count(n), _) => *n += times.len() as u64,
        (Acc::Sum(s), Source::Ints(_, v)) => v[range].iter().for_each(|x| *s += *x as f64),
        (Acc::Sum(s), Source::Floats(v)) => v[range].iter().for_each(|x| *s += *x),
        (Acc::Avg(s, n), Source::Ints(_, v)) => {
            v[range].iter().for_each(|x| *s += *x as f64);
            *n += times.len() as u64;
        }
        (Acc::Avg(s, n), Source::Floats(v)) => {
            v[range].iter().for_each(|x| *s += *x);
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
    rows: &RowFilter<'_>,
    paths: &[Option<Vec<String>>],
    time_field: &str,
) -> std::result::Result<(), String> {
    let bound = rows.bind(view, time_field);
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
        let accs = &mut groups.groups[g].accs;
        for ((acc, source), path) in accs.iter_mut().zip(&sources).zip(paths) {
            add_row(acc, *source, path, view, row)?;
        }
    }
    Ok(())
}

/// Adds every row of a segment: runs of rows in one window at once.
fn add_whole(
    groups: &mut Groups<'_>,
    series: usize,
    view: &mut SegmentView<'_>,
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
        let end = times[start..]
            .iter()
            .position(|&t| t < from || t >= to)
            .map_or(times.len(), |n| start + n);
        let g = groups.get(series, times[start]);
        let accs = &mut groups.groups[g].accs;
        for ((acc, source), path) in accs.iter_mut().zip(&sources).zip(paths) {
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

impl CollectionInner {
    fn aggregate(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
        stats: &mut QueryStats,
    ) -> Result<AggregateBatch> {
        validate(spec)?;
        let plan = Plan::new(self, filter)?;
        let time_field = plan.spec.time_field.as_str();
        let rows = RowFilter::new(&plan.filter, time_field);
        let cands = self.candidates(&plan, stats)?;
        let paths: Vec<Option<Vec<String>>> = spec
            .outputs
            .iter()
            .map(|(_, a)| a.field().map(|f| f.split('.').map(str::to_owned).collect()))
            .collect();
        let mut groups = Groups {
            spec,
            index: HashMap::new(),
            groups: Vec::new(),
        };
        let ids: Vec<BucketId> = cands.buckets.iter().map(|c| c.id).collect();
        // Pass 1: control records. Buckets answered from control are added now; the others
        // (id position, partial or not) are unpacked in pass 2.
        let mut unpack: Vec<(usize, bool)> = Vec::new();
        self.for_each_control(&ids, dense(ids.len(), cands.in_range), &mut |i, bytes| {
            stats.buckets_read += 1;
            let control = bytes.view().map_err(|r| self.corrupt_control(&ids[i], r))?;
            let verdict = plan.judge(&control, stats);
            if verdict == Verdict::Pruned || control.count == 0 {
                return Ok(());
            }
            let series = if spec.by_series {
                cands.buckets[i].series
            } else {
                0
            };
            let one_window = control.min_time.div_euclid(spec.window_ms)
                == control.max_time.div_euclid(spec.window_ms);
            if verdict == Verdict::Whole
                && one_window
                && from_control(&mut groups, series, &control, &paths, time_field)
            {
                stats.buckets_from_control += 1;
            } else {
                unpack.push((i, verdict == Verdict::Partial));
            }
            Ok(())
        })?;
        // Pass 2: the other buckets, decoding the accumulators' and the filter's columns.
        let unpack_ids: Vec<BucketId> = unpack.iter().map(|(i, _)| ids[*i]).collect();
        let dense_unpack = dense(unpack_ids.len(), cands.in_range);
        let mut keep = |n: &str| paths.iter().flatten().any(|p| p[0] == n) || rows.reads(n);
        self.for_each_bucket(&unpack_ids, dense_unpack, &mut keep, &mut |u, segments| {
            stats.buckets_unpacked += 1;
            let (i, partial) = unpack[u];
            let series = if spec.by_series {
                cands.buckets[i].series
            } else {
                0
            };
            let corrupt = |r| self.corrupt_data(&ids[i], r);
            for seg in &segments {
                let mut view = SegmentView::lazy(seg, time_field).map_err(corrupt)?;
                stats.rows_examined += view.rows() as u64;
                if partial {
                    stats.rows_filtered += view.rows() as u64;
                    add_filtered(&mut groups, series, &mut view, &rows, &paths, time_field)
                        .map_err(corrupt)?;
                } else {
                    add_whole(&mut groups, series, &mut view, &paths, time_field)
                        .map_err(corrupt)?;
                }
            }
            Ok(())
        })?;
        // Groups by series (meta value in BSON order, the no-meta series first), then window.
        let mut used: Vec<usize> = groups.groups.iter().map(|g| g.series).collect();
        used.sort_unstable();
        used.dedup();
        let mut metas: Vec<(usize, Option<&Bson>)> = Vec::with_capacity(used.len());
        for s in used {
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
        let rank: HashMap<usize, usize> = metas
            .iter()
            .enumerate()
            .map(|(r, (s, _))| (*s, r))
            .collect();
        let mut out: Vec<(usize, Group)> = groups
            .groups
            .into_iter()
            .map(|g| (rank.get(&g.series).copied().unwrap_or(0), g))
            .collect();
        out.sort_unstable_by_key(|(r, g)| (*r, g.window));
        stats.rows_returned = out.len() as u64;
        let mut batch = AggregateBatch {
            series: Vec::with_capacity(out.len()),
            metas: metas.into_iter().map(|(_, m)| m.cloned()).collect(),
            windows: Vec::with_capacity(out.len()),
            outputs: spec
                .outputs
                .iter()
                .map(|(name, _)| (name.clone(), Vec::with_capacity(out.len())))
                .collect(),
        };
        for (r, g) in out {
            batch.series.push(u32::try_from(r).unwrap_or(u32::MAX));
            batch.windows.push(g.window);
            for ((_, values), acc) in batch.outputs.iter_mut().zip(g.accs) {
                values.push(acc.result());
            }
        }
        Ok(batch)
    }
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
    let mut updates: Vec<Option<Bson>> = Vec::with_capacity(paths.len());
    for ((_, acc), path) in groups.spec.outputs.iter().zip(paths) {
        let field = match path.as_deref() {
            None => {
                updates.push(None);
                continue;
            }
            Some([f]) => f.as_str(),
            Some(_) => return false, // dotted: unpack
        };
        let update = match acc {
            Accumulator::Max(_) if field == time_field => {
                Some(Bson::DateTime(DateTime::from_millis(control.max_time)))
            }
            Accumulator::Min(_) | Accumulator::Max(_) if field != time_field => {
                match (control.min_of(field), control.max_of(field)) {
                    (None, None) => None, // no measurement has the field
                    (Some(a), Some(b)) if exact_extremes(&a, &b) => {
                        Some(if matches!(acc, Accumulator::Min(_)) {
                            a
                        } else {
                            b
                        })
                    }
                    _ => return false,
                }
            }
            _ => return false,
        };
        updates.push(update);
    }
    let g = groups.get(series, control.min_time);
    for (acc, update) in groups.groups[g].accs.iter_mut().zip(updates) {
        match acc {
            Acc::Count(n) => *n += control.count,
            Acc::Min(slot) => {
                if let Some(b) = update {
                    offer_extreme(slot, b, Ordering::Less);
                }
            }
            Acc::Max(slot) => {
                if let Some(b) = update {
                    offer_extreme(slot, b, Ordering::Greater);
                }
            }
            _ => {}
        }
    }
    true
}
