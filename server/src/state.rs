//! What the connections of a server share, and what each one keeps.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tscoll_engine::Database;

use crate::command::cursor::Cursors;
use crate::options::ServerOptions;

/// Counters of `serverStatus`.
#[derive(Default)]
pub(crate) struct Counters {
    /// `opcounters`: measurements inserted, finds, updates, deletes, getMores, other commands.
    pub(crate) insert: AtomicU64,
    pub(crate) query: AtomicU64,
    pub(crate) update: AtomicU64,
    pub(crate) delete: AtomicU64,
    pub(crate) getmore: AtomicU64,
    pub(crate) command: AtomicU64,
    /// `network`: bytes received and sent, requests.
    pub(crate) bytes_in: AtomicU64,
    pub(crate) bytes_out: AtomicU64,
    pub(crate) requests: AtomicU64,
    /// `connections`: open now, and opened since the start.
    pub(crate) connections_current: AtomicU64,
    pub(crate) connections_total: AtomicU64,
    /// Connections closed at once because `max_connections` were open.
    pub(crate) connections_rejected: AtomicU64,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// What every connection of a server shares.
pub(crate) struct Shared {
    /// The database served.
    pub(crate) db: Database,
    pub(crate) options: ServerOptions,
    pub(crate) cursors: Cursors,
    pub(crate) counters: Counters,
    pub(crate) started: Instant,
    /// The address the server listens on.
    pub(crate) local_addr: SocketAddr,
}

/// What one connection keeps between its commands.
pub(crate) struct Session {
    /// `connectionId` of `hello`: the connection's number since the server started (from 1).
    pub(crate) connection_id: u64,
    /// The client's address (`whatsmyuri`).
    pub(crate) peer: SocketAddr,
    /// The authenticated user, if any.
    pub(crate) user: Option<String>,
    /// A SCRAM conversation in progress.
    pub(crate) conversation: Option<Conversation>,
}

/// Where a SCRAM conversation of a connection stands.
pub(crate) enum Conversation {
    /// `saslStart` answered; the client's proof is awaited.
    Started {
        server: Box<crate::auth::ScramServer>,
        /// The client asked to skip the last, empty, exchange.
        skip_empty: bool,
    },
    /// The proof was right; the last, empty, exchange is awaited.
    Proven { user: String },
}
