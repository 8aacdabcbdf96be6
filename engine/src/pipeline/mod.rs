//! Aggregation pipelines (MongoDB's `aggregate` on a time-series collection): the stages
//! `$match`, `$project`, `$addFields`/`$set`, `$unset`, `$group`, `$sort`, `$skip`,
//! `$limit`, `$count` and `$setWindowFields`.
//!
//! - Leading `$match` stages become the filter of the read (`Collection::find_cursor`): they
//!   prune by series, by the meta+time index and by control min/max (SPEC §14.4) before a
//!   bucket is unpacked.
//! - A `$group` right after them whose `_id` is the meta field and/or a `$dateTrunc` of the
//!   time field to a fixed unit, and whose accumulators are counts, `$min` and `$max` of
//!   measurement fields, is answered by the windowed aggregate engine
//!   ([`Collection::aggregate_windows`]), from control records where buckets allow it.
//! - Everything else streams the unpacked measurements through the stages (`stage.rs`), as
//!   the [`AggregateCursor`] is read: `$match`, `$project`, `$addFields`, `$unset`, `$skip`
//!   and `$limit` one document at a time; `$group` (`group.rs`) holds its groups; `$sort`
//!   holds a bounded number of bytes of documents and spills sorted runs past it (the
//!   external sort of `find`, `query/sort.rs`); `$setWindowFields` (`window.rs`) sorts so,
//!   then holds one partition, or a chunk of one when its windows are bounded.

mod group;
mod stage;
mod window;

use bson::{Bson, Document};

use crate::collection::Collection;
use crate::error::{Error, ErrorCode, Result};
use crate::query::FindOptions;

use stage::Stage;

pub(crate) fn aggregate(coll: &Collection, pipeline: &[Document]) -> Result<Vec<Document>> {
    coll.aggregate_cursor(pipeline)?.collect()
}

pub(crate) fn aggregate_cursor(
    coll: &Collection,
    pipeline: &[Document],
) -> Result<AggregateCursor> {
    let spec = coll.spec();
    let mut stages = pipeline
        .iter()
        .map(Stage::parse)
        .collect::<Result<Vec<_>>>()?;
    // Leading $match stages are the read's filter (up to one reading $$ROOT, which needs the
    // whole document a stage has).
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
    let budget = coll.inner.sort_memory_bytes;
    if let Some(Stage::Group(g)) = stages.first()
        && let Some(windows) = g.as_windows(&spec.time_field, spec.meta_field.as_deref())
    {
        let groups = coll.aggregate_windows(&filter, &windows.spec)?;
        let docs = windows.results(groups, &spec.time_field, spec.meta_field.as_deref());
        stages.remove(0);
        let docs = stage::run(stages, Box::new(docs.into_iter().map(Ok)), budget)?;
        return Ok(AggregateCursor { docs, done: false });
    }
    let cursor = coll.find_cursor(&filter, &FindOptions::default())?;
    let docs = stage::run(stages, Box::new(cursor), budget)?;
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
