//! Array expressions: `$size`, `$arrayElemAt`, `$first`, `$last`, `$filter`, `$map`,
//! `$reduce`, `$in`, `$slice`, `$concatArrays`, `$isArray`, `$range`, `$reverseArray`.
//! `$filter` and `$map` bind their `as` variable (default `this`), `$reduce` binds `value`
//! and `this`, around their sub-expressions. A null or missing array makes the result null
//! (except `$size`, `$in` and `$range`, which fail as MongoDB's do); `$range` is capped at
//! MongoDB's 100 MiB.

use std::cmp::Ordering;

use bson::Bson;
use tscoll_catalog::value::compare;

use super::args::{self, fail, nullish, type_name, value};
use super::{EvalError, Expr, Resolve, Vars, check_name, truthy};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Target, Values};

/// The most bytes `$range` may build (MongoDB's `internalQueryMaxRangeBytes`), counted as
/// MongoDB does: 16 bytes an element.
const RANGE_LIMIT_BYTES: i64 = 100 << 20;

/// An array operator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ArrayExpr {
    /// `$size`.
    Size(Expr),
    /// `$arrayElemAt`: array, index.
    ElemAt([Expr; 2]),
    /// `$first` (`last` false) or `$last`.
    End { last: bool, arg: Expr },
    /// `$filter`.
    Filter {
        input: Expr,
        name: String,
        cond: Expr,
        limit: Option<Expr>,
    },
    /// `$map`.
    Map {
        input: Expr,
        name: String,
        each: Expr,
    },
    /// `$reduce`.
    Reduce {
        input: Expr,
        initial: Expr,
        each: Expr,
    },
    /// `$in`: value, array.
    In([Expr; 2]),
    /// `$slice`: array, then `n` or `position, n`.
    Slice(Vec<Expr>),
    /// `$concatArrays`.
    Concat(Vec<Expr>),
    /// `$isArray`.
    IsArray(Expr),
    /// `$range`: start, end, optional step.
    Range(Vec<Expr>),
    /// `$reverseArray`.
    Reverse(Expr),
}

/// Parses an array operator (`None` for another operator).
///
/// # Errors
/// MongoDB's 16020 / 28667 for a wrong operand count; for `$filter` 28646 (not an object),
/// 28647 (an unknown argument), 28648 / 28650 (no `input` / `cond`); for `$map` 16878,
/// 16879, 16880 / 16882 (no `input` / `in`); for `$reduce` 40075, 40076, 40077 / 40078 /
/// 40079 (no `input` / `initialValue` / `in`); 16867 for an `as` that is not a valid
/// variable name.
pub(super) fn parse(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    let one = |arg: &Bson| -> Result<Expr> {
        let [a] = args::exactly::<1>(op, arg, target)?;
        Ok(a)
    };
    let e = match op {
        "$size" => ArrayExpr::Size(one(arg)?),
        "$arrayElemAt" => ArrayExpr::ElemAt(args::exactly::<2>(op, arg, target)?),
        "$first" | "$last" => ArrayExpr::End {
            last: op == "$last",
            arg: one(arg)?,
        },
        "$filter" => {
            let raw = args::named(op, arg, &["input", "as", "cond", "limit"], (28646, 28647))?;
            ArrayExpr::Filter {
                input: args::required(op, "input", raw[0], 28648, target)?,
                name: variable(op, raw[1])?,
                cond: args::required(op, "cond", raw[2], 28650, target)?,
                limit: args::optional(raw[3], target)?,
            }
        }
        "$map" => {
            let raw = args::named(op, arg, &["input", "as", "in"], (16878, 16879))?;
            ArrayExpr::Map {
                input: args::required(op, "input", raw[0], 16880, target)?,
                name: variable(op, raw[1])?,
                each: args::required(op, "in", raw[2], 16882, target)?,
            }
        }
        "$reduce" => {
            let raw = args::named(op, arg, &["input", "initialValue", "in"], (40075, 40076))?;
            ArrayExpr::Reduce {
                input: args::required(op, "input", raw[0], 40077, target)?,
                initial: args::required(op, "initialValue", raw[1], 40078, target)?,
                each: args::required(op, "in", raw[2], 40079, target)?,
            }
        }
        "$in" => ArrayExpr::In(args::exactly::<2>(op, arg, target)?),
        "$slice" => ArrayExpr::Slice(args::between(op, arg, target, 2, 3)?),
        "$concatArrays" => ArrayExpr::Concat(args::operands(arg, target)?),
        "$isArray" => ArrayExpr::IsArray(one(arg)?),
        "$range" => ArrayExpr::Range(args::between(op, arg, target, 2, 3)?),
        "$reverseArray" => ArrayExpr::Reverse(one(arg)?),
        _ => return Ok(None),
    };
    Ok(Some(Expr::ArrayOp(Box::new(e))))
}

