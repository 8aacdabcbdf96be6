//! The bucket catalog: placement of measurements into buckets (SPEC §6.2), rollover (§6.3),
//! reopening (§6.8), idle expiry (§6.9) and the commit protocol (§7), over 32 stripes.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};

use bson::{Bson, Document};
use tscoll_codec::Column;

use crate::bucket::{
    Assessment, Bucket, BucketId, BucketState, Field, RolloverAction, RolloverReason, SizeVerdict,
    StoredBucket, assess, derived_max_size, find_field,
};
use crate::key::BucketKey;
use crate::minmax::MinMax;
use crate::options::CatalogOptions;
use crate::stats::{CatalogGauges, ExecutionStats, StatsSnapshot};
use crate::sync::{Arc, AtomicU64, Condvar, Mutex, Ordering, lock};
use crate::value::{element_size, push_value};
use crate::write_batch::{PreparedBatch, WriteBatch, WriterId};

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

/// The engine's side of reopening (SPEC §6.8): the catalog asks, the engine reads storage.
pub trait BucketSource {
    /// Reads the control of bucket `id` of series `key` (archive-based reopening, R-6.8.1).
    fn fetch(&self, key: &BucketKey, id: &BucketId) -> Option<StoredBucket>;
    /// Finds a bucket of `key` with `min_time ≤ time`, `min_time > time − span`, not closed,
    /// count below `max_count` and size estimate below `max_size`.
    fn query(
        &self,
        key: &BucketKey,
        time: i64,
        span_ms: i64,
        max_count: u32,
        max_size: u64,
    ) -> QueryOutcome;
}

/// A source that never finds anything (no storage): every query misses.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoStorage;

impl BucketSource for NoStorage {
    fn fetch(&self, _: &BucketKey, _: &BucketId) -> Option<StoredBucket> {
        None
    }
    fn query(&self, _: &BucketKey, _: i64, _: i64, _: u32, _: u64) -> QueryOutcome {
        QueryOutcome::Miss
    }
}

/// A bucket that left memory; if it has more than one segment the engine merges them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedBucket {
    /// Bucket `_id`.
    pub id: BucketId,
    /// Segments written so far.
    pub segments: u32,
    /// Why it left memory.
    pub action: RolloverAction,
}

/// Why a measurement could not be staged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StageError {
    /// The bucket holding it would exceed 16 MiB (SPEC, `BSONObjectTooLarge`).
    TooLarge(u64),
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

#[derive(Debug, Default)]
struct Series {
    /// The open bucket without rollover reason.
    open: Option<BucketId>,
    /// Buckets with a recorded rollover reason still waiting for batches to finish.
    rolling: Vec<BucketId>,
}

