//! Query filters: the MongoDB-style filter document parsed into predicates on the meta field,
//! the time field and measurement fields (SPEC §14.2–§14.4).

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::{canonical_rank, compare, to_bson};
use tscoll_codec::{ValueRef, tag};

use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::{EvalError, Expr};

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Gt,
    Gte,
    Lt,
    Lte,
}

/// One predicate of a conjunction.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Pred {
    /// On the meta field (`path` empty) or a sub-field of it.
    Meta {
        path: Vec<String>,
        op: Cmp,
        value: Bson,
    },
    /// `$in` on the meta field or a sub-field.
    MetaIn {
        path: Vec<String>,
        values: Vec<Bson>,
    },
    /// On the time field; `None` = a non-date operand, which matches nothing (R-14.4.3).
    Time { op: Cmp, value: Option<i64> },
    /// On a measurement field (dotted path).
    Field {
        path: Vec<String>,
        op: Cmp,
        value: Bson,
    },
    /// `$in` on a measurement field or the time field.
    FieldIn {
        path: Vec<String>,
        values: Vec<Bson>,
    },
}

/// A parsed filter: the conjunction of its predicates and its clauses.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Filter {
    /// The top-level comparisons and `$in`s: pushed down to the index, control records and
    /// whole buckets (SPEC §14.4).
    pub(crate) preds: Vec<Pred>,
    /// Everything else (`$or`, `$nor`, `$not`, `$ne`, `$nin`, `$exists`, and the predicates
    /// inside them): evaluated exactly, per series when a clause reads the meta field only,
    /// per measurement otherwise; it never prunes a bucket by control.
    pub(crate) clauses: Vec<Node>,
}

/// Where a leaf of a [`Node`] reads its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The meta field (the leaf's path is inside it).
    Meta,
    /// The time field.
    Time,
    /// A measurement field (the leaf's path starts with it).
    Field,
}

/// A test of one value, with MongoDB's semantics (type bracketing, `null` matching a
/// missing field, an array matching when an element does).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Test {
    /// `$eq`, `$gt`, `$gte`, `$lt`, `$lte`.
    Cmp(Cmp, Bson),
    /// `$in`.
    In(Vec<Bson>),
    /// `$in` holding regular expressions: equal to one of the values, or a string (or an
    /// array element) matching one of the patterns.
    InAny(Vec<Bson>, Vec<Pattern>),
    /// `$ne`: not `$eq` (so a missing field matches, unless the operand is `null`).
    Ne(Bson),
    /// `$nin`: not `$in`.
    Nin(Vec<Bson>),
    /// `$exists`.
    Exists(bool),
    /// `$not: {ops}`: not all of them (a missing field matches).
    Not(Vec<Test>),
    /// `$type`: the value's BSON type is one of these (type numbers; an array also matches
    /// by an element's type).
    Type(Vec<i32>),
    /// `$regex` (with `$options`), or a regular expression as an equality operand: a string
    /// or symbol value (or an array element) matches the pattern.
    Regex(Pattern),
    /// `$mod: [divisor, remainder]`: a number whose integer part modulo the divisor is the
    /// remainder.
    Mod(i64, i64),
    /// `$size`: an array of this many elements.
    Size(usize),
    /// `$all`: an array holding every operand (each as `$eq` would match it).
    All(Vec<Bson>),
    /// `$elemMatch: {ops}`: an array with an element passing all of them.
    ElemMatch(Vec<Test>),
    /// `$elemMatch: {filter}`: an array with a document element matching the filter (its
    /// leaves are [`Target::Field`] paths inside the element).
    ElemMatchDoc(Box<Node>),
}

/// A compiled regular expression of a filter (`regex` crate: Perl-like syntax without
/// look-around or back-references, where MongoDB uses PCRE).
#[derive(Clone, Debug)]
pub(crate) struct Pattern {
    source: String,
    options: String,
    re: regex::Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source && self.options == other.options
    }
}

impl Pattern {
    /// Compiles `source` with MongoDB's options `i` (case), `m` (multi-line), `s` (dot
    /// matches new lines) and `x` (extended).
    fn new(source: &str, options: &str) -> Result<Pattern> {
        let mut b = regex::RegexBuilder::new(source);
        for o in options.chars() {
            match o {
                'i' => b.case_insensitive(true),
                'm' => b.multi_line(true),
                's' => b.dot_matches_new_line(true),
                'x' => b.ignore_whitespace(true),
                other => {
                    return Err(bad(&format!("invalid flag in regex options: {other}")));
                }
            };
        }
        let re = b
            .build()
            .map_err(|e| bad(&format!("invalid regular expression /{source}/: {e}")))?;
        Ok(Pattern {
            source: source.to_owned(),
            options: options.to_owned(),
            re,
        })
    }
}

/// The BSON type number of a value (`$type`).
fn type_number(v: &Bson) -> i32 {
    match v {
        Bson::Double(_) => 1,
        Bson::String(_) => 2,
        Bson::Document(_) => 3,
        Bson::Array(_) => 4,
        Bson::Binary(_) => 5,
        Bson::Undefined => 6,
        Bson::ObjectId(_) => 7,
        Bson::Boolean(_) => 8,
        Bson::DateTime(_) => 9,
        Bson::Null => 10,
        Bson::RegularExpression(_) => 11,
        Bson::DbPointer(_) => 12,
        Bson::JavaScriptCode(_) => 13,
        Bson::Symbol(_) => 14,
        Bson::JavaScriptCodeWithScope(_) => 15,
        Bson::Int32(_) => 16,
        Bson::Timestamp(_) => 17,
        Bson::Int64(_) => 18,
        Bson::Decimal128(_) => 19,
        Bson::MinKey => -1,
        Bson::MaxKey => 127,
    }
}

/// The canonical rank (SPEC R-4.3.4, `tscoll_catalog::value::canonical_rank`) of the values
/// of BSON type number `t`.
fn rank_of_type(t: i32) -> Option<i32> {
    Some(match t {
        1 | 16 | 18 | 19 => 10,
        2 | 14 => 15,
        3 => 20,
        4 => 25,
        5 => 30,
        6 => 0,
        7 => 35,
        8 => 40,
        9 => 45,
        10 => 5,
        11 => 50,
        12 => 55,
        13 => 60,
        15 => 65,
        17 => 47,
        -1 => -1,
        127 => 127,
        _ => return None,
    })
}

/// Whether a field whose control min and max are `min` and `max` may hold a value of one of
/// `ranks` (canonical type ranks): every value's rank lies between the min's and the max's;
/// when arrays may be among them, any type may be inside one.
fn ranks_may_hold(
    min: Option<&Bson>,
    max: Option<&Bson>,
    mut ranks: impl Iterator<Item = i32>,
) -> bool {
    let (Some(min), Some(max)) = (min, max) else {
        return min.is_some() || max.is_some();
    };
    let (lo, hi) = (canonical_rank(min), canonical_rank(max));
    let array = canonical_rank(&Bson::Array(Vec::new()));
    (lo <= array && array <= hi) || ranks.any(|r| lo <= r && r <= hi)
}

/// The type numbers a `$type` operand names: a number, an alias (`"double"`, ...,
/// `"number"` for the four numeric types) or an array of them.
fn type_numbers(v: &Bson) -> Result<Vec<i32>> {
    const ALIASES: [(&str, i32); 21] = [
        ("double", 1),
        ("string", 2),
        ("object", 3),
        ("array", 4),
        ("binData", 5),
        ("undefined", 6),
        ("objectId", 7),
        ("bool", 8),
        ("date", 9),
        ("null", 10),
        ("regex", 11),
        ("dbPointer", 12),
        ("javascript", 13),
        ("symbol", 14),
        ("javascriptWithScope", 15),
        ("int", 16),
        ("timestamp", 17),
        ("long", 18),
        ("decimal", 19),
        ("minKey", -1),
        ("maxKey", 127),
    ];
    let known = |n: i32| (1..=19).contains(&n) || n == -1 || n == 127;
    match v {
        Bson::Array(items) if !items.is_empty() => {
            let mut out = Vec::new();
            for i in items {
                out.extend(type_numbers(i)?);
            }
            Ok(out)
        }
        Bson::String(s) if s == "number" => Ok(vec![1, 16, 18, 19]),
        Bson::String(s) => ALIASES
            .iter()
            .find(|(a, _)| a == s)
            .map(|(_, n)| vec![*n])
            .ok_or_else(|| bad(&format!("unknown type name alias: {s}"))),
        other => match exact_int(other) {
            Some(n) if i32::try_from(n).is_ok_and(known) => {
                Ok(vec![i32::try_from(n).unwrap_or_default()])
            }
            _ => Err(bad(&format!("invalid numerical type code: {other}"))),
        },
    }
}

/// A number that is a whole value (`$mod`, `$size`, `$type` operands; expression and update
/// operands).
pub(crate) fn exact_int(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        #[expect(
            clippy::cast_possible_truncation,
            reason = "checked to be whole and in range"
        )]
        Bson::Double(d) if d.fract() == 0.0 && d.abs() < 9.0e18 => Some(*d as i64),
        _ => None,
    }
}

/// The integer part of a number (`$mod` truncates doubles, as MongoDB does).
fn int_part(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        #[expect(
            clippy::cast_possible_truncation,
            reason = "finite and in range, checked"
        )]
        Bson::Double(d) if d.is_finite() && d.abs() < 9.0e18 => Some(d.trunc() as i64),
        _ => None,
    }
}

/// A boolean tree of tests (a filter document inside `$or`, `$nor`, `$and`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// Every child holds.
    And(Vec<Node>),
    /// Some child holds.
    Or(Vec<Node>),
    /// No child holds.
    Nor(Vec<Node>),
    /// A test of the value at `path`: inside the meta field for [`Target::Meta`], from the
    /// measurement's top level for [`Target::Field`], empty for [`Target::Time`].
    Leaf {
        target: Target,
        path: Vec<String>,
        test: Test,
    },
    /// `$expr`: an aggregation expression that holds ([`crate::mql::expr`]).
    Expr(Expr),
}

/// A value a [`Node`] reads: `Ok(None)` when missing, `Err` when a stored value is corrupt.
pub(crate) type Got<'a> = std::result::Result<Option<Cow<'a, Bson>>, String>;

/// The values a [`Node`] reads, from a measurement or a series.
pub(crate) trait Values {
    /// The value a leaf with `target` and `path` starts from: the meta value, the time, or
    /// the measurement's top-level field `path[0]`. The rest of the path ([`rest_of`]) is
    /// followed by the reader: with query semantics by a filter ([`any_at`]), with
    /// aggregation semantics by an expression ([`field_value`]).
    fn root(&self, target: Target, path: &[String]) -> Got<'_>;

    /// The whole document, for `$$ROOT` and `$$CURRENT`: only pipeline stages have one
    /// (`None`: not at hand).
    fn document(&self) -> Option<Cow<'_, Bson>> {
        None
    }
}

