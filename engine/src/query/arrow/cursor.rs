//! The cursor of an Arrow result: the candidate buckets' control records are read first
//! (they prune buckets and give the schema), then the buckets are decoded one after another
//! as batches are taken, each column's values copied from the codec's lanes into the
//! batch's Arrow buffers.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use arrow_array::types::TimestampMillisecondType;
use arrow_array::{ArrayRef, Int32Array, PrimitiveArray, RecordBatch, UInt32Array};
use arrow_buffer::ScalarBuffer;
use arrow_schema::SchemaRef;
use bson::{Bson, Document};
use tscoll_catalog::BucketId;
use tscoll_catalog::value::to_bson;
use tscoll_codec::Bucket;

use super::ArrowOptions;
use super::column::{AppendError, ColumnBuilder, Rows};
use super::kind::UTC;
use super::meta::SeriesValues;
use super::schema::{Kinds, Layout};
use crate::collection::CollectionInner;
use crate::error::{Error, ErrorCode, Result};
use crate::query::bulk::dense;
use crate::query::memory::{MemoryView, Reader};
use crate::query::plan::{Plan, Verdict};
use crate::query::projection::Projection;
use crate::query::rowfilter::RowFilter;
use crate::query::sort::SortPlan;
use crate::query::topk::{TopK, order_candidates};
use crate::query::unpack::SegmentView;
use crate::query::{FindOptions, QueryStats, SortOrder};

/// The measurements of a query as Arrow record batches
/// ([`Collection::find_arrow`](crate::Collection::find_arrow)).
///
/// An iterator of `Result<RecordBatch>`, every batch with the cursor's
/// [`schema`](ArrowCursor::schema); after an error it ends. Without a sort the buckets are
/// read as batches are taken, in index order (a bucket's rows in stored order); with a sort
/// the result is computed when the cursor is made.
pub struct ArrowCursor {
    inner: Arc<CollectionInner>,
    memory: MemoryView,
    plan: Plan,
    projection: Projection,
    layout: Layout,
    /// Buckets still to read, in visit order.
    todo: VecDeque<Todo>,
    /// The meta value of each series (for the per-row filter), by series key.
    metas: Vec<Option<Bson>>,
    /// The meta column's values per series key.
    meta_values: Option<SeriesValues>,
    /// Fields whose values a dotted path of the projection cuts.
    cut: Vec<bool>,
    batch: BatchBuilder,
    batch_rows: usize,
    /// Rows read so far (unsorted results).
    read: usize,
    /// Rows to read at most (`skip + limit`; unsorted results).
    want: Option<usize>,
    /// Rows still to pass over (unsorted results).
    skip: usize,
    /// Batches ready to be taken.
    ready: VecDeque<RecordBatch>,
    /// Whether the buckets are read in id order by scans ([`ArrowCursor::read_dense`]).
    dense: bool,
    stats: QueryStats,
    done: bool,
}

/// A bucket to read.
struct Todo {
    id: BucketId,
    min_time: i64,
    /// `control.max_time`.
    max_time: i64,
    /// `control.count`.
    rows: u64,
    /// Its series' key (position in the cursor's series).
    key: i32,
    verdict: Verdict,
}

/// The columns of the batch being filled.
struct BatchBuilder {
    times: Vec<i64>,
    keys: Vec<i32>,
    fields: Vec<ColumnBuilder>,
}

