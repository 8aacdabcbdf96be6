//! SPEC §7 and §6.7 at the catalog level: shared batches record each writer's rows
//! measurements of an aborted batch are placed again without duplicates,
//! direct writes clear a bucket and block its reopening, frozen buckets are never
//! reopened (§6.10), and staged rows count in the memory usage until they leave the catalog
//!

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bson::{DateTime, Document, doc};
use tscoll_catalog::{
    BucketCatalog, BucketSource, CommitError, Measurement, NoStorage, PreparedBatch, StatsSnapshot,
    StoredBucket, WriteBatch, WriterId,
};

use crate::common::{Finds, T0, catalog, doc_at, key};

/// Stages `docs` (input indices `first..`) for `writer` and returns the batches.
fn stage(
    catalog: &BucketCatalog,
    writer: u64,
    docs: &[Document],
    first: usize,
    source: &dyn BucketSource,
) -> Vec<Arc<WriteBatch>> {
    let ms: Vec<Measurement<'_>> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| Measurement {
            index: first + i,
            time: d.get_datetime("t").expect("t").timestamp_millis(),
            doc: d,
            generated_id: None,
        })
        .collect();
    let out = catalog.stage(WriterId(writer), &key(), &ms, source);
    assert!(out.rejected.is_empty());
    out.batches
}

fn commit(catalog: &Arc<BucketCatalog>, batch: &Arc<WriteBatch>) -> PreparedBatch {
    let p = catalog
        .claim(batch)
        .expect("commit rights")
        .prepare()
        .expect("prepare");
    let done = PreparedBatch::clone(&p);
    p.finish();
    done
}

/// [`commit`], also returning the stored state the commit leaves in a store that writes every
/// commit (`Prepared::stored_state`).
fn commit_stored(
    catalog: &Arc<BucketCatalog>,
    batch: &Arc<WriteBatch>,
) -> (PreparedBatch, StoredBucket) {
    let p = catalog
        .claim(batch)
        .expect("commit rights")
        .prepare()
        .expect("prepare");
    let stored = p.stored_state().expect("the bucket is in the catalog");
    let done = PreparedBatch::clone(&p);
    p.finish();
    (done, stored)
}

fn stats(catalog: &BucketCatalog) -> StatsSnapshot {
    catalog.stats()
}

#[test]
fn r_7_1_1_shared_batch_records_each_writers_rows() {
    let c = catalog();
    let a = stage(&c, 1, &[doc_at(0, 0), doc_at(1000, 1)], 0, &NoStorage);
    let b = stage(&c, 2, &[doc_at(2000, 2)], 10, &NoStorage);
    assert_eq!(a.len(), 1);
    assert!(
        Arc::ptr_eq(&a[0], &b[0]),
        "concurrent writers share the batch"
    );
    let batch = &a[0];
    assert_eq!(batch.indices_of(WriterId(1)), vec![0, 1]);
    assert_eq!(batch.indices_of(WriterId(2)), vec![10]);
    assert_eq!(batch.rows_of(WriterId(1)), 2);
    assert_eq!(batch.rows_of(WriterId(2)), 1);
    assert_eq!(batch.rows_of(WriterId(3)), 0);
    let p = commit(&c, batch);
    assert_eq!(p.rows, 3);
    // Each writer can still count its rows after the commit.
    assert_eq!(batch.rows_of(WriterId(2)), 1);
    assert_eq!(c.wait(batch), Ok(()));
}

