//! Aggregation expressions: `$expr` in filters, evaluated on each measurement (MongoDB's
//! `{$expr: {$gt: ["$usage_user", "$usage_system"]}}`), and the expressions of pipeline
//! stages. Supported: field paths (`"$a.b"`, the meta field and its sub-fields, the time
//! field), literals and `$literal`, document and array expressions; comparisons `$eq`, `$ne`,
//! `$gt`, `$gte`, `$lt`, `$lte` (BSON order across types, a missing field below every value,
//! as aggregation compares); `$and`, `$or`, `$not`, `$cond`, `$ifNull`; arithmetic `$add`,
//! `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs` on numbers and dates; dates
//! `$dateTrunc`, `$dateAdd`, `$dateSubtract`, `$dateDiff` (constant `unit`, `binSize` and
//! `startOfWeek`, UTC), `$year`, `$month`, `$dayOfMonth`, `$dayOfWeek`, `$dayOfYear`,
//! `$hour`, `$minute`, `$second`, `$millisecond`; conversions `$toLong`, `$toDouble`,
//! `$toDate`. An operand that is null or missing makes the result null. An arithmetic operand
//! that is not a number (or a date where dates are allowed), a division by zero, or a date
//! operator given something other than a date fails the evaluation, as in MongoDB: a pipeline
//! fails naming the stage; in a filter, where MongoDB fails the whole query, the measurement
//! does not match.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::compare;

use crate::dates::{self, Part, Unit};
use crate::error::{Error, ErrorCode, Result};
use crate::filter::{Target, Values, exact_int, field_value, rest_of};

/// Where a field path of an expression reads: its target and the path inside it.
pub(crate) type Resolve<'a> = dyn Fn(&[String]) -> (Target, Vec<String>) + 'a;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    /// A constant.
    Literal(Bson),
    /// A field's value: where it is read, and the path inside.
    Field(Target, Vec<String>),
    /// A comparison of two expressions.
    Cmp(Compare, Box<Expr>, Box<Expr>),
    /// Every operand is true.
    And(Vec<Expr>),
    /// Some operand is true.
    Or(Vec<Expr>),
    /// The operand is false.
    Not(Box<Expr>),
    /// Arithmetic.
    Arith(Arith, Vec<Expr>),
    /// A document of expressions (a field whose value is missing is left out).
    Object(Vec<(String, Expr)>),
    /// An array of expressions (a missing value is null).
    Array(Vec<Expr>),
    /// `$cond`: if, then, else.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `$ifNull`: the first operand neither null nor missing, else the last.
    IfNull(Vec<Expr>),
    /// `$dateTrunc`.
    DateTrunc {
        date: Box<Expr>,
        unit: Unit,
        bin_size: i64,
        start_of_week: i64,
    },
    /// `$dateAdd` (`sign` 1) or `$dateSubtract` (`sign` -1).
    DateAdd {
        date: Box<Expr>,
        unit: Unit,
        amount: Box<Expr>,
        sign: i64,
    },
    /// `$dateDiff`.
    DateDiff {
        start: Box<Expr>,
        end: Box<Expr>,
        unit: Unit,
        start_of_week: i64,
    },
    /// `$year`, `$month` ...
    DatePart(Part, Box<Expr>),
    /// `$toLong`, `$toDouble`, `$toDate`.
    Convert(Conversion, Box<Expr>),
}

/// Why an expression has no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EvalError {
    /// A stored value could not be read (corruption).
    Corrupt(String),
    /// The expression fails on these values (a division by zero, `$add` of a string, a date
    /// operator given something else): MongoDB fails the query.
    Failed(String),
}

impl EvalError {
    fn failed(message: &str) -> EvalError {
        EvalError::Failed(message.to_owned())
    }
}

impl From<String> for EvalError {
    fn from(message: String) -> EvalError {
        EvalError::Failed(message)
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Corrupt(m) | EvalError::Failed(m) => f.write_str(m),
        }
    }
}

/// A conversion operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Conversion {
    Long,
    Double,
    Date,
}

/// A comparison operator of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Compare {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
}

/// An arithmetic operator of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
    Abs,
}

