//! Aggregates answered from rollups (`docs/semantics.md`, "Rollups"): when the query's
//! windows are multiples of a rollup resolution, every accumulator can be read off a
//! rollup row and the filter reads only the meta and time fields, the stored buckets are
//! aggregated from their rollup rows — no control record, no column decoded. A bucket is
//! read as usual instead when it has rows in memory (rollups hold stored rows only), when
//! a filter bound on time cuts one of its windows, or when a field an accumulator reads
//! holds a value other than a number in one of its windows.

use bson::{Bson, DateTime};
use tscoll_catalog::{BucketId, FieldRollup, WindowRollup};

use super::{Acc, Accumulator, AggregateSpec, GroupRange, Groups, keep, offer_extreme};
use crate::error::Result;
use crate::filter::Pred;
use crate::query::QueryStats;
use crate::query::bulk::dense;
use crate::query::memory::Reader;
use crate::query::plan::{Candidates, Plan};
use std::cmp::Ordering;

/// What one output reads from a rollup row.
#[derive(Clone, Copy)]
pub(super) enum Read<'a> {
    /// The window's count.
    Count,
    /// The times of the first and last measurements.
    Time,
    /// A measurement field.
    Field(&'a str),
}

/// The largest rollup resolution that divides the query's window, when the query can be
/// answered from it: the filter has only meta and time predicates, and every accumulator is
/// a count, or reads one top-level field (not the meta field) as a count of numbers, a sum, a
/// mean, a minimum, a maximum, a first or a last value (of the time field: a minimum, a
/// maximum, a first or a last).
/// Returns it with what each output reads.
pub(super) fn resolution<'s>(plan: &Plan, spec: &'s AggregateSpec) -> Option<(i64, Vec<Read<'s>>)> {
    let res = plan
        .spec
        .rollups
        .iter()
        .rev()
        .find(|&&r| spec.window_ms % r == 0)
        .copied()?;
    let time_and_meta_only = plan.filter.preds.iter().all(|p| {
        matches!(
            p,
            Pred::Time { .. } | Pred::Meta { .. } | Pred::MetaIn { .. }
        )
    }) && plan.filter.row_clauses().next().is_none();
    if !time_and_meta_only {
        return None;
    }
    Some((res, reads(plan, spec)?))
}

/// What each output reads, `None` when one cannot be read off a rollup row.
fn reads<'s>(plan: &Plan, spec: &'s AggregateSpec) -> Option<Vec<Read<'s>>> {
    let time_field = plan.spec.time_field.as_str();
    let meta_field = plan.spec.meta_field.as_deref();
    spec.outputs
        .iter()
        .map(|(_, acc)| {
            let Some(field) = acc.field() else {
                return Some(Read::Count);
            };
            if field.contains('.') || Some(field) == meta_field {
                return None;
            }
            let time = field == time_field;
            match acc {
                Accumulator::Min(_)
                | Accumulator::Max(_)
                | Accumulator::First(_)
                | Accumulator::Last(_) => Some(if time { Read::Time } else { Read::Field(field) }),
                Accumulator::CountNumbers(_)
                | Accumulator::Sum(_)
                | Accumulator::SumTyped(_)
                | Accumulator::Avg(_)
                    if !time =>
                {
                    Some(Read::Field(field))
                }
                _ => None,
            }
        })
        .collect()
}

impl Reader<'_> {
    /// Aggregates the candidates that rollup rows at resolution `res` answer: their groups,
    /// and which candidates (by position) they answered.
    pub(super) fn rollup_groups<'s>(
        &self,
        plan: &Plan,
        spec: &'s AggregateSpec,
        cands: &Candidates,
        (res, reads): (i64, Vec<Read<'s>>),
        range: Option<GroupRange>,
        stats: &mut QueryStats,
    ) -> Result<(Groups<'s>, Vec<bool>)> {
        let mut groups = Groups::new(spec, range, cands.buckets.len());
        let mut done = vec![false; cands.buckets.len()];
        let mut order: Vec<usize> = (0..cands.buckets.len())
            .filter(|&p| self.memory().get(&cands.buckets[p].id).is_none())
            .collect();
        order.sort_unstable_by_key(|&p| cands.buckets[p].id);
        let (Some(&first), Some(&last)) = (order.first(), order.last()) else {
            return Ok((groups, done));
        };
        let mut bucket = BucketRows {
            plan,
            reads: &reads,
            res,
            windows: Vec::new(),
            fits: true,
        };
        let mut finish = |bucket: &mut BucketRows<'_>, p: usize, stats: &mut QueryStats| {
            if bucket.fits && !bucket.windows.is_empty() {
                let series = if spec.by_series {
                    cands.buckets[p].series
                } else {
                    0
                };
                for w in &bucket.windows {
                    add_window(&mut groups, series, w, &reads);
                }
                done[p] = true;
                stats.buckets_from_rollup += 1;
            }
            bucket.windows.clear();
            bucket.fits = true;
        };
        if dense(order.len(), cands.in_range) {
            // One scan over the candidates' id range, joined with them in id order.
            let mut next = 0;
            let mut current: Option<(BucketId, usize)> = None;
            let rows =
                self.store
                    .rollups_between(res, &cands.buckets[first].id, &cands.buckets[last].id);
            for item in rows {
                let item = item?;
                if current.is_some_and(|(id, _)| id != item.id)
                    && let Some((_, p)) = current.take()
                {
                    finish(&mut bucket, p, stats);
                }
                if current.is_none() {
                    while next < order.len() && cands.buckets[order[next]].id < item.id {
                        next += 1;
                    }
                    match order.get(next) {
                        Some(&p) if cands.buckets[p].id == item.id => {
                            current = Some((item.id, p));
                            next += 1;
                        }
                        _ => continue, // not a candidate
                    }
                }
                bucket.add(&item.id, item.start, &item.value, self)?;
            }
            if let Some((_, p)) = current {
                finish(&mut bucket, p, stats);
            }
        } else {
            for &p in &order {
                let id = cands.buckets[p].id;
                for item in self.store.rollups_of(res, &id) {
                    let item = item?;
                    bucket.add(&id, item.start, &item.value, self)?;
                }
                finish(&mut bucket, p, stats);
            }
        }
        Ok((groups, done))
    }
}