#[test]
fn r_7_3_2_measurements_of_an_aborted_batch_are_placed_again_once() {
    let c = catalog();
    // Writer 1 commits a first batch: the bucket holds 1 measurement.
    let first = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage);
    let (p0, s0) = commit_stored(&c, &first[0]);
    // Writers 1 and 2 share the next batch; writer 1 wins the commit rights, its storage
    // write fails, it aborts.
    let b1 = stage(&c, 1, &[doc_at(1000, 1)], 1, &NoStorage);
    let b2 = stage(&c, 2, &[doc_at(2000, 2)], 7, &NoStorage);
    assert!(Arc::ptr_eq(&b1[0], &b2[0]));
    let p1 = c.claim(&b1[0]).expect("rights").prepare().expect("prepare");
    let full = CommitError::WriteFailed("disk full".to_owned());
    p1.abort(full.clone());
    // Writer 2 set the batch aside and learns the failure, with its own measurements.
    assert!(c.claim(&b2[0]).is_none());
    assert_eq!(c.wait(&b2[0]), Err(full));
    assert_eq!(b2[0].indices_of(WriterId(2)), vec![7]);
    // The bucket left the catalog, its committed row handed to the engine to store; both
    // writers retry their own measurement. The stored bucket (1 measurement) is reopened and
    // continued: nothing is duplicated.
    let leaving = c.take_leaving();
    assert_eq!(leaving.len(), 1);
    assert_eq!((leaving[0].first_row, leaving[0].rows), (0, 1));
    c.stored(&key(), &p0.bucket_id);
    let storage = Finds(Some(s0.clone()));
    let r2 = stage(&c, 2, &[doc_at(2000, 2)], 7, &storage);
    let r1 = stage(&c, 1, &[doc_at(1000, 1)], 1, &storage);
    assert!(Arc::ptr_eq(&r1[0], &r2[0]));
    assert_eq!(
        r1[0].bucket_id(),
        p0.bucket_id,
        "the stored bucket is reopened"
    );
    let p = commit(&c, &r2[0]);
    assert_eq!(p.committed_before, 1);
    assert_eq!(p.rows, 2);
    assert_eq!(p.count, 3, "1 committed + the 2 retried, each once");
    let s = stats(&c);
    assert_eq!(s.num_commits, 2);
    assert_eq!(s.num_measurements_committed, 3);
    assert_eq!(s.num_buckets_reopened, 1);
}

#[test]
fn r_7_4_1_direct_write_clears_the_bucket_and_blocks_its_reopening() {
    let c = catalog();
    let first = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage);
    let (p0, s0) = commit_stored(&c, &first[0]);
    // A writer has a batch staged, not prepared, when a delete starts on the bucket.
    let pending = stage(&c, 2, &[doc_at(1000, 1)], 1, &NoStorage);
    assert_eq!(pending[0].bucket_id(), p0.bucket_id);
    c.direct_write_start(&key(), &p0.bucket_id);
    let rights = c.claim(&pending[0]).expect("rights");
    assert_eq!(
        rights.prepare().err(),
        Some(CommitError::DirectWrite),
        "a batch of a cleared bucket is not committed"
    );
    assert_eq!(c.wait(&pending[0]), Err(CommitError::DirectWrite));
    assert_eq!(c.gauges().open_buckets, 0);
    // While the direct write runs, the bucket is not reopened: the retry opens a new one.
    let storage = Finds(Some(s0.clone()));
    let retry = stage(&c, 2, &[doc_at(1000, 1)], 1, &storage);
    assert_ne!(retry[0].bucket_id(), p0.bucket_id);
    let s = stats(&c);
    assert_eq!(s.num_bucket_reopenings_failed_due_to_write_conflict, 1);
    assert_eq!(s.num_buckets_queried, 1);
    assert_eq!(s.num_buckets_reopened, 0);
    commit(&c, &retry[0]);
    c.direct_write_finish(&key(), &p0.bucket_id);
    // Once it is done, the series can reopen the bucket from storage: the new
    // bucket is soft-closed for it.
    let c2 = catalog();
    c2.direct_write_start(&key(), &p0.bucket_id);
    c2.direct_write_finish(&key(), &p0.bucket_id);
    let again = stage(&c2, 3, &[doc_at(2000, 2)], 2, &storage);
    assert_eq!(again[0].bucket_id(), p0.bucket_id);
    assert_eq!(stats(&c2).num_buckets_reopened, 1);
}

