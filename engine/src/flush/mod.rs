//! Storing the rows of open buckets (`docs/architecture.md`, write path). A commit only logs its
//! rows (`write/mod.rs`); a bucket is encoded and stored — blob, control record, index entry —
//! when it leaves memory. Before a direct write or a whole-store read sees the store, the
//! rows open buckets hold are stored as parts (queries read them in memory instead); a bucket leaving memory with every row in it is then
//! written as one blob, replacing its parts. A checkpoint records the rows still only in
//! memory in a new log file and drops the older files (`wal`).

mod checkpoint;
pub(crate) mod replay;

use std::collections::HashMap;
use std::sync::Arc;

use tscoll_catalog::{BucketId, BucketPart};
use tscoll_codec::{Column, encode_bucket};

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::storage::bucket_write::{BucketWrite, Placement};
use crate::storage::control::Control;

/// Blob bytes ingested at most in one table: the blobs of buckets leaving memory together are
/// encoded and ingested this many at a time (or 256 × `ingest_min_bytes` when that is less),
/// so storing many at once (a close, a checkpoint at high cardinality) holds a bounded part of
/// them in memory.
const INGEST_CHUNK_BYTES: u64 = 32 << 20;

/// Segments a bucket that leaves memory may keep: a bucket reopened and closed again (at
/// high cardinality under the memory threshold, once per measurement or so) stores its new
/// rows as one more segment and is merged into one blob only when it has been closed this
/// many times less one since its last merge, or when the collection is compacted or closed,
/// or many such buckets wait ([`MERGE_WAITING`]). After a restart the count starts again.
/// Merging at each close read, decoded and rewrote the whole bucket for every few rows.
pub(crate) const MERGE_SEGMENTS: u32 = 8;

/// Buckets waiting for their segments to be merged above which a checkpoint merges them.
pub(super) const MERGE_WAITING: usize = 1 << 16;

/// Where a part's blob comes from when it is stored.
enum Blob {
    /// Encode it from the part's columns.
    Encode,
    /// Encoded already: write it with the control record.
    Encoded(Vec<u8>),
    /// Written already, by an ingestion: only the control record and index entries remain.
    Ingested,
}

impl CollectionInner {
    /// Stores the rows of buckets that left memory (each under its bucket's merge lock).
    /// Buckets new to the store, stored whole, have their blobs ingested into one table (fjall's
    /// ingestion, no journal copy: the log already holds their rows) when together they reach
    /// [`crate::LogOptions::ingest_min_bytes`], and so are their index entries and control
    /// records ([`CollectionInner::ingest_fresh`]), at most [`INGEST_CHUNK_BYTES`] of blobs
    /// at a time; smaller groups go through the journal, so a bucket closing alone does not
    /// make a table of its own.
    /// Parts that fail to store go back to the catalog's queue, to be stored by the next
    /// writer or the next checkpoint.
    ///
    /// # Errors
    /// The first failure ([`Error::Storage`], [`Error::Codec`]).
    pub(crate) fn store_leaving(&self) -> Result<()> {
        let (fresh, others): (Vec<Arc<BucketPart>>, Vec<Arc<BucketPart>>) = self
            .catalog
            .take_leaving()
            .into_iter()
            .partition(|p| is_fresh_whole(p));
        let mut fresh = fresh.into_iter();
        let min_bytes = self.log_options.ingest_min_bytes;
        let chunk_bytes = min_bytes.saturating_mul(256).clamp(1, INGEST_CHUNK_BYTES);
        let give_back =
            |stored: Vec<Arc<BucketPart>>, fresh: std::vec::IntoIter<Arc<BucketPart>>, others| {
                let mut back = stored;
                back.extend(fresh);
                back.extend(others);
                self.catalog.return_leaving(back);
            };
        loop {
            // The blobs of the next fresh buckets, up to `chunk_bytes` at a time: a close of
            // many series does not hold every blob at once.
            let mut chunk: Vec<(Arc<BucketPart>, Vec<u8>)> = Vec::new();
            let mut bytes = 0u64;
            while bytes < chunk_bytes {
                let Some(part) = fresh.next() else { break };
                match encode_part(&part) {
                    Ok(blob) => {
                        bytes += blob.len() as u64;
                        chunk.push((part, blob));
                    }
                    Err(e) => {
                        let mut back: Vec<Arc<BucketPart>> =
                            chunk.into_iter().map(|(p, _)| p).collect();
                        back.push(part);
                        give_back(back, fresh, others);
                        return Err(e);
                    }
                }
            }
            if chunk.is_empty() {
                break;
            }
            let queue = if bytes >= min_bytes {
                let whole = !self.has_secondary_indexes();
                let (parts, blobs): (Vec<Arc<BucketPart>>, Vec<Vec<u8>>) =
                    chunk.into_iter().unzip();
                if let Err(e) = self.ingest_fresh(&parts, blobs, whole) {
                    give_back(parts, fresh, others);
                    return Err(e);
                }
                if whole {
                    for part in &parts {
                        self.catalog.stored(&part.key, &part.id);
                    }
                    continue;
                }
                parts.into_iter().map(|p| (p, Blob::Ingested)).collect()
            } else {
                chunk
                    .into_iter()
                    .map(|(p, b)| (p, Blob::Encoded(b)))
                    .collect()
            };
            if let Err((e, back)) = self.store_each(queue) {
                give_back(back, fresh, others);
                return Err(e);
            }
        }
        let queue = others.into_iter().map(|p| (p, Blob::Encode)).collect();
        self.store_each(queue).map_err(|(e, back)| {
            self.catalog.return_leaving(back);
            e
        })
    }

