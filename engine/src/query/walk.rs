//! The one walk over candidate buckets that every query kind makes
//! (SPEC §14.4): read a candidate's control record (stored, or the view's for a bucket in
//! memory), judge it against the filter, let the query answer from control or ask for the
//! bucket's rows, decode only the columns it reads, and hand it the rows. A query kind is a
//! [`Collector`], in the manner of tantivy's: `count`, `aggregate`, `find` (and its cursor,
//! and top-k) and the last point per series differ only in what they collect (and the last
//! point in the order it hands candidates over). The Arrow cursor (`arrow/cursor.rs`) pulls
//! instead: it reads every candidate's control record up front through the same
//! [`Reader::for_each_control`], then decodes buckets ([`Reader::decode_bucket`],
//! [`Reader::for_each_bucket`]) as its batches are taken.
//!
//! Two orders: [`Reader::collect_bulk`] reads the controls of every candidate in id order
//! (scans when they are dense, [`super::bulk`]), then the buckets to unpack, for collectors
//! that do not care about order; [`Reader::collect_in_order`] visits the candidates in the
//! order given, stopping once the collector is closed (a limit reached), for results in
//! bucket or time order.

use std::cell::RefCell;

use tscoll_catalog::BucketId;
use tscoll_codec::Bucket;

use super::QueryStats;
use super::control_view::{ControlBytes, ControlView};
use super::memory::Reader;
use super::plan::{Candidate, Plan, Verdict};
use crate::error::Result;

/// What a collector does with a bucket after seeing its control record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Take {
    /// Nothing more: it adds nothing (skipped) or was answered from control.
    Done,
    /// Decode its rows and hand them over ([`Collector::bucket`]).
    Unpack,
}

/// What one query kind collects from the buckets of a walk.
pub(crate) trait Collector {
    /// Whether the walk reads control records; `false`: every candidate is unpacked as
    /// matching whole (the filter has no time or measurement predicate and control answers
    /// nothing).
    fn needs_control(&self) -> bool {
        true
    }

    /// In-order walks: whether no candidate from `cand` on can change the result. Called
    /// for each candidate as the walk reaches it, before its control record.
    fn closed(&mut self, _cand: &Candidate) -> bool {
        false
    }

    /// Candidate `k`'s control record, which `plan` did not prune (`verdict` is `Whole` or
    /// `Partial`).
    ///
    /// # Errors
    /// What the collector fails with.
    fn control(
        &mut self,
        k: usize,
        control: &ControlView<'_>,
        verdict: Verdict,
        stats: &mut QueryStats,
    ) -> Result<Take>;

    /// Whether column `field` (not the time field, always decoded) is decoded for a bucket
    /// that matches `whole` (no per-row filter). A bulk walk decodes every bucket with the
    /// columns of `whole = false`.
    fn reads(&self, field: &str, whole: bool) -> bool;

    /// The decoded segments of candidate `k` (stored ones, then its rows in memory), with
    /// its control record in an in-order walk.
    ///
    /// # Errors
    /// What the collector fails with (a segment that does not read).
    fn bucket(
        &mut self,
        k: usize,
        segments: Vec<Bucket>,
        control: Option<(&ControlView<'_>, Verdict)>,
        stats: &mut QueryStats,
    ) -> Result<()>;
}

impl Reader<'_> {
    /// Walks buckets `ids` in bulk: every control record (in id order; a scan when `dense`),
    /// then every bucket the collector asked for.
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage), [`Error::Codec`](crate::Error::Codec) or
    /// [`Error::Corruption`](crate::Error::Corruption) when a bucket cannot be read; what
    /// the collector returns.
    pub(crate) fn collect_bulk(
        &self,
        plan: &Plan,
        ids: &[BucketId],
        dense: bool,
        collector: &mut dyn Collector,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let unpack: Vec<usize> = if collector.needs_control() {
            let mut unpack = Vec::new();
            self.for_each_control(ids, dense, &mut |k, bytes| {
                stats.buckets_read += 1;
                let control = bytes.view().map_err(|r| self.corrupt_control(&ids[k], r))?;
                let verdict = plan.judge(&control, stats);
                if verdict != Verdict::Pruned
                    && collector.control(k, &control, verdict, stats)? == Take::Unpack
                {
                    unpack.push(k);
                }
                Ok(())
            })?;
            unpack
        } else {
            stats.buckets_whole += ids.len() as u64;
            (0..ids.len()).collect()
        };
        let unpack_ids: Vec<BucketId> = unpack.iter().map(|&k| ids[k]).collect();
        let dense_unpack = dense && unpack_ids.len().saturating_mul(4) >= ids.len();
        // The decode asks which columns to keep before the rows are handed over: never both
        // at once.
        let collector = RefCell::new(collector);
        self.for_each_bucket(
            &unpack_ids,
            dense_unpack,
            &mut |n| collector.borrow().reads(n, false),
            &mut |u, segments| {
                stats.buckets_unpacked += 1;
                collector
                    .borrow_mut()
                    .bucket(unpack[u], segments, None, stats)
            },
        )
    }

    /// Walks candidates `cands` in the order given, each control record then (if asked) its
    /// rows, until the collector is closed; with `controls_first`, every control record
    /// before any rows (a collector that sizes its result first). Candidates are taken from
    /// `cands` as the walk reaches them, so a collector that closes early stops the scan
    /// that yields them (the last point reads the index backwards that way). Candidate `k`
    /// is the `k`-th yielded.
    ///
    /// # Errors
    /// As [`Reader::collect_bulk`], and what `cands` yields.
    pub(crate) fn collect_in_order(
        &self,
        plan: &Plan,
        cands: &mut dyn Iterator<Item = Result<Candidate>>,
        controls_first: bool,
        collector: &mut dyn Collector,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let mut kept: Vec<(usize, Candidate, ControlBytes, Verdict)> = Vec::new();
        for (k, cand) in cands.enumerate() {
            let cand = cand?;
            if collector.closed(&cand) {
                break;
            }
            let Some(bytes) = self.control_bytes(&cand.id)? else {
                continue; // removed since the index was read
            };
            stats.buckets_read += 1;
            let control = bytes
                .view()
                .map_err(|r| self.corrupt_control(&cand.id, r))?;
            let verdict = plan.judge(&control, stats);
            if verdict == Verdict::Pruned
                || collector.control(k, &control, verdict, stats)? == Take::Done
            {
                continue;
            }
            if controls_first {
                kept.push((k, cand, bytes, verdict));
            } else {
                self.unpack_one(k, &cand, &control, verdict, collector, stats)?;
            }
        }
        for (k, cand, bytes, verdict) in kept {
            let control = bytes
                .view()
                .map_err(|r| self.corrupt_control(&cand.id, r))?;
            self.unpack_one(k, &cand, &control, verdict, collector, stats)?;
        }
        Ok(())
    }

    fn unpack_one(
        &self,
        k: usize,
        cand: &Candidate,
        control: &ControlView<'_>,
        verdict: Verdict,
        collector: &mut dyn Collector,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let whole = verdict == Verdict::Whole;
        let segments = self.decode_bucket(&cand.id, &mut |n| collector.reads(n, whole), stats)?;
        collector.bucket(k, segments, Some((control, verdict)), stats)
    }
}
