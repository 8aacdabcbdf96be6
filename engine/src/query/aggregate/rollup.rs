//! Aggregates answered from rollups (`docs/semantics.md`, "Rollups"): when the query's
//! windows are multiples of a rollup resolution, every accumulator can be read off a
//! bucket rollup and the filter reads only the meta and time fields, the stored buckets are
//! aggregated from their rollups — no control record, no column decoded. A bucket is
//! read as usual instead when it has rows in memory (rollups hold stored rows only), when
//! a filter bound on time cuts one of its windows, or when a field an accumulator reads
//! holds a value other than a number in one of its windows.

use std::cmp::Ordering;
use std::collections::HashMap;

use bson::{Bson, DateTime};
use tscoll_catalog::{BucketId, FieldRollup, RollupLayout, RollupNames, WindowHead, decode_names};

use super::{
    Acc, Accumulator, AggregateSpec, GroupRange, Groups, MAX_PARTS, PART_MIN, keep, offer_extreme,
};
use crate::error::Result;
use crate::mql::filter::{NoBounds, Pred};
use crate::query::QueryStats;
use crate::query::bulk::dense;
use crate::query::memory::Reader;
use crate::query::parallel::{self, run_parts};
use crate::query::plan::{Candidates, Plan};

/// What one output reads from a rollup window.
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

/// What each output reads, `None` when one cannot be read off a rollup window.
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

/// The rollup of each bucket a part reads, read in place: what it needs of the query, and
/// buffers reused from bucket to bucket.
struct RollupPart<'a> {
    plan: &'a Plan,
    reads: &'a [Read<'a>],
    res: i64,
    /// The distinct fields the outputs read; `slot_of[i]` is output `i`'s.
    fields: Vec<&'a str>,
    slot_of: Vec<Option<usize>>,
    /// Per names hash, the position in the list of each field read (`None`: not in it).
    positions: HashMap<u32, Vec<Option<usize>>>,
    /// The bucket being read: its layout, and per field read its value in each window the
    /// filter takes (`taken`).
    layout: RollupLayout,
    taken: Vec<bool>,
    values: Vec<Vec<Option<FieldRollup>>>,
}

