//! Archiving and reopening (SPEC §6.8): buckets that leave memory keep an archived record,
//! and a later measurement of their series may reopen them (archive-based or query-based).

use super::*;

impl BucketCatalog {
    pub(super) fn archive(&self, stripe: &mut Stripe, bucket: &Bucket) {
        stripe.archived_seq += 1;
        let seq = stripe.archived_seq;
        let replaced = stripe
            .archived
            .entry(Arc::clone(&bucket.key))
            .or_default()
            .insert(bucket.min_time, (bucket.id, seq));
        if let Some((_, old)) = replaced {
            // Placement archives no duplicate (SPEC ); a replaced record leaves the order.
            stripe.archived_order.remove(&old);
            self.archived_buckets.fetch_sub(1, Ordering::Relaxed);
            self.active_buckets.fetch_sub(1, Ordering::Relaxed);
            self.mem_sub(ARCHIVED_RECORD_BYTES + bucket.key.bytes.len() as u64);
        }
        stripe
            .archived_order
            .insert(seq, (Arc::clone(&bucket.key), bucket.min_time));
        self.archived_buckets.fetch_add(1, Ordering::Relaxed);
        self.active_buckets.fetch_add(1, Ordering::Relaxed);
        self.mem_add(ARCHIVED_RECORD_BYTES + bucket.key.bytes.len() as u64);
    }

    pub(super) fn take_archived(
        &self,
        stripe: &mut Stripe,
        key: &Arc<BucketKey>,
        min_time: i64,
    ) -> Option<BucketId> {
        let records = stripe.archived.get_mut(key)?;
        let (id, seq) = records.remove(&min_time)?;
        if records.is_empty() {
            stripe.archived.remove(key);
        }
        stripe.archived_order.remove(&seq);
        self.archived_buckets.fetch_sub(1, Ordering::Relaxed);
        self.active_buckets.fetch_sub(1, Ordering::Relaxed);
        self.mem_sub(ARCHIVED_RECORD_BYTES + key.bytes.len() as u64);
        Some(id)
    }

    #[expect(clippy::too_many_arguments, reason = "internal step of place")]
    pub(super) fn try_reopen(
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
    ) -> Result<Option<BucketId>, SourceError> {
        let s = &self.stats;
        // Archive-based: the archived record with the largest min time ≤ time.
        let archived = stripe
            .archived
            .get(key)
            .and_then(|a| a.range(..=m.time).next_back().map(|(t, (id, _))| (*t, *id)))
            .filter(|(t, _)| m.time.saturating_sub(*t) < spec.max_span_ms);
        let stored = if let Some((min_time, id)) = archived {
            self.take_archived(stripe, key, min_time);
            match source.fetch(key, &id)? {
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
            )? {
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
        let Some(stored) = stored else {
            return Ok(None);
        };
        if stripe.buckets.contains_key(&stored.id) {
            ExecutionStats::bump(&s.num_duplicate_buckets_reopened);
            return Ok(None);
        }
        if stripe.direct_writes.contains_key(&stored.id) {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_write_conflict);
            return Ok(None);
        }
        if stripe.frozen.contains(&stored.id) {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_marked_frozen);
            return Ok(None);
        }
        if stripe.storing.contains_key(&stored.id) {
            // It left memory a moment ago and its last rows are not stored yet.
            return Ok(None);
        }
        // Rehydration checks.
        if stored.key_bytes != key.bytes {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_hash_collision);
            return Ok(None);
        }
        if stored.closed {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_marked_closed);
            return Ok(None);
        }
        let Some(fields) = stored.fields(&spec.time_field) else {
            ExecutionStats::bump(&s.num_bucket_reopenings_failed_due_to_min_max_calculation);
            return Ok(None);
        };
        let reopened = Box::new(ReopenedControl {
            fields: fields.clone(),
            max_time: stored.max_time,
            sorted: stored.sorted,
        });
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
            fields: BucketFields::from_fields(fields, &stripe.shape),
            sorted: stored.sorted,
            rollover: None,
            kept_open_large: false,
            next_segment: stored.next_segment,
            stored_count: stored.count,
            stored_segments: stored.next_segment,
            active: None,
            prepared: false,
            state: BucketState::Normal,
            opened_due_to_metadata: false,
            idle_seq: None,
            memory: 0,
            // Its earlier rows are in storage only: it is merged from there when it closes.
            rows: BucketRows::default(),
            rows_base: stored.count,
            rows_hint: 0,
            pending_from: None,
            sums: stored.sums.clone(),
            reopened: Some(reopened),
        };
        if self
            .rollover_reason(&mut bucket, m, spec, options, derived, None)
            .is_err()
        {
            return Ok(None);
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
                out.closed
                    .push(ClosedBucket::of(b, RolloverAction::SoftClose));
            }
        }
        self.mem_add(bucket.measure_memory());
        self.active_buckets.fetch_add(1, Ordering::Relaxed);
        stripe.buckets.insert(id, bucket);
        stripe.series.entry(Arc::clone(key)).or_default().open = Some(id);
        ExecutionStats::bump(&s.num_buckets_reopened);
        Ok(Some(id))
    }

    /// Drops the archived record of bucket `id` of series `key`, if any.
    pub(super) fn drop_archived(&self, stripe: &mut Stripe, key: &BucketKey, id: &BucketId) {
        let min_time = stripe
            .archived
            .get(key)
            .and_then(|records| records.iter().find(|(_, (r, _))| r == id).map(|(t, _)| *t));
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
}