impl ArrowCursor {
    pub(crate) fn new(
        inner: &Arc<CollectionInner>,
        filter: &Document,
        options: &FindOptions,
        arrow: &ArrowOptions,
    ) -> Result<ArrowCursor> {
        let plan = Plan::new(inner, filter)?;
        let projection = Projection::parse(options.projection.as_ref())?;
        let sort = match SortPlan::of(options, &plan.spec.time_field)? {
            SortPlan::Time(sort) => sort,
            SortPlan::Fields(_) => {
                return Err(Error::rejected(
                    ErrorCode::BadValue,
                    "find_arrow sorts on the time field only; use find for a sort on other fields",
                ));
            }
        };
        let mut stats = QueryStats::default();
        let time_field = plan.spec.time_field.clone();
        let memory = {
            let rows = RowFilter::new(&plan.filter, &time_field);
            MemoryView::capture(inner, &plan, &|n| projection.keeps(n) || rows.reads(n))
        };
        let reader = Reader::new(inner, &memory);
        let mut cands = reader.candidates(&plan, &mut stats)?;
        // A sort with a limit visits buckets in min-time order to stop early; without a
        // limit, in index order, so that equal times come as `find` gives them.
        if let Some(order) = sort
            && options.keep().is_some()
        {
            order_candidates(&mut cands.buckets, order);
        }
        let mut in_range = cands.in_range;
        if let Some((i, n)) = arrow.partition {
            // Part `i` of the buckets in id order: a range of ids, read by one scan when
            // dense.
            let n = n.max(1);
            let mut by_id: Vec<usize> = (0..cands.buckets.len()).collect();
            by_id.sort_unstable_by_key(|&k| cands.buckets[k].id);
            let len = by_id.len();
            let mine: std::collections::HashSet<usize> = by_id
                .get(len * i.min(n) / n..len * (i + 1).min(n) / n)
                .unwrap_or_default()
                .iter()
                .copied()
                .collect();
            let mut k = 0;
            cands.buckets.retain(|_| {
                k += 1;
                mine.contains(&(k - 1))
            });
            in_range = in_range.map(|r| r / n as u64);
        }
        // Every control record first: the verdicts and the fields' kinds.
        let ids: Vec<BucketId> = cands.buckets.iter().map(|c| c.id).collect();
        let mut verdicts: Vec<Option<(Verdict, i64, u64)>> = vec![None; ids.len()];
        let mut kinds = Kinds::default();
        reader.for_each_control(&ids, dense(ids.len(), cands.in_range), &mut |k, bytes| {
            stats.buckets_read += 1;
            let control = bytes
                .view()
                .map_err(|r| reader.corrupt_control(&ids[k], r))?;
            let verdict = plan.judge(&control, &mut stats);
            if verdict != Verdict::Pruned {
                kinds.add_control(&control, &time_field, &projection);
                verdicts[k] = Some((verdict, control.max_time, control.count));
            }
            Ok(())
        })?;
        // Series keys in order of first appearance.
        let mut keys: HashMap<usize, i32> = HashMap::new();
        let mut metas: Vec<Option<Bson>> = Vec::new();
        let mut todo = VecDeque::new();
        for (cand, verdict) in cands.buckets.iter().zip(verdicts) {
            let Some((verdict, max_time, rows)) = verdict else {
                continue;
            };
            let key = match keys.get(&cand.series) {
                Some(&k) => k,
                None => {
                    let k = i32::try_from(metas.len()).unwrap_or(i32::MAX);
                    metas.push(cands.series[cand.series].meta(&reader)?.cloned());
                    keys.insert(cand.series, k);
                    k
                }
            };
            todo.push_back(Todo {
                id: cand.id,
                min_time: cand.min_time,
                max_time,
                rows,
                key,
                verdict,
            });
        }
        let meta_kept = plan
            .spec
            .meta_field
            .as_deref()
            .filter(|m| projection.keeps(m));
        let cut_metas: Option<Vec<Option<Bson>>> = meta_kept.map(|m| {
            metas
                .iter()
                .map(|v| v.clone().and_then(|v| projection.cut(m, v)))
                .collect()
        });
        let layout = match &arrow.schema {
            Some(schema) => Layout::given(&plan.spec, Arc::clone(schema))?,
            None => {
                let refs: Option<Vec<Option<&Bson>>> = cut_metas
                    .as_ref()
                    .map(|v| v.iter().map(Option::as_ref).collect());
                Layout::derive(&plan.spec, kinds, refs.as_deref())
            }
        };
        let meta_values = match (&layout.meta, &cut_metas) {
            (Some(shape), Some(values)) => {
                let refs: Vec<Option<&Bson>> = values.iter().map(Option::as_ref).collect();
                let name = meta_kept.unwrap_or_default();
                Some(shape.series_values(&refs).map_err(|e| mismatch(name, e))?)
            }
            (Some(shape), None) => {
                // A given schema with a meta column the projection drops: all nulls.
                let none = vec![None; metas.len()];
                Some(
                    shape
                        .series_values(&none)
                        .map_err(|e| mismatch("meta", e))?,
                )
            }
            _ => None,
        };
        let cut = layout
            .fields
            .iter()
            .map(|(n, _)| projection.cuts_field(n))
            .collect();
        let batch_rows = arrow.batch_rows.max(1);
        let batch = BatchBuilder::new(&layout, batch_rows);
        let mut cursor = ArrowCursor {
            inner: Arc::clone(inner),
            memory,
            plan,
            projection,
            layout,
            todo,
            metas,
            meta_values,
            cut,
            batch,
            batch_rows,
            read: 0,
            want: None,
            skip: 0,
            ready: VecDeque::new(),
            dense: false,
            stats,
            done: false,
        };
        match sort {
            Some(order) => cursor.sort_whole(order, options)?,
            None => {
                cursor.want = options.keep();
                cursor.skip = options.skip;
                // A scan of most of the collection reads buckets in id order by scans
                // rather than one lookup each.
                if cursor.want.is_none() && dense(cursor.todo.len(), in_range) {
                    cursor.todo.make_contiguous().sort_unstable_by_key(|t| t.id);
                    cursor.dense = true;
                }
            }
        }
        Ok(cursor)
    }

