//! A damaged fjall journal (`docs/durability.md`, "A damaged journal"). The tests take a crash
//! image (a copy of the directory of a database still open, after synced writes A, B and C)
//! and damage its journal:
//!
//! - a flipped byte inside B: `Database::open` fails with a plain error naming the journal
//!   and the way out, and changes nothing; `Database::open_recovering` keeps every write
//!   batch before the damaged one (all of A, none of C), reports what it dropped, keeps the
//!   original journal in a backup folder, and leaves a database that verifies and reopens;
//! - a flipped byte in the very last batch: everything before it is kept;
//! - a journal cut inside B (an interrupted write): fjall drops the cut batch itself and the
//!   database opens without the recovery option.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bson::Document;
use tscoll_engine::{Database, DatabaseOptions, Durability, Error, InsertOptions};

use crate::damage::{
    all, assert_same, copy_dir, copy_live_dir, create, data_len, ids, journal_file, measurements,
};

/// A crash image and what was written before it.
struct Image {
    _root: tempfile::TempDir,
    /// The copied database directory.
    dir: PathBuf,
    /// Its active journal file.
    journal: PathBuf,
    /// `_id`s of writes A, B and C.
    a: BTreeSet<i64>,
    b: BTreeSet<i64>,
    c: BTreeSet<i64>,
    /// Journal data length after A, B and C.
    len: [u64; 3],
    /// Every measurement as the live database returned it after C.
    docs: Vec<Document>,
}

fn image() -> Image {
    let root = tempfile::tempdir().expect("tempdir");
    let live = root.path().join("live");
    let dir = root.path().join("crash");
    let db = Database::open(&live, DatabaseOptions::default()).expect("open");
    let coll = create(&db, "w");
    let sync = InsertOptions {
        ordered: true,
        durability: Durability::Sync,
    };
    let mut sets = Vec::new();
    let mut len = [0; 3];
    for (phase, first) in [0_i64, 100, 200].into_iter().enumerate() {
        let mut docs = measurements("a", first, 10, first * 60_000, 60_000);
        docs.extend(measurements("b", first + 50, 10, first * 60_000, 60_000));
        // One commit per series and call: several write batches per phase.
        for d in &docs {
            let r = coll
                .insert_many(std::slice::from_ref(d), &sync)
                .expect("insert");
            assert_eq!(r.inserted, 1);
            // Stored (a flush stores what open buckets hold) and synced to fjall's journal by
            // a checkpoint, which empties the write-ahead log: the journal holds the write.
            coll.flush().expect("flush");
            coll.checkpoint().expect("checkpoint");
        }
        sets.push(ids(&docs).into_iter().collect::<BTreeSet<i64>>());
        len[phase] = data_len(&journal_file(&live));
    }
    let docs = all(&coll);
    copy_live_dir(&live, &dir);
    drop((coll, db));
    let journal = dir.join(journal_file(&live).file_name().expect("name"));
    let mut sets = sets.into_iter();
    let (a, b, c) = (
        sets.next().expect("a"),
        sets.next().expect("b"),
        sets.next().expect("c"),
    );
    Image {
        _root: root,
        dir,
        journal,
        a,
        b,
        c,
        len,
        docs,
    }
}

fn flip(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).expect("read");
    let at = usize::try_from(at).expect("offset");
    bytes[at] ^= 0xff;
    std::fs::write(path, bytes).expect("write");
}

/// The measurements of the database in `dir`, checked against what the live database held:
/// each present one identical to it.
fn present(db: &Database, img: &Image) -> BTreeSet<i64> {
    let found = all(&db.collection("w").expect("w"));
    let found_ids: BTreeSet<i64> = ids(&found).into_iter().collect();
    let expected: Vec<Document> = img
        .docs
        .iter()
        .filter(|d| found_ids.contains(&d.get_i64("_id").expect("_id")))
        .cloned()
        .collect();
    assert_same(&found, &expected, "recovered measurements");
    found_ids
}

#[test]
fn a_flipped_byte_fails_the_open_and_recovery_keeps_what_came_before() {
    let img = image();
    let at = img.len[0] + (img.len[1] - img.len[0]) / 2;
    flip(&img.journal, at);
    let damaged = std::fs::read(&img.journal).expect("read");

    let err = Database::open(&img.dir, DatabaseOptions::default()).expect_err("damaged");
    match &err {
        Error::JournalDamaged { file, .. } => {
            let name = img.journal.file_name().expect("name").to_string_lossy();
            assert!(file.starts_with(&*name), "{file}");
        }
        other => panic!("expected a journal corruption error, got {other:?}"),
    }
    let text = err.to_string();
    assert!(text.contains("tscoll verify --recover"), "{text}");
    assert!(text.contains("tscoll salvage --recover"), "{text}");
    assert_eq!(
        std::fs::read(&img.journal).expect("read"),
        damaged,
        "unchanged"
    );

    let db = Database::open_recovering(&img.dir, DatabaseOptions::default()).expect("recover");
    let report = db.recovery_report().expect("a report");
    assert_eq!(report.file, img.journal);
    assert!(
        (img.len[0]..=at).contains(&report.offset),
        "the damaged batch starts after A: {report:?}"
    );
    assert!(
        report.batches_kept > 0 && report.batches_dropped > 1,
        "{report:?}"
    );
    assert!(!report.tables_only);
    let text = report.to_string();
    assert!(
        text.contains(&format!("damaged at byte {}", report.offset)),
        "{text}"
    );
    let backup = report
        .backup_dir
        .join(img.journal.file_name().expect("name"));
    assert_eq!(
        std::fs::read(&backup).expect("backup"),
        damaged,
        "original kept"
    );

    let ids = present(&db, &img);
    assert!(
        ids.is_superset(&img.a),
        "every write before the damage is kept"
    );
    assert!(ids.is_disjoint(&img.c), "nothing after the damage is kept");
    assert!(ids.len() < img.a.len() + img.b.len());
    let verified = db.verify().expect("verify");
    assert!(verified.problems.is_empty(), "{:#?}", verified.problems);
    assert_eq!(verified.recovery.as_ref(), Some(&report));
    drop(db);

    // Repaired: the plain open works and finds the same.
    let db = Database::open(&img.dir, DatabaseOptions::default()).expect("reopen");
    assert!(db.recovery_report().is_none());
    assert_eq!(present(&db, &img), ids);
}

