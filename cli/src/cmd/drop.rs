//! `tscoll drop`: drops a collection with its measurements and indexes.

use std::process::ExitCode;

use super::{CmdResult, DbArgs, open_existing_db};

/// Arguments of `tscoll drop`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Collection name.
    pub(crate) coll: String,
}

/// Runs `tscoll drop`.
///
/// # Errors
/// No database, no such collection, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let db = open_existing_db(&args.db.db)?;
    if !db.drop_collection(&args.coll)? {
        return Err(format!(
            "no collection named '{}' in {} (tscoll list shows them)",
            args.coll,
            args.db.db.display()
        )
        .into());
    }
    outln!("dropped collection '{}'", args.coll);
    Ok(ExitCode::SUCCESS)
}