impl Expr {
    /// Parses an expression; `target` says where a field path reads (the meta field, the time
    /// field or a measurement field) and splits the path.
    ///
    /// # Errors
    /// `BadValue` for an operator not supported or the wrong number of operands.
    pub(crate) fn parse(v: &Bson, target: &Resolve<'_>) -> Result<Expr> {
        match v {
            Bson::String(s) if s.starts_with("$$") => {
                Err(bad(format!("$expr: variables ({s}) are not supported")))
            }
            Bson::String(s) if s.starts_with('$') => {
                let path: Vec<String> = s[1..].split('.').map(str::to_owned).collect();
                if path.iter().any(String::is_empty) {
                    return Err(bad(format!("$expr: '{s}' is not a field path")));
                }
                let (t, rel) = target(&path);
                Ok(Expr::Field(t, rel))
            }
            Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
                parse_operator(d, target)
            }
            Bson::Document(d) => Ok(Expr::Object(
                d.iter()
                    .map(|(k, v)| Ok((k.clone(), Expr::parse(v, target)?)))
                    .collect::<Result<_>>()?,
            )),
            Bson::Array(items) => Ok(Expr::Array(
                items
                    .iter()
                    .map(|v| Expr::parse(v, target))
                    .collect::<Result<_>>()?,
            )),
            other => Ok(Expr::Literal(other.clone())),
        }
    }

    /// Every field the expression reads: where, and the path.
    pub(crate) fn fields<'a>(&'a self, out: &mut Vec<(Target, &'a [String])>) {
        match self {
            Expr::Literal(_) => {}
            Expr::Field(t, p) => out.push((*t, p)),
            Expr::Cmp(_, a, b) => {
                a.fields(out);
                b.fields(out);
            }
            Expr::Not(a) | Expr::DatePart(_, a) | Expr::Convert(_, a) => a.fields(out),
            Expr::DateTrunc { date, .. } => date.fields(out),
            Expr::DateAdd { date, amount, .. } => {
                date.fields(out);
                amount.fields(out);
            }
            Expr::DateDiff { start, end, .. } => {
                start.fields(out);
                end.fields(out);
            }
            Expr::Cond(a, b, c) => {
                a.fields(out);
                b.fields(out);
                c.fields(out);
            }
            Expr::And(xs)
            | Expr::Or(xs)
            | Expr::Arith(_, xs)
            | Expr::Array(xs)
            | Expr::IfNull(xs) => {
                xs.iter().for_each(|x| x.fields(out));
            }
            Expr::Object(fields) => fields.iter().for_each(|(_, x)| x.fields(out)),
        }
    }

    /// The expression's value (`None`: missing).
    ///
    /// # Errors
    /// What `values` fails with.
    pub(crate) fn eval<'v>(
        &self,
        values: &'v dyn Values,
    ) -> std::result::Result<Option<Cow<'v, Bson>>, EvalError> {
        Ok(match self {
            Expr::Literal(b) => Some(Cow::Owned(b.clone())),
            Expr::Field(t, p) => field_value(
                values.root(*t, p).map_err(EvalError::Corrupt)?,
                rest_of(*t, p),
            ),
            Expr::Cmp(op, a, b) => {
                let (a, b) = (a.eval(values)?, b.eval(values)?);
                let o = match (a.as_deref(), b.as_deref()) {
                    (None, None) => Ordering::Equal,
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (Some(a), Some(b)) => compare(a, b),
                };
                let holds = match op {
                    Compare::Eq => o == Ordering::Equal,
                    Compare::Ne => o != Ordering::Equal,
                    Compare::Gt => o == Ordering::Greater,
                    Compare::Gte => o != Ordering::Less,
                    Compare::Lt => o == Ordering::Less,
                    Compare::Lte => o != Ordering::Greater,
                };
                Some(Cow::Owned(Bson::Boolean(holds)))
            }
            Expr::And(xs) => {
                let mut all = true;
                for x in xs {
                    if !truthy(x.eval(values)?.as_deref()) {
                        all = false;
                        break;
                    }
                }
                Some(Cow::Owned(Bson::Boolean(all)))
            }
            Expr::Or(xs) => {
                let mut any = false;
                for x in xs {
                    if truthy(x.eval(values)?.as_deref()) {
                        any = true;
                        break;
                    }
                }
                Some(Cow::Owned(Bson::Boolean(any)))
            }
            Expr::Not(a) => Some(Cow::Owned(Bson::Boolean(!truthy(
                a.eval(values)?.as_deref(),
            )))),
            Expr::Arith(op, xs) => {
                let mut args = Vec::with_capacity(xs.len());
                for x in xs {
                    args.push(x.eval(values)?.map(Cow::into_owned));
                }
                Some(Cow::Owned(arith(*op, &args)?))
            }
            Expr::Object(fields) => {
                let mut d = Document::new();
                for (k, x) in fields {
                    if let Some(v) = x.eval(values)? {
                        d.insert(k.clone(), v.into_owned());
                    }
                }
                Some(Cow::Owned(Bson::Document(d)))
            }
            Expr::Array(xs) => {
                let mut a = Vec::with_capacity(xs.len());
                for x in xs {
                    a.push(x.eval(values)?.map_or(Bson::Null, Cow::into_owned));
                }
                Some(Cow::Owned(Bson::Array(a)))
            }
            Expr::Cond(c, a, b) => {
                if truthy(c.eval(values)?.as_deref()) {
                    a.eval(values)?
                } else {
                    b.eval(values)?
                }
            }
            Expr::IfNull(xs) => {
                let (last, rest) = xs
                    .split_last()
                    .ok_or_else(|| EvalError::Failed("$ifNull needs operands".to_owned()))?;
                for x in rest {
                    if let Some(v) = x.eval(values)?
                        && !matches!(v.as_ref(), Bson::Null | Bson::Undefined)
                    {
                        return Ok(Some(v));
                    }
                }
                last.eval(values)?
            }
            Expr::DateTrunc {
                date,
                unit,
                bin_size,
                start_of_week,
            } => date_of(date.eval(values)?.as_deref(), "$dateTrunc")?
                .map(|t| {
                    dates::trunc(t, *unit, *bin_size, *start_of_week)
                        .map(|t| Cow::Owned(Bson::DateTime(DateTime::from_millis(t))))
                        .ok_or_else(|| "$dateTrunc: the date is out of range".to_owned())
                })
                .transpose()?
                .or(Some(Cow::Owned(Bson::Null))),
            Expr::DateAdd {
                date,
                unit,
                amount,
                sign,
            } => {
                let t = date_of(date.eval(values)?.as_deref(), "$dateAdd")?;
                let n =
                    match amount.eval(values)?.as_deref() {
                        None | Some(Bson::Null) => None,
                        Some(v) => Some(exact_int(v).ok_or_else(|| {
                            EvalError::failed("$dateAdd: amount must be an integer")
                        })?),
                    };
                Some(Cow::Owned(match (t, n) {
                    (Some(t), Some(n)) => Bson::DateTime(DateTime::from_millis(
                        dates::add(t, *unit, n.saturating_mul(*sign)).ok_or_else(|| {
                            EvalError::failed("$dateAdd: the result is out of range")
                        })?,
                    )),
                    _ => Bson::Null,
                }))
            }
            Expr::DateDiff {
                start,
                end,
                unit,
                start_of_week,
            } => {
                let a = date_of(start.eval(values)?.as_deref(), "$dateDiff")?;
                let b = date_of(end.eval(values)?.as_deref(), "$dateDiff")?;
                Some(Cow::Owned(match (a, b) {
                    (Some(a), Some(b)) => Bson::Int64(
                        dates::diff(a, b, *unit, *start_of_week)
                            .ok_or_else(|| EvalError::failed("$dateDiff: out of range"))?,
                    ),
                    _ => Bson::Null,
                }))
            }
            Expr::DatePart(part, date) => Some(Cow::Owned(
                match date_of(date.eval(values)?.as_deref(), "a date part operator")? {
                    Some(t) => {
                        let v = part.of(t);
                        i32::try_from(v).map_or(Bson::Int64(v), Bson::Int32)
                    }
                    None => Bson::Null,
                },
            )),
            Expr::Convert(to, x) => Some(Cow::Owned(convert(*to, x.eval(values)?.as_deref())?)),
        })
    }

    /// Whether the expression, as a filter, holds (its value is true by aggregation's
    /// rules: not false, 0, null or missing).
    ///
    /// # Errors
    /// What `values` fails with.
    pub(crate) fn holds(&self, values: &dyn Values) -> std::result::Result<bool, EvalError> {
        Ok(truthy(self.eval(values)?.as_deref()))
    }
}