/// The part of a leaf's path below its [`Values::root`]: inside the meta value, below the
/// top-level field, nothing for the time field.
pub(crate) fn rest_of(target: Target, path: &[String]) -> &[String] {
    match target {
        Target::Field => path.get(1..).unwrap_or_default(),
        Target::Meta | Target::Time => path,
    }
}

impl Test {
    /// Whether the values `path` reaches below `v` (`None`: missing) pass, with MongoDB's
    /// path traversal ([`any_at`]): a positive test holds when one of them passes, `$ne`,
    /// `$nin` and `$not` when none of them passes what they negate, `$all` when each of its
    /// operands is matched.
    pub(crate) fn holds_at(&self, v: Option<&Bson>, path: &[String]) -> bool {
        self.holds_over(&|leaf, f| any_at(v, path, leaf, f))
    }

    /// As [`Test::holds_at`] on one element of an array (`$elemMatch`): the element is the
    /// only value tested; a nested array is not looked into.
    fn holds_on_element(&self, e: &Bson) -> bool {
        self.holds_over(&|_, f| f(Some(e)))
    }

    /// The test over the values `each` offers: `each(leaf, f)` calls `f` on each value (with
    /// the elements of an array reached at the end of the path when `leaf`) until it holds,
    /// and says whether it did.
    fn holds_over(&self, each: &Candidates<'_>) -> bool {
        let equal_to_one =
            |xs: &[Bson]| each(true, &mut |e| xs.iter().any(|x| compare_one(e, Cmp::Eq, x)));
        match self {
            Test::Ne(x) => !equal_to_one(std::slice::from_ref(x)),
            Test::Nin(xs) => !equal_to_one(xs),
            Test::All(xs) => {
                !xs.is_empty() && xs.iter().all(|x| equal_to_one(std::slice::from_ref(x)))
            }
            Test::Not(tests) => !tests.iter().all(|t| t.holds_over(each)),
            Test::Exists(e) => each(false, &mut |v| v.is_some()) == *e,
            Test::Size(_) | Test::ElemMatch(_) | Test::ElemMatchDoc(_) => {
                each(false, &mut |v| self.holds_one(v))
            }
            _ => each(true, &mut |v| self.holds_one(v)),
        }
    }

    /// Whether one value a path reached (`None`: missing) passes a positive test; an array
    /// is tested as a whole (its elements are offered separately, [`any_at`]).
    fn holds_one(&self, v: Option<&Bson>) -> bool {
        let string_matches = |e: &Bson, p: &Pattern| match e {
            Bson::String(s) | Bson::Symbol(s) => p.re.is_match(s),
            _ => false,
        };
        match self {
            Test::Cmp(op, x) => compare_one(v, *op, x),
            Test::In(xs) => xs.iter().any(|x| compare_one(v, Cmp::Eq, x)),
            Test::InAny(xs, patterns) => {
                xs.iter().any(|x| compare_one(v, Cmp::Eq, x))
                    || v.is_some_and(|e| patterns.iter().any(|p| string_matches(e, p)))
            }
            Test::Type(types) => v.is_some_and(|v| types.contains(&type_number(v))),
            Test::Regex(p) => v.is_some_and(|e| match e {
                Bson::RegularExpression(r) => {
                    r.pattern.as_str() == p.source && r.options.as_str() == p.options
                }
                e => string_matches(e, p),
            }),
            Test::Mod(d, r) => v
                .and_then(int_part)
                .is_some_and(|n| n.wrapping_rem(*d) == *r),
            Test::Size(n) => matches!(v, Some(Bson::Array(items)) if items.len() == *n),
            Test::ElemMatch(tests) => matches!(v, Some(Bson::Array(items))
                if items.iter().any(|e| tests.iter().all(|t| t.holds_on_element(e)))),
            Test::ElemMatchDoc(node) => matches!(v, Some(Bson::Array(items))
            if items.iter().any(|e| match e {
                Bson::Document(d) => node.eval(&ElementValues(d)).unwrap_or(false),
                _ => false,
            })),
            // Negations and `$exists` are decided over all the values ([`Test::holds_over`]).
            Test::Ne(_) | Test::Nin(_) | Test::All(_) | Test::Not(_) | Test::Exists(_) => {
                self.holds_over(&|_, f| f(v))
            }
        }
    }
}

/// The values a test looks at: `each(leaf, f)` calls `f` on each until it returns true, and
/// returns whether it did ([`Test::holds_over`]).
type Candidates<'a> = dyn Fn(bool, &mut dyn FnMut(Option<&Bson>) -> bool) -> bool + 'a;

/// MongoDB's query path traversal: calls `f` on each value `path` reaches below `v` (`None`
/// for a missing one), until `f` returns true; returns whether it did.
///
/// * Through a document, the path goes on in its field; a missing field, or a scalar with
///   path left, gives one missing value.
/// * Through an array with path left, it goes on in each element that is a document (each
///   may give a missing value); a numeric path part also selects the element at that
///   position (the value itself when the path ends there). Other elements, nested arrays
///   among them, give nothing.
/// * At the end of the path, an array gives each of its elements and then itself when
///   `leaf` (equality, ranges, `$in`, `$type`, ...), only itself otherwise (`$size`,
///   `$elemMatch`); a nested array is a value, not looked into.
pub(crate) fn any_at(
    v: Option<&Bson>,
    path: &[String],
    leaf: bool,
    f: &mut dyn FnMut(Option<&Bson>) -> bool,
) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return match v {
            Some(Bson::Array(items)) if leaf => items.iter().any(|e| f(Some(e))) || f(v),
            _ => f(v),
        };
    };
    match v {
        Some(Bson::Document(d)) => any_at(d.get(first), rest, leaf, f),
        Some(Bson::Array(items)) => {
            let index = array_index(first);
            items.iter().enumerate().any(|(i, e)| {
                let here = index == Some(i);
                match e {
                    Bson::Document(d) if any_at(d.get(first), rest, leaf, f) => true,
                    _ if !here => false,
                    _ if rest.is_empty() => f(Some(e)),
                    Bson::Document(_) | Bson::Array(_) => any_at(Some(e), rest, leaf, f),
                    _ => false,
                }
            })
        }
        _ => f(None),
    }
}

/// The first element of the first array on `path` below `v` that passes `test` with the rest
/// of the path (an `$elemMatch` at the array: the first element it matches); `None` without
/// an array on the way, for a test that records no position, or when no element passes.
fn position_in(v: Option<&Bson>, path: &[String], test: &Test) -> Option<usize> {
    if matches!(
        test,
        Test::Ne(_) | Test::Nin(_) | Test::Not(_) | Test::Exists(_) | Test::Size(_) | Test::All(_)
    ) {
        return None;
    }
    let mut v = v?;
    let mut at = 0;
    loop {
        match v {
            Bson::Array(items) => {
                let rest = &path[at..];
                return items.iter().position(|e| match (rest.is_empty(), test) {
                    (true, Test::ElemMatch(tests)) => tests.iter().all(|t| t.holds_on_element(e)),
                    (true, Test::ElemMatchDoc(node)) => match e {
                        Bson::Document(d) => node.eval(&ElementValues(d)).unwrap_or(false),
                        _ => false,
                    },
                    (true, _) => test.holds_one(Some(e)),
                    (false, _) => test.holds_at(Some(e), rest),
                });
            }
            Bson::Document(d) if at < path.len() => {
                v = d.get(&path[at])?;
                at += 1;
            }
            _ => return None,
        }
    }
}

/// The array position a path part names: digits only, without a leading zero.
fn array_index(part: &str) -> Option<usize> {
    let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
    (digits && (part == "0" || !part.starts_with('0')))
        .then(|| part.parse().ok())
        .flatten()
}

/// The value of an aggregation field path below its root (MongoDB's expression paths, not
/// the query's): through a document, its field; through an array, the array of what the path
/// gives in each element that is a document (elements without the path and other elements
/// are left out, numeric parts are field names); a scalar with path left is missing. So
/// `"$o.b"` over `o: [{b: 1}, {c: 2}, {b: 99}]` is `[1, 99]`.
pub(crate) fn field_value<'v>(
    root: Option<Cow<'v, Bson>>,
    rest: &[String],
) -> Option<Cow<'v, Bson>> {
    if rest.is_empty() {
        return root;
    }
    match root? {
        Cow::Borrowed(b) => expression_path(b, rest),
        Cow::Owned(b) => expression_path(&b, rest).map(|v| Cow::Owned(v.into_owned())),
    }
}

/// [`field_value`] below a value.
fn expression_path<'a>(v: &'a Bson, path: &[String]) -> Option<Cow<'a, Bson>> {
    let Some((first, rest)) = path.split_first() else {
        return Some(Cow::Borrowed(v));
    };
    match v {
        Bson::Document(d) => expression_path(d.get(first)?, rest),
        Bson::Array(items) => Some(Cow::Owned(Bson::Array(
            items
                .iter()
                .filter(|e| matches!(e, Bson::Document(_)))
                .filter_map(|e| expression_path(e, path).map(Cow::into_owned))
                .collect(),
        ))),
        _ => None,
    }
}

/// A document element of an array, for the filter of an `$elemMatch`.
struct ElementValues<'a>(&'a Document);

impl Values for ElementValues<'_> {
    fn root(&self, target: Target, path: &[String]) -> Got<'_> {
        Ok(match target {
            Target::Field => self.0.get(&path[0]).map(Cow::Borrowed),
            Target::Meta | Target::Time => None,
        })
    }
}

impl Node {
    /// Whether the tree holds for `values`.
    ///
    /// # Errors
    /// What `values` fails with.
    pub(crate) fn eval(&self, values: &dyn Values) -> std::result::Result<bool, EvalError> {
        Ok(match self {
            Node::And(children) => {
                for c in children {
                    if !c.eval(values)? {
                        return Ok(false);
                    }
                }
                true
            }
            Node::Or(children) => {
                for c in children {
                    if c.eval(values)? {
                        return Ok(true);
                    }
                }
                false
            }
            Node::Nor(children) => {
                for c in children {
                    if c.eval(values)? {
                        return Ok(false);
                    }
                }
                true
            }
            Node::Leaf { target, path, test } => {
                let v = values.root(*target, path)?;
                test.holds_at(v.as_deref(), rest_of(*target, path))
            }
            // An expression that fails on this measurement fails the query, as in MongoDB.
            Node::Expr(e) => e.holds(values)?,
        })
    }

    /// Calls `f` with the target and path of every leaf.
    pub(crate) fn for_each_leaf(&self, f: &mut dyn FnMut(Target, &[String])) {
        match self {
            Node::And(c) | Node::Or(c) | Node::Nor(c) => {
                c.iter().for_each(|n| n.for_each_leaf(f));
            }
            Node::Leaf { target, path, .. } => f(*target, path),
            Node::Expr(e) => {
                let mut fields = Vec::new();
                e.fields(&mut fields);
                fields.into_iter().for_each(|(t, p)| f(t, p));
            }
        }
    }

