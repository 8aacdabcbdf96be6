//! Grouping into ranges of a value: `$bucket` (given boundaries), `$bucketAuto` (boundaries
//! chosen so that buckets hold about as many documents each), and `$sortByCount` (a count
//! per value, most frequent first). Their outputs are the accumulators of `$group`
//! (`group.rs`), `{count: {$sum: 1}}` when none is given.
//!
//! - `$bucket` puts a document in the bucket `[boundaries[i], boundaries[i + 1])` its
//!   `groupBy` value falls in (compared in BSON order, as `$gte` and `$lt` compare), the
//!   `default` bucket otherwise; buckets come out sorted by `_id` (their lower boundary, or
//!   the default value). It holds one set of accumulators per bucket.
//! - `$bucketAuto` sorts the documents by their `groupBy` value (missing as null) with the
//!   spilling sort of `$sort`, then fills buckets of `round(n / buckets)` documents in order,
//!   a value never split between two buckets; `_id` is `{min, max}`, each `max` the next
//!   bucket's `min` and the last bucket's its greatest value. With a `granularity`
//!   (`granularity.rs`) the boundaries are rounded as MongoDB rounds them. It holds the
//!   accumulators of the buckets made.

use bson::{Bson, Document, doc};
use tscoll_catalog::value::compare;

use super::granularity::Granularity;
use super::group::{Group, Op, State, parse_accumulator};
use super::stage::{Docs, evaluate, expression, sort_spec};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::Expr;

/// The field a document's bucket (or `groupBy` value) is kept in while it is grouped or
/// sorted (a name no measurement field has: it starts with a control character).
const KEY: &str = "\u{1}bucket";

fn err(code: u32, message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

/// Whether `v` is a `groupBy` MongoDB takes: a `$`-prefixed path or an operator object.
fn is_group_by(v: &Bson) -> bool {
    match v {
        Bson::String(s) => s.starts_with('$'),
        Bson::Document(d) => d.keys().next().is_some_and(|k| k.starts_with('$')),
        _ => false,
    }
}

/// Parses `$sortByCount`'s expression into the `$group` it stands for:
/// `{_id: <expression>, count: {$sum: 1}}`, to be sorted by `count` descending.
///
/// # Errors
/// MongoDB's codes: `Location40147` for an object that is not an operator expression,
/// `Location40148` for a string without `$`, `Location40149` for anything else.
pub(super) fn sort_by_count(spec: &Bson) -> Result<Group> {
    match spec {
        Bson::Document(d) if !d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            return Err(err(
                40147,
                "the sortByCount field must be defined as a $-prefixed path or an expression \
                 inside an object",
            ));
        }
        Bson::String(s) if !s.starts_with('$') => {
            return Err(err(
                40148,
                "the sortByCount field must be defined as a $-prefixed path or an expression \
                 inside an object",
            ));
        }
        Bson::Document(_) | Bson::String(_) => {}
        _ => {
            return Err(err(
                40149,
                "the sortByCount field must be specified as a string or as an object",
            ));
        }
    }
    Group::parse(&Bson::Document(
        doc! { "_id": spec.clone(), "count": { "$sum": 1 } },
    ))
}

/// A parsed `$bucket`.
pub(super) struct Bucket {
    group_by: Expr,
    boundaries: Vec<Bson>,
    default: Option<Bson>,
    /// The `$group` on the bucket the document was given.
    group: Group,
}

/// BSON's canonical type order class of a value (numbers together, as MongoDB compares).
fn canonical(v: &Bson) -> i32 {
    tscoll_catalog::value::canonical_rank(v)
}

/// A constant of a stage's specification: a literal (`{$literal: v}` too), never a path.
fn constant(v: &Bson) -> Option<Bson> {
    match v {
        Bson::String(s) if s.starts_with('$') => None,
        Bson::Document(d) if d.len() == 1 && d.contains_key("$literal") => {
            d.get("$literal").cloned()
        }
        Bson::Document(d) if d.keys().any(|k| k.starts_with('$')) => None,
        other => Some(other.clone()),
    }
}

