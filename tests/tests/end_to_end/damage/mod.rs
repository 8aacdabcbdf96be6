//! Shared by the damage tests (`verify_damage.rs`, `salvage_damage.rs`,
//! `journal_damaged_open.rs`): measurements that identify themselves, raw access to the
//! stored keyspaces, and fjall's journal files on disk.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};

use bson::{Bson, DateTime, Document, doc};
use tscoll_engine::{Collection, Database, FindOptions, IndexOptions, TimeseriesOptions};
use tscoll_tests::identical;

/// 2023-11-14T22:13:00Z, minute-aligned.
pub const T0: i64 = 1_699_999_980_000;

/// The collection options of the tests: time `ts`, meta `meta`, granularity seconds (one
/// hour buckets).
#[must_use]
pub fn options() -> TimeseriesOptions {
    TimeseriesOptions::new("ts").meta_field("meta")
}

/// `n` measurements of series `site`, one every `step_ms` from `T0 + start_ms`, with `_id`
/// from `first_id` on: numbers, strings, nested objects, arrays and missing fields.
#[must_use]
pub fn measurements(
    site: &str,
    first_id: i64,
    n: i64,
    start_ms: i64,
    step_ms: i64,
) -> Vec<Document> {
    (0..n)
        .map(|i| {
            let id = first_id + i;
            let mut d = doc! {
                "ts": DateTime::from_millis(T0 + start_ms + i * step_ms),
                "meta": { "site": site, "kind": "sensor" },
                "_id": id,
                "v": (id as f64) * 0.25 - 3.0,
                "s": format!("value {id}"),
                "o": { "x": id % 7, "tags": [id % 3, "t"] },
            };
            if id % 4 == 0 {
                d.remove("s");
                d.insert("extra", Bson::Null);
            }
            d
        })
        .collect()
}

/// Creates collection `name` with secondary indexes `{v: 1}` and `{meta.site: 1, ts: -1}`.
///
/// # Panics
/// When the collection or an index cannot be created.
#[must_use]
pub fn create(db: &Database, name: &str) -> Collection {
    let coll = db.create_collection(name, &options()).expect("create");
    coll.create_index(&doc! { "v": 1 }, &IndexOptions::default())
        .expect("index v");
    coll.create_index(
        &doc! { "meta.site": 1, "ts": -1 },
        &IndexOptions::named("site_time"),
    )
    .expect("index site_time");
    coll
}

/// Inserts `docs` in one call; every one must be accepted.
///
/// # Panics
/// When the call fails or rejects a measurement.
pub fn insert(coll: &Collection, docs: &[Document]) {
    let r = coll
        .insert_many(docs, &tscoll_engine::InsertOptions::default())
        .expect("insert");
    assert_eq!(
        (r.inserted, r.errors.len()),
        (docs.len(), 0),
        "{:?}",
        r.errors
    );
}

/// Every measurement of a collection, sorted by `_id`.
///
/// # Panics
/// When the query fails.
#[must_use]
pub fn all(coll: &Collection) -> Vec<Document> {
    let mut v = coll.find(&doc! {}, &FindOptions::default()).expect("find");
    v.sort_by_key(|d| d.get_i64("_id").unwrap_or(i64::MIN));
    v
}

/// Asserts two lists of measurements are identical (field order and value types included).
///
/// # Panics
/// When they differ.
pub fn assert_same(found: &[Document], expected: &[Document], what: &str) {
    assert_eq!(found.len(), expected.len(), "{what}: measurement count");
    for (f, e) in found.iter().zip(expected) {
        assert!(
            identical(&Bson::Document(f.clone()), &Bson::Document(e.clone())),
            "{what}: found {f}, expected {e}"
        );
    }
}

/// Asserts two lists of measurements hold the same fields and values, in any field order (a
/// measurement's fields come in its bucket's column order, which changes when the
/// measurements are bucketed differently).
///
/// # Panics
/// When they differ.
pub fn assert_same_values(found: &[Document], expected: &[Document], what: &str) {
    let sorted = |d: &Document| {
        let mut fields: Vec<(String, Bson)> =
            d.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        fields.into_iter().collect::<Document>()
    };
    let found: Vec<Document> = found.iter().map(sorted).collect();
    let expected: Vec<Document> = expected.iter().map(sorted).collect();
    assert_same(&found, &expected, what);
}

