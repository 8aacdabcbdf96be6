//! Placement (SPEC §6.2): staging measurements into write batches, choosing or opening the
//! bucket of each, appending to it, and rollover (§6.3) when it is full, too old or too new.

use super::*;

impl BucketCatalog {
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
        self.with_staging(writer, key, source, |stripe, st| {
            for m in measurements {
                self.stage_one(stripe, st, m);
            }
        })
    }

    /// Runs `stage` on the locked stripe of series `key` with a new staging state, then
    /// accounts what it staged.
    pub(super) fn with_staging(
        &self,
        writer: WriterId,
        key: &BucketKey,
        source: &dyn BucketSource,
        stage: impl FnOnce(&mut Stripe, &mut Staging<'_>),
    ) -> StageOutcome {
        let (spec, options) = (self.spec(), self.options());
        let stripe_no = Self::stripe_of(key);
        let mut guard = lock(&self.stripes[stripe_no]);
        let stripe: &mut Stripe = &mut guard;
        let mut st = self.staging(
            stripe,
            writer,
            stripe_no,
            key,
            None,
            source,
            (&spec, &options),
        );
        stage(stripe, &mut st);
        self.finish_staging(stripe, st)
    }

    /// The state of one call staging measurements of series `key` into stripe `stripe_no`.
    /// A series new to the stripe keeps `shared` when given (the caller's copy of `key`),
    /// a copy of `key` otherwise.
    #[expect(clippy::too_many_arguments, reason = "one staging's inputs")]
    pub(super) fn staging<'s>(
        &self,
        stripe: &Stripe,
        writer: WriterId,
        stripe_no: usize,
        key: &BucketKey,
        shared: Option<&Arc<BucketKey>>,
        source: &'s dyn BucketSource,
        (spec, options): (&'s BucketingSpec, &'s CatalogOptions),
    ) -> Staging<'s> {
        let key = match stripe.series.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => shared.map_or_else(|| Arc::new(key.clone()), Arc::clone),
        };
        Staging {
            writer,
            stripe_no,
            key,
            spec,
            options,
            source,
            only_open: None,
            out: StageOutcome::default(),
            scratch: Vec::new(),
        }
    }

    /// Places one measurement (SPEC §6.2) and appends it to its bucket's batch.
    pub(super) fn stage_one(&self, stripe: &mut Stripe, st: &mut Staging<'_>, m: &Measurement<'_>) {
        let meta_field = st.spec.meta_field.as_deref();
        let key_len = st.key.bytes.len() as u64;
        // One pass over the fields assesses `m` for the open bucket and for the 16 MiB
        // check; a measurement that bucket cannot take is assessed again where it goes.
        let open = st
            .only_open
            .map(|id| (id, assess(stripe.buckets.get(&id), m, meta_field)));
        let alone =
            open.map_or_else(|| assess(None, m, meta_field).alone, |(_, a)| a.alone) + key_len;
        if alone > MAX_BSON_OBJECT_SIZE {
            st.out.rejected.push((m.index, StageError::TooLarge(alone)));
            return;
        }
        let fast = open.and_then(|(id, a)| {
            let derived = derived_max_size(st.options, self.active_buckets());
            let bucket = stripe.buckets.get_mut(&id)?;
            let delta = self
                .rollover_reason(bucket, m, st.spec, st.options, derived, Some(a))
                .ok()?;
            Some((id, Some(delta)))
        });
        let (id, delta) = match fast {
            Some(placed) => placed,
            None => {
                let placed = match self.place(
                    stripe,
                    &st.key,
                    m,
                    st.spec,
                    st.options,
                    st.source,
                    &mut st.out,
                ) {
                    Ok(placed) => placed,
                    Err(e) => {
                        st.out.rejected.push((m.index, StageError::Storage(e)));
                        return;
                    }
                };
                st.only_open = stripe
                    .series
                    .get(&st.key)
                    .filter(|s| s.rolling.is_empty() && s.open == Some(placed.0))
                    .map(|_| placed.0);
                placed
            }
        };
        let Some(bucket) = stripe.buckets.get_mut(&id) else {
            return;
        };
        // Using an idle bucket takes it off the idle list.
        if bucket.idle_seq.take().is_some() {
            stripe.idle.left();
        }
        let (batch, bytes) = self.append(
            st.writer,
            bucket,
            m,
            delta,
            st.spec,
            st.stripe_no,
            &mut st.scratch,
        );
        if !Arc::ptr_eq(bucket.fields.shared_names(), &stripe.shape) {
            stripe.shape = Arc::clone(bucket.fields.shared_names());
        }
        st.out.staged_bytes += bytes;
        st.note_batch(batch);
    }

    /// Ends a staging call: the touched buckets' memory is measured again and the staged
    /// bytes accounted.
    pub(super) fn finish_staging(&self, stripe: &mut Stripe, st: Staging<'_>) -> StageOutcome {
        let mut out = st.out;
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

    /// Chooses the bucket for `m`, rolling over, reopening or allocating as needed. Returns
    /// the bucket and, when an open bucket took it as it was, the estimate's increment.
    #[expect(clippy::too_many_arguments, reason = "internal step of stage")]
    pub(super) fn place(
        &self,
        stripe: &mut Stripe,
        key: &Arc<BucketKey>,
        m: &Measurement<'_>,
        spec: &BucketingSpec,
        options: &CatalogOptions,
        source: &dyn BucketSource,
        out: &mut StageOutcome,
    ) -> Result<(BucketId, Option<u64>), SourceError> {
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
        // The count of the series' bucket that rolls over: the rows a new bucket may expect.
        let mut rows_hint = 0;
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
                Ok(delta) => return Ok((id, Some(delta))),
                Err(reason) => {
                    if reason == RolloverReason::TimeBackward {
                        if is_open {
                            open_failed_backward_only = true;
                        }
                    } else {
                        allow_query = false;
                    }
                    if is_open {
                        rows_hint = bucket.count;
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
        )? {
            return Ok((id, None));
        }
        self.expire_idle(stripe, options, out);
        let id = self.allocate(stripe, key, m, spec, !had_open);
        if let Some(bucket) = stripe.buckets.get_mut(&id) {
            bucket.rows_hint = rows_hint;
        }
        Ok((id, None))
    }

    /// The first rollover reason of SPEC §6.3 that applies to `bucket` for `m` (`Err`), else
    /// the classic estimate's increment (`Ok`, bytes). Marks the kept-open-for-large-
    /// measurements flag (SPEC §6.5 step 2).
    pub(super) fn rollover_reason(
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
    pub(super) fn maybe_roll_now(
        &self,
        stripe: &mut Stripe,
        id: &BucketId,
        out: &mut StageOutcome,
    ) {
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
    pub(super) fn apply_rollover(
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
        Some(ClosedBucket::of(bucket, action))
    }

    /// Opens a new bucket of series `key` for `m` (SPEC §6.2).
    pub(super) fn allocate(
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
            fields: BucketFields::following(&stripe.shape),
            sorted: true,
            rollover: None,
            kept_open_large: false,
            next_segment: 0,
            stored_count: 0,
            stored_segments: 0,
            active: None,
            prepared: false,
            state: BucketState::Normal,
            opened_due_to_metadata,
            idle_seq: None,
            memory: 0,
            rows: BucketRows::default(),
            rows_base: 0,
            rows_hint: 0,
            pending_from: None,
            sums: Some(BucketSums::default()),
            reopened: None,
        };
        self.mem_add(bucket.measure_memory());
        self.active_buckets.fetch_add(1, Ordering::Relaxed);
        stripe.buckets.insert(id, bucket);
        stripe.series.entry(Arc::clone(key)).or_default().open = Some(id);
        id
    }

    /// Appends `m` to the bucket's active batch: its values to the bucket's columns, min/max,
    /// size, sortedness (`delta`: the estimate's increment, when placement computed it).
    /// Returns the batch and the staged bytes to account.
    #[expect(clippy::too_many_arguments, reason = "internal step of stage")]
    pub(super) fn append(
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
        // The rows before come first in min/max (ties keep the first value, SPEC ).
        bucket.fold_pending();
        let batch = bucket.active_batch(stripe_no);
        let mut data = lock(&batch.data);
        let row = (bucket.count - bucket.rows_base) as usize;
        let mut hint = 0usize;
        let mut uncompressed = 0;
        if bucket.fields.is_empty() {
            // A new bucket: room for exactly the fields of its first measurement, which most
            // buckets keep (a growing vector would hold up to twice that, per open bucket).
            bucket.reserve_fields(m.doc.len() + usize::from(m.generated_id.is_some()));
        }
        for (name, v) in m.fields() {
            if Some(name) == meta_field {
                continue;
            }
            uncompressed += element_size(name, v);
            let idx = match find_field(&bucket.fields, name, &mut hint) {
                Some(i) => i,
                None => {
                    let i = bucket.fields.push(name, MinMax::new(v));
                    hint = i + 1;
                    i
                }
            };
            if let Some(f) = bucket.fields.minmax_mut(idx) {
                f.update(v);
            }
            let col = bucket.rows.column_at(bucket.fields.len(), idx, row);
            push_value(col, v, scratch);
        }
        if bucket.count == 0 {
            // control.min.<time> of a new bucket is the rounded time.
            let min_time = bucket.min_time;
            if let Some((_, f)) = bucket
                .fields
                .iter_mut()
                .find(|(n, _)| *n == spec.time_field)
            {
                set_rounded_min_time(f, min_time);
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
}
