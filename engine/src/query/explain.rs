//! `explain`: what a find or a pipeline will read, as a document (MongoDB's `explain`, in
//! tscoll's terms): how candidate buckets are chosen (which index, which series, which bounds
//! on the min time), whether control records prune them and whether measurements are filtered
//! one by one; with [`ExplainVerbosity::ExecutionStats`], the query is run and its counters
//! ([`QueryStats`]) say how many buckets were considered, pruned by control, answered from
//! bucket sums or rollups, and unpacked.

use std::time::Instant;

use bson::{Bson, DateTime, Document, doc};

use super::plan::{Plan, prefix_hashes};
use super::{FindOptions, QueryStats, SortOrder};
use crate::collection::{Collection, CollectionInner};
use crate::error::Result;

/// How much `explain` says, after MongoDB's verbosity modes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExplainVerbosity {
    /// The plan only (`queryPlanner`): nothing is read but the collection's options and
    /// indexes.
    #[default]
    QueryPlanner,
    /// The plan, then the query run to its end (results dropped), and its counters under
    /// `executionStats`.
    ExecutionStats,
}

/// How the candidate buckets of `filter` are chosen, as `explain` shows it:
/// `{index, series, minTime, controlPruning, perMeasurementFilter}` — `index` is
/// `"meta+time"`, a secondary index's name, `"none"` (the default index was dropped: every
/// bucket is listed) or `"no bucket can match"`; `series` is `"all"` or the number of
/// whole-meta equality operands whose index prefixes are read; `minTime` the inclusive
/// bounds on `control.min.<timeField>` (dates, or null for unbounded, SPEC ).
///
/// # Errors
/// `BadValue` (or the filter's other codes) for a filter that does not parse.
pub(crate) fn bucket_selection(inner: &CollectionInner, filter: &Document) -> Result<Document> {
    let plan = Plan::new(inner, filter)?;
    let Some((lo, hi)) = plan.min_time_bounds() else {
        return Ok(doc! {
            "index": "no bucket can match",
            "reason": "the predicates on the time field cannot hold",
        });
    };
    let bound = |t: i64, open: i64| {
        if t == open {
            Bson::Null
        } else {
            Bson::DateTime(DateTime::from_millis(t))
        }
    };
    let indexes = inner.indexes();
    let (index, series) = if let Some(name) = inner.secondary_index_for(&plan.filter) {
        (name, Bson::String("all".to_owned()))
    } else if indexes.default_dropped || indexes.default_hidden {
        ("none".to_owned(), Bson::String("all".to_owned()))
    } else {
        let series = match prefix_hashes(&plan) {
            Some(hashes) => Bson::Int64(i64::try_from(hashes.len()).unwrap_or(i64::MAX)),
            None => Bson::String("all".to_owned()),
        };
        ("meta+time".to_owned(), series)
    };
    Ok(doc! {
        "index": index,
        "series": series,
        "metaPredicates": plan.filter.has_meta_preds(),
        "minTime": { "$gte": bound(lo, i64::MIN), "$lte": bound(hi, i64::MAX) },
        "controlPruning": true,
        "perMeasurementFilter": !plan.filter.meta_only(),
    })
}

/// `explain` of a find: `{queryPlanner: {namespace, parsedQuery, winningPlan}, executionStats?}`.
///
/// # Errors
/// What [`Collection::find_cursor`] fails with.
pub(crate) fn explain_find(
    coll: &Collection,
    filter: &Document,
    options: &FindOptions,
    verbosity: ExplainVerbosity,
) -> Result<Document> {
    // Parse the options as the find will, so that explain refuses what find refuses.
    let mut winning =
        doc! { "stage": "UNPACK_BUCKETS", "buckets": bucket_selection(&coll.inner, filter)? };
    let order = |o: SortOrder| match o {
        SortOrder::Ascending => 1,
        SortOrder::Descending => -1,
    };
    if let Some(o) = options.sort {
        winning.insert(
            "sort",
            doc! { "on": coll.inner.spec().time_field, "order": order(o), "streams": true },
        );
    }
    if let Some(s) = &options.sort_by {
        winning.insert("sort", doc! { "by": s.clone(), "streams": false });
    }
    if let Some(n) = options.limit.filter(|n| *n > 0) {
        winning.insert("limit", i64::try_from(n).unwrap_or(i64::MAX));
    }
    if options.skip > 0 {
        winning.insert("skip", i64::try_from(options.skip).unwrap_or(i64::MAX));
    }
    if let Some(p) = &options.projection {
        winning.insert("projection", p.clone());
    }
    let mut out = doc! {
        "queryPlanner": {
            "namespace": coll.inner.name.clone(),
            "parsedQuery": filter.clone(),
            "winningPlan": winning,
        },
    };
    if verbosity == ExplainVerbosity::ExecutionStats {
        let started = Instant::now();
        let mut cursor = coll.find_cursor(filter, options)?;
        let mut returned = 0u64;
        for d in cursor.by_ref() {
            d?;
            returned += 1;
        }
        out.insert(
            "executionStats",
            execution_stats(returned, &cursor.stats(), started),
        );
    }
    Ok(out)
}

/// `executionStats`: `{nReturned, executionTimeMillis}` and the counters of
/// [`QueryStats::to_document`].
pub(crate) fn execution_stats(returned: u64, stats: &QueryStats, started: Instant) -> Document {
    let mut d = doc! {
        "nReturned": i64::try_from(returned).unwrap_or(i64::MAX),
        "executionTimeMillis": i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX),
    };
    d.extend(stats.to_document());
    d
}