fn parse_operator(d: &Document, target: &Resolve<'_>) -> Result<Expr> {
    if d.len() != 1 {
        return Err(bad(format!(
            "$expr: an expression object holds one operator, not {}",
            d.len()
        )));
    }
    let Some((op, arg)) = d.iter().next() else {
        return Err(bad("$expr: empty expression".to_owned()));
    };
    if op == "$literal" {
        return Ok(Expr::Literal(arg.clone()));
    }
    if let Some(e) = parse_named(op, arg, target)? {
        return Ok(e);
    }
    let args: Vec<Expr> = match arg {
        Bson::Array(items) => items
            .iter()
            .map(|i| Expr::parse(i, target))
            .collect::<Result<_>>()?,
        one => vec![Expr::parse(one, target)?],
    };
    let count = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(bad(format!(
                "$expr: {op} takes {n} operand(s), not {}",
                args.len()
            )))
        }
    };
    let compare = |c: Compare| -> Result<Expr> {
        count(2)?;
        let mut it = args.clone().into_iter();
        match (it.next(), it.next()) {
            (Some(a), Some(b)) => Ok(Expr::Cmp(c, Box::new(a), Box::new(b))),
            _ => Err(bad(format!("$expr: {op} takes 2 operands"))),
        }
    };
    Ok(match op.as_str() {
        "$eq" => compare(Compare::Eq)?,
        "$ne" => compare(Compare::Ne)?,
        "$gt" => compare(Compare::Gt)?,
        "$gte" => compare(Compare::Gte)?,
        "$lt" => compare(Compare::Lt)?,
        "$lte" => compare(Compare::Lte)?,
        "$and" => Expr::And(args),
        "$or" => Expr::Or(args),
        "$not" => {
            count(1)?;
            Expr::Not(Box::new(
                args.into_iter().next().unwrap_or(Expr::Literal(Bson::Null)),
            ))
        }
        "$add" => Expr::Arith(Arith::Add, args),
        "$multiply" => Expr::Arith(Arith::Multiply, args),
        "$subtract" | "$divide" | "$mod" => {
            count(2)?;
            let a = match op.as_str() {
                "$subtract" => Arith::Subtract,
                "$divide" => Arith::Divide,
                _ => Arith::Mod,
            };
            Expr::Arith(a, args)
        }
        "$abs" => {
            count(1)?;
            Expr::Arith(Arith::Abs, args)
        }
        "$ifNull" => {
            if args.len() < 2 {
                return Err(bad("$ifNull takes at least 2 operands".to_owned()));
            }
            Expr::IfNull(args)
        }
        "$cond" => {
            count(3)?;
            let mut it = args.into_iter();
            match (it.next(), it.next(), it.next()) {
                (Some(c), Some(a), Some(b)) => Expr::Cond(Box::new(c), Box::new(a), Box::new(b)),
                _ => return Err(bad("$cond takes 3 operands".to_owned())),
            }
        }
        "$toLong" | "$toDouble" | "$toDate" => {
            count(1)?;
            let to = match op.as_str() {
                "$toLong" => Conversion::Long,
                "$toDouble" => Conversion::Double,
                _ => Conversion::Date,
            };
            Expr::Convert(
                to,
                Box::new(args.into_iter().next().unwrap_or(Expr::Literal(Bson::Null))),
            )
        }
        other => {
            if let Some(part) = Part::parse(other) {
                count(1)?;
                let date = args.into_iter().next().unwrap_or(Expr::Literal(Bson::Null));
                return Ok(Expr::DatePart(part, Box::new(date)));
            }
            return Err(bad(format!(
                "operator {other} is not supported in an expression (comparisons, $and, $or, \
                 $not, $cond, $ifNull, $add, $subtract, $multiply, $divide, $mod, $abs, \
                 $dateTrunc, $dateAdd, $dateSubtract, $dateDiff, date parts, $toLong, \
                 $toDouble, $toDate, $literal are)"
            )));
        }
    })
}

