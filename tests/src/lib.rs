//! Shared helpers of the end-to-end tests: loading the bundled real data sets.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use bson::{Bson, Document};

pub mod arrow;

/// A small deterministic generator (64-bit LCG, high bits), for tests that draw their data.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    ///
    /// # Panics
    /// When `n` is 0.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The repository's bundled data folder (`data/`).
#[must_use]
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("data")
}

/// Reads a newline-delimited Extended JSON file (`.xz` compressed or plain) into documents.
///
/// # Panics
/// When the file cannot be read or a line is not an Extended JSON document (test data only).
#[must_use]
pub fn load_ndjson(path: &Path) -> Vec<Document> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader: Box<dyn std::io::Read> = if path.extension().is_some_and(|e| e == "xz") {
        Box::new(liblzma::read::XzDecoder::new(file))
    } else {
        Box::new(file)
    };
    BufReader::new(reader)
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let line = line.unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            let value: serde_json::Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            match Bson::try_from(value) {
                Ok(Bson::Document(d)) => d,
                other => panic!("{}:{}: not a document: {other:?}", path.display(), i + 1),
            }
        })
        .collect()
}

/// Whether two values are identical: same BSON types and values, doubles compared bit for bit,
/// documents with the same fields in the same order.
#[must_use]
pub fn identical(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x.to_bits() == y.to_bits(),
        (Bson::Document(x), Bson::Document(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| identical(p, q))
        }
        _ => a == b,
    }
}

/// Set-up shared by the SPEC conformance tests (`tests/spec_*.rs`): a collection in a
/// temporary database, minute-aligned times, inserts that must succeed, sorted reads.
pub mod spec {
    use bson::{DateTime, Document};
    use tscoll_engine::{
        CatalogOptions, Collection, Database, DatabaseOptions, FindOptions, InsertOptions,
        InsertResult, SortOrder, TimeseriesOptions,
    };

    /// A minute-aligned base time (ms): the rounded min of a bucket opened at `T0 + s`
    /// (s < 60 s).
    pub const T0: i64 = 1_699_999_980_000;

    /// `T0 + ms` as a BSON date.
    #[must_use]
    pub fn at(ms: i64) -> DateTime {
        DateTime::from_millis(T0 + ms)
    }

    /// Collection `c` with `opts` in a new temporary database whose catalog uses `catalog`.
    /// Keep the returned directory alive as long as the database.
    ///
    /// # Panics
    /// When the database cannot be opened or the collection created.
    #[must_use]
    pub fn temp_collection(
        catalog: CatalogOptions,
        opts: &TimeseriesOptions,
    ) -> (tempfile::TempDir, Database, Collection) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(
            dir.path(),
            DatabaseOptions {
                catalog,
                ..DatabaseOptions::default()
            },
        )
        .expect("open");
        let coll = db.create_collection("c", opts).expect("create");
        (dir, db, coll)
    }

    /// Options with time field `t`, and meta field `m` when `meta`.
    #[must_use]
    pub fn options(meta: bool) -> TimeseriesOptions {
        let o = TimeseriesOptions::new("t");
        if meta { o.meta_field("m") } else { o }
    }

    /// Inserts `docs` in one `insert_many` call, ordered or not, and returns its result,
    /// checking the contract of rejections (SPEC ): an ordered insert that stopped at
    /// a rejected measurement is `Error::BulkWrite` holding the result, with that one
    /// rejection; an unordered one returns its rejections in `Ok`.
    ///
    /// # Panics
    /// When the call fails otherwise, or breaks that contract.
    pub fn insert_checked(coll: &Collection, docs: &[Document], ordered: bool) -> InsertResult {
        let outcome = coll.insert_many(
            docs,
            &InsertOptions {
                ordered,
                ..InsertOptions::default()
            },
        );
        match outcome {
            Ok(r) => {
                assert!(!ordered || r.errors.is_empty(), "ordered, yet Ok: {r:?}");
                r
            }
            Err(e) => {
                assert!(ordered, "unordered, yet Err: {e}");
                assert!(matches!(e, tscoll_engine::Error::BulkWrite(_)), "{e}");
                let code = e.code();
                let r = e.into_insert_result().expect("a BulkWrite error");
                assert_eq!(r.errors.len(), 1, "an ordered insert stops at the first");
                assert_eq!(code, r.errors[0].code);
                r
            }
        }
    }

    /// Inserts `docs` in one `insert_many` call, which must accept all of them.
    ///
    /// # Panics
    /// When the call fails or rejects a measurement.
    pub fn insert_all(coll: &Collection, docs: &[Document]) {
        let r = coll
            .insert_many(docs, &InsertOptions::default())
            .expect("insert");
        assert_eq!(
            (r.inserted, r.errors.len()),
            (docs.len(), 0),
            "{:?}",
            r.errors
        );
    }

    /// Inserts `docs` one `insert_many` call each, every one accepted.
    ///
    /// # Panics
    /// As [`insert_all`].
    pub fn insert_each(coll: &Collection, docs: &[Document]) {
        for d in docs {
            insert_all(coll, std::slice::from_ref(d));
        }
    }

    /// `control.count` of every stored bucket, sorted.
    ///
    /// # Panics
    /// When the buckets cannot be read or one has no `control.count`.
    #[must_use]
    pub fn bucket_counts(coll: &Collection) -> Vec<i64> {
        let mut v: Vec<i64> = coll
            .buckets()
            .expect("buckets")
            .iter()
            .map(|b| {
                b.get_document("control")
                    .and_then(|c| c.get_i64("count"))
                    .expect("control.count")
            })
            .collect();
        v.sort_unstable();
        v
    }

    /// Asserts that every stored bucket's `meta` is the document `meta` (as stored:
    /// normalized, R-3.1).
    ///
    /// # Panics
    /// When the buckets cannot be read or one has another meta value.
    pub fn assert_every_bucket_meta(coll: &Collection, meta: &Document) {
        let metas: Vec<Document> = coll
            .buckets()
            .expect("buckets")
            .iter()
            .map(|b| b.get_document("meta").expect("meta").clone())
            .collect();
        assert!(metas.iter().all(|m| m == meta), "{metas:?}");
    }

    /// The measurements matching `filter`, in time order.
    ///
    /// # Panics
    /// When the query fails.
    #[must_use]
    pub fn find_sorted(coll: &Collection, filter: Document) -> Vec<Document> {
        coll.find(
            &filter,
            &FindOptions {
                sort: Some(SortOrder::Ascending),
                ..FindOptions::default()
            },
        )
        .expect("find")
    }
}
