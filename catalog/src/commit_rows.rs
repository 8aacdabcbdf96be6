//! The rows of one commit group, column by column: what one record of the engine's
//! write-ahead log holds (`docs/architecture.md`, write path: one log record per commit group).
//!
//! A committer prepares its batches into one [`CommitRows`]
//! ([`crate::CommitRights::prepare_into`]): each batch's rows are copied once, from its
//! bucket's in-memory columns to the table's, batch after batch. Columns are matched by field
//! name; buckets of one source list their fields in one order, so a lookup is usually one
//! comparison.

use tscoll_codec::Column;

use crate::bucket::BucketRows;
use crate::names::NameIndex;

/// Rows of several batches in one table: `columns` hold `rows` rows each once
/// [`CommitRows::finish`] has run (a field a batch lacks has missing values in its rows).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommitRows {
    /// Number of rows.
    pub rows: usize,
    /// `(field, column)` in first-appearance order.
    pub columns: Vec<(String, Column)>,
    /// The column after the last one matched.
    hint: usize,
    /// The columns by name.
    index: NameIndex,
}

impl CommitRows {
    /// An empty table.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends rows `from..to` of a bucket's columns.
    pub(crate) fn append(&mut self, src: &BucketRows, from: usize, to: usize) {
        let n = to.saturating_sub(from);
        for (name, col) in &src.columns {
            if col.len() <= from {
                // The field has no value in these rows.
                continue;
            }
            let i = match self.columns.get(self.hint) {
                Some((c, _)) if c == name => self.hint,
                _ => match self.index.position(&self.columns, |(c, _)| c, name) {
                    Some(i) => i,
                    None => {
                        self.columns.push((name.clone(), Column::new()));
                        self.index.pushed(&self.columns, |(c, _)| c);
                        self.columns.len() - 1
                    }
                },
            };
            self.hint = i + 1;
            let c = &mut self.columns[i].1;
            if c.len() < self.rows {
                c.push_missing_n(self.rows - c.len());
            }
            // The rows are at the end of the bucket's columns (or just before the active
            // batch's): count back from the end.
            c.extend_from_rows_at(col, col.row_start_from_end(from), to.min(col.len()));
        }
        self.rows += n;
        self.hint = 0;
    }

    /// Pads every column to [`CommitRows::rows`] rows.
    pub fn finish(&mut self) {
        for (_, c) in &mut self.columns {
            if c.len() < self.rows {
                c.push_missing_n(self.rows - c.len());
            }
        }
    }

    /// Whether the table has a column named `name`.
    #[must_use]
    pub fn has_column(&self, name: &str) -> bool {
        self.index
            .position(&self.columns, |(c, _)| c, name)
            .is_some()
    }

    /// Empties the table.
    pub fn clear(&mut self) {
        self.rows = 0;
        self.hint = 0;
        self.columns.clear();
        self.index.clear();
    }
}
