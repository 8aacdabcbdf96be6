//! Persistence of a collection's buckets: the one module that owns its keyspaces (bucket
//! segments, control records, the meta+time index), builds and parses their keys
//! ([`keys`], `docs/keys.md`) and reads and writes bucket records. The write path, the
//! queries, the direct writes (TTL, deletes, updates) and the tools (verify, salvage) reach
//! stored buckets through [`BucketStore`]; none of them touches a keyspace or a key's bytes.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `c{id}_data` | bucket id (12) ‖ segment number (4, BE) | bucket blob (`docs/format.md`) |
//! | `c{id}_ctl` | bucket id (12) | control record (BSON) |
//! | `c{id}_ctl` | bucket id (12) ‖ `00` | retirement marker: a log position (16) |
//! | `c{id}_idx` | meta hash (8, BE) | series record: flags (1) ‖ normalized meta bytes |
//! | `c{id}_idx` | meta hash (8, BE) ‖ min time (8) ‖ bucket id (12) | `00` (the series record's meta) or normalized meta bytes |
//! | `c{id}_rollup` | resolution (8, BE) ‖ bucket id (12) ‖ window start (8) | a window's rollup (`docs/format.md`), only with rollups |
//!
//! Keyspace options (fixed when a keyspace is created): LZ4 on every level and no bloom
//! filter for blobs, in 64 KiB blocks; LZ4 on every level for control records and index
//! entries.

mod batch;
pub(crate) mod bucket_write;
pub(crate) mod collection_records;
pub(crate) mod control;
pub(crate) mod fjall_journal;
pub(crate) mod keys;
pub(crate) mod keyspaces;
pub(crate) mod rollup_write;
mod rollups;

use std::collections::HashMap;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, PoisonError};

use fjall::{Keyspace, KeyspaceCreateOptions, Slice};
use tscoll_catalog::{BucketId, BucketKey};

use crate::error::{Error, Result};
use crate::wal::LogPosition;
pub(crate) use batch::StoreBatch;
use keys::{
    SAME_AS_SERIES_RECORD, data_key, hex, index_key, keyspace_names, parse_data_key,
    parse_index_key, parse_series_record, parse_series_record_key, retired_key, series_record_key,
    series_record_value,
};

/// The stored buckets of one collection: three keyspaces of one fjall database.
#[derive(Clone)]
pub(crate) struct BucketStore {
    /// The database the keyspaces are in (its write batches: [`BucketStore::batch`]).
    fjall: fjall::Database,
    /// The collection's number (keyspace names, error messages).
    coll_id: u64,
    /// Bucket segments.
    data: Keyspace,
    /// Control records.
    ctl: Keyspace,
    /// The meta+time index (SPEC) and the series records.
    idx: Keyspace,
    /// The rollups, when the collection declares rollups.
    rollups: Option<Keyspace>,
    /// Held from reading a series record until the record written after it is visible
    /// ([`BucketStore::entry_value`]), so that two series first stored at once under one hash
    /// do not both claim its record.
    series_lock: Arc<Mutex<()>>,
    /// The rollups' field-name lists seen so far (`rollups.rs`).
    rollup_names: rollups::NamesTable,
}

/// One item of the meta+time index.
pub(crate) struct IndexItem {
    /// The series' meta hash (the key prefix).
    pub(crate) hash: u64,
    /// `control.min.<time>` (rounded, ms).
    pub(crate) min_time: i64,
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// The normalized meta bytes (SPEC ), taken from the series record when the entry
    /// refers to it.
    pub(crate) meta: Slice,
}

/// One item of a scan of the index keyspace ([`BucketStore::index_scan`]).
pub(crate) enum IndexRow {
    /// The series record of a meta hash (it sorts before the hash's entries).
    Series {
        /// The meta hash.
        hash: u64,
        /// Whether more than one series has used the hash: then the entries of its prefix
        /// belong to several series, told apart by their meta.
        shared: bool,
    },
    /// A bucket's entry.
    Bucket(IndexItem),
}

/// One stored segment of a bucket, in a scan of many buckets.
pub(crate) struct SegmentItem {
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// The blob.
    pub(crate) blob: Slice,
}

