//! Update documents (SPEC §11.2): parsing an update — operators or a replacement — and
//! applying it to one measurement, as MongoDB 8.0 applies it to a document. Paths are
//! dotted; a numeric part indexes an array. Operators run in document order, fields in
//! order; no two may touch the same path or one inside another.

use std::cmp::Ordering;

use bson::{Bson, DateTime, Document, Timestamp};
use tscoll_catalog::value::compare;

use super::Update;
use super::positional::{self, ArrayFilter, Part};
use crate::error::{Error, ErrorCode, Result};
use crate::mql::filter::{Filter, exact_int};
use crate::pipeline::update::UpdatePipeline;

/// A parsed update: operators, a whole replacement document, or a pipeline.
#[derive(Debug)]
pub(crate) enum Modification {
    /// Update operators (`{"$set": {...}, "$inc": {...}}`), in document order, with the
    /// update's array filters.
    Operators(Operators),
    /// A replacement document: the measurement becomes it (keeping its `_id` when the
    /// replacement has none).
    Replacement(Document),
    /// An update pipeline (`[{"$set": {...}}, ...]`).
    Pipeline(UpdatePipeline),
}

/// Parsed update operators.
#[derive(Clone, Debug)]
pub(crate) struct Operators {
    ops: Vec<Op>,
    /// The `arrayFilters` the `$[<identifier>]` parts refer to.
    filters: Vec<ArrayFilter>,
    /// Whether a path holds a positional part (`$`, `$[]`, `$[<identifier>]`).
    dynamic: bool,
    /// Whether a path holds `$` (the position the query matched).
    first: bool,
}

/// How an update applies to one measurement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Apply {
    /// An upsert's insert: `$setOnInsert` applies.
    pub(crate) inserting: bool,
    /// `$currentDate`'s time.
    pub(crate) now: DateTime,
    /// The array position the query matched (for `$`), if any.
    pub(crate) matched: Option<usize>,
}

/// One operator on one path.
#[derive(Clone, Debug)]
pub(crate) struct Op {
    kind: Kind,
    /// The dotted path.
    path: String,
    /// The path, parsed.
    parts: Vec<Part>,
    /// The operand (its meaning depends on `kind`).
    value: Bson,
}

#[derive(Clone, Debug)]
enum Kind {
    Set,
    SetOnInsert,
    Unset,
    Inc,
    Mul,
    Min,
    Max,
    Rename(String),
    CurrentDate { timestamp: bool },
    Push(Push),
    AddToSet(Vec<Bson>),
    Pull(Pull),
    PullAll(Vec<Bson>),
    Pop { first: bool },
}

/// `$push` with its modifiers.
#[derive(Clone, Debug)]
struct Push {
    each: Vec<Bson>,
    position: Option<i64>,
    slice: Option<i64>,
    sort: Option<PushSort>,
}

#[derive(Clone, Debug)]
enum PushSort {
    /// Sort the elements themselves: 1 ascending, -1 descending.
    Whole(i32),
    /// Sort documents by fields: `(path, direction)`.
    Fields(Vec<(Vec<String>, i32)>),
}

/// `$pull`'s condition on an element.
#[derive(Clone, Debug)]
enum Pull {
    /// An element equal to this value.
    Equal(Bson),
    /// A query operator condition on the element (`{"$gte": 6}`), as a filter on a one-field
    /// document.
    Condition(Box<Filter>),
    /// A query on document elements (`{"score": 8}`).
    Query(Box<Filter>),
}

/// The operators an update document may use.
pub(crate) const OPERATORS: [&str; 14] = [
    "$set",
    "$setOnInsert",
    "$unset",
    "$inc",
    "$mul",
    "$min",
    "$max",
    "$rename",
    "$currentDate",
    "$push",
    "$addToSet",
    "$pull",
    "$pullAll",
    "$pop",
];

/// The field name the one-field documents of `$pull` conditions use.
const ELEMENT: &str = "e";

/// A field name no stored time field can have (a filter parsed for an element needs one).
const NO_TIME: &str = "\u{1}";

fn rejected(code: ErrorCode, msg: impl Into<String>) -> Error {
    Error::rejected(code, msg)
}

fn bad(msg: impl Into<String>) -> Error {
    rejected(ErrorCode::BadValue, msg)
}

fn failed_to_parse(msg: impl Into<String>) -> Error {
    rejected(ErrorCode::FailedToParse, msg)
}