#[test]
fn r_7_4_1_direct_write_waits_for_the_prepared_batch() {
    let c = Arc::new(catalog());
    let batch = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage).remove(0);
    let p = c.claim(&batch).expect("rights").prepare().expect("prepare");
    let id = batch.bucket_id();
    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (c, done) = (Arc::clone(&c), Arc::clone(&done));
        std::thread::spawn(move || {
            c.direct_write_start(&key(), &id);
            done.store(true, Ordering::SeqCst);
        })
    };
    // The direct writer counts its wait before blocking.
    while stats(&c).num_waits == 0 {
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        !done.load(Ordering::SeqCst),
        "a direct write does not start while a batch is prepared"
    );
    p.finish();
    writer.join().expect("direct writer");
    assert!(done.load(Ordering::SeqCst));
    assert_eq!(c.gauges().open_buckets, 0, "the bucket was cleared");
    assert_eq!(stats(&c).num_measurements_committed, 1);
    c.direct_write_finish(&key(), &id);
}

#[test]
fn r_6_10_frozen_bucket_is_never_reopened() {
    let c = catalog();
    let first = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage);
    let (p0, s0) = commit_stored(&c, &first[0]);
    let pending = stage(&c, 1, &[doc_at(1000, 1)], 1, &NoStorage);
    c.freeze(&key(), &p0.bucket_id);
    c.freeze(&key(), &p0.bucket_id);
    assert_eq!(
        c.wait(&pending[0]),
        Err(CommitError::Frozen),
        "the staged batch fails"
    );
    let storage = Finds(Some(s0.clone()));
    let retry = stage(&c, 1, &[doc_at(1000, 1)], 1, &storage);
    assert_ne!(retry[0].bucket_id(), p0.bucket_id);
    let s = stats(&c);
    assert_eq!(s.num_buckets_frozen, 1, "once per bucket");
    assert_eq!(s.num_bucket_reopenings_failed_due_to_marked_frozen, 1);
}

#[test]
fn r_6_9_5_staged_rows_count_until_they_leave_the_catalog() {
    let c = catalog();
    assert_eq!(c.memory_usage(), 0);
    let big = "x".repeat(100_000);
    let d = doc! { "t": DateTime::from_millis(T0), "m": "s", "s": big.as_str() };
    let batch = stage(&c, 1, std::slice::from_ref(&d), 0, &NoStorage).remove(0);
    let staged = c.memory_usage();
    assert!(
        staged > 300_000,
        "the staged value and its min and max copies count: {staged}"
    );
    commit(&c, &batch);
    let committed = c.memory_usage();
    assert!(
        committed > 300_000 && committed < staged + 50_000,
        "after the commit the min/max copies and the committed row (open buckets are in \
         memory) stay, the staged copy is gone: {committed} (staged {staged})"
    );
    // An aborted batch frees its rows and its bucket.
    let c = catalog();
    let batch = stage(&c, 1, std::slice::from_ref(&d), 0, &NoStorage).remove(0);
    assert!(c.memory_usage() > 100_000);
    c.claim(&batch)
        .expect("rights")
        .abort(CommitError::WriteFailed("disk full".to_owned()));
    assert_eq!(c.memory_usage(), 0);
    // Dropping the collection frees every byte.
    let c = catalog();
    let _batches = stage(&c, 1, &[doc_at(0, 0), doc_at(1000, 1)], 0, &NoStorage);
    assert!(c.memory_usage() > 0);
    c.clear_all();
    assert_eq!(c.memory_usage(), 0);
}