/// Opens (creating when missing) the fjall database in directory `path` with a block cache
/// of `cache_size_bytes`; `read_only` starts no worker thread, so nothing is flushed or
/// compacted. fjall's journal is checked first: with `recover`, a damaged journal is set
/// aside ([`fjall_journal::repair`]) and the report returned; without, it fails the open.
///
/// # Errors
/// [`Error::Storage`] when fjall fails; [`Error::JournalDamaged`] for a damaged journal without
/// `recover`; [`Error::Io`] when journal files cannot be set aside.
pub(crate) fn open_database(
    path: &std::path::Path,
    cache_size_bytes: u64,
    read_only: bool,
    recover: bool,
) -> Result<(fjall::Database, Option<fjall_journal::RecoveryReport>)> {
    let mut recovery = None;
    if recover {
        recovery = fjall_journal::repair(path)?;
    } else if let Some(e) = fjall_journal::scan(path)?.damaged_error() {
        return Err(e);
    }
    let builder = || {
        let b = fjall::Database::builder(path).cache_size(cache_size_bytes);
        // Read-only: no worker thread, so no flush or compaction writes either.
        if read_only {
            b.worker_threads_unchecked(0).open()
        } else {
            b.open()
        }
    };
    let fjall = match builder() {
        Err(fjall::Error::JournalRecovery(e)) if recover => {
            let reason = format!("fjall cannot replay it ({e:?})");
            recovery = Some(fjall_journal::set_aside_all(path, &reason, recovery)?);
            builder()
        }
        Err(fjall::Error::JournalRecovery(e)) => {
            return Err(fjall_journal::fjall_refused(path, e));
        }
        other => other,
    }
    .map_err(Error::storage("opening the database"))?;
    Ok((fjall, recovery))
}