/// The operators that take a document of named arguments (`$dateTrunc` ...) and `$cond` in
/// its document form; `None` for the others.
fn parse_named(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    let named = ["$dateTrunc", "$dateAdd", "$dateSubtract", "$dateDiff"];
    let Bson::Document(args) = arg else {
        if named.contains(&op) {
            return Err(bad(format!("{op} takes a document of named arguments")));
        }
        return Ok(None);
    };
    if op == "$cond" {
        let get = |k: &str| {
            args.get(k)
                .ok_or_else(|| bad(format!("$cond needs '{k}'")))
                .and_then(|v| Expr::parse(v, target))
        };
        return Ok(Some(Expr::Cond(
            Box::new(get("if")?),
            Box::new(get("then")?),
            Box::new(get("else")?),
        )));
    }
    if !named.contains(&op) {
        return Ok(None);
    }
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
        "$dateTrunc" => Expr::DateTrunc {
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
        "$dateDiff" => Expr::DateDiff {
            start: expr("startDate")?,
            end: expr("endDate")?,
            unit,
            start_of_week,
        },
        _ => Expr::DateAdd {
            date: expr("startDate")?,
            unit,
            amount: expr("amount")?,
            sign: if op == "$dateSubtract" { -1 } else { 1 },
        },
    }))
}

