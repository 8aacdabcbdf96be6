//! The errors of starting and running a server.

use thiserror::Error;

/// Why a server could not start or stopped with a failure.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The address could not be bound (in use, not local, no permission).
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The options do not go together (a non-loopback address without authentication, …).
    #[error("{0}")]
    Config(String),
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// The engine failed (opening the user store, closing the database).
    #[error(transparent)]
    Engine(#[from] tscoll_engine::Error),
    /// An I/O failure outside a connection (the runtime, the signal handlers).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
