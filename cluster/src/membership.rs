//! A worker's place in its cluster, kept in its database directory (`tscoll-shard.json`):
//! which shard of how many it holds, and the shard key of each collection. The coordinator
//! sends them with the first command that creates a collection; afterwards every query,
//! write and command checks them, so that a list of workers given in another order (or of
//! another length) is refused instead of reading or writing the wrong shards.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The file in the database directory.
pub const SHARD_FILE: &str = "tscoll-shard.json";

/// A worker's shard and the shard keys of its collections.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The shard this worker holds (0-based), once assigned.
    pub shard: Option<usize>,
    /// How many shards the cluster has, once assigned.
    pub shards: Option<usize>,
    /// Each collection's shard key (a path: the meta field or inside it).
    #[serde(default)]
    pub shard_keys: BTreeMap<String, String>,
}

/// The membership of one worker, read at start and written on every change.
#[derive(Debug)]
pub(crate) struct MembershipFile {
    path: PathBuf,
    state: Mutex<Membership>,
}

impl MembershipFile {
    /// The file of the database in `dir`; an empty membership when there is none.
    pub(crate) fn open(dir: &Path) -> Result<MembershipFile, Error> {
        let path = dir.join(SHARD_FILE);
        let state = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::ShardFile {
                path: path.display().to_string(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Membership::default(),
            Err(e) => {
                return Err(Error::ShardFile {
                    path: path.display().to_string(),
                    message: e.to_string(),
                });
            }
        };
        Ok(MembershipFile {
            path,
            state: Mutex::new(state),
        })
    }

    /// The membership now.
    pub(crate) fn get(&self) -> Membership {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Checks that this worker is shard `shard` of `shards`; assigns it so when it holds none
    /// yet and `assign` is set.
    pub(crate) fn check(&self, shard: usize, shards: usize, assign: bool) -> Result<(), String> {
        let mut m = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (m.shard, m.shards) {
            (Some(s), Some(n)) if s == shard && n == shards => Ok(()),
            (Some(s), Some(n)) => Err(format!(
                "this worker holds shard {s} of {n}, but was addressed as shard {shard} of \
                 {shards}: give the workers in the order and number they were created with"
            )),
            _ if assign => {
                let mut next = m.clone();
                next.shard = Some(shard);
                next.shards = Some(shards);
                self.write(&next)?;
                *m = next;
                Ok(())
            }
            _ => Err(format!(
                "this worker holds no shard yet (addressed as shard {shard} of {shards}): \
                 create a collection through the cluster first"
            )),
        }
    }

    /// Records `key` as the shard key of `collection` (`None`: forgets it).
    pub(crate) fn set_shard_key(&self, collection: &str, key: Option<&str>) -> Result<(), String> {
        let mut m = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = m.clone();
        match key {
            Some(k) => next.shard_keys.insert(collection.to_owned(), k.to_owned()),
            None => next.shard_keys.remove(collection),
        };
        if next != *m {
            self.write(&next)?;
            *m = next;
        }
        Ok(())
    }

    /// Writes `m` to a file beside the file, syncs it and renames it over the file.
    fn write(&self, m: &Membership) -> Result<(), String> {
        let tmp = self.path.with_extension("json.tmp");
        let bytes = serde_json::to_vec_pretty(m).map_err(|e| e.to_string())?;
        let fail = |e: std::io::Error| format!("{}: {e}", self.path.display());
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).map_err(fail)?;
            f.write_all(&bytes).map_err(fail)?;
            f.sync_all().map_err(fail)?;
        }
        std::fs::rename(&tmp, &self.path).map_err(fail)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_keeps_its_shard_and_refuses_another() {
        let dir = tempfile::tempdir().unwrap();
        let m = MembershipFile::open(dir.path()).unwrap();
        assert!(m.check(1, 3, false).is_err(), "no shard yet");
        m.check(1, 3, true).unwrap();
        m.set_shard_key("cpu", Some("tags.hostname")).unwrap();
        let again = MembershipFile::open(dir.path()).unwrap();
        assert_eq!(again.get().shard, Some(1));
        assert_eq!(again.get().shard_keys["cpu"], "tags.hostname");
        again.check(1, 3, false).unwrap();
        let err = again.check(0, 3, true).unwrap_err();
        assert!(err.contains("holds shard 1 of 3"), "{err}");
        assert!(again.check(1, 4, true).is_err());
    }
}
