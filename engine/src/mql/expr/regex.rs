//! Regular expressions: `$regexMatch`, `$regexFind`, `$regexFindAll` (`{input, regex,
//! options}`; `regex` a string or a BSON regular expression, `options` of `i`, `m`, `s`,
//! `x`, and `u`, which changes nothing). A constant pattern is compiled once, when the
//! expression is parsed; a per-document one (from a field) is compiled the first time it is
//! seen and kept in a small cache of the expression's last [`CACHE_SIZE`] patterns. Matches are `{match, idx, captures}` with `idx` in code points and a
//! null capture for a group that did not take part. Patterns are compiled by the `regex`
//! crate (bounded in size), whose syntax is close to PCRE's but has no look-around and no
//! backreferences (such a pattern fails with 51111), and whose `$` without `m` matches only
//! at the very end.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

use ::regex::{Regex, RegexBuilder};
use bson::{Bson, Document};

use super::args::{self, fail, nullish, type_name, value};
use super::{EvalError, Expr, Resolve, Vars};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Target, Values};

/// The most bytes a compiled pattern may take (the `regex` crate's size limit).
const COMPILED_LIMIT: usize = 4 << 20;

/// How many per-document patterns (with their options) an expression keeps compiled.
const CACHE_SIZE: usize = 8;

/// The most bytes of matches `$regexFindAll` returns (MongoDB's 64 MiB, 51151).
const OUTPUT_LIMIT: usize = 64 << 20;

/// Which operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Match,
    Find,
    FindAll,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Match => "$regexMatch",
            Mode::Find => "$regexFind",
            Mode::FindAll => "$regexFindAll",
        }
    }
}

/// A compiled pattern, with the text and options it was compiled from (what equality
/// compares).
#[derive(Clone, Debug)]
struct Compiled {
    pattern: String,
    options: String,
    regex: Regex,
}

impl PartialEq for Compiled {
    fn eq(&self, other: &Compiled) -> bool {
        self.pattern == other.pattern && self.options == other.options
    }
}

/// The patterns a per-document regular expression compiled last, most recent first (at most
/// [`CACHE_SIZE`]). A clone starts empty; any two caches are equal (equality is the
/// expression's, not the cache's).
#[derive(Default)]
struct Cache(Mutex<VecDeque<Compiled>>);

impl Cache {
    /// The compiled `pattern` with `flags`: from the cache (moved to the front), else built
    /// and put at the front, dropping the least recently used past [`CACHE_SIZE`].
    ///
    /// # Errors
    /// What [`build`] fails with (a failure is not cached).
    fn get_or_build(
        &self,
        mode: Mode,
        pattern: String,
        flags: String,
    ) -> std::result::Result<Compiled, (u32, String)> {
        {
            let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(i) = kept
                .iter()
                .position(|c| c.pattern == pattern && c.options == flags)
            {
                let hit = kept.remove(i).expect("a position in the cache");
                kept.push_front(hit.clone());
                return Ok(hit);
            }
        }
        // Compiled outside the lock: another thread may compile the same pattern meanwhile.
        let compiled = build(mode, pattern, flags)?;
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push_front(compiled.clone());
        kept.truncate(CACHE_SIZE);
        Ok(compiled)
    }

