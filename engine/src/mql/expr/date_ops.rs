//! Date expressions: `$dateTrunc`, `$dateAdd`, `$dateSubtract`, `$dateDiff`, the part
//! extractors (`$year`, `$hour`, `$isoWeek` ...), `$dateToString`, `$dateToParts`,
//! `$dateFromParts` and `$dateFromString`, in a time zone, on the calendar arithmetic of
//! [`crate::mql::dates`].
//!
//! Arguments other than the dates (`unit`, `binSize`, `startOfWeek`, `timezone`, `format`,
//! `iso8601`) may be expressions: a constant is checked (and a zone resolved, a format
//! compiled) once when the expression is parsed, another is evaluated on each document. As in
//! MongoDB, an argument that is null or missing makes the result null.

use std::borrow::Cow;
use std::sync::LazyLock;

use bson::{Bson, DateTime, Document};

use super::{EvalError, Expr, Resolve, Vars, bad};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::dates::format::{self, Item};
use crate::mql::dates::{self, Part, Tz, Unit};
use crate::mql::filter::{Values, exact_int};

/// An argument: a constant checked when parsed, or an expression evaluated per document.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Arg<T> {
    /// A constant.
    Const(T),
    /// An expression, checked on each value it gives.
    Expr(Box<Expr>),
}

/// Why an argument's value is refused: MongoDB's code and message.
type Refusal = (ErrorCode, String);

/// Checks an argument's value (not null).
type Check<T> = fn(&str, &Bson) -> std::result::Result<T, Refusal>;

impl<T: Clone> Arg<T> {
    /// Parses an argument: a constant other than null is checked now.
    fn parse(op: &str, v: &Bson, target: &Resolve<'_>, check: Check<T>) -> Result<Arg<T>> {
        match Expr::parse(v, target)? {
            Expr::Literal(b) if !matches!(b, Bson::Null | Bson::Undefined) => check(op, &b)
                .map(Arg::Const)
                .map_err(|(code, m)| Error::rejected(code, m)),
            e => Ok(Arg::Expr(Box::new(e))),
        }
    }

    /// The argument's value; `None` when it is null or missing.
    fn get(
        &self,
        op: &str,
        values: &dyn Values,
        vars: &Vars<'_>,
        check: Check<T>,
    ) -> std::result::Result<Option<T>, EvalError> {
        match self {
            Arg::Const(t) => Ok(Some(t.clone())),
            Arg::Expr(e) => match e.eval_with(values, vars)?.as_deref() {
                None | Some(Bson::Null | Bson::Undefined) => Ok(None),
                Some(v) => check(op, v)
                    .map(Some)
                    .map_err(|(code, m)| EvalError::Failed(code, m)),
            },
        }
    }

    fn fields<'a>(&'a self, out: &mut Vec<(crate::mql::filter::Target, &'a [String])>) {
        if let Arg::Expr(e) = self {
            e.fields(out);
        }
    }
}

fn check_unit(op: &str, v: &Bson) -> std::result::Result<Unit, Refusal> {
    match v {
        Bson::String(u) => Unit::parse(u).ok_or_else(|| {
            (
                ErrorCode::FailedToParse,
                format!("{op} parameter 'unit' value parsing failed: unknown time unit value: {u}"),
            )
        }),
        other => Err((
            ErrorCode::Location(5439013),
            format!("{op} requires 'unit' to be a string, but got {other}"),
        )),
    }
}

fn check_bin_size(_: &str, v: &Bson) -> std::result::Result<i64, Refusal> {
    let n = exact_int(v).ok_or_else(|| {
        (
            ErrorCode::Location(5439017),
            format!("$dateTrunc requires 'binSize' to be a 64-bit integer, but got value {v}"),
        )
    })?;
    if n <= 0 {
        return Err((
            ErrorCode::Location(5439018),
            format!("$dateTrunc requires 'binSize' to be greater than 0, but got value {n}"),
        ));
    }
    Ok(n)
}

fn check_start_of_week(op: &str, v: &Bson) -> std::result::Result<i64, Refusal> {
    match v {
        Bson::String(s) => parse_day_of_week(s).ok_or_else(|| {
            (
                ErrorCode::Location(5439016),
                format!(
                    "{op} parameter 'startOfWeek' value cannot be recognized as a day of a \
                     week: {s}"
                ),
            )
        }),
        other => Err((
            ErrorCode::Location(5439015),
            format!("{op} requires 'startOfWeek' to be a string, but got {other}"),
        )),
    }
}

/// MongoDB's day names: `"monday"` or `"mon"` ..., case-insensitive; 0 = Sunday.
fn parse_day_of_week(s: &str) -> Option<i64> {
    let s = s.to_ascii_lowercase();
    let days = [
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ];
    days.iter()
        .position(|d| s == *d || s == d[..3])
        .and_then(|i| i64::try_from(i).ok())
}

fn check_tz(op: &str, v: &Bson) -> std::result::Result<Tz, Refusal> {
    match v {
        Bson::String(s) => Tz::parse(s).ok_or_else(|| {
            (
                ErrorCode::Location(40485),
                format!("{op}: unrecognized time zone identifier: \"{s}\""),
            )
        }),
        other => Err((
            ErrorCode::Location(40517),
            format!("{op}: timezone must evaluate to a string, found {other}"),
        )),
    }
}

fn check_to_format(op: &str, v: &Bson) -> std::result::Result<Vec<Item>, Refusal> {
    check_format(op, v, true, 18533)
}

fn check_from_format(op: &str, v: &Bson) -> std::result::Result<Vec<Item>, Refusal> {
    check_format(op, v, false, 40684)
}

