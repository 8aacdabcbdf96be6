//! `Database::verify` (`tscoll verify`, `docs/cli.md`): an intact database after every kind of
//! write has no problem; each injected damage is found and named with its collection and
//! bucket id: a flipped byte in a stored blob, a deleted or altered control record, a deleted
//! meta+time index entry or series record, a deleted secondary index entry.

use bson::{DateTime, Document, doc};
use tscoll_engine::{Database, DatabaseOptions, FindOptions, Problem, ProblemKind, VerifyReport};

use crate::damage::{self, create, flip_value, insert, keyspaces, measurements, segments};

/// A database with collection `w`: three series over three hours (several buckets each),
/// inserted in three calls so that open buckets hold several segments.
fn populated(dir: &std::path::Path) -> (Database, tscoll_engine::Collection) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = create(&db, "w");
    for (k, site) in ["a", "b", "c"].into_iter().enumerate() {
        let base = 1000 * i64::try_from(k).expect("k");
        insert(&coll, &measurements(site, base, 12, 0, 300_000));
    }
    for (k, site) in ["a", "b", "c"].into_iter().enumerate() {
        let base = 1000 * i64::try_from(k).expect("k") + 100;
        insert(&coll, &measurements(site, base, 30, 3_600_000, 240_000));
    }
    for (k, site) in ["a", "b", "c"].into_iter().enumerate() {
        let base = 1000 * i64::try_from(k).expect("k") + 200;
        insert(&coll, &measurements(site, base, 5, 3_700_000, 60_000));
    }
    (db, coll)
}

fn kinds(r: &VerifyReport) -> Vec<ProblemKind> {
    r.problems.iter().map(|p| p.kind).collect()
}

fn only(r: &VerifyReport, kind: ProblemKind) -> Vec<&Problem> {
    r.problems.iter().filter(|p| p.kind == kind).collect()
}

#[test]
fn intact_databases_have_no_problem() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let r = db.verify().expect("verify");
    assert!(r.is_ok(), "{:#?}", r.problems);
    assert_eq!(r.collections, 1);
    assert_eq!(r.measurements, 3 * (12 + 30 + 5));
    assert!(r.segments > r.buckets, "open buckets hold several segments");
    assert!(
        r.index_entries >= 3 * r.buckets,
        "directory and two indexes"
    );

    // Out-of-order measurements (unsorted buckets), deletes, meta updates, merges.
    insert(&coll, &measurements("a", 500, 3, 60_000, 1000));
    coll.delete_many(&doc! { "v": { "$lt": -2.0 } })
        .expect("delete");
    coll.update_many(
        &doc! { "meta.site": "b" },
        &doc! { "$set": { "meta.site": "bb" } },
    )
    .expect("update");
    let no_meta = db
        .create_collection("plain", &tscoll_engine::TimeseriesOptions::new("ts"))
        .expect("create");
    let mut plain = measurements("x", 0, 20, 0, 1000);
    for d in &mut plain {
        d.remove("meta");
    }
    plain.push(doc! { "ts": DateTime::from_millis(damage::T0), "nan": f64::NAN, "neg": -0.0 });
    insert(&no_meta, &plain);
    let r = db.verify().expect("verify");
    assert!(r.is_ok(), "{:#?}", r.problems);
    db.close().expect("close");
    db.compact().expect("compact");
    let r = db.verify().expect("verify");
    assert!(r.is_ok(), "{:#?}", r.problems);
    assert_eq!(r.collections, 2);
    drop((coll, no_meta, db));

    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("reopen");
    let r = db.verify().expect("verify");
    assert!(r.is_ok(), "{:#?}", r.problems);
}

#[test]
fn real_data_verifies() {
    let input =
        tscoll_tests::load_ndjson(&tscoll_tests::data_dir().join("noaa_weather_daily.ndjson.xz"));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection(
            "noaa",
            &tscoll_engine::TimeseriesOptions::new("ts")
                .meta_field("meta")
                .granularity(tscoll_engine::Granularity::Hours),
        )
        .expect("create");
    for chunk in input.chunks(500) {
        insert(&coll, chunk);
    }
    let r = db.verify().expect("verify");
    assert!(r.is_ok(), "{:#?}", r.problems);
    assert_eq!(r.measurements, input.len() as u64);
}

