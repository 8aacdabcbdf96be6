//! The bucket catalog: placement of measurements into buckets (SPEC §6.2), rollover (§6.3),
//! reopening (§6.8), idle expiry (§6.9) and the commit protocol (§7), over 32 stripes.
//!
//! | file | concept |
//! |---|---|
//! | `mod.rs` | the catalog's state (stripes, series, open buckets), options, memory accounting |
//! | `placement.rs` | staging measurements into write batches; choosing, opening and rolling over buckets |
//! | `runs.rs` | staging columnar rows: runs appended to an open bucket column by column |
//! | `reopening.rs` | archived records and reopening (archive-based and query-based) |
//! | `expiry.rs` | idle expiry under memory pressure; emptying the catalog |
//! | `commit.rs` | the commit protocol: commit rights, prepared batches, finishing, aborting |
//! | `direct.rs` | direct writes (deletes, meta updates, TTL) and frozen buckets |
//! | `storing.rs` | rows leaving for storage: parts of open buckets and of buckets leaving memory |

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};

use bson::{Bson, Document};
use tscoll_codec::Column;

use crate::bucket::{
    Assessment, Bucket, BucketFields, BucketId, BucketRows, BucketState, ControlMinMax, FieldNames,
    ReopenedControl, RolloverAction, RolloverReason, SizeVerdict, StoredBucket, assess,
    derived_max_size, find_field, set_rounded_min_time,
};
use crate::key::BucketKey;
use crate::minmax::MinMax;
use crate::options::CatalogOptions;
use crate::stats::{CatalogGauges, ExecutionStats, StatsSnapshot};
use crate::sums::BucketSums;
use crate::sync::{Arc, AtomicU64, Condvar, Mutex, MutexGuard, Ordering, lock};
use crate::value::{element_size, push_value};
use crate::write_batch::{PreparedBatch, WriteBatch, WriterId};

mod commit;
mod direct;
mod expiry;
mod idle;
mod placement;
mod reopening;
mod runs;
mod storing;

pub use commit::{CommitRights, Prepared};
pub use storing::{BucketPart, UnstoredBucket};

/// Number of independent lock stripes (SPEC §0).
pub const STRIPES: usize = 32;

/// Largest BSON document: a bucket may never exceed it (SPEC §0, R-2.4).
pub const MAX_BSON_OBJECT_SIZE: u64 = 16 * 1024 * 1024;

/// The bucketing parameters of a collection the catalog needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketingSpec {
    /// `timeField`.
    pub time_field: String,
    /// `metaField`, if any.
    pub meta_field: Option<String>,
    /// Effective `bucketMaxSpanSeconds` in ms.
    pub max_span_ms: i64,
    /// Effective `bucketRoundingSeconds` in ms.
    pub rounding_ms: i64,
}

impl BucketingSpec {
    /// `round(t) = floor(t / r) · r` toward −∞ (SPEC ).
    #[must_use]
    pub fn round(&self, t: i64) -> i64 {
        t.div_euclid(self.rounding_ms)
            .checked_mul(self.rounding_ms)
            .unwrap_or(i64::MIN)
    }
}

/// One measurement to place: its input index, time (ms) and document.
#[derive(Clone, Copy, Debug)]
pub struct Measurement<'a> {
    /// Position in the caller's input (reported back with errors).
    pub index: usize,
    /// Value of the time field (ms since the epoch).
    pub time: i64,
    /// The whole measurement.
    pub doc: &'a Document,
    /// An `_id` generated for a measurement that has none (SPEC ): a data field placed
    /// before the document's own fields, as a driver would.
    pub generated_id: Option<&'a Bson>,
}

impl<'a> Measurement<'a> {
    /// The measurement's fields in order: the generated `_id` if any, then the document's.
    pub fn fields(&self) -> impl Iterator<Item = (&'a str, &'a Bson)> + use<'a> {
        self.generated_id
            .map(|id| ("_id", id))
            .into_iter()
            .chain(self.doc.iter().map(|(k, v)| (k.as_str(), v)))
    }
}

/// Result of a query-based reopening request (SPEC ).
#[derive(Debug)]
pub enum QueryOutcome {
    /// No index qualifies: counted as a failed query.
    NoIndex,
    /// No bucket matched.
    Miss,
    /// This bucket matched.
    Hit(Box<StoredBucket>),
}

/// Why a [`BucketSource`] could not read storage: the measurement that asked is rejected
/// with it ([`StageError::Storage`]); the catalog is left as if nothing was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SourceError(pub String);

