//! Type conversions: `$convert` (`input`, `to` as a type name or number, `onError`,
//! `onNull`) and its shorthands `$toString`, `$toInt`, `$toLong`, `$toDouble`,
//! `$toDecimal`, `$toBool`, `$toDate`, `$toObjectId`; `$type` and `$isNumber`. MongoDB's
//! conversion rules: a null or missing input is null (or `onNull`); a value the target type
//! does not take fails with `ConversionFailure` (241), unless `onError` is given.

use bson::oid::ObjectId;
use bson::{Bson, DateTime, Decimal128};

use super::args::{self, fail, nullish, type_name, value};
use super::{EvalError, Expr, Resolve, Vars};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::dates::civil_from_days;
use crate::mql::filter::{Target, Values};

/// A type `$convert` converts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Double,
    String,
    ObjectId,
    Bool,
    Date,
    Int,
    Long,
    Decimal,
}

impl Kind {
    /// The type of a `to` value: a name or a BSON type number (`None`: not a type `$convert`
    /// converts to, though a BSON type).
    ///
    /// # Errors
    /// `BadValue` for an unknown type name, `FailedToParse` for a number that is no BSON
    /// type or a `to` that is neither a string nor a number.
    fn of(to: &Bson) -> std::result::Result<Option<Kind>, EvalError> {
        let named = |s: &str| match s {
            "double" => Some(Some(Kind::Double)),
            "string" => Some(Some(Kind::String)),
            "objectId" => Some(Some(Kind::ObjectId)),
            "bool" => Some(Some(Kind::Bool)),
            "date" => Some(Some(Kind::Date)),
            "int" => Some(Some(Kind::Int)),
            "long" => Some(Some(Kind::Long)),
            "decimal" => Some(Some(Kind::Decimal)),
            "object"
            | "array"
            | "binData"
            | "undefined"
            | "null"
            | "regex"
            | "dbPointer"
            | "javascript"
            | "symbol"
            | "javascriptWithScope"
            | "timestamp"
            | "minKey"
            | "maxKey"
            | "missing" => Some(None),
            _ => None,
        };
        let numbered = |n: i64| match n {
            1 => Some(Some(Kind::Double)),
            2 => Some(Some(Kind::String)),
            7 => Some(Some(Kind::ObjectId)),
            8 => Some(Some(Kind::Bool)),
            9 => Some(Some(Kind::Date)),
            16 => Some(Some(Kind::Int)),
            18 => Some(Some(Kind::Long)),
            19 => Some(Some(Kind::Decimal)),
            -1 | 3..=6 | 10..=15 | 17 | 127 => Some(None),
            _ => None,
        };
        match to {
            // MongoDB 8.0's `{type, subtype}` form (the subtype is for binData only).
            Bson::Document(d) if d.contains_key("type") => {
                Kind::of(d.get("type").unwrap_or(&Bson::Null))
            }
            Bson::String(s) => named(s).ok_or_else(|| {
                EvalError::failed(ErrorCode::BadValue, format!("Unknown type name: {s}"))
            }),
            n if args::is_number(n) => crate::mql::filter::exact_int(n)
                .and_then(numbered)
                .ok_or_else(|| {
                    EvalError::failed(
                        ErrorCode::FailedToParse,
                        format!(
                            "In $convert, numeric value for 'to' does not correspond to a BSON \
                             type: {n}"
                        ),
                    )
                }),
            other => Err(EvalError::failed(
                ErrorCode::FailedToParse,
                format!(
                    "$convert's 'to' argument must be a string or number, but is {}",
                    type_name(Some(other))
                ),
            )),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Double => "double",
            Kind::String => "string",
            Kind::ObjectId => "objectId",
            Kind::Bool => "bool",
            Kind::Date => "date",
            Kind::Int => "int",
            Kind::Long => "long",
            Kind::Decimal => "decimal",
        }
    }
}

/// Where `$convert`'s target type comes from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum To {
    /// A constant type, resolved at parse time (`None`: a BSON type not converted to).
    Const(Option<Kind>),
    /// An expression, resolved per document.
    Dynamic(Expr),
}

