//! Query use of secondary indexes (SPEC §13, §14.2, §14.4): pick an index whose leading field
//! serves a predicate of the filter, turn the predicate into key ranges, and list the buckets
//! found there.
//!
//! The result is a superset of the buckets that can hold matching measurements (the caller
//! still applies every bucket and row filter); it never misses one:
//!
//! * a meta predicate (`Pred::Meta`, `Pred::MetaIn`) on an indexed meta path scans the
//!   operand's value range (numbers of every type by value; `null` also scans the buckets
//!   without the path); array values are indexed element by element;
//! * a measurement predicate on an indexed field `f` scans, for an ascending index, the
//!   entries whose `control.min.f` can satisfy it (`$eq/$lt/$lte v`: `min ≤ v`; `$gt/$gte`:
//!   any `min` of the operand's type) and keeps those whose `control.max.f` also fits
//!   a descending index the other way round. Comparisons are type-bracketed;
//!   buckets whose control cannot bound the field (mixed types, arrays, objects) are always
//!   read. Operands that are objects, arrays, `null`, undefined, MinKey or MaxKey are not
//!   pushed down, so such predicates use no index;
//! * time predicates (and `$in` on the time field) likewise on a time field index.
//!
//! Hidden indexes, indexes still being built, and partial indexes whose filter is not part of
//! the query's filter are not used. When the filter has a whole-meta equality and the default
//! index exists, the default index's hash prefix is the better plan and no secondary index is
//! used.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::sync::{Arc, PoisonError};

use bson::{Bson, DateTime, Document};
use tscoll_catalog::value::{canonical_rank, compare};
use tscoll_catalog::{BucketId, BucketKey};

use crate::collection::CollectionInner;
use crate::direct_write::IndexEntry;
use crate::error::{Error, Result};
use crate::mql::filter::{Cmp, Filter, Pred};
use crate::storage::keys::hex;

use super::SecondaryIndex;
use super::keyenc::{ABSENT, UNKNOWN, bound, invert, ordered, successor, tag_of};
use super::spec::Component;

/// A range of encoded values (ascending form): from `lo` (inclusive) to every value that is
/// `≤ hi` or starts with `hi`.
struct ValueRange {
    lo: Vec<u8>,
    hi: Vec<u8>,
}

impl ValueRange {
    /// Every value whose encoding starts with `tag`.
    fn region(tag: u8) -> Self {
        ValueRange {
            lo: vec![tag],
            hi: vec![tag],
        }
    }

    /// The key range `[lower, upper)` (`None` = unbounded) of the leading component,
    /// ascending or descending (inverted bytes).
    fn key_range(&self, descending: bool) -> (Vec<u8>, Option<Vec<u8>>) {
        if descending {
            let mut lower = self.hi.clone();
            invert(&mut lower);
            let mut upper = self.lo.clone();
            invert(&mut upper);
            (lower, successor(&upper))
        } else {
            (self.lo.clone(), successor(&self.hi))
        }
    }
}

/// A planned scan of one index.
struct Scan {
    /// Disjoint key ranges `[lower, upper)`, in order.
    ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// For control-based leading fields: an entry is kept when one of these holds on its
    /// `lo`/`hi` (or when it has none: unknown bounds).
    checks: Vec<(Cmp, Bson)>,
    /// Lower is better: 0 meta equality, 1 other equality, 2 range.
    score: u8,
}

impl Scan {
    fn new(values: &[ValueRange], descending: bool, checks: Vec<(Cmp, Bson)>, score: u8) -> Self {
        let mut ranges: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            values.iter().map(|r| r.key_range(descending)).collect();
        ranges.sort_by(|a, b| a.0.cmp(&b.0));
        let mut merged: Vec<(Vec<u8>, Option<Vec<u8>>)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            if let Some(last) = merged.last_mut()
                && last.1.as_ref().is_none_or(|end| lo <= *end)
            {
                last.1 = match (last.1.take(), hi) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                continue;
            }
            merged.push((lo, hi));
        }
        Scan {
            ranges: merged,
            checks,
            score,
        }
    }
}

/// Value ranges of a meta predicate; `None` when the index cannot serve it.
fn meta_ranges(op: Cmp, v: &Bson, sparse: bool) -> Option<Vec<ValueRange>> {
    if matches!(v, Bson::Null) {
        // `null` matches a missing path too; a sparse index has no entry for those buckets.
        if sparse {
            return None;
        }
        return Some(match op {
            Cmp::Eq | Cmp::Gte | Cmp::Lte => vec![
                ValueRange::region(ABSENT),
                ValueRange::region(tag_of(&Bson::Null)),
            ],
            Cmp::Gt | Cmp::Lt => Vec::new(),
        });
    }
    if !ordered(v) {
        return None;
    }
    let b = bound(v);
    let t = vec![tag_of(v)];
    Some(vec![match op {
        Cmp::Eq => ValueRange {
            lo: b.clone(),
            hi: b,
        },
        Cmp::Gt | Cmp::Gte => ValueRange { lo: b, hi: t },
        Cmp::Lt | Cmp::Lte => ValueRange { lo: t, hi: b },
    }])
}

