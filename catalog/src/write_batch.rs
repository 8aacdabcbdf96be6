//! Write batches and commit rights (SPEC §7.1, §7.2).

use tscoll_codec::Column;

use crate::bucket::BucketId;
use crate::commit_error::CommitError;
use crate::key::BucketKey;
use crate::sync::{Arc, AtomicBool, Condvar, Mutex, Ordering, lock};

/// Measurements staged into one bucket by one or more writers, committed together
/// (SPEC ). Shared as `Arc<WriteBatch>`.
#[derive(Debug)]
pub struct WriteBatch {
    pub(crate) bucket_id: BucketId,
    pub(crate) key: Arc<BucketKey>,
    pub(crate) stripe: usize,
    commit_rights: AtomicBool,
    /// Set (under the stripe lock) when the batch is prepared (SPEC ).
    prepared: AtomicBool,
    pub(crate) data: Mutex<BatchData>,
    outcome: Mutex<Outcome>,
    done: Condvar,
}

/// How a batch ended, and who waits for it.
#[derive(Debug, Default)]
struct Outcome {
    /// `None` until the batch is committed or aborted.
    result: Option<Result<(), CommitError>>,
    /// Writers waiting in [`WriteBatch::wait`]: only then does settling wake anyone (a
    /// wake-up is a system call, and most batches have no other writer).
    waiting: usize,
}

/// A writer (one insert call) staging measurements, unique among the concurrent writers of a
/// catalog. Writers share batches (SPEC, op id 0); a batch records which writer staged
/// each row, so each learns the fate of its own measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WriterId(pub u64);

/// What a batch knows of its staged rows; their values are in the bucket's columns
/// ([`crate::BucketRows`]), after the rows of the batch prepared before it.
#[derive(Debug, Default)]
pub(crate) struct BatchData {
    pub(crate) rows: usize,
    /// Input index of each row, in row order.
    pub(crate) indices: Vec<usize>,
    /// Writer of each row, in row order.
    pub(crate) owners: Vec<WriterId>,
    pub(crate) uncompressed_bytes: u64,
    /// Bytes of staged rows counted in the catalog's memory usage (SPEC ), released
    /// when the rows leave the catalog (prepare or abort).
    pub(crate) accounted: u64,
}

impl WriteBatch {
    pub(crate) fn new(bucket_id: BucketId, key: Arc<BucketKey>, stripe: usize) -> Self {
        WriteBatch {
            bucket_id,
            key,
            stripe,
            commit_rights: AtomicBool::new(false),
            prepared: AtomicBool::new(false),
            data: Mutex::new(BatchData::default()),
            outcome: Mutex::new(Outcome::default()),
            done: Condvar::new(),
        }
    }

    /// The bucket this batch writes to.
    #[must_use]
    pub fn bucket_id(&self) -> BucketId {
        self.bucket_id
    }

    /// The series of the bucket.
    #[must_use]
    pub fn key(&self) -> &BucketKey {
        &self.key
    }

    /// Atomically claims the right to commit this batch (SPEC ); exactly one caller
    /// ever gets `true` ([`crate::BucketCatalog::claim`]).
    pub(crate) fn claim_commit_rights(&self) -> bool {
        !self.commit_rights.swap(true, Ordering::AcqRel)
    }

    /// Input indices of the measurements staged into this batch, by every writer.
    #[must_use]
    pub fn indices(&self) -> Vec<usize> {
        lock(&self.data).indices.clone()
    }

    /// Input indices of the measurements `writer` staged into this batch, in row order.
    #[must_use]
    pub fn indices_of(&self, writer: WriterId) -> Vec<usize> {
        let data = lock(&self.data);
        data.indices
            .iter()
            .zip(&data.owners)
            .filter(|(_, w)| **w == writer)
            .map(|(i, _)| *i)
            .collect()
    }

    /// Number of measurements `writer` staged into this batch.
    #[must_use]
    pub fn rows_of(&self, writer: WriterId) -> usize {
        lock(&self.data)
            .owners
            .iter()
            .filter(|w| **w == writer)
            .count()
    }

    /// Settles the batch's outcome; the first outcome wins (a batch failed by an abort stays
    /// failed, SPEC ).
    pub(crate) fn fulfil(&self, result: Result<(), CommitError>) {
        let mut g = lock(&self.outcome);
        if g.result.is_none() {
            g.result = Some(result);
        }
        let waiting = g.waiting > 0;
        drop(g);
        if waiting {
            self.done.notify_all();
        }
    }

    /// Why the batch failed, if it was aborted.
    pub(crate) fn failure(&self) -> Option<CommitError> {
        match lock(&self.outcome).result.as_ref() {
            Some(Err(e)) => Some(e.clone()),
            _ => None,
        }
    }

    pub(crate) fn mark_prepared(&self) {
        self.prepared.store(true, Ordering::Release);
    }

    pub(crate) fn is_prepared(&self) -> bool {
        self.prepared.load(Ordering::Acquire)
    }

    /// Whether the batch has finished (committed or aborted).
    #[must_use]
    pub fn is_finished(&self) -> bool {
        lock(&self.outcome).result.is_some()
    }

    /// Waits until the batch is committed or aborted (SPEC ).
    ///
    /// # Errors
    /// Why the batch was aborted, when it was.
    pub fn wait(&self) -> Result<(), CommitError> {
        let mut g = lock(&self.outcome);
        loop {
            if let Some(r) = g.result.as_ref() {
                return r.clone();
            }
            g.waiting += 1;
            g = self
                .done
                .wait(g)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            g.waiting -= 1;
        }
    }
}

/// A batch ready to be written by the engine (SPEC ): the rows as columns plus the
/// bucket's new control state.
#[derive(Clone, Debug)]
pub struct PreparedBatch {
    /// The batch itself.
    pub batch: Arc<WriteBatch>,
    /// Bucket `_id`.
    pub bucket_id: BucketId,
    /// The series.
    pub key: Arc<BucketKey>,
    /// `control.min.<time>` (rounded, ms).
    pub min_time: i64,
    /// `control.max.<time>` after this commit (ms).
    pub max_time: i64,
    /// `control.count` after this commit.
    pub count: u32,
    /// Measurements committed before this batch (0 = insert of a new bucket, R-7.2.3).
    pub committed_before: u32,
    /// BSON bytes of the measurements committed before this batch.
    pub uncompressed_before: u64,
    /// Number of the segment this batch is written as.
    pub segment_no: u32,
    /// Whether the bucket is still in time order (v2) after this commit (SPEC §4.2).
    pub sorted: bool,
    /// The classic size estimate after this commit (bytes).
    pub size_estimate: u64,
    /// The rows as `(field, column)` in the bucket's field order, fields with no value in
    /// this batch left out, every column `rows` rows long, from
    /// [`crate::CommitRights::prepare`]. Empty from [`crate::CommitRights::prepare_into`],
    /// which appends the rows to a [`crate::CommitRows`] instead.
    pub columns: Vec<(String, Column)>,
    /// Number of measurements.
    pub rows: usize,
    /// Sum of the measurements' BSON element sizes (bytes), for compression statistics.
    pub uncompressed_bytes: u64,
}
