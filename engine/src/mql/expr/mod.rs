//! Aggregation expressions: `$expr` in filters, evaluated on each measurement (MongoDB's
//! `{$expr: {$gt: ["$usage_user", "$usage_system"]}}`), and the expressions of pipeline
//! stages. Supported: field paths (`"$a.b"`, the meta field and its sub-fields, the time
//! field), literals and `$literal`, document and array expressions; comparisons `$eq`, `$ne`,
//! `$gt`, `$gte`, `$lt`, `$lte` (BSON order across types, a missing field below every value,
//! as aggregation compares); `$and`, `$or`, `$not`, `$cond`, `$ifNull`; arithmetic `$add`,
//! `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs` on numbers and dates; dates
//! `$dateTrunc`, `$dateAdd`, `$dateSubtract`, `$dateDiff`, the part extractors (`$year` ...
//! `$isoWeek`), `$dateToString`, `$dateToParts`, `$dateFromParts`, `$dateFromString`, in a
//! time zone (`date_ops.rs`); conversions `$toLong`, `$toDouble`,
//! `$toDate`; variables (`$$name`) bound by `$let`. An operand that is null or missing makes
//! the result null. An arithmetic operand that is not a number (or a date where dates are
//! allowed), a division by zero, or a date operator given something other than a date fails
//! the evaluation with MongoDB's code ([`EvalError::Failed`]), as in MongoDB: a pipeline
//! fails naming the stage, a filter fails the query.
//!
//! One file per family of operators: `arith.rs`, `convert.rs`, `date_ops.rs`; `vars.rs`
//! holds the variables in scope.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::compare;

use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Target, Values, field_value, rest_of};

mod arith;
mod convert;
mod date_ops;
mod vars;

pub(crate) use arith::Arith;
use convert::Conversion;
pub(crate) use date_ops::DateExpr;
pub(crate) use vars::Vars;

/// Where a field path of an expression reads: its target and the path inside it.
pub(crate) type Resolve<'a> = dyn Fn(&[String]) -> (Target, Vec<String>) + 'a;

/// A parsed expression.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Expr {
    /// A constant.
    Literal(Bson),
    /// A variable (`$$name`, `$$name.path`): its name and the path inside its value.
    Var(String, Vec<String>),
    /// `$let`: variables bound (each evaluated outside the others), then the expression.
    Let(Vec<(String, Expr)>, Box<Expr>),
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
    /// A date operator.
    Date(DateExpr),
    /// `$toLong`, `$toDouble`, `$toDate`.
    Convert(Conversion, Box<Expr>),
}

/// Why an expression has no value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum EvalError {
    /// A stored value could not be read (corruption).
    Corrupt(String),
    /// The expression fails on these values (a division by zero, `$add` of a string, a date
    /// operator given something else): MongoDB fails the query with this code.
    Failed(ErrorCode, String),
}

impl EvalError {
    pub(crate) fn failed(code: ErrorCode, message: impl Into<String>) -> EvalError {
        EvalError::Failed(code, message.into())
    }

    /// The engine's error for this failure: `Rejected` with its code, the message prefixed
    /// with `context` (the stage or command); a corrupt value through `corrupt`.
    pub(crate) fn into_error(self, context: &str, corrupt: impl FnOnce(String) -> Error) -> Error {
        match self {
            EvalError::Failed(code, m) if context.is_empty() => Error::rejected(code, m),
            EvalError::Failed(code, m) => Error::rejected(code, format!("{context}: {m}")),
            EvalError::Corrupt(m) => corrupt(m),
        }
    }
}

/// A stored value that cannot be read (the `String` errors of [`Values`]).
impl From<String> for EvalError {
    fn from(message: String) -> EvalError {
        EvalError::Corrupt(message)
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Corrupt(m) | EvalError::Failed(_, m) => f.write_str(m),
        }
    }
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