impl BucketStore {
    /// Opens (creating when missing) the keyspaces of collection number `coll_id`.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn open(
        fjall: &fjall::Database,
        coll_id: u64,
        rollups: bool,
    ) -> Result<BucketStore> {
        let [data, ctl, idx] = keyspace_names(coll_id);
        // Blobs (1–50 KB, compressed by the codec) still shrink by 9–16 % under LZ4 over
        // 64 KiB blocks, which see several blobs with their keys and framing at once; they are
        // read by prefix and range scans only, which never consult a bloom filter
        // (docs/BENCHMARKS.md, "fjall settings").
        let blob_options = || {
            KeyspaceCreateOptions::default()
                .data_block_compression_policy(fjall::config::CompressionPolicy::all(
                    fjall::CompressionType::Lz4,
                ))
                .data_block_size_policy(fjall::config::BlockSizePolicy::all(64 * 1024))
                .filter_policy(fjall::config::FilterPolicy::disabled())
        };
        // Control records and index entries: LZ4 on every level (fjall's default leaves
        // levels 0 and 1 uncompressed: 2.7× larger control and 4.8× larger index tables until
        // a compaction reaches level 2). Control records are read by ids taken from the
        // index, so a point read finds its key.
        let small_options = keyspaces::lz4_options;
        Ok(BucketStore {
            fjall: fjall.clone(),
            coll_id,
            data: fjall
                .keyspace(&data, blob_options)
                .map_err(Error::storage("opening a data keyspace"))?,
            ctl: fjall
                .keyspace(&ctl, || small_options().expect_point_read_hits(true))
                .map_err(Error::storage("opening a control keyspace"))?,
            idx: fjall
                .keyspace(&idx, small_options)
                .map_err(Error::storage("opening an index keyspace"))?,
            rollups: if rollups {
                Some(
                    fjall
                        .keyspace(&keys::rollup_keyspace(coll_id), small_options)
                        .map_err(Error::storage("opening a rollup keyspace"))?,
                )
            } else {
                None
            },
            series_lock: Arc::new(Mutex::new(())),
            rollup_names: rollups::NamesTable::default(),
        })
    }

    /// The keyspaces: data, control, index and the rollups if any (to flush, compact or
    /// delete them).
    pub(crate) fn keyspaces(&self) -> Vec<&Keyspace> {
        let mut out = vec![&self.data, &self.ctl, &self.idx];
        out.extend(&self.rollups);
        out
    }

    /// A new atomic write to the store ([`StoreBatch`]).
    pub(crate) fn batch(&self) -> StoreBatch {
        StoreBatch::new(&self.fjall)
    }

    // ---- control records ---------------------------------------------------------------

    /// A bucket's control record as stored, `None` when the bucket is gone.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn control(&self, id: &BucketId) -> Result<Option<Slice>> {
        self.ctl
            .get(id)
            .map_err(Error::storage("reading a control record"))
    }

    /// The control records of the buckets with ids in `[first, last]`, in id order.
    pub(crate) fn controls_between(
        &self,
        first: &BucketId,
        last: &BucketId,
    ) -> impl Iterator<Item = Result<(BucketId, Slice)>> + use<> {
        self.ctl
            .range(&first[..]..=&last[..])
            .filter_map(|item| match item.into_inner() {
                Ok((k, v)) => BucketId::try_from(&k[..]).ok().map(|id| Ok((id, v))),
                Err(e) => Some(Err(Error::storage("reading control records")(e))),
            })
    }

    /// Every control record, in id order, with the bytes its key and value take.
    pub(crate) fn controls(&self) -> impl Iterator<Item = Result<(BucketId, Slice)>> + use<> {
        self.ctl.iter().filter_map(|item| match item.into_inner() {
            Ok((k, v)) => BucketId::try_from(&k[..]).ok().map(|id| Ok((id, v))),
            Err(e) => Some(Err(Error::storage("reading control records")(e))),
        })
    }

    /// Adds a bucket's control record to `wb`.
    pub(crate) fn put_control(&self, wb: &mut StoreBatch, id: &BucketId, bytes: Vec<u8>) {
        wb.insert(&self.ctl, *id, bytes);
    }

    /// Adds the removal of a bucket's control record to `wb`.
    pub(crate) fn remove_control(&self, wb: &mut StoreBatch, id: &BucketId) {
        wb.remove(&self.ctl, *id);
    }

    /// Adds a bucket's retirement marker to `wb`: the log's rows of the bucket before
    /// `position` are stale (the bucket was rewritten, moved or removed in the same batch).
    pub(crate) fn put_retired(&self, wb: &mut StoreBatch, id: &BucketId, position: LogPosition) {
        wb.insert(&self.ctl, retired_key(id), position.to_bytes());
    }

    /// A bucket's retirement marker, `None` when it has none.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when the marker is not 16
    /// bytes.
    pub(crate) fn retired(&self, id: &BucketId) -> Result<Option<LogPosition>> {
        let Some(bytes) = self
            .ctl
            .get(retired_key(id))
            .map_err(Error::storage("reading a retirement marker"))?
        else {
            return Ok(None);
        };
        LogPosition::from_bytes(&bytes).map(Some).ok_or_else(|| {
            self.corrupt_control(id, "a retirement marker is not 16 bytes".to_owned())
        })
    }

    /// Adds the removal of a bucket's retirement marker to `wb`.
    pub(crate) fn remove_retired(&self, wb: &mut StoreBatch, id: &BucketId) {
        wb.remove(&self.ctl, retired_key(id));
    }

    /// The [`Error::Corruption`] of a bad control record.
    pub(crate) fn corrupt_control(&self, id: &BucketId, reason: String) -> Error {
        Error::Corruption {
            keyspace: format!("c{}_ctl", self.coll_id),
            key: hex(id),
            reason,
        }
    }

    // ---- segments ----------------------------------------------------------------------

    /// Every stored segment of a bucket, in segment order.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn segments(&self, id: &BucketId) -> Result<Vec<(u32, Slice)>> {
        let mut out = Vec::new();
        for item in self.data.prefix(id) {
            let (k, v) = item
                .into_inner()
                .map_err(Error::storage("reading bucket segments"))?;
            let segment = parse_data_key(&k).map_or(0, |(_, s)| s);
            out.push((segment, v));
        }
        Ok(out)
    }

    /// The numbers of a bucket's stored segments, without reading them.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn segment_numbers(&self, id: &BucketId) -> Result<Vec<u32>> {
        let mut out = Vec::new();
        for item in self.data.prefix(id) {
            let k = item
                .key()
                .map_err(Error::storage("listing bucket segments"))?;
            if let Some((_, s)) = parse_data_key(&k) {
                out.push(s);
            }
        }
        Ok(out)
    }

    /// The last stored segment of a bucket (where a time-sorted bucket keeps its latest
    /// measurement).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn last_segment(&self, id: &BucketId) -> Result<Option<Slice>> {
        let Some(item) = self.data.prefix(id).next_back() else {
            return Ok(None);
        };
        let (_, v) = item
            .into_inner()
            .map_err(Error::storage("reading bucket segments"))?;
        Ok(Some(v))
    }

    /// The segments of the buckets with ids in `[first, last]`, in id then segment order.
    pub(crate) fn segments_between(
        &self,
        first: &BucketId,
        last: &BucketId,
    ) -> impl Iterator<Item = Result<SegmentItem>> + use<> {
        let start = data_key(first, 0);
        let end = data_key(last, u32::MAX);
        self.data
            .range(start..=end)
            .filter_map(|item| match item.into_inner() {
                Ok((k, blob)) => parse_data_key(&k).map(|(id, _)| Ok(SegmentItem { id, blob })),
                Err(e) => Some(Err(Error::storage("reading bucket segments")(e))),
            })
    }

    /// The bytes the keys and values of every segment take.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn segment_bytes(&self) -> Result<u64> {
        raw_bytes(&self.data, "reading bucket segments")
    }

    /// Adds a segment to `wb`.
    pub(crate) fn put_segment(
        &self,
        wb: &mut StoreBatch,
        id: &BucketId,
        segment: u32,
        blob: Vec<u8>,
    ) {
        wb.insert(&self.data, data_key(id, segment), blob);
    }

    /// Writes segments straight into one new table of the data keyspace, bypassing fjall's
    /// journal (fjall's ingestion; the table is synced before this returns). For blobs whose
    /// control records are written after them: until then no index entry or control record
    /// leads a read to them. A segment ingested again replaces the earlier one.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; nothing is visible then.
    pub(crate) fn ingest_segments(
        &self,
        segments: impl IntoIterator<Item = (BucketId, u32, Vec<u8>)>,
    ) -> Result<()> {
        let items = segments
            .into_iter()
            .map(|(id, segment, blob)| (data_key(&id, segment).to_vec(), blob));
        ingest(&self.data, items.collect(), "ingesting bucket segments")
    }

    /// As [`BucketStore::ingest_segments`] for control records: written last, they make the
    /// buckets visible.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn ingest_controls(&self, controls: Vec<(BucketId, Vec<u8>)>) -> Result<()> {
        let items = controls.into_iter().map(|(id, c)| (id.to_vec(), c));
        ingest(&self.ctl, items.collect(), "ingesting control records")
    }

    /// As [`BucketStore::ingest_segments`] for the index entries of buckets new to the store
    /// (`(series, min time, id)`), with the series records they need, new or marked shared
    /// ([`BucketStore::entry_value`]), in the same table: an entry is never read or recovered
    /// without its record. The series lock is held until the table is in place, so that
    /// another writer sees the records. Reads skip an entry whose bucket has no control record
    /// yet.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when a series record does
    /// not read.
    pub(crate) fn ingest_index_entries<'k>(
        &self,
        entries: impl IntoIterator<Item = (&'k BucketKey, i64, BucketId)>,
    ) -> Result<()> {
        let _serialized = self
            .series_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut records = HashMap::new();
        let mut items = Vec::new();
        for (key, min_time, id) in entries {
            let value = self.entry_value(key, &mut records)?;
            items.push((index_key(key.hash, min_time, &id).to_vec(), value));
        }
        items.extend(
            records
                .into_iter()
                .map(|(hash, record)| (series_record_key(hash).to_vec(), record)),
        );
        ingest(&self.idx, items, "ingesting index entries")
    }

    /// Adds the removal of a segment to `wb`.
    pub(crate) fn remove_segment(&self, wb: &mut StoreBatch, id: &BucketId, segment: u32) {
        wb.remove(&self.data, data_key(id, segment));
    }

    /// The [`Error::Corruption`] of a bad bucket segment.
    pub(crate) fn corrupt_data(&self, id: &BucketId, reason: String) -> Error {
        Error::Corruption {
            keyspace: format!("c{}_data", self.coll_id),
            key: hex(id),
            reason,
        }
    }

    // ---- the meta+time index -----------------------------------------------------------

    /// Every index entry, in key order (series hash, then min time), with its meta.
    pub(crate) fn index_entries(&self) -> impl DoubleEndedIterator<Item = Result<IndexItem>> {
        self.index_scan_all().filter_map(|row| match row {
            Ok(IndexRow::Bucket(item)) => Some(Ok(item)),
            Ok(IndexRow::Series { .. }) => None,
            Err(e) => Some(Err(e)),
        })
    }

    /// The items of the index with keys in `range` (series records and entries), for the
    /// scans that seek by key (the skip scan, the last-point scan, reopening); a range is
    /// built from [`keys::hash_prefix`] and [`keys::hash_time_range`].
    pub(crate) fn index_scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> IndexScan {
        IndexScan::new(self.clone(), self.idx.range(range))
    }

    /// Every item of the index (see [`BucketStore::index_scan`]).
    pub(crate) fn index_scan_all(&self) -> IndexScan {
        IndexScan::new(self.clone(), self.idx.iter())
    }

    /// An estimate of the number of index items (O(1); fjall's `approximate_len`).
    pub(crate) fn index_len_estimate(&self) -> usize {
        self.idx.approximate_len()
    }

    /// The bytes the keys and values of the index take.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn index_bytes(&self) -> Result<u64> {
        raw_bytes(&self.idx, "reading the meta+time index")
    }

    /// Whether more than one series has ever been stored under this meta hash (then scans of
    /// one series must check the meta bytes of every entry of the hash prefix).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when the series record does
    /// not read.
    pub(crate) fn hash_shared(&self, hash: u64) -> Result<bool> {
        Ok(self.series_record(hash)?.is_some_and(|(shared, _)| shared))
    }

    /// The series record of `hash`: whether the hash is shared, and the meta entries that
    /// refer to it take (`None` for the empty record of earlier versions); `None` when the
    /// hash has no record.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when the record does not
    /// read.
    fn series_record(&self, hash: u64) -> Result<Option<(bool, Option<Slice>)>> {
        let Some(v) = self
            .idx
            .get(series_record_key(hash))
            .map_err(Error::storage("reading a series record"))?
        else {
            return Ok(None);
        };
        let record = parse_series_record(&v).ok_or_else(|| self.corrupt_series(hash))?;
        Ok(Some((record.shared, record.meta.map(Slice::from))))
    }

    /// The [`Error::Corruption`] of a series record with unknown flags.
    fn corrupt_series(&self, hash: u64) -> Error {
        Error::Corruption {
            keyspace: format!("c{}_idx", self.coll_id),
            key: hex(&series_record_key(hash)),
            reason: "the series record's flags are not known".to_owned(),
        }
    }

    /// The value of a new index entry of series `key`: [`SAME_AS_SERIES_RECORD`] when the
    /// hash's series record holds this series, else the meta bytes. The first series stored
    /// under a hash gets the record; a second one marks it shared. New and changed records go
    /// to `records` (by hash, consulted before the store), for the caller to write before or
    /// with the entry, holding the series lock from this call until they are visible.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when the series record does
    /// not read.
    fn entry_value(&self, key: &BucketKey, records: &mut HashMap<u64, Vec<u8>>) -> Result<Vec<u8>> {
        let current = match records.get(&key.hash) {
            Some(v) => {
                let r = parse_series_record(v).ok_or_else(|| self.corrupt_series(key.hash))?;
                Some((r.shared, r.meta.map(Slice::from)))
            }
            None => self.series_record(key.hash)?,
        };
        let record = match current {
            Some((_, Some(meta))) if meta[..] == key.bytes[..] => {
                return Ok(SAME_AS_SERIES_RECORD.to_vec());
            }
            Some((false, Some(meta))) => series_record_value(true, &meta),
            // Another series holds the record, already marked shared, or an earlier
            // version's marker.
            Some(_) => return Ok(key.bytes.clone()),
            // No record: a new hash, or one whose entries an earlier version wrote, each
            // with its meta.
            None => match self.first_series_of_hash(key.hash)? {
                Some(first) if first != key.bytes => {
                    if first[..] == SAME_AS_SERIES_RECORD {
                        return Err(self.corrupt_series(key.hash));
                    }
                    series_record_value(true, &first)
                }
                _ => {
                    records.insert(key.hash, series_record_value(false, &key.bytes));
                    return Ok(SAME_AS_SERIES_RECORD.to_vec());
                }
            },
        };
        records.insert(key.hash, record);
        Ok(key.bytes.clone())
    }

    /// Adds the index entry of a new bucket to `wb`, writing the series record it needs
    /// (new, or marked shared: [`BucketStore::entry_value`]) through fjall's journal first.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when the series record does
    /// not read.
    pub(crate) fn put_index_entry(
        &self,
        wb: &mut StoreBatch,
        key: &BucketKey,
        min_time: i64,
        id: &BucketId,
    ) -> Result<()> {
        let _serialized = self
            .series_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut records = HashMap::new();
        let value = self.entry_value(key, &mut records)?;
        // Through fjall's journal now, before the batch: visible to the next writer, and
        // recovered whenever the batch is (the journal is replayed in order).
        for (hash, record) in records {
            self.idx
                .insert(series_record_key(hash), record)
                .map_err(Error::storage("writing a series record"))?;
        }
        wb.insert(&self.idx, index_key(key.hash, min_time, id), value);
        Ok(())
    }

    /// The normalized meta bytes of the first index entry under meta hash `hash`, if any.
    fn first_series_of_hash(&self, hash: u64) -> Result<Option<Vec<u8>>> {
        let prefix = hash.to_be_bytes();
        self.idx
            .prefix(prefix)
            .find_map(|item| match item.into_inner() {
                Ok((k, v)) if k.len() > prefix.len() => Some(Ok(v.to_vec())),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            })
            .transpose()
            .map_err(Error::storage("reading the meta+time index"))
    }

    /// The meta an entry's value stands for: its own bytes, or its series record's.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when the entry refers to a
    /// record that is missing or holds no meta.
    fn entry_meta(&self, hash: u64, id: &BucketId, value: Slice) -> Result<Slice> {
        if value[..] != SAME_AS_SERIES_RECORD {
            return Ok(value);
        }
        match self.series_record(hash)? {
            Some((_, Some(meta))) => Ok(meta),
            _ => Err(self.corrupt_index(
                id,
                "the entry refers to a series record that does not exist".to_owned(),
            )),
        }
    }

    /// The series key a stored bucket's index entry holds (`min_time` and `hash` from its
    /// control record); `None` when the entry is missing.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn series_key(
        &self,
        hash: u64,
        min_time: i64,
        id: &BucketId,
    ) -> Result<Option<BucketKey>> {
        let Some(value) = self
            .idx
            .get(index_key(hash, min_time, id))
            .map_err(Error::storage("reading the meta+time index"))?
        else {
            return Ok(None);
        };
        let meta = self.entry_meta(hash, id, value)?;
        Ok(Some(BucketKey::from_bytes(meta.to_vec())))
    }

    /// Adds the removal of an index entry to `wb`.
    pub(crate) fn remove_index_entry(
        &self,
        wb: &mut StoreBatch,
        hash: u64,
        min_time: i64,
        id: &BucketId,
    ) {
        wb.remove(&self.idx, index_key(hash, min_time, id));
    }

    /// The [`Error::Corruption`] of a bad index entry of bucket `id`.
    pub(crate) fn corrupt_index(&self, id: &BucketId, reason: String) -> Error {
        Error::Corruption {
            keyspace: format!("c{}_idx", self.coll_id),
            key: hex(id),
            reason,
        }
    }

    // ---- whole-store readers (verify, salvage) -----------------------------------------

    /// The raw keyspaces, for the whole-store readers that scan through a snapshot
    /// (`docs/keys.md` layouts; keys parsed with [`keys`]).
    pub(crate) fn raw(&self) -> RawKeyspaces<'_> {
        RawKeyspaces {
            data: &self.data,
            control: &self.ctl,
            index: &self.idx,
        }
    }
}