    /// Whether a bucket may hold a measurement for which the tree holds, judged by its time
    /// range and control min/max (SPEC §14.4): `false` only when control proves none does.
    /// An `$or` prunes when every branch does; comparisons and `$in`s as the top-level ones
    /// do; `$exists: true` on a top-level field the bucket has never held prunes; `$type` and
    /// `$regex` on a top-level field prune when the canonical type ranks of its control min
    /// and max (every value's rank lies between them, R-4.3.4) leave out every type asked for
    /// and arrays (whose elements could have it); the other operators (`$nin`, `$ne`,
    /// `$exists: false`, ...: control does not say whether a row lacks the field), `$nor` and
    /// meta leaves (judged per series) keep the bucket.
    pub(crate) fn may_match(
        &self,
        min_time: i64,
        max_time: i64,
        control: &dyn ControlBounds,
    ) -> bool {
        match self {
            Node::And(c) => c.iter().all(|n| n.may_match(min_time, max_time, control)),
            Node::Or(c) => c.iter().any(|n| n.may_match(min_time, max_time, control)),
            Node::Nor(_) | Node::Expr(_) => true,
            Node::Leaf {
                target: Target::Meta,
                ..
            } => true,
            Node::Leaf {
                target: Target::Time,
                test,
                ..
            } => match test {
                Test::Cmp(op, Bson::DateTime(v)) => {
                    time_may_match(*op, v.timestamp_millis(), min_time, max_time)
                }
                // R-14.4.3: the time field holds dates only.
                Test::Cmp(_, _) => false,
                Test::In(values) => values.iter().any(|v| match v {
                    Bson::DateTime(v) => {
                        time_may_match(Cmp::Eq, v.timestamp_millis(), min_time, max_time)
                    }
                    _ => false,
                }),
                _ => true,
            },
            Node::Leaf {
                target: Target::Field,
                path,
                test,
            } => {
                let (min, max) = control.bounds(&path[0]);
                match test {
                    Test::Cmp(op, v) => {
                        path_may_match(min.as_ref(), max.as_ref(), &path[1..], *op, v)
                    }
                    Test::In(values) => values.iter().any(|v| {
                        path_may_match(min.as_ref(), max.as_ref(), &path[1..], Cmp::Eq, v)
                    }),
                    Test::Exists(true) if path.len() == 1 => min.is_some() || max.is_some(),
                    Test::Type(types) if path.len() == 1 => ranks_may_hold(
                        min.as_ref(),
                        max.as_ref(),
                        types.iter().filter_map(|t| rank_of_type(*t)),
                    ),
                    // A regular expression matches strings, symbols and regexes only.
                    Test::Regex(_) if path.len() == 1 => {
                        ranks_may_hold(min.as_ref(), max.as_ref(), [15, 50].into_iter())
                    }
                    _ => true,
                }
            }
        }
    }

    /// The whole-meta values a measurement matching the tree must have a meta value equal
    /// to: a whole-meta equality or `$in`, or an `$or` whose every branch is one (the index
    /// scans the series of these values only). `None` for any other tree.
    fn meta_equalities(&self) -> Option<Vec<&Bson>> {
        match self {
            Node::Leaf {
                target: Target::Meta,
                path,
                test,
            } if path.is_empty() => match test {
                Test::Cmp(Cmp::Eq, v) => Some(vec![v]),
                Test::In(vs) => Some(vs.iter().collect()),
                _ => None,
            },
            Node::And(children) if children.len() == 1 => children[0].meta_equalities(),
            Node::Or(children) => {
                let mut all = Vec::new();
                for c in children {
                    all.extend(c.meta_equalities()?);
                }
                Some(all)
            }
            _ => None,
        }
    }

    /// Whether every leaf reads the meta field, and one does (the tree is judged once per
    /// series). An `$expr` that reads no field (`{$eq: [1, 2]}`, `$$NOW`) is judged per
    /// document: a `$match` stage, which judges documents only, must not skip it.
    pub(crate) fn meta_only(&self) -> bool {
        let (mut only, mut any) = (true, false);
        self.for_each_leaf(&mut |t, _| {
            only &= t == Target::Meta;
            any = true;
        });
        only && any
    }
}

/// The meta value of a series, for the clauses that read only it.
struct MetaValues<'a>(Option<&'a Bson>);

impl Values for MetaValues<'_> {
    fn root(&self, target: Target, _: &[String]) -> Got<'_> {
        Ok(match target {
            Target::Meta => self.0.map(Cow::Borrowed),
            Target::Time | Target::Field => None,
        })
    }
}

/// A measurement as a document of its fields (the meta left out), its time and its series'
/// meta value.
struct DocValues<'a> {
    doc: &'a Document,
    time: i64,
    meta: Option<&'a Bson>,
}

impl Values for DocValues<'_> {
    fn root(&self, target: Target, path: &[String]) -> Got<'_> {
        Ok(match target {
            Target::Meta => self.meta.map(Cow::Borrowed),
            Target::Time => Some(Cow::Owned(Bson::DateTime(bson::DateTime::from_millis(
                self.time,
            )))),
            Target::Field => self.doc.get(&path[0]).map(Cow::Borrowed),
        })
    }

    /// The document: only filters over pipeline stage documents read it (the others refuse
    /// `$$ROOT` when parsed).
    fn document(&self) -> Option<Cow<'_, Bson>> {
        Some(Cow::Owned(Bson::Document(self.doc.clone())))
    }
}

impl Filter {
    /// Parses a filter document for a collection with these time and meta fields.
    pub(crate) fn parse(
        filter: &Document,
        time_field: &str,
        meta_field: Option<&str>,
    ) -> Result<Filter> {
        crate::document::require_storable("filter", filter)?;
        let mut f = Filter::default();
        f.add(filter, time_field, meta_field)?;
        Ok(f)
    }

    fn add(&mut self, filter: &Document, time_field: &str, meta_field: Option<&str>) -> Result<()> {
        for (k, v) in filter {
            if k == "$and" {
                for d in filter_array(k, v)? {
                    self.add(d, time_field, meta_field)?;
                }
                continue;
            }
            if k == "$or" || k == "$nor" {
                let children = filter_array(k, v)?
                    .into_iter()
                    .map(|d| parse_node(d, time_field, meta_field))
                    .collect::<Result<Vec<_>>>()?;
                self.clauses.push(if k == "$or" {
                    Node::Or(children)
                } else {
                    Node::Nor(children)
                });
                continue;
            }
            if k == "$expr" {
                self.clauses.push(parse_expr(v, time_field, meta_field)?);
                continue;
            }
            if k.starts_with('$') {
                return Err(bad(&format!("unsupported top-level operator {k}")));
            }
            let path: Vec<String> = k.split('.').map(str::to_owned).collect();
            let (target, rel) = target_of(&path, time_field, meta_field);
            for test in parse_tests(k, v)? {
                match (test, target) {
                    (Test::In(values), Target::Meta) => Pred::MetaIn {
                        path: rel.to_vec(),
                        values,
                    }
                    .push_to(self),
                    (Test::In(values), _) => Pred::FieldIn {
                        path: path.clone(),
                        values,
                    }
                    .push_to(self),
                    (Test::Cmp(op, value), Target::Meta) => Pred::Meta {
                        path: rel.to_vec(),
                        op,
                        value,
                    }
                    .push_to(self),
                    (Test::Cmp(op, value), Target::Time) => Pred::Time {
                        op,
                        value: match value {
                            Bson::DateTime(t) => Some(t.timestamp_millis()),
                            _ => None,
                        },
                    }
                    .push_to(self),
                    (Test::Cmp(op, value), Target::Field) => Pred::Field {
                        path: path.clone(),
                        op,
                        value,
                    }
                    .push_to(self),
                    (test, target) => self.clauses.push(Node::Leaf {
                        target,
                        path: rel.to_vec(),
                        test,
                    }),
                }
            }
        }
        Ok(())
    }

    /// Whether a bucket's meta value passes every meta predicate and every clause that reads
    /// the meta field only (SPEC §14.2).
    /// An expression that fails on the meta value does not match here; the reads use
    /// [`Filter::try_matches_meta`], which fails the query as MongoDB does.
    pub(crate) fn matches_meta(&self, meta: Option<&Bson>) -> bool {
        self.try_matches_meta(meta).unwrap_or(false)
    }