/// A conversion expression.
#[derive(Clone, Debug, PartialEq)]
#[expect(clippy::large_enum_variant, reason = "boxed in Expr")]
pub(crate) enum ConvertExpr {
    /// `$convert` or a `$to…` shorthand (no `onError`, no `onNull`).
    Convert {
        /// `$convert` or the shorthand's name, for errors.
        op: &'static str,
        input: Expr,
        to: To,
        on_error: Option<Expr>,
        on_null: Option<Expr>,
    },
    /// `$type`.
    Type(Expr),
    /// `$isNumber`.
    IsNumber(Expr),
}

/// Parses a conversion operator (`None` for another operator).
///
/// # Errors
/// `FailedToParse` for a `$convert` that is not an object, an unknown argument, or no
/// `input` / `to`; a constant `to` that is no type (see [`Kind::of`]); MongoDB's 16020 for
/// a shorthand given other than one operand.
pub(super) fn parse(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    let shorthand = |op: &'static str, kind: Kind| -> Result<ConvertExpr> {
        let [input] = args::exactly::<1>(op, arg, target)?;
        Ok(ConvertExpr::Convert {
            op,
            input,
            to: To::Const(Some(kind)),
            on_error: None,
            on_null: None,
        })
    };
    let e = match op {
        "$convert" => parse_convert(arg, target)?,
        "$toString" => shorthand("$toString", Kind::String)?,
        "$toInt" => shorthand("$toInt", Kind::Int)?,
        "$toLong" => shorthand("$toLong", Kind::Long)?,
        "$toDouble" => shorthand("$toDouble", Kind::Double)?,
        "$toDecimal" => shorthand("$toDecimal", Kind::Decimal)?,
        "$toBool" => shorthand("$toBool", Kind::Bool)?,
        "$toDate" => shorthand("$toDate", Kind::Date)?,
        "$toObjectId" => shorthand("$toObjectId", Kind::ObjectId)?,
        "$type" => {
            let [x] = args::exactly::<1>(op, arg, target)?;
            ConvertExpr::Type(x)
        }
        "$isNumber" => {
            let [x] = args::exactly::<1>(op, arg, target)?;
            ConvertExpr::IsNumber(x)
        }
        _ => return Ok(None),
    };
    Ok(Some(Expr::Convert(Box::new(e))))
}

fn parse_convert(arg: &Bson, target: &Resolve<'_>) -> Result<ConvertExpr> {
    let failed = |m: String| Error::rejected(ErrorCode::FailedToParse, m);
    let Bson::Document(d) = arg else {
        return Err(failed(format!(
            "$convert expects an object of named arguments but found: {}",
            type_name(Some(arg))
        )));
    };
    if let Some(k) = d
        .keys()
        .find(|k| !["input", "to", "onError", "onNull"].contains(&k.as_str()))
    {
        return Err(failed(format!("$convert found an unknown argument: {k}")));
    }
    let input = d
        .get("input")
        .ok_or_else(|| failed("Missing 'input' parameter to $convert".to_owned()))?;
    let to = d
        .get("to")
        .ok_or_else(|| failed("Missing 'to' parameter to $convert".to_owned()))?;
    let to = match Expr::parse(to, target)? {
        Expr::Literal(v) if !nullish(Some(&v)) => To::Const(
            Kind::of(&v)
                .map_err(|e| e.into_error("", |m| Error::rejected(ErrorCode::BadValue, m)))?,
        ),
        e => To::Dynamic(e),
    };
    Ok(ConvertExpr::Convert {
        op: "$convert",
        input: Expr::parse(input, target)?,
        to,
        on_error: args::optional(d.get("onError"), target)?,
        on_null: args::optional(d.get("onNull"), target)?,
    })
}

impl ConvertExpr {
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(Target, &'a [String])>) {
        match self {
            ConvertExpr::Convert {
                input,
                to,
                on_error,
                on_null,
                ..
            } => {
                input.fields(out);
                if let To::Dynamic(t) = to {
                    t.fields(out);
                }
                on_error.iter().chain(on_null).for_each(|x| x.fields(out));
            }
            ConvertExpr::Type(x) | ConvertExpr::IsNumber(x) => x.fields(out),
        }
    }

