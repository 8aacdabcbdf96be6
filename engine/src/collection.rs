//! A time-series collection: its storage keyspaces, its bucket catalog and its options, and
//! every public method of [`Collection`], each a delegate to the module that does the work
//! (`write/`, `query/`, `pipeline/`, `direct_write/`, `index/`, `tools/`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use bson::Document;

use tscoll_catalog::{BucketCatalog, BucketId, BucketingSpec, CatalogOptions, MemoryPool};

use bson::doc;

use crate::LogOptions;
use crate::arrow::RecordBatchOptions;
use crate::error::{Error, ErrorCode, Result};
use crate::index::Indexes;
use crate::options::CollectionSpec;
use crate::storage::collection_records::CollectionRecords;
use crate::storage::{BucketStore, keyspaces};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::storage::control::Control;
use crate::wal::WriteAheadLog;
use crate::write::meta_cache::MetaCache;
use crate::{
    AggregateBatch, AggregateCursor, AggregateSpec, ArrowCursor, ArrowOptions, CollectionStats,
    DeleteResult, ExpireResult, ExplainVerbosity, FindCursor, FindOptions, IndexOptions,
    InsertOptions, InsertResult, QueryStats, Update, UpdateOptions, UpdateResult,
};

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
    /// Buckets that left memory in several stored segments, merged later in a group, with
    /// the times each was closed since its last merge (`flush::MERGE_SEGMENTS`).
    pub(crate) unmerged: Mutex<HashMap<BucketId, u32>>,
    /// Index definitions (SPEC §13).
    pub(crate) indexes: RwLock<Indexes>,
    /// Held (shared) by every insert from staging until the buckets that left memory are
    /// stored, and by every direct write; taken exclusively by checkpoints of the log and by
    /// index creation and removal to wait for those writes.
    pub(crate) commit_gate: RwLock<()>,
    /// The database's collection records (name → `{id, spec, indexes}`).
    pub(crate) records: CollectionRecords,
    /// Buckets given a retirement marker since the log last restarted: the markers are
    /// removed once the log no longer holds rows older than them.
    pub(crate) retired: Mutex<Vec<BucketId>>,
    /// Series keys of meta values earlier columnar inserts held.
    pub(crate) meta_cache: Mutex<MetaCache>,
    /// The database is open read-only: every write is refused ([`CollectionInner::writable`]).
    pub(crate) read_only: bool,
    /// The database the collection belongs to (weak: the database owns its collections),
    /// through which `$lookup` reaches the other collections.
    pub(crate) database: std::sync::Weak<crate::db::DbInner>,
}

/// Keyspaces and shared state a collection is opened with.
pub(crate) struct Storage {
    pub(crate) fjall: fjall::Database,
    pub(crate) store: BucketStore,
    pub(crate) wal: WriteAheadLog,
    pub(crate) log_options: LogOptions,
    pub(crate) sort_memory_bytes: u64,
    pub(crate) records: CollectionRecords,
    pub(crate) read_only: bool,
    pub(crate) database: std::sync::Weak<crate::db::DbInner>,
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
        // The meta cache holds about a quarter of the catalog's threshold: an entry (a meta
        // value's bytes twice) is a fraction of an open bucket's memory.
        let meta_cache_bytes =
            usize::try_from(options.idle_bucket_expiry_memory_usage_threshold_bytes / 4)
                .unwrap_or(usize::MAX);
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
            unmerged: Mutex::new(HashMap::new()),
            indexes: RwLock::new(indexes),
            commit_gate: RwLock::new(()),
            records: storage.records,
            retired: Mutex::new(Vec::new()),
            meta_cache: Mutex::new(MetaCache::with_max_bytes(meta_cache_bytes)),
            read_only: storage.read_only,
            database: storage.database,
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
        self.records.save(&self.name, bytes)
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

    /// The database this collection belongs to, while it is open.
    pub(crate) fn database(&self) -> Option<crate::Database> {
        self.inner
            .database
            .upgrade()
            .map(|inner| crate::Database { inner })
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
    /// reopenable), takes a checkpoint, merges the segments of every bucket stored in several,
    /// then writes the collection's memtables to tables and
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
        self.inner.merge_waiting(0)?;
        for ks in self.inner.all_keyspaces() {
            keyspaces::compact(&ks)?;
        }
        Ok(())
    }

    // Writing measurements.

    /// Inserts measurements (SPEC §2, §6, §7).
    ///
    /// Each measurement must have the time field as a BSON datetime (R-2.1); one without `_id`
    /// gets a generated ObjectId (R-2.3). Measurements are grouped by series and stably sorted
    /// by time before placement (R-6.2.2). With `ordered`, processing stops at the first bad
    /// measurement and everything before it is stored; otherwise every good one is stored.
    ///
    /// # Errors
    /// [`Error::BulkWrite`] when an ordered insert stopped at a bad measurement: it holds
    /// the [`InsertResult`] (those before it stored, the bad one's position and reason);
    /// an unordered insert reports bad measurements in [`InsertResult::errors`] of its
    /// `Ok`. Otherwise `Err` only when storage fails as a whole ([`Error::Storage`],
    /// [`Error::Poisoned`], [`Error::Io`] for the write-ahead log). Such an error means that
    /// none of the call's measurements was stored, but for [`Error::InsertIncomplete`],
    /// which lists those committed before the failure and those that may have been stored
    /// (`docs/durability.md`).
    pub fn insert_many(&self, docs: &[Document], options: &InsertOptions) -> Result<InsertResult> {
        self.inner
            .insert_many(docs, options)?
            .ordered(options.ordered)
    }