    /// [`Filter::matches_meta`], failing where a clause's expression (`$expr`) fails on the
    /// meta value.
    ///
    /// # Errors
    /// The expression's failure, with MongoDB's code.
    pub(crate) fn try_matches_meta(
        &self,
        meta: Option<&Bson>,
    ) -> std::result::Result<bool, EvalError> {
        let preds = self.preds.iter().all(|p| match p {
            Pred::Meta { path, op, value } => compare_at(meta, path, *op, value),
            Pred::MetaIn { path, values } => any_equal_at(meta, path, values),
            _ => true,
        });
        if !preds {
            return Ok(false);
        }
        for c in self.clauses.iter().filter(|c| c.meta_only()) {
            if !c.eval(&MetaValues(meta))? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether an unpacked measurement (`doc`: its fields but the meta field) of a series
    /// with meta value `meta` passes every measurement and time predicate and every clause
    /// that reads more than the meta field.
    ///
    /// # Errors
    /// An expression (`$expr`) that fails on the measurement.
    pub(crate) fn matches_row(
        &self,
        doc: &Document,
        time: i64,
        meta: Option<&Bson>,
    ) -> std::result::Result<bool, EvalError> {
        let preds = self.preds.iter().all(|p| match p {
            Pred::Time { op, value } => value.is_some_and(|v| cmp_holds(time.cmp(&v), *op)),
            Pred::Field { path, op, value } => {
                compare_at(doc.get(&path[0]), rest_of(Target::Field, path), *op, value)
            }
            Pred::FieldIn { path, values } => {
                any_equal_at(doc.get(&path[0]), rest_of(Target::Field, path), values)
            }
            _ => true,
        });
        if !preds {
            return Ok(false);
        }
        let values = DocValues { doc, time, meta };
        for c in self.clauses.iter().filter(|c| !c.meta_only()) {
            if !c.eval(&values)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The array position MongoDB's positional `$` update operator stands for in a matched
    /// measurement (`doc`: its fields but the meta field; `meta`: its series' meta value):
    /// of the predicates that match through an array, the last one's first matching element
    /// (as MongoDB's conjunction records it). Negations, `$exists`, `$size`, `$all`, `$or`,
    /// `$nor` and `$expr` record no position. `None` when no predicate went through an
    /// array.
    pub(crate) fn matched_position(&self, doc: &Document, meta: Option<&Bson>) -> Option<usize> {
        let root = |target: Target, path: &[String]| match target {
            Target::Meta => meta,
            Target::Time => None,
            Target::Field => path.first().and_then(|f| doc.get(f)),
        };
        let mut found = None;
        for p in &self.preds {
            let (target, path, test) = match p {
                Pred::Field { path, op, value } => {
                    (Target::Field, path, Test::Cmp(*op, value.clone()))
                }
                Pred::FieldIn { path, values } => (Target::Field, path, Test::In(values.clone())),
                Pred::Meta { path, op, value } => {
                    (Target::Meta, path, Test::Cmp(*op, value.clone()))
                }
                Pred::MetaIn { path, values } => (Target::Meta, path, Test::In(values.clone())),
                Pred::Time { .. } => continue,
            };
            let at = position_in(root(target, path), rest_of(target, path), &test);
            found = at.or(found);
        }
        for c in &self.clauses {
            if let Node::Leaf { target, path, test } = c {
                let at = position_in(root(*target, path), rest_of(*target, path), test);
                found = at.or(found);
            }
        }
        found
    }

    /// The clauses evaluated per measurement (those reading more than the meta field).
    pub(crate) fn row_clauses(&self) -> impl Iterator<Item = &Node> {
        self.clauses.iter().filter(|c| !c.meta_only())
    }

    /// Whether the filter reads the meta field only (then whole buckets match or not, SPEC
    /// §14.2).
    pub(crate) fn meta_only(&self) -> bool {
        self.preds
            .iter()
            .all(|p| matches!(p, Pred::Meta { .. } | Pred::MetaIn { .. }))
            && self.clauses.iter().all(Node::meta_only)
    }

    /// Time bounds on `control.min.<time>` for the index scan, given the span (R-14.4.3):
    /// `(lowest min time, highest min time)`, inclusive; `None` when nothing can match.
    pub(crate) fn min_time_bounds(&self, span_ms: i64) -> Option<(i64, i64)> {
        self.min_time_bounds_fixed(span_ms, false)
    }

    /// As [`Filter::min_time_bounds`]; with `fixed` (SPEC R-14.4.6: span = rounding, never
    /// changed) every bucket's min time is a multiple of the span and its rows lie in
    /// `[min, min + span)`, so a `$gt`/`$gte` operand that is a multiple of the span bounds the
    /// min time by the operand itself instead of `operand − span`.
    pub(crate) fn min_time_bounds_fixed(&self, span_ms: i64, fixed: bool) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (i64::MIN, i64::MAX);
        let below = |v: i64| {
            if fixed && aligned(v, span_ms) {
                v
            } else {
                v.saturating_sub(span_ms.saturating_sub(1))
            }
        };
        for p in &self.preds {
            if let Pred::Time { op, value } = p {
                let v = (*value)?;
                match op {
                    Cmp::Gt | Cmp::Gte => lo = lo.max(below(v)),
                    Cmp::Lt => hi = hi.min(v.saturating_sub(1)),
                    Cmp::Lte => hi = hi.min(v),
                    Cmp::Eq => {
                        lo = lo.max(below(v));
                        hi = hi.min(v);
                    }
                }
            }
        }
        (lo <= hi).then_some((lo, hi))
    }

    /// Whether a bucket may hold matching measurements, judged by control (SPEC §14.4):
    /// `min_time`/`max_time` of the bucket and its `control.min`/`control.max`.
    pub(crate) fn bucket_may_match(
        &self,
        min_time: i64,
        max_time: i64,
        min: &Document,
        max: &Document,
    ) -> bool {
        self.control_may_match(min_time, max_time, &(min, max))
    }

    /// Whether a bucket may hold matching measurements, judged by its time range and its
    /// control min/max (SPEC R-14.4.1, R-14.4.2, R-14.4.3). `false` only when control proves
    /// that no measurement matches; meta predicates are not looked at (§14.2: they are
    /// evaluated on the index entry).
    pub(crate) fn control_may_match(
        &self,
        min_time: i64,
        max_time: i64,
        control: &dyn ControlBounds,
    ) -> bool {
        self.preds.iter().all(|p| match p {
            Pred::Time { op, value } => {
                value.is_some_and(|v| time_may_match(*op, v, min_time, max_time))
            }
            Pred::Field { path, op, value } => {
                let (min, max) = control.bounds(&path[0]);
                path_may_match(min.as_ref(), max.as_ref(), &path[1..], *op, value)
            }
            Pred::FieldIn { path, values } => {
                let (min, max) = control.bounds(&path[0]);
                values
                    .iter()
                    .any(|v| path_may_match(min.as_ref(), max.as_ref(), &path[1..], Cmp::Eq, v))
            }
            Pred::Meta { .. } | Pred::MetaIn { .. } => true,
        }) && self
            .clauses
            .iter()
            .all(|c| c.may_match(min_time, max_time, control))
    }

    /// Whether every row of a bucket matches without evaluating rows (R-14.4.4): only time
    /// predicates, all satisfied by the whole bucket.
    pub(crate) fn whole_bucket_matches(&self, min_time: i64, max_time: i64) -> bool {
        self.whole_bucket_matches_fixed(min_time, max_time, None)
    }

    /// As [`Filter::whole_bucket_matches`]; `fixed_span` is the span (ms) of a collection with
    /// fixed bucketing (SPEC R-14.4.6), where a `$gte`/`$lt` operand that is a multiple of the
    /// span is decided by the bucket's min time alone (its rows lie in `[min, min + span)` and
    /// never cross the operand).
    pub(crate) fn whole_bucket_matches_fixed(
        &self,
        min_time: i64,
        max_time: i64,
        fixed_span: Option<i64>,
    ) -> bool {
        let on_boundary = |v: i64| fixed_span.is_some_and(|s| aligned(v, s));
        if self.row_clauses().next().is_some() {
            return false;
        }
        self.preds.iter().all(|p| match p {
            Pred::Time { op, value } => value.is_some_and(|v| match op {
                Cmp::Eq => min_time == v && max_time == v,
                Cmp::Gt => min_time > v,
                Cmp::Gte => min_time >= v,
                Cmp::Lt => max_time < v || (on_boundary(v) && min_time < v),
                Cmp::Lte => max_time <= v,
            }),
            Pred::Meta { .. } | Pred::MetaIn { .. } => true,
            _ => false,
        })
    }

    /// Whether the filter has predicates (or clauses) judged on the meta value alone (SPEC
    /// §14.2).
    pub(crate) fn has_meta_preds(&self) -> bool {
        self.preds
            .iter()
            .any(|p| matches!(p, Pred::Meta { .. } | Pred::MetaIn { .. }))
            || self.clauses.iter().any(Node::meta_only)
    }

    /// The whole-meta equality operands, if the filter has one at the top level or as an `$or`
    /// of them (for an index prefix scan).
    pub(crate) fn meta_equalities(&self) -> Option<Vec<&Bson>> {
        self.preds
            .iter()
            .find_map(|p| match p {
                Pred::Meta {
                    path,
                    op: Cmp::Eq,
                    value,
                } if path.is_empty() => Some(vec![value]),
                Pred::MetaIn { path, values } if path.is_empty() => Some(values.iter().collect()),
                _ => None,
            })
            .or_else(|| self.clauses.iter().find_map(Node::meta_equalities))
    }
}

/// What a query needs from a bucket's control record to prune it (SPEC §14.4): the
/// `control.min` and `control.max` values of a top-level field (`None` when absent).
pub(crate) trait ControlBounds {
    /// `(control.min.<field>, control.max.<field>)`.
    fn bounds(&self, field: &str) -> (Option<Bson>, Option<Bson>);
}

/// No control at all: every field's bounds unknown (a rollup window's time range alone).
pub(crate) struct NoBounds;

impl ControlBounds for NoBounds {
    fn bounds(&self, _: &str) -> (Option<Bson>, Option<Bson>) {
        (None, None)
    }
}

impl ControlBounds for (&Document, &Document) {
    fn bounds(&self, field: &str) -> (Option<Bson>, Option<Bson>) {
        (self.0.get(field).cloned(), self.1.get(field).cloned())
    }
}

/// R-14.4.1 on a (possibly dotted) path: keep a bucket unless control proves that no
/// measurement can match. `min`/`max` are the control values of the path's first field;
/// `rest` the remaining path. Objects in control hold per-sub-field extremes (R-4.3.3), so a
/// dotted path descends while min and max are both documents; any prefix where their types
/// differ (mixed schema) or that is an array keeps the bucket.
fn path_may_match(
    min: Option<&Bson>,
    max: Option<&Bson>,
    rest: &[String],
    op: Cmp,
    v: &Bson,
) -> bool {
    // R-14.4.2: objects, arrays and null are not pushed down (`null` also matches a missing
    // field); neither are MinKey/MaxKey/undefined.
    if matches!(
        v,
        Bson::Document(_)
            | Bson::Array(_)
            | Bson::Null
            | Bson::Undefined
            | Bson::MinKey
            | Bson::MaxKey
    ) {
        return true;
    }
    let (Some(min), Some(max)) = (min, max) else {
        // No measurement has the path: only a null operand could match a missing field.
        return min.is_some() || max.is_some();
    };
    if canonical_rank(min) != canonical_rank(max) {
        return true; // mixed types: not pushed down (R-14.4.1)
    }
    if let Some((first, tail)) = rest.split_first() {
        return match (min, max) {
            (Bson::Document(a), Bson::Document(b)) => {
                path_may_match(a.get(first), b.get(first), tail, op, v)
            }
            // A scalar has no sub-field: every measurement lacks the path.
            (a, _) if !matches!(a, Bson::Array(_)) => false,
            _ => true,
        };
    }
    if matches!(min, Bson::Document(_) | Bson::Array(_)) {
        return true; // per-path extremes, not whole values (R-14.4.2)
    }
    if canonical_rank(v) != canonical_rank(min) {
        return false; // type bracketing: every value has the other type
    }
    if is_nan(v) {
        // NaN matches NaN only, by `$eq`, `$gte` and `$lte`; it sorts below every number, so
        // a bucket holding one has it as its minimum.
        return matches!(op, Cmp::Eq | Cmp::Gte | Cmp::Lte) && is_nan(min);
    }
    match op {
        Cmp::Eq => compare(min, v) != Ordering::Greater && compare(v, max) != Ordering::Greater,
        Cmp::Gt => compare(max, v) == Ordering::Greater,
        Cmp::Gte => compare(max, v) != Ordering::Less,
        Cmp::Lt => compare(min, v) == Ordering::Less,
        Cmp::Lte => compare(min, v) != Ordering::Greater,
    }
}

/// Whether a bucket whose rows lie in `[min_time, max_time]` may hold a time `op v`.
fn time_may_match(op: Cmp, v: i64, min_time: i64, max_time: i64) -> bool {
    match op {
        Cmp::Eq => min_time <= v && v <= max_time,
        Cmp::Gt => max_time > v,
        Cmp::Gte => max_time >= v,
        Cmp::Lt => min_time < v,
        Cmp::Lte => min_time <= v,
    }
}

/// Whether `v` is a multiple of `span` (ms), the boundary of a fixed-bucketing bucket.
fn aligned(v: i64, span: i64) -> bool {
    span > 0 && v.rem_euclid(span) == 0
}

/// Whether a stored value (one row of a decoded column; `rest` = the rest of a dotted path)
/// passes `op operand`, with exactly the semantics of [`Filter::matches_row`] on the unpacked
/// measurement. Strings and scalars are compared without building a `Bson` (no allocation);
/// documents and arrays are converted.
///
/// # Errors
/// A message when the stored value is corrupt.
pub(crate) fn value_ref_matches(
    v: ValueRef<'_>,
    rest: &[String],
    op: Cmp,
    operand: &Bson,
) -> std::result::Result<bool, String> {
    if rest.is_empty() {
        match v {
            ValueRef::Missing => return Ok(compare_one(None, op, operand)),
            ValueRef::Bytes(tag::STRING | tag::SYMBOL, bytes) => {
                return Ok(match operand {
                    Bson::String(s) | Bson::Symbol(s) => cmp_holds(bytes.cmp(s.as_bytes()), op),
                    _ => false, // type bracketing
                });
            }
            ValueRef::Bytes(tag::DOCUMENT | tag::ARRAY, _) => {}
            ValueRef::Bytes(..) | ValueRef::Empty(_) | ValueRef::Int(..) | ValueRef::Float(_) => {
                // No allocation for these types except code/regex/binary (rare).
                let b = to_bson(v)?;
                return Ok(compare_one(b.as_ref(), op, operand));
            }
        }
    }
    let b = to_bson(v)?;
    Ok(compare_at(b.as_ref(), rest, op, operand))
}

/// As [`value_ref_matches`] for `$in`: whether the stored value equals one of `values`. A
/// document or an array, or a value with path left, is converted and walked once.
///
/// # Errors
/// A message when the stored value is corrupt.
pub(crate) fn value_ref_in(
    v: ValueRef<'_>,
    rest: &[String],
    values: &[Bson],
) -> std::result::Result<bool, String> {
    if rest.is_empty() && !matches!(v, ValueRef::Bytes(tag::DOCUMENT | tag::ARRAY, _)) {
        for x in values {
            if value_ref_matches(v, rest, Cmp::Eq, x)? {
                return Ok(true);
            }
        }
        return Ok(false);
    }
    let b = to_bson(v)?;
    Ok(any_equal_at(b.as_ref(), rest, values))
}

pub(crate) fn cmp_holds(o: Ordering, op: Cmp) -> bool {
    match op {
        Cmp::Eq => o == Ordering::Equal,
        Cmp::Gt => o == Ordering::Greater,
        Cmp::Gte => o != Ordering::Less,
        Cmp::Lt => o == Ordering::Less,
        Cmp::Lte => o != Ordering::Greater,
    }
}

/// Whether a value `path` reaches below `v` ([`any_at`], arrays' elements included) passes
/// `op operand`: a top-level comparison of a filter.
pub(crate) fn compare_at(v: Option<&Bson>, path: &[String], op: Cmp, operand: &Bson) -> bool {
    any_at(v, path, true, &mut |e| compare_one(e, op, operand))
}

/// Whether a value `path` reaches below `v` equals one of `values` (`$in`): the path is
/// followed once, whatever the number of values.
fn any_equal_at(v: Option<&Bson>, path: &[String], values: &[Bson]) -> bool {
    any_at(v, path, true, &mut |e| {
        values.iter().any(|x| compare_one(e, Cmp::Eq, x))
    })
}

/// MongoDB's comparison of one value (`None`: missing) with an operand: type-bracketed (a
/// value of another canonical type never passes), `null` matching a missing value, NaN
/// equal to NaN only (`$gte`, `$lte` and `$eq` with NaN on both sides; `$gt` and `$lt`
/// never hold when either side is NaN, though NaN sorts below every number); arrays are
/// compared as wholes, element by element.
pub(crate) fn compare_one(v: Option<&Bson>, op: Cmp, operand: &Bson) -> bool {
    let Some(x) = v else {
        return matches!(op, Cmp::Eq | Cmp::Gte | Cmp::Lte) && matches!(operand, Bson::Null);
    };
    if canonical_rank(x) != canonical_rank(operand) {
        return false;
    }
    let (a, b) = (is_nan(x), is_nan(operand));
    if a || b {
        return a && b && matches!(op, Cmp::Eq | Cmp::Gte | Cmp::Lte);
    }
    cmp_holds(compare(x, operand), op)
}

/// Whether a number is NaN (a double, or a decimal).
pub(crate) fn is_nan(v: &Bson) -> bool {
    match v {
        Bson::Double(d) => d.is_nan(),
        Bson::Decimal128(d) => d.to_string().parse::<f64>().is_ok_and(f64::is_nan),
        _ => false,
    }
}

/// The value at `path` below `v` through documents only (`None` when missing or when the
/// path meets a value that is not a document): sort keys, window and update paths.
pub(crate) fn lookup<'a>(v: Option<&'a Bson>, path: &[String]) -> Option<&'a Bson> {
    let mut cur = v?;
    for p in path {
        cur = match cur {
            Bson::Document(d) => d.get(p)?,
            _ => return None,
        };
    }
    Some(cur)
}

impl Pred {
    fn push_to(self, f: &mut Filter) {
        f.preds.push(self);
    }
}

/// The filter documents of an `$and`, `$or` or `$nor`.
fn filter_array<'a>(op: &str, v: &'a Bson) -> Result<Vec<&'a Document>> {
    let need = || bad(&format!("{op} needs a non-empty array of filter documents"));
    let Bson::Array(items) = v else {
        return Err(need());
    };
    if items.is_empty() && op != "$and" {
        return Err(need());
    }
    items
        .iter()
        .map(|i| match i {
            Bson::Document(d) => Ok(d),
            _ => Err(need()),
        })
        .collect()
}