impl Modification {
    /// Parses an update: a document of operators or a replacement, or a pipeline, with the
    /// update's `arrayFilters` (operators only).
    ///
    /// # Errors
    /// `FailedToParse` for an unknown operator, a mix of operators and fields, operator
    /// arguments that are not a document, array filters with a pipeline or one no path uses;
    /// `ConflictingUpdateOperators` when two operators touch the same path or one inside
    /// another; `BadValue` for a malformed operand, an empty path part or an identifier
    /// without an array filter; `InvalidOptions` for a pipeline stage an update does not
    /// allow.
    ///
    /// `vars` are the update's `let` variables ([`crate::pipeline::bind::constants`]), put
    /// into a pipeline's expressions as constants.
    pub(crate) fn parse(
        update: &Update,
        array_filters: &[Document],
        vars: &[(String, Option<Bson>)],
    ) -> Result<Modification> {
        let update = match update {
            Update::Pipeline(stages) => {
                if !array_filters.is_empty() {
                    return Err(failed_to_parse(
                        "arrayFilters may not be specified for pipeline-style updates",
                    ));
                }
                for stage in stages {
                    crate::document::require_storable("update pipeline stage", stage)?;
                }
                return Ok(Modification::Pipeline(UpdatePipeline::parse(stages, vars)?));
            }
            Update::Document(d) => d,
        };
        crate::document::require_storable("update", update)?;
        let filters = positional::parse_array_filters(array_filters)?;
        let mut used = vec![false; filters.len()];
        let operators = update.keys().filter(|k| k.starts_with('$')).count();
        if operators == 0 {
            check_used(&filters, &used, update)?;
            return Ok(Modification::Replacement(update.clone()));
        }
        if operators != update.len() {
            let field = update
                .keys()
                .find(|k| !k.starts_with('$'))
                .map_or("", |k| k);
            return Err(failed_to_parse(format!(
                "unknown modifier: {field}; an update document holds either update operators only or a replacement document"
            )));
        }
        let mut ops = Vec::new();
        for (op, args) in update {
            if !OPERATORS.contains(&op.as_str()) {
                return Err(failed_to_parse(format!(
                    "unknown modifier: {op}; the update operators are {}",
                    OPERATORS.join(", ")
                )));
            }
            let Bson::Document(args) = args else {
                return Err(failed_to_parse(format!(
                    "modifiers operate on fields but {op} was given {} instead of a document",
                    type_name(args)
                )));
            };
            for (path, value) in args {
                let parts = positional::parse_path(path, &filters, &mut used)?;
                let kind = parse_kind(op, path, value)?;
                if let Kind::Rename(to) = &kind {
                    let to_parts = positional::parse_path(to, &filters, &mut used)?;
                    if positional::is_dynamic(&parts) {
                        return Err(bad(format!(
                            "The source field for $rename may not be dynamic: {path}"
                        )));
                    }
                    if positional::is_dynamic(&to_parts) {
                        return Err(bad(format!(
                            "The destination field for $rename may not be dynamic: {to}"
                        )));
                    }
                }
                ops.push(Op {
                    kind,
                    path: path.clone(),
                    parts,
                    value: value.clone(),
                });
            }
        }
        check_conflicts(&ops)?;
        check_used(&filters, &used, update)?;
        let dynamic = ops.iter().any(|op| positional::is_dynamic(&op.parts));
        let first = ops.iter().any(|op| op.parts.contains(&Part::First));
        Ok(Modification::Operators(Operators {
            ops,
            filters,
            dynamic,
            first,
        }))
    }

    /// Whether applying the update needs the array position the query matched (`$`).
    pub(crate) fn needs_match(&self) -> bool {
        matches!(self, Modification::Operators(o) if o.first)
    }

    /// Whether every path the update writes is the meta field or below it (then a
    /// meta-only filter lets the update move whole buckets, SPEC §11.2).
    pub(crate) fn meta_only(&self, meta_field: &str) -> bool {
        let on_meta = |p: &str| {
            p.strip_prefix(meta_field)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        };
        match self {
            Modification::Replacement(_) | Modification::Pipeline(_) => false,
            // `$` needs the query's match in a measurement.
            Modification::Operators(o) if o.first => false,
            Modification::Operators(o) => o.ops.iter().all(|op| match &op.kind {
                Kind::Rename(to) => {
                    on_meta(&op.path) && on_meta(to) && op.path != meta_field && to != meta_field
                }
                Kind::Set | Kind::Unset | Kind::Inc | Kind::Mul | Kind::Min | Kind::Max => {
                    on_meta(&op.path)
                }
                _ => false,
            }),
        }
    }

