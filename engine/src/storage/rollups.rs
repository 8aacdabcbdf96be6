//! The rollup keyspace of a collection that declares rollups (`docs/keys.md`, "Rollups"):
//! per resolution and bucket, the bucket's [`BucketRollup`] in its stored form, and the
//! names rows its field names are kept in. Keys start with the resolution, then the bucket
//! id, so that a query's buckets, taken in id order, are one range.
//!
//! Field names: a bucket rollup names the list of its fields by the hash of the list's
//! stored form, kept once in a names row (`0 ‖ hash`). Every write of a rollup writes its
//! names row again in the same batch or table (the same key and value), so no rollup is ever
//! durable without its names. Names rows are never removed. A list whose hash is taken by
//! another list (a collision, seen through the store's table of lists, filled from the names
//! rows) is written inline instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use fjall::Slice;
use tscoll_catalog::{BucketId, BucketRollup, decode_names, encode_names, names_hash};

use super::keys::{parse_rollup_key, rollup_key, rollup_names_key};
use super::{BucketStore, StoreBatch, ingest};
use crate::error::{Error, Result};

/// One stored bucket rollup, in a scan.
pub(crate) struct RollupItem {
    /// The bucket.
    pub(crate) id: BucketId,
    /// The stored form ([`BucketRollup::encode`]).
    pub(crate) value: Slice,
}

/// The bit of a rollup's first byte set when its field names are in a names row
/// (`docs/format.md`).
#[cfg(test)]
const NAMES_HASHED_BIT: u8 = 0x80;

/// The field-name lists of a rollup keyspace seen so far, by hash.
pub(crate) type NamesTable = Arc<Mutex<HashMap<u32, Arc<[String]>>>>;

impl BucketStore {
    /// Adds to `wb` the removal of a bucket's rollups (at each of `resolutions`).
    pub(crate) fn remove_rollups(&self, wb: &mut StoreBatch, id: &BucketId, resolutions: &[i64]) {
        if let Some(ks) = &self.rollups {
            for &res in resolutions {
                wb.remove(ks, rollup_key(res, id));
            }
        }
    }

    /// Adds to `wb` a bucket's rollup at resolution `res` in place of the one stored (its
    /// removal when the rollup has no window).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; [`Error::Corruption`] when a names row does not
    /// decode.
    pub(crate) fn put_rollup(
        &self,
        wb: &mut StoreBatch,
        id: &BucketId,
        res: i64,
        rollup: &BucketRollup,
    ) -> Result<()> {
        let Some(ks) = &self.rollups else {
            return Ok(());
        };
        if rollup.windows.is_empty() {
            wb.remove(ks, rollup_key(res, id));
            return Ok(());
        }
        let (value, names) = self.encode_rollup(res, rollup)?;
        if let Some((k, v)) = names {
            wb.insert(ks, k, v);
        }
        wb.insert(ks, rollup_key(res, id), value);
        Ok(())
    }

