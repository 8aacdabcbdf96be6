//! Execution counters of a collection's bucket catalog (SPEC §8.1).

use crate::sync::{AtomicU64, Ordering};

macro_rules! counters {
    ($( $(#[$doc:meta])* $field:ident => $json:literal, )*) => {
        /// Monotonic execution counters of one collection (SPEC §8.1), updated at the increment
        /// points SPEC names. Read them with [`ExecutionStats::snapshot`].
        #[derive(Debug, Default)]
        pub struct ExecutionStats {
            $( $(#[$doc])* pub(crate) $field: AtomicU64, )*
        }

        /// A copy of [`ExecutionStats`] at one moment.
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct StatsSnapshot {
            $( $(#[$doc])* pub $field: u64, )*
        }

        impl ExecutionStats {
            /// Reads every counter.
            #[must_use]
            pub fn snapshot(&self) -> StatsSnapshot {
                StatsSnapshot { $( $field: self.$field.load(Ordering::Relaxed), )* }
            }
        }

        impl StatsSnapshot {
            /// `(camelCase name, value)` of every counter in MongoDB's output order (SPEC §8.1).
            #[must_use]
            pub fn named(&self) -> Vec<(&'static str, u64)> {
                vec![ $( ($json, self.$field), )* ]
            }

            /// Adds another snapshot's counters to this one (engine-wide sums, SPEC §8.2).
            pub fn add(&mut self, other: &StatsSnapshot) {
                $( self.$field += other.$field; )*
            }
        }
    };
}

counters! {
    /// Commits that inserted a new bucket.
    num_bucket_inserts => "numBucketInserts",
    /// Commits that appended to an existing bucket.
    num_bucket_updates => "numBucketUpdates",
    /// New buckets opened because the series had no open or reopenable bucket.
    num_buckets_opened_due_to_metadata => "numBucketsOpenedDueToMetadata",
    /// Rollovers for count.
    num_buckets_closed_due_to_count => "numBucketsClosedDueToCount",
    /// Rollovers for schema change.
    num_buckets_closed_due_to_schema_change => "numBucketsClosedDueToSchemaChange",
    /// Rollovers for size.
    num_buckets_closed_due_to_size => "numBucketsClosedDueToSize",
    /// Soft closes for time forward.
    num_buckets_closed_due_to_time_forward => "numBucketsClosedDueToTimeForward",
    /// Idle expiry closes and dropped archive records.
    num_buckets_closed_due_to_memory_threshold => "numBucketsClosedDueToMemoryThreshold",
    /// Finished batches.
    num_commits => "numCommits",
    /// Waits on unfinished batches or reopening requests.
    num_waits => "numWaits",
    /// Measurements in finished batches.
    num_measurements_committed => "numMeasurementsCommitted",
    /// Open buckets closed because another bucket of the series was reopened.
    num_buckets_closed_due_to_reopening => "numBucketsClosedDueToReopening",
    /// Idle expiry archives.
    num_buckets_archived_due_to_memory_threshold => "numBucketsArchivedDueToMemoryThreshold",
    /// Archives for time backward.
    num_buckets_archived_due_to_time_backward => "numBucketsArchivedDueToTimeBackward",
    /// Buckets loaded from disk into the catalog.
    num_buckets_reopened => "numBucketsReopened",
    /// Buckets that used the min-count rule (once per bucket).
    num_buckets_kept_open_due_to_large_measurements => "numBucketsKeptOpenDueToLargeMeasurements",
    /// Rollovers for cache pressure.
    num_buckets_closed_due_to_cache_pressure => "numBucketsClosedDueToCachePressure",
    /// Buckets frozen.
    num_buckets_frozen => "numBucketsFrozen",
    /// Sorted buckets that became unsorted (v2 → v3).
    num_compressed_buckets_converted_to_unsorted => "numCompressedBucketsConvertedToUnsorted",
    /// Archive-based reopen fetch hits.
    num_buckets_fetched => "numBucketsFetched",
    /// Archive-based reopen fetch misses.
    num_bucket_fetches_failed => "numBucketFetchesFailed",
    /// Query-based reopen hits.
    num_buckets_queried => "numBucketsQueried",
    /// Query-based reopen misses (including "no usable index").
    num_bucket_queries_failed => "numBucketQueriesFailed",
    /// Rehydration failures: the catalog was cleared while the reopening ran. The catalog
    /// holds the stripe lock across a reopening, so this stays 0 (kept for the output shape).
    num_bucket_reopenings_failed_due_to_era_mismatch => "numBucketReopeningsFailedDueToEraMismatch",
    /// Rehydration failures: `_id` is not an ObjectId.
    num_bucket_reopenings_failed_due_to_malformed_id_field => "numBucketReopeningsFailedDueToMalformedIdField",
    /// Rehydration failures: hash collision.
    num_bucket_reopenings_failed_due_to_hash_collision => "numBucketReopeningsFailedDueToHashCollision",
    /// Rehydration failures: marked frozen.
    num_bucket_reopenings_failed_due_to_marked_frozen => "numBucketReopeningsFailedDueToMarkedFrozen",
    /// Rehydration failures: bucket validator.
    num_bucket_reopenings_failed_due_to_validator => "numBucketReopeningsFailedDueToValidator",
    /// Rehydration failures: `control.closed`.
    num_bucket_reopenings_failed_due_to_marked_closed => "numBucketReopeningsFailedDueToMarkedClosed",
    /// Rehydration failures: min/max rebuild.
    num_bucket_reopenings_failed_due_to_min_max_calculation => "numBucketReopeningsFailedDueToMinMaxCalculation",
    /// Rehydration failures: schema rebuild.
    num_bucket_reopenings_failed_due_to_schema_generation => "numBucketReopeningsFailedDueToSchemaGeneration",
    /// Rehydration failures: time column not compressed (never for tscoll, whose buckets are
    /// always compressed; kept for the output shape).
    num_bucket_reopenings_failed_due_to_uncompressed_time_column => "numBucketReopeningsFailedDueToUncompressedTimeColumn",
    /// Rehydration failures: the stored columns do not decode (the bucket is frozen).
    num_bucket_reopenings_failed_due_to_compression_failure => "numBucketReopeningsFailedDueToCompressionFailure",
    /// Rehydration failures: a direct write (SPEC §7.4) holds the bucket.
    num_bucket_reopenings_failed_due_to_write_conflict => "numBucketReopeningsFailedDueToWriteConflict",
    /// Reopen found the bucket already open.
    num_duplicate_buckets_reopened => "numDuplicateBucketsReopened",
    /// Commits rejected as larger than 16 MiB (new bucket).
    num_bucket_documents_too_large_insert => "numBucketDocumentsTooLargeInsert",
    /// Commits rejected as larger than 16 MiB (existing bucket).
    num_bucket_documents_too_large_update => "numBucketDocumentsTooLargeUpdate",
}

impl ExecutionStats {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// The catalog's gauges at one moment (SPEC §8.2, R-6.1.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CatalogGauges {
    /// `numActiveBuckets`: open buckets plus archived records.
    pub active_buckets: u64,
    /// Open buckets held in memory (by `_id`; a series has more than one only while a
    /// rolled-over bucket waits for its last batch, SPEC ).
    pub open_buckets: u64,
    /// Open buckets on the idle list (SPEC ).
    pub idle_buckets: u64,
    /// Archived bucket records (SPEC ).
    pub archived_buckets: u64,
    /// Bytes held (SPEC ).
    pub memory_usage: u64,
}
