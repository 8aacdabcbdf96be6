//! `tscoll update`: updates with any filter (SPEC §11.2, MongoDB 8.0).

use std::process::ExitCode;

use tscoll_engine::UpdateOptions;

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
    /// Update operators, e.g. `{"$set": {"tags.region": "eu"}, "$inc": {"n": 1}}`; with
    /// `--one`, a replacement document is accepted too.
    #[arg(long, value_name = "JSON")]
    pub(crate) update: String,
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
    let update = parse_json_arg("--update", &args.update)?;
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let options = UpdateOptions {
        upsert: args.upsert,
        ..UpdateOptions::default()
    };
    let r = if args.one {
        coll.update_one(&filter, &update, &options)?
    } else {
        coll.update_many_with(&filter, &update, &options)?
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
