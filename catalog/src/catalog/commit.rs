//! The commit protocol (SPEC §7), typed: a writer claims a batch's commit rights
//! ([`BucketCatalog::claim`] → [`CommitRights`]), prepares it ([`CommitRights::prepare`] →
//! [`Prepared`]), writes it, and finishes it ([`Prepared::finish`]). Rights or a prepared
//! batch dropped on the way (an early return, a panic) abort the batch, so no writer waits on
//! it forever and its bucket is not left prepared. Aborting fails every other unprepared batch
//! of the bucket.

use std::ops::Deref;

use super::*;
use crate::{CommitError, CommitRows};

/// Where [`CommitRights::prepare`] puts a batch's rows.
enum Rows<'t> {
    /// Into the prepared batch, copied.
    Copy,
    /// Appended to a commit group's table.
    Append(&'t mut CommitRows),
}

/// The right to commit one write batch, won by [`BucketCatalog::claim`] (SPEC ).
///
/// Consumed by [`CommitRights::prepare`], [`CommitRights::prepare_into`] or
/// [`CommitRights::abort`]. Dropped otherwise, it aborts the batch with
/// [`CommitError::Abandoned`].
#[must_use = "dropping commit rights aborts the batch"]
pub struct CommitRights {
    catalog: Arc<BucketCatalog>,
    batch: Arc<WriteBatch>,
    settled: bool,
}

impl CommitRights {
    /// The batch these rights commit.
    #[must_use]
    pub fn batch(&self) -> &Arc<WriteBatch> {
        &self.batch
    }

    /// Prepares the batch (SPEC ): waits while another batch of the bucket is
    /// prepared (R-7.2.5, counting `numWaits`), then hands out the bucket's new control state
    /// and a copy of the rows ([`PreparedBatch::columns`]).
    ///
    /// # Errors
    /// Why the batch cannot be committed (it was failed by an abort, or its bucket was
    /// cleared or frozen meanwhile); the batch is then aborted with that error.
    pub fn prepare(self) -> Result<Prepared, CommitError> {
        self.prepare_rows(Rows::Copy)
    }

    /// As [`CommitRights::prepare`], appending the rows to `table` instead of copying them
    /// into the prepared batch: a committer prepares all its batches into one table, the rows
    /// of its log record.
    ///
    /// # Errors
    /// As [`CommitRights::prepare`]; `table` is then unchanged.
    pub fn prepare_into(self, table: &mut CommitRows) -> Result<Prepared, CommitError> {
        self.prepare_rows(Rows::Append(table))
    }

    /// Gives the rights up: the batch and every other unprepared batch of its bucket fail
    /// with `error` (SPEC ).
    pub fn abort(mut self, error: CommitError) {
        self.settled = true;
        self.catalog.abort(&self.batch, error);
    }

    fn prepare_rows(mut self, rows: Rows<'_>) -> Result<Prepared, CommitError> {
        self.settled = true;
        match self.catalog.prepare(&self.batch, rows) {
            Ok(batch) => Ok(Prepared {
                catalog: Arc::clone(&self.catalog),
                batch,
                settled: false,
            }),
            Err(e) => {
                self.catalog.abort(&self.batch, e.clone());
                Err(e)
            }
        }
    }
}

impl Drop for CommitRights {
    fn drop(&mut self) {
        if !self.settled {
            self.catalog.abort(&self.batch, CommitError::Abandoned);
        }
    }
}

impl std::fmt::Debug for CommitRights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitRights")
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

/// A prepared batch (SPEC ): its rows and its bucket's new control state
/// ([`PreparedBatch`], through `Deref`), to be written and then finished. It holds the
/// catalog, so it may be finished on another thread than the one that prepared it.
///
/// While it lives, no other batch of the bucket is prepared. Consumed by
/// [`Prepared::finish`] or [`Prepared::abort`]. Dropped otherwise, it aborts the batch with
/// [`CommitError::Abandoned`].
#[must_use = "dropping a prepared batch aborts it"]
pub struct Prepared {
    catalog: Arc<BucketCatalog>,
    batch: PreparedBatch,
    settled: bool,
}

impl Prepared {
    /// Finishes the batch once it is written (SPEC ): fulfils it, counts it, and marks
    /// the bucket idle or applies its deferred rollover. Returns buckets that left memory.
    pub fn finish(mut self) -> Vec<ClosedBucket> {
        self.settled = true;
        self.catalog.finish(&self.batch)
    }

