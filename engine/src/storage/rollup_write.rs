//! Keeping a collection's rollups (`docs/semantics.md`, "Rollups"): every write of a
//! bucket's rows to the store — storing it, appending a part, rewriting it after a delete or
//! an update, recovering it from the log — adds to the same fjall batch the bucket's rollup
//! at each resolution, computed from all its rows (`tscoll_catalog::bucket_rollup`), in
//! place of the one stored before; removing a bucket (a delete, TTL) removes them. A bucket's
//! rollups are therefore always the rollups of what the store holds of it, with the same
//! durability. Moving a bucket to another series (a meta update) changes no rollup: they
//! name the bucket, not the series. Rows still only in memory are not rolled up; queries add them up
//! themselves (`query/rollup.rs`).

use crate::storage::StoreBatch;
use tscoll_catalog::{BucketId, BucketRollup, bucket_rollup};
use tscoll_codec::Column;

use crate::collection::CollectionInner;
use crate::error::Result;

impl CollectionInner {
    /// Whether the collection keeps rollups.
    pub(crate) fn has_rollups(&self) -> bool {
        !self.spec().rollups.is_empty()
    }

    /// The rollup at every resolution of rows `0..rows` of `columns`.
    pub(crate) fn rollups_of_rows(
        &self,
        rows: usize,
        columns: &[(String, Column)],
    ) -> Vec<(i64, BucketRollup)> {
        let spec = self.spec();
        spec.rollups
            .iter()
            .map(|&res| (res, bucket_rollup(rows, columns, &spec.time_field, res)))
            .collect()
    }

    /// Adds to `wb` the rollups of a bucket whose every row is `rows` rows of `columns`,
    /// replacing those stored before.
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when fjall fails.
    pub(crate) fn put_bucket_rollups(
        &self,
        wb: &mut StoreBatch,
        id: &BucketId,
        rows: usize,
        columns: &[(String, Column)],
    ) -> Result<()> {
        // Nothing to do without rollups: `rollups_of_rows` is then empty.
        for (res, rollup) in self.rollups_of_rows(rows, columns) {
            self.store.put_rollup(wb, id, res, &rollup)?;
        }
        Ok(())
    }

    /// Adds to `wb` the rollups of a bucket whose rows are its stored segments but
    /// segment `new_segment`, followed by `rows` rows of `columns` (a part being written as
    /// segment `new_segment`), replacing those stored before.
    ///
    /// # Errors
    /// [`crate::Error::Storage`], [`crate::Error::Codec`] when a stored segment cannot be
    /// read.
    pub(crate) fn put_appended_rollups(
        &self,
        wb: &mut StoreBatch,
        id: &BucketId,
        new_segment: u32,
        rows: usize,
        columns: &[(String, Column)],
    ) -> Result<()> {
        if !self.has_rollups() {
            return Ok(());
        }
        let stored = self.read_segments(id, &mut |_| true)?;
        let mut parts: Vec<(usize, &[(String, Column)])> = stored
            .iter()
            .filter(|(seg, _)| *seg != new_segment)
            .map(|(_, b)| (b.row_count, b.columns.as_slice()))
            .collect();
        parts.push((rows, columns));
        let (rows, columns) = concat_columns(&parts);
        self.put_bucket_rollups(wb, id, rows, &columns)
    }

    /// Adds to `wb` the removal of a bucket's rollups.
    pub(crate) fn remove_bucket_rollups(&self, wb: &mut StoreBatch, id: &BucketId) {
        let resolutions = self.spec().rollups;
        self.store.remove_rollups(wb, id, &resolutions);
    }
}

/// Row sets one after the other as one: `(rows, columns)`, fields in order of first
/// appearance, a field missing from a set filled with skips.
fn concat_columns(parts: &[(usize, &[(String, Column)])]) -> (usize, Vec<(String, Column)>) {
    let rows = parts.iter().map(|(n, _)| n).sum();
    let mut names: Vec<&str> = Vec::new();
    for (_, columns) in parts {
        for (name, _) in *columns {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    let out = names
        .into_iter()
        .map(|name| {
            let mut col = Column::with_capacity(rows);
            for (n, columns) in parts {
                match columns.iter().find(|(c, _)| c == name) {
                    Some((_, c)) => {
                        let have = (*n).min(c.len());
                        col.extend_from_rows(c, 0, have);
                        col.push_missing_n(n - have);
                    }
                    None => col.push_missing_n(*n),
                }
            }
            (name.to_owned(), col)
        })
        .collect();
    (rows, out)
}
