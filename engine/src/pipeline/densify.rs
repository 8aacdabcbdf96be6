//! `$densify`: documents added where a sequence of values of `field` has gaps, every `step`
//! (in `unit`s for dates: `millisecond` to `week` of fixed length, `month`, `quarter` and
//! `year` on the calendar, `crate::mql::dates::add`), per partition (`partitionByFields`),
//! over `bounds`:
//!
//! - `"full"`: from the least to the greatest value of the whole input, for every partition;
//! - `"partition"`: from the least to the greatest value of each partition;
//! - `[lo, hi]`: from `lo` (included) to `hi` (excluded), on the steps from `lo`.
//!
//! As MongoDB: the values made are on the steps from the start (a document off the steps is
//! kept and the steps go on); a document whose field is null or missing passes unchanged;
//! a document made holds only the field and the partition fields; the input is sorted by the
//! partition fields then the field (by the field alone for `"full"`, whose partitions then
//! come out interleaved, and are completed up to the greatest value at the end), and for
//! explicit bounds with partitions the rest of each partition's range comes at the end. At
//! most 500 000 documents are made (MongoDB's `internalQueryMaxAllowedDensifyDocs`:
//! `Location5897900` past it).
//!
//! Memory: the sort of `$sort` (spilling past the pipeline's budget), then one partition's
//! next value at a time for `"partition"` bounds, one value per partition for the others (at
//! most 100 MiB of them: `Location6007200` past it, as MongoDB's
//! `internalDocumentSourceDensifyMaxMemoryBytes`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::compare;

use super::group::Key;
use super::stage::{Docs, sort_spec};
use crate::direct_write::update::set_path;
use crate::error::{Error, ErrorCode, Result};
use crate::mql::dates::{self, Unit};
use crate::mql::filter::lookup;

/// The most documents a `$densify` makes (MongoDB's `internalQueryMaxAllowedDensifyDocs`).
pub(super) const MAX_DOCS: u64 = 500_000;

/// The most bytes of partition values a `$densify` holds (MongoDB's
/// `internalDocumentSourceDensifyMaxMemoryBytes`).
const MAX_TABLE_BYTES: u64 = 100 * 1024 * 1024;

const STAGE: &str = "$densify";

fn err(code: u32, message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

/// A value of the densified field.
#[derive(Clone, Debug)]
enum Val {
    Num(Bson),
    /// ms since the epoch.
    Date(i64),
}

impl Val {
    fn cmp(&self, other: &Val) -> std::cmp::Ordering {
        match (self, other) {
            (Val::Num(a), Val::Num(b)) => compare(a, b),
            (Val::Date(a), Val::Date(b)) => a.cmp(b),
            (Val::Num(_), Val::Date(_)) => std::cmp::Ordering::Less,
            (Val::Date(_), Val::Num(_)) => std::cmp::Ordering::Greater,
        }
    }

    fn to_bson(&self) -> Bson {
        match self {
            Val::Num(b) => b.clone(),
            Val::Date(t) => Bson::DateTime(DateTime::from_millis(*t)),
        }
    }
}

/// The step.
#[derive(Clone, Debug)]
enum Step {
    Num(Bson),
    Date(i64, Unit),
}

#[derive(Clone, Debug)]
enum Bounds {
    Full,
    Partition,
    Explicit(Box<(Val, Val)>),
}

/// A parsed `$densify`.
pub(super) struct Densify {
    field: Vec<String>,
    partitions: Vec<Vec<String>>,
    step: Step,
    bounds: Bounds,
}

/// `a + b` as MongoDB's `$add` of two numbers: `int` + `int` stays `int` unless it
/// overflows, then `long`; `long` overflowing becomes `double`; a `double` makes a `double`.
#[expect(
    clippy::cast_precision_loss,
    reason = "numbers widen to double as in MongoDB"
)]
fn add_numbers(a: &Bson, b: &Bson) -> Option<Bson> {
    let float = |v: &Bson| match v {
        Bson::Int32(n) => Some(f64::from(*n)),
        Bson::Int64(n) => Some(*n as f64),
        Bson::Double(x) => Some(*x),
        _ => None,
    };
    let int = |v: &Bson| match v {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        _ => None,
    };
    Some(match (a, b) {
        (Bson::Int32(x), Bson::Int32(y)) => x
            .checked_add(*y)
            .map_or(Bson::Int64(i64::from(*x) + i64::from(*y)), Bson::Int32),
        _ => match (int(a), int(b)) {
            (Some(x), Some(y)) => x
                .checked_add(y)
                .map_or(Bson::Double(x as f64 + y as f64), Bson::Int64),
            _ => Bson::Double(float(a)? + float(b)?),
        },
    })
}

