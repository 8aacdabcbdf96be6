//! The database's collection records: one per collection, keyed by its name, holding
//! `{id, spec, indexes}` as BSON (`docs/keys.md`, keyspace `collections`). Written when a
//! collection is created, changed (collMod, an index) or dropped, each time made durable.

use fjall::{Keyspace, PersistMode, Slice};

use super::keys::COLLECTIONS_KEYSPACE;
use super::keyspaces;
use crate::error::{Error, Result};

/// The keyspace of collection records, shared by the database and its collections (clones
/// share it).
#[derive(Clone)]
pub(crate) struct CollectionRecords {
    fjall: fjall::Database,
    ks: Keyspace,
}

impl CollectionRecords {
    /// Opens the records of database `fjall`, creating the keyspace when missing.
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn open(fjall: &fjall::Database) -> Result<CollectionRecords> {
        Ok(CollectionRecords {
            fjall: fjall.clone(),
            ks: keyspaces::open_collections(fjall)?,
        })
    }

    /// Every record as stored: `(collection name, BSON bytes)`, in name order. A name that is
    /// not UTF-8 is read lossily (tscoll writes only UTF-8 names).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn all(&self) -> Result<Vec<(String, Slice)>> {
        let mut out = Vec::new();
        for item in self.ks.iter() {
            let (k, v) = item
                .into_inner()
                .map_err(Error::storage("reading collections"))?;
            out.push((String::from_utf8_lossy(&k).into_owned(), v));
        }
        Ok(out)
    }

    /// The error for a record of collection `name` that cannot be read back.
    pub(crate) fn corrupt(name: &str, reason: &str) -> Error {
        Error::Corruption {
            keyspace: COLLECTIONS_KEYSPACE.to_owned(),
            key: name.to_owned(),
            reason: reason.to_owned(),
        }
    }

    /// Saves collection `name`'s record durably (fsync).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn save(&self, name: &str, record: Vec<u8>) -> Result<()> {
        self.ks
            .insert(name.as_bytes(), record)
            .map_err(Error::storage("saving a collection record"))?;
        self.fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("saving a collection record"))
    }

    /// Removes collection `name`'s record durably (fsync).
    ///
    /// # Errors
    /// [`Error::Storage`] when fjall fails.
    pub(crate) fn remove(&self, name: &str) -> Result<()> {
        self.ks
            .remove(name.as_bytes())
            .map_err(Error::storage("removing a collection record"))?;
        self.fjall
            .persist(PersistMode::SyncAll)
            .map_err(Error::storage("removing a collection"))
    }

    /// The keyspace (to flush or compact it with a collection's).
    pub(crate) fn keyspace(&self) -> &Keyspace {
        &self.ks
    }
}