#[test]
fn a_flipped_byte_in_a_blob_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let segs = segments(&db, &coll);
    let (bucket, list) = segs
        .iter()
        .find(|(_, l)| l.len() >= 2)
        .expect("a bucket with several segments");
    let (no, key) = &list[1];
    flip_value(&db, &keyspaces(&coll)[0], key);
    let r = db.verify().expect("verify");
    assert_eq!(
        kinds(&r),
        [ProblemKind::CorruptSegment],
        "{:#?}",
        r.problems
    );
    let p = &r.problems[0];
    assert_eq!(p.collection, "w");
    assert_eq!(p.bucket.as_deref(), Some(bucket.as_str()));
    assert!(p.detail.starts_with(&format!("segment {no}: ")), "{p}");
    assert!(p.detail.contains("checksum"), "{p}");
    assert!(!r.is_ok());
    assert!(
        p.to_string()
            .contains(&format!("w bucket {bucket}: corrupt-segment")),
        "{p}"
    );
}

#[test]
fn a_deleted_control_record_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let bucket = segments(&db, &coll)[0].0.clone();
    let id = hex_bytes(&bucket);
    db.raw_write(&keyspaces(&coll)[1], &id, None)
        .expect("delete");
    let r = db.verify().expect("verify");
    let mut k = kinds(&r);
    k.sort_by_key(|k| k.name());
    assert_eq!(
        k,
        [
            ProblemKind::DanglingIndexEntry,
            ProblemKind::DanglingSecondaryEntry,
            ProblemKind::DanglingSecondaryEntry,
            ProblemKind::MissingControl,
        ],
        "{:#?}",
        r.problems
    );
    assert!(
        r.problems
            .iter()
            .all(|p| p.bucket.as_deref() == Some(bucket.as_str()))
    );
}

#[test]
fn an_altered_control_record_is_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let ctl = &keyspaces(&coll)[1];
    let (key, value) = db.raw_entries(ctl).expect("ctl").swap_remove(1);
    let bucket = damage::hex(&key);
    let mut record = Document::from_reader(&value[..]).expect("bson");
    let count = record.get_i64("count").expect("count");
    record.insert("count", count + 1);
    let max = record.get_document_mut("max").expect("max");
    max.insert("v", 1e9);
    db.raw_write(ctl, &key, Some(&record.to_vec().expect("bson")))
        .expect("write");
    let r = db.verify().expect("verify");
    let details: Vec<&str> = only(&r, ProblemKind::ControlMismatch)
        .iter()
        .map(|p| p.detail.as_str())
        .collect();
    // The count also counts the numbers of each field whose sums take it from the record.
    assert_eq!(details.len(), 4, "{:#?}", r.problems);
    assert!(
        details[0].starts_with(&format!("control.count is {}", count + 1)),
        "{details:?}"
    );
    assert!(
        details[1].starts_with("control.max.v is 1000000000, the measurements' max is "),
        "{details:?}"
    );
    for (detail, field) in details[2..].iter().zip(["_id", "v"]) {
        assert!(
            detail.starts_with(&format!(
                "control.sums.{field} counts {} numbers",
                count + 1
            )),
            "{details:?}"
        );
    }
    assert!(
        r.problems
            .iter()
            .all(|p| p.bucket.as_deref() == Some(bucket.as_str()))
    );

    // Bytes that do not decode at all.
    db.raw_write(ctl, &key, Some(b"\x05\x00\x00"))
        .expect("write");
    let r = db.verify().expect("verify");
    assert_eq!(
        kinds(&r),
        [ProblemKind::CorruptControl],
        "{:#?}",
        r.problems
    );
}

