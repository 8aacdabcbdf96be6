//! Idle expiry under memory pressure (SPEC §6.9), and emptying the catalog (clear all, the
//! idle buckets whose segments the engine merges).

use super::*;

impl BucketCatalog {
    /// Archives or closes idle buckets while memory exceeds the threshold (SPEC ).
    pub(super) fn expire_idle(
        &self,
        stripe: &mut Stripe,
        options: &CatalogOptions,
        out: &mut StageOutcome,
    ) {
        let mut done = 0;
        while self.pool.usage() > options.idle_bucket_expiry_memory_usage_threshold_bytes
            && done <= options.idle_bucket_expiry_max_count_per_attempt
        {
            done += 1;
            let Stripe { idle, buckets, .. } = &mut *stripe;
            let oldest =
                idle.pop_oldest(|seq, id| buckets.get(id).is_some_and(|b| b.idle_seq == Some(seq)));
            if let Some(id) = oldest {
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
                out.closed.push(ClosedBucket::of(bucket, action));
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
                    active.fulfil(Err(crate::CommitError::CollectionDropped));
                }
                if let Some(b) = self.remove_bucket(&mut stripe, &id) {
                    closed.push(ClosedBucket::of(b, RolloverAction::HardClose));
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
        // The collection goes: nothing of it is stored any more.
        let gone: HashSet<BucketId> = closed.iter().map(|c| c.id).collect();
        lock(&self.leaving).retain(|p| !gone.contains(&p.id));
        for (m, cv) in self.stripes.iter().zip(&self.stripe_cv) {
            lock(m).storing.retain(|id, _| !gone.contains(id));
            cv.notify_all();
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
                if stripe
                    .buckets
                    .get(&id)
                    .is_some_and(|b| !b.has_pending() && b.stored_segments > 1)
                    && let Some(b) = self.remove_bucket(&mut stripe, &id)
                {
                    out.push(ClosedBucket::of(b, RolloverAction::SoftClose));
                }
            }
        }
        out
    }
}
