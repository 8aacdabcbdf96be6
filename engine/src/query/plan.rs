//! Choosing candidate buckets (SPEC §13, §14.2, §14.4): the meta+time index is scanned (a
//! whole-meta equality reads only its hash prefix, and the time predicates bound the min time
//! with the span, R-14.4.3), meta predicates are evaluated once per series on the index
//! entry's meta value (§14.2), and each candidate's control record later decides whether the
//! bucket is pruned, matches whole or must be filtered row by row.

use std::cell::OnceCell;
use std::collections::HashMap;

use bson::{Bson, Document};
use tscoll_catalog::{BucketId, BucketKey};

use super::QueryStats;
use super::control_view::ControlView;
use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::keys::{hex, parse_index_key, time_bytes};
use crate::options::CollectionSpec;

/// A parsed query over one collection: the filter and the bucketing it is judged with.
pub(crate) struct Plan {
    /// The filter's predicates.
    pub(crate) filter: Filter,
    /// The collection's options now (the span after collMod, R-14.4.5).
    pub(crate) spec: CollectionSpec,
    /// `bucketMaxSpanSeconds` in ms: a bucket's rows lie in `[min time, min time + span)`.
    pub(crate) span_ms: i64,
    /// The span when the collection has fixed bucketing, else `None`.
    pub(crate) fixed_span: Option<i64>,
}

/// What a bucket's control record says about it (SPEC §14.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No measurement can match.
    Pruned,
    /// Every measurement matches: no per-row filter.
    Whole,
    /// Some may match: filter row by row after unpacking.
    Partial,
}

impl Plan {
    /// Parses `filter` for the collection as it is now.
    ///
    /// # Errors
    /// `BadValue` for an unsupported operator.
    pub(crate) fn new(inner: &CollectionInner, filter: &Document) -> Result<Plan> {
        let spec = inner.spec();
        let filter = Filter::parse(filter, &spec.time_field, spec.meta_field.as_deref())?;
        let span_ms = spec.bucket_max_span_seconds.saturating_mul(1000).max(1);
        let fixed_span = spec.fixed_bucketing.then_some(span_ms);
        Ok(Plan {
            filter,
            spec,
            span_ms,
            fixed_span,
        })
    }

    /// Inclusive bounds on a candidate's min time; `None` = nothing can
    /// match (e.g. a non-date operand on the time field).
    pub(crate) fn min_time_bounds(&self) -> Option<(i64, i64)> {
        self.filter
            .min_time_bounds_fixed(self.span_ms, self.fixed_span.is_some())
    }

    /// Judges a bucket by its control record and counts the outcome.
    pub(crate) fn judge(&self, control: &ControlView<'_>, stats: &mut QueryStats) -> Verdict {
        if !self
            .filter
            .control_may_match(control.min_time, control.max_time, control)
        {
            stats.buckets_pruned += 1;
            return Verdict::Pruned;
        }
        if self.filter.whole_bucket_matches_fixed(
            control.min_time,
            control.max_time,
            self.fixed_span,
        ) {
            stats.buckets_whole += 1;
            Verdict::Whole
        } else {
            Verdict::Partial
        }
    }

    /// The greatest row time a bucket with this min time can hold (ms).
    pub(crate) fn last_possible_time(&self, min_time: i64) -> i64 {
        min_time.saturating_add(self.span_ms - 1)
    }
}

/// One series among the candidates.
pub(crate) struct Series {
    /// Normalized meta bytes (SPEC ); empty for the no-meta series.
    pub(crate) bytes: Vec<u8>,
    /// Their hash (the index key prefix).
    pub(crate) hash: u64,
    /// The decoded meta value, on first use.
    meta: OnceCell<Option<Bson>>,
}

impl Series {
    pub(crate) fn new(bytes: Vec<u8>, hash: u64) -> Series {
        Series {
            bytes,
            hash,
            meta: OnceCell::new(),
        }
    }

    /// The series' meta value (SPEC ), `None` for the no-meta series.
    ///
    /// # Errors
    /// [`Error::Corruption`] when the stored bytes are not a value.
    pub(crate) fn meta(&self, inner: &CollectionInner) -> Result<Option<&Bson>> {
        if let Some(m) = self.meta.get() {
            return Ok(m.as_ref());
        }
        let value = BucketKey {
            bytes: self.bytes.clone(),
            hash: self.hash,
        }
        .meta_value()
        .map_err(|reason| Error::Corruption {
            keyspace: format!("c{}_idx", inner.id),
            key: hex(&self.hash.to_be_bytes()),
            reason,
        })?;
        Ok(self.meta.get_or_init(|| value).as_ref())
    }
}

/// A candidate bucket from the index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// `control.min.<time>` (rounded, ms) as indexed.
    pub(crate) min_time: i64,
    /// Position of its series in [`Candidates::series`].
    pub(crate) series: usize,
}