/// The `as` variable of `$filter` / `$map` (`this` when not given).
fn variable(op: &str, raw: Option<&Bson>) -> Result<String> {
    let name = match raw {
        None => return Ok("this".to_owned()),
        Some(Bson::String(s)) => s,
        Some(other) => {
            return Err(Error::rejected(
                ErrorCode::Location(16866),
                format!(
                    "{op}: 'as' must be a string, not {}",
                    type_name(Some(other))
                ),
            ));
        }
    };
    check_name(op, name)?;
    Ok(name.clone())
}

impl ArrayExpr {
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(Target, &'a [String])>) {
        match self {
            ArrayExpr::Size(x)
            | ArrayExpr::End { arg: x, .. }
            | ArrayExpr::IsArray(x)
            | ArrayExpr::Reverse(x) => x.fields(out),
            ArrayExpr::ElemAt(xs) | ArrayExpr::In(xs) => xs.iter().for_each(|x| x.fields(out)),
            ArrayExpr::Slice(xs) | ArrayExpr::Concat(xs) | ArrayExpr::Range(xs) => {
                xs.iter().for_each(|x| x.fields(out));
            }
            ArrayExpr::Filter {
                input, cond, limit, ..
            } => {
                input.fields(out);
                cond.fields(out);
                if let Some(l) = limit {
                    l.fields(out);
                }
            }
            ArrayExpr::Map { input, each, .. } => {
                input.fields(out);
                each.fields(out);
            }
            ArrayExpr::Reduce {
                input,
                initial,
                each,
            } => {
                input.fields(out);
                initial.fields(out);
                each.fields(out);
            }
        }
    }

