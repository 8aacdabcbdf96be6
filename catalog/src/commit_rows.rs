//! The rows of one commit group: what one record of the engine's write-ahead log holds
//! (`docs/architecture.md`, write path: one log record per commit group), in the codec's plain
//! row format ([`tscoll_codec::PlainWriter`]): the lanes with one fixed light transform, no
//! encoding chosen. A bucket is encoded only when it is stored.
//!
//! A committer prepares its batches into one [`CommitRows`]
//! ([`crate::CommitRights::prepare_into`]): each batch's rows are written once, from its
//! bucket's in-memory columns, as one entry, batch after batch.

use tscoll_codec::PlainWriter;

use crate::bucket::BucketRows;

/// Rows of several batches, one entry per batch, in the order they were appended.
#[derive(Debug, Default)]
pub struct CommitRows {
    plain: PlainWriter,
}

impl CommitRows {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends rows `from..to` of a bucket's columns as one entry (fields without a value in
    /// them left out).
    pub(crate) fn append(&mut self, src: &BucketRows, from: usize, to: usize) {
        self.plain.begin_entry(to.saturating_sub(from));
        for (name, col) in &src.columns {
            if col.len() <= from {
                // The field has no value in these rows.
                continue;
            }
            // The rows are at the end of the bucket's columns (or just before the active
            // batch's): count back from the end.
            self.plain
                .column_lanes(name, col, &col.row_lanes_from_end(from, to));
        }
    }

    /// Rows of every entry.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.plain.rows()
    }

    /// Uncompressed bytes of the rows so far.
    #[must_use]
    pub fn bytes(&self) -> usize {
        self.plain.len()
    }

    /// Entries (batches) appended.
    #[must_use]
    pub fn entries(&self) -> usize {
        self.plain.entries()
    }

    /// The rows in the plain format ([`tscoll_codec::decode_plain`] reads them back); the
    /// table is left empty.
    #[must_use]
    pub fn finish(&mut self) -> Vec<u8> {
        self.plain.finish()
    }

    /// Empties the table.
    pub fn clear(&mut self) {
        self.plain.clear();
    }
}
