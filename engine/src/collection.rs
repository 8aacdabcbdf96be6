//! A time-series collection: its storage keyspaces, its bucket catalog and its options.

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use bson::Document;

use tscoll_catalog::{BucketCatalog, BucketId, BucketingSpec, CatalogOptions, MemoryPool};

use bson::doc;
use fjall::PersistMode;

use crate::control::Control;
use crate::db::LogOptions;
use crate::error::{Error, ErrorCode, Result};
use crate::index::Indexes;
use crate::meta_cache::MetaCache;
use crate::options::CollectionSpec;
use crate::storage::BucketStore;
use crate::storage::wal::WriteAheadLog;

/// Number of locks serializing bucket merges.
const MERGE_LOCKS: usize = 32;

pub(crate) struct CollectionInner {
    pub(crate) name: String,
    pub(crate) id: u64,
    pub(crate) spec: RwLock<CollectionSpec>,
    pub(crate) catalog: Arc<BucketCatalog>,
    pub(crate) fjall: fjall::Database,
    /// The stored buckets: segments, control records, the meta+time index.
    pub(crate) store: BucketStore,
    /// The write-ahead log: one record per commit group.
    pub(crate) wal: WriteAheadLog,
    /// When checkpoints of the log are taken.
    pub(crate) log_options: LogOptions,
    /// Bytes of rows a sort holds before it spills (`DatabaseOptions::sort_memory_bytes`).
    pub(crate) sort_memory_bytes: u64,
    /// Serializes merges of the same bucket (by the last byte of its `_id`).
    pub(crate) merge_locks: Vec<Mutex<()>>,
    /// Index definitions (SPEC §13).
    pub(crate) indexes: RwLock<Indexes>,
    /// Held (shared) by every insert from staging until the buckets that left memory are
    /// stored, and by every direct write; taken exclusively by checkpoints of the log and by
    /// index creation and removal to wait for those writes.
    pub(crate) commit_gate: RwLock<()>,
    /// The database's collection records (name → `{id, spec, indexes}`).
    pub(crate) records: fjall::Keyspace,
    /// Buckets given a retirement marker since the log last restarted: the markers are
    /// removed once the log no longer holds rows older than them.
    pub(crate) retired: Mutex<Vec<BucketId>>,
    /// Series keys of meta values earlier columnar inserts held.
    pub(crate) meta_cache: Mutex<MetaCache>,
    /// The database is open read-only: every write is refused ([`CollectionInner::writable`]).
    pub(crate) read_only: bool,
}

/// Keyspaces and shared state a collection is opened with.
pub(crate) struct Storage {
    pub(crate) fjall: fjall::Database,
    pub(crate) store: BucketStore,
    pub(crate) wal: WriteAheadLog,
    pub(crate) log_options: LogOptions,
    pub(crate) sort_memory_bytes: u64,
    pub(crate) records: fjall::Keyspace,
    pub(crate) read_only: bool,
}

impl CollectionInner {
    pub(crate) fn new(
        name: String,
        id: u64,
        spec: CollectionSpec,
        indexes: Indexes,
        options: CatalogOptions,
        pool: MemoryPool,
        storage: Storage,
    ) -> Self {
        let catalog = Arc::new(BucketCatalog::with_pool(bucketing(&spec), options, pool));
        CollectionInner {
            name,
            id,
            spec: RwLock::new(spec),
            catalog,
            fjall: storage.fjall,
            store: storage.store,
            wal: storage.wal,
            log_options: storage.log_options,
            sort_memory_bytes: storage.sort_memory_bytes,
            merge_locks: (0..MERGE_LOCKS).map(|_| Mutex::new(())).collect(),
            indexes: RwLock::new(indexes),
            commit_gate: RwLock::new(()),
            records: storage.records,
            retired: Mutex::new(Vec::new()),
            meta_cache: Mutex::new(MetaCache::default()),
            read_only: storage.read_only,
        }
    }

    /// The collection record: `{id, spec, indexes}` (`docs/keys.md`).
    pub(crate) fn record(&self) -> Document {
        doc! {
            "id": self.id.cast_signed(),
            "spec": self.spec().to_stored(),
            "indexes": self.indexes().to_record(),
        }
    }

