//! One process at a time (`docs/durability.md`): while a database is open, fjall's lock file
//! (`DIR/lock`, an exclusive `flock`) keeps every other open out, in another process or in the
//! same one. The engine reports it as `Error::Locked`; `tscoll` commands exit non-zero with a
//! message naming the lock, and the database is left as it was.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use bson::{DateTime, Document, doc};
use tscoll_engine::{
    Database, DatabaseOptions, Durability, Error, FindOptions, InsertOptions, TimeseriesOptions,
};

/// Ten measurements of two series.
fn measurements() -> Vec<Document> {
    (0..10_i64)
        .map(|i| {
            doc! {
                "ts": DateTime::from_millis(1_451_606_400_000 + i * 60_000),
                "meta": { "series": if i % 2 == 0 { "a" } else { "b" } },
                "v": i,
            }
        })
        .collect()
}

/// Every file under `dir` with its contents, by relative path.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                out.insert(
                    rel.display().to_string(),
                    std::fs::read(&path).expect("read file"),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// [`snapshot`] once two snapshots 200 ms apart agree (at most 10 s).
fn quiet_snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut last = snapshot(dir);
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let now = snapshot(dir);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// A database at `dir` holding collection `m` with [`measurements`], synced.
fn filled(dir: &Path) -> Database {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection("m", &TimeseriesOptions::new("ts").meta_field("meta"))
        .expect("create");
    let options = InsertOptions {
        durability: Durability::Sync,
        ..InsertOptions::default()
    };
    let result = coll.insert_many(&measurements(), &options).expect("insert");
    assert_eq!(result.inserted, 10);
    db.close().expect("close");
    db
}

fn count(db: &Database) -> usize {
    db.collection("m")
        .expect("m")
        .find(&doc! {}, &FindOptions::default())
        .expect("find")
        .len()
}

#[test]
fn another_process_is_refused_while_the_database_is_open() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = filled(&dir);
    let input = tmp.path().join("more.ndjson");
    std::fs::write(
        &input,
        "{\"ts\":{\"$date\":\"2016-01-01T01:00:00Z\"},\"meta\":{\"series\":\"a\"},\"v\":99}\n",
    )
    .expect("write input");
    // The holder's own background work (fjall compacting the tables `close` flushed) may
    // still change files: wait until the directory is quiet before comparing.
    let before = quiet_snapshot(&dir);
    let dir_arg = dir.to_str().expect("utf-8");
    let input_arg = input.to_str().expect("utf-8");
    for args in [
        vec!["stats", "--db", dir_arg, "m"],
        vec!["find", "--db", dir_arg, "m"],
        vec![
            "ingest",
            "--db",
            dir_arg,
            "m",
            input_arg,
            "--durability",
            "sync",
        ],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_tscoll"))
            .args(&args)
            .output()
            .expect("run tscoll");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "{args:?} succeeded on a locked database"
        );
        assert!(
            stderr.contains(&format!("cannot open database {dir_arg}: "))
                && stderr.contains("locked by another process"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?} printed something");
    }
    assert_eq!(
        quiet_snapshot(&dir),
        before,
        "a refused open changed the database"
    );
    assert_eq!(count(&db), 10, "the holder still reads its data");

    // Once the holder closes, the same commands work.
    drop(db);
    let out = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .args(["find", "--db", dir_arg, "m"])
        .output()
        .expect("run tscoll");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 10);
}

#[test]
fn a_second_open_in_the_same_process_is_locked() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let db = filled(&dir);
    let err = Database::open(&dir, DatabaseOptions::default()).expect_err("second open");
    assert!(matches!(err, Error::Locked), "{err:?}");
    assert!(err.to_string().contains("locked"), "{err}");
    assert_eq!(count(&db), 10);
    drop(db);
    let again = Database::open(&dir, DatabaseOptions::default()).expect("open after close");
    assert_eq!(count(&again), 10);
}
