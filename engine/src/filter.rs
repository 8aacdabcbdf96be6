//! Query filters: the MongoDB-style filter document parsed into predicates on the meta field,
//! the time field and measurement fields (SPEC §14.2–§14.4).

use std::cmp::Ordering;

use bson::{Bson, Document};
use tscoll_catalog::value::{canonical_rank, compare};

use crate::error::{Error, ErrorCode, Result};

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
    /// On the time field; `None` = a non-date operand, which matches nothing.
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

/// A parsed filter: the conjunction of its predicates.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Filter {
    pub(crate) preds: Vec<Pred>,
}

impl Filter {
    /// Parses a filter document for a collection with these time and meta fields.
    pub(crate) fn parse(
        filter: &Document,
        time_field: &str,
        meta_field: Option<&str>,
    ) -> Result<Filter> {
        let mut f = Filter::default();
        f.add(filter, time_field, meta_field)?;
        Ok(f)
    }

    fn add(&mut self, filter: &Document, time_field: &str, meta_field: Option<&str>) -> Result<()> {
        for (k, v) in filter {
            if k == "$and" {
                let Bson::Array(items) = v else {
                    return Err(bad("$and needs an array of filter documents"));
                };
                for item in items {
                    let Bson::Document(d) = item else {
                        return Err(bad("$and needs an array of filter documents"));
                    };
                    self.add(d, time_field, meta_field)?;
                }
                continue;
            }
            if k.starts_with('$') {
                return Err(bad(&format!("unsupported top-level operator {k}")));
            }
            let path: Vec<String> = k.split('.').map(str::to_owned).collect();
            let ops: Vec<(Option<Cmp>, &Bson)> = match v {
                Bson::Document(d) if d.keys().next().is_some_and(|k| k.starts_with('$')) => d
                    .iter()
                    .map(|(op, val)| match op.as_str() {
                        "$eq" => Ok((Some(Cmp::Eq), val)),
                        "$gt" => Ok((Some(Cmp::Gt), val)),
                        "$gte" => Ok((Some(Cmp::Gte), val)),
                        "$lt" => Ok((Some(Cmp::Lt), val)),
                        "$lte" => Ok((Some(Cmp::Lte), val)),
                        "$in" => Ok((None, val)),
                        other => Err(bad(&format!("unsupported query operator {other}"))),
                    })
                    .collect::<Result<_>>()?,
                other => vec![(Some(Cmp::Eq), other)],
            };
            for (op, val) in ops {
                let is_meta = meta_field.is_some_and(|m| path[0] == m);
                let is_time = path.len() == 1 && path[0] == time_field;
                let pred = match op {
                    None => {
                        let Bson::Array(values) = val else {
                            return Err(bad("$in needs an array"));
                        };
                        if is_meta {
                            Pred::MetaIn {
                                path: path[1..].to_vec(),
                                values: values.clone(),
                            }
                        } else {
                            Pred::FieldIn {
                                path: path.clone(),
                                values: values.clone(),
                            }
                        }
                    }
                    Some(op) if is_meta => Pred::Meta {
                        path: path[1..].to_vec(),
                        op,
                        value: val.clone(),
                    },
                    Some(op) if is_time => Pred::Time {
                        op,
                        value: match val {
                            Bson::DateTime(t) => Some(t.timestamp_millis()),
                            _ => None,
                        },
                    },
                    Some(op) => Pred::Field {
                        path: path.clone(),
                        op,
                        value: val.clone(),
                    },
                };
                self.preds.push(pred);
            }
        }
        Ok(())
    }

    /// Top-level field names the predicates read (for projected decoding).
    pub(crate) fn fields(&self) -> impl Iterator<Item = &str> {
        self.preds.iter().filter_map(|p| match p {
            Pred::Field { path, .. } | Pred::FieldIn { path, .. } => Some(path[0].as_str()),
            _ => None,
        })
    }

    /// Whether a bucket's meta value passes every meta predicate (SPEC §14.2).
    pub(crate) fn matches_meta(&self, meta: Option<&Bson>) -> bool {
        self.preds.iter().all(|p| match p {
            Pred::Meta { path, op, value } => matches_value(lookup(meta, path), *op, value),
            Pred::MetaIn { path, values } => {
                let v = lookup(meta, path);
                values.iter().any(|x| matches_value(v, Cmp::Eq, x))
            }
            _ => true,
        })
    }

    /// Whether an unpacked measurement passes every measurement and time predicate.
    pub(crate) fn matches_row(&self, doc: &Document, time: i64) -> bool {
        self.preds.iter().all(|p| match p {
            Pred::Time { op, value } => value.is_some_and(|v| cmp_holds(time.cmp(&v), *op)),
            Pred::Field { path, op, value } => matches_value(lookup_doc(doc, path), *op, value),
            Pred::FieldIn { path, values } => {
                let v = lookup_doc(doc, path);
                values.iter().any(|x| matches_value(v, Cmp::Eq, x))
            }
            _ => true,
        })
    }