/// Where a filter path reads: the target and the path inside it.
fn target_of<'p>(
    path: &'p [String],
    time_field: &str,
    meta_field: Option<&str>,
) -> (Target, &'p [String]) {
    if meta_field.is_some_and(|m| path[0] == m) {
        (Target::Meta, &path[1..])
    } else if path.len() == 1 && path[0] == time_field {
        (Target::Time, &[])
    } else {
        (Target::Field, path)
    }
}

/// The tests of one field's condition: `{$op: operand, ...}` or a value (equality).
fn parse_tests(field: &str, v: &Bson) -> Result<Vec<Test>> {
    let Bson::Document(d) = v else {
        // A regular expression as a value matches strings (MongoDB), not only equal regexes.
        if let Bson::RegularExpression(r) = v {
            return Ok(vec![Test::Regex(Pattern::new(
                r.pattern.as_str(),
                r.options.as_str(),
            )?)]);
        }
        return Ok(vec![Test::Cmp(Cmp::Eq, v.clone())]);
    };
    if !d.keys().next().is_some_and(|k| k.starts_with('$')) {
        return Ok(vec![Test::Cmp(Cmp::Eq, v.clone())]);
    }
    let array = |op: &str, val: &Bson| match val {
        Bson::Array(values) => Ok(values.clone()),
        _ => Err(bad(&format!("{op} needs an array"))),
    };
    let tests: Vec<Option<Test>> = d
        .iter()
        .map(|(op, val)| {
            Ok(Some(match op.as_str() {
                "$eq" => Test::Cmp(Cmp::Eq, val.clone()),
                "$gt" => Test::Cmp(Cmp::Gt, val.clone()),
                "$gte" => Test::Cmp(Cmp::Gte, val.clone()),
                "$lt" => Test::Cmp(Cmp::Lt, val.clone()),
                "$lte" => Test::Cmp(Cmp::Lte, val.clone()),
                "$in" => in_test(array(op, val)?)?,
                "$ne" => Test::Ne(val.clone()),
                "$nin" => match in_test(array(op, val)?)? {
                    Test::In(values) => Test::Nin(values),
                    any => Test::Not(vec![any]),
                },
                "$exists" => Test::Exists(truthy(val)),
                "$type" => Test::Type(type_numbers(val)?),
                "$regex" => {
                    let options = match d.get("$options") {
                        None => "",
                        Some(Bson::String(o)) => o.as_str(),
                        Some(_) => return Err(bad("$options has to be a string")),
                    };
                    match val {
                        Bson::String(p) => Test::Regex(Pattern::new(p, options)?),
                        Bson::RegularExpression(r) if options.is_empty() => {
                            Test::Regex(Pattern::new(r.pattern.as_str(), r.options.as_str())?)
                        }
                        _ => return Err(bad("$regex has to be a string")),
                    }
                }
                "$options" => {
                    if !d.contains_key("$regex") {
                        return Err(bad("$options needs a $regex"));
                    }
                    return Ok(None);
                }
                "$mod" => {
                    let parts = match val {
                        Bson::Array(a) => a.iter().map(exact_int).collect::<Option<Vec<_>>>(),
                        _ => None,
                    };
                    match parts.as_deref() {
                        Some([0, _]) => return Err(bad("$mod: divisor cannot be 0")),
                        Some(&[d, r]) => Test::Mod(d, r),
                        _ => {
                            return Err(bad(
                                "$mod needs an array of two numbers: [divisor, remainder]",
                            ));
                        }
                    }
                }
                "$size" => match exact_int(val).and_then(|n| usize::try_from(n).ok()) {
                    Some(n) => Test::Size(n),
                    None => return Err(bad("$size needs a whole, non-negative number")),
                },
                "$all" => Test::All(array(op, val)?),
                "$elemMatch" => match val {
                    Bson::Document(inner)
                        if inner.keys().next().is_some_and(|k| k.starts_with('$'))
                            && !matches!(
                                inner.keys().next().map(String::as_str),
                                Some("$and" | "$or" | "$nor")
                            ) =>
                    {
                        Test::ElemMatch(parse_tests(field, val)?)
                    }
                    Bson::Document(inner) => {
                        // No element field is the time field: filters hold no NUL in names.
                        Test::ElemMatchDoc(Box::new(parse_node(inner, "\0", None)?))
                    }
                    _ => return Err(bad("$elemMatch needs an object")),
                },
                "$not" => match val {
                    Bson::Document(inner)
                        if inner.keys().next().is_some_and(|k| k.starts_with('$')) =>
                    {
                        Test::Not(parse_tests(field, val)?)
                    }
                    Bson::RegularExpression(r) => Test::Not(vec![Test::Regex(Pattern::new(
                        r.pattern.as_str(),
                        r.options.as_str(),
                    )?)]),
                    _ => {
                        return Err(bad(&format!(
                            "$not of '{field}' needs a document of operators, e.g. \
                             {{$not: {{$gt: 5}}}}"
                        )));
                    }
                },
                other => return Err(bad(&format!("unsupported query operator {other}"))),
            }))
        })
        .collect::<Result<_>>()?;
    Ok(tests.into_iter().flatten().collect())
}

