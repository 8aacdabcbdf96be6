//! `tscoll list`: the collections of a database with their options and sizes.

use std::process::ExitCode;

use bson::doc;

use super::stats::bucketing;
use super::{CmdResult, DbArgs, human_bytes, open_readable_db, to_extjson};

/// Arguments of `tscoll list`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster whose shards' collections to list, each shard apart (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// One JSON object per collection: `name`, `options` (as `create` takes them),
    /// `measurements`, `buckets`, `storedBytes`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `tscoll list`: one line per collection, sorted by name.
///
/// # Errors
/// No database, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        return c.broadcast(&doc! { "listCollections": 1 }, None, |reply| {
            let collections = reply.get_array("collections").map_err(|e| e.to_string())?;
            if collections.is_empty() {
                return Ok(vec!["no collections".to_owned()]);
            }
            Ok(collections
                .iter()
                .filter_map(bson::Bson::as_document)
                .map(|c| {
                    let name = c.get_str("name").unwrap_or_default();
                    let options = c.get_document("options").cloned().unwrap_or_default();
                    if args.json {
                        to_extjson(doc! { "name": name, "options": options })
                    } else {
                        format!("{name}: {}", to_extjson(options))
                    }
                })
                .collect())
        });
    }
    let db = open_readable_db(&args.db.db)?;
    let collections = db.list_collections()?;
    if collections.is_empty() && !args.json {
        outln!("no collections in {}", args.db.db.display());
    }
    for (name, spec) in collections {
        let stats = db.collection(&name)?.stats()?;
        if args.json {
            outln!(
                "{}",
                to_extjson(doc! {
                    "name": &name,
                    "options": spec.to_document(),
                    "measurements": i64::try_from(stats.measurement_count).unwrap_or(i64::MAX),
                    "buckets": i64::try_from(stats.bucket_count).unwrap_or(i64::MAX),
                    "storedBytes": i64::try_from(stats.stored_bytes).unwrap_or(i64::MAX),
                })
            );
        } else {
            let expire = spec
                .expire_after_seconds
                .map(|e| format!(", expireAfterSeconds {e}"))
                .unwrap_or_default();
            outln!(
                "{name}: timeField {}, metaField {}, {}{expire}; {} measurements in {} buckets, {}",
                spec.time_field,
                spec.meta_field.as_deref().unwrap_or("(none)"),
                bucketing(&spec),
                stats.measurement_count,
                stats.bucket_count,
                human_bytes(stats.stored_bytes)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
