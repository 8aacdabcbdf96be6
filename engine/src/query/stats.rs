//! Work counters of one query: how the planner pruned (SPEC §14.4) and how much was read,
//! unpacked (§14.1) or answered from control.

use bson::{Document, doc};

/// What one query did, counted as it ran. Returned by the `*_with_stats` methods of
/// [`Collection`](crate::Collection) ([`find_with_stats`](crate::Collection::find_with_stats),
/// [`count_with_stats`](crate::Collection::count_with_stats), ...). Every field is a count.
///
/// A bucket whose control record was read is either **pruned** (control proves no
/// measurement matches, SPEC §14.4), **skipped** (it cannot change the result: a sorted query
/// with a limit already holds better rows, or a last-point query already has a later
/// measurement), **answered from control** (counted or aggregated from `control.count`,
/// `control.min`, `control.max` without decoding, R-14.1.4) or **unpacked** (its columns
/// decoded, §14.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryStats {
    /// Entries of the meta+time index (or of a secondary index) read while choosing
    /// candidate buckets.
    pub index_entries_scanned: u64,
    /// Control records read (one per candidate bucket that was looked at).
    pub buckets_read: u64,
    /// Buckets rejected by their control record (SPEC §14.4).
    pub buckets_pruned: u64,
    /// Buckets whose every measurement matches the filter, judged by time and meta alone
    /// (SPEC ): their rows are not filtered one by one.
    pub buckets_whole: u64,
    /// Buckets whose columns were decoded.
    pub buckets_unpacked: u64,
    /// Buckets answered entirely from their control record, without decoding.
    pub buckets_from_control: u64,
    /// Buckets answered entirely from their rollups (an aggregate whose windows are
    /// multiples of a rollup resolution), neither control record nor columns read.
    pub buckets_from_rollup: u64,
    /// Buckets read but neither unpacked nor answered because they cannot change the result
    /// (bounded sort, last point).
    pub buckets_skipped: u64,
    /// Measurements decoded from unpacked buckets.
    pub rows_examined: u64,
    /// Measurements on which the per-measurement filter was evaluated (0 for whole buckets).
    pub rows_filtered: u64,
    /// Results produced: measurements returned (find, last point, Arrow), measurements
    /// counted (count), or groups (aggregate).
    pub rows_returned: u64,
}

impl QueryStats {
    /// Adds the counters of `other` (a part of the same query read on another thread).
    pub(crate) fn add(&mut self, other: &QueryStats) {
        self.index_entries_scanned += other.index_entries_scanned;
        self.buckets_read += other.buckets_read;
        self.buckets_pruned += other.buckets_pruned;
        self.buckets_whole += other.buckets_whole;
        self.buckets_unpacked += other.buckets_unpacked;
        self.buckets_from_control += other.buckets_from_control;
        self.buckets_from_rollup += other.buckets_from_rollup;
        self.buckets_skipped += other.buckets_skipped;
        self.rows_examined += other.rows_examined;
        self.rows_filtered += other.rows_filtered;
        self.rows_returned += other.rows_returned;
    }

    /// The counters as a document with MongoDB-style camelCase names and int64 values:
    /// `{indexEntriesScanned, bucketsRead, bucketsPruned, bucketsWhole, bucketsUnpacked,
    /// bucketsFromControl, bucketsFromRollup, bucketsSkipped, rowsExamined, rowsFiltered, rowsReturned}`.
    #[must_use]
    pub fn to_document(&self) -> Document {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        doc! {
            "indexEntriesScanned": n(self.index_entries_scanned),
            "bucketsRead": n(self.buckets_read),
            "bucketsPruned": n(self.buckets_pruned),
            "bucketsWhole": n(self.buckets_whole),
            "bucketsUnpacked": n(self.buckets_unpacked),
            "bucketsFromControl": n(self.buckets_from_control),
            "bucketsFromRollup": n(self.buckets_from_rollup),
            "bucketsSkipped": n(self.buckets_skipped),
            "rowsExamined": n(self.rows_examined),
            "rowsFiltered": n(self.rows_filtered),
            "rowsReturned": n(self.rows_returned),
        }
    }
}
