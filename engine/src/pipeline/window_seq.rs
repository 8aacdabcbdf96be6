//! The window functions of `$setWindowFields` computed in one pass over a partition in
//! `sortBy` order, without a `window`: `$shift`, `$rank`, `$denseRank`, `$documentNumber`,
//! `$expMovingAvg`, `$locf` and `$linearFill`.
//!
//! Errors are MongoDB's: `FailedToParse` for a malformed function; 5371601, 5371602 and
//! 5371603 for the ranks; 605001 for `$linearFill` without a one-field `sortBy`, 6050106 for
//! a `sortBy` value seen twice there, `TypeMismatch` for a value it cannot fill between.

use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::compare;

use super::group::number;
use super::stage::{evaluate, expression};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::Expr;
use crate::mql::filter::lookup;

const STAGE: &str = "$setWindowFields";

/// Which rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RankKind {
    /// `$rank`: ties share the position of the first of them, gaps follow.
    Rank,
    /// `$denseRank`: ties share a rank, no gaps.
    Dense,
    /// `$documentNumber`: the position, ties or not.
    Number,
}

/// A window function computed in one pass over a partition.
pub(super) enum Seq {
    /// `$shift`: `output` evaluated on the document `by` positions away, else `default`.
    Shift {
        output: Expr,
        by: i64,
        default: Bson,
    },
    /// `$rank`, `$denseRank` or `$documentNumber`, by the one `sortBy` field (its path).
    Rank(RankKind, Vec<String>),
    /// `$expMovingAvg` with its weight `alpha` (`2 / (N + 1)` for `N`).
    ExpMovingAvg { input: Expr, alpha: f64 },
    /// `$locf`: the last non-null value so far.
    Locf(Expr),
    /// `$linearFill`: nulls filled on the line between the non-null values around them, by
    /// the one `sortBy` field (its path).
    LinearFill(Expr, Vec<String>),
}

fn parse_error(message: String) -> Error {
    Error::rejected(ErrorCode::FailedToParse, message)
}

fn failed(code: u32, message: String) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

