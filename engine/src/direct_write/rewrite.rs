//! Taking measurements out of a stored bucket (SPEC §11.1, §11.2): a delete or an update
//! unpacks a candidate bucket, picks rows, and writes the rest back under the same `_id`,
//! keeping its `control.min.<time>` and recomputing the other control min/max; a bucket left
//! empty is removed.

use bson::{Bson, DateTime, Document};
use tscoll_catalog::MinMax;
use tscoll_catalog::value::to_bson;
use tscoll_codec::Column;

use crate::collection::CollectionInner;
use crate::direct_write::IndexEntry;
use crate::error::{Error, Result};
use crate::storage::control::{Control, merged_sums};
use crate::storage::keys::hex;

/// A stored bucket unpacked: its columns and, per row, the measurement's fields (time
/// included, meta left out) and its time (ms).
pub(crate) struct UnpackedBucket {
    /// Rows in the bucket.
    pub(crate) rows: usize,
    /// `(field, column)` in the bucket's column order.
    pub(crate) columns: Vec<(String, Column)>,
    /// One document per row: every field but the meta field, in column order.
    pub(crate) docs: Vec<Document>,
    /// The time of each row (ms).
    pub(crate) times: Vec<i64>,
}

impl CollectionInner {
    /// Reads and unpacks a stored bucket (inside a direct write).
    ///
    /// # Errors
    /// [`Error::Storage`], [`Error::Codec`] or [`Error::Corruption`] when its data cannot be
    /// read.
    pub(crate) fn read_bucket_rows(
        &self,
        entry: &IndexEntry,
        control: &Control,
        time_field: &str,
    ) -> Result<UnpackedBucket> {
        let (rows, columns) = self.read_columns(&entry.id, control)?;
        let corrupt = |reason: String| Error::Corruption {
            keyspace: format!("c{}_data", self.id),
            key: hex(&entry.id),
            reason,
        };
        let mut docs: Vec<Document> = vec![Document::new(); rows];
        let mut times = vec![i64::MIN; rows];
        for (name, col) in &columns {
            for (i, v) in col.iter().enumerate().take(rows) {
                if let Some(b) = to_bson(v).map_err(corrupt)? {
                    if name == time_field
                        && let Bson::DateTime(t) = &b
                    {
                        times[i] = t.timestamp_millis();
                    }
                    docs[i].insert(name.clone(), b);
                }
            }
        }
        Ok(UnpackedBucket {
            rows,
            columns,
            docs,
            times,
        })
    }

    /// Adds to `wb` the removal of the rows `remove` marks from the bucket (at least one):
    /// the whole bucket when every row goes, else a rewrite of the rest under the same `_id`
    /// keeping `control.min.<time>` (SPEC §11.1 [master]) with the other control min/max
    /// recomputed. Returns whether the bucket went whole.
    ///
    /// # Errors
    /// [`Error::Codec`] when the remaining columns cannot be encoded; [`Error::Storage`].
    pub(crate) fn put_rows_removed(
        &self,
        wb: &mut crate::storage::StoreBatch,
        entry: &IndexEntry,
        control: &Control,
        bucket: &UnpackedBucket,
        remove: &[bool],
        time_field: &str,
    ) -> Result<bool> {
        let rows = bucket.rows;
        let removed = remove.iter().filter(|r| **r).count();
        if removed == rows {
            self.put_removal(wb, entry, Some(control))?;
            return Ok(true);
        }
        let kept = rows - removed;
        let mut new_columns = Vec::with_capacity(bucket.columns.len());
        let mut min = Document::new();
        let mut max = Document::new();
        let max_time = (0..rows)
            .filter(|i| !remove[*i])
            .map(|i| bucket.times[i])
            .max()
            .unwrap_or(i64::MIN);
        for (name, col) in &bucket.columns {
            let mut new_col = Column::with_capacity(kept);
            let mut mm: Option<MinMax> = None;
            for (i, v) in col.iter().enumerate().take(rows) {
                if remove[i] {
                    continue;
                }
                new_col.push(v);
                if name != time_field
                    && let Some(b) = bucket.docs[i].get(name)
                {
                    match &mut mm {
                        Some(m) => m.update(b),
                        None => mm = Some(MinMax::new(b)),
                    }
                }
            }
            if name == time_field {
                // SPEC §11.1 [master]: the rewritten bucket keeps its control.min time.
                let original = control
                    .min
                    .get(time_field)
                    .cloned()
                    .unwrap_or(Bson::DateTime(DateTime::from_millis(control.min_time)));
                min.insert(name.clone(), original);
                max.insert(name.clone(), DateTime::from_millis(max_time));
            } else if let Some(m) = mm {
                min.insert(name.clone(), m.min());
                max.insert(name.clone(), m.max());
            } else {
                continue; // no remaining measurement has this field
            }
            new_columns.push((name.clone(), new_col));
        }
        let scale = |v: u64| -> u64 {
            u64::try_from(u128::from(v) * kept as u128 / rows as u128).unwrap_or(v)
        };
        let new_control = Control {
            count: u32::try_from(kept).unwrap_or(u32::MAX),
            max_time,
            size_estimate: scale(control.size_estimate),
            uncompressed_bytes: scale(control.uncompressed_bytes),
            sums: Some(merged_sums(&min, None, &new_columns)),
            min,
            max,
            ..control.clone()
        };
        self.put_rewrite(wb, entry, kept, &new_columns, control, &new_control)?;
        Ok(false)
    }
}
