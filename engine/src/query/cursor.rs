//! The streaming form of `find`: a cursor that reads and decodes one bucket when the rows
//! before it have been taken. Without a sort it yields the buckets in index order, each
//! bucket's rows in stored order (SPEC ); with a sort on time it merges buckets,
//! visited in min-time order, by time; with a sort and a limit it yields the top-k result
//! (SPEC ), which is bounded by the limit.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use bson::Document;

use super::memory::{MemoryView, Reader};
use super::plan::{Candidate, Candidates, Plan};
use super::projection::Projection;
use super::rowfilter::RowFilter;
use super::sort::{SortPlan, SortSpec, Sorted};
use super::{FindCtx, FindOptions, QueryStats, SortOrder};
use crate::collection::CollectionInner;
use crate::error::Result;

/// The measurements of a `find` (SPEC §14), read as they are taken
/// ([`Collection::find_cursor`](crate::Collection::find_cursor)).
///
/// An iterator of `Result<Document>` in the shape of SPEC §14.1; after an error
/// ([`Error::Storage`](crate::Error::Storage), [`Error::Codec`](crate::Error::Codec),
/// [`Error::Corruption`](crate::Error::Corruption)) it ends.
pub struct FindCursor {
    inner: Arc<CollectionInner>,
    /// The rows still in memory the query may read (a bucket's are dropped once read).
    memory: MemoryView,
    plan: Plan,
    projection: Projection,
    cands: Candidates,
    /// Positions in `cands` in the order they are read.
    visit: Vec<usize>,
    /// The next position in `visit`.
    next: usize,
    rows: Rows,
    /// Measurements still to yield (the limit), `None` = all.
    remaining: Option<usize>,
    /// Measurements still to pass over before the first one yielded.
    skip: usize,
    stats: QueryStats,
    done: bool,
}

/// How rows wait to be yielded.
enum Rows {
    /// One bucket's rows at a time, in stored order.
    Bucket(VecDeque<Document>),
    /// Rows of the buckets read so far, merged by time.
    Merge {
        order: SortOrder,
        runs: BinaryHeap<Run>,
    },
    /// A result computed whole (top-k, bounded by the limit).
    Ready(std::vec::IntoIter<Document>),
    /// Rows sorted on fields ([`super::sort`]), projected as they are taken.
    Sorted(Sorted),
}

/// The matching rows of one bucket, sorted by time in the cursor's order.
struct Run {
    order: SortOrder,
    /// The bucket's position in index order: rows with equal times come in index order, then
    /// stored order, as a stable sort of all rows would give them.
    seq: usize,
    rows: VecDeque<(i64, Document)>,
}

impl Run {
    fn head(&self) -> i64 {
        self.rows.front().map_or(0, |(t, _)| *t)
    }
}

