//! Authentication commands: `saslStart` and `saslContinue` with SCRAM-SHA-256, the users
//! of the database directory's user store ([`UserStore`]).
//!
//! The store is read at each `saslStart`, so users added by `tscoll user add` while the
//! server runs can log in. A conversation is kept on its connection; its id is always 1.
//! With `options: {skipEmptyExchange: true}` (every current driver), the `saslContinue`
//! that carries the client's proof ends the conversation; otherwise one more, empty,
//! exchange does.

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};

use super::args;
use super::error::{CommandError, CommandResult};
use crate::auth::{AuthError, MECHANISM, ScramServer, UserStore};
use crate::state::{Conversation, Session, Shared};

fn auth_error(e: &AuthError) -> CommandError {
    let (code, name) = e.code();
    CommandError::new(code, name, e.to_string())
}

fn payload(cmd: &Document) -> Result<&[u8], CommandError> {
    match cmd.get("payload") {
        Some(Bson::Binary(b)) => Ok(&b.bytes),
        Some(Bson::String(s)) => Ok(s.as_bytes()),
        _ => Err(CommandError::type_mismatch("payload", "binData")),
    }
}

fn binary(bytes: Vec<u8>) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// `saslStart`: the client's first message in, the server's first message out.
pub(crate) fn sasl_start(
    shared: &Shared,
    session: &mut Session,
    db: &str,
    cmd: &Document,
) -> CommandResult {
    session.conversation = None;
    let mechanism = args::string(cmd, "mechanism")?;
    if mechanism != MECHANISM {
        return Err(auth_error(&AuthError::MechanismUnavailable(
            mechanism.to_owned(),
        )));
    }
    if db != "admin" {
        // Users live in `admin`, as the ones `tscoll user add` makes.
        return Err(auth_error(&AuthError::AuthenticationFailed));
    }
    let store = UserStore::open(shared.db.path()).map_err(|e| auth_error(&e))?;
    let (server, first) = ScramServer::start(payload(cmd)?, |user| store.credential(user))
        .map_err(|e| auth_error(&e))?;
    let skip_empty = args::opt_doc(cmd, "options")?
        .map(|o| args::opt_bool(o, "skipEmptyExchange", false))
        .transpose()?
        .unwrap_or(false);
    session.conversation = Some(Conversation::Started {
        server: Box::new(server),
        skip_empty,
    });
    Ok(doc! { "conversationId": 1, "done": false, "payload": binary(first), "ok": 1.0 })
}

/// `saslContinue`: the client's proof in, the server's signature out (and, without
/// `skipEmptyExchange`, a last empty exchange).
pub(crate) fn sasl_continue(session: &mut Session, cmd: &Document) -> CommandResult {
    let conversation = session.conversation.take();
    match conversation {
        Some(Conversation::Started { server, skip_empty }) => {
            let (user, last) = server.finish(payload(cmd)?).map_err(|e| auth_error(&e))?;
            if skip_empty {
                session.user = Some(user);
            } else {
                session.conversation = Some(Conversation::Proven { user });
            }
            Ok(doc! { "conversationId": 1, "done": skip_empty, "payload": binary(last), "ok": 1.0 })
        }
        Some(Conversation::Proven { user }) => {
            session.user = Some(user);
            Ok(doc! { "conversationId": 1, "done": true, "payload": binary(Vec::new()), "ok": 1.0 })
        }
        None => Err(CommandError::new(
            17,
            "ProtocolError",
            "No SASL session state found: saslContinue without a saslStart",
        )),
    }
}
