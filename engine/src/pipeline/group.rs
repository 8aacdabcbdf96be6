//! `$group`: documents grouped by the value of the `_id` expression (values equal in BSON
//! order group together: `1` and `1.0` alike), with accumulators per group; groups come out
//! sorted by `_id`. The shapes the windowed aggregate engine answers are recognized here
//! ([`Group::as_windows`]).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use bson::{Bson, Document};
use tscoll_catalog::value::{compare, value_size};
use tscoll_catalog::{Compensated, MAX_BSON_OBJECT_SIZE};

use super::bad;
use super::multi::{Kind, NState, Ranked, RankedState, merge, parse_n, parse_ranked};
use super::percentile::{Quantiles, parse_median, parse_percentile};
use super::stage::{Docs, evaluate, expression};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::dates::{REFERENCE_MS, Unit};
use crate::mql::expr::Expr;
use crate::mql::filter::Target;
use crate::query::{Accumulator, AggregateSpec};

/// An accumulator operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Count,
    StdDevPop,
    StdDevSamp,
    Push,
    AddToSet,
    /// `$mergeObjects`.
    MergeObjects,
    /// `$firstN`, `$lastN`, `$minN` or `$maxN`, and its `n`.
    N(Kind, u64),
    /// `$top`, `$bottom`, `$topN` or `$bottomN`: its operand is `[output, sort keys...]`.
    Ranked(Ranked),
    /// `$median`.
    Median,
    /// `$percentile` of this many percentiles: its operand is `[input, p]`.
    Percentile(u32),
    /// `$covariancePop` (window function only): its operand is `[x, y]`.
    CovariancePop,
    /// `$covarianceSamp` (window function only).
    CovarianceSamp,
}

impl Op {
    /// Parses the name of an accumulator that takes one expression (`"$sum"` ...); the ones
    /// with options are parsed by [`parse_accumulator`].
    pub(super) fn parse(name: &str) -> Option<Op> {
        Some(match name {
            "$sum" => Op::Sum,
            "$avg" => Op::Avg,
            "$min" => Op::Min,
            "$max" => Op::Max,
            "$first" => Op::First,
            "$last" => Op::Last,
            "$count" => Op::Count,
            "$stdDevPop" => Op::StdDevPop,
            "$stdDevSamp" => Op::StdDevSamp,
            "$push" => Op::Push,
            "$addToSet" => Op::AddToSet,
            "$mergeObjects" => Op::MergeObjects,
            "$covariancePop" => Op::CovariancePop,
            "$covarianceSamp" => Op::CovarianceSamp,
            _ => return None,
        })
    }
}

/// The accumulators of `$group` and the window functions of `$setWindowFields` share.
pub(super) const ACCUMULATORS: &str = "$sum, $avg, $min, $max, $first, $last, $count, \
                                       $stdDevPop, $stdDevSamp, $push, $addToSet, \
                                       $mergeObjects, $firstN, $lastN, $minN, $maxN, $top, \
                                       $bottom, $topN, $bottomN, $median, $percentile";

/// The running state of one accumulator.
pub(super) enum State {
    Sum {
        int: i64,
        float: f64,
        overflow: bool,
        doubles: bool,
        longs: bool,
    },
    /// The integers' exact sum, the doubles' compensated sum and the count: the mean as
    /// the windowed aggregate (and the bucket sums of control records) compute it.
    Avg(i128, Compensated, u64),
    Min(Option<Bson>),
    Max(Option<Bson>),
    First(Option<Bson>),
    Last(Bson),
    Count(i64),
    Std {
        n: u64,
        mean: f64,
        m2: f64,
        sample: bool,
    },
    Push(Vec<Bson>, u64),
    AddToSet(BTreeSet<Key>, u64),
    MergeObjects(Document),
    N(NState),
    Ranked(RankedState),
    Quantiles(Quantiles),
    /// The count and the means of x and y, and the co-moment (Welford's update); pairs with
    /// an infinity or NaN are summed apart, as MongoDB does (`nonfinite`: NaN, ±infinity or
    /// 0).
    Covariance {
        n: u64,
        mean_x: f64,
        mean_y: f64,
        c: f64,
        nonfinite: f64,
        sample: bool,
    },
}