impl Bucket {
    /// Parses `{groupBy, boundaries, default?, output?}`.
    ///
    /// # Errors
    /// MongoDB's codes: `Location40201` (not a document), `Location40202` (`groupBy` not a
    /// path or expression), `Location40200` (boundaries not an array), `Location40191` (a
    /// boundary not a constant), `Location40192` (fewer than 2), `Location40193` (of
    /// different types), `Location40194` (not ascending), `Location40195` (default not a
    /// constant), `Location40199` (default inside the boundaries), `Location40196` (output
    /// not a document), `Location40197` (unknown option), `Location40198` (groupBy or
    /// boundaries missing); an accumulator's errors as `$group` gives them.
    pub(super) fn parse(spec: &Bson) -> Result<Bucket> {
        let Bson::Document(d) = spec else {
            return Err(err(
                40201,
                format!("Argument to $bucket stage must be an object, but found {spec}"),
            ));
        };
        let mut group_by = None;
        let mut boundaries = Vec::new();
        let mut default = None;
        let mut output = None;
        for (k, v) in d {
            match k.as_str() {
                "groupBy" => {
                    if !is_group_by(v) {
                        return Err(err(
                            40202,
                            format!(
                                "The $bucket 'groupBy' field must be defined as a $-prefixed \
                                 path or an expression, but found: {v}"
                            ),
                        ));
                    }
                    group_by = Some(expression(v)?);
                }
                "boundaries" => {
                    let Bson::Array(a) = v else {
                        return Err(err(
                            40200,
                            format!("The $bucket 'boundaries' field must be an array, not {v}"),
                        ));
                    };
                    for b in a {
                        boundaries.push(constant(b).ok_or_else(|| {
                            err(
                                40191,
                                format!(
                                    "The $bucket 'boundaries' field must be an array of \
                                     constant values, but found value: {b}"
                                ),
                            )
                        })?);
                    }
                    if boundaries.len() < 2 {
                        return Err(err(
                            40192,
                            format!(
                                "The $bucket 'boundaries' field must have at least 2 values, \
                                 but found {} value(s)",
                                boundaries.len()
                            ),
                        ));
                    }
                    for (i, w) in boundaries.windows(2).enumerate() {
                        if canonical(&w[0]) != canonical(&w[1]) {
                            return Err(err(
                                40193,
                                format!(
                                    "All values in the the 'boundaries' option to $bucket must \
                                     have the same type. Found conflicting types {} and {}",
                                    w[0], w[1]
                                ),
                            ));
                        }
                        if compare(&w[0], &w[1]) != std::cmp::Ordering::Less {
                            return Err(err(
                                40194,
                                format!(
                                    "The 'boundaries' option to $bucket must be sorted, but \
                                     elements {} and {} are not in ascending order ({} is not \
                                     less than {})",
                                    i,
                                    i + 1,
                                    w[0],
                                    w[1]
                                ),
                            ));
                        }
                    }
                }
                "default" => {
                    default = Some(constant(v).ok_or_else(|| {
                        err(
                            40195,
                            format!(
                                "The $bucket 'default' field must be a constant expression, \
                                 but found: {v}"
                            ),
                        )
                    })?);
                }
                "output" => {
                    let Bson::Document(o) = v else {
                        return Err(err(
                            40196,
                            format!("The $bucket 'output' field must be an object, not {v}"),
                        ));
                    };
                    output = Some(o.clone());
                }
                other => {
                    return Err(err(
                        40197,
                        format!("Unrecognized option to $bucket: {other}"),
                    ));
                }
            }
        }
        let (Some(group_by), false) = (group_by, boundaries.is_empty()) else {
            return Err(err(
                40198,
                "$bucket requires 'groupBy' and 'boundaries' to be specified.",
            ));
        };
        if let (Some(dv), Some(lo), Some(hi)) = (&default, boundaries.first(), boundaries.last())
            && canonical(dv) == canonical(lo)
            && compare(dv, lo) != std::cmp::Ordering::Less
            && compare(dv, hi) == std::cmp::Ordering::Less
        {
            return Err(err(
                40199,
                "The $bucket 'default' field must be less than the lowest boundary or greater \
                 than or equal to the highest boundary.",
            ));
        }
        let mut group = output.unwrap_or_else(|| doc! { "count": { "$sum": 1 } });
        if group.contains_key("_id") {
            return Err(err(40197, "$bucket: 'output' cannot name '_id'"));
        }
        group.insert("_id", format!("${KEY}"));
        let group = Group::parse(&Bson::Document(group))?;
        Ok(Bucket {
            group_by,
            boundaries,
            default,
            group,
        })
    }

    /// The bucket of a `groupBy` value: its lower boundary, or the default.
    fn bucket_of(&self, v: &Bson) -> Result<Bson> {
        let at = self
            .boundaries
            .partition_point(|b| compare(b, v) != std::cmp::Ordering::Greater);
        if at > 0 && at < self.boundaries.len() {
            return Ok(self.boundaries[at - 1].clone());
        }
        self.default.clone().ok_or_else(|| {
            err(
                7_158_303,
                format!(
                    "$bucket could not find a matching branch for an input, and no default was \
                     specified: the groupBy value {v} is outside the boundaries"
                ),
            )
        })
    }

