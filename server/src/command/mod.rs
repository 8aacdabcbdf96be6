//! The commands: a [`Request`] in, a reply document out.
//!
//! The dispatcher looks the command up by its name (the body's first field, case-sensitive
//! as in MongoDB; `isMaster` and `ismaster` both), checks authentication, runs it against
//! the engine and turns any failure into MongoDB's error document (`{ok: 0, errmsg, code,
//! codeName}`). An unknown command is `CommandNotFound` (59). Commands run on the calling
//! thread and the engine's calls block: [`Connection::handle`](crate::Connection::handle)
//! runs them, on tokio's blocking pool when the network layer calls it.
//!
//! | file | commands |
//! |---|---|
//! | `admin.rs` | `getLog`, `usersInfo`, `profile`, `validate`, `renameCollection` (refused) |
//! | `auth.rs` | `saslStart`, `saslContinue` (SCRAM-SHA-256), `logout` |
//! | `handshake.rs` | `hello`, `isMaster`, `buildInfo`, `ping`, `getParameter`, `hostInfo`, `connectionStatus`, `whatsmyuri` |
//! | `status.rs` | `serverStatus`, `collStats`, `dbStats` |
//! | `catalog.rs` | `listDatabases`, `dropDatabase`, `listCollections`, `create`, `drop`, `collMod` |
//! | `indexes.rs` | `createIndexes`, `listIndexes`, `dropIndexes` |
//! | `write.rs` | `insert`, `update`, `delete`, `findAndModify` |
//! | `read.rs` | `find`, `aggregate`, `count`, `distinct`, `explain`, `getMore`, `killCursors` |
//! | `cursor.rs` | the server-side cursors behind `find`, `aggregate` and `getMore` |

mod admin;
pub(crate) mod args;
mod auth;
mod catalog;
pub(crate) mod cursor;
mod error;
mod handshake;
mod indexes;
mod read;
mod request;
mod status;
mod write;

pub use error::{CommandError, CommandResult};
pub use handshake::{MAX_WIRE_VERSION, MAX_WRITE_BATCH_SIZE, MONGODB_VERSION};
pub use request::Request;

use bson::{Document, RawDocumentBuf, doc};

use crate::state::{Counters, Session, Shared};

/// The commands a connection may run before it authenticates (when the server requires it).
const OPEN_COMMANDS: [&str; 11] = [
    "hello",
    "isMaster",
    "ismaster",
    "buildInfo",
    "buildinfo",
    "ping",
    "saslStart",
    "saslContinue",
    "endSessions",
    "whatsmyuri",
    "connectionStatus",
];

/// A command's reply: a document, or bytes already encoded (the batches of a cursor, built
/// as they are read).
pub(crate) enum Reply {
    Doc(Document),
    Raw(RawDocumentBuf),
}

impl Reply {
    /// The reply's bytes, as a BSON document.
    pub(crate) fn into_raw(self) -> RawDocumentBuf {
        match self {
            Reply::Raw(raw) => raw,
            Reply::Doc(doc) => RawDocumentBuf::try_from(&doc).unwrap_or_else(|e| {
                let err = CommandError::of(
                    tscoll_engine::ErrorCode::InternalError,
                    format!("the reply cannot be encoded as BSON: {e}"),
                );
                RawDocumentBuf::try_from(&err.to_reply()).unwrap_or_default()
            }),
        }
    }
}

/// Runs one command for `session`; failures become error documents.
pub(crate) fn run(shared: &Shared, session: &mut Session, mut request: Request) -> Reply {
    let name = request.name().to_owned();
    match execute(shared, session, &name, &mut request) {
        Ok(Reply::Doc(mut doc)) => {
            if !doc.contains_key("ok") {
                doc.insert("ok", 1.0);
            }
            Reply::Doc(doc)
        }
        Ok(raw) => raw,
        Err(e) => Reply::Doc(e.to_reply()),
    }
}

fn execute(
    shared: &Shared,
    session: &mut Session,
    name: &str,
    request: &mut Request,
) -> Result<Reply, CommandError> {
    if shared.options.require_auth && session.user.is_none() && !OPEN_COMMANDS.contains(&name) {
        return Err(CommandError::unauthorized(name));
    }
    let db = request.db.clone();
    let db = db.as_str();
    let cmd = &request.body;
    let doc = |r: CommandResult| r.map(Reply::Doc);
    let raw = |r: Result<RawDocumentBuf, CommandError>| r.map(Reply::Raw);
    if !matches!(name, "find" | "getMore" | "insert" | "update" | "delete") {
        Counters::add(&shared.counters.command, 1);
    }
    match name {
        "hello" | "isMaster" | "ismaster" => doc(handshake::hello(shared, session, cmd, name)),
        "buildInfo" | "buildinfo" => doc(handshake::build_info()),
        "ping" => doc(Ok(doc! { "ok": 1.0 })),
        "getParameter" => doc(handshake::get_parameter(shared, cmd)),
        "hostInfo" => doc(handshake::host_info()),
        "connectionStatus" => doc(handshake::connection_status(session)),
        "whatsmyuri" => doc(handshake::whats_my_uri(session)),
        "saslStart" => doc(auth::sasl_start(shared, session, db, cmd)),
        "saslContinue" => doc(auth::sasl_continue(session, cmd)),
        "logout" => {
            session.user = None;
            doc(Ok(doc! { "ok": 1.0 }))
        }
        // Sessions are accepted and not kept: there are no transactions to end.
        "endSessions" | "killSessions" | "killAllSessions" | "refreshSessions" => {
            doc(Ok(doc! { "ok": 1.0 }))
        }
        "serverStatus" => doc(status::server_status(shared)),
        "getLog" => doc(admin::get_log(cmd)),
        "usersInfo" => doc(admin::users_info(shared, db, cmd)),
        "profile" => doc(admin::profile(cmd)),
        "validate" => doc(admin::validate(shared, db, cmd)),
        "renameCollection" => doc(admin::rename_collection()),
        "collStats" => doc(status::coll_stats(shared, db, cmd)),
        "dbStats" => doc(status::db_stats(shared, db, cmd)),
        "listDatabases" => doc(catalog::list_databases(shared, cmd)),
        "dropDatabase" => doc(catalog::drop_database(shared, db)),
        "listCollections" => raw(catalog::list_collections(shared, db, cmd)),
        "create" => doc(catalog::create(shared, db, cmd)),
        "drop" => doc(catalog::drop(shared, db, cmd)),
        "collMod" => doc(catalog::coll_mod(shared, db, cmd)),
        "createIndexes" => doc(indexes::create_indexes(shared, db, cmd)),
        "listIndexes" => raw(indexes::list_indexes(shared, db, cmd)),
        "dropIndexes" | "deleteIndexes" => doc(indexes::drop_indexes(shared, db, cmd)),
        "insert" => doc(write::insert(shared, db, request)),
        "update" => doc(write::update(shared, db, request)),
        "delete" => doc(write::delete(shared, db, request)),
        "findAndModify" | "findandmodify" => doc(write::find_and_modify(shared, db, cmd)),
        "find" => raw(read::find(shared, session, db, cmd)),
        "aggregate" => raw(read::aggregate(shared, session, db, cmd)),
        "count" => doc(read::count(shared, db, cmd)),
        "distinct" => doc(read::distinct(shared, db, cmd)),
        "explain" => doc(read::explain(shared, db, cmd)),
        "getMore" => raw(read::get_more(shared, session, db, cmd)),
        "killCursors" => doc(read::kill_cursors(shared, session, db, cmd)),
        other => Err(CommandError::command_not_found(other)),
    }
}