impl State {
    pub(super) fn new(op: Op) -> State {
        match op {
            Op::Sum => State::Sum {
                int: 0,
                float: 0.0,
                overflow: false,
                doubles: false,
                longs: false,
            },
            Op::Avg => State::Avg(0, Compensated::default(), 0),
            Op::Min => State::Min(None),
            Op::Max => State::Max(None),
            Op::First => State::First(None),
            Op::Last => State::Last(Bson::Null),
            Op::Count => State::Count(0),
            Op::StdDevPop | Op::StdDevSamp => State::Std {
                n: 0,
                mean: 0.0,
                m2: 0.0,
                sample: op == Op::StdDevSamp,
            },
            Op::Push => State::Push(Vec::new(), 0),
            Op::AddToSet => State::AddToSet(BTreeSet::new(), 0),
            Op::MergeObjects => State::MergeObjects(Document::new()),
            Op::N(kind, n) => State::N(NState::new(kind, n)),
            Op::Ranked(r) => State::Ranked(RankedState::new(r)),
            Op::Median => State::Quantiles(Quantiles::new(None)),
            Op::Percentile(count) => State::Quantiles(Quantiles::new(Some(count))),
            Op::CovariancePop | Op::CovarianceSamp => State::Covariance {
                n: 0,
                mean_x: 0.0,
                mean_y: 0.0,
                c: 0.0,
                nonfinite: 0.0,
                sample: op == Op::CovarianceSamp,
            },
        }
    }

    /// Adds one document's value (`None`: missing).
    ///
    /// # Errors
    /// `BSONObjectTooLarge` when `$push` or `$addToSet` passes 16 MiB; `ExceededMemoryLimit`
    /// when an `n` accumulator or `$percentile` passes 100 MiB; `Location40400` for a
    /// `$mergeObjects` of a value that is not a document.
    #[expect(clippy::cast_precision_loss, reason = "aggregation widens to double")]
    pub(super) fn add(&mut self, v: Option<&Bson>) -> Result<()> {
        match self {
            State::Sum {
                int,
                float,
                overflow,
                doubles,
                longs,
            } => match v {
                Some(Bson::Int32(n)) => {
                    *float += f64::from(*n);
                    *overflow |= int.checked_add(i64::from(*n)).map(|s| *int = s).is_none();
                }
                Some(Bson::Int64(n)) => {
                    *longs = true;
                    *float += *n as f64;
                    *overflow |= int.checked_add(*n).map(|s| *int = s).is_none();
                }
                Some(Bson::Double(d)) => {
                    *doubles = true;
                    *float += d;
                }
                _ => {}
            },
            State::Avg(ints, floats, n) => match v {
                Some(Bson::Int32(i)) => {
                    *ints += i128::from(*i);
                    *n += 1;
                }
                Some(Bson::Int64(i)) => {
                    *ints += i128::from(*i);
                    *n += 1;
                }
                Some(Bson::Double(d)) => {
                    floats.add(*d);
                    *n += 1;
                }
                _ => {}
            },
            State::Min(m) => keep(m, v, Ordering::Less),
            State::Max(m) => keep(m, v, Ordering::Greater),
            State::First(f) => {
                if f.is_none() {
                    *f = Some(v.cloned().unwrap_or(Bson::Null));
                }
            }
            State::Last(l) => *l = v.cloned().unwrap_or(Bson::Null),
            State::Count(n) => *n += 1,
            State::Std { n, mean, m2, .. } => {
                if let Some(x) = number(v) {
                    *n += 1;
                    let delta = x - *mean;
                    *mean += delta / *n as f64;
                    *m2 += delta * (x - *mean);
                }
            }
            State::Push(items, bytes) => {
                if let Some(x) = v {
                    *bytes += value_size(x) + 8;
                    too_large(*bytes, "$push")?;
                    items.push(x.clone());
                }
            }
            State::AddToSet(items, bytes) => {
                if let Some(x) = v
                    && items.insert(Key(x.clone()))
                {
                    *bytes += value_size(x) + 8;
                    too_large(*bytes, "$addToSet")?;
                }
            }
            State::MergeObjects(d) => merge(d, v)?,
            State::N(st) => st.add(v)?,
            State::Ranked(st) => st.add(v)?,
            State::Quantiles(q) => q.add(v)?,
            State::Covariance {
                n,
                mean_x,
                mean_y,
                c,
                nonfinite,
                ..
            } => {
                if let Some(Bson::Array(xy)) = v
                    && let [x, y] = xy.as_slice()
                    && let (Some(x), Some(y)) = (number(Some(x)), number(Some(y)))
                {
                    if !x.is_finite() || !y.is_finite() {
                        // NaN, or infinities of both signs, give NaN; else the infinity.
                        let infinities: f64 = [x, y].iter().filter(|v| v.is_infinite()).sum();
                        *nonfinite += if x.is_nan() || y.is_nan() {
                            f64::NAN
                        } else {
                            infinities
                        };
                        return Ok(());
                    }
                    *n += 1;
                    let dx = x - *mean_x;
                    *mean_x += dx / *n as f64;
                    *mean_y += (y - *mean_y) / *n as f64;
                    *c += dx * (y - *mean_y);
                }
            }
        }
        Ok(())
    }