#[test]
fn damage_in_the_last_batch_keeps_everything_before_it() {
    let img = image();
    // Inside the last item's value: before the 13-byte end entry.
    flip(&img.journal, img.len[2] - 20);
    assert!(Database::open(&img.dir, DatabaseOptions::default()).is_err());
    let db = Database::open_recovering(&img.dir, DatabaseOptions::default()).expect("recover");
    let report = db.recovery_report().expect("a report");
    assert_eq!(report.batches_dropped, 1, "{report:?}");
    let ids = present(&db, &img);
    assert!(ids.is_superset(&img.a) && ids.is_superset(&img.b));
    assert_eq!(ids.len(), img.a.len() + img.b.len() + img.c.len() - 1);
    assert!(db.verify().expect("verify").problems.is_empty());
}

#[test]
fn a_journal_cut_inside_a_batch_opens_as_after_a_crash() {
    let img = image();
    let cut = img.len[0] + (img.len[1] - img.len[0]) / 2;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&img.journal)
        .expect("open journal");
    file.set_len(cut).expect("truncate");
    drop(file);
    let db = Database::open(&img.dir, DatabaseOptions::default()).expect("open");
    assert!(db.recovery_report().is_none());
    let ids = present(&db, &img);
    assert!(ids.is_superset(&img.a));
    assert!(ids.is_disjoint(&img.c));
    assert!(db.verify().expect("verify").is_ok());
    drop(db);
    let db = Database::open_recovering(&img.dir, DatabaseOptions::default()).expect("open");
    assert!(db.recovery_report().is_none(), "nothing is damaged");
}

#[test]
fn a_flipped_byte_anywhere_in_the_middle_is_found() {
    let img = image();
    let root = tempfile::tempdir().expect("tempdir");
    let (start, end) = (img.len[0], img.len[1]);
    let step = ((end - start) / 11).max(1);
    let mut at = start;
    let mut n = 0;
    while at < end {
        let dir = root.path().join(format!("copy{n}"));
        copy_dir(&img.dir, &dir);
        let journal = dir.join(img.journal.file_name().expect("name"));
        // Without fjall's zero-filled preallocation (it reads as the end of the data).
        std::fs::OpenOptions::new()
            .write(true)
            .open(&journal)
            .and_then(|f| f.set_len(img.len[2]))
            .expect("trim");
        flip(&journal, at);
        assert!(
            Database::open(&dir, DatabaseOptions::default()).is_err(),
            "a flipped byte at {at} goes unnoticed"
        );
        let db = Database::open_recovering(&dir, DatabaseOptions::default()).expect("recover");
        let report = db.recovery_report().expect("a report");
        assert!(
            report.offset >= start && report.offset <= at,
            "{at}: {report:?}"
        );
        let ids = present(&db, &img);
        assert!(ids.is_superset(&img.a) && ids.is_disjoint(&img.c), "{at}");
        assert!(db.verify().expect("verify").problems.is_empty(), "{at}");
        drop(db);
        std::fs::remove_dir_all(&dir).expect("clean up");
        at += step;
        n += 1;
    }
}

#[test]
fn a_stray_journal_file_is_set_aside() {
    let img = image();
    let stray = img.dir.join("old.jnl");
    std::fs::write(&stray, b"not a journal").expect("write");
    let err = Database::open(&img.dir, DatabaseOptions::default()).expect_err("refused");
    assert!(err.to_string().contains("old.jnl"), "{err}");
    let db = Database::open_recovering(&img.dir, DatabaseOptions::default()).expect("recover");
    let report = db.recovery_report().expect("a report");
    assert_eq!(report.later_files, std::slice::from_ref(&stray));
    assert_eq!(report.batches_dropped, 0);
    assert!(!stray.exists());
    assert!(report.backup_dir.join("old.jnl").exists());
    let ids = present(&db, &img);
    assert_eq!(
        ids.len(),
        img.a.len() + img.b.len() + img.c.len(),
        "nothing lost"
    );
}
