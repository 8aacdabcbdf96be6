//! `tscoll verify`, `tscoll salvage` and the global `--recover` flag (`docs/cli.md`): verify
//! exits 0 on an intact database and 2 listing each damaged bucket; salvage copies what is
//! readable into a new directory and lists what was lost; a database whose journal is damaged
//! is refused with a message pointing at `--recover`, which opens it keeping every write
//! before the damage.

use std::path::Path;

use bson::{DateTime, Document, doc};
use tscoll_engine::{Database, DatabaseOptions, Durability, InsertOptions, TimeseriesOptions};

use crate::common::{self, copy_tree, tscoll};

/// `n` measurements of series `site`, `_id` from `first`, one a minute.
pub(crate) fn docs(site: &str, first: i64, n: i64) -> Vec<Document> {
    (first..first + n)
        .map(|i| {
            doc! {
                "ts": DateTime::from_millis(1_451_606_400_000 + i * 60_000),
                "meta": { "series": site },
                "_id": i,
                "v": i as f64 / 4.0,
            }
        })
        .collect()
}

/// The largest file under `dir` and its subdirectories.
fn largest_file(dir: &Path) -> std::path::PathBuf {
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let len = std::fs::metadata(&p).expect("metadata").len();
                if best.as_ref().is_none_or(|(l, _)| len > *l) {
                    best = Some((len, p));
                }
            }
        }
    }
    best.expect("a file").1
}

/// Runs `verify` on a damaged database: exit status 2, no debug form of an error, the line
/// saying what to run. Returns the output.
fn verify_damaged(db_dir: &Path) -> String {
    let run = tscoll(&["verify", "--db", path(db_dir)], None);
    assert_eq!(status(&run), Some(2), "{}{}", run.stdout(), run.stderr());
    let out = run.stdout();
    assert_plain(&out);
    let hint = format!("run `tscoll salvage --db {} --to NEWDIR`", path(db_dir));
    assert!(out.contains(&hint), "{out}");
    out
}

/// Runs `salvage` of a damaged database into `new_dir`: exit status 2, no debug form of an
/// error. Returns the output.
fn salvage_damaged(db_dir: &Path, new_dir: &Path) -> String {
    let run = tscoll(
        &["salvage", "--db", path(db_dir), "--to", path(new_dir)],
        None,
    );
    assert_eq!(status(&run), Some(2), "{}{}", run.stdout(), run.stderr());
    let out = run.stdout();
    assert_plain(&out);
    out
}

/// No debug form of a fjall error in `out`.
#[track_caller]
fn assert_plain(out: &str) {
    for leak in ["FjallError", "Checksum(", "Storage(", "got:"] {
        assert!(!out.contains(leak), "{leak} in {out}");
    }
}

fn status(run: &common::Run) -> Option<i32> {
    run.output.status.code()
}

