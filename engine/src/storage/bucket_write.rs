//! The one door through which a bucket's rows reach the store ([`CollectionInner::put_bucket`]):
//! storing a bucket that leaves memory or a part of one, a whole bucket an update placed,
//! rewriting a bucket after a delete or an update, and storing rows recovered from the log all
//! describe their write as a [`BucketWrite`], and this adds its records to one [`StoreBatch`]:
//! the blob as a segment (replacing the stored segments or after them), the control record,
//! the rollups, the meta+time index entry of a bucket new to the store and the secondary
//! index entries. Removing and moving buckets (`direct_write/`) write no rows and have their
//! own steps.

use tscoll_catalog::{BucketId, BucketKey};
use tscoll_codec::Column;

use super::StoreBatch;
use super::control::Control;
use crate::collection::CollectionInner;
use crate::error::Result;

/// Where a write's rows go among the bucket's stored segments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The rows are the whole bucket and the store holds no segment of it.
    New,
    /// The rows are the whole bucket and replace every stored segment.
    Replace,
    /// The rows follow the stored segments (a part, or rows recovered from the log).
    Append,
}

/// The records one write of a bucket's rows changes, for [`CollectionInner::put_bucket`].
pub(crate) struct BucketWrite<'a> {
    /// Bucket `_id`.
    pub(crate) id: &'a BucketId,
    /// The series.
    pub(crate) key: &'a BucketKey,
    /// Where the rows go.
    pub(crate) placement: Placement,
    /// The rows written: `rows` rows of `columns` (in the bucket's field order).
    pub(crate) rows: usize,
    /// The rows' columns.
    pub(crate) columns: &'a [(String, Column)],
    /// The number the rows' segment is stored under.
    pub(crate) segment_no: u32,
    /// The rows' blob (`tscoll_codec::encode_bucket`); `None` when it is in the store already
    /// (ingested ahead of the other records).
    pub(crate) blob: Option<Vec<u8>>,
    /// The control record after the write.
    pub(crate) control: &'a Control,
    /// The control record before it (`None`: the bucket is new to the store, and its index
    /// entry is written); only read for the secondary indexes.
    pub(crate) previous: Option<&'a Control>,
    /// Whether the store holds no record of the bucket yet: its index entry is written.
    pub(crate) new_to_store: bool,
}

impl CollectionInner {
    /// Adds to `wb` every record `write` changes: the stored segments it replaces removed, its
    /// blob, the control record, the rollups over what the store then holds of the bucket, the
    /// index entry of a bucket new to the store, and the secondary index entries. Nothing when
    /// it has no rows.
    ///
    /// # Errors
    /// [`crate::Error::Storage`] when fjall fails; [`crate::Error::Codec`] when a stored
    /// segment the rollups need cannot be read; [`crate::Error::Corruption`] for undecodable
    /// series records or meta bytes.
    pub(crate) fn put_bucket(&self, wb: &mut StoreBatch, write: BucketWrite<'_>) -> Result<()> {
        let BucketWrite {
            id,
            key,
            placement,
            rows,
            columns,
            segment_no,
            blob,
            control,
            previous,
            new_to_store,
        } = write;
        if rows == 0 {
            return Ok(());
        }
        if placement == Placement::Replace {
            for seg in self.store.segment_numbers(id)? {
                self.store.remove_segment(wb, id, seg);
            }
        }
        if let Some(blob) = blob {
            self.store.put_segment(wb, id, segment_no, blob);
        }
        self.store.put_control(wb, id, control.encode());
        match placement {
            Placement::New | Placement::Replace => {
                self.put_bucket_rollups(wb, id, rows, columns)?;
            }
            Placement::Append => {
                self.put_appended_rollups(wb, id, segment_no, rows, columns)?;
            }
        }
        if new_to_store {
            self.store.put_index_entry(wb, key, control.min_time, id)?;
        }
        if self.has_secondary_indexes() {
            self.index_bucket_change(wb, id, key, previous, Some(control))?;
        }
        Ok(())
    }
}