    /// # Errors
    /// MongoDB's codes: 17124 (`$size` of a non-array), 28689–28691 (`$arrayElemAt`,
    /// `$first`, `$last`), 28651 / 16883 / 40080 (`$filter` / `$map` / `$reduce` of a
    /// non-array), 327391 / 327392 (`$filter`'s `limit`), 40081 (`$in`), 28724–28729
    /// (`$slice`), 28664 (`$concatArrays`), 34443–34449 (`$range`) and `ExceededMemoryLimit`
    /// past its cap, 34435 (`$reverseArray`); what a sub-expression fails with.
    pub(super) fn eval(
        &self,
        values: &dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Bson>, EvalError> {
        let v = |e: &Expr| value(e, values, vars);
        Ok(match self {
            ArrayExpr::Size(x) => match v(x)? {
                Some(Bson::Array(a)) => {
                    Some(Bson::Int32(i32::try_from(a.len()).unwrap_or(i32::MAX)))
                }
                other => {
                    return Err(fail(
                        17124,
                        format!(
                            "The argument to $size must be an array, but was of type: {}",
                            type_name(other.as_ref())
                        ),
                    ));
                }
            },
            ArrayExpr::ElemAt([a, i]) => {
                let (a, i) = (v(a)?, v(i)?);
                if nullish(a.as_ref()) || nullish(i.as_ref()) {
                    return Ok(Some(Bson::Null));
                }
                let Some(Bson::Array(a)) = a else {
                    return Err(fail(
                        28689,
                        format!(
                            "$arrayElemAt's first argument must be an array, but is {}",
                            type_name(a.as_ref())
                        ),
                    ));
                };
                let i = i.unwrap_or(Bson::Null);
                if !args::is_number(&i) {
                    return Err(fail(
                        28690,
                        format!(
                            "$arrayElemAt's second argument must be a numeric value, but is {}",
                            type_name(Some(&i))
                        ),
                    ));
                }
                let i = args::int32(&i).ok_or_else(|| {
                    fail(
                        28691,
                        format!(
                            "$arrayElemAt's second argument must be representable as a \
                             32-bit integer: {i}"
                        ),
                    )
                })?;
                at(a, i64::from(i))
            }
            ArrayExpr::End { last, arg } => match v(arg)? {
                x if nullish(x.as_ref()) => Some(Bson::Null),
                Some(Bson::Array(a)) => at(a, if *last { -1 } else { 0 }),
                other => {
                    return Err(fail(
                        28689,
                        format!(
                            "{}'s argument must be an array, but is {}",
                            if *last { "$last" } else { "$first" },
                            type_name(other.as_ref())
                        ),
                    ));
                }
            },
            ArrayExpr::Filter {
                input,
                name,
                cond,
                limit,
            } => {
                let Some(items) = array_input(v(input)?, |t| {
                    fail(28651, format!("input to $filter must be an array not {t}"))
                })?
                else {
                    return Ok(Some(Bson::Null));
                };
                let limit = match limit {
                    None => usize::MAX,
                    Some(l) => match v(l)? {
                        l if nullish(l.as_ref()) => usize::MAX,
                        Some(l) => {
                            let n = args::int32(&l).filter(|_| args::is_number(&l)).ok_or_else(
                                || {
                                    fail(
                                        327_391,
                                        format!(
                                            "$filter: limit must be represented as a 32-bit \
                                         integral value: {l}"
                                        ),
                                    )
                                },
                            )?;
                            usize::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
                                fail(
                                    327_392,
                                    format!("$filter: limit must be greater than 0: {n}"),
                                )
                            })?
                        }
                        None => usize::MAX,
                    },
                };
                let mut out = Vec::new();
                for item in items {
                    if out.len() >= limit {
                        break;
                    }
                    let inner = vars.with(name, item.clone());
                    if truthy(cond.eval_with(values, &inner)?.as_deref()) {
                        out.push(item);
                    }
                }
                Some(Bson::Array(out))
            }
            ArrayExpr::Map { input, name, each } => {
                let Some(items) = array_input(v(input)?, |t| {
                    fail(16883, format!("input to $map must be an array not {t}"))
                })?
                else {
                    return Ok(Some(Bson::Null));
                };
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let inner = vars.with(name, item);
                    out.push(value(each, values, &inner)?.unwrap_or(Bson::Null));
                }
                Some(Bson::Array(out))
            }
            ArrayExpr::Reduce {
                input,
                initial,
                each,
            } => {
                let Some(items) = array_input(v(input)?, |t| {
                    fail(
                        40080,
                        format!("$reduce requires that 'input' be an array, found: {t}"),
                    )
                })?
                else {
                    return Ok(Some(Bson::Null));
                };
                let mut acc = v(initial)?;
                for item in items {
                    let with_value = vars.with("value", acc.unwrap_or(Bson::Null));
                    let inner = with_value.with("this", item);
                    acc = value(each, values, &inner)?;
                    if let Some(a) = &acc {
                        args::within_limit("$reduce", args::approx_size(a, args::VALUE_LIMIT))?;
                    }
                }
                acc
            }
            ArrayExpr::In([x, a]) => {
                let (x, a) = (v(x)?, v(a)?);
                let Some(Bson::Array(a)) = a else {
                    return Err(fail(
                        40081,
                        format!(
                            "$in requires an array as a second argument, found: {}",
                            type_name(a.as_ref())
                        ),
                    ));
                };
                Some(Bson::Boolean(x.is_some_and(|x| {
                    a.iter().any(|e| compare(e, &x) == Ordering::Equal)
                })))
            }
            ArrayExpr::Slice(xs) => {
                let mut got = Vec::with_capacity(xs.len());
                for x in xs {
                    got.push(v(x)?);
                }
                if got.iter().any(|g| nullish(g.as_ref())) {
                    return Ok(Some(Bson::Null));
                }
                let Some(Bson::Array(a)) = got[0].take() else {
                    return Err(fail(
                        28724,
                        format!(
                            "First argument to $slice must be an array, but is of type: {}",
                            type_name(got[0].as_ref())
                        ),
                    ));
                };
                let n = |g: &Option<Bson>, which: &str, codes: (u32, u32)| {
                    let g = g.as_ref().filter(|g| args::is_number(g)).ok_or_else(|| {
                        fail(
                            codes.0,
                            format!(
                                "{which} argument to $slice must be numeric, but is of type: {}",
                                type_name(g.as_ref())
                            ),
                        )
                    })?;
                    args::int32(g).map(i64::from).ok_or_else(|| {
                        fail(
                            codes.1,
                            format!(
                                "{which} argument to $slice can't be represented as a 32-bit \
                                 integer: {g}"
                            ),
                        )
                    })
                };
                let len = i64::try_from(a.len()).unwrap_or(i64::MAX);
                let (start, count) = if got.len() == 2 {
                    let k = n(&got[1], "Second", (28725, 28726))?;
                    if k >= 0 {
                        (0, k)
                    } else {
                        ((len + k).max(0), -k)
                    }
                } else {
                    let p = n(&got[1], "Second", (28725, 28726))?;
                    let k = n(&got[2], "Third", (28727, 28728))?;
                    if k <= 0 {
                        return Err(fail(
                            28729,
                            format!("Third argument to $slice must be positive: {k}"),
                        ));
                    }
                    (if p < 0 { (len + p).max(0) } else { p.min(len) }, k)
                };
                let start = usize::try_from(start).unwrap_or(0);
                let count = usize::try_from(count).unwrap_or(0);
                Some(Bson::Array(a.into_iter().skip(start).take(count).collect()))
            }
            ArrayExpr::Concat(xs) => {
                let mut out = Vec::new();
                for x in xs {
                    match v(x)? {
                        a if nullish(a.as_ref()) => return Ok(Some(Bson::Null)),
                        Some(Bson::Array(a)) => {
                            args::within_limit(
                                "$concatArrays",
                                (out.len() + a.len()).saturating_mul(size_of::<Bson>()),
                            )?;
                            out.extend(a);
                        }
                        other => {
                            return Err(fail(
                                28664,
                                format!(
                                    "$concatArrays only supports arrays, not {}",
                                    type_name(other.as_ref())
                                ),
                            ));
                        }
                    }
                }
                Some(Bson::Array(out))
            }
            ArrayExpr::IsArray(x) => Some(Bson::Boolean(matches!(v(x)?, Some(Bson::Array(_))))),
            ArrayExpr::Range(xs) => {
                let mut bounds = [0_i64, 0, 1];
                for (i, ((x, what), codes)) in xs
                    .iter()
                    .zip(["starting", "ending", "step"])
                    .zip([(34443, 34444), (34445, 34446), (34447, 34448)])
                    .enumerate()
                {
                    let g = v(x)?;
                    let g = g.filter(args::is_number).ok_or_else(|| {
                        fail(codes.0, format!("$range requires a numeric {what} value"))
                    })?;
                    bounds[i] = args::int32(&g).map(i64::from).ok_or_else(|| {
                        fail(
                            codes.1,
                            format!(
                                "$range requires a {what} value that can be represented as a \
                                 32-bit integer, found value: {g}"
                            ),
                        )
                    })?;
                }
                let [start, end, step] = bounds;
                if step == 0 {
                    return Err(fail(34449, "$range requires a non-zero step value"));
                }
                let steps = (end - start) / step;
                let length = if (end - start).signum() == step.signum() && end != start {
                    steps + i64::from((end - start) % step != 0)
                } else {
                    0
                };
                let needed = 24 + length * 16;
                if needed >= RANGE_LIMIT_BYTES {
                    return Err(EvalError::failed(
                        ErrorCode::ExceededMemoryLimit,
                        format!(
                            "$range would use too much memory ({needed} bytes) and cannot spill to \
                             disk. Memory limit: {RANGE_LIMIT_BYTES} bytes"
                        ),
                    ));
                }
                let mut out = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
                let mut at = start;
                while if step > 0 { at < end } else { at > end } {
                    out.push(Bson::Int32(i32::try_from(at).unwrap_or_default()));
                    at += step;
                }
                Some(Bson::Array(out))
            }
            ArrayExpr::Reverse(x) => match v(x)? {
                a if nullish(a.as_ref()) => Some(Bson::Null),
                Some(Bson::Array(mut a)) => {
                    a.reverse();
                    Some(Bson::Array(a))
                }
                other => {
                    return Err(fail(
                        34435,
                        format!(
                            "The argument to $reverseArray must be an array, but was of type: {}",
                            type_name(other.as_ref())
                        ),
                    ));
                }
            },
        })
    }
}