fn is_number(v: &Bson) -> bool {
    matches!(v, Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_))
}

fn field_path(name: &str, s: &str) -> Result<Vec<String>> {
    if s.starts_with('$') {
        return Err(err(
            16410,
            format!("{STAGE}: FieldPath field names may not start with '$' ({name}: '{s}')"),
        ));
    }
    let parts: Vec<String> = s.split('.').map(str::to_owned).collect();
    if s.is_empty() || parts.iter().any(String::is_empty) {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!("{STAGE}: '{s}' is not a valid field path ({name})"),
        ));
    }
    Ok(parts)
}

impl Densify {
    /// Parses `{field, partitionByFields?, range: {step, unit?, bounds}}`.
    ///
    /// # Errors
    /// MongoDB's codes: `FailedToParse` when not a document; `IDLFailedToParse` for `field`
    /// or `range` (or `step`, `bounds`) missing; `IDLUnknownField` for an unknown field;
    /// `TypeMismatch` for a field of the wrong type; `Location5733401` for a step not
    /// positive; `Location6586400` for a date step not whole; `FailedToParse` for an unknown
    /// unit; `Location5733403` / `5733402` / `5733409` / `5733406` / `5876900` /
    /// `5733405` / `5733410` / `5946800` for explicit bounds not two ascending numbers of
    /// the step's type (no unit) or two dates (with a unit); `Location5946802` /
    /// `5733404` for other bounds; `Location5733408` for `"partition"` bounds without
    /// `partitionByFields`.
    pub(super) fn parse(spec: &Bson) -> Result<Densify> {
        let Bson::Document(d) = spec else {
            return Err(Error::rejected(
                ErrorCode::FailedToParse,
                format!("The $densify stage specification must be an object, found {spec}"),
            ));
        };
        let missing = |f: &str| {
            Error::rejected(
                ErrorCode::IdlFailedToParse,
                format!("BSON field '{f}' is missing but a required field"),
            )
        };
        let mismatch = |f: &str, want: &str| {
            Error::rejected(
                ErrorCode::TypeMismatch,
                format!("BSON field '{f}' is the wrong type, expected {want}"),
            )
        };
        let mut field = None;
        let mut partitions = Vec::new();
        let mut range = None;
        for (k, v) in d {
            match k.as_str() {
                "field" => {
                    let Bson::String(s) = v else {
                        return Err(mismatch("$densify.field", "string"));
                    };
                    field = Some(field_path("field", s)?);
                }
                "partitionByFields" => {
                    let Bson::Array(a) = v else {
                        return Err(mismatch("$densify.partitionByFields", "array"));
                    };
                    for p in a {
                        let Bson::String(s) = p else {
                            return Err(mismatch("$densify.partitionByFields", "string"));
                        };
                        partitions.push(field_path("partitionByFields", s)?);
                    }
                }
                "range" => {
                    let Bson::Document(r) = v else {
                        return Err(mismatch("$densify.range", "object"));
                    };
                    range = Some(r);
                }
                other => {
                    return Err(Error::rejected(
                        ErrorCode::IdlUnknownField,
                        format!("BSON field '$densify.{other}' is an unknown field."),
                    ));
                }
            }
        }
        let field = field.ok_or_else(|| missing("$densify.field"))?;
        let range = range.ok_or_else(|| missing("$densify.range"))?;
        let mut step = None;
        let mut unit = None;
        let mut bounds = None;
        for (k, v) in range {
            match k.as_str() {
                "step" => step = Some(v),
                "unit" => {
                    let Bson::String(u) = v else {
                        return Err(mismatch("$densify.range.unit", "string"));
                    };
                    unit = Some(Unit::parse(u).ok_or_else(|| {
                        Error::rejected(
                            ErrorCode::FailedToParse,
                            format!("{STAGE}: unknown time unit value: {u}"),
                        )
                    })?);
                }
                "bounds" => bounds = Some(v),
                other => {
                    return Err(Error::rejected(
                        ErrorCode::IdlUnknownField,
                        format!("BSON field '$densify.range.{other}' is an unknown field."),
                    ));
                }
            }
        }
        let step = step.ok_or_else(|| missing("$densify.range.step"))?;
        let bounds = bounds.ok_or_else(|| missing("$densify.range.bounds"))?;
        let positive = match step {
            Bson::Int32(n) => *n > 0,
            Bson::Int64(n) => *n > 0,
            Bson::Double(x) => *x > 0.0,
            _ => false,
        };
        if !positive {
            return Err(err(
                5_733_401,
                "The step parameter in a range statement must be a strictly positive numeric \
                 value",
            ));
        }
        let step = match unit {
            Some(u) => {
                let n = match step {
                    Bson::Int32(n) => i64::from(*n),
                    Bson::Int64(n) => *n,
                    #[expect(clippy::cast_possible_truncation, reason = "checked whole")]
                    Bson::Double(x) if x.fract() == 0.0 && *x < 9.2e18 => *x as i64,
                    _ => {
                        return Err(err(
                            6_586_400,
                            "The step parameter in a range statement must be a whole number \
                             when densifying a date range",
                        ));
                    }
                };
                Step::Date(n, u)
            }
            None => Step::Num(step.clone()),
        };
        let bounds = match bounds {
            Bson::String(s) if s == "full" => Bounds::Full,
            Bson::String(s) if s == "partition" => Bounds::Partition,
            Bson::String(_) => {
                return Err(err(
                    5_946_802,
                    "Bounds string must either be 'full' or 'partition'",
                ));
            }
            Bson::Array(a) => {
                if a.len() != 2 {
                    return Err(err(
                        5_733_403,
                        "A bounding array in a range statement must have exactly two elements",
                    ));
                }
                if compare(&a[0], &a[1]) == std::cmp::Ordering::Greater {
                    return Err(err(
                        5_733_402,
                        "A bounding array must be an ascending array of either two dates or \
                         two numbers",
                    ));
                }
                match (&a[0], &a[1], &step) {
                    (lo, _, _) if is_number(lo) => {
                        if unit.is_some() {
                            return Err(err(
                                5_733_409,
                                "Numeric bounds may not have unit parameter",
                            ));
                        }
                        if !is_number(&a[1]) {
                            return Err(err(
                                5_733_406,
                                "A bounding array must contain either both dates or both \
                                 numeric types",
                            ));
                        }
                        let Step::Num(s) = &step else {
                            return Err(err(
                                5_733_409,
                                "Numeric bounds may not have unit parameter",
                            ));
                        };
                        if std::mem::discriminant(lo) != std::mem::discriminant(&a[1])
                            || std::mem::discriminant(lo) != std::mem::discriminant(s)
                        {
                            return Err(err(
                                5_876_900,
                                "Upper bound, lower bound, and step must all have the same type",
                            ));
                        }
                        Bounds::Explicit(Box::new((Val::Num(lo.clone()), Val::Num(a[1].clone()))))
                    }
                    (Bson::DateTime(lo), hi, _) => {
                        let Bson::DateTime(hi) = hi else {
                            return Err(err(
                                5_733_405,
                                "A bounding array must contain either both dates or both \
                                 numeric types",
                            ));
                        };
                        if unit.is_none() {
                            return Err(err(
                                5_733_410,
                                "A bounding array of dates must specify a unit",
                            ));
                        }
                        Bounds::Explicit(Box::new((
                            Val::Date(lo.timestamp_millis()),
                            Val::Date(hi.timestamp_millis()),
                        )))
                    }
                    _ => return Err(err(5_946_800, "Explicit bounds must be numeric or dates")),
                }
            }
            _ => {
                return Err(err(
                    5_733_404,
                    "The bounds in a range statement must be the string 'full', 'partition', \
                     or an ascending array of two numbers or two dates",
                ));
            }
        };
        if matches!(bounds, Bounds::Partition) && partitions.is_empty() {
            return Err(err(
                5_733_408,
                "One cannot specify the bounds as 'partition' without specifying a non-empty \
                 array of partitionByFields. You may have meant to specify 'full' bounds.",
            ));
        }
        Ok(Densify {
            field,
            partitions,
            step,
            bounds,
        })
    }

