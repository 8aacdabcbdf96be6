//! Storing the rows of open buckets (`docs/architecture.md`, write path). A commit only logs its
//! rows (`write/mod.rs`); a bucket is encoded and stored — blob, control record, index entry —
//! when it leaves memory. Before a direct write or a whole-store read sees the store, the
//! rows open buckets hold are stored as parts (queries read them in memory instead); a bucket leaving memory with every row in it is then
//! written as one blob, replacing its parts. A checkpoint records the rows still only in
//! memory in a new log file and drops the older files (`wal`).

mod checkpoint;
pub(crate) mod replay;

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
            self.merge_bucket_locked(&part.id)?;
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
