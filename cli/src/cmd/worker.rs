//! `tscoll worker`: serves a database as one shard of a cluster (feature `cluster`,
//! docs/scale-out.md): the coordinator's query stages, writes and collection commands over
//! one port, until SIGINT or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use tscoll_cluster::WorkerOptions;

use super::{CmdResult, DbArgs, open_db};

/// Arguments of `tscoll worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Address to listen on (port 0: one the system picks, printed). Loopback by default;
    /// any other needs --token-file.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7100")]
    pub(crate) listen: SocketAddr,
    /// The file holding the cluster's shared token (its first line): every request must
    /// carry it. Required beyond loopback.
    #[arg(long, value_name = "FILE")]
    pub(crate) token_file: Option<PathBuf>,
    /// The memory (MiB) the query stages running on this worker may hold together in
    /// DataFusion's sorts, aggregates and joins; sorts and aggregates spill to temporary
    /// files beyond it, other operators fail (as `tscoll sql --memory-limit`).
    #[arg(long, value_name = "MIB", default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) memory_limit: u32,
}

/// Runs `tscoll worker`: opens (creating it if missing) the database, serves it and prints
/// `worker listening on ADDR, database DIR` on stderr; on SIGINT or SIGTERM stops taking
/// requests, lets those under way finish and closes the database.
///
/// # Errors
/// A token file that cannot be used; a non-loopback address without a token; the database
/// cannot be opened or closed; the address cannot be bound.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let options = WorkerOptions {
        listen: args.listen,
        token: args
            .token_file
            .as_deref()
            .map(tscoll_cluster::read_token)
            .transpose()?,
        memory_bytes: Some(usize::try_from(args.memory_limit)?.saturating_mul(1 << 20)),
    };
    // Refused before the database is opened (or created).
    options.check()?;
    let db = open_db(&args.db.db)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let handle = runtime.block_on(tscoll_cluster::start(db.clone(), options))?;
    errln!(
        "worker listening on {}, database {}",
        handle.local_addr(),
        args.db.db.display()
    );
    runtime.block_on(async {
        tscoll_server::shutdown_signal().await?;
        handle.shutdown().await?;
        CmdResult::Ok(())
    })?;
    drop(runtime);
    db.close()
        .map_err(|e| format!("closing {}: {e}", args.db.db.display()))?;
    errln!("tscoll: worker stopped; the database is closed");
    Ok(ExitCode::SUCCESS)
}
