//! `$setWindowFields`: per partition (`partitionBy`), documents sorted by `sortBy`, each gets
//! output fields computed over a window of its neighbours: `documents: [lo, hi]` (positions
//! relative to the document), `range: [lo, hi]` (values of the one ascending `sortBy` field,
//! in `unit`s for dates), or the whole partition. Functions: the accumulators of `$group`
//! (but `$mergeObjects`), `$covariancePop` and `$covarianceSamp` of `[x, y]`, `$derivative`
//! (the slope between the window's first and last documents, per `unit`) and `$integral` (the
//! trapezoidal rule over the window, in `unit`s); without a window, `$shift`, the ranks,
//! `$expMovingAvg`, `$locf` and `$linearFill` (`window_seq.rs`). Partitions come out in
//! `partitionBy` order, their documents in `sortBy` order.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};
use tscoll_catalog::value::compare;

use super::bad;
use super::group::{Op, State, number, parse_accumulator};
use super::stage::{Docs, evaluate, expression, sort_keys, sort_spec};
use super::window_seq::{self, Seq};
use crate::direct_write::update::set_path;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::dates::{self, Unit};
use crate::mql::expr::Expr;
use crate::mql::filter::lookup;

/// One end of a window.
#[derive(Clone, Copy, Debug)]
enum Bound {
    Unbounded,
    Current,
    /// Documents: a position offset; range: a value offset (in `unit`s for dates).
    At(f64),
}

