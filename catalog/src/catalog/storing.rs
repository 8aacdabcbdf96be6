//! Parts leaving for storage (`docs/architecture.md`, write path): a commit only logs its rows;
//! an open bucket's rows are stored when it leaves memory, or in parts when the engine must
//! store them earlier (before a direct write, under memory pressure). This file hands those
//! parts out and tracks the buckets whose rows are on their way to storage.

use super::*;
use std::time::Duration;

use crate::CommitRows;

/// Rows of one bucket to store, with the bucket's control state after them.
///
/// The engine writes `columns` as segment `segment_no` of the bucket, with a control record
/// built from the other fields; when `first_row` is 0 the columns hold every row of the
/// bucket and replace whatever segments it stored before.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketPart {
    /// Bucket `_id`.
    pub id: BucketId,
    /// The series.
    pub key: Arc<BucketKey>,
    /// `control.min.<time>` (rounded, ms).
    pub min_time: i64,
    /// `control.max.<time>` (ms).
    pub max_time: i64,
    /// `control.count` once this part is stored.
    pub count: u32,
    /// Position in the bucket of the part's first row.
    pub first_row: u32,
    /// Rows the store held before this part (0: the bucket is new to the store and needs its
    /// index entry).
    pub stored_before: u32,
    /// Number of the segment this part is written as.
    pub segment_no: u32,
    /// Whether the bucket's rows are in time order (SPEC §4.2).
    pub sorted: bool,
    /// The classic size estimate (bytes, SPEC §6.4).
    pub size_estimate: u64,
    /// BSON bytes of every measurement of the bucket (for compression statistics).
    pub uncompressed_bytes: u64,
    /// `control.min` and `control.max` (SPEC §4.3), as the fields' min/max in field order.
    pub control: ControlMinMax,
    /// The sums of the fields over the bucket's `count` rows (in the order of `control`);
    /// `None` when unknown.
    pub sums: Option<BucketSums>,
    /// Rows in `columns`.
    pub rows: usize,
    /// `(field, column)` in the bucket's field order; fields with no value in these rows are
    /// left out.
    pub columns: Vec<(String, Column)>,
    /// Whether the bucket left memory (its segments are merged once this part is stored).
    pub closing: bool,
}

impl BucketPart {
    /// Takes the rows of `bucket` not yet stored (`closing`: the bucket leaves memory and takes
    /// all of them along, whole when it holds every row). Marks them stored in `bucket`.
    /// `None` when there is nothing to store or merge.
    pub(crate) fn take(
        bucket: &mut Bucket,
        closing: bool,
        time_field: impl FnOnce() -> String,
    ) -> Option<BucketPart> {
        let unstored = bucket.committed_count.saturating_sub(bucket.stored_count);
        let segments_after = bucket.stored_segments + u32::from(unstored > 0);
        if unstored == 0 && !(closing && segments_after > 1) {
            return None;
        }
        // A bucket leaving memory with every row in it is written as one blob (the parts it
        // stored before are replaced); otherwise only its unstored rows are.
        let whole = closing && bucket.rows_base == 0;
        // Before the columns may move into the part.
        bucket.fold_pending();
        let sums = bucket.sums_through(bucket.committed_count);
        let first_row = if whole { 0 } else { bucket.stored_count };
        let skip = (first_row - bucket.rows_base) as usize;
        let end = (bucket.committed_count - bucket.rows_base) as usize;
        let columns: Vec<(String, Column)> = if closing && skip == 0 {
            // Rows past the committed ones belonged to a batch that failed.
            bucket.rows.truncate(end);
            let names = bucket.fields.names().iter().map(|n| n.to_string());
            names
                .zip(std::mem::take(&mut bucket.rows.columns))
                .filter(|(_, c)| !c.all_missing())
                .map(|(n, mut c)| {
                    c.push_missing_n(end - c.len());
                    (n, c)
                })
                .collect()
        } else {
            bucket.rows.slice(bucket.fields.names(), skip, end)
        };
        let (control, max_time, sorted) = bucket.committed_control(time_field);
        let part = BucketPart {
            id: bucket.id,
            key: Arc::clone(&bucket.key),
            min_time: bucket.min_time,
            max_time,
            count: bucket.committed_count,
            first_row,
            stored_before: bucket.stored_count,
            segment_no: bucket.stored_segments,
            sorted,
            size_estimate: bucket.size,
            uncompressed_bytes: bucket.committed_uncompressed,
            control,
            sums: sums.clone(),
            rows: (bucket.committed_count - first_row) as usize,
            columns,
            closing,
        };
        bucket.sums = sums;
        bucket.stored_count = bucket.committed_count;
        if unstored > 0 || whole {
            bucket.stored_segments += 1;
        }
        Some(part)
    }
}