    /// The accumulator's value.
    #[expect(clippy::cast_precision_loss, reason = "aggregation widens to double")]
    pub(super) fn value(&self) -> Bson {
        match self {
            State::Sum {
                int,
                float,
                overflow,
                doubles,
                longs,
            } => {
                if *doubles || *overflow {
                    Bson::Double(*float)
                } else if *longs {
                    Bson::Int64(*int)
                } else {
                    i32::try_from(*int).map_or(Bson::Int64(*int), Bson::Int32)
                }
            }
            State::Avg(ints, floats, n) => {
                if *n == 0 {
                    Bson::Null
                } else {
                    let mut sum = *floats;
                    sum.add(*ints as f64);
                    Bson::Double(sum.value() / *n as f64)
                }
            }
            State::Min(m) | State::Max(m) => m.clone().unwrap_or(Bson::Null),
            State::First(f) => f.clone().unwrap_or(Bson::Null),
            State::Last(l) => l.clone(),
            State::Count(n) => i32::try_from(*n).map_or(Bson::Int64(*n), Bson::Int32),
            State::Std { n, m2, sample, .. } => {
                let d = if *sample { n.saturating_sub(1) } else { *n };
                if d == 0 {
                    Bson::Null
                } else {
                    Bson::Double((m2 / d as f64).sqrt())
                }
            }
            State::Push(items, _) => Bson::Array(items.clone()),
            State::AddToSet(items, _) => Bson::Array(items.iter().map(|k| k.0.clone()).collect()),
            State::MergeObjects(d) => Bson::Document(d.clone()),
            State::N(st) => st.value(),
            State::Ranked(st) => st.value(),
            State::Quantiles(q) => q.value(),
            State::Covariance {
                n,
                c,
                nonfinite,
                sample,
                ..
            } => {
                if *n == 1 && !*sample {
                    return Bson::Double(0.0);
                }
                let d = if *sample { n.saturating_sub(1) } else { *n };
                if d == 0 {
                    Bson::Null
                } else {
                    Bson::Double((c + nonfinite) / d as f64)
                }
            }
        }
    }
}

/// A numeric value as a double (`None` for anything else).
#[expect(clippy::cast_precision_loss, reason = "aggregation widens to double")]
pub(super) fn number(v: Option<&Bson>) -> Option<f64> {
    match v {
        Some(Bson::Int32(n)) => Some(f64::from(*n)),
        Some(Bson::Int64(n)) => Some(*n as f64),
        Some(Bson::Double(d)) => Some(*d),
        _ => None,
    }
}

/// `$min` (`better` = `Less`) or `$max`: keeps `v` when it beats `m`; null and missing
/// values are ignored.
fn keep(m: &mut Option<Bson>, v: Option<&Bson>, better: Ordering) {
    if let Some(x) = v.filter(|x| !matches!(x, Bson::Null | Bson::Undefined))
        && m.as_ref().is_none_or(|cur| compare(x, cur) == better)
    {
        *m = Some(x.clone());
    }
}

