//! `Database::salvage_into` (`tscoll salvage`, `docs/cli.md`): every intact measurement is
//! copied exactly, a damaged segment is skipped and listed while the other segments of its
//! bucket are kept, a bucket whose control record or index entry is gone is still copied
//! (its series found through another index), and the collections come back with the same
//! options and indexes.

use bson::doc;
use tscoll_engine::{Collection, Database, DatabaseOptions, ErrorCode};

use crate::damage::{
    self, all, assert_same, create, flip_value, hex, ids, insert, keyspaces, measurements,
    segments, series_entries,
};

/// Collection `w` (series `a`: one bucket of three segments of 10 measurements; series `b`:
/// two buckets; series `c`: one bucket) and collection `other` (untouched).
fn populated(dir: &std::path::Path) -> (Database, Collection) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = create(&db, "w");
    for k in 0..3 {
        insert(&coll, &measurements("a", k * 10, 10, k * 600_000, 60_000));
        // A flush stores the open bucket's new rows as a part: series a's bucket ends up in
        // three segments.
        coll.flush().expect("flush");
    }
    insert(&coll, &measurements("b", 100, 20, 0, 360_000));
    insert(&coll, &measurements("c", 200, 5, 0, 1000));
    let other = db
        .create_collection(
            "other",
            &tscoll_engine::TimeseriesOptions::new("ts")
                .bucket_seconds(600, 600)
                .expire_after_seconds(86_400 * 365 * 100),
        )
        .expect("create other");
    let mut plain = measurements("x", 0, 7, 0, 1000);
    for d in &mut plain {
        d.remove("meta");
    }
    insert(&other, &plain);
    (db, coll)
}

fn salvage(db: &Database) -> (tempfile::TempDir, Database, tscoll_engine::SalvageReport) {
    let to = tempfile::tempdir().expect("tempdir");
    let copy = Database::open(to.path(), DatabaseOptions::default()).expect("open copy");
    let report = db.salvage_into(&copy).expect("salvage");
    (to, copy, report)
}

#[test]
fn an_intact_database_is_copied_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let before = all(&coll);
    let other_before = all(&db.collection("other").expect("other"));
    let (_to, copy, report) = salvage(&db);
    assert!(report.is_complete(), "{report:#?}");
    assert_eq!(
        report.measurements(),
        (before.len() + other_before.len()) as u64
    );
    let names: Vec<&str> = report.collections.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["other", "w"]);
    assert_eq!(report.collections[1].indexes, 2);
    assert_eq!(
        copy.list_collections().expect("list"),
        db.list_collections().expect("list")
    );
    let w = copy.collection("w").expect("w");
    assert_same(&all(&w), &before, "w");
    assert_same(
        &all(&copy.collection("other").expect("other")),
        &other_before,
        "other",
    );
    assert_eq!(
        w.list_indexes().expect("indexes"),
        coll.list_indexes().expect("indexes")
    );
    assert!(copy.verify().expect("verify").is_ok());
    // The copy is durable: it reopens with everything.
    drop((w, copy));
    let copy = Database::open(_to.path(), DatabaseOptions::default()).expect("reopen");
    assert_same(
        &all(&copy.collection("w").expect("w")),
        &before,
        "w reopened",
    );
}

#[test]
fn a_damaged_segment_is_skipped_and_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let before = all(&coll);
    let segs = segments(&db, &coll);
    let (bucket, list) = segs
        .iter()
        .find(|(_, l)| l.len() == 3)
        .expect("series a's bucket of three segments");
    flip_value(&db, &keyspaces(&coll)[0], &list[1].1);

    let (_to, copy, report) = salvage(&db);
    assert!(!report.is_complete());
    assert_eq!(report.lost.len(), 1, "{report:#?}");
    let lost = &report.lost[0];
    assert_eq!(
        (lost.collection.as_str(), lost.bucket.as_str()),
        ("w", bucket.as_str())
    );
    assert_eq!(lost.segments.len(), 1);
    assert_eq!(lost.segments[0].0, list[1].0);
    assert!(lost.segments[0].1.contains("checksum"), "{lost}");
    let control = lost.control.expect("control summary");
    assert_eq!(control.count, 30);
    assert_eq!(control.max_time, damage::T0 + 2 * 600_000 + 9 * 60_000);
    assert_eq!((lost.copied, lost.measurements_lost()), (20, Some(10)));
    assert_eq!(report.measurements_lost(), 10);
    let text = lost.to_string();
    assert!(
        text.starts_with(&format!(
            "w bucket {bucket}: segment {} skipped (",
            list[1].0
        )),
        "{text}"
    );
    assert!(text.ends_with("20 copied, 10 lost"), "{text}");

    // Everything but the second segment's measurements (_id 10..20), exactly.
    let expected: Vec<_> = before
        .iter()
        .filter(|d| !(10..20).contains(&d.get_i64("_id").expect("_id")))
        .cloned()
        .collect();
    let w = copy.collection("w").expect("w");
    assert_same(&all(&w), &expected, "w");
    assert_eq!(
        ids(&all(&w)).iter().filter(|&&i| i < 30).count(),
        20,
        "segments 0 and 2 of the damaged bucket are kept"
    );
    assert!(copy.verify().expect("verify").is_ok());
}

