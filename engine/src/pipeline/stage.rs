//! The stages of a pipeline: parsing, and running them over a stream of documents.

use bson::{Bson, Document};

use super::bad;
use super::bucket::{Bucket, BucketAuto};
use super::densify::Densify;
use super::facet::Facet;
use super::fill::Fill;
use super::group::Group;
use super::lookup::Lookup;
use super::sample::Sample;
use super::unwind::Unwind;
use super::window::SetWindowFields;
use crate::direct_write::update::set_path;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::expr::{Expr, Vars};
use crate::mql::filter::{Filter, Target, Values, exact_int};
use crate::query::SortOrder;
use crate::query::projection::Projection;
use crate::query::sort::{SortSpec, sort_order};

/// A stream of documents between stages.
pub(super) type Docs = Box<dyn Iterator<Item = Result<Document>> + Send>;

/// One parsed stage.
pub(super) enum Stage {
    /// `$match`: the filter, and its document (leading ones are pushed down to the read).
    Match(Box<Filter>, Document),
    /// `$project`: fields kept or dropped (`None`: none kept), then computed fields, and
    /// whether they read `$$ROOT`/`$$CURRENT`.
    Project(Option<Projection>, Vec<(String, Expr)>, bool),
    /// `$addFields` / `$set`, and whether the fields read `$$ROOT`/`$$CURRENT`.
    AddFields(Vec<(String, Expr)>, bool),
    /// `$replaceRoot` (`{newRoot: <expr>}`) / `$replaceWith` (`<expr>`): the document becomes
    /// the expression's value, which must be a document; whether it reads
    /// `$$ROOT`/`$$CURRENT`; the stage's name.
    ReplaceRoot(Expr, bool, &'static str),
    /// `$unset`.
    Unset(Projection),
    /// `$group`.
    Group(Group),
    /// `$sort`: `(path, descending)`.
    Sort(Vec<(Vec<String>, bool)>),
    /// `$skip`.
    Skip(usize),
    /// `$limit`.
    Limit(usize),
    /// `$count`: the output field.
    Count(String),
    /// `$setWindowFields`.
    Window(SetWindowFields),
    /// `$unwind`.
    Unwind(Box<Unwind>),
    /// `$sortByCount`: a `$group` counting by the expression, sorted by count, descending.
    SortByCount(Group),
    /// `$bucket`.
    Bucket(Box<Bucket>),
    /// `$bucketAuto`.
    BucketAuto(Box<BucketAuto>),
    /// `$facet`.
    Facet(Box<Facet>),
    /// `$sample`.
    Sample(Sample),
    /// `$lookup`.
    Lookup(Box<Lookup>),
    /// `$densify`.
    Densify(Box<Densify>),
    /// `$fill`.
    Fill(Box<Fill>),
}

/// The stages a pipeline may use, for the error naming one that is not.
const STAGES: &str = "$match, $project, $addFields, $set, $unset, $replaceRoot, $replaceWith, \
                      $group, $sort, $skip, $limit, $count, $setWindowFields, $unwind, \
                      $sortByCount, $bucket, $bucketAuto, $facet, $sample, $lookup, $densify, $fill";

/// A field name no document field can have: the time field of filters over stage documents.
const NO_TIME: &str = "\u{1}";

/// Parses an expression over stage documents (every path reads the document).
pub(super) fn expression(v: &Bson) -> Result<Expr> {
    let target = |path: &[String]| (Target::Field, path.to_vec());
    Expr::parse(v, &target)
}

/// A document as expression values: every path reads it.
pub(super) struct DocumentValues<'a>(pub(super) &'a Document);

impl Values for DocumentValues<'_> {
    fn root(&self, _: Target, path: &[String]) -> crate::mql::filter::Got<'_> {
        Ok(path
            .first()
            .and_then(|first| self.0.get(first))
            .map(std::borrow::Cow::Borrowed))
    }

    fn document(&self) -> Option<std::borrow::Cow<'_, Bson>> {
        Some(std::borrow::Cow::Owned(Bson::Document(self.0.clone())))
    }
}

/// Evaluates `e` on `doc` (`None`: missing).
///
/// # Errors
/// `BadValue` naming `stage` when the expression fails.
pub(super) fn evaluate(e: &Expr, doc: &Document, stage: &str) -> Result<Option<Bson>> {
    e.eval(&DocumentValues(doc))
        .map(|v| v.map(std::borrow::Cow::into_owned))
        .map_err(|e| e.into_error(stage, |m| Error::rejected(ErrorCode::InternalError, m)))
}