fn path(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

#[test]
fn verify_and_salvage_a_damaged_database() {
    let root = tempfile::tempdir().expect("tempdir");
    let (db_dir, new_dir) = (root.path().join("db"), root.path().join("new"));
    let damaged_bucket = {
        let (db, coll) = open_collection(&db_dir, "c");
        for site in ["a", "b"] {
            coll.insert_many(
                &docs(site, if site == "a" { 0 } else { 100 }, 20),
                &InsertOptions::default(),
            )
            .expect("insert");
        }
        db.close().expect("close");
        let data = &coll.storage_keyspaces()[0];
        let (key, mut value) = db.raw_entries(data).expect("data").swap_remove(0);
        let at = value.len() / 2;
        value[at] ^= 0x11;
        db.raw_write(data, &key, Some(&value)).expect("damage");
        key[..12]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };

    let out = verify_damaged(&db_dir);
    assert!(
        out.contains(&format!(
            "damaged: c bucket {damaged_bucket}: corrupt-segment: segment "
        )),
        "{out}"
    );
    assert!(out.contains("index entries: 1 problem\n"), "{out}");

    let out = salvage_damaged(&db_dir, &new_dir);
    assert!(
        out.contains(&format!(
            "lost: c bucket {damaged_bucket}: segment 0 skipped ("
        )),
        "{out}"
    );
    assert!(out.contains("20 lost"), "{out}");
    assert!(
        out.contains("salvaged 20 measurement(s) of 1 collection(s)"),
        "{out}"
    );

    let run = tscoll(&["verify", "--db", path(&new_dir)], None);
    assert_eq!(status(&run), Some(0), "{}{}", run.stdout(), run.stderr());
    assert!(run.stdout().contains("no problem found"));
    let found = tscoll(&["find", "--db", path(&new_dir), "c"], None).ok();
    assert_eq!(found.json_lines().len(), 20);

    // Salvage refuses a directory that is not empty.
    let run = tscoll(
        &["salvage", "--db", path(&db_dir), "--to", path(&new_dir)],
        None,
    )
    .failed();
    assert!(
        run.stderr().contains("not an empty directory"),
        "{}",
        run.stderr()
    );
}

/// A byte flipped in a table file: `verify` and `salvage` name the file and the collection,
/// say what it means and what to run, without fjall's debug output.
#[test]
fn a_damaged_table_file_is_named() {
    let root = tempfile::tempdir().expect("tempdir");
    let (db_dir, new_dir) = (root.path().join("db"), root.path().join("new"));
    {
        let (db, coll) = open_collection(&db_dir, "weather");
        for (n, site) in ["a", "b", "c", "d", "e", "f"].into_iter().enumerate() {
            let first = i64::try_from(n).expect("small") * 1000;
            coll.insert_many(&docs(site, first, 500), &InsertOptions::default())
                .expect("insert");
        }
        db.close().expect("close");
    }
    // The largest table file of the collection's keyspaces.
    let table = largest_file(&db_dir.join("keyspaces"));
    let mut bytes = std::fs::read(&table).expect("read");
    let at = bytes.len() / 3;
    bytes[at] ^= 0xff;
    std::fs::write(&table, bytes).expect("damage");

    let damaged = format!("table file {} is damaged (", table.display());
    let out = verify_damaged(&db_dir);
    assert!(out.contains(&damaged), "{out}");
    assert!(
        out.contains("damaged: weather: unreadable: keyspace c1_"),
        "{out}"
    );

    let out = salvage_damaged(&db_dir, &new_dir);
    assert!(out.contains(&damaged), "{out}");
}

/// A database opened (created) at `dir` with a collection `name` of time field `ts` and meta
/// field `meta`.
fn open_collection(dir: &Path, name: &str) -> (Database, tscoll_engine::Collection) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection(name, &TimeseriesOptions::new("ts").meta_field("meta"))
        .expect("create");
    (db, coll)
}

/// A crash image with a damaged journal: a copy of a database still open after synced
/// writes of series `a` (`_id` 0..10) then `b` (100..110), a byte flipped in the middle of
/// `b`'s writes. Returns its directory.
fn damaged_journal(root: &Path, name: &str) -> std::path::PathBuf {
    let live = root.join(format!("{name}-live"));
    let crash = root.join(name);
    let (db, coll) = open_collection(&live, "c");
    let sync = InsertOptions {
        ordered: true,
        durability: Durability::Sync,
    };
    let journal = || {
        std::fs::read_dir(&live)
            .expect("read_dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jnl"))
            .max()
            .expect("journal")
    };
    let data_len = |p: &Path| {
        let bytes = std::fs::read(p).expect("read");
        bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
    };
    // Each insert is logged, then stored (a flush stores what open buckets hold) and made
    // durable in fjall's journal by a checkpoint, which also empties the write-ahead log: the
    // journal alone holds the writes.
    let insert = |d: Document| {
        coll.insert_many(&[d], &sync).expect("insert");
        coll.flush().expect("flush");
        coll.checkpoint().expect("checkpoint");
    };
    for d in docs("a", 0, 10) {
        insert(d);
    }
    let after_a = data_len(&journal());
    for d in docs("b", 100, 10) {
        insert(d);
    }
    let after_b = data_len(&journal());
    std::fs::create_dir_all(&crash).expect("mkdir");
    for entry in std::fs::read_dir(&live).expect("read_dir") {
        let entry = entry.expect("entry");
        copy_tree(&entry.path(), &crash.join(entry.file_name()));
    }
    drop((coll, db));
    let target = crash.join(journal().file_name().expect("name"));
    let mut bytes = std::fs::read(&target).expect("read");
    bytes[after_a + (after_b - after_a) / 2] ^= 0xff;
    std::fs::write(&target, bytes).expect("write");
    crash
}