    /// How many patterns are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

impl Clone for Cache {
    fn clone(&self) -> Cache {
        Cache::default()
    }
}

impl PartialEq for Cache {
    fn eq(&self, _: &Cache) -> bool {
        true
    }
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

/// The pattern of a regular expression operator.
#[derive(Clone, Debug, PartialEq)]
enum Pattern {
    /// Constant `regex` and `options`, compiled at parse time (`None`: a null pattern).
    Const(Option<Compiled>),
    /// Evaluated per document; compiled through the expression's cache.
    Dynamic {
        regex: Expr,
        options: Option<Expr>,
        cache: Cache,
    },
}

/// A regular expression operator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RegexExpr {
    mode: Mode,
    input: Expr,
    pattern: Pattern,
}

/// Parses `$regexMatch`, `$regexFind`, `$regexFindAll` (`None` for another operator).
///
/// # Errors
/// MongoDB's 51103 (not an object), 31024 (an unknown argument), 31022 / 31023 (no `input`
/// / `regex`); for a constant pattern, what [`compile`] fails with.
pub(super) fn parse(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    let mode = match op {
        "$regexMatch" => Mode::Match,
        "$regexFind" => Mode::Find,
        "$regexFindAll" => Mode::FindAll,
        _ => return Ok(None),
    };
    let Bson::Document(_) = arg else {
        return Err(Error::rejected(
            ErrorCode::Location(51103),
            format!(
                "{op} expects an object of named arguments but found: {}",
                type_name(Some(arg))
            ),
        ));
    };
    let raw = args::named(op, arg, &["input", "regex", "options"], (51103, 31024))?;
    let input = args::required(op, "input", raw[0], 31022, target)?;
    let regex = args::required(op, "regex", raw[1], 31023, target)?;
    let options = args::optional(raw[2], target)?;
    let pattern = match (&regex, &options) {
        (Expr::Literal(r), None) => Pattern::Const(
            compile(mode, Some(r), None)
                .map_err(|(c, m)| Error::rejected(ErrorCode::Location(c), m))?,
        ),
        (Expr::Literal(r), Some(Expr::Literal(o))) => Pattern::Const(
            compile(mode, Some(r), Some(o))
                .map_err(|(c, m)| Error::rejected(ErrorCode::Location(c), m))?,
        ),
        _ => Pattern::Dynamic {
            regex,
            options,
            cache: Cache::default(),
        },
    };
    Ok(Some(Expr::Regex(Box::new(RegexExpr {
        mode,
        input,
        pattern,
    }))))
}

/// Compiles a pattern and its options as MongoDB validates them (`None`: a null pattern).
///
/// # Errors
/// MongoDB's code and message: 51105 (`regex` neither a string nor a regex), 51106
/// (`options` not a string), 51107 (options both in the regex and in `options`), 51109 /
/// 51110 (a NUL byte in the pattern / options), 51108 (an unknown option), 51111 (a pattern
/// that does not compile, or compiles past the size limit).
fn compile(
    mode: Mode,
    regex: Option<&Bson>,
    options: Option<&Bson>,
) -> std::result::Result<Option<Compiled>, (u32, String)> {
    prepare(mode, regex, options)?
        .map(|(pattern, flags)| build(mode, pattern, flags))
        .transpose()
}

/// Checks a pattern and its options as MongoDB validates them: the pattern text and the
/// option letters (`None`: a null pattern).
///
/// # Errors
/// As [`compile`], but 51108 and 51111, which [`build`] checks.
fn prepare(
    mode: Mode,
    regex: Option<&Bson>,
    options: Option<&Bson>,
) -> std::result::Result<Option<(String, String)>, (u32, String)> {
    let op = mode.name();
    let options = options.filter(|o| !nullish(Some(o)));
    let (pattern, mut flags) = match regex {
        None | Some(Bson::Null | Bson::Undefined) => (None, String::new()),
        Some(Bson::String(s)) => (Some(s.clone()), String::new()),
        Some(Bson::RegularExpression(r)) => {
            if options.is_some() && !r.options.is_empty() {
                return Err((
                    51107,
                    format!(
                        "{op}: found regex option(s) specified in both 'regex' and 'option' fields"
                    ),
                ));
            }
            (Some(r.pattern.to_string()), r.options.to_string())
        }
        Some(other) => {
            return Err((
                51105,
                format!(
                    "{op} needs 'regex' to be of type string or regex, not {}",
                    type_name(Some(other))
                ),
            ));
        }
    };
    match options {
        None => {}
        Some(Bson::String(o)) => flags.clone_from(o),
        Some(_) => return Err((51106, format!("{op} needs 'options' to be of type string"))),
    }
    if pattern.as_ref().is_some_and(|p| p.contains('\0')) {
        return Err((
            51109,
            format!("{op}: regular expression cannot contain an embedded null byte"),
        ));
    }
    if flags.contains('\0') {
        return Err((
            51110,
            format!("{op}: regular expression options cannot contain an embedded null byte"),
        ));
    }
    Ok(pattern.map(|p| (p, flags)))
}

/// Compiles a checked pattern with its option letters, bounded to [`COMPILED_LIMIT`] bytes.
///
/// # Errors
/// MongoDB's 51108 for an unknown option, 51111 for a pattern that does not compile or
/// compiles past the size limit.
fn build(
    mode: Mode,
    pattern: String,
    flags: String,
) -> std::result::Result<Compiled, (u32, String)> {
    let op = mode.name();
    let mut b = RegexBuilder::new(&pattern);
    b.size_limit(COMPILED_LIMIT).dfa_size_limit(COMPILED_LIMIT);
    for f in flags.chars() {
        match f {
            'i' => b.case_insensitive(true),
            'm' => b.multi_line(true),
            's' => b.dot_matches_new_line(true),
            'x' => b.ignore_whitespace(true),
            // UTF-8, which patterns always are (MongoDB accepts it too).
            'u' => &mut b,
            _ => return Err((51108, format!("{op} invalid flag in regex options: {f}"))),
        };
    }
    let regex = b
        .build()
        .map_err(|e| (51111, format!("Invalid Regex in {op}: {e}")))?;
    Ok(Compiled {
        pattern,
        options: flags,
        regex,
    })
}

impl RegexExpr {
    pub(super) fn fields<'a>(&'a self, out: &mut Vec<(Target, &'a [String])>) {
        self.input.fields(out);
        if let Pattern::Dynamic { regex, options, .. } = &self.pattern {
            regex.fields(out);
            if let Some(o) = options {
                o.fields(out);
            }
        }
    }