#[test]
fn a_deleted_series_record_is_found_in_every_entry_of_its_series() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let names = keyspaces(&coll);
    // Series b's meta is stored once, in its record; its entries refer to it.
    let (record, _) = db
        .raw_entries(&names[2])
        .expect("idx")
        .into_iter()
        .find(|(k, v)| k.len() == 8 && v.ends_with(b"b\0\0"))
        .expect("series b's record");
    let entries = damage::series_entries(&db, &coll, b"b\0\0");
    assert!(entries.iter().all(|(_, v)| v[..] == [0]), "{entries:?}");
    db.raw_write(&names[2], &record, None).expect("delete");
    let r = db.verify().expect("verify");
    // Each entry is named, and its bucket has no usable directory entry left.
    let named = only(&r, ProblemKind::IndexEntryMismatch);
    assert_eq!(named.len(), entries.len(), "{:#?}", r.problems);
    assert!(named.iter().all(|p| p.detail.contains("series record")));
    assert_eq!(
        only(&r, ProblemKind::MissingIndexEntry).len(),
        entries.len(),
        "{:#?}",
        r.problems
    );
    assert_eq!(r.problems.len(), 2 * entries.len(), "{:#?}", r.problems);
    // A query reports the damage instead of giving the buckets another series.
    let err = coll
        .find(&doc! {}, &FindOptions::default())
        .expect_err("find");
    assert!(err.to_string().contains("series record"), "{err}");
}

#[test]
fn deleted_index_entries_are_found() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, coll) = populated(dir.path());
    let names = keyspaces(&coll);
    // The directory entry of one bucket.
    let (idx_key, idx_value) = db
        .raw_entries(&names[2])
        .expect("idx")
        .into_iter()
        .find(|(k, _)| k.len() == 28)
        .expect("an entry");
    let bucket = damage::hex(&idx_key[16..28]);
    db.raw_write(&names[2], &idx_key, None).expect("delete");
    let r = db.verify().expect("verify");
    assert_eq!(
        kinds(&r),
        [ProblemKind::MissingIndexEntry],
        "{:#?}",
        r.problems
    );
    assert_eq!(r.problems[0].bucket.as_deref(), Some(bucket.as_str()));
    db.raw_write(&names[2], &idx_key, Some(&idx_value))
        .expect("restore");

    // One entry of each secondary index.
    for ks in &names[3..] {
        let entries = db.raw_entries(ks).expect("secondary");
        let (key, value) = entries.last().expect("an entry").clone();
        let bucket = damage::hex(&key[key.len() - 12..]);
        db.raw_write(ks, &key, None).expect("delete");
        let r = db.verify().expect("verify");
        assert_eq!(
            kinds(&r),
            [ProblemKind::MissingSecondaryEntry],
            "{ks}: {:#?}",
            r.problems
        );
        assert_eq!(r.problems[0].bucket.as_deref(), Some(bucket.as_str()));
        assert!(
            r.problems[0].detail.contains(ks.as_str()),
            "{}",
            r.problems[0]
        );
        db.raw_write(ks, &key, Some(&value)).expect("restore");
    }
    assert!(db.verify().expect("verify").is_ok());

    // An entry whose bucket does not exist.
    let ks = &names[3];
    let (mut key, value) = db.raw_entries(ks).expect("secondary").swap_remove(0);
    let n = key.len();
    // The high byte of the id's seconds: a bucket about 68 years away, which no bucket of
    // this collection is (the counter bytes, flipped, could name another bucket).
    key[n - 12] ^= 0x80;
    db.raw_write(ks, &key, Some(&value)).expect("write");
    let r = db.verify().expect("verify");
    assert_eq!(
        kinds(&r),
        [ProblemKind::DanglingSecondaryEntry],
        "{:#?}",
        r.problems
    );
    assert_eq!(
        r.problems[0].bucket.as_deref(),
        Some(damage::hex(&key[n - 12..]).as_str())
    );
}

/// Bytes of a hex string.
fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}