/// Parses `{<op>: <arg>}` (`with_window`: the output also had a `window`) when `op` is one of
/// these functions (`None` otherwise); `sort` is the stage's `sortBy`.
///
/// # Errors
/// MongoDB's codes, as listed in the module's documentation.
pub(super) fn parse(
    op: &str,
    arg: &Bson,
    with_window: bool,
    sort: &[(Vec<String>, bool)],
) -> Result<Option<Seq>> {
    let no_window = |name: &str| -> Result<()> {
        if with_window {
            return Err(parse_error(format!(
                "{STAGE}: 'window' field is not allowed in {name}"
            )));
        }
        Ok(())
    };
    let one_field = |code: u32| -> Result<Vec<String>> {
        match sort {
            [(path, _)] => Ok(path.clone()),
            _ => Err(failed(
                code,
                format!(
                    "{op} must be specified with a top level sortBy expression with exactly one element"
                ),
            )),
        }
    };
    Ok(Some(match op {
        "$shift" => {
            if with_window {
                return Err(parse_error(format!(
                    "{STAGE}: $shift does not accept a 'window' field"
                )));
            }
            let Bson::Document(d) = arg else {
                return Err(parse_error(
                    "Argument to $shift must be an object".to_owned(),
                ));
            };
            let (mut output, mut by, mut default) = (None, None, Bson::Null);
            for (k, v) in d {
                match k.as_str() {
                    "output" => output = Some(expression(v)?),
                    "by" => {
                        let n = match v {
                            Bson::Int32(n) => Some(i64::from(*n)),
                            Bson::Int64(n) => i32::try_from(*n).ok().map(i64::from),
                            Bson::Double(d)
                                if d.fract() == 0.0 && d.abs() <= f64::from(i32::MAX) =>
                            {
                                #[expect(
                                    clippy::cast_possible_truncation,
                                    reason = "checked whole"
                                )]
                                Some(*d as i64)
                            }
                            _ => None,
                        };
                        by = Some(n.ok_or_else(|| {
                            parse_error(format!(
                                "'$shift:by' field must be an integer, but found {v}"
                            ))
                        })?);
                    }
                    "default" => {
                        default = constant(&expression(v)?)?.ok_or_else(|| {
                            parse_error(
                                "'$shift:default' expression must yield a constant value."
                                    .to_owned(),
                            )
                        })?;
                    }
                    _ => return Err(parse_error(format!("Unknown argument in $shift: {k}"))),
                }
            }
            let output = output
                .ok_or_else(|| parse_error("$shift requires an 'output' expression.".to_owned()))?;
            let by = by.ok_or_else(|| {
                parse_error("$shift requires 'by' as an integer value.".to_owned())
            })?;
            if sort.is_empty() {
                return Err(parse_error("'$shift' requires a sortBy".to_owned()));
            }
            Seq::Shift {
                output,
                by,
                default,
            }
        }
        "$rank" | "$denseRank" | "$documentNumber" => {
            if with_window {
                return Err(failed(
                    5_371_601,
                    "Rank style window functions take no other arguments".to_owned(),
                ));
            }
            if !matches!(arg, Bson::Document(d) if d.is_empty()) {
                return Err(failed(
                    5_371_603,
                    format!("{op} must be specified with '{{}}' as the value"),
                ));
            }
            let kind = match op {
                "$rank" => RankKind::Rank,
                "$denseRank" => RankKind::Dense,
                _ => RankKind::Number,
            };
            Seq::Rank(kind, one_field(5_371_602)?)
        }
        "$expMovingAvg" => {
            if with_window {
                return Err(parse_error(
                    "$expMovingAvg must have exactly one argument that is an object".to_owned(),
                ));
            }
            let shape = || {
                parse_error(
                    "$expMovingAvg sub object must have exactly two fields: An 'input' field, \
                     and either an 'N' field or an 'alpha' field"
                        .to_owned(),
                )
            };
            let Bson::Document(d) = arg else {
                return Err(parse_error(
                    "$expMovingAvg must have exactly one argument that is an object".to_owned(),
                ));
            };
            let input = d.get("input").ok_or_else(shape)?;
            if d.len() != 2 {
                return Err(shape());
            }
            if sort.is_empty() {
                return Err(parse_error(
                    "$expMovingAvg requires an explicit 'sortBy'".to_owned(),
                ));
            }
            let alpha = if let Some(n) = d.get("N") {
                let n = number(Some(n)).ok_or_else(|| {
                    parse_error(format!("'N' field must be an integer, but found {n}"))
                })?;
                if n.fract() != 0.0 {
                    return Err(parse_error(format!(
                        "'N' field must be an integer, but found {n}. To use a non-integer, use the 'alpha' argument instead"
                    )));
                }
                if n <= 0.0 {
                    return Err(parse_error(format!(
                        "'N' must be greater than zero. Got {n}"
                    )));
                }
                2.0 / (n + 1.0)
            } else if let Some(a) = d.get("alpha") {
                let a = number(Some(a))
                    .ok_or_else(|| parse_error("'alpha' must be a number".to_owned()))?;
                if !(a > 0.0 && a < 1.0) {
                    return Err(parse_error(format!(
                        "'alpha' must be between 0 and 1 (exclusive), found {a}"
                    )));
                }
                a
            } else {
                return Err(shape());
            };
            Seq::ExpMovingAvg {
                input: expression(input)?,
                alpha,
            }
        }
        "$locf" => {
            no_window(op)?;
            Seq::Locf(expression(arg)?)
        }
        "$linearFill" => {
            no_window(op)?;
            Seq::LinearFill(expression(arg)?, one_field(605_001)?)
        }
        _ => return Ok(None),
    }))
}

