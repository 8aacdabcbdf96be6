//! Choosing candidate buckets (SPEC §13, §14.2, §14.4): the meta+time index is scanned (a
//! whole-meta equality reads only its hash prefix, and the time predicates bound the min time
//! with the span, R-14.4.3), meta predicates are evaluated once per series on the index
//! entry's meta value (§14.2), and each candidate's control record later decides whether the
//! bucket is pruned, matches whole or must be filtered row by row.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use bson::{Bson, Document, RawBsonRef, RawDocument};
use tscoll_catalog::{BucketId, BucketKey};

use super::QueryStats;
use super::control_view::ControlView;
use super::parallel::{self, run_parts};
use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::mql::expr::EvalError;
use crate::mql::filter::{Cmp, Filter, Pred, cmp_holds};
use crate::options::CollectionSpec;
use crate::storage::keys::{hash_prefix, hash_time_range, hex};
use crate::storage::{IndexRow, IndexScan};

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

    /// The meta value decoded by [`Series::meta`], taken out (`None` when it was not
    /// decoded or there is none).
    pub(crate) fn take_meta(&mut self) -> Option<Bson> {
        self.meta.take().flatten()
    }

    /// The series' meta value (SPEC ), `None` for the no-meta series.
    ///
    /// # Errors
    /// [`Error::Corruption`] when the stored bytes are not a value.
    pub(crate) fn meta(&self, inner: &CollectionInner) -> Result<Option<&Bson>> {
        if let Some(m) = self.meta.get() {
            return Ok(m.as_ref());
        }
        // A document (the usual meta value) straight from its bytes; anything else, or bytes
        // that do not read, through the catalog's decoder.
        if let Some((&0x03, payload)) = self.bytes.split_first()
            && let Ok(d) = RawDocument::from_bytes(payload).and_then(Document::try_from)
        {
            return Ok(self.meta.get_or_init(|| Some(Bson::Document(d))).as_ref());
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

impl Candidates {
    /// The meta value of each series, in [`Candidates::series`] order.
    ///
    /// # Errors
    /// [`Error::Corruption`] when a stored meta value does not decode.
    pub(crate) fn metas(&self, inner: &CollectionInner) -> Result<Vec<Option<Bson>>> {
        let mut metas = Vec::with_capacity(self.series.len());
        for s in &self.series {
            metas.push(s.meta(inner)?.cloned());
        }
        Ok(metas)
    }

    /// Appends the candidates of another part of the index (other series, later in index
    /// order).
    fn append(&mut self, other: Candidates) {
        let offset = self.series.len();
        self.buckets
            .extend(other.buckets.into_iter().map(|c| Candidate {
                series: c.series + offset,
                ..c
            }));
        self.series.extend(other.series);
        self.in_range = match (self.in_range, other.in_range) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
    }
}

/// Index entries from which a scan of every series is cut into pieces read on several
/// threads.
const PARALLEL_SCAN_MIN: usize = 4096;

/// The hashes of piece `k` of `pieces` equal pieces of the hash space: `(first, end)`, end
/// excluded, `None` = to the end.
fn hash_piece(k: usize, pieces: usize) -> (u64, Option<u64>) {
    let at = |k: usize| {
        u64::try_from((u128::from(u64::MAX) + 1) * k as u128 / pieces.max(1) as u128).ok()
    };
    (
        at(k).unwrap_or(u64::MAX),
        if k + 1 >= pieces { None } else { at(k + 1) },
    )
}

/// Builds [`Candidates`] entry by entry, deduplicating series and evaluating meta
/// predicates once per series.
struct Builder<'p> {
    plan: &'p Plan,
    bounds: (i64, i64),
    out: Candidates,
    /// The last series added of each index hash (other series of that hash, collisions,
    /// are chained in `links`).
    seen: HashMap<u64, usize, BuildHasherDefault<HashOfHash>>,
    /// Per series: whether it passes the meta predicates, and the series added before it
    /// with the same hash.
    links: Vec<(bool, Option<usize>)>,
    /// The last series added or found (entries of one series are adjacent in the index).
    last: Option<(usize, bool)>,
}

/// The hash of a map keyed by index hashes: the key itself (already a 64-bit hash of the
/// meta bytes).
#[derive(Clone, Copy, Default)]
struct HashOfHash(u64);

impl std::hash::Hasher for HashOfHash {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl<'p> Builder<'p> {
    fn new(plan: &'p Plan, bounds: (i64, i64)) -> Self {
        Builder {
            plan,
            bounds,
            out: Candidates::default(),
            seen: HashMap::default(),
            links: Vec::new(),
            last: None,
        }
    }

    /// The series of an index entry (added on first sight) and whether it passes the meta
    /// predicates, decided on the stored bytes when they allow it (no value built).
    fn series(&mut self, inner: &CollectionInner, hash: u64, meta: &[u8]) -> Result<(usize, bool)> {
        if let Some((s, m)) = self.last
            && self.out.series[s].hash == hash
            && self.out.series[s].bytes == meta
        {
            return Ok((s, m));
        }
        let head = self.seen.get(&hash).copied();
        let mut cur = head;
        while let Some(s) = cur {
            if self.out.series[s].bytes == meta {
                let found = (s, self.links[s].0);
                self.last = Some(found);
                return Ok(found);
            }
            cur = self.links[s].1;
        }
        let s = self.out.series.len();
        self.out.series.push(Series::new(meta.to_vec(), hash));
        let m = if !self.plan.filter.has_meta_preds() {
            true
        } else if let Some(m) = meta_matches_raw(&self.plan.filter, meta) {
            m
        } else {
            self.plan
                .filter
                .try_matches_meta(self.out.series[s].meta(inner)?)
                .map_err(EvalError::into_query_error)?
        };
        self.links.push((m, head));
        self.seen.insert(hash, s);
        self.last = Some((s, m));
        Ok((s, m))
    }

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
        let (series, matches) = self.series(inner, hash, meta)?;
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
    pub(crate) fn stored_candidates(
        &self,
        plan: &Plan,
        stats: &mut QueryStats,
    ) -> Result<Candidates> {
        let secondary = self.secondary_candidates(&plan.filter)?;
        let Some(bounds) = plan.min_time_bounds() else {
            return Ok(Candidates::default());
        };
        let mut b = Builder::new(plan, bounds);
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
            for item in self.store.index_entries() {
                let item = item?;
                stats.index_entries_scanned += 1;
                b.add(self, item.hash, item.min_time, item.id, &item.meta)?;
            }
        } else if let Some(hashes) = prefix_hashes(plan) {
            for hash in hashes {
                let (lo, hi) = hash_time_range(hash, bounds.0, bounds.1);
                for row in self.store.index_scan(&lo[..]..=&hi[..]) {
                    if let IndexRow::Bucket(item) = row? {
                        stats.index_entries_scanned += 1;
                        b.add(self, item.hash, item.min_time, item.id, &item.meta)?;
                    }
                }
            }
        } else {
            // Every series. A read of the whole index (no time bound, no meta predicate: no
            // seek) is cut into pieces of the hash space read on as many threads; a scan that
            // seeks once or twice per series is not (seeks from two threads at once were
            // slower than from one).
            let threads = parallel::threads();
            let whole_index = bounds == (i64::MIN, i64::MAX) && !plan.filter.has_meta_preds();
            let pieces = if threads > 1
                && whole_index
                && self.store.index_len_estimate() >= PARALLEL_SCAN_MIN
            {
                threads
            } else {
                1
            };
            let parts = run_parts(pieces, pieces, &|k| {
                let mut b = Builder::new(plan, bounds);
                b.out.in_range = Some(0);
                let mut part_stats = QueryStats::default();
                let mut skipped = false;
                let hashes = hash_piece(k, pieces);
                self.skip_scan(bounds, hashes, &mut part_stats, &mut |entry| {
                    let keep = match entry {
                        ScanEntry::Series(hash, meta) => b.series(self, hash, meta)?.1,
                        ScanEntry::Bucket(hash, min_time, id, meta) => {
                            b.add(self, hash, min_time, id, meta)?
                        }
                    };
                    skipped |= !keep;
                    Ok(keep)
                })?;
                if skipped {
                    // Entries of rejected series were not all read: no estimate of the range.
                    b.out.in_range = None;
                }
                Ok((b.out, part_stats))
            })?;
            b.out.in_range = Some(0);
            for (part, part_stats) in parts {
                stats.add(&part_stats);
                b.out.append(part);
            }
        }
        Ok(b.out)
    }

    /// Every index entry with min time in `[lo, hi]`, series by series: the scan reads the
    /// index in order. The first entry of a hash that no other series shares (its series
    /// record is not marked shared) is offered to `visit` as [`ScanEntry::Series`] before its time is looked at;
    /// when `visit` declines it, the scan seeks to the next hash. Otherwise it seeks to
    /// `hash ‖ lo` when it meets an entry older than `lo`, and to the next hash when it meets
    /// one newer than `hi` or when `visit` declines a [`ScanEntry::Bucket`] (the series is not
    /// wanted, and its hash is not shared). A narrow time range over many series reads about
    /// two entries per series outside the range, and a series rejected by its meta value one
    /// entry and one seek.
    ///
    /// # Errors
    /// [`Error::Storage`] when the scan fails, or what `visit` returns.
    pub(crate) fn skip_scan(
        &self,
        (lo, hi): (i64, i64),
        (first_hash, end_hash): (u64, Option<u64>),
        stats: &mut QueryStats,
        visit: &mut EntryVisitor<'_>,
    ) -> Result<()> {
        let seek = |iter: &mut IndexScan, key: Vec<u8>| match end_hash {
            Some(end) => iter.seek(key..hash_prefix(end).to_vec()),
            None => iter.seek(key..),
        };
        let mut iter = match end_hash {
            Some(end) => self
                .store
                .index_scan(hash_prefix(first_hash).to_vec()..hash_prefix(end).to_vec()),
            None => self.store.index_scan(hash_prefix(first_hash).to_vec()..),
        };
        // The hash of the last shared series record met (it sorts before its hash's entries).
        let mut shared: Option<u64> = None;
        // The hash whose series was offered last.
        let mut offered: Option<u64> = None;
        loop {
            let Some(row) = iter.next() else {
                return Ok(());
            };
            let item = match row? {
                IndexRow::Series { hash, shared: true } => {
                    shared = Some(hash);
                    continue;
                }
                IndexRow::Series { .. } => continue,
                IndexRow::Bucket(item) => item,
            };
            let (hash, min_time, id) = (item.hash, item.min_time, item.id);
            stats.index_entries_scanned += 1;
            let next_hash = if offered != Some(hash)
                && shared != Some(hash)
                && !visit(ScanEntry::Series(hash, &item.meta))?
            {
                true
            } else if min_time < lo {
                offered = Some(hash);
                let (start, _) = hash_time_range(hash, lo, hi);
                seek(&mut iter, start.to_vec());
                continue;
            } else if min_time > hi {
                true
            } else {
                offered = Some(hash);
                !visit(ScanEntry::Bucket(hash, min_time, id, &item.meta))? && shared != Some(hash)
            };
            if next_hash {
                let Some(next) = hash.checked_add(1) else {
                    return Ok(());
                };
                seek(&mut iter, hash_prefix(next).to_vec());
            }
        }
    }
}

/// What [`CollectionInner::skip_scan`] hands to its visitor.
pub(crate) enum ScanEntry<'a> {
    /// The first entry met of a hash no other series shares, whatever its time:
    /// `(hash, meta bytes)`. Declining it skips the hash.
    Series(u64, &'a [u8]),
    /// An entry with min time in range: `(hash, min time, id, meta bytes)`. Declining it
    /// skips the rest of the hash, unless the hash is shared.
    Bucket(u64, i64, BucketId, &'a [u8]),
}

/// What [`CollectionInner::skip_scan`] calls per entry; returns whether the rest of the
/// entry's series is wanted.
pub(crate) type EntryVisitor<'a> = dyn FnMut(ScanEntry<'_>) -> Result<bool> + 'a;

/// Whether a series' stored meta bytes (`type byte ‖ value`, empty for no meta value) pass
/// the filter's meta predicates, decided on the bytes without building the value when every
/// meta predicate compares a sub-field with a string (`{"m.a": "x"}`, `$gt`…, `$in` of
/// strings); `None` when some predicate needs the value (the caller then decodes it). Same
/// semantics as [`Filter::matches_meta`]: type bracketing (a string only matches a string
/// or a symbol, compared bytewise), a missing path matches no string; a path reaching an
/// array needs the value (arrays match when an element does).
pub(crate) fn meta_matches_raw(filter: &Filter, meta: &[u8]) -> Option<bool> {
    // Clauses (`$or`, `$ne`, ...) on the meta value are judged on the decoded value.
    if filter
        .clauses
        .iter()
        .any(crate::mql::filter::Node::meta_only)
    {
        return None;
    }
    // Only a document has sub-fields: in any other meta value every sub-field is missing.
    let doc = match meta.split_first() {
        Some((&0x03, bytes)) => Some(RawDocument::from_bytes(bytes).ok()?),
        _ => None,
    };
    let mut all = true;
    for p in &filter.preds {
        let (path, tests): (&[String], Vec<(Cmp, &str)>) = match p {
            Pred::Meta {
                path,
                op,
                value: Bson::String(s),
            } if !path.is_empty() => (path, vec![(*op, s.as_str())]),
            Pred::MetaIn { path, values } if !path.is_empty() => {
                let strings: Option<Vec<(Cmp, &str)>> = values
                    .iter()
                    .map(|v| match v {
                        Bson::String(s) => Some((Cmp::Eq, s.as_str())),
                        _ => None,
                    })
                    .collect();
                (path, strings?)
            }
            Pred::Meta { .. } | Pred::MetaIn { .. } => return None,
            _ => continue,
        };
        let found = match doc {
            Some(d) => raw_lookup(d, path)?,
            None => None,
        };
        let holds = match found {
            None => false,
            Some(RawBsonRef::String(x) | RawBsonRef::Symbol(x)) => tests
                .iter()
                .any(|(op, s)| cmp_holds(x.as_bytes().cmp(s.as_bytes()), *op)),
            Some(RawBsonRef::Array(_)) => return None,
            // Another type: type bracketing, no string matches it.
            Some(_) => false,
        };
        all &= holds;
    }
    Some(all)
}

/// The value at `path` in a raw document: `Some(None)` when the path is missing (or passes
/// through a scalar), `None` when it passes through an array or the bytes are bad.
fn raw_lookup<'a>(doc: &'a RawDocument, path: &[String]) -> Option<Option<RawBsonRef<'a>>> {
    let (last, parents) = path.split_last()?;
    let mut cur = doc;
    for p in parents {
        match cur.get(p).ok()? {
            Some(RawBsonRef::Document(d)) => cur = d,
            Some(RawBsonRef::Array(_)) => return None,
            Some(_) | None => return Some(None),
        }
    }
    cur.get(last).ok()
}

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