    /// Applies the update to `doc`, a measurement matched by the filter: the new document.
    /// `$setOnInsert` applies only when `at.inserting` (an upsert).
    ///
    /// # Errors
    /// `TypeMismatch` for arithmetic on a non-number; `BadValue` for an array operator on a
    /// non-array, or a positional path with nothing to stand for; `PathNotViable` when a
    /// path runs through a value that is neither a document nor an array;
    /// `ConflictingUpdateOperators` when positional paths of two operators name the same
    /// element; `ImmutableField` (66) when the update changes a stored measurement's `_id`
    /// (MongoDB's rule; an upsert's new measurement may get one); a pipeline's errors.
    pub(crate) fn apply(&self, doc: &Document, at: &Apply) -> Result<Document> {
        let out = self.apply_unchecked(doc, at)?;
        match (doc.get("_id"), out.get("_id")) {
            (Some(old), Some(new)) if old != new && !at.inserting => Err(Error::rejected(
                ErrorCode::ImmutableField,
                format!(
                    "performing an update on the path '_id' would modify the immutable field \
                     '_id' (from {old} to {new})"
                ),
            )),
            _ => Ok(out),
        }
    }

    /// [`Modification::apply`] without its check that `_id` is kept.
    fn apply_unchecked(&self, doc: &Document, at: &Apply) -> Result<Document> {
        match self {
            Modification::Replacement(r) => {
                let mut out = Document::new();
                if let Some(id) = doc.get("_id").filter(|_| !r.contains_key("_id")) {
                    out.insert("_id", id.clone());
                }
                out.extend(r.clone());
                Ok(out)
            }
            Modification::Pipeline(p) => p.apply(doc),
            Modification::Operators(o) if !o.dynamic => {
                let mut out = doc.clone();
                for op in &o.ops {
                    let parts: Vec<&str> = op.path.split('.').collect();
                    op.apply(&mut out, &parts, at.inserting, at.now)?;
                }
                Ok(out)
            }
            Modification::Operators(o) => {
                // Every path is expanded against the measurement as it was, then applied.
                let mut expanded = Vec::with_capacity(o.ops.len());
                let mut all = Vec::new();
                for (i, op) in o.ops.iter().enumerate() {
                    let paths = if matches!(op.kind, Kind::SetOnInsert) && !at.inserting {
                        Vec::new()
                    } else {
                        positional::expand(doc, &op.parts, at.matched, &o.filters)?
                    };
                    if o.ops.len() > 1 {
                        all.extend(paths.iter().map(|p| (p.clone(), i)));
                    }
                    expanded.push(paths);
                }
                positional::check_expanded(&mut all)?;
                let mut out = doc.clone();
                for (op, paths) in o.ops.iter().zip(&expanded) {
                    for path in paths {
                        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
                        op.apply(&mut out, &parts, at.inserting, at.now)?;
                    }
                }
                Ok(out)
            }
        }
    }
}

/// Checks that every array filter is used by a path.
///
/// # Errors
/// `FailedToParse` naming the first one no path uses.
fn check_used(filters: &[ArrayFilter], used: &[bool], update: &Document) -> Result<()> {
    match filters.iter().zip(used).find(|(_, u)| !**u) {
        Some((f, _)) => Err(failed_to_parse(format!(
            "The array filter for identifier '{}' was not used in the update {update}",
            f.id()
        ))),
        None => Ok(()),
    }
}

/// MongoDB's name of a value's BSON type (`"double"`, `"object"`, ...).
pub(crate) fn type_name(v: &Bson) -> &'static str {
    match v {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Array(_) => "array",
        Bson::Document(_) => "object",
        Bson::Boolean(_) => "bool",
        Bson::Null => "null",
        Bson::Int32(_) => "int",
        Bson::Int64(_) => "long",
        Bson::DateTime(_) => "date",
        Bson::ObjectId(_) => "objectId",
        Bson::Decimal128(_) => "decimal",
        Bson::Timestamp(_) => "timestamp",
        _ => "another type",
    }
}

