//! `tscoll find`: queries a collection and prints the measurements as relaxed Extended JSON,
//! one per line, or as CSV or Parquet (`--format`, written by [`crate::output`]); `--count`
//! prints their number, `--last` the last measurement of each series, `--stats` the query's
//! work counters (SPEC §14).

use std::cell::Cell;
use std::fs::File;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use bson::{Bson, Document};
use tscoll_engine::{ExplainVerbosity, FindCursor, FindOptions, QueryStats};

use super::{
    CmdResult, DbArgs, open_readable_collection, parse_json_arg, stdout_result, write_extjson_line,
};
use crate::output::{OutputFormat, export};

/// Arguments of `tscoll find`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// MongoDB-style filter in Extended JSON, e.g.
    /// `{"meta.series":"x","ts":{"$gte":{"$date":"2016-01-01T00:00:00Z"}}}`.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) filter: String,
    /// Projection in Extended JSON, e.g. `{"ts":1,"temp":1}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) projection: Option<String>,
    /// Sort: `FIELD:1` (ascending) or `FIELD:-1` (descending), or a MongoDB sort document,
    /// `{"FIELD": 1, "OTHER": -1}`. On the time field alone the output streams; on other
    /// fields the matches are sorted first (past 100 MiB, in runs on temporary files).
    #[arg(long, value_name = "FIELD:1|FIELD:-1|JSON")]
    pub(crate) sort: Option<String>,
    /// Print at most N measurements (0: no limit, as MongoDB's `limit(0)`).
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
    /// Pass over the first N matching measurements (after the sort), as MongoDB's `skip`.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(crate) skip: usize,
    /// Print only the number of matching measurements (buckets that match whole are counted
    /// from their control record, SPEC R-14.1.4).
    #[arg(long, conflicts_with_all = ["projection", "sort", "limit", "skip", "last"])]
    pub(crate) count: bool,
    /// Print the last measurement (greatest time) of each series among those matching the
    /// filter, ordered by meta value.
    #[arg(long, conflicts_with_all = ["projection", "sort", "limit", "skip"])]
    pub(crate) last: bool,
    /// Output format: `ndjson` (relaxed Extended JSON, one document per line), `csv` (a
    /// header of field paths, `meta.series` style) or `parquet` (see docs/cli.md for the
    /// type mapping). CSV and Parquet read the matches twice: once for the columns.
    #[arg(long, value_enum, default_value_t = OutputFormat::Ndjson)]
    pub(crate) format: OutputFormat,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
    /// Also print the query's work counters (index entries, buckets read, pruned, unpacked,
    /// answered from control, rows) on stderr as one JSON object.
    #[arg(long)]
    pub(crate) stats: bool,
    /// Print what the query reads instead of its results, as one JSON document (MongoDB's
    /// `explain`): how buckets are chosen (index, series, time bounds); with
    /// `executionStats`, the query is run and its counters added.
    #[arg(
        long,
        value_enum,
        value_name = "MODE",
        num_args = 0..=1,
        default_missing_value = "queryPlanner",
        conflicts_with_all = ["count", "last", "format", "out"]
    )]
    pub(crate) explain: Option<ExplainMode>,
}

/// `--explain`'s verbosity, named as MongoDB's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ExplainMode {
    /// The plan only.
    #[value(name = "queryPlanner")]
    QueryPlanner,
    /// The plan, and the counters of the query run to its end.
    #[value(name = "executionStats")]
    ExecutionStats,
}

impl ExplainMode {
    /// The engine's verbosity.
    pub(crate) fn verbosity(self) -> ExplainVerbosity {
        match self {
            ExplainMode::QueryPlanner => ExplainVerbosity::QueryPlanner,
            ExplainMode::ExecutionStats => ExplainVerbosity::ExecutionStats,
        }
    }
}

/// Prints an `explain` document on stdout as one relaxed Extended JSON line.
///
/// # Errors
/// Writing to stdout fails (other than a closed pipe).
pub(crate) fn print_explain(plan: Document) -> CmdResult<()> {
    let mut out = io::stdout().lock();
    stdout_result(write_extjson_line(&mut out, plan).and_then(|()| out.flush()))
}

