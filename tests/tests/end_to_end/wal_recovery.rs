//! The write-ahead log (`docs/durability.md`): a crash keeps every logged measurement exactly
//! once, whatever was stored before it (parts, whole buckets, a checkpoint); recovery can be
//! interrupted and run again; a closed database holds no log.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bson::{DateTime, Document, doc};
use tscoll_engine::{
    Collection, Database, DatabaseOptions, FindOptions, InsertOptions, LogOptions,
    TimeseriesOptions,
};

const T0: i64 = 1_700_000_000_000;

/// `n` measurements of series `m` from id `first`, one a minute from `start` minutes.
fn measurements(m: &str, first: i64, n: i64, start: i64) -> Vec<Document> {
    (0..n)
        .map(|i| {
            doc! {
                "_id": first + i,
                "t": DateTime::from_millis(T0 + (start + i) * 60_000),
                "m": m,
                "v": (first + i) as f64 * 0.5,
            }
        })
        .collect()
}

fn open(dir: &Path, log: LogOptions) -> (Database, Collection) {
    let db = Database::open(
        dir,
        DatabaseOptions {
            log,
            ..DatabaseOptions::default()
        },
    )
    .expect("open");
    let coll = match db.collection("c") {
        Ok(c) => c,
        Err(_) => db
            .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
            .expect("create"),
    };
    (db, coll)
}

fn insert(coll: &Collection, docs: &[Document]) {
    let r = coll
        .insert_many(docs, &InsertOptions::default())
        .expect("insert");
    assert_eq!(r.inserted, docs.len(), "{:?}", r.errors);
}

/// Every measurement by `_id` (a duplicate fails).
fn by_id(coll: &Collection) -> BTreeMap<i64, Document> {
    let mut out = BTreeMap::new();
    for d in coll.find(&doc! {}, &FindOptions::default()).expect("find") {
        let id = d.get_i64("_id").expect("_id");
        assert!(out.insert(id, d).is_none(), "measurement {id} twice");
    }
    out
}

fn expected(docs: &[Document]) -> BTreeMap<i64, Document> {
    docs.iter()
        .map(|d| (d.get_i64("_id").expect("_id"), d.clone()))
        .collect()
}

fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(colls) = std::fs::read_dir(dir.join("wal")) else {
        return out;
    };
    for c in colls {
        for f in std::fs::read_dir(c.expect("entry").path()).expect("read_dir") {
            out.push(f.expect("entry").path());
        }
    }
    out.sort();
    out
}

/// Bytes the log files hold (a restarted log leaves one empty file).
fn log_bytes(dir: &Path) -> u64 {
    log_files(dir)
        .iter()
        .map(|p| std::fs::metadata(p).expect("meta").len())
        .sum()
}

fn crash(db: Database, coll: Collection) {
    drop(coll);
    db.crash().expect("crash");
}

#[test]
fn a_crash_keeps_every_logged_measurement_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = open(dir.path(), LogOptions::default());
    let mut all = Vec::new();
    // Three series; a flush stores a part of each open bucket in the middle; a checkpoint
    // records the rest; then more rows only the log holds, one series time-backward.
    for (k, m) in ["a", "b", "c"].into_iter().enumerate() {
        let docs = measurements(m, 1000 * k as i64, 30, 0);
        insert(&coll, &docs);
        all.extend(docs);
    }
    assert_eq!(by_id(&coll), expected(&all));
    coll.flush().expect("flush");
    assert_eq!(by_id(&coll), expected(&all));
    let more = measurements("a", 30, 20, 30);
    insert(&coll, &more);
    all.extend(more);
    coll.checkpoint().expect("checkpoint");
    let more = measurements("b", 1030, 20, 30);
    insert(&coll, &more);
    all.extend(more);
    let back = measurements("c", 5000, 5, -100);
    insert(&coll, &back);
    all.extend(back);
    assert!(log_bytes(dir.path()) > 0);
    crash(db, coll);

    let (db, coll) = open(dir.path(), LogOptions::default());
    assert_eq!(by_id(&coll), expected(&all));
    assert!(db.verify().expect("verify").is_ok());
    // The series go on where they were.
    let more = measurements("a", 50, 10, 50);
    insert(&coll, &more);
    all.extend(more);
    assert_eq!(by_id(&coll), expected(&all));
    drop(coll);
    db.close().expect("close");
    assert!(log_bytes(dir.path()) == 0, "a closed database holds no log");
    drop(db);
    let (_db, coll) = open(dir.path(), LogOptions::default());
    assert_eq!(by_id(&coll), expected(&all));
}

#[test]
fn recovery_interrupted_before_removing_the_log_stores_nothing_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = open(dir.path(), LogOptions::default());
    let mut all = measurements("a", 0, 40, 0);
    all.extend(measurements("b", 100, 40, 0));
    insert(&coll, &all[..50]);
    // Part of the rows are stored as parts before the crash, the rest only logged.
    assert_eq!(by_id(&coll).len(), 50);
    insert(&coll, &all[50..]);
    crash(db, coll);
    let logs: Vec<(PathBuf, Vec<u8>)> = log_files(dir.path())
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).expect("read");
            (p, bytes)
        })
        .collect();
    assert!(!logs.is_empty());

    // Recovery stores the logged rows and removes the log...
    let (db, coll) = open(dir.path(), LogOptions::default());
    assert_eq!(by_id(&coll), expected(&all));
    assert_eq!(log_bytes(dir.path()), 0);
    crash(db, coll);
    // ... and a crash before the removal reached the disk leaves the log behind: the next
    // recovery finds every row stored already.
    for (p, bytes) in &logs {
        std::fs::write(p, bytes).expect("restore the log");
    }
    let (db, coll) = open(dir.path(), LogOptions::default());
    assert_eq!(by_id(&coll), expected(&all));
    assert!(db.verify().expect("verify").is_ok());
}