    /// The schema every batch has: the time field (`Timestamp(Millisecond, "UTC")`), the
    /// meta field (when kept), then the measurement fields (docs/arrow.md).
    #[must_use]
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.layout.schema)
    }

    /// What the query did so far.
    #[must_use]
    pub fn stats(&self) -> QueryStats {
        self.stats
    }

    /// Reads every bucket (stopping once no bucket left can hold one of the best
    /// `skip + limit` rows), sorts the rows on time (equal times in visit order) and leaves
    /// the batches of the result ready.
    fn sort_whole(&mut self, order: SortOrder, options: &FindOptions) -> Result<()> {
        let mut top = options.keep().map(|k| TopK::<u32>::new(k, order));
        let mut batches = Vec::new();
        let mut rows = 0usize;
        while let Some(t) = self.todo.pop_front() {
            if let Some(top) = &top
                && top.closed_to(t.min_time, self.plan.last_possible_time(t.min_time))
            {
                break;
            }
            // Newest first: a bucket whose rows are all older than the k-th adds nothing.
            if order == SortOrder::Descending
                && let Some(kth) = top.as_ref().and_then(TopK::kth)
                && t.max_time <= kth
            {
                self.stats.buckets_skipped += 1;
                continue;
            }
            let before = self.batch.times.len();
            self.read_bucket(&t)?;
            if let Some(top) = &mut top {
                for (i, &time) in self.batch.times[before..].iter().enumerate() {
                    top.push(time, u32::try_from(rows + before + i).unwrap_or(u32::MAX));
                }
            }
            if self.batch.times.len() >= self.batch_rows {
                rows += self.batch.times.len();
                batches.push(self.finish_batch()?);
            }
        }
        if !self.batch.times.is_empty() {
            batches.push(self.finish_batch()?);
        }
        let all = arrow_select::concat::concat_batches(&self.layout.schema, &batches)
            .map_err(arrow_error)?;
        let mut order_rows: Vec<u32> = match top {
            Some(top) => top.into_sorted().into_iter().map(|(_, r)| r).collect(),
            None => {
                let times = time_values(&all);
                let mut idx: Vec<u32> =
                    (0..u32::try_from(all.num_rows()).unwrap_or(u32::MAX)).collect();
                match order {
                    SortOrder::Ascending => idx.sort_by_key(|&i| times[i as usize]),
                    SortOrder::Descending => {
                        idx.sort_by_key(|&i| std::cmp::Reverse(times[i as usize]));
                    }
                }
                idx
            }
        };
        order_rows.drain(..options.skip.min(order_rows.len()));
        if let Some(n) = options.limit() {
            order_rows.truncate(n);
        }
        let sorted = arrow_select::take::take_record_batch(&all, &UInt32Array::from(order_rows))
            .map_err(arrow_error)?;
        self.stats.rows_returned = sorted.num_rows() as u64;
        let mut at = 0;
        while at < sorted.num_rows() {
            let n = self.batch_rows.min(sorted.num_rows() - at);
            self.ready.push_back(sorted.slice(at, n));
            at += n;
        }
        self.done = true;
        Ok(())
    }

    /// Decodes one bucket and appends its matching rows to the batch (no more than the
    /// rows still wanted, unsorted).
    fn read_bucket(&mut self, t: &Todo) -> Result<()> {
        let segments = {
            let reader = Reader::new(&self.inner, &self.memory);
            let filter = RowFilter::new(&self.plan.filter, &self.plan.spec.time_field);
            let whole = t.verdict == Verdict::Whole || filter.is_empty();
            let projection = &self.projection;
            reader.decode_bucket(
                &t.id,
                &mut |n| projection.keeps(n) || (!whole && filter.reads(n)),
                &mut self.stats,
            )?
        };
        self.append_segments(t, &segments)
    }

    /// Reads the next buckets, about a batch of rows, with one scan of the store (buckets
    /// in id order: a scan of most of the collection), and appends their rows.
    fn read_dense(&mut self) -> Result<()> {
        let mut chunk = Vec::new();
        let mut rows = 0u64;
        while rows < self.batch_rows as u64
            && let Some(t) = self.todo.pop_front()
        {
            rows += t.rows;
            chunk.push(t);
        }
        let ids: Vec<BucketId> = chunk.iter().map(|t| t.id).collect();
        let mut decoded: Vec<Option<Vec<Bucket>>> = (0..chunk.len()).map(|_| None).collect();
        {
            let reader = Reader::new(&self.inner, &self.memory);
            let filter = RowFilter::new(&self.plan.filter, &self.plan.spec.time_field);
            let projection = &self.projection;
            reader.for_each_bucket(
                &ids,
                true,
                &mut |n| projection.keeps(n) || filter.reads(n),
                &mut |i, segments| {
                    if let Some(slot) = decoded.get_mut(i) {
                        *slot = Some(segments);
                    }
                    Ok(())
                },
            )?;
        }
        for (t, segments) in chunk.iter().zip(decoded) {
            if let Some(segments) = segments {
                self.stats.buckets_unpacked += 1;
                self.append_segments(t, &segments)?;
            }
        }
        Ok(())
    }

    /// Appends the matching rows of a bucket's decoded segments to the batch (no more than
    /// the rows still wanted, unsorted).
    fn append_segments(&mut self, t: &Todo, segments: &[Bucket]) -> Result<()> {
        let reader = Reader::new(&self.inner, &self.memory);
        let time_field = self.plan.spec.time_field.as_str();
        let filter = RowFilter::new(&self.plan.filter, time_field);
        let whole = t.verdict == Verdict::Whole || filter.is_empty();
        let projection = &self.projection;
        let corrupt = |r| reader.corrupt_data(&t.id, r);
        let meta = usize::try_from(t.key)
            .ok()
            .and_then(|k| self.metas.get(k))
            .and_then(Option::as_ref);
        for seg in segments {
            let mut view = SegmentView::lazy(seg, time_field).map_err(corrupt)?;
            let n = view.rows();
            self.stats.rows_examined += n as u64;
            let mut selected: Option<Vec<u32>> = None;
            if !whole {
                let bound = filter.bind(&mut view, time_field, meta);
                let mut rows = Vec::new();
                for r in 0..n {
                    self.stats.rows_filtered += 1;
                    if bound
                        .matches(&view, r)
                        .map_err(|e| e.into_error("", corrupt))?
                    {
                        rows.push(u32::try_from(r).unwrap_or(u32::MAX));
                    }
                }
                selected = Some(rows);
            }
            if let Some(want) = self.want {
                let room = want.saturating_sub(self.read);
                let taken = selected.as_ref().map_or(n, Vec::len);
                if taken > room {
                    let mut rows = selected
                        .unwrap_or_else(|| (0..u32::try_from(n).unwrap_or(u32::MAX)).collect());
                    rows.truncate(room);
                    selected = Some(rows);
                }
            }
            let rows = match &selected {
                None => Rows::All,
                Some(r) => Rows::Some(r),
            };
            let taken = selected.as_ref().map_or(n, Vec::len);
            if taken == 0 {
                continue;
            }
            self.read += taken;
            let b = &mut self.batch;
            match rows {
                Rows::All => b.times.extend_from_slice(view.times),
                Rows::Some(r) => b.times.extend(r.iter().map(|&i| view.times[i as usize])),
            }
            b.keys.resize(b.keys.len() + taken, t.key);
            for (f, ((name, _), column)) in self.layout.fields.iter().zip(&mut b.fields).enumerate()
            {
                let Some(p) = view.position(name) else {
                    column.append_nulls(taken);
                    continue;
                };
                let appended = if self.cut[f] {
                    view.materialize(p);
                    let mut each = |i: usize| -> std::result::Result<(), AppendError> {
                        let v = to_bson(view.value(p, i))?.and_then(|v| projection.cut(name, v));
                        column.append_bson(v.as_ref())
                    };
                    match rows {
                        Rows::All => (0..n).try_for_each(&mut each),
                        Rows::Some(r) => r.iter().try_for_each(|&i| each(i as usize)),
                    }
                } else {
                    match view.column(p) {
                        Some(col) => column.append_column(col, rows),
                        None => {
                            column.append_nulls(taken);
                            Ok(())
                        }
                    }
                };
                appended.map_err(|e| match e {
                    AppendError::Corrupt(r) => corrupt(format!("column '{name}': {r}")),
                    e => mismatch(name, e),
                })?;
            }
        }
        Ok(())
    }

    /// The batch filled so far, as a record batch; the builder starts a new one.
    fn finish_batch(&mut self) -> Result<RecordBatch> {
        let b = std::mem::replace(
            &mut self.batch,
            BatchBuilder::new(&self.layout, self.batch_rows),
        );
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.layout.schema.fields().len());
        columns.push(Arc::new(
            PrimitiveArray::<TimestampMillisecondType>::new(ScalarBuffer::from(b.times), None)
                .with_timezone(UTC),
        ));
        let keys = Int32Array::from(b.keys);
        if let Some(values) = &self.meta_values {
            columns.push(
                values
                    .column(&keys)
                    .map_err(|r| internal(&format!("meta column: {r}")))?,
            );
        }
        for column in b.fields {
            columns.push(column.finish().map_err(|r| internal(&r))?);
        }
        RecordBatch::try_new(Arc::clone(&self.layout.schema), columns).map_err(arrow_error)
    }

    /// The next batch of an unsorted result, `None` at the end.
    fn next_unsorted(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            while self.batch.times.len() < self.batch_rows
                && self.want.is_none_or(|w| self.read < w)
                && !self.todo.is_empty()
            {
                if self.dense {
                    self.read_dense()?;
                } else if let Some(t) = self.todo.pop_front() {
                    self.read_bucket(&t)?;
                }
            }
            if self.batch.times.is_empty() {
                return Ok(None);
            }
            let mut batch = self.finish_batch()?;
            if self.skip > 0 {
                let skip = self.skip.min(batch.num_rows());
                self.skip -= skip;
                batch = batch.slice(skip, batch.num_rows() - skip);
            }
            if batch.num_rows() > 0 {
                self.stats.rows_returned += batch.num_rows() as u64;
                return Ok(Some(batch));
            }
        }
    }
}

