//! The read path (SPEC §14): index scan → bucket pruning with control (§14.4) → decode only
//! the needed columns → per-row filter (skipped for whole buckets, R-14.4.4) → unpack (§14.1)
//! → sort on time → limit; plus the queries answered partly or wholly from control: `count`
//! last point per series, windowed aggregates, and results as Arrow record batches.
//!
//! | file | concept |
//! |---|---|
//! | `plan.rs` | the filter with the collection's bucketing; candidate buckets from the index; the verdict of a control record |
//! | `control_view.rs` | a control record read in place |
//! | `bulk.rs` | reading the controls and segments of many stored buckets: scans or point lookups |
//! | `memory.rs` | the rows open buckets hold unstored, read with the stored buckets |
//! | `unpack.rs` | decoding a bucket's segments and building measurements |
//! | `rowfilter.rs` | the per-measurement filter on decoded columns |
//! | `projection.rs` | inclusion / exclusion projections, at any depth |
//! | `sort.rs` | sorting on any fields (sort documents) |
//! | `topk.rs` | sort on time with a limit that stops early |
//! | `walk.rs` | the one walk over candidate buckets and the `Collector` each query kind is |
//! | `count.rs`, `last_point.rs`, `aggregate.rs` | the other query kinds |
//! | `arrow/` | results as Arrow record batches, filled from the codec's lanes |
//! | `parallel.rs` | running the parts of one query on a few threads |
//! | `stats.rs` | the work counters |

pub(crate) mod aggregate;
pub(crate) mod arrow;
mod bulk;
mod control_view;
pub(crate) mod count;
mod cursor;
pub(crate) mod explain;
pub(crate) mod last_point;
mod memory;
mod parallel;
mod plan;
pub(crate) mod projection;
mod rowfilter;
pub(crate) mod sort;
mod stats;
mod topk;
mod unpack;
mod walk;

use bson::Document;
use tscoll_codec::Bucket;

pub use aggregate::{Accumulator, AggregateBatch, AggregateSpec, OutputValues};
pub use arrow::{ArrowCursor, ArrowOptions, DEFAULT_BATCH_ROWS, ENCODING_KEY};
pub use cursor::FindCursor;
pub use explain::ExplainVerbosity;
pub use stats::QueryStats;

use crate::collection::Collection;
use crate::error::Result;
use control_view::ControlView;
use memory::Reader;
use plan::{Candidate, Candidates, Plan, Verdict};
use projection::Projection;
use rowfilter::RowFilter;
pub use sort::SORT_MEMORY_LIMIT;
use topk::{TopK, order_candidates};
use unpack::{SegmentView, Shape, build_row};
use walk::{Collector, Take};

/// Order of results on the time field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortOrder {
    /// Oldest first.
    Ascending,
    /// Newest first.
    Descending,
}

/// Options of [`Collection::find`] and [`Collection::find_arrow`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FindOptions {
    /// A MongoDB projection: inclusion (`{a: 1}`, `_id` kept unless `_id: 0`) or exclusion
    /// (`{a: 0}`) of fields at any depth (`{"meta.series": 1}`, `{"loc.coordinates": 0}`:
    /// inside documents and the documents of arrays, as MongoDB). `$slice`, `$elemMatch`,
    /// `$meta` and positional projections are refused (`BadValue`). Default = every field
    /// (SPEC §14.3).
    pub projection: Option<Document>,
    /// Sort on the time field. Default = bucket order, rows in stored order (SPEC ).
    /// Measurements with equal times come in no specified order.
    pub sort: Option<SortOrder>,
    /// Sort on any fields: a MongoDB sort document, `{field: 1 | -1, ...}` (dotted paths;
    /// BSON order; a missing field sorts as null; an array by its least element ascending,
    /// its greatest descending; equal keys keep no specified order). Not with `sort`. A
    /// document naming only the time field streams as `sort` does. Otherwise the matching
    /// measurements are read whole and sorted before the skip, the limit and the projection
    /// apply: at most `DatabaseOptions::sort_memory_bytes` ([`SORT_MEMORY_LIMIT`] by
    /// default) of them are held, as BSON with their sort keys, beyond which sorted runs go
    /// to temporary files and are merged as the cursor is read (an external merge sort; an
    /// I/O failure is [`Error::Io`](crate::Error::Io)); with a limit, also at most about
    /// twice `skip + limit` of them.
    pub sort_by: Option<Document>,
    /// At most this many measurements. Default = all; `Some(0)` is no limit too, as
    /// MongoDB's `limit(0)`. With a sort, buckets are visited in min-time order and the visit
    /// stops once no remaining bucket can hold a better measurement (SPEC ).
    pub limit: Option<usize>,
    /// Measurements passed over before the first one returned (MongoDB's `skip`), in the
    /// order of the result (after the sort); the limit counts the ones after them.
    /// Default 0. With a sort and a limit, the best `skip + limit` are kept while buckets
    /// are visited.
    pub skip: usize,
}