#[test]
fn r_7_3_1_commit_rights_or_a_prepared_batch_dropped_abort_the_batch() {
    // Rights dropped unprepared: the batch fails, its writers learn why, its staged bytes and
    // its bucket leave the catalog, and the next insert of the series commits.
    let c = catalog();
    let batch = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage).remove(0);
    drop(c.claim(&batch).expect("rights"));
    assert_eq!(c.wait(&batch), Err(CommitError::Abandoned));
    assert_eq!(c.memory_usage(), 0);
    assert_eq!(c.gauges().open_buckets, 0);
    let retry = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage).remove(0);
    assert_eq!(commit(&c, &retry).rows, 1);

    // A prepared batch dropped (an early return between prepare and finish): the bucket is
    // not left prepared, so another writer's batch of it does not wait forever; being
    // unprepared, that batch fails with it and its retry commits once.
    let c = catalog();
    let first = stage(&c, 1, &[doc_at(0, 0)], 0, &NoStorage).remove(0);
    let p = c.claim(&first).expect("rights").prepare().expect("prepare");
    let second = stage(&c, 2, &[doc_at(1000, 1)], 1, &NoStorage).remove(0);
    assert!(
        !Arc::ptr_eq(&first, &second),
        "a new batch of the prepared bucket"
    );
    drop(p);
    assert_eq!(c.wait(&first), Err(CommitError::Abandoned));
    assert_eq!(c.wait(&second), Err(CommitError::Abandoned));
    let retry = stage(&c, 2, &[doc_at(1000, 1)], 1, &NoStorage).remove(0);
    let done = commit(&c, &retry);
    assert_eq!((done.committed_before, done.rows), (0, 1));
    let s = stats(&c);
    assert_eq!((s.num_commits, s.num_measurements_committed), (1, 1));
}

/// Stages `d` for `writer` and aborts its batch as a failed log append would.
fn stage_and_abort(c: &Arc<BucketCatalog>, writer: u64, d: Document, source: &dyn BucketSource) {
    let batch = stage(c, writer, &[d], 99, source).remove(0);
    c.claim(&batch)
        .expect("rights")
        .prepare()
        .expect("prepare")
        .abort(CommitError::WriteFailed("disk full".to_owned()));
}

/// The control state of the only part leaving the catalog: `(min, max, max time, sorted,
/// column names)`.
fn leaving_control(c: &BucketCatalog) -> (Document, Document, i64, bool, Vec<String>) {
    let leaving = c.take_leaving();
    assert_eq!(leaving.len(), 1, "one bucket left the catalog");
    let p = &leaving[0];
    let names = p.columns.iter().map(|(n, _)| n.clone()).collect();
    (
        p.control.min(),
        p.control.max(),
        p.max_time,
        p.sorted,
        names,
    )
}

