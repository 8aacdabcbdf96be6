//! `$percentile` and `$median` (MongoDB 7.0): the numeric values of a group or window, and
//! the value at a given rank of them.
//!
//! MongoDB's `method: "approximate"` (the only method of 8.0) computes a t-digest; tscoll
//! keeps the values (8 bytes each, up to MongoDB's 100 MiB, `ExceededMemoryLimit` past it)
//! and returns the exact discrete percentile, the value of 0-based rank `ceil(p * n) - 1` (0
//! for `p = 0`, `n - 1` for `p = 1`) among the `n` values in order: what MongoDB's digest
//! returns while it holds every value, and close to it past that. Non-numeric values and NaN
//! are skipped; the results are doubles; with no value, `$median` is null and `$percentile`
//! an array of nulls.

use bson::{Bson, Document};

use super::group::{Op, number};
use super::stage::expression;
use super::window_seq::constant;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::Expr;

/// MongoDB's `internalQueryMaxPercentileAccumulatorBytes`.
const MAX_BYTES: u64 = 100 * 1024 * 1024;

fn failed(code: ErrorCode, message: String) -> Error {
    Error::rejected(code, message)
}

/// Reads `{input, p, method}` (`p` only for `$percentile`).
fn fields<'a>(op: &str, d: &'a Document, with_p: bool) -> Result<(&'a Bson, Option<&'a Bson>)> {
    let (mut input, mut p, mut method) = (None, None, None);
    for (k, v) in d {
        match k.as_str() {
            "input" => input = Some(v),
            "p" if with_p => p = Some(v),
            "method" => method = Some(v),
            _ => {
                return Err(failed(
                    ErrorCode::IdlUnknownField,
                    format!("{op}: unknown field '{k}'"),
                ));
            }
        }
    }
    let missing = |f: &str| {
        failed(
            ErrorCode::IdlFailedToParse,
            format!("{op}: missing required field '{f}'"),
        )
    };
    let input = input.ok_or_else(|| missing("input"))?;
    if with_p && p.is_none() {
        return Err(missing("p"));
    }
    match method.ok_or_else(|| missing("method"))? {
        Bson::String(m) if m == "approximate" => {}
        Bson::String(m) => {
            return Err(failed(
                ErrorCode::BadValue,
                format!(
                    "{op}: currently only 'approximate' can be used as percentile 'method', not '{m}'"
                ),
            ));
        }
        other => {
            return Err(failed(
                ErrorCode::TypeMismatch,
                format!("{op}: 'method' must be a string, not {other}"),
            ));
        }
    }
    Ok((input, p))
}

/// Parses `$median: {input, method}`.
///
/// # Errors
/// `Location7436100` when not a document; `IDLUnknownField`, `IDLFailedToParse` (a field
/// missing), `BadValue` for a method other than `"approximate"`.
pub(super) fn parse_median(arg: &Bson) -> Result<(Op, Option<Expr>)> {
    let Bson::Document(d) = arg else {
        return Err(failed(
            ErrorCode::Location(7_436_100),
            format!("$median: specification must be an object; found {arg}"),
        ));
    };
    let (input, _) = fields("$median", d, false)?;
    Ok((Op::Median, Some(expression(input)?)))
}

