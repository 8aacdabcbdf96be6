//! The rollup keyspace of a collection that declares rollups (`docs/keys.md`, "Rollups"):
//! per resolution, bucket and window, the window's [`WindowRollup`] in its stored form.
//! Keys start with the resolution, then the bucket id, so that one bucket's rows are one
//! prefix per resolution (replaced whole when the bucket changes) and a query's buckets,
//! taken in id order, are one range.

use fjall::{OwnedWriteBatch, Slice};
use tscoll_catalog::{BucketId, WindowRollup};

use super::keys::{parse_rollup_key, rollup_key, rollup_prefix};
use super::{BucketStore, ingest};
use crate::error::{Error, Result};

/// One stored rollup row, in a scan.
pub(crate) struct RollupItem {
    /// The bucket.
    pub(crate) id: BucketId,
    /// Window start (ms).
    pub(crate) start: i64,
    /// The window's stored form ([`WindowRollup::encode`]).
    pub(crate) value: Slice,
}

impl BucketStore {
    /// Adds to `wb` the removal of every rollup row of a bucket (at each of `resolutions`).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn remove_rollups(
        &self,
        wb: &mut OwnedWriteBatch,
        id: &BucketId,
        resolutions: &[i64],
    ) -> Result<()> {
        let Some(ks) = &self.rollups else {
            return Ok(());
        };
        for &res in resolutions {
            for item in ks.prefix(rollup_prefix(res, id)) {
                let k = item.key().map_err(Error::storage("listing rollup rows"))?;
                wb.remove(ks, k);
            }
        }
        Ok(())
    }

    /// Adds to `wb` a bucket's windows at resolution `res` in place of the ones stored (a
    /// stored window not among them is removed).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn replace_rollups(
        &self,
        wb: &mut OwnedWriteBatch,
        id: &BucketId,
        res: i64,
        windows: &[WindowRollup],
    ) -> Result<()> {
        let Some(ks) = &self.rollups else {
            return Ok(());
        };
        for item in ks.prefix(rollup_prefix(res, id)) {
            let k = item.key().map_err(Error::storage("listing rollup rows"))?;
            let kept = parse_rollup_key(&k)
                .is_some_and(|(_, _, start)| windows.iter().any(|w| w.start == start));
            if !kept {
                wb.remove(ks, k);
            }
        }
        for w in windows {
            wb.insert(ks, rollup_key(res, id, w.start), w.encode());
        }
        Ok(())
    }

    /// Writes rollup rows `(resolution, bucket, window)` straight into one new table
    /// (ingestion, as the blobs of the same buckets are).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn ingest_rollups(
        &self,
        rows: impl Iterator<Item = (i64, BucketId, WindowRollup)>,
    ) -> Result<()> {
        let Some(ks) = &self.rollups else {
            return Ok(());
        };
        let items = rows
            .map(|(res, id, w)| (rollup_key(res, &id, w.start).to_vec(), w.encode()))
            .collect();
        ingest(ks, items, "ingesting rollup rows")
    }

    /// The rollup rows at resolution `res` of the buckets with ids in `[first, last]`, in id
    /// then window order.
    pub(crate) fn rollups_between(
        &self,
        res: i64,
        first: &BucketId,
        last: &BucketId,
    ) -> impl Iterator<Item = Result<RollupItem>> + use<> {
        let start = rollup_key(res, first, i64::MIN);
        let end = rollup_key(res, last, i64::MAX);
        self.rollups
            .clone()
            .into_iter()
            .flat_map(move |ks| ks.range(start..=end))
            .filter_map(|item| match item.into_inner() {
                Ok((k, value)) => {
                    parse_rollup_key(&k).map(|(_, id, start)| Ok(RollupItem { id, start, value }))
                }
                Err(e) => Some(Err(Error::storage("reading rollup rows")(e))),
            })
    }

    /// The rollup rows at resolution `res` of one bucket, in window order.
    pub(crate) fn rollups_of(
        &self,
        res: i64,
        id: &BucketId,
    ) -> impl Iterator<Item = Result<RollupItem>> + use<> {
        self.rollups_between(res, id, id)
    }

    /// The bytes the keys and values of every rollup row take (0 without rollups).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn rollup_bytes(&self) -> Result<u64> {
        match &self.rollups {
            Some(ks) => super::raw_bytes(ks, "reading rollup rows"),
            None => Ok(0),
        }
    }
}

impl BucketStore {
    /// The error of a rollup row that cannot be read.
    pub(crate) fn corrupt_rollup(
        &self,
        res: i64,
        id: &BucketId,
        start: i64,
        reason: String,
    ) -> Error {
        Error::Corruption {
            keyspace: super::keys::rollup_keyspace(self.coll_id),
            key: super::keys::hex(&rollup_key(res, id, start)),
            reason,
        }
    }
}