    /// # Errors
    /// MongoDB's 51104 for an `input` that is not a string, 51151 for `$regexFindAll`
    /// matches past 64 MiB; a per-document pattern's [`compile`] errors.
    pub(super) fn eval(
        &self,
        values: &dyn Values,
        vars: &Vars<'_>,
    ) -> std::result::Result<Option<Bson>, EvalError> {
        let op = self.mode.name();
        let dynamic;
        let compiled = match &self.pattern {
            Pattern::Const(c) => c.as_ref(),
            Pattern::Dynamic {
                regex,
                options,
                cache,
            } => {
                let r = value(regex, values, vars)?;
                let o = match options {
                    Some(o) => value(o, values, vars)?,
                    None => None,
                };
                dynamic = prepare(self.mode, r.as_ref(), o.as_ref())
                    .and_then(|p| {
                        p.map(|(pattern, flags)| cache.get_or_build(self.mode, pattern, flags))
                            .transpose()
                    })
                    .map_err(|(c, m)| fail(c, m))?;
                dynamic.as_ref()
            }
        };
        let input = match value(&self.input, values, vars)? {
            i if nullish(i.as_ref()) => None,
            Some(Bson::String(s)) => Some(s),
            other => {
                return Err(fail(
                    51104,
                    format!(
                        "{op} needs 'input' to be of type string, not {}",
                        type_name(other.as_ref())
                    ),
                ));
            }
        };
        let (Some(input), Some(c)) = (input, compiled) else {
            return Ok(Some(match self.mode {
                Mode::Match => Bson::Boolean(false),
                Mode::Find => Bson::Null,
                Mode::FindAll => Bson::Array(Vec::new()),
            }));
        };
        let re = &c.regex;
        Ok(Some(match self.mode {
            Mode::Match => Bson::Boolean(re.is_match(&input)),
            Mode::Find => re.captures(&input).map_or(Bson::Null, |caps| {
                found(
                    &caps,
                    input[..caps.get(0).map_or(0, |m| m.start())]
                        .chars()
                        .count(),
                )
            }),
            Mode::FindAll => {
                let mut out = Vec::new();
                let (mut start, mut counted_to, mut cp) = (0_usize, 0_usize, 0_usize);
                let mut size = 0_usize;
                while let Some(caps) = re.captures_at(&input, start) {
                    let Some(m) = caps.get(0) else {
                        break;
                    };
                    cp += input[counted_to..m.start()].chars().count();
                    counted_to = m.start();
                    size +=
                        m.len() + caps.iter().flatten().map(|g| g.len() + 16).sum::<usize>() + 64;
                    if size > OUTPUT_LIMIT {
                        return Err(fail(
                            51151,
                            format!(
                                "{op}: the size of buffer to store output exceeded the 64MB limit"
                            ),
                        ));
                    }
                    out.push(found(&caps, cp));
                    start = if m.is_empty() {
                        // An empty match: move on by one character.
                        m.start() + input[m.start()..].chars().next().map_or(1, char::len_utf8)
                    } else {
                        m.end()
                    };
                    if start >= input.len() {
                        break;
                    }
                }
                Bson::Array(out)
            }
        }))
    }
}

/// A match as MongoDB returns it: `{match, idx, captures}`.
fn found(caps: &::regex::Captures<'_>, idx: usize) -> Bson {
    let mut d = Document::new();
    d.insert("match", caps.get(0).map_or("", |m| m.as_str()));
    d.insert("idx", Bson::Int32(i32::try_from(idx).unwrap_or(i32::MAX)));
    d.insert(
        "captures",
        Bson::Array(
            caps.iter()
                .skip(1)
                .map(|g| g.map_or(Bson::Null, |g| Bson::String(g.as_str().to_owned())))
                .collect(),
        ),
    );
    Bson::Document(d)
}

#[cfg(test)]
mod tests {
    use bson::{Regex as BsonRegex, doc};