/// Parses `$percentile: {input, p, method}`; the operand becomes `[input, p]`.
///
/// # Errors
/// `Location7429703` when not a document; `p` not a constant array (7750300), empty or not
/// an array (7750301), with a non-number (7750302) or one outside `[0, 1]` (7750303); the
/// errors of `$median`.
pub(super) fn parse_percentile(arg: &Bson) -> Result<(Op, Option<Expr>)> {
    let Bson::Document(d) = arg else {
        return Err(failed(
            ErrorCode::Location(7_429_703),
            format!("$percentile: specification must be an object; found {arg}"),
        ));
    };
    let (input, p) = fields("$percentile", d, true)?;
    let p = p.unwrap_or(&Bson::Null);
    // A constant expression, computed once (`[0.5]`, `{$literal: [0.5]}`, `[{$divide: [1, 4]}]`).
    let Some(p) = constant(&expression(p)?)? else {
        return Err(failed(
            ErrorCode::Location(7_750_300),
            format!("$percentile: 'p' must be an array of constant values, not {p}"),
        ));
    };
    let msg = "$percentile: 'p' must be an array of numbers from [0.0, 1.0], but found";
    let ps = match &p {
        Bson::Array(items) if !items.is_empty() => items
            .iter()
            .map(|x| match number(Some(x)) {
                Some(v) if (0.0..=1.0).contains(&v) => Ok(v),
                Some(v) => Err(failed(ErrorCode::Location(7_750_303), format!("{msg} {v}"))),
                None => Err(failed(ErrorCode::Location(7_750_302), format!("{msg} {x}"))),
            })
            .collect::<Result<Vec<f64>>>()?,
        other => {
            return Err(failed(
                ErrorCode::Location(7_750_301),
                format!("{msg} {other}"),
            ));
        }
    };
    let count = u32::try_from(ps.len()).map_err(|_| {
        failed(
            ErrorCode::BadValue,
            "$percentile: too many percentiles".to_owned(),
        )
    })?;
    let ps = Bson::Array(ps.into_iter().map(Bson::Double).collect());
    Ok((
        Op::Percentile(count),
        Some(Expr::Array(vec![expression(input)?, Expr::Literal(ps)])),
    ))
}

/// The values of a `$median` (`ps` `None`) or `$percentile`.
pub(super) struct Quantiles {
    /// How many percentiles `$percentile` asks for (`None`: `$median`).
    count: Option<u32>,
    /// The percentiles, read from the first value added.
    ps: Option<Vec<f64>>,
    values: Vec<f64>,
}

impl Quantiles {
    /// A `$median` (`count` `None`) or a `$percentile` of `count` percentiles.
    pub(super) fn new(count: Option<u32>) -> Quantiles {
        Quantiles {
            count,
            ps: None,
            values: Vec::new(),
        }
    }

    /// Adds one document's value: the input for `$median`, `[input, p]` for `$percentile`.
    ///
    /// # Errors
    /// `ExceededMemoryLimit` past 100 MiB of values.
    pub(super) fn add(&mut self, v: Option<&Bson>) -> Result<()> {
        let x = if self.count.is_some() {
            let Some(Bson::Array(pair)) = v else {
                return Ok(());
            };
            if self.ps.is_none()
                && let Some(Bson::Array(ps)) = pair.get(1)
            {
                self.ps = Some(ps.iter().filter_map(|p| number(Some(p))).collect());
            }
            number(pair.first())
        } else {
            number(v)
        };
        if let Some(x) = x.filter(|x| !x.is_nan()) {
            let bytes = (self.values.len() as u64 + 1) * 8;
            if bytes > MAX_BYTES {
                return Err(Error::rejected(
                    ErrorCode::ExceededMemoryLimit,
                    format!(
                        "{} used more than its {MAX_BYTES} bytes of memory",
                        if self.count.is_some() {
                            "$percentile"
                        } else {
                            "$median"
                        }
                    ),
                ));
            }
            self.values.push(x);
        }
        Ok(())
    }