fn too_large(bytes: u64, op: &str) -> Result<()> {
    if bytes > MAX_BSON_OBJECT_SIZE {
        return Err(Error::rejected(
            ErrorCode::BsonObjectTooLarge,
            format!("{op} used more than the 16 MiB a group's document may hold"),
        ));
    }
    Ok(())
}

/// A value ordered and compared in BSON order (`1` equals `1.0`).
pub(super) struct Key(pub(super) Bson);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        compare(&self.0, &other.0) == Ordering::Equal
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        compare(&self.0, &other.0)
    }
}

/// One output of a `$group`: its name, operator and operand (`None` for `$count`).
pub(super) struct Output {
    name: String,
    op: Op,
    arg: Option<Expr>,
}

/// Parses `{<$op>: <operand>}`, the form of an accumulator or window function.
///
/// # Errors
/// `stage` `$group` or `$bucket`: `Location15952` for an operator that is not an accumulator
/// (`$covariancePop` and `$covarianceSamp` are window functions only); `$setWindowFields`:
/// `FailedToParse` for an unknown function. The operators' own checks (`n`, `sortBy`, `p`,
/// with MongoDB's codes).
pub(super) fn parse_accumulator(
    stage: &str,
    name: &str,
    spec: &Bson,
) -> Result<(Op, Option<Expr>)> {
    let Bson::Document(d) = spec else {
        return Err(Error::rejected(
            ErrorCode::Location(40234),
            format!("{stage}: the field '{name}' must be an accumulator object"),
        ));
    };
    let mut ops = d.iter();
    let (Some((op_name, arg)), None) = (ops.next(), ops.next()) else {
        return Err(Error::rejected(
            ErrorCode::Location(40238),
            format!("{stage}: the field '{name}' must specify one accumulator"),
        ));
    };
    let window = stage == "$setWindowFields";
    let unknown = || {
        let (code, what) = if window {
            (ErrorCode::FailedToParse, "window function")
        } else {
            (ErrorCode::Location(15952), "accumulator")
        };
        Error::rejected(
            code,
            format!(
                "{stage}: the {what} {op_name} of '{name}' is not supported (supported: {ACCUMULATORS}{})",
                if window {
                    ", $covariancePop, $covarianceSamp, $derivative, $integral, $shift, $rank, \
                     $denseRank, $documentNumber, $expMovingAvg, $locf, $linearFill"
                } else {
                    ""
                }
            ),
        )
    };
    match op_name.as_str() {
        "$firstN" => return parse_n(Kind::FirstN, arg),
        "$lastN" => return parse_n(Kind::LastN, arg),
        "$minN" => return parse_n(Kind::MinN, arg),
        "$maxN" => return parse_n(Kind::MaxN, arg),
        "$top" => return parse_ranked(op_name, false, true, arg),
        "$bottom" => return parse_ranked(op_name, true, true, arg),
        "$topN" => return parse_ranked(op_name, false, false, arg),
        "$bottomN" => return parse_ranked(op_name, true, false, arg),
        "$median" => return parse_median(arg),
        "$percentile" => return parse_percentile(arg),
        _ => {}
    }
    let op = Op::parse(op_name).ok_or_else(unknown)?;
    if matches!(op, Op::CovariancePop | Op::CovarianceSamp) {
        if !window {
            return Err(unknown());
        }
        // Any expression: values that are not two numbers are skipped, as in MongoDB.
        return Ok((op, Some(expression(arg)?)));
    }
    let arg = if op == Op::Count {
        match arg {
            Bson::Document(a) if a.is_empty() => None,
            _ => return Err(bad(format!("{stage}: $count takes {{}}"))),
        }
    } else {
        Some(expression(arg)?)
    };
    Ok((op, arg))
}

/// A parsed `$group`.
pub(super) struct Group {
    id: Expr,
    outputs: Vec<Output>,
}

/// A `$group` the windowed aggregate engine answers: its spec, and how to shape its results.
pub(super) struct Windows {
    /// What the engine computes.
    pub(super) spec: AggregateSpec,
    /// The `_id`: entries (name, is the meta field) of an object, or the window alone.
    id: Option<Vec<(String, bool)>>,
}

