//! A server on a temporary database, and the official driver connected to it.

#![allow(dead_code, unreachable_pub, clippy::new_without_default)]

use mongodb::sync::Client;
use tscoll_engine::{Database, DatabaseOptions};
use tscoll_server::{Server, ServerOptions};

/// A running server, its client and its directory.
pub struct Fixture {
    pub server: Option<Server>,
    pub client: Client,
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        Fixture::with_options(ServerOptions::default())
    }

    pub fn with_options(options: ServerOptions) -> Fixture {
        Fixture::with_options_and_client(options, "")
    }

    /// A server with `options`, and a client with `uri_options` (`&name=value…`).
    pub fn with_options_and_client(mut options: ServerOptions, uri_options: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(dir.path(), DatabaseOptions::default()).unwrap();
        options.bind = "127.0.0.1:0".parse().unwrap();
        let server = Server::spawn(db, options).unwrap();
        let client = client(&server, uri_options);
        Fixture {
            server: Some(server),
            client,
            dir,
        }
    }

    pub fn uri(&self, extra: &str) -> String {
        uri(self.server.as_ref().unwrap(), extra)
    }

    /// Stops the server; the database is closed.
    pub fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().unwrap();
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            let _ = s.stop();
        }
    }
}

pub fn uri(server: &Server, extra: &str) -> String {
    format!(
        "mongodb://{}/?directConnection=true&serverSelectionTimeoutMS=5000{extra}",
        server.local_addr()
    )
}

pub fn client(server: &Server, extra: &str) -> Client {
    Client::with_uri_str(uri(server, extra)).unwrap()
}

/// The code of a driver error from a command failure.
pub fn code(e: &mongodb::error::Error) -> i32 {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::Command(c) => c.code,
        mongodb::error::ErrorKind::InsertMany(m) => m
            .write_errors
            .as_ref()
            .and_then(|w| w.first())
            .map_or(-1, |w| w.code),
        mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteError(w)) => w.code,
        other => panic!("not a command error: {other:?}"),
    }
}