impl Seq {
    /// How many documents before and after its own a document's value reads (`None`: the
    /// partition so far or all of it).
    pub(super) fn reach(&self) -> Option<(usize, usize)> {
        match self {
            Seq::Shift { by, .. } => {
                let n = usize::try_from(by.unsigned_abs()).unwrap_or(usize::MAX);
                Some(if *by < 0 { (n, 0) } else { (0, n) })
            }
            _ => None,
        }
    }

    /// The value of each document of `part` (a partition, or for `$shift` a run of one
    /// holding the documents its shift reaches), in `sortBy` order.
    ///
    /// # Errors
    /// An expression failing; `$linearFill`'s type and repeated-value errors.
    pub(super) fn compute(&self, part: &[Document]) -> Result<Vec<Option<Bson>>> {
        match self {
            Seq::Shift {
                output,
                by,
                default,
            } => (0..part.len())
                .map(|i| {
                    let at = i64::try_from(i)
                        .ok()
                        .and_then(|i| i.checked_add(*by))
                        .and_then(|j| usize::try_from(j).ok())
                        .filter(|j| *j < part.len());
                    // A document without the output takes the default too, as in MongoDB.
                    let v = match at {
                        Some(j) => evaluate(output, &part[j], STAGE)?,
                        None => None,
                    };
                    Ok(Some(v.unwrap_or_else(|| default.clone())))
                })
                .collect(),
            Seq::Rank(kind, path) => {
                let mut out = Vec::with_capacity(part.len());
                let mut last: Option<Bson> = None;
                let mut rank = 0_i64;
                for (i, d) in part.iter().enumerate() {
                    let key = field(d, path).cloned().unwrap_or(Bson::Null);
                    let tie = last
                        .as_ref()
                        .is_some_and(|l| compare(l, &key) == Ordering::Equal);
                    let position = i64::try_from(i).unwrap_or(i64::MAX).saturating_add(1);
                    rank = match kind {
                        RankKind::Number => position,
                        RankKind::Rank if tie => rank,
                        RankKind::Rank => position,
                        RankKind::Dense if tie => rank,
                        RankKind::Dense => rank + 1,
                    };
                    last = Some(key);
                    out.push(Some(
                        i32::try_from(rank).map_or(Bson::Int64(rank), Bson::Int32),
                    ));
                }
                Ok(out)
            }
            Seq::ExpMovingAvg { input, alpha } => {
                let mut avg: Option<f64> = None;
                part.iter()
                    .map(|d| {
                        if let Some(x) = number(evaluate(input, d, STAGE)?.as_ref()) {
                            avg = Some(avg.map_or(x, |a| alpha * x + (1.0 - alpha) * a));
                        }
                        Ok(Some(avg.map_or(Bson::Null, Bson::Double)))
                    })
                    .collect()
            }
            Seq::Locf(input) => {
                let mut last = Bson::Null;
                part.iter()
                    .map(|d| {
                        match evaluate(input, d, STAGE)? {
                            Some(v) if !matches!(v, Bson::Null | Bson::Undefined) => {
                                last = v;
                            }
                            _ => {}
                        }
                        Ok(Some(last.clone()))
                    })
                    .collect()
            }
            Seq::LinearFill(input, path) => linear_fill(input, path, part),
        }
    }
}

/// The value of an expression that reads no field (`None` when it reads one), computed once
/// when the stage is parsed.
///
/// # Errors
/// The expression failing.
pub(super) fn constant(e: &Expr) -> Result<Option<Bson>> {
    let mut fields = Vec::new();
    e.fields(&mut fields);
    if !fields.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        evaluate(e, &Document::new(), STAGE)?.unwrap_or(Bson::Null),
    ))
}

fn field<'a>(d: &'a Document, path: &[String]) -> Option<&'a Bson> {
    path.split_first()
        .and_then(|(f, rest)| lookup(d.get(f), rest))
}

