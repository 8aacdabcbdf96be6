//! Opening a database (`docs/durability.md`, "Opening a database"): a directory that holds
//! none is not made one unless asked, and a read-only open writes nothing and tells what its
//! reads miss. A full disk, which opens read-only for reading, is tested with the command
//! line (`cli/tests/cli/open_database.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bson::doc;
use tscoll_engine::{Access, Database, DatabaseOptions, Durability, Error, InsertOptions};

use crate::damage::{all, copy_live_dir, ids, measurements, options};

fn with(create: bool, access: Access) -> DatabaseOptions {
    DatabaseOptions {
        create,
        access,
        ..DatabaseOptions::default()
    }
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let path = e.expect("entry").path();
            if path.is_dir() {
                todo.push(path.clone());
                out.insert(path, Vec::new());
            } else {
                let bytes = std::fs::read(&path).expect("read");
                out.insert(path, bytes);
            }
        }
    }
    out
}

/// A crash image in `root/db` of a database with collection `c`: 30 measurements stored by a
/// clean close, then 20 more that only its write-ahead log holds. Returns its directory and
/// every `_id`.
fn stored_and_logged(root: &Path) -> (PathBuf, Vec<i64>) {
    let live = root.join("live");
    let db = Database::open(&live, DatabaseOptions::default()).expect("open");
    let coll = db.create_collection("c", &options()).expect("create");
    let stored = measurements("a", 0, 30, 0, 60_000);
    coll.insert_many(&stored, &InsertOptions::default())
        .expect("insert");
    db.close().expect("close");
    let logged = measurements("a", 30, 20, 30 * 60_000, 60_000);
    let flush = InsertOptions {
        ordered: true,
        durability: Durability::Flush,
    };
    coll.insert_many(&logged, &flush).expect("insert");
    // The image is taken while the database is open: nothing runs in it afterwards.
    let image = root.join("db");
    copy_live_dir(&live, &image);
    drop(coll);
    db.crash().expect("crash");
    (image, (0..50).collect())
}

#[test]
fn no_database_is_created_unless_asked() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("photos");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join("notes.txt"), b"x").expect("write");
    for access in [
        Access::ReadWrite,
        Access::ReadOnly,
        Access::ReadWriteOrReadOnly,
    ] {
        let e = Database::open(&dir, with(false, access)).expect_err("not a database");
        assert!(matches!(e, Error::NotADatabase { .. }), "{e:?}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!(
                "{} is not a tscoll database (it holds no database files)",
                dir.display()
            )),
            "{text}"
        );
        let missing = root.path().join("missing");
        let e = Database::open(&missing, with(false, access)).expect_err("no directory");
        assert!(
            e.to_string().contains("(the directory does not exist)"),
            "{e}"
        );
        assert!(!missing.exists());
    }
    // A read-only open never creates one, whatever `create` says.
    let e = Database::open(&dir, with(true, Access::ReadOnly)).expect_err("read-only");
    assert!(matches!(e, Error::NotADatabase { .. }), "{e:?}");
    let names: Vec<_> = snapshot(&dir).into_keys().collect();
    assert_eq!(names, [dir.join("notes.txt")]);
    // The default creates one, as before.
    let db = Database::open(&dir, DatabaseOptions::default()).expect("create");
    assert!(db.read_only().is_none());
    assert!(dir.join("version").exists());
}

#[test]
fn a_read_only_open_writes_nothing_and_counts_what_the_log_holds() {
    let root = tempfile::tempdir().expect("tempdir");
    let (dir, every) = stored_and_logged(root.path());
    // The write-ahead logs (fjall's own recovery may still tidy its files, as on every open).
    let before = snapshot(&dir.join("wal"));

    let db = Database::open(&dir, with(true, Access::ReadOnly)).expect("read-only open");
    let report = db.read_only().expect("read-only");
    assert_eq!(report.reason, None);
    assert_eq!(report.unstored, [("c".to_owned(), 20)]);
    let text = report.to_string();
    assert!(
        text.contains("20 measurement(s) of 'c' held in the write-ahead log"),
        "{text}"
    );
    let coll = db.collection("c").expect("collection");
    assert_eq!(ids(&all(&coll)), every[..30]);
    assert!(db.verify().expect("verify").is_ok());
    // Every write is refused with a plain error.
    let more = measurements("a", 50, 1, 50 * 60_000, 60_000);
    let refused = [
        coll.insert_many(&more, &InsertOptions::default()).err(),
        coll.delete_many(&doc! {}).err(),
        coll.update_many(&doc! {}, &doc! { "$set": { "v": 1 } })
            .err(),
        coll.expire(i64::MAX).err(),
        coll.checkpoint().err(),
        coll.drop_index("*").err(),
        db.create_collection("d", &options()).err(),
        db.drop_collection("c").err(),
        db.compact().err(),
    ];
    for e in refused {
        let e = e.expect("refused");
        assert!(matches!(e, Error::ReadOnly), "{e:?}");
        assert!(e.to_string().contains("open read-only"), "{e}");
    }
    db.close().expect("close");
    drop(coll);
    drop(db);
    let after = snapshot(&dir.join("wal"));
    let changed: Vec<_> = before
        .keys()
        .chain(after.keys())
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    assert!(changed.is_empty(), "a read-only open changed {changed:?}");
    assert!(
        before
            .iter()
            .any(|(p, bytes)| p.extension().is_some_and(|e| e == "log") && !bytes.is_empty()),
        "no log in {:?}",
        before.keys()
    );

    // Opened for writing, the log is recovered: every measurement is back.
    let db = Database::open(&dir, DatabaseOptions::default()).expect("open");
    assert!(db.read_only().is_none());
    assert_eq!(ids(&all(&db.collection("c").expect("c"))), every);
}
