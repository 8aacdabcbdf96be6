//! Direct writes (SPEC ): a bucket written outside the insert path (a delete, a meta
//! update, TTL) is cleared from the catalog first and not reopened meanwhile; a bucket that
//! failed to encode is frozen (§6.10).

use super::*;
use crate::CommitError;

impl BucketCatalog {
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
            stripe = self.wait_on_stripe(stripe_no, stripe);
        }
        *stripe.direct_writes.entry(*id).or_insert(0) += 1;
        self.clears.fetch_add(1, Ordering::SeqCst);
        self.clear_bucket(
            &mut stripe,
            id,
            &CommitError::DirectWrite,
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

    /// How many direct writes have started and buckets been frozen: a reader holding a copy
    /// of open buckets' rows ([`BucketCatalog::memory_rows`]) knows by it whether any bucket
    /// may have been cleared since, and then trusts the copy of the buckets still open
    /// only ([`BucketCatalog::is_open`]).
    pub fn clears(&self) -> u64 {
        self.clears.load(Ordering::SeqCst)
    }

    /// Whether bucket `id` of series `key` is open in memory.
    pub fn is_open(&self, key: &BucketKey, id: &BucketId) -> bool {
        lock(&self.stripes[Self::stripe_of(key)])
            .buckets
            .contains_key(id)
    }

    /// Freezes bucket `id` of series `key` after its data failed to encode or decode
    /// (SPEC §6.10): it is cleared from the catalog, never written by the insert path and
    /// never reopened again (`numBucketsFrozen`, once per bucket). A batch of it being
    /// committed now finishes normally.
    pub fn freeze(&self, key: &BucketKey, id: &BucketId) {
        let stripe_no = Self::stripe_of(key);
        let mut stripe = lock(&self.stripes[stripe_no]);
        self.freeze_locked(&mut stripe, key, id);
        drop(stripe);
        self.stripe_cv[stripe_no].notify_all();
    }

    /// [`BucketCatalog::freeze`] on the locked stripe of `key`; the caller notifies the
    /// stripe's waiters once it lets the lock go.
    pub(super) fn freeze_locked(&self, stripe: &mut Stripe, key: &BucketKey, id: &BucketId) {
        if stripe.frozen.insert(*id) {
            ExecutionStats::bump(&self.stats.num_buckets_frozen);
        }
        self.clears.fetch_add(1, Ordering::SeqCst);
        let prepared = stripe.buckets.get(id).is_some_and(|b| b.prepared);
        self.clear_bucket(
            stripe,
            id,
            &CommitError::Frozen,
            prepared,
            BucketState::Frozen,
        );
        self.drop_archived(stripe, key, id);
    }
}