/// The test of an `$in` operand list: [`Test::In`], or [`Test::InAny`] when it holds regular
/// expressions.
fn in_test(values: Vec<Bson>) -> Result<Test> {
    if !values
        .iter()
        .any(|v| matches!(v, Bson::RegularExpression(_)))
    {
        return Ok(Test::In(values));
    }
    let mut plain = Vec::new();
    let mut patterns = Vec::new();
    for v in values {
        match v {
            Bson::RegularExpression(r) => {
                patterns.push(Pattern::new(r.pattern.as_str(), r.options.as_str())?);
            }
            other => plain.push(other),
        }
    }
    Ok(Test::InAny(plain, patterns))
}

/// MongoDB's truthiness of an `$exists` operand: false, 0 and null are false.
fn truthy(v: &Bson) -> bool {
    match v {
        Bson::Boolean(b) => *b,
        Bson::Int32(n) => *n != 0,
        Bson::Int64(n) => *n != 0,
        Bson::Double(n) => *n != 0.0,
        Bson::Null | Bson::Undefined => false,
        _ => true,
    }
}

/// The time field of filters over pipeline stage documents (`pipeline/stage.rs`'s
/// `NO_TIME`, a name no field can have): their `$expr` may read `$$ROOT`.
const STAGE_DOCUMENTS: &str = "\u{1}";

/// An `$expr` operand as a clause.
fn parse_expr(v: &Bson, time_field: &str, meta_field: Option<&str>) -> Result<Node> {
    let target = |path: &[String]| {
        let (t, rel) = target_of(path, time_field, meta_field);
        (t, rel.to_vec())
    };
    // A pipeline's `$match` (time field "\u{1}", over whole stage documents) can read the
    // whole document; a find filter, over measurements unpacked column by column, cannot.
    if time_field != STAGE_DOCUMENTS && crate::mql::expr::reads_document(v) {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            "$expr: $$ROOT and $$CURRENT (the whole document) can be read in pipeline stages, \
             not in a find, update or delete filter's $expr",
        ));
    }
    Ok(Node::Expr(Expr::parse(v, &target)?))
}

/// A filter document inside `$or`, `$nor` or `$and` as a tree (the conjunction of its
/// entries).
fn parse_node(doc: &Document, time_field: &str, meta_field: Option<&str>) -> Result<Node> {
    let mut all = Vec::new();
    for (k, v) in doc {
        match k.as_str() {
            "$and" | "$or" | "$nor" => {
                let children = filter_array(k, v)?
                    .into_iter()
                    .map(|d| parse_node(d, time_field, meta_field))
                    .collect::<Result<Vec<_>>>()?;
                all.push(match k.as_str() {
                    "$and" => Node::And(children),
                    "$or" => Node::Or(children),
                    _ => Node::Nor(children),
                });
            }
            "$expr" => all.push(parse_expr(v, time_field, meta_field)?),
            _ if k.starts_with('$') => {
                return Err(bad(&format!("unsupported top-level operator {k}")));
            }
            _ => {
                let path: Vec<String> = k.split('.').map(str::to_owned).collect();
                let (target, rel) = target_of(&path, time_field, meta_field);
                for test in parse_tests(k, v)? {
                    all.push(Node::Leaf {
                        target,
                        path: rel.to_vec(),
                        test,
                    });
                }
            }
        }
    }
    Ok(if all.len() == 1 {
        all.remove(0)
    } else {
        Node::And(all)
    })
}

