//! `tscoll compact`: stores what the write-ahead logs hold, merges buckets' segments and has
//! the storage engine compact its tables, then prints the disk space before and after.

use std::process::ExitCode;

use super::{CmdResult, DbArgs, human_bytes, open_existing_db};

/// Arguments of `tscoll compact`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Compact this collection only (default: the whole database).
    pub(crate) coll: Option<String>,
}

/// Runs `tscoll compact`.
///
/// # Errors
/// No database, no such collection, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let db = open_existing_db(&args.db.db)?;
    let before = db.disk_space()?;
    match &args.coll {
        Some(name) => db
            .collection(name)
            .map_err(|e| format!("collection '{name}': {e}"))?
            .compact()?,
        None => db.compact()?,
    }
    let after = db.disk_space()?;
    outln!(
        "compacted {}: {} on disk before, {} after",
        args.coll.as_deref().map_or_else(
            || args.db.db.display().to_string(),
            |c| format!("collection '{c}'")
        ),
        human_bytes(before),
        human_bytes(after)
    );
    Ok(ExitCode::SUCCESS)
}