/// The rollup rows of the bucket being read, and whether they answer it.
struct BucketRows<'a> {
    plan: &'a Plan,
    reads: &'a [Read<'a>],
    res: i64,
    windows: Vec<WindowRollup>,
    fits: bool,
}

impl BucketRows<'_> {
    /// Takes one stored row: kept when the filter takes its whole window, left out when it
    /// takes none of it; otherwise (or when a field read holds other values than numbers)
    /// the bucket is read as usual.
    fn add(&mut self, id: &BucketId, start: i64, value: &[u8], reader: &Reader<'_>) -> Result<()> {
        if !self.fits {
            return Ok(());
        }
        let w = WindowRollup::decode(start, value)
            .map_err(|reason| reader.store.corrupt_rollup(self.res, id, start, reason))?;
        let filter = &self.plan.filter;
        let empty = bson::Document::new();
        if !filter.control_may_match(w.first_time, w.last_time, &(&empty, &empty)) {
            return Ok(());
        }
        if !filter.whole_bucket_matches(w.first_time, w.last_time) {
            self.fits = false;
            return Ok(());
        }
        let numbers = self.reads.iter().all(|r| match r {
            Read::Field(f) => !matches!(w.field(f), Some(FieldRollup::Other)),
            _ => true,
        });
        if numbers {
            self.windows.push(w);
        } else {
            self.fits = false;
        }
        Ok(())
    }
}

/// Adds one window of one bucket to its group.
fn add_window(groups: &mut Groups<'_>, series: usize, w: &WindowRollup, reads: &[Read<'_>]) {
    let g = groups.get(series, w.start);
    for (acc, read) in groups.accs(g).iter_mut().zip(reads) {
        let field = match read {
            Read::Field(f) => match w.field(f) {
                Some(FieldRollup::Numbers(n)) => Some(n),
                _ => None,
            },
            _ => None,
        };
        let time = |t: i64| Bson::DateTime(DateTime::from_millis(t));
        match (acc, read) {
            (Acc::Count(n), _) => *n += w.count,
            (Acc::Min(slot), Read::Time) => offer_extreme(slot, time(w.first_time), Ordering::Less),
            (Acc::Max(slot), Read::Time) => {
                offer_extreme(slot, time(w.last_time), Ordering::Greater);
            }
            (Acc::Min(slot), _) => {
                if let Some(f) = field {
                    offer_extreme(slot, f.min.to_bson(), Ordering::Less);
                }
            }
            (Acc::Max(slot), _) => {
                if let Some(f) = field {
                    offer_extreme(slot, f.max.to_bson(), Ordering::Greater);
                }
            }
            (Acc::First(slot), read) => {
                if slot.as_ref().is_none_or(|b| w.first_time < b.0) {
                    let v = match read {
                        Read::Time => time(w.first_time),
                        _ => field
                            .and_then(|f| f.first)
                            .map_or(Bson::Null, |n| n.to_bson()),
                    };
                    keep(slot, (w.first_time, v));
                }
            }
            (Acc::Last(slot), read) => {
                if slot.as_ref().is_none_or(|b| w.last_time >= b.0) {
                    let v = match read {
                        Read::Time => time(w.last_time),
                        _ => field
                            .and_then(|f| f.last)
                            .map_or(Bson::Null, |n| n.to_bson()),
                    };
                    keep(slot, (w.last_time, v));
                }
            }
            (acc, _) => {
                if let Some(f) = field {
                    acc.add_sums(&f.sums);
                }
            }
        }
    }
}
