//! The series keys of meta values seen by earlier insert calls of a collection, so that an
//! insert finds the series of a meta value met before without normalizing it (SPEC ):
//! a value is remembered by its bytes *as written* ([`tscoll_catalog::write_as_written`]:
//! its fields in the order the input holds them), and a later value with the same bytes is
//! of the same series. Only a value new to the cache is normalized (its fields sorted).
//!
//! `insert_many` (`write/series.rs`) hashes a value's written bytes; the columnar insert
//! (`write/arrow.rs`) hashes the Arrow row column by column and writes the bytes only for a
//! value new to its batch. The two hash differently, so a value met by both is held twice;
//! a lookup always compares the bytes, never the hash alone.
//!
//! A meta value's key never changes, so entries never go stale. The cache holds two
//! generations: when the newer one reaches half the cache's bytes it becomes the older one
//! and the older one is dropped, and a value found in the older generation moves to the
//! newer. So a working set of series that fits in half the bound is never forgotten, and one
//! that does not is forgotten a generation at a time, not all at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tscoll_catalog::BucketKey;

use crate::write::series::BuildFx;

/// The least bound of the cache (bytes), whatever the catalog's memory threshold.
pub(crate) const MIN_BYTES: usize = 32 << 20;

/// Fixed bytes per entry besides its written bytes and its key's bytes (the entry, the
/// key's struct, the map slot).
const ENTRY_OVERHEAD: usize = 96;

/// Locks a cache (a panic while it was held leaves it consistent: every entry is whole).
pub(crate) fn lock(cache: &Mutex<MetaCache>) -> MutexGuard<'_, MetaCache> {
    cache.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Meta values by their written bytes (empty: no meta value) and their series keys, by a
/// hash the caller computes (equal values must hash alike).
#[derive(Debug)]
pub(crate) struct MetaCache {
    newer: Generation,
    older: Generation,
    /// Bytes a generation holds before it becomes the older one (half the cache's bound).
    generation_bytes: usize,
}

/// One generation of entries.
#[derive(Debug, Default)]
struct Generation {
    by_hash: HashMap<u64, Vec<Entry>, BuildFx>,
    /// Estimated bytes of the entries.
    bytes: usize,
}

#[derive(Debug)]
struct Entry {
    written: Box<[u8]>,
    /// Shared with the calls and the catalog's series that use it.
    key: Arc<BucketKey>,
}

impl Entry {
    fn cost(&self) -> usize {
        self.written.len() + self.key.bytes.len() + ENTRY_OVERHEAD
    }
}

impl Default for MetaCache {
    fn default() -> Self {
        Self::with_max_bytes(MIN_BYTES)
    }
}

impl MetaCache {
    /// A cache of about `max_bytes` bytes of entries (at least [`MIN_BYTES`]).
    pub(crate) fn with_max_bytes(max_bytes: usize) -> Self {
        MetaCache {
            newer: Generation::default(),
            older: Generation::default(),
            generation_bytes: max_bytes.max(MIN_BYTES) / 2,
        }
    }

    /// The key of the value hashed as `hash` whose written bytes are `written`.
    pub(crate) fn get(&mut self, hash: u64, written: &[u8]) -> Option<&Arc<BucketKey>> {
        let in_newer = self
            .newer
            .by_hash
            .get(&hash)
            .and_then(|v| v.iter().position(|e| *e.written == *written));
        if let Some(i) = in_newer {
            return self.newer.by_hash.get(&hash)?.get(i).map(|e| &e.key);
        }
        // Found in the older generation, it moves to the newer one.
        let list = self.older.by_hash.get_mut(&hash)?;
        let i = list.iter().position(|e| *e.written == *written)?;
        let entry = list.swap_remove(i);
        if list.is_empty() {
            self.older.by_hash.remove(&hash);
        }
        self.older.bytes = self.older.bytes.saturating_sub(entry.cost());
        Some(self.push(hash, entry))
    }

    /// Remembers the key of the value hashed as `hash` whose written bytes are `written`.
    pub(crate) fn insert(&mut self, hash: u64, written: &[u8], key: Arc<BucketKey>) {
        self.push(
            hash,
            Entry {
                written: written.into(),
                key,
            },
        );
    }

    /// Adds `entry` to the newer generation, which first becomes the older one when it is
    /// full.
    fn push(&mut self, hash: u64, entry: Entry) -> &Arc<BucketKey> {
        let cost = entry.cost();
        if self.newer.bytes.saturating_add(cost) > self.generation_bytes {
            self.older = std::mem::take(&mut self.newer);
        }
        self.newer.bytes = self.newer.bytes.saturating_add(cost);
        let list = self.newer.by_hash.entry(hash).or_default();
        let at = list.len();
        list.push(entry);
        &list[at].key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Arc<BucketKey> {
        Arc::new(BucketKey::from_bytes(vec![b]))
    }

    #[test]
    fn finds_what_has_the_same_bytes() {
        let mut c = MetaCache::default();
        c.insert(7, b"one", key(1));
        c.insert(7, b"two", key(2));
        c.insert(8, b"", key(3));
        assert_eq!(c.get(7, b"two"), Some(&key(2)));
        assert_eq!(c.get(7, b"one"), Some(&key(1)));
        assert_eq!(c.get(7, b"three"), None);
        assert_eq!(c.get(8, b""), Some(&key(3)));
        assert_eq!(c.get(9, b"one"), None, "another hash");
    }

    #[test]
    fn forgets_a_generation_at_a_time_and_keeps_what_is_used() {
        let mut c = MetaCache::default();
        let written = vec![0u8; 1000];
        // Entries of 1000 + 1 + 96 bytes: this many fill a generation.
        let per_generation = MIN_BYTES / 2 / (1000 + 1 + ENTRY_OVERHEAD);
        let n = u64::try_from(per_generation).expect("small");
        for h in 0..n {
            c.insert(h, &written, key(1));
        }
        assert!(
            c.older.by_hash.is_empty(),
            "the first generation is not full yet"
        );
        // The next entry starts a new generation; the first stays readable.
        c.insert(n, &written, key(2));
        assert_eq!(c.newer.by_hash.len(), 1);
        assert_eq!(
            c.get(0, &written),
            Some(&key(1)),
            "from the older generation"
        );
        // Read, entry 0 moved to the newer generation: it survives the older one.
        for h in n + 1..2 * n + 1 {
            c.insert(h, &written, key(3));
        }
        assert_eq!(c.get(0, &written), Some(&key(1)));
        assert_eq!(c.get(1, &written), None, "dropped with its generation");
        assert_eq!(c.get(2 * n, &written), Some(&key(3)));
    }

    #[test]
    fn the_bound_follows_the_catalog_but_not_below_the_least() {
        assert_eq!(MetaCache::with_max_bytes(1).generation_bytes, MIN_BYTES / 2);
        assert_eq!(
            MetaCache::with_max_bytes(4 * MIN_BYTES).generation_bytes,
            2 * MIN_BYTES
        );
    }
}
