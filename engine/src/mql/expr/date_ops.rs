//! Date expressions: `$dateTrunc`, `$dateAdd`, `$dateSubtract`, `$dateDiff` and the part
//! extractors (`$year`, `$hour` ...), on the calendar arithmetic of [`crate::mql::dates`].

use std::borrow::Cow;

use bson::{Bson, DateTime};

use super::{EvalError, Expr, Resolve, Vars, bad};
use crate::error::{ErrorCode, Result};
use crate::mql::dates::{self, Part, Unit};
use crate::mql::filter::{Values, exact_int};

/// A date expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DateExpr {
    /// `$dateTrunc`.
    Trunc {
        date: Box<Expr>,
        unit: Unit,
        bin_size: i64,
        start_of_week: i64,
    },
    /// `$dateAdd` (`sign` 1) or `$dateSubtract` (`sign` -1).
    Add {
        date: Box<Expr>,
        unit: Unit,
        amount: Box<Expr>,
        sign: i64,
    },
    /// `$dateDiff`.
    Diff {
        start: Box<Expr>,
        end: Box<Expr>,
        unit: Unit,
        start_of_week: i64,
    },
    /// `$year`, `$month` ...
    Part(Part, Box<Expr>),
}

impl DateExpr {
    /// Parses a part extractor (`$year` ...) of one operand; `None` for other operators.
    pub(super) fn parse_part(op: &str, args: &mut Vec<Expr>) -> Result<Option<DateExpr>> {
        let Some(part) = Part::parse(op) else {
            return Ok(None);
        };
        if args.len() != 1 {
            return Err(bad(format!(
                "$expr: {op} takes 1 operand, not {}",
                args.len()
            )));
        }
        let date = args.pop().unwrap_or(Expr::Literal(Bson::Null));
        Ok(Some(DateExpr::Part(part, Box::new(date))))
    }

    /// Every field the expression reads.
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(crate::mql::filter::Target, &'a [String])>) {
        match self {
            DateExpr::Trunc { date, .. } | DateExpr::Part(_, date) => date.fields(out),
            DateExpr::Add { date, amount, .. } => {
                date.fields(out);
                amount.fields(out);
            }
            DateExpr::Diff { start, end, .. } => {
                start.fields(out);
                end.fields(out);
            }
        }
    }

    /// The expression's value.
    ///
    /// # Errors
    /// What its operands fail with; a date operand of another type; a result out of range.
    pub(super) fn eval<'v>(
        &self,
        values: &'v dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Cow<'v, Bson>>, EvalError> {
        Ok(match self {
            DateExpr::Trunc {
                date,
                unit,
                bin_size,
                start_of_week,
            } => date_of(date.eval_with(values, vars)?.as_deref(), "$dateTrunc")?
                .map(|t| {
                    dates::trunc(t, *unit, *bin_size, *start_of_week)
                        .map(|t| Cow::Owned(Bson::DateTime(DateTime::from_millis(t))))
                        .ok_or_else(|| {
                            EvalError::failed(
                                ErrorCode::Location(5439013),
                                "$dateTrunc: the date is out of range",
                            )
                        })
                })
                .transpose()?
                .or(Some(Cow::Owned(Bson::Null))),
            DateExpr::Add {
                date,
                unit,
                amount,
                sign,
            } => {
                let t = date_of(date.eval_with(values, vars)?.as_deref(), "$dateAdd")?;
                let n = match amount.eval_with(values, vars)?.as_deref() {
                    None | Some(Bson::Null) => None,
                    Some(v) => Some(exact_int(v).ok_or_else(|| {
                        EvalError::failed(
                            ErrorCode::Location(5166405),
                            "$dateAdd: amount must be an integer",
                        )
                    })?),
                };
                Some(Cow::Owned(match (t, n) {
                    (Some(t), Some(n)) => Bson::DateTime(DateTime::from_millis(
                        dates::add(t, *unit, n.saturating_mul(*sign)).ok_or_else(|| {
                            EvalError::failed(
                                ErrorCode::Location(5166406),
                                "$dateAdd: the result is out of range",
                            )
                        })?,
                    )),
                    _ => Bson::Null,
                }))
            }
            DateExpr::Diff {
                start,
                end,
                unit,
                start_of_week,
            } => {
                let a = date_of(start.eval_with(values, vars)?.as_deref(), "$dateDiff")?;
                let b = date_of(end.eval_with(values, vars)?.as_deref(), "$dateDiff")?;
                Some(Cow::Owned(match (a, b) {
                    (Some(a), Some(b)) => {
                        Bson::Int64(dates::diff(a, b, *unit, *start_of_week).ok_or_else(|| {
                            EvalError::failed(
                                ErrorCode::Location(5166308),
                                "$dateDiff: out of range",
                            )
                        })?)
                    }
                    _ => Bson::Null,
                }))
            }
            DateExpr::Part(part, date) => Some(Cow::Owned(
                match date_of(
                    date.eval_with(values, vars)?.as_deref(),
                    "a date part operator",
                )? {
                    Some(t) => {
                        let v = part.of(t);
                        i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32)
                    }
                    None => Bson::Null,
                },
            )),
        })
    }
}