fn check_format(
    op: &str,
    v: &Bson,
    to_string: bool,
    not_string: u32,
) -> std::result::Result<Vec<Item>, Refusal> {
    match v {
        Bson::String(s) => format::compile(s, to_string)
            .map_err(|(code, m)| (ErrorCode::Location(code), format!("{op}: {m}"))),
        other => Err((
            ErrorCode::Location(not_string),
            format!("{op} requires that 'format' be a string, found: {other}"),
        )),
    }
}

fn check_bool(op: &str, v: &Bson) -> std::result::Result<bool, Refusal> {
    match v {
        Bson::Boolean(b) => Ok(*b),
        other => Err((
            ErrorCode::Location(40521),
            format!("{op}: iso8601 must evaluate to a bool, found {other}"),
        )),
    }
}

/// The parts of `$dateFromParts`, in the order MongoDB evaluates them.
const CALENDAR_PARTS: [&str; 7] = [
    "hour",
    "minute",
    "second",
    "millisecond",
    "year",
    "month",
    "day",
];
const ISO_PARTS: [&str; 3] = ["isoWeekYear", "isoWeek", "isoDayOfWeek"];

/// A date expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum DateExpr {
    /// `$dateTrunc`.
    Trunc {
        date: Box<Expr>,
        unit: Arg<Unit>,
        bin_size: Arg<i64>,
        start_of_week: Arg<i64>,
        tz: Arg<Tz>,
    },
    /// `$dateAdd` (`sign` 1) or `$dateSubtract` (`sign` -1).
    Add {
        date: Box<Expr>,
        unit: Arg<Unit>,
        amount: Box<Expr>,
        sign: i64,
        tz: Arg<Tz>,
    },
    /// `$dateDiff`.
    Diff {
        start: Box<Expr>,
        end: Box<Expr>,
        unit: Arg<Unit>,
        start_of_week: Arg<i64>,
        tz: Arg<Tz>,
    },
    /// `$year`, `$month` ...
    Part(Part, Box<Expr>, Arg<Tz>),
    /// `$dateToString`: `format` `None` is MongoDB's default.
    ToString {
        date: Box<Expr>,
        format: Option<Arg<Vec<Item>>>,
        tz: Arg<Tz>,
        on_null: Option<Box<Expr>>,
    },
    /// `$dateToParts`.
    ToParts {
        date: Box<Expr>,
        tz: Arg<Tz>,
        iso8601: Arg<bool>,
    },
    /// `$dateFromParts`: the parts given ([`CALENDAR_PARTS`] order, then the ISO ones), and
    /// whether the ISO form is used.
    FromParts {
        parts: Vec<(&'static str, Expr)>,
        iso: bool,
        tz: Arg<Tz>,
    },
    /// `$dateFromString`.
    FromString {
        string: Box<Expr>,
        format: Option<Arg<Vec<Item>>>,
        tz: Arg<Tz>,
        on_error: Option<Box<Expr>>,
        on_null: Option<Box<Expr>>,
    },
}

/// What a result of `dates` out of range fails with.
fn out_of_range(code: u32, op: &str) -> EvalError {
    EvalError::failed(
        ErrorCode::Location(code),
        format!("{op}: the result is out of range"),
    )
}

fn date_value(t: i64) -> Cow<'static, Bson> {
    Cow::Owned(Bson::DateTime(DateTime::from_millis(t)))
}

fn null() -> Option<Cow<'static, Bson>> {
    Some(Cow::Owned(Bson::Null))
}

/// Ends an evaluation with null when an argument is null or missing.
macro_rules! or_null {
    ($e:expr) => {
        match $e {
            Some(v) => v,
            None => return Ok(null()),
        }
    };
}

impl DateExpr {
    /// Every field the expression reads.
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(crate::mql::filter::Target, &'a [String])>) {
        match self {
            DateExpr::Trunc {
                date,
                unit,
                bin_size,
                start_of_week,
                tz,
            } => {
                date.fields(out);
                unit.fields(out);
                bin_size.fields(out);
                start_of_week.fields(out);
                tz.fields(out);
            }
            DateExpr::Add {
                date,
                unit,
                amount,
                tz,
                ..
            } => {
                date.fields(out);
                unit.fields(out);
                amount.fields(out);
                tz.fields(out);
            }
            DateExpr::Diff {
                start,
                end,
                unit,
                start_of_week,
                tz,
            } => {
                start.fields(out);
                end.fields(out);
                unit.fields(out);
                start_of_week.fields(out);
                tz.fields(out);
            }
            DateExpr::Part(_, date, tz) => {
                date.fields(out);
                tz.fields(out);
            }
            DateExpr::ToString {
                date,
                format,
                tz,
                on_null,
            } => {
                date.fields(out);
                if let Some(f) = format {
                    f.fields(out);
                }
                tz.fields(out);
                if let Some(e) = on_null {
                    e.fields(out);
                }
            }
            DateExpr::ToParts { date, tz, iso8601 } => {
                date.fields(out);
                tz.fields(out);
                iso8601.fields(out);
            }
            DateExpr::FromParts { parts, tz, .. } => {
                parts.iter().for_each(|(_, e)| e.fields(out));
                tz.fields(out);
            }
            DateExpr::FromString {
                string,
                format,
                tz,
                on_error,
                on_null,
            } => {
                string.fields(out);
                if let Some(f) = format {
                    f.fields(out);
                }
                tz.fields(out);
                for e in [on_error, on_null].into_iter().flatten() {
                    e.fields(out);
                }
            }
        }
    }