/// Whether a measurement operand is pushed down to control min/max (SPEC ).
fn pushed_down(v: &Bson) -> bool {
    ordered(v)
        && !matches!(
            v,
            Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey
        )
}

/// Value ranges of the leading part of a control-based component (ascending: `min`,
/// descending: `max`) for `op v`, plus the unknown-bounds region.
fn min_max_ranges(op: Cmp, v: &Bson, descending: bool) -> Vec<ValueRange> {
    let b = bound(v);
    let t = vec![tag_of(v)];
    let main = match (descending, op) {
        // min ≤ v (min of v's type).
        (false, Cmp::Eq | Cmp::Lt | Cmp::Lte) => ValueRange { lo: t, hi: b },
        // max ≥ v.
        (true, Cmp::Eq | Cmp::Gt | Cmp::Gte) => ValueRange { lo: b, hi: t },
        // Any min (max) of v's type; the other bound is checked on the entry.
        _ => ValueRange {
            lo: t.clone(),
            hi: t,
        },
    };
    vec![ValueRange::region(UNKNOWN), main]
}

/// on an entry's bounds: whether a bucket with every value in `[lo, hi]` (one type)
/// may hold a value satisfying `op v`.
fn bounds_may_match(lo: &Bson, hi: &Bson, op: Cmp, v: &Bson) -> bool {
    if canonical_rank(v) != canonical_rank(lo) {
        return false; // type bracketing
    }
    match op {
        Cmp::Eq => compare(lo, v) != Ordering::Greater && compare(v, hi) != Ordering::Greater,
        Cmp::Gt => compare(hi, v) == Ordering::Greater,
        Cmp::Gte => compare(hi, v) != Ordering::Less,
        Cmp::Lt => compare(lo, v) == Ordering::Less,
        Cmp::Lte => compare(lo, v) != Ordering::Greater,
    }
}

/// The scan of a control-based leading component for `$in` values (equalities).
fn min_max_in(values: &[Bson], descending: bool) -> Option<Scan> {
    if !values.iter().all(pushed_down) {
        return None;
    }
    let ranges: Vec<ValueRange> = values
        .iter()
        .flat_map(|v| min_max_ranges(Cmp::Eq, v, descending))
        .collect();
    let checks = values.iter().map(|v| (Cmp::Eq, v.clone())).collect();
    Some(Scan::new(&ranges, descending, checks, 1))
}

/// The scan of index `ix` for one predicate, if its leading field serves it.
fn plan_for(ix: &SecondaryIndex, pred: &Pred, time_field: &str) -> Option<Scan> {
    let range_score = |op: Cmp, eq: u8| if op == Cmp::Eq { eq } else { 2 };
    match (ix.def.components.first()?, pred) {
        (
            Component::Meta {
                path: p,
                descending,
            },
            Pred::Meta { path, op, value },
        ) if p == path => {
            let ranges = meta_ranges(*op, value, ix.def.sparse)?;
            Some(Scan::new(
                &ranges,
                *descending,
                Vec::new(),
                range_score(*op, 0),
            ))
        }
        (
            Component::Meta {
                path: p,
                descending,
            },
            Pred::MetaIn { path, values },
        ) if p == path => {
            let mut ranges = Vec::new();
            for v in values {
                ranges.extend(meta_ranges(Cmp::Eq, v, ix.def.sparse)?);
            }
            Some(Scan::new(&ranges, *descending, Vec::new(), 0))
        }
        (
            Component::Measurement {
                path: p,
                descending,
            },
            Pred::Field { path, op, value },
        ) if p == path && pushed_down(value) => Some(Scan::new(
            &min_max_ranges(*op, value, *descending),
            *descending,
            vec![(*op, value.clone())],
            range_score(*op, 1),
        )),
        (
            Component::Measurement {
                path: p,
                descending,
            },
            Pred::FieldIn { path, values },
        ) if p == path => min_max_in(values, *descending),
        (Component::Time { descending }, Pred::Time { op, value: Some(t) }) => {
            let v = Bson::DateTime(DateTime::from_millis(*t));
            Some(Scan::new(
                &min_max_ranges(*op, &v, *descending),
                *descending,
                vec![(*op, v)],
                range_score(*op, 1),
            ))
        }
        (Component::Time { descending }, Pred::FieldIn { path, values })
            if path.len() == 1 && path[0] == time_field =>
        {
            min_max_in(values, *descending)
        }
        _ => None,
    }
}