fn parse_kind(op: &str, path: &str, value: &Bson) -> Result<Kind> {
    Ok(match op {
        "$set" => Kind::Set,
        "$setOnInsert" => Kind::SetOnInsert,
        "$unset" => Kind::Unset,
        "$inc" | "$mul" => {
            if !is_number(value) {
                return Err(rejected(
                    ErrorCode::TypeMismatch,
                    format!(
                        "cannot {} with non-numeric argument: {{{path}: {value}}}",
                        if op == "$inc" {
                            "increment"
                        } else {
                            "multiply"
                        }
                    ),
                ));
            }
            if op == "$inc" { Kind::Inc } else { Kind::Mul }
        }
        "$min" => Kind::Min,
        "$max" => Kind::Max,
        "$rename" => {
            let Bson::String(to) = value else {
                return Err(bad(format!(
                    "the 'to' field for $rename must be a string: {path}: {value}"
                )));
            };
            if to == path {
                return Err(bad(format!(
                    "the source and target field for $rename must differ: {path}"
                )));
            }
            Kind::Rename(to.clone())
        }
        "$currentDate" => Kind::CurrentDate {
            timestamp: match value {
                Bson::Boolean(_) => false,
                Bson::Document(d) if d.len() == 1 => match d.get("$type") {
                    Some(Bson::String(t)) if t == "date" => false,
                    Some(Bson::String(t)) if t == "timestamp" => true,
                    _ => {
                        return Err(bad(
                            "the '$type' string field of $currentDate must be 'date' or 'timestamp'",
                        ));
                    }
                },
                _ => {
                    return Err(bad(format!(
                        "{value} is not valid for $currentDate: use true or {{$type: 'date'|'timestamp'}}"
                    )));
                }
            },
        },
        "$push" => Kind::Push(parse_push(value)?),
        "$addToSet" => Kind::AddToSet(match value {
            Bson::Document(d) if d.keys().next().is_some_and(|k| k == "$each") => {
                if d.len() != 1 {
                    return Err(bad("$addToSet takes no modifier but $each"));
                }
                match d.get("$each") {
                    Some(Bson::Array(a)) => a.clone(),
                    _ => return Err(bad("the argument to $each in $addToSet must be an array")),
                }
            }
            v => vec![v.clone()],
        }),
        "$pull" => Kind::Pull(parse_pull(value)?),
        "$pullAll" => match value {
            Bson::Array(a) => Kind::PullAll(a.clone()),
            _ => return Err(bad("$pullAll requires an array argument")),
        },
        "$pop" => match exact_int(value) {
            Some(1) => Kind::Pop { first: false },
            Some(-1) => Kind::Pop { first: true },
            _ => return Err(bad("$pop expects 1 or -1")),
        },
        _ => return Err(failed_to_parse(format!("unknown modifier: {op}"))),
    })
}

fn parse_push(value: &Bson) -> Result<Push> {
    let Bson::Document(d) = value else {
        return Ok(Push {
            each: vec![value.clone()],
            position: None,
            slice: None,
            sort: None,
        });
    };
    if !d.contains_key("$each") {
        return Ok(Push {
            each: vec![value.clone()],
            position: None,
            slice: None,
            sort: None,
        });
    }
    let mut push = Push {
        each: Vec::new(),
        position: None,
        slice: None,
        sort: None,
    };
    for (k, v) in d {
        match k.as_str() {
            "$each" => match v {
                Bson::Array(a) => push.each.clone_from(a),
                _ => return Err(bad("the argument to $each in $push must be an array")),
            },
            "$position" => {
                push.position = Some(
                    exact_int(v)
                        .ok_or_else(|| bad("the value for $position must be an integer"))?,
                );
            }
            "$slice" => {
                push.slice = Some(
                    exact_int(v).ok_or_else(|| bad("the value for $slice must be an integer"))?,
                );
            }
            "$sort" => {
                push.sort = Some(match v {
                    Bson::Document(spec) => {
                        let mut fields = Vec::new();
                        for (f, dir) in spec {
                            fields
                                .push((f.split('.').map(str::to_owned).collect(), direction(dir)?));
                        }
                        if fields.is_empty() {
                            return Err(bad("the $sort pattern of $push is empty"));
                        }
                        PushSort::Fields(fields)
                    }
                    dir => PushSort::Whole(direction(dir)?),
                });
            }
            other => {
                return Err(bad(format!("unrecognized clause in $push: {other}")));
            }
        }
    }
    Ok(push)
}

fn direction(v: &Bson) -> Result<i32> {
    match exact_int(v) {
        Some(1) => Ok(1),
        Some(-1) => Ok(-1),
        _ => Err(bad("the $sort element value of $push must be 1 or -1")),
    }
}