#[cfg(test)]
mod tests {
    use bson::{Bson, doc};
    use tscoll_catalog::BucketKey;

    use super::*;

    /// The raw matcher, when it decides, agrees with the filter on the decoded value; it
    /// decides every comparison of a sub-field with strings on documents without arrays.
    #[test]
    fn raw_meta_matches_agree_with_the_filter() {
        let metas = [
            None,
            Some(Bson::String("h1".into())),
            Some(Bson::Int32(3)),
            Some(Bson::Document(doc! {})),
            Some(Bson::Document(doc! { "host": "h1", "dc": "d0" })),
            Some(Bson::Document(doc! { "host": "h10", "n": 3 })),
            Some(Bson::Document(doc! { "host": 7, "sub": { "a": "x" } })),
            Some(Bson::Document(doc! { "host": ["h1", "h2"] })),
            Some(Bson::Document(doc! { "sub": { "a": "y", "b": ["x"] } })),
            Some(Bson::Document(doc! { "host": Bson::Symbol("h1".into()) })),
        ];
        let filters = [
            doc! { "m.host": "h1" },
            doc! { "m.host": { "$gt": "h1" } },
            doc! { "m.host": { "$lte": "h10" }, "m.dc": "d0" },
            doc! { "m.host": { "$in": ["h10", "h2"] } },
            doc! { "m.sub.a": "x" },
            doc! { "m.sub.b": "x" },
            doc! { "m.nope": "x" },
            doc! { "m.host": 7 },
            doc! { "m.host": Bson::Null },
            doc! { "m": "h1" },
            doc! { "m.host": "h1", "t": { "$gte": bson::DateTime::from_millis(0) } },
        ];
        for f in &filters {
            let filter = Filter::parse(f, "t", Some("m")).expect("filter");
            for meta in &metas {
                let bytes = BucketKey::from_meta(meta.as_ref()).bytes;
                let decoded = BucketKey::from_bytes(bytes.clone())
                    .meta_value()
                    .expect("meta");
                let want = filter.matches_meta(decoded.as_ref());
                let strings_only = f.iter().all(|(k, v)| {
                    k == "t"
                        || (k.starts_with("m.")
                            && match v {
                                Bson::String(_) => true,
                                Bson::Document(d) => d.values().all(|x| match x {
                                    Bson::String(_) => true,
                                    Bson::Array(a) => {
                                        a.iter().all(|y| matches!(y, Bson::String(_)))
                                    }
                                    _ => false,
                                }),
                                _ => false,
                            })
                });
                let has_array = matches!(meta, Some(Bson::Document(d)) if d.values().any(|v| matches!(v, Bson::Array(_)) || matches!(v, Bson::Document(s) if s.values().any(|x| matches!(x, Bson::Array(_))))));
                match meta_matches_raw(&filter, &bytes) {
                    Some(got) => assert_eq!(got, want, "{f} on {meta:?}"),
                    None => assert!(!strings_only || has_array, "undecided: {f} on {meta:?}"),
                }
            }
        }
    }
}