/// As [`evaluate`], with `$$ROOT` and `$$CURRENT` bound to `doc` when `root` (an expression
/// that reads them, [`reads_root`]; the others skip the copy of the document).
///
/// # Errors
/// As [`evaluate`].
fn evaluate_rooted(e: &Expr, doc: &Document, stage: &str, root: bool) -> Result<Option<Bson>> {
    if !root {
        return evaluate(e, doc, stage);
    }
    let whole = Bson::Document(doc.clone());
    let none = Vars::default();
    let with_root = none.with("ROOT", whole.clone());
    let vars = with_root.with("CURRENT", whole);
    e.eval_with(&DocumentValues(doc), &vars)
        .map(|v| v.map(std::borrow::Cow::into_owned))
        .map_err(|e| e.into_error(stage, |m| Error::rejected(ErrorCode::InternalError, m)))
}

/// Whether an expression's specification names `$$ROOT` or `$$CURRENT` anywhere (decided
/// once, at parse time).
fn reads_root(spec: &Bson) -> bool {
    match spec {
        Bson::String(s) => ["$$ROOT", "$$CURRENT"].iter().any(|v| {
            s.strip_prefix(v)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        }),
        Bson::Array(items) => items.iter().any(reads_root),
        Bson::Document(d) => d.values().any(reads_root),
        _ => false,
    }
}

/// Parses the new root of `$replaceRoot` (`{newRoot: <expr>}`) or `$replaceWith` (`<expr>`).
///
/// # Errors
/// MongoDB's 40229 when `$replaceRoot` is not given a document, 40230 for a field other
/// than `newRoot`, 40231 without `newRoot`; `BadValue` for a malformed expression.
fn replace_root(name: &str, spec: &Bson) -> Result<Stage> {
    if name == "$replaceWith" {
        return Ok(Stage::ReplaceRoot(
            expression(spec)?,
            reads_root(spec),
            "$replaceWith",
        ));
    }
    let Bson::Document(d) = spec else {
        return Err(Error::rejected(
            ErrorCode::Location(40229),
            format!("expected an object as specification for $replaceRoot stage, got {spec}"),
        ));
    };
    if let Some(other) = d.keys().find(|k| *k != "newRoot") {
        return Err(Error::rejected(
            ErrorCode::Location(40230),
            format!(
                "unrecognized option to $replaceRoot stage: {other}, only valid option is 'newRoot'"
            ),
        ));
    }
    let Some(root) = d.get("newRoot") else {
        return Err(Error::rejected(
            ErrorCode::Location(40231),
            "no newRoot specified for the $replaceRoot stage",
        ));
    };
    Ok(Stage::ReplaceRoot(
        expression(root)?,
        reads_root(root),
        "$replaceRoot",
    ))
}

fn fields_of(stage: &str, spec: &Bson) -> Result<Vec<(String, Expr)>> {
    let Bson::Document(d) = spec else {
        return Err(bad(format!("{stage} takes a document")));
    };
    d.iter()
        .map(|(k, v)| {
            check_field(stage, k)?;
            Ok((k.clone(), expression(v)?))
        })
        .collect()
}

fn check_field(stage: &str, name: &str) -> Result<()> {
    if name.is_empty() || name.starts_with('$') || name.split('.').any(str::is_empty) {
        return Err(bad(format!("{stage}: '{name}' is not a valid field name")));
    }
    Ok(())
}

/// The count of `$skip` or `$limit`: a non-negative whole number (of any numeric type).
///
/// # Errors
/// MongoDB's 5107200 (`$skip`) or 5107201 (`$limit`) for a value that is not a number, not a
/// whole number, or negative.
fn count_of(stage: &str, v: &Bson) -> Result<usize> {
    let code = if stage == "$skip" {
        5_107_200
    } else {
        5_107_201
    };
    let invalid = |why: &str| {
        Error::rejected(
            ErrorCode::Location(code),
            format!("invalid argument to {stage} stage: {why}: {stage}: {v}"),
        )
    };
    let n = exact_int(v).ok_or_else(|| invalid("Expected an integer"))?;
    usize::try_from(n).map_err(|_| invalid("Expected a non-negative number in"))
}

