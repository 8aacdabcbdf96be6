//! The per-measurement filter evaluated on decoded columns (SPEC R-14.4.1: "the
//! per-measurement filter is still applied after unpacking"), without building a document
//! per row. Same semantics as [`Filter::matches_row`] on the unpacked measurement.

use bson::Bson;
use tscoll_codec::{ValueRef, tag};

use super::unpack::SegmentView;
use crate::filter::{Cmp, Filter, Pred, cmp_holds, value_ref_matches};

/// The time and measurement-field predicates of a filter.
pub(crate) struct RowFilter<'f> {
    preds: Vec<RowPred<'f>>,
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
        RowFilter { preds }
    }

    /// Whether there is nothing to evaluate per row.
    pub(crate) fn is_empty(&self) -> bool {
        self.preds.is_empty()
    }

    /// Whether the predicates read column `field`.
    pub(crate) fn reads(&self, field: &str) -> bool {
        self.preds.iter().any(|p| p.field == field)
    }

    /// Binds the predicates to the columns of a segment (and materializes those columns).
    pub(crate) fn bind<'r>(
        &'r self,
        seg: &mut SegmentView<'_>,
        time_field: &str,
    ) -> BoundFilter<'r, 'f> {
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
        BoundFilter { preds }
    }
}

impl BoundFilter<'_, '_> {
    /// Whether row `row` of `seg` passes every predicate.
    ///
    /// # Errors
    /// A message when a stored value is corrupt.
    pub(crate) fn matches(&self, seg: &SegmentView<'_>, row: usize) -> Result<bool, String> {
        for (target, p) in &self.preds {
            let t = seg.times[row];
            let ok = match (&p.test, target) {
                (Test::Time(op, v), _) => v.is_some_and(|v| cmp_holds(t.cmp(&v), *op)),
                (Test::Cmp(op, operand), _) => {
                    value_ref_matches(value(seg, *target, row, t), p.rest, *op, operand)?
                }
                (Test::In(values), _) => {
                    let v = value(seg, *target, row, t);
                    let mut any = false;
                    for x in *values {
                        if value_ref_matches(v, p.rest, Cmp::Eq, x)? {
                            any = true;
                            break;
                        }
                    }
                    any
                }
            };
            if !ok {
                return Ok(false);
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