    use super::super::tests::{eval, eval_err, parse_err, value};
    use super::*;

    fn re(pattern: &str, options: &str) -> Bson {
        Bson::RegularExpression(BsonRegex {
            pattern: pattern.to_owned().try_into().expect("no NUL"),
            options: options.to_owned().try_into().expect("no NUL"),
        })
    }

    #[test]
    fn regex_match_and_null_input() {
        assert_eq!(
            value(&doc! { "$regexMatch": { "input": "Coffee and cake", "regex": "and c" } }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            value(&doc! { "$regexMatch": { "input": "CAFE", "regex": "cafe", "options": "i" } }),
            Some(Bson::Boolean(true))
        );
        let r = re("^cafe", "i");
        assert_eq!(
            value(&doc! { "$regexMatch": { "input": "Café au lait", "regex": r } }),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            value(&doc! { "$regexMatch": { "input": null, "regex": "a" } }),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            value(&doc! { "$regexFind": { "input": "$missing", "regex": "a" } }),
            Some(Bson::Null)
        );
        assert_eq!(
            value(&doc! { "$regexFindAll": { "input": "a", "regex": null } }),
            Some(Bson::Array(vec![]))
        );
    }

    #[test]
    fn regex_find_counts_code_points_and_nulls_unmatched_groups() {
        assert_eq!(
            value(&doc! { "$regexFind": { "input": "cafétéria", "regex": "(t)(x)?é" } }),
            Some(Bson::Document(doc! {
                "match": "té", "idx": 4, "captures": ["t", null],
            }))
        );
        assert_eq!(
            value(&doc! { "$regexFind": { "input": "abc", "regex": "z" } }),
            Some(Bson::Null)
        );
    }

    #[test]
    fn regex_find_all_returns_every_match_without_overlap() {
        // The manual's example: the email addresses of a text.
        let d = doc! { "comment": "Hi, I'm just reading about MongoDB -- aunt.arc.tica@example.com or x@y.org" };
        let got = eval(
            &doc! { "$regexFindAll": { "input": "$comment", "regex": "[a-z0-9_.+-]+@[a-z0-9_.+-]+\\.[a-z0-9_.+-]+", "options": "i" } },
            &d,
        );
        assert_eq!(
            got,
            Some(Bson::Array(vec![
                Bson::Document(
                    doc! { "match": "aunt.arc.tica@example.com", "idx": 38, "captures": [] }
                ),
                Bson::Document(doc! { "match": "x@y.org", "idx": 67, "captures": [] }),
            ]))
        );
        // Empty matches move on by one code point, and none is taken at the very end.
        assert_eq!(
            value(&doc! { "$regexFindAll": { "input": "éa", "regex": "" } }),
            Some(Bson::Array(vec![
                Bson::Document(doc! { "match": "", "idx": 0, "captures": [] }),
                Bson::Document(doc! { "match": "", "idx": 1, "captures": [] }),
            ]))
        );
        assert_eq!(
            value(&doc! { "$regexFindAll": { "input": "", "regex": "" } }),
            Some(Bson::Array(vec![Bson::Document(
                doc! { "match": "", "idx": 0, "captures": [] }
            )]))
        );
    }

    #[test]
    fn options_and_per_document_patterns() {
        let d = doc! { "s": "line1\nLINE2", "re": "^line2$", "o": "im" };
        assert_eq!(
            eval(
                &doc! { "$regexMatch": { "input": "$s", "regex": "$re", "options": "$o" } },
                &d
            ),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            eval(
                &doc! { "$regexMatch": { "input": "$s", "regex": "$re" } },
                &d
            ),
            Some(Bson::Boolean(false))
        );
        assert_eq!(
            value(&doc! { "$regexMatch": { "input": "ab", "regex": "B", "options": "ui" } }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            value(&doc! { "$regexMatch": { "input": "a\nb", "regex": "a.b", "options": "s" } }),
            Some(Bson::Boolean(true))
        );
        assert_eq!(
            value(
                &doc! { "$regexMatch": { "input": "ab", "regex": "a b # comment", "options": "x" } }
            ),
            Some(Bson::Boolean(true))
        );
    }

    #[test]
    fn malformed_arguments_fail_with_mongodb_codes() {
        assert_eq!(
            parse_err(&doc! { "$regexMatch": "a" }),
            ErrorCode::Location(51103)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": "a", "x": 1 } }),
            ErrorCode::Location(31024)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "regex": "a" } }),
            ErrorCode::Location(31022)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a" } }),
            ErrorCode::Location(31023)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": 1 } }),
            ErrorCode::Location(51105)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": "a", "options": 1 } }),
            ErrorCode::Location(51106)
        );
        let r = re("a", "i");
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": r, "options": "m" } }),
            ErrorCode::Location(51107)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": "a", "options": "q" } }),
            ErrorCode::Location(51108)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": "(" } }),
            ErrorCode::Location(51111)
        );
        // Backreferences are PCRE's, not the regex crate's.
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": "(a)\\1" } }),
            ErrorCode::Location(51111)
        );
        assert_eq!(
            parse_err(&doc! { "$regexMatch": { "input": "a", "regex": "a{1000}{1000}" } }),
            ErrorCode::Location(51111)
        );
        assert_eq!(
            eval_err(
                &doc! { "$regexMatch": { "input": 1, "regex": "a" } },
                &doc! {}
            ),
            ErrorCode::Location(51104)
        );
        assert_eq!(
            eval_err(
                &doc! { "$regexFind": { "input": "a", "regex": "$r" } },
                &doc! { "r": "(" }
            ),
            ErrorCode::Location(51111)
        );
    }

    /// A document as the values of an expression (every path reads its top-level field).
    struct Fields<'a>(&'a Document);

    impl Values for Fields<'_> {
        fn root(&self, _: Target, path: &[String]) -> crate::mql::filter::Got<'_> {
            Ok(path
                .first()
                .and_then(|f| self.0.get(f))
                .map(std::borrow::Cow::Borrowed))
        }
    }

    fn dynamic_cache(e: &Expr) -> &Cache {
        match e {
            Expr::Regex(r) => match &r.pattern {
                Pattern::Dynamic { cache, .. } => cache,
                Pattern::Const(_) => panic!("a constant pattern"),
            },
            other => panic!("not a regex: {other:?}"),
        }
    }

    #[test]
    fn per_document_patterns_are_cached_within_a_bound() {
        let target = |path: &[String]| (Target::Field, path.to_vec());
        let spec = doc! { "$regexFind": { "input": "$s", "regex": "$re", "options": "$o" } };
        let e = Expr::parse(&Bson::Document(spec), &target).expect("parses");
        let cache = dynamic_cache(&e);
        assert_eq!(cache.len(), 0);
        // Many documents, cycling through more patterns than the cache keeps: every answer
        // is the one its own pattern gives.
        for i in 0..200_usize {
            let k = i % (CACHE_SIZE + 3);
            let d = doc! {
                "s": format!("x{k}-X{k}"),
                "re": format!("x{k}$"),
                "o": if i % 2 == 0 { "i" } else { "" },
            };
            let got = e
                .eval_with(&Fields(&d), &Vars::default())
                .expect("evaluates")
                .map(std::borrow::Cow::into_owned);
            let want = if i % 2 == 0 {
                Bson::Document(doc! {
                    "match": format!("X{k}"),
                    "idx": i32::try_from(format!("x{k}-").len()).expect("small"),
                    "captures": [],
                })
            } else {
                Bson::Null
            };
            assert_eq!(got, Some(want), "document {i}");
            assert!(cache.len() <= CACHE_SIZE);
        }
        assert_eq!(cache.len(), CACHE_SIZE);
        // A repeated pattern is a hit: it moves to the front and nothing else is dropped.
        let d = doc! { "s": "ab", "re": "B", "o": "i" };
        for _ in 0..3 {
            assert_eq!(
                e.eval_with(&Fields(&d), &Vars::default())
                    .expect("evaluates")
                    .map(std::borrow::Cow::into_owned),
                Some(Bson::Document(
                    doc! { "match": "b", "idx": 1, "captures": [] }
                ))
            );
        }
        assert_eq!(cache.len(), CACHE_SIZE);
        {
            let kept = cache.0.lock().expect("not poisoned");
            assert_eq!(
                (kept[0].pattern.as_str(), kept[0].options.as_str()),
                ("B", "i")
            );
        }
        // A pattern that does not compile fails every time and is not kept.
        let bad = doc! { "s": "a", "re": "(", "o": "" };
        for _ in 0..2 {
            assert!(e.eval_with(&Fields(&bad), &Vars::default()).is_err());
        }
        assert_eq!(cache.len(), CACHE_SIZE);
        // A clone starts with an empty cache and still equals the original.
        let copy = e.clone();
        assert_eq!(dynamic_cache(&copy).len(), 0);
        assert_eq!(copy, e);
    }
}