/// Parses `--sort`: `FIELD:1`, `FIELD:-1` (or `1`/`-1` alone for the time field), or a
/// MongoDB sort document, `{"FIELD": 1, "OTHER": -1}`, into a sort document. A sort on the
/// time field alone streams; on other fields the engine sorts the matches
/// (`FindOptions::sort_by`).
///
/// # Errors
/// Malformed JSON, no field, or a direction other than `1`/`-1`.
pub(crate) fn parse_sort(text: &str, time_field: &str) -> CmdResult<Document> {
    if text.trim_start().starts_with('{') {
        let doc = parse_json_arg("--sort", text)?;
        if doc.is_empty() {
            return Err(
                format!("--sort: give at least one field, e.g. {{\"{time_field}\": -1}}").into(),
            );
        }
        for (field, direction) in &doc {
            let ok = match direction {
                Bson::Int32(n) => n.abs() == 1,
                Bson::Int64(n) => n.abs() == 1,
                Bson::Double(n) => n.abs() == 1.0,
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "--sort: the direction of '{field}' must be 1 or -1, not {direction}"
                )
                .into());
            }
        }
        return Ok(doc);
    }
    let direction = |text: &str| match text.trim() {
        "1" | "asc" => Some(1),
        "-1" | "desc" => Some(-1),
        _ => None,
    };
    let (field, direction) = match text.rsplit_once(':') {
        Some((field, d)) => (
            field,
            direction(d).ok_or_else(|| {
                format!(
                    "--sort: the direction of '{field}' must be 1 or -1 (asc, desc), not '{d}': \
                     e.g. {field}:-1 (descending)"
                )
            })?,
        ),
        None => match direction(text) {
            Some(d) => (time_field, d),
            // A number is a direction, anything else a field without one.
            None if text.trim().parse::<f64>().is_ok() => {
                return Err(format!(
                    "--sort: the direction must be 1 or -1 (asc, desc), not '{text}': e.g. \
                     {time_field}:-1 (newest first)"
                )
                .into());
            }
            None => {
                return Err(format!(
                    "--sort: '{text}' has no direction: {text}:1 (ascending) or {text}:-1 \
                     (descending)"
                )
                .into());
            }
        },
    };
    let mut doc = Document::new();
    doc.insert(field, direction);
    Ok(doc)
}

/// Runs `tscoll find`.
///
/// # Errors
/// Bad JSON arguments, no such collection, a filter the engine rejects, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let filter = parse_json_arg("--filter", &args.filter)?;
    let projection = args
        .projection
        .as_deref()
        .map(|p| parse_json_arg("--projection", p))
        .transpose()?;
    let (_db, coll) = open_readable_collection(&args.db.db, &args.coll)?;
    let sort_by = args
        .sort
        .as_deref()
        .map(|s| parse_sort(s, &coll.spec().time_field))
        .transpose()?;
    let options = FindOptions {
        projection,
        sort: None,
        limit: args.limit,
        skip: args.skip,
        sort_by,
    };
    if let Some(mode) = args.explain {
        let plan = coll
            .explain_find(&filter, &options, mode.verbosity())
            .map_err(|e| format!("explain failed: {e}"))?;
        print_explain(plan)?;
        return Ok(ExitCode::SUCCESS);
    }
    let query_stats = if args.count {
        let (n, stats) = coll
            .count_with_stats(&filter)
            .map_err(|e| format!("count failed: {e}"))?;
        let mut out = io::stdout().lock();
        stdout_result(writeln!(out, "{n}").and_then(|()| out.flush()))?;
        stats
    } else {
        let out = || output(args.out.as_deref(), args.format);
        if args.last {
            let (docs, stats) = coll
                .last_points_with_stats(&filter)
                .map_err(|e| format!("find --last failed: {e}"))?;
            export(args.format, out, || Ok(docs.iter().cloned().map(Ok)))?;
            stats
        } else {
            // Streamed: one bucket's measurements in memory at a time (more with a sort, as
            // many as overlap in time), each written as soon as it is read.
            let stats = Cell::new(QueryStats::default());
            export(args.format, out, || {
                let cursor = coll
                    .find_cursor(&filter, &options)
                    .map_err(|e| format!("find failed: {e}"))?;
                Ok(Counted {
                    cursor,
                    stats: &stats,
                })
            })?;
            stats.get()
        }
    };
    if args.stats {
        print_stats(&query_stats);
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the output goes: `path`, or stdout (refused for Parquet on a terminal).
///
/// # Errors
/// The file cannot be created, or Parquet would go to a terminal.
pub(crate) fn output(
    path: Option<&Path>,
    format: OutputFormat,
) -> CmdResult<Box<dyn Write + Send>> {
    match path {
        Some(path) => {
            let file = File::create(path).map_err(|e| format!("--out {}: {e}", path.display()))?;
            Ok(Box::new(file))
        }
        None if format == OutputFormat::Parquet && io::stdout().is_terminal() => {
            Err("Parquet is binary: give --out FILE or redirect stdout to a file".into())
        }
        None => Ok(Box::new(io::stdout())),
    }
}

/// A cursor whose work counters are kept in `stats` when it is dropped.
struct Counted<'a> {
    cursor: FindCursor,
    stats: &'a Cell<QueryStats>,
}

