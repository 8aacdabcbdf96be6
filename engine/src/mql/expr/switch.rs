//! `$switch`: `{branches: [{case, then}, ...], default}`, the `then` of the first branch
//! whose `case` is true (aggregation's truthiness), else `default`; MongoDB's 40066 when no
//! branch matches and there is no `default`.

use std::borrow::Cow;

use bson::Bson;

use super::args::fail;
use super::{EvalError, Expr, Resolve, Vars, truthy};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Target, Values};

/// A parsed `$switch`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Switch {
    /// `(case, then)` in order.
    branches: Vec<(Expr, Expr)>,
    /// `default`.
    default: Option<Expr>,
}

fn rejected(code: u32, message: String) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

/// Parses `$switch` (`None` for another operator).
///
/// # Errors
/// MongoDB's parse errors: 40060 (not an object), 40061 (`branches` not an array), 40062
/// (a branch not an object), 40063 (an unknown argument of a branch), 40064 / 40065 (a
/// branch without `case` / `then`), 40067 (an unknown argument), 40068 (no branch).
pub(super) fn parse(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    if op != "$switch" {
        return Ok(None);
    }
    let Bson::Document(d) = arg else {
        return Err(rejected(
            40060,
            format!("$switch requires an object as an argument, found: {arg}"),
        ));
    };
    let mut branches = Vec::new();
    let mut default = None;
    for (k, v) in d {
        match k.as_str() {
            "branches" => {
                let Bson::Array(items) = v else {
                    return Err(rejected(
                        40061,
                        format!("$switch expected an array for 'branches', found: {v}"),
                    ));
                };
                for b in items {
                    let Bson::Document(b) = b else {
                        return Err(rejected(
                            40062,
                            format!("$switch expected each branch to be an object, found: {b}"),
                        ));
                    };
                    let (mut case, mut then) = (None, None);
                    for (bk, bv) in b {
                        match bk.as_str() {
                            "case" => case = Some(Expr::parse(bv, target)?),
                            "then" => then = Some(Expr::parse(bv, target)?),
                            other => {
                                return Err(rejected(
                                    40063,
                                    format!(
                                        "$switch found an unknown argument to a branch: {other}"
                                    ),
                                ));
                            }
                        }
                    }
                    let case = case.ok_or_else(|| {
                        rejected(
                            40064,
                            "$switch requires each branch have a 'case' expression".to_owned(),
                        )
                    })?;
                    let then = then.ok_or_else(|| {
                        rejected(
                            40065,
                            "$switch requires each branch have a 'then' expression.".to_owned(),
                        )
                    })?;
                    branches.push((case, then));
                }
            }
            "default" => default = Some(Expr::parse(v, target)?),
            other => {
                return Err(rejected(
                    40067,
                    format!("$switch found an unknown argument: {other}"),
                ));
            }
        }
    }
    if branches.is_empty() {
        return Err(rejected(
            40068,
            "$switch requires at least one branch.".to_owned(),
        ));
    }
    Ok(Some(Expr::Switch(Box::new(Switch { branches, default }))))
}

impl Switch {
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(Target, &'a [String])>) {
        for (c, t) in &self.branches {
            c.fields(out);
            t.fields(out);
        }
        if let Some(d) = &self.default {
            d.fields(out);
        }
    }

    /// # Errors
    /// MongoDB's 40066 when no branch matches and there is no `default`; what a branch fails
    /// with.
    pub(super) fn eval<'v>(
        &self,
        values: &'v dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Cow<'v, Bson>>, EvalError> {
        for (case, then) in &self.branches {
            if truthy(case.eval_with(values, vars)?.as_deref()) {
                return then.eval_with(values, vars);
            }
        }
        match &self.default {
            Some(d) => d.eval_with(values, vars),
            None => Err(fail(
                40066,
                "$switch could not find a matching branch for an input, and no default was \
                 specified.",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::super::tests::{eval, eval_err, parse_err};
    use super::*;

    #[test]
    fn the_first_true_case_wins_else_the_default() {
        let e = doc! { "$switch": { "branches": [
            { "case": { "$gte": ["$x", 90] }, "then": "A" },
            { "case": { "$gte": ["$x", 80] }, "then": "B" },
        ], "default": "F" } };
        assert_eq!(eval(&e, &doc! { "x": 95 }), Some(Bson::String("A".into())));
        assert_eq!(eval(&e, &doc! { "x": 85 }), Some(Bson::String("B".into())));
        assert_eq!(eval(&e, &doc! { "x": 10 }), Some(Bson::String("F".into())));
        // A missing field is below every number: the default.
        assert_eq!(eval(&e, &doc! {}), Some(Bson::String("F".into())));
    }

    #[test]
    fn no_match_without_default_fails_with_40066() {
        let e = doc! { "$switch": { "branches": [ { "case": false, "then": 1 } ] } };
        assert_eq!(eval_err(&e, &doc! {}), ErrorCode::Location(40066));
        // A case that is 0 or null is false; a non-empty string is true.
        let e = doc! { "$switch": { "branches": [
            { "case": 0, "then": 1 }, { "case": null, "then": 2 }, { "case": "", "then": 3 },
        ] } };
        assert_eq!(eval(&e, &doc! {}), Some(Bson::Int32(3)));
    }

    #[test]
    fn malformed_switches_are_refused_with_mongodb_codes() {
        assert_eq!(
            parse_err(&doc! { "$switch": [1] }),
            ErrorCode::Location(40060)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": 1 } }),
            ErrorCode::Location(40061)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": [1] } }),
            ErrorCode::Location(40062)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": [{ "case": true, "x": 1 }] } }),
            ErrorCode::Location(40063)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": [{ "then": 1 }] } }),
            ErrorCode::Location(40064)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": [{ "case": true }] } }),
            ErrorCode::Location(40065)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": [], "x": 1 } }),
            ErrorCode::Location(40067)
        );
        assert_eq!(
            parse_err(&doc! { "$switch": { "branches": [] } }),
            ErrorCode::Location(40068)
        );
    }
}
