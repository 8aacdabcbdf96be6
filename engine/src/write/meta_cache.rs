//! The series keys of meta values seen by earlier insert calls of a collection, so that an
//! insert finds the series of a meta value met before from a hash of the value as its input
//! holds it, without normalizing it (SPEC ); the columnar insert (`write/arrow.rs`)
//! also builds no BSON value for it. Only a value seen for the first time is normalized.
//! `insert_many` (`write/series.rs`, a hash of the BSON value) and the columnar insert (a hash of
//! the Arrow row) hash differently, so a value met by both is held twice; a lookup always
//! confirms the value itself, never the hash alone.
//!
//! A meta value's key never changes, so entries never go stale; the cache is emptied when it
//! holds [`MAX_ENTRIES`] values or about [`MAX_BYTES`] of them, which bounds its memory (a
//! meta value of ten string tags takes about 2 KB as a `Bson` document: at many series the
//! count alone let the cache grow past 100 MB).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use bson::Bson;
use tscoll_catalog::BucketKey;

use crate::write::series::BuildFx;

/// Values held before the cache is emptied.
pub(crate) const MAX_ENTRIES: usize = 1 << 16;

/// Estimated bytes held before the cache is emptied: each entry counts its series key, its
/// value's BSON size × [`HEAP_PER_BSON_BYTE`] (a decoded document's strings, map and enum
/// take several times its BSON bytes) and a fixed overhead.
pub(crate) const MAX_BYTES: usize = 32 << 20;

/// Heap bytes of a decoded `Bson` value per byte of its BSON encoding (estimate).
const HEAP_PER_BSON_BYTE: usize = 8;

/// Fixed bytes per entry (the vector slot, the key's struct, the map entry).
const ENTRY_OVERHEAD: usize = 96;

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
    /// Estimated bytes of the entries ([`MAX_BYTES`]).
    bytes: usize,
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
        let value_bytes = value.as_ref().map_or(0, |v| {
            usize::try_from(tscoll_catalog::value::value_size(v))
                .unwrap_or(usize::MAX)
                .saturating_mul(HEAP_PER_BSON_BYTE)
        });
        let cost = value_bytes
            .saturating_add(key.bytes.len())
            .saturating_add(ENTRY_OVERHEAD);
        if self.entries >= MAX_ENTRIES || self.bytes.saturating_add(cost) > MAX_BYTES {
            self.by_hash.clear();
            self.entries = 0;
            self.bytes = 0;
        }
        self.by_hash.entry(hash).or_default().push((value, key));
        self.entries += 1;
        self.bytes = self.bytes.saturating_add(cost);
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

    #[test]
    fn empties_when_its_values_reach_the_byte_bound() {
        let mut c = MetaCache::default();
        let key = BucketKey::from_bytes(vec![0; 200]);
        // A 1000-byte string value: about 8 KB estimated, so some 4000 fit in 32 MiB.
        let value = Bson::String("x".repeat(1000));
        let fit = MAX_BYTES / (1005 * HEAP_PER_BSON_BYTE + 200 + ENTRY_OVERHEAD);
        for i in 0..fit as u64 {
            c.insert(i, Some(value.clone()), key.clone());
        }
        assert_eq!(c.entries, fit);
        assert!(c.get(0, |_| true).is_some());
        c.insert(u64::MAX, Some(value), key);
        assert_eq!(c.entries, 1, "emptied before the entry past the bound");
        assert!(c.get(0, |_| true).is_none());
        assert!(c.get(u64::MAX, |_| true).is_some());
    }
}
