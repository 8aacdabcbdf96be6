//! Grouping one insert call's measurements by series (SPEC ): two measurements are
//! of one series when their meta values normalize (fields sorted at every depth) to the same
//! bytes.
//!
//! Normalizing costs a sort of the meta value's fields per measurement. Measurements of one
//! series from one source carry the same meta value with its fields in the same order, so
//! each value is first written *as written* ([`tscoll_catalog::write_as_written`], one pass,
//! no sort, into a buffer kept for the call): a later measurement whose value writes the
//! same bytes joins that series after a hash and a comparison of the bytes, without
//! normalizing; so does a value an earlier call met ([`crate::write::meta_cache`]). Any other
//! value is normalized, so the grouping is exactly that of the normalized bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bson::Bson;
use tscoll_catalog::BucketKey;

use crate::write::meta_cache::{MetaCache, lock};

/// The series of one insert call, in order of first appearance.
pub(crate) struct SeriesGroups<'a> {
    /// The series' keys (normalized meta bytes), by group number.
    pub(crate) keys: SeriesKeys,
    /// Keys of meta values earlier calls met (see [`crate::write::meta_cache`]).
    cache: Option<&'a Mutex<MetaCache>>,
    /// The written bytes of the distinct meta values of the call, one after another.
    written: Vec<u8>,
    /// Hash of a meta value's written bytes → (their range in `written`, group number): the
    /// first value seen with that hash.
    by_written: HashMap<u64, (usize, usize, usize), BuildFx>,
    /// Group of the measurements without a meta value.
    no_meta: Option<usize>,
    /// The written bytes of the value [`SeriesGroups::seen`] looked at last.
    current: Vec<u8>,
    scratch: Vec<u8>,
}

impl<'a> SeriesGroups<'a> {
    pub(crate) fn new() -> Self {
        SeriesGroups {
            keys: SeriesKeys::default(),
            cache: None,
            written: Vec::new(),
            by_written: HashMap::default(),
            no_meta: None,
            current: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Groups that look the keys of meta values new to the call up in `cache` first, and
    /// remember the keys of values new to it there.
    pub(crate) fn with_cache(cache: &'a Mutex<MetaCache>) -> Self {
        SeriesGroups {
            cache: Some(cache),
            ..Self::new()
        }
    }

    /// The group number of the series of meta value `meta` (`None`: no meta field).
    pub(crate) fn group_of(&mut self, meta: Option<&Bson>) -> usize {
        let Some(meta) = meta else {
            if let Some(g) = self.no_meta {
                return g;
            }
            let g = self.by_normalized(None);
            self.no_meta = Some(g);
            return g;
        };
        match self.seen(meta) {
            (Some(g), _) => g,
            (None, hash) => self.group_of_new(meta, hash),
        }
    }

    /// The group of a meta value identical as written to one this call has seen, and the
    /// hash of its written bytes (for [`SeriesGroups::group_of_new`], which takes the bytes
    /// written here).
    pub(crate) fn seen(&mut self, meta: &Bson) -> (Option<usize>, u64) {
        self.current.clear();
        tscoll_catalog::write_as_written(meta, &mut self.current);
        let mut h = Fx::default();
        h.bytes(&self.current);
        let hash = h.0;
        let g = self
            .by_written
            .get(&hash)
            .filter(|&&(from, to, _)| self.written.get(from..to) == Some(&self.current[..]))
            .map(|&(_, _, g)| g);
        (g, hash)
    }

    /// The group of a meta value [`SeriesGroups::seen`] did not find, hashed as `hash`:
    /// `meta` is the value `seen` was given last.
    pub(crate) fn group_of_new(&mut self, meta: &Bson, hash: u64) -> usize {
        let cached = self
            .cache
            .and_then(|c| lock(c).get(hash, &self.current).cloned());
        let g = match cached {
            Some(key) => self.keys.group_of(key),
            None => {
                let g = self.by_normalized(Some(meta));
                if let (Some(c), Some(key)) = (self.cache, self.keys.keys.get(g)) {
                    lock(c).insert(hash, &self.current, key.clone());
                }
                g
            }
        };
        // The first value with this hash is remembered; another one's bytes are not kept.
        if let std::collections::hash_map::Entry::Vacant(slot) = self.by_written.entry(hash) {
            let from = self.written.len();
            self.written.extend_from_slice(&self.current);
            slot.insert((from, self.written.len(), g));
        }
        g
    }

    fn by_normalized(&mut self, meta: Option<&Bson>) -> usize {
        self.scratch.clear();
        if let Some(m) = meta {
            tscoll_catalog::write_normalized(m, &mut self.scratch);
        }
        self.keys
            .group_of(Arc::new(BucketKey::from_bytes(self.scratch.clone())))
    }
}

/// The distinct series keys of one call, numbered in order of first appearance. A key is
/// shared (with the meta cache and the catalog's series), never copied.
#[derive(Default)]
pub(crate) struct SeriesKeys {
    /// The keys, by number.
    pub(crate) keys: Vec<Arc<BucketKey>>,
    /// A key's hash → the number of the first key with that hash.
    by_hash: HashMap<u64, usize, BuildFx>,
}

impl SeriesKeys {
    /// The number of `key`, numbering it if it is new (the key is kept once, not copied).
    pub(crate) fn group_of(&mut self, key: Arc<BucketKey>) -> usize {
        if let Some(&g) = self.by_hash.get(&key.hash) {
            if self.keys.get(g) == Some(&key) {
                return g;
            }
            // Another key with the same hash (rare): compared with every key.
            if let Some(g) = self.keys.iter().position(|k| *k == key) {
                return g;
            }
        } else {
            self.by_hash.insert(key.hash, self.keys.len());
        }
        self.keys.push(key);
        self.keys.len() - 1
    }
}

impl std::ops::Deref for SeriesKeys {
    type Target = [Arc<BucketKey>];

    fn deref(&self) -> &[Arc<BucketKey>] {
        &self.keys
    }
}

/// A small multiplicative hasher (the "Fx" scheme): a rotate, a xor and a multiply per 8 bytes.
/// Not collision-resistant; it only picks a candidate that a comparison of the bytes then
/// confirms.
#[derive(Default)]
pub(crate) struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        self.bytes(bytes);
    }
    fn write_u8(&mut self, n: u8) {
        self.word(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.word(n);
    }
}

impl Fx {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    /// A hasher that goes on from state `h` (a hash computed before).
    pub(crate) fn with_state(h: u64) -> Fx {
        Fx(h)
    }