    fn increment(&self, v: &Val) -> Result<Val> {
        let overflow = || {
            Error::rejected(
                ErrorCode::BadValue,
                format!("{STAGE}: the next value after {} overflows", v.to_bson()),
            )
        };
        match (v, &self.step) {
            (Val::Num(n), Step::Num(s)) => add_numbers(n, s).map(Val::Num).ok_or_else(overflow),
            (Val::Date(t), Step::Date(n, u)) => dates::add(*t, *u, *n, dates::Tz::UTC)
                .map(Val::Date)
                .ok_or_else(overflow),
            _ => Err(overflow()),
        }
    }

    /// The field's value in `doc` (`None`: null or missing, the document passes).
    ///
    /// # Errors
    /// `Location5733201` for a value neither a number nor a date; `Location6053600` for a
    /// number with a date unit, or a date without one.
    fn value(&self, doc: &Document) -> Result<Option<Val>> {
        let v = self
            .field
            .split_first()
            .and_then(|(f, rest)| lookup(doc.get(f), rest));
        let dated = matches!(self.step, Step::Date(..));
        match v {
            None | Some(Bson::Null | Bson::Undefined) => Ok(None),
            Some(n @ (Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_))) => {
                if dated {
                    return Err(err(
                        6_053_600,
                        "Encountered numeric densify value in collection when step has a date \
                         unit.",
                    ));
                }
                Ok(Some(Val::Num(n.clone())))
            }
            Some(Bson::DateTime(t)) => {
                if !dated {
                    return Err(err(
                        6_053_600,
                        "Encountered date densify value in collection when step does not have \
                         a date unit.",
                    ));
                }
                Ok(Some(Val::Date(t.timestamp_millis())))
            }
            Some(other) => Err(err(
                5_733_201,
                format!("Densify field type must be numeric or a date, not {other}"),
            )),
        }
    }

    /// The partition fields of `doc`, as a document (those missing left out).
    fn partition_of(&self, doc: &Document) -> Result<Document> {
        let mut p = Document::new();
        for path in &self.partitions {
            if let Some(v) = path
                .split_first()
                .and_then(|(f, rest)| lookup(doc.get(f), rest))
            {
                let parts: Vec<&str> = path.iter().map(String::as_str).collect();
                set_path(&mut p, &parts, v.clone())?;
            }
        }
        Ok(p)
    }

    /// Densifies `docs`: sorts the whole input here (spilling past `budget` bytes).
    ///
    /// # Errors
    /// The input's and the sort's errors; the errors of the values (see [`Densify::value`])
    /// and `Location5897900` past 500 000 documents made come as the result is read.
    pub(super) fn run(self, docs: Docs, budget: u64) -> Result<Docs> {
        let mut keys: Vec<(Vec<String>, bool)> = Vec::new();
        if !matches!(self.bounds, Bounds::Full) {
            keys.extend(self.partitions.iter().map(|p| (p.clone(), false)));
        }
        keys.push((self.field.clone(), false));
        let input: Docs = Box::new(sort_spec(keys).sort(docs, 0, None, budget)?);
        Ok(Box::new(Filler {
            spec: Arc::new(self),
            input,
            making: None,
            pending: None,
            table: BTreeMap::new(),
            current: None,
            global_min: None,
            global_max: None,
            seen: false,
            tails: None,
            made: 0,
            table_bytes: 0,
            done: false,
        }))
    }
}

