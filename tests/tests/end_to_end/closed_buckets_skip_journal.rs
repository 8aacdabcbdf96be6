//! Buckets leaving memory together are stored without a copy in fjall's journal: their blobs,
//! then their index entries, then their control records (which make them visible) go straight
//! into tables (the write-ahead log already holds their rows). With a secondary index, the
//! blobs do, and the rest goes through the journal. Everything reads back, before and after
//! the database is reopened, and the database verifies. (Unix only: `main.rs` declares this
//! module under `cfg(unix)`.)

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use bson::{Document, doc};
use tscoll_engine::{Database, DatabaseOptions, FindOptions, IndexOptions, LogOptions};
use tscoll_tests::spec::{at, insert_all, options};

const SECOND: i64 = 1_000;
const HOUR: i64 = 3_600_000;
const SERIES: usize = 200;
/// Rows per bucket, below the default `bucketMaxCount` (1000).
const ROWS: usize = 900;

/// Bytes the files under `dir` whose name `wanted` accepts take on disk (allocated blocks:
/// fjall's journal file is sparse, so its length says nothing). fjall's compactions remove
/// files meanwhile: one gone between listing and reading counts nothing.
fn disk_bytes(dir: &Path, wanted: &dyn Fn(&Path) -> bool) -> u64 {
    let mut total = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries {
        let Ok(entry) = entry else { continue };
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            total += disk_bytes(&path, wanted);
        } else if wanted(&path) {
            total += meta.blocks() * 512;
        }
    }
    total
}

fn is_journal(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "jnl")
}

fn is_table(p: &Path) -> bool {
    p.components().any(|c| c.as_os_str() == "tables")
}

/// A measurement with three fields of pseudo-random floats, which the codec cannot shrink
/// much: each bucket's blob is some 8 KB.
fn measurement(series: usize, row: usize, seed: &mut u64) -> Document {
    let mut next = || {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        f64::from(u32::try_from(*seed >> 40).expect("24 bits")) / 1e3
    };
    #[expect(clippy::cast_possible_wrap, reason = "small row numbers")]
    let t = row as i64 * SECOND;
    doc! {
        "t": at(t),
        "m": format!("s{series}"),
        "a": next(),
        "b": next(),
        "c": next(),
    }
}

/// Inserts 900 measurements into each of 200 series, then one more per series two hours
/// later, which makes every bucket leave memory in that call; checks what that call added to
/// the journal and the tables (`max_journal_share`: the journal's growth at most this part
/// of the tables'), then that everything reads back, also after reopening.
fn check_closing_buckets(log: LogOptions, secondary_index: bool, max_journal_share: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db_options = || DatabaseOptions {
        log,
        ..DatabaseOptions::default()
    };
    let db = Database::open(dir.path(), db_options()).expect("open");
    let coll = db.create_collection("c", &options(true)).expect("create");
    if secondary_index {
        coll.create_index(&doc! { "a": 1 }, &IndexOptions::default())
            .expect("create index");
    }
    let mut seed = 7;
    let docs: Vec<Document> = (0..ROWS)
        .flat_map(|row| (0..SERIES).map(move |s| (s, row)))
        .map(|(s, row)| measurement(s, row, &mut seed))
        .collect();
    insert_all(&coll, &docs);
    let journal_before = disk_bytes(dir.path(), &is_journal);
    let tables_before = disk_bytes(dir.path(), &is_table);
    // One measurement per series two hours later: every open bucket rolls over (time
    // forward) and leaves memory in this call, over 1 MB of blobs together.
    let later: Vec<Document> = (0..SERIES)
        .map(|s| doc! { "t": at(2 * HOUR), "m": format!("s{s}"), "a": 1.0 })
        .collect();
    insert_all(&coll, &later);
    let journal_grew = disk_bytes(dir.path(), &is_journal) - journal_before;
    let tables_grew = disk_bytes(dir.path(), &is_table) - tables_before;
    assert!(
        tables_grew > 1_000_000,
        "the closed buckets' blobs are in the tables: {tables_grew} bytes"
    );
    assert!(
        journal_grew * max_journal_share < tables_grew,
        "the journal grew by {journal_grew} bytes for {tables_grew} bytes of tables"
    );
    let total = u64::try_from(docs.len() + later.len()).expect("small");
    let s7 = || doc! { "m": "s7" };
    assert_eq!(coll.count(&doc! {}).expect("count"), total);
    assert_eq!(
        coll.count(&s7()).expect("count"),
        u64::try_from(ROWS + 1).expect("small")
    );
    let high = doc! { "a": { "$gte": 16_000.0 } };
    let expected_high = docs
        .iter()
        .chain(&later)
        .filter(|d| d.get_f64("a").is_ok_and(|a| a >= 16_000.0))
        .count();
    assert_eq!(
        coll.count(&high).expect("count"),
        u64::try_from(expected_high).expect("small")
    );
    db.close().expect("close");
    drop(coll);
    drop(db);
    let db = Database::open(dir.path(), db_options()).expect("reopen");
    let coll = db.collection("c").expect("collection");
    assert_eq!(coll.count(&doc! {}).expect("count"), total);
    assert_eq!(
        coll.count(&high).expect("count"),
        u64::try_from(expected_high).expect("small")
    );
    let mut found = coll.find(&s7(), &FindOptions::default()).expect("find");
    found.sort_by_key(|d| {
        d.get_datetime("t")
            .map(|t| t.timestamp_millis())
            .unwrap_or(0)
    });
    let expected: Vec<&Document> = docs
        .iter()
        .filter(|d| d.get_str("m").is_ok_and(|m| m == "s7"))
        .collect();
    assert_eq!(found.len(), ROWS + 1);
    for (got, want) in found.iter().zip(expected) {
        for field in ["t", "m", "a", "b", "c"] {
            assert_eq!(got.get(field), want.get(field), "{field} of {want}");
        }
    }
    let report = db.verify().expect("verify");
    assert!(report.is_ok(), "{report:?}");
}

#[test]
fn buckets_leaving_memory_together_reach_the_tables_without_the_journal() {
    // Blobs, index entries and control records all skip the journal.
    check_closing_buckets(LogOptions::default(), false, 64);
}

#[test]
fn with_a_secondary_index_the_blobs_skip_the_journal() {
    // Control records, index and secondary index entries go through the journal.
    check_closing_buckets(LogOptions::default(), true, 4);
}

#[test]
fn many_closing_buckets_are_ingested_a_chunk_at_a_time() {
    // 4 KiB: chunks of at most 1 MiB of blobs, so the closing call ingests two or more.
    let log = LogOptions {
        ingest_min_bytes: 4096,
        ..LogOptions::default()
    };
    check_closing_buckets(log, false, 64);
}
