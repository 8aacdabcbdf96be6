//! Aggregation expressions: `$expr` in filters, evaluated on each measurement (MongoDB's
//! `{$expr: {$gt: ["$usage_user", "$usage_system"]}}`), and the expressions of pipeline
//! stages. Supported: field paths (`"$a.b"`, the meta field and its sub-fields, the time
//! field), literals and `$literal`, document and array expressions; comparisons `$eq`, `$ne`,
//! `$gt`, `$gte`, `$lt`, `$lte` (BSON order across types, a missing field below every value,
//! as aggregation compares); `$and`, `$or`, `$not`, `$cond`, `$ifNull`, `$switch`;
//! arithmetic, dates in a time zone (`$dateTrunc`, `$dateAdd`, `$dateToString` ...),
//! strings, regular expressions, conversions and arrays (one file per family); variables (`$$name`) bound by `$let`, `$filter`, `$map` and `$reduce`, and the
//! system variables `$$ROOT` / `$$CURRENT` (the whole document, where the values have one:
//! pipeline stages), `$$REMOVE` (missing) and `$$NOW` (resolved when parsed: one date per
//! query). An operand of the wrong type, a division by zero and the like fail the evaluation
//! with MongoDB's code ([`EvalError::Failed`]), as in MongoDB: a pipeline fails naming the
//! stage, a filter fails the query. Constant arguments (a regular expression, a `$convert`
//! target, a date unit) are checked and compiled once, when parsed.
//!
//! One file per family of operators: `arith.rs`, `convert.rs`, `date_ops.rs`, `strings.rs`,
//! `regex.rs`, `arrays.rs`, `switch.rs`; `args.rs` holds what they share (operand counts,
//! named arguments, type names, size limits), `vars.rs` the variables in scope.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::compare;

use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Target, Values, field_value, rest_of};

mod args;
mod arith;
mod arrays;
mod convert;
mod date_ops;
mod regex;
mod strings;
mod switch;
mod vars;

pub(crate) use arith::Arith;
use arrays::ArrayExpr;
use convert::ConvertExpr;
pub(crate) use date_ops::DateExpr;
use regex::RegexExpr;
use strings::StringExpr;
use switch::Switch;
pub(crate) use vars::{Vars, check_name};

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
    /// `$convert`, the `$to…` shorthands, `$type`, `$isNumber`.
    Convert(Box<ConvertExpr>),
    /// `$switch`.
    Switch(Box<Switch>),
    /// A string operator.
    String(Box<StringExpr>),
    /// `$regexMatch`, `$regexFind`, `$regexFindAll`.
    Regex(Box<RegexExpr>),
    /// An array operator.
    ArrayOp(Box<ArrayExpr>),
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