/// Parses a sort document (`{field: 1 | -1}`).
pub(super) fn sort_keys(stage: &str, spec: &Bson) -> Result<Vec<(Vec<String>, bool)>> {
    let Bson::Document(d) = spec else {
        return Err(bad(format!("{stage} takes a sort document")));
    };
    if d.is_empty() {
        return Err(bad(format!("{stage} needs at least one field")));
    }
    d.iter()
        .map(|(k, v)| {
            check_field(stage, k)?;
            let order = sort_order(v)
                .ok_or_else(|| bad(format!("{stage}: the direction of '{k}' must be 1 or -1")))?;
            Ok((
                k.split('.').map(str::to_owned).collect(),
                order == SortOrder::Descending,
            ))
        })
        .collect()
}

impl Stage {
    /// Whether MongoDB allows the stage in an update pipeline: `$addFields`/`$set`,
    /// `$project`, `$unset`, `$replaceRoot`/`$replaceWith`.
    pub(super) fn allowed_in_update(&self) -> bool {
        matches!(
            self,
            Stage::Project(..) | Stage::AddFields(..) | Stage::Unset(_) | Stage::ReplaceRoot(..)
        )
    }

    /// Runs a stage that takes one document at a time (`$project`, `$addFields`/`$set`,
    /// `$unset`, `$replaceRoot`/`$replaceWith`) on `doc`; any other stage passes it on.
    ///
    /// # Errors
    /// An expression that fails; MongoDB's 40228 when a new root is not a document;
    /// `PathNotViable` for a computed path through a scalar.
    pub(super) fn apply_one(&self, doc: Document) -> Result<Document> {
        match self {
            Stage::Project(p, computed, root) => {
                let source = if computed.is_empty() {
                    None
                } else {
                    Some(doc.clone())
                };
                let mut kept: Document = match p {
                    Some(p) => doc
                        .into_iter()
                        .filter(|(k, _)| p.keeps(k))
                        .filter_map(|(k, v)| p.cut(&k, v).map(|v| (k, v)))
                        .collect(),
                    None => Document::new(),
                };
                if let Some(source) = source {
                    for (name, e) in computed {
                        let parts: Vec<&str> = name.split('.').collect();
                        if let Some(v) = evaluate_rooted(e, &source, "$project", *root)? {
                            set_path(&mut kept, &parts, v)?;
                        }
                    }
                }
                Ok(kept)
            }
            Stage::AddFields(fields, root) => add_fields(doc, fields, "$addFields", *root),
            Stage::Unset(p) => Ok(doc
                .into_iter()
                .filter(|(k, _)| p.keeps(k))
                .filter_map(|(k, v)| p.cut(&k, v).map(|v| (k, v)))
                .collect()),
            Stage::ReplaceRoot(e, root, name) => match evaluate_rooted(e, &doc, name, *root)? {
                Some(Bson::Document(d)) => Ok(d),
                other => {
                    let (what, shown) = match &other {
                        None => ("missing", "MISSING".to_owned()),
                        Some(v) => (crate::direct_write::update::type_name(v), v.to_string()),
                    };
                    Err(Error::rejected(
                        ErrorCode::Location(40228),
                        format!(
                            "{name}: {} must evaluate to an object, but resulting value was: {shown}. Type of resulting value: '{what}'",
                            if *name == "$replaceWith" {
                                "'replacement document'"
                            } else {
                                "'newRoot' expression"
                            }
                        ),
                    ))
                }
            },
            _ => Ok(doc),
        }
    }