fn parse_pull(value: &Bson) -> Result<Pull> {
    Ok(match value {
        Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => {
            let mut one = Document::new();
            one.insert(ELEMENT, d.clone());
            Pull::Condition(Box::new(Filter::parse(&one, NO_TIME, None)?))
        }
        Bson::Document(d) => Pull::Query(Box::new(Filter::parse(d, NO_TIME, None)?)),
        v => Pull::Equal(v.clone()),
    })
}

/// Two paths conflict when equal or one is a prefix of the other at a dot.
fn conflict(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| x.strip_prefix(y).is_some_and(|r| r.starts_with('.'));
    a == b || inside(a, b) || inside(b, a)
}

fn check_conflicts(ops: &[Op]) -> Result<()> {
    let mut paths: Vec<&str> = Vec::with_capacity(ops.len() * 2);
    for op in ops {
        paths.push(&op.path);
        if let Kind::Rename(to) = &op.kind {
            paths.push(to);
        }
    }
    for (i, a) in paths.iter().enumerate() {
        if let Some(b) = paths[..i].iter().find(|b| conflict(a, b)) {
            return Err(rejected(
                ErrorCode::ConflictingUpdateOperators,
                format!("updating the path '{a}' would create a conflict at '{b}'"),
            ));
        }
    }
    Ok(())
}

fn is_number(v: &Bson) -> bool {
    matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_))
}

impl Op {
    /// Applies the operator at the concrete path `parts`.
    fn apply(
        &self,
        doc: &mut Document,
        parts: &[&str],
        inserting: bool,
        now: DateTime,
    ) -> Result<()> {
        let parts = parts.to_vec();
        match &self.kind {
            Kind::Set => set_path(doc, &parts, self.value.clone()),
            Kind::SetOnInsert if inserting => set_path(doc, &parts, self.value.clone()),
            Kind::SetOnInsert => Ok(()),
            Kind::Unset => {
                unset_path(doc, &parts);
                Ok(())
            }
            Kind::Inc | Kind::Mul => {
                let add = matches!(self.kind, Kind::Inc);
                let current = get_path(doc, &parts).cloned();
                // A missing field counts as 0 (`$mul` then sets 0 of the operand's type).
                let base = current.unwrap_or(Bson::Int32(0));
                let result = arith(&base, &self.value, add).ok_or_else(|| {
                    rejected(
                        ErrorCode::TypeMismatch,
                        format!(
                            "cannot apply {} to a value of non-numeric type: '{}' is {}",
                            if add { "$inc" } else { "$mul" },
                            self.path,
                            type_name(&base)
                        ),
                    )
                })?;
                set_path(doc, &parts, result)
            }
            Kind::Min | Kind::Max => {
                let replace = get_path(doc, &parts).is_none_or(|c| {
                    let o = compare(&self.value, c);
                    if matches!(self.kind, Kind::Min) {
                        o.is_lt()
                    } else {
                        o.is_gt()
                    }
                });
                if replace {
                    set_path(doc, &parts, self.value.clone())?;
                }
                Ok(())
            }
            Kind::Rename(to) => {
                if parts.len() > 1 && through_array(doc, &parts) {
                    return Err(bad(format!(
                        "the source field for $rename may not be inside an array: {}",
                        self.path
                    )));
                }
                if let Some(v) = unset_path(doc, &parts) {
                    let to: Vec<&str> = to.split('.').collect();
                    set_path(doc, &to, v)?;
                }
                Ok(())
            }
            Kind::CurrentDate { timestamp } => {
                let v = if *timestamp {
                    #[expect(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
                    let secs = now.timestamp_millis().div_euclid(1000) as u32;
                    Bson::Timestamp(Timestamp {
                        time: secs,
                        increment: 1,
                    })
                } else {
                    Bson::DateTime(now)
                };
                set_path(doc, &parts, v)
            }
            Kind::Push(push) => {
                let mut arr = self.array_at(doc, &parts, "$push")?.unwrap_or_default();
                push.apply(&mut arr);
                set_path(doc, &parts, Bson::Array(arr))
            }
            Kind::AddToSet(values) => {
                let mut arr = self.array_at(doc, &parts, "$addToSet")?.unwrap_or_default();
                for v in values {
                    if !arr.iter().any(|x| same(x, v)) {
                        arr.push(v.clone());
                    }
                }
                set_path(doc, &parts, Bson::Array(arr))
            }
            Kind::Pull(pull) => {
                if let Some(mut arr) = self.array_at(doc, &parts, "$pull")? {
                    arr.retain(|e| !pull.matches(e));
                    set_path(doc, &parts, Bson::Array(arr))?;
                }
                Ok(())
            }
            Kind::PullAll(values) => {
                if let Some(mut arr) = self.array_at(doc, &parts, "$pullAll")? {
                    arr.retain(|e| !values.iter().any(|v| same(e, v)));
                    set_path(doc, &parts, Bson::Array(arr))?;
                }
                Ok(())
            }
            Kind::Pop { first } => {
                if let Some(mut arr) = self.array_at(doc, &parts, "$pop")? {
                    if *first {
                        if !arr.is_empty() {
                            arr.remove(0);
                        }
                    } else {
                        arr.pop();
                    }
                    set_path(doc, &parts, Bson::Array(arr))?;
                }
                Ok(())
            }
        }
    }