/// The ms of a date operand; `None` for null or missing.
fn date_of(v: Option<&Bson>, op: &str) -> std::result::Result<Option<i64>, String> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(None),
        Some(Bson::DateTime(t)) => Ok(Some(t.timestamp_millis())),
        Some(other) => Err(format!("{op} needs a date, not {other}")),
    }
}

/// `$toLong`, `$toDouble`, `$toDate`.
fn convert(to: Conversion, v: Option<&Bson>) -> std::result::Result<Bson, String> {
    let v = match v {
        None | Some(Bson::Null | Bson::Undefined) => return Ok(Bson::Null),
        Some(v) => v,
    };
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        reason = "MongoDB's conversions"
    )]
    let out = match (to, v) {
        (Conversion::Long, Bson::Int32(n)) => Bson::Int64(i64::from(*n)),
        (Conversion::Long, Bson::Int64(n)) => Bson::Int64(*n),
        (Conversion::Long, Bson::Double(d)) if d.is_finite() && d.abs() < 9.2e18 => {
            Bson::Int64(d.trunc() as i64)
        }
        (Conversion::Long, Bson::Boolean(b)) => Bson::Int64(i64::from(*b)),
        (Conversion::Long, Bson::DateTime(t)) => Bson::Int64(t.timestamp_millis()),
        (Conversion::Long, Bson::String(s)) => Bson::Int64(
            s.trim()
                .parse()
                .map_err(|_| format!("$toLong cannot convert '{s}'"))?,
        ),
        (Conversion::Double, Bson::Int32(n)) => Bson::Double(f64::from(*n)),
        (Conversion::Double, Bson::Int64(n)) => Bson::Double(*n as f64),
        (Conversion::Double, Bson::Double(d)) => Bson::Double(*d),
        (Conversion::Double, Bson::Boolean(b)) => Bson::Double(f64::from(u8::from(*b))),
        (Conversion::Double, Bson::DateTime(t)) => Bson::Double(t.timestamp_millis() as f64),
        (Conversion::Double, Bson::String(s)) => Bson::Double(
            s.trim()
                .parse()
                .map_err(|_| format!("$toDouble cannot convert '{s}'"))?,
        ),
        (Conversion::Date, Bson::DateTime(t)) => Bson::DateTime(*t),
        (Conversion::Date, Bson::Int64(n)) => Bson::DateTime(DateTime::from_millis(*n)),
        (Conversion::Date, Bson::Double(d)) if d.is_finite() && d.abs() < 9.2e18 => {
            Bson::DateTime(DateTime::from_millis(d.trunc() as i64))
        }
        (Conversion::Date, Bson::String(s)) => Bson::DateTime(
            DateTime::parse_rfc3339_str(s).map_err(|_| format!("$toDate cannot convert '{s}'"))?,
        ),
        (_, other) => return Err(format!("cannot convert {other} with {to:?}")),
    };
    Ok(out)
}

/// Aggregation's truthiness.
fn truthy(v: Option<&Bson>) -> bool {
    match v {
        None | Some(Bson::Null | Bson::Undefined | Bson::Boolean(false)) => false,
        Some(Bson::Int32(n)) => *n != 0,
        Some(Bson::Int64(n)) => *n != 0,
        Some(Bson::Double(n)) => *n != 0.0,
        Some(_) => true,
    }
}

