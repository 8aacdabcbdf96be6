//! String expressions: `$concat`, `$substrCP`, `$substrBytes`, `$toUpper`, `$toLower`,
//! `$split`, `$trim`/`$ltrim`/`$rtrim`, `$strLenCP`, `$strLenBytes`, `$indexOfCP`,
//! `$strcasecmp`, `$replaceOne`, `$replaceAll`, with MongoDB's rules: `$concat`, `$split`,
//! `$trim`, `$indexOfCP` and `$replace…` are null when an operand is null or missing;
//! `$substr…`, `$toUpper`, `$toLower` and `$strcasecmp` take null as "" and convert numbers
//! and dates to strings; `$strLen…` fail on a non-string. Case mapping and `$strcasecmp`
//! fold ASCII letters only, as MongoDB's do. Positions count code points (`…CP`) or UTF-8
//! bytes (`…Bytes`).

use bson::Bson;

use super::args::{self, fail, nullish, type_name, value};
use super::convert::coerce_to_string;
use super::{EvalError, Expr, Resolve, Vars};
use crate::error::Result;
use crate::mql::filter::{Target, Values};

/// Which end `$trim` trims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    Both,
    Start,
    End,
}

/// A string operator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StringExpr {
    /// `$concat`.
    Concat(Vec<Expr>),
    /// `$substrCP` (`bytes` false) or `$substrBytes`: string, start, length.
    Substr { bytes: bool, args: [Expr; 3] },
    /// `$toUpper` (`upper`) or `$toLower`.
    Case { upper: bool, arg: Expr },
    /// `$split`: string, delimiter.
    Split([Expr; 2]),
    /// `$trim`, `$ltrim`, `$rtrim`.
    Trim {
        side: Side,
        input: Expr,
        chars: Option<Expr>,
    },
    /// `$strLenCP` (`bytes` false) or `$strLenBytes`.
    Len { bytes: bool, arg: Expr },
    /// `$indexOfCP`: string, substring, optional start and end.
    IndexOf(Vec<Expr>),
    /// `$strcasecmp`.
    CaseCmp([Expr; 2]),
    /// `$replaceOne` (`all` false) or `$replaceAll`: input, find, replacement.
    Replace { all: bool, args: [Expr; 3] },
}

/// Parses a string operator (`None` for another operator).
///
/// # Errors
/// MongoDB's 16020 for a wrong operand count; for `$trim`: 50696 (not an object), 50694
/// (an unknown argument), 50695 (no `input`); for `$replace…`: 51751, 51750, 51749 (no
/// `input`), 51748 (no `find`), 51747 (no `replacement`).
pub(super) fn parse(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    let one = |arg: &Bson| -> Result<Expr> {
        let [a] = args::exactly::<1>(op, arg, target)?;
        Ok(a)
    };
    let e = match op {
        "$concat" => StringExpr::Concat(args::operands(arg, target)?),
        "$substrCP" | "$substrBytes" | "$substr" => StringExpr::Substr {
            bytes: op != "$substrCP",
            args: args::exactly::<3>(op, arg, target)?,
        },
        "$toUpper" | "$toLower" => StringExpr::Case {
            upper: op == "$toUpper",
            arg: one(arg)?,
        },
        "$split" => StringExpr::Split(args::exactly::<2>(op, arg, target)?),
        "$trim" | "$ltrim" | "$rtrim" => {
            let raw = args::named(op, arg, &["input", "chars"], (50696, 50694))?;
            StringExpr::Trim {
                side: match op {
                    "$trim" => Side::Both,
                    "$ltrim" => Side::Start,
                    _ => Side::End,
                },
                input: args::required(op, "input", raw[0], 50695, target)?,
                chars: args::optional(raw[1], target)?,
            }
        }
        "$strLenCP" | "$strLenBytes" => StringExpr::Len {
            bytes: op == "$strLenBytes",
            arg: one(arg)?,
        },
        "$indexOfCP" => StringExpr::IndexOf(args::between(op, arg, target, 2, 4)?),
        "$strcasecmp" => StringExpr::CaseCmp(args::exactly::<2>(op, arg, target)?),
        "$replaceOne" | "$replaceAll" => {
            let raw = args::named(op, arg, &["input", "find", "replacement"], (51751, 51750))?;
            StringExpr::Replace {
                all: op == "$replaceAll",
                args: [
                    args::required(op, "input", raw[0], 51749, target)?,
                    args::required(op, "find", raw[1], 51748, target)?,
                    args::required(op, "replacement", raw[2], 51747, target)?,
                ],
            }
        }
        _ => return Ok(None),
    };
    Ok(Some(Expr::String(Box::new(e))))
}

