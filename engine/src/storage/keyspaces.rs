//! Keyspaces by name: with [`BucketStore::open`](super::BucketStore::open), the only code
//! that opens, looks up, flushes, compacts or deletes a fjall keyspace. The names themselves
//! are made in [`keys`](super::keys) (`docs/keys.md`); the rest of the engine holds the
//! handles these functions return and writes through [`StoreBatch`](super::StoreBatch).

use fjall::{Keyspace, KeyspaceCreateOptions};

use super::keys::{COLLECTIONS_KEYSPACE, secondary_index_keyspace};
use crate::error::{Error, ErrorCode, Result};

/// LZ4 on every level (fjall's default leaves levels 0 and 1 uncompressed): the options of
/// the small-record keyspaces, control records, index entries and secondary index entries
/// (docs/BENCHMARKS.md, "fjall settings").
pub(super) fn lz4_options() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default().data_block_compression_policy(
        fjall::config::CompressionPolicy::all(fjall::CompressionType::Lz4),
    )
}

/// The database's keyspace of collection records (`collections`), created when missing.
///
/// # Errors
/// [`Error::Storage`] when fjall fails.
pub(crate) fn open_collections(fjall: &fjall::Database) -> Result<Keyspace> {
    fjall
        .keyspace(COLLECTIONS_KEYSPACE, KeyspaceCreateOptions::default)
        .map_err(Error::storage("opening the collections keyspace"))
}

/// The keyspace of secondary index number `no` of collection `coll_id` (`c{id}_i{no}`),
/// created when missing, with the options of the meta+time index.
///
/// # Errors
/// [`Error::Storage`] when fjall fails.
pub(crate) fn open_secondary_index(
    fjall: &fjall::Database,
    coll_id: u64,
    no: u32,
) -> Result<Keyspace> {
    fjall
        .keyspace(&secondary_index_keyspace(coll_id, no), lz4_options)
        .map_err(Error::storage("opening a secondary index keyspace"))
}

/// Whether the keyspace of secondary index number `no` of collection `coll_id` exists.
pub(crate) fn secondary_index_exists(fjall: &fjall::Database, coll_id: u64, no: u32) -> bool {
    fjall.keyspace_exists(&secondary_index_keyspace(coll_id, no))
}

/// An existing keyspace by its name, never creating one (inspection and damage tests).
///
/// # Errors
/// [`Error::Rejected`] (`BadValue`) when there is no keyspace `name`; [`Error::Storage`]
/// when fjall fails.
pub(crate) fn open_existing(fjall: &fjall::Database, name: &str) -> Result<Keyspace> {
    if !fjall.keyspace_exists(name) {
        return Err(Error::rejected(
            ErrorCode::BadValue,
            format!("no keyspace {name}"),
        ));
    }
    fjall
        .keyspace(name, KeyspaceCreateOptions::default)
        .map_err(Error::storage("opening a keyspace"))
}

/// Deletes a keyspace and everything in it; `what` names it in the error.
///
/// # Errors
/// [`Error::Storage`] when fjall fails.
pub(crate) fn delete(fjall: &fjall::Database, ks: Keyspace, what: &'static str) -> Result<()> {
    fjall.delete_keyspace(ks).map_err(Error::storage(what))
}

/// Writes a keyspace's memtable to a table, waiting until it is written.
///
/// # Errors
/// [`Error::Storage`] when fjall fails.
pub(crate) fn flush_memtable(ks: &Keyspace) -> Result<()> {
    ks.rotate_memtable_and_wait()
        .map_err(Error::storage("flushing a memtable"))
}

/// Flushes a keyspace's memtable to a table and compacts it into one sorted run. fjall offers
/// both as hidden (test) API; they are the documented effect of its flush and major
/// compaction workers, run now instead of when thresholds are crossed.
///
/// # Errors
/// [`Error::Storage`] when fjall fails.
pub(crate) fn compact(ks: &Keyspace) -> Result<()> {
    flush_memtable(ks)?;
    ks.major_compact()
        .map_err(Error::storage("compacting a keyspace"))
}
