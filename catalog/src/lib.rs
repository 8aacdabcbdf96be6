//! tscoll-catalog: the bucket catalog of tscoll (SPEC §5–§8).
//!
//! The catalog decides which bucket each measurement goes to (placement and rollover,
//! SPEC §6), keeps the open buckets' control state (min/max, schema, size estimate, SPEC §4.3,
//! §5, §6.4) and the open buckets' rows, staged straight into their columns in write batches
//! that writers commit with the commit-rights protocol (SPEC §7). It does no I/O: reopening
//! asks the engine through [`BucketSource`], and committing hands the engine a
//! [`Prepared`] batch to write, which aborts itself unless it is finished.
#![forbid(unsafe_code)]

mod bucket;
mod catalog;
mod columns;
mod commit_error;
mod commit_rows;
mod key;
mod minmax;
mod names;
mod options;
mod rollup;
mod stats;
mod sums;
mod sync;
pub mod value;
mod varint;
mod write_batch;

pub use bucket::{
    BucketId, BucketRows, BucketState, ControlMinMax, RolloverAction, RolloverReason, StoredBucket,
};
pub use catalog::{
    BucketCatalog, BucketPart, BucketSource, BucketingSpec, ClosedBucket, CommitRights,
    MAX_BSON_OBJECT_SIZE, Measurement, MemoryPool, NoStorage, Prepared, QueryOutcome, STRIPES,
    SourceError, StageError, StageOutcome, UnstoredBucket,
};
pub use columns::MeasurementColumns;
pub use commit_error::CommitError;
pub use commit_rows::{CallRows, CommitRows};
pub use key::{BucketKey, write_as_written, write_normalized};
pub use minmax::{MinMax, ScalarMinMax};
pub use options::{CatalogOptions, LARGE_MEASUREMENTS_MAX_BUCKET_SIZE};
pub use rollup::{
    BucketRollup, FieldRollup, FieldWindow, Number, RollupLayout, RollupNames, WindowHead,
    WindowRollup, bucket_rollup, decode_names, encode_names, names_hash,
};
pub use stats::{CatalogGauges, ExecutionStats, StatsSnapshot};
pub use sums::{BucketSums, Compensated, FieldSums};
pub use write_batch::{PreparedBatch, WriteBatch, WriterId};