impl BucketPart {
    /// The rows of open bucket `b` not stored yet, copied (the columns `columns` accepts),
    /// with its control state.
    fn copy_unstored(
        b: &mut Bucket,
        columns: &mut dyn FnMut(&str) -> bool,
        time_field: impl FnOnce() -> String,
    ) -> BucketPart {
        let skip = (b.stored_count - b.rows_base) as usize;
        let (control, max_time, sorted) = b.committed_control(time_field);
        BucketPart {
            id: b.id,
            key: Arc::clone(&b.key),
            min_time: b.min_time,
            max_time,
            count: b.committed_count,
            first_row: b.stored_count,
            stored_before: b.stored_count,
            segment_no: b.stored_segments,
            sorted,
            size_estimate: b.size,
            uncompressed_bytes: b.committed_uncompressed,
            control,
            sums: b.sums_through(b.committed_count),
            rows: (b.committed_count - b.stored_count) as usize,
            columns: b.rows.slice_where(
                b.fields.names(),
                skip,
                (b.committed_count - b.rows_base) as usize,
                columns,
            ),
            closing: false,
        }
    }
}

/// An open bucket's state beside its unstored rows ([`BucketCatalog::unstored_into`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnstoredBucket {
    /// Bucket `_id`.
    pub id: BucketId,
    /// The series.
    pub key: Arc<BucketKey>,
    /// Whether the bucket's rows are in time order.
    pub sorted: bool,
    /// `control.min.<time>` (rounded, ms).
    pub min_time: i64,
    /// Position in the bucket of the first unstored row.
    pub first_row: u32,
    /// Unstored rows.
    pub rows: u32,
    /// BSON bytes of every committed measurement of the bucket.
    pub uncompressed_bytes: u64,
    /// The classic size estimate (bytes).
    pub size_estimate: u64,
}

impl BucketCatalog {
    /// Parts of buckets that left memory, to store now (each bucket's id stays marked as
    /// being stored, so it is not reopened, until [`BucketCatalog::stored`]).
    pub fn take_leaving(&self) -> Vec<Arc<BucketPart>> {
        std::mem::take(&mut *lock(&self.leaving))
    }

    /// Puts back parts the engine could not store (they are handed out again by the next
    /// [`BucketCatalog::take_leaving`]).
    pub fn return_leaving(&self, parts: Vec<Arc<BucketPart>>) {
        lock(&self.leaving).extend(parts);
    }

    /// Undoes [`BucketCatalog::take_unstored`] after the part failed to store: its rows count
    /// as unstored again (when nothing was taken after it).
    pub fn untake(&self, part: &BucketPart) {
        let mut stripe = lock(&self.stripes[Self::stripe_of(&part.key)]);
        if let Some(b) = stripe.buckets.get_mut(&part.id)
            && b.stored_segments == part.segment_no + 1
        {
            b.stored_count = part.stored_before;
            b.stored_segments = part.segment_no;
        }
    }

    /// Ends the store of a leaving part of bucket `id` (series `key`): it may be reopened,
    /// and a direct write waiting for it ([`BucketCatalog::wait_stored`]) goes on.
    pub fn stored(&self, key: &BucketKey, id: &BucketId) {
        let stripe_no = Self::stripe_of(key);
        lock(&self.stripes[stripe_no]).storing.remove(id);
        self.stripe_cv[stripe_no].notify_all();
    }

    /// Waits at most `timeout` while rows of bucket `id` (series `key`) that left memory are
    /// on their way to storage: handed out by [`BucketCatalog::take_leaving`] and not yet
    /// [`BucketCatalog::stored`]. Returns whether none are left.
    ///
    /// A direct write calls it after [`BucketCatalog::direct_write_start`] and before it
    /// reads the bucket (SPEC ): a part another writer is storing would otherwise
    /// land after the direct write and overwrite its control record or put back rows it
    /// removed. It must not hold the bucket's merge lock meanwhile (the other writer takes
    /// it to store the part); on `false` it stores the leaving parts itself, in case the
    /// other writer failed and gave the part back ([`BucketCatalog::return_leaving`]), and
    /// waits again.
    pub fn wait_stored(&self, key: &BucketKey, id: &BucketId, timeout: Duration) -> bool {
        let stripe_no = Self::stripe_of(key);
        let mut stripe = lock(&self.stripes[stripe_no]);
        if stripe.storing.contains_key(id) {
            // One wait: a wake-up for another bucket of the stripe returns early, and the
            // caller asks again.
            stripe.waiting += 1;
            stripe = match self.stripe_cv[stripe_no].wait_timeout(stripe, timeout) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
            stripe.waiting -= 1;
        }
        !stripe.storing.contains_key(id)
    }

    /// Open buckets holding rows not yet stored: `(key, id)`.
    pub fn unstored(&self) -> Vec<(Arc<BucketKey>, BucketId)> {
        let mut out = Vec::new();
        for m in &self.stripes {
            let mut stripe = lock(m);
            out.extend(
                stripe
                    .buckets
                    .values_mut()
                    .filter(|b| b.committed_count > b.stored_count)
                    .map(|b| (Arc::clone(&b.key), b.id)),
            );
        }
        out
    }