impl<'a> RollupPart<'a> {
    fn new(plan: &'a Plan, reads: &'a [Read<'a>], res: i64) -> Self {
        let mut fields: Vec<&str> = Vec::new();
        let slot_of = reads
            .iter()
            .map(|r| match r {
                Read::Field(f) => Some(match fields.iter().position(|g| g == f) {
                    Some(k) => k,
                    None => {
                        fields.push(f);
                        fields.len() - 1
                    }
                }),
                _ => None,
            })
            .collect();
        let values = vec![Vec::new(); fields.len()];
        RollupPart {
            plan,
            reads,
            res,
            fields,
            slot_of,
            positions: HashMap::new(),
            layout: RollupLayout::default(),
            taken: Vec::new(),
            values,
        }
    }

    /// The position of each field read in a list of field names.
    fn positions_in(&self, names: &[String]) -> Vec<Option<usize>> {
        self.fields
            .iter()
            .map(|f| names.iter().position(|n| n == f))
            .collect()
    }

    /// Reads one bucket's stored rollup: whether it answers the bucket (then the windows
    /// the filter takes are marked in `taken`, their fields in `values`). It does not when a
    /// filter bound on time cuts one of its windows, or a field read holds other values
    /// than numbers.
    fn read(&mut self, id: &BucketId, value: &[u8], reader: &Reader<'_>) -> Result<bool> {
        let corrupt = |reason| reader.store.corrupt_rollup(self.res, id, reason);
        let names = self.layout.read(self.res, value).map_err(corrupt)?;
        // The windows the filter takes, whole; none cut.
        let filter = &self.plan.filter;
        self.taken.clear();
        for h in &self.layout.heads {
            let take = filter.control_may_match(h.first_time, h.last_time, &NoBounds);
            if take && !filter.whole_bucket_matches(h.first_time, h.last_time) {
                return Ok(false);
            }
            self.taken.push(take);
        }
        let inline;
        let positions: &[Option<usize>] = match names {
            RollupNames::Hashed(h, _) => {
                if !self.positions.contains_key(&h) {
                    let names = reader.store.rollup_names(h)?;
                    if names.len() != self.layout.fields() {
                        return Err(corrupt("names row of another length".to_owned()));
                    }
                    let p = self.positions_in(&names);
                    self.positions.insert(h, p);
                }
                &self.positions[&h]
            }
            RollupNames::Inline(bytes) => {
                inline = self.positions_in(&decode_names(bytes).map_err(corrupt)?);
                &inline
            }
        };
        for (slot, at) in positions.iter().enumerate() {
            let out = &mut self.values[slot];
            match at {
                Some(j) => self.layout.read_field(value, *j, out).map_err(corrupt)?,
                None => {
                    out.clear();
                    out.resize(self.layout.heads.len(), None);
                }
            }
            let other = out
                .iter()
                .zip(&self.taken)
                .any(|(f, &take)| take && matches!(f, Some(FieldRollup::Other)));
            if other {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Adds the windows read to the groups of `series`.
    fn add(&self, groups: &mut Groups<'_>, series: usize) {
        for (w, head) in self.layout.heads.iter().enumerate() {
            if self.taken[w] {
                add_window(
                    groups,
                    series,
                    head,
                    w,
                    &self.values,
                    self.reads,
                    &self.slot_of,
                );
            }
        }
    }
}

impl Reader<'_> {
    /// Aggregates the candidates that the rollups at resolution `res` answer: their groups,
    /// and which candidates (by position) they answered. The candidates, in id order, are
    /// cut into parts read on several threads as [`Reader::aggregate`] cuts its own.
    pub(super) fn rollup_groups<'s>(
        &self,
        plan: &Plan,
        spec: &'s AggregateSpec,
        cands: &Candidates,
        (res, reads): (i64, Vec<Read<'s>>),
        range: Option<GroupRange>,
        stats: &mut QueryStats,
    ) -> Result<(Groups<'s>, Vec<bool>)> {
        let mut order: Vec<usize> = (0..cands.buckets.len())
            .filter(|&p| self.memory().get(&cands.buckets[p].id).is_none())
            .collect();
        order.sort_unstable_by_key(|&p| cands.buckets[p].id);
        let scan = dense(order.len(), cands.in_range);
        let parts = (order.len() / PART_MIN).clamp(1, MAX_PARTS);
        let part_len = order.len().div_ceil(parts).max(1);
        let chunks: Vec<&[usize]> = order.chunks(part_len).collect();
        let buckets = &cands.buckets;
        let series_of = |p: usize| {
            if spec.by_series { buckets[p].series } else { 0 }
        };
        let reads = &reads;
        let part = |i: usize| -> Result<(Groups<'s>, Vec<usize>)> {
            let positions = chunks[i];
            let mut groups = Groups::new(spec, range, positions.len());
            let mut done = Vec::with_capacity(positions.len());
            let mut bucket = RollupPart::new(plan, reads, res);
            let mut take = |p: usize, value: &[u8], groups: &mut Groups<'s>| -> Result<()> {
                if bucket.read(&buckets[p].id, value, self)? {
                    bucket.add(groups, series_of(p));
                    done.push(p);
                }
                Ok(())
            };
            if scan {
                // One scan over the part's id range, joined with its candidates in id order.
                let (Some(&first), Some(&last)) = (positions.first(), positions.last()) else {
                    return Ok((groups, done));
                };
                let mut next = 0;
                let rows = self
                    .store
                    .rollups_between(res, &buckets[first].id, &buckets[last].id);
                for item in rows {
                    let item = item?;
                    while next < positions.len() && buckets[positions[next]].id < item.id {
                        next += 1;
                    }
                    match positions.get(next) {
                        Some(&p) if buckets[p].id == item.id => {
                            next += 1;
                            take(p, &item.value, &mut groups)?;
                        }
                        _ => {} // not a candidate
                    }
                }
            } else {
                for &p in positions {
                    if let Some(value) = self.store.rollup_of(res, &buckets[p].id)? {
                        take(p, &value, &mut groups)?;
                    }
                }
            }
            Ok((groups, done))
        };
        let results = run_parts(chunks.len(), parallel::threads(), &part)?;
        let expected = results.iter().map(|(g, _)| g.keys.len()).sum();
        let mut groups = Groups::new(spec, range, expected);
        let mut done = vec![false; cands.buckets.len()];
        for (part_groups, part_done) in results {
            groups.merge(part_groups);
            for p in part_done {
                done[p] = true;
                stats.buckets_from_rollup += 1;
            }
        }
        Ok((groups, done))
    }
}

/// Adds window `at` of one bucket (`w`) to its group: `values[slot_of[i]][at]` is what output
/// `i` reads.
fn add_window(
    groups: &mut Groups<'_>,
    series: usize,
    w: &WindowHead,
    at: usize,
    values: &[Vec<Option<FieldRollup>>],
    reads: &[Read<'_>],
    slot_of: &[Option<usize>],
) {
    let g = groups.get(series, w.start);
    for ((acc, read), slot) in groups.accs(g).iter_mut().zip(reads).zip(slot_of) {
        let field = match slot.and_then(|k| values[k][at].as_ref()) {
            Some(FieldRollup::Numbers(n)) => Some(n),
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