    /// The array at `parts` (`None` when missing); `BadValue` when something else is there.
    fn array_at(&self, doc: &Document, parts: &[&str], op: &str) -> Result<Option<Vec<Bson>>> {
        match get_path(doc, parts) {
            None => Ok(None),
            Some(Bson::Array(a)) => Ok(Some(a.clone())),
            Some(other) => Err(bad(format!(
                "cannot apply {op} to a non-array value: '{}' is {}",
                self.path,
                type_name(other)
            ))),
        }
    }
}

impl Push {
    fn apply(&self, arr: &mut Vec<Bson>) {
        let len = i64::try_from(arr.len()).unwrap_or(i64::MAX);
        let at = match self.position {
            None => len,
            Some(p) if p < 0 => (len + p).max(0),
            Some(p) => p.min(len),
        };
        let at = usize::try_from(at).unwrap_or(arr.len());
        arr.splice(at..at, self.each.iter().cloned());
        if let Some(sort) = &self.sort {
            arr.sort_by(|a, b| sort.compare(a, b));
        }
        if let Some(slice) = self.slice {
            let n = usize::try_from(slice.unsigned_abs()).unwrap_or(usize::MAX);
            if slice >= 0 {
                arr.truncate(n);
            } else if arr.len() > n {
                arr.drain(..arr.len() - n);
            }
        }
    }
}

impl PushSort {
    fn compare(&self, a: &Bson, b: &Bson) -> Ordering {
        match self {
            PushSort::Whole(dir) => directed(compare(a, b), *dir),
            PushSort::Fields(fields) => {
                for (path, dir) in fields {
                    let x = crate::mql::filter::lookup(Some(a), path).unwrap_or(&Bson::Null);
                    let y = crate::mql::filter::lookup(Some(b), path).unwrap_or(&Bson::Null);
                    let o = directed(compare(x, y), *dir);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            }
        }
    }
}

fn directed(o: Ordering, dir: i32) -> Ordering {
    if dir < 0 { o.reverse() } else { o }
}

impl Pull {
    fn matches(&self, e: &Bson) -> bool {
        match self {
            Pull::Equal(v) => same(e, v),
            Pull::Condition(f) => {
                let mut one = Document::new();
                one.insert(ELEMENT, e.clone());
                f.matches_row(&one, 0, None).unwrap_or(false)
            }
            Pull::Query(f) => match e {
                Bson::Document(d) => f.matches_row(d, 0, None).unwrap_or(false),
                _ => false,
            },
        }
    }
}

/// Equality of whole values as `$addToSet`, `$pull` and `$pullAll` see it: same BSON order
/// position (numbers of any type compare by value), documents field order included.
fn same(a: &Bson, b: &Bson) -> bool {
    compare(a, b) == Ordering::Equal
}

/// `$inc` (`add`) or `$mul` of two numbers, MongoDB's type promotion (int32 → int64 →
/// double on overflow or with a double). `None` when either is not a number.
pub(crate) fn arith(a: &Bson, b: &Bson, add: bool) -> Option<Bson> {
    let int = |v: &Bson| match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        _ => None,
    };
    let float = |v: &Bson| match v {
        Bson::Double(d) => Some(*d),
        #[expect(clippy::cast_precision_loss, reason = "MongoDB promotes to double")]
        other => int(other).map(|i| i as f64),
    };
    if let (Some(x), Some(y)) = (int(a), int(b)) {
        let r = if add {
            x.checked_add(y)
        } else {
            x.checked_mul(y)
        };
        let both32 = matches!(a, Bson::Int32(_)) && matches!(b, Bson::Int32(_));
        return match r {
            Some(r) if both32 => Some(i32::try_from(r).map_or(Bson::Int64(r), Bson::Int32)),
            Some(r) => Some(Bson::Int64(r)),
            None => {
                let (x, y) = (float(a)?, float(b)?);
                Some(Bson::Double(if add { x + y } else { x * y }))
            }
        };
    }
    let (x, y) = (float(a)?, float(b)?);
    Some(Bson::Double(if add { x + y } else { x * y }))
}