impl Iterator for Counted<'_> {
    type Item = CmdResult<Document>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(
            self.cursor
                .next()?
                .map_err(|e| format!("find failed: {e}").into()),
        )
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.stats.set(self.cursor.stats());
    }
}

/// Prints a query's counters on stderr as one JSON object (`QueryStats::to_document`).
pub(crate) fn print_stats(stats: &QueryStats) {
    let json = bson::Bson::Document(stats.to_document()).into_relaxed_extjson();
    errln!("{json}");
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn sort_syntax() {
        let sort = |t: &str| parse_sort(t, "ts").map_err(|e| e.to_string());
        assert_eq!(sort("ts:1"), Ok(doc! { "ts": 1 }));
        assert_eq!(sort("ts:-1"), Ok(doc! { "ts": -1 }));
        assert_eq!(sort("-1"), Ok(doc! { "ts": -1 }));
        assert_eq!(sort("temp:1"), Ok(doc! { "temp": 1 }));
        assert!(sort("ts:2").is_err_and(|e| e.contains("1 or -1")));
    }

    #[test]
    fn a_field_without_a_direction_is_told_how_to_give_one() {
        let e = parse_sort("value", "ts").unwrap_err().to_string();
        assert!(!e.contains("not 'value'"), "{e}");
        assert!(e.contains("value:1") && e.contains("value:-1"), "{e}");
        let e = parse_sort("value:down", "ts").unwrap_err().to_string();
        assert!(e.contains("'down'") && e.contains("value:-1"), "{e}");
        let e = parse_sort("2", "ts").unwrap_err().to_string();
        assert!(e.contains("'2'") && e.contains("ts:-1"), "{e}");
    }

    #[test]
    fn sort_documents_as_mongodb_writes_them() {
        let sort = |t: &str| parse_sort(t, "ts").map_err(|e| e.to_string());
        assert_eq!(sort(r#"{"ts": -1}"#), Ok(doc! { "ts": -1 }));
        assert_eq!(
            sort(r#" {"temp": -1, "ts": 1}"#),
            Ok(doc! { "temp": -1, "ts": 1 })
        );
        assert_eq!(sort(r#"{"ts": 1.0}"#), Ok(doc! { "ts": 1.0 }));
        assert!(sort("{}").is_err_and(|e| e.contains("at least one field")));
        assert!(sort(r#"{"ts": 2}"#).is_err_and(|e| e.contains("1 or -1")));
        assert!(sort(r#"{"ts": "x"}"#).is_err_and(|e| e.contains("1 or -1")));
        assert!(sort(r#"{"ts": "#).is_err_and(|e| e.contains("--sort")));
    }
}
