//! Counting measurements (SPEC ): a bucket that matches the filter whole (R-14.4.4,
//! ) is counted from `control.count` without unpacking; the others decode only the
//! columns the filter reads.

use bson::{Bson, Document};
use tscoll_catalog::BucketId;
use tscoll_codec::Bucket;

use super::QueryStats;
use super::bulk::dense;
use super::control_view::ControlView;
use super::memory::{MemoryView, Reader};
use super::plan::{Candidate, Plan, Verdict};
use super::rowfilter::RowFilter;
use super::unpack::SegmentView;
use super::walk::{Collector, Take};
use crate::collection::Collection;
use crate::error::Result;

pub(crate) fn count(coll: &Collection, filter: &Document) -> Result<u64> {
    coll.count_with_stats(filter).map(|(n, _)| n)
}

pub(crate) fn count_with_stats(coll: &Collection, filter: &Document) -> Result<(u64, QueryStats)> {
    let mut stats = QueryStats::default();
    let plan = Plan::new(&coll.inner, filter)?;
    let rows = RowFilter::new(&plan.filter, &plan.spec.time_field);
    let memory = MemoryView::capture(&coll.inner, &plan, &|n| rows.reads(n));
    let n = Reader::new(&coll.inner, &memory).count(&plan, &mut stats)?;
    Ok((n, stats))
}

impl Reader<'_> {
    fn count(&self, plan: &Plan, stats: &mut QueryStats) -> Result<u64> {
        let cands = self.candidates(plan, stats)?;
        let ids: Vec<BucketId> = cands.buckets.iter().map(|c| c.id).collect();
        let rows = RowFilter::new(&plan.filter, &plan.spec.time_field);
        // The series' meta values, when the row filter reads them.
        let metas = if rows.needs_meta() {
            cands.metas(self)?
        } else {
            Vec::new()
        };
        let mut count = Count {
            reader: *self,
            plan,
            rows,
            ids: &ids,
            cands: &cands.buckets,
            metas: &metas,
            total: 0,
        };
        let dense = dense(ids.len(), cands.in_range);
        self.collect_bulk(plan, &ids, dense, &mut count, stats)?;
        stats.rows_returned = count.total;
        Ok(count.total)
    }
}

/// Counting: a bucket matching whole from `control.count`, the others row by row.
struct Count<'a> {
    reader: Reader<'a>,
    plan: &'a Plan,
    rows: RowFilter<'a>,
    ids: &'a [BucketId],
    /// The candidates, in `ids` order.
    cands: &'a [Candidate],
    /// Each series' meta value, when the row filter reads it (else empty).
    metas: &'a [Option<Bson>],
    total: u64,
}

impl Collector for Count<'_> {
    fn control(
        &mut self,
        _k: usize,
        control: &ControlView<'_>,
        verdict: Verdict,
        stats: &mut QueryStats,
    ) -> Result<Take> {
        if verdict == Verdict::Whole {
            stats.buckets_from_control += 1;
            self.total += control.count;
            return Ok(Take::Done);
        }
        Ok(Take::Unpack)
    }

    fn reads(&self, field: &str, _whole: bool) -> bool {
        self.rows.reads(field)
    }

    fn bucket(
        &mut self,
        k: usize,
        segments: Vec<Bucket>,
        _control: Option<(&ControlView<'_>, Verdict)>,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let time_field = self.plan.spec.time_field.as_str();
        let corrupt = |r| self.reader.corrupt_data(&self.ids[k], r);
        for seg in &segments {
            let mut view = SegmentView::lazy(seg, time_field).map_err(corrupt)?;
            let meta = self
                .cands
                .get(k)
                .and_then(|c| self.metas.get(c.series))
                .and_then(Option::as_ref);
            let bound = self.rows.bind(&mut view, time_field, meta);
            stats.rows_examined += view.rows() as u64;
            stats.rows_filtered += view.rows() as u64;
            for row in 0..view.rows() {
                if bound
                    .matches(&view, row)
                    .map_err(|e| e.into_error("", corrupt))?
                {
                    self.total += 1;
                }
            }
        }
        Ok(())
    }
}