/// A collection's bucket keyspaces by name ([`BucketStore::raw`]).
pub(crate) struct RawKeyspaces<'a> {
    /// Bucket segments.
    pub(crate) data: &'a Keyspace,
    /// Control records.
    pub(crate) control: &'a Keyspace,
    /// The meta+time index.
    pub(crate) index: &'a Keyspace,
}

/// A scan of the index keyspace in either direction: series records and entries, each
/// entry with its meta (an entry that refers to its series record takes the record's meta:
/// from the record the scan met last, or read once per hash when the scan meets the
/// entries first, backwards or from inside a hash's range).
pub(crate) struct IndexScan {
    store: BucketStore,
    inner: fjall::Iter,
    /// The last series record met or read: its hash and meta.
    record: Option<(u64, Slice)>,
}

impl IndexScan {
    fn new(store: BucketStore, inner: fjall::Iter) -> IndexScan {
        IndexScan {
            store,
            inner,
            record: None,
        }
    }

    /// Continues from another place of the index (a seek), keeping the record it knows.
    pub(crate) fn seek<K: AsRef<[u8]>, R: RangeBounds<K>>(&mut self, range: R) {
        self.inner = self.store.idx.range(range);
    }

    fn row(&mut self, item: fjall::Guard) -> Result<IndexRow> {
        let (k, v) = item
            .into_inner()
            .map_err(Error::storage("scanning the meta+time index"))?;
        if let Some((hash, min_time, id)) = parse_index_key(&k) {
            let meta = if v[..] != SAME_AS_SERIES_RECORD {
                v
            } else if let Some((_, meta)) = self.record.as_ref().filter(|(h, _)| *h == hash) {
                meta.clone()
            } else {
                let meta = self.store.entry_meta(hash, &id, v)?;
                self.record = Some((hash, meta.clone()));
                meta
            };
            return Ok(IndexRow::Bucket(IndexItem {
                hash,
                min_time,
                id,
                meta,
            }));
        }
        let hash = parse_series_record_key(&k).ok_or_else(|| Error::Corruption {
            keyspace: format!("c{}_idx", self.store.coll_id),
            key: hex(&k),
            reason: "the key is neither a series record's nor an entry's".to_owned(),
        })?;
        let record = parse_series_record(&v).ok_or_else(|| self.store.corrupt_series(hash))?;
        if let Some(meta) = record.meta {
            self.record = Some((hash, Slice::from(meta)));
        }
        Ok(IndexRow::Series {
            hash,
            shared: record.shared,
        })
    }
}