/// The candidate buckets of a query and their series.
#[derive(Default)]
pub(crate) struct Candidates {
    /// In index order (series hash, then min time), unless reordered by the caller.
    pub(crate) buckets: Vec<Candidate>,
    /// Distinct series of `buckets`, each once.
    pub(crate) series: Vec<Series>,
    /// Index entries within the time bounds, whatever their series, when the scan saw every
    /// series (a skip scan or a full scan); `None` after a hash-prefix or secondary-index
    /// scan. It approximates how many buckets lie in the `_id` range of the candidates
    /// (ids start with the min time, SPEC ), which decides how they are read
    /// ([`super::bulk`]).
    pub(crate) in_range: Option<u64>,
}

/// Builds [`Candidates`] entry by entry, deduplicating series and evaluating meta
/// predicates once per series.
struct Builder<'p> {
    plan: &'p Plan,
    bounds: (i64, i64),
    out: Candidates,
    /// Series position and whether it passes the meta predicates, by meta bytes.
    seen: HashMap<Vec<u8>, (usize, bool)>,
    /// The last series added or found (entries of one series are adjacent in the index).
    last: Option<(usize, bool)>,
}

impl Builder<'_> {
    /// Adds one index entry; returns whether its series passes the meta predicates.
    fn add(
        &mut self,
        inner: &CollectionInner,
        hash: u64,
        min_time: i64,
        id: BucketId,
        meta: &[u8],
    ) -> Result<bool> {
        if min_time < self.bounds.0 || min_time > self.bounds.1 {
            return Ok(true);
        }
        if let Some(n) = &mut self.out.in_range {
            *n += 1;
        }
        let (series, matches) = match self.last {
            Some((s, m)) if self.out.series[s].hash == hash && self.out.series[s].bytes == meta => {
                (s, m)
            }
            _ => {
                if let Some(&found) = self.seen.get(meta) {
                    found
                } else {
                    let s = self.out.series.len();
                    self.out.series.push(Series::new(meta.to_vec(), hash));
                    let m = !self.plan.filter.has_meta_preds()
                        || self
                            .plan
                            .filter
                            .matches_meta(self.out.series[s].meta(inner)?);
                    self.seen.insert(meta.to_vec(), (s, m));
                    (s, m)
                }
            }
        };
        self.last = Some((series, matches));
        if matches {
            self.out.buckets.push(Candidate {
                id,
                min_time,
                series,
            });
        }
        Ok(matches)
    }
}

impl CollectionInner {
    /// The candidate buckets of `plan` (SPEC §14.4): from a secondary index when one serves
    /// the filter, else from the meta+time index: the hash prefix of each whole-meta equality
    /// operand with the min time bounded by, or every series with the same bounds
    /// ([`CollectionInner::skip_scan`]), or the whole index keyspace when the default index
    /// was dropped (R-13.2; the keyspace is also the bucket directory). Meta predicates are
    /// applied once per series (§14.2); control is not read.
    ///
    /// # Errors
    /// [`Error::Storage`] when a scan fails; [`Error::Corruption`] for a bad index entry.
    pub(crate) fn candidates(&self, plan: &Plan, stats: &mut QueryStats) -> Result<Candidates> {
        let secondary = self.secondary_candidates(&plan.filter)?;
        let Some(bounds) = plan.min_time_bounds() else {
            return Ok(Candidates::default());
        };
        let mut b = Builder {
            plan,
            bounds,
            out: Candidates::default(),
            seen: HashMap::new(),
            last: None,
        };
        if let Some(entries) = secondary {
            stats.index_entries_scanned += entries.len() as u64;
            for e in entries {
                b.add(self, e.key.hash, e.min_time, e.id, &e.key.bytes)?;
            }
            return Ok(b.out);
        }
        let indexes = self.indexes();
        if indexes.default_dropped || indexes.default_hidden {
            // the default index is gone (or hidden from the planner); its keyspace
            // still lists every bucket.
            b.out.in_range = Some(0);
            for item in self.idx.iter() {
                let (k, v) = item
                    .into_inner()
                    .map_err(Error::storage("scanning the meta+time index"))?;
                if let Some((hash, min_time, id)) = parse_index_key(&k) {
                    stats.index_entries_scanned += 1;
                    b.add(self, hash, min_time, id, &v)?;
                }
            }
        } else if let Some(hashes) = prefix_hashes(plan) {
            for hash in hashes {
                let (lo, hi) = hash_time_range(hash, bounds.0, bounds.1);
                for item in self.idx.range(&lo[..]..=&hi[..]) {
                    let (k, v) = item
                        .into_inner()
                        .map_err(Error::storage("scanning the meta+time index"))?;
                    if let Some((hash, min_time, id)) = parse_index_key(&k) {
                        stats.index_entries_scanned += 1;
                        b.add(self, hash, min_time, id, &v)?;
                    }
                }
            }
        } else {
            b.out.in_range = Some(0);
            let mut skipped = false;
            self.skip_scan(bounds, stats, &mut |hash, min_time, id, meta| {
                let keep = b.add(self, hash, min_time, id, meta)?;
                skipped |= !keep;
                Ok(keep)
            })?;
            if skipped {
                // Entries of rejected series were not all read: no estimate of the range.
                b.out.in_range = None;
            }
        }
        Ok(b.out)
    }