/// The date operators that take a document of named arguments (`$dateTrunc`, `$dateAdd`,
/// `$dateSubtract`, `$dateDiff`); `None` for other operators.
pub(super) fn parse_named(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<DateExpr>> {
    let named = ["$dateTrunc", "$dateAdd", "$dateSubtract", "$dateDiff"];
    if !named.contains(&op) {
        return Ok(None);
    }
    let Bson::Document(args) = arg else {
        {
            return Err(bad(format!("{op} takes a document of named arguments")));
        }
    };
    let expr = |k: &str| -> Result<Box<Expr>> {
        let v = args
            .get(k)
            .ok_or_else(|| bad(format!("{op} needs '{k}'")))?;
        Ok(Box::new(Expr::parse(v, target)?))
    };
    let unit = match args.get("unit") {
        Some(Bson::String(u)) => {
            Unit::parse(u).ok_or_else(|| bad(format!("{op}: unknown unit '{u}'")))?
        }
        _ => return Err(bad(format!("{op} needs 'unit' as a constant string"))),
    };
    let start_of_week = match args.get("startOfWeek") {
        None => 0,
        Some(Bson::String(s)) => dates::parse_start_of_week(s)
            .ok_or_else(|| bad(format!("{op}: unknown startOfWeek '{s}'")))?,
        Some(_) => return Err(bad(format!("{op}: startOfWeek must be a constant string"))),
    };
    let allowed: &[&str] = match op {
        "$dateTrunc" => &["date", "unit", "binSize", "startOfWeek", "timezone"],
        "$dateDiff" => &["startDate", "endDate", "unit", "startOfWeek", "timezone"],
        _ => &["startDate", "unit", "amount", "timezone"],
    };
    if let Some(k) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad(format!("{op}: unknown argument '{k}'")));
    }
    match args.get("timezone") {
        None => {}
        Some(Bson::String(tz)) if tz == "UTC" || tz == "Etc/UTC" || tz == "+00:00" => {}
        Some(tz) => {
            return Err(bad(format!(
                "{op}: only UTC is supported, not timezone {tz}"
            )));
        }
    }
    Ok(Some(match op {
        "$dateTrunc" => DateExpr::Trunc {
            date: expr("date")?,
            unit,
            bin_size: match args.get("binSize") {
                None => 1,
                Some(v) => exact_int(v).filter(|n| *n > 0).ok_or_else(|| {
                    bad("$dateTrunc: binSize must be a positive integer".to_owned())
                })?,
            },
            start_of_week,
        },
        "$dateDiff" => DateExpr::Diff {
            start: expr("startDate")?,
            end: expr("endDate")?,
            unit,
            start_of_week,
        },
        _ => DateExpr::Add {
            date: expr("startDate")?,
            unit,
            amount: expr("amount")?,
            sign: if op == "$dateSubtract" { -1 } else { 1 },
        },
    }))
}

/// The ms of a date operand; `None` for null or missing.
///
/// # Errors
/// MongoDB's 16006 ("can't convert ... to Date") for another type.
fn date_of(v: Option<&Bson>, op: &str) -> std::result::Result<Option<i64>, EvalError> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(None),
        Some(Bson::DateTime(t)) => Ok(Some(t.timestamp_millis())),
        Some(other) => Err(EvalError::failed(
            ErrorCode::Location(16006),
            format!("{op} needs a date, not {other}"),
        )),
    }
}