impl Iterator for IndexScan {
    type Item = Result<IndexRow>;

    fn next(&mut self) -> Option<Result<IndexRow>> {
        let item = self.inner.next()?;
        Some(self.row(item))
    }
}

impl DoubleEndedIterator for IndexScan {
    fn next_back(&mut self) -> Option<Result<IndexRow>> {
        let item = self.inner.next_back()?;
        Some(self.row(item))
    }
}

/// Writes `items` straight into one new table of `ks` (fjall's ingestion, no journal; synced
/// before this returns). fjall takes keys in strictly increasing order (it panics
/// otherwise), so they are sorted, and of equal keys the last is kept.
fn ingest(ks: &Keyspace, mut items: Vec<(Vec<u8>, Vec<u8>)>, context: &'static str) -> Result<()> {
    if items.is_empty() {
        return Ok(());
    }
    // Stable: of equal keys, the later one stays last, and is the one kept.
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let mut ingestion = ks.start_ingestion().map_err(Error::storage(context))?;
    let mut items = items.into_iter().peekable();
    while let Some((key, value)) = items.next() {
        if items.peek().is_some_and(|(next, _)| *next == key) {
            continue;
        }
        ingestion
            .write(key, value)
            .map_err(Error::storage(context))?;
    }
    ingestion.finish().map_err(Error::storage(context))
}