impl Expr {
    /// Parses an expression; `target` says where a field path reads (the meta field, the time
    /// field or a measurement field) and splits the path.
    ///
    /// # Errors
    /// `BadValue` for an operator not supported or the wrong number of operands.
    pub(crate) fn parse(v: &Bson, target: &Resolve<'_>) -> Result<Expr> {
        match v {
            Bson::String(s) if s.starts_with("$$") => {
                let mut parts = s[2..].split('.').map(str::to_owned);
                let name = parts.next().unwrap_or_default();
                let path: Vec<String> = parts.collect();
                if name.is_empty() || path.iter().any(String::is_empty) {
                    return Err(bad(format!("$expr: '{s}' is not a variable")));
                }
                Ok(Expr::Var(name, path))
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
            Expr::Not(a) | Expr::Convert(_, a) => a.fields(out),
            Expr::Date(d) => d.fields(out),
            Expr::Var(..) => {}
            Expr::Let(bound, e) => {
                bound.iter().for_each(|(_, x)| x.fields(out));
                e.fields(out);
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
        self.eval_with(values, &Vars::default())
    }

    /// The expression's value with `vars` bound (`$$name`).
    ///
    /// # Errors
    /// What `values` fails with; MongoDB's 17276 for a variable not bound.
    pub(crate) fn eval_with<'v>(
        &self,
        values: &'v dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Cow<'v, Bson>>, EvalError> {
        Ok(match self {
            Expr::Var(name, path) => {
                let v = vars.get(name).ok_or_else(|| {
                    EvalError::failed(
                        ErrorCode::Location(17276),
                        format!("use of undefined variable: {name}"),
                    )
                })?;
                field_value(Some(Cow::Owned(v.clone())), path).map(|v| Cow::Owned(v.into_owned()))
            }
            Expr::Let(bound, e) => {
                let mut evaluated = Vec::with_capacity(bound.len());
                for (name, x) in bound {
                    let v = x.eval_with(values, vars)?;
                    evaluated.push((name.as_str(), v.map_or(Bson::Null, Cow::into_owned)));
                }
                return eval_bound(e, values, vars, &mut evaluated.into_iter());
            }
            Expr::Literal(b) => Some(Cow::Owned(b.clone())),
            Expr::Field(t, p) => field_value(
                values.root(*t, p).map_err(EvalError::Corrupt)?,
                rest_of(*t, p),
            ),
            Expr::Cmp(op, a, b) => {
                let (a, b) = (a.eval_with(values, vars)?, b.eval_with(values, vars)?);
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
                    if !truthy(x.eval_with(values, vars)?.as_deref()) {
                        all = false;
                        break;
                    }
                }
                Some(Cow::Owned(Bson::Boolean(all)))
            }
            Expr::Or(xs) => {
                let mut any = false;
                for x in xs {
                    if truthy(x.eval_with(values, vars)?.as_deref()) {
                        any = true;
                        break;
                    }
                }
                Some(Cow::Owned(Bson::Boolean(any)))
            }
            Expr::Not(a) => Some(Cow::Owned(Bson::Boolean(!truthy(
                a.eval_with(values, vars)?.as_deref(),
            )))),
            Expr::Arith(op, xs) => {
                let mut args = Vec::with_capacity(xs.len());
                for x in xs {
                    args.push(x.eval_with(values, vars)?.map(Cow::into_owned));
                }
                Some(Cow::Owned(arith::arith(*op, &args)?))
            }
            Expr::Object(fields) => {
                let mut d = Document::new();
                for (k, x) in fields {
                    if let Some(v) = x.eval_with(values, vars)? {
                        d.insert(k.clone(), v.into_owned());
                    }
                }
                Some(Cow::Owned(Bson::Document(d)))
            }
            Expr::Array(xs) => {
                let mut a = Vec::with_capacity(xs.len());
                for x in xs {
                    a.push(
                        x.eval_with(values, vars)?
                            .map_or(Bson::Null, Cow::into_owned),
                    );
                }
                Some(Cow::Owned(Bson::Array(a)))
            }
            Expr::Cond(c, a, b) => {
                if truthy(c.eval_with(values, vars)?.as_deref()) {
                    a.eval_with(values, vars)?
                } else {
                    b.eval_with(values, vars)?
                }
            }
            Expr::IfNull(xs) => {
                let (last, rest) = xs.split_last().ok_or_else(|| {
                    EvalError::failed(ErrorCode::BadValue, "$ifNull needs operands")
                })?;
                for x in rest {
                    if let Some(v) = x.eval_with(values, vars)?
                        && !matches!(v.as_ref(), Bson::Null | Bson::Undefined)
                    {
                        return Ok(Some(v));
                    }
                }
                last.eval_with(values, vars)?
            }
            Expr::Date(d) => d.eval(values, vars)?,
            Expr::Convert(to, x) => Some(Cow::Owned(convert::convert(
                *to,
                x.eval_with(values, vars)?.as_deref(),
            )?)),
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
    if op == "$let" {
        return parse_let(arg, target);
    }
    if let Some(e) = date_ops::parse_named(op, arg, target)? {
        return Ok(Expr::Date(e));
    }
    if op == "$cond"
        && let Bson::Document(args) = arg
    {
        let get = |k: &str| {
            args.get(k)
                .ok_or_else(|| bad(format!("$cond needs '{k}'")))
                .and_then(|v| Expr::parse(v, target))
        };
        return Ok(Expr::Cond(
            Box::new(get("if")?),
            Box::new(get("then")?),
            Box::new(get("else")?),
        ));
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
            return Err(Error::rejected(
                ErrorCode::InvalidPipelineOperator,
                format!(
                    "operator {other} is not supported in an expression (comparisons, $and, $or, \
                 $not, $cond, $ifNull, $add, $subtract, $multiply, $divide, $mod, $abs, \
                 $dateTrunc, $dateAdd, $dateSubtract, $dateDiff, date parts, $dateToString, \
                 $dateToParts, $dateFromParts, $dateFromString, $toLong, \
                 $toDouble, $toDate, $literal are)"
                ),
            ));
        }
    })
}

/// `$let`: `{vars: {name: expression, ...}, in: expression}`.
fn parse_let(arg: &Bson, target: &Resolve<'_>) -> Result<Expr> {
    let Bson::Document(d) = arg else {
        return Err(bad("$let takes a document of 'vars' and 'in'".to_owned()));
    };
    if let Some(k) = d.keys().find(|k| *k != "vars" && *k != "in") {
        return Err(bad(format!("$let: unknown argument '{k}'")));
    }
    let Some(Bson::Document(vars)) = d.get("vars") else {
        return Err(bad("$let needs 'vars', a document".to_owned()));
    };
    let body = d
        .get("in")
        .ok_or_else(|| bad("$let needs 'in'".to_owned()))?;
    let mut bound = Vec::with_capacity(vars.len());
    for (name, v) in vars {
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || !c.is_ascii())
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !valid {
            return Err(Error::rejected(
                ErrorCode::Location(16867),
                format!("$let: '{name}' is not a valid variable name"),
            ));
        }
        bound.push((name.clone(), Expr::parse(v, target)?));
    }
    Ok(Expr::Let(bound, Box::new(Expr::parse(body, target)?)))
}

/// Evaluates `e` with `vars` and then each of `rest` bound.
fn eval_bound<'v>(
    e: &Expr,
    values: &'v dyn Values,
    vars: &Vars<'_>,
    rest: &mut dyn Iterator<Item = (&str, Bson)>,
) -> std::result::Result<Option<Cow<'v, Bson>>, EvalError> {
    match rest.next() {
        None => e.eval_with(values, vars),
        Some((name, v)) => eval_bound(e, values, &vars.with(name, v), rest),
    }
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

pub(super) fn bad(message: String) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}