    /// Takes the unstored rows of open bucket `id` (series `key`) as a part to store; the
    /// bucket stays open. The caller stores parts of one bucket in the order it takes them.
    pub fn take_unstored(&self, key: &BucketKey, id: &BucketId) -> Option<BucketPart> {
        let mut stripe = lock(&self.stripes[Self::stripe_of(key)]);
        let bucket = stripe.buckets.get_mut(id)?;
        BucketPart::take(bucket, false, || self.spec().time_field)
    }

    /// Every open bucket's unstored rows, copied (they stay unstored): what a checkpoint of
    /// the write-ahead log records.
    pub fn unstored_rows(&self) -> Vec<BucketPart> {
        let mut out = Vec::new();
        for m in &self.stripes {
            let mut stripe = lock(m);
            out.extend(
                stripe
                    .buckets
                    .values_mut()
                    .filter(|b| b.committed_count > b.stored_count)
                    .map(|b| {
                        BucketPart::copy_unstored(b, &mut |_| true, || self.spec().time_field)
                    }),
            );
        }
        out
    }

    /// Every open bucket's unstored rows appended to `rows`, an entry per bucket, in the
    /// order of the states returned (they stay unstored): what a checkpoint of the write-ahead
    /// log records. Nothing is copied but the rows' log bytes.
    pub fn unstored_into(&self, rows: &mut CommitRows) -> Vec<UnstoredBucket> {
        let mut out = Vec::new();
        for m in &self.stripes {
            let stripe = lock(m);
            for b in stripe.buckets.values() {
                if b.committed_count <= b.stored_count {
                    continue;
                }
                let from = (b.stored_count - b.rows_base) as usize;
                rows.append(
                    b.fields.names(),
                    &b.rows,
                    from,
                    (b.committed_count - b.rows_base) as usize,
                );
                out.push(UnstoredBucket {
                    id: b.id,
                    key: Arc::clone(&b.key),
                    sorted: b.sorted,
                    min_time: b.min_time,
                    first_row: b.stored_count,
                    rows: b.committed_count - b.stored_count,
                    uncompressed_bytes: b.committed_uncompressed,
                    size_estimate: b.size,
                });
            }
        }
        out
    }

    /// What a read adds to the stored buckets, of the buckets `want(series, min time, max
    /// time)` accepts (times in ms): the unstored rows of open buckets, copied (they stay
    /// unstored; only the columns `columns` accepts), and the rows of buckets that left memory
    /// and are being stored (shared, every column), each part with its bucket's control
    /// state. Each stripe is read under its lock, so a
    /// bucket's part holds the rows committed at one moment, and a bucket leaving memory
    /// meanwhile is met either open or leaving.
    pub fn memory_rows(
        &self,
        want: &mut dyn FnMut(&BucketKey, i64, i64) -> bool,
        columns: &mut dyn FnMut(&str) -> bool,
    ) -> Vec<Arc<BucketPart>> {
        let mut out = Vec::new();
        for m in &self.stripes {
            let mut stripe = lock(m);
            let stripe = &mut *stripe;
            for b in stripe.buckets.values_mut() {
                if b.committed_count > b.stored_count && want(&b.key, b.min_time, b.max_time) {
                    out.push(Arc::new(BucketPart::copy_unstored(b, columns, || {
                        self.spec().time_field
                    })));
                }
            }
            for part in stripe.storing.values() {
                if want(&part.key, part.min_time, part.max_time) {
                    out.push(Arc::clone(part));
                }
            }
        }
        out
    }

    /// Removes every idle open bucket from memory (closing the collection): their rows go to
    /// [`BucketCatalog::take_leaving`]. Buckets with a batch in flight stay.
    pub fn close_idle(&self) -> Vec<ClosedBucket> {
        self.close_idle_upto(u64::MAX)
    }

    /// [`BucketCatalog::close_idle`] a group at a time: removes idle open buckets until those
    /// removed held `max_bytes` of catalog memory (at least one bucket), so that a caller
    /// storing each group before taking the next holds a bounded share of the catalog twice
    /// (as buckets and as parts being stored). Empty once no idle bucket is left.
    pub fn close_idle_upto(&self, max_bytes: u64) -> Vec<ClosedBucket> {
        let mut out = Vec::new();
        let mut bytes = 0u64;
        for m in &self.stripes {
            let mut stripe = lock(m);
            let ids: Vec<BucketId> = stripe
                .buckets
                .values()
                .filter(|b| !b.has_pending())
                .map(|b| b.id)
                .collect();
            for id in ids {
                if bytes >= max_bytes {
                    return out;
                }
                if let Some(b) = self.remove_bucket(&mut stripe, &id) {
                    bytes = bytes.saturating_add(b.memory);
                    out.push(ClosedBucket::of(b, RolloverAction::SoftClose));
                }
            }
        }
        out
    }
}