/// Hashes a [`BucketId`] by mixing its 8 counter bytes: ids come from a randomly seeded
/// counter (SPEC §4.9), so they need no keyed hash, and a bucket lookup happens for every
/// measurement placed.
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
    series: HashMap<Arc<BucketKey>, Series>,
    /// Archived records: (key, min time) → id (SPEC ).
    archived: HashMap<Arc<BucketKey>, BTreeMap<i64, BucketId>>,
    archived_order: BTreeMap<u64, (Arc<BucketKey>, i64)>,
    archived_seq: u64,
    idle: BTreeMap<u64, BucketId>,
    idle_seq: u64,
    /// Direct writes in progress, by bucket (SPEC §6.7, R-7.4.1): such a bucket is not
    /// reopened.
    direct_writes: HashMap<BucketId, u32>,
    /// Frozen buckets (SPEC §6.10): never written or reopened again.
    frozen: HashSet<BucketId>,
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

    /// Stages measurements of one series, already sorted by time (SPEC ), into write
    /// batches, placing each as SPEC §6.2 says. `writer` identifies the caller in shared
    /// batches (SPEC ); `source` answers reopening requests.
    ///
    /// The staged rows count in [`BucketCatalog::memory_usage`] (by their BSON element sizes)
    /// until their batch is prepared or aborted (SPEC ).
    pub fn stage(
        &self,
        writer: WriterId,
        key: &BucketKey,
        measurements: &[Measurement<'_>],
        source: &dyn BucketSource,
    ) -> StageOutcome {
        let spec = self.spec();
        let options = self.options();
        let stripe_no = Self::stripe_of(key);
        let mut guard = lock(&self.stripes[stripe_no]);
        let stripe: &mut Stripe = &mut guard;
        let key = match stripe.series.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::new(key.clone()),
        };
        let mut out = StageOutcome::default();
        let mut scratch = Vec::new();
        let meta_field = spec.meta_field.as_deref();
        // The series' only candidate while it has no rolling buckets: its open bucket, as the
        // previous measurement left it. The measurements are one series in time order, so
        // most of them go straight there after its rollover check (SPEC §6.2, §6.3).
        let mut only_open: Option<BucketId> = None;
        for m in measurements {
            // One pass over the fields assesses `m` for the open bucket and for the 16 MiB
            // check; a measurement that bucket cannot take is assessed again where it goes.
            let open = only_open.map(|id| (id, assess(stripe.buckets.get(&id), m, meta_field)));
            let alone = open.map_or_else(|| assess(None, m, meta_field).alone, |(_, a)| a.alone)
                + key.bytes.len() as u64;
            if alone > MAX_BSON_OBJECT_SIZE {
                out.rejected.push((m.index, StageError::TooLarge(alone)));
                continue;
            }
            let fast = open.and_then(|(id, a)| {
                let derived = derived_max_size(&options, self.active_buckets());
                let bucket = stripe.buckets.get_mut(&id)?;
                let delta = self
                    .rollover_reason(bucket, m, &spec, &options, derived, Some(a))
                    .ok()?;
                Some((id, Some(delta)))
            });
            let (id, delta) = match fast {
                Some(placed) => placed,
                None => {
                    let placed = self.place(stripe, &key, m, &spec, &options, source, &mut out);
                    only_open = stripe
                        .series
                        .get(&key)
                        .filter(|s| s.rolling.is_empty() && s.open == Some(placed.0))
                        .map(|_| placed.0);
                    placed
                }
            };
            let Some(bucket) = stripe.buckets.get_mut(&id) else {
                continue;
            };
            // Using an idle bucket takes it off the idle list.
            if let Some(seq) = bucket.idle_seq.take() {
                stripe.idle.remove(&seq);
            }
            let (batch, bytes) =
                self.append(writer, bucket, m, delta, &spec, stripe_no, &mut scratch);
            out.staged_bytes += bytes;
            if !out.batches.iter().any(|b| Arc::ptr_eq(b, &batch)) {
                out.batches.push(batch);
            }
        }
        // The touched buckets' min/max and schema grew.
        for batch in &out.batches {
            if let Some(b) = stripe.buckets.get_mut(&batch.bucket_id) {
                let old = b.memory;
                let new = b.measure_memory();
                self.mem_add(new);
                self.mem_sub(old);
            }
        }
        self.account_staged(&mut out);
        out
    }

    fn account_staged(&self, out: &mut StageOutcome) {
        let bytes = std::mem::take(&mut out.staged_bytes);
        if bytes > 0 {
            self.mem_add(bytes);
        }
    }

    /// Frees the staged rows of a batch leaving the catalog (prepared or aborted) and their
    /// share of the memory usage. The rows' input indices and writers stay.
    fn release_staged(&self, batch: &WriteBatch) -> (Vec<Column>, u64) {
        let mut data = lock(&batch.data);
        self.mem_sub(std::mem::take(&mut data.accounted));
        (
            std::mem::take(&mut data.columns),
            std::mem::take(&mut data.uncompressed_bytes),
        )
    }

    /// Chooses the bucket for `m`, rolling over, reopening or allocating as needed. Returns
    /// the bucket and, when an open bucket took it as it was, the estimate's increment.
    #[expect(clippy::too_many_arguments, reason = "internal step of stage")]
    fn place(
        &self,
        stripe: &mut Stripe,
        key: &Arc<BucketKey>,
        m: &Measurement<'_>,
        spec: &BucketingSpec,
        options: &CatalogOptions,
        source: &dyn BucketSource,
        out: &mut StageOutcome,
    ) -> (BucketId, Option<u64>) {
        let derived = derived_max_size(options, self.active_buckets());
        let series = stripe.series.entry(Arc::clone(key)).or_default();
        let had_open = series.open.is_some();
        // Candidates (§6.2 step 2): buckets marked for soft close, then for archive (fewest
        // measurements first, each only if its window holds the time), then the open bucket.
        // A bucket marked for a hard close never takes another measurement.
        let mut rolling: Vec<(u8, u32, BucketId)> = series
            .rolling
            .iter()
            .filter_map(|id| {
                let b = stripe.buckets.get(id)?;
                let rank = match b.rollover.map(RolloverReason::action) {
                    Some(RolloverAction::SoftClose) => 0,
                    Some(RolloverAction::Archive) => 1,
                    _ => return None,
                };
                Some((rank, b.count, *id))
            })
            .collect();
        rolling.sort_unstable();
        let series = stripe.series.entry(Arc::clone(key)).or_default();
        let mut candidates: Vec<BucketId> = rolling.into_iter().map(|(_, _, id)| id).collect();
        candidates.extend(series.open);
        let mut allow_query = true;
        let mut open_failed_backward_only = !had_open;
        for id in candidates {
            let is_open = stripe.series.get(key).and_then(|s| s.open) == Some(id);
            let Some(bucket) = stripe.buckets.get_mut(&id) else {
                continue;
            };
            if !is_open
                && (m.time < bucket.min_time
                    || m.time.saturating_sub(bucket.min_time) >= spec.max_span_ms)
            {
                continue;
            }
            match self.rollover_reason(bucket, m, spec, options, derived, None) {
                Ok(delta) => return (id, Some(delta)),
                Err(reason) => {
                    if reason == RolloverReason::TimeBackward {
                        if is_open {
                            open_failed_backward_only = true;
                        }
                    } else {
                        allow_query = false;
                    }
                    if is_open {
                        bucket.rollover = Some(reason);
                        if let Some(s) = stripe.series.get_mut(key) {
                            s.open = None;
                            s.rolling.push(id);
                        }
                        self.maybe_roll_now(stripe, &id, out);
                    }
                }
            }
        }
        // Reopening (SPEC §6.8): archive-based, then query-based. Idle expiry runs just before
        // a bucket is loaded or allocated.
        self.account_staged(out);
        if let Some(id) = self.try_reopen(
            stripe,
            key,
            m,
            spec,
            options,
            derived,
            source,
            allow_query && open_failed_backward_only,
            out,
        ) {
            return (id, None);
        }
        self.expire_idle(stripe, options, out);
        (self.allocate(stripe, key, m, spec, !had_open), None)
    }

    /// The first rollover reason of SPEC §6.3 that applies to `bucket` for `m` (`Err`), else
    /// the classic estimate's increment (`Ok`, bytes). Marks the kept-open-for-large-
    /// measurements flag (SPEC §6.5 step 2).
    fn rollover_reason(
        &self,
        bucket: &mut Bucket,
        m: &Measurement<'_>,
        spec: &BucketingSpec,
        options: &CatalogOptions,
        derived: u64,
        assessment: Option<Assessment>,
    ) -> Result<u64, RolloverReason> {
        if bucket.state != BucketState::Normal {
            return Err(RolloverReason::SchemaChange);
        }
        if m.time.saturating_sub(bucket.min_time) >= spec.max_span_ms {
            return Err(RolloverReason::TimeForward);
        }
        if m.time < bucket.min_time {
            return Err(RolloverReason::TimeBackward);
        }
        if bucket.count >= options.bucket_max_count {
            return Err(RolloverReason::Count);
        }
        let assessment =
            assessment.unwrap_or_else(|| assess(Some(bucket), m, spec.meta_field.as_deref()));
        match bucket.size_verdict(assessment.delta, options, derived) {
            SizeVerdict::Fits => {}
            SizeVerdict::Roll(r) => return Err(r),
            SizeVerdict::KeepOpenLarge => {
                if !bucket.kept_open_large {
                    bucket.kept_open_large = true;
                    ExecutionStats::bump(
                        &self.stats.num_buckets_kept_open_due_to_large_measurements,
                    );
                }
            }
        }
        if !assessment.compatible {
            return Err(RolloverReason::SchemaChange);
        }
        Ok(assessment.delta)
    }

    /// Applies a recorded rollover now if the bucket has no pending batches (SPEC ).
    fn maybe_roll_now(&self, stripe: &mut Stripe, id: &BucketId, out: &mut StageOutcome) {
        let Some(bucket) = stripe.buckets.get(id) else {
            return;
        };
        if bucket.has_pending() {
            return;
        }
        if let Some(reason) = bucket.rollover
            && let Some(c) = self.apply_rollover(stripe, id, reason)
        {
            out.closed.push(c);
        }
    }

    /// Removes a bucket from memory with the action of `reason`, counting it (SPEC ).
    fn apply_rollover(
        &self,
        stripe: &mut Stripe,
        id: &BucketId,
        reason: RolloverReason,
    ) -> Option<ClosedBucket> {
        let options = self.options();
        let bucket = self.remove_bucket(stripe, id)?;
        let mut action = reason.action();
        let s = &self.stats;
        match reason {
            RolloverReason::TimeForward => {
                ExecutionStats::bump(&s.num_buckets_closed_due_to_time_forward)
            }
            RolloverReason::TimeBackward => {
                let full_by_count = bucket.count >= options.bucket_max_count;
                let full_by_size = bucket.size >= options.bucket_max_size
                    && bucket.count >= options.bucket_min_count;
                let duplicate = stripe
                    .archived
                    .get(&bucket.key)
                    .is_some_and(|a| a.contains_key(&bucket.min_time));
                if full_by_count {
                    action = RolloverAction::HardClose;
                    ExecutionStats::bump(&s.num_buckets_closed_due_to_count);
                } else if full_by_size {
                    action = RolloverAction::HardClose;
                    ExecutionStats::bump(&s.num_buckets_closed_due_to_size);
                } else if duplicate {
                    action = RolloverAction::HardClose;
                } else {
                    ExecutionStats::bump(&s.num_buckets_archived_due_to_time_backward);
                    self.archive(stripe, &bucket);
                }
            }
            RolloverReason::Count => ExecutionStats::bump(&s.num_buckets_closed_due_to_count),
            RolloverReason::Size => ExecutionStats::bump(&s.num_buckets_closed_due_to_size),
            RolloverReason::CachePressure => {
                ExecutionStats::bump(&s.num_buckets_closed_due_to_cache_pressure)
            }
            RolloverReason::SchemaChange => {
                ExecutionStats::bump(&s.num_buckets_closed_due_to_schema_change)
            }
        }
        Some(ClosedBucket {
            id: bucket.id,
            segments: bucket.next_segment,
            action,
        })
    }

    fn archive(&self, stripe: &mut Stripe, bucket: &Bucket) {
        stripe
            .archived
            .entry(Arc::clone(&bucket.key))
            .or_default()
            .insert(bucket.min_time, bucket.id);
        stripe.archived_seq += 1;
        let seq = stripe.archived_seq;
        stripe
            .archived_order
            .insert(seq, (Arc::clone(&bucket.key), bucket.min_time));
        self.archived_buckets.fetch_add(1, Ordering::Relaxed);
        self.active_buckets.fetch_add(1, Ordering::Relaxed);
        self.mem_add(ARCHIVED_RECORD_BYTES + bucket.key.bytes.len() as u64);
    }

    fn take_archived(
        &self,
        stripe: &mut Stripe,
        key: &Arc<BucketKey>,
        min_time: i64,
    ) -> Option<BucketId> {
        let records = stripe.archived.get_mut(key)?;
        let id = records.remove(&min_time)?;
        if records.is_empty() {
            stripe.archived.remove(key);
        }
        stripe
            .archived_order
            .retain(|_, (k, t)| !(k == key && *t == min_time));
        self.archived_buckets.fetch_sub(1, Ordering::Relaxed);
        self.active_buckets.fetch_sub(1, Ordering::Relaxed);
        self.mem_sub(ARCHIVED_RECORD_BYTES + key.bytes.len() as u64);
        Some(id)
    }

    fn remove_bucket(&self, stripe: &mut Stripe, id: &BucketId) -> Option<Bucket> {
        let bucket = stripe.buckets.remove(id)?;
        if let Some(seq) = bucket.idle_seq {
            stripe.idle.remove(&seq);
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

    #[expect(clippy::too_many_arguments, reason = "internal step of place")]
    fn try_reopen(
        &self,
        stripe: &mut Stripe,
        key: &Arc<BucketKey>,
        m: &Measurement<'_>,
        spec: &BucketingSpec,
        options: &CatalogOptions,
        derived: u64,
        source: &dyn BucketSource,
        allow_query: bool,
        out: &mut StageOutcome,
    ) -> Option<BucketId> {
        let s = &self.stats;
        // Archive-based: the archived record with the largest min time ≤ time.
        let archived = stripe
            .archived
            .get(key)
            .and_then(|a| a.range(..=m.time).next_back().map(|(t, id)| (*t, *id)))
            .filter(|(t, _)| m.time.saturating_sub(*t) < spec.max_span_ms);
        let stored = if let Some((min_time, id)) = archived {
            self.take_archived(stripe, key, min_time);
            match source.fetch(key, &id) {
                Some(b) => {
                    ExecutionStats::bump(&s.num_buckets_fetched);
                    Some(b)
                }
                None => {
                    ExecutionStats::bump(&s.num_bucket_fetches_failed);
                    None
                }
            }
        } else if allow_query {
            let eff_max = options.bucket_max_size.min(derived);
            match source.query(
                key,
                m.time,
                spec.max_span_ms,
                options.bucket_max_count,
                eff_max,
            ) {
                QueryOutcome::Hit(b) => {
                    ExecutionStats::bump(&s.num_buckets_queried);
                    Some(*b)
                }
                QueryOutcome::Miss | QueryOutcome::NoIndex => {
                    ExecutionStats::bump(&s.num_bucket_queries_failed);
                    None
                }
            }
        } else {
            None
        };
        let stored = stored?;
        if stripe.buckets.contains_key(&stored.id) {
            ExecutionStats::bump(&s.num_duplicate_buckets_reopened);
            return None;
        }
        if stripe.direct_writes.contains_key(&stored.id) {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_write_conflict);
            return None;
        }
        if stripe.frozen.contains(&stored.id) {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_marked_frozen);
            return None;
        }
        // Rehydration checks.
        if stored.key_bytes != key.bytes {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_hash_collision);
            return None;
        }
        if stored.closed {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_marked_closed);
            return None;
        }
        let Some(fields) = stored.fields(&spec.time_field) else {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_min_max_calculation);
            return None;
        };
        let mut bucket = Bucket {
            id: stored.id,
            key: Arc::clone(key),
            min_time: stored.min_time,
            max_time: stored.max_time,
            last_time: stored.max_time,
            count: stored.count,
            committed_count: stored.count,
            committed_uncompressed: stored.uncompressed_bytes,
            size: stored.size_estimate,
            fields,
            sorted: stored.sorted,
            rollover: None,
            kept_open_large: false,
            next_segment: stored.next_segment,
            active: None,
            prepared: false,
            state: BucketState::Normal,
            opened_due_to_metadata: false,
            idle_seq: None,
            memory: 0,
        };
        if self
            .rollover_reason(&mut bucket, m, spec, options, derived, None)
            .is_err()
        {
            return None;
        }
        self.expire_idle(stripe, options, out);
        // Loading: the reopened bucket becomes the open bucket of its key.
        let id = bucket.id;
        let previous_open = stripe.series.get(key).and_then(|s| s.open);
        if let Some(prev) = previous_open {
            if let Some(b) = stripe.buckets.get_mut(&prev) {
                b.rollover = Some(RolloverReason::TimeForward);
            }
            if let Some(series) = stripe.series.get_mut(key) {
                series.open = None;
                series.rolling.push(prev);
            }
            ExecutionStats::bump(&s.num_buckets_closed_due_to_reopening);
            if stripe.buckets.get(&prev).is_some_and(|b| !b.has_pending())
                && let Some(b) = self.remove_bucket(stripe, &prev)
            {
                out.closed.push(ClosedBucket {
                    id: b.id,
                    segments: b.next_segment,
                    action: RolloverAction::SoftClose,
                });
            }
        }
        self.mem_add(bucket.measure_memory());
        self.active_buckets.fetch_add(1, Ordering::Relaxed);
        stripe.buckets.insert(id, bucket);
        stripe.series.entry(Arc::clone(key)).or_default().open = Some(id);
        ExecutionStats::bump(&s.num_buckets_reopened);
        Some(id)
    }

    fn allocate(
        &self,
        stripe: &mut Stripe,
        key: &Arc<BucketKey>,
        m: &Measurement<'_>,
        spec: &BucketingSpec,
        opened_due_to_metadata: bool,
    ) -> BucketId {
        let min_time = spec.round(m.time);
        let id = self.new_bucket_id(min_time);
        let mut bucket = Bucket {
            id,
            key: Arc::clone(key),
            min_time,
            max_time: m.time,
            last_time: m.time,
            count: 0,
            committed_count: 0,
            committed_uncompressed: 0,
            size: if key.is_no_meta() {
                0
            } else {
                4 + key.bytes.len() as u64
            },
            fields: Vec::new(),
            sorted: true,
            rollover: None,
            kept_open_large: false,
            next_segment: 0,
            active: None,
            prepared: false,
            state: BucketState::Normal,
            opened_due_to_metadata,
            idle_seq: None,
            memory: 0,
        };
        self.mem_add(bucket.measure_memory());
        self.active_buckets.fetch_add(1, Ordering::Relaxed);
        stripe.buckets.insert(id, bucket);
        stripe.series.entry(Arc::clone(key)).or_default().open = Some(id);
        id
    }

    /// Archives or closes idle buckets while memory exceeds the threshold (SPEC ).
    fn expire_idle(&self, stripe: &mut Stripe, options: &CatalogOptions, out: &mut StageOutcome) {
        let mut done = 0;
        while self.pool.usage() > options.idle_bucket_expiry_memory_usage_threshold_bytes
            && done <= options.idle_bucket_expiry_max_count_per_attempt
        {
            done += 1;
            if let Some((_, id)) = stripe.idle.pop_first() {
                if let Some(b) = stripe.buckets.get_mut(&id) {
                    b.idle_seq = None;
                }
                let Some(bucket) = self.remove_bucket(stripe, &id) else {
                    continue;
                };
                let action = if bucket.state == BucketState::Normal {
                    ExecutionStats::bump(&self.stats.num_buckets_archived_due_to_memory_threshold);
                    self.archive(stripe, &bucket);
                    RolloverAction::Archive
                } else {
                    RolloverAction::HardClose
                };
                out.closed.push(ClosedBucket {
                    id: bucket.id,
                    segments: bucket.next_segment,
                    action,
                });
            } else if let Some((_, (key, min_time))) = stripe.archived_order.pop_first() {
                if let Some(records) = stripe.archived.get_mut(&key) {
                    records.remove(&min_time);
                    if records.is_empty() {
                        stripe.archived.remove(&key);
                    }
                }
                self.archived_buckets.fetch_sub(1, Ordering::Relaxed);
                self.active_buckets.fetch_sub(1, Ordering::Relaxed);
                self.mem_sub(ARCHIVED_RECORD_BYTES + key.bytes.len() as u64);
                ExecutionStats::bump(&self.stats.num_buckets_closed_due_to_memory_threshold);
            } else {
                break;
            }
        }
    }

    /// Appends `m` to the bucket's active batch: columns, min/max, size, sortedness (`delta`:
    /// the estimate's increment, when placement computed it). Returns the batch and the
    /// staged bytes to account.
    #[expect(clippy::too_many_arguments, reason = "internal step of stage")]
    fn append(
        &self,
        writer: WriterId,
        bucket: &mut Bucket,
        m: &Measurement<'_>,
        delta: Option<u64>,
        spec: &BucketingSpec,
        stripe_no: usize,
        scratch: &mut Vec<u8>,
    ) -> (Arc<WriteBatch>, u64) {
        let meta_field = spec.meta_field.as_deref();
        bucket.size += delta.unwrap_or_else(|| assess(Some(bucket), m, meta_field).delta);
        let batch = match &bucket.active {
            Some(b) => Arc::clone(b),
            None => {
                let b = Arc::new(WriteBatch::new(
                    bucket.id,
                    Arc::clone(&bucket.key),
                    stripe_no,
                ));
                bucket.active = Some(Arc::clone(&b));
                b
            }
        };
        let mut data = lock(&batch.data);
        let row = data.rows;
        let mut hint = 0usize;
        let mut uncompressed = 0;
        for (name, v) in m.fields() {
            if Some(name) == meta_field {
                continue;
            }
            uncompressed += element_size(name, v);
            let idx = match find_field(&bucket.fields, name, &mut hint) {
                Some(i) => i,
                None => {
                    bucket.fields.push(Field {
                        name: name.to_owned(),
                        minmax: MinMax::new(v),
                    });
                    hint = bucket.fields.len();
                    bucket.fields.len() - 1
                }
            };
            if let Some(f) = bucket.fields.get_mut(idx) {
                f.minmax.update(v);
            }
            while data.columns.len() <= idx {
                data.columns.push(Column::new());
            }
            let col = &mut data.columns[idx];
            if col.len() < row {
                col.push_missing_n(row - col.len());
            }
            push_value(col, v, scratch);
        }
        if bucket.count == 0 {
            // control.min.<time> of a new bucket is the rounded time.
            if let Some(f) = bucket.fields.iter_mut().find(|f| f.name == spec.time_field)
                && let MinMax::Scalar { min, .. } = &mut f.minmax
            {
                *min = bson::Bson::DateTime(bson::DateTime::from_millis(bucket.min_time));
            }
        }
        data.rows += 1;
        data.indices.push(m.index);
        data.owners.push(writer);
        data.uncompressed_bytes += uncompressed;
        data.accounted += uncompressed;
        drop(data);
        if m.time < bucket.last_time && bucket.sorted {
            bucket.sorted = false;
            ExecutionStats::bump(&self.stats.num_compressed_buckets_converted_to_unsorted);
        }
        bucket.last_time = m.time;
        bucket.max_time = bucket.max_time.max(m.time);
        bucket.count += 1;
        (batch, uncompressed)
    }

    /// Waits for a batch set aside by [`WriteBatch::claim_commit_rights`] to be committed or
    /// aborted by its committer, counting `numWaits` when it is not done yet (SPEC ).
    ///
    /// # Errors
    /// The abort reason when the batch was aborted.
    pub fn wait(&self, batch: &WriteBatch) -> Result<(), String> {
        if !batch.is_finished() {
            ExecutionStats::bump(&self.stats.num_waits);
        }
        batch.wait()
    }

    /// Prepares a batch for commit (SPEC ): waits while another batch of the bucket is
    /// prepared, then hands out the rows and the bucket's new control state.
    ///
    /// # Errors
    /// A message when the bucket was cleared or frozen meanwhile (the batch is then aborted).
    pub fn prepare_commit(&self, batch: &Arc<WriteBatch>) -> Result<PreparedBatch, String> {
        let mut stripe = lock(&self.stripes[batch.stripe]);
        loop {
            // A batch failed by an abort (of its bucket, by another writer) is never
            // committed.
            if let Some(reason) = batch.failure() {
                return Err(reason);
            }
            let Some(bucket) = stripe.buckets.get(&batch.bucket_id) else {
                return Err("bucket was cleared from the catalog".to_owned());
            };
            if !bucket.prepared {
                break;
            }
            ExecutionStats::bump(&self.stats.num_waits);
            stripe = self.stripe_cv[batch.stripe]
                .wait(stripe)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        let Some(bucket) = stripe.buckets.get_mut(&batch.bucket_id) else {
            return Err("bucket was cleared from the catalog".to_owned());
        };
        if bucket.state != BucketState::Normal {
            return Err("bucket was cleared or frozen".to_owned());
        }
        if bucket
            .active
            .as_ref()
            .is_some_and(|a| Arc::ptr_eq(a, batch))
        {
            bucket.active = None;
        }
        bucket.prepared = true;
        batch.mark_prepared();
        let rows = lock(&batch.data).rows;
        let (staged, uncompressed_bytes) = self.release_staged(batch);
        let mut columns = Vec::with_capacity(staged.len());
        for (idx, mut col) in staged.into_iter().enumerate() {
            if col.len() < rows {
                col.push_missing_n(rows - col.len());
            }
            if col.all_missing() {
                continue;
            }
            if let Some(f) = bucket.fields.get(idx) {
                columns.push((f.name.clone(), col));
            }
        }
        let (control_min, control_max) = bucket.control_min_max();
        let segment_no = bucket.next_segment;
        bucket.next_segment += 1;
        let committed_before = bucket.committed_count;
        #[expect(clippy::cast_possible_truncation, reason = "rows ≤ bucket_max_count")]
        let count = committed_before + rows as u32;
        Ok(PreparedBatch {
            batch: Arc::clone(batch),
            bucket_id: bucket.id,
            key: Arc::clone(&bucket.key),
            min_time: bucket.min_time,
            max_time: bucket.max_time,
            count,
            committed_before,
            uncompressed_before: bucket.committed_uncompressed,
            segment_no,
            sorted: bucket.sorted,
            size_estimate: bucket.size,
            control_min,
            control_max,
            columns,
            rows,
            uncompressed_bytes,
        })
    }

    /// Finishes a committed batch (SPEC ): fulfils it, counts it, and marks the bucket
    /// idle or applies its deferred rollover. Returns buckets that left memory.
    pub fn finish(&self, prepared: &PreparedBatch) -> Vec<ClosedBucket> {
        let batch = &prepared.batch;
        let mut closed = Vec::new();
        let mut stripe = lock(&self.stripes[batch.stripe]);
        let s = &self.stats;
        ExecutionStats::bump(&s.num_commits);
        ExecutionStats::add(&s.num_measurements_committed, prepared.rows as u64);
        if prepared.committed_before == 0 {
            ExecutionStats::bump(&s.num_bucket_inserts);
        } else {
            ExecutionStats::bump(&s.num_bucket_updates);
        }
        let mut roll = None;
        if let Some(bucket) = stripe.buckets.get_mut(&batch.bucket_id) {
            bucket.prepared = false;
            #[expect(clippy::cast_possible_truncation, reason = "rows ≤ bucket_max_count")]
            let rows = prepared.rows as u32;
            bucket.committed_count += rows;
            bucket.committed_uncompressed += prepared.uncompressed_bytes;
            if prepared.committed_before == 0 && bucket.opened_due_to_metadata {
                bucket.opened_due_to_metadata = false;
                ExecutionStats::bump(&s.num_buckets_opened_due_to_metadata);
            }
            let old = bucket.memory;
            let new = bucket.measure_memory();
            self.mem_add(new);
            self.mem_sub(old);
            if !bucket.has_pending() && bucket.state == BucketState::Cleared {
                // Cleared by an abort while this batch was prepared: it goes now.
                self.remove_bucket(&mut stripe, &batch.bucket_id);
            } else if !bucket.has_pending() {
                match bucket.rollover {
                    Some(reason) => roll = Some(reason),
                    None if bucket.state == BucketState::Normal => {
                        stripe.idle_seq += 1;
                        let seq = stripe.idle_seq;
                        if let Some(b) = stripe.buckets.get_mut(&batch.bucket_id) {
                            b.idle_seq = Some(seq);
                        }
                        stripe.idle.insert(seq, batch.bucket_id);
                    }
                    None => {
                        self.remove_bucket(&mut stripe, &batch.bucket_id);
                    }
                }
            }
        }
        if let Some(reason) = roll {
            closed.extend(self.apply_rollover(&mut stripe, &batch.bucket_id, reason));
        }
        drop(stripe);
        self.stripe_cv[batch.stripe].notify_all();
        batch.fulfil(Ok(()));
        closed
    }

    /// Aborts a batch whose commit failed (SPEC ): the batch and every other
    /// unprepared batch of the bucket fail with `reason`. The bucket leaves the catalog now
    /// if no batch of it is prepared or the aborted batch is the prepared one; if another
    /// writer's batch is prepared, the bucket is marked cleared (no series finds it, no
    /// insert goes to it) and leaves when that batch finishes.
    pub fn abort(&self, batch: &Arc<WriteBatch>, reason: &str) {
        let mut stripe = lock(&self.stripes[batch.stripe]);
        let prepared_by_other = stripe
            .buckets
            .get(&batch.bucket_id)
            .is_some_and(|b| b.prepared && !batch.is_prepared());
        self.clear_bucket(
            &mut stripe,
            &batch.bucket_id,
            reason,
            prepared_by_other,
            BucketState::Cleared,
        );
        drop(stripe);
        self.stripe_cv[batch.stripe].notify_all();
        self.release_staged(batch);
        batch.fulfil(Err(reason.to_owned()));
    }

    /// Takes a bucket out of the catalog: its unprepared batch fails with `reason` (its
    /// writers retry, SPEC ). With `keep_prepared` (another writer's batch of it is
    /// prepared) the bucket is only marked `state` and detached from its series, and leaves
    /// when that batch finishes; otherwise it is removed now.
    fn clear_bucket(
        &self,
        stripe: &mut Stripe,
        id: &BucketId,
        reason: &str,
        keep_prepared: bool,
        state: BucketState,
    ) {
        let Some(bucket) = stripe.buckets.get_mut(id) else {
            return;
        };
        if let Some(active) = bucket.active.take() {
            self.release_staged(&active);
            active.fulfil(Err(reason.to_owned()));
        }
        if !keep_prepared {
            self.remove_bucket(stripe, id);
            return;
        }
        bucket.state = state;
        let key = Arc::clone(&bucket.key);
        if let Some(seq) = bucket.idle_seq.take() {
            stripe.idle.remove(&seq);
        }
        if let Some(series) = stripe.series.get_mut(&key) {
            if series.open == Some(*id) {
                series.open = None;
            }
            series.rolling.retain(|r| r != id);
            if series.open.is_none() && series.rolling.is_empty() {
                stripe.series.remove(&key);
            }
        }
    }

    /// Drops the archived record of bucket `id` of series `key`, if any.
    fn drop_archived(&self, stripe: &mut Stripe, key: &BucketKey, id: &BucketId) {
        let min_time = stripe
            .archived
            .get(key)
            .and_then(|records| records.iter().find(|(_, r)| *r == id).map(|(t, _)| *t));
        if let Some(t) = min_time {
            let key = stripe
                .archived
                .get_key_value(key)
                .map(|(k, _)| Arc::clone(k));
            if let Some(key) = key {
                self.take_archived(stripe, &key, t);
            }
        }
    }

    /// Registers a direct write on bucket `id` of series `key` (an update, delete or TTL
    /// removal outside the insert path, SPEC ): waits while a batch of the bucket is
    /// prepared (counting `numWaits`), then clears the bucket from the catalog (its
    /// unprepared batch fails and its writers retry elsewhere) and drops its archived record.
    /// Until [`BucketCatalog::direct_write_finish`], the bucket is not reopened
    /// (`numBucketReopeningsFailedDueToWriteConflict`).
    pub fn direct_write_start(&self, key: &BucketKey, id: &BucketId) {
        let stripe_no = Self::stripe_of(key);
        let mut stripe = lock(&self.stripes[stripe_no]);
        while stripe.buckets.get(id).is_some_and(|b| b.prepared) {
            ExecutionStats::bump(&self.stats.num_waits);
            stripe = self.stripe_cv[stripe_no]
                .wait(stripe)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *stripe.direct_writes.entry(*id).or_insert(0) += 1;
        self.clear_bucket(
            &mut stripe,
            id,
            "bucket was cleared by a direct write",
            false,
            BucketState::Cleared,
        );
        self.drop_archived(&mut stripe, key, id);
        drop(stripe);
        self.stripe_cv[stripe_no].notify_all();
    }

    /// Ends a direct write started by [`BucketCatalog::direct_write_start`] (committed or
    /// rolled back): the next insert of the series reopens the bucket from storage or opens a
    /// new one (SPEC ).
    pub fn direct_write_finish(&self, key: &BucketKey, id: &BucketId) {
        let mut stripe = lock(&self.stripes[Self::stripe_of(key)]);
        if let Some(n) = stripe.direct_writes.get_mut(id) {
            *n -= 1;
            if *n == 0 {
                stripe.direct_writes.remove(id);
            }
        }
    }

    /// Freezes bucket `id` of series `key` after its data failed to encode or decode
    /// (SPEC §6.10): it is cleared from the catalog, never written by the insert path and
    /// never reopened again (`numBucketsFrozen`, once per bucket). A batch of it being
    /// committed now finishes normally.
    pub fn freeze(&self, key: &BucketKey, id: &BucketId) {
        let stripe_no = Self::stripe_of(key);
        let mut stripe = lock(&self.stripes[stripe_no]);
        if stripe.frozen.insert(*id) {
            ExecutionStats::bump(&self.stats.num_buckets_frozen);
        }
        let prepared = stripe.buckets.get(id).is_some_and(|b| b.prepared);
        self.clear_bucket(
            &mut stripe,
            id,
            "bucket is frozen",
            prepared,
            BucketState::Frozen,
        );
        self.drop_archived(&mut stripe, key, id);
        drop(stripe);
        self.stripe_cv[stripe_no].notify_all();
    }

    /// Removes every bucket and archived record of the collection from memory (drop,
    /// SPEC ). Returns the buckets that were open, for merging.
    pub fn clear_all(&self) -> Vec<ClosedBucket> {
        let mut closed = Vec::new();
        for (i, m) in self.stripes.iter().enumerate() {
            let mut stripe = lock(m);
            let ids: Vec<BucketId> = stripe.buckets.keys().copied().collect();
            for id in ids {
                if let Some(active) = stripe.buckets.get_mut(&id).and_then(|b| b.active.take()) {
                    self.release_staged(&active);
                    active.fulfil(Err("the collection was dropped".to_owned()));
                }
                if let Some(b) = self.remove_bucket(&mut stripe, &id) {
                    closed.push(ClosedBucket {
                        id,
                        segments: b.next_segment,
                        action: RolloverAction::HardClose,
                    });
                }
            }
            let records: u64 = stripe
                .archived_order
                .values()
                .map(|(k, _)| ARCHIVED_RECORD_BYTES + k.bytes.len() as u64)
                .sum();
            self.mem_sub(records);
            let archived = stripe.archived_order.len() as u64;
            stripe.archived.clear();
            stripe.archived_order.clear();
            self.archived_buckets.fetch_sub(archived, Ordering::Relaxed);
            self.active_buckets.fetch_sub(archived, Ordering::Relaxed);
            drop(stripe);
            self.stripe_cv[i].notify_all();
        }
        closed
    }

    /// Open buckets that are idle (no pending batch) and hold more than one segment: the
    /// engine merges them at checkpoints (e.g. on close). Their segment counts are reset.
    pub fn take_idle_segments(&self) -> Vec<ClosedBucket> {
        let mut out = Vec::new();
        for m in &self.stripes {
            let mut stripe = lock(m);
            let ids: Vec<BucketId> = stripe.buckets.keys().copied().collect();
            for id in ids {
                if let Some(b) = stripe.buckets.get(&id)
                    && !b.has_pending()
                    && b.next_segment > 1
                {
                    out.push(ClosedBucket {
                        id,
                        segments: b.next_segment,
                        action: RolloverAction::SoftClose,
                    });
                    let _ = self.remove_bucket(&mut stripe, &id);
                }
            }
        }
        out
    }
}
