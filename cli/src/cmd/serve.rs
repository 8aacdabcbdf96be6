//! `tscoll serve`: MongoDB's wire protocol on a database, for mongosh and MongoDB's drivers
//! (docs/server.md).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use tscoll_server::{Server, ServerOptions, TlsFiles};

use super::{CmdResult, DbArgs, open_db};

/// Arguments of `tscoll serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Address to listen on. Loopback by default; any other needs users (`tscoll user add`).
    #[arg(long, default_value = "127.0.0.1:27017")]
    pub(crate) bind: SocketAddr,
    /// TLS certificate chain (PEM); with `--tls-key`, the server speaks TLS only.
    #[arg(long, requires = "tls_key", value_name = "FILE")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// TLS private key (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, requires = "tls_cert", value_name = "FILE")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Connections served at once; more are closed as they come.
    #[arg(long, default_value_t = 1024)]
    pub(crate) max_connections: usize,
    /// Bytes of received messages held at once over all connections (MiB).
    #[arg(long, default_value_t = 1024)]
    pub(crate) max_buffered_mib: usize,
    /// Seconds a cursor may stay unread before it is closed (MongoDB's 10 minutes).
    #[arg(long, default_value_t = 600)]
    pub(crate) cursor_timeout_seconds: u64,
}

/// Runs `tscoll serve` until SIGINT or SIGTERM, then closes the database cleanly.
///
/// # Errors
/// The database cannot be opened; the address cannot be bound; TLS files that cannot be
/// used; a non-loopback address without users.
pub(crate) fn run(args: &Args) -> CmdResult<ExitCode> {
    let db = open_db(&args.db.db)?;
    let options = ServerOptions {
        bind: args.bind,
        max_connections: args.max_connections.max(1),
        max_buffered_bytes: args.max_buffered_mib.saturating_mul(1 << 20),
        cursor_timeout: Duration::from_secs(args.cursor_timeout_seconds.max(1)),
        tls: match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
            }),
            _ => None,
        },
        ..ServerOptions::default()
    };
    let tls = options.tls.is_some();
    let server = Server::spawn(db, options)?;
    let addr = server.local_addr();
    errln!(
        "tscoll: serving {} on {addr}{}: mongosh \"mongodb://{addr}/{}\"",
        args.db.db.display(),
        if tls { " (TLS)" } else { "" },
        if tls { "?tls=true" } else { "" }
    );
    server.serve_until_signal()?;
    errln!("tscoll: stopped; the database is closed");
    Ok(ExitCode::SUCCESS)
}