    /// A `$dateTrunc` whose unit, bin size and zone are constants and whose zone is a fixed
    /// offset: its date, unit, bin size and the offset (ms). What the windowed aggregate engine
    /// can answer, whose bins are counted from the epoch in UTC.
    pub(crate) fn fixed_trunc(&self) -> Option<(&Expr, Unit, i64, i64)> {
        match self {
            DateExpr::Trunc {
                date,
                unit: Arg::Const(unit),
                bin_size: Arg::Const(bin_size),
                tz: Arg::Const(Tz::Fixed(offset)),
                ..
            } => Some((date, *unit, *bin_size, *offset)),
            _ => None,
        }
    }

    /// The expression's value.
    ///
    /// # Errors
    /// What its operands fail with; a date operand of another type; an argument refused (a
    /// unit, zone or format not known); a result out of range; MongoDB's codes.
    pub(super) fn eval<'v>(
        &self,
        values: &'v dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Cow<'v, Bson>>, EvalError> {
        let eval = |e: &Expr| -> std::result::Result<Option<Bson>, EvalError> {
            Ok(e.eval_with(values, vars)?.map(Cow::into_owned))
        };
        match self {
            DateExpr::Trunc {
                date,
                unit,
                bin_size,
                start_of_week,
                tz,
            } => {
                let op = "$dateTrunc";
                let d = or_null!(not_null(eval(date)?));
                let bin = or_null!(bin_size.get(op, values, vars, check_bin_size)?);
                let unit = or_null!(unit.get(op, values, vars, check_unit)?);
                let sow = if unit == Unit::Week {
                    or_null!(start_of_week.get(op, values, vars, check_start_of_week)?)
                } else {
                    0
                };
                let tz = or_null!(tz.get(op, values, vars, check_tz)?);
                let t = coerce_date(&d, op, "date", 5166307)?;
                if unit > Unit::Hour && bin > 100_000_000_000 {
                    return Err(EvalError::failed(
                        ErrorCode::Location(5439006),
                        "$dateTrunc unsupported binSize value",
                    ));
                }
                let r =
                    dates::trunc(t, unit, bin, sow, tz).ok_or_else(|| out_of_range(5439001, op))?;
                Ok(Some(date_value(r)))
            }
            DateExpr::Add {
                date,
                unit,
                amount,
                sign,
                tz,
            } => {
                let op = if *sign < 0 {
                    "$dateSubtract"
                } else {
                    "$dateAdd"
                };
                let d = or_null!(not_null(eval(date)?));
                let unit = or_null!(unit.get(op, values, vars, check_unit)?);
                let n = or_null!(not_null(eval(amount)?));
                let tz = or_null!(tz.get(op, values, vars, check_tz)?);
                let t = coerce_date(&d, op, "startDate", 5166403)?;
                let n = exact_int(&n).ok_or_else(|| {
                    EvalError::failed(
                        ErrorCode::Location(5166405),
                        format!("{op} expects integer amount of time units"),
                    )
                })?;
                if !amount_in_range(unit, n) {
                    return Err(EvalError::failed(
                        ErrorCode::Location(5976500),
                        format!("invalid {op} 'amount' parameter value: {n} {unit:?}"),
                    ));
                }
                if *sign < 0 && n == i64::MIN {
                    return Err(EvalError::failed(
                        ErrorCode::Location(6045000),
                        format!("invalid $dateSubtract 'amount' parameter value: {n}"),
                    ));
                }
                let r =
                    dates::add(t, unit, n * sign, tz).ok_or_else(|| out_of_range(5166406, op))?;
                Ok(Some(date_value(r)))
            }
            DateExpr::Diff {
                start,
                end,
                unit,
                start_of_week,
                tz,
            } => {
                let op = "$dateDiff";
                let a = or_null!(not_null(eval(start)?));
                let b = or_null!(not_null(eval(end)?));
                let unit = or_null!(unit.get(op, values, vars, check_unit)?);
                let sow = if unit == Unit::Week {
                    or_null!(start_of_week.get(op, values, vars, check_start_of_week)?)
                } else {
                    0
                };
                let tz = or_null!(tz.get(op, values, vars, check_tz)?);
                let a = coerce_date(&a, op, "startDate", 5166307)?;
                let b = coerce_date(&b, op, "endDate", 5166307)?;
                let r =
                    dates::diff(a, b, unit, sow, tz).ok_or_else(|| out_of_range(5166308, op))?;
                Ok(Some(Cow::Owned(Bson::Int64(r))))
            }
            DateExpr::Part(part, date, tz) => {
                let d = or_null!(not_null(eval(date)?));
                let t = coerce_date(&d, "a date part operator", "date", 16006)?;
                let tz = or_null!(tz.get("a date part operator", values, vars, check_tz)?);
                let v = part.of(t, tz);
                Ok(Some(Cow::Owned(
                    i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32),
                )))
            }
            DateExpr::ToString {
                date,
                format,
                tz,
                on_null,
            } => {
                let op = "$dateToString";
                let d = not_null(eval(date)?);
                let items = match format {
                    Some(f) => items_of(f, op, values, vars, check_to_format)?,
                    None => None,
                };
                let tz = tz.get(op, values, vars, check_tz)?;
                let Some(d) = d else {
                    return match on_null {
                        Some(e) => Ok(e.eval_with(values, vars)?),
                        None => Ok(null()),
                    };
                };
                let tz = or_null!(tz);
                let items = match (format, items) {
                    (Some(_), None) => return Ok(null()),
                    (Some(_), Some(items)) => items,
                    (None, _) if tz.is_utc() => Cow::Borrowed(DEFAULT_UTC.as_slice()),
                    (None, _) => Cow::Borrowed(DEFAULT_ZONED.as_slice()),
                };
                let t = coerce_date(&d, op, "date", 16006)?;
                let s = format::format(t, tz, &items)
                    .map_err(|(code, m)| EvalError::failed(ErrorCode::Location(code), m))?;
                Ok(Some(Cow::Owned(Bson::String(s))))
            }
            DateExpr::ToParts { date, tz, iso8601 } => {
                let op = "$dateToParts";
                let d = not_null(eval(date)?);
                let tz = or_null!(tz.get(op, values, vars, check_tz)?);
                let iso = or_null!(iso8601.get(op, values, vars, check_bool)?);
                let d = or_null!(d);
                let t = coerce_date(&d, op, "date", 16006)?;
                let c = dates::Civil::of(t, tz);
                let int = |n: i64| i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32);
                let mut out = Document::new();
                if iso {
                    let (y, w) = c.iso_week();
                    out.insert("isoWeekYear", int(y));
                    out.insert("isoWeek", int(w));
                    out.insert("isoDayOfWeek", int(c.iso_day_of_week()));
                } else {
                    out.insert("year", int(c.year));
                    out.insert("month", int(c.month));
                    out.insert("day", int(c.day));
                }
                out.insert("hour", int(c.hour));
                out.insert("minute", int(c.minute));
                out.insert("second", int(c.second));
                out.insert("millisecond", int(c.millisecond));
                Ok(Some(Cow::Owned(Bson::Document(out))))
            }
            DateExpr::FromParts { parts, iso, tz } => {
                let op = "$dateFromParts";
                let mut got = std::collections::HashMap::new();
                let order: Vec<&str> = if *iso {
                    CALENDAR_PARTS[..4]
                        .iter()
                        .chain(ISO_PARTS.iter())
                        .copied()
                        .collect()
                } else {
                    CALENDAR_PARTS.to_vec()
                };
                for name in &order {
                    let Some((_, e)) = parts.iter().find(|(n, _)| n == name) else {
                        continue;
                    };
                    let v = or_null!(not_null(eval(e)?));
                    let n = exact_int(&v).ok_or_else(|| {
                        EvalError::failed(
                            ErrorCode::Location(40515),
                            format!("{op}: '{name}' must evaluate to an integer, found {v}"),
                        )
                    })?;
                    let bounded =
                        !matches!(*name, "second" | "millisecond" | "year" | "isoWeekYear");
                    if bounded && !(i64::from(i16::MIN)..=i64::from(i16::MAX)).contains(&n) {
                        return Err(EvalError::failed(
                            ErrorCode::Location(31034),
                            format!(
                                "{op}: '{name}' must evaluate to a value in the range [-32768, \
                                 32767]; value {n} is not in range"
                            ),
                        ));
                    }
                    got.insert(*name, n);
                }
                let tz = or_null!(tz.get(op, values, vars, check_tz)?);
                let part = |name: &str, default: i64| got.get(name).copied().unwrap_or(default);
                let days = if *iso {
                    let y = part("isoWeekYear", 1970);
                    if !(1..=9999).contains(&y) {
                        return Err(EvalError::failed(
                            ErrorCode::Location(31095),
                            format!(
                                "{op}: 'isoWeekYear' must evaluate to an integer in the range 1 \
                                 to 9999, found {y}"
                            ),
                        ));
                    }
                    Some(dates::days_from_iso(
                        y,
                        part("isoWeek", 1),
                        part("isoDayOfWeek", 1),
                    ))
                } else {
                    let y = part("year", 1970);
                    if !(1..=9999).contains(&y) {
                        return Err(EvalError::failed(
                            ErrorCode::Location(40523),
                            format!(
                                "{op}: 'year' must evaluate to an integer in the range 1 to \
                                 9999, found {y}"
                            ),
                        ));
                    }
                    dates::days_from_civil_carried(y, part("month", 1), part("day", 1))
                };
                let local = days.and_then(|d| {
                    d.checked_mul(86_400_000)?
                        .checked_add(part("hour", 0) * 3_600_000)?
                        .checked_add(part("minute", 0) * 60_000)?
                        .checked_add(part("second", 0).checked_mul(1_000)?)?
                        .checked_add(part("millisecond", 0))
                });
                let t = local
                    .and_then(|l| tz.instant(l))
                    .ok_or_else(|| out_of_range(40523, op))?;
                Ok(Some(date_value(t)))
            }
            DateExpr::FromString {
                string,
                format,
                tz,
                on_error,
                on_null,
            } => {
                let op = "$dateFromString";
                let s = not_null(eval(string)?);
                let items = match format {
                    Some(f) => items_of(f, op, values, vars, check_from_format)?,
                    None => None,
                };
                let tz = tz.get(op, values, vars, check_tz)?;
                let Some(s) = s else {
                    return match on_null {
                        Some(e) => Ok(e.eval_with(values, vars)?),
                        None => Ok(null()),
                    };
                };
                let parsed = match &s {
                    Bson::String(s) => {
                        let tz = or_null!(tz);
                        if format.is_some() && items.is_none() {
                            return Ok(null());
                        }
                        format::parse(s, items.as_deref(), tz).map_err(|m| format!("{op}: {m}"))
                    }
                    other => Err(format!(
                        "{op} requires that 'dateString' be a string, found: {other}"
                    )),
                };
                match parsed {
                    Ok(t) => Ok(Some(date_value(t))),
                    Err(m) => match on_error {
                        Some(e) => Ok(e.eval_with(values, vars)?),
                        None => Err(EvalError::failed(ErrorCode::ConversionFailure, m)),
                    },
                }
            }
        }
    }
}