    /// Time bounds on `control.min.<time>` for the index scan, given the span:
    /// `(lowest min time, highest min time)`, inclusive; `None` when nothing can match.
    pub(crate) fn min_time_bounds(&self, span_ms: i64) -> Option<(i64, i64)> {
        let (mut lo, mut hi) = (i64::MIN, i64::MAX);
        for p in &self.preds {
            if let Pred::Time { op, value } = p {
                let v = (*value)?;
                match op {
                    Cmp::Gt | Cmp::Gte => lo = lo.max(v.saturating_sub(span_ms.saturating_sub(1))),
                    Cmp::Lt => hi = hi.min(v.saturating_sub(1)),
                    Cmp::Lte => hi = hi.min(v),
                    Cmp::Eq => {
                        lo = lo.max(v.saturating_sub(span_ms.saturating_sub(1)));
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
        self.preds.iter().all(|p| match p {
            Pred::Time { op, value } => value.is_some_and(|v| match op {
                Cmp::Eq => min_time <= v && v <= max_time,
                Cmp::Gt => max_time > v,
                Cmp::Gte => max_time >= v,
                Cmp::Lt => min_time < v,
                Cmp::Lte => min_time <= v,
            }),
            Pred::Field { path, op, value } if path.len() == 1 => {
                field_may_match(min.get(&path[0]), max.get(&path[0]), *op, value)
            }
            _ => true,
        })
    }

    /// Whether every row of a bucket matches without evaluating rows: only time
    /// predicates, all satisfied by the whole bucket.
    pub(crate) fn whole_bucket_matches(&self, min_time: i64, max_time: i64) -> bool {
        self.preds.iter().all(|p| match p {
            Pred::Time { op, value } => value.is_some_and(|v| match op {
                Cmp::Eq => min_time == v && max_time == v,
                Cmp::Gt => min_time > v,
                Cmp::Gte => min_time >= v,
                Cmp::Lt => max_time < v,
                Cmp::Lte => max_time <= v,
            }),
            Pred::Meta { .. } | Pred::MetaIn { .. } => true,
            _ => false,
        })
    }

    /// The whole-meta equality operands, if the filter has one (for an index prefix scan).
    pub(crate) fn meta_equalities(&self) -> Option<Vec<&Bson>> {
        self.preds.iter().find_map(|p| match p {
            Pred::Meta {
                path,
                op: Cmp::Eq,
                value,
            } if path.is_empty() => Some(vec![value]),
            Pred::MetaIn { path, values } if path.is_empty() => Some(values.iter().collect()),
            _ => None,
        })
    }
}

/// keep a bucket unless control proves no measurement can match.
fn field_may_match(min: Option<&Bson>, max: Option<&Bson>, op: Cmp, v: &Bson) -> bool {
    let (Some(min), Some(max)) = (min, max) else {
        // The field is absent from every measurement: only `$eq: null` could match.
        return op == Cmp::Eq && matches!(v, Bson::Null);
    };
    if matches!(v, Bson::Document(_) | Bson::Array(_) | Bson::Null)
        || matches!(min, Bson::Document(_) | Bson::Array(_))
        || canonical_rank(min) != canonical_rank(max)
    {
        return true; // mixed types: not pushed down.
    }
    if canonical_rank(v) != canonical_rank(min) {
        return false; // type bracketing
    }
    match op {
        Cmp::Eq => compare(min, v) != Ordering::Greater && compare(v, max) != Ordering::Greater,
        Cmp::Gt => compare(max, v) == Ordering::Greater,
        Cmp::Gte => compare(max, v) != Ordering::Less,
        Cmp::Lt => compare(min, v) == Ordering::Less,
        Cmp::Lte => compare(min, v) != Ordering::Greater,
    }
}

fn cmp_holds(o: Ordering, op: Cmp) -> bool {
    match op {
        Cmp::Eq => o == Ordering::Equal,
        Cmp::Gt => o == Ordering::Greater,
        Cmp::Gte => o != Ordering::Less,
        Cmp::Lt => o == Ordering::Less,
        Cmp::Lte => o != Ordering::Greater,
    }
}

/// MongoDB comparison semantics for one value: type-bracketed comparison, `null` matching a
/// missing field, arrays matching when any element does.
fn matches_value(v: Option<&Bson>, op: Cmp, operand: &Bson) -> bool {
    match v {
        None => matches!(op, Cmp::Eq | Cmp::Gte | Cmp::Lte) && matches!(operand, Bson::Null),
        Some(Bson::Array(items)) if !matches!(operand, Bson::Array(_)) => {
            items.iter().any(|i| matches_value(Some(i), op, operand))
        }
        Some(x) => {
            if canonical_rank(x) != canonical_rank(operand) {
                return false;
            }
            if op == Cmp::Eq {
                return compare(x, operand) == Ordering::Equal;
            }
            cmp_holds(compare(x, operand), op)
        }
    }
}

fn lookup<'a>(v: Option<&'a Bson>, path: &[String]) -> Option<&'a Bson> {
    let mut cur = v?;
    for p in path {
        cur = match cur {
            Bson::Document(d) => d.get(p)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn lookup_doc<'a>(doc: &'a Document, path: &[String]) -> Option<&'a Bson> {
    lookup(doc.get(&path[0]), &path[1..])
}

fn bad(msg: &str) -> Error {
    Error::rejected(ErrorCode::BadValue, msg)
}
