//! `tscoll update`: meta-only multi updates (SPEC §11.2).

use std::process::ExitCode;

use super::{CmdResult, DbArgs, open_collection, parse_json_arg};

/// Arguments of `tscoll update`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// Filter on the meta field only (Extended JSON), e.g. `{"tags.host": "a"}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) filter: String,
    /// Update operators on the meta field only, e.g. `{"$set": {"tags.region": "eu"}}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) update: String,
}

/// Runs `tscoll update` and prints the measurements matched and modified.
///
/// # Errors
/// A bad or non-meta filter or update, a missing database or collection, storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let filter = parse_json_arg("--filter", &args.filter)?;
    let update = parse_json_arg("--update", &args.update)?;
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let r = coll.update_many(&filter, &update)?;
    outln!(
        "matched {} measurements, modified {} ({} buckets)",
        r.matched,
        r.modified,
        r.buckets_modified
    );
    Ok(ExitCode::SUCCESS)
}
