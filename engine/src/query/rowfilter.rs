//! The per-measurement filter evaluated on decoded columns (SPEC R-14.4.1: "the
//! per-measurement filter is still applied after unpacking"), without building a document
//! per row. Same semantics as [`Filter::matches_row`] on the unpacked measurement.

use std::borrow::Cow;

use bson::Bson;
use tscoll_catalog::value::to_bson;
use tscoll_codec::{ValueRef, tag};

use super::unpack::SegmentView;
use crate::mql::expr::EvalError;
use crate::mql::filter::{
    Cmp, Filter, Got, Node, Pred, Target as Reads, Values, cmp_holds, value_ref_in,
    value_ref_matches,
};

/// The time and measurement-field predicates of a filter, and its clauses that read more
/// than the meta field.
pub(crate) struct RowFilter<'f> {
    preds: Vec<RowPred<'f>>,
    /// Clauses evaluated per row on the values they read (converted to BSON).
    clauses: Vec<&'f Node>,
    /// The top-level fields the clauses read (the time field included when they read it).
    clause_fields: Vec<&'f str>,
    /// Whether a clause reads the meta field (then [`RowFilter::bind`] needs the series'
    /// meta value).
    needs_meta: bool,
}

struct RowPred<'f> {
    /// Top-level field (the time field included).
    field: &'f str,
    /// The rest of a dotted path.
    rest: &'f [String],
    test: Test<'f>,
}

enum Test<'f> {
    /// A time predicate; `None` = a non-date operand, which matches nothing.
    Time(Cmp, Option<i64>),
    Cmp(Cmp, &'f Bson),
    In(&'f [Bson]),
}

/// Where a bound predicate reads its value.
#[derive(Clone, Copy)]
enum Target {
    /// The row's time.
    Time,
    /// A decoded column of the segment.
    Column(usize),
    /// A column the segment does not have: every row is missing it.
    Absent,
}

/// A [`RowFilter`] bound to the columns of one segment.
pub(crate) struct BoundFilter<'r, 'f> {
    preds: Vec<(Target, &'r RowPred<'f>)>,
    clauses: &'r [&'f Node],
    /// Where each of [`RowFilter::clause_fields`] is.
    clause_targets: Vec<(&'f str, Target)>,
    meta: Option<&'r Bson>,
}

impl<'f> RowFilter<'f> {
    /// The row predicates of `filter` (meta predicates are judged per bucket, §14.2).
    pub(crate) fn new(filter: &'f Filter, time_field: &'f str) -> RowFilter<'f> {
        let preds = filter
            .preds
            .iter()
            .filter_map(|p| match p {
                Pred::Time { op, value } => Some(RowPred {
                    field: time_field,
                    rest: &[],
                    test: Test::Time(*op, *value),
                }),
                Pred::Field { path, op, value } => Some(RowPred {
                    field: &path[0],
                    rest: &path[1..],
                    test: Test::Cmp(*op, value),
                }),
                Pred::FieldIn { path, values } => Some(RowPred {
                    field: &path[0],
                    rest: &path[1..],
                    test: Test::In(values),
                }),
                Pred::Meta { .. } | Pred::MetaIn { .. } => None,
            })
            .collect();
        let clauses: Vec<&Node> = filter.row_clauses().collect();
        let mut leaves = Vec::new();
        for c in &clauses {
            leaves_of(c, &mut leaves);
        }
        let mut fields: Vec<&'f str> = Vec::new();
        let mut needs_meta = false;
        for (target, path) in leaves {
            let name = match target {
                Reads::Meta => {
                    needs_meta = true;
                    continue;
                }
                Reads::Time => time_field,
                Reads::Field => path[0].as_str(),
            };
            if !fields.contains(&name) {
                fields.push(name);
            }
        }
        RowFilter {
            preds,
            clauses,
            clause_fields: fields,
            needs_meta,
        }
    }

    /// Whether there is nothing to evaluate per row.
    pub(crate) fn is_empty(&self) -> bool {
        self.preds.is_empty() && self.clauses.is_empty()
    }

    /// Whether the predicates read column `field`.
    pub(crate) fn reads(&self, field: &str) -> bool {
        self.preds.iter().any(|p| p.field == field) || self.clause_fields.contains(&field)
    }

    /// Whether [`RowFilter::bind`] needs the series' meta value (a clause reads it beside
    /// the measurement's fields).
    pub(crate) fn needs_meta(&self) -> bool {
        self.needs_meta
    }

    /// Binds the predicates to the columns of a segment (and materializes those columns);
    /// `meta` is the series' meta value when [`RowFilter::needs_meta`] (else ignored).
    pub(crate) fn bind<'r>(
        &'r self,
        seg: &mut SegmentView<'_>,
        time_field: &str,
        meta: Option<&'r Bson>,
    ) -> BoundFilter<'r, 'f> {
        let clause_targets = self
            .clause_fields
            .iter()
            .map(|&f| {
                let target = if f == time_field {
                    Target::Time
                } else {
                    match seg.position(f) {
                        Some(c) => {
                            seg.materialize(c);
                            Target::Column(c)
                        }
                        None => Target::Absent,
                    }
                };
                (f, target)
            })
            .collect();
        let preds = self
            .preds
            .iter()
            .map(|p| {
                let target = if p.field == time_field {
                    Target::Time
                } else {
                    match seg.position(p.field) {
                        Some(c) => {
                            seg.materialize(c);
                            Target::Column(c)
                        }
                        None => Target::Absent,
                    }
                };
                (target, p)
            })
            .collect();
        BoundFilter {
            preds,
            clauses: &self.clauses,
            clause_targets,
            meta,
        }
    }
}