    /// # Errors
    /// `ConversionFailure` for a value the target type does not take and no `onError`; a
    /// `to` that is no type (see [`Kind::of`]).
    pub(super) fn eval(
        &self,
        values: &dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Bson>, EvalError> {
        match self {
            ConvertExpr::Type(x) => Ok(Some(Bson::String(
                type_name(value(x, values, vars)?.as_ref()).to_owned(),
            ))),
            ConvertExpr::IsNumber(x) => Ok(Some(Bson::Boolean(
                value(x, values, vars)?
                    .as_ref()
                    .is_some_and(args::is_number),
            ))),
            ConvertExpr::Convert {
                op,
                input,
                to,
                on_error,
                on_null,
            } => {
                let v = value(input, values, vars)?;
                let kind = match to {
                    To::Const(k) => *k,
                    To::Dynamic(t) => match value(t, values, vars)? {
                        t if nullish(t.as_ref()) => return Ok(Some(Bson::Null)),
                        Some(t) => Kind::of(&t)?,
                        None => return Ok(Some(Bson::Null)),
                    },
                };
                let Some(v) = v.filter(|v| !nullish(Some(v))) else {
                    return match on_null {
                        Some(e) => value(e, values, vars),
                        None => Ok(Some(Bson::Null)),
                    };
                };
                let converted = match kind {
                    Some(k) => convert(k, &v),
                    None => Err(unsupported(&v, "that type")),
                }
                .map_err(|e| match e {
                    EvalError::Failed(c, m) => EvalError::Failed(c, m.replace("$convert", op)),
                    other => other,
                });
                match (converted, on_error) {
                    (Err(EvalError::Failed(ErrorCode::ConversionFailure, _)), Some(e)) => {
                        value(e, values, vars)
                    }
                    (r, _) => r.map(Some),
                }
            }
        }
    }
}

fn unsupported(v: &Bson, to: &str) -> EvalError {
    EvalError::failed(
        ErrorCode::ConversionFailure,
        format!(
            "Unsupported conversion from {} to {to} in $convert with no onError value",
            type_name(Some(v))
        ),
    )
}

fn unparsable(s: &str, to: Kind, why: &str) -> EvalError {
    EvalError::failed(
        ErrorCode::ConversionFailure,
        format!(
            "Failed to parse {} '{s}' in $convert with no onError value: {why}",
            to.name()
        ),
    )
}

/// A double in `i64`'s range, truncated.
#[expect(clippy::cast_possible_truncation, reason = "checked to be in range")]
fn truncate(d: f64) -> Option<i64> {
    (d.is_finite() && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d))
        .then(|| d.trunc() as i64)
}

/// A decimal's value as a double (its text read back).
fn decimal_f64(d: &Decimal128) -> f64 {
    d.to_string().parse().unwrap_or(f64::NAN)
}

