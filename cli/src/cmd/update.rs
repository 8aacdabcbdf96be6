//! `tscoll update`: updates with any filter (SPEC §11.2, MongoDB 8.0).

use std::process::ExitCode;

use bson::{Bson, Document};
use tscoll_engine::{Update, UpdateOptions};

use super::{CmdResult, DbArgs, open_collection, parse_json_arg};

/// Arguments of `tscoll update`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// Filter (Extended JSON, the `find` language), e.g. `{"tags.host": "a", "temp": {"$gt": 30}}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) filter: String,
    /// Update operators, e.g. `{"$set": {"tags.region": "eu"}, "$inc": {"n": 1}}`, or an
    /// update pipeline (a JSON array of `$set`, `$unset`, `$project`, `$replaceWith`
    /// stages), e.g. `[{"$set": {"total": {"$add": ["$a", "$b"]}}}]`; with `--one`, a
    /// replacement document is accepted too.
    #[arg(long, value_name = "JSON")]
    pub(crate) update: String,
    /// The array filters of `$[<identifier>]` paths: a JSON array of filters, e.g.
    /// `[{"x": {"$gte": 100}}]`.
    #[arg(long, value_name = "JSON")]
    pub(crate) array_filters: Option<String>,
    /// Variables (MongoDB's update `let`): a JSON document `{<name>: <expression>}` of
    /// constants, read as `$$<name>` in the filter's `$expr` and in an update pipeline, e.g.
    /// `{"target": "a"}` with `--filter '{"$expr": {"$eq": ["$host", "$$target"]}}'`.
    #[arg(long = "let", value_name = "JSON")]
    pub(crate) let_vars: Option<String>,
    /// Update one matching measurement only (`multi: false`).
    #[arg(long)]
    pub(crate) one: bool,
    /// Insert one measurement when nothing matches, from the filter's equalities and the
    /// update.
    #[arg(long)]
    pub(crate) upsert: bool,
}

/// Runs `tscoll update` and prints the measurements matched and modified, and the `_id` of an
/// upserted measurement.
///
/// # Errors
/// A bad filter or update (with MongoDB's category), a missing database or collection,
/// storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let filter = parse_json_arg("--filter", &args.filter)?;
    let update = if args.update.trim_start().starts_with('[') {
        Update::Pipeline(parse_array("--update", &args.update)?)
    } else {
        Update::Document(parse_json_arg("--update", &args.update)?)
    };
    let array_filters = match &args.array_filters {
        Some(text) => parse_array("--array-filters", text)?,
        None => Vec::new(),
    };
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let options = UpdateOptions {
        upsert: args.upsert,
        array_filters,
        let_vars: match &args.let_vars {
            Some(text) => Some(parse_json_arg("--let", text)?),
            None => None,
        },
    };
    let r = if args.one {
        coll.update_one(&filter, update, &options)?
    } else {
        coll.update_many_with(&filter, update, &options)?
    };
    outln!(
        "matched {} measurements, modified {} ({} buckets)",
        r.matched,
        r.modified,
        r.buckets_modified
    );
    if let Some(id) = &r.upserted_id {
        outln!("upserted {}", id.clone().into_relaxed_extjson());
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses a JSON array of documents (Extended JSON) given to `option`.
///
/// # Errors
/// Text that is not an array of documents.
fn parse_array(option: &str, text: &str) -> CmdResult<Vec<Document>> {
    let wrapped = parse_json_arg(option, &format!("{{\"a\": {text}}}"))?;
    let Some(Bson::Array(items)) = wrapped.get("a") else {
        return Err(format!("{option}: expected a JSON array of documents").into());
    };
    items
        .iter()
        .map(|s| match s {
            Bson::Document(d) => Ok(d.clone()),
            other => Err(format!("{option}: expected documents, not {other}").into()),
        })
        .collect()
}