    /// Aborts the batch, which was not written (SPEC ): it and every other unprepared
    /// batch of its bucket fail with `error`, and the bucket leaves the catalog.
    pub fn abort(mut self, error: CommitError) {
        self.settled = true;
        self.catalog.abort(&self.batch.batch, error);
    }

    /// The stored state a commit of this batch leaves when it is written as a segment with
    /// its control record (what a [`BucketSource`] reads back to reopen the bucket, SPEC
    /// §6.8): control min/max and count after the commit, the next segment number, not
    /// closed. `None` once the bucket has left the catalog. The engine stores buckets from
    /// [`crate::BucketPart`]s; this serves models of a store that writes every commit.
    #[must_use]
    pub fn stored_state(&self) -> Option<StoredBucket> {
        self.catalog.stored_state(&self.batch)
    }
}

impl Deref for Prepared {
    type Target = PreparedBatch;

    fn deref(&self) -> &PreparedBatch {
        &self.batch
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if !self.settled {
            self.catalog
                .abort(&self.batch.batch, CommitError::Abandoned);
        }
    }
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl BucketCatalog {
    /// Claims the right to commit `batch` (SPEC ): exactly one caller ever gets
    /// `Some`. A writer that gets `None` waits for the batch ([`BucketCatalog::wait`]). The
    /// rights hold the catalog (one reference count) until they are settled.
    pub fn claim(self: &Arc<Self>, batch: &Arc<WriteBatch>) -> Option<CommitRights> {
        batch.claim_commit_rights().then(|| CommitRights {
            catalog: Arc::clone(self),
            batch: Arc::clone(batch),
            settled: false,
        })
    }

    /// Waits for a batch set aside by [`BucketCatalog::claim`] to be committed or aborted by
    /// its committer, counting `numWaits` when it is not done yet (SPEC ).
    ///
    /// # Errors
    /// Why the batch was aborted, when it was.
    pub fn wait(&self, batch: &WriteBatch) -> Result<(), CommitError> {
        if !batch.is_finished() {
            ExecutionStats::bump(&self.stats.num_waits);
        }
        batch.wait()
    }

    fn prepare(
        &self,
        batch: &Arc<WriteBatch>,
        rows_to: Rows<'_>,
    ) -> Result<PreparedBatch, CommitError> {
        let mut stripe = lock(&self.stripes[batch.stripe]);
        loop {
            // A batch failed by an abort (of its bucket, by another writer) is never
            // committed.
            if let Some(error) = batch.failure() {
                return Err(error);
            }
            let Some(bucket) = stripe.buckets.get(&batch.bucket_id) else {
                return Err(CommitError::BucketCleared);
            };
            if !bucket.prepared {
                break;
            }
            ExecutionStats::bump(&self.stats.num_waits);
            stripe = self.wait_on_stripe(batch.stripe, stripe);
        }
        let Some(bucket) = stripe.buckets.get_mut(&batch.bucket_id) else {
            return Err(CommitError::BucketCleared);
        };
        match bucket.state {
            BucketState::Normal => {}
            BucketState::Frozen => return Err(CommitError::Frozen),
            BucketState::Cleared => return Err(CommitError::BucketCleared),
        }
        // The rows are encoded only when the bucket is stored: a bucket past the codec's
        // limits with them is frozen now (SPEC §6.10), before anything of it is logged.
        if let Err(reason) = tscoll_codec::check_limits(
            bucket.count as usize,
            bucket.fields.names().iter().map(|n| &**n),
        ) {
            let key = Arc::clone(&bucket.key);
            self.freeze_locked(&mut stripe, &key, &batch.bucket_id);
            self.release_stripe(batch.stripe, stripe);
            return Err(CommitError::WriteFailed(format!("bucket frozen: {reason}")));
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
        let uncompressed_bytes = self.release_staged(batch);
        // The batch's rows follow the committed ones in the bucket's columns.
        let from = (bucket.committed_count - bucket.rows_base) as usize;
        let columns = match rows_to {
            Rows::Copy => bucket.rows.slice(bucket.fields.names(), from, from + rows),
            Rows::Append(table) => {
                let data = lock(&batch.data);
                table.append_batch(
                    bucket.fields.names(),
                    &bucket.rows,
                    from,
                    from + rows,
                    &data.indices,
                    &data.owners,
                );
                Vec::new()
            }
        };
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
            columns,
            rows,
            uncompressed_bytes,
        })
    }