    /// Stores parts one by one, each under its bucket's merge lock. On a failure, returns it
    /// with the parts not stored.
    fn store_each(
        &self,
        queue: Vec<(Arc<BucketPart>, Blob)>,
    ) -> std::result::Result<(), (Error, Vec<Arc<BucketPart>>)> {
        let mut queue = queue.into_iter();
        while let Some((part, blob)) = queue.next() {
            let stored = {
                let _serialized = self.merge_lock(&part.id);
                self.store_part_blob_locked(&part, blob)
            };
            if let Err(e) = stored {
                let mut back = vec![part];
                back.extend(queue.map(|(p, _)| p));
                return Err((e, back));
            }
            self.catalog.stored(&part.key, &part.id);
        }
        Ok(())
    }

    /// Ingests `blobs`, those of buckets new to the store (`fresh`, whole, in the same order),
    /// moved rather than copied, into one table of the data keyspace; with `whole`, also their
    /// index entries and then their control records, each into one table, so that nothing of them goes through fjall's journal. Control
    /// records come last: they make the buckets visible (reads skip an index entry whose
    /// bucket has no control record). A crash on the way leaves what recovery writes again
    /// from the log, under the same keys. Without `whole` (the collection has secondary
    /// indexes), the control records and index entries are then written in batches.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    fn ingest_fresh(
        &self,
        fresh: &[Arc<BucketPart>],
        blobs: Vec<Vec<u8>>,
        whole: bool,
    ) -> Result<()> {
        let segments = fresh
            .iter()
            .zip(blobs)
            .map(|(p, b)| (p.id, p.segment_no, b));
        self.store.ingest_segments(segments)?;
        if whole {
            // Rollups before control records: a crash between them leaves rollups that
            // recovery writes again, under the same keys, with the bucket.
            if self.has_rollups() {
                let rows = fresh.iter().flat_map(|p| {
                    self.rollups_of_rows(p.rows, &p.columns)
                        .into_iter()
                        .map(move |(res, rollup)| (res, p.id, rollup))
                });
                self.store.ingest_rollups(rows)?;
            }
            let entries = fresh.iter().map(|p| (&*p.key, p.min_time, p.id));
            self.store.ingest_index_entries(entries)?;
            let controls = fresh
                .iter()
                .map(|p| (p.id, Control::of_part(p).encode()))
                .collect();
            self.store.ingest_controls(controls)?;
        }
        Ok(())
    }

    /// Stores every row open buckets hold, as parts (they stay open), so that the store holds
    /// every acknowledged measurement: called before reads and direct writes.
    ///
    /// # Errors
    /// As [`CollectionInner::store_leaving`].
    pub(crate) fn flush_open(&self) -> Result<()> {
        let _gate = self
            .commit_gate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.store_leaving()?;
        for (key, id) in self.catalog.unstored() {
            let _serialized = self.merge_lock(&id);
            let Some(part) = self.catalog.take_unstored(&key, &id) else {
                continue;
            };
            if let Err(e) = self.store_part_locked(&part) {
                self.catalog.untake(&part);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Writes one part in one atomic batch: its rows as segment `part.segment_no` (replacing
    /// every stored segment when the part holds the whole bucket), the control record, the
    /// index entry of a bucket new to the store and the secondary index entries. A closing
    /// part of a bucket with earlier segments is then merged with them. The caller holds the
    /// bucket's merge lock.
    pub(crate) fn store_part_locked(&self, part: &BucketPart) -> Result<()> {
        self.store_part_blob_locked(part, Blob::Encode)
    }

    /// [`CollectionInner::store_part_locked`] with the part's blob encoded or ingested
    /// already.
    fn store_part_blob_locked(&self, part: &BucketPart, blob: Blob) -> Result<()> {
        let secondary = self.has_secondary_indexes();
        let previous = if part.stored_before == 0 || !secondary {
            None
        } else {
            self.control(&part.id)?
        };
        let control = Control::of_part(part);
        let mut wb = self.store.batch();
        let (placement, blob) = match blob {
            Blob::Encode if part.rows > 0 => (placement_of(part), Some(encode_part(part)?)),
            Blob::Encode => (placement_of(part), None),
            Blob::Encoded(blob) => (placement_of(part), Some(blob)),
            // An ingested blob is the bucket's only segment already.
            Blob::Ingested => (Placement::New, None),
        };
        self.put_bucket(
            &mut wb,
            BucketWrite {
                id: &part.id,
                key: &part.key,
                placement,
                rows: part.rows,
                columns: &part.columns,
                segment_no: part.segment_no,
                blob,
                control: &control,
                previous: previous.as_ref(),
                new_to_store: part.stored_before == 0,
            },
        )?;
        wb.commit("storing a bucket")?;
        if part.closing && part.first_row > 0 {
            // Segments since the bucket was last merged (as far as this process knows):
            // the one it had, and one per close since.
            let due = {
                let mut waiting = lock_unmerged(&self.unmerged);
                let closes = waiting.entry(part.id).or_insert(0);
                *closes += 1;
                let due = *closes + 1 >= MERGE_SEGMENTS;
                if due {
                    waiting.remove(&part.id);
                }
                due
            };
            if due {
                self.merge_bucket_locked(&part.id)?;
            }
        }
        Ok(())
    }

    /// Merges the segments of the buckets that left memory in several (each under its merge
    /// lock), when more than `more_than` wait. On a failure the buckets not merged wait for
    /// the next call.
    ///
    /// # Errors
    /// As [`CollectionInner::merge_bucket_locked`].
    pub(crate) fn merge_waiting(&self, more_than: usize) -> Result<()> {
        let ids: Vec<BucketId> = {
            let mut waiting = lock_unmerged(&self.unmerged);
            if waiting.len() <= more_than {
                return Ok(());
            }
            waiting.drain().map(|(id, _)| id).collect()
        };
        for (k, id) in ids.iter().enumerate() {
            let merged = {
                let _serialized = self.merge_lock(id);
                self.merge_bucket_locked(id)
            };
            if let Err(e) = merged {
                lock_unmerged(&self.unmerged).extend(ids[k..].iter().map(|id| (*id, 1)));
                return Err(e);
            }
        }
        Ok(())
    }

    /// Adds to `wb` a whole bucket new to the store (a part holding every row of a bucket
    /// never stored, e.g. one an update placed, SPEC §11.2): its blob, control record, index
    /// entry and secondary index entries.
    ///
    /// # Errors
    /// [`Error::Codec`] when the rows cannot be encoded; [`Error::Storage`].
    pub(crate) fn put_fresh_bucket(
        &self,
        wb: &mut crate::storage::StoreBatch,
        part: &BucketPart,
    ) -> Result<()> {
        debug_assert!(is_fresh_whole(part), "a fresh whole bucket");
        self.put_bucket(
            wb,
            BucketWrite {
                id: &part.id,
                key: &part.key,
                placement: Placement::New,
                rows: part.rows,
                columns: &part.columns,
                segment_no: part.segment_no,
                blob: Some(encode_part(part)?),
                control: &Control::of_part(part),
                previous: None,
                new_to_store: true,
            },
        )
    }

    /// Merges a bucket's segments into one blob, written under the last segment's number.
    /// The caller holds the bucket's merge lock: a bucket may be reopened, continued and
    /// closed again by another writer, and two merges reading different segment sets would
    /// each write a blob (duplicating rows).
    pub(crate) fn merge_bucket_locked(&self, id: &BucketId) -> Result<()> {
        let Some(control) = self.control(id)? else {
            return Ok(());
        };
        let segments = self.read_segments(id, &mut |_| true)?;
        if segments.len() <= 1 {
            return Ok(());
        }
        let (rows, merged) = crate::direct_write::concat_segments(&segments, &control);
        let refs: Vec<(&str, &Column)> = merged.iter().map(|(n, c)| (n.as_str(), c)).collect();
        let blob = encode_bucket(rows, &refs)?;
        let last = segments.last().map_or(0, |(s, _)| *s);
        let mut wb = self.store.batch();
        for (seg, _) in &segments {
            if *seg != last {
                self.store.remove_segment(&mut wb, id, *seg);
            }
        }
        self.store.put_segment(&mut wb, id, last, blob);
        wb.commit("merging bucket segments")
    }

    /// Reads and decodes every segment of a bucket (projected), in segment order.
    pub(crate) fn read_segments(
        &self,
        id: &BucketId,
        keep: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Vec<(u32, tscoll_codec::Bucket)>> {
        let mut out = Vec::new();
        for (seg, blob) in self.store.segments(id)? {
            out.push((seg, tscoll_codec::decode_bucket_projected(&blob, keep)?));
        }
        Ok(out)
    }
}

/// The set of buckets waiting for a merge, even after a panic elsewhere.
fn lock_unmerged(
    m: &std::sync::Mutex<HashMap<BucketId, u32>>,
) -> std::sync::MutexGuard<'_, HashMap<BucketId, u32>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether `part` is a whole bucket new to the store (no segment, control record or index
/// entry stored before): its blob may be ingested ahead of its control record, which alone
/// makes it visible.
fn is_fresh_whole(part: &BucketPart) -> bool {
    part.stored_before == 0 && part.first_row == 0 && part.segment_no == 0 && part.rows > 0
}

/// Where a part's rows go: a part holding every row of its bucket replaces what the store
/// holds of it.
fn placement_of(part: &BucketPart) -> Placement {
    if part.first_row == 0 {
        Placement::Replace
    } else {
        Placement::Append
    }
}

/// The blob of a part's rows.
fn encode_part(part: &BucketPart) -> Result<Vec<u8>> {
    let refs: Vec<(&str, &Column)> = part.columns.iter().map(|(n, c)| (n.as_str(), c)).collect();
    Ok(encode_bucket(part.rows, &refs)?)
}

#[cfg(test)]
mod tests {
    use bson::{DateTime, Document, doc};

    use super::MERGE_SEGMENTS;
    use crate::{
        Collection, Database, DatabaseOptions, FindOptions, InsertOptions, TimeseriesOptions,
    };

    /// The segments each stored bucket has, by bucket, in `_id` order.
    fn segment_counts(coll: &Collection) -> Vec<usize> {
        let inner = &coll.inner;
        inner
            .all_buckets()
            .expect("index")
            .iter()
            .map(|e| inner.store.segments(&e.id).expect("segments").len())
            .collect()
    }

    fn values(coll: &Collection) -> Vec<i64> {
        let mut v: Vec<i64> = coll
            .find(&doc! {}, &FindOptions::default())
            .expect("find")
            .iter()
            .map(|d| d.get_i64("v").expect("v"))
            .collect();
        v.sort_unstable();
        v
    }

    /// Inserts rows `rows` of series `s`, one commit each, alternating between hour 1 (even
    /// rows) and hour 0: going back in time archives the other hour's bucket and coming back
    /// reopens it, so each row closes a reopened bucket, which stores its new row as one more
    /// segment. After each, every row inserted so far reads back and every bucket has fewer
    /// than [`MERGE_SEGMENTS`] segments. Returns the most segments a bucket had.
    fn alternate(coll: &Collection, rows: std::ops::Range<i64>, inserted: &mut Vec<i64>) -> usize {
        let hour = 3_600_000;
        let mut most = 0;
        for i in rows {
            let t = if i % 2 == 0 { hour } else { 0 } + i * 1000;
            let d: Document = doc! { "t": DateTime::from_millis(t), "m": "s", "v": i };
            coll.insert_many(std::slice::from_ref(&d), &InsertOptions::default())
                .expect("insert");
            inserted.push(i);
            assert_eq!(values(coll), *inserted, "after {i}");
            let counts = segment_counts(coll);
            assert!(
                counts.iter().all(|&n| n < MERGE_SEGMENTS as usize),
                "{counts:?}"
            );
            most = most.max(counts.iter().copied().max().unwrap_or(0));
        }
        most
    }

    #[test]
    fn buckets_closed_again_keep_segments_until_many_or_close() {
        let dir = tempfile::tempdir().expect("tempdir");
        let open = || {
            let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
            let coll = db
                .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
                .or_else(|_| db.collection("c"))
                .expect("collection");
            (db, coll)
        };
        let m = i64::from(MERGE_SEGMENTS);
        let mut inserted = Vec::new();
        let (db, coll) = open();
        // Segments are kept, up to one short of the bound; closing merges them.
        assert_eq!(
            alternate(&coll, 0..2 * m - 2, &mut inserted),
            MERGE_SEGMENTS as usize - 1
        );
        assert!(coll.stats().expect("stats").execution.num_buckets_reopened > 4);
        db.close().expect("close");
        assert_eq!(segment_counts(&coll), vec![1, 1]);
        drop((coll, db));
        // Past the bound a bucket is merged as it closes (`alternate` checks the bound).
        let (db, coll) = open();
        assert_eq!(values(&coll), inserted);
        assert_eq!(
            alternate(&coll, 2 * m..4 * m + 2, &mut inserted),
            MERGE_SEGMENTS as usize - 1
        );
        coll.compact().expect("compact");
        assert_eq!(segment_counts(&coll), vec![1, 1]);
        assert_eq!(values(&coll), inserted);
        drop((coll, db));
    }
}