fn bad(msg: &str) -> Error {
    Error::rejected(ErrorCode::BadValue, msg)
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};

    use super::*;

    fn parse(f: Document) -> Filter {
        Filter::parse(&f, "t", Some("m")).expect("parse")
    }

    /// `doc` (its `m` field as the meta value) matches `filter`: the meta clauses judged on the
    /// series, the rest on the measurement, as queries do.
    fn matches(filter: &Document, doc: &Document) -> bool {
        let f = parse(filter.clone());
        let meta = doc.get("m");
        let mut fields = doc.clone();
        fields.remove("m");
        let t = doc.get_datetime("t").map_or(0, |t| t.timestamp_millis());
        f.matches_meta(meta) && f.matches_row(&fields, t, meta).unwrap()
    }

    /// Each `(filter, matches a, matches b)` of `cases` holds.
    fn check(cases: &[(Document, bool, bool)], a: &Document, b: &Document) {
        for (filter, want_a, want_b) in cases {
            assert_eq!(matches(filter, a), *want_a, "{filter} on {a}");
            assert_eq!(matches(filter, b), *want_b, "{filter} on {b}");
        }
    }

    #[test]
    fn negations_existence_and_boolean_trees_follow_mongodb() {
        let a = doc! { "t": DateTime::from_millis(5), "m": "x", "v": 3, "arr": [1, 2] };
        let b = doc! { "t": DateTime::from_millis(9), "m": "y" };
        let cases: Vec<(Document, bool, bool)> = vec![
            // $ne and $nin: a missing field is "not equal"; an array is equal when an element is.
            (doc! { "v": { "$ne": 3 } }, false, true),
            (doc! { "v": { "$ne": null } }, true, false),
            (doc! { "v": { "$nin": [1, 3] } }, false, true),
            (doc! { "arr": { "$ne": 2 } }, false, true),
            (doc! { "arr": { "$nin": [7] } }, true, true),
            // $exists
            (doc! { "v": { "$exists": true } }, true, false),
            (doc! { "v": { "$exists": false } }, false, true),
            (doc! { "m": { "$exists": 0 } }, false, false),
            // $not: not all of its operators; a missing field passes.
            (doc! { "v": { "$not": { "$gt": 2 } } }, false, true),
            (doc! { "v": { "$not": { "$gt": 5, "$lt": 1 } } }, true, true),
            // $or / $nor / nested $and, over meta, time and fields at once.
            (doc! { "$or": [{ "m": "y" }, { "v": 3 }] }, true, true),
            (doc! { "$or": [{ "m": "z" }, { "v": 4 }] }, false, false),
            (doc! { "$nor": [{ "m": "y" }, { "v": 3 }] }, false, false),
            (doc! { "$nor": [{ "m": "z" }] }, true, true),
            (
                doc! { "$or": [{ "$and": [{ "m": "x" }, { "t": { "$lt": DateTime::from_millis(6) } }] }, { "v": { "$exists": false } }] },
                true,
                true,
            ),
            (
                doc! { "t": { "$ne": DateTime::from_millis(9) } },
                true,
                false,
            ),
            (
                doc! { "m": { "$ne": "x" }, "$or": [{ "v": 3 }, { "m": "y" }] },
                false,
                true,
            ),
        ];
        check(&cases, &a, &b);
    }

    #[test]
    fn element_and_array_operators_follow_mongodb() {
        let a = doc! {
            "t": DateTime::from_millis(5), "m": { "host": "web-01", "n": 7 },
            "s": "Error: disk", "x": 10.7, "i": 3_i64, "arr": [1, "two", { "k": 5, "j": "a" }, [4]],
        };
        let b =
            doc! { "t": DateTime::from_millis(9), "m": { "host": "db-02" }, "s": "ok", "arr": [] };
        let regex = |p: &str, o: &str| {
            Bson::RegularExpression(bson::Regex {
                pattern: p.try_into().expect("pattern"),
                options: o.try_into().expect("options"),
            })
        };
        let cases: Vec<(Document, bool, bool)> = vec![
            (doc! { "s": { "$type": "string" } }, true, true),
            (doc! { "x": { "$type": "number" } }, true, false),
            (doc! { "i": { "$type": [16, "long"] } }, true, false),
            (doc! { "arr": { "$type": "array" } }, true, true),
            // An array also matches by an element's type.
            (doc! { "arr": { "$type": "object" } }, true, false),
            (
                doc! { "s": { "$regex": "^error", "$options": "i" } },
                true,
                false,
            ),
            (doc! { "s": { "$regex": "^error" } }, false, false),
            (doc! { "s": regex("disk$", "") }, true, false),
            (doc! { "m.host": regex("^web-\\d+$", "") }, true, false),
            (doc! { "s": { "$not": regex("^ok", "") } }, true, false),
            (doc! { "arr": { "$regex": "^tw" } }, true, false),
            (doc! { "s": { "$in": [regex("^ok$", ""), 5] } }, false, true),
            (
                doc! { "s": { "$in": [regex("DISK", "i"), "ok"] } },
                true,
                true,
            ),
            (doc! { "arr": { "$in": [regex("^t", "")] } }, true, false),
            (doc! { "s": { "$nin": [regex("^ok", "")] } }, true, false),
            (
                doc! { "m.host": { "$in": [regex("^db", "")] } },
                false,
                true,
            ),
            // $mod truncates doubles; arrays match by element.
            (doc! { "x": { "$mod": [5, 0] } }, true, false),
            (doc! { "i": { "$mod": [2, 1] } }, true, false),
            (doc! { "m.n": { "$mod": [4, 3] } }, true, false),
            (doc! { "arr": { "$size": 4 } }, true, false),
            (doc! { "arr": { "$size": 0 } }, false, true),
            (doc! { "arr": { "$all": [1, "two"] } }, true, false),
            (doc! { "arr": { "$all": [1, 9] } }, false, false),
            (doc! { "arr": { "$all": [] } }, false, false),
            (
                doc! { "arr": { "$elemMatch": { "$gte": 1, "$lt": 2 } } },
                true,
                false,
            ),
            (
                doc! { "arr": { "$elemMatch": { "k": { "$gt": 4 }, "j": "a" } } },
                true,
                false,
            ),
            (
                doc! { "arr": { "$elemMatch": { "k": { "$gt": 5 } } } },
                false,
                false,
            ),
            (
                doc! { "arr": { "$elemMatch": { "$or": [{ "k": 1 }, { "j": "a" }] } } },
                true,
                false,
            ),
            (
                doc! { "$or": [{ "s": { "$type": "double" } }, { "arr": { "$size": 0 } }] },
                false,
                true,
            ),
        ];
        check(&cases, &a, &b);
    }

    #[test]
    fn expr_compares_fields_computes_and_follows_aggregation_order() {
        let a = doc! {
            "t": DateTime::from_millis(60_000), "m": { "cap": 10 },
            "user": 7.5, "system": 2, "i": 4, "s": "x",
        };
        let b = doc! { "t": DateTime::from_millis(0), "m": { "cap": 1 }, "user": 1, "system": 3 };
        let cases: Vec<(Document, bool, bool)> = vec![
            (
                doc! { "$expr": { "$gt": ["$user", "$system"] } },
                true,
                false,
            ),
            (
                doc! { "$expr": { "$lt": [{ "$add": ["$user", "$system"] }, "$m.cap"] } },
                true,
                false,
            ),
            (
                doc! { "$expr": { "$eq": [{ "$subtract": ["$user", 0.5] }, 7] } },
                true,
                false,
            ),
            (
                doc! { "$expr": { "$eq": [{ "$multiply": ["$i", 2, 3] }, 24] } },
                true,
                false,
            ),
            (
                doc! { "$expr": { "$eq": [{ "$divide": ["$system", 4] }, 0.5] } },
                true,
                false,
            ),
            (
                doc! { "$expr": { "$eq": [{ "$mod": ["$i", 3] }, 1] } },
                true,
                false,
            ),
            (
                doc! { "$expr": { "$gt": [{ "$abs": { "$subtract": ["$system", 5] } }, 2] } },
                true,
                false,
            ),
            // A string is above every number in BSON order; a missing field below everything.
            (doc! { "$expr": { "$gt": ["$s", 1000] } }, true, false),
            (doc! { "$expr": { "$lt": ["$s", null] } }, false, true),
            (doc! { "$expr": { "$eq": ["$s", null] } }, false, false),
            // Null operands make arithmetic null; null is false.
            (
                doc! { "$expr": { "$add": ["$i", "$nothing"] } },
                false,
                false,
            ),
            (doc! { "$expr": "$i" }, true, false),
            (
                doc! { "$expr": { "$and": ["$i", { "$not": ["$s"] }] } },
                false,
                false,
            ),
            (
                doc! { "$expr": { "$or": [{ "$gte": ["$t", { "$literal": DateTime::from_millis(60_000) }] }, "$nothing"] } },
                true,
                false,
            ),
            // Dates: date minus date is milliseconds.
            (
                doc! { "$expr": { "$eq": [{ "$subtract": ["$t", DateTime::from_millis(0)] }, 60_000] } },
                true,
                false,
            ),
            (
                doc! { "$or": [{ "$expr": { "$lt": ["$user", "$system"] } }, { "s": "x" }] },
                true,
                true,
            ),
        ];
        check(&cases, &a, &b);
        for f in [
            doc! { "$expr": { "$gt": ["$a"] } },
            // A find filter has no whole document for $$ROOT.
            doc! { "$expr": { "$eq": ["$$ROOT.a", 1] } },
            doc! { "$expr": { "$eq": [{ "$size": "$$CURRENT" }, 1] } },
            doc! { "$expr": { "$gt": ["$a", 1], "$lt": ["$a", 2] } },
        ] {
            let err = Filter::parse(&f, "t", Some("m")).expect_err("bad $expr");
            assert_eq!(err.code(), ErrorCode::BadValue, "{f}: {err}");
        }
        let f = doc! { "$expr": { "$eq": [{ "$bogus": 1 }, 1] } };
        let err = Filter::parse(&f, "t", Some("m")).expect_err("unknown operator");
        assert_eq!(err.code(), ErrorCode::InvalidPipelineOperator, "{err}");
        // $$NOW is one date for the query.
        let now = doc! { "$expr": { "$gt": ["$$NOW", "$t"] } };
        assert!(Filter::parse(&now, "t", Some("m")).is_ok());
        // MongoDB's codes for a date operator's missing or unknown unit.
        for (f, code) in [
            (
                doc! { "$expr": { "$dateTrunc": { "date": "$t" } } },
                ErrorCode::Location(5439009),
            ),
            (
                doc! { "$expr": { "$dateTrunc": { "date": "$t", "unit": "fortnight" } } },
                ErrorCode::FailedToParse,
            ),
        ] {
            let err = Filter::parse(&f, "t", Some("m")).expect_err("bad $expr");
            assert_eq!(err.code(), code, "{f}: {err}");
        }
    }

    #[test]
    fn an_or_prunes_a_bucket_only_when_every_branch_does_and_never_settles_one() {
        let (min, max) = (doc! { "v": 1 }, doc! { "v": 2 });
        let may = |f: Document| parse(f).bucket_may_match(0, 10, &min, &max);
        // v in [1, 2], no w, times in [0, 10].
        assert!(!may(doc! { "$or": [{ "v": { "$gt": 100 } }, { "w": 1 }] }));
        assert!(may(doc! { "$or": [{ "v": { "$gt": 100 } }, { "v": 2 }] }));
        assert!(may(
            doc! { "$or": [{ "v": { "$gt": 100 } }, { "w": { "$exists": false } }] }
        ));
        assert!(!may(
            doc! { "$or": [{ "w": { "$exists": true } }, { "v": { "$in": [5, 6] } }] }
        ));
        assert!(!may(
            doc! { "$or": [{ "t": { "$gt": DateTime::from_millis(10) } }, { "t": 5 }] }
        ));
        assert!(may(
            doc! { "$or": [{ "t": { "$gt": DateTime::from_millis(9) } }, { "t": 5 }] }
        ));
        assert!(may(doc! { "$or": [{ "m": "zz" }, { "w": 1 }] })); // meta: judged per series
        assert!(may(doc! { "$nor": [{ "v": 1 }] }));
        assert!(may(doc! { "v": { "$ne": 1 } }));
        // $type and $regex: v holds numbers only.
        assert!(may(doc! { "v": { "$type": "int" } }));
        assert!(may(doc! { "v": { "$type": ["string", "number"] } }));
        assert!(!may(doc! { "v": { "$type": "string" } }));
        assert!(!may(doc! { "w": { "$type": "int" } }));
        assert!(!may(doc! { "v": { "$regex": "^a" } }));
        assert!(!may(
            doc! { "$or": [{ "v": { "$type": "date" } }, { "w": 1 }] }
        ));
        // From numbers to strings: no date, but maybe an object? No: objects rank above
        // strings. Arrays in the range could hold anything.
        let (smin, smax) = (doc! { "v": 1 }, doc! { "v": "z" });
        let may_s = |f: Document| parse(f).bucket_may_match(0, 10, &smin, &smax);
        assert!(may_s(doc! { "v": { "$regex": "^a" } }));
        assert!(!may_s(doc! { "v": { "$type": "object" } }));
        let (amin, amax) = (doc! { "v": 1 }, doc! { "v": [1] });
        let may_a = |f: Document| parse(f).bucket_may_match(0, 10, &amin, &amax);
        assert!(may_a(doc! { "v": { "$type": "date" } }));
        assert!(!may(
            doc! { "$and": [{ "$or": [{ "v": 1 }] }, { "$or": [{ "w": 1 }] }] }
        ));
        let f = parse(doc! { "$or": [{ "v": { "$gt": 1 } }, { "w": 1 }] });
        assert!(f.preds.is_empty() && f.clauses.len() == 1);
        assert!(f.bucket_may_match(0, 10, &min, &max));
        assert!(!f.whole_bucket_matches(0, 10));
        assert_eq!(f.min_time_bounds(1000), Some((i64::MIN, i64::MAX)));
        // A clause on the meta field alone is judged per series, and leaves whole buckets.
        let m = parse(doc! { "$or": [{ "m": "a" }, { "m.k": { "$exists": true } }] });
        assert!(m.has_meta_preds() && m.meta_only());
        assert!(m.whole_bucket_matches(0, 10));
        assert!(m.matches_meta(Some(&Bson::String("a".into()))));
        assert!(!m.matches_meta(Some(&Bson::String("b".into()))));
    }

    #[test]
    fn malformed_trees_and_operators_are_bad_values() {
        for f in [
            doc! { "$or": [] },
            doc! { "$or": { "v": 1 } },
            doc! { "$nor": [1] },
            doc! { "v": { "$not": 5 } },
            doc! { "v": { "$nin": 5 } },
            doc! { "v": { "$regexp": "x" } },
            doc! { "$where": "1" },
            doc! { "v": { "$type": "integer" } },
            doc! { "v": { "$type": 42 } },
            doc! { "v": { "$regex": "(" } },
            doc! { "v": { "$regex": "a", "$options": "q" } },
            doc! { "v": { "$options": "i" } },
            doc! { "v": { "$mod": [0, 1] } },
            doc! { "v": { "$mod": [3] } },
            doc! { "v": { "$size": -1 } },
            doc! { "v": { "$size": 1.5 } },
            doc! { "v": { "$all": 1 } },
            doc! { "v": { "$elemMatch": 1 } },
        ] {
            let err = Filter::parse(&f, "t", Some("m")).expect_err("bad filter");
            assert_eq!(err.code(), ErrorCode::BadValue, "{f}: {err}");
        }
    }

    fn may(f: Document, min: &Document, max: &Document) -> bool {
        parse(f).control_may_match(0, 10, &(min, max))
    }

    #[test]
    fn r_14_4_1_bracketing_and_mixed_types() {
        let (min, max) = (doc! { "v": 5, "s": "b" }, doc! { "v": 9, "s": "d" });
        assert!(may(doc! { "v": { "$gt": 8 } }, &min, &max));
        assert!(!may(doc! { "v": { "$gt": 9 } }, &min, &max));
        assert!(!may(doc! { "v": { "$lt": 5.0 } }, &min, &max));
        assert!(may(doc! { "v": 7_i64 }, &min, &max));
        assert!(!may(doc! { "v": 10 }, &min, &max));
        assert!(
            !may(doc! { "v": { "$gt": "a" } }, &min, &max),
            "type bracketing"
        );
        assert!(
            !may(doc! { "s": { "$lt": 100 } }, &min, &max),
            "type bracketing"
        );
        assert!(may(doc! { "s": { "$in": ["a", "c"] } }, &min, &max));
        assert!(!may(doc! { "s": { "$in": ["a", "e", 1] } }, &min, &max));
        // Mixed canonical types in min and max: always kept.
        let (min, max) = (doc! { "v": 5 }, doc! { "v": "x" });
        assert!(may(doc! { "v": { "$gt": 1000 } }, &min, &max));
        assert!(may(doc! { "v": { "$lt": "a" } }, &min, &max));
        // An absent field matches only null.
        assert!(!may(doc! { "w": 1 }, &min, &max));
        assert!(may(doc! { "w": Bson::Null }, &min, &max));
        assert!(may(doc! { "w": { "$gte": Bson::Null } }, &min, &max));
    }

    #[test]
    fn r_14_4_2_objects_arrays_and_null_are_not_pushed_down() {
        let (min, max) = (
            doc! { "o": { "x": 1 }, "a": [1, 2] },
            doc! { "o": { "x": 3 }, "a": [4, 5] },
        );
        assert!(may(doc! { "o": { "x": 100 } }, &min, &max));
        assert!(may(doc! { "a": [100] }, &min, &max));
        assert!(
            may(doc! { "a": 100 }, &min, &max),
            "array control values are per position"
        );
        assert!(may(doc! { "o": Bson::Null }, &min, &max));
        // Dotted paths descend per sub-field (R-4.3.3).
        assert!(!may(doc! { "o.x": { "$gt": 3 } }, &min, &max));
        assert!(may(doc! { "o.x": { "$gte": 3 } }, &min, &max));
        assert!(!may(doc! { "o.y": 1 }, &min, &max));
        assert!(may(doc! { "a.0": 100 }, &min, &max), "below an array: kept");
        // Mixed types at a prefix: kept.
        let (min, max) = (doc! { "o": 1 }, doc! { "o": { "x": 3 } });
        assert!(may(doc! { "o.x": 100 }, &min, &max));
    }

    #[test]
    fn r_14_4_3_time_bounds_and_non_date_operands() {
        let span = 3_600_000;
        let at = DateTime::from_millis;
        let f = parse(doc! { "t": { "$gte": at(10 * span), "$lt": at(12 * span) } });
        assert_eq!(f.min_time_bounds(span), Some((9 * span + 1, 12 * span - 1)));
        assert_eq!(
            f.min_time_bounds_fixed(span, true),
            Some((10 * span, 12 * span - 1))
        );
        let f = parse(doc! { "t": { "$eq": at(5) } });
        assert_eq!(f.min_time_bounds(span), Some((5 - span + 1, 5)));
        assert_eq!(
            parse(doc! { "t": { "$gte": 5 } }).min_time_bounds(span),
            None
        );
        assert!(!parse(doc! { "t": "x" }).control_may_match(0, 10, &(&doc! {}, &doc! {})));
    }

    #[test]
    fn r_14_4_4_and_r_14_4_6_whole_buckets() {
        let span = 100;
        let at = DateTime::from_millis;
        let f = parse(doc! { "m": "a", "t": { "$gte": at(100), "$lt": at(300) } });
        assert!(f.whole_bucket_matches(100, 299));
        assert!(!f.whole_bucket_matches(100, 300));
        assert!(!f.whole_bucket_matches(99, 150));
        // Fixed bucketing: a bucket that starts before an aligned `$lt` ends before it.
        assert!(f.whole_bucket_matches_fixed(200, 300, Some(span)));
        assert!(!f.whole_bucket_matches_fixed(200, 300, None));
        assert!(!parse(doc! { "v": 1 }).whole_bucket_matches(0, 1));
        assert!(parse(doc! { "m.x": 1 }).whole_bucket_matches(0, 1));
    }

    #[test]
    fn nan_matches_nan_only_and_never_a_range() {
        let a = doc! { "t": DateTime::from_millis(5), "v": f64::NAN, "arr": [1, f64::NAN] };
        let b = doc! { "t": DateTime::from_millis(9), "v": 3, "arr": [2] };
        let nan = f64::NAN;
        let cases: Vec<(Document, bool, bool)> = vec![
            (doc! { "v": nan }, true, false),
            (doc! { "v": { "$gte": nan } }, true, false),
            (doc! { "v": { "$lte": nan } }, true, false),
            (doc! { "v": { "$gt": nan } }, false, false),
            (doc! { "v": { "$lt": nan } }, false, false),
            (doc! { "v": { "$lt": 5 } }, false, true),
            (doc! { "v": { "$gte": -1e308 } }, false, true),
            (doc! { "v": { "$ne": nan } }, false, true),
            (doc! { "v": { "$in": [nan, 7] } }, true, false),
            (doc! { "arr": { "$gte": nan } }, true, false),
            (doc! { "arr": { "$lt": 2 } }, true, false),
            (doc! { "$expr": { "$gte": ["$v", nan] } }, true, true),
        ];
        check(&cases, &a, &b);
        // Pruning: a bucket holding NaN has it as its minimum.
        let (min, max) = (doc! { "v": nan }, doc! { "v": 5 });
        assert!(may(doc! { "v": { "$gte": nan } }, &min, &max));
        assert!(may(doc! { "v": nan }, &min, &max));
        assert!(!may(doc! { "v": { "$gt": nan } }, &min, &max));
        assert!(!may(doc! { "v": { "$lt": nan } }, &min, &max));
        assert!(may(doc! { "v": { "$lt": 1 } }, &min, &max));
        let (min, max) = (doc! { "v": 1 }, doc! { "v": 5 });
        assert!(!may(doc! { "v": { "$gte": nan } }, &min, &max));
        assert!(!may(doc! { "v": { "$lte": nan } }, &min, &max));
        assert!(!may(doc! { "v": { "$in": [nan] } }, &min, &max));
    }

    #[test]
    fn arrays_match_one_level_down_and_whole() {
        let a = doc! {
            "t": DateTime::from_millis(5),
            "x": [[1, 2], [3]], "y": [[1]], "e": [],
            "n": [{ "s": [] }, { "s": 4 }], "o": [{ "b": [7, [8]] }, 5, [{ "b": 6 }]],
        };
        let b = doc! { "t": DateTime::from_millis(9), "x": [1, 2], "y": 1, "n": { "s": [[]] } };
        let cases: Vec<(Document, bool, bool)> = vec![
            // An array operand: equal to the field, or to one of its elements.
            (doc! { "x": [1, 2] }, true, true),
            (doc! { "x": { "$in": [[1, 2]] } }, true, true),
            (doc! { "x": { "$all": [[1, 2], [3]] } }, true, false),
            (doc! { "x": { "$all": [1, 2] } }, false, true),
            (doc! { "x": { "$ne": [1, 2] } }, false, false),
            (doc! { "x": { "$nin": [[3]] } }, false, true),
            (doc! { "x": { "$gt": [1, 5] } }, true, false),
            (doc! { "x": { "$lt": [1, 2, 0] } }, true, true),
            // Never into a nested array.
            (doc! { "y": 1 }, false, true),
            (doc! { "y": { "$gte": 1 } }, false, true),
            (doc! { "y": { "$in": [1] } }, false, true),
            (doc! { "y": { "$ne": 1 } }, true, false),
            (doc! { "y": { "$nin": [1] } }, true, false),
            (doc! { "y": { "$all": [1] } }, false, true),
            (doc! { "y": [1] }, true, false),
            (doc! { "e": [] }, true, false),
            (doc! { "e": { "$size": 0 } }, true, false),
            // Dotted paths through arrays of documents, at every level.
            (doc! { "n.s": [] }, true, true),
            (doc! { "n.s": 4 }, true, false),
            (doc! { "n.s": { "$size": 1 } }, false, true),
            (doc! { "o.b": 7 }, true, false),
            (doc! { "o.b": 8 }, false, false),
            (doc! { "o.b": [8] }, true, false),
            (doc! { "o.b": 6 }, false, false),
            (doc! { "o.2.b": 6 }, true, false),
            (doc! { "o.1": 5 }, true, false),
            (doc! { "o.0.b": 7 }, true, false),
            (doc! { "x.0": [1, 2] }, true, false),
            (doc! { "x.0": 1 }, false, true),
            (doc! { "x.0.0": 1 }, true, false),
            (doc! { "o.b": { "$exists": true } }, true, false),
            (doc! { "n.z": Bson::Null }, true, true),
            (doc! { "x.z": Bson::Null }, false, false),
        ];
        check(&cases, &a, &b);
    }

    #[test]
    fn expression_paths_through_arrays_give_arrays() {
        let d = doc! {
            "o": [{ "b": 1 }, { "c": 2 }, 5, [{ "b": 3 }], { "b": [{ "c": 4 }] }, { "b": 99 }],
            "p": { "q": [{ "r": { "s": 1 } }, { "r": { "s": 2 } }] },
        };
        let value = |path: &str| {
            let parts: Vec<String> = path.split('.').map(str::to_owned).collect();
            field_value(d.get(&parts[0]).map(Cow::Borrowed), &parts[1..]).map(Cow::into_owned)
        };
        assert_eq!(
            value("o.b"),
            Some(Bson::Array(vec![
                Bson::Int32(1),
                Bson::Array(vec![Bson::Document(doc! { "c": 4 })]),
                Bson::Int32(99)
            ]))
        );
        assert_eq!(
            value("o.b.c"),
            Some(Bson::Array(vec![Bson::Array(vec![Bson::Int32(4)])]))
        );
        assert_eq!(value("o.0"), Some(Bson::Array(Vec::new())));
        assert_eq!(
            value("p.q.r.s"),
            Some(Bson::Array(vec![Bson::Int32(1), Bson::Int32(2)]))
        );
        assert_eq!(value("p.z"), None);
        assert_eq!(value("p.q.r.s.t"), Some(Bson::Array(Vec::new())));
        let a = doc! { "t": DateTime::from_millis(5), "o": [{ "b": 1 }, { "b": 99 }] };
        let b = doc! { "t": DateTime::from_millis(9), "o": { "b": 1 } };
        let cases: Vec<(Document, bool, bool)> = vec![
            (doc! { "$expr": { "$eq": ["$o.b", [1, 99]] } }, true, false),
            (doc! { "$expr": { "$eq": ["$o.b", 1] } }, false, true),
        ];
        check(&cases, &a, &b);
    }

    #[test]
    fn value_refs_match_like_documents() {
        let values = [
            Bson::Int32(3),
            Bson::Int64(3),
            Bson::Double(2.5),
            Bson::Double(f64::NAN),
            Bson::String("abc".into()),
            Bson::Boolean(true),
            Bson::Null,
            Bson::DateTime(DateTime::from_millis(7)),
            Bson::Array(vec![Bson::Int32(1), Bson::Int32(9)]),
            Bson::Document(doc! { "x": 4 }),
        ];
        let operands = [
            Bson::Int32(3),
            Bson::Double(2.9),
            Bson::String("abd".into()),
            Bson::Null,
            Bson::Int64(5),
            Bson::DateTime(DateTime::from_millis(7)),
            Bson::Boolean(false),
        ];
        let mut col = tscoll_codec::Column::new();
        let mut scratch = Vec::new();
        for v in &values {
            tscoll_catalog::value::push_value(&mut col, v, &mut scratch);
        }
        col.push_missing();
        let stored: Vec<ValueRef<'_>> = col.iter().collect();
        for (i, v) in stored.iter().enumerate() {
            let doc = match values.get(i) {
                Some(b) => doc! { "f": b.clone() },
                None => doc! {},
            };
            for op in [Cmp::Eq, Cmp::Gt, Cmp::Gte, Cmp::Lt, Cmp::Lte] {
                for o in &operands {
                    let f = Filter {
                        preds: vec![Pred::Field {
                            path: vec!["f".into()],
                            op,
                            value: o.clone(),
                        }],
                        clauses: Vec::new(),
                    };
                    assert_eq!(
                        value_ref_matches(*v, &[], op, o),
                        Ok(f.matches_row(&doc, 0, None).unwrap()),
                        "{doc} {op:?} {o}"
                    );
                }
            }
            let rest = ["x".to_owned()];
            assert_eq!(
                value_ref_matches(*v, &rest, Cmp::Eq, &Bson::Int32(4)),
                Ok(matches!(values.get(i), Some(Bson::Document(_))))
            );
        }
    }
}