/// `$dateToString`'s default formats, compiled once.
static DEFAULT_UTC: LazyLock<Vec<Item>> =
    LazyLock::new(|| format::compile(format::DEFAULT_UTC, true).unwrap_or_default());
static DEFAULT_ZONED: LazyLock<Vec<Item>> =
    LazyLock::new(|| format::compile(format::DEFAULT_ZONED, true).unwrap_or_default());

/// A format argument's compiled items (borrowed when constant); `None` when null or missing.
fn items_of<'a>(
    f: &'a Arg<Vec<Item>>,
    op: &str,
    values: &dyn Values,
    vars: &Vars<'_>,
    check: Check<Vec<Item>>,
) -> std::result::Result<Option<Cow<'a, [Item]>>, EvalError> {
    Ok(match f {
        Arg::Const(items) => Some(Cow::Borrowed(items.as_slice())),
        e => e.get(op, values, vars, check)?.map(Cow::Owned),
    })
}

/// Whether `$dateAdd`'s `amount` of `unit` roughly fits the range of dates, as MongoDB checks
/// it (any number of milliseconds does).
fn amount_in_range(unit: Unit, n: i64) -> bool {
    // The days in 2^64 ms, rounded up.
    const MAX_DAYS: i64 = 213_503_982_336;
    const MAX_YEARS: i64 = MAX_DAYS / 365 + 1;
    let max = match unit {
        Unit::Millisecond => return true,
        Unit::Second => MAX_DAYS * 86_400,
        Unit::Minute => MAX_DAYS * 1_440,
        Unit::Hour => MAX_DAYS * 24,
        Unit::Day => MAX_DAYS,
        Unit::Week => MAX_DAYS / 7,
        Unit::Month => MAX_YEARS * 12,
        Unit::Quarter => MAX_YEARS * 4,
        Unit::Year => MAX_YEARS,
    };
    -max < n && n < max
}

