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

impl Collection {
    /// Runs an aggregation pipeline over the collection's measurements and returns the
    /// resulting documents (MongoDB's `aggregate`). Each measurement enters as `find`
    /// returns it: `{<timeField>, <metaField>, <fields>...}`.
    ///
    /// Stages: `$match` (the `find` filter language; leading ones are pushed down to the
    /// read), `$project` (inclusion, exclusion and computed fields), `$addFields`/`$set`,
    /// `$unset`, `$group` (`_id` any expression; `$sum`, `$avg`, `$min`, `$max`, `$first`,
    /// `$last`, `$count`, `$stdDevPop`, `$stdDevSamp`, `$push`, `$addToSet`; groups come out
    /// sorted by `_id`), `$sort`, `$skip`, `$limit`, `$count`, `$setWindowFields`
    /// (`partitionBy`, `sortBy`, outputs `$sum`, `$avg`, `$min`, `$max`, `$count`, `$first`,
    /// `$last`, `$stdDevPop`, `$stdDevSamp`, `$push`, `$derivative`, `$integral` over
    /// `documents` or `range` windows, ranges of dates in a `unit`). Expressions are those of
    /// `$expr` (see [`Collection::find`]) with `$dateTrunc`, `$dateAdd`, `$dateDiff`, date
    /// parts and conversions. `$group` and `$push` hold their groups in memory; `$sort` holds a
    /// bounded amount of its input, `$setWindowFields` too but for a window over a whole
    /// partition or a `range`, which holds its partition ([`Collection::aggregate_cursor`],
    /// which returns the results as they are computed, where this collects them).
    ///
    /// ```
    /// # use bson::{DateTime, doc};
    /// # use tscoll_engine::*;
    /// # let dir = tempfile::tempdir()?;
    /// # let db = Database::open(dir.path(), DatabaseOptions::default())?;
    /// let coll = db.create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))?;
    /// let docs: Vec<_> = (0..120).map(|i| doc! { "t": DateTime::from_millis(i * 60_000), "m": "a", "v": i }).collect();
    /// coll.insert_many(&docs, &InsertOptions::default())?;
    /// let hourly = coll.aggregate(&[
    ///     doc! { "$match": { "m": "a" } },
    ///     doc! { "$group": {
    ///         "_id": { "$dateTrunc": { "date": "$t", "unit": "hour" } },
    ///         "avg": { "$avg": "$v" },
    ///     } },
    /// ])?;
    /// assert_eq!(hourly[1], doc! { "_id": DateTime::from_millis(3_600_000), "avg": 89.5 });
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// `BadValue` naming the stage for a stage or operator not supported or malformed, and
    /// for an expression that fails on a document (e.g. `$dateTrunc` of a string);
    /// `BSONObjectTooLarge` when a `$push` or `$addToSet` passes 16 MiB in one group; the
    /// errors of [`Collection::find`] when the read fails.
    pub fn aggregate(&self, pipeline: &[Document]) -> Result<Vec<Document>> {
        self.aggregate_cursor(pipeline)?.collect()
    }

    /// Runs an aggregation pipeline as [`Collection::aggregate`] does, its results read as
    /// they are computed: the stages that take one document at a time pass each on as the
    /// cursor is read; `$group` holds its groups; `$sort` holds at most
    /// `DatabaseOptions::sort_memory_bytes` of documents (100 MiB by default; sorted runs
    /// past it go to temporary files, merged as the cursor is read), or about twice `n`
    /// before a `$limit` of `n`; `$setWindowFields` sorts as `$sort` does, then holds one
    /// partition at a time, or a chunk of one with the documents its windows reach when
    /// every window is a `documents` window with numeric bounds.
    ///
    /// # Errors
    /// As [`Collection::aggregate`]: a stage that holds its input (`$group`, `$sort`,
    /// `$count`, `$setWindowFields`) reads it here, so the errors of the stages before it
    /// come here; the others come from the cursor, which ends after one.
    pub fn aggregate_cursor(&self, pipeline: &[Document]) -> Result<AggregateCursor> {
        let spec = self.spec();
        let mut stages = pipeline
            .iter()
            .map(Stage::parse)
            .collect::<Result<Vec<_>>>()?;
        // Leading $match stages are the read's filter.
        let leading = stages
            .iter()
            .take_while(|s| matches!(s, Stage::Match(..)))
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
        let budget = self.inner.sort_memory_bytes;
        if let Some(Stage::Group(g)) = stages.first()
            && let Some(windows) = g.as_windows(&spec.time_field, spec.meta_field.as_deref())
        {
            let groups = self.aggregate_windows(&filter, &windows.spec)?;
            let docs = windows.results(groups, &spec.time_field, spec.meta_field.as_deref());
            stages.remove(0);
            let docs = stage::run(stages, Box::new(docs.into_iter().map(Ok)), budget)?;
            return Ok(AggregateCursor { docs, done: false });
        }
        let cursor = self.find_cursor(&filter, &FindOptions::default())?;
        let docs = stage::run(stages, Box::new(cursor), budget)?;
        Ok(AggregateCursor { docs, done: false })
    }
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
