//! The series keys of meta values seen by earlier insert calls of a collection, so that an
//! insert finds the series of a meta value met before from a hash of the value as its input
//! holds it, without normalizing it (SPEC ); the columnar insert (`arrow_insert.rs`)
//! also builds no BSON value for it. Only a value seen for the first time is normalized.
//! `insert_many` (`series.rs`, a hash of the BSON value) and the columnar insert (a hash of
//! the Arrow row) hash differently, so a value met by both is held twice; a lookup always
//! confirms the value itself, never the hash alone.
//!
//! A meta value's key never changes, so entries never go stale; the cache is emptied when it
//! holds [`MAX_ENTRIES`] values, which bounds its memory.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bson::Bson;
use tscoll_catalog::BucketKey;

use crate::series::BuildFx;

/// Values held before the cache is emptied.
pub(crate) const MAX_ENTRIES: usize = 1 << 16;

/// Locks a cache (a panic while it was held leaves it consistent: every entry is whole).
pub(crate) fn lock(cache: &Mutex<MetaCache>) -> MutexGuard<'_, MetaCache> {
    cache.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Raw meta values (`None`: no meta value) and their series keys, by a hash of the raw value
/// the caller computes (equal values must hash alike).
#[derive(Debug, Default)]
pub(crate) struct MetaCache {
    by_hash: HashMap<u64, Vec<(Option<Bson>, BucketKey)>, BuildFx>,
    entries: usize,
}

impl MetaCache {
    /// The key of the value hashed as `hash` that `matches` accepts.
    pub(crate) fn get(
        &self,
        hash: u64,
        mut matches: impl FnMut(Option<&Bson>) -> bool,
    ) -> Option<&BucketKey> {
        self.by_hash
            .get(&hash)?
            .iter()
            .find(|(v, _)| matches(v.as_ref()))
            .map(|(_, k)| k)
    }

    /// Remembers the key of `value`, hashed as `hash`.
    pub(crate) fn insert(&mut self, hash: u64, value: Option<Bson>, key: BucketKey) {
        if self.entries >= MAX_ENTRIES {
            self.by_hash.clear();
            self.entries = 0;
        }
        self.by_hash.entry(hash).or_default().push((value, key));
        self.entries += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_matches_and_empties_when_full() {
        let mut c = MetaCache::default();
        let a = BucketKey::from_bytes(vec![1]);
        let b = BucketKey::from_bytes(vec![2]);
        c.insert(7, Some(Bson::Int32(1)), a.clone());
        c.insert(7, Some(Bson::Int32(2)), b.clone());
        assert_eq!(c.get(7, |v| v == Some(&Bson::Int32(2))), Some(&b));
        assert_eq!(c.get(7, |v| v == Some(&Bson::Int32(1))), Some(&a));
        assert_eq!(c.get(7, |v| v.is_none()), None);
        assert_eq!(c.get(8, |_| true), None);
        for i in 0..MAX_ENTRIES as u64 {
            c.insert(100 + i, None, a.clone());
        }
        // Full: the next value empties it first.
        assert_eq!(c.get(7, |_| true), None);
        assert_eq!(c.get(100 + MAX_ENTRIES as u64 - 1, |_| true), Some(&a));
    }
}
