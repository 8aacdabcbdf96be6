//! `$expr` in filters: aggregation expressions evaluated on each measurement (MongoDB's
//! `{$expr: {$gt: ["$usage_user", "$usage_system"]}}`). Supported: field paths (`"$a.b"`, the
//! meta field and its sub-fields, the time field), literals and `$literal`; comparisons
//! `$eq`, `$ne`, `$gt`, `$gte`, `$lt`, `$lte` (BSON order across types, a missing field below
//! every value, as aggregation compares); `$and`, `$or`, `$not`; arithmetic `$add`,
//! `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs` on numbers and dates. An arithmetic
//! operand that is null or missing makes the result null; one that is not a number (or a
//! date where dates are allowed), or a division by zero, also gives null here, where MongoDB
//! fails the query.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::compare;

use crate::error::{Error, ErrorCode, Result};
use crate::filter::{Target, Values};

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
            Bson::Document(_) | Bson::Array(_) => Err(bad(
                "$expr: document and array expressions are not supported; use $literal".to_owned(),
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
            Expr::Not(a) => a.fields(out),
            Expr::And(xs) | Expr::Or(xs) | Expr::Arith(_, xs) => {
                xs.iter().for_each(|x| x.fields(out));
            }
        }
    }

    /// The expression's value (`None`: missing).
    ///
    /// # Errors
    /// What `values` fails with.
    pub(crate) fn eval<'v>(
        &self,
        values: &'v dyn Values,
    ) -> std::result::Result<Option<Cow<'v, Bson>>, String> {
        Ok(match self {
            Expr::Literal(b) => Some(Cow::Owned(b.clone())),
            Expr::Field(t, p) => values.get(*t, p)?,
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
                Some(Cow::Owned(arith(*op, &args)))
            }
        })
    }

    /// Whether the expression, as a filter, holds (its value is true by aggregation's
    /// rules: not false, 0, null or missing).
    ///
    /// # Errors
    /// What `values` fails with.
    pub(crate) fn holds(&self, values: &dyn Values) -> std::result::Result<bool, String> {
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
        other => {
            return Err(bad(format!(
                "$expr: operator {other} is not supported (comparisons, $and, $or, $not, \
                 $add, $subtract, $multiply, $divide, $mod, $abs, $literal are)"
            )));
        }
    })
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
fn arith(op: Arith, args: &[Option<Bson>]) -> Bson {
    if args
        .iter()
        .any(|a| matches!(a, None | Some(Bson::Null | Bson::Undefined)))
    {
        return Bson::Null;
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
                    _ => return Bson::Null,
                }
            }
            match date {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(t) => Bson::DateTime(DateTime::from_millis(match sum {
                    Num::Int(n) => t.saturating_add(n),
                    Num::Float(d) => t.saturating_add(d.round() as i64),
                })),
                None => sum.bson(),
            }
        }
        Arith::Multiply => {
            let mut product = Num::Int(1);
            for v in values {
                match Num::of(v) {
                    Some(n) => product = product.apply(n, i64::checked_mul, |a, b| a * b),
                    None => return Bson::Null,
                }
            }
            product.bson()
        }
        Arith::Subtract => match (values[0], values[1]) {
            (Bson::DateTime(a), Bson::DateTime(b)) => {
                Bson::Int64(a.timestamp_millis().saturating_sub(b.timestamp_millis()))
            }
            (Bson::DateTime(a), b) => match Num::of(b) {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(n) => Bson::DateTime(DateTime::from_millis(match n {
                    Num::Int(n) => a.timestamp_millis().saturating_sub(n),
                    Num::Float(d) => a.timestamp_millis().saturating_sub(d.round() as i64),
                })),
                None => Bson::Null,
            },
            (a, b) => match (Num::of(a), Num::of(b)) {
                (Some(a), Some(b)) => a.apply(b, i64::checked_sub, |a, b| a - b).bson(),
                _ => Bson::Null,
            },
        },
        Arith::Divide => match (Num::of(values[0]), Num::of(values[1])) {
            (Some(a), Some(b)) if b.float() != 0.0 => Bson::Double(a.float() / b.float()),
            _ => Bson::Null,
        },
        Arith::Mod => match (Num::of(values[0]), Num::of(values[1])) {
            (Some(Num::Int(a)), Some(Num::Int(b))) if b != 0 => Num::Int(a.wrapping_rem(b)).bson(),
            (Some(a), Some(b)) if b.float() != 0.0 => Bson::Double(a.float() % b.float()),
            _ => Bson::Null,
        },
        Arith::Abs => match Num::of(values[0]) {
            Some(Num::Int(n)) => n
                .checked_abs()
                .map_or(Bson::Double((n as f64).abs()), |a| Num::Int(a).bson()),
            Some(Num::Float(d)) => Bson::Double(d.abs()),
            None => Bson::Null,
        },
    }
}

fn bad(message: String) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}
