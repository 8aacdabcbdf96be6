//! A damaged or torn write-ahead log (`docs/durability.md`): a crash image whose log holds
//! three commits A, B, C (nothing stored: every row is only in the log). A byte flipped in B
//! makes `Database::open` fail naming the file and offset, and leaves the files unchanged;
//! `Database::open_recovering` keeps all of A and nothing of B or C, says what it dropped and
//! leaves the damaged file beside the database. A log cut inside C opens, keeps A and B and
//! says what the torn tail lost.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use bson::{DateTime, Document, doc};
use tscoll_engine::{
    Database, DatabaseOptions, Durability, Error, FindOptions, InsertOptions, TimeseriesOptions,
};

const T0: i64 = 1_700_000_000_000;

/// Commit `k` (0, 1, 2): 30 measurements of two series, ids `100 k ..`, 20 s apart (all
/// three in the same buckets: no bucket leaves memory, the store holds nothing).
fn commit(k: i64) -> Vec<Document> {
    (0..30)
        .map(|i| {
            doc! {
                "_id": 100 * k + i,
                "t": DateTime::from_millis(T0 + (30 * k + i) * 20_000),
                "m": if i % 2 == 0 { "a" } else { "b" },
                "v": (100 * k + i) as f64 / 8.0,
            }
        })
        .collect()
}

/// A crashed database in `dir` whose log holds commits A, B, C; returns the log file and
/// where each of its three records starts.
fn crash_image(dir: &Path) -> (PathBuf, [u64; 3]) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
        .expect("create");
    let options = InsertOptions {
        durability: Durability::Flush,
        ..InsertOptions::default()
    };
    for k in 0..3 {
        let r = coll.insert_many(&commit(k), &options).expect("insert");
        assert_eq!(r.inserted, 30);
    }
    db.crash().expect("crash");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("wal").join("c1"))
        .expect("log dir")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let file = files.pop().expect("a log file");
    let bytes = std::fs::read(&file).expect("read");
    let mut starts = [0u64; 3];
    let mut at = 0usize;
    for s in &mut starts {
        *s = at as u64;
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        at += 12 + len as usize;
    }
    assert_eq!(at, bytes.len(), "three records, nothing else");
    (file, starts)
}

fn ids(db: &Database) -> BTreeSet<i64> {
    let coll = db.collection("c").expect("collection");
    let mut out = BTreeSet::new();
    for d in coll.find(&doc! {}, &FindOptions::default()).expect("find") {
        let id = d.get_i64("_id").expect("_id");
        assert_eq!(d.get_f64("v").expect("v"), id as f64 / 8.0);
        assert!(out.insert(id), "measurement {id} twice");
    }
    out
}

fn ids_of(commits: &[i64]) -> BTreeSet<i64> {
    commits
        .iter()
        .flat_map(|k| (0..30).map(move |i| 100 * k + i))
        .collect()
}

#[test]
fn a_damaged_log_is_refused_then_recovered_up_to_the_damage() {
    let root = tempfile::tempdir().expect("tempdir");
    // A flip in B's checksum, at the start of its payload (the entries), and in its rows.
    for (case, delta) in [8u64, 12, 40].into_iter().enumerate() {
        let dir = root.path().join(format!("db{case}"));
        let (file, starts) = crash_image(&dir);
        let mut bytes = std::fs::read(&file).expect("read");
        let at = usize::try_from(starts[1] + delta).expect("small");
        bytes[at] ^= 0x20;
        std::fs::write(&file, &bytes).expect("damage");

        match Database::open(&dir, DatabaseOptions::default()) {
            Err(Error::LogDamaged { file: f, reason }) => {
                assert!(
                    f.contains(&file.display().to_string())
                        && f.ends_with(&format!("at byte {}", starts[1])),
                    "{f}"
                );
                assert!(
                    reason.contains("collection 'c'") && reason.contains("--recover"),
                    "{reason}"
                );
            }
            other => panic!("case {case}: {other:?}"),
        }
        assert_eq!(std::fs::read(&file).expect("read"), bytes, "left unchanged");

        let db = Database::open_recovering(&dir, DatabaseOptions::default()).expect("recover");
        assert_eq!(
            ids(&db),
            ids_of(&[0]),
            "case {case}: all of A, nothing after it"
        );
        let report = db.log_recovery();
        assert_eq!(report.len(), 1, "{report:?}");
        let r = &report[0];
        assert!(r.damaged && r.collection == "c" && r.file == file, "{r:?}");
        assert_eq!((r.offset, r.records_kept), (starts[1], 1), "{r}");
        assert_eq!(r.bytes_dropped, bytes.len() as u64 - starts[1]);
        // C is read past the damage: its measurements and times are counted.
        assert_eq!((r.records_dropped, r.records_unreadable), (2, 1), "{r}");
        assert_eq!(r.measurements_dropped, 30, "{r}");
        assert_eq!(
            r.time_range,
            Some((
                DateTime::from_millis(T0 + 60 * 20_000),
                DateTime::from_millis(T0 + 89 * 20_000)
            ))
        );
        let backup = r.backup_dir.as_ref().expect("a backup");
        let copy = backup.join(file.file_name().expect("name"));
        assert_eq!(std::fs::read(copy).expect("the damaged file"), bytes);
        assert!(backup.starts_with(&dir) && !backup.starts_with(dir.join("wal")));
        let text = r.to_string();
        assert!(
            text.contains(&format!("damaged at byte {}", starts[1]))
                && text.contains("dropped 2 record(s)"),
            "{text}"
        );
        let verify = db.verify().expect("verify");
        assert!(verify.problems.is_empty(), "{:?}", verify.problems);
        assert_eq!(verify.log, report);
        assert!(!verify.is_ok());
        // Writes go on, and the database opens again without recovery.
        let more = vec![
            doc! { "_id": 999i64, "t": DateTime::from_millis(T0), "m": "a", "v": 999.0 / 8.0 },
        ];
        db.collection("c")
            .expect("c")
            .insert_many(&more, &InsertOptions::default())
            .expect("insert");
        db.close().expect("close");
        drop(db);
        let db = Database::open(&dir, DatabaseOptions::default()).expect("reopen");
        let mut expected = ids_of(&[0]);
        expected.insert(999);
        assert_eq!(ids(&db), expected);
        assert!(db.log_recovery().is_empty());
        assert!(db.verify().expect("verify").is_ok());
    }
}

#[test]
fn a_torn_log_tail_is_reported() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("db");
    let (file, starts) = crash_image(&dir);
    let len = std::fs::metadata(&file).expect("meta").len();
    // Cut in C's rows: its entries are whole, so its measurements are counted.
    let cut = len - 10;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .expect("open")
        .set_len(cut)
        .expect("cut");
    let db = Database::open(&dir, DatabaseOptions::default()).expect("open");
    assert_eq!(ids(&db), ids_of(&[0, 1]));
    let report = db.log_recovery();
    assert_eq!(report.len(), 1, "{report:?}");
    let r = &report[0];
    assert!(
        !r.damaged && r.file == file && r.backup_dir.is_none(),
        "{r:?}"
    );
    assert_eq!((r.offset, r.bytes_dropped), (starts[2], cut - starts[2]));
    assert_eq!((r.records_kept, r.records_dropped), (2, 1));
    assert_eq!(r.measurements_dropped, 30);
    let text = r.to_string();
    assert!(
        text.contains("cut short at byte") && text.contains("30 measurement(s)"),
        "{text}"
    );
    let verify = db.verify().expect("verify");
    assert_eq!(verify.log, report);
    assert!(verify.is_ok(), "a torn tail is what a crash leaves");
}