impl FindOptions {
    /// The limit in force: `None` for none (`limit` unset or 0).
    pub(crate) fn limit(&self) -> Option<usize> {
        self.limit.filter(|&n| n > 0)
    }

    /// These options with the sort on time `sort` and no sort document (what a sort
    /// document naming only the time field comes to).
    pub(crate) fn time_sorted(&self, sort: Option<SortOrder>) -> FindOptions {
        FindOptions {
            sort,
            sort_by: None,
            ..self.clone()
        }
    }

    /// The number of best measurements a sorted query with a limit keeps: `skip + limit`.
    pub(crate) fn keep(&self) -> Option<usize> {
        self.limit().map(|n| n.saturating_add(self.skip))
    }
}

pub(crate) fn find(
    coll: &Collection,
    filter: &Document,
    options: &FindOptions,
) -> Result<Vec<Document>> {
    coll.find_cursor(filter, options)?.collect()
}

pub(crate) fn find_with_stats(
    coll: &Collection,
    filter: &Document,
    options: &FindOptions,
) -> Result<(Vec<Document>, QueryStats)> {
    let mut cursor = coll.find_cursor(filter, options)?;
    let docs = cursor.by_ref().collect::<Result<Vec<_>>>()?;
    Ok((docs, cursor.stats()))
}

pub(crate) fn find_cursor(
    coll: &Collection,
    filter: &Document,
    options: &FindOptions,
) -> Result<FindCursor> {
    FindCursor::new(&coll.inner, filter, options)
}

/// Where the rows of one visit go.
pub(crate) enum Sink {
    /// Every row.
    All(Vec<(i64, Document)>),
    /// The best `k` rows by time (a sort with a limit).
    Top(TopK<Document>),
}

impl Sink {
    fn accepts(&self, time: i64) -> bool {
        match self {
            Sink::All(_) => true,
            Sink::Top(top) => top.accepts(time),
        }
    }

    fn push(&mut self, time: i64, doc: Document) {
        match self {
            Sink::All(rows) => rows.push((time, doc)),
            Sink::Top(top) => top.push(time, doc),
        }
    }
}

/// What `find` needs while visiting buckets.
pub(crate) struct FindCtx<'a> {
    pub(crate) plan: &'a Plan,
    pub(crate) projection: &'a Projection,
    pub(crate) rows: &'a RowFilter<'a>,
}

impl Reader<'_> {
    /// The best `k` measurements by time (a sort with a limit, SPEC ): buckets in
    /// min-time order, stopping once no remaining bucket can hold a better one.
    pub(crate) fn top_k(
        &self,
        ctx: &FindCtx<'_>,
        cands: &mut Candidates,
        order: SortOrder,
        k: usize,
        stats: &mut QueryStats,
    ) -> Result<Vec<Document>> {
        order_candidates(&mut cands.buckets, order);
        let mut find = Find {
            reader: *self,
            ctx,
            walked: &cands.buckets,
            series: &cands.series,
            order: Some(order),
            sink: Sink::Top(TopK::new(k, order)),
        };
        self.collect_in_order(
            ctx.plan,
            &mut cands.buckets.iter().copied().map(Ok),
            false,
            &mut find,
            stats,
        )?;
        let Sink::Top(top) = find.sink else {
            return Ok(Vec::new());
        };
        Ok(top.into_sorted().into_iter().map(|(_, d)| d).collect())
    }

    /// The matching measurements of one candidate bucket with their times, in stored order;
    /// none when the bucket is gone or pruned by its control record.
    pub(crate) fn visit_bucket(
        &self,
        ctx: &FindCtx<'_>,
        cands: &Candidates,
        cand: &Candidate,
        stats: &mut QueryStats,
    ) -> Result<Vec<(i64, Document)>> {
        let walked = std::slice::from_ref(cand);
        let mut find = Find {
            reader: *self,
            ctx,
            walked,
            series: &cands.series,
            order: None,
            sink: Sink::All(Vec::new()),
        };
        self.collect_in_order(
            ctx.plan,
            &mut walked.iter().copied().map(Ok),
            false,
            &mut find,
            stats,
        )?;
        match find.sink {
            Sink::All(rows) => Ok(rows),
            Sink::Top(_) => Ok(Vec::new()),
        }
    }
}

