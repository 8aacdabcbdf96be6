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
//! - Everything else streams the unpacked measurements through the stages (`stage.rs`):
//!   `$match`, `$project`, `$addFields`, `$unset`, `$skip` and `$limit` one document at a
//!   time; `$group` (`group.rs`), `$sort` and `$setWindowFields` (`window.rs`) hold what they
//!   need: the groups, or the documents.

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
    /// parts and conversions. `$group` and `$push` hold their groups in memory; `$sort` and
    /// `$setWindowFields` hold their input (a `$sort` right before a `$limit` of `n` holds at
    /// most `2n` documents).
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
        let spec = self.spec();
        let stages = pipeline
            .iter()
            .map(Stage::parse)
            .collect::<Result<Vec<_>>>()?;
        // Leading $match stages are the read's filter.
        let mut filter = Vec::new();
        let mut rest = &stages[..];
        while let Some((Stage::Match(_, raw), tail)) = rest.split_first() {
            filter.push(Bson::Document(raw.clone()));
            rest = tail;
        }
        let filter = match filter.len() {
            0 => Document::new(),
            1 => match filter.pop() {
                Some(Bson::Document(d)) => d,
                _ => Document::new(),
            },
            _ => bson::doc! { "$and": filter },
        };
        if let Some((Stage::Group(g), tail)) = rest.split_first()
            && let Some(windows) = g.as_windows(&spec.time_field, spec.meta_field.as_deref())
        {
            let groups = self.aggregate_windows(&filter, &windows.spec)?;
            let docs = windows.results(groups, &spec.time_field, spec.meta_field.as_deref());
            return stage::run(tail, Box::new(docs.into_iter().map(Ok)));
        }
        let cursor = self.find_cursor(&filter, &FindOptions::default())?;
        stage::run(rest, Box::new(cursor))
    }
}

/// The error of a malformed or unsupported stage.
fn bad(message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::BadValue, message)
}
