//! Sort on time with a limit that stops early (SPEC R-14.4.7 "bounded sort on time using
//! bucket min time"): candidate buckets are visited in min-time order, the best `limit` rows
//! are kept in a bounded heap, and the visit stops as soon as no remaining bucket can hold a
//! better row.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::SortOrder;
use super::plan::Candidate;

/// Rank of a row: smaller is better. Time ascending, or descending through `!t` (monotone
/// decreasing, no overflow); ties go to the row met first (`seq`).
type Rank = (i64, u64);

fn rank(order: SortOrder, time: i64, seq: u64) -> Rank {
    match order {
        SortOrder::Ascending => (time, seq),
        SortOrder::Descending => (!time, seq),
    }
}

struct Entry<T> {
    rank: Rank,
    time: i64,
    value: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.rank == other.rank
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank.cmp(&other.rank)
    }
}

/// The best `k` rows by time seen so far (a max-heap on rank: its top is the worst kept).
pub(crate) struct TopK<T> {
    k: usize,
    order: SortOrder,
    seq: u64,
    heap: BinaryHeap<Entry<T>>,
}

impl<T> TopK<T> {
    pub(crate) fn new(k: usize, order: SortOrder) -> Self {
        TopK {
            k,
            order,
            seq: 0,
            heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1),
        }
    }

    /// Whether a row at `time`, met now, would be kept.
    pub(crate) fn accepts(&self, time: i64) -> bool {
        if self.heap.len() < self.k {
            return true;
        }
        self.heap
            .peek()
            .is_some_and(|worst| rank(self.order, time, self.seq) < worst.rank)
    }

    /// Offers a row; it is kept if it is among the best `k`.
    pub(crate) fn push(&mut self, time: i64, value: T) {
        if !self.accepts(time) {
            self.seq += 1;
            return;
        }
        let entry = Entry {
            rank: rank(self.order, time, self.seq),
            time,
            value,
        };
        self.seq += 1;
        self.heap.push(entry);
        if self.heap.len() > self.k {
            self.heap.pop();
        }
    }

    /// The time of the worst kept row once `k` rows are kept.
    pub(crate) fn kth(&self) -> Option<i64> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.peek().map(|e| e.time))
            .flatten()
    }

    /// Whether no row of a bucket with this min time (rows in `[min_time, last_possible]`)
    /// can be kept any more: ascending, every row is at least `min_time`; descending, every
    /// row is at most `last_possible`. A row equal to the k-th loses (met later).
    pub(crate) fn closed_to(&self, min_time: i64, last_possible: i64) -> bool {
        self.kth().is_some_and(|kth| match self.order {
            SortOrder::Ascending => min_time >= kth,
            SortOrder::Descending => last_possible <= kth,
        })
    }

    /// The kept rows, best first.
    pub(crate) fn into_sorted(self) -> Vec<(i64, T)> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| (e.time, e.value))
            .collect()
    }
}

/// Orders candidates for a sort on time: by min time, ascending or descending (ties by id).
pub(crate) fn order_candidates(buckets: &mut [Candidate], order: SortOrder) {
    match order {
        SortOrder::Ascending => buckets.sort_unstable_by_key(|c| (c.min_time, c.id)),
        SortOrder::Descending => {
            buckets.sort_unstable_by_key(|c| std::cmp::Reverse((c.min_time, c.id)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_best_k_and_ties_go_to_the_first() {
        let mut top = TopK::new(3, SortOrder::Ascending);
        for (i, t) in [5, 1, 4, 1, 3, 9].into_iter().enumerate() {
            top.push(t, i);
        }
        assert_eq!(top.kth(), Some(3));
        assert_eq!(top.into_sorted(), vec![(1, 1), (1, 3), (3, 4)]);
        let mut top = TopK::new(2, SortOrder::Descending);
        for (i, t) in [5, 9, 9, 7].into_iter().enumerate() {
            top.push(t, i);
        }
        assert!(!top.accepts(9));
        assert!(top.closed_to(0, 9));
        assert!(!top.closed_to(0, 10));
        assert_eq!(top.into_sorted(), vec![(9, 1), (9, 2)]);
    }
}