/// The `_id`s of a list of measurements.
#[must_use]
pub fn ids(docs: &[Document]) -> Vec<i64> {
    docs.iter()
        .map(|d| d.get_i64("_id").expect("_id"))
        .collect()
}

/// The keyspace names of a collection: `[data, ctl, idx, secondary...]`.
#[must_use]
pub fn keyspaces(coll: &Collection) -> Vec<String> {
    coll.storage_keyspaces()
}

/// The meta+time index entries `(key, value)` of the series whose series record's meta ends
/// with `meta_suffix` (`docs/keys.md`: the record's key is the meta hash, the entries' keys
/// start with it).
///
/// # Panics
/// When the index keyspace cannot be read or no record matches.
#[must_use]
pub fn series_entries(
    db: &Database,
    coll: &Collection,
    meta_suffix: &[u8],
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let items = db.raw_entries(&keyspaces(coll)[2]).expect("idx");
    let hash = items
        .iter()
        .find(|(k, v)| k.len() == 8 && v.ends_with(meta_suffix))
        .map(|(k, _)| k.clone())
        .expect("the series' record");
    items
        .into_iter()
        .filter(|(k, _)| k.len() == 28 && k.starts_with(&hash))
        .collect()
}

/// One bucket's segments: its id in hex and `(segment number, data key)` of each.
pub type BucketSegments = (String, Vec<(u32, Vec<u8>)>);

/// The segments of a collection by bucket, in key order.
///
/// # Panics
/// When the data keyspace cannot be read.
#[must_use]
pub fn segments(db: &Database, coll: &Collection) -> Vec<BucketSegments> {
    let mut out: Vec<BucketSegments> = Vec::new();
    for (k, _) in db.raw_entries(&keyspaces(coll)[0]).expect("data") {
        let id = hex(&k[..12]);
        let seg = u32::from_be_bytes(k[12..16].try_into().expect("segment"));
        match out.last_mut() {
            Some((last, v)) if *last == id => v.push((seg, k)),
            _ => out.push((id, vec![(seg, k)])),
        }
    }
    out
}

/// Flips one byte in the middle of a stored value.
///
/// # Panics
/// When the key is not stored or cannot be written.
pub fn flip_value(db: &Database, keyspace: &str, key: &[u8]) {
    let (_, mut v) = db
        .raw_entries(keyspace)
        .expect("read")
        .into_iter()
        .find(|(k, _)| k == key)
        .expect("stored");
    let at = v.len() / 2;
    v[at] ^= 0x5a;
    db.raw_write(keyspace, key, Some(&v)).expect("write");
}

/// Lower-case hex.
#[must_use]
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The active (highest numbered) journal file of a database directory.
///
/// # Panics
/// When the directory cannot be read or has no journal.
#[must_use]
pub fn journal_file(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let n = p
                .file_name()?
                .to_str()?
                .strip_suffix(".jnl")?
                .parse::<u64>()
                .ok()?;
            Some((n, p))
        })
        .max()
        .map(|(_, p)| p)
        .expect("a journal file")
}

/// The length of a file without its trailing zero bytes (fjall preallocates journals).
///
/// # Panics
/// When the file cannot be read.
#[must_use]
pub fn data_len(path: &Path) -> u64 {
    let bytes = std::fs::read(path).expect("read");
    bytes
        .iter()
        .rposition(|&b| b != 0)
        .map_or(0, |i| i as u64 + 1)
}

/// Copies a directory tree: a crash image of a database that is still open, once its writes
/// are synced.
///
/// # Panics
/// When a file cannot be copied.
pub fn copy_dir(from: &Path, to: &Path) {
    try_copy_dir(from, to).expect("copy");
}

/// A copy of the directory of a database that is open: fjall's background work may remove
/// a file between the listing and its copy (a table compacted away), so the copy is taken
/// again, whole, until one finds every file it listed.
pub fn copy_live_dir(from: &Path, to: &Path) {
    for _ in 0..50 {
        match try_copy_dir(from, to) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::remove_dir_all(to).expect("remove a partial copy");
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => panic!("copy {}: {e}", from.display()),
        }
    }
    panic!("{} kept changing while it was copied", from.display());
}

fn try_copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            try_copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