#[test]
fn r_7_3_1_an_aborted_batch_leaves_nothing_in_control() {
    let t = |ms: i64| DateTime::from_millis(T0 + ms);
    // The failing batch is earlier (unsorted), has a larger and a smaller value, and a field
    // of its own: none of it may reach the stored control record.
    let failing = |ms: i64, v: i64| doc! { "t": t(ms), "m": "s", "v": v, "w": "only here" };

    // A bucket opened here.
    let c = catalog();
    commit(&c, &stage(&c, 1, &[doc_at(2000, 1)], 0, &NoStorage)[0]);
    stage_and_abort(&c, 1, failing(1000, 100), &NoStorage);
    let (min, max, max_time, sorted, names) = leaving_control(&c);
    assert_eq!(min, doc! { "t": t(0), "v": 1_i64 });
    assert_eq!(max, doc! { "t": t(2000), "v": 1_i64 });
    assert_eq!((max_time, sorted), (T0 + 2000, true));
    assert_eq!(names, ["t", "v"]);

    // A reopened bucket: control rebuilds from the stored state and the rows since.
    let c = catalog();
    let (p0, s0) = commit_stored(&c, &stage(&c, 1, &[doc_at(3000, 5)], 0, &NoStorage)[0]);
    let c = catalog();
    let storage = Finds(Some(s0));
    let next = stage(&c, 1, &[doc_at(4000, 6)], 1, &storage).remove(0);
    assert_eq!(
        next.bucket_id(),
        p0.bucket_id,
        "the stored bucket is reopened"
    );
    commit(&c, &next);
    stage_and_abort(&c, 1, failing(1000, -7), &storage);
    let (min, max, max_time, sorted, names) = leaving_control(&c);
    assert_eq!(min, doc! { "t": t(0), "v": 5_i64 });
    assert_eq!(max, doc! { "t": t(4000), "v": 6_i64 });
    assert_eq!((max_time, sorted), (T0 + 4000, true));
    assert_eq!(names, ["t", "v"], "the rows since the reopening");

    // Another writer's batch is prepared: the aborted batch's rows go, the bucket waits for
    // the prepared one and then leaves with the committed and prepared rows only.
    let c = catalog();
    commit(&c, &stage(&c, 1, &[doc_at(2000, 1)], 0, &NoStorage)[0]);
    let first = stage(&c, 1, &[doc_at(3000, 2)], 1, &NoStorage).remove(0);
    let p = c.claim(&first).expect("rights").prepare().expect("prepare");
    let second = stage(&c, 2, &[failing(1000, 100)], 2, &NoStorage).remove(0);
    assert!(!Arc::ptr_eq(&first, &second));
    c.claim(&second)
        .expect("rights")
        .abort(CommitError::WriteFailed("disk full".to_owned()));
    assert!(c.wait(&second).is_err());
    p.finish();
    assert_eq!(c.wait(&first), Ok(()));
    let (min, max, max_time, sorted, names) = leaving_control(&c);
    assert_eq!(min, doc! { "t": t(0), "v": 1_i64 });
    assert_eq!(max, doc! { "t": t(3000), "v": 2_i64 });
    assert_eq!((max_time, sorted), (T0 + 3000, true));
    assert_eq!(names, ["t", "v"]);
}

/// Rows stored or read while another writer's batch is staged in the bucket (a flush before a
/// direct write or a read, SPEC ): staging has moved the bucket's min/max, max time and
/// sortedness already, but the part carries the control state of the committed rows only. A
/// control record written from the staged state would keep values of a batch that may still
/// be aborted (by that very direct write), and nothing stores the bucket again to fix it.
#[test]
fn r_7_3_1_a_part_taken_while_a_batch_is_staged_holds_the_committed_rows_only() {
    let t = |ms: i64| DateTime::from_millis(T0 + ms);
    let c = catalog();
    let first = commit(&c, &stage(&c, 1, &[doc_at(2000, 1)], 0, &NoStorage)[0]);
    let staged = stage(
        &c,
        2,
        &[doc! { "t": t(1000), "m": "s", "v": 100_i64, "w": "staged" }],
        1,
        &NoStorage,
    )
    .remove(0);
    let committed = |min: &Document, max: &Document, max_time: i64, sorted: bool| {
        assert_eq!(min, &doc! { "t": t(0), "v": 1_i64 });
        assert_eq!(max, &doc! { "t": t(2000), "v": 1_i64 });
        assert_eq!((max_time, sorted), (T0 + 2000, true));
    };
    let read = c.memory_rows(&mut |_, _, _| true, &mut |_| true);
    assert_eq!(read.len(), 1);
    assert_eq!(read[0].rows, 1, "a read sees the committed row");
    committed(
        &read[0].control.min(),
        &read[0].control.max(),
        read[0].max_time,
        read[0].sorted,
    );
    let part = c
        .take_unstored(&key(), &first.bucket_id)
        .expect("an unstored row");
    assert_eq!((part.count, part.rows), (1, 1));
    committed(
        &part.control.min(),
        &part.control.max(),
        part.max_time,
        part.sorted,
    );
    // The direct write aborts the staged batch; the stored part stays right.
    c.direct_write_start(&key(), &first.bucket_id);
    assert!(c.wait(&staged).is_err(), "the staged batch is aborted");
    assert!(c.take_leaving().is_empty(), "every committed row is stored");
    c.direct_write_finish(&key(), &first.bucket_id);
}
