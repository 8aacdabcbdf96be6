//! Opening a database: read commands never create one, and a full disk still lets them read
//! (`docs/durability.md`, "Opening a database").

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::Command;

use tscoll_engine::{Database, DatabaseOptions, Durability, InsertOptions, TimeseriesOptions};

use crate::common::{Scratch, good_ndjson, tscoll};
use crate::verify_salvage::docs;

/// The names in a directory, sorted.
fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn commands_other_than_create_do_not_make_a_database() {
    let s = Scratch::new();
    let dir = s.path().join("photos");
    std::fs::create_dir(&dir).expect("mkdir");
    std::fs::write(dir.join("notes.txt"), b"not a database").expect("write");
    let db = dir.to_str().expect("utf-8");
    let input = s.file("in.ndjson", good_ndjson().as_bytes());
    let commands: [&[&str]; 14] = [
        &["list"],
        &["find", "c"],
        &["aggregate", "c", "--pipeline", "[]"],
        &["stats"],
        &["stats", "c"],
        &["buckets", "c"],
        &["index", "list", "c"],
        &["verify"],
        &["expire"],
        &["compact"],
        &["drop", "c"],
        &["delete", "c", "--filter", "{}"],
        &["ingest", "c", &input],
        &["salvage", "--to", "copy"],
    ];
    for args in commands {
        let all = with_db(args, db);
        let run = tscoll(&all, None).failed();
        let expected = format!("{db} is not a tscoll database (it holds no database files)");
        assert!(
            run.stderr().contains(&expected),
            "{all:?}: {}",
            run.stderr()
        );
        assert!(
            !run.stderr().contains("panicked"),
            "{all:?}: {}",
            run.stderr()
        );
        assert_eq!(entries(&dir), ["notes.txt"], "{all:?} wrote into {db}");
    }
    // A directory that does not exist is not created either.
    let missing = s.path().join("missing");
    let run = tscoll(
        &["find", "--db", missing.to_str().expect("utf-8"), "c"],
        None,
    )
    .failed();
    assert!(
        run.stderr()
            .contains("is not a tscoll database (the directory does not exist)"),
        "{}",
        run.stderr()
    );
    assert!(!missing.exists());
    // `create` makes one, after which the read commands work.
    let created = tscoll(
        &[
            "create",
            "--db",
            db,
            "c",
            "--time-field",
            "ts",
            "--meta-field",
            "meta",
        ],
        None,
    );
    created.ok();
    assert!(
        entries(&dir).contains(&"version".to_owned()),
        "{:?}",
        entries(&dir)
    );
    tscoll(&["ingest", "--db", db, "c", &input], None).ok();
    let found = tscoll(&["find", "--db", db, "c"], None).ok();
    assert_eq!(found.json_lines().len(), 10);
}

/// The command line `args` with `--db db` after the command (after both words of `index
/// list`).
fn with_db<'a>(args: &[&'a str], db: &'a str) -> Vec<&'a str> {
    let words = if args[0] == "index" { 2 } else { 1 };
    let mut all = args[..words].to_vec();
    all.extend(["--db", db]);
    all.extend(&args[words..]);
    all
}

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop; `None` (with a message)
/// where mounting is not permitted (CI runs as root).
struct Tmpfs {
    root: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let root = tempfile::tempdir().expect("tempdir");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(root.path())
            .stderr(std::process::Stdio::null())
            .status();
        if !status.is_ok_and(|s| s.success()) {
            eprintln!("skipped: cannot mount a tmpfs here (mounting needs root)");
            return None;
        }
        Some(Tmpfs { root })
    }

    /// Fills the file system: a file grows until not one more byte fits.
    fn fill(&self) -> PathBuf {
        let path = self.root.path().join("filler");
        let mut f = std::fs::File::create(&path).expect("filler");
        let block = vec![0xa5_u8; 64 << 10];
        let mut n = block.len();
        loop {
            match f.write(&block[..n]) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::StorageFull && n > 1 => n /= 2,
                Err(e) if e.kind() == io::ErrorKind::StorageFull => break,
                Err(e) => panic!("filling: {e}"),
            }
        }
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.root.path()).status();
    }
}

#[test]
fn read_commands_work_on_a_full_disk() {
    let Some(fs) = Tmpfs::mount("16m") else {
        return;
    };
    let dir = fs.root.path().join("db");
    let db = dir.to_str().expect("utf-8");
    // 600 measurements stored, then 3000 that only the write-ahead log holds: opening for
    // writing stores them.
    {
        let handle = Database::open(&dir, DatabaseOptions::default()).expect("open");
        let coll = handle
            .create_collection("c", &TimeseriesOptions::new("ts").meta_field("meta"))
            .expect("create");
        coll.insert_many(&docs("a", 0, 600), &InsertOptions::default())
            .expect("insert");
        handle.close().expect("close");
        let flush = InsertOptions {
            ordered: true,
            durability: Durability::Flush,
        };
        // 100 series of 30 (their buckets stay open), with text that does not compress:
        // storing them needs room.
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for n in 0..100 {
            let mut batch = docs(&format!("s{n}"), 1000 + 30 * n, 30);
            for d in &mut batch {
                let note: String = (0..8)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        format!("{x:016x}")
                    })
                    .collect();
                d.insert("note", note);
            }
            coll.insert_many(&batch, &flush).expect("insert");
        }
        drop(coll);
        handle.crash().expect("crash");
    }
    let filler = fs.fill();

    // The read-write open stores what fits of the log, then fails: the database opens
    // read-only, and every measurement is either found or counted as not stored yet.
    let found = tscoll(&["find", "--db", db, "c"], None).ok();
    let warning = format!(
        "tscoll: warning: {db}: opened read-only, as writing is impossible (storage error while"
    );
    let stderr = found.stderr();
    assert!(stderr.starts_with(&warning), "{stderr}");
    let pending: usize = stderr
        .split("the disk is full: free space and retry): not stored yet, so not seen by reads: ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(" measurement(s) of 'c' held in the write-ahead log; open the database for writing (e.g. any write command, once the disk has room) to store them\n"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stderr}"));
    assert!(pending > 0, "{stderr}");
    assert_eq!(found.json_lines().len() + pending, 3600);
    for args in [
        &["list"][..],
        &["stats", "c"],
        &["aggregate", "c", "--pipeline", r#"[{"$count": "n"}]"#],
        &["buckets", "c"],
        &["index", "list", "c"],
        &["verify"],
    ] {
        let all = with_db(args, db);
        let run = tscoll(&all, None).ok();
        assert!(
            run.stderr().starts_with(&warning),
            "{all:?}: {}",
            run.stderr()
        );
    }
    // A write command still needs room, and changes nothing.
    let input = fs.root.path().join("none.ndjson");
    let ingest = tscoll(
        &["ingest", "--db", db, "c", input.to_str().expect("utf-8")],
        None,
    );
    let stderr = ingest.failed().stderr();
    assert!(
        stderr.contains("cannot open database") && stderr.contains("the disk is full"),
        "{stderr}"
    );

    // With room again, every measurement is there.
    std::fs::remove_file(filler).expect("rm filler");
    let found = tscoll(&["find", "--db", db, "c"], None).ok();
    assert_eq!(found.json_lines().len(), 3600);
    assert!(found.stderr().is_empty(), "{}", found.stderr());
}
