//! What a read adds to the store: the rows open buckets hold that are not stored yet
//! (`docs/architecture.md`, write path: a commit only logs its rows). A query takes a
//! [`MemoryView`] when it starts — a copy of the unstored rows of the open buckets it may
//! need, and the rows of the buckets that left memory and are being stored, each bucket with
//! its control state — and reads through a [`Reader`], which combines the view with fjall
//! wherever buckets are read: candidates, control records and segments. A read writes
//! nothing.
//!
//! A bucket's rows are numbered from 0 in the order they were committed; the store holds a
//! prefix of them (the parts stored so far) and the view the rows from its first unstored
//! one on. A reader appends the view's rows past the ones the store returned, and takes the
//! view's control record unless the store's counts as many rows: a bucket stored while the
//! query runs is read once, from whichever side has it.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;
use std::sync::Arc;

use tscoll_catalog::{BucketId, BucketKey, BucketPart};
use tscoll_codec::Bucket;

use super::QueryStats;
use super::control_view::ControlBytes;
use super::plan::{Candidate, Candidates, Plan, Series, meta_matches_raw};
use crate::collection::CollectionInner;
use crate::error::Result;
use crate::mql::expr::EvalError;
use crate::storage::control::Control;

/// The unstored rows of the open buckets a query may read, copied when it starts.
#[derive(Default)]
pub(crate) struct MemoryView {
    buckets: HashMap<BucketId, MemoryBucket>,
    /// The catalog's [`BucketCatalog::clears`](tscoll_catalog::BucketCatalog::clears) before
    /// the rows were copied.
    clears: u64,
}

/// One bucket's rows not stored yet (an open bucket's, or those of a bucket that left
/// memory and is being stored) and its control state after them.
pub(crate) struct MemoryBucket {
    /// The rows, from position `part.first_row` of the bucket on.
    part: Arc<BucketPart>,
    /// The bucket's control record as it would be stored now.
    control: fjall::Slice,
}

impl MemoryView {
    /// Takes the rows not stored yet of the buckets whose series and min time `plan` may
    /// select ([`BucketCatalog::memory_rows`](tscoll_catalog::BucketCatalog::memory_rows):
    /// open buckets' copied, the time column and the columns `reads` accepts; those of
    /// buckets leaving memory shared). Meta predicates are checked on the series' bytes
    /// where they decide alone; [`Reader::candidates`] checks the rest.
    pub(crate) fn capture(
        inner: &CollectionInner,
        plan: &Plan,
        reads: &dyn Fn(&str) -> bool,
    ) -> MemoryView {
        let Some((lo, hi)) = plan.min_time_bounds() else {
            return MemoryView::default();
        };
        let clears = inner.catalog.clears();
        let meta_preds = plan.filter.has_meta_preds();
        let time_field = plan.spec.time_field.as_str();
        let parts = inner.catalog.memory_rows(
            &mut |key, min_time, _| {
                (lo..=hi).contains(&min_time)
                    && (!meta_preds || meta_matches_raw(&plan.filter, &key.bytes) != Some(false))
            },
            &mut |name| name == time_field || reads(name),
        );
        MemoryView::of_parts(parts, clears)
    }

    fn of_parts(parts: Vec<Arc<BucketPart>>, clears: u64) -> MemoryView {
        let buckets = parts
            .into_iter()
            .map(|part| {
                let control = fjall::Slice::from(Control::of_part(&part).encode());
                (part.id, MemoryBucket { part, control })
            })
            .collect();
        MemoryView { buckets, clears }
    }

    /// Whether no open bucket is in the view.
    pub(crate) fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The view's bucket `id`.
    pub(crate) fn get(&self, id: &BucketId) -> Option<&MemoryBucket> {
        self.buckets.get(id)
    }

    /// Drops bucket `id` from the view (a cursor that has read it).
    pub(crate) fn remove(&mut self, id: &BucketId) {
        self.buckets.remove(id);
    }

    /// Every bucket of the view, with its `_id`.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&BucketId, &MemoryBucket)> {
        self.buckets.iter()
    }
}

impl MemoryBucket {
    /// The series.
    pub(crate) fn key(&self) -> &BucketKey {
        &self.part.key
    }