/// A number as aggregation adds it: an integer, or a double.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn of(v: &Bson) -> Option<Num> {
        match v {
            Bson::Int32(n) => Some(Num::Int(i64::from(*n))),
            Bson::Int64(n) => Some(Num::Int(*n)),
            Bson::Double(d) => Some(Num::Float(*d)),
            _ => None,
        }
    }

    #[expect(clippy::cast_precision_loss, reason = "aggregation widens to double")]
    fn float(self) -> f64 {
        match self {
            Num::Int(n) => n as f64,
            Num::Float(d) => d,
        }
    }

    fn bson(self) -> Bson {
        match self {
            Num::Int(n) => match i32::try_from(n) {
                Ok(i) => Bson::Int32(i),
                Err(_) => Bson::Int64(n),
            },
            Num::Float(d) => Bson::Double(d),
        }
    }

    /// `self op other` on integers when both are and it does not overflow, else on doubles.
    fn apply(
        self,
        other: Num,
        int: fn(i64, i64) -> Option<i64>,
        float: fn(f64, f64) -> f64,
    ) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => match int(a, b) {
                Some(n) => Num::Int(n),
                None => Num::Float(float(self.float(), other.float())),
            },
            _ => Num::Float(float(self.float(), other.float())),
        }
    }
}

/// An arithmetic operator on evaluated operands (`None`: missing).
fn arith(op: Arith, args: &[Option<Bson>]) -> std::result::Result<Bson, String> {
    let name = match op {
        Arith::Add => "$add",
        Arith::Subtract => "$subtract",
        Arith::Multiply => "$multiply",
        Arith::Divide => "$divide",
        Arith::Mod => "$mod",
        Arith::Abs => "$abs",
    };
    let not_numeric = |v: &Bson| {
        Err(format!(
            "{name} only supports numeric or date types, not {v}"
        ))
    };
    if args
        .iter()
        .any(|a| matches!(a, None | Some(Bson::Null | Bson::Undefined)))
    {
        return Ok(Bson::Null);
    }
    let values: Vec<&Bson> = args.iter().flatten().collect();
    match op {
        Arith::Add => {
            let mut date: Option<i64> = None;
            let mut sum = Num::Int(0);
            for v in values {
                match (v, Num::of(v)) {
                    (Bson::DateTime(t), _) if date.is_none() => date = Some(t.timestamp_millis()),
                    (_, Some(n)) => sum = sum.apply(n, i64::checked_add, |a, b| a + b),
                    _ => return not_numeric(v),
                }
            }
            Ok(match date {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(t) => Bson::DateTime(DateTime::from_millis(match sum {
                    Num::Int(n) => t.saturating_add(n),
                    Num::Float(d) => t.saturating_add(d.round() as i64),
                })),
                None => sum.bson(),
            })
        }
        Arith::Multiply => {
            let mut product = Num::Int(1);
            for v in values {
                match Num::of(v) {
                    Some(n) => product = product.apply(n, i64::checked_mul, |a, b| a * b),
                    None => return not_numeric(v),
                }
            }
            Ok(product.bson())
        }
        Arith::Subtract => Ok(match (values[0], values[1]) {
            (Bson::DateTime(a), Bson::DateTime(b)) => {
                Bson::Int64(a.timestamp_millis().saturating_sub(b.timestamp_millis()))
            }
            (Bson::DateTime(a), b) => match Num::of(b) {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(n) => Bson::DateTime(DateTime::from_millis(match n {
                    Num::Int(n) => a.timestamp_millis().saturating_sub(n),
                    Num::Float(d) => a.timestamp_millis().saturating_sub(d.round() as i64),
                })),
                None => return not_numeric(b),
            },
            (a, b) => match (Num::of(a), Num::of(b)) {
                (Some(a), Some(b)) => a.apply(b, i64::checked_sub, |a, b| a - b).bson(),
                (None, _) => return not_numeric(a),
                _ => return not_numeric(b),
            },
        }),
        Arith::Divide | Arith::Mod => match (Num::of(values[0]), Num::of(values[1])) {
            (Some(_), Some(b)) if b.float() == 0.0 => Err(format!("can't {name} by zero")),
            (Some(a), Some(b)) if op == Arith::Divide => Ok(Bson::Double(a.float() / b.float())),
            (Some(Num::Int(a)), Some(Num::Int(b))) => Ok(Num::Int(a.wrapping_rem(b)).bson()),
            (Some(a), Some(b)) => Ok(Bson::Double(a.float() % b.float())),
            (None, _) => not_numeric(values[0]),
            _ => not_numeric(values[1]),
        },
        Arith::Abs => Ok(match Num::of(values[0]) {
            Some(Num::Int(n)) => n
                .checked_abs()
                .map_or(Bson::Double((n as f64).abs()), |a| Num::Int(a).bson()),
            Some(Num::Float(d)) => Bson::Double(d.abs()),
            None => return not_numeric(values[0]),
        }),
    }
}

fn bad(message: String) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}