#[test]
fn checkpoints_bound_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = LogOptions {
        checkpoint_bytes: 1024,
        ..LogOptions::default()
    };
    let (db, coll) = open(dir.path(), log);
    let mut all = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for step in 0..40 {
        let mut docs = Vec::new();
        for (k, m) in ["a", "b", "c", "d"].into_iter().enumerate() {
            docs.extend(measurements(
                m,
                10_000 * k as i64 + 10 * step,
                10,
                10 * step,
            ));
        }
        insert(&coll, &docs);
        all.extend(docs);
        let files = log_files(dir.path());
        assert_eq!(files.len(), 1, "one log file after a checkpoint: {files:?}");
        let size = std::fs::metadata(&files[0]).expect("meta").len();
        // The checkpoint record (the open buckets' rows) plus about one interval.
        assert!(size < 16 * 1024, "{size} bytes of log");
        seen.insert(files[0].clone());
    }
    assert!(seen.len() >= 5, "a checkpoint starts a new file: {seen:?}");
    crash(db, coll);
    let (_db, coll) = open(dir.path(), log);
    assert_eq!(by_id(&coll), expected(&all));
}

/// A row `(id, series, minute, x, y)`.
type Row = (i64, u8, i64, Option<f64>, Option<i64>);

/// An Arrow batch of `rows`: `x` and `y` are null where `None`.
fn arrow_rows(rows: &[Row]) -> arrow_array::RecordBatch {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMillisecondArray,
    };
    let columns: [(&str, ArrayRef); 5] = [
        (
            "_id",
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
        ),
        (
            "t",
            Arc::new(TimestampMillisecondArray::from_iter_values(
                rows.iter().map(|r| T0 + r.2 * 60_000),
            )),
        ),
        (
            "m",
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| format!("s{}", r.1)),
            )),
        ),
        (
            "x",
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.3))),
        ),
        (
            "y",
            Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.4))),
        ),
    ];
    RecordBatch::try_from_iter(columns).expect("batch")
}

/// Every measurement in `_id` order, as its fields in the order a query gives them.
fn in_field_order(coll: &Collection) -> Vec<Vec<(String, bson::Bson)>> {
    let mut docs: Vec<Document> = coll.find(&doc! {}, &FindOptions::default()).expect("find");
    docs.sort_by_key(|d| d.get_i64("_id").expect("_id"));
    docs.into_iter().map(|d| d.into_iter().collect()).collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// A commit record holds an insert call's columns once, and each bucket's rows as runs
    /// of them: a crash keeps every measurement of Arrow and document calls once, with its
    /// values and the field order its bucket had in memory (a field first seen in a later
    /// row of a bucket comes after the others), also across buckets that roll over
    /// (`bucketMaxCount` 4) and calls whose rows are rejected in the middle.
    #[test]
    fn records_of_call_columns_recover_what_memory_held(
        calls in proptest::collection::vec(
            (
                proptest::bool::ANY,
                proptest::collection::vec(
                    (
                        0u8..3,
                        0i64..40,
                        proptest::option::of(-5.0f64..5.0),
                        proptest::option::of(-9i64..9),
                        proptest::bool::weighted(0.05),
                    ),
                    1..30,
                ),
            ),
            1..5,
        ),
        checkpoint_after in 0usize..6,
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let small = || DatabaseOptions {
            catalog: tscoll_engine::CatalogOptions {
                bucket_max_count: 4,
                ..tscoll_engine::CatalogOptions::default()
            },
            ..DatabaseOptions::default()
        };
        let db = Database::open(dir.path(), small()).expect("open");
        let coll = db
            .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
            .expect("create");
        let mut id = 0i64;
        let mut inserted = 0;
        for (k, (as_arrow, rows)) in calls.iter().enumerate() {
            let mut batch = Vec::new();
            for &(s, minute, x, y, _) in rows {
                batch.push((id, s, minute, x, y));
                id += 1;
            }
            let r = if *as_arrow {
                coll.insert_record_batch(&arrow_rows(&batch), &InsertOptions::default())
            } else {
                // Documents: a bad time field in the middle is rejected alone (unordered).
                let docs: Vec<Document> = batch
                    .iter()
                    .zip(rows)
                    .map(|(&(id, s, minute, x, y), r)| {
                        let mut d = doc! { "_id": id };
                        if r.4 {
                            d.insert("t", "not a date");
                        } else {
                            d.insert("t", DateTime::from_millis(T0 + minute * 60_000));
                        }
                        d.insert("m", format!("s{s}"));
                        if let Some(x) = x {
                            d.insert("x", x);
                        }
                        if let Some(y) = y {
                            d.insert("y", y);
                        }
                        d
                    })
                    .collect();
                coll.insert_many(&docs, &InsertOptions { ordered: false, ..InsertOptions::default() })
            }
            .expect("insert");
            inserted += r.inserted;
            if k == checkpoint_after {
                coll.checkpoint().expect("checkpoint");
            }
        }
        let before = in_field_order(&coll);
        proptest::prop_assert_eq!(before.len(), inserted);
        crash(db, coll);
        let db = Database::open(dir.path(), small()).expect("reopen");
        let coll = db.collection("c").expect("collection");
        proptest::prop_assert_eq!(in_field_order(&coll), before);
        proptest::prop_assert!(db.verify().expect("verify").is_ok());
    }
}