impl EvalError {
    /// The engine's error for a failure on a value at hand (no stored value is decoded:
    /// a meta value, a stage's document): `Rejected` with its code.
    pub(crate) fn into_query_error(self) -> Error {
        self.into_error("", |m| Error::rejected(ErrorCode::InternalError, m))
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
                if name == "NOW" {
                    // One value for the whole query: the expression is parsed once per query.
                    let now = Bson::DateTime(bson::DateTime::now());
                    return Ok(field_value(Some(Cow::Owned(now)), &path)
                        .map_or(Expr::Var("REMOVE".to_owned(), Vec::new()), |v| {
                            Expr::Literal(v.into_owned())
                        }));
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
            Expr::Not(a) => a.fields(out),
            Expr::Date(d) => d.fields(out),
            Expr::Convert(c) => c.fields(out),
            Expr::Switch(c) => c.fields(out),
            Expr::String(c) => c.fields(out),
            Expr::Regex(c) => c.fields(out),
            Expr::ArrayOp(c) => c.fields(out),
            Expr::Var(name, _) if matches!(name.as_str(), "ROOT" | "CURRENT") => {
                out.push((Target::Field, &WHOLE_DOCUMENT));
            }
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
            Expr::Var(name, path) if vars.get(name).is_none() && is_system(name) => {
                match name.as_str() {
                    "REMOVE" => None,
                    _ => field_value(Some(values.document().ok_or_else(no_document)?), path),
                }
            }
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
            Expr::Convert(c) => c.eval(values, vars)?.map(Cow::Owned),
            Expr::Switch(c) => c.eval(values, vars)?,
            Expr::String(c) => c.eval(values, vars)?.map(Cow::Owned),
            Expr::Regex(c) => c.eval(values, vars)?.map(Cow::Owned),
            Expr::ArrayOp(c) => c.eval(values, vars)?.map(Cow::Owned),
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
    for family in [
        switch::parse,
        strings::parse,
        regex::parse,
        convert::parse,
        arrays::parse,
        arith::parse,
    ] {
        if let Some(e) = family(op, arg, target)? {
            return Ok(e);
        }
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
        other => {
            return Err(Error::rejected(
                ErrorCode::InvalidPipelineOperator,
                format!("operator {other} is not supported in an expression ({SUPPORTED} are)"),
            ));
        }
    })
}

/// The operators an expression may use, for the error naming one that is not.
const SUPPORTED: &str = "$literal, $let, $eq, $ne, $gt, $gte, $lt, $lte, $and, $or, $not, \
     $cond, $ifNull, $switch, $add, $subtract, $multiply, $divide, $mod, $abs, $round, $trunc, \
     $ceil, $floor, $sqrt, $pow, $exp, $ln, $log, $log10, $concat, $substrCP, $substrBytes, \
     $substr, $toUpper, $toLower, $split, $trim, $ltrim, $rtrim, $strLenCP, $strLenBytes, \
     $indexOfCP, $strcasecmp, $replaceOne, $replaceAll, $regexMatch, $regexFind, $regexFindAll, $convert, \
     $toString, $toInt, $toLong, $toDouble, $toDecimal, $toBool, $toDate, $toObjectId, $type, \
     $isNumber, $size, $arrayElemAt, $first, $last, $filter, $map, $reduce, $in, $slice, \
     $concatArrays, $isArray, $range, $reverseArray, $dateTrunc, $dateAdd, $dateSubtract, \
     $dateDiff, $dateToString, $dateToParts, $dateFromParts, $dateFromString and the date parts \
     ($year, $month, $dayOfMonth, $dayOfWeek, $dayOfYear, $hour, $minute, $second, \
     $millisecond, $week, $isoWeek, $isoWeekYear, $isoDayOfWeek)";

/// What `$$ROOT` reads, for [`Expr::fields`]: a field named "" stands for the whole
/// document (so a filter reading it is not judged on the meta field alone).
static WHOLE_DOCUMENT: [String; 1] = [String::new()];

/// System variables: `$$ROOT` and `$$CURRENT` (the whole document), `$$REMOVE` (missing).
/// `$$NOW` is resolved when the expression is parsed.
fn is_system(name: &str) -> bool {
    matches!(name, "ROOT" | "CURRENT" | "REMOVE")
}

/// The failure of `$$ROOT` where no whole document is at hand.
fn no_document() -> EvalError {
    EvalError::failed(
        ErrorCode::BadValue,
        "$$ROOT and $$CURRENT (the whole document) can be read by pipeline stages, not by a \
         find filter's $expr or a pipeline's leading $match",
    )
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
        check_name("$let", name)?;
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

/// Whether an unparsed expression reads `$$ROOT` or `$$CURRENT` (outside `$literal`).
pub(crate) fn reads_document(v: &Bson) -> bool {
    match v {
        Bson::String(s) => ["$$ROOT", "$$CURRENT"].iter().any(|r| {
            s.strip_prefix(r)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        }),
        Bson::Array(items) => items.iter().any(reads_document),
        Bson::Document(d) => d.iter().any(|(k, v)| k != "$literal" && reads_document(v)),
        _ => false,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use bson::doc;

    use super::*;

    /// A document as expression values (every path reads it), with `$$ROOT`.
    struct Doc<'a>(&'a Document);

    impl Values for Doc<'_> {
        fn root(&self, _: Target, path: &[String]) -> crate::mql::filter::Got<'_> {
            Ok(path.first().and_then(|f| self.0.get(f)).map(Cow::Borrowed))
        }

        fn document(&self) -> Option<Cow<'_, Bson>> {
            Some(Cow::Owned(Bson::Document(self.0.clone())))
        }
    }

    /// Values without a whole document (a find filter's).
    struct NoDoc;

    impl Values for NoDoc {
        fn root(&self, _: Target, _: &[String]) -> crate::mql::filter::Got<'_> {
            Ok(None)
        }
    }

    fn parse(e: &Document) -> Result<Expr> {
        let target = |path: &[String]| (Target::Field, path.to_vec());
        Expr::parse(&Bson::Document(e.clone()), &target)
    }

    /// The value of expression `e` on `d` (`None`: missing); panics on an error.
    pub(crate) fn eval(e: &Document, d: &Document) -> Option<Bson> {
        let e = parse(e).expect("parses");
        e.eval(&Doc(d)).expect("evaluates").map(Cow::into_owned)
    }

    /// The code `e` fails with on `d`; panics when it parses badly or succeeds.
    pub(crate) fn eval_err(e: &Document, d: &Document) -> ErrorCode {
        let e = parse(e).expect("parses");
        match e.eval(&Doc(d)) {
            Err(EvalError::Failed(code, _)) => code,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    /// The code parsing `e` fails with; panics when it parses.
    pub(crate) fn parse_err(e: &Document) -> ErrorCode {
        match parse(e) {
            Err(e) => e.code(),
            Ok(x) => panic!("expected a parse error, got {x:?}"),
        }
    }

    /// The value of `e` on an empty document.
    pub(crate) fn value(e: &Document) -> Option<Bson> {
        eval(e, &doc! {})
    }

    #[test]
    fn every_operator_lists_the_fields_it_reads() {
        // Each operator reads its own field, named after it; a query reads only those.
        let cases = [
            (
                doc! { "$switch": { "branches": [{ "case": "$c1", "then": "$c2" }], "default": "$c3" } },
                vec!["c1", "c2", "c3"],
            ),
            (doc! { "$concat": ["$s1", "x", "$s2"] }, vec!["s1", "s2"]),
            (
                doc! { "$substrCP": ["$s1", "$s2", "$s3"] },
                vec!["s1", "s2", "s3"],
            ),
            (
                doc! { "$trim": { "input": "$s1", "chars": "$s2" } },
                vec!["s1", "s2"],
            ),
            (
                doc! { "$indexOfCP": ["$s1", "$s2", "$s3", "$s4"] },
                vec!["s1", "s2", "s3", "s4"],
            ),
            (
                doc! { "$replaceAll": { "input": "$s1", "find": "$s2", "replacement": "$s3" } },
                vec!["s1", "s2", "s3"],
            ),
            (
                doc! { "$regexFind": { "input": "$r1", "regex": "a" } },
                vec!["r1"],
            ),
            (
                doc! { "$regexMatch": { "input": "$r1", "regex": "$r2", "options": "$r3" } },
                vec!["r1", "r2", "r3"],
            ),
            (
                doc! { "$convert": { "input": "$v1", "to": "$v2", "onError": "$v3", "onNull": "$v4" } },
                vec!["v1", "v2", "v3", "v4"],
            ),
            (doc! { "$type": "$v1" }, vec!["v1"]),
            (doc! { "$round": ["$n1", "$n2"] }, vec!["n1", "n2"]),
            (doc! { "$pow": ["$n1", "$n2"] }, vec!["n1", "n2"]),
            (
                doc! { "$filter": { "input": "$a1", "cond": { "$gt": ["$$this", "$a2"] }, "limit": "$a3" } },
                vec!["a1", "a2", "a3"],
            ),
            (
                doc! { "$map": { "input": "$a1", "in": { "$add": ["$$this", "$a2"] } } },
                vec!["a1", "a2"],
            ),
            (
                doc! { "$reduce": { "input": "$a1", "initialValue": "$a2", "in": "$a3" } },
                vec!["a1", "a2", "a3"],
            ),
            (
                doc! { "$slice": ["$a1", "$a2", "$a3"] },
                vec!["a1", "a2", "a3"],
            ),
            (doc! { "$range": ["$a1", "$a2"] }, vec!["a1", "a2"]),
            (doc! { "$in": ["$a1", "$a2"] }, vec!["a1", "a2"]),
        ];
        for (e, want) in cases {
            let parsed = parse(&e).expect("parses");
            let mut got = Vec::new();
            parsed.fields(&mut got);
            let mut got: Vec<&str> = got.iter().map(|(_, p)| p[0].as_str()).collect();
            got.sort_unstable();
            got.dedup();
            assert_eq!(got, want, "{e}");
        }
    }

    #[test]
    fn system_variables() {
        let d = doc! { "a": 1, "b": { "c": 2 } };
        assert_eq!(eval(&doc! { "$literal": 0 }, &d), Some(Bson::Int32(0)));
        let root = Expr::parse(&Bson::String("$$ROOT".into()), &|p: &[String]| {
            (Target::Field, p.to_vec())
        })
        .expect("parses");
        assert_eq!(
            root.eval(&Doc(&d)).expect("evaluates").map(Cow::into_owned),
            Some(Bson::Document(d.clone()))
        );
        assert_eq!(
            eval(&doc! { "$add": ["$$CURRENT.b.c", 1] }, &d),
            Some(Bson::Int32(3))
        );
        // $$REMOVE is missing: a document field set to it is left out.
        assert_eq!(
            eval(
                &doc! { "$cond": [true, { "x": "$$REMOVE", "y": 1 }, 0] },
                &d
            ),
            Some(Bson::Document(doc! { "y": 1 }))
        );
        // $$NOW is one date for the whole expression.
        let now = eval(&doc! { "$eq": ["$$NOW", "$$NOW"] }, &d);
        assert_eq!(now, Some(Bson::Boolean(true)));
        assert!(matches!(
            eval(&doc! { "$ifNull": ["$$NOW", 0] }, &d),
            Some(Bson::DateTime(_))
        ));
        // Without a document at hand, $$ROOT fails.
        let e = parse(&doc! { "$eq": ["$$ROOT", 1] }).expect("parses");
        assert!(matches!(
            e.eval(&NoDoc),
            Err(EvalError::Failed(ErrorCode::BadValue, _))
        ));
        assert!(reads_document(&Bson::Document(
            doc! { "$eq": ["$$ROOT.a", 1] }
        )));
        assert!(!reads_document(&Bson::Document(
            doc! { "$literal": "$$ROOT" }
        )));
        assert!(!reads_document(&Bson::String("$$ROOTS".into())));
    }
}
