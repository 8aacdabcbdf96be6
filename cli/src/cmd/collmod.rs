//! `tscoll collmod`: changes a collection's options (MongoDB's `collMod`, SPEC §12).

use std::process::ExitCode;

use super::{CmdResult, DbArgs, open_collection, parse_json_arg, to_extjson};

/// Arguments of `tscoll collmod`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
    /// The collMod options (Extended JSON), e.g. `{"timeseries": {"granularity": "minutes"}}`
    /// or `{"expireAfterSeconds": "off"}`.
    pub(crate) command: String,
}

/// Runs `tscoll collmod` and prints the collection's options afterwards.
///
/// # Errors
/// A refused change (with MongoDB's category), a missing database or collection, storage
/// errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let command = parse_json_arg("command", &args.command)?;
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let spec = coll
        .coll_mod(&command)
        .map_err(|e| format!("collMod of '{}': {e}", args.coll))?;
    outln!(
        "collection '{}': {}",
        args.coll,
        to_extjson(spec.to_document())
    );
    Ok(ExitCode::SUCCESS)
}