/// Documents being made: from `next` up to `end` (excluded, or included), with the
/// partition fields `partition`, for the partition `key`.
struct Gen {
    key: Key,
    partition: Document,
    next: Val,
    end: Val,
    inclusive: bool,
}

/// The output of a `$densify`, made as it is read.
struct Filler {
    spec: Arc<Densify>,
    input: Docs,
    making: Option<Gen>,
    /// The input document to return once `making` is done.
    pending: Option<(Val, Document)>,
    /// Per partition: its fields and the next value on its steps.
    table: BTreeMap<Key, (Document, Val)>,
    /// The partition `table` holds for `"partition"` bounds.
    current: Option<Key>,
    global_min: Option<Val>,
    global_max: Option<Val>,
    /// Whether a document with a value was read.
    seen: bool,
    /// What is made after the input ends.
    tails: Option<std::vec::IntoIter<Gen>>,
    made: u64,
    /// Bytes of the partition values `table` holds.
    table_bytes: u64,
    done: bool,
}

impl Filler {
    /// Counts a partition entered in `table`.
    ///
    /// # Errors
    /// `Location6007200` past 100 MiB, as MongoDB.
    fn count_partition(&mut self, partition: &Document) -> Result<()> {
        self.table_bytes += tscoll_catalog::value::document_size(partition) * 2 + 64;
        if self.table_bytes > MAX_TABLE_BYTES {
            return Err(err(
                6_007_200,
                format!("$densify exceeded memory limit of {MAX_TABLE_BYTES}"),
            ));
        }
        Ok(())
    }