impl Ord for Run {
    /// The greatest run (the heap's top) has the row to yield next.
    fn cmp(&self, other: &Self) -> Ordering {
        let by_time = match self.order {
            SortOrder::Ascending => other.head().cmp(&self.head()),
            SortOrder::Descending => self.head().cmp(&other.head()),
        };
        by_time.then(other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for Run {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Run {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Run {}

impl FindCursor {
    pub(crate) fn new(
        inner: &Arc<CollectionInner>,
        filter: &Document,
        options: &FindOptions,
    ) -> Result<FindCursor> {
        let plan = Plan::new(inner, filter)?;
        let projection = Projection::parse(options.projection.as_ref())?;
        let options = &match SortPlan::of(options, &plan.spec.time_field)? {
            SortPlan::Time(sort) => options.time_sorted(sort),
            SortPlan::Fields(spec) => {
                return FindCursor::sorted(inner, filter, options, &spec, plan, projection);
            }
        };
        let mut stats = QueryStats::default();
        let memory = {
            let rows = RowFilter::new(&plan.filter, &plan.spec.time_field);
            MemoryView::capture(inner, &plan, &|n| projection.keeps(n) || rows.reads(n))
        };
        let reader = Reader::new(inner, &memory);
        let mut cands = reader.candidates(&plan, &mut stats)?;
        let mut skip = options.skip;
        let rows = match (options.sort, options.keep()) {
            (Some(order), Some(k)) => {
                let filter = RowFilter::new(&plan.filter, &plan.spec.time_field);
                let ctx = FindCtx {
                    plan: &plan,
                    projection: &projection,
                    rows: &filter,
                };
                let mut top = reader.top_k(&ctx, &mut cands, order, k, &mut stats)?;
                top.drain(..skip.min(top.len()));
                skip = 0;
                cands = Candidates::default();
                Rows::Ready(top.into_iter())
            }
            (Some(order), _) => Rows::Merge {
                order,
                runs: BinaryHeap::new(),
            },
            (None, _) => Rows::Bucket(VecDeque::new()),
        };
        let mut visit: Vec<usize> = (0..cands.buckets.len()).collect();
        if let Rows::Merge { order, .. } = &rows {
            let key = |&i: &usize| cands.buckets.get(i).map(|c| (c.min_time, c.id));
            match order {
                SortOrder::Ascending => visit.sort_by_key(key),
                SortOrder::Descending => visit.sort_by_key(|i| std::cmp::Reverse(key(i))),
            }
        }
        let memory = if cands.buckets.is_empty() {
            MemoryView::default()
        } else {
            memory
        };
        Ok(FindCursor {
            inner: Arc::clone(inner),
            memory,
            plan,
            projection,
            cands,
            visit,
            next: 0,
            rows,
            remaining: options.limit(),
            skip,
            stats,
            done: false,
        })
    }

    /// A cursor over measurements sorted on fields other than time ([`super::sort`]): every
    /// match is read whole by an unsorted cursor, then sorted, skipped, limited and projected.
    fn sorted(
        inner: &Arc<CollectionInner>,
        filter: &Document,
        options: &FindOptions,
        spec: &SortSpec,
        plan: Plan,
        projection: Projection,
    ) -> Result<FindCursor> {
        let mut all = FindCursor::new(inner, filter, &FindOptions::default())?;
        let rows = spec.sort(
            all.by_ref(),
            options.skip,
            options.limit(),
            inner.sort_memory_bytes,
        )?;
        let mut stats = all.stats();
        stats.rows_returned = 0;
        Ok(FindCursor {
            inner: Arc::clone(inner),
            memory: MemoryView::default(),
            plan,
            projection,
            cands: Candidates::default(),
            visit: Vec::new(),
            next: 0,
            rows: Rows::Sorted(rows),
            remaining: None,
            skip: 0,
            stats,
            done: false,
        })
    }

    /// What the query has done so far: index entries, buckets read and unpacked, rows
    /// examined and returned ([`QueryStats`]).
    #[must_use]
    pub fn stats(&self) -> QueryStats {
        self.stats
    }

    /// The next candidate to read, with its position in index order.
    fn peek(&self) -> Option<(usize, &Candidate)> {
        let pos = *self.visit.get(self.next)?;
        Some((pos, self.cands.buckets.get(pos)?))
    }

    /// Reads the next candidate and moves past it: its matching rows with their times.
    fn read_next(&mut self) -> Result<Vec<(i64, Document)>> {
        let Some((_, &cand)) = self.peek() else {
            return Ok(Vec::new());
        };
        self.next += 1;
        let filter = RowFilter::new(&self.plan.filter, &self.plan.spec.time_field);
        let ctx = FindCtx {
            plan: &self.plan,
            projection: &self.projection,
            rows: &filter,
        };
        let rows = Reader::new(&self.inner, &self.memory).visit_bucket(
            &ctx,
            &self.cands,
            &cand,
            &mut self.stats,
        )?;
        self.memory.remove(&cand.id);
        Ok(rows)
    }

    /// Whether the candidate `cand`, not read yet, may hold a row that comes before (or ties
    /// with) a row at `head` in `order`.
    fn may_precede(plan: &Plan, cand: &Candidate, order: SortOrder, head: i64) -> bool {
        match order {
            SortOrder::Ascending => cand.min_time <= head,
            SortOrder::Descending => plan.last_possible_time(cand.min_time) >= head,
        }
    }

    /// The next measurement, before the limit is applied.
    fn step(&mut self) -> Result<Option<Document>> {
        loop {
            match &mut self.rows {
                Rows::Ready(rows) => return Ok(rows.next()),
                Rows::Sorted(rows) => {
                    return match rows.next().transpose()? {
                        Some(d) => {
                            let kept: Document = d
                                .into_iter()
                                .filter(|(k, _)| self.projection.keeps(k))
                                .collect();
                            Ok(Some(self.projection.cut_document(kept)))
                        }
                        None => Ok(None),
                    };
                }
                Rows::Bucket(rows) => {
                    if let Some(doc) = rows.pop_front() {
                        return Ok(Some(doc));
                    }
                    if self.next >= self.visit.len() {
                        return Ok(None);
                    }
                    let read = self.read_next()?;
                    if let Rows::Bucket(rows) = &mut self.rows {
                        rows.extend(read.into_iter().map(|(_, d)| d));
                    }
                }
                Rows::Merge { order, runs } => {
                    let order = *order;
                    let head = runs.peek().map(Run::head);
                    let next = self.visit.get(self.next).copied();
                    let read_more =
                        next.and_then(|p| self.cands.buckets.get(p))
                            .is_some_and(|cand| {
                                head.is_none_or(|h| Self::may_precede(&self.plan, cand, order, h))
                            });
                    if !read_more {
                        let Some(mut run) = runs.pop() else {
                            return Ok(None);
                        };
                        let row = run.rows.pop_front();
                        if !run.rows.is_empty() {
                            runs.push(run);
                        }
                        return Ok(row.map(|(_, d)| d));
                    }
                    let seq = next.unwrap_or_default();
                    let mut read = self.read_next()?;
                    if read.is_empty() {
                        continue;
                    }
                    match order {
                        SortOrder::Ascending => read.sort_by_key(|(t, _)| *t),
                        SortOrder::Descending => read.sort_by_key(|(t, _)| std::cmp::Reverse(*t)),
                    }
                    if let Rows::Merge { runs, .. } = &mut self.rows {
                        runs.push(Run {
                            order,
                            seq,
                            rows: read.into(),
                        });
                    }
                }
            }
        }
    }
}

impl Iterator for FindCursor {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        if self.done || self.remaining == Some(0) {
            return None;
        }
        while self.skip > 0 {
            match self.step() {
                Ok(Some(_)) => self.skip -= 1,
                Ok(None) => {
                    self.done = true;
                    return None;
                }
                Err(e) => {
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
        match self.step() {
            Ok(Some(doc)) => {
                if let Some(n) = &mut self.remaining {
                    *n -= 1;
                }
                self.stats.rows_returned += 1;
                Some(Ok(doc))
            }
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

impl std::fmt::Debug for FindCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FindCursor")
            .field("collection", &self.inner.name)
            .field("buckets_left", &(self.visit.len() - self.next))
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