/// The engine's side of reopening (SPEC §6.8): the catalog asks, the engine reads storage.
pub trait BucketSource {
    /// Reads the control of bucket `id` of series `key` (archive-based reopening, R-6.8.1);
    /// `Ok(None)` when it is gone or belongs to another series.
    ///
    /// # Errors
    /// [`SourceError`] when storage cannot be read.
    fn fetch(&self, key: &BucketKey, id: &BucketId) -> Result<Option<StoredBucket>, SourceError>;
    /// Finds a bucket of `key` with `min_time ≤ time`, `min_time > time − span`, not closed,
    /// count below `max_count` and size estimate below `max_size`.
    ///
    /// # Errors
    /// [`SourceError`] when storage cannot be read.
    fn query(
        &self,
        key: &BucketKey,
        time: i64,
        span_ms: i64,
        max_count: u32,
        max_size: u64,
    ) -> Result<QueryOutcome, SourceError>;
}

/// A source that never finds anything (no storage): every query misses.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoStorage;

impl BucketSource for NoStorage {
    fn fetch(&self, _: &BucketKey, _: &BucketId) -> Result<Option<StoredBucket>, SourceError> {
        Ok(None)
    }
    fn query(
        &self,
        _: &BucketKey,
        _: i64,
        _: i64,
        _: u32,
        _: u64,
    ) -> Result<QueryOutcome, SourceError> {
        Ok(QueryOutcome::Miss)
    }
}

/// A bucket that left memory (its rows, if any were unstored, are in
/// [`BucketCatalog::take_leaving`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedBucket {
    /// Bucket `_id`.
    pub id: BucketId,
    /// Segments it has once its leaving rows are stored.
    pub segments: u32,
    /// Why it left memory.
    pub action: RolloverAction,
}

impl ClosedBucket {
    /// The closed form of a bucket taken out of the catalog.
    pub(crate) fn of(bucket: Bucket, action: RolloverAction) -> ClosedBucket {
        ClosedBucket {
            id: bucket.id,
            segments: bucket.stored_segments,
            action,
        }
    }
}

/// Why a measurement could not be staged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StageError {
    /// The bucket holding it would exceed 16 MiB (SPEC, `BSONObjectTooLarge`).
    TooLarge(u64),
    /// A value of the row cannot be rebuilt from its column (`BadValue`).
    BadValue(String),
    /// Storage could not be read to find a bucket to reopen (SPEC §6.8).
    Storage(SourceError),
}

/// What staging a group of measurements produced.
#[derive(Debug, Default)]
pub struct StageOutcome {
    /// Batches the measurements went into, in first-use order.
    pub batches: Vec<Arc<WriteBatch>>,
    /// Buckets that left memory and may need their segments merged.
    pub closed: Vec<ClosedBucket>,
    /// Measurements refused: (input index, reason).
    pub rejected: Vec<(usize, StageError)>,
    /// Staged bytes not yet added to the catalog's memory usage.
    staged_bytes: u64,
}

/// The state of one staging call: the series, its options and what it produced so far.
pub(crate) struct Staging<'s> {
    writer: WriterId,
    stripe_no: usize,
    key: Arc<BucketKey>,
    spec: &'s BucketingSpec,
    options: &'s CatalogOptions,
    source: &'s dyn BucketSource,
    /// The series' only candidate while it has no rolling buckets: its open bucket, as the
    /// previous measurement left it. The measurements are one series in time order, so most
    /// of them go straight there after its rollover check (SPEC §6.2, §6.3).
    only_open: Option<BucketId>,
    out: StageOutcome,
    scratch: Vec<u8>,
}

impl Staging<'_> {
    /// Records that measurements went into `batch`.
    fn note_batch(&mut self, batch: Arc<WriteBatch>) {
        if !self.out.batches.iter().any(|b| Arc::ptr_eq(b, &batch)) {
            self.out.batches.push(batch);
        }
    }
}

#[derive(Debug, Default)]
struct Series {
    /// The open bucket without rollover reason.
    open: Option<BucketId>,
    /// Buckets with a recorded rollover reason still waiting for batches to finish.
    rolling: Vec<BucketId>,
}

/// Hashes a [`BucketId`] by mixing its 8 counter bytes, or a [`BucketKey`] by mixing its
/// xxh3 hash: ids come from a randomly seeded counter (SPEC §4.9) and keys carry a hash of
/// their bytes, so neither needs a keyed hash, and lookups happen for every measurement placed.
#[derive(Clone, Copy, Debug, Default)]
struct IdHash;

impl BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

#[derive(Debug)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        // A multiply and a fold spread the counter's low bits over the whole word.
        let m = u128::from(self.0) * 0x9e37_79b9_7f4a_7c15;
        #[expect(clippy::cast_possible_truncation, reason = "folding 128 bits into 64")]
        let folded = (m as u64) ^ ((m >> 64) as u64);
        folded
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(23) ^ u64::from_le_bytes(w);
        }
    }
}

