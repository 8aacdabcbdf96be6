//! Helpers shared by the operator families: the operands of an operator (an array, or one
//! value), the named arguments of an object-form operator (`{input: ..., as: ...}`), and the
//! owned value of a sub-expression.

use bson::Bson;

use super::{EvalError, Expr, Resolve, Vars};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::Values;

/// The operands of `arg`: the elements of an array, or `arg` itself.
///
/// # Errors
/// What parsing an operand fails with.
pub(super) fn operands(arg: &Bson, target: &Resolve<'_>) -> Result<Vec<Expr>> {
    match arg {
        Bson::Array(items) => items.iter().map(|i| Expr::parse(i, target)).collect(),
        one => Ok(vec![Expr::parse(one, target)?]),
    }
}

/// Exactly `N` operands of `op`.
///
/// # Errors
/// MongoDB's 16020 (`Expression $op takes exactly N arguments`) for another count.
pub(super) fn exactly<const N: usize>(
    op: &str,
    arg: &Bson,
    target: &Resolve<'_>,
) -> Result<[Expr; N]> {
    let args = operands(arg, target)?;
    let n = args.len();
    args.try_into().map_err(|_| {
        Error::rejected(
            ErrorCode::Location(16020),
            format!("Expression {op} takes exactly {N} arguments. {n} were passed in."),
        )
    })
}

/// Between `min` and `max` operands of `op`.
///
/// # Errors
/// MongoDB's 28667 for another count.
pub(super) fn between(
    op: &str,
    arg: &Bson,
    target: &Resolve<'_>,
    min: usize,
    max: usize,
) -> Result<Vec<Expr>> {
    let args = operands(arg, target)?;
    if args.len() < min || args.len() > max {
        return Err(Error::rejected(
            ErrorCode::Location(28667),
            format!(
                "Expression {op} takes at least {min} arguments, and at most {max}, but {} were \
                 passed in.",
                args.len()
            ),
        ));
    }
    Ok(args)
}

/// The raw named arguments of an object-form operator, in the order of `known` (`None`: not
/// given).
///
/// # Errors
/// `Location(codes.0)` when `arg` is not a document, `Location(codes.1)` for an argument
/// not in `known`.
pub(super) fn named<'a>(
    op: &str,
    arg: &'a Bson,
    known: &[&str],
    codes: (u32, u32),
) -> Result<Vec<Option<&'a Bson>>> {
    let Bson::Document(d) = arg else {
        return Err(Error::rejected(
            ErrorCode::Location(codes.0),
            format!("{op} requires an object as an argument, found: {arg}"),
        ));
    };
    if let Some(k) = d.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(Error::rejected(
            ErrorCode::Location(codes.1),
            format!("{op} found an unknown argument: {k}"),
        ));
    }
    Ok(known.iter().map(|k| d.get(*k)).collect())
}

/// A required named argument, parsed.
///
/// # Errors
/// `Location(code)` when it is missing; what parsing it fails with.
pub(super) fn required(
    op: &str,
    name: &str,
    raw: Option<&Bson>,
    code: u32,
    target: &Resolve<'_>,
) -> Result<Expr> {
    match raw {
        Some(v) => Expr::parse(v, target),
        None => Err(Error::rejected(
            ErrorCode::Location(code),
            format!("{op} requires '{name}' to be specified"),
        )),
    }
}

/// An optional named argument, parsed.
///
/// # Errors
/// What parsing it fails with.
pub(super) fn optional(raw: Option<&Bson>, target: &Resolve<'_>) -> Result<Option<Expr>> {
    raw.map(|v| Expr::parse(v, target)).transpose()
}

/// The owned value of `e` (`None`: missing).
///
/// # Errors
/// What evaluating `e` fails with.
pub(super) fn value(
    e: &Expr,
    values: &dyn Values,
    vars: &Vars<'_>,
) -> std::result::Result<Option<Bson>, EvalError> {
    Ok(e.eval_with(values, vars)?.map(std::borrow::Cow::into_owned))
}