/// A non-null value converted to `to`, by MongoDB's rules.
///
/// # Errors
/// `ConversionFailure` for a value `to` does not take.
#[expect(
    clippy::cast_precision_loss,
    reason = "MongoDB's conversions to double"
)]
pub(super) fn convert(to: Kind, v: &Bson) -> std::result::Result<Bson, EvalError> {
    let overflow = |what: &str| {
        EvalError::failed(
            ErrorCode::ConversionFailure,
            format!(
                "Conversion would overflow target type in $convert with no onError value: \
                 {what}"
            ),
        )
    };
    let whole = |d: f64| truncate(d).ok_or_else(|| overflow(&d.to_string()));
    Ok(match (to, v) {
        (Kind::Double, Bson::Double(d)) => Bson::Double(*d),
        (Kind::Double, Bson::Int32(n)) => Bson::Double(f64::from(*n)),
        (Kind::Double, Bson::Int64(n)) => Bson::Double(*n as f64),
        (Kind::Double, Bson::Decimal128(d)) => Bson::Double(decimal_f64(d)),
        (Kind::Double, Bson::Boolean(b)) => Bson::Double(f64::from(u8::from(*b))),
        (Kind::Double, Bson::DateTime(t)) => Bson::Double(t.timestamp_millis() as f64),
        (Kind::Double, Bson::String(s)) => {
            let d: f64 = s
                .parse()
                .map_err(|_| unparsable(s, to, "Did not consume whole string."))?;
            if d.is_infinite() && !s.to_ascii_lowercase().contains("inf") {
                return Err(overflow(s));
            }
            Bson::Double(d)
        }
        (Kind::Int | Kind::Long, _) => {
            let n: i64 = match v {
                Bson::Int32(n) => i64::from(*n),
                Bson::Int64(n) => *n,
                Bson::Double(d) => whole(*d)?,
                Bson::Decimal128(d) => whole(decimal_f64(d))?,
                Bson::Boolean(b) => i64::from(*b),
                Bson::DateTime(t) if to == Kind::Long => t.timestamp_millis(),
                Bson::String(s) => s
                    .parse()
                    .map_err(|_| unparsable(s, to, "Did not consume whole string."))?,
                other => return Err(unsupported(other, to.name())),
            };
            if to == Kind::Int {
                Bson::Int32(i32::try_from(n).map_err(|_| overflow(&n.to_string()))?)
            } else {
                Bson::Int64(n)
            }
        }
        (Kind::Decimal, _) => {
            let text = match v {
                Bson::Decimal128(d) => return Ok(Bson::Decimal128(*d)),
                Bson::Int32(n) => n.to_string(),
                Bson::Int64(n) => n.to_string(),
                // MongoDB converts a double to its 15 significant digits.
                Bson::Double(d) if d.is_nan() => "NaN".to_owned(),
                Bson::Double(d) if d.is_infinite() => {
                    if *d > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
                }
                Bson::Double(d) => format!("{d:.14e}"),
                Bson::Boolean(b) => u8::from(*b).to_string(),
                Bson::DateTime(t) => t.timestamp_millis().to_string(),
                Bson::String(s) => s.clone(),
                other => return Err(unsupported(other, to.name())),
            };
            Bson::Decimal128(
                text.parse::<Decimal128>()
                    .map_err(|_| unparsable(&text, to, "not a decimal number"))?,
            )
        }
        (Kind::Bool, _) => Bson::Boolean(match v {
            Bson::Boolean(b) => *b,
            Bson::Int32(n) => *n != 0,
            Bson::Int64(n) => *n != 0,
            Bson::Double(d) => *d != 0.0,
            Bson::Decimal128(d) => decimal_f64(d) != 0.0,
            _ => true,
        }),
        (Kind::String, _) => Bson::String(match v {
            Bson::String(s) => s.clone(),
            Bson::Boolean(b) => b.to_string(),
            Bson::ObjectId(o) => o.to_hex(),
            other => scalar_string(other).ok_or_else(|| unsupported(other, "string"))?,
        }),
        (Kind::ObjectId, Bson::ObjectId(o)) => Bson::ObjectId(*o),
        (Kind::ObjectId, Bson::String(s)) => Bson::ObjectId(
            ObjectId::parse_str(s).map_err(|_| unparsable(s, to, "not 24 hexadecimal digits"))?,
        ),
        (Kind::Date, Bson::DateTime(t)) => Bson::DateTime(*t),
        (Kind::Date, Bson::Int64(n)) => Bson::DateTime(DateTime::from_millis(*n)),
        (Kind::Date, Bson::Double(d)) => Bson::DateTime(DateTime::from_millis(whole(*d)?)),
        (Kind::Date, Bson::Decimal128(d)) => {
            Bson::DateTime(DateTime::from_millis(whole(decimal_f64(d))?))
        }
        (Kind::Date, Bson::ObjectId(o)) => Bson::DateTime(o.timestamp()),
        (Kind::Date, Bson::Timestamp(t)) => {
            Bson::DateTime(DateTime::from_millis(i64::from(t.time) * 1000))
        }
        (Kind::Date, Bson::String(s)) => Bson::DateTime(DateTime::from_millis(
            iso_date(s).ok_or_else(|| unparsable(s, to, "not an ISO-8601 date"))?,
        )),
        (_, other) => return Err(unsupported(other, to.name())),
    })
}