    /// The next document made by `making`, if any.
    fn generate(&mut self) -> Result<Option<Document>> {
        let Some(g) = &mut self.making else {
            return Ok(None);
        };
        let more = match g.next.cmp(&g.end) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Equal => g.inclusive,
            std::cmp::Ordering::Greater => false,
        };
        if !more {
            let g = self.making.take();
            if let Some(g) = g
                && let Some(entry) = self.table.get_mut(&g.key)
            {
                entry.1 = g.next;
            }
            return Ok(None);
        }
        self.made += 1;
        if self.made > MAX_DOCS {
            return Err(err(
                5_897_900,
                format!(
                    "Generated {} documents in $densify, which is over the limit of {MAX_DOCS}. \
                     Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more \
                     generated documents",
                    self.made
                ),
            ));
        }
        let mut d = g.partition.clone();
        let parts: Vec<&str> = self.spec.field.iter().map(String::as_str).collect();
        set_path(&mut d, &parts, g.next.to_bson())?;
        let after = self.spec.increment(&g.next)?;
        g.next = after;
        Ok(Some(d))
    }

    /// After the documents made before it: the pending input document, its partition's next
    /// value moved past it when it is on the steps.
    fn release(&mut self, key: &Key, v: &Val) -> Result<()> {
        if let Some(entry) = self.table.get_mut(key)
            && v.cmp(&entry.1) == std::cmp::Ordering::Equal
        {
            entry.1 = self.spec.increment(v)?;
        }
        Ok(())
    }

    /// Handles one input document with a value: returns it, or starts making the documents
    /// before it (then returned after them).
    fn take(&mut self, v: Val, doc: Document) -> Result<Option<Document>> {
        let spec = Arc::clone(&self.spec);
        let partition = spec.partition_of(&doc)?;
        let key = Key(Bson::Document(partition.clone()));
        self.seen = true;
        let limit = match &spec.bounds {
            Bounds::Full => {
                let min = self.global_min.get_or_insert_with(|| v.clone()).clone();
                self.global_max = Some(v.clone());
                self.table
                    .entry(Key(key.0.clone()))
                    .or_insert((partition.clone(), min));
                None
            }
            Bounds::Partition => {
                if self.current.as_ref() != Some(&key) {
                    self.table.clear();
                    self.current = Some(Key(key.0.clone()));
                    let next = spec.increment(&v)?;
                    self.table.insert(Key(key.0.clone()), (partition, next));
                    return Ok(Some(doc));
                }
                None
            }
            Bounds::Explicit(b) => {
                let (lo, hi) = &**b;
                if !self.table.contains_key(&key) {
                    self.count_partition(&partition)?;
                    self.table
                        .insert(Key(key.0.clone()), (partition.clone(), lo.clone()));
                }
                Some(hi.clone())
            }
        };
        let Some((_, next)) = self.table.get(&key) else {
            return Ok(Some(doc));
        };
        let next = next.clone();
        if v.cmp(&next) != std::cmp::Ordering::Greater {
            self.release(&key, &v)?;
            return Ok(Some(doc));
        }
        let end = match limit {
            Some(hi) if hi.cmp(&v) == std::cmp::Ordering::Less => hi,
            _ => v.clone(),
        };
        if next.cmp(&end) != std::cmp::Ordering::Less {
            return Ok(Some(doc));
        }
        self.making = Some(Gen {
            key,
            partition,
            next,
            end,
            inclusive: false,
        });
        self.pending = Some((v, doc));
        Ok(None)
    }

    /// What is made once the input has ended.
    fn finish(&mut self) -> Vec<Gen> {
        let table = std::mem::take(&mut self.table);
        match &self.spec.bounds {
            Bounds::Partition => Vec::new(),
            Bounds::Full => {
                let Some(max) = &self.global_max else {
                    return Vec::new();
                };
                if self.spec.partitions.is_empty() {
                    return Vec::new();
                }
                table
                    .into_iter()
                    .map(|(key, (partition, next))| Gen {
                        key,
                        partition,
                        next,
                        end: max.clone(),
                        inclusive: true,
                    })
                    .collect()
            }
            Bounds::Explicit(b) => {
                let (lo, hi) = &**b;
                if !self.seen {
                    return vec![Gen {
                        key: Key(Bson::Document(Document::new())),
                        partition: Document::new(),
                        next: lo.clone(),
                        end: hi.clone(),
                        inclusive: false,
                    }];
                }
                table
                    .into_iter()
                    .map(|(key, (partition, next))| Gen {
                        key,
                        partition,
                        next,
                        end: hi.clone(),
                        inclusive: false,
                    })
                    .collect()
            }
        }
    }

    fn step(&mut self) -> Result<Option<Document>> {
        loop {
            if let Some(d) = self.generate()? {
                return Ok(Some(d));
            }
            if let Some((v, doc)) = self.pending.take() {
                let key = Key(Bson::Document(self.spec.partition_of(&doc)?));
                self.release(&key, &v)?;
                return Ok(Some(doc));
            }
            if let Some(tails) = &mut self.tails {
                match tails.next() {
                    Some(g) => {
                        self.making = Some(g);
                        continue;
                    }
                    None => return Ok(None),
                }
            }
            match self.input.next().transpose()? {
                None => {
                    let tails = self.finish();
                    self.tails = Some(tails.into_iter());
                }
                Some(doc) => match self.spec.value(&doc)? {
                    None => return Ok(Some(doc)),
                    Some(v) => {
                        if let Some(d) = self.take(v, doc)? {
                            return Ok(Some(d));
                        }
                    }
                },
            }
        }
    }
}

