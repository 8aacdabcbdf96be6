//! `$setWindowFields`: per partition (`partitionBy`), documents sorted by `sortBy`, each gets
//! output fields computed over a window of its neighbours: `documents: [lo, hi]` (positions
//! relative to the document), `range: [lo, hi]` (values of the one ascending `sortBy` field,
//! in `unit`s for dates), or the whole partition. Functions: the accumulators of `$group`,
//! `$derivative` (the slope between the window's first and last documents, per `unit`) and
//! `$integral` (the trapezoidal rule over the window, in `unit`s). Partitions come out in
//! `partitionBy` order, their documents in `sortBy` order.

use std::collections::BTreeMap;

use bson::{Bson, Document};

use super::bad;
use super::group::{Key, Op, State, number, parse_accumulator};
use super::stage::{evaluate, expression, sort_documents, sort_keys};
use crate::dates::Unit;
use crate::error::Result;
use crate::expr::Expr;
use crate::filter::lookup;
use crate::update::set_path;

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
}

enum Func {
    Acc(Op, Option<Expr>),
    Derivative(Expr, Option<i64>),
    Integral(Expr, Option<i64>),
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

fn bound(v: &Bson, documents: bool) -> Result<Bound> {
    match v {
        Bson::String(s) if s == "unbounded" => Ok(Bound::Unbounded),
        Bson::String(s) if s == "current" => Ok(Bound::Current),
        Bson::Int32(n) => Ok(Bound::At(f64::from(*n))),
        #[expect(clippy::cast_precision_loss, reason = "window offsets")]
        Bson::Int64(n) => Ok(Bound::At(*n as f64)),
        Bson::Double(d) if !documents || d.fract() == 0.0 => Ok(Bound::At(*d)),
        other => Err(bad(format!(
            "{STAGE}: a window bound is 'unbounded', 'current' or a number{}, not {other}",
            if documents { " of documents" } else { "" }
        ))),
    }
}

fn unit_ms(v: Option<&Bson>) -> Result<Option<i64>> {
    match v {
        None => Ok(None),
        Some(Bson::String(u)) => match Unit::parse(u).and_then(Unit::fixed_ms) {
            Some(ms) => Ok(Some(ms)),
            None => Err(bad(format!(
                "{STAGE}: unit '{u}' is not supported (millisecond to week)"
            ))),
        },
        Some(other) => Err(bad(format!("{STAGE}: unit must be a string, not {other}"))),
    }
}

fn window(spec: Option<&Bson>) -> Result<Window> {
    let Some(spec) = spec else {
        return Ok(Window::Whole);
    };
    let Bson::Document(d) = spec else {
        return Err(bad(format!("{STAGE}: window must be a document")));
    };
    let pair = |k: &str, documents: bool| -> Result<(Bound, Bound)> {
        match d.get(k) {
            Some(Bson::Array(a)) if a.len() == 2 => {
                Ok((bound(&a[0], documents)?, bound(&a[1], documents)?))
            }
            _ => Err(bad(format!("{STAGE}: window.{k} must be [lower, upper]"))),
        }
    };
    if d.contains_key("documents") {
        if d.len() != 1 {
            return Err(bad(format!(
                "{STAGE}: a documents window takes no other field"
            )));
        }
        let (lo, hi) = pair("documents", true)?;
        return Ok(Window::Documents(lo, hi));
    }
    if d.contains_key("range") {
        if let Some(k) = d.keys().find(|k| *k != "range" && *k != "unit") {
            return Err(bad(format!("{STAGE}: unknown window field '{k}'")));
        }
        let (lo, hi) = pair("range", false)?;
        return Ok(Window::Range(lo, hi, unit_ms(d.get("unit"))?));
    }
    Err(bad(format!(
        "{STAGE}: a window is {{documents: [..]}} or {{range: [..]}}"
    )))
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
            let window = window(f.get("window"))?;
            let mut funcs = f.iter().filter(|(k, _)| *k != "window");
            let (Some((op, arg)), None) = (funcs.next(), funcs.next()) else {
                return Err(bad(format!("{STAGE}: output '{name}' takes one function")));
            };
            let func = match op.as_str() {
                "$derivative" | "$integral" => {
                    let Bson::Document(a) = arg else {
                        return Err(bad(format!("{STAGE}: {op} takes {{input, unit}}")));
                    };
                    let input = expression(
                        a.get("input")
                            .ok_or_else(|| bad(format!("{STAGE}: {op} needs 'input'")))?,
                    )?;
                    let unit = unit_ms(a.get("unit"))?;
                    if op == "$derivative" {
                        if matches!(window, Window::Whole) {
                            return Err(bad(format!(
                                "{STAGE}: $derivative needs an explicit window"
                            )));
                        }
                        Func::Derivative(input, unit)
                    } else {
                        Func::Integral(input, unit)
                    }
                }
                _ => {
                    let mut one = Document::new();
                    one.insert(op.clone(), arg.clone());
                    let (op, arg) = parse_accumulator(STAGE, name, &Bson::Document(one))?;
                    Func::Acc(op, arg)
                }
            };
            let needs_order = matches!(window, Window::Range(..))
                || matches!(func, Func::Derivative(..) | Func::Integral(..));
            if needs_order && (sort.len() != 1 || sort[0].1) {
                return Err(bad(format!(
                    "{STAGE}: output '{name}' needs sortBy on one field, ascending"
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

    /// Computes the outputs over `docs`.
    ///
    /// # Errors
    /// An expression failing, a range window over a `sortBy` value that is not a number or
    /// date, or a `$push` past 16 MiB.
    pub(super) fn run(&self, docs: Vec<Document>) -> Result<Vec<Document>> {
        let mut partitions: BTreeMap<Key, Vec<Document>> = BTreeMap::new();
        for d in docs {
            let key = match &self.partition {
                Some(e) => evaluate(e, &d, STAGE)?.unwrap_or(Bson::Null),
                None => Bson::Null,
            };
            partitions.entry(Key(key)).or_default().push(d);
        }
        let mut out = Vec::new();
        for (_, part) in partitions {
            let part = sort_documents(part, &self.sort);
            let mut values: Vec<Vec<Option<Bson>>> = Vec::with_capacity(self.outputs.len());
            for o in &self.outputs {
                values.push(self.compute(o, &part)?);
            }
            for (i, mut d) in part.into_iter().enumerate() {
                for (o, vs) in self.outputs.iter().zip(&mut values) {
                    if let Some(v) = vs[i].take() {
                        let parts: Vec<&str> = o.name.split('.').collect();
                        set_path(&mut d, &parts, v)?;
                    }
                }
                out.push(d);
            }
        }
        Ok(out)
    }

    /// The `sortBy` value of each document as a number (a date in ms, exact below 2^53, so
    /// that the difference of two is exact and only then divided by the unit's length);
    /// needed by range windows, `$derivative` and `$integral`.
    fn positions(&self, part: &[Document], unit: Option<i64>) -> Result<Vec<f64>> {
        let path = &self.sort[0].0;
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
                    (Some(Bson::DateTime(_)), None) => {
                        Err(bad(format!("{STAGE}: a window over dates needs a unit")))
                    }
                    (v, _) => Err(bad(format!(
                        "{STAGE}: the sortBy value must be a {} here, not {}",
                        if unit.is_some() { "date" } else { "number" },
                        v.map_or_else(|| "missing".to_owned(), ToString::to_string)
                    ))),
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
                let xs = self.positions(part, unit)?;
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
        })
    }

    fn compute(&self, o: &Output, part: &[Document]) -> Result<Vec<Option<Bson>>> {
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
            Func::Derivative(input, unit) | Func::Integral(input, unit) => {
                let xs = self.positions(part, *unit)?;
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
