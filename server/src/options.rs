//! What a server is started with.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The certificate and key of a TLS listener (PEM files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, PEM.
    pub cert: PathBuf,
    /// The private key, PEM.
    pub key: PathBuf,
}

/// Options of [`Server::start`](crate::Server::start).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Where to listen. Default `127.0.0.1:27017` (loopback only, as `mongod` since 3.6).
    pub bind: SocketAddr,
    /// Connections served at once; one more is closed as soon as it is accepted. Default 1024.
    pub max_connections: usize,
    /// The largest message accepted, in bytes (`maxMessageSizeBytes`). Default 48 000 000.
    /// A connection that sends a larger one is closed.
    pub max_message_bytes: usize,
    /// Bytes of received messages held at once over all connections; a connection whose
    /// next message would pass it waits until others are answered. Default 1 GiB, at least
    /// `max_message_bytes`.
    pub max_buffered_bytes: usize,
    /// A cursor left unread this long is closed (MongoDB's `cursorTimeoutMillis`). Default
    /// 10 minutes.
    pub cursor_timeout: Duration,
    /// Whether clients must authenticate (SCRAM-SHA-256) before any command but the
    /// handshake. Default `false`; it is on whenever the database directory's user store
    /// has users; [`Server::start`](crate::Server::start) refuses a non-loopback `bind`
    /// without it.
    pub require_auth: bool,
    /// TLS: the listener speaks TLS only. Default none.
    pub tls: Option<TlsFiles>,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            bind: SocketAddr::from(([127, 0, 0, 1], 27017)),
            max_connections: 1024,
            max_message_bytes: crate::wire::MAX_MESSAGE_BYTES,
            max_buffered_bytes: 1 << 30,
            cursor_timeout: Duration::from_secs(600),
            require_auth: false,
            tls: None,
        }
    }
}
