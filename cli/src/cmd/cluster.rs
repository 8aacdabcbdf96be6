//! The cluster arguments the cluster commands share (`--workers HOST:PORT,...` or
//! `--cluster FILE`, and `--token-file FILE`), the connection they open, and the per-shard
//! printing of a command broadcast to every worker (feature `cluster`, docs/scale-out.md).
//!
//! A command given `--workers` or `--cluster` runs on the cluster instead of `--db`: its
//! `--db` is then not required, and refused ([`db_unless_cluster`]). Each shard's answer is
//! printed apart, labelled `shard I (HOST:PORT)`, so that per-shard ids and figures never
//! mix; a shard that failed is reported on stderr, naming its worker, and the command's exit
//! code is non-zero.

use std::path::PathBuf;
use std::process::ExitCode;

use bson::Document;
use tscoll_cluster::{Cluster, ClusterConfig};
use url::Url;

use super::{CmdResult, DbArgs};

/// The help heading of the cluster arguments.
const CLUSTER_OPTIONS: &str = "Cluster options";

/// `--workers`, `--cluster` and `--token-file`: the cluster a command runs on instead of
/// `--db`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ClusterArgs {
    /// Run on the cluster of these workers instead of --db: `HOST:PORT` (or
    /// `http://HOST:PORT`) separated by commas; the order numbers the shards (the first
    /// worker holds shard 0), so keep it.
    #[arg(long, value_name = "HOST:PORT,...", conflicts_with_all = ["db", "cluster"],
          help_heading = CLUSTER_OPTIONS)]
    pub(crate) workers: Option<String>,
    /// Run on the cluster of this TOML file instead of --db: `workers = ["HOST:PORT", ...]`
    /// in shard order, and optionally `token_file = "FILE"` (relative to the file).
    #[arg(long, value_name = "FILE", conflicts_with = "db", help_heading = CLUSTER_OPTIONS)]
    pub(crate) cluster: Option<PathBuf>,
    /// The file holding the workers' shared token (its first line), with --workers; a
    /// cluster file names its own.
    #[arg(long, value_name = "FILE", requires = "workers", help_heading = CLUSTER_OPTIONS)]
    pub(crate) token_file: Option<PathBuf>,
}

/// `--db` of a command that also runs on a cluster: not required (its value is empty when
/// not given), since `--workers` or `--cluster` can stand for it ([`ClusterArgs::connect`]
/// checks that one of them is given). Applied with `#[command(mut_arg("db", ...))]`.
pub(crate) fn db_unless_cluster(arg: clap::Arg) -> clap::Arg {
    arg.required(false)
        // An empty path stands for none (clap's own path parser refuses it).
        .value_parser(|s: &str| Ok::<PathBuf, std::convert::Infallible>(PathBuf::from(s)))
        .default_value("")
        .hide_default_value(true)
        .help("Database directory; or run on a cluster: --workers or --cluster")
}

/// A connection to a cluster: its workers and the runtime its calls run on.
pub(crate) struct Connected {
    /// The cluster.
    pub(crate) cluster: Cluster,
    /// The tokio runtime of its calls.
    pub(crate) runtime: tokio::runtime::Runtime,
}

impl Connected {
    /// Runs `future` (a call of the cluster) to its end.
    pub(crate) fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// Runs `command` on every worker ([`Cluster::command`]) and prints each shard's reply
    /// with `print` (the lines of a successful reply); returns the exit code: a failure
    /// when any shard failed.
    ///
    /// # Errors
    /// A shard key given with another command than `create`.
    pub(crate) fn broadcast(
        &self,
        command: &Document,
        shard_key: Option<&str>,
        print: impl FnMut(&Document) -> Result<Vec<String>, String>,
    ) -> CmdResult<ExitCode> {
        let replies = self.block_on(self.cluster.command(command, shard_key))?;
        Ok(print_replies(replies, print))
    }
}

impl ClusterArgs {
    /// The cluster these arguments name, connected lazily; `None` when neither `--workers`
    /// nor `--cluster` is given (the command runs on `db`).
    ///
    /// # Errors
    /// Neither a cluster nor `--db`; a worker list, cluster file or token file that cannot
    /// be used.
    pub(crate) fn connect(&self, db: &DbArgs) -> CmdResult<Option<Connected>> {
        let config = match (&self.workers, &self.cluster) {
            (Some(list), _) => {
                let token = self
                    .token_file
                    .as_deref()
                    .map(tscoll_cluster::read_token)
                    .transpose()?;
                ClusterConfig::from_list(list)
                    .map_err(|e| format!("--workers: {e}"))?
                    .with_token(token)
            }
            (None, Some(file)) => ClusterConfig::from_file(file)?,
            (None, None) if db.db.as_os_str().is_empty() => {
                return Err("give the database (--db DIR) or a cluster (--workers \
                            HOST:PORT,... or --cluster FILE)"
                    .into());
            }
            (None, None) => return Ok(None),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        // The workers' channels are made (not connected) on the runtime.
        let cluster = {
            let _entered = runtime.enter();
            Cluster::new(config)?
        };
        Ok(Some(Connected { cluster, runtime }))
    }
}

/// `HOST:PORT` of a worker's URL.
pub(crate) fn host_port(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        _ => url.to_string(),
    }
}

/// The label of shard `shard` held by worker `url`: `shard I (HOST:PORT)`.
pub(crate) fn shard_label(shard: usize, url: &Url) -> String {
    format!("shard {shard} ({})", host_port(url))
}

/// Prints one line (or block) per shard of `replies` (in shard order): a successful reply
/// as the lines `print` makes of it (one line after the label, several indented under it),
/// a failed one (`ok: 0`, or a worker that cannot be reached) on stderr. Returns the exit
/// code: a failure when any shard failed.
pub(crate) fn print_replies(
    replies: Vec<(Url, Result<Document, tscoll_cluster::Error>)>,
    mut print: impl FnMut(&Document) -> Result<Vec<String>, String>,
) -> ExitCode {
    let mut failed = false;
    for (shard, (url, reply)) in replies.into_iter().enumerate() {
        let label = shard_label(shard, &url);
        let outcome = match reply {
            Ok(r) if r.get_f64("ok").ok() == Some(1.0) => print(&r),
            Ok(r) => Err(format!(
                "worker {url}: {} ({})",
                r.get_str("errmsg").unwrap_or("failed"),
                r.get_str("codeName").unwrap_or("no code")
            )),
            Err(e @ tscoll_cluster::Error::Worker { .. }) => Err(e.to_string()),
            Err(e) => Err(format!("worker {url}: {e}")),
        };
        match outcome {
            Ok(lines) if lines.len() == 1 => outln!("{label}: {}", lines[0]),
            Ok(lines) => {
                outln!("{label}:");
                for line in lines {
                    outln!("  {line}");
                }
            }
            Err(e) => {
                failed = true;
                errln!("tscoll: error: {label}: {e}");
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
