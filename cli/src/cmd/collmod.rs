//! `tscoll collmod`: changes a collection's options (MongoDB's `collMod`, SPEC §12).

use std::process::ExitCode;

use super::{CmdResult, DbArgs, open_collection, parse_json_arg, to_extjson};

/// Arguments of `tscoll collmod`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards all change the collection (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
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
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        let mut full = bson::doc! { "collMod": &args.coll };
        full.extend(command);
        return c.broadcast(&full, None, |reply| {
            let options = reply.get_document("options").map_err(|e| e.to_string())?;
            Ok(vec![options_line(&args.coll, options.clone())])
        });
    }
    let (_db, coll) = open_collection(&args.db.db, &args.coll)?;
    let spec = coll
        .coll_mod(&command)
        .map_err(|e| format!("collMod of '{}': {e}", args.coll))?;
    outln!("{}", options_line(&args.coll, spec.to_document()));
    Ok(ExitCode::SUCCESS)
}

/// `collection 'NAME': OPTIONS`, the options as `listCollections` shows them.
pub(crate) fn options_line(name: &str, options: bson::Document) -> String {
    format!("collection '{name}': {}", to_extjson(options))
}