/// Whether a value counts as null for the operators that return null on a null operand
/// (null, undefined, or missing).
pub(super) fn nullish(v: Option<&Bson>) -> bool {
    matches!(v, None | Some(Bson::Null | Bson::Undefined))
}

/// A failure with MongoDB's numbered assertion `code`.
pub(super) fn fail(code: u32, message: impl Into<String>) -> EvalError {
    EvalError::failed(ErrorCode::Location(code), message)
}

/// MongoDB's name of a value's type, as `$type` returns it (`"missing"` for a missing
/// value).
pub(super) fn type_name(v: Option<&Bson>) -> &'static str {
    match v {
        None => "missing",
        Some(v) => match v {
            Bson::Double(_) => "double",
            Bson::String(_) => "string",
            Bson::Document(_) => "object",
            Bson::Array(_) => "array",
            Bson::Binary(_) => "binData",
            Bson::Undefined => "undefined",
            Bson::ObjectId(_) => "objectId",
            Bson::Boolean(_) => "bool",
            Bson::DateTime(_) => "date",
            Bson::Null => "null",
            Bson::RegularExpression(_) => "regex",
            Bson::DbPointer(_) => "dbPointer",
            Bson::JavaScriptCode(_) => "javascript",
            Bson::Symbol(_) => "symbol",
            Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
            Bson::Int32(_) => "int",
            Bson::Timestamp(_) => "timestamp",
            Bson::Int64(_) => "long",
            Bson::Decimal128(_) => "decimal",
            Bson::MinKey => "minKey",
            Bson::MaxKey => "maxKey",
        },
    }
}

/// A number as a whole 32-bit value, as MongoDB's index and count operands must be
/// (an integral double is taken).
pub(super) fn int32(v: &Bson) -> Option<i32> {
    crate::mql::filter::exact_int(v).and_then(|n| i32::try_from(n).ok())
}

/// Whether `v` is a number (int, long, double, decimal).
pub(super) fn is_number(v: &Bson) -> bool {
    matches!(
        v,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    )
}

/// The most bytes a value built by an expression may take, as [`approx_size`] counts them
/// (MongoDB's 100 MiB of `internalQueryMaxRangeBytes`, also applied to `$concat`,
/// `$replaceAll`, `$concatArrays` and the value `$reduce` accumulates, which could otherwise
/// double at each step).
pub(super) const VALUE_LIMIT: usize = 100 << 20;

/// About how many bytes `v` takes in memory: the size of a `Bson` a value, plus the bytes
/// of its strings and keys. Counting stops once past `limit`.
pub(super) fn approx_size(v: &Bson, limit: usize) -> usize {
    fn walk(v: &Bson, total: &mut usize, limit: usize) {
        *total += size_of::<Bson>();
        if *total > limit {
            return;
        }
        match v {
            Bson::String(s) | Bson::Symbol(s) | Bson::JavaScriptCode(s) => *total += s.len(),
            Bson::Array(a) => {
                for e in a {
                    walk(e, total, limit);
                    if *total > limit {
                        return;
                    }
                }
            }
            Bson::Document(d) => {
                for (k, e) in d {
                    *total += k.len();
                    walk(e, total, limit);
                    if *total > limit {
                        return;
                    }
                }
            }
            Bson::Binary(b) => *total += b.bytes.len(),
            _ => {}
        }
    }
    let mut total = 0;
    walk(v, &mut total, limit);
    total
}

/// Fails when `bytes` is past [`VALUE_LIMIT`].
///
/// # Errors
/// `ExceededMemoryLimit` naming `op`.
pub(super) fn within_limit(op: &str, bytes: usize) -> std::result::Result<(), EvalError> {
    if bytes > VALUE_LIMIT {
        return Err(EvalError::failed(
            ErrorCode::ExceededMemoryLimit,
            format!(
                "{op} would use too much memory ({bytes} bytes or more); the limit is \
                 {VALUE_LIMIT} bytes"
            ),
        ));
    }
    Ok(())
}