    /// Inserts the rows of an Arrow record batch as measurements (SPEC §2, §6, §7), column by
    /// column: row `i` is the measurement at input position `i`. The time field's column
    /// must be a `Timestamp` (any unit and time zone; floored to ms), `Date32` or `Date64`;
    /// the meta field's column, if any, and every other column (a measurement field, a null
    /// being a missing field) may be of any Arrow type with a BSON form: the mapping
    /// [`crate::arrow::documents_from_batch`] applies (docs/arrow.md, "Arrow → BSON":
    /// integers, floats, decimals, strings of every layout, binaries, timestamps, dates,
    /// lists, structs, dictionaries of these; `Map`, `Union`, `Interval` and
    /// `RunEndEncoded` are refused, naming the column), and what
    /// [`Collection::find_arrow`] returns is taken back unchanged. The common types are read
    /// straight into bucket columns, with no document per row.
    /// A row without an `_id` (no `_id` column, or a null in it) gets a generated ObjectId
    /// (R-2.3). Validation and the outcome are those of
    /// [`Collection::insert_many`]: a row with a null time, a value with no BSON form (a
    /// `UInt64` past `i64::MAX`, a decimal of more than 34 digits) or too large for a bucket
    /// is rejected with its position, and with `ordered` nothing after it is inserted.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use arrow_array::{Float64Array, RecordBatch, StringArray, TimestampMillisecondArray};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("host"))?;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("t", Arc::new(TimestampMillisecondArray::from(vec![0, 1000, 0])) as _),
    ///     ("host", Arc::new(StringArray::from(vec!["a", "a", "b"])) as _),
    ///     ("cpu", Arc::new(Float64Array::from(vec![Some(0.5), None, Some(2.0)])) as _),
    /// ])?;
    /// let result = coll.insert_record_batch(&batch, &InsertOptions::default())?;
    /// assert_eq!(result.inserted, 3);
    /// assert_eq!(coll.count(&bson::doc! {})?, 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Rejected`] (`BadValue`) before anything is inserted when a column has a type
    /// not listed, the time column is missing, or a field name holds a NUL byte; otherwise as
    /// [`Collection::insert_many`].
    pub fn insert_record_batch(
        &self,
        batch: &RecordBatch,
        options: &InsertOptions,
    ) -> Result<InsertResult> {
        self.inner
            .insert_record_batch(batch, options, &RecordBatchOptions::default())?
            .ordered(options.ordered)
    }

    /// As [`Collection::insert_record_batch`] (SPEC §2, §6, §7), with the time and meta
    /// fields taken from columns named otherwise ([`RecordBatchOptions`]): the time field
    /// from `time_column`, the meta document from the flat `meta_columns`.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tscoll_engine::*;
    /// use tscoll_engine::arrow::RecordBatchOptions;
    /// use tscoll_engine::arrow::array::{Float64Array, RecordBatch, StringArray, TimestampMillisecondArray};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("tags"))?;
    /// let batch = RecordBatch::try_from_iter([
    ///     ("when", Arc::new(TimestampMillisecondArray::from(vec![0, 1000])) as _),
    ///     ("host", Arc::new(StringArray::from(vec!["a", "b"])) as _),
    ///     ("region", Arc::new(StringArray::from(vec!["eu", "eu"])) as _),
    ///     ("cpu", Arc::new(Float64Array::from(vec![0.5, 2.0])) as _),
    /// ])?;
    /// let mapping = RecordBatchOptions {
    ///     time_column: Some("when".into()),
    ///     meta_columns: vec!["host".into(), "region".into()],
    /// };
    /// coll.insert_record_batch_with(&batch, &InsertOptions::default(), &mapping)?;
    /// assert_eq!(coll.count(&bson::doc! { "tags": { "host": "b", "region": "eu" } })?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::insert_record_batch`]; `BadValue` before anything is inserted when
    /// a named column is not in the batch or is named twice, or meta columns are given for
    /// a collection without a meta field or beside a column named as the meta field.
    pub fn insert_record_batch_with(
        &self,
        batch: &RecordBatch,
        options: &InsertOptions,
        mapping: &RecordBatchOptions,
    ) -> Result<InsertResult> {
        self.inner
            .insert_record_batch(batch, options, mapping)?
            .ordered(options.ordered)
    }

    // Reading measurements.

    /// Finds measurements matching a MongoDB-style filter (SPEC §14).
    ///
    /// Supported, on the meta field and its sub-fields (`"meta.series"`), the time field and
    /// measurement fields (dotted paths too): `$eq`, `$gt`, `$gte`, `$lt`, `$lte`, `$in`,
    /// `$ne`, `$nin`, `$exists`, `$not`, `$type` (numbers and aliases, `"number"`), `$regex`
    /// with `$options` `imsx` (or a regular expression as the value; the `regex` crate's
    /// syntax, which has no look-around or back-references), `$mod`, `$size`, `$all`,
    /// `$elemMatch` (of operators or of a filter on document elements), and `$and`, `$or`,
    /// `$nor` at any depth, with MongoDB's semantics (type bracketing; `null` matches a
    /// missing field; `$ne`, `$nin` and `$not` match it too; an array matches when an element
    /// does); `$expr` with field paths, comparisons (BSON order across types), `$and`, `$or`,
    /// `$not` and arithmetic (`$add`, `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs`, on
    /// numbers and dates), evaluated per measurement. Not supported: other expression
    /// operators (date ones among them), `$where`, `$text`, geospatial operators. Regular
    /// expressions inside `$in` and `$nin` match strings, as MongoDB's do. The time field
    /// only holds dates: a comparison with another type matches nothing. Whole-meta equality
    /// is field-order sensitive (SPEC R-3.4).
    ///
    /// What is pushed down (SPEC §14.4): the top-level comparisons and `$in`s choose buckets
    /// through the index and prune them by their control record; a bucket that matches whole
    /// by time and meta is not filtered row by row. Parts of the filter that read only the
    /// meta field (any operator, in `$or`s too) are judged once per series; a whole-meta
    /// equality, `$in`, or `$or` of them scans the index entries of those series only. An `$or` prunes
    /// a bucket by its control record when every branch does (comparisons, `$in`,
    /// `$exists: true` on a field the bucket never held, `$type` and `$regex` on a field whose
    /// control min and max hold other types only). The rest (`$nin`, `$ne`, `$exists: false`,
    /// `$not`, `$nor`, `$expr`, ... on measurement or time fields: control cannot rule a
    /// bucket out for them) is evaluated exactly on each measurement of the buckets that
    /// remain; an `$expr` that fails on a measurement (a division by zero) fails the query
    /// with MongoDB's code (16608 for that one). Each result has the shape of SPEC §14.1:
    /// time field, meta field, then the bucket's other columns.
    ///
    /// Buckets are chosen through the meta+time index and pruned with their control record
    /// (SPEC §14.4); a bucket that matches whole by time and meta is returned without
    /// evaluating the filter per measurement (R-14.4.4, R-14.4.6).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..10).map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let opts = FindOptions { sort: Some(SortOrder::Descending), limit: Some(3), ..Default::default() };
    /// let last = coll.find(&doc! { "m": "a", "t": { "$gte": DateTime::from_millis(5000) } }, &opts)?;
    /// assert_eq!(last.iter().map(|d| d.get_i64("v").unwrap()).collect::<Vec<_>>(), [9, 8, 7]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `BadValue` for an unsupported operator or projection; [`Error::Storage`](crate::Error::Storage),
    /// [`Error::Codec`](crate::Error::Codec) or [`Error::Corruption`](crate::Error::Corruption)
    /// when stored data cannot be read.
    pub fn find(&self, filter: &Document, options: &FindOptions) -> Result<Vec<Document>> {
        crate::query::find(self, filter, options)
    }