    /// Buckets `docs`: reads the whole input here.
    ///
    /// # Errors
    /// The input's errors, `groupBy` failing, a value outside the boundaries without a
    /// default (`Location7158303`), an accumulator's errors.
    pub(super) fn run(self, docs: Docs) -> Result<Docs> {
        let this = std::sync::Arc::new(self);
        let tagger = std::sync::Arc::clone(&this);
        let tagged = docs.map(move |d| {
            let mut d = d?;
            let v = evaluate(&tagger.group_by, &d, "$bucket")?.unwrap_or(Bson::Null);
            d.insert(KEY, tagger.bucket_of(&v)?);
            Ok(d)
        });
        let out = this.group.run(Box::new(tagged))?;
        Ok(Box::new(out.into_iter().map(Ok)))
    }
}

/// A parsed `$bucketAuto`.
pub(super) struct BucketAuto {
    group_by: Expr,
    buckets: usize,
    /// `(name, accumulator, operand)`.
    outputs: Vec<(String, Op, Option<Expr>)>,
    /// How boundaries are rounded, if they are.
    granularity: Option<Granularity>,
}

/// One bucket being filled.
struct Filling {
    min: Bson,
    max: Bson,
    count: usize,
    states: Vec<State>,
}

impl BucketAuto {
    /// Parses `{groupBy, buckets, output?, granularity?}`.
    ///
    /// # Errors
    /// MongoDB's codes: `Location40240` (not a document), `Location40239` (`groupBy` not a
    /// path or expression), `Location40241` / `Location40242` (buckets not a number / not a
    /// 32-bit integer), `Location40243` (buckets not positive), `Location40244` (output not
    /// a document), `Location40261` (granularity not a string), `Location40245` (unknown
    /// option), `Location40246` (groupBy or buckets missing), `Location40257` (an unknown
    /// granularity).
    pub(super) fn parse(spec: &Bson) -> Result<BucketAuto> {
        let Bson::Document(d) = spec else {
            return Err(err(
                40240,
                format!("The argument to $bucketAuto must be an object, but found {spec}"),
            ));
        };
        let mut group_by = None;
        let mut buckets = None;
        let mut outputs = Vec::new();
        let mut granularity = None;
        for (k, v) in d {
            match k.as_str() {
                "groupBy" => {
                    if !is_group_by(v) {
                        return Err(err(
                            40239,
                            format!(
                                "The $bucketAuto 'groupBy' field must be defined as a \
                                 $-prefixed path or an expression object, but found: {v}"
                            ),
                        ));
                    }
                    group_by = Some(expression(v)?);
                }
                "buckets" => {
                    let n = match v {
                        Bson::Int32(n) => i64::from(*n),
                        Bson::Int64(n) => *n,
                        #[expect(clippy::cast_possible_truncation, reason = "checked whole")]
                        Bson::Double(x) if x.fract() == 0.0 && x.abs() < 1e18 => *x as i64,
                        Bson::Double(_) => {
                            return Err(err(
                                40242,
                                format!(
                                    "The $bucketAuto 'buckets' field must be representable as \
                                     a 32-bit integer, but found {v}"
                                ),
                            ));
                        }
                        _ => {
                            return Err(err(
                                40241,
                                format!(
                                    "The $bucketAuto 'buckets' field must be a numeric value, \
                                     but found {v}"
                                ),
                            ));
                        }
                    };
                    let n = i32::try_from(n).map_err(|_| {
                        err(
                            40242,
                            format!(
                                "The $bucketAuto 'buckets' field must be representable as a \
                                 32-bit integer, but found {n}"
                            ),
                        )
                    })?;
                    if n <= 0 {
                        return Err(err(
                            40243,
                            format!(
                                "The $bucketAuto 'buckets' field must be greater than 0, but \
                                 found: {n}"
                            ),
                        ));
                    }
                    buckets = Some(usize::try_from(n).unwrap_or(1));
                }
                "output" => {
                    let Bson::Document(o) = v else {
                        return Err(err(
                            40244,
                            format!("The $bucketAuto 'output' field must be an object, not {v}"),
                        ));
                    };
                    for (name, acc) in o {
                        if name.is_empty() || name.starts_with('$') || name.contains('.') {
                            return Err(Error::rejected(
                                ErrorCode::BadValue,
                                format!("$bucketAuto: '{name}' is not a valid output name"),
                            ));
                        }
                        let (op, arg) = parse_accumulator("$bucketAuto", name, acc)?;
                        outputs.push((name.clone(), op, arg));
                    }
                }
                "granularity" => {
                    let Bson::String(g) = v else {
                        return Err(err(
                            40261,
                            format!(
                                "The $bucketAuto 'granularity' field must be a string, not {v}"
                            ),
                        ));
                    };
                    granularity = Some(Granularity::parse(g)?);
                }
                other => {
                    return Err(err(
                        40245,
                        format!("Unrecognized option to $bucketAuto: {other}"),
                    ));
                }
            }
        }
        let (Some(group_by), Some(buckets)) = (group_by, buckets) else {
            return Err(err(
                40246,
                "$bucketAuto requires 'groupBy' and 'buckets' to be specified",
            ));
        };
        if outputs.is_empty() {
            outputs.push((
                "count".to_owned(),
                Op::Sum,
                Some(expression(&Bson::Int32(1))?),
            ));
        }
        Ok(BucketAuto {
            group_by,
            buckets,
            outputs,
            granularity,
        })
    }

