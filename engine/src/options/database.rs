//! Options of a database: how it is opened, when its write-ahead logs are checkpointed, the
//! catalog's parameters and the memory a sort may hold.

use tscoll_catalog::CatalogOptions;

/// Options of a [`Database`](crate::Database).
#[derive(Clone, Debug)]
pub struct DatabaseOptions {
    /// Catalog parameters (SPEC §0, R-0.2), shared by every collection.
    /// `catalog.cache_size_bytes` is also fjall's block cache size.
    pub catalog: CatalogOptions,
    /// When the write-ahead log is checkpointed.
    pub log: LogOptions,
    /// Whether opening a directory that holds no database creates one there (the directory
    /// too when missing). Default `true`; with `false` the open fails with
    /// [`Error::NotADatabase`](crate::Error::NotADatabase) and writes nothing (`docs/durability.md`, "Opening a
    /// database"). A read-only open never creates one.
    pub create: bool,
    /// Whether the database is opened for writing. Default [`Access::ReadWrite`].
    pub access: Access,
    /// Bytes of rows a sort holds in memory (a `find` sorted on fields other than time, a
    /// pipeline's `$sort` and `$setWindowFields`) before it writes them, sorted, to a
    /// temporary file, to be merged with the other such runs as the result is read.
    /// Default [`SORT_MEMORY_LIMIT`](crate::SORT_MEMORY_LIMIT), 100 MiB.
    pub sort_memory_bytes: u64,
}

/// How a database is opened ([`DatabaseOptions::access`]; `docs/durability.md`, "Opening a
/// database").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Access {
    /// Reads and writes. Opening recovers the write-ahead logs into the store, which writes:
    /// it fails when the disk is full.
    #[default]
    ReadWrite,
    /// Reads only: tscoll writes nothing (no recovery, no journal repair, nothing stored on
    /// close) and every write fails with [`Error::ReadOnly`](crate::Error::ReadOnly). Measurements the write-ahead
    /// logs hold beyond the store are not seen by reads; [`Database::read_only`](crate::Database::read_only) counts them.
    ReadOnly,
    /// [`Access::ReadWrite`], or [`Access::ReadOnly`] when that open fails because writing is
    /// impossible (the disk is full, the quota is exceeded, the file system is read-only);
    /// [`Database::read_only`](crate::Database::read_only) then says why. For commands that only read.
    ReadWriteOrReadOnly,
}

impl Default for DatabaseOptions {
    fn default() -> Self {
        DatabaseOptions {
            catalog: CatalogOptions::default(),
            log: LogOptions::default(),
            create: true,
            access: Access::ReadWrite,
            sort_memory_bytes: crate::SORT_MEMORY_LIMIT,
        }
    }
}

/// When a collection's write-ahead log is checkpointed (`docs/durability.md`): recovery after a
/// crash reads at most one checkpoint and what was logged after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogOptions {
    /// Bytes logged since the last checkpoint that trigger the next one. Default 64 MiB.
    pub checkpoint_bytes: u64,
    /// Age of the last checkpoint that triggers the next one, when something was logged since.
    /// Default 5 minutes.
    pub checkpoint_interval: std::time::Duration,
    /// Bytes of blobs that buckets leaving memory together, new to the store, must reach to
    /// be written straight into a table instead of through fjall's journal (the log holds
    /// their rows until a checkpoint; `docs/durability.md`, "What storing a bucket writes").
    /// Default 128 KiB: fewer would make small tables; `u64::MAX` ingests none. `0` ingests
    /// every such group, even a bucket leaving alone, at the cost of three tables, their
    /// fsyncs and three memtable flushes each time: for tests, not for many series expiring
    /// one by one.
    pub ingest_min_bytes: u64,
}

impl Default for LogOptions {
    fn default() -> Self {
        LogOptions {
            checkpoint_bytes: 64 << 20,
            checkpoint_interval: std::time::Duration::from_secs(300),
            ingest_min_bytes: 128 << 10,
        }
    }
}