    /// Every index entry with min time in `[lo, hi]`, series by series: the scan reads the
    /// index in order and seeks to `hash ‖ lo` when it meets an entry older than `lo`, and to
    /// the next hash when it meets one newer than `hi` or when `visit` returns `false` (the
    /// series is not wanted, and no other series shares its hash: no collision marker), so a
    /// narrow time range over many series reads about two entries per series outside the
    /// range, and a series rejected by its meta value one entry.
    ///
    /// # Errors
    /// [`Error::Storage`] when the scan fails, or what `visit` returns.
    pub(crate) fn skip_scan(
        &self,
        (lo, hi): (i64, i64),
        stats: &mut QueryStats,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<()> {
        let mut iter = self.idx.iter();
        // The hash of the last collision marker met (it sorts before its hash's entries).
        let mut shared: Option<u64> = None;
        loop {
            let Some(item) = iter.next() else {
                return Ok(());
            };
            let (k, v) = item
                .into_inner()
                .map_err(Error::storage("scanning the meta+time index"))?;
            let Some((hash, min_time, id)) = parse_index_key(&k) else {
                if let Ok(marker) = <[u8; 8]>::try_from(&k[..]) {
                    shared = Some(u64::from_be_bytes(marker));
                }
                continue;
            };
            stats.index_entries_scanned += 1;
            let next_hash = if min_time < lo {
                let (from, _) = hash_time_range(hash, lo, hi);
                iter = self.idx.range(from.to_vec()..);
                continue;
            } else if min_time > hi {
                true
            } else {
                !visit(hash, min_time, id, &v)? && shared != Some(hash)
            };
            if next_hash {
                let Some(next) = hash.checked_add(1) else {
                    return Ok(());
                };
                iter = self.idx.range(next.to_be_bytes().to_vec()..);
            }
        }
    }
}

/// What [`CollectionInner::skip_scan`] calls per entry: `(hash, min time, id, meta bytes)`.
/// Returns whether the rest of the entry's series is wanted.
pub(crate) type EntryVisitor<'a> = dyn FnMut(u64, i64, BucketId, &[u8]) -> Result<bool> + 'a;

/// The distinct meta hashes a whole-meta equality (or `$in`) restricts a query to, sorted
/// (a `null` operand also selects the series without a meta value, which it matches);
/// `None` when the filter has none or an operand holds a number: numbers of different types
/// or representations are equal (`1`, `NumberLong(1)`, `1.0`) but are stored as different
/// bytes, so such operands are matched on every series instead of by hash.
pub(crate) fn prefix_hashes(plan: &Plan) -> Option<Vec<u64>> {
    plan.spec.meta_field.as_ref()?;
    let values = plan.filter.meta_equalities()?;
    if values.iter().any(|v| has_number(v)) {
        return None;
    }
    let mut hashes: Vec<u64> = values.iter().map(|v| filter_meta_hash(v)).collect();
    if values.iter().any(|v| matches!(v, Bson::Null)) {
        // `null` also matches a missing meta field: the no-meta series.
        hashes.push(BucketKey::no_meta().hash);
    }
    hashes.sort_unstable();
    hashes.dedup();
    Some(hashes)
}

fn has_number(v: &Bson) -> bool {
    match v {
        Bson::Double(_) | Bson::Int32(_) | Bson::Int64(_) | Bson::Decimal128(_) => true,
        Bson::Document(d) => d.values().any(has_number),
        Bson::Array(a) => a.iter().any(has_number),
        _ => false,
    }
}

/// The index hash of a whole-meta equality operand. The operand is not normalized (SPEC
/// whole-meta equality is field-order sensitive), so it must equal the stored bytes.
pub(crate) fn filter_meta_hash(v: &Bson) -> u64 {
    let mut bytes = Vec::new();
    bytes.push(v.element_type() as u8);
    bytes.extend_from_slice(&tscoll_catalog::value::raw_value_bytes(v));
    BucketKey::from_bytes(bytes).hash
}

/// Inclusive key bounds of the entries of `hash` with min time in `[lo, hi]`.
pub(crate) fn hash_time_range(hash: u64, lo: i64, hi: i64) -> ([u8; 16], [u8; 28]) {
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&hash.to_be_bytes());
    a[8..].copy_from_slice(&time_bytes(lo));
    let mut b = [0xffu8; 28];
    b[..8].copy_from_slice(&hash.to_be_bytes());
    b[8..16].copy_from_slice(&time_bytes(hi));
    (a, b)
}
