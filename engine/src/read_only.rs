//! Opening a database read-only (`docs/durability.md`, "Opening a database"): when asked
//! ([`Access::ReadOnly`](crate::Access::ReadOnly)), or when the disk is full
//! ([`Access::ReadWriteOrReadOnly`](crate::Access::ReadWriteOrReadOnly)). Nothing is written:
//! the write-ahead logs are read but not recovered into the store, so the measurements they
//! hold beyond it are counted ([`ReadOnlyReport::unstored`]) and reads do not see them until
//! the database is opened read-write again.

use std::collections::HashMap;

use tscoll_catalog::BucketId;

use crate::collection::CollectionInner;
use crate::error::{Error, Result};
use crate::storage::wal::LogPosition;

/// Why a database is open read-only and what its reads miss ([`Database::read_only`]).
///
/// [`Database::read_only`]: crate::Database::read_only
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReadOnlyReport {
    /// Why writing was impossible: the error of the read-write open (e.g. the disk is full);
    /// `None` when the read-only open was asked for.
    pub reason: Option<String>,
    /// Measurements each collection's write-ahead log holds that its store does not, by
    /// collection name, sorted (only collections with some): acknowledged writes that a
    /// read-write open stores and that reads do not see meanwhile. Of a damaged or torn log,
    /// only the records before the damage or the tear are counted.
    pub unstored: Vec<(String, u64)>,
}

impl std::fmt::Display for ReadOnlyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.reason {
            Some(reason) => write!(f, "opened read-only, as writing is impossible ({reason})")?,
            None => f.write_str("opened read-only")?,
        }
        if self.unstored.is_empty() {
            return f.write_str(": reads see every stored measurement");
        }
        f.write_str(": not stored yet, so not seen by reads:")?;
        for (i, (name, rows)) in self.unstored.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{rows} measurement(s) of '{name}'")?;
        }
        f.write_str(
            " held in the write-ahead log; open the database for writing (e.g. any write \
             command, once the disk has room) to store them",
        )
    }
}

impl CollectionInner {
    /// Refuses a write when the database is open read-only.
    ///
    /// # Errors
    /// [`Error::ReadOnly`] then.
    pub(crate) fn writable(&self) -> Result<()> {
        if self.read_only {
            Err(Error::ReadOnly)
        } else {
            Ok(())
        }
    }

    /// Measurements the write-ahead log holds beyond the store, counted as recovery would
    /// store them (`recovery.rs`: rows at or past the stored count of their bucket, rows
    /// logged before a bucket's retirement marker are stale), without writing anything.
    ///
    /// # Errors
    /// As reading the log and the control records in recovery.
    pub(crate) fn unstored_logged_rows(&self) -> Result<u64> {
        let mut retired: HashMap<BucketId, Option<LogPosition>> = HashMap::new();
        let mut parts: HashMap<BucketId, Vec<(u64, u64)>> = HashMap::new();
        for (position, record) in self.wal.read_all()?.records {
            for e in record.entries {
                let marker = match retired.get(&e.id) {
                    Some(m) => *m,
                    None => *retired.entry(e.id).or_insert(self.store.retired(&e.id)?),
                };
                if marker.is_none_or(|m| position >= m) {
                    parts
                        .entry(e.id)
                        .or_default()
                        .push((u64::from(e.first_row), u64::from(e.rows)));
                }
            }
        }
        let mut total = 0;
        for (id, mut ranges) in parts {
            let mut next = self.control(&id)?.map_or(0, |c| u64::from(c.count));
            ranges.sort_unstable();
            for (first, rows) in ranges {
                let end = first + rows;
                if end > next {
                    total += end - next.max(first);
                    next = end;
                }
            }
        }
        Ok(total)
    }
}
