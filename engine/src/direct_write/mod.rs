//! Stored buckets outside the insert path: listing them through the meta+time index, and the
//! direct writes that remove or rewrite a bucket (deletes, meta updates, TTL; SPEC §10, §11).
//!
//! Every direct write follows SPEC: the bucket is cleared from the catalog first
//! ([`BucketCatalog::direct_write_start`](tscoll_catalog::BucketCatalog::direct_write_start)
//! waits while a batch of it is being committed), the change is written in one atomic fjall
//! batch, then reopening is allowed again.

pub(crate) mod collmod;
pub(crate) mod delete;
pub(crate) mod rewrite;
pub(crate) mod ttl;
pub(crate) mod update;

use bson::Bson;
use tscoll_catalog::{BucketId, BucketKey};
use tscoll_codec::Column;

use crate::collection::CollectionInner;
use crate::error::Result;
use crate::mql::expr::EvalError;
use crate::mql::filter::Filter;
use crate::storage::IndexItem;
use crate::storage::bucket_write::{BucketWrite, Placement};
use crate::storage::control::Control;

/// One entry of the meta+time index: a stored bucket with its series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IndexEntry {
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// `control.min.<time>` (ms, rounded; SPEC §4.3).
    pub(crate) min_time: i64,
    /// The series: normalized meta bytes and their hash.
    pub(crate) key: BucketKey,
}

impl From<IndexItem> for IndexEntry {
    fn from(item: IndexItem) -> IndexEntry {
        let mut key = BucketKey::from_bytes(item.meta.to_vec());
        // The stored hash is authoritative (it is what the key sorts by).
        key.hash = item.hash;
        IndexEntry {
            id: item.id,
            min_time: item.min_time,
            key,
        }
    }
}

impl CollectionInner {
    /// Every stored bucket, in index order (series hash, then min time).
    ///
    /// # Errors
    /// [`Error::Storage`] when the scan fails.
    pub(crate) fn all_buckets(&self) -> Result<Vec<IndexEntry>> {
        let mut out = Vec::new();
        for item in self.store.index_entries() {
            out.push(IndexEntry::from(item?));
        }
        Ok(out)
    }

    /// The stored buckets whose min time is in `[lo, hi]` and whose series passes the meta
    /// predicates of `filter` (SPEC §14.2), each with its meta value, in index order: the
    /// buckets a delete or a meta update visits.
    ///
    /// # Errors
    /// [`Error::Storage`] when the scan fails; [`Error::Corruption`] for undecodable meta.
    pub(crate) fn buckets_matching_meta(
        &self,
        filter: &Filter,
        (lo, hi): (i64, i64),
    ) -> Result<Vec<(IndexEntry, Option<Bson>)>> {
        let mut out = Vec::new();
        for entry in self.all_buckets()? {
            if entry.min_time < lo || entry.min_time > hi {
                continue;
            }
            let meta = entry
                .key
                .meta_value()
                .map_err(|reason| self.store.corrupt_index(&entry.id, reason))?;
            if filter
                .try_matches_meta(meta.as_ref())
                .map_err(EvalError::into_query_error)?
            {
                out.push((entry, meta));
            }
        }
        Ok(out)
    }

    /// Runs `f` as a direct write of one stored bucket (SPEC ): the bucket is cleared
    /// from the catalog first (waiting while a batch of it is being committed), merges of it
    /// are held off, and reopening it is blocked until `f` returns. `f` must read the bucket
    /// itself, inside, so that no commit slips between its read and its write.
    pub(crate) fn direct_write<T>(
        &self,
        entry: &IndexEntry,
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        self.direct_write_all(std::slice::from_ref(entry), f)
    }

