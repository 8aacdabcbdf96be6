//! `explain` of a pipeline: which stages the read answers (leading `$match` stages as its
//! filter, a `$group` by time window and meta from bucket sums and control records), which
//! run over the stream of measurements and what each holds in memory; with
//! [`ExplainVerbosity::ExecutionStats`], the pipeline run to its end and the read's counters.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bson::{Document, doc};

use super::Prepared;
use crate::collection::Collection;
use crate::error::Result;
use crate::query::explain::{ExplainVerbosity, bucket_selection, execution_stats};
use crate::query::{FindCursor, QueryStats};

/// The find cursor of a pipeline's read, passing its counters on once it ends.
pub(super) struct StatsTap {
    cursor: FindCursor,
    cell: Arc<Mutex<QueryStats>>,
}

impl StatsTap {
    pub(super) fn new(cursor: FindCursor, cell: Arc<Mutex<QueryStats>>) -> StatsTap {
        StatsTap { cursor, cell }
    }
}

impl Iterator for StatsTap {
    type Item = Result<Document>;

    fn next(&mut self) -> Option<Result<Document>> {
        let next = self.cursor.next();
        *self.cell.lock().unwrap_or_else(PoisonError::into_inner) = self.cursor.stats();
        next
    }
}

/// What a stage that runs over the stream holds in memory.
fn holds(name: &str, next: Option<&str>, budget: u64) -> String {
    match (name, next) {
        ("$sort", Some("$limit")) => "the first skip + limit documents".to_owned(),
        ("$sort", _) => format!("up to {budget} bytes of documents, sorted runs spill to disk"),
        ("$group" | "$bucket" | "$bucketAuto" | "$sortByCount", _) => "its groups".to_owned(),
        ("$setWindowFields", _) => {
            "one partition (a chunk of one for bounded windows), after a spilling sort".to_owned()
        }
        ("$densify" | "$fill", _) => "one partition, after a spilling sort".to_owned(),
        ("$facet", _) => "its input, for each sub-pipeline".to_owned(),
        ("$sample", _) => "the sample".to_owned(),
        ("$count", _) => "a count".to_owned(),
        _ => "one document at a time".to_owned(),
    }
}

/// `explain` of an aggregation pipeline: `{queryPlanner: {namespace, read, stages},
/// executionStats?}`; each entry of `stages` is `{stage, answeredBy}` with `answeredBy`
/// `"read filter"` (a leading `$match`), `"bucket sums"` (a `$group` by time window and
/// meta, answered by the windowed aggregate engine from control records, rollups and bucket
/// sums where buckets allow it) or `"stream"` with what the stage `holds`.
///
/// # Errors
/// What [`Collection::aggregate_cursor`] fails with for this pipeline.
pub(crate) fn explain_aggregate(
    coll: &Collection,
    pipeline: &[Document],
    verbosity: ExplainVerbosity,
) -> Result<Document> {
    let prepared = Prepared::new(coll, pipeline)?;
    let budget = coll.inner.sort_memory_bytes;
    let names: Vec<&str> = pipeline
        .iter()
        .map(|s| s.keys().next().map_or("", String::as_str))
        .collect();
    let mut stages = Vec::with_capacity(pipeline.len());
    for (i, stage) in pipeline.iter().enumerate() {
        let mut d = doc! { "stage": stage.clone() };
        if i < prepared.leading {
            d.insert("answeredBy", "read filter");
        } else if i == prepared.leading && prepared.windows.is_some() {
            d.insert("answeredBy", "bucket sums");
        } else if i < prepared.answered {
            // A `$sort` on the time field, and the `$limit` after it.
            d.insert("answeredBy", "read in time order");
        } else {
            d.insert("answeredBy", "stream");
            d.insert("holds", holds(names[i], names.get(i + 1).copied(), budget));
        }
        stages.push(d);
    }
    let mut read = bucket_selection(&coll.inner, &prepared.filter)?;
    read.insert("filter", prepared.filter.clone());
    let mut out = doc! {
        "queryPlanner": {
            "namespace": coll.inner.name.clone(),
            "read": read,
            "stages": stages,
        },
    };
    if verbosity == ExplainVerbosity::ExecutionStats {
        let started = Instant::now();
        let cell = Arc::new(Mutex::new(QueryStats::default()));
        let cursor = super::start(coll, prepared, Some(Arc::clone(&cell)))?;
        let mut returned = 0u64;
        for d in cursor {
            d?;
            returned += 1;
        }
        let stats = *cell.lock().unwrap_or_else(PoisonError::into_inner);
        out.insert("executionStats", execution_stats(returned, &stats, started));
    }
    Ok(out)
}