impl Iterator for ArrowCursor {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        if let Some(b) = self.ready.pop_front() {
            return Some(Ok(b));
        }
        if self.done {
            return None;
        }
        match self.next_unsorted() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// Values a batch reserves room for up front, over all its field columns: beyond it (a
/// schema of many fields, most of them missing from most rows) the columns grow as they
/// fill, so that a batch does not reserve fields × rows.
const RESERVED_VALUES: usize = 1 << 20;

impl BatchBuilder {
    fn new(layout: &Layout, rows: usize) -> BatchBuilder {
        // Room for one bucket past the batch size (buckets are added whole).
        let room = rows + 1024;
        let per_field = room.min(RESERVED_VALUES / layout.fields.len().max(1));
        BatchBuilder {
            times: Vec::with_capacity(room),
            keys: Vec::with_capacity(room),
            fields: layout
                .fields
                .iter()
                .map(|(_, k)| ColumnBuilder::new(*k, per_field))
                .collect(),
        }
    }
}

/// The time column's values of a batch of the cursor's schema.
fn time_values(batch: &RecordBatch) -> &[i64] {
    batch
        .column(0)
        .as_any()
        .downcast_ref::<PrimitiveArray<TimestampMillisecondType>>()
        .map_or(&[], |a| a.values().as_ref())
}

/// The error of a value that does not fit its column's type.
fn mismatch(field: &str, e: AppendError) -> Error {
    match e {
        AppendError::Mismatch(code) => Error::rejected(
            ErrorCode::TypeMismatch,
            format!(
                "field '{field}' holds a value of BSON type {code:#04x}, which its Arrow column \
                 does not take: the collection changed since the schema was made; make it again"
            ),
        ),
        AppendError::Corrupt(reason) => internal(&format!("field '{field}': {reason}")),
    }
}

/// An Arrow error as an engine error (Arrow refusing arrays the cursor built).
fn arrow_error(e: arrow_schema::ArrowError) -> Error {
    internal(&format!("Arrow: {e}"))
}

/// `InternalError`: arrays the cursor built that Arrow refuses.
fn internal(why: &str) -> Error {
    Error::rejected(
        ErrorCode::InternalError,
        format!("building an Arrow batch: {why}"),
    )
}