#[test]
fn a_damaged_journal_needs_recover() {
    let root = tempfile::tempdir().expect("tempdir");
    let crash = damaged_journal(root.path(), "crash");

    for cmd in [vec!["verify"], vec!["find", "c"]] {
        let mut args = vec![cmd[0], "--db", path(&crash)];
        args.extend_from_slice(&cmd[1..]);
        let run = tscoll(&args, None).failed();
        assert_eq!(status(&run), Some(1));
        let err = run.stderr();
        assert!(err.contains("journal"), "{err}");
        assert!(err.contains("tscoll verify --recover"), "{err}");
    }

    let run = tscoll(&["verify", "--recover", "--db", path(&crash)], None);
    assert_eq!(status(&run), Some(2), "{}{}", run.stdout(), run.stderr());
    assert!(
        run.stderr()
            .contains("tscoll: warning: the journal was damaged at byte"),
        "{}",
        run.stderr()
    );
    let out = run.stdout();
    assert!(
        out.starts_with("damaged journal: the journal was damaged"),
        "{out}"
    );
    assert!(
        out.contains("no problem found in what the journal repair kept"),
        "{out}"
    );

    // Repaired: the commands work without the flag, with every write of series a.
    let run = tscoll(&["verify", "--db", path(&crash)], None);
    assert_eq!(status(&run), Some(0), "{}{}", run.stdout(), run.stderr());
    let found = tscoll(&["find", "--db", path(&crash), "c"], None)
        .ok()
        .json_lines();
    let ids: Vec<i64> = found
        .iter()
        .map(|d| {
            // An int64 `_id` is written typed, `{"$numberLong": "N"}`.
            d["_id"]["$numberLong"]
                .as_str()
                .and_then(|n| n.parse().ok())
                .expect("_id")
        })
        .collect();
    assert!((0..10).all(|i| ids.contains(&i)), "{ids:?}");
    assert!(ids.len() < 20, "{ids:?}");
}

#[test]
fn salvage_recovers_a_damaged_journal() {
    let root = tempfile::tempdir().expect("tempdir");
    let crash = damaged_journal(root.path(), "crash");
    let new_dir = root.path().join("new");
    let run = tscoll(
        &["salvage", "--db", path(&crash), "--to", path(&new_dir)],
        None,
    )
    .failed();
    assert!(run.stderr().contains("--recover"), "{}", run.stderr());
    assert!(!new_dir.exists(), "nothing created before the source opens");

    let run = tscoll(
        &[
            "salvage",
            "--recover",
            "--db",
            path(&crash),
            "--to",
            path(&new_dir),
        ],
        None,
    );
    assert_eq!(status(&run), Some(2), "{}{}", run.stdout(), run.stderr());
    assert!(
        run.stdout().starts_with("damaged journal: "),
        "{}",
        run.stdout()
    );
    let found = tscoll(&["find", "--db", path(&new_dir), "c"], None)
        .ok()
        .json_lines();
    assert!(found.len() >= 10 && found.len() < 20, "{}", found.len());
}

/// A crash image: the database, its write-ahead log file and where its second and third
/// records start.
struct CrashedLog {
    dir: std::path::PathBuf,
    log: std::path::PathBuf,
    second: u64,
    third: u64,
}

/// A crash image whose write-ahead log holds three commits of 10 measurements (`_id` 0..30),
/// nothing stored.
fn crashed_log(root: &Path, name: &str) -> CrashedLog {
    let dir = root.join(name);
    let (db, coll) = open_collection(&dir, "c");
    let flush = InsertOptions {
        ordered: true,
        durability: Durability::Flush,
    };
    for k in 0..3 {
        coll.insert_many(&docs("a", 10 * k, 10), &flush)
            .expect("insert");
    }
    drop(coll);
    db.crash().expect("crash");
    let log = std::fs::read_dir(dir.join("wal").join("c1"))
        .expect("log dir")
        .map(|e| e.expect("entry").path())
        .max()
        .expect("a log file");
    let bytes = std::fs::read(&log).expect("read");
    let frame =
        |at: usize| 12 + u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4")) as usize;
    let second = frame(0);
    let third = second + frame(second);
    CrashedLog {
        dir,
        log,
        second: second as u64,
        third: third as u64,
    }
}

/// Asserts that `verify`'s report starts with `heading` and finds no problem in what the
/// write-ahead log kept.
fn assert_log_report(out: &str, heading: &str) {
    assert!(out.starts_with(heading), "{out}");
    assert!(
        out.contains("no problem found in what the write-ahead log kept"),
        "{out}"
    );
}

