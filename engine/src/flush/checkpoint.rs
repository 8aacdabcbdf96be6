//! Checkpoints of the write-ahead log (`docs/durability.md`, "Checkpoints"): the buckets that
//! left memory are stored, fjall persists, and a new log file starts with one record of the rows
//! open buckets still hold; older files are removed. `store_all` (close, `Collection::flush`)
//! stores every row and empties the log.

use fjall::PersistMode;

use tscoll_catalog::CommitRows;

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::wal::{LogEntry, LogRecord, RecordKind, RowsLayout};

/// Catalog memory (bytes) of the buckets [`CollectionInner::store_all`] takes out of memory
/// and stores at a time: 256 MiB. At 200 000 open buckets (817 MB) closing them all at once
/// peaked at 2.1 GiB RSS; groups of 256 MiB peak at 1.35 GiB with a write amplification of
/// 2.0, groups of 64 MiB at 1.05 GiB but 4.9 (each group's blobs become small tables that
/// compaction rewrites).
const CLOSE_GROUP_BYTES: u64 = 256 << 20;

impl CollectionInner {
    /// Takes a checkpoint when the log has grown past `checkpoint_bytes` since the last one
    /// or the last one is older than `checkpoint_interval` ([`crate::LogOptions`]).
    ///
    /// # Errors
    /// As [`CollectionInner::checkpoint_log`].
    pub(crate) fn checkpoint_if_due(&self) -> Result<()> {
        let Some((logged, age)) = self.wal.since_checkpoint() else {
            return Ok(());
        };
        let options = self.log_options;
        if logged >= options.checkpoint_bytes || (logged > 0 && age >= options.checkpoint_interval)
        {
            self.checkpoint_log()?;
        }
        Ok(())
    }

    /// A checkpoint of the write-ahead log: with no commit in flight, makes every stored
    /// bucket durable, starts a new log file holding the rows open buckets hold (one record,
    /// synced) and removes the older files. Recovery then reads that record and what follows.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall cannot persist; [`Error::Io`] when the log cannot be
    /// written.
    pub(crate) fn checkpoint_log(&self) -> Result<()> {
        let _gate = self
            .commit_gate
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.store_leaving()?;
        self.merge_waiting(super::MERGE_WAITING)?;
        // The open buckets' unstored rows, written straight from their columns in the plain
        // format, an entry per bucket.
        let mut rows = CommitRows::new();
        let entries: Vec<LogEntry> = self
            .catalog
            .unstored_into(&mut rows)
            .into_iter()
            .map(|b| LogEntry {
                id: b.id,
                key: Some(b.key.bytes.clone()),
                sorted: b.sorted,
                min_time: b.min_time,
                first_row: b.first_row,
                rows: b.rows,
                uncompressed_bytes: b.uncompressed_bytes,
                size_estimate: b.size_estimate,
            })
            .collect();
        let rows = rows.finish();
        self.fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("persisting before a checkpoint"))?;
        let record = (!entries.is_empty()).then(|| {
            LogRecord {
                kind: RecordKind::Checkpoint,
                entries,
                rows,
                layout: RowsLayout::Plain,
            }
            .encode()
        });
        self.wal.restart(record.as_deref())?;
        self.clear_retired()
    }

    /// Stores every row the collection holds in memory and empties the log: every idle bucket
    /// leaves memory (stored whole), fjall persists, the log files are removed.
    ///
    /// # Errors
    /// As [`CollectionInner::checkpoint_log`].
    pub(crate) fn store_all(&self) -> Result<()> {
        let _gate = self
            .commit_gate
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A group of buckets at a time: each group's parts (rows, control documents) are
        // stored before the next is taken, so closing many series does not hold a copy of
        // the whole catalog at once.
        while !self.catalog.close_idle_upto(CLOSE_GROUP_BYTES).is_empty() {
            self.store_leaving()?;
        }
        self.store_leaving()?;
        self.merge_waiting(0)?;
        self.fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("persisting"))?;
        if self.catalog.unstored().is_empty() {
            self.wal.restart(None)?;
            self.clear_retired()?;
            self.fjall
                .persist(PersistMode::SyncAll)
                .map_err(Error::storage("persisting"))
        } else {
            Ok(())
        }
    }
}
