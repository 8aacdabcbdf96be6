//! SPEC at the catalog level: a bucket found for reopening is used only
//! when it passes the rehydration checks, each failure counted by its own counter, and a
//! bucket already open is not loaded twice (`numDuplicateBucketsReopened`).

use std::sync::Arc;

use bson::Bson;
use tscoll_catalog::{
    BucketCatalog, BucketId, BucketKey, BucketSource, Measurement, NoStorage, PreparedBatch,
    QueryOutcome, SourceError, StageError, StatsSnapshot, StoredBucket, WriteBatch, WriterId,
};

use crate::common::{Finds, T0, catalog, doc_at, key};

fn stage(c: &BucketCatalog, ms: i64, source: &dyn BucketSource) -> Arc<WriteBatch> {
    let d = doc_at(ms, 1);
    let m = [Measurement {
        index: 0,
        time: T0 + ms,
        doc: &d,
        generated_id: None,
    }];
    c.stage(WriterId(1), &key(), &m, source).batches.remove(0)
}

/// Commits a batch, returning it and the stored state the commit leaves in a store that writes
/// every commit (`Prepared::stored_state`).
fn commit_stored(c: &Arc<BucketCatalog>, batch: &Arc<WriteBatch>) -> (PreparedBatch, StoredBucket) {
    let p = c.claim(batch).expect("rights").prepare().expect("prepare");
    let stored = p.stored_state().expect("the bucket is in the catalog");
    let done = PreparedBatch::clone(&p);
    p.finish();
    (done, stored)
}

/// A stored bucket of the series (committed by another catalog), altered by `change`; then a
/// new series measurement in its window, in a fresh catalog. Returns whether the stored
/// bucket was reopened, and the counters.
fn reopen_with(change: impl FnOnce(&mut StoredBucket)) -> (bool, StatsSnapshot) {
    let other = catalog();
    let (_, mut stored) = commit_stored(&other, &stage(&other, 0, &NoStorage));
    change(&mut stored);
    let c = catalog();
    let batch = stage(&c, 1000, &Finds(Some(stored.clone())));
    (batch.bucket_id() == stored.id, c.stats())
}

#[test]
fn r_6_8_3_a_bucket_that_passes_every_check_is_reopened() {
    let (reopened, s) = reopen_with(|_| {});
    assert!(reopened);
    assert_eq!((s.num_buckets_queried, s.num_buckets_reopened), (1, 1));
}

#[test]
fn r_6_8_3_stored_meta_of_another_series_is_a_hash_collision() {
    let (reopened, s) = reopen_with(|b| {
        b.key_bytes = BucketKey::from_meta(Some(&Bson::String("other".to_owned()))).bytes;
    });
    assert!(!reopened);
    assert_eq!(s.num_bucket_reopenings_failed_due_to_hash_collision, 1);
    assert_eq!(s.num_buckets_reopened, 0);
}

#[test]
fn r_6_8_3_control_closed_is_not_reopened() {
    let (reopened, s) = reopen_with(|b| b.closed = true);
    assert!(!reopened);
    assert_eq!(s.num_bucket_reopenings_failed_due_to_marked_closed, 1);
}

#[test]
fn r_6_8_3_min_max_without_the_time_field_fails_the_min_max_calculation() {
    let (reopened, s) = reopen_with(|b| {
        b.min.remove("t");
    });
    assert!(!reopened);
    assert_eq!(s.num_bucket_reopenings_failed_due_to_min_max_calculation, 1);
}

#[test]
fn r_6_8_3_a_reopened_bucket_still_passes_the_rollover_rules() {
    // lets a full compressed bucket through the query; §6.3 (count) rejects it.
    let (reopened, s) = reopen_with(|b| b.count = 1000);
    assert!(!reopened);
    assert_eq!(s.num_buckets_queried, 1);
    assert_eq!(s.num_buckets_reopened, 0);
}

#[test]
fn r_6_8_5_a_bucket_already_open_is_not_loaded_twice() {
    let c = catalog();
    let (p, stored) = commit_stored(&c, &stage(&c, 30_000, &NoStorage));
    // The bucket has a batch pending, so a time-backward rollover is deferred and the bucket
    // stays in memory. A measurement before its min time then allows query-based reopening
    // (§6.2 step 4), and the query finds that very bucket.
    let pending = stage(&c, 40_000, &NoStorage);
    assert_eq!(pending.bucket_id(), p.bucket_id);
    let finds_open = Finds(Some(stored));
    let other = stage(&c, -2 * 60_000, &finds_open);
    assert_ne!(other.bucket_id(), p.bucket_id);
    let s = c.stats();
    assert_eq!(s.num_duplicate_buckets_reopened, 1);
    assert_eq!(s.num_buckets_reopened, 0);
}

#[test]
fn a_storage_error_while_looking_for_a_bucket_rejects_the_measurement_and_changes_nothing() {
    let c = catalog();
    // A new series asks storage for a bucket to reopen; storage fails.
    let d = doc_at(0, 1);
    let m = [Measurement {
        index: 7,
        time: T0,
        doc: &d,
        generated_id: None,
    }];
    let out = c.stage(WriterId(1), &key(), &m, &Broken);
    assert!(out.batches.is_empty());
    assert_eq!(
        out.rejected,
        vec![(7, StageError::Storage(SourceError("disk gone".into())))]
    );
    assert_eq!(c.gauges().open_buckets, 0);
    // Storage answers again: the measurement goes into a new bucket.
    let batch = stage(&c, 0, &NoStorage);
    assert_eq!(batch.indices_of(WriterId(1)), vec![0]);
    assert_eq!(c.gauges().open_buckets, 1);
}

/// A storage that cannot be read: every reopening request fails.
struct Broken;

impl BucketSource for Broken {
    fn fetch(&self, _: &BucketKey, _: &BucketId) -> Result<Option<StoredBucket>, SourceError> {
        Err(SourceError("disk gone".into()))
    }
    fn query(
        &self,
        _: &BucketKey,
        _: i64,
        _: i64,
        _: u32,
        _: u64,
    ) -> Result<QueryOutcome, SourceError> {
        Err(SourceError("disk gone".into()))
    }
}