/// The element at `i` (from the end when negative), missing when out of range.
fn at(a: Vec<Bson>, i: i64) -> Option<Bson> {
    let len = i64::try_from(a.len()).ok()?;
    let i = if i < 0 { len + i } else { i };
    usize::try_from(i).ok().and_then(|i| a.into_iter().nth(i))
}

/// The array a `$filter`, `$map` or `$reduce` reads: `None` for null or missing (the stage
/// gives null), the elements of an array, else `not_array`'s error with the value's type.
fn array_input(
    input: Option<Bson>,
    not_array: impl FnOnce(&str) -> EvalError,
) -> std::result::Result<Option<Vec<Bson>>, EvalError> {
    match input {
        x if nullish(x.as_ref()) => Ok(None),
        Some(Bson::Array(a)) => Ok(Some(a)),
        other => Err(not_array(type_name(other.as_ref()))),
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::super::tests::{eval, eval_err, parse_err, value};
    use super::*;

    fn ints(xs: &[i32]) -> Option<Bson> {
        Some(Bson::Array(xs.iter().map(|x| Bson::Int32(*x)).collect()))
    }

    #[test]
    fn size_elem_at_first_last() {
        assert_eq!(value(&doc! { "$size": [[1, 2, 3]] }), Some(Bson::Int32(3)));
        assert_eq!(
            eval_err(&doc! { "$size": "$missing" }, &doc! {}),
            ErrorCode::Location(17124)
        );
        let d = doc! { "a": [1, 2, 3] };
        assert_eq!(
            eval(&doc! { "$arrayElemAt": ["$a", 0] }, &d),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            eval(&doc! { "$arrayElemAt": ["$a", -1] }, &d),
            Some(Bson::Int32(3))
        );
        assert_eq!(eval(&doc! { "$arrayElemAt": ["$a", 15] }, &d), None);
        assert_eq!(
            eval(&doc! { "$arrayElemAt": ["$x", 0] }, &d),
            Some(Bson::Null)
        );
        assert_eq!(
            eval_err(&doc! { "$arrayElemAt": [1, 0] }, &d),
            ErrorCode::Location(28689)
        );
        assert_eq!(
            eval_err(&doc! { "$arrayElemAt": ["$a", "0"] }, &d),
            ErrorCode::Location(28690)
        );
        assert_eq!(
            eval_err(&doc! { "$arrayElemAt": ["$a", 0.5] }, &d),
            ErrorCode::Location(28691)
        );
        assert_eq!(eval(&doc! { "$first": "$a" }, &d), Some(Bson::Int32(1)));
        assert_eq!(eval(&doc! { "$last": "$a" }, &d), Some(Bson::Int32(3)));
        assert_eq!(value(&doc! { "$first": [[]] }), None);
        assert_eq!(value(&doc! { "$last": "$missing" }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$first": 1 }, &d),
            ErrorCode::Location(28689)
        );
    }

    #[test]
    fn filter_binds_as_and_honours_limit() {
        // The manual's example.
        let d = doc! { "items": [
            { "item_id": 43, "quantity": 2, "price": 10 },
            { "item_id": 2, "quantity": 1, "price": 240 },
            { "item_id": 23, "quantity": 3, "price": 110 },
        ] };
        let e = doc! { "$filter": { "input": "$items", "as": "item", "cond": { "$gte": ["$$item.price", 100] } } };
        assert_eq!(
            eval(&e, &d),
            Some(Bson::Array(vec![
                Bson::Document(doc! { "item_id": 2, "quantity": 1, "price": 240 }),
                Bson::Document(doc! { "item_id": 23, "quantity": 3, "price": 110 }),
            ]))
        );
        let e = doc! { "$filter": { "input": [1, 2, 3, 4], "cond": { "$gt": ["$$this", 1] }, "limit": 2 } };
        assert_eq!(value(&e), ints(&[2, 3]));
        let e = doc! { "$filter": { "input": "$missing", "cond": true } };
        assert_eq!(value(&e), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$filter": { "input": 1, "cond": true } }, &d),
            ErrorCode::Location(28651)
        );
        assert_eq!(
            eval_err(
                &doc! { "$filter": { "input": [1], "cond": true, "limit": 0 } },
                &d
            ),
            ErrorCode::Location(327_392)
        );
        assert_eq!(
            eval_err(
                &doc! { "$filter": { "input": [1], "cond": true, "limit": 1.5 } },
                &d
            ),
            ErrorCode::Location(327_391)
        );
        assert_eq!(
            parse_err(&doc! { "$filter": [1] }),
            ErrorCode::Location(28646)
        );
        assert_eq!(
            parse_err(&doc! { "$filter": { "input": [1], "cond": true, "x": 1 } }),
            ErrorCode::Location(28647)
        );
        assert_eq!(
            parse_err(&doc! { "$filter": { "cond": true } }),
            ErrorCode::Location(28648)
        );
        assert_eq!(
            parse_err(&doc! { "$filter": { "input": [1] } }),
            ErrorCode::Location(28650)
        );
        assert_eq!(
            parse_err(&doc! { "$filter": { "input": [1], "as": "Bad", "cond": true } }),
            ErrorCode::Location(16867)
        );
    }

    #[test]
    fn map_and_reduce() {
        let d = doc! { "q": [5, 6, 7] };
        assert_eq!(
            eval(
                &doc! { "$map": { "input": "$q", "as": "g", "in": { "$add": ["$$g", 2] } } },
                &d
            ),
            ints(&[7, 8, 9])
        );
        assert_eq!(
            eval(&doc! { "$map": { "input": "$q", "in": "$$this.x" } }, &d),
            Some(Bson::Array(vec![Bson::Null, Bson::Null, Bson::Null]))
        );
        assert_eq!(
            eval_err(&doc! { "$map": { "input": 1, "in": 1 } }, &d),
            ErrorCode::Location(16883)
        );
        assert_eq!(
            parse_err(&doc! { "$map": { "input": [1] } }),
            ErrorCode::Location(16882)
        );
        // The manual's examples.
        assert_eq!(
            value(
                &doc! { "$reduce": { "input": ["a", "b", "c"], "initialValue": "", "in": { "$concat": ["$$value", "$$this"] } } }
            ),
            Some(Bson::String("abc".into()))
        );
        assert_eq!(
            value(
                &doc! { "$reduce": { "input": [1, 2, 3, 4], "initialValue": { "sum": 5, "product": 2 }, "in": {
                    "sum": { "$add": ["$$value.sum", "$$this"] },
                    "product": { "$multiply": ["$$value.product", "$$this"] },
                } } }
            ),
            Some(Bson::Document(doc! { "sum": 15, "product": 48 }))
        );
        assert_eq!(
            value(
                &doc! { "$reduce": { "input": [[3, 4], [5, 6]], "initialValue": [1, 2], "in": { "$concatArrays": ["$$value", "$$this"] } } }
            ),
            ints(&[1, 2, 3, 4, 5, 6])
        );
        assert_eq!(
            value(&doc! { "$reduce": { "input": [], "initialValue": 7, "in": 0 } }),
            Some(Bson::Int32(7))
        );
        assert_eq!(
            eval_err(
                &doc! { "$reduce": { "input": 1, "initialValue": 0, "in": 0 } },
                &d
            ),
            ErrorCode::Location(40080)
        );
        assert_eq!(
            parse_err(&doc! { "$reduce": { "input": [1], "in": 0 } }),
            ErrorCode::Location(40078)
        );
    }

    #[test]
    fn in_slice_concat_is_array_reverse() {
        assert_eq!(
            value(&doc! { "$in": [2, [1, 2, 3]] }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            value(&doc! { "$in": [2.0, [1, 2, 3]] }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            value(&doc! { "$in": ["abc", ["xyz", "abc"]] }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            value(&doc! { "$in": [[1], [1, 2]] }),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            eval_err(&doc! { "$in": [1, "$missing"] }, &doc! {}),
            ErrorCode::Location(40081)
        );
        let a = doc! { "$literal": [1, 2, 3] };
        assert_eq!(value(&doc! { "$slice": [a.clone(), 1] }), ints(&[1]));
        assert_eq!(value(&doc! { "$slice": [a.clone(), -2] }), ints(&[2, 3]));
        assert_eq!(value(&doc! { "$slice": [a.clone(), 15, 2] }), ints(&[]));
        assert_eq!(
            value(&doc! { "$slice": [a.clone(), -15, 2] }),
            ints(&[1, 2])
        );
        assert_eq!(value(&doc! { "$slice": [a.clone(), 1, 1] }), ints(&[2]));
        assert_eq!(value(&doc! { "$slice": ["$missing", 1] }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$slice": [1, 1] }, &doc! {}),
            ErrorCode::Location(28724)
        );
        assert_eq!(
            eval_err(&doc! { "$slice": [a.clone(), "1"] }, &doc! {}),
            ErrorCode::Location(28725)
        );
        assert_eq!(
            eval_err(&doc! { "$slice": [a.clone(), 0, 0] }, &doc! {}),
            ErrorCode::Location(28729)
        );
        assert_eq!(
            value(&doc! { "$concatArrays": [[1], [2, 3]] }),
            ints(&[1, 2, 3])
        );
        assert_eq!(
            value(&doc! { "$concatArrays": [[1], null] }),
            Some(Bson::Null)
        );
        assert_eq!(
            eval_err(&doc! { "$concatArrays": [[1], 2] }, &doc! {}),
            ErrorCode::Location(28664)
        );
        assert_eq!(
            value(&doc! { "$isArray": [[1]] }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(value(&doc! { "$isArray": "a" }), Some(Bson::Boolean(false)));
        assert_eq!(
            value(&doc! { "$reverseArray": [[1, 2, 3]] }),
            ints(&[3, 2, 1])
        );
        assert_eq!(value(&doc! { "$reverseArray": null }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$reverseArray": 1 }, &doc! {}),
            ErrorCode::Location(34435)
        );
    }

    #[test]
    fn range_steps_and_is_capped() {
        assert_eq!(
            value(&doc! { "$range": [0, 10, 2] }),
            ints(&[0, 2, 4, 6, 8])
        );
        assert_eq!(
            value(&doc! { "$range": [10, 0, -2] }),
            ints(&[10, 8, 6, 4, 2])
        );
        assert_eq!(value(&doc! { "$range": [0, 10, -2] }), ints(&[]));
        assert_eq!(value(&doc! { "$range": [0, 5] }), ints(&[0, 1, 2, 3, 4]));
        assert_eq!(
            eval_err(&doc! { "$range": [0, 5, 0] }, &doc! {}),
            ErrorCode::Location(34449)
        );
        assert_eq!(
            eval_err(&doc! { "$range": ["0", 5] }, &doc! {}),
            ErrorCode::Location(34443)
        );
        assert_eq!(
            eval_err(&doc! { "$range": [0.5, 5] }, &doc! {}),
            ErrorCode::Location(34444)
        );
        assert_eq!(
            eval_err(&doc! { "$range": [0, null] }, &doc! {}),
            ErrorCode::Location(34445)
        );
        assert_eq!(
            eval_err(&doc! { "$range": [0, 2_000_000_000] }, &doc! {}),
            ErrorCode::ExceededMemoryLimit
        );
    }
}