/// `None` for null and missing.
fn not_null(v: Option<Bson>) -> Option<Bson> {
    v.filter(|v| !matches!(v, Bson::Null | Bson::Undefined))
}

/// The ms of a date operand: a date, a timestamp or an ObjectId (its creation time), as
/// MongoDB coerces them.
///
/// # Errors
/// Code `code` for another type.
fn coerce_date(v: &Bson, op: &str, name: &str, code: u32) -> std::result::Result<i64, EvalError> {
    match v {
        Bson::DateTime(t) => Ok(t.timestamp_millis()),
        Bson::Timestamp(ts) => Ok(i64::from(ts.time) * 1_000),
        Bson::ObjectId(id) => Ok(id.timestamp().timestamp_millis()),
        other => Err(EvalError::failed(
            ErrorCode::Location(code),
            format!("{op} requires '{name}' to be a date, not {other}"),
        )),
    }
}

/// The date operators (`$dateTrunc`, `$dateAdd`, `$dateSubtract`, `$dateDiff`, the part
/// extractors, `$dateToString`, `$dateToParts`, `$dateFromParts`, `$dateFromString`) parsed
/// from their argument; `None` for other operators.
///
/// # Errors
/// An argument missing, unknown or refused (MongoDB's codes).
pub(super) fn parse_named(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<DateExpr>> {
    if let Some(part) = Part::parse(op) {
        return parse_part(op, part, arg, target).map(Some);
    }
    let named = [
        "$dateTrunc",
        "$dateAdd",
        "$dateSubtract",
        "$dateDiff",
        "$dateToString",
        "$dateToParts",
        "$dateFromParts",
        "$dateFromString",
    ];
    if !named.contains(&op) {
        return Ok(None);
    }
    let Bson::Document(args) = arg else {
        return Err(bad(format!("{op} takes a document of named arguments")));
    };
    let (allowed, unknown_code): (&[&str], Option<u32>) = match op {
        "$dateTrunc" => (
            &["date", "unit", "binSize", "startOfWeek", "timezone"],
            Some(5439007),
        ),
        "$dateDiff" => (
            &["startDate", "endDate", "unit", "startOfWeek", "timezone"],
            Some(5166302),
        ),
        "$dateToString" => (&["date", "format", "timezone", "onNull"], Some(18534)),
        "$dateToParts" => (&["date", "timezone", "iso8601"], Some(40520)),
        "$dateFromString" => (
            &["dateString", "format", "timezone", "onError", "onNull"],
            Some(40541),
        ),
        "$dateFromParts" => (
            &[
                "year",
                "month",
                "day",
                "hour",
                "minute",
                "second",
                "millisecond",
                "isoWeekYear",
                "isoWeek",
                "isoDayOfWeek",
                "timezone",
            ],
            Some(40518),
        ),
        _ => (&["startDate", "unit", "amount", "timezone"], Some(5166402)),
    };
    if let Some(k) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(Error::rejected(
            unknown_code.map_or(ErrorCode::BadValue, ErrorCode::Location),
            format!("Unrecognized argument to {op}: {k}"),
        ));
    }
    let required = |k: &str, code: u32| -> Result<Box<Expr>> {
        let v = args.get(k).ok_or_else(|| {
            Error::rejected(
                ErrorCode::Location(code),
                format!("Missing '{k}' parameter to {op}"),
            )
        })?;
        Ok(Box::new(Expr::parse(v, target)?))
    };
    let optional = |k: &str| -> Result<Option<Box<Expr>>> {
        args.get(k)
            .map(|v| Expr::parse(v, target).map(Box::new))
            .transpose()
    };
    let arg_or = |k: &str, default, check| -> Result<Arg<_>> {
        match args.get(k) {
            None => Ok(Arg::Const(default)),
            Some(v) => Arg::parse(op, v, target, check),
        }
    };
    let tz = match args.get("timezone") {
        None => Arg::Const(Tz::UTC),
        Some(v) => Arg::parse(op, v, target, check_tz)?,
    };
    let unit = |code: u32| -> Result<Arg<Unit>> {
        let v = args.get("unit").ok_or_else(|| {
            Error::rejected(
                ErrorCode::Location(code),
                format!("Missing 'unit' parameter to {op}"),
            )
        })?;
        Arg::parse(op, v, target, check_unit)
    };
    let format = |check: Check<Vec<Item>>| -> Result<Option<Arg<Vec<Item>>>> {
        args.get("format")
            .map(|v| Arg::parse(op, v, target, check))
            .transpose()
    };
    Ok(Some(match op {
        "$dateTrunc" => DateExpr::Trunc {
            date: required("date", 5439008)?,
            unit: unit(5439009)?,
            bin_size: arg_or("binSize", 1, check_bin_size)?,
            start_of_week: arg_or("startOfWeek", 0, check_start_of_week)?,
            tz,
        },
        "$dateDiff" => DateExpr::Diff {
            start: required("startDate", 5166303)?,
            end: required("endDate", 5166304)?,
            unit: unit(5166305)?,
            start_of_week: arg_or("startOfWeek", 0, check_start_of_week)?,
            tz,
        },
        "$dateAdd" | "$dateSubtract" => DateExpr::Add {
            date: required("startDate", 5166401)?,
            unit: unit(5166401)?,
            amount: required("amount", 5166401)?,
            sign: if op == "$dateSubtract" { -1 } else { 1 },
            tz,
        },
        "$dateToString" => DateExpr::ToString {
            date: required("date", 18628)?,
            format: format(check_to_format)?,
            tz,
            on_null: optional("onNull")?,
        },
        "$dateToParts" => DateExpr::ToParts {
            date: required("date", 40522)?,
            tz,
            iso8601: match args.get("iso8601") {
                None => Arg::Const(false),
                Some(v) => Arg::parse(op, v, target, check_bool)?,
            },
        },
        "$dateFromString" => DateExpr::FromString {
            string: required("dateString", 40542)?,
            format: format(check_from_format)?,
            tz,
            on_error: optional("onError")?,
            on_null: optional("onNull")?,
        },
        _ => {
            let has = |k: &&str| args.contains_key(*k);
            let calendar = CALENDAR_PARTS[4..].iter().any(has);
            let iso = ISO_PARTS.iter().any(has);
            if calendar && iso {
                return Err(Error::rejected(
                    ErrorCode::Location(40489),
                    "$dateFromParts does not allow mixing natural dates with ISO dates",
                ));
            }
            if !args.contains_key("year") && !args.contains_key("isoWeekYear") {
                return Err(Error::rejected(
                    ErrorCode::Location(40516),
                    "$dateFromParts requires either 'year' or 'isoWeekYear' to be present",
                ));
            }
            let mut parts = Vec::new();
            for name in CALENDAR_PARTS.iter().chain(ISO_PARTS.iter()) {
                if let Some(v) = args.get(*name) {
                    parts.push((*name, Expr::parse(v, target)?));
                }
            }
            DateExpr::FromParts { parts, iso, tz }
        }
    }))
}