    fn start(&self, value: Bson) -> Filling {
        Filling {
            min: value.clone(),
            max: value,
            count: 0,
            states: self
                .outputs
                .iter()
                .map(|(_, op, _)| State::new(*op))
                .collect(),
        }
    }

    fn add(&self, b: &mut Filling, value: Bson, doc: &Document) -> Result<()> {
        b.max = value;
        b.count += 1;
        for ((_, _, arg), st) in self.outputs.iter().zip(&mut b.states) {
            let v = match arg {
                Some(e) => evaluate(e, doc, "$bucketAuto")?,
                None => None,
            };
            st.add(v.as_ref())?;
        }
        Ok(())
    }

    fn finish(&self, b: &Filling) -> Document {
        let mut out = doc! { "_id": { "min": b.min.clone(), "max": b.max.clone() } };
        for ((name, _, _), st) in self.outputs.iter().zip(&b.states) {
            out.insert(name.clone(), st.value());
        }
        out
    }

    /// Buckets `docs`: sorts the whole input here (spilling past `budget` bytes).
    ///
    /// # Errors
    /// The input's errors, `groupBy` failing, the sort's errors, an accumulator's errors; with
    /// a granularity, a value that is not a non-negative number (`Location40258` to
    /// `Location40260`).
    pub(super) fn run(self, docs: Docs, budget: u64) -> Result<Docs> {
        let mut n: usize = 0;
        let granularity = self.granularity;
        let tagged = docs.map(|d| {
            let mut d = d?;
            let v = evaluate(&self.group_by, &d, "$bucketAuto")?.unwrap_or(Bson::Null);
            if granularity.is_some() {
                Granularity::check(&v)?;
            }
            d.insert(KEY, v);
            n += 1;
            Ok(d)
        });
        let keys = vec![(vec![KEY.to_owned()], false)];
        let mut sorted = sort_spec(keys).sort(tagged, 0, None, budget)?.map(|d| {
            let mut d = d?;
            let v = d.remove(KEY).unwrap_or(Bson::Null);
            Ok::<_, Error>((v, d))
        });
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "a rounded count of documents"
        )]
        let size = ((n as f64 / self.buckets as f64).round() as usize).max(1);
        let mut buckets: Vec<Filling> = Vec::new();
        let mut next = sorted.next().transpose()?;
        while let Some((value, doc)) = next.take() {
            let mut b = self.start(value.clone());
            self.add(&mut b, value, &doc)?;
            if buckets.len() + 1 == self.buckets {
                // The last bucket takes the rest.
                for entry in sorted.by_ref() {
                    let (v, d) = entry?;
                    self.add(&mut b, v, &d)?;
                }
            } else {
                while b.count < size {
                    match sorted.next().transpose()? {
                        Some((v, d)) => self.add(&mut b, v, &d)?,
                        None => break,
                    }
                }
                next = sorted.next().transpose()?;
                // The values below the rounded boundary, or equal to the greatest, join the
                // bucket: a value is never split between two buckets.
                let boundary = granularity.map(|g| g.round_up(&b.max));
                while let Some((v, d)) = next.take() {
                    let joins = match &boundary {
                        Some(limit) => compare(limit, &v) == std::cmp::Ordering::Greater,
                        None => compare(&v, &b.max) == std::cmp::Ordering::Equal,
                    };
                    if joins {
                        self.add(&mut b, v, &d)?;
                        next = sorted.next().transpose()?;
                    } else {
                        next = Some((v, d));
                        break;
                    }
                }
                if let (Some(limit), true) = (boundary, next.is_some()) {
                    b.max = limit;
                }
            }
            if let Some(prev) = buckets.last_mut() {
                match granularity {
                    Some(g) => {
                        if super::group::number(Some(&prev.max)) == Some(0.0) {
                            prev.max = g.round_down(&b.min);
                        }
                        b.min = prev.max.clone();
                    }
                    None => prev.max = b.min.clone(),
                }
            }
            buckets.push(b);
        }
        if let Some(g) = granularity {
            if let Some(first) = buckets.first_mut() {
                first.min = g.round_down(&first.min);
            }
            if let Some(last) = buckets.last_mut() {
                last.max = g.round_up(&last.max);
            }
        }
        let out: Vec<Document> = buckets.iter().map(|b| self.finish(b)).collect();
        Ok(Box::new(out.into_iter().map(Ok)))
    }
}