impl Group {
    pub(super) fn parse(spec: &Bson) -> Result<Group> {
        let Bson::Document(d) = spec else {
            return Err(bad("$group takes a document"));
        };
        let id = d.get("_id").ok_or_else(|| {
            Error::rejected(
                ErrorCode::Location(15955),
                "$group: a group specification must include an _id (null for one group)",
            )
        })?;
        let id = expression(id)?;
        let mut outputs = Vec::new();
        for (name, v) in d {
            if name == "_id" {
                continue;
            }
            if name.contains('.') {
                return Err(Error::rejected(
                    ErrorCode::Location(40235),
                    format!("$group: the field name '{name}' cannot contain '.'"),
                ));
            }
            if name.starts_with('$') {
                return Err(Error::rejected(
                    ErrorCode::Location(40236),
                    format!("$group: the field name '{name}' cannot be an operator name"),
                ));
            }
            if name.is_empty() {
                return Err(bad("$group: an output name cannot be empty"));
            }
            let (op, arg) = parse_accumulator("$group", name, v)?;
            outputs.push(Output {
                name: name.clone(),
                op,
                arg,
            });
        }
        Ok(Group { id, outputs })
    }

    /// Groups `docs`.
    ///
    /// # Errors
    /// The input's errors, an expression failing, or a `$push` past 16 MiB.
    pub(super) fn run(&self, docs: Docs) -> Result<Vec<Document>> {
        let mut groups: BTreeMap<Key, Vec<State>> = BTreeMap::new();
        for doc in docs {
            let doc = doc?;
            let id = evaluate(&self.id, &doc, "$group")?.unwrap_or(Bson::Null);
            let states = groups
                .entry(Key(id))
                .or_insert_with(|| self.outputs.iter().map(|o| State::new(o.op)).collect());
            for (o, st) in self.outputs.iter().zip(states.iter_mut()) {
                let v = match &o.arg {
                    Some(e) => evaluate(e, &doc, "$group")?,
                    None => None,
                };
                st.add(v.as_ref())?;
            }
        }
        Ok(groups
            .into_iter()
            .map(|(id, states)| {
                let mut out = Document::new();
                out.insert("_id", id.0);
                for (o, st) in self.outputs.iter().zip(&states) {
                    out.insert(o.name.clone(), st.value());
                }
                out
            })
            .collect())
    }

    /// The windowed aggregate engine's form of this `$group`, when it has one: `_id` a
    /// `$dateTrunc` of the time field to a unit of fixed length whose bins line up with the
    /// epoch (in UTC or a fixed offset that keeps them there, never in a zone with
    /// daylight-saving time), alone or in an object with the whole meta field; outputs `$count`, `$sum: 1`,
    /// `$sum`, `$min`, `$max`, `$avg`, `$stdDevPop` and `$stdDevSamp` of measurement fields (whole
    /// buckets are answered from their control record's min, max and sums).
    pub(super) fn as_windows(&self, time_field: &str, meta_field: Option<&str>) -> Option<Windows> {
        // Bins of a fixed length counted from the epoch: UTC or a fixed offset that keeps
        // them there (a zone of the IANA database moves with daylight-saving time, so its
        // `$dateTrunc` is left to the general `$group`).
        let window = |e: &Expr| -> Option<i64> {
            let Expr::Date(d) = e else {
                return None;
            };
            let (date, unit, bin_size, offset) = d.fixed_trunc()?;
            let Expr::Field(Target::Field, path) = date else {
                return None;
            };
            if path.len() != 1 || path[0] != time_field || unit == Unit::Week {
                return None;
            }
            let ms = unit.fixed_ms()?.checked_mul(bin_size)?;
            (REFERENCE_MS.checked_sub(offset)?.rem_euclid(ms) == 0).then_some(ms)
        };
        let is_meta = |e: &Expr| matches!(e, Expr::Field(Target::Field, p) if meta_field.is_some_and(|m| p.len() == 1 && p[0] == m));
        let (window_ms, id, by_series) = match &self.id {
            Expr::Object(fields) => {
                let mut window_ms = None;
                let mut entries = Vec::new();
                let mut by_series = false;
                for (name, e) in fields {
                    if let Some(ms) = window(e) {
                        if window_ms.replace(ms).is_some() {
                            return None;
                        }
                        entries.push((name.clone(), false));
                    } else if is_meta(e) && !by_series {
                        by_series = true;
                        entries.push((name.clone(), true));
                    } else {
                        return None;
                    }
                }
                (window_ms?, Some(entries), by_series)
            }
            e => (window(e)?, None, false),
        };
        let mut outputs = Vec::new();
        for o in &self.outputs {
            let field = |e: &Option<Expr>| -> Option<String> {
                match e {
                    Some(Expr::Field(Target::Field, p)) if meta_field.is_none_or(|m| p[0] != m) => {
                        Some(p.join("."))
                    }
                    _ => None,
                }
            };
            let acc = match o.op {
                Op::Count => Accumulator::Count,
                Op::Sum if matches!(o.arg, Some(Expr::Literal(Bson::Int32(1)))) => {
                    Accumulator::Count
                }
                Op::Sum => Accumulator::SumTyped(field(&o.arg)?),
                Op::Min => Accumulator::Min(field(&o.arg)?),
                Op::Max => Accumulator::Max(field(&o.arg)?),
                Op::Avg => Accumulator::Avg(field(&o.arg)?),
                Op::StdDevPop => Accumulator::StdDevPop(field(&o.arg)?),
                Op::StdDevSamp => Accumulator::StdDevSamp(field(&o.arg)?),
                _ => return None,
            };
            outputs.push((o.name.clone(), acc));
        }
        Some(Windows {
            spec: AggregateSpec {
                window_ms,
                by_series,
                outputs,
            },
            id,
        })
    }
}