    /// Parses one stage document (`{"$match": {...}}`).
    ///
    /// # Errors
    /// `BadValue` naming the stage.
    pub(super) fn parse(stage: &Document) -> Result<Stage> {
        let mut it = stage.iter();
        let (Some((name, spec)), None) = (it.next(), it.next()) else {
            return Err(Error::rejected(
                ErrorCode::Location(40323),
                format!(
                    "A pipeline stage specification object must contain exactly one field, \
                     not {stage}"
                ),
            ));
        };
        Ok(match name.as_str() {
            "$match" => {
                let Bson::Document(d) = spec else {
                    return Err(bad("$match takes a filter document"));
                };
                Stage::Match(Box::new(Filter::parse(d, NO_TIME, None)?), d.clone())
            }
            "$project" => {
                let root = reads_root(spec);
                let Bson::Document(d) = spec else {
                    return Err(bad("$project takes a document"));
                };
                let mut plain = Document::new();
                let mut computed = Vec::new();
                for (k, v) in d {
                    match v {
                        Bson::Boolean(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) => {
                            plain.insert(k.clone(), v.clone());
                        }
                        other => {
                            check_field("$project", k)?;
                            computed.push((k.clone(), expression(other)?));
                        }
                    }
                }
                if !computed.is_empty() && !plain.is_empty() {
                    // Computed fields make it an inclusion: plain entries must include.
                    let excludes = plain.iter().any(|(k, v)| {
                        k != "_id"
                            && matches!(v, Bson::Boolean(false) | Bson::Int32(0) | Bson::Int64(0))
                    });
                    if excludes {
                        return Err(bad(
                            "$project: cannot exclude fields in an inclusion projection with computed fields",
                        ));
                    }
                }
                let only_computed = !computed.is_empty() && !plain.keys().any(|k| k != "_id");
                if only_computed {
                    // Only computed fields, and `_id` unless excluded.
                    let id_off = matches!(
                        plain.get("_id"),
                        Some(Bson::Boolean(false) | Bson::Int32(0) | Bson::Int64(0))
                    );
                    let keep = (!id_off)
                        .then(|| Projection::parse(Some(&bson::doc! { "_id": 1 })))
                        .transpose()?;
                    Stage::Project(keep, computed, root)
                } else {
                    Stage::Project(Some(Projection::parse(Some(&plain))?), computed, root)
                }
            }
            "$addFields" | "$set" => Stage::AddFields(fields_of(name, spec)?, reads_root(spec)),
            "$replaceRoot" | "$replaceWith" => replace_root(name, spec)?,
            "$unset" => {
                let names: Vec<&str> = match spec {
                    Bson::String(s) => vec![s.as_str()],
                    Bson::Array(a) => a
                        .iter()
                        .map(|v| match v {
                            Bson::String(s) => Ok(s.as_str()),
                            _ => Err(bad("$unset takes field names")),
                        })
                        .collect::<Result<_>>()?,
                    _ => return Err(bad("$unset takes a field name or an array of them")),
                };
                let mut p = Document::new();
                for n in names {
                    check_field("$unset", n)?;
                    p.insert(n, 0);
                }
                Stage::Unset(Projection::parse(Some(&p))?)
            }
            "$group" => Stage::Group(Group::parse(spec)?),
            "$sort" => Stage::Sort(sort_keys("$sort", spec)?),
            "$skip" => Stage::Skip(count_of("$skip", spec)?),
            "$limit" => {
                let n = count_of("$limit", spec)?;
                if n == 0 {
                    return Err(Error::rejected(
                        ErrorCode::Location(15958),
                        "$limit: the limit must be positive",
                    ));
                }
                Stage::Limit(n)
            }
            "$count" => {
                let (code, why) = match spec {
                    Bson::String(f) if f.is_empty() => (40157, "must be a non-empty string"),
                    Bson::String(f) if f.starts_with('$') => (40158, "cannot be a $-prefixed path"),
                    Bson::String(f) if f.contains('\0') => (40159, "cannot contain a null byte"),
                    Bson::String(f) if f.contains('.') => (40160, "cannot contain '.'"),
                    Bson::String(f) => return Ok(Stage::Count(f.clone())),
                    _ => (40156, "must be a non-empty string"),
                };
                return Err(Error::rejected(
                    ErrorCode::Location(code),
                    format!("$count: the count field {why}, not {spec}"),
                ));
            }
            "$setWindowFields" => Stage::Window(SetWindowFields::parse(spec)?),
            "$unwind" => Stage::Unwind(Box::new(Unwind::parse(spec)?)),
            "$sortByCount" => Stage::SortByCount(super::bucket::sort_by_count(spec)?),
            "$bucket" => Stage::Bucket(Box::new(Bucket::parse(spec)?)),
            "$bucketAuto" => Stage::BucketAuto(Box::new(BucketAuto::parse(spec)?)),
            "$facet" => Stage::Facet(Box::new(Facet::parse(spec)?)),
            "$sample" => Stage::Sample(Sample::parse(spec)?),
            "$lookup" => Stage::Lookup(Box::new(Lookup::parse(spec)?)),
            "$densify" => Stage::Densify(Box::new(Densify::parse(spec)?)),
            "$fill" => Stage::Fill(Box::new(Fill::parse(spec)?)),
            other => {
                return Err(Error::rejected(
                    ErrorCode::Location(40324),
                    format!("Unrecognized pipeline stage name: '{other}' (supported: {STAGES})"),
                ));
            }
        })
    }
}