impl Bound {
    /// A range bound on the scale of the positions: an offset in units of a date `sortBy`
    /// in ms (`unit`: the unit's length in ms).
    fn scaled(self, unit: Option<i64>) -> Bound {
        match (self, unit) {
            #[expect(clippy::cast_precision_loss, reason = "a unit's length in ms")]
            (Bound::At(a), Some(ms)) => Bound::At(a * ms as f64),
            (b, _) => b,
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Window {
    Whole,
    Documents(Bound, Bound),
    /// Bounds, and the unit's length in ms for a date `sortBy`.
    Range(Bound, Bound, Option<i64>),
    /// Bounds in whole months, quarters or years of a date `sortBy`: a document's window
    /// runs from its date plus the lower bound to its date plus the upper one (`$dateAdd`'s
    /// calendar arithmetic, in UTC).
    Calendar(Bound, Bound, Unit),
}

enum Func {
    Acc(Op, Option<Expr>),
    Derivative(Expr, Option<i64>),
    Integral(Expr, Option<i64>),
    /// `$shift`, the ranks, `$expMovingAvg`, `$locf`, `$linearFill` (`window_seq.rs`).
    Seq(Seq),
}

/// What a `sortBy` value is read for: picks MongoDB's error codes for one that does not fit
/// (a unit but not a date, a date but no unit, not a number).
#[derive(Clone, Copy)]
enum Reading {
    Range,
    Derivative,
    Integral,
}

impl Reading {
    fn codes(self) -> (u32, u32, u32) {
        match self {
            Reading::Range => (5_429_513, 5_429_413, 5_429_414),
            Reading::Derivative => (5_624_900, 5_624_901, 5_624_902),
            Reading::Integral => (5_423_901, 5_423_902, 5_423_902),
        }
    }
}

struct Output {
    name: String,
    func: Func,
    window: Window,
}

/// A parsed `$setWindowFields`.
pub(super) struct SetWindowFields {
    partition: Option<Expr>,
    sort: Vec<(Vec<String>, bool)>,
    outputs: Vec<Output>,
}

const STAGE: &str = "$setWindowFields";

fn parse_error(message: String) -> Error {
    Error::rejected(ErrorCode::FailedToParse, message)
}

/// One bound: `"unbounded"`, `"current"` or a number (`whole`: a whole one, for `documents`
/// windows and ranges with a `unit`).
///
/// # Errors
/// `FailedToParse`, as MongoDB.
fn bound(v: &Bson, whole: bool) -> Result<Bound> {
    let at = match v {
        Bson::String(s) if s == "unbounded" => return Ok(Bound::Unbounded),
        Bson::String(s) if s == "current" => return Ok(Bound::Current),
        Bson::String(_) => {
            return Err(parse_error(format!(
                "{STAGE}: window bounds must be 'unbounded', 'current', or a number, not {v}"
            )));
        }
        other => number(Some(other)).filter(|x| !x.is_nan()).ok_or_else(|| {
            parse_error(format!(
                "{STAGE}: a window bound must be a number, not {other}"
            ))
        })?,
    };
    if whole && at.fract() != 0.0 {
        return Err(parse_error(format!(
            "{STAGE}: a window bound of documents, or of a range with a unit, must be an integer, not {at}"
        )));
    }
    Ok(Bound::At(at))
}

/// `Location5339900` unless `lo <= hi` (`current` as 0) when both are numbers.
fn forward(lo: Bound, hi: Bound) -> Result<()> {
    let value = |b: Bound| match b {
        Bound::Current => Some(0.0),
        Bound::At(x) => Some(x),
        Bound::Unbounded => None,
    };
    if let (Some(l), Some(h)) = (value(lo), value(hi))
        && l > h
    {
        return Err(Error::rejected(
            ErrorCode::Location(5_339_900),
            format!("{STAGE}: lower bound must not exceed upper bound: [{l}, {h}]"),
        ));
    }
    Ok(())
}

/// A `unit`.
///
/// # Errors
/// `FailedToParse` for one that is not a unit's name.
fn unit_of(v: Option<&Bson>) -> Result<Option<Unit>> {
    match v {
        None => Ok(None),
        Some(Bson::String(u)) => Unit::parse(u).map(Some).ok_or_else(|| {
            Error::rejected(
                ErrorCode::FailedToParse,
                format!("{STAGE}: unknown time unit value: {u}"),
            )
        }),
        Some(other) => Err(Error::rejected(
            ErrorCode::FailedToParse,
            format!("{STAGE}: 'unit' must be a string, but got {other}"),
        )),
    }
}

/// The `unit` of `$derivative` or `$integral` as its length in ms: millisecond to week.
///
/// # Errors
/// `Location5490710` for a month, quarter or year; those of [`unit_of`].
fn unit_ms(v: Option<&Bson>) -> Result<Option<i64>> {
    match unit_of(v)? {
        None => Ok(None),
        Some(unit) => unit.fixed_ms().map(Some).ok_or_else(|| {
            Error::rejected(
                ErrorCode::Location(5_490_710),
                format!("{STAGE}: unit must be 'week' or smaller"),
            )
        }),
    }
}

/// Parses a `window` (`None`: none given, the whole partition) for a stage sorted by `sort`.
///
/// # Errors
/// MongoDB's: `FailedToParse` for a malformed window, `Location5339900` for bounds out of
/// order, `5339901` for a bounded `documents` window without `sortBy`, `5339902` and
/// `8947401` for a `range` window without a one-field, ascending `sortBy`.
fn window(spec: Option<&Bson>, sort: &[(Vec<String>, bool)]) -> Result<Window> {
    let Some(spec) = spec else {
        return Ok(Window::Whole);
    };
    let Bson::Document(d) = spec else {
        return Err(parse_error(format!(
            "{STAGE}: 'window' field must be an object"
        )));
    };
    let pair = |k: &str, whole: bool| -> Result<(Bound, Bound)> {
        match d.get(k) {
            Some(Bson::Array(a)) if a.len() == 2 => {
                let (lo, hi) = (bound(&a[0], whole)?, bound(&a[1], whole)?);
                forward(lo, hi)?;
                Ok((lo, hi))
            }
            other => Err(parse_error(format!(
                "{STAGE}: window bounds must be a 2-element array: {}",
                other.map_or_else(|| "missing".to_owned(), ToString::to_string)
            ))),
        }
    };
    let (documents, range) = (d.contains_key("documents"), d.contains_key("range"));
    if documents && range {
        return Err(parse_error(format!(
            "{STAGE}: window bounds can specify either 'documents' or 'range', not both"
        )));
    }
    if !range && d.contains_key("unit") {
        return Err(parse_error(format!(
            "{STAGE}: window bounds can only specify 'unit' with range-based bounds"
        )));
    }
    if documents {
        if d.len() != 1 {
            return Err(parse_error(format!(
                "{STAGE}: 'window' field that specifies documents cannot have other fields"
            )));
        }
        let (lo, hi) = pair("documents", true)?;
        let unbounded = matches!((lo, hi), (Bound::Unbounded, Bound::Unbounded));
        if sort.is_empty() && !unbounded {
            return Err(Error::rejected(
                ErrorCode::Location(5_339_901),
                format!("{STAGE}: document-based bounds require a sortBy"),
            ));
        }
        return Ok(Window::Documents(lo, hi));
    }
    if !range {
        if let Some(k) = d.keys().next() {
            return Err(parse_error(format!(
                "{STAGE}: 'window' field can only contain 'documents' as the only argument or 'range' with an optional 'unit' field, not '{k}'"
            )));
        }
        return Ok(Window::Whole);
    }
    if let Some(k) = d.keys().find(|k| *k != "range" && *k != "unit") {
        return Err(parse_error(format!(
            "{STAGE}: 'window' field that specifies range cannot have other fields besides 'unit', not '{k}'"
        )));
    }
    let unit = unit_of(d.get("unit"))?;
    let (lo, hi) = pair("range", unit.is_some())?;
    match sort {
        [(_, false)] => {}
        [(_, true)] => {
            return Err(Error::rejected(
                ErrorCode::Location(8_947_401),
                format!("{STAGE}: range-based bounds require an ascending sortBy"),
            ));
        }
        _ => {
            return Err(Error::rejected(
                ErrorCode::Location(5_339_902),
                format!("{STAGE}: range-based bounds require sortBy a single field"),
            ));
        }
    }
    Ok(match unit {
        None => Window::Range(lo, hi, None),
        Some(unit) => match unit.fixed_ms() {
            Some(ms) => Window::Range(lo, hi, Some(ms)),
            None => Window::Calendar(lo, hi, unit),
        },
    })
}

impl SetWindowFields {
    pub(super) fn parse(spec: &Bson) -> Result<SetWindowFields> {
        let Bson::Document(d) = spec else {
            return Err(bad(format!("{STAGE} takes a document")));
        };
        if let Some(k) = d
            .keys()
            .find(|k| !["partitionBy", "sortBy", "output"].contains(&k.as_str()))
        {
            return Err(bad(format!("{STAGE}: unknown field '{k}'")));
        }
        let partition = d.get("partitionBy").map(expression).transpose()?;
        let sort = d
            .get("sortBy")
            .map(|s| sort_keys(STAGE, s))
            .transpose()?
            .unwrap_or_default();
        let Some(Bson::Document(out)) = d.get("output") else {
            return Err(bad(format!("{STAGE} needs an output document")));
        };
        let mut outputs = Vec::new();
        for (name, spec) in out {
            if name.is_empty() || name.starts_with('$') {
                return Err(bad(format!("{STAGE}: '{name}' is not a valid output name")));
            }
            let Bson::Document(f) = spec else {
                return Err(bad(format!("{STAGE}: output '{name}' must be a document")));
            };
            let mut funcs = f.iter().filter(|(k, _)| *k != "window");
            let (Some((op, arg)), None) = (funcs.next(), funcs.next()) else {
                return Err(Error::rejected(
                    ErrorCode::FailedToParse,
                    format!("{STAGE}: output '{name}' takes one function"),
                ));
            };
            if let Some(seq) = window_seq::parse(op, arg, f.contains_key("window"), &sort)? {
                outputs.push(Output {
                    name: name.clone(),
                    func: Func::Seq(seq),
                    window: Window::Whole,
                });
                continue;
            }
            let window = window(f.get("window"), &sort)?;
            let func = match op.as_str() {
                "$derivative" | "$integral" => {
                    match sort.as_slice() {
                        [] => return Err(parse_error(format!("{op} requires a sortBy"))),
                        [_] => {}
                        _ => {
                            return Err(parse_error(format!(
                                "{op} requires a non-compound sortBy"
                            )));
                        }
                    }
                    let Bson::Document(a) = arg else {
                        return Err(parse_error(format!(
                            "{op} expects an object, but got {arg}"
                        )));
                    };
                    if let Some(k) = a.keys().find(|k| *k != "input" && *k != "unit") {
                        return Err(parse_error(format!("{op} got unexpected argument: {k}")));
                    }
                    let input = expression(a.get("input").ok_or_else(|| {
                        parse_error(format!("{op} requires an 'input' expression"))
                    })?)?;
                    let unit = unit_ms(a.get("unit"))?;
                    if op == "$derivative" {
                        if !f.contains_key("window") {
                            return Err(parse_error(
                                "$derivative requires explicit window bounds".to_owned(),
                            ));
                        }
                        Func::Derivative(input, unit)
                    } else {
                        Func::Integral(input, unit)
                    }
                }
                "$mergeObjects" => {
                    return Err(Error::rejected(
                        ErrorCode::FailedToParse,
                        format!("{STAGE}: $mergeObjects is not a window function"),
                    ));
                }
                _ => {
                    let mut one = Document::new();
                    one.insert(op.clone(), arg.clone());
                    let (op, arg) = parse_accumulator(STAGE, name, &Bson::Document(one))?;
                    Func::Acc(op, arg)
                }
            };
            // tscoll reads the dates of these in ascending order.
            if matches!(func, Func::Derivative(..) | Func::Integral(..))
                && sort.len() == 1
                && sort[0].1
            {
                return Err(bad(format!(
                    "{STAGE}: output '{name}' needs an ascending sortBy"
                )));
            }
            outputs.push(Output {
                name: name.clone(),
                func,
                window,
            });
        }
        Ok(SetWindowFields {
            partition,
            sort,
            outputs,
        })
    }

    /// Computes the outputs over `docs`: sorted by partition and `sortBy` (holding at most
    /// `budget` bytes of documents, the rest in sorted runs on temporary files,
    /// [`SortSpec::sort`](crate::query::sort::SortSpec::sort)), then one partition at a
    /// time, or, when every window is a bounded `documents` window, a chunk of a partition
    /// at a time with the documents its windows reach before and after it.
    ///
    /// # Errors
    /// What the input yields, or a partition expression failing (the other errors of the
    /// stage come as the result is read: an expression failing, a range window over a
    /// `sortBy` value that is not a number or date, a `$push` past 16 MiB).
    pub(super) fn run(self, docs: Docs, budget: u64) -> Result<Docs> {
        let window = Arc::new(self);
        let mut keys = Vec::new();
        if window.partition.is_some() {
            keys.push((vec![PARTITION.to_owned()], false));
        }
        keys.extend(window.sort.iter().cloned());
        let input: Docs = if keys.is_empty() {
            docs
        } else {
            let tagger = Arc::clone(&window);
            let tagged = docs.map(move |d| {
                let mut d = d?;
                if let Some(e) = &tagger.partition {
                    let key = evaluate(e, &d, STAGE)?.unwrap_or(Bson::Null);
                    d.insert(PARTITION, key);
                }
                Ok(d)
            });
            Box::new(sort_spec(keys).sort(tagged, 0, None, budget)?)
        };
        let reach = window.reach();
        Ok(Box::new(Partitions {
            window,
            input,
            reach,
            pending: None,
            exhausted: false,
            key: None,
            held: Vec::new(),
            context: 0,
            ready: Vec::new().into_iter(),
            done: false,
        }))
    }

    /// When every window is a `documents` window with two numeric (or `current`) bounds:
    /// how many documents before and after its own a document's window may reach.
    fn reach(&self) -> Option<(usize, usize)> {
        let mut before = 0;
        let mut after = 0;
        for o in &self.outputs {
            if let Func::Seq(s) = &o.func {
                let (b, a) = s.reach()?;
                before = before.max(b);
                after = after.max(a);
                continue;
            }
            let Window::Documents(lo, hi) = o.window else {
                return None;
            };
            for b in [lo, hi] {
                #[expect(clippy::cast_possible_truncation, reason = "whole offsets")]
                let k = match b {
                    Bound::Unbounded => return None,
                    Bound::Current => 0,
                    Bound::At(k) => k as i64,
                };
                let n = usize::try_from(k.unsigned_abs()).unwrap_or(usize::MAX);
                if k < 0 {
                    before = n.max(before);
                } else {
                    after = n.max(after);
                }
            }
        }
        Some((before, after))
    }

    /// Each output's value (`None`: none set) for each document of `part`, a run of
    /// documents of one partition in `sortBy` order.
    fn values(&self, part: &[Document]) -> Result<Vec<Vec<Option<Bson>>>> {
        self.outputs.iter().map(|o| self.compute(o, part)).collect()
    }

    /// The `sortBy` value of each document as a number (a date in ms, exact below 2^53, so
    /// that the difference of two is exact and only then divided by the unit's length);
    /// needed by range windows, `$derivative` and `$integral`.
    fn positions(
        &self,
        part: &[Document],
        unit: Option<i64>,
        reading: Reading,
    ) -> Result<Vec<f64>> {
        let path = &self.sort[0].0;
        let (not_date, no_unit, not_number) = reading.codes();
        let fail = |code: u32, m: String| Error::rejected(ErrorCode::Location(code), m);
        part.iter()
            .map(|d| {
                let v = path
                    .split_first()
                    .and_then(|(f, rest)| lookup(d.get(f), rest));
                #[expect(clippy::cast_precision_loss, reason = "positions as doubles")]
                match (v, unit) {
                    (Some(Bson::DateTime(t)), Some(_)) => Ok(t.timestamp_millis() as f64),
                    (Some(Bson::Int32(n)), None) => Ok(f64::from(*n)),
                    (Some(Bson::Int64(n)), None) => Ok(*n as f64),
                    (Some(Bson::Double(x)), None) => Ok(*x),
                    (Some(Bson::DateTime(_)), None) => Err(fail(
                        no_unit,
                        format!("{STAGE}: a window over dates needs a unit"),
                    )),
                    (v, unit) => Err(fail(
                        if unit.is_some() { not_date } else { not_number },
                        format!(
                            "{STAGE}: the sortBy value must be a {} here, not {}",
                            if unit.is_some() { "date" } else { "number" },
                            v.map_or_else(|| "missing".to_owned(), ToString::to_string)
                        ),
                    )),
                }
            })
            .collect()
    }

    /// The window `[lo, hi]` (inclusive; empty when `lo > hi`) of each document.
    fn windows(&self, w: Window, part: &[Document]) -> Result<Vec<(usize, usize)>> {
        let n = part.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        Ok(match w {
            Window::Whole => vec![(0, n - 1); n],
            Window::Documents(lo, hi) => (0..n)
                .map(|i| {
                    #[expect(clippy::cast_possible_truncation, reason = "whole offsets")]
                    let at = |b: Bound, unbounded: i64| -> i64 {
                        match b {
                            Bound::Unbounded => unbounded,
                            Bound::Current => i as i64,
                            Bound::At(k) => (i as i64).saturating_add(k as i64),
                        }
                    };
                    let last = n as i64 - 1;
                    let l = at(lo, 0).max(0);
                    let h = at(hi, last).min(last);
                    if l > h || l > last || h < 0 {
                        (1, 0)
                    } else {
                        (
                            usize::try_from(l).unwrap_or(0),
                            usize::try_from(h).unwrap_or(0),
                        )
                    }
                })
                .collect(),
            Window::Range(lo, hi, unit) => {
                let xs = self.positions(part, unit, Reading::Range)?;
                let (lo, hi) = (lo.scaled(unit), hi.scaled(unit));
                (0..n)
                    .map(|i| {
                        let l = match lo {
                            Bound::Unbounded => 0,
                            Bound::Current => xs.partition_point(|x| *x < xs[i]),
                            Bound::At(a) => xs.partition_point(|x| *x < xs[i] + a),
                        };
                        let h = match hi {
                            Bound::Unbounded => n,
                            Bound::Current => xs.partition_point(|x| *x <= xs[i]),
                            Bound::At(b) => xs.partition_point(|x| *x <= xs[i] + b),
                        };
                        if h == 0 || l >= h { (1, 0) } else { (l, h - 1) }
                    })
                    .collect()
            }
            Window::Calendar(lo, hi, unit) => {
                let xs = self.positions(part, Some(1), Reading::Range)?;
                // The date `k` units from document `i`'s, in ms; past the dates an i64 holds,
                // before or after every document.
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_precision_loss,
                    reason = "dates in ms, exact below 2^53; whole bounds"
                )]
                let at = |i: usize, k: f64| -> f64 {
                    dates::add(xs[i] as i64, unit, k as i64, dates::Tz::UTC).map_or(
                        if k < 0.0 {
                            f64::NEG_INFINITY
                        } else {
                            f64::INFINITY
                        },
                        |t| t as f64,
                    )
                };
                (0..n)
                    .map(|i| {
                        let l = match lo {
                            Bound::Unbounded => 0,
                            Bound::Current => xs.partition_point(|x| *x < xs[i]),
                            Bound::At(a) => {
                                let t = at(i, a);
                                xs.partition_point(|x| *x < t)
                            }
                        };
                        let h = match hi {
                            Bound::Unbounded => n,
                            Bound::Current => xs.partition_point(|x| *x <= xs[i]),
                            Bound::At(b) => {
                                let t = at(i, b);
                                xs.partition_point(|x| *x <= t)
                            }
                        };
                        if h == 0 || l >= h { (1, 0) } else { (l, h - 1) }
                    })
                    .collect()
            }
        })
    }

    fn compute(&self, o: &Output, part: &[Document]) -> Result<Vec<Option<Bson>>> {
        if let Func::Seq(s) = &o.func {
            return s.compute(part);
        }
        let windows = self.windows(o.window, part)?;
        match &o.func {
            Func::Acc(op, arg) => {
                let inputs = part
                    .iter()
                    .map(|d| match arg {
                        Some(e) => evaluate(e, d, STAGE),
                        None => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let mut whole: Option<Bson> = None;
                windows
                    .iter()
                    .map(|&(lo, hi)| {
                        if matches!(o.window, Window::Whole)
                            && let Some(v) = &whole
                        {
                            return Ok(Some(v.clone()));
                        }
                        let mut st = State::new(*op);
                        if lo <= hi {
                            for v in &inputs[lo..=hi] {
                                st.add(v.as_ref())?;
                            }
                        }
                        let v = st.value();
                        if matches!(o.window, Window::Whole) {
                            whole = Some(v.clone());
                        }
                        Ok(Some(v))
                    })
                    .collect()
            }
            Func::Seq(s) => s.compute(part),
            Func::Derivative(input, unit) | Func::Integral(input, unit) => {
                let reading = if matches!(o.func, Func::Derivative(..)) {
                    Reading::Derivative
                } else {
                    Reading::Integral
                };
                let xs = self.positions(part, *unit, reading)?;
                let ys = part
                    .iter()
                    .map(|d| Ok(number(evaluate(input, d, STAGE)?.as_ref())))
                    .collect::<Result<Vec<_>>>()?;
                let derivative = matches!(o.func, Func::Derivative(..));
                // Positions in units: the difference of two dates in ms, then divided.
                #[expect(clippy::cast_precision_loss, reason = "a unit's length in ms")]
                let span = |a: f64, b: f64| unit.map_or(b - a, |ms| (b - a) / ms as f64);
                Ok(windows
                    .iter()
                    .map(|&(lo, hi)| {
                        if lo > hi {
                            return Some(Bson::Null);
                        }
                        Some(if derivative {
                            match (ys[lo], ys[hi]) {
                                (Some(a), Some(b)) if hi > lo && xs[hi] != xs[lo] => {
                                    Bson::Double((b - a) / span(xs[lo], xs[hi]))
                                }
                                _ => Bson::Null,
                            }
                        } else {
                            let mut sum = 0.0;
                            for k in lo..hi {
                                match (ys[k], ys[k + 1]) {
                                    (Some(a), Some(b)) => {
                                        sum += span(xs[k], xs[k + 1]) * (a + b) / 2.0
                                    }
                                    _ => return Some(Bson::Null),
                                }
                            }
                            Bson::Double(sum)
                        })
                    })
                    .collect())
            }
        }
    }
}

/// The field a document's partition value is kept in while the documents are sorted (a
/// name no measurement field has: it starts with a control character).
const PARTITION: &str = "\u{1}partition";

/// Documents of a chunk of a partition computed at a time, besides those its windows reach.
const CHUNK: usize = 4096;

/// The documents of a `$setWindowFields`, computed a partition (or a chunk of one) at a
/// time as they are read.
struct Partitions {
    window: Arc<SetWindowFields>,
    /// The documents sorted by partition, then `sortBy`, each with its partition value.
    input: Docs,
    /// `(before, after)` when the windows are bounded ([`SetWindowFields::reach`]).
    reach: Option<(usize, usize)>,
    /// The next input document, read already, and its partition value.
    pending: Option<(Option<Bson>, Document)>,
    /// Whether the input has ended.
    exhausted: bool,
    /// The partition value of the partition being read (`None` between partitions).
    key: Option<Option<Bson>>,
    /// Documents of the partition being read: `held[..context]` returned already, kept for
    /// the windows of the next ones.
    held: Vec<Document>,
    context: usize,
    /// Documents computed, to return.
    ready: std::vec::IntoIter<Document>,
    done: bool,
}

impl Partitions {
    /// Reads the rest of a partition, or its next chunk, and computes its documents.
    fn fill(&mut self) -> Result<()> {
        let (before, after) = self.reach.unwrap_or((0, 0));
        let full = self.reach.map_or(usize::MAX, |_| {
            self.context + CHUNK.max(before + after) + after
        });
        let mut ended = false;
        while self.held.len() < full {
            let next = match self.pending.take() {
                Some(p) => Some(p),
                None => self.input.next().transpose()?.map(|mut d| {
                    let key = d.remove(PARTITION);
                    (key, d)
                }),
            };
            let Some((key, d)) = next else {
                self.exhausted = true;
                ended = true;
                break;
            };
            match &self.key {
                None => self.key = Some(key),
                Some(k) if !same(k.as_ref(), key.as_ref()) => {
                    self.pending = Some((key, d));
                    ended = true;
                    break;
                }
                Some(_) => {}
            }
            self.held.push(d);
        }
        let n = self.held.len();
        let mut out = Vec::new();
        if n > self.context {
            let mut values = self.window.values(&self.held)?;
            // The last `after` documents' windows may reach documents not read yet.
            let end = if ended { n } else { n - after };
            // Kept for the next chunk: the documents not returned, and the `before` ones
            // returned last.
            let keep_from = if ended { n } else { end.saturating_sub(before) };
            let kept = self.held.split_off(keep_from);
            let mut set = |i: usize, mut d: Document| -> Result<Document> {
                for (o, vs) in self.window.outputs.iter().zip(&mut values) {
                    if let Some(v) = vs[i].take() {
                        let parts: Vec<&str> = o.name.split('.').collect();
                        set_path(&mut d, &parts, v)?;
                    }
                }
                Ok(d)
            };
            out.reserve(end - self.context);
            let context = self.context;
            for (i, d) in std::mem::take(&mut self.held).into_iter().enumerate() {
                if i >= context {
                    out.push(set(i, d)?);
                }
            }
            for i in keep_from.max(context)..end {
                out.push(set(i, kept[i - keep_from].clone())?);
            }
            self.held = kept;
            self.context = end - keep_from;
        }
        if ended {
            self.held.clear();
            self.context = 0;
            self.key = None;
            self.done = self.exhausted && self.pending.is_none();
        }
        self.ready = out.into_iter();
        Ok(())
    }
}

impl Iterator for Partitions {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        loop {
            if let Some(d) = self.ready.next() {
                return Some(Ok(d));
            }
            if self.done {
                return None;
            }
            if let Err(e) = self.fill() {
                self.done = true;
                return Some(Err(e));
            }
        }
    }
}

/// Whether two partition values are the same partition (BSON order: `1` is `1.0`).
fn same(a: Option<&Bson>, b: Option<&Bson>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => compare(a, b) == Ordering::Equal,
        (None, None) => true,
        _ => false,
    }
}