impl Iterator for Filler {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        if self.done {
            return None;
        }
        let out = self.step().transpose();
        self.done = !matches!(out, Some(Ok(_)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_add_as_mongodb_adds_numbers() {
        assert_eq!(
            add_numbers(&Bson::Int32(1), &Bson::Int32(2)),
            Some(Bson::Int32(3))
        );
        assert_eq!(
            add_numbers(&Bson::Int32(i32::MAX), &Bson::Int32(1)),
            Some(Bson::Int64(i64::from(i32::MAX) + 1))
        );
        assert_eq!(
            add_numbers(&Bson::Int64(i64::MAX), &Bson::Int32(1)),
            Some(Bson::Double(9.223_372_036_854_776e18))
        );
        assert_eq!(
            add_numbers(&Bson::Int32(1), &Bson::Double(0.5)),
            Some(Bson::Double(1.5))
        );
        assert_eq!(
            add_numbers(&Bson::String("x".into()), &Bson::Int32(1)),
            None
        );
    }

    #[test]
    fn calendar_steps_go_on_from_the_last_value() {
        let d = Densify::parse(&Bson::Document(bson::doc! {
            "field": "t", "range": { "step": 1, "unit": "month", "bounds": "full" },
        }))
        .expect("parse");
        // 2024-01-31 + 1 month = 2024-02-29, + 1 month = 2024-03-29.
        let jan31 = 1_706_659_200_000;
        let feb29 = d.increment(&Val::Date(jan31)).expect("add");
        assert!(matches!(feb29, Val::Date(1_709_164_800_000)), "{feb29:?}");
        let mar29 = d.increment(&feb29).expect("add");
        assert!(matches!(mar29, Val::Date(1_711_670_400_000)), "{mar29:?}");
    }
}