    /// `control.min.<time>` (rounded, ms): where the bucket's index entry sorts.
    pub(crate) fn min_time(&self) -> i64 {
        self.part.min_time
    }

    /// The control record to read, given the store's (`None`: not stored): the view's
    /// unless the store's counts at least as many rows (stored while the query ran).
    fn control(&self, stored: Option<ControlBytes>) -> ControlBytes {
        match stored {
            Some(c)
                if c.view()
                    .is_ok_and(|v| v.count >= u64::from(self.part.count)) =>
            {
                c
            }
            _ => ControlBytes::from_slice(self.control.clone()),
        }
    }

    /// Appends to `segments` (the bucket's stored segments, decoded) the view's rows past
    /// the ones they hold, with the columns `keep` accepts.
    fn append_to(&self, segments: &mut Vec<Bucket>, keep: &mut dyn FnMut(&str) -> bool) {
        let stored: usize = segments.iter().map(|s| s.row_count).sum();
        let skip = stored.saturating_sub(self.part.first_row as usize);
        if skip >= self.part.rows {
            return;
        }
        let columns = self
            .part
            .columns
            .iter()
            .filter(|(name, _)| keep(name))
            .map(|(name, c)| {
                let c = if skip == 0 { c.clone() } else { c.tail(skip) };
                (name.clone(), c)
            })
            .collect();
        segments.push(Bucket {
            row_count: self.part.rows - skip,
            columns,
        });
    }
}

/// One query's reads: the collection's store combined with the [`MemoryView`] taken when the
/// query began. Dereferences to the collection for everything else.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    inner: &'a CollectionInner,
    memory: &'a MemoryView,
}

impl Deref for Reader<'_> {
    type Target = CollectionInner;

    fn deref(&self) -> &CollectionInner {
        self.inner
    }
}