/// An ISO-8601 date as ms since the epoch: `YYYY-MM-DD`, optionally followed (after `T` or a
/// space) by `HH:MM`, `:SS`, a fraction of a second, and `Z` or an offset (`±HH:MM`,
/// `±HHMM`, `±HH`); without a zone the time is UTC, as MongoDB takes it.
fn iso_date(s: &str) -> Option<i64> {
    fn num(s: &str, at: usize, len: usize) -> Option<i64> {
        let part = s.get(at..at + len)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    }
    let b = s.as_bytes();
    let (y, m, d) = (num(s, 0, 4)?, num(s, 5, 2)?, num(s, 8, 2)?);
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !(1..=12).contains(&m) {
        return None;
    }
    let days = crate::mql::dates::days_from_civil(y, m, d);
    if crate::mql::dates::civil_from_days(days) != (y, m, d) {
        return None;
    }
    let mut ms = days * 86_400_000;
    let mut at = 10;
    if at < b.len() {
        if !matches!(b[at], b'T' | b' ') {
            return None;
        }
        let (h, mi) = (num(s, at + 1, 2)?, num(s, at + 4, 2)?);
        if b.get(at + 3) != Some(&b':') || h > 23 || mi > 59 {
            return None;
        }
        ms += h * 3_600_000 + mi * 60_000;
        at += 6;
        if b.get(at) == Some(&b':') {
            let sec = num(s, at + 1, 2)?;
            if sec > 59 {
                return None;
            }
            ms += sec * 1000;
            at += 3;
            if b.get(at) == Some(&b'.') {
                let digits = b[at + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                if digits == 0 {
                    return None;
                }
                let frac = &s[at + 1..at + 1 + digits.min(3)];
                ms += frac.parse::<i64>().ok()? * 10_i64.pow(3 - u32::try_from(frac.len()).ok()?);
                at += 1 + digits;
            }
        }
        match b.get(at) {
            None => {}
            Some(b'Z') if at + 1 == b.len() => {}
            Some(&sign @ (b'+' | b'-')) => {
                let rest = &s[at + 1..];
                let (oh, om) = match rest.len() {
                    2 => (num(rest, 0, 2)?, 0),
                    4 => (num(rest, 0, 2)?, num(rest, 2, 2)?),
                    5 if rest.as_bytes()[2] == b':' => (num(rest, 0, 2)?, num(rest, 3, 2)?),
                    _ => return None,
                };
                let offset = oh * 3_600_000 + om * 60_000;
                ms += if sign == b'+' { -offset } else { offset };
            }
            _ => return None,
        }
    }
    Some(ms)
}

/// A number, decimal or date as text (`None` for another type): numbers as MongoDB writes
/// them, dates as ISO-8601 with milliseconds in UTC.
fn scalar_string(v: &Bson) -> Option<String> {
    Some(match v {
        Bson::Int32(n) => n.to_string(),
        Bson::Int64(n) => n.to_string(),
        Bson::Double(d) => double_string(*d),
        Bson::Decimal128(d) => d.to_string(),
        Bson::DateTime(t) => date_string(t.timestamp_millis()),
        _ => return None,
    })
}

/// A double as MongoDB writes it: `NaN`, `Infinity`, `-Infinity`, a whole value without a
/// fraction, else the shortest text that reads back as the same double (in exponent form
/// from 1e16, or below 1e-4).
fn double_string(d: f64) -> String {
    if d.is_nan() {
        return "NaN".to_owned();
    }
    if d.is_infinite() {
        return if d > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    let a = d.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        // Rust writes 1e20 and 1e-7; MongoDB 1e+20 and 1e-07.
        let e = format!("{d:e}");
        return match e.split_once('e') {
            Some((m, x)) => {
                let (sign, digits) = x.strip_prefix('-').map_or(("+", x), |x| ("-", x));
                format!("{m}e{sign}{digits:0>2}")
            }
            None => e,
        };
    }
    format!("{d}")
}

/// A date (ms since the epoch) as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
fn date_string(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
}

/// A value as the string operators take it (`$substr…`, `$toUpper`, `$toLower`,
/// `$strcasecmp`): null or missing as "", strings and symbols as they are, numbers and dates
/// as text.
///
/// # Errors
/// MongoDB's 16007 for another type.
pub(super) fn coerce_to_string(v: Option<&Bson>) -> std::result::Result<String, EvalError> {
    match v {
        None | Some(Bson::Null | Bson::Undefined) => Ok(String::new()),
        Some(Bson::String(s) | Bson::Symbol(s)) => Ok(s.clone()),
        Some(other) => scalar_string(other).ok_or_else(|| {
            fail(
                16007,
                format!(
                    "can't convert from BSON type {} to String",
                    type_name(Some(other))
                ),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::super::tests::{eval_err, parse_err, value};
    use super::*;

    #[test]
    fn convert_takes_on_error_and_on_null() {
        // The manual's examples.
        assert_eq!(
            value(&doc! { "$convert": { "input": "5.5", "to": "double" } }),
            Some(Bson::Double(5.5))
        );
        assert_eq!(
            value(&doc! { "$convert": { "input": "abc", "to": "int", "onError": "bad" } }),
            Some(Bson::String("bad".into()))
        );
        assert_eq!(
            value(&doc! { "$convert": { "input": null, "to": "int", "onNull": 0 } }),
            Some(Bson::Int32(0))
        );
        assert_eq!(
            value(&doc! { "$convert": { "input": "$missing", "to": 16, "onNull": -1 } }),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            value(&doc! { "$convert": { "input": null, "to": "int" } }),
            Some(Bson::Null)
        );
        assert_eq!(
            value(&doc! { "$convert": { "input": 5, "to": { "$literal": "string" } } }),
            Some(Bson::String("5".into()))
        );
        assert_eq!(
            eval_err(
                &doc! { "$convert": { "input": "abc", "to": "int" } },
                &doc! {}
            ),
            ErrorCode::ConversionFailure
        );
        assert_eq!(
            eval_err(
                &doc! { "$convert": { "input": [1], "to": "object" } },
                &doc! {}
            ),
            ErrorCode::ConversionFailure
        );
        assert_eq!(
            parse_err(&doc! { "$convert": { "input": 1, "to": "nope" } }),
            ErrorCode::BadValue
        );
        assert_eq!(
            parse_err(&doc! { "$convert": { "input": 1, "to": 100 } }),
            ErrorCode::FailedToParse
        );
        assert_eq!(
            parse_err(&doc! { "$convert": { "input": 1 } }),
            ErrorCode::FailedToParse
        );
        assert_eq!(
            parse_err(&doc! { "$convert": { "input": 1, "to": "int", "x": 1 } }),
            ErrorCode::FailedToParse
        );
    }

    #[test]
    fn to_int_and_long_truncate_and_refuse_overflow() {
        assert_eq!(value(&doc! { "$toInt": 5.9 }), Some(Bson::Int32(5)));
        assert_eq!(value(&doc! { "$toInt": -5.9 }), Some(Bson::Int32(-5)));
        assert_eq!(value(&doc! { "$toInt": "100" }), Some(Bson::Int32(100)));
        assert_eq!(value(&doc! { "$toInt": true }), Some(Bson::Int32(1)));
        assert_eq!(value(&doc! { "$toInt": null }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$toInt": "5.5" }, &doc! {}),
            ErrorCode::ConversionFailure
        );
        assert_eq!(
            eval_err(&doc! { "$toInt": 3_000_000_000_i64 }, &doc! {}),
            ErrorCode::ConversionFailure
        );
        assert_eq!(
            eval_err(&doc! { "$toInt": { "$toDate": 0_i64 } }, &doc! {}),
            ErrorCode::ConversionFailure
        );
        assert_eq!(
            value(&doc! { "$toLong": { "$toDate": 1000_i64 } }),
            Some(Bson::Int64(1000))
        );
        assert_eq!(
            eval_err(&doc! { "$toLong": f64::NAN }, &doc! {}),
            ErrorCode::ConversionFailure
        );
    }

    #[test]
    fn to_string_writes_numbers_dates_and_ids() {
        let s = |v: &str| Some(Bson::String(v.to_owned()));
        assert_eq!(value(&doc! { "$toString": 2.5 }), s("2.5"));
        assert_eq!(value(&doc! { "$toString": 3.0 }), s("3"));
        assert_eq!(value(&doc! { "$toString": 1e20 }), s("1e+20"));
        assert_eq!(value(&doc! { "$toString": 1.5e-7 }), s("1.5e-07"));
        assert_eq!(value(&doc! { "$toString": true }), s("true"));
        assert_eq!(
            value(&doc! { "$toString": { "$toDate": 1_234_567_890_123_i64 } }),
            s("2009-02-13T23:31:30.123Z")
        );
        assert_eq!(
            value(&doc! { "$toString": { "$toObjectId": "5ab9cbfa31c2ab715d42129e" } }),
            s("5ab9cbfa31c2ab715d42129e")
        );
        assert_eq!(
            eval_err(&doc! { "$toString": [[1]] }, &doc! {}),
            ErrorCode::ConversionFailure
        );
        assert_eq!(
            eval_err(&doc! { "$toObjectId": "5ab9cbfa" }, &doc! {}),
            ErrorCode::ConversionFailure
        );
    }

    #[test]
    fn to_bool_is_false_only_for_false_and_zero() {
        assert_eq!(value(&doc! { "$toBool": 0 }), Some(Bson::Boolean(false)));
        assert_eq!(value(&doc! { "$toBool": 0.0 }), Some(Bson::Boolean(false)));
        assert_eq!(
            value(&doc! { "$toBool": "false" }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(value(&doc! { "$toBool": "" }), Some(Bson::Boolean(true)));
        assert_eq!(value(&doc! { "$toBool": 5_i64 }), Some(Bson::Boolean(true)));
        assert_eq!(value(&doc! { "$toBool": null }), Some(Bson::Null));
    }

    #[test]
    fn to_decimal_and_double() {
        assert_eq!(
            value(&doc! { "$toDecimal": 2.5 }),
            Some(Bson::Decimal128(
                "2.50000000000000".parse().expect("decimal")
            ))
        );
        assert_eq!(
            value(&doc! { "$toDecimal": 5 }),
            Some(Bson::Decimal128("5".parse().expect("decimal")))
        );
        assert_eq!(
            value(&doc! { "$toDouble": { "$toDecimal": "1.25" } }),
            Some(Bson::Double(1.25))
        );
        assert_eq!(
            value(&doc! { "$toDouble": "-5.5" }),
            Some(Bson::Double(-5.5))
        );
        assert_eq!(
            eval_err(&doc! { "$toDouble": "5x" }, &doc! {}),
            ErrorCode::ConversionFailure
        );
    }

    #[test]
    fn type_and_is_number() {
        let t = |v: Bson| value(&doc! { "$type": [v] });
        assert_eq!(t(Bson::Int32(1)), Some(Bson::String("int".into())));
        assert_eq!(t(Bson::Int64(1)), Some(Bson::String("long".into())));
        assert_eq!(t(Bson::Double(1.0)), Some(Bson::String("double".into())));
        assert_eq!(t(Bson::Null), Some(Bson::String("null".into())));
        assert_eq!(
            value(&doc! { "$type": "$missing" }),
            Some(Bson::String("missing".into()))
        );
        assert_eq!(
            value(&doc! { "$type": { "$literal": [1] } }),
            Some(Bson::String("array".into()))
        );
        assert_eq!(value(&doc! { "$isNumber": 1.5 }), Some(Bson::Boolean(true)));
        assert_eq!(
            value(&doc! { "$isNumber": "1" }),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            value(&doc! { "$isNumber": "$missing" }),
            Some(Bson::Boolean(false))
        );
    }

    #[test]
    fn to_date_reads_iso_dates_with_or_without_a_zone() {
        let date = |ms: i64| Some(Bson::DateTime(DateTime::from_millis(ms)));
        // 2018-03-03 is day 17 593.
        let day = 17_593 * 86_400_000_i64;
        assert_eq!(value(&doc! { "$toDate": "2018-03-03" }), date(day));
        assert_eq!(
            value(&doc! { "$toDate": "2018-03-03T12:30:00Z" }),
            date(day + 45_000_000)
        );
        assert_eq!(
            value(&doc! { "$toDate": "2018-03-03 12:30" }),
            date(day + 45_000_000)
        );
        assert_eq!(
            value(&doc! { "$toDate": "2018-03-03T12:30:05.5+01:00" }),
            date(day + 45_005_500 - 3_600_000)
        );
        assert_eq!(
            value(&doc! { "$toDate": "2018-03-03T12:30:05.123456-0130" }),
            date(day + 45_005_123 + 5_400_000)
        );
        for bad in [
            "2018-02-30",
            "2018-3-3",
            "2018-03-03T25:00",
            "2018-03-03X",
            "2018-03-03T12:30Zx",
            "",
        ] {
            assert_eq!(
                eval_err(&doc! { "$toDate": bad }, &doc! {}),
                ErrorCode::ConversionFailure,
                "{bad}"
            );
        }
    }
}