#[derive(Debug, Default)]
struct Stripe {
    buckets: HashMap<BucketId, Bucket, IdHash>,
    series: HashMap<Arc<BucketKey>, Series, IdHash>,
    /// Archived records: (key, min time) → (id, its number in `archived_order`) (SPEC
    ///
    archived: HashMap<Arc<BucketKey>, BTreeMap<i64, (BucketId, u64)>, IdHash>,
    /// Archived records oldest first (the order expiry drops them in), by number.
    archived_order: BTreeMap<u64, (Arc<BucketKey>, i64)>,
    archived_seq: u64,
    /// Idle buckets, oldest first (`idle.rs`).
    idle: idle::IdleList,
    /// Direct writes in progress, by bucket (SPEC §6.7, R-7.4.1): such a bucket is not
    /// reopened.
    direct_writes: HashMap<BucketId, u32>,
    /// Frozen buckets (SPEC §6.10): never written or reopened again.
    frozen: HashSet<BucketId>,
    /// Buckets that left memory and whose rows the engine is storing, with those rows: not
    /// reopened until stored, and read from here meanwhile
    /// ([`BucketCatalog::memory_rows`]).
    storing: HashMap<BucketId, Arc<BucketPart>>,
    /// The field names of the bucket that last placed a measurement alone: a bucket opened
    /// next follows them, and shares them while its fields come in their order
    /// ([`BucketFields::following`]), so the buckets of one collection hold one list of names.
    shape: Arc<FieldNames>,
    /// Threads waiting on the stripe's condition variable: only then does a change wake
    /// anyone ([`BucketCatalog::release_stripe`]; a wake-up is a system call).
    waiting: usize,
}

/// The bucket catalog of one collection (SPEC §6).
#[derive(Debug)]
pub struct BucketCatalog {
    spec: Mutex<BucketingSpec>,
    options: Mutex<CatalogOptions>,
    stripes: Vec<Mutex<Stripe>>,
    stripe_cv: Vec<Condvar>,
    stats: ExecutionStats,
    memory: AtomicU64,
    /// Memory of every catalog sharing the threshold (a database's collections, R-0.1).
    pool: MemoryPool,
    active_buckets: AtomicU64,
    archived_buckets: AtomicU64,
    id_counter: AtomicU64,
    /// Rows of buckets that left memory, for the engine to store ([`BucketCatalog::take_leaving`]).
    leaving: Mutex<Vec<Arc<BucketPart>>>,
    /// Direct writes started and buckets frozen so far ([`BucketCatalog::clears`]).
    clears: AtomicU64,
}

/// Memory usage shared by catalogs under one threshold (SPEC ): cheap to clone,
/// every clone is the same counter.
#[derive(Clone, Debug, Default)]
pub struct MemoryPool(Arc<AtomicU64>);