    /// Saves the collection record durably (after collMod or an index change).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn save_record(&self) -> Result<()> {
        let bytes = self
            .record()
            .to_vec()
            .map_err(|e| Error::rejected(ErrorCode::InternalError, e.to_string()))?;
        self.records
            .insert(self.name.as_bytes(), bytes)
            .map_err(Error::storage("saving a collection record"))?;
        self.fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("saving a collection record"))
    }

    /// The index definitions now.
    pub(crate) fn indexes(&self) -> Indexes {
        self.indexes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every keyspace of the collection: data, control, meta+time index and the secondary
    /// indexes (SPEC §13), e.g. to delete them when the collection is dropped.
    pub(crate) fn keyspaces(&self) -> Vec<fjall::Keyspace> {
        let mut out: Vec<fjall::Keyspace> = self.store.keyspaces().into_iter().cloned().collect();
        out.extend(self.secondary_keyspaces());
        out
    }

    pub(crate) fn spec(&self) -> CollectionSpec {
        self.spec
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The control record of a bucket, if stored.
    pub(crate) fn control(&self, id: &BucketId) -> Result<Option<Control>> {
        let Some(v) = self.store.control(id)? else {
            return Ok(None);
        };
        Control::decode(&v)
            .map(Some)
            .map_err(|reason| self.store.corrupt_control(id, reason))
    }
}

pub(crate) fn bucketing(spec: &CollectionSpec) -> BucketingSpec {
    BucketingSpec {
        time_field: spec.time_field.clone(),
        meta_field: spec.meta_field.clone(),
        max_span_ms: spec.bucket_max_span_seconds * 1000,
        rounding_ms: spec.bucket_rounding_seconds * 1000,
    }
}

/// A handle to a time-series collection. Cheap to clone; safe to share between threads.
#[derive(Clone)]
pub struct Collection {
    pub(crate) inner: Arc<CollectionInner>,
}

impl std::fmt::Debug for Collection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collection")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl Collection {
    pub(crate) fn new(inner: CollectionInner) -> Self {
        Collection {
            inner: Arc::new(inner),
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.inner.id
    }

    /// The collection's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The collection's effective options (SPEC §1.2).
    #[must_use]
    pub fn spec(&self) -> CollectionSpec {
        self.inner.spec()
    }

    /// Takes a checkpoint of the write-ahead log now (`docs/durability.md`): every stored
    /// bucket is made durable, and a new log file starts with the rows open buckets hold;
    /// older log files are removed. Inserts also take checkpoints, past [`LogOptions`]' size
    /// and age.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall cannot persist; [`Error::Codec`] when rows cannot be
    /// encoded; [`Error::Io`] when the log cannot be written; [`Error::ReadOnly`] when the
    /// database is open read-only.
    pub fn checkpoint(&self) -> Result<()> {
        self.inner.writable()?;
        self.inner.checkpoint_log()
    }

    /// Stores the rows open buckets hold that are not stored yet: one more part (segment and
    /// control record) per bucket, in fjall's journal, with the buckets staying open. Reads
    /// do not need it (they combine the store with the rows in memory); direct writes,
    /// `stats` and `verify` do it themselves. The parts are durable once fjall persists (a
    /// checkpoint, or `close`).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Codec`] when rows cannot be encoded.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush_open()
    }

    /// Stores idle open buckets held in several stored parts whole (they leave memory and stay
    /// reopenable), takes a checkpoint, then writes the collection's memtables to tables and
    /// compacts each keyspace fully: superseded control records, the segments merged away and
    /// their tombstones are dropped, and fjall's journal no longer holds the collection's
    /// writes. Meant after a bulk load; blocks until done (seconds for millions of
    /// measurements). Reads and writes may go on meanwhile.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Codec`] as for `checkpoint`;
    /// [`Error::ReadOnly`] when the database is open read-only.
    pub fn compact(&self) -> Result<()> {
        self.inner.catalog.take_idle_segments();
        self.checkpoint()?;
        for ks in self.inner.all_keyspaces() {
            compact_keyspace(&ks)?;
        }
        Ok(())
    }
}

impl CollectionInner {
    /// Every keyspace the collection has written: its buckets', the database's collection
    /// records and the secondary indexes opened so far (an unopened one holds nothing in
    /// memory).
    fn all_keyspaces(&self) -> Vec<fjall::Keyspace> {
        let mut out: Vec<fjall::Keyspace> = self.store.keyspaces().into_iter().cloned().collect();
        out.push(self.records.clone());
        out.extend(
            self.indexes
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .secondary
                .iter()
                .filter_map(|ix| ix.opened_keyspace()),
        );
        out
    }

    /// Writes the collection's memtables to tables, so that opening the database again reads
    /// them from tables instead of replaying fjall's journal into memory.
    pub(crate) fn flush_memtables(&self) -> Result<()> {
        for ks in self.all_keyspaces() {
            ks.rotate_memtable_and_wait()
                .map_err(Error::storage("flushing a memtable"))?;
        }
        Ok(())
    }
}

/// Flushes a keyspace's memtable to a table and compacts it into one sorted run. fjall offers
/// both as hidden (test) API; they are the documented effect of its flush and major
/// compaction workers, run now instead of when thresholds are crossed.
pub(crate) fn compact_keyspace(ks: &fjall::Keyspace) -> Result<()> {
    ks.rotate_memtable_and_wait()
        .map_err(Error::storage("flushing a memtable"))?;
    ks.major_compact()
        .map_err(Error::storage("compacting a keyspace"))
}
