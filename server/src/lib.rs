//! tscoll-server: MongoDB's wire protocol over tscoll, so that mongosh, Compass and
//! MongoDB's drivers can use tscoll's time-series collections (`tscoll serve`).
//!
//! The crate's layers, from the socket in:
//!
//! | module | what it does |
//! |---|---|
//! | `net/` | the listener (caps on connections and buffered bytes, the graceful stop) and one task per connection |
//! | `service.rs` | [`Service`] and [`Connection`]: a whole message in, its reply out, without a socket |
//! | [`wire`] | the messages: framing, OP_MSG, OP_QUERY / OP_REPLY |
//! | [`auth`] | SCRAM-SHA-256 and the user store |
//! | [`command`] | each command over `tscoll-engine`, with MongoDB's reply shapes and error codes |
//! | [`tls`] | the TLS listener's certificate and key (rustls) |
//! | `namespace.rs` | MongoDB's `database.collection` and tscoll's collection names |
//!
//! ```no_run
//! # use tscoll_engine::{Database, DatabaseOptions};
//! # use tscoll_server::{Server, ServerOptions};
//! let db = Database::open("data", DatabaseOptions::default())?;
//! let server = Server::spawn(db, ServerOptions::default())?; // 127.0.0.1:27017
//! println!("mongosh mongodb://{}", server.local_addr());
//! server.stop()?; // closes the connections and the database
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod auth;
pub mod command;
mod error;
mod namespace;
mod net;
mod options;
mod service;
mod state;
pub mod tls;
pub mod wire;

pub use error::ServerError;
pub use options::{ServerOptions, TlsFiles};
pub use service::{Connection, Service};

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;
use tscoll_engine::Database;

/// A running server: it listens, serves its connections on tokio, and shares one
/// [`Database`] between them.
pub struct Server {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    done: tokio::task::JoinHandle<()>,
    service: Service,
    /// The runtime [`Server::spawn`] made, if it made one.
    runtime: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds `options.bind` and starts serving `db` on the current tokio runtime.
    /// Authentication is required when `options.require_auth` says so or when the database
    /// directory's user store ([`auth::UserStore`]) has users.
    ///
    /// # Errors
    /// [`ServerError::Bind`] when the address cannot be bound; [`ServerError::Config`] for a
    /// non-loopback address without authentication; [`ServerError::Tls`] when the TLS
    /// certificate or key cannot be used.
    pub async fn start(db: Database, options: ServerOptions) -> Result<Server, ServerError> {
        let mut service = Service::new(db, options)?;
        let options = &service.shared.options;
        if net::beyond_loopback(&options.bind) && !options.require_auth {
            return Err(ServerError::Config(format!(
                "{} is reachable beyond this machine: tscoll serves it only with \
                 authentication; add a user with `tscoll user add --db {} <name>` first",
                options.bind,
                service.shared.db.path().display()
            )));
        }
        let tls = match &options.tls {
            Some(files) => Some(tls::acceptor(&files.cert, &files.key)?),
            None => None,
        };
        let bind = options.bind;
        let tcp = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|source| ServerError::Bind { addr: bind, source })?;
        let local_addr = tcp.local_addr()?;
        if let Some(shared) = Arc::get_mut(&mut service.shared) {
            shared.local_addr = local_addr;
        }
        let (stop, stop_rx) = watch::channel(false);
        let listener = net::Listener {
            tcp,
            service: service.clone(),
            tls,
        };
        let done = tokio::spawn(net::run(listener, stop_rx));
        Ok(Server {
            local_addr,
            stop,
            done,
            service,
            runtime: None,
        })
    }

    /// [`Server::start`] on a runtime of its own (worker threads, one per core): for a
    /// program that is not async, and for tests.
    ///
    /// # Errors
    /// As [`Server::start`]; [`ServerError::Io`] when the runtime cannot be made.
    pub fn spawn(db: Database, options: ServerOptions) -> Result<Server, ServerError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("tscoll-server")
            .build()?;
        let mut server = runtime.block_on(Server::start(db, options))?;
        server.runtime = Some(runtime);
        Ok(server)
    }

    /// The address the server listens on (with the port the system chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Waits until the server stops: after [`shutdown_signal`] or a stop.
    async fn wait(&mut self) {
        let _ = (&mut self.done).await;
    }

    /// Stops the server gracefully: no new connections; each open one ends once its
    /// command in progress is answered (waiting at most 30 s); the cursors are closed; then
    /// the database is closed cleanly (its write-ahead logs flushed and checkpointed).
    ///
    /// # Errors
    /// [`ServerError::Engine`] when the database cannot be closed cleanly.
    pub async fn shutdown(mut self) -> Result<(), ServerError> {
        let _ = self.stop.send(true);
        self.wait().await;
        self.service.close()
    }

    /// [`Server::shutdown`] for a server made by [`Server::spawn`] (from a thread outside
    /// the runtime).
    ///
    /// # Errors
    /// As [`Server::shutdown`].
    ///
    /// # Panics
    /// If called from inside a tokio runtime.
    pub fn stop(mut self) -> Result<(), ServerError> {
        match self.runtime.take() {
            Some(runtime) => runtime.block_on(self.shutdown()),
            None => tokio::runtime::Handle::current().block_on(self.shutdown()),
        }
    }

    /// [`Server::run_until_signal`] for a server made by [`Server::spawn`]: blocks the
    /// calling thread (outside the runtime) until SIGINT or SIGTERM, then stops gracefully.
    ///
    /// # Errors
    /// As [`Server::run_until_signal`].
    ///
    /// # Panics
    /// If called from inside a tokio runtime on a server [`Server::start`] made.
    pub fn serve_until_signal(mut self) -> Result<(), ServerError> {
        match self.runtime.take() {
            Some(runtime) => runtime.block_on(self.run_until_signal()),
            None => tokio::runtime::Handle::current().block_on(self.run_until_signal()),
        }
    }

    /// Serves until SIGINT (Ctrl-C) or SIGTERM, then stops gracefully ([`Server::shutdown`]).
    ///
    /// # Errors
    /// As [`Server::shutdown`]; [`ServerError::Io`] when the signal handlers cannot be set.
    pub async fn run_until_signal(self) -> Result<(), ServerError> {
        shutdown_signal().await?;
        self.shutdown().await
    }
}

/// Resolves on SIGINT or SIGTERM (on Unix; Ctrl-C elsewhere): what
/// [`Server::run_until_signal`] waits for, for other long-running services of a process
/// (`tscoll worker`) to stop alike.
///
/// # Errors
/// The signal handlers cannot be set.
pub async fn shutdown_signal() -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}