impl Windows {
    /// The engine's groups in this `$group`'s shape, sorted by `_id`.
    pub(super) fn results(
        &self,
        groups: Vec<Document>,
        time_field: &str,
        meta_field: Option<&str>,
    ) -> Vec<Document> {
        let mut out: Vec<Document> = groups
            .into_iter()
            .map(|g| {
                let engine_id = g.get_document("_id").cloned().unwrap_or_default();
                let window = engine_id.get(time_field).cloned().unwrap_or(Bson::Null);
                let id = match &self.id {
                    None => window,
                    Some(entries) => {
                        let mut d = Document::new();
                        for (name, meta) in entries {
                            let v = if *meta {
                                meta_field.and_then(|m| engine_id.get(m)).cloned()
                            } else {
                                Some(window.clone())
                            };
                            if let Some(v) = v {
                                d.insert(name.clone(), v);
                            }
                        }
                        Bson::Document(d)
                    }
                };
                let mut doc = Document::new();
                doc.insert("_id", id);
                for (name, acc) in &self.spec.outputs {
                    let v = g.get(name).cloned().unwrap_or(Bson::Null);
                    let v = match (acc, v) {
                        (Accumulator::Count, Bson::Int64(n)) => {
                            i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32)
                        }
                        (_, v) => v,
                    };
                    doc.insert(name.clone(), v);
                }
                doc
            })
            .collect();
        out.sort_by(|a, b| {
            compare(
                a.get("_id").unwrap_or(&Bson::Null),
                b.get("_id").unwrap_or(&Bson::Null),
            )
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn group(spec: Document) -> Group {
        Group::parse(&Bson::Document(spec)).expect("group")
    }

    #[test]
    fn window_engine_shapes_are_recognized() {
        let by_hour = doc! { "$dateTrunc": { "date": "$t", "unit": "hour" } };
        let g = group(doc! {
            "_id": { "series": "$m", "hour": by_hour.clone() },
            "n": { "$sum": 1 }, "c": { "$count": {} }, "lo": { "$min": "$v" }, "hi": { "$max": "$t" },
        });
        let w = g.as_windows("t", Some("m")).expect("the engine answers it");
        assert_eq!(w.spec.window_ms, 3_600_000);
        assert!(w.spec.by_series);
        assert_eq!(
            w.spec.outputs,
            [
                ("n".into(), Accumulator::Count),
                ("c".into(), Accumulator::Count),
                ("lo".into(), Accumulator::Min("v".into())),
                ("hi".into(), Accumulator::Max("t".into())),
            ]
        );
        let alone = group(doc! { "_id": by_hour.clone(), "n": { "$count": {} } });
        assert!(
            !alone
                .as_windows("t", Some("m"))
                .expect("window alone")
                .spec
                .by_series
        );
        let stats = group(doc! {
            "_id": by_hour.clone(),
            "s": { "$sum": "$v" },
            "a": { "$avg": "$v" },
            "sd": { "$stdDevPop": "$v" },
            "sds": { "$stdDevSamp": "$w" },
        });
        assert_eq!(
            stats
                .as_windows("t", Some("m"))
                .expect("means")
                .spec
                .outputs,
            [
                ("s".into(), Accumulator::SumTyped("v".into())),
                ("a".into(), Accumulator::Avg("v".into())),
                ("sd".into(), Accumulator::StdDevPop("v".into())),
                ("sds".into(), Accumulator::StdDevSamp("w".into())),
            ]
        );
        for other in [
            doc! { "_id": by_hour.clone(), "s": { "$sum": { "$add": ["$v", 1] } } },
            doc! { "_id": by_hour.clone(), "f": { "$first": "$v" } },
            doc! { "_id": by_hour.clone(), "m": { "$min": "$m.x" } },
            doc! { "_id": { "$dateTrunc": { "date": "$t", "unit": "month" } }, "n": { "$count": {} } },
            doc! { "_id": { "$dateTrunc": { "date": "$t", "unit": "week" } }, "n": { "$count": {} } },
            // 7 hours do not divide the time from the epoch to 2000-01-01.
            doc! { "_id": { "$dateTrunc": { "date": "$t", "unit": "hour", "binSize": 7 } }, "n": { "$count": {} } },
            doc! { "_id": "$m", "n": { "$count": {} } },
            doc! { "_id": { "m": "$m.x", "h": by_hour.clone() }, "n": { "$count": {} } },
        ] {
            assert!(
                group(other.clone()).as_windows("t", Some("m")).is_none(),
                "{other}"
            );
        }
    }

    #[test]
    fn covariances_pair_the_numbers_of_two_inputs() {
        let cov = |op: Op, pairs: &[Bson]| {
            let mut st = State::new(op);
            for p in pairs {
                st.add(Some(p)).expect("add");
            }
            st.value()
        };
        let pairs = [
            bson::bson!([1, 2]),
            bson::bson!([2, 4.0]),
            bson::bson!([3_i64, 6]),
            // Pairs with a non-number are skipped.
            bson::bson!([4, null]),
            bson::bson!(["x", 1]),
        ];
        // Deviations (-1, -2), (0, 0), (1, 2): products sum to 4.
        assert_eq!(cov(Op::CovariancePop, &pairs), Bson::Double(4.0 / 3.0));
        assert_eq!(cov(Op::CovarianceSamp, &pairs), Bson::Double(2.0));
        assert_eq!(cov(Op::CovarianceSamp, &pairs[..1]), Bson::Null);
        assert_eq!(cov(Op::CovariancePop, &pairs[..1]), Bson::Double(0.0));
        assert_eq!(cov(Op::CovariancePop, &[]), Bson::Null);
        // Infinities and NaN are summed apart, as MongoDB does.
        let inf = [
            pairs[0].clone(),
            pairs[1].clone(),
            bson::bson!([f64::INFINITY, 1]),
        ];
        assert_eq!(cov(Op::CovariancePop, &inf), Bson::Double(f64::INFINITY));
        let nan = [
            pairs[0].clone(),
            pairs[1].clone(),
            bson::bson!([f64::INFINITY, f64::NEG_INFINITY]),
        ];
        let Bson::Double(x) = cov(Op::CovarianceSamp, &nan) else {
            panic!("not a double");
        };
        assert!(x.is_nan());
    }

    #[test]
    fn accumulator_names_resolve_per_stage() {
        let code = |stage: &str, spec: Document| match parse_accumulator(
            stage,
            "x",
            &Bson::Document(spec),
        ) {
            Ok(_) => None,
            Err(Error::Rejected { code, .. }) => Some(code),
            Err(e) => panic!("{e}"),
        };
        let cov = doc! { "$covariancePop": ["$a", "$b"] };
        assert_eq!(code("$setWindowFields", cov.clone()), None);
        assert_eq!(code("$group", cov), Some(ErrorCode::Location(15952)));
        assert_eq!(
            code("$group", doc! { "$nosuch": "$a" }),
            Some(ErrorCode::Location(15952))
        );
        assert_eq!(
            code("$setWindowFields", doc! { "$nosuch": "$a" }),
            Some(ErrorCode::FailedToParse)
        );
        assert_eq!(
            code("$setWindowFields", doc! { "$covarianceSamp": "$a" }),
            None
        );
        assert_eq!(code("$group", doc! { "$mergeObjects": "$a" }), None);
        assert_eq!(
            code("$group", doc! { "$sum": 1, "$max": 1 }),
            Some(ErrorCode::Location(40238))
        );
        assert_eq!(code("$group", doc! {}), Some(ErrorCode::Location(40238)));
        assert!(matches!(
            parse_accumulator("$group", "x", &Bson::Int32(1)),
            Err(Error::Rejected {
                code: ErrorCode::Location(40234),
                ..
            })
        ));
        let named = |name: &str| match Group::parse(&Bson::Document(
            doc! { "_id": null, name: { "$sum": 1 } },
        )) {
            Ok(_) => None,
            Err(Error::Rejected { code, .. }) => Some(code),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(named("a.b"), Some(ErrorCode::Location(40235)));
        assert_eq!(named("$a"), Some(ErrorCode::Location(40236)));
        assert_eq!(named("a"), None);
        assert_eq!(
            code(
                "$group",
                doc! { "$topN": { "n": 3, "output": "$a", "sortBy": { "t": -1 } } }
            ),
            None
        );
    }

    #[test]
    fn window_engine_takes_only_zones_whose_bins_stay_aligned() {
        let by = |unit: &str, tz: &str| {
            group(doc! {
                "_id": { "$dateTrunc": { "date": "$t", "unit": unit, "timezone": tz } },
                "n": { "$count": {} },
            })
            .as_windows("t", Some("m"))
            .map(|w| w.spec.window_ms)
        };
        assert_eq!(by("hour", "UTC"), Some(3_600_000));
        assert_eq!(by("hour", "+01:00"), Some(3_600_000));
        assert_eq!(by("minute", "+05:30"), Some(60_000));
        // Hours of +05:30 start at half past the hour UTC; days of +01:00 at 23:00 UTC.
        assert_eq!(by("hour", "+05:30"), None);
        assert_eq!(by("day", "+01:00"), None);
        assert_eq!(by("day", "UTC"), Some(86_400_000));
        // A zone's offset changes with daylight-saving time: never.
        assert_eq!(by("hour", "Europe/Paris"), None);
        assert_eq!(by("minute", "America/New_York"), None);
        let from_field = group(doc! {
            "_id": { "$dateTrunc": { "date": "$t", "unit": "hour", "timezone": "$tz" } },
            "n": { "$count": {} },
        });
        assert!(from_field.as_windows("t", Some("m")).is_none());
    }

    #[test]
    fn sums_keep_integer_types_until_they_overflow() {
        let sum = |vals: &[Bson]| {
            let mut st = State::new(Op::Sum);
            for v in vals {
                st.add(Some(v)).expect("add");
            }
            st.value()
        };
        assert_eq!(sum(&[Bson::Int32(1), Bson::Int32(2)]), Bson::Int32(3));
        assert_eq!(
            sum(&[Bson::Int32(i32::MAX), Bson::Int32(1)]),
            Bson::Int64(1 << 31)
        );
        assert_eq!(sum(&[Bson::Int32(1), Bson::Int64(2)]), Bson::Int64(3));
        assert_eq!(
            sum(&[Bson::Int32(1), Bson::Double(0.5), Bson::String("x".into())]),
            Bson::Double(1.5)
        );
        assert_eq!(sum(&[]), Bson::Int32(0));
        assert_eq!(
            sum(&[Bson::Int64(i64::MAX), Bson::Int64(1)]),
            Bson::Double(i64::MAX as f64 + 1.0)
        );
    }
}
