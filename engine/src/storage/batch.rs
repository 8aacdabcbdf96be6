//! One atomic write to the store ([`StoreBatch`]): every change of stored buckets — a bucket's
//! blob, control record, index entry, rollups and secondary index entries, a removal, a
//! retirement marker — is added to one and lands when it is committed, all or nothing (fjall's
//! write batch, through its journal). Only this module starts one.

use fjall::{Keyspace, OwnedWriteBatch, UserKey, UserValue};

use crate::error::{Error, Result};

/// One atomic write to a collection's keyspaces: made by [`super::BucketStore::batch`], filled
/// by the store's `put_*`/`remove_*` methods, written by [`StoreBatch::commit`]. Dropped
/// without a commit, it writes nothing.
pub(crate) struct StoreBatch {
    wb: OwnedWriteBatch,
}

impl StoreBatch {
    /// A batch of `fjall`'s.
    pub(super) fn new(fjall: &fjall::Database) -> StoreBatch {
        StoreBatch { wb: fjall.batch() }
    }

    /// Adds the write of `value` under `key` in `keyspace`.
    pub(crate) fn insert(
        &mut self,
        keyspace: &Keyspace,
        key: impl Into<UserKey>,
        value: impl Into<UserValue>,
    ) {
        self.wb.insert(keyspace, key, value);
    }

    /// Adds the removal of `key` from `keyspace`.
    pub(crate) fn remove(&mut self, keyspace: &Keyspace, key: impl Into<UserKey>) {
        self.wb.remove(keyspace, key);
    }

    /// Writes every item at once (`context` names the change in an error).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails; nothing of the batch is written then.
    pub(crate) fn commit(self, context: &'static str) -> Result<()> {
        self.wb.commit().map_err(Error::storage(context))
    }
}