/// The characters `$trim` removes by default: NUL, space, the ASCII whitespace controls,
/// no-break space and the Unicode spaces U+1680, U+2000–U+200A.
fn default_trim(c: char) -> bool {
    matches!(
        c,
        '\0' | ' ' | '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
    )
}

impl StringExpr {
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(Target, &'a [String])>) {
        match self {
            StringExpr::Concat(xs) | StringExpr::IndexOf(xs) => {
                xs.iter().for_each(|x| x.fields(out));
            }
            StringExpr::Substr { args, .. } | StringExpr::Replace { args, .. } => {
                args.iter().for_each(|x| x.fields(out));
            }
            StringExpr::Split(xs) | StringExpr::CaseCmp(xs) => {
                xs.iter().for_each(|x| x.fields(out));
            }
            StringExpr::Case { arg, .. } | StringExpr::Len { arg, .. } => arg.fields(out),
            StringExpr::Trim { input, chars, .. } => {
                input.fields(out);
                if let Some(c) = chars {
                    c.fields(out);
                }
            }
        }
    }

    /// # Errors
    /// MongoDB's codes: 16702 (`$concat` of a non-string), 16007 (a value that does not
    /// convert to a string), 34450–34455 (`$substrCP` indexes), 16034, 16035, 50752,
    /// 28656, 28657 (`$substrBytes` indexes and UTF-8 boundaries), 40085–40087 (`$split`),
    /// 50699, 50700 (`$trim`), 34471, 34473 (`$strLen…` of a non-string), 40093, 40094,
    /// 40096, 40097 (`$indexOfCP`), 51744–51746 (`$replace…`).
    pub(super) fn eval(
        &self,
        values: &dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Bson>, EvalError> {
        let v = |e: &Expr| value(e, values, vars);
        Ok(Some(match self {
            StringExpr::Concat(xs) => {
                let mut out = String::new();
                for x in xs {
                    match v(x)? {
                        a if nullish(a.as_ref()) => return Ok(Some(Bson::Null)),
                        Some(Bson::String(s)) => {
                            args::within_limit("$concat", out.len() + s.len())?;
                            out.push_str(&s);
                        }
                        Some(other) => {
                            return Err(fail(
                                16702,
                                format!(
                                    "$concat only supports strings, not {}",
                                    type_name(Some(&other))
                                ),
                            ));
                        }
                        None => return Ok(Some(Bson::Null)),
                    }
                }
                Bson::String(out)
            }
            StringExpr::Substr { bytes, args } => {
                let s = coerce_to_string(v(&args[0])?.as_ref())?;
                let (start, len) = (v(&args[1])?, v(&args[2])?);
                Bson::String(if *bytes {
                    substr_bytes(&s, start.as_ref(), len.as_ref())?
                } else {
                    substr_cp(&s, start.as_ref(), len.as_ref())?
                })
            }
            StringExpr::Case { upper, arg } => {
                let s = coerce_to_string(v(arg)?.as_ref())?;
                Bson::String(if *upper {
                    s.to_ascii_uppercase()
                } else {
                    s.to_ascii_lowercase()
                })
            }
            StringExpr::Split([a, b]) => {
                let (s, sep) = (v(a)?, v(b)?);
                if nullish(s.as_ref()) || nullish(sep.as_ref()) {
                    return Ok(Some(Bson::Null));
                }
                let Some(Bson::String(s)) = s else {
                    return Err(fail(
                        40085,
                        format!(
                            "$split requires an expression that evaluates to a string as a \
                             first argument, found: {}",
                            type_name(s.as_ref())
                        ),
                    ));
                };
                let Some(Bson::String(sep)) = sep else {
                    return Err(fail(
                        40086,
                        format!(
                            "$split requires an expression that evaluates to a string as a \
                             second argument, found: {}",
                            type_name(sep.as_ref())
                        ),
                    ));
                };
                if sep.is_empty() {
                    return Err(fail(40087, "$split requires a non-empty separator"));
                }
                Bson::Array(
                    s.split(sep.as_str())
                        .map(|p| Bson::String(p.to_owned()))
                        .collect(),
                )
            }
            StringExpr::Trim { side, input, chars } => {
                let name = match side {
                    Side::Both => "$trim",
                    Side::Start => "$ltrim",
                    Side::End => "$rtrim",
                };
                let s = match v(input)? {
                    s if nullish(s.as_ref()) => return Ok(Some(Bson::Null)),
                    Some(Bson::String(s)) => s,
                    other => {
                        return Err(fail(
                            50699,
                            format!(
                                "{name} requires its input to be a string, got {}",
                                type_name(other.as_ref())
                            ),
                        ));
                    }
                };
                let set: Option<Vec<char>> = match chars {
                    None => None,
                    Some(c) => match v(c)? {
                        c if nullish(c.as_ref()) => return Ok(Some(Bson::Null)),
                        Some(Bson::String(c)) => Some(c.chars().collect()),
                        other => {
                            return Err(fail(
                                50700,
                                format!(
                                    "{name} requires 'chars' to be a string, got {}",
                                    type_name(other.as_ref())
                                ),
                            ));
                        }
                    },
                };
                let trims = |c: char| {
                    set.as_ref()
                        .map_or_else(|| default_trim(c), |s| s.contains(&c))
                };
                Bson::String(
                    match side {
                        Side::Both => s.trim_matches(trims),
                        Side::Start => s.trim_start_matches(trims),
                        Side::End => s.trim_end_matches(trims),
                    }
                    .to_owned(),
                )
            }
            StringExpr::Len { bytes, arg } => match v(arg)? {
                Some(Bson::String(s)) => {
                    let n = if *bytes { s.len() } else { s.chars().count() };
                    Bson::Int32(i32::try_from(n).unwrap_or(i32::MAX))
                }
                other => {
                    let (code, name) = if *bytes {
                        (34473, "$strLenBytes")
                    } else {
                        (34471, "$strLenCP")
                    };
                    return Err(fail(
                        code,
                        format!(
                            "{name} requires a string argument, found: {}",
                            type_name(other.as_ref())
                        ),
                    ));
                }
            },
            StringExpr::IndexOf(xs) => {
                let s = match v(&xs[0])? {
                    s if nullish(s.as_ref()) => return Ok(Some(Bson::Null)),
                    Some(Bson::String(s)) => s,
                    other => {
                        return Err(fail(
                            40093,
                            format!(
                                "$indexOfCP requires a string as the first argument, found: {}",
                                type_name(other.as_ref())
                            ),
                        ));
                    }
                };
                let token = match v(&xs[1])? {
                    Some(Bson::String(t)) => t,
                    other => {
                        return Err(fail(
                            40094,
                            format!(
                                "$indexOfCP requires a string as the second argument, found: {}",
                                type_name(other.as_ref())
                            ),
                        ));
                    }
                };
                let mut bounds = [0_usize, usize::MAX];
                for (i, x) in xs.iter().enumerate().skip(2) {
                    let b = v(x)?;
                    let n = b
                        .as_ref()
                        .and_then(crate::mql::filter::exact_int)
                        .ok_or_else(|| {
                            fail(
                                40096,
                                format!(
                                    "$indexOfCP requires an integral {} index, found a value of \
                                 type: {}",
                                    if i == 2 { "starting" } else { "ending" },
                                    type_name(b.as_ref())
                                ),
                            )
                        })?;
                    bounds[i - 2] = usize::try_from(n).map_err(|_| {
                        fail(
                            40097,
                            format!(
                                "$indexOfCP requires a nonnegative {} index, found: {n}",
                                if i == 2 { "start" } else { "end" }
                            ),
                        )
                    })?;
                }
                Bson::Int32(index_of_cp(&s, &token, bounds[0], bounds[1]))
            }
            StringExpr::CaseCmp([a, b]) => {
                let a = coerce_to_string(v(a)?.as_ref())?.to_ascii_lowercase();
                let b = coerce_to_string(v(b)?.as_ref())?.to_ascii_lowercase();
                Bson::Int32(match a.cmp(&b) {
                    std::cmp::Ordering::Less => -1,
                    std::cmp::Ordering::Equal => 0,
                    std::cmp::Ordering::Greater => 1,
                })
            }
            StringExpr::Replace { all, args } => {
                let name = if *all { "$replaceAll" } else { "$replaceOne" };
                let mut got = Vec::with_capacity(3);
                for (x, (what, code)) in
                    args.iter()
                        .zip([("input", 51746), ("find", 51745), ("replacement", 51744)])
                {
                    let x = v(x)?;
                    if !nullish(x.as_ref()) && !matches!(x, Some(Bson::String(_))) {
                        return Err(fail(
                            code,
                            format!(
                                "{name} requires that '{what}' be a string, found: {}",
                                type_name(x.as_ref())
                            ),
                        ));
                    }
                    got.push(x);
                }
                let [
                    Some(Bson::String(input)),
                    Some(Bson::String(find)),
                    Some(Bson::String(with)),
                ] = &got[..]
                else {
                    return Ok(Some(Bson::Null));
                };
                let times = if *all {
                    input.matches(find.as_str()).count()
                } else {
                    1
                };
                args::within_limit(name, input.len() + times.saturating_mul(with.len()))?;
                Bson::String(if *all {
                    input.replace(find.as_str(), with)
                } else {
                    input.replacen(find.as_str(), with, 1)
                })
            }
        }))
    }
}

/// `$substrCP`: `len` code points of `s` from code point `start`.
fn substr_cp(
    s: &str,
    start: Option<&Bson>,
    len: Option<&Bson>,
) -> std::result::Result<String, EvalError> {
    let index = |v: Option<&Bson>, what: &str, codes: (u32, u32, u32)| {
        let v = v
            .filter(|v| args::is_number(v))
            .ok_or_else(|| fail(codes.0, format!("$substrCP: {what} must be a numeric type")))?;
        let n = args::int32(v).ok_or_else(|| {
            fail(
                codes.1,
                format!("$substrCP: {what} cannot be represented as a 32-bit integral value"),
            )
        })?;
        usize::try_from(n).map_err(|_| {
            fail(
                codes.2,
                format!("$substrCP: {what} must be a nonnegative integer"),
            )
        })
    };
    let start = index(start, "starting index", (34450, 34451, 34455))?;
    let len = index(len, "length", (34452, 34453, 34454))?;
    Ok(s.chars().skip(start).take(len).collect())
}

/// `$substrBytes`: `len` bytes of `s` from byte `start` (a negative length: to the end).
fn substr_bytes(
    s: &str,
    start: Option<&Bson>,
    len: Option<&Bson>,
) -> std::result::Result<String, EvalError> {
    let whole = |v: Option<&Bson>, code: u32, what: &str| {
        #[expect(clippy::cast_possible_truncation, reason = "saturating, as MongoDB's")]
        match v {
            Some(Bson::Int32(n)) => Ok(i64::from(*n)),
            Some(Bson::Int64(n)) => Ok(*n),
            Some(Bson::Double(d)) => Ok(d.trunc() as i64),
            _ => Err(fail(
                code,
                format!("$substrBytes: {what} must be a numeric type"),
            )),
        }
    };
    let start = whole(start, 16034, "starting index")?;
    let len = whole(len, 16035, "length")?;
    let start = usize::try_from(start).map_err(|_| {
        fail(
            50752,
            format!("$substrBytes: starting index must be non-negative (got: {start})"),
        )
    })?;
    let len = usize::try_from(len).unwrap_or(s.len());
    let b = s.as_bytes();
    let continuation = |i: usize| b.get(i).is_some_and(|c| c & 0xC0 == 0x80);
    if continuation(start) {
        return Err(fail(
            28656,
            "$substrBytes: Invalid range, starting index is a UTF-8 continuation byte.",
        ));
    }
    let end = start.saturating_add(len).min(b.len());
    if continuation(end) {
        return Err(fail(
            28657,
            "$substrBytes: Invalid range, ending index is in the middle of a UTF-8 character.",
        ));
    }
    Ok(s.get(start.min(b.len())..end)
        .unwrap_or_default()
        .to_owned())
}

/// `$indexOfCP`: the code point index of the first `token` in `s` at or after `start` and
/// ending at or before `end`, or -1.
fn index_of_cp(s: &str, token: &str, start: usize, end: usize) -> i32 {
    let cps: Vec<(usize, char)> = s.char_indices().collect();
    let token_cps = token.chars().count();
    let end = end.min(cps.len());
    if start > end {
        return -1;
    }
    for i in start..=end.saturating_sub(token_cps) {
        if i + token_cps > end {
            break;
        }
        let at = cps.get(i).map_or(s.len(), |(b, _)| *b);
        if s[at..].starts_with(token) {
            return i32::try_from(i).unwrap_or(i32::MAX);
        }
    }
    -1
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::super::tests::{eval, eval_err, parse_err, value};
    use super::*;
    use crate::error::ErrorCode;

    fn s(v: &str) -> Option<Bson> {
        Some(Bson::String(v.to_owned()))
    }

    #[test]
    fn concat_is_null_on_a_null_operand_and_refuses_non_strings() {
        assert_eq!(
            eval(
                &doc! { "$concat": ["$item", " - ", "$d"] },
                &doc! { "item": "abc", "d": "x" }
            ),
            s("abc - x")
        );
        assert_eq!(value(&doc! { "$concat": ["a", null] }), Some(Bson::Null));
        assert_eq!(
            value(&doc! { "$concat": ["a", "$missing"] }),
            Some(Bson::Null)
        );
        assert_eq!(value(&doc! { "$concat": [] }), s(""));
        assert_eq!(
            eval_err(&doc! { "$concat": ["a", 1] }, &doc! {}),
            ErrorCode::Location(16702)
        );
    }

    #[test]
    fn substr_counts_code_points_or_bytes() {
        // The manual's examples.
        assert_eq!(
            value(&doc! { "$substrCP": ["cafétéria", 0, 5] }),
            s("cafét")
        );
        assert_eq!(value(&doc! { "$substrCP": ["cafétéria", 5, 4] }), s("éria"));
        assert_eq!(value(&doc! { "$substrCP": ["cafétéria", 7, 3] }), s("ia"));
        assert_eq!(
            value(&doc! { "$substrBytes": ["cafétéria", 0, 5] }),
            s("café")
        );
        assert_eq!(
            value(&doc! { "$substrBytes": ["cafétéria", 5, 4] }),
            s("tér")
        );
        assert_eq!(
            eval_err(&doc! { "$substrBytes": ["cafétéria", 7, 3] }, &doc! {}),
            ErrorCode::Location(28656)
        );
        assert_eq!(
            eval_err(&doc! { "$substrBytes": ["cafétéria", 0, 4] }, &doc! {}),
            ErrorCode::Location(28657)
        );
        assert_eq!(value(&doc! { "$substrBytes": ["abc", 1, -1] }), s("bc"));
        assert_eq!(value(&doc! { "$substrBytes": ["abc", 5, 1] }), s(""));
        // Null is "", numbers convert.
        assert_eq!(value(&doc! { "$substrCP": [null, 0, 2] }), s(""));
        assert_eq!(value(&doc! { "$substrCP": [12345, 1, 2] }), s("23"));
        assert_eq!(
            eval_err(&doc! { "$substrCP": ["a", "0", 1] }, &doc! {}),
            ErrorCode::Location(34450)
        );
        assert_eq!(
            eval_err(&doc! { "$substrCP": ["a", 0.5, 1] }, &doc! {}),
            ErrorCode::Location(34451)
        );
        assert_eq!(
            eval_err(&doc! { "$substrCP": ["a", 0, -1] }, &doc! {}),
            ErrorCode::Location(34454)
        );
        assert_eq!(
            eval_err(&doc! { "$substrCP": ["a", -1, 1] }, &doc! {}),
            ErrorCode::Location(34455)
        );
        assert_eq!(
            parse_err(&doc! { "$substrCP": ["a", 0] }),
            ErrorCode::Location(16020)
        );
    }

    #[test]
    fn case_mapping_folds_ascii_and_null_is_empty() {
        assert_eq!(value(&doc! { "$toUpper": "abc-é" }), s("ABC-é"));
        assert_eq!(value(&doc! { "$toLower": "ABC" }), s("abc"));
        assert_eq!(value(&doc! { "$toUpper": null }), s(""));
        assert_eq!(value(&doc! { "$toUpper": "$missing" }), s(""));
        assert_eq!(value(&doc! { "$toLower": 1.5 }), s("1.5"));
        assert_eq!(
            eval_err(&doc! { "$toUpper": [[1]] }, &doc! {}),
            ErrorCode::Location(16007)
        );
    }

    #[test]
    fn split_keeps_empty_pieces_and_checks_its_operands() {
        assert_eq!(
            value(&doc! { "$split": ["June-15-2013", "-"] }),
            Some(Bson::Array(vec!["June".into(), "15".into(), "2013".into()]))
        );
        assert_eq!(
            value(&doc! { "$split": ["a,b,", ","] }),
            Some(Bson::Array(vec!["a".into(), "b".into(), "".into()]))
        );
        assert_eq!(value(&doc! { "$split": [null, ","] }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$split": [1, ","] }, &doc! {}),
            ErrorCode::Location(40085)
        );
        assert_eq!(
            eval_err(&doc! { "$split": ["a", 1] }, &doc! {}),
            ErrorCode::Location(40086)
        );
        assert_eq!(
            eval_err(&doc! { "$split": ["a", ""] }, &doc! {}),
            ErrorCode::Location(40087)
        );
    }

    #[test]
    fn trim_removes_whitespace_or_the_given_chars() {
        assert_eq!(
            value(&doc! { "$trim": { "input": "  \n good  bread \t " } }),
            s("good  bread")
        );
        assert_eq!(value(&doc! { "$ltrim": { "input": "  a  " } }), s("a  "));
        assert_eq!(value(&doc! { "$rtrim": { "input": "  a  " } }), s("  a"));
        assert_eq!(
            value(&doc! { "$trim": { "input": "\u{2002}a\u{a0}" } }),
            s("a")
        );
        assert_eq!(
            value(&doc! { "$trim": { "input": "xxaxyx", "chars": "xy" } }),
            s("a")
        );
        assert_eq!(
            value(&doc! { "$trim": { "input": null } }),
            Some(Bson::Null)
        );
        assert_eq!(
            value(&doc! { "$trim": { "input": "a", "chars": null } }),
            Some(Bson::Null)
        );
        assert_eq!(
            eval_err(&doc! { "$trim": { "input": 1 } }, &doc! {}),
            ErrorCode::Location(50699)
        );
        assert_eq!(
            eval_err(&doc! { "$trim": { "input": "a", "chars": 1 } }, &doc! {}),
            ErrorCode::Location(50700)
        );
        assert_eq!(
            parse_err(&doc! { "$trim": "a" }),
            ErrorCode::Location(50696)
        );
        assert_eq!(
            parse_err(&doc! { "$trim": { "input": "a", "x": 1 } }),
            ErrorCode::Location(50694)
        );
        assert_eq!(
            parse_err(&doc! { "$trim": { "chars": "a" } }),
            ErrorCode::Location(50695)
        );
    }

    #[test]
    fn lengths_count_code_points_or_bytes_and_refuse_null() {
        assert_eq!(
            value(&doc! { "$strLenCP": "cafétéria" }),
            Some(Bson::Int32(9))
        );
        assert_eq!(
            value(&doc! { "$strLenBytes": "cafétéria" }),
            Some(Bson::Int32(11))
        );
        assert_eq!(
            value(&doc! { "$strLenBytes": "寿司" }),
            Some(Bson::Int32(6))
        );
        assert_eq!(
            eval_err(&doc! { "$strLenCP": null }, &doc! {}),
            ErrorCode::Location(34471)
        );
        assert_eq!(
            eval_err(&doc! { "$strLenBytes": 1 }, &doc! {}),
            ErrorCode::Location(34473)
        );
    }

    #[test]
    fn index_of_cp_counts_code_points_within_bounds() {
        assert_eq!(
            value(&doc! { "$indexOfCP": ["cafeteria", "e"] }),
            Some(Bson::Int32(3))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["cafétéria", "é"] }),
            Some(Bson::Int32(3))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["cafétéria", "t"] }),
            Some(Bson::Int32(4))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["foo.bar.fi", ".", 5] }),
            Some(Bson::Int32(7))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["vanilla", "ll", 0, 2] }),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["vanilla", "nilla", 3, 5] }),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["abc", "", 1] }),
            Some(Bson::Int32(1))
        );
        assert_eq!(
            value(&doc! { "$indexOfCP": ["abc", "b", 5, 2] }),
            Some(Bson::Int32(-1))
        );
        assert_eq!(value(&doc! { "$indexOfCP": [null, "a"] }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$indexOfCP": [1, "a"] }, &doc! {}),
            ErrorCode::Location(40093)
        );
        assert_eq!(
            eval_err(&doc! { "$indexOfCP": ["a", null] }, &doc! {}),
            ErrorCode::Location(40094)
        );
        assert_eq!(
            eval_err(&doc! { "$indexOfCP": ["a", "a", 1.5] }, &doc! {}),
            ErrorCode::Location(40096)
        );
        assert_eq!(
            eval_err(&doc! { "$indexOfCP": ["a", "a", -1] }, &doc! {}),
            ErrorCode::Location(40097)
        );
    }

    #[test]
    fn strcasecmp_folds_ascii_case() {
        assert_eq!(
            value(&doc! { "$strcasecmp": ["ABC", "abc"] }),
            Some(Bson::Int32(0))
        );
        assert_eq!(
            value(&doc! { "$strcasecmp": ["abc", "ABD"] }),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            value(&doc! { "$strcasecmp": ["b", null] }),
            Some(Bson::Int32(1))
        );
    }

    #[test]
    fn replace_one_or_all_occurrences() {
        assert_eq!(
            value(
                &doc! { "$replaceOne": { "input": "blue paint blue", "find": "blue", "replacement": "red" } }
            ),
            s("red paint blue")
        );
        assert_eq!(
            value(
                &doc! { "$replaceAll": { "input": "blue paint blue", "find": "blue", "replacement": "red" } }
            ),
            s("red paint red")
        );
        assert_eq!(
            value(&doc! { "$replaceAll": { "input": null, "find": "a", "replacement": "b" } }),
            Some(Bson::Null)
        );
        assert_eq!(
            eval_err(
                &doc! { "$replaceAll": { "input": 1, "find": "a", "replacement": "b" } },
                &doc! {}
            ),
            ErrorCode::Location(51746)
        );
        assert_eq!(
            parse_err(&doc! { "$replaceOne": { "input": "a", "find": "a" } }),
            ErrorCode::Location(51747)
        );
        // An empty 'find' matches between every character; the result is bounded.
        assert_eq!(
            value(&doc! { "$replaceAll": { "input": "ab", "find": "", "replacement": "-" } }),
            s("-a-b-")
        );
        let big = "x".repeat(1 << 20);
        assert_eq!(
            eval_err(
                &doc! { "$replaceAll": { "input": "$s", "find": "", "replacement": "$s" } },
                &doc! { "s": big }
            ),
            ErrorCode::ExceededMemoryLimit
        );
    }
}
