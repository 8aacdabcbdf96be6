//! The server without its socket: a [`Service`] answers the messages of its
//! [`Connection`]s, whole messages in, whole replies out.
//!
//! The network layer (`net/`) frames bytes and hands each message to
//! [`Connection::handle`] on tokio's blocking pool; a program with its own transport (or a
//! test, or a fuzzer) can call it directly.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tscoll_engine::Database;

use crate::command::cursor::Cursors;
use crate::command::{self, CommandError, Request};
use crate::state::{Counters, Session, Shared};
use crate::wire::{self, Message, OpMsg, OpReply, WireError};
use crate::{ServerError, ServerOptions, auth};

/// The commands over one [`Database`], shared by every connection. Cheap to clone.
#[derive(Clone)]
pub struct Service {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl Service {
    /// A service over `db` with `options` (its limits, cursor timeout and authentication;
    /// `bind` is the address `serverStatus` and `$collStats` report). Authentication is
    /// required when `options.require_auth` says so or when the database directory's user
    /// store ([`auth::UserStore`]) has users.
    ///
    /// # Errors
    /// [`ServerError::Config`] when the user store cannot be read.
    pub fn new(db: Database, mut options: ServerOptions) -> Result<Service, ServerError> {
        let users =
            auth::UserStore::open(db.path()).map_err(|e| ServerError::Config(e.to_string()))?;
        options.require_auth |= !users.is_empty();
        Ok(Service {
            shared: Arc::new(Shared {
                db,
                cursors: Cursors::new(options.cursor_timeout),
                local_addr: options.bind,
                options,
                counters: Counters::default(),
                started: Instant::now(),
            }),
        })
    }

    /// The database served.
    pub fn database(&self) -> &Database {
        &self.shared.db
    }

    /// Whether clients must authenticate.
    pub fn requires_auth(&self) -> bool {
        self.shared.options.require_auth
    }

    /// A new connection from `peer`: its session (authentication, SCRAM conversation) and
    /// its number (`connectionId`).
    pub fn connect(&self, peer: SocketAddr) -> Connection {
        Counters::add(&self.shared.counters.connections_total, 1);
        Connection {
            shared: Arc::clone(&self.shared),
            session: Session {
                connection_id: Counters::get(&self.shared.counters.connections_total),
                peer,
                user: None,
                conversation: None,
            },
            next_request_id: 0,
        }
    }

    /// Closes idle cursors past the timeout ([`ServerOptions::cursor_timeout`]); returns
    /// how many.
    pub fn close_idle_cursors(&self) -> usize {
        self.shared.cursors.reap(Instant::now())
    }

    /// Closes every cursor and then the database (cleanly: its write-ahead logs flushed and
    /// checkpointed).
    ///
    /// # Errors
    /// [`ServerError::Engine`] when the database cannot be closed cleanly.
    pub fn close(&self) -> Result<(), ServerError> {
        self.shared.cursors.close_matching(|_| true);
        self.shared.db.close()?;
        Ok(())
    }
}

/// One client's connection to a [`Service`].
pub struct Connection {
    shared: Arc<Shared>,
    session: Session,
    next_request_id: i32,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("connection_id", &self.session.connection_id)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Answers one whole message (`message`: its 16-byte header included, as many bytes as
    /// the header's length): the reply message, or `None` for an OP_MSG flagged
    /// `moreToCome`. A command's failure is a reply (MongoDB's error document); an OP_MSG
    /// or OP_QUERY is answered in kind; an OP_COMPRESSED with an error.
    ///
    /// # Errors
    /// The message cannot be decoded ([`wire::decode`]): the caller closes the connection.
    pub fn handle(&mut self, message: &[u8]) -> Result<Option<Vec<u8>>, WireError> {
        let max = self.shared.options.max_message_bytes;
        let (header, message) = wire::decode(message, max)?;
        Counters::add(&self.shared.counters.requests, 1);
        self.next_request_id = self.next_request_id.wrapping_add(1);
        let request_id = self.next_request_id;
        match message {
            Message::Msg(msg) => {
                let more_to_come = msg.more_to_come();
                let OpMsg {
                    body, sequences, ..
                } = msg;
                let reply = self.run(Request::from_msg(body, sequences));
                Ok((!more_to_come).then(|| {
                    OpMsg::encode_raw_reply(reply.as_bytes(), request_id, header.request_id)
                }))
            }
            Message::Query(query) => {
                let reply = self.run(Request::from_query(
                    &query.full_collection_name,
                    query.query,
                ));
                let doc = bson::Document::try_from(reply.as_ref()).unwrap_or_else(|e| {
                    CommandError::new(1, "InternalError", format!("the reply cannot be read: {e}"))
                        .to_reply()
                });
                OpReply::single(doc)
                    .encode(request_id, header.request_id)
                    .map(Some)
            }
            Message::Compressed { .. } => {
                let err = CommandError::new(
                    2,
                    "BadValue",
                    "OP_COMPRESSED is not supported: tscoll offers no compressors",
                );
                OpMsg::new(err.to_reply())
                    .encode(request_id, header.request_id, false)
                    .map(Some)
            }
        }
    }

    fn run(&mut self, request: Result<Request, CommandError>) -> bson::RawDocumentBuf {
        let reply = match request {
            Ok(request) => command::run(&self.shared, &mut self.session, request),
            Err(e) => command::Reply::Doc(e.to_reply()),
        };
        reply.into_raw()
    }
}