/// The array index a path part names, when it is all digits.
fn index_of(part: &str) -> Option<usize> {
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    part.parse().ok()
}

fn get_in<'a>(v: &'a Bson, parts: &[&str]) -> Option<&'a Bson> {
    let Some((first, rest)) = parts.split_first() else {
        return Some(v);
    };
    let next = match v {
        Bson::Document(d) => d.get(*first)?,
        Bson::Array(a) => a.get(index_of(first)?)?,
        _ => return None,
    };
    get_in(next, rest)
}

/// The value at a dotted path (array elements by index), if any.
pub(crate) fn get_path<'a>(doc: &'a Document, parts: &[&str]) -> Option<&'a Bson> {
    let (first, rest) = parts.split_first()?;
    get_in(doc.get(*first)?, rest)
}

/// Whether a path runs through an array before its last part.
fn through_array(doc: &Document, parts: &[&str]) -> bool {
    (1..parts.len()).any(|n| matches!(get_path(doc, &parts[..n]), Some(Bson::Array(_))))
}

fn not_viable(part: &str, v: &Bson) -> Error {
    rejected(
        ErrorCode::PathNotViable,
        format!(
            "cannot create field '{part}' in element {{{}}}",
            match v {
                Bson::Document(_) | Bson::Array(_) => type_name(v).to_owned(),
                other => format!("{other}"),
            }
        ),
    )
}

fn set_in(v: &mut Bson, parts: &[&str], value: Bson) -> Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        *v = value;
        return Ok(());
    };
    match v {
        Bson::Document(d) => set_path(d, parts, value),
        Bson::Array(a) => {
            let Some(i) = index_of(first) else {
                return Err(not_viable(first, &Bson::Array(Vec::new())));
            };
            // MongoDB pads an array set past its end with nulls (bounded: 1 << 20).
            if i >= a.len() {
                if i - a.len() > 1 << 20 {
                    return Err(bad(format!(
                        "cannot set array element {i}: too far past the end ({} elements)",
                        a.len()
                    )));
                }
                a.resize(i + 1, Bson::Null);
                if !rest.is_empty() {
                    a[i] = Bson::Document(Document::new());
                }
            }
            set_in(&mut a[i], rest, value)
        }
        other => Err(not_viable(first, other)),
    }
}

/// Sets the value at a dotted path, creating documents on the way.
///
/// # Errors
/// `PathNotViable` when the path runs through a value that is neither document nor array.
pub(crate) fn set_path(doc: &mut Document, parts: &[&str], value: Bson) -> Result<()> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(());
    };
    if rest.is_empty() {
        doc.insert(*first, value);
        return Ok(());
    }
    if !doc.contains_key(*first) {
        doc.insert(*first, Document::new());
    }
    match doc.get_mut(*first) {
        Some(v) => set_in(v, rest, value),
        None => Ok(()),
    }
}

/// Removes the value at a dotted path, returning it; an array element becomes null (as
/// MongoDB's `$unset` leaves it).
pub(crate) fn unset_path(doc: &mut Document, parts: &[&str]) -> Option<Bson> {
    let (first, rest) = parts.split_first()?;
    if rest.is_empty() {
        return doc.remove(*first);
    }
    unset_in(doc.get_mut(*first)?, rest)
}

fn unset_in(v: &mut Bson, parts: &[&str]) -> Option<Bson> {
    let (first, rest) = parts.split_first()?;
    match v {
        Bson::Document(d) => unset_path(d, parts),
        Bson::Array(a) => {
            let slot = a.get_mut(index_of(first)?)?;
            if rest.is_empty() {
                Some(std::mem::replace(slot, Bson::Null))
            } else {
                unset_in(slot, rest)
            }
        }
        _ => None,
    }
}