/// Gives the stages that read another collection (`$lookup`, also inside `$facet`) the
/// database of `coll`.
pub(super) fn bind(stages: &mut [Stage], coll: &crate::collection::Collection) {
    for s in stages {
        match s {
            Stage::Lookup(l) => l.bind(coll),
            Stage::Facet(f) => f.bind(coll),
            _ => {}
        }
    }
}

/// A pipeline's sort on `keys` (`(path, descending)`): values compare whole, arrays too.
pub(super) fn sort_spec(keys: Vec<(Vec<String>, bool)>) -> SortSpec {
    let keys = keys
        .into_iter()
        .map(|(path, desc)| {
            let order = if desc {
                SortOrder::Descending
            } else {
                SortOrder::Ascending
            };
            (path, order)
        })
        .collect();
    SortSpec::new(keys, true)
}

/// Sets computed fields on a document.
fn add_fields(
    mut doc: Document,
    fields: &[(String, Expr)],
    stage: &str,
    root: bool,
) -> Result<Document> {
    let values = fields
        .iter()
        .map(|(name, e)| Ok((name, evaluate_rooted(e, &doc, stage, root)?)))
        .collect::<Result<Vec<_>>>()?;
    for (name, v) in values {
        let parts: Vec<&str> = name.split('.').collect();
        match v {
            Some(v) => set_path(&mut doc, &parts, v)?,
            None => {
                crate::direct_write::update::unset_path(&mut doc, &parts);
            }
        }
    }
    Ok(doc)
}

/// Runs `stages` over `input`: the stages that take one document at a time as the result
/// is read; `$group`, `$sort` and `$setWindowFields` read their input when they are reached
/// here, holding their groups, or at most `budget` bytes of documents (sorted runs past it go
/// to temporary files, [`SortSpec::sort`]), or one partition.
///
/// # Errors
/// The first error of the input or of a stage that reads its input here.
pub(super) fn run(stages: Vec<Stage>, input: Docs, budget: u64) -> Result<Docs> {
    let mut docs = input;
    let mut stages = stages.into_iter().peekable();
    while let Some(stage) = stages.next() {
        docs = match stage {
            Stage::Match(f, _) => Box::new(docs.filter_map(move |d| match d {
                Ok(d) => match f.matches_row(&d, 0, None) {
                    Ok(true) => Some(Ok(d)),
                    Ok(false) => None,
                    Err(e) => Some(Err(e.into_error("$match", |m| {
                        Error::rejected(ErrorCode::InternalError, m)
                    }))),
                },
                Err(e) => Some(Err(e)),
            })),
            Stage::Project(..)
            | Stage::AddFields(..)
            | Stage::Unset(_)
            | Stage::ReplaceRoot(..) => Box::new(docs.map(move |d| stage.apply_one(d?))),
            Stage::Skip(n) => Box::new(docs.skip(n)),
            Stage::Limit(n) => Box::new(docs.take(n)),
            Stage::Group(g) => Box::new(g.run(docs)?.into_iter().map(Ok)),
            Stage::Sort(keys) => {
                // Before a `$limit`, only the first `n` are kept: a bounded top-n.
                let limit = match stages.peek() {
                    Some(Stage::Limit(n)) => Some(*n),
                    _ => None,
                };
                Box::new(sort_spec(keys).sort(docs, 0, limit, budget)?)
            }
            Stage::Count(field) => {
                let mut n: i64 = 0;
                for d in docs {
                    d?;
                    n += 1;
                }
                if n == 0 {
                    Box::new(std::iter::empty())
                } else {
                    let mut out = Document::new();
                    out.insert(
                        field.clone(),
                        i32::try_from(n).map_or(Bson::Int64(n), Bson::Int32),
                    );
                    Box::new(std::iter::once(Ok(out)))
                }
            }
            Stage::Window(w) => w.run(docs, budget)?,
            Stage::Unwind(u) => u.run(docs),
            Stage::SortByCount(g) => {
                let groups = g.run(docs)?.into_iter().map(Ok);
                let keys = vec![(vec!["count".to_owned()], true)];
                Box::new(sort_spec(keys).sort(groups, 0, None, budget)?)
            }
            Stage::Bucket(b) => b.run(docs)?,
            Stage::BucketAuto(b) => b.run(docs, budget)?,
            Stage::Facet(f) => f.run(docs, budget)?,
            Stage::Sample(s) => s.run(docs, budget)?,
            Stage::Lookup(l) => l.run(docs, budget),
            Stage::Densify(d) => d.run(docs, budget)?,
            Stage::Fill(f) => f.run(docs, budget)?,
        };
    }
    Ok(docs)
}
