//! Aggregation pipelines (MongoDB's `aggregate` on a time-series collection): the stages
//! `$match`, `$project`, `$addFields`/`$set`, `$unset`, `$replaceRoot`/`$replaceWith`,
//! `$group`, `$sort`, `$skip`, `$limit`, `$count`, `$setWindowFields`, `$unwind`,
//! `$sortByCount`, `$bucket`, `$bucketAuto`, `$facet`, `$sample`, `$lookup`, `$densify` and
//! `$fill` (each in its own file; `docs/semantics.md` §14.6.3); the stages that take one
//! document at a time also run update pipelines (`update.rs`).
//!
//! - Leading `$match` stages become the filter of the read (`Collection::find_cursor`): they
//!   prune by series, by the meta+time index and by control min/max (SPEC §14.4) before a
//!   bucket is unpacked.
//! - A `$group` right after them whose `_id` is the meta field and/or a `$dateTrunc` of the
//!   time field to a fixed unit, and whose accumulators are counts, `$min` and `$max` of
//!   measurement fields, is answered by the windowed aggregate engine
//!   ([`Collection::aggregate_windows`]), from control records where buckets allow it.
//! - A `$sort` on the time field alone right after them is the read's order (buckets in
//!   min-time order, streamed), and a `$limit` after it the read's limit.
//! - `explain.rs` says which of these the read answers (`Collection::explain_aggregate`).
//! - Everything else streams the unpacked measurements through the stages (`stage.rs`), as
//!   the [`AggregateCursor`] is read: `$match`, `$project`, `$addFields`, `$unset`,
//!   `$replaceRoot`, `$skip` and `$limit` one document at a time; `$group` (`group.rs`) holds its groups; `$sort`
//!   holds a bounded number of bytes of documents and spills sorted runs past it (the
//!   external sort of `find`, `query/sort.rs`); `$setWindowFields` (`window.rs`) sorts so,
//!   then holds one partition, or a chunk of one when its windows are bounded. `$unwind` and
//!   `$lookup` (a bounded cache of foreign documents) stream; `$densify`, `$fill`,
//!   `$bucketAuto` and `$sample` sort so; `$bucket` and `$sortByCount` hold their groups;
//!   `$facet` keeps its input in memory up to the budget, in a temporary file past it.

pub(crate) mod bind;
mod bucket;
mod densify;
mod explain;
mod facet;
mod fill;
mod granularity;
mod group;
mod lookup;
mod multi;
mod percentile;
mod sample;
mod stage;
mod unwind;
pub(crate) mod update;
mod window;
mod window_seq;

pub(crate) use explain::explain_aggregate;

use bson::{Bson, Document};

use crate::collection::Collection;
use crate::error::{Error, ErrorCode, Result};
use crate::query::{FindOptions, QueryStats, SortOrder};

use stage::Stage;

pub(crate) fn aggregate(coll: &Collection, pipeline: &[Document]) -> Result<Vec<Document>> {
    coll.aggregate_cursor(pipeline)?.collect()
}

pub(crate) fn aggregate_cursor(
    coll: &Collection,
    pipeline: &[Document],
) -> Result<AggregateCursor> {
    start(coll, Prepared::new(coll, pipeline)?, None)
}

/// Runs `pipeline` over `input` instead of the collection's measurements, with the
/// collection's `$lookup` targets and memory budget.
pub(crate) fn aggregate_documents(
    coll: &Collection,
    input: Vec<Document>,
    pipeline: &[Document],
) -> Result<AggregateCursor> {
    let mut stages = pipeline
        .iter()
        .map(Stage::parse)
        .collect::<Result<Vec<_>>>()?;
    stage::bind(&mut stages, coll);
    let docs = stage::run(
        stages,
        Box::new(input.into_iter().map(Ok)),
        coll.inner.sort_memory_bytes,
    )?;
    Ok(AggregateCursor { docs, done: false })
}

/// A parsed pipeline: the read's filter (its leading `$match` stages), whether the first
/// stage after them is answered by the windowed aggregate engine, and the stages that run
/// over the stream.
struct Prepared {
    /// The leading `$match` stages as one filter.
    filter: Document,
    /// How many stages the filter took.
    leading: usize,
    /// The `$group` the windowed aggregate engine answers, when the first stage after the
    /// filter is one.
    windows: Option<group::Windows>,
    /// The read's order and limit: a `$sort` on the time field alone right after the
    /// filter streams in time order from the buckets (and a `$limit` after it stops the
    /// read early, SPEC ), as `find` with a sort does.
    order: Option<(SortOrder, Option<usize>)>,
    /// How many stages the read answers: the filter's, then the windowed `$group` or the
    /// time `$sort` and its `$limit`.
    answered: usize,
    /// The stages that run over the stream (after the windowed `$group`, if any).
    stages: Vec<Stage>,
}

