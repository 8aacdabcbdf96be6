//! `_id`s generated for measurements that come without one (SPEC ).
//!
//! They are ObjectIds as MongoDB's drivers make them (4-byte timestamp in seconds, 5 random
//! bytes per process, 3-byte counter from a random start, all big-endian), but made a call at
//! a time: the clock is read once per call and the counter advanced once by the call's count,
//! not once per measurement. The 5 process bytes are this module's own (not those of
//! `bson::oid::ObjectId::new`), so the two generators never make the same id.

use std::hash::{BuildHasher, Hasher};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bson::oid::ObjectId;

/// The counter's values: 24 bits, wrapping.
const COUNTER_MASK: u32 = (1 << 24) - 1;

/// Per-process random state: the 5 process bytes and the counter's start.
static PROCESS: LazyLock<([u8; 5], u32)> = LazyLock::new(|| {
    // `RandomState`'s keys are random per process (drawn from the operating system).
    let mut h = std::hash::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    let r = h.finish().to_le_bytes();
    (
        [r[0], r[1], r[2], r[3], r[4]],
        u32::from_le_bytes([r[5], r[6], r[7], 0]),
    )
});

/// The next counter value to hand out (before the process start is added).
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// `n` new ObjectIds with one timestamp: the ids of one call's measurements that come without
/// an `_id`, in order.
pub(crate) fn generate(n: usize) -> impl Iterator<Item = ObjectId> {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    let &(process, start) = &*PROCESS;
    // The counter wraps at 2^24, as MongoDB's does: ids repeat only after 2^24 of them within
    // one second.
    let first = COUNTER
        .fetch_add(u32::try_from(n).unwrap_or(u32::MAX), Ordering::Relaxed)
        .wrapping_add(start);
    (0..n).map(move |i| {
        let c = (first.wrapping_add(i as u32) & COUNTER_MASK).to_be_bytes();
        ObjectId::from_parts(seconds, process, [c[1], c[2], c[3]])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_calls_are_distinct_and_ordered_within_a_call() {
        let mut seen = std::collections::HashSet::new();
        for n in [0, 1, 5, 1000] {
            let ids: Vec<ObjectId> = generate(n).collect();
            assert_eq!(ids.len(), n);
            for w in ids.windows(2) {
                let (a, b) = (w[0].bytes(), w[1].bytes());
                // One timestamp and one process value per call; counters one apart.
                assert_eq!(a[..9], b[..9]);
                let ca = u32::from_be_bytes([0, a[9], a[10], a[11]]);
                let cb = u32::from_be_bytes([0, b[9], b[10], b[11]]);
                assert_eq!(cb, (ca + 1) & COUNTER_MASK);
            }
            for id in ids {
                assert!(seen.insert(id), "{id} generated twice");
            }
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let id = generate(1).next().unwrap();
        let t = u64::from(u32::from_be_bytes(id.bytes()[..4].try_into().unwrap()));
        assert!(t.abs_diff(now) <= 1, "timestamp {t}, now {now}");
        // Not bson's process bytes.
        assert_ne!(id.bytes()[4..9], ObjectId::new().bytes()[4..9]);
    }
}