/// The bytes the keys and values of a keyspace take.
fn raw_bytes(ks: &Keyspace, context: &'static str) -> Result<u64> {
    let mut n = 0;
    for item in ks.iter() {
        let (k, v) = item.into_inner().map_err(Error::storage(context))?;
        n += (k.len() + v.len()) as u64;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &std::path::Path) -> (fjall::Database, BucketStore) {
        let fjall = fjall::Database::builder(dir).open().unwrap();
        let store = BucketStore::open(&fjall, 1, false).unwrap();
        (fjall, store)
    }

    /// Two series under one hash (a collision the hash function makes unlikely but the
    /// format must survive), as keys with a chosen hash.
    fn key(hash: u64, meta: &[u8]) -> BucketKey {
        let mut k = BucketKey::from_bytes(meta.to_vec());
        k.hash = hash;
        k
    }

    fn put(store: &BucketStore, k: &BucketKey, t: i64, id: u8) {
        let mut wb = store.batch();
        store.put_index_entry(&mut wb, k, t, &[id; 12]).unwrap();
        wb.commit("a test write").unwrap();
    }

    fn raw_value(store: &BucketStore, hash: u64, t: i64, id: u8) -> Vec<u8> {
        store
            .idx
            .get(index_key(hash, t, &[id; 12]))
            .unwrap()
            .unwrap()
            .to_vec()
    }

    fn metas(rows: impl Iterator<Item = Result<IndexRow>>) -> Vec<(u8, Vec<u8>)> {
        rows.filter_map(|r| match r.unwrap() {
            IndexRow::Bucket(i) => Some((i.id[0], i.meta.to_vec())),
            IndexRow::Series { .. } => None,
        })
        .collect()
    }

    #[test]
    fn a_series_meta_is_stored_once_and_entries_of_another_series_of_its_hash_keep_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let (_fjall, store) = store(dir.path());
        let (a, b) = (key(7, b"\x02aaaa"), key(7, b"\x02bbbb"));
        put(&store, &a, 10, 1);
        put(&store, &a, 20, 2);
        assert_eq!(raw_value(&store, 7, 10, 1), SAME_AS_SERIES_RECORD);
        assert!(!store.hash_shared(7).unwrap());
        put(&store, &b, 15, 3);
        put(&store, &a, 30, 4);
        // The second series keeps its meta in its entry and marks the hash shared.
        assert_eq!(raw_value(&store, 7, 15, 3), b.bytes);
        assert_eq!(raw_value(&store, 7, 30, 4), SAME_AS_SERIES_RECORD);
        assert!(store.hash_shared(7).unwrap());
        let want = vec![
            (1, a.bytes.clone()),
            (3, b.bytes.clone()),
            (2, a.bytes.clone()),
            (4, a.bytes.clone()),
        ];
        assert_eq!(metas(store.index_scan_all()), want);
        // Backwards, and from inside the hash's range: the record is read, not met.
        let mut back = metas(store.index_scan_all().rev());
        back.reverse();
        assert_eq!(back, want);
        let (lo, hi) = keys::hash_time_range(7, 20, 30);
        assert_eq!(metas(store.index_scan(&lo[..]..=&hi[..])), want[2..]);
        let mut scan = store.index_scan(&lo[..]..=&hi[..]);
        scan.seek(&lo[..]..=&hi[..]);
        assert_eq!(metas(scan), want[2..]);
        assert_eq!(
            store.series_key(7, 20, &[2; 12]).unwrap().unwrap().bytes,
            a.bytes
        );
        // Ingested entries follow the same rules.
        store
            .ingest_index_entries([(&b, 40, [5; 12]), (&a, 50, [6; 12])])
            .unwrap();
        assert_eq!(raw_value(&store, 7, 40, 5), b.bytes);
        assert_eq!(raw_value(&store, 7, 50, 6), SAME_AS_SERIES_RECORD);
        assert_eq!(
            metas(store.index_entries().map(|r| r.map(IndexRow::Bucket))).len(),
            6
        );
        // A series new to the store, ingested: its record goes into the same table.
        let c = key(9, b"\x02cccc");
        store
            .ingest_index_entries([(&c, 60, [7; 12]), (&c, 70, [8; 12])])
            .unwrap();
        assert_eq!(raw_value(&store, 9, 60, 7), SAME_AS_SERIES_RECORD);
        assert_eq!(raw_value(&store, 9, 70, 8), SAME_AS_SERIES_RECORD);
        assert!(!store.hash_shared(9).unwrap());
        let (lo, hi) = keys::hash_time_range(9, 0, 100);
        assert_eq!(
            metas(store.index_scan(&lo[..]..=&hi[..])),
            vec![(7, c.bytes.clone()), (8, c.bytes.clone())]
        );
    }

    #[test]
    fn entries_and_markers_of_earlier_versions_still_read_and_get_records() {
        let dir = tempfile::tempdir().unwrap();
        let (_fjall, store) = store(dir.path());
        let (a, b, c) = (key(1, b"\x02a"), key(2, b"\x02b"), key(2, b"\x02c"));
        // As earlier versions wrote them: every entry with its meta, an empty record as the
        // marker of a shared hash.
        store
            .idx
            .insert(index_key(1, 0, &[1; 12]), a.bytes.clone())
            .unwrap();
        store
            .idx
            .insert(index_key(2, 0, &[2; 12]), b.bytes.clone())
            .unwrap();
        store
            .idx
            .insert(index_key(2, 5, &[3; 12]), c.bytes.clone())
            .unwrap();
        store.idx.insert(series_record_key(2), []).unwrap();
        assert!(store.hash_shared(2).unwrap());
        assert!(!store.hash_shared(1).unwrap());
        // A new bucket of an old series: its hash gets a record, the new entry refers to it.
        put(&store, &a, 10, 4);
        assert_eq!(raw_value(&store, 1, 10, 4), SAME_AS_SERIES_RECORD);
        // A second series under the old hash: the record holds the first one, marked shared.
        let a2 = key(1, b"\x02z");
        put(&store, &a2, 20, 5);
        assert_eq!(raw_value(&store, 1, 20, 5), a2.bytes);
        assert!(store.hash_shared(1).unwrap());
        // Under the old marker, entries keep their meta.
        put(&store, &c, 30, 6);
        assert_eq!(raw_value(&store, 2, 30, 6), c.bytes);
        let got = metas(store.index_scan_all());
        assert_eq!(
            got,
            vec![
                (1, a.bytes.clone()),
                (4, a.bytes.clone()),
                (5, a2.bytes.clone()),
                (2, b.bytes.clone()),
                (3, c.bytes.clone()),
                (6, c.bytes.clone()),
            ]
        );
    }

    #[test]
    fn an_entry_whose_series_record_is_missing_is_reported_as_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let (_fjall, store) = store(dir.path());
        store
            .idx
            .insert(index_key(3, 0, &[1; 12]), SAME_AS_SERIES_RECORD)
            .unwrap();
        let err = store.index_scan_all().next().unwrap().err().unwrap();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
        store.idx.insert(series_record_key(3), [9, 2]).unwrap();
        assert!(store.index_scan_all().next().unwrap().is_err());
        assert!(store.hash_shared(3).is_err());
    }
}