impl Prepared {
    fn new(coll: &Collection, pipeline: &[Document]) -> Result<Prepared> {
        let spec = coll.spec();
        let mut stages = pipeline
            .iter()
            .map(Stage::parse)
            .collect::<Result<Vec<_>>>()?;
        stage::bind(&mut stages, coll);
        // Leading $match stages are the read's filter (up to one reading $$ROOT, which needs
        // the whole document a stage has).
        let leading = stages
            .iter()
            .take_while(|s| {
                matches!(s, Stage::Match(_, raw)
                    if !crate::mql::expr::reads_document(&Bson::Document(raw.clone())))
            })
            .count();
        let mut filter: Vec<Bson> = stages
            .drain(..leading)
            .filter_map(|s| match s {
                Stage::Match(_, raw) => Some(Bson::Document(raw)),
                _ => None,
            })
            .collect();
        let filter = match filter.len() {
            0 => Document::new(),
            1 => match filter.pop() {
                Some(Bson::Document(d)) => d,
                _ => Document::new(),
            },
            _ => bson::doc! { "$and": filter },
        };
        let mut windows = None;
        let mut order = None;
        let mut answered = leading;
        if let Some(Stage::Group(g)) = stages.first()
            && let Some(w) = g.as_windows(&spec.time_field, spec.meta_field.as_deref())
        {
            windows = Some(w);
            stages.remove(0);
            answered += 1;
        } else if let Some(Stage::Sort(keys)) = stages.first()
            && let [(path, descending)] = keys.as_slice()
            && matches!(path.as_slice(), [f] if *f == spec.time_field)
        {
            let o = if *descending {
                SortOrder::Descending
            } else {
                SortOrder::Ascending
            };
            stages.remove(0);
            answered += 1;
            let limit = match stages.first() {
                Some(Stage::Limit(n)) => Some(*n),
                _ => None,
            };
            if limit.is_some() {
                stages.remove(0);
                answered += 1;
            }
            order = Some((o, limit));
        }
        Ok(Prepared {
            filter,
            leading,
            windows,
            order,
            answered,
            stages,
        })
    }
}

/// Runs a prepared pipeline; the counters of its read go to `read_stats` when given (once
/// the read is done).
fn start(
    coll: &Collection,
    prepared: Prepared,
    read_stats: Option<std::sync::Arc<std::sync::Mutex<QueryStats>>>,
) -> Result<AggregateCursor> {
    let spec = coll.spec();
    let budget = coll.inner.sort_memory_bytes;
    let Prepared {
        filter,
        windows,
        order,
        stages,
        ..
    } = prepared;
    if let Some(windows) = windows {
        let (groups, stats) = coll.aggregate_windows_with_stats(&filter, &windows.spec)?;
        if let Some(cell) = read_stats {
            *cell
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = stats;
        }
        let docs = windows.results(groups, &spec.time_field, spec.meta_field.as_deref());
        let docs = stage::run(stages, Box::new(docs.into_iter().map(Ok)), budget)?;
        return Ok(AggregateCursor { docs, done: false });
    }
    let options = FindOptions {
        sort: order.map(|(o, _)| o),
        limit: order.and_then(|(_, n)| n),
        ..FindOptions::default()
    };
    let cursor = coll.find_cursor(&filter, &options)?;
    let input: stage::Docs = match read_stats {
        None => Box::new(cursor),
        Some(cell) => Box::new(explain::StatsTap::new(cursor, cell)),
    };
    let docs = stage::run(stages, input, budget)?;
    Ok(AggregateCursor { docs, done: false })
}

/// The results of an aggregation pipeline, computed as they are read
/// ([`Collection::aggregate_cursor`]): an iterator of `Result<Document>` that ends after its
/// first error.
pub struct AggregateCursor {
    docs: stage::Docs,
    done: bool,
}

impl Iterator for AggregateCursor {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        if self.done {
            return None;
        }
        let next = self.docs.next();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

impl std::fmt::Debug for AggregateCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AggregateCursor")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// The error of a malformed or unsupported stage.
fn bad(message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}