    /// [`CollectionInner::direct_write`] of several stored buckets at once, for a change that
    /// writes them in one atomic batch (an update, SPEC §11.2): each is cleared from the
    /// catalog, and their merge locks are taken in stripe order.
    pub(crate) fn direct_write_all<T>(
        &self,
        entries: &[IndexEntry],
        f: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        for entry in entries {
            self.catalog.direct_write_start(&entry.key, &entry.id);
        }
        let result = {
            let _gate = self
                .commit_gate
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Clearing the buckets from the catalog handed their unstored rows over: store
            // them, and wait for those another writer is storing, before `f` reads the
            // buckets.
            self.store_leaving()
                .and_then(|()| self.wait_stored(entries))
                .and_then(|()| {
                    let mut stripes: Vec<usize> =
                        entries.iter().map(|e| self.merge_stripe(&e.id)).collect();
                    stripes.sort_unstable();
                    stripes.dedup();
                    let _merges: Vec<_> = stripes
                        .iter()
                        .map(|s| {
                            self.merge_locks[*s]
                                .lock()
                                .unwrap_or_else(std::sync::PoisonError::into_inner)
                        })
                        .collect();
                    f()
                })
        };
        for entry in entries {
            self.catalog.direct_write_finish(&entry.key, &entry.id);
        }
        result
    }

    /// Waits until no rows of `entries` that left memory are on their way to storage
    /// ([`BucketCatalog::wait_stored`](tscoll_catalog::BucketCatalog::wait_stored)), storing
    /// the leaving parts itself now and then in case a writer gave one back after a failure.
    /// Holds no merge lock: the writer storing a part takes its bucket's.
    ///
    /// # Errors
    /// As [`CollectionInner::store_leaving`].
    fn wait_stored(&self, entries: &[IndexEntry]) -> Result<()> {
        const RETRY: std::time::Duration = std::time::Duration::from_millis(20);
        for entry in entries {
            while !self.catalog.wait_stored(&entry.key, &entry.id, RETRY) {
                self.store_leaving()?;
            }
        }
        Ok(())
    }

    fn merge_stripe(&self, id: &BucketId) -> usize {
        usize::from(id[11]) % self.merge_locks.len()
    }

    /// The lock serializing merges and direct writes of bucket `id`.
    pub(crate) fn merge_lock(&self, id: &BucketId) -> std::sync::MutexGuard<'_, ()> {
        self.merge_locks[self.merge_stripe(id)]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every segment of a bucket concatenated: `(rows, columns)` in `control.min` field order
    /// (the bucket's column order), a column missing from a segment filled with skips.
    pub(crate) fn read_columns(
        &self,
        id: &BucketId,
        control: &Control,
    ) -> Result<(usize, Vec<(String, Column)>)> {
        let segments = self.read_segments(id, &mut |_| true)?;
        Ok(concat_segments(&segments, control))
    }

    /// Removes a stored bucket whole (segments, control record, index entries) in one atomic
    /// batch. Call inside [`CollectionInner::direct_write`].
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn write_removal(
        &self,
        entry: &IndexEntry,
        control: Option<&Control>,
    ) -> Result<()> {
        let mut wb = self.store.batch();
        self.put_removal(&mut wb, entry, control)?;
        wb.commit("removing a bucket")
    }

