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
#![forbid(unsafe_code)]

/// The README's example, compiled and run as a doctest so that it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExample;

mod error;
mod options;

pub use error::{Error, ErrorCode, Result, position_ranges};
pub use options::{
    CollectionSpec, Granularity, MAX_BUCKET_SPAN_SECONDS, MAX_EXPIRE_AFTER_SECONDS, MAX_ROLLUPS,
    TimeseriesOptions,
};

mod arrow_insert;
mod collection;
mod collmod;
mod control;
mod damage;
mod dates;
mod db;
mod delete;
mod expr;
mod filter;
mod index;
mod journal;

mod meta_cache;
mod pipeline;
mod query;
mod read_only;
mod recovery;
mod reopen;
mod rewrite;
mod rollup;
mod salvage;
mod series;
mod stats;
mod storable;
mod storage;
mod store;
mod storing;
mod ttl;
mod update;
mod verify;
mod write;

pub use collection::Collection;
pub use db::{Access, Database, DatabaseOptions, LogOptions};
pub use delete::DeleteResult;
pub use index::IndexOptions;
pub use journal::RecoveryReport;
pub use pipeline::AggregateCursor;
pub use query::{
    Accumulator, AggregateBatch, AggregateSpec, ArrowCursor, ArrowOptions, DEFAULT_BATCH_ROWS,
    ENCODING_KEY, FindCursor, FindOptions, OutputValues, QueryStats, SORT_MEMORY_LIMIT, SortOrder,
};
pub use read_only::ReadOnlyReport;
pub use recovery::LogRecovery;
pub use salvage::{ControlSummary, LostBucket, SalvageReport, SalvagedCollection};
pub use stats::{CatalogStats, CollectionStats};
pub use tscoll_catalog::{CatalogOptions, StatsSnapshot};
pub use ttl::{ExpireResult, TtlMonitor};
pub use update::{UpdateOptions, UpdateResult};
pub use verify::{Problem, ProblemKind, VerifyReport};
pub use write::{Durability, InsertOptions, InsertResult, WriteError};
