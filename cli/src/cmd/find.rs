//! `tscoll find`: queries a collection and prints the measurements as relaxed Extended JSON,
//! one per line.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use tscoll_engine::{FindOptions, SortOrder};

use super::{
    CmdResult, DbArgs, open_collection, parse_json_arg, stdout_result, write_extjson_line,
};

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
    /// Sort on the time field: `FIELD:1` (ascending) or `FIELD:-1` (descending).
    #[arg(long, value_name = "FIELD:1|FIELD:-1")]
    pub(crate) sort: Option<String>,
    /// Print at most N measurements.
    #[arg(long, value_name = "N")]
    pub(crate) limit: Option<usize>,
}

/// Parses `--sort FIELD:1|FIELD:-1`; the field must be the collection's time field.
///
/// # Errors
/// Another field, or a direction other than `1`/`-1`.
pub(crate) fn parse_sort(text: &str, time_field: &str) -> CmdResult<SortOrder> {
    let (field, direction) = text.rsplit_once(':').unwrap_or((time_field, text));
    if field != time_field {
        return Err(format!(
            "--sort: only the time field '{time_field}' can be sorted on, not '{field}'"
        )
        .into());
    }
    match direction.trim() {
        "1" | "asc" => Ok(SortOrder::Ascending),
        "-1" | "desc" => Ok(SortOrder::Descending),
        other => Err(format!("--sort: direction must be 1 or -1, not '{other}'").into()),
    }
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
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let sort = args
        .sort
        .as_deref()
        .map(|s| parse_sort(s, &coll.spec().time_field))
        .transpose()?;
    let options = FindOptions {
        projection,
        sort,
        limit: args.limit,
    };
    let docs = coll
        .find(&filter, &options)
        .map_err(|e| format!("find failed: {e}"))?;
    let mut out = BufWriter::with_capacity(256 * 1024, io::stdout().lock());
    let written = docs
        .into_iter()
        .try_for_each(|doc| write_extjson_line(&mut out, doc))
        .and_then(|()| out.flush());
    stdout_result(written)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sort_syntax() {
        assert!(matches!(parse_sort("ts:1", "ts"), Ok(SortOrder::Ascending)));
        assert!(matches!(
            parse_sort("ts:-1", "ts"),
            Ok(SortOrder::Descending)
        ));
        assert!(matches!(parse_sort("-1", "ts"), Ok(SortOrder::Descending)));
        assert!(parse_sort("temp:1", "ts").is_err());
        assert!(parse_sort("ts:2", "ts").is_err());
    }
}
