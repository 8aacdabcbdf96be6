//! `tscoll create`: creates a time-series collection (MongoDB's `create` with `timeseries`).

use std::process::ExitCode;

use tscoll_engine::{Granularity, TimeseriesOptions};

use super::{CmdResult, DbArgs, open_db};

/// Arguments of `tscoll create`.
#[derive(Debug, clap::Args)]
#[cfg_attr(
    feature = "cluster",
    command(mut_arg("db", super::cluster::db_unless_cluster))
)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// The cluster to create the collection on, every shard (feature `cluster`).
    #[cfg(feature = "cluster")]
    #[command(flatten)]
    pub(crate) cluster: super::cluster::ClusterArgs,
    /// On a cluster: the path whose value chooses a measurement's shard, the meta field or
    /// a path inside it (`tags.hostname`). Default: the meta field.
    #[cfg(feature = "cluster")]
    #[arg(long, value_name = "PATH", requires = "ClusterArgs")]
    pub(crate) shard_key: Option<String>,
    /// Collection name.
    pub(crate) coll: String,
    /// `timeField`: the field holding each measurement's UTC datetime.
    #[arg(long, value_name = "F")]
    pub(crate) time_field: String,
    /// `metaField`: the field naming the series (any BSON value, often an object).
    #[arg(long, value_name = "M")]
    pub(crate) meta_field: Option<String>,
    /// `granularity`: seconds, minutes or hours (closest to the interval between
    /// measurements of one series). Default = seconds.
    #[arg(long, value_name = "G", value_parser = ["seconds", "minutes", "hours"],
          conflicts_with_all = ["bucket_max_span_seconds", "bucket_rounding_seconds"])]
    pub(crate) granularity: Option<String>,
    /// `bucketMaxSpanSeconds`: custom bucketing, longest time span of one bucket.
    #[arg(long, value_name = "N", requires = "bucket_rounding_seconds")]
    pub(crate) bucket_max_span_seconds: Option<i64>,
    /// `bucketRoundingSeconds`: custom bucketing, a bucket's minimum time is rounded down to
    /// a multiple of this (must equal the span in MongoDB).
    #[arg(long, value_name = "N", requires = "bucket_max_span_seconds")]
    pub(crate) bucket_rounding_seconds: Option<i64>,
    /// `expireAfterSeconds`: delete whole buckets once all their measurements are older.
    #[arg(long, value_name = "N")]
    pub(crate) expire_after_seconds: Option<i64>,
    /// Rollups to keep on ingest: resolutions such as `1m,1h,1d` (a number and `s`, `m`, `h`
    /// or `d`; at most 4). Aggregates whose windows are multiples of one read it instead of
    /// the buckets.
    #[arg(long = "rollup", value_name = "LIST", value_delimiter = ',', value_parser = parse_resolution)]
    pub(crate) rollups: Vec<i64>,
}

/// A rollup resolution such as `1m`, `15m`, `1h`, `1d` or `30s`, in ms.
///
/// # Errors
/// Not a positive number followed by `s`, `m`, `h` or `d`.
pub(crate) fn parse_resolution(s: &str) -> Result<i64, String> {
    let bad = || format!("'{s}' is not a resolution such as 30s, 1m, 1h or 1d");
    let (n, unit) = s.split_at(s.len().saturating_sub(1));
    let unit_ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    n.parse::<i64>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(unit_ms))
        .ok_or_else(bad)
}

impl Args {
    /// The collection options these arguments describe.
    ///
    /// # Errors
    /// An unknown granularity (clap already restricts the values).
    pub(crate) fn options(&self) -> CmdResult<TimeseriesOptions> {
        let mut opts = TimeseriesOptions::new(self.time_field.as_str());
        if let Some(m) = &self.meta_field {
            opts = opts.meta_field(m.as_str());
        }
        if let Some(g) = &self.granularity {
            opts = opts.granularity(Granularity::parse(g)?);
        }
        if let (Some(span), Some(rounding)) =
            (self.bucket_max_span_seconds, self.bucket_rounding_seconds)
        {
            opts = opts.bucket_seconds(span, rounding);
        }
        if let Some(e) = self.expire_after_seconds {
            opts = opts.expire_after_seconds(e);
        }
        if !self.rollups.is_empty() {
            opts = opts.rollups(&self.rollups);
        }
        Ok(opts)
    }
}

/// Runs `tscoll create`: prints the collection's options as `listCollections` shows them.
///
/// # Errors
/// Invalid options, a collection of that name with other options, or storage errors.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let opts = args.options()?;
    #[cfg(feature = "cluster")]
    if let Some(c) = args.cluster.connect(&args.db)? {
        let command = create_command(&args.coll, &opts)?;
        return c.broadcast(&command, args.shard_key.as_deref(), |_| {
            Ok(vec![format!("created collection '{}'", args.coll)])
        });
    }
    let db = open_db(&args.db.db)?;
    let coll = db
        .create_collection(&args.coll, &opts)
        .map_err(|e| format!("cannot create collection '{}': {e}", args.coll))?;
    outln!(
        "{}",
        super::collmod::options_line(&args.coll, coll.spec().to_document())
    );
    Ok(ExitCode::SUCCESS)
}

/// MongoDB's `create` command of collection `name` with options `opts`, as a cluster's
/// workers take it.
///
/// # Errors
/// Rollups, which the command does not carry.
#[cfg(feature = "cluster")]
pub(crate) fn create_command(name: &str, opts: &TimeseriesOptions) -> CmdResult<bson::Document> {
    if !opts.rollups.is_empty() {
        return Err(
            "--rollup is not available on a cluster: MongoDB's create command, which \
                    the workers take, has no rollups"
                .into(),
        );
    }
    let mut ts = bson::doc! { "timeField": &opts.time_field };
    if let Some(m) = &opts.meta_field {
        ts.insert("metaField", m);
    }
    if let Some(g) = opts.granularity {
        ts.insert("granularity", g.as_str());
    }
    if let Some(span) = opts.bucket_max_span_seconds {
        ts.insert("bucketMaxSpanSeconds", span);
    }
    if let Some(rounding) = opts.bucket_rounding_seconds {
        ts.insert("bucketRoundingSeconds", rounding);
    }
    let mut command = bson::doc! { "create": name, "timeseries": ts };
    if let Some(e) = opts.expire_after_seconds {
        command.insert("expireAfterSeconds", e);
    }
    Ok(command)
}