    /// See [`Prepared::stored_state`].
    fn stored_state(&self, p: &PreparedBatch) -> Option<StoredBucket> {
        let mut stripe = lock(&self.stripes[p.batch.stripe]);
        let bucket = stripe.buckets.get_mut(&p.bucket_id)?;
        let (min, max) = bucket.control_min_max();
        Some(StoredBucket {
            id: p.bucket_id,
            key_bytes: p.key.bytes.clone(),
            min_time: p.min_time,
            max_time: p.max_time,
            count: p.count,
            uncompressed_bytes: p.uncompressed_before + p.uncompressed_bytes,
            size_estimate: p.size_estimate,
            sorted: p.sorted,
            next_segment: p.segment_no + 1,
            closed: false,
            min,
            max,
            sums: bucket.sums_through(p.count),
        })
    }

    /// See [`Prepared::finish`].
    fn finish(&self, prepared: &PreparedBatch) -> Vec<ClosedBucket> {
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
            // The bucket's memory is as its staging measured it: committing moves no row.
            if !bucket.has_pending() && bucket.state == BucketState::Cleared {
                // Cleared by an abort while this batch was prepared: it goes now.
                self.remove_bucket(&mut stripe, &batch.bucket_id);
            } else if !bucket.has_pending() {
                match bucket.rollover {
                    Some(reason) => roll = Some(reason),
                    None if bucket.state == BucketState::Normal => {
                        let Stripe { idle, buckets, .. } = &mut *stripe;
                        if let Some(b) = buckets.get_mut(&batch.bucket_id) {
                            if b.idle_seq.is_some() {
                                idle.left();
                            }
                            b.idle_seq = Some(idle.push(batch.bucket_id));
                        }
                        idle.compact(|seq, id| {
                            buckets.get(id).is_some_and(|b| b.idle_seq == Some(seq))
                        });
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
        self.release_stripe(batch.stripe, stripe);
        batch.fulfil(Ok(()));
        closed
    }

    /// Aborts a batch whose commit failed (SPEC ): the batch and every other
    /// unprepared batch of the bucket fail with `reason`. The bucket leaves the catalog now
    /// if no batch of it is prepared or the aborted batch is the prepared one; if another
    /// writer's batch is prepared, the bucket is marked cleared (no series finds it, no
    /// insert goes to it) and leaves when that batch finishes.
    fn abort(&self, batch: &Arc<WriteBatch>, error: CommitError) {
        let mut stripe = lock(&self.stripes[batch.stripe]);
        let prepared_by_other = stripe
            .buckets
            .get(&batch.bucket_id)
            .is_some_and(|b| b.prepared && !batch.is_prepared());
        self.clear_bucket(
            &mut stripe,
            &batch.bucket_id,
            &error,
            prepared_by_other,
            BucketState::Cleared,
        );
        self.release_stripe(batch.stripe, stripe);
        self.release_staged(batch);
        batch.fulfil(Err(error));
    }

    /// Takes a bucket out of the catalog: its unprepared batch fails with `error` (its
    /// writers retry, SPEC ). With `keep_prepared` (another writer's batch of it is
    /// prepared) the bucket is only marked `state` and detached from its series, and leaves
    /// when that batch finishes; otherwise it is removed now.
    pub(super) fn clear_bucket(
        &self,
        stripe: &mut Stripe,
        id: &BucketId,
        error: &CommitError,
        keep_prepared: bool,
        state: BucketState,
    ) {
        let time_field = self.spec().time_field;
        let Some(bucket) = stripe.buckets.get_mut(id) else {
            return;
        };
        // The rows kept: the committed ones, and those of another writer's prepared batch.
        let mut kept = if keep_prepared {
            bucket.count
        } else {
            bucket.committed_count
        };
        if let Some(active) = bucket.active.take() {
            // Its rows are the last ones.
            let staged = u32::try_from(lock(&active.data).rows).unwrap_or(u32::MAX);
            kept = kept.min(bucket.count.saturating_sub(staged));
            self.release_staged(&active);
            active.fulfil(Err(error.clone()));
        }
        // Control goes back to the rows kept, so what is stored of the bucket agrees with them.
        bucket.drop_rows_from(kept, &time_field);
        if !keep_prepared {
            self.remove_bucket(stripe, id);
            return;
        }
        bucket.state = state;
        let key = Arc::clone(&bucket.key);
        if bucket.idle_seq.take().is_some() {
            stripe.idle.left();
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
}
