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
//! | `c{id}_idx` | meta hash (8, BE) ‖ min time (8) ‖ bucket id (12) | normalized meta bytes |
//!
//! Keyspace options (fixed when a keyspace is created): LZ4 on every level and no bloom
//! filter for blobs, in 64 KiB blocks; LZ4 on every level for control records and index
//! entries.

pub(crate) mod keys;
pub(crate) mod wal;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::ops::RangeBounds;

use fjall::{Keyspace, KeyspaceCreateOptions, OwnedWriteBatch, Slice};
use tscoll_catalog::{BucketId, BucketKey};

use crate::error::{Error, Result};
use keys::{
    collision_marker_key, data_key, hex, index_key, keyspace_names, parse_data_key,
    parse_index_key, retired_key,
};
use wal::LogPosition;

/// The stored buckets of one collection: three keyspaces of one fjall database.
#[derive(Clone)]
pub(crate) struct BucketStore {
    /// The collection's number (keyspace names, error messages).
    coll_id: u64,
    /// Bucket segments.
    data: Keyspace,
    /// Control records.
    ctl: Keyspace,
    /// The meta+time index (SPEC ).
    idx: Keyspace,
}

/// One item of the meta+time index.
pub(crate) struct IndexItem {
    /// The series' meta hash (the key prefix).
    pub(crate) hash: u64,
    /// `control.min.<time>` (rounded, ms).
    pub(crate) min_time: i64,
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// The normalized meta bytes (SPEC ).
    pub(crate) meta: Slice,
}

/// One stored segment of a bucket, in a scan of many buckets.
pub(crate) struct SegmentItem {
    /// Bucket `_id`.
    pub(crate) id: BucketId,
    /// The blob.
    pub(crate) blob: Slice,
}

impl BucketStore {
    /// Opens (creating when missing) the keyspaces of collection number `coll_id`.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn open(fjall: &fjall::Database, coll_id: u64) -> Result<BucketStore> {
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
        let small_options = || {
            KeyspaceCreateOptions::default().data_block_compression_policy(
                fjall::config::CompressionPolicy::all(fjall::CompressionType::Lz4),
            )
        };
        Ok(BucketStore {
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
        })
    }

    /// The three keyspaces: data, control, index (to flush, compact or delete them).
    pub(crate) fn keyspaces(&self) -> [&Keyspace; 3] {
        [&self.data, &self.ctl, &self.idx]
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
    pub(crate) fn put_control(&self, wb: &mut OwnedWriteBatch, id: &BucketId, bytes: Vec<u8>) {
        wb.insert(&self.ctl, *id, bytes);
    }

    /// Adds the removal of a bucket's control record to `wb`.
    pub(crate) fn remove_control(&self, wb: &mut OwnedWriteBatch, id: &BucketId) {
        wb.remove(&self.ctl, *id);
    }

    /// Adds a bucket's retirement marker to `wb`: the log's rows of the bucket before
    /// `position` are stale (the bucket was rewritten, moved or removed in the same batch).
    pub(crate) fn put_retired(
        &self,
        wb: &mut OwnedWriteBatch,
        id: &BucketId,
        position: LogPosition,
    ) {
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
    pub(crate) fn remove_retired(&self, wb: &mut OwnedWriteBatch, id: &BucketId) {
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
        wb: &mut OwnedWriteBatch,
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
    /// (`(series, min time, id)`), with a collision marker for each meta hash that another
    /// series uses, in the store or among these buckets. Reads skip an entry whose bucket
    /// has no control record yet.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn ingest_index_entries<'k>(
        &self,
        entries: impl IntoIterator<Item = (&'k BucketKey, i64, BucketId)>,
    ) -> Result<()> {
        // The series first met under each hash: the store's, else the first of these.
        let mut first_of_hash: HashMap<u64, Option<Vec<u8>>> = HashMap::new();
        let mut items = Vec::new();
        for (key, min_time, id) in entries {
            let first = match first_of_hash.entry(key.hash) {
                Entry::Occupied(o) => o.into_mut(),
                Entry::Vacant(v) => v.insert(self.first_series_of_hash(key.hash)?),
            };
            match first {
                Some(bytes) if *bytes != key.bytes => {
                    items.push((collision_marker_key(key.hash).to_vec(), Vec::new()));
                }
                Some(_) => {}
                None => *first = Some(key.bytes.clone()),
            }
            items.push((
                index_key(key.hash, min_time, &id).to_vec(),
                key.bytes.clone(),
            ));
        }
        ingest(&self.idx, items, "ingesting index entries")
    }

    /// Adds the removal of a segment to `wb`.
    pub(crate) fn remove_segment(&self, wb: &mut OwnedWriteBatch, id: &BucketId, segment: u32) {
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

    /// Every index entry, in key order (series hash, then min time); collision markers are
    /// skipped.
    pub(crate) fn index_entries(&self) -> impl DoubleEndedIterator<Item = Result<IndexItem>> {
        self.idx.iter().filter_map(index_item)
    }

    /// The raw items of the index in `range`, collision markers included, for the scans that
    /// seek by key (the skip scan, the last-point scan); keys are parsed with
    /// [`keys::parse_index_key`].
    pub(crate) fn index_scan<K: AsRef<[u8]>, R: RangeBounds<K>>(&self, range: R) -> fjall::Iter {
        self.idx.range(range)
    }

    /// Every raw item of the index, collision markers included (see
    /// [`BucketStore::index_scan`]).
    pub(crate) fn index_scan_all(&self) -> fjall::Iter {
        self.idx.iter()
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
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn hash_shared(&self, hash: u64) -> Result<bool> {
        self.idx
            .contains_key(collision_marker_key(hash))
            .map_err(Error::storage("reading the meta+time index"))
    }

    /// Adds the index entry of a new bucket to `wb`, and a collision marker when another
    /// series already uses the same meta hash.
    ///
    /// # Errors
    /// [`Error::Storage`] when reading the index fails.
    pub(crate) fn put_index_entry(
        &self,
        wb: &mut OwnedWriteBatch,
        key: &BucketKey,
        min_time: i64,
        id: &BucketId,
    ) -> Result<()> {
        let first = self.first_series_of_hash(key.hash)?;
        if first.is_some_and(|v| v[..] != key.bytes[..]) {
            wb.insert(&self.idx, collision_marker_key(key.hash), []);
        }
        wb.insert(
            &self.idx,
            index_key(key.hash, min_time, id),
            key.bytes.clone(),
        );
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
        Ok(self
            .idx
            .get(index_key(hash, min_time, id))
            .map_err(Error::storage("reading the meta+time index"))?
            .map(|v| BucketKey::from_bytes(v.to_vec())))
    }

    /// Adds the removal of an index entry to `wb`.
    pub(crate) fn remove_index_entry(
        &self,
        wb: &mut OwnedWriteBatch,
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

/// An index item from a raw key and value; `None` for a collision marker.
fn index_item(item: fjall::Guard) -> Option<Result<IndexItem>> {
    match item.into_inner() {
        Ok((k, meta)) => parse_index_key(&k).map(|(hash, min_time, id)| {
            Ok(IndexItem {
                hash,
                min_time,
                id,
                meta,
            })
        }),
        Err(e) => Some(Err(Error::storage("scanning the meta+time index")(e))),
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
