//! The idle buckets of a stripe, oldest first (SPEC: a bucket with no pending batch
//! is idle: under memory pressure the longest idle goes first).
//!
//! A bucket becomes idle after every commit and stops being idle when its series' next call
//! stages into it, so at many series each bucket enters and leaves the list once per call. The
//! list is a queue of `(sequence number, bucket)` with lazy removal: a bucket that stops being
//! idle only forgets its number (`Bucket::idle_seq`), and its entry is skipped when it reaches
//! the front, or dropped when the queue is compacted (once it holds twice as many entries as
//! idle buckets). Entering and leaving cost O(1), where an ordered map cost a tree insert and a
//! tree removal, a few hundred instructions each.

use std::collections::VecDeque;

use crate::bucket::BucketId;

/// Idle buckets in the order they became idle. An entry `(seq, id)` is live while bucket `id`
/// holds `idle_seq == Some(seq)`; the caller says which are ([`IdleList::pop_oldest`],
/// [`IdleList::compact`]).
#[derive(Debug, Default)]
pub(super) struct IdleList {
    queue: VecDeque<(u64, BucketId)>,
    /// The last sequence number given out.
    last_seq: u64,
    /// Live entries: buckets idle now.
    live: usize,
}

impl IdleList {
    /// Bucket `id` becomes idle: its sequence number, which the bucket keeps as its
    /// `idle_seq`. Call [`IdleList::compact`] once the bucket holds it.
    pub(super) fn push(&mut self, id: BucketId) -> u64 {
        self.last_seq += 1;
        self.queue.push_back((self.last_seq, id));
        self.live += 1;
        self.last_seq
    }

    /// A bucket that was idle (it held an `idle_seq`, which it has dropped) is no longer.
    pub(super) fn left(&mut self) {
        self.live = self.live.saturating_sub(1);
    }

    /// Buckets idle now.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    /// Takes the bucket idle the longest off the list, skipping entries of buckets no longer
    /// idle (`is_live` says whether bucket `id` still holds number `seq`). The caller then
    /// drops the bucket's `idle_seq`.
    pub(super) fn pop_oldest(
        &mut self,
        is_live: impl Fn(u64, &BucketId) -> bool,
    ) -> Option<BucketId> {
        while let Some((seq, id)) = self.queue.pop_front() {
            if is_live(seq, &id) {
                self.live = self.live.saturating_sub(1);
                return Some(id);
            }
        }
        None
    }

    /// Drops the entries of buckets no longer idle once they are as many as the live ones
    /// (amortized O(1) per [`IdleList::push`]).
    pub(super) fn compact(&mut self, is_live: impl Fn(u64, &BucketId) -> bool) {
        if self.queue.len() <= 2 * self.live + 64 {
            return;
        }
        self.queue.retain(|(seq, id)| is_live(*seq, id));
        self.live = self.queue.len();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A model of the buckets: id → the sequence number it holds while idle.
    struct Model {
        list: IdleList,
        held: HashMap<BucketId, u64>,
    }

    impl Model {
        fn idle(&mut self, n: u8) {
            let id = [n; 12];
            assert!(!self.held.contains_key(&id));
            let seq = self.list.push(id);
            self.held.insert(id, seq);
            let held = &self.held;
            self.list
                .compact(|seq, id| held.get(id).is_some_and(|&s| s == seq));
        }

        fn busy(&mut self, n: u8) {
            if self.held.remove(&[n; 12]).is_some() {
                self.list.left();
            }
        }

        fn pop(&mut self) -> Option<u8> {
            let held = &self.held;
            let id = self
                .list
                .pop_oldest(|seq, id| held.get(id).is_some_and(|&s| s == seq))?;
            self.held.remove(&id);
            Some(id[0])
        }
    }

    #[test]
    fn pops_the_longest_idle_and_skips_those_no_longer_idle() {
        let mut m = Model {
            list: IdleList::default(),
            held: HashMap::new(),
        };
        m.idle(1);
        m.idle(2);
        m.idle(3);
        m.busy(1);
        m.idle(1); // idle again: now the newest
        m.busy(3);
        assert_eq!(m.list.len(), 2);
        assert_eq!(m.pop(), Some(2));
        assert_eq!(m.pop(), Some(1));
        assert_eq!(m.pop(), None);
        assert_eq!(m.list.len(), 0);
    }

    #[test]
    fn the_queue_stays_within_twice_the_idle_buckets() {
        let mut m = Model {
            list: IdleList::default(),
            held: HashMap::new(),
        };
        // 100 buckets each made busy and idle again 1000 times: the queue is compacted.
        for _ in 0..1000 {
            for n in 0..100 {
                m.busy(n);
                m.idle(n);
            }
            assert!(m.list.queue.len() <= 2 * 100 + 64 + 1);
        }
        assert_eq!(m.list.len(), 100);
        // Their order is the order they last became idle.
        let popped: Vec<u8> = std::iter::from_fn(|| m.pop()).collect();
        assert_eq!(popped, (0..100).collect::<Vec<u8>>());
    }
}
