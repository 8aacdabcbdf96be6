//! `tscoll drop`: drops a collection with its measurements and indexes.

use std::process::ExitCode;

use super::{CmdResult, DbArgs, open_existing_db};

/// Arguments of `tscoll drop`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards all drop the collection (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// Collection name.
    pub(crate) coll: String,
}

/// Runs `tscoll drop`.
///
/// # Errors
/// No database, no such collection, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        return c.broadcast(&bson::doc! { "drop": &args.coll }, None, |reply| {
            if reply.get_bool("dropped").unwrap_or(false) {
                Ok(vec![format!("dropped collection '{}'", args.coll)])
            } else {
                Err(format!("no collection named '{}'", args.coll))
            }
        });
    }
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