    /// Mixes in one word.
    pub(crate) fn word(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(Self::K);
    }

    /// Mixes in `b`, a word at a time, and its length.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        let mut chunks = b.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        self.word(tail_word(rest) ^ ((b.len() as u64) << 56));
    }
}

/// The last 0–7 bytes of a value as one word, read without a copy of variable length (a
/// call per value). Equal bytes give equal words; the length is mixed in by the caller.
#[inline]
fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    let byte = |i: usize| rest.get(i).map_or(0, |&b| u64::from(b));
    let half = |i: usize| {
        rest.get(i..i + 4)
            .and_then(|q| <[u8; 4]>::try_from(q).ok())
            .map_or(0, |q| u64::from(u32::from_le_bytes(q)))
    };
    match n {
        0 => 0,
        1..=3 => byte(0) | (byte(n / 2) << 8) | (byte(n - 1) << 16),
        // Two reads that overlap when n < 8.
        _ => half(0) | (half(n - 4) << 32),
    }
}

/// Whether two byte strings are equal: strings of up to 16 bytes (most names and tags) are
/// compared as one or two words each, read without a call.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|q| <[u8; 8]>::try_from(q).ok())
            .map_or(0, u64::from_le_bytes)
    };
    match a.len() {
        0..=7 => tail_word(a) == tail_word(b),
        n @ 8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

/// For maps whose keys are already hashes: the map uses them as they are.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BuildFx;

impl std::hash::BuildHasher for BuildFx {
    type Hasher = PassThrough;
    fn build_hasher(&self) -> PassThrough {
        PassThrough(0)
    }
}

/// Hasher of `u64` keys that are hashes already.
pub(crate) struct PassThrough(u64);

impl std::hash::Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn same_bytes_tells_strings_apart_at_every_byte_of_every_length() {
        for len in 0..40 {
            let a: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(same_bytes(&a, &a.clone()), "{len}");
            for at in 0..len {
                let mut b = a.clone();
                b[at] = b'_';
                assert!(!same_bytes(&a, &b), "{len} {at}");
            }
            let mut longer = a.clone();
            longer.push(b'x');
            assert!(!same_bytes(&a, &longer), "{len}");
        }
    }

    #[test]
    fn series_keys_number_each_key_once_even_when_hashes_collide() {
        let mut keys = SeriesKeys::default();
        let a = BucketKey::from_bytes(vec![1, 2]);
        let b = BucketKey::from_bytes(vec![3]);
        // Two keys given the same hash: numbered apart by their bytes.
        let c = BucketKey {
            bytes: vec![4],
            hash: a.hash,
        };
        let d = BucketKey {
            bytes: vec![5],
            hash: a.hash,
        };
        let numbers: Vec<usize> = [&a, &b, &c, &a, &d, &c, &b, &d]
            .into_iter()
            .map(|k| keys.group_of(Arc::new(k.clone())))
            .collect();
        assert_eq!(numbers, [0, 1, 2, 0, 3, 2, 1, 3]);
        let kept: Vec<&BucketKey> = keys.iter().map(|k| &**k).collect();
        assert_eq!(kept, [&a, &b, &c, &d]);
    }

    fn group_all(values: &[Option<Bson>]) -> (Vec<usize>, usize) {
        let mut groups = SeriesGroups::new();
        let g = values.iter().map(|v| groups.group_of(v.as_ref())).collect();
        (g, groups.keys.len())
    }

    #[test]
    fn same_series_whatever_the_field_order_and_distinct_types_apart() {
        let values = vec![
            Some(Bson::Document(doc! {"a": 1, "b": "x"})),
            Some(Bson::Document(doc! {"b": "x", "a": 1})),
            Some(Bson::Document(doc! {"a": 1_i64, "b": "x"})),
            Some(Bson::Document(doc! {"a": 1, "b": "x"})),
            None,
            Some(Bson::Double(0.0)),
            Some(Bson::Double(-0.0)),
            None,
            Some(Bson::Document(doc! {"a": 1, "b": {"d": 2, "c": [1, 2.5]}})),
            Some(Bson::Document(doc! {"b": {"c": [1, 2.5], "d": 2}, "a": 1})),
        ];
        let (groups, series) = group_all(&values);
        // Reordered fields are one series; int32 1 and int64 1 are two;
        // 0.0 and -0.0 have different bytes, so they are two series as well.
        assert_eq!(groups, vec![0, 0, 1, 0, 2, 3, 4, 2, 5, 5]);
        assert_eq!(series, 6);
    }

    #[test]
    fn a_cache_of_earlier_calls_gives_the_same_keys() {
        let values = [
            Some(Bson::Document(doc! {"a": 1, "b": "x"})),
            Some(Bson::Document(doc! {"b": "x", "a": 1})),
            Some(Bson::Document(doc! {"a": 1_i64, "b": "x"})),
            None,
            Some(Bson::Double(f64::NAN)),
            regex("a"),
            regex("b"),
        ];
        let cache = Mutex::new(MetaCache::default());
        let keys_of = |groups: &SeriesGroups<'_>, g: &[usize]| -> Vec<Vec<u8>> {
            g.iter().map(|&g| groups.keys[g].bytes.clone()).collect()
        };
        let mut plain = SeriesGroups::new();
        let g: Vec<usize> = values.iter().map(|v| plain.group_of(v.as_ref())).collect();
        let expected = keys_of(&plain, &g);
        // The first call fills the cache, the second (values in another order) reads it.
        for order in [false, true] {
            let mut cached = SeriesGroups::with_cache(&cache);
            let mut vs: Vec<&Option<Bson>> = values.iter().collect();
            if order {
                vs.reverse();
            }
            let g: Vec<usize> = vs.iter().map(|v| cached.group_of(v.as_ref())).collect();
            let mut keys = keys_of(&cached, &g);
            if order {
                keys.reverse();
            }
            assert_eq!(keys, expected);
            assert_eq!(cached.keys.len(), plain.keys.len());
        }
    }

    fn regex(pattern: &str) -> Option<Bson> {
        Some(Bson::RegularExpression(bson::Regex {
            pattern: pattern.to_owned().try_into().expect("no NUL"),
            options: String::new().try_into().expect("no NUL"),
        }))
    }

    #[test]
    fn grouping_equals_grouping_by_normalized_bytes() {
        // Values with equal hashes up to the type only (regexes, binaries) and NaNs still
        // group exactly as their normalized bytes do.
        let values: Vec<Option<Bson>> = vec![
            regex("a"),
            regex("b"),
            Some(Bson::Double(f64::NAN)),
            Some(Bson::Double(f64::NAN)),
            regex("a"),
            Some(Bson::String("ab".into())),
            Some(Bson::String("ab\0".into())),
            // Names of one length hash alike: the comparison tells them apart.
            Some(Bson::Document(doc! {"ab": "x", "c": 1})),
            Some(Bson::Document(doc! {"cd": "x", "c": 1})),
            Some(Bson::Document(doc! {"ab": "x", "c": 1})),
        ];
        let (groups, _) = group_all(&values);
        let mut expected = Vec::new();
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for v in &values {
            let mut bytes = Vec::new();
            tscoll_catalog::write_normalized(v.as_ref().unwrap_or(&Bson::Null), &mut bytes);
            let g = seen.iter().position(|s| *s == bytes).unwrap_or_else(|| {
                seen.push(bytes);
                seen.len() - 1
            });
            expected.push(g);
        }
        assert_eq!(groups, expected);
    }
}