/// A part extractor: `{$year: <date>}`, `{$year: [<date>]}` or `{$year: {date, timezone}}`.
fn parse_part(op: &str, part: Part, arg: &Bson, target: &Resolve<'_>) -> Result<DateExpr> {
    match arg {
        Bson::Document(d) if !d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            if let Some(k) = d.keys().find(|k| *k != "date" && *k != "timezone") {
                return Err(Error::rejected(
                    ErrorCode::Location(40535),
                    format!("unrecognized option to {op}: \"{k}\""),
                ));
            }
            let date = d.get("date").ok_or_else(|| {
                Error::rejected(
                    ErrorCode::Location(40539),
                    format!("missing 'date' argument to {op}, provided: {d}"),
                )
            })?;
            let tz = match d.get("timezone") {
                None => Arg::Const(Tz::UTC),
                Some(v) => Arg::parse(op, v, target, check_tz)?,
            };
            Ok(DateExpr::Part(
                part,
                Box::new(Expr::parse(date, target)?),
                tz,
            ))
        }
        Bson::Array(items) if items.len() != 1 => Err(Error::rejected(
            ErrorCode::Location(16020),
            format!(
                "Expression {op} takes exactly 1 arguments. {} were passed in.",
                items.len()
            ),
        )),
        Bson::Array(items) => Ok(DateExpr::Part(
            part,
            Box::new(Expr::parse(&items[0], target)?),
            Arg::Const(Tz::UTC),
        )),
        other => Ok(DateExpr::Part(
            part,
            Box::new(Expr::parse(other, target)?),
            Arg::Const(Tz::UTC),
        )),
    }
}

#[cfg(test)]
mod tests {
    use bson::{Bson, DateTime, doc};

    use super::*;
    use crate::mql::filter::{Got, Target};

    /// A document's fields.
    struct Fields(Document);