#[test]
fn buckets_without_control_or_index_entry_are_copied() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let before = all(&coll);
    let names = keyspaces(&coll);
    // Series b has two buckets: remove the directory entry of one, the control record of
    // the other.
    let b_entries = series_entries(&db, &coll, b"b\0\0");
    assert_eq!(b_entries.len(), 2, "series b has two buckets");
    db.raw_write(&names[2], &b_entries[0].0, None)
        .expect("delete entry");
    db.raw_write(&names[1], &b_entries[1].0[16..28], None)
        .expect("delete control");
    let problems = db.verify().expect("verify").problems;
    assert!(problems.len() >= 2, "{problems:#?}");

    let (_to, copy, report) = salvage(&db);
    assert!(report.lost.is_empty(), "{report:#?}");
    assert_same(&all(&copy.collection("w").expect("w")), &before, "w");
}

#[test]
fn a_bucket_of_unknown_series_is_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let before = all(&coll);
    // Series c: one bucket. Its directory entry and its secondary index entries are gone:
    // nothing holds its meta value any more.
    let names = keyspaces(&coll);
    let (key, _) = series_entries(&db, &coll, b"c\0\0")
        .into_iter()
        .next()
        .expect("series c");
    let id = key[16..28].to_vec();
    db.raw_write(&names[2], &key, None).expect("delete");
    for ks in &names[3..] {
        for (k, _) in db.raw_entries(ks).expect("secondary") {
            if k.ends_with(&id) {
                db.raw_write(ks, &k, None).expect("delete");
            }
        }
    }
    let (_to, copy, report) = salvage(&db);
    assert_eq!(report.lost.len(), 1, "{report:#?}");
    let lost = &report.lost[0];
    assert_eq!(lost.bucket, hex(&id));
    assert!(
        lost.reasons[0].contains("series (meta value) is unknown"),
        "{lost}"
    );
    assert_eq!(lost.measurements_lost(), Some(5));
    let expected: Vec<_> = before
        .iter()
        .filter(|d| !(200..205).contains(&d.get_i64("_id").expect("_id")))
        .cloned()
        .collect();
    assert_same(&all(&copy.collection("w").expect("w")), &expected, "w");
}

#[test]
fn options_and_index_states_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    coll.hide_index("v_1", true).expect("hide");
    coll.drop_index("meta_1_ts_1").expect("drop default");
    coll.coll_mod(&doc! { "timeseries": { "granularity": "minutes" } })
        .expect("collMod w");
    let other = db.collection("other").expect("other");
    other
        .coll_mod(&doc! { "timeseries": {
        "bucketMaxSpanSeconds": 1200, "bucketRoundingSeconds": 1200 } })
        .expect("collMod other");
    assert!(!other.spec().fixed_bucketing);
    let (_to, copy, report) = salvage(&db);
    assert!(report.is_complete(), "{report:#?}");
    assert_eq!(
        copy.list_collections().expect("list"),
        db.list_collections().expect("list")
    );
    let w = copy.collection("w").expect("w");
    assert_eq!(w.spec(), coll.spec());
    assert_eq!(
        w.list_indexes().expect("indexes"),
        coll.list_indexes().expect("indexes")
    );
    // Bucketed under the new span, fields come in the new buckets' column order.
    damage::assert_same_values(&all(&w), &all(&coll), "w");
}

#[test]
fn the_target_must_be_empty_and_another_database() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, _coll) = populated(dir.path());
    let err = db.salvage_into(&db).expect_err("same database");
    assert_eq!(err.code(), ErrorCode::InvalidOptions);
    let to = tempfile::tempdir().expect("tempdir");
    let copy = Database::open(to.path(), DatabaseOptions::default()).expect("open");
    copy.create_collection("w", &damage::options())
        .expect("create");
    let err = db.salvage_into(&copy).expect_err("not empty");
    assert_eq!(err.code(), ErrorCode::NamespaceExists);
}
