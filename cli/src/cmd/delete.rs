//! `tscoll delete`: deletes measurements matching a filter (SPEC §11.1).

use std::process::ExitCode;

use super::{CmdResult, DbArgs, open_collection, parse_json_arg};

/// Arguments of `tscoll delete`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// Filter (Extended JSON), as for `tscoll find`: `{"station": "A"}` deletes whole
    /// buckets; a filter on measurement fields or time rewrites the buckets it touches.
    #[arg(long, value_name = "JSON")]
    pub(crate) filter: String,
    /// Delete at most one measurement (`deleteOne`).
    #[arg(long)]
    pub(crate) one: bool,
}

/// Runs `tscoll delete` and prints the number of measurements deleted.
///
/// # Errors
/// A bad filter, a missing database or collection, storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let filter = parse_json_arg("--filter", &args.filter)?;
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let r = if args.one {
        coll.delete_one(&filter)?
    } else {
        coll.delete_many(&filter)?
    };
    outln!(
        "deleted {} measurements ({} buckets removed, {} rewritten)",
        r.deleted,
        r.buckets_removed,
        r.buckets_rewritten
    );
    Ok(ExitCode::SUCCESS)
}