impl MemoryPool {
    /// Bytes held by every catalog of the pool (SPEC ).
    #[must_use]
    pub fn usage(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Bytes accounted per archived record (SPEC ).
const ARCHIVED_RECORD_BYTES: u64 = 64;

impl BucketCatalog {
    /// A catalog for a collection with the given bucketing and parameters, alone under its
    /// memory threshold.
    #[must_use]
    pub fn new(spec: BucketingSpec, options: CatalogOptions) -> Self {
        Self::with_pool(spec, options, MemoryPool::default())
    }

    /// A catalog whose memory counts toward `pool`, shared with other catalogs: idle expiry
    /// (SPEC) compares the pool's usage with the threshold, as MongoDB's one catalog
    /// for all collections does. Expiry takes idle buckets and archived records of this
    /// catalog only.
    #[must_use]
    pub fn with_pool(spec: BucketingSpec, options: CatalogOptions, pool: MemoryPool) -> Self {
        BucketCatalog {
            pool,
            spec: Mutex::new(spec),
            options: Mutex::new(options),
            stripes: (0..STRIPES)
                .map(|_| Mutex::new(Stripe::default()))
                .collect(),
            stripe_cv: (0..STRIPES).map(|_| Condvar::new()).collect(),
            stats: ExecutionStats::default(),
            memory: AtomicU64::new(0),
            active_buckets: AtomicU64::new(0),
            archived_buckets: AtomicU64::new(0),
            id_counter: AtomicU64::new(RandomState::new().hash_one(0x7473_636f_6c6c_u64)),
            leaving: Mutex::new(Vec::new()),
            clears: AtomicU64::new(0),
        }
    }

    /// The current bucketing parameters.
    #[must_use]
    pub fn spec(&self) -> BucketingSpec {
        lock(&self.spec).clone()
    }

    /// Changes the bucketing parameters (collMod, SPEC ): open buckets stay open and are
    /// checked against the new span from now on.
    pub fn set_spec(&self, spec: BucketingSpec) {
        *lock(&self.spec) = spec;
    }

    /// The current parameters.
    #[must_use]
    pub fn options(&self) -> CatalogOptions {
        lock(&self.options).clone()
    }

    /// Changes the parameters at run time (e.g. the memory threshold, R-0.1).
    pub fn set_options(&self, options: CatalogOptions) {
        *lock(&self.options) = options;
    }

    /// The execution counters (SPEC §8.1).
    #[must_use]
    pub fn stats(&self) -> StatsSnapshot {
        self.stats.snapshot()
    }

    /// Bytes held by the catalog for this collection (SPEC ).
    #[must_use]
    pub fn memory_usage(&self) -> u64 {
        self.memory.load(Ordering::Relaxed)
    }

    /// `numActiveBuckets`: open + archived (SPEC ).
    #[must_use]
    pub fn active_buckets(&self) -> u64 {
        self.active_buckets.load(Ordering::Relaxed)
    }

    /// Archived bucket records held.
    #[must_use]
    pub fn archived_buckets(&self) -> u64 {
        self.archived_buckets.load(Ordering::Relaxed)
    }

    /// The gauges of SPEC §8.2: active, open, idle and archived buckets, and memory. Takes
    /// each stripe lock in turn, so the figures are a consistent sum only when no writer runs.
    #[must_use]
    pub fn gauges(&self) -> CatalogGauges {
        let mut g = CatalogGauges::default();
        for s in &self.stripes {
            let s = lock(s);
            g.open_buckets += s.buckets.len() as u64;
            g.idle_buckets += s.idle.len() as u64;
            g.archived_buckets += s.archived_order.len() as u64;
        }
        g.active_buckets = self.active_buckets();
        g.memory_usage = self.memory_usage();
        g
    }

    fn mem_add(&self, bytes: u64) {
        self.memory.fetch_add(bytes, Ordering::Relaxed);
        self.pool.0.fetch_add(bytes, Ordering::Relaxed);
    }

    fn mem_sub(&self, bytes: u64) {
        self.memory.fetch_sub(bytes, Ordering::Relaxed);
        self.pool.0.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Waits on stripe `no`'s condition variable, counted in its `waiting`.
    fn wait_on_stripe<'a>(
        &self,
        no: usize,
        mut stripe: MutexGuard<'a, Stripe>,
    ) -> MutexGuard<'a, Stripe> {
        stripe.waiting += 1;
        let mut stripe = self.stripe_cv[no]
            .wait(stripe)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        stripe.waiting -= 1;
        stripe
    }

    /// Unlocks stripe `no` and wakes the threads waiting on it, if any.
    fn release_stripe(&self, no: usize, stripe: MutexGuard<'_, Stripe>) {
        let waiting = stripe.waiting > 0;
        drop(stripe);
        if waiting {
            self.stripe_cv[no].notify_all();
        }
    }

    fn stripe_of(key: &BucketKey) -> usize {
        (key.hash % STRIPES as u64) as usize
    }

    fn new_bucket_id(&self, min_time: i64) -> BucketId {
        let mut id = [0u8; 12];
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "ObjectId seconds wrap like MongoDB's"
        )]
        let secs = min_time.div_euclid(1000) as u32;
        id[..4].copy_from_slice(&secs.to_be_bytes());
        let n = self.id_counter.fetch_add(1, Ordering::Relaxed);
        id[4..].copy_from_slice(&n.to_be_bytes());
        id
    }

    fn account_staged(&self, out: &mut StageOutcome) {
        let bytes = std::mem::take(&mut out.staged_bytes);
        if bytes > 0 {
            self.mem_add(bytes);
        }
    }

    /// Releases the staged rows' share of the memory usage of a batch leaving the catalog
    /// (prepared or aborted), returning their BSON bytes. The rows' input indices and writers
    /// stay.
    fn release_staged(&self, batch: &WriteBatch) -> u64 {
        let mut data = lock(&batch.data);
        self.mem_sub(std::mem::take(&mut data.accounted));
        std::mem::take(&mut data.uncompressed_bytes)
    }

    fn remove_bucket(&self, stripe: &mut Stripe, id: &BucketId) -> Option<Bucket> {
        let mut bucket = stripe.buckets.remove(id)?;
        if let Some(part) = BucketPart::take(&mut bucket, true, || self.spec().time_field) {
            let part = Arc::new(part);
            stripe.storing.insert(*id, Arc::clone(&part));
            lock(&self.leaving).push(part);
        }
        if bucket.idle_seq.is_some() {
            stripe.idle.left();
        }
        if let Some(series) = stripe.series.get_mut(&bucket.key) {
            if series.open == Some(*id) {
                series.open = None;
            }
            series.rolling.retain(|r| r != id);
            if series.open.is_none() && series.rolling.is_empty() {
                stripe.series.remove(&bucket.key);
            }
        }
        self.mem_sub(bucket.memory);
        self.active_buckets.fetch_sub(1, Ordering::Relaxed);
        Some(bucket)
    }
}
