//! A session whose operators hold a bounded memory ([`bounded_context`], `tscoll sql
//! --memory-limit`): DataFusion's memory pool, batch size and sort reservations chosen so
//! that sorts and aggregates spill within the limit rather than fail or stall.

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::disk_manager::DiskManagerBuilder;
use datafusion::execution::memory_pool::{
    FairSpillPool, MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation, TrackConsumersPool,
};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

/// The bytes of a partition's share of [`bounded_context`]'s memory that a batch row may
/// take: 1 KiB a row in 32 batches.
const BATCH_SHARE_DIVISOR: usize = 32 << 10;

/// Spilled sort runs merged at once: a merge reserves a batch (or two) per run it reads, and
/// reserving for every run at once takes the memory other partitions' sorts need.
const SPILL_MERGE_FAN_IN: usize = 16;

/// The fewest rows a batch of [`bounded_context`] holds.
const MIN_BATCH_ROWS: usize = 256;

/// A session whose queries hold at most about `memory_bytes` in DataFusion's operators:
/// sorts, aggregates and joins reserve their memory from a `FairSpillPool` of that size
/// (shared fairly among the operators that can spill), and the sorts and aggregates spill
/// to temporary files in the system's temporary directory when their share is used up. A
/// scan holds a batch at a time per partition (`ArrowOptions::batch_rows` rows), so a query
/// whose result is read as a stream (`DataFrame::execute_stream`) runs in bounded memory
/// over a collection of any size. The session has DataFusion's default functions and
/// planners (docs/sql.md lists them): `tags.hostname` and `tags['hostname']` both read a
/// struct field.
///
/// Within the limit:
/// - batches hold at most `memory_bytes / (partitions × 32 KiB)` rows (between 256 and
///   DataFusion's 8192): merging spilled sort runs holds a batch per run, and the last merge
///   one per partition;
/// - each sort partition sets aside at most a quarter of its share of the pool for merging
///   its runs (DataFusion's `sort_spill_reservation_bytes`, 10 MiB by default, which a
///   smaller pool would refuse), and merges at most 16 runs at once (more are merged in
///   several passes);
/// - the buffers of `RepartitionExec` and of the sorts' merges count in the pool but are
///   never refused: refused, `RepartitionExec` spills batches to files that DataFusion 55
///   can deadlock on reading back (apache/datafusion#24883: a grouped aggregate over two
///   partitions stops with every thread parked), and a merge fails the query when another
///   partition's sort took the pool first. They are bounded by the plan's shape: about a
///   batch per partition pair for `RepartitionExec`, a batch or two per run (16 at most) for
///   a merge. Only the sorts, aggregates and joins are held to the limit, and only sorts and
///   aggregates can spill: a hash join's build side beyond it fails the query.
///
/// # Errors
/// The temporary directory cannot be used.
pub fn bounded_context(memory_bytes: usize) -> Result<SessionContext> {
    let (config, runtime) = bounded_parts(memory_bytes)?;
    Ok(SessionContext::new_with_config_rt(config, runtime))
}

/// The session configuration and runtime of [`bounded_context`], for sessions built
/// otherwise (a cluster's coordinator and workers, whose sessions datafusion-distributed's
/// builders make).
///
/// # Errors
/// The temporary directory cannot be used.
pub fn bounded_parts(memory_bytes: usize) -> Result<(SessionConfig, Arc<RuntimeEnv>)> {
    let pool = BufferGrantingPool(TrackConsumersPool::new(
        FairSpillPool::new(memory_bytes),
        std::num::NonZeroUsize::MIN.saturating_add(4),
    ));
    let runtime = RuntimeEnvBuilder::new()
        .with_memory_pool(Arc::new(pool))
        .with_disk_manager_builder(
            DiskManagerBuilder::default().with_max_spill_merge_fan_in(SPILL_MERGE_FAN_IN),
        )
        .build_arc()?;
    let config = SessionConfig::new();
    let partitions = config.target_partitions().max(1);
    let batch_rows = config
        .batch_size()
        .min(memory_bytes / (partitions * BATCH_SHARE_DIVISOR))
        .max(MIN_BATCH_ROWS);
    let mut config = config.with_batch_size(batch_rows);
    let execution = &mut config.options_mut().execution;
    execution.sort_spill_reservation_bytes = execution
        .sort_spill_reservation_bytes
        .min(memory_bytes / (4 * partitions));
    Ok((config, runtime))
}

/// The consumers whose reservations [`BufferGrantingPool`] grants without refusing them:
/// buffers bounded by the plan's shape and the batch size, whose refusal fails or stalls a
/// query that spilling would finish.
const UNREFUSED: [&str; 3] = [
    // Refused, it spills to files DataFusion 55 can deadlock on (apache/datafusion#24883).
    "RepartitionExec",
    // A sort's merge: a batch or two per spilled run, at most `SPILL_MERGE_FAN_IN` runs.
    // Refused at the start (its `sort_spill_reservation_bytes`), the query fails when
    // another partition's sort took the pool before this one registered.
    "ExternalSorterMerge",
    // The last merge of the sorted partitions: a batch per partition.
    "SortPreservingMergeExec",
];

/// A memory pool that grants the reservations of [`UNREFUSED`] consumers without refusing
/// them (see [`bounded_context`]) and passes everything else to the pool it wraps. What they
/// hold still counts, so the sorts and aggregates spill sooner.
#[derive(Debug)]
struct BufferGrantingPool<P>(P);

impl<P: MemoryPool> MemoryPool for BufferGrantingPool<P> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn register(&self, consumer: &MemoryConsumer) {
        self.0.register(consumer);
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.0.unregister(consumer);
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.0.grow(reservation, additional);
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        self.0.shrink(reservation, shrink);
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        if UNREFUSED
            .iter()
            .any(|prefix| reservation.consumer().name().starts_with(prefix))
        {
            self.0.grow(reservation, additional);
            Ok(())
        } else {
            self.0.try_grow(reservation, additional)
        }
    }

    fn reserved(&self) -> usize {
        self.0.reserved()
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.0.memory_limit()
    }
}

impl<P: MemoryPool> std::fmt::Display for BufferGrantingPool<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}