/// The best usable index and scan for `filter`.
fn choose(
    secondary: &[Arc<SecondaryIndex>],
    filter: &Filter,
    time_field: &str,
) -> Option<(Arc<SecondaryIndex>, Scan)> {
    let mut best: Option<(Arc<SecondaryIndex>, Scan)> = None;
    for ix in secondary {
        if !ix.ready || ix.def.hidden {
            continue;
        }
        if let Some((_, partial)) = &ix.def.partial
            && !partial.preds.iter().all(|p| filter.preds.contains(p))
        {
            continue;
        }
        for pred in &filter.preds {
            if let Some(scan) = plan_for(ix, pred, time_field)
                && best.as_ref().is_none_or(|(_, b)| scan.score < b.score)
            {
                best = Some((Arc::clone(ix), scan));
            }
        }
    }
    best
}

impl CollectionInner {
    /// The buckets a secondary index finds for `filter`, or `None` when no secondary index
    /// serves it (the caller then scans the meta+time index). A superset of the buckets that
    /// can hold matching measurements; see the module documentation.
    ///
    /// # Errors
    /// [`Error::Storage`] when the scan fails; [`Error::Corruption`] for an undecodable entry.
    pub(crate) fn secondary_candidates(&self, filter: &Filter) -> Result<Option<Vec<IndexEntry>>> {
        let Some((ix, scan)) = self.chosen_secondary(filter) else {
            return Ok(None);
        };
        self.scan_secondary(&ix, &scan).map(Some)
    }

    /// The name of the secondary index that serves `filter`, if one does
    /// ([`CollectionInner::secondary_candidates`] reads it), for `explain`.
    pub(crate) fn secondary_index_for(&self, filter: &Filter) -> Option<String> {
        self.chosen_secondary(filter)
            .map(|(ix, _)| ix.def.name.clone())
    }

    /// The secondary index that serves `filter` and its key ranges, if one does.
    fn chosen_secondary(&self, filter: &Filter) -> Option<(Arc<SecondaryIndex>, Scan)> {
        if self
            .indexes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .secondary
            .is_empty()
        {
            return None;
        }
        let (has_meta, time_field) = {
            let spec = self.spec.read().unwrap_or_else(PoisonError::into_inner);
            (spec.meta_field.is_some(), spec.time_field.clone())
        };
        let indexes = self.indexes.read().unwrap_or_else(PoisonError::into_inner);
        if indexes.secondary.is_empty()
            || (has_meta && !indexes.default_dropped && filter.meta_equalities().is_some())
        {
            return None;
        }
        choose(&indexes.secondary, filter, &time_field)
    }

    /// The entries of `ix` in the ranges of `scan`, each bucket once.
    fn scan_secondary(&self, ix: &SecondaryIndex, scan: &Scan) -> Result<Vec<IndexEntry>> {
        let ks = ix.keyspace(&self.fjall, self.id)?;
        let name = format!("c{}_i{}", self.id, ix.no);
        let corrupt = |k: &[u8], reason: String| Error::Corruption {
            keyspace: name.clone(),
            key: hex(k),
            reason,
        };
        let mut seen: HashSet<BucketId> = HashSet::new();
        let mut out = Vec::new();
        for (lower, upper) in &scan.ranges {
            let iter = match upper {
                Some(u) => ks.range(lower.as_slice()..u.as_slice()),
                None => ks.range(lower.as_slice()..),
            };
            for item in iter {
                let (k, v) = item
                    .into_inner()
                    .map_err(Error::storage("scanning a secondary index"))?;
                let Some(id) = k
                    .len()
                    .checked_sub(12)
                    .and_then(|s| k.get(s..))
                    .and_then(|b| BucketId::try_from(b).ok())
                else {
                    return Err(corrupt(&k, "entry key shorter than a bucket id".to_owned()));
                };
                if seen.contains(&id) {
                    continue;
                }
                let doc = Document::from_reader(&v[..]).map_err(|e| corrupt(&k, e.to_string()))?;
                if !scan.checks.is_empty()
                    && let (Some(lo), Some(hi)) = (doc.get("lo"), doc.get("hi"))
                    && !scan
                        .checks
                        .iter()
                        .any(|(op, x)| bounds_may_match(lo, hi, *op, x))
                {
                    continue;
                }
                let (Ok(min_time), Ok(meta)) = (doc.get_i64("t"), doc.get_binary_generic("m"))
                else {
                    return Err(corrupt(&k, "entry value lacks 't' or 'm'".to_owned()));
                };
                seen.insert(id);
                out.push(IndexEntry {
                    id,
                    min_time,
                    key: BucketKey::from_bytes(meta.clone()),
                });
            }
        }
        Ok(out)
    }
}