/// The target and path of every leaf of `n`.
fn leaves_of<'f>(n: &'f Node, out: &mut Vec<(Reads, &'f [String])>) {
    match n {
        Node::And(c) | Node::Or(c) | Node::Nor(c) => c.iter().for_each(|n| leaves_of(n, out)),
        Node::Leaf { target, path, .. } => out.push((*target, path)),
        Node::Expr(e) => e.fields(out),
    }
}

/// One row of a bound segment, as the clauses read it.
struct RowValues<'a, 'r, 'f> {
    bound: &'a BoundFilter<'r, 'f>,
    seg: &'a SegmentView<'a>,
    row: usize,
}

impl Values for RowValues<'_, '_, '_> {
    fn root(&self, target: Reads, path: &[String]) -> Got<'_> {
        Ok(match target {
            Reads::Meta => self.bound.meta.map(Cow::Borrowed),
            Reads::Time => Some(Cow::Owned(Bson::DateTime(bson::DateTime::from_millis(
                self.seg.times[self.row],
            )))),
            Reads::Field => {
                let Some(&(_, t)) = self
                    .bound
                    .clause_targets
                    .iter()
                    .find(|(f, _)| *f == path[0])
                else {
                    return Ok(None);
                };
                let v = value(self.seg, t, self.row, self.seg.times[self.row]);
                to_bson(v)?.map(Cow::Owned)
            }
        })
    }
}

impl BoundFilter<'_, '_> {
    /// Whether row `row` of `seg` passes every predicate.
    ///
    /// # Errors
    /// A stored value that is corrupt, or an expression (`$expr`) that fails on the row.
    pub(crate) fn matches(&self, seg: &SegmentView<'_>, row: usize) -> Result<bool, EvalError> {
        for (target, p) in &self.preds {
            let t = seg.times[row];
            let ok = match (&p.test, target) {
                (Test::Time(op, v), _) => v.is_some_and(|v| cmp_holds(t.cmp(&v), *op)),
                (Test::Cmp(op, operand), _) => {
                    value_ref_matches(value(seg, *target, row, t), p.rest, *op, operand)?
                }
                (Test::In(values), _) => value_ref_in(value(seg, *target, row, t), p.rest, values)?,
            };
            if !ok {
                return Ok(false);
            }
        }
        if !self.clauses.is_empty() {
            let values = RowValues {
                bound: self,
                seg,
                row,
            };
            for c in self.clauses {
                if !c.eval(&values)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}

fn value<'a>(seg: &SegmentView<'a>, target: Target, row: usize, t: i64) -> ValueRef<'a> {
    match target {
        Target::Time => ValueRef::Int(tag::DATETIME, t),
        Target::Column(c) => seg.value(c, row),
        Target::Absent => ValueRef::Missing,
    }
}