/// `$linearFill`: each null or missing value between two numbers becomes
/// `y1 + (x - x1) * (y2 - y1) / (x2 - x1)` (x the `sortBy` values, dates in ms), a double;
/// the others stay null.
fn linear_fill(input: &Expr, path: &[String], part: &[Document]) -> Result<Vec<Option<Bson>>> {
    let mut xs = Vec::with_capacity(part.len());
    let mut ys = Vec::with_capacity(part.len());
    let mut last: Option<&Bson> = None;
    for d in part {
        let y = evaluate(input, d, STAGE)?;
        let y = match y {
            None | Some(Bson::Null | Bson::Undefined) => None,
            Some(v) if number(Some(&v)).is_some() => Some(v),
            Some(v) => {
                return Err(Error::rejected(
                    ErrorCode::TypeMismatch,
                    format!(
                        "$linearFill: value to be filled must be numeric or nullish, but found {:?}",
                        v.element_type()
                    ),
                ));
            }
        };
        let key = field(d, path);
        #[expect(clippy::cast_precision_loss, reason = "positions as doubles")]
        let x = match key {
            Some(Bson::DateTime(t)) => t.timestamp_millis() as f64,
            Some(v) if number(Some(v)).is_some() => number(Some(v)).unwrap_or_default(),
            v => {
                return Err(Error::rejected(
                    ErrorCode::TypeMismatch,
                    format!(
                        "$linearFill: value of the sortBy field must be numeric or a date, but found {}",
                        v.map_or_else(
                            || "missing".to_owned(),
                            |v| format!("{:?}", v.element_type())
                        )
                    ),
                ));
            }
        };
        if let (Some(prev), Some(key)) = (last, key) {
            if compare(prev, key) == Ordering::Equal {
                return Err(failed(
                    6_050_106,
                    "$linearFill: there can be no repeated values in the sort field".to_owned(),
                ));
            }
            if matches!(prev, Bson::DateTime(_)) != matches!(key, Bson::DateTime(_)) {
                return Err(Error::rejected(
                    ErrorCode::TypeMismatch,
                    "$linearFill: conflicting sort value types, numbers and dates".to_owned(),
                ));
            }
        }
        last = key;
        xs.push(x);
        ys.push(y);
    }
    // The next document with a value after each one.
    let mut next_of = vec![None; part.len()];
    let mut next = None;
    for i in (0..part.len()).rev() {
        next_of[i] = next;
        if ys[i].is_some() {
            next = Some(i);
        }
    }
    let mut out: Vec<Option<Bson>> = Vec::with_capacity(part.len());
    let mut prev: Option<usize> = None;
    for i in 0..part.len() {
        if let Some(y) = &ys[i] {
            prev = Some(i);
            out.push(Some(y.clone()));
            continue;
        }
        out.push(Some(match (prev, next_of[i]) {
            (Some(a), Some(b)) => {
                let (y1, y2) = (
                    number(ys[a].as_ref()).unwrap_or_default(),
                    number(ys[b].as_ref()).unwrap_or_default(),
                );
                Bson::Double(y1 + (xs[i] - xs[a]) * ((y2 - y1) / (xs[b] - xs[a])))
            }
            _ => Bson::Null,
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use bson::{bson, doc};

    use super::*;

    fn seq(op: &str, arg: Bson, sort: &[&str]) -> Seq {
        let sort: Vec<(Vec<String>, bool)> = sort
            .iter()
            .map(|f| (vec![(*f).to_owned()], false))
            .collect();
        parse(op, &arg, false, &sort)
            .expect("parse")
            .expect("a function")
    }

    fn values(s: &Seq, part: &[Document]) -> Vec<Bson> {
        s.compute(part)
            .expect("compute")
            .into_iter()
            .map(|v| v.expect("set"))
            .collect()
    }

    fn code(op: &str, arg: Bson, window: bool, sort: &[&str]) -> i32 {
        let sort: Vec<(Vec<String>, bool)> = sort
            .iter()
            .map(|f| (vec![(*f).to_owned()], false))
            .collect();
        match parse(op, &arg, window, &sort) {
            Err(Error::Rejected { code, .. }) => code.code(),
            other => panic!("{op}: {:?}", other.map(|s| s.is_some())),
        }
    }

    #[test]
    fn shift_reads_neighbours_or_the_default() {
        // The manual's cake sales: quantity of the next and previous document.
        let part = [
            doc! { "q": 162 },
            doc! { "q": 120 },
            doc! { "q": 145 },
            doc! {},
        ];
        let next = seq(
            "$shift",
            bson!({ "output": "$q", "by": 1, "default": "Not available" }),
            &["q"],
        );
        // The last document has no quantity: the default, as past the end.
        assert_eq!(
            values(&next, &part),
            [
                bson!(120),
                bson!(145),
                bson!("Not available"),
                bson!("Not available")
            ]
        );
        let computed = seq(
            "$shift",
            bson!({ "output": "$q", "by": 5, "default": { "$add": [1, 1] } }),
            &["q"],
        );
        assert_eq!(values(&computed, &part[..1]), [bson!(2)]);
        let prev = seq("$shift", bson!({ "output": "$q", "by": -1 }), &["q"]);
        assert_eq!(
            values(&prev, &part),
            [Bson::Null, bson!(162), bson!(120), bson!(145)]
        );
        assert_eq!(prev.reach(), Some((1, 0)));
        let same = seq("$shift", bson!({ "output": "$q", "by": 0 }), &["q"]);
        assert_eq!(values(&same, &part[..1]), [bson!(162)]);
        assert_eq!(code("$shift", bson!({ "output": "$q" }), false, &["q"]), 9);
        assert_eq!(
            code(
                "$shift",
                bson!({ "output": "$q", "by": 1.5 }),
                false,
                &["q"]
            ),
            9
        );
        assert_eq!(
            code(
                "$shift",
                bson!({ "output": "$q", "by": 1, "default": "$q" }),
                false,
                &["q"]
            ),
            9
        );
        assert_eq!(
            code("$shift", bson!({ "output": "$q", "by": 1 }), true, &["q"]),
            9
        );
        assert_eq!(
            code("$shift", bson!({ "output": "$q", "by": 1 }), false, &[]),
            9
        );
    }

    #[test]
    fn ranks_share_ties() {
        let part = [
            doc! { "q": 10 },
            doc! { "q": 20 },
            doc! { "q": 20 },
            doc! { "q": 20.0 },
            doc! { "q": 30 },
        ];
        let rank = seq("$rank", bson!({}), &["q"]);
        assert_eq!(
            values(&rank, &part),
            [bson!(1), bson!(2), bson!(2), bson!(2), bson!(5)]
        );
        let dense = seq("$denseRank", bson!({}), &["q"]);
        assert_eq!(
            values(&dense, &part),
            [bson!(1), bson!(2), bson!(2), bson!(2), bson!(3)]
        );
        let number = seq("$documentNumber", bson!({}), &["q"]);
        assert_eq!(
            values(&number, &part),
            [bson!(1), bson!(2), bson!(3), bson!(4), bson!(5)]
        );
        // Null and missing tie.
        assert_eq!(
            values(&rank, &[doc! {}, doc! { "q": null }, doc! { "q": 1 }]),
            [bson!(1), bson!(1), bson!(3)]
        );
        assert_eq!(code("$rank", bson!({}), false, &["a", "b"]), 5_371_602);
        assert_eq!(code("$rank", bson!({}), false, &[]), 5_371_602);
        assert_eq!(code("$rank", bson!(1), false, &["a"]), 5_371_603);
        assert_eq!(code("$denseRank", bson!({}), true, &["a"]), 5_371_601);
    }

    #[test]
    fn exp_moving_avg_weighs_by_n_or_alpha() {
        // The manual's stock prices with N: 2 (alpha 2/3).
        let part = [
            doc! { "price": 13 },
            doc! { "price": 16 },
            doc! { "price": 11 },
            doc! { "price": "x" },
            doc! { "price": 14 },
        ];
        let ema = seq(
            "$expMovingAvg",
            bson!({ "input": "$price", "N": 2 }),
            &["t"],
        );
        let got = values(&ema, &part);
        let want = [
            13.0,
            15.0,
            37.0 / 3.0,
            37.0 / 3.0,
            14.0 * 2.0 / 3.0 + 37.0 / 9.0,
        ];
        for (g, w) in got.iter().zip(want) {
            let Bson::Double(g) = g else { panic!("{g}") };
            assert!((g - w).abs() < 1e-9, "{g} {w}");
        }
        let alpha = seq(
            "$expMovingAvg",
            bson!({ "input": "$price", "alpha": 0.75 }),
            &["t"],
        );
        assert_eq!(
            values(&alpha, &part[..2]),
            [bson!(13.0), bson!(0.75 * 16.0 + 0.25 * 13.0)]
        );
        assert_eq!(values(&alpha, &[doc! {}]), [Bson::Null]);
        assert_eq!(
            code(
                "$expMovingAvg",
                bson!({ "input": "$p", "N": 0 }),
                false,
                &["t"]
            ),
            9
        );
        assert_eq!(
            code(
                "$expMovingAvg",
                bson!({ "input": "$p", "N": 1.5 }),
                false,
                &["t"]
            ),
            9
        );
        assert_eq!(
            code(
                "$expMovingAvg",
                bson!({ "input": "$p", "alpha": 1 }),
                false,
                &["t"]
            ),
            9
        );
        assert_eq!(
            code("$expMovingAvg", bson!({ "input": "$p" }), false, &["t"]),
            9
        );
        assert_eq!(
            code(
                "$expMovingAvg",
                bson!({ "input": "$p", "N": 2 }),
                false,
                &[]
            ),
            9
        );
    }

    #[test]
    fn locf_carries_the_last_value() {
        let part = [
            doc! { "v": null },
            doc! { "v": 5 },
            doc! {},
            doc! { "v": null },
            doc! { "v": "s" },
        ];
        let locf = seq("$locf", bson!("$v"), &["t"]);
        assert_eq!(
            values(&locf, &part),
            [Bson::Null, bson!(5), bson!(5), bson!(5), bson!("s")]
        );
        assert_eq!(code("$locf", bson!("$v"), true, &["t"]), 9);
    }

    #[test]
    fn linear_fill_interpolates_between_values() {
        // The manual's stock example: times 1..=6 with nulls between values.
        let part = [
            doc! { "t": 1, "v": 10 },
            doc! { "t": 2 },
            doc! { "t": 3, "v": null },
            doc! { "t": 5, "v": 30 },
            doc! { "t": 6, "v": null },
        ];
        let fill = seq("$linearFill", bson!("$v"), &["t"]);
        assert_eq!(
            values(&fill, &part),
            [bson!(10), bson!(15.0), bson!(20.0), bson!(30), Bson::Null]
        );
        // Dates as positions, in ms.
        let t = |ms: i64| bson::DateTime::from_millis(ms);
        let dated = [
            doc! { "t": t(0), "v": 0.0 },
            doc! { "t": t(1000) },
            doc! { "t": t(4000), "v": 8.0 },
        ];
        assert_eq!(values(&fill, &dated), [bson!(0.0), bson!(2.0), bson!(8.0)]);
        let err = |part: &[Document]| match fill.compute(part) {
            Err(Error::Rejected { code, .. }) => code.code(),
            other => panic!("{other:?}"),
        };
        assert_eq!(err(&[doc! { "t": 1 }, doc! { "t": 1 }]), 6_050_106);
        assert_eq!(err(&[doc! { "t": 1, "v": "x" }]), 14);
        assert_eq!(err(&[doc! { "t": "a" }]), 14);
        assert_eq!(err(&[doc! { "t": 1 }, doc! { "t": t(5) }]), 14);
        assert_eq!(
            code("$linearFill", bson!("$v"), false, &["a", "b"]),
            605_001
        );
        assert_eq!(code("$linearFill", bson!("$v"), true, &["a"]), 9);
    }
}