    /// The stored form of a rollup, and the names row it needs (key, value).
    #[expect(
        clippy::type_complexity,
        reason = "a value and an optional key-value pair"
    )]
    fn encode_rollup(
        &self,
        res: i64,
        rollup: &BucketRollup,
    ) -> Result<(Vec<u8>, Option<([u8; 8], Vec<u8>)>)> {
        let names = encode_names(&rollup.names);
        let hash = names_hash(&names);
        if self.claim_names(hash, &rollup.names)? {
            Ok((
                rollup.encode(res, Some(hash)),
                Some((rollup_names_key(hash), names)),
            ))
        } else {
            Ok((rollup.encode(res, None), None))
        }
    }

    /// Whether `names` may be kept under `hash`: the hash is free or already theirs (it is
    /// theirs from then on).
    fn claim_names(&self, hash: u32, names: &[String]) -> Result<bool> {
        let mut table = self
            .rollup_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(known) = table.get(&hash) {
            return Ok(**known == *names);
        }
        let kept = match self.read_names_row(hash)? {
            Some(stored) => {
                let same = *stored == *names;
                table.insert(hash, stored);
                same
            }
            None => {
                table.insert(hash, names.into());
                true
            }
        };
        Ok(kept)
    }

    /// The names row of `hash` as stored.
    fn read_names_row(&self, hash: u32) -> Result<Option<Arc<[String]>>> {
        let Some(ks) = &self.rollups else {
            return Ok(None);
        };
        let key = rollup_names_key(hash);
        let Some(v) = ks
            .get(key)
            .map_err(Error::storage("reading a rollup names row"))?
        else {
            return Ok(None);
        };
        decode_names(&v)
            .map(|n| Some(n.into()))
            .map_err(|reason| Error::Corruption {
                keyspace: super::keys::rollup_keyspace(self.coll_id),
                key: super::keys::hex(&key),
                reason,
            })
    }

    /// The field names a stored rollup keeps under `hash`.
    ///
    /// # Errors
    /// [`Error::Corruption`] when no names row has the hash or it does not decode;
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn rollup_names(&self, hash: u32) -> Result<Arc<[String]>> {
        if let Some(known) = self
            .rollup_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&hash)
        {
            return Ok(known.clone());
        }
        let names = self
            .read_names_row(hash)?
            .ok_or_else(|| Error::Corruption {
                keyspace: super::keys::rollup_keyspace(self.coll_id),
                key: super::keys::hex(&rollup_names_key(hash)),
                reason: "a rollup names a missing names row".to_owned(),
            })?;
        self.rollup_names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(hash, names.clone());
        Ok(names)
    }

    /// Writes rollups `(resolution, bucket, rollup)` straight into one new table (ingestion,
    /// as the blobs of the same buckets are), with the names rows they need.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn ingest_rollups(
        &self,
        rows: impl Iterator<Item = (i64, BucketId, BucketRollup)>,
    ) -> Result<()> {
        let Some(ks) = &self.rollups else {
            return Ok(());
        };
        let mut items = Vec::new();
        for (res, id, rollup) in rows {
            if rollup.windows.is_empty() {
                continue;
            }
            let (value, names) = self.encode_rollup(res, &rollup)?;
            if let Some((k, v)) = names {
                items.push((k.to_vec(), v));
            }
            items.push((rollup_key(res, &id).to_vec(), value));
        }
        ingest(ks, items, "ingesting rollups")
    }

    /// The rollups at resolution `res` of the buckets with ids in `[first, last]`, in id
    /// order.
    pub(crate) fn rollups_between(
        &self,
        res: i64,
        first: &BucketId,
        last: &BucketId,
    ) -> impl Iterator<Item = Result<RollupItem>> + use<> {
        let start = rollup_key(res, first);
        let end = rollup_key(res, last);
        self.rollups
            .clone()
            .into_iter()
            .flat_map(move |ks| ks.range(start..=end))
            .filter_map(|item| match item.into_inner() {
                Ok((k, value)) => parse_rollup_key(&k).map(|(_, id)| Ok(RollupItem { id, value })),
                Err(e) => Some(Err(Error::storage("reading rollups")(e))),
            })
    }

    /// The stored rollup at resolution `res` of one bucket.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn rollup_of(&self, res: i64, id: &BucketId) -> Result<Option<Slice>> {
        match &self.rollups {
            Some(ks) => ks
                .get(rollup_key(res, id))
                .map_err(Error::storage("reading a rollup")),
            None => Ok(None),
        }
    }

    /// The bytes the keys and values of the rollup keyspace take (0 without rollups).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn rollup_bytes(&self) -> Result<u64> {
        match &self.rollups {
            Some(ks) => super::raw_bytes(ks, "reading rollups"),
            None => Ok(0),
        }
    }

    /// The error of a rollup that cannot be read.
    pub(crate) fn corrupt_rollup(&self, res: i64, id: &BucketId, reason: String) -> Error {
        Error::Corruption {
            keyspace: super::keys::rollup_keyspace(self.coll_id),
            key: super::keys::hex(&rollup_key(res, id)),
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use tscoll_catalog::{BucketRollup, bucket_rollup};
    use tscoll_codec::{Column, ValueRef, tag};

    use super::*;

    fn rollup(field: &str, t: i64, v: i64) -> BucketRollup {
        let mut time = Column::new();
        time.push(ValueRef::Int(tag::DATETIME, t));
        let mut value = Column::new();
        value.push(ValueRef::Int(tag::INT32, v));
        let columns = vec![("t".to_owned(), time), (field.to_owned(), value)];
        bucket_rollup(1, &columns, "t", 1000)
    }

    fn stored(store: &BucketStore, id: &BucketId) -> BucketRollup {
        let value = store.rollup_of(1000, id).unwrap().expect("stored");
        BucketRollup::decode(1000, &value, |h, _| {
            store
                .rollup_names(h)
                .map(|n| n.to_vec())
                .map_err(|e| e.to_string())
        })
        .unwrap()
    }

    #[test]
    fn names_are_kept_once_and_a_taken_hash_falls_back_to_inline_names() {
        let dir = tempfile::tempdir().unwrap();
        let fjall = fjall::Database::builder(dir.path()).open().unwrap();
        let store = BucketStore::open(&fjall, 1, true).unwrap();
        let a = rollup("a", 1500, 7);
        let b = rollup("b", 2500, 9);
        // The hash of b's names is taken by another list.
        let b_hash = names_hash(&encode_names(&b.names));
        store
            .rollup_names
            .lock()
            .unwrap()
            .insert(b_hash, vec!["not b".to_owned()].into());
        let mut wb = store.batch();
        store.put_rollup(&mut wb, &[1; 12], 1000, &a).unwrap();
        store.put_rollup(&mut wb, &[2; 12], 1000, &b).unwrap();
        wb.commit("a test write").unwrap();
        let value = store.rollup_of(1000, &[2; 12]).unwrap().unwrap();
        assert_eq!(value[0] & NAMES_HASHED_BIT, 0, "b's names are inline");
        let value = store.rollup_of(1000, &[1; 12]).unwrap().unwrap();
        assert_ne!(
            value[0] & NAMES_HASHED_BIT,
            0,
            "a's names are in a names row"
        );
        assert_eq!(stored(&store, &[1; 12]), a);
        assert_eq!(stored(&store, &[2; 12]), b);
        // A store opened afresh reads a's names from their row.
        let again = BucketStore::open(&fjall, 1, true).unwrap();
        assert_eq!(stored(&again, &[1; 12]), a);
        // Removing a's rollup keeps the names row other rollups may name.
        let mut wb = again.batch();
        again.remove_rollups(&mut wb, &[1; 12], &[1000]);
        wb.commit("a test write").unwrap();
        assert!(again.rollup_of(1000, &[1; 12]).unwrap().is_none());
        assert!(
            again
                .read_names_row(names_hash(&encode_names(&a.names)))
                .unwrap()
                .is_some()
        );
        let ids: Vec<BucketId> = again
            .rollups_between(1000, &[0; 12], &[9; 12])
            .map(|r| r.unwrap().id)
            .collect();
        assert_eq!(ids, [[2; 12]]);
    }
}