    /// [`CollectionInner::write_removal`] added to a batch the caller commits.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn put_removal(
        &self,
        wb: &mut crate::storage::StoreBatch,
        entry: &IndexEntry,
        control: Option<&Control>,
    ) -> Result<()> {
        for seg in self.store.segment_numbers(&entry.id)? {
            self.store.remove_segment(wb, &entry.id, seg);
        }
        self.store.remove_control(wb, &entry.id);
        self.remove_bucket_rollups(wb, &entry.id);
        self.store
            .remove_index_entry(wb, entry.key.hash, entry.min_time, &entry.id);
        self.index_bucket_change(wb, &entry.id, &entry.key, control, None)?;
        self.retire(wb, &entry.id)
    }

    /// Replaces a stored bucket's rows by `columns` (`rows` rows, stored order kept) under the
    /// same `_id` (SPEC §11.1), with `control` recomputed by the caller (`old` is the control
    /// record before), added to a batch the caller commits. Call inside
    /// [`CollectionInner::direct_write`].
    ///
    /// # Errors
    /// [`Error::Codec`] when the columns cannot be encoded; [`Error::Storage`] when fjall fails.
    pub(crate) fn put_rewrite(
        &self,
        wb: &mut crate::storage::StoreBatch,
        entry: &IndexEntry,
        rows: usize,
        columns: &[(String, Column)],
        old: &Control,
        control: &Control,
    ) -> Result<()> {
        let refs: Vec<(&str, &Column)> = columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let blob = tscoll_codec::encode_bucket(rows, &refs)?;
        let mut control = control.clone();
        control.next_segment = 1;
        self.put_bucket(
            wb,
            BucketWrite {
                id: &entry.id,
                key: &entry.key,
                placement: Placement::Replace,
                rows,
                columns,
                segment_no: 0,
                blob: Some(blob),
                control: &control,
                previous: Some(old),
                new_to_store: false,
            },
        )?;
        self.retire(wb, &entry.id)
    }

    /// Adds to a direct write's batch the bucket's retirement marker: the rows the log holds
    /// of it up to here are all stored (the direct write stored them first) and no longer
    /// what the store holds, so recovery must not store them again (`docs/durability.md`).
    /// No record of the bucket is appended while the direct write runs, so every later one
    /// is past the marker.
    fn retire(&self, wb: &mut crate::storage::StoreBatch, id: &BucketId) -> Result<()> {
        self.store.put_retired(wb, id, self.wal.position()?);
        self.retired
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(*id);
        Ok(())
    }

    /// Removes the retirement markers given since the log last restarted (call after a
    /// restart: the log holds no row older than them). A marker left behind by a crash is
    /// harmless: log positions only grow.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn clear_retired(&self) -> Result<()> {
        let ids = std::mem::take(
            &mut *self
                .retired
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        if ids.is_empty() {
            return Ok(());
        }
        let mut wb = self.store.batch();
        for id in &ids {
            self.store.remove_retired(&mut wb, id);
        }
        wb.commit("removing retirement markers")
    }

    /// Adds to `wb` the move of a stored bucket to another series (a meta update, SPEC
    /// §11.2): its index entry and control record take the new meta; the column data does
    /// not hold the meta and stays. Call inside [`CollectionInner::direct_write_all`].
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn put_move(
        &self,
        wb: &mut crate::storage::StoreBatch,
        entry: &IndexEntry,
        old: &Control,
        new_key: &BucketKey,
    ) -> Result<()> {
        let mut control = old.clone();
        control.meta_hash = new_key.hash;
        self.store
            .remove_index_entry(wb, entry.key.hash, entry.min_time, &entry.id);
        self.store
            .put_index_entry(wb, new_key, entry.min_time, &entry.id)?;
        self.store.put_control(wb, &entry.id, control.encode());
        self.index_bucket_change(wb, &entry.id, &entry.key, Some(old), None)?;
        self.index_bucket_change(wb, &entry.id, new_key, None, Some(&control))?;
        self.retire(wb, &entry.id)
    }
}

/// Concatenates decoded segments into whole-bucket columns: `(rows, columns)` in
/// `control.min` field order, a column missing from a segment filled with skips.
pub(crate) fn concat_segments(
    segments: &[(u32, tscoll_codec::Bucket)],
    control: &Control,
) -> (usize, Vec<(String, Column)>) {
    let rows: usize = segments.iter().map(|(_, b)| b.row_count).sum();
    let mut merged = Vec::with_capacity(control.min.len());
    // Per segment, the column after the last one found: a segment keeps its columns in the
    // bucket's field order, so a lookup is usually one comparison.
    let mut next = vec![0usize; segments.len()];
    for name in control.min.keys() {
        let mut col = Column::with_capacity(rows);
        for ((_, seg), next) in segments.iter().zip(&mut next) {
            let found = match seg.columns.get(*next) {
                Some((n, _)) if n == name => Some(*next),
                _ => seg.columns.iter().position(|(n, _)| n == name),
            };
            match found {
                Some(i) => {
                    col.extend_from(&seg.columns[i].1);
                    *next = i + 1;
                }
                None => col.push_missing_n(seg.row_count),
            }
        }
        merged.push((name.clone(), col));
    }
    (rows, merged)
}