    /// The median, or the array of percentiles (nulls when no number was added).
    pub(super) fn value(&self) -> Bson {
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        let at = |p: f64| -> Bson {
            let n = sorted.len();
            if n == 0 {
                return Bson::Null;
            }
            #[expect(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "a rank within the values"
            )]
            let rank = if p >= 1.0 {
                n - 1
            } else {
                ((n as f64 * p).ceil() as usize)
                    .saturating_sub(1)
                    .min(n - 1)
            };
            Bson::Double(sorted[rank])
        };
        match self.count {
            None => at(0.5),
            Some(count) => match &self.ps {
                Some(ps) => Bson::Array(ps.iter().map(|p| at(*p)).collect()),
                None => Bson::Array(vec![Bson::Null; count as usize]),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::{bson, doc};

    use super::*;

    fn percentile(ps: Bson, vals: &[Bson]) -> Bson {
        let (Op::Percentile(count), Some(Expr::Array(parts))) =
            parse_percentile(&bson!({ "input": "$x", "p": ps, "method": "approximate" }))
                .expect("parse")
        else {
            panic!("shape");
        };
        let Expr::Literal(ps) = &parts[1] else {
            panic!("p");
        };
        let mut q = Quantiles::new(Some(count));
        for v in vals {
            q.add(Some(&Bson::Array(vec![v.clone(), ps.clone()])))
                .expect("add");
        }
        q.value()
    }

    fn median(vals: &[Bson]) -> Bson {
        let mut q = Quantiles::new(None);
        for v in vals {
            q.add(Some(v)).expect("add");
        }
        q.value()
    }

    #[test]
    fn percentiles_of_the_manual_examples() {
        // The manual's testScores: test01 of the five students, and test02.
        let scores = [bson!(62), bson!(60), bson!(67), bson!(64), bson!(60)];
        assert_eq!(percentile(bson!([0.5]), &scores), bson!([62.0]));
        assert_eq!(
            percentile(bson!([0.5, 0.75, 0.9, 0.95]), &scores),
            bson!([62.0, 64.0, 67.0, 67.0])
        );
        let test02 = [bson!(81), bson!(83), bson!(82), bson!(72), bson!(53)];
        assert_eq!(
            percentile(bson!([0.5, 0.75, 0.9, 0.95]), &test02),
            bson!([81.0, 82.0, 83.0, 83.0])
        );
        assert_eq!(median(&scores), bson!(62.0));
        // p = 0 is the least value, p = 1 the greatest.
        assert_eq!(percentile(bson!([0, 1]), &scores), bson!([60.0, 67.0]));
        // An even count: the lower middle value.
        assert_eq!(
            median(&[bson!(1), bson!(2), bson!(3), bson!(4)]),
            bson!(2.0)
        );
        // Non-numbers and NaN are skipped; with no number, nulls.
        assert_eq!(
            median(&[bson!("x"), Bson::Null, Bson::Double(f64::NAN), bson!(5_i64)]),
            bson!(5.0)
        );
        assert_eq!(median(&[bson!("x")]), Bson::Null);
        assert_eq!(
            percentile(bson!([0.1, 0.9]), &[bson!("x")]),
            bson!([null, null])
        );
        assert_eq!(
            percentile(
                bson!([0.5]),
                &[Bson::Double(f64::NEG_INFINITY), bson!(1), bson!(2)]
            ),
            bson!([1.0])
        );
    }

    #[test]
    fn percentile_specs_are_checked() {
        let code = |spec: Bson| match parse_percentile(&spec) {
            Err(Error::Rejected { code, .. }) => Some(code.code()),
            Ok(_) => None,
            Err(e) => panic!("{e}"),
        };
        let with_p = |p: Bson| bson!({ "input": "$x", "p": p, "method": "approximate" });
        assert_eq!(code(with_p(bson!([0.5]))), None);
        assert_eq!(code(with_p(bson!([]))), Some(7_750_301));
        assert_eq!(code(with_p(bson!(0.5))), Some(7_750_301));
        assert_eq!(code(with_p(bson!(["a"]))), Some(7_750_302));
        assert_eq!(code(with_p(bson!([1.5]))), Some(7_750_303));
        assert_eq!(code(with_p(bson!("$p"))), Some(7_750_300));
        assert_eq!(code(with_p(bson!(["$p"]))), Some(7_750_300));
        assert_eq!(code(with_p(bson!({ "$literal": [0.5] }))), None);
        assert_eq!(code(with_p(bson!([{ "$divide": [1, 4] }]))), None);
        assert_eq!(code(bson!({ "input": "$x", "p": [0.5] })), Some(40414));
        assert_eq!(
            code(bson!({ "input": "$x", "p": [0.5], "method": "continuous" })),
            Some(2)
        );
        assert_eq!(
            code(bson!({ "input": "$x", "p": [0.5], "method": "approximate", "z": 1 })),
            Some(40415)
        );
        assert_eq!(code(bson!(1)), Some(7_429_703));
        assert!(matches!(
            parse_median(&Bson::Document(
                doc! { "input": "$x", "method": "approximate", "p": [0.5] }
            )),
            Err(Error::Rejected {
                code: ErrorCode::IdlUnknownField,
                ..
            })
        ));
    }
}