fn found_ids(db: &Path) -> Vec<i64> {
    let mut ids: Vec<i64> = tscoll(&["find", "--db", path(db), "c"], None)
        .ok()
        .json_lines()
        .iter()
        .map(|d| {
            d["_id"]["$numberLong"]
                .as_str()
                .and_then(|n| n.parse().ok())
                .expect("_id")
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn a_damaged_log_needs_recover() {
    let root = tempfile::tempdir().expect("tempdir");
    let CrashedLog {
        dir, log, second, ..
    } = crashed_log(root.path(), "crash");
    let dir = dir.as_path();
    let mut bytes = std::fs::read(&log).expect("read");
    bytes[usize::try_from(second).expect("small") + 20] ^= 0x04;
    std::fs::write(&log, &bytes).expect("damage");

    for cmd in ["verify", "stats"] {
        let run = tscoll(&[cmd, "--db", path(dir)], None).failed();
        assert_eq!(status(&run), Some(1));
        let err = run.stderr();
        assert!(
            err.contains(&format!(
                "the write-ahead log file {} at byte {second} is damaged",
                log.display()
            )) && err.contains("collection 'c'")
                && err.contains("tscoll verify --recover"),
            "{err}"
        );
        assert_eq!(std::fs::read(&log).expect("read"), bytes, "left unchanged");
    }
    // A copy for salvage.
    let copy = root.path().join("copy");
    copy_tree(dir, &copy);

    let run = tscoll(&["verify", "--recover", "--db", path(dir)], None);
    assert_eq!(status(&run), Some(2), "{}{}", run.stdout(), run.stderr());
    let err = run.stderr();
    assert!(
        err.starts_with(&format!(
            "tscoll: warning: collection 'c': the write-ahead log is damaged at byte {second} of"
        )) && err.contains("kept the 1 record(s) before it, dropped 2 record(s)")
            && err.contains("holding at least 10 measurement(s) (1 record(s) unreadable) from 2016-01-01T00:20:00Z to 2016-01-01T00:29:00Z")
            && err.contains("wal-damaged-")
            && err.lines().count() == 1,
        "{err}"
    );
    assert_log_report(&run.stdout(), "damaged write-ahead log: collection 'c'");

    // Repaired: every record before the damage, and the commands work without the flag.
    let run = tscoll(&["verify", "--db", path(dir)], None);
    assert_eq!(status(&run), Some(0), "{}{}", run.stdout(), run.stderr());
    assert!(
        run.stdout().ends_with("no problem found\n"),
        "{}",
        run.stdout()
    );
    assert_eq!(found_ids(dir), (0..10).collect::<Vec<_>>());

    let new_dir = root.path().join("new");
    let args = ["salvage", "--db", path(&copy), "--to", path(&new_dir)];
    let run = tscoll(&args, None).failed();
    assert!(run.stderr().contains("--recover"), "{}", run.stderr());
    let run = tscoll(&[&args[..], &["--recover"]].concat(), None);
    assert_eq!(status(&run), Some(2), "{}{}", run.stdout(), run.stderr());
    assert!(
        run.stdout()
            .starts_with("damaged write-ahead log: collection 'c'"),
        "{}",
        run.stdout()
    );
    assert_eq!(found_ids(&new_dir), (0..10).collect::<Vec<_>>());
}

#[test]
fn a_torn_log_tail_is_reported() {
    let root = tempfile::tempdir().expect("tempdir");
    let CrashedLog {
        dir, log, third, ..
    } = crashed_log(root.path(), "crash");
    let dir = dir.as_path();
    let len = std::fs::metadata(&log).expect("meta").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .expect("open")
        .set_len(len - 5)
        .expect("cut");

    let run = tscoll(&["verify", "--db", path(dir)], None);
    assert_eq!(status(&run), Some(0), "{}{}", run.stdout(), run.stderr());
    let err = run.stderr();
    assert!(
        err.starts_with(&format!(
            "tscoll: warning: collection 'c': dropped the last record of the write-ahead log, \
             cut short at byte {third} of {}",
            log.display()
        )) && err.contains(&format!(
            "{} bytes, at least 10 measurement(s)",
            len - 5 - third
        )) && err.contains("normal after a crash during a commit")
            && err.lines().count() == 1,
        "{err}"
    );
    assert_log_report(&run.stdout(), "torn write-ahead log tail: collection 'c'");
    assert_eq!(found_ids(dir), (0..20).collect::<Vec<_>>());
}