impl<'a> Reader<'a> {
    /// Reads `inner` with `memory`.
    pub(crate) fn new(inner: &'a CollectionInner, memory: &'a MemoryView) -> Reader<'a> {
        Reader { inner, memory }
    }

    /// The open buckets' rows the query reads besides the store.
    pub(crate) fn memory(&self) -> &'a MemoryView {
        self.memory
    }

    /// The view's rows of bucket `id`, unless a direct write may have changed the bucket
    /// since they were copied (SPEC clears it from the catalog: then the bucket is
    /// read from the store alone, unless it is open again).
    fn memory_bucket(&self, id: &BucketId) -> Option<&'a MemoryBucket> {
        let m = self.memory.get(id)?;
        let catalog = &self.inner.catalog;
        (catalog.clears() == self.memory.clears || catalog.is_open(m.key(), id)).then_some(m)
    }

    /// The control record of a bucket, or `None` when the bucket is gone (removed after the
    /// index was scanned).
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) when fjall fails.
    pub(crate) fn control_bytes(&self, id: &BucketId) -> Result<Option<ControlBytes>> {
        let stored = self.inner.stored_control_bytes(id)?;
        Ok(match self.memory_bucket(id) {
            Some(m) => Some(m.control(stored)),
            None => stored,
        })
    }

    /// Calls `f(i, control)` for every `ids[i]` that has a control record: the stored ones in
    /// id order ([`CollectionInner::for_each_stored_control`]), then those only in memory.
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) when fjall fails, or what `f` returns.
    pub(crate) fn for_each_control(
        &self,
        ids: &[BucketId],
        dense: bool,
        f: &mut dyn FnMut(usize, ControlBytes) -> Result<()>,
    ) -> Result<()> {
        if self.memory.is_empty() {
            return self.inner.for_each_stored_control(ids, dense, f);
        }
        let mut seen = HashSet::new();
        self.inner
            .for_each_stored_control(ids, dense, &mut |i, c| match self.memory_bucket(&ids[i]) {
                Some(m) => {
                    seen.insert(i);
                    f(i, m.control(Some(c)))
                }
                None => f(i, c),
            })?;
        for (i, id) in ids.iter().enumerate() {
            if !seen.contains(&i)
                && let Some(m) = self.memory_bucket(id)
            {
                f(i, m.control(None))?;
            }
        }
        Ok(())
    }

    /// Calls `f(i, segments)` for every `ids[i]` with its segments decoded (the time column
    /// and the columns `keep` accepts) and its rows in memory after them: the stored buckets
    /// in id order, then those only in memory.
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) or [`Error::Codec`](crate::Error::Codec)
    /// when a segment cannot be read, or what `f` returns.
    pub(crate) fn for_each_bucket(
        &self,
        ids: &[BucketId],
        dense: bool,
        keep: &mut dyn FnMut(&str) -> bool,
        f: &mut dyn FnMut(usize, Vec<Bucket>) -> Result<()>,
    ) -> Result<()> {
        if self.memory.is_empty() {
            return self.inner.for_each_stored_bucket(ids, dense, keep, f);
        }
        let time_field = self.inner.spec().time_field;
        // The columns of the view's buckets to keep, asked once per name.
        let mut kept: HashMap<&str, bool> = HashMap::new();
        for id in ids {
            if let Some(m) = self.memory_bucket(id) {
                for (name, _) in &m.part.columns {
                    kept.entry(name.as_str())
                        .or_insert_with(|| name == &time_field || keep(name));
                }
            }
        }
        let mut keep_kept = |n: &str| kept.get(n).copied().unwrap_or(false);
        let mut seen = HashSet::new();
        self.inner
            .for_each_stored_bucket(ids, dense, keep, &mut |i, mut segments| {
                if let Some(m) = self.memory_bucket(&ids[i]) {
                    seen.insert(i);
                    m.append_to(&mut segments, &mut keep_kept);
                }
                f(i, segments)
            })?;
        for (i, id) in ids.iter().enumerate() {
            if !seen.contains(&i)
                && let Some(m) = self.memory_bucket(id)
            {
                let mut segments = Vec::new();
                m.append_to(&mut segments, &mut keep_kept);
                f(i, segments)?;
            }
        }
        Ok(())
    }

    /// Every segment of a bucket, decoded (the columns `keep` accepts), then its rows in
    /// memory.
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) or [`Error::Codec`](crate::Error::Codec)
    /// when a segment cannot be read.
    pub(crate) fn bucket_segments(
        &self,
        id: &BucketId,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Vec<Bucket>> {
        let mut segments: Vec<Bucket> = self
            .inner
            .read_segments(id, keep)?
            .into_iter()
            .map(|(_, b)| b)
            .collect();
        if let Some(m) = self.memory_bucket(id) {
            m.append_to(&mut segments, keep);
        }
        Ok(segments)
    }

    /// The candidate buckets of `plan` ([`CollectionInner::stored_candidates`]) with the
    /// view's buckets that pass its meta predicates added, all in index order (series hash,
    /// then min time).
    ///
    /// # Errors
    /// As [`CollectionInner::stored_candidates`]; [`Error::Corruption`](crate::Error::Corruption)
    /// when a series' meta value does not read.
    pub(crate) fn candidates(&self, plan: &Plan, stats: &mut QueryStats) -> Result<Candidates> {
        let mut cands = self.inner.stored_candidates(plan, stats)?;
        if self.memory.is_empty() {
            return Ok(cands);
        }
        let listed: HashSet<BucketId> = cands
            .buckets
            .iter()
            .filter(|c| self.memory.get(&c.id).is_some())
            .map(|c| c.id)
            .collect();
        // The series the index listed (some rejected by the meta predicates) by key.
        let mut listed_series: HashMap<(u64, Vec<u8>), usize> = HashMap::new();
        for (i, s) in cands.series.iter().enumerate() {
            listed_series.insert((s.hash, s.bytes.clone()), i);
        }
        // Each series of the view: its position in `cands.series`, `None` when rejected.
        let mut series_of: HashMap<(u64, &[u8]), Option<usize>> = HashMap::new();
        let mut added = false;
        let mut fresh: Vec<(&BucketId, &MemoryBucket)> = self
            .memory
            .iter()
            .filter(|(id, _)| !listed.contains(*id))
            .collect();
        fresh.sort_unstable_by_key(|(id, _)| **id);
        for (id, m) in fresh {
            let series_key = (m.key().hash, m.key().bytes.as_slice());
            let series = match series_of.get(&series_key) {
                Some(&s) => s,
                None => {
                    let position = match listed_series.get(&(m.key().hash, m.key().bytes.clone())) {
                        Some(&s) => s,
                        None => {
                            cands
                                .series
                                .push(Series::new(m.key().bytes.clone(), m.key().hash));
                            cands.series.len() - 1
                        }
                    };
                    let s = &cands.series[position];
                    let matches = !plan.filter.has_meta_preds()
                        || plan
                            .filter
                            .try_matches_meta(s.meta(self)?)
                            .map_err(EvalError::into_query_error)?;
                    let series = matches.then_some(position);
                    series_of.insert(series_key, series);
                    series
                }
            };
            let Some(series) = series else {
                continue;
            };
            cands.buckets.push(Candidate {
                id: *id,
                min_time: m.min_time(),
                series,
            });
            added = true;
        }
        if added {
            let series = &cands.series;
            cands
                .buckets
                .sort_by_key(|c| (series[c.series].hash, c.min_time, c.id));
            // `in_range` still estimates the stored buckets in the candidates' id range,
            // which decides whether the stored ones are read by a scan.
        }
        Ok(cands)
    }

    /// Decodes every segment of a bucket and its rows in memory, with the time column and the
    /// columns `keep` accepts; counts the bucket as unpacked.
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) or [`Error::Codec`](crate::Error::Codec)
    /// when a segment cannot be read.
    pub(crate) fn decode_bucket(
        &self,
        id: &BucketId,
        keep: &mut dyn FnMut(&str) -> bool,
        stats: &mut QueryStats,
    ) -> Result<Vec<Bucket>> {
        let time_field = self.inner.spec().time_field;
        stats.buckets_unpacked += 1;
        self.bucket_segments(id, &mut |n| n == time_field || keep(n))
    }

    /// Decodes only the last segment of a bucket (where a time-sorted bucket keeps its latest
    /// measurement), or its rows in memory when it has some; counts the bucket as unpacked.
    ///
    /// # Errors
    /// As [`Reader::decode_bucket`].
    pub(crate) fn decode_last_segment(
        &self,
        id: &BucketId,
        stats: &mut QueryStats,
    ) -> Result<Option<Bucket>> {
        if self.memory_bucket(id).is_some() {
            let mut segments = self.decode_bucket(id, &mut |_| true, stats)?;
            return Ok(segments.pop());
        }
        self.inner.decode_last_segment(id, stats)
    }
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, doc};

    use crate::{
        AggregateSpec, Database, DatabaseOptions, FindOptions, InsertOptions, TimeseriesOptions,
    };

    #[test]
    fn queries_read_rows_in_memory_without_storing_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
        let coll = db
            .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
            .expect("create");
        let docs: Vec<_> = (0..50_i64)
            .map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": i % 3, "v": i })
            .collect();
        coll.insert_many(&docs, &InsertOptions::default())
            .expect("insert");
        let unstored = coll.inner.catalog.unstored_rows();
        assert_eq!(unstored.iter().map(|p| p.rows).sum::<usize>(), 50);

        let all = coll.find(&doc! {}, &FindOptions::default()).expect("find");
        assert_eq!(all.len(), 50);
        assert_eq!(coll.count(&doc! { "m": 1 }).expect("count"), 17);
        let last = coll.last_points(&doc! {}).expect("last");
        assert_eq!(last.len(), 3);
        assert_eq!(last[2].get_i64("v").expect("v"), 47);
        let spec = AggregateSpec {
            window_ms: 3_600_000,
            by_series: false,
            outputs: vec![("n".into(), crate::Accumulator::Count)],
        };
        let groups = coll.aggregate_windows(&doc! {}, &spec).expect("aggregate");
        assert_eq!(groups[0].get_i64("n").expect("n"), 50);
        let rows: usize = coll
            .find_arrow(
                &doc! { "m": 2 },
                &FindOptions::default(),
                &crate::ArrowOptions::default(),
            )
            .expect("arrow")
            .map(|b| b.expect("batch").num_rows())
            .sum();
        assert_eq!(rows, 16);

        // Nothing was stored: the rows are still unstored, and the store has no bucket.
        assert_eq!(coll.inner.catalog.unstored_rows(), unstored);
        for part in &unstored {
            assert!(coll.inner.store.control(&part.id).expect("read").is_none());
        }
    }
}