    impl Values for Fields {
        fn root(&self, _: Target, path: &[String]) -> Got<'_> {
            Ok(self.0.get(&path[0]).map(Cow::Borrowed))
        }
    }

    fn parse(e: Document) -> Result<Expr> {
        Expr::parse(&Bson::Document(e), &|p: &[String]| {
            (Target::Field, p.to_vec())
        })
    }

    fn eval(e: Document, on: Document) -> std::result::Result<Bson, EvalError> {
        let e = parse(e).expect("parses");
        Ok(e.eval(&Fields(on))?.map_or(Bson::Null, Cow::into_owned))
    }

    fn date(s: &str) -> Bson {
        Bson::DateTime(DateTime::parse_rfc3339_str(s).expect("date"))
    }

    fn code(e: Document) -> ErrorCode {
        parse(e).expect_err("refused").code()
    }

    #[test]
    fn to_string_follows_the_manual() {
        let on = doc! { "date": date("2014-01-01T08:15:39.736Z") };
        let cases = [
            (
                doc! { "$dateToString": { "format": "%Y-%m-%d", "date": "$date" } },
                "2014-01-01",
            ),
            (
                doc! { "$dateToString": { "format": "%H:%M:%S:%L%z", "date": "$date", "timezone": "America/New_York" } },
                "03:15:39:736-0500",
            ),
            (
                doc! { "$dateToString": { "format": "%Z", "date": "$date", "timezone": "America/New_York" } },
                "-300",
            ),
            (
                doc! { "$dateToString": { "date": "$date" } },
                "2014-01-01T08:15:39.736Z",
            ),
            (
                doc! { "$dateToString": { "date": "$date", "timezone": "+04:30" } },
                "2014-01-01T12:45:39.736",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(
                eval(e.clone(), on.clone()),
                Ok(Bson::String(want.into())),
                "{e}"
            );
        }
        assert_eq!(
            eval(
                doc! { "$dateToString": { "date": "$nope", "onNull": "none" } },
                on.clone()
            ),
            Ok(Bson::String("none".into()))
        );
        assert_eq!(
            code(doc! { "$dateToString": { "date": "$date", "format": "%Q" } }),
            ErrorCode::Location(18536)
        );
        assert_eq!(
            code(doc! { "$dateToString": { "date": "$date", "bogus": 1 } }),
            ErrorCode::Location(18534)
        );
    }

    #[test]
    fn arguments_may_be_expressions_and_null_gives_null() {
        let on = doc! {
            "t": date("2024-03-10T12:00:00Z"), "tz": "America/New_York", "unit": "day",
            "n": 2, "bad_tz": 5,
        };
        let trunc = |args: Document| eval(doc! { "$dateTrunc": args }, on.clone());
        assert_eq!(
            trunc(doc! { "date": "$t", "unit": "$unit", "timezone": "$tz" }),
            Ok(date("2024-03-10T05:00:00Z"))
        );
        assert_eq!(
            trunc(doc! { "date": "$t", "unit": "hour", "binSize": "$n" }),
            Ok(date("2024-03-10T12:00:00Z"))
        );
        for missing in [
            doc! { "date": "$t", "unit": "day", "binSize": "$missing" },
            doc! { "date": "$t", "unit": "$missing" },
            doc! { "date": "$t", "unit": "day", "timezone": "$missing" },
            doc! { "date": "$t", "unit": "day", "timezone": null },
            doc! { "date": "$missing", "unit": "day" },
            doc! { "date": "$t", "unit": "week", "startOfWeek": "$missing" },
        ] {
            assert_eq!(trunc(missing.clone()), Ok(Bson::Null), "{missing}");
        }
        assert_eq!(
            trunc(doc! { "date": "$t", "unit": "day", "timezone": "$bad_tz" }),
            Err(EvalError::failed(
                ErrorCode::Location(40517),
                "$dateTrunc: timezone must evaluate to a string, found 5"
            ))
        );
        let add = doc! { "$dateAdd": { "startDate": "$t", "unit": "$unit", "amount": "$n", "timezone": "$tz" } };
        // 08:00 EDT two days later.
        assert_eq!(eval(add, on.clone()), Ok(date("2024-03-12T12:00:00Z")));
        for (unit, amount, code) in [
            ("year", i64::MAX, 5_976_500),
            ("day", 213_503_982_336, 5_976_500),
            ("day", 200_000_000_000, 5_166_406),
        ] {
            let add = doc! { "$dateAdd": { "startDate": "$t", "unit": unit, "amount": amount } };
            assert!(
                matches!(eval(add, on.clone()), Err(EvalError::Failed(ErrorCode::Location(c), _)) if c == code),
                "{unit} {amount}"
            );
        }
        let sub = doc! { "$dateSubtract": { "startDate": "$t", "unit": "millisecond", "amount": i64::MIN } };
        assert!(matches!(
            eval(sub, on.clone()),
            Err(EvalError::Failed(ErrorCode::Location(6045000), _))
        ));
        let diff =
            doc! { "$dateDiff": { "startDate": "$t", "endDate": "$missing", "unit": "day" } };
        assert_eq!(eval(diff, on.clone()), Ok(Bson::Null));
        // Constants are checked when parsed.
        for (e, c) in [
            (
                doc! { "$dateTrunc": { "date": "$t", "unit": "day", "timezone": "Mars/Olympus" } },
                ErrorCode::Location(40485),
            ),
            (
                doc! { "$dateTrunc": { "date": "$t", "unit": "day", "binSize": 0 } },
                ErrorCode::Location(5439018),
            ),
            (
                doc! { "$dateTrunc": { "date": "$t", "unit": "day", "binSize": 1.5 } },
                ErrorCode::Location(5439017),
            ),
            (
                doc! { "$dateTrunc": { "date": "$t", "unit": 5 } },
                ErrorCode::Location(5439013),
            ),
            (
                doc! { "$dateDiff": { "startDate": "$t", "endDate": "$t", "unit": "week", "startOfWeek": "someday" } },
                ErrorCode::Location(5439016),
            ),
            (
                doc! { "$hour": { "date": "$t", "timezone": 3 } },
                ErrorCode::Location(40517),
            ),
        ] {
            assert_eq!(code(e.clone()), c, "{e}");
        }
    }

    #[test]
    fn extractors_take_a_zone() {
        let on = doc! { "t": date("2024-01-01T12:00:00Z") };
        for (e, want) in [
            (doc! { "$hour": { "date": "$t", "timezone": "+05:30" } }, 17),
            (
                doc! { "$minute": { "date": "$t", "timezone": "Asia/Kathmandu" } },
                45,
            ),
            (doc! { "$hour": ["$t"] }, 12),
            (doc! { "$isoDayOfWeek": "$t" }, 1),
            (doc! { "$week": "$t" }, 0),
            (
                doc! { "$dayOfMonth": { "date": "$t", "timezone": "Pacific/Kiritimati" } },
                2,
            ),
        ] {
            assert_eq!(eval(e.clone(), on.clone()), Ok(Bson::Int32(want)), "{e}");
        }
        assert_eq!(
            code(doc! { "$hour": { "date": "$t", "zone": "UTC" } }),
            ErrorCode::Location(40535)
        );
    }

    #[test]
    fn parts_round_trip_as_the_manual_shows() {
        let on = doc! { "date": date("2017-01-01T01:29:09.123Z") };
        assert_eq!(
            eval(
                doc! { "$dateToParts": { "date": "$date", "timezone": "America/New_York" } },
                on.clone()
            ),
            Ok(Bson::Document(doc! {
                "year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9,
                "millisecond": 123,
            }))
        );
        assert_eq!(
            eval(
                doc! { "$dateToParts": { "date": "$date", "iso8601": true } },
                on.clone()
            ),
            Ok(Bson::Document(doc! {
                "isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29,
                "second": 9, "millisecond": 123,
            }))
        );
        let from = |args: Document| eval(doc! { "$dateFromParts": args }, doc! {});
        // The manual's examples: the same instant three ways, and carried parts.
        assert_eq!(
            from(doc! { "year": 2017, "month": 2, "day": 8, "hour": 12 }),
            Ok(date("2017-02-08T12:00:00Z"))
        );
        assert_eq!(
            from(doc! { "isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12 }),
            Ok(date("2017-02-08T12:00:00Z"))
        );
        assert_eq!(
            from(
                doc! { "year": 2017, "month": 2, "day": 8, "hour": 12, "timezone": "America/New_York" }
            ),
            Ok(date("2017-02-08T17:00:00Z"))
        );
        assert_eq!(
            from(doc! { "year": 2017, "month": 14, "day": 1, "hour": 12 }),
            Ok(date("2018-02-01T12:00:00Z"))
        );
        assert_eq!(
            from(doc! { "year": 2017, "month": 0, "day": 1, "hour": 12 }),
            Ok(date("2016-12-01T12:00:00Z"))
        );
        assert_eq!(
            from(doc! { "year": 2017, "month": 2, "day": 0, "hour": 12 }),
            Ok(date("2017-01-31T12:00:00Z"))
        );
        assert_eq!(
            from(doc! { "year": 2017, "month": 2, "day": 8, "hour": -1 }),
            Ok(date("2017-02-07T23:00:00Z"))
        );
        assert_eq!(
            from(doc! { "year": 2017, "month": "$missing" }),
            Ok(Bson::Null)
        );
        assert!(matches!(
            from(doc! { "year": 10_000 }),
            Err(EvalError::Failed(ErrorCode::Location(40523), _))
        ));
        assert!(matches!(
            from(doc! { "year": 2017, "hour": 40_000 }),
            Err(EvalError::Failed(ErrorCode::Location(31034), _))
        ));
        assert_eq!(
            code(doc! { "$dateFromParts": { "year": 2017, "isoWeek": 3 } }),
            ErrorCode::Location(40489)
        );
        assert_eq!(
            code(doc! { "$dateFromParts": { "month": 3 } }),
            ErrorCode::Location(40516)
        );
    }

    #[test]
    fn from_string_reads_zones_and_falls_back_on_error() {
        let on = doc! { "s": "2017-02-08T12:10:40.787", "bad": "15 Notamonth 2017" };
        let from = |args: Document| eval(doc! { "$dateFromString": args }, on.clone());
        assert_eq!(
            from(doc! { "dateString": "$s", "timezone": "America/New_York" }),
            Ok(date("2017-02-08T17:10:40.787Z"))
        );
        assert_eq!(
            from(doc! { "dateString": "$s" }),
            Ok(date("2017-02-08T12:10:40.787Z"))
        );
        assert_eq!(
            from(doc! { "dateString": "$bad", "onError": "$bad" }),
            Ok(Bson::String("15 Notamonth 2017".into()))
        );
        assert!(matches!(
            from(doc! { "dateString": "$bad" }),
            Err(EvalError::Failed(ErrorCode::ConversionFailure, _))
        ));
        assert_eq!(
            from(doc! { "dateString": "$missing", "onNull": "none" }),
            Ok(Bson::String("none".into()))
        );
        assert_eq!(
            from(doc! { "dateString": "06/15/2018", "format": "%m/%d/%Y", "timezone": "+05:30" }),
            Ok(date("2018-06-14T18:30:00Z"))
        );
        assert!(matches!(
            from(doc! { "dateString": 5 }),
            Err(EvalError::Failed(ErrorCode::ConversionFailure, _))
        ));
    }
}