    /// As [`Collection::find`], also returning what the query did ([`QueryStats`]).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..10).map(|h| doc! { "t": DateTime::from_millis(h * 3_600_000), "m": "a" }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?; // one bucket per hour
    /// let opts = FindOptions { sort: Some(SortOrder::Descending), limit: Some(1), ..Default::default() };
    /// let (last, stats) = coll.find_with_stats(&doc! {}, &opts)?;
    /// assert_eq!(last[0].get_datetime("t")?.timestamp_millis(), 9 * 3_600_000);
    /// assert_eq!(stats.buckets_unpacked, 1); // the newest bucket only
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn find_with_stats(
        &self,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<(Vec<Document>, QueryStats)> {
        crate::query::find_with_stats(self, filter, options)
    }

    /// As [`Collection::find`], streaming: the cursor reads and decodes one bucket when the
    /// rows before it have been taken, so memory does not grow with the result.
    ///
    /// Without a sort, the cursor holds one bucket's matching measurements at a time. With a
    /// sort on time and no limit, buckets are read in min-time order and merged by time; the
    /// cursor holds the buckets whose time ranges overlap the current position (about one per
    /// series with `bucketMaxSpanSeconds` of data each). With a sort and a limit it holds the
    /// best `limit` measurements (SPEC R-14.4.7). The index is read when the cursor is made,
    /// and the rows open buckets hold that are not stored yet are copied then (those of the
    /// buckets the filter may select; each is dropped once read): every measurement
    /// acknowledged before the cursor is made is seen; buckets removed later are skipped,
    /// measurements added later may or may not be seen.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..100).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": i % 3 }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let opts = FindOptions { sort: Some(SortOrder::Ascending), ..Default::default() };
    /// let mut previous = i64::MIN;
    /// for doc in coll.find_cursor(&doc! {}, &opts)? {
    ///     let t = doc?.get_datetime("t")?.timestamp_millis();
    ///     assert!(t >= previous);
    ///     previous = t;
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// Making the cursor: a filter or projection [`Collection::find`] rejects, or an index scan
    /// that fails. Each item: [`Error::Storage`](crate::Error::Storage),
    /// [`Error::Codec`](crate::Error::Codec) or [`Error::Corruption`](crate::Error::Corruption)
    /// when a bucket cannot be read; the cursor ends after the first error.
    pub fn find_cursor(&self, filter: &Document, options: &FindOptions) -> Result<FindCursor> {
        crate::query::find_cursor(self, filter, options)
    }

    /// The number of measurements matching `filter` (same filters as [`Collection::find`]).
    /// Buckets that match whole by time and meta are counted from `control.count` (SPEC
    /// R-14.1.4); only buckets straddling a time bound or filtered on measurement fields are
    /// unpacked, and only the columns the filter reads are decoded.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..100).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": i % 2 }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let (n, stats) = coll.count_with_stats(&doc! { "m": 1 })?;
    /// assert_eq!(n, 50);
    /// assert_eq!(stats.buckets_unpacked, 0); // every bucket counted from control.count
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn count(&self, filter: &Document) -> Result<u64> {
        crate::query::count::count(self, filter)
    }

    /// As [`Collection::count`], also returning what the query did ([`QueryStats`];
    /// `rows_returned` is the count).
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn count_with_stats(&self, filter: &Document) -> Result<(u64, QueryStats)> {
        crate::query::count::count_with_stats(self, filter)
    }

    /// The last point of every series: per series (meta value, SPEC §3), the measurement
    /// with the greatest time among those matching `filter`, in the shape of SPEC R-14.1.2.
    /// Results are ordered by meta value (BSON order, R-4.3.4; the no-meta series first).
    /// Which of several measurements of one series sharing the greatest time is returned is
    /// not specified.
    ///
    /// Meant for filters on the meta field and a time upper bound (`$lt`/`$lte`): then it
    /// reads about one control record and unpacks one bucket per series, whatever the number
    /// of buckets. Any filter [`Collection::find`] accepts works; buckets that straddle a
    /// time bound or are filtered on measurement fields are unpacked until a match is found.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..48).map(|h| doc! { "t": DateTime::from_millis(h * 1_800_000), "m": h % 2, "v": h }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let (last, stats) = coll.last_points_with_stats(&doc! {})?;
    /// assert_eq!(last.iter().map(|d| d.get_i64("v").unwrap()).collect::<Vec<_>>(), [46, 47]);
    /// assert_eq!(stats.buckets_unpacked, 2); // one per series, of 48 buckets
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn last_points(&self, filter: &Document) -> Result<Vec<Document>> {
        crate::query::last_point::last_points(self, filter)
    }

    /// As [`Collection::last_points`], also returning what the query did ([`QueryStats`]).
    ///
    /// # Errors
    /// As [`Collection::find`].
    pub fn last_points_with_stats(&self, filter: &Document) -> Result<(Vec<Document>, QueryStats)> {
        crate::query::last_point::last_points_with_stats(self, filter)
    }

    /// Aggregates the measurements matching `filter` (same filters as [`Collection::find`])
    /// per time window and optionally per series (SPEC R-14.4.7); see [`AggregateSpec`] for
    /// the result shape. Buckets that match whole and lie in one window are answered from
    /// their control record when every accumulator allows it (`Count`; `Min`/`Max` of a
    /// top-level field whose control min and max have the same type, R-4.3.2; `Max` of the
    /// time field): [`QueryStats::buckets_from_control`] counts them.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..120).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let spec = AggregateSpec {
    ///     window_ms: 3_600_000,
    ///     by_series: true,
    ///     outputs: vec![("n".into(), Accumulator::Count), ("top".into(), Accumulator::Max("v".into()))],
    /// };
    /// let (groups, stats) = coll.aggregate_windows_with_stats(&doc! {}, &spec)?;
    /// assert_eq!(groups[1], doc! { "_id": { "m": "a", "t": DateTime::from_millis(3_600_000) }, "n": 60_i64, "top": 119_i64 });
    /// assert_eq!(stats.buckets_unpacked, 0); // one bucket per hour, answered from control
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `BadValue` for a bad spec (window ≤ 0, a bad or repeated output name, an empty field)
    /// or filter; as [`Collection::find`] when stored data cannot be read.
    pub fn aggregate_windows(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<Vec<Document>> {
        crate::query::aggregate::aggregate_windows(self, filter, spec)
    }

    /// As [`Collection::aggregate_windows`], also returning what the query did ([`QueryStats`];
    /// `rows_returned` is the number of groups).
    ///
    /// # Errors
    /// As [`Collection::aggregate_windows`].
    pub fn aggregate_windows_with_stats(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<(Vec<Document>, QueryStats)> {
        crate::query::aggregate::aggregate_windows_with_stats(self, filter, spec)
    }

    /// As [`Collection::aggregate_windows`], with the groups as columns ([`AggregateBatch`]): each
    /// series' meta value once instead of once per group, no document per group.
    ///
    /// # Errors
    /// As [`Collection::aggregate_windows`].
    pub fn aggregate_columns(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<AggregateBatch> {
        crate::query::aggregate::aggregate_columns(self, filter, spec)
    }

    /// As [`Collection::aggregate_columns`], also returning what the query did
    /// ([`QueryStats`]).
    ///
    /// # Errors
    /// As [`Collection::aggregate_windows`].
    pub fn aggregate_columns_with_stats(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
    ) -> Result<(AggregateBatch, QueryStats)> {
        crate::query::aggregate::aggregate_columns_with_stats(self, filter, spec)
    }

    /// As [`Collection::find`] (SPEC §14: same filter, projection, sort on time, skip and limit), with
    /// the result as Arrow record batches filled from the decoded bucket columns: no
    /// document is made per measurement, and only the columns the projection and filter
    /// need are decoded. The schema (docs/arrow.md): the time field as
    /// `Timestamp(Millisecond, "UTC")`, the meta field (a document as a `Struct`, strings
    /// dictionary-encoded), then each measurement field in order of first appearance, typed
    /// from the BSON types it holds (int32 → `Int32`, int32 and int64 → `Int64`, numbers
    /// with a double → `Float64`, strings → `Utf8`, dates → `Timestamp`, ...; documents,
    /// arrays and mixed types → `Utf8` of relaxed Extended JSON). Rows in the order of
    /// [`Collection::find`].
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// use arrow_array::{Array, Int32Array};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..4).map(|i| doc! { "t": DateTime::from_millis(i), "m": "a", "v": i as i32 }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let opts = FindOptions { projection: Some(doc! { "v": 1 }), ..Default::default() };
    /// let batches = coll
    ///     .find_arrow(&doc! { "v": { "$gte": 2 } }, &opts, &ArrowOptions::default())?
    ///     .collect::<std::result::Result<Vec<_>, _>>()?;
    /// let v = batches[0].column_by_name("v").unwrap();
    /// assert_eq!(v.as_any().downcast_ref::<Int32Array>().unwrap().values(), &[2, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find`]; `BadValue` for a sort on other fields than time
    /// (`sort_by`), or a given schema that does not start with the time field or has a
    /// column type no BSON type maps to. Each batch: as [`Collection::find_cursor`]'s
    /// items, and `TypeMismatch` for a value its column in a given schema does not take.
    pub fn find_arrow(
        &self,
        filter: &Document,
        options: &FindOptions,
        arrow: &ArrowOptions,
    ) -> Result<ArrowCursor> {
        crate::query::arrow::find_arrow(self, filter, options, arrow)
    }

    /// The schema of [`Collection::find_arrow`]'s result for `filter` and `projection`,
    /// from the control records of the buckets the filter selects and the meta values of
    /// their series (no bucket is decoded); with an empty filter, the schema of the whole
    /// collection as it is now, for a table that scans it in parts
    /// ([`ArrowOptions::schema`]).
    ///
    /// # Errors
    /// As [`Collection::find_arrow`].
    pub fn arrow_schema(
        &self,
        filter: &Document,
        projection: Option<&Document>,
    ) -> Result<SchemaRef> {
        crate::query::arrow::arrow_schema(self, filter, projection)
    }

    /// The schema that holds the results of two schemas of this collection's options: e.g.
    /// [`Collection::arrow_schema`] of two shards of one table (collections with the same
    /// time and meta fields in two databases: docs/scale-out.md), so that one given schema
    /// ([`ArrowOptions::schema`]) reads both. Column by column: the meta shapes joined
    /// (struct fields of either side), the fields of `a` then those only `b` has, each of
    /// the type that holds both sides' values (int32 and int64 → `Int64`, integers and
    /// doubles → `Float64`, any other mix → JSON text: docs/arrow.md).
    ///
    /// # Errors
    /// `BadValue` when either schema is not one of this collection's (its first column not
    /// the time field as `Timestamp(Millisecond, _)`, or a column type no BSON type maps
    /// to).
    pub fn join_arrow_schemas(&self, a: &SchemaRef, b: &SchemaRef) -> Result<SchemaRef> {
        crate::query::arrow::join_arrow_schemas(&self.inner.spec(), a, b)
    }

    /// [`Collection::join_arrow_schemas`] for a collection of options `spec` that is not open
    /// here (a shard held by another process).
    ///
    /// # Errors
    /// As [`Collection::join_arrow_schemas`].
    pub fn join_arrow_schemas_of(
        spec: &CollectionSpec,
        a: &SchemaRef,
        b: &SchemaRef,
    ) -> Result<SchemaRef> {
        crate::query::arrow::join_arrow_schemas(spec, a, b)
    }

    /// [`Collection::aggregate_columns`]' groups as an Arrow record batch of `schema`,
    /// laid out as [`AggregateBatch::to_record_batch`] says, made straight from the
    /// accumulators (no BSON value per output and group), the groups in no particular order
    /// (the order they are kept in memory).
    ///
    /// # Errors
    /// As [`Collection::aggregate_columns`] and [`AggregateBatch::to_record_batch`].
    pub fn aggregate_record_batch(
        &self,
        filter: &Document,
        spec: &AggregateSpec,
        schema: &SchemaRef,
        with_meta: bool,
    ) -> Result<RecordBatch> {
        crate::query::arrow::groups::aggregate_record_batch(self, filter, spec, schema, with_meta)
    }

    /// Runs an aggregation pipeline over the collection's measurements and returns the
    /// resulting documents (MongoDB's `aggregate`). Each measurement enters as `find`
    /// returns it: `{<timeField>, <metaField>, <fields>...}`.
    ///
    /// The stages, expressions, accumulators and window functions are MongoDB 8.0's, as
    /// `docs/semantics.md` §14.6 lists them with every known difference. Leading `$match`
    /// stages are pushed down to the read; a `$group` by a `$dateTrunc` window of the time
    /// field (and the meta field) right after them is answered from bucket sums; a `$sort` on
    /// the time field there streams from the buckets in time order ([`Collection::explain_aggregate`]
    /// says which). `$group` holds its groups in memory; `$sort` holds a bounded amount of
    /// its input and spills the rest, `$setWindowFields` too but for a window over a whole
    /// partition or a `range`, which holds its partition ([`Collection::aggregate_cursor`],
    /// which returns the results as they are computed, where this collects them).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..120).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let hourly = coll.aggregate(&[
    ///     doc! { "$match": { "m": "a" } },
    ///     doc! { "$group": {
    ///         "_id": { "$dateTrunc": { "date": "$t", "unit": "hour" } },
    ///         "avg": { "$avg": "$v" },
    ///     } },
    /// ])?;
    /// assert_eq!(hourly[1], doc! { "_id": DateTime::from_millis(3_600_000), "avg": 89.5 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Rejected`] naming the stage, with MongoDB's code ([`ErrorCode`]), for a stage
    /// or operator not supported or malformed (`Location40324` for an unknown stage name,
    /// `InvalidPipelineOperator` for an unknown expression operator, MongoDB's codes for the
    /// other errors of a stage, e.g. `Location5897900` when `$densify` would make more than
    /// 500 000 documents), and for an expression that fails on a document (e.g.
    /// `Location16608` for a `$divide` by zero, `Location16006` for `$hour` of a string);
    /// `BSONObjectTooLarge` when a `$push` or `$addToSet` passes 16 MiB in one group; the
    /// errors of [`Collection::find`] when the read fails (of the collection `$lookup` reads
    /// too).
    pub fn aggregate(&self, pipeline: &[Document]) -> Result<Vec<Document>> {
        crate::pipeline::aggregate(self, pipeline)
    }

    /// Runs an aggregation pipeline as [`Collection::aggregate`] does and returns its
    /// results as Arrow record batches of [`DEFAULT_BATCH_ROWS`](crate::DEFAULT_BATCH_ROWS)
    /// rows (the last one fewer; none for no result), in one schema found from all of them
    /// ([`crate::arrow::documents_to_batches`], docs/arrow.md "Documents → Arrow"): a
    /// column per top-level field in the order first seen, typed from its values (double →
    /// `Float64`, int → `Int32`, int and long → `Int64`, numbers with a double → `Float64`,
    /// string → `Utf8`, date → `Timestamp(Millisecond, "UTC")`, embedded document →
    /// `Struct`, array → `List`, ObjectId, Decimal128, timestamp and binary data marked with
    /// `tscoll.bson_type`), and a field whose values have no common type (or no Arrow type:
    /// regular expressions, MinKey, …) a `Utf8` column of relaxed Extended JSON texts
    /// marked `tscoll.encoding = json`. [`crate::arrow::ArrowBatches::notes`] says which
    /// fields were widened or made JSON. The results are held in memory as documents
    /// first: a pipeline of many results is better read with
    /// [`Collection::aggregate_cursor`].
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// use tscoll_engine::arrow::array::cast::AsArray;
    /// use tscoll_engine::arrow::array::types::{Float64Type, TimestampMillisecondType};
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..120).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let hourly = coll.aggregate_arrow(&[
    ///     doc! { "$group": {
    ///         "_id": { "$dateTrunc": { "date": "$t", "unit": "hour" } },
    ///         "avg": { "$avg": "$v" },
    ///     } },
    ///     doc! { "$sort": { "_id": 1 } },
    /// ])?;
    /// assert_eq!(hourly.num_rows(), 2);
    /// let batch = &hourly.batches[0];
    /// assert_eq!(batch.column(0).as_primitive::<TimestampMillisecondType>().value(1), 3_600_000);
    /// assert_eq!(batch.column(1).as_primitive::<Float64Type>().value(1), 89.5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::aggregate`]; [`Error::Rejected`] (`BadValue`) when a batch would
    /// hold more than 2 GiB of strings or bytes in one column.
    pub fn aggregate_arrow(&self, pipeline: &[Document]) -> Result<crate::arrow::ArrowBatches> {
        let docs = self.aggregate(pipeline)?;
        crate::arrow::documents_to_batches(&docs, crate::DEFAULT_BATCH_ROWS)
    }

    /// Runs an aggregation pipeline as [`Collection::aggregate`] does, its results read as
    /// they are computed: the stages that take one document at a time pass each on as the
    /// cursor is read; `$group` holds its groups; `$sort` holds at most
    /// `DatabaseOptions::sort_memory_bytes` of documents (100 MiB by default; sorted runs
    /// past it go to temporary files, merged as the cursor is read), or about twice `n`
    /// before a `$limit` of `n`; `$setWindowFields` sorts as `$sort` does, then holds one
    /// partition at a time, or a chunk of one with the documents its windows reach when
    /// every window is a `documents` window with numeric bounds.
    ///
    /// # Errors
    /// As [`Collection::aggregate`]: a stage that holds or sorts its input (`$group`,
    /// `$sort`, `$count`, `$setWindowFields`, `$sortByCount`, `$bucket`, `$bucketAuto`,
    /// `$facet`, `$sample`, `$densify`, `$fill`) reads it here, so the errors of the stages
    /// before it come here; the others come from the cursor, which ends after one.
    pub fn aggregate_cursor(&self, pipeline: &[Document]) -> Result<AggregateCursor> {
        crate::pipeline::aggregate_cursor(self, pipeline)
    }

    /// Runs an aggregation pipeline over `input` in place of the collection's measurements:
    /// what follows a stage that makes its own documents (a server's `$collStats`), with the
    /// collection's `$lookup` targets and memory budget. The stages and their rules are
    /// [`Collection::aggregate`]'s; a leading `$match` is applied to `input` as any other.
    ///
    /// ```
    /// # use bson::doc;
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t"))?;
    /// let input = vec![doc! { "n": 1 }, doc! { "n": 2 }, doc! { "n": 3 }];
    /// let out: Vec<_> = coll
    ///     .aggregate_documents(input, &[doc! { "$match": { "n": { "$gte": 2 } } }, doc! { "$count": "k" }])?
    ///     .collect::<Result<_>>()?;
    /// assert_eq!(out, [doc! { "k": 2 }]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::aggregate`], for the stages.
    pub fn aggregate_documents(
        &self,
        input: Vec<Document>,
        pipeline: &[Document],
    ) -> Result<AggregateCursor> {
        crate::pipeline::aggregate_documents(self, input, pipeline)
    }

    /// What [`Collection::find`] with `filter` and `options` reads, as a document
    /// (MongoDB's `explain`): `{queryPlanner: {namespace, parsedQuery, winningPlan: {stage,
    /// buckets: {index, series, metaPredicates, minTime, controlPruning,
    /// perMeasurementFilter}, sort?, limit?, skip?, projection?}}}`, where `buckets` says how
    /// candidate buckets are chosen: through the meta+time index (`series`: `"all"` or the
    /// number of whole-meta equality operands whose entries alone are read), a secondary
    /// index (its name) or none, with the bounds on `control.min.<timeField>` (SPEC
    /// R-14.4.3). With [`ExplainVerbosity::ExecutionStats`] the query is run (results
    /// dropped) and `executionStats` holds `nReturned`, `executionTimeMillis` and the
    /// counters of [`QueryStats::to_document`]: index entries read, buckets read, pruned by
    /// control, matched whole, answered from control or rollups, unpacked.
    ///
    /// ```
    /// # use bson::{doc, DateTime};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("m", &TimeseriesOptions::new("t").meta_field("host"))?;
    /// let docs = [doc! { "t": DateTime::from_millis(0), "host": "a", "v": 1 }];
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let plan = coll.explain_find(
    ///     &doc! { "host": "a" },
    ///     &FindOptions::default(),
    ///     ExplainVerbosity::ExecutionStats,
    /// )?;
    /// let buckets = plan.get_document("queryPlanner")?.get_document("winningPlan")?
    ///     .get_document("buckets")?;
    /// assert_eq!(buckets.get_str("index")?, "meta+time");
    /// assert_eq!(buckets.get_i64("series")?, 1);
    /// assert_eq!(plan.get_document("executionStats")?.get_i64("nReturned")?, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::find_cursor`].
    pub fn explain_find(
        &self,
        filter: &Document,
        options: &FindOptions,
        verbosity: ExplainVerbosity,
    ) -> Result<Document> {
        crate::query::explain::explain_find(self, filter, options, verbosity)
    }

    /// What [`Collection::aggregate`] with `pipeline` does, as a document (MongoDB's
    /// `explain`): `{queryPlanner: {namespace, read, stages}}`. `read` is the read's bucket
    /// selection (as [`Collection::explain_find`]'s `buckets`) with its `filter`, the
    /// leading `$match` stages; each entry of `stages` is `{stage, answeredBy}`:
    /// `"read filter"`, `"bucket sums"` (a `$group` by time window and meta answered from
    /// control records, rollups and bucket sums where buckets allow it) or `"stream"`, with
    /// what the stage `holds` in memory. With [`ExplainVerbosity::ExecutionStats`] the
    /// pipeline is run (results dropped) and `executionStats` holds `nReturned`,
    /// `executionTimeMillis` and the read's counters.
    ///
    /// # Errors
    /// As [`Collection::aggregate`].
    pub fn explain_aggregate(
        &self,
        pipeline: &[Document],
        verbosity: ExplainVerbosity,
    ) -> Result<Document> {
        crate::pipeline::explain_aggregate(self, pipeline, verbosity)
    }

    // Direct writes: deletes, updates, TTL, collMod.

    /// Deletes every measurement matching `filter` (SPEC §11.1; the filter language of
    /// [`Collection::find`]). A filter on the meta field only (and its sub-fields) removes
    /// whole buckets without reading them; otherwise each bucket that may match (control
    /// pruning, SPEC §14.4) is unpacked, its matching measurements removed and the rest
    /// written back under the same `_id` with the same `control.min.<time>` and the other
    /// control min/max recomputed; a bucket left empty is removed. Every bucket changed is
    /// cleared from the catalog first (R-7.4.1). Each bucket changes atomically; a failure
    /// leaves the buckets changed before it changed.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..10).map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// assert_eq!(coll.delete_many(&doc! { "v": { "$gte": 7 } })?.deleted, 3);
    /// assert_eq!(coll.delete_many(&doc! { "m": "a" })?.deleted, 7);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `BadValue` for a filter [`Collection::find`] does not support; [`Error::Storage`],
    /// [`Error::Codec`] or [`Error::Corruption`] when stored data cannot be read or written.
    pub fn delete_many(&self, filter: &Document) -> Result<DeleteResult> {
        self.inner.delete(filter, false)
    }

    /// Deletes one measurement matching `filter` (SPEC §11.1 [7.0+] `deleteOne`): the first
    /// found, in no particular order.
    ///
    /// # Errors
    /// As [`Collection::delete_many`].
    pub fn delete_one(&self, filter: &Document) -> Result<DeleteResult> {
        self.inner.delete(filter, true)
    }

    /// Updates every measurement matching `filter` (SPEC §11.2, MongoDB 8.0 `multi: true`).
    /// Same as [`Collection::update_many_with`] without upsert.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..4).map(|i| doc! { "t": DateTime::from_millis(i * 1000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let r = coll.update_many(&doc! { "v": { "$gte": 2 } }, &doc! { "$inc": { "v": 10 } })?;
    /// assert_eq!((r.matched, r.modified), (2, 2));
    /// assert_eq!(coll.count(&doc! { "v": { "$gte": 12 } })?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`Collection::update_many_with`].
    pub fn update_many(
        &self,
        filter: &Document,
        update: impl Into<Update>,
    ) -> Result<UpdateResult> {
        crate::direct_write::update::update_many(self, filter, &update.into())
    }

    /// Updates every measurement matching `filter` (the filter language of
    /// [`Collection::find`]) with the update operators of `update`: `$set`, `$unset`,
    /// `$inc`, `$mul`, `$min`, `$max`, `$rename`, `$currentDate`, `$setOnInsert`, and on
    /// array fields `$push` (with `$each`, `$position`, `$slice`, `$sort`), `$addToSet`
    /// (with `$each`), `$pull`, `$pullAll`, `$pop`; dotted paths reach sub-documents and
    /// array elements by index, and positional parts stand for elements: `$` the one the
    /// filter matched, `$[]` every one, `$[<identifier>]` those the array filter of
    /// `options.array_filters` matches (SPEC §11.2, MongoDB 8.0). `update` may instead be an
    /// update pipeline ([`Update::Pipeline`]: `$set`/`$addFields`, `$project`, `$unset`,
    /// `$replaceRoot`/`$replaceWith` stages whose expressions read the measurement).
    ///
    /// With a filter on the meta field only and operators that change only the meta field,
    /// each matching bucket moves whole to its new (renormalized, R-3.1) series. Otherwise
    /// every candidate bucket (control pruning, SPEC §14.4) is unpacked: measurements the
    /// update changes are taken out — the bucket is written back under its `_id` with the
    /// rest, or removed when none is left — and placed again (§6.2) as new measurements in
    /// new buckets. The whole update is one atomic write: after a crash it happened whole or
    /// not at all, and a failing measurement changes nothing. Changed buckets are cleared
    /// from the catalog first (R-7.4.1). The changed buckets are held in memory until the
    /// write.
    ///
    /// # Errors
    /// - `FailedToParse`: a replacement document (use [`Collection::replace_one`]), an unknown
    ///   operator, operators mixed with fields.
    /// - `ConflictingUpdateOperators`: two operators on the same path or nested paths.
    /// - `TypeMismatch`: `$inc`/`$mul` of a non-number; `BadValue`: an array operator on a
    ///   non-array, or an updated (or upserted) measurement whose time field is missing or
    ///   not a datetime; `PathNotViable`: a path through a scalar.
    /// - Positional paths: `BadValue` for `$` without an array match in the filter, `$[]` on
    ///   a missing or non-array field, an identifier without an array filter; `FailedToParse`
    ///   for an array filter no path uses or a malformed one; `ConflictingUpdateOperators`
    ///   when two operators' positional paths reach the same element.
    /// - Pipelines: `InvalidOptions` for a stage other than the five above, `ImmutableField`
    ///   when the result changes `_id` (a result without `_id` keeps the old one), MongoDB's
    ///   40228 for a new root that is not a document, an expression's own error.
    /// - `BadValue` for a filter [`Collection::find`] does not support; storage errors as
    ///   [`Collection::delete_many`].
    ///
    /// On any error nothing changes.
    pub fn update_many_with(
        &self,
        filter: &Document,
        update: impl Into<Update>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.inner.update(filter, &update.into(), true, options)
    }

    /// Updates one measurement matching `filter` (MongoDB 8.0 `multi: false`), the first
    /// found in no particular order. `update` is update operators or an update pipeline as
    /// in [`Collection::update_many_with`], or a replacement document (the measurement
    /// becomes it, keeping its `_id` when the replacement has none).
    ///
    /// # Errors
    /// As [`Collection::update_many_with`] (a replacement is accepted here).
    pub fn update_one(
        &self,
        filter: &Document,
        update: impl Into<Update>,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        self.inner.update(filter, &update.into(), false, options)
    }

    /// Replaces one measurement matching `filter` by `replacement` (MongoDB's `replaceOne`),
    /// keeping its `_id` when `replacement` has none; with upsert and no match, inserts
    /// `replacement`.
    ///
    /// # Errors
    /// `FailedToParse` when `replacement` holds update operators; otherwise as
    /// [`Collection::update_one`].
    pub fn replace_one(
        &self,
        filter: &Document,
        replacement: &Document,
        options: &UpdateOptions,
    ) -> Result<UpdateResult> {
        crate::direct_write::update::replace_one(self, filter, replacement, options)
    }

    /// Runs one TTL pass at wall time `now_ms` (ms since the epoch, SPEC R-10.6): deletes every
    /// whole bucket whose `_id` time (its rounded min time) is before
    /// `now − expireAfterSeconds − bucketMaxSpanSeconds` (R-10.1), so no measurement goes while
    /// another of its bucket could still be unexpired (R-10.2). Nothing happens without
    /// `expireAfterSeconds` (or after collMod set it `"off"`, R-10.3). Times are compared on the
    /// full 64-bit range (R-10.4). Expired buckets are cleared from the catalog first (R-7.4.1).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let opts = TimeseriesOptions::new("t").meta_field("m").expire_after_seconds(60);
    /// let coll = db.create_collection("c", &opts)?;
    /// coll.insert_many(&[doc! { "t": DateTime::from_millis(0), "m": 1, "v": 1 }], &InsertOptions::default())?;
    /// // 60 s of TTL plus the 3600 s span: gone two hours later.
    /// assert_eq!(coll.expire(3_000_000)?.measurements, 0);
    /// assert_eq!(coll.expire(7_200_000)?.measurements, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when reading or deleting fails; buckets deleted before the
    /// failure stay deleted.
    pub fn expire(&self, now_ms: i64) -> Result<ExpireResult> {
        self.inner.expire(now_ms)
    }

    /// Changes the collection's options with a MongoDB `collMod` command document (SPEC §12),
    /// e.g. `{timeseries: {granularity: "minutes"}}`, `{timeseries: {bucketMaxSpanSeconds:
    /// 7200, bucketRoundingSeconds: 7200}}`, `{expireAfterSeconds: 3600}` or
    /// `{expireAfterSeconds: "off"}`. A `collMod` field naming the collection is ignored.
    /// Returns the new effective options, saved durably.
    ///
    /// - Granularity only gets coarser (R-12.1); the same granularity is a no-op.
    /// - `bucketMaxSpanSeconds` and `bucketRoundingSeconds` go together, equal, each at least
    ///   the current effective value, at most 31 536 000 (R-12.2); they remove the granularity.
    /// - `timeseries: {}` is a no-op (R-12.3); `timeseries` cannot be combined with another
    ///   option (R-12.4).
    /// - Stored buckets are untouched; open buckets stay open and take the new span; queries
    ///   use the new span from now on (R-12.5, R-14.4.5); a changed collection is no longer
    ///   fixed bucketing (R-12.6).
    /// - `expireAfterSeconds` applies at the next TTL pass (R-10.3).
    /// - `index: {name, hidden}` or `index: {keyPattern, hidden}` hides or unhides an index
    ///   given by name or by key pattern in user form (allowed alone, R-12.4).
    ///
    /// ```
    /// # use bson::doc;
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t"))?;
    /// let spec = coll.coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })?;
    /// assert_eq!(spec.bucket_max_span_seconds, 86_400);
    /// let err = coll.coll_mod(&doc! { "timeseries": { "granularity": "seconds" } }).unwrap_err();
    /// assert_eq!(err.code(), ErrorCode::InvalidOptions);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `InvalidOptions` for a forbidden transition, option or combination (messages as
    /// MongoDB's); `BadValue` for out-of-range seconds or an unknown granularity;
    /// `TypeMismatch` for values of the wrong type; `IDLUnknownField` for an unknown option
    /// inside `timeseries` or at the top level; `IndexNotFound` for an `index` option naming
    /// no index (by name or key pattern); [`Error::Storage`] when saving fails.
    pub fn coll_mod(&self, command: &Document) -> Result<CollectionSpec> {
        crate::direct_write::collmod::coll_mod(self, command)
    }

    // Indexes.

    /// Creates an index (MongoDB's `createIndexes` on a time-series collection, SPEC §13) and
    /// returns its name: `options.name`, or MongoDB's generated `<field>_<direction>_...`.
    ///
    /// Keys in user form: `<metaField>` and `<metaField>.<path>` (→ `meta`, `meta.<path>`),
    /// the time field (→ `control.min/max.<time>`), measurement fields (→
    /// `control.min/max.<field>`), ascending (`1`) or descending (`-1`), compound in any mix
    /// (SPEC R-13.3). Existing buckets are indexed before the call returns; commits keep the
    /// index current from then on. Creating the default key `{<metaField>: 1, <timeField>: 1}`
    /// after it was dropped restores the default index (R-13.2).
    ///
    /// An identical index (same key, name and options) already existing is a success that
    /// changes nothing.
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// assert_eq!(coll.create_index(&doc! { "temp": -1 }, &IndexOptions::default())?, "temp_-1");
    /// let names: Vec<String> = coll
    ///     .list_indexes()?
    ///     .iter()
    ///     .map(|d| d.get_str("name").unwrap().to_owned())
    ///     .collect();
    /// assert_eq!(names, ["m_1_t_1", "temp_-1"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// * `InvalidOptions`: `unique`; text indexes ("Text indexes are not supported on
    ///   time-series collections"); `sparse` on a measurement field; `expireAfterSeconds`
    ///   without a partial filter on the meta field (R-13.4) or on a non-time field.
    /// * `BadValue`: a non-numeric direction on the time field; a special index type on a
    ///   measurement field (R-13.3); a `partialFilterExpression` tscoll cannot evaluate; the
    ///   name `_id_`.
    /// * `CannotCreateIndex`: hashed, 2d, 2dsphere, geoHaystack and wildcard indexes (R-13.5);
    ///   partial TTL indexes (R-10.5); an empty or malformed key pattern; `sparse` with a
    ///   partial filter; more than 63 indexes.
    /// * `IndexKeySpecsConflict`: an index of that name exists with another key.
    /// * `IndexOptionsConflict`: an index with that key exists under another name, or with
    ///   that name and other options.
    /// * [`Error::Storage`] when fjall fails.
    pub fn create_index(&self, keys: &Document, options: &IndexOptions) -> Result<String> {
        crate::index::ddl::create_index(self, keys, options)
    }

    /// Drops the index called `name` (MongoDB's `dropIndexes`); `"*"` drops every index.
    ///
    /// Dropping the default index keeps the bucket directory but disables query-based
    /// reopening (SPEC R-13.2, R-6.8.4); see `docs/keys.md`.
    ///
    /// # Errors
    /// `IndexNotFound` for `_id_` (SPEC R-13.1) and for an unknown name; [`Error::Storage`]
    /// when fjall fails.
    pub fn drop_index(&self, name: &str) -> Result<()> {
        crate::index::ddl::drop_index(self, name)
    }

    /// Drops the index with key pattern `keys` (user form), as `dropIndexes` with a key.
    ///
    /// # Errors
    /// `IndexNotFound` when the pattern does not convert (SPEC R-13.3) or no index has it;
    /// [`Error::Storage`] when fjall fails.
    pub fn drop_index_by_key(&self, keys: &Document) -> Result<()> {
        crate::index::ddl::drop_index_by_key(self, keys)
    }

    /// As [`Collection::hide_index`] for the index with key pattern `keys` (user form, SPEC
    /// R-13.3), as collMod `index: {keyPattern, hidden}` (SPEC R-12.4).
    ///
    /// # Errors
    /// `IndexNotFound` when the pattern does not convert (SPEC R-13.3) or no index has it;
    /// [`Error::Storage`] when the record cannot be saved.
    pub fn hide_index_by_key(&self, keys: &Document, hidden: bool) -> Result<()> {
        crate::index::ddl::hide_index_by_key(self, keys, hidden)
    }

    /// Hides or unhides an index (collMod `index: {name, hidden}`, SPEC R-12.4): a hidden
    /// index is maintained but queries do not use it.
    ///
    /// # Errors
    /// `IndexNotFound` for `_id_` (SPEC R-13.1) and for an unknown name; [`Error::Storage`]
    /// when the record cannot be saved.
    pub fn hide_index(&self, name: &str, hidden: bool) -> Result<()> {
        crate::index::ddl::hide_index(self, name, hidden)
    }

    /// The indexes in user form, as MongoDB's `listIndexes` shows them for a time-series
    /// collection: `{v: 2, key: {...}, name: "..."}` plus `sparse`, `partialFilterExpression`
    /// and `hidden` when set. The default index comes first (SPEC R-13.2); there is no `_id_`
    /// (R-13.1).
    ///
    /// # Errors
    /// None today; reserved for storage errors.
    pub fn list_indexes(&self) -> Result<Vec<Document>> {
        crate::index::ddl::list_indexes(self)
    }

    /// The indexes in bucket form (SPEC R-13.3), as `listIndexes` on the buckets collection
    /// shows them: e.g. `{v: 2, key: {meta: 1, "control.min.t": 1, "control.max.t": 1}, name:
    /// "m_1_t_1"}`; indexes on measurement fields or with a partial filter carry their user
    /// form as `originalSpec`.
    ///
    /// # Errors
    /// None today; reserved for storage errors.
    pub fn list_indexes_bucket_form(&self) -> Result<Vec<Document>> {
        crate::index::ddl::list_indexes_bucket_form(self)
    }

    // Statistics and inspection.

    /// Statistics of the collection (SPEC §8.1). Scans the control records and measures the
    /// stored segments: O(buckets).
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) or [`Error::Corruption`](crate::Error::Corruption) when stored data cannot be read.
    pub fn stats(&self) -> Result<CollectionStats> {
        crate::tools::stats::stats(self)
    }

    /// Every stored bucket in MongoDB's bucket shape (SPEC §4.1) for inspection:
    /// `{_id, control: {version, min, max, count}, meta, data: {<field>: {"0": v, ...}}}`, the
    /// data columns as v1-style objects keyed by row position (skips left out).
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage), [`Error::Codec`](crate::Error::Codec) or [`Error::Corruption`](crate::Error::Corruption) when stored data cannot be
    /// read.
    pub fn buckets(&self) -> Result<Vec<Document>> {
        crate::tools::stats::buckets(self)
    }

    /// The names of the collection's keyspaces: data, control, meta+time index, then one per
    /// secondary index (`docs/keys.md`; for tests and inspection).
    #[doc(hidden)]
    #[must_use]
    pub fn storage_keyspaces(&self) -> Vec<String> {
        crate::tools::verify::storage_keyspaces(self)
    }
}

impl CollectionInner {
    /// Every keyspace the collection has written: its buckets', the database's collection
    /// records and the secondary indexes opened so far (an unopened one holds nothing in
    /// memory).
    fn all_keyspaces(&self) -> Vec<fjall::Keyspace> {
        let mut out: Vec<fjall::Keyspace> = self.store.keyspaces().into_iter().cloned().collect();
        out.push(self.records.keyspace().clone());
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
            keyspaces::flush_memtable(&ks)?;
        }
        Ok(())
    }
}
