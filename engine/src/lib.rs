//! tscoll-engine: MongoDB-style time-series collections as an embeddable storage engine.
//!
//! Measurements (`bson::Document`s with a time field, an optional meta field and any other
//! fields) are grouped into buckets per series (SPEC §6), compressed column by column
//! (`tscoll-codec`) and kept in the fjall LSM key-value store with a meta+time index (SPEC §13).
//!
//! ```
//! use bson::{DateTime, doc};
//! use tscoll_engine::{Database, DatabaseOptions, FindOptions, InsertOptions, TimeseriesOptions};
//!
//! # let dir = tempfile::tempdir()?;
//! let db = Database::open(dir.path(), DatabaseOptions::default())?;
//! let coll = db.create_collection("weather", &TimeseriesOptions::new("ts").meta_field("station"))?;
//! let t0 = DateTime::from_millis(1_700_000_000_000);
//! let docs = vec![
//!     doc! { "ts": t0, "station": "Seattle", "temp": 12.5 },
//!     doc! { "ts": DateTime::from_millis(t0.timestamp_millis() + 60_000), "station": "Seattle", "temp": 12.0 },
//! ];
//! let result = coll.insert_many(&docs, &InsertOptions::default())?;
//! assert_eq!(result.inserted, 2);
//! let found = coll.find(&doc! { "station": "Seattle", "temp": { "$lt": 12.2 } }, &FindOptions::default())?;
//! assert_eq!(found.len(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules, in the order data flows
//!
//! | module | what it holds |
//! |---|---|
//! | `db.rs`, `read_only.rs` | [`Database`]: open (fjall's journal checked, fjall, each collection's log replayed), create, drop, close |
//! | `collection.rs` | [`Collection`] and the state of one collection |
//! | `options/`, `error.rs` | the options of a database, a collection and an insert; [`Error`] and MongoDB's codes |
//! | `document.rs` | values BSON can store, checked on every path that takes documents |
//! | `write/` | documents or Arrow → series → the catalog's write batches → one log record per commit group |
//! | `wal/` | the write-ahead log files of one collection, nothing of fjall |
//! | `flush/` | rows of buckets that left memory → stored buckets; checkpoints; replay of the log at open |
//! | `storage/` | the only code naming a keyspace or a key's bytes or starting an atomic write (`StoreBatch`): buckets, control records, the meta+time index, rollups, the one door for a bucket's records (`put_bucket`), fjall's journal |
//! | `mql/` | the query language without I/O: filters, expressions, dates |
//! | `query/` | the read path: plan → walk → unpack → row filter, one collector per query kind |
//! | `index/` | secondary index definitions, maintenance and planning |
//! | `pipeline/` | aggregation pipelines over a stream of documents |
//! | `direct_write/` | writes outside the insert path: deletes, updates, TTL, collMod, bucket rewrites |
//! | `tools/` | stats, verify, salvage |
//! | `arrow/` | the Arrow crates re-exported, the field marks of BSON types, the one Arrow → BSON mapping ([`arrow::documents_from_batch`], [`arrow::RecordBatchOptions`]) and documents → Arrow ([`arrow::documents_to_batches`]) |
#![forbid(unsafe_code)]

/// The README's example, compiled and run as a doctest so that it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExample;

mod error;
mod options;

pub use error::{Error, ErrorCode, Result, position_ranges};
pub use options::collection::{
    CollectionSpec, Granularity, MAX_BUCKET_SPAN_SECONDS, MAX_EXPIRE_AFTER_SECONDS, MAX_ROLLUPS,
    TimeseriesOptions,
};
pub use options::database::{Access, DatabaseOptions, LogOptions};
pub use options::insert::{Durability, InsertOptions};
pub use options::machine::machine_memory_bytes;

mod collection;
mod db;
mod direct_write;
mod document;
mod flush;
mod index;
mod mql;
mod pipeline;
mod query;
mod read_only;
mod storage;
mod tools;
mod wal;
mod write;

pub use collection::Collection;
pub use db::Database;
pub use direct_write::delete::DeleteResult;
pub use direct_write::ttl::{ExpireResult, TtlMonitor};
pub use direct_write::update::{Update, UpdateOptions, UpdateResult};
pub use flush::replay::LogRecovery;
pub use index::IndexOptions;
pub use mql::document_filter::DocumentFilter;
pub use pipeline::AggregateCursor;
pub use query::{
    Accumulator, AggregateBatch, AggregateSpec, ArrowCursor, ArrowOptions, DEFAULT_BATCH_ROWS,
    ENCODING_KEY, ExplainVerbosity, FindCursor, FindOptions, OutputValues, QueryStats,
    SORT_MEMORY_LIMIT, SortOrder,
};
pub use read_only::ReadOnlyReport;
pub use storage::fjall_journal::RecoveryReport;
pub use tools::salvage::{ControlSummary, LostBucket, SalvageReport, SalvagedCollection};
pub use tools::stats::{CatalogStats, CollectionStats};
pub use tools::verify::{Problem, ProblemKind, VerifyReport};
// A series' normalized meta value and its hash (SPEC R-3.1): what a cluster routes measurements by.
pub use tscoll_catalog::{BucketKey, CatalogOptions, StatsSnapshot};

pub mod arrow;
pub use write::{InsertResult, WriteError};