/// `find`'s collector: the matching measurements of the buckets visited, built in the shape
/// of SPEC §14.1, into a sink.
struct Find<'a> {
    reader: Reader<'a>,
    ctx: &'a FindCtx<'a>,
    /// The candidates walked (positions `k`).
    walked: &'a [Candidate],
    /// The series of the query's candidates.
    series: &'a [plan::Series],
    /// The sort of a top-k walk.
    order: Option<SortOrder>,
    sink: Sink,
}

impl Collector for Find<'_> {
    fn closed(&mut self, cand: &Candidate) -> bool {
        let plan = self.ctx.plan;
        matches!(&self.sink, Sink::Top(top)
            if top.closed_to(cand.min_time, plan.last_possible_time(cand.min_time)))
    }

    fn control(
        &mut self,
        _k: usize,
        control: &ControlView<'_>,
        _verdict: Verdict,
        stats: &mut QueryStats,
    ) -> Result<Take> {
        if let Sink::Top(top) = &self.sink
            && self.order == Some(SortOrder::Descending)
            && top.kth().is_some_and(|kth| control.max_time <= kth)
        {
            stats.buckets_skipped += 1;
            return Ok(Take::Done);
        }
        Ok(Take::Unpack)
    }

    fn reads(&self, field: &str, whole: bool) -> bool {
        let ctx = self.ctx;
        let whole = whole || ctx.rows.is_empty();
        ctx.projection.keeps(field) || (!whole && ctx.rows.reads(field))
    }

    /// Unpacks one candidate bucket into the sink.
    fn bucket(
        &mut self,
        k: usize,
        segments: Vec<Bucket>,
        control: Option<(&ControlView<'_>, Verdict)>,
        stats: &mut QueryStats,
    ) -> Result<()> {
        let ctx = self.ctx;
        let cand = &self.walked[k];
        let Some((control, verdict)) = control else {
            return Ok(());
        };
        // The bucket's fields in column order.
        let fields: Vec<&str> = control.field_names().collect();
        let meta = self.series[cand.series].meta(&self.reader)?;
        let spec = &ctx.plan.spec;
        let time_field = spec.time_field.as_str();
        let whole = verdict == Verdict::Whole || ctx.rows.is_empty();
        let shape = Shape {
            time: ctx.projection.keeps(time_field).then_some(time_field),
            meta: match (meta, spec.meta_field.as_deref()) {
                (Some(m), Some(name)) if ctx.projection.keeps(name) => Some((name, m)),
                _ => None,
            },
        };
        let corrupt = |r| self.reader.corrupt_data(&cand.id, r);
        for seg in &segments {
            let mut view = SegmentView::new(seg, time_field).map_err(corrupt)?;
            let bound = (!whole).then(|| ctx.rows.bind(&mut view, time_field, meta));
            let cols = view.positions(
                fields
                    .iter()
                    .copied()
                    .filter(|n| *n != time_field && ctx.projection.keeps(n)),
            );
            for row in 0..view.rows() {
                stats.rows_examined += 1;
                if let Some(b) = &bound {
                    stats.rows_filtered += 1;
                    if !b
                        .matches(&view, row)
                        .map_err(|e| e.into_error("", corrupt))?
                    {
                        continue;
                    }
                }
                let t = view.times[row];
                if !self.sink.accepts(t) {
                    continue;
                }
                let doc = build_row(&view, row, shape, &cols).map_err(corrupt)?;
                self.sink.push(t, ctx.projection.cut_document(doc));
            }
        }
        Ok(())
    }
}
