//! Logic of the `server_commands` fuzz target, shared by
//! `fuzz/fuzz_targets/server_commands.rs` (cargo-fuzz) and `server/tests/fuzz_corpus.rs`
//! (replays the committed corpus on stable with `cargo test`).
//!
//! The input is what a client sends on one connection: messages back to back, each framed by
//! its first 4 bytes. Each is answered by a [`Connection`] of a [`Service`] over a real
//! database (one per process, emptied after each input): the command parser and every
//! command run on whatever the input holds. A message that does not decode ends the input
//! (the server closes the connection then); every other one must be answered with a message
//! that decodes and whose document has `ok` (or, flagged `moreToCome`, not answered). Nothing
//! may panic.

#![allow(dead_code, unreachable_pub)]

use std::sync::OnceLock;

use tscoll_engine::{Database, DatabaseOptions};
use tscoll_server::wire::{self, Message, OP_QUERY, OpReply};
use tscoll_server::{ServerOptions, Service};

/// The limit of one message, in bytes (smaller than the server's, so inputs stay small).
pub const MAX: usize = 1 << 20;

fn service() -> &'static Service {
    static SERVICE: OnceLock<(Service, tempfile::TempDir)> = OnceLock::new();
    &SERVICE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temporary directory");
            let db = Database::open(dir.path(), DatabaseOptions::default()).expect("database");
            let options = ServerOptions {
                max_message_bytes: MAX,
                ..ServerOptions::default()
            };
            (Service::new(db, options).expect("service"), dir)
        })
        .0
}

/// `server_commands` target.
pub fn server_commands_target(data: &[u8]) {
    let service = service();
    let mut connection = service.connect("127.0.0.1:1".parse().expect("address"));
    let mut rest = data;
    while let Some(first4) = rest.get(..4) {
        let Ok(len) = wire::frame_length_limited(first4, MAX) else {
            break;
        };
        let Some(message) = rest.get(..len) else {
            break;
        };
        rest = &rest[len..];
        let Ok(reply) = connection.handle(message) else {
            break;
        };
        let Some(reply) = reply else {
            continue;
        };
        let op_code = i32::from_le_bytes(message[12..16].try_into().expect("4 bytes"));
        let body = match op_code {
            OP_QUERY => {
                let (_, r) = OpReply::decode(&reply, usize::MAX).expect("an OP_REPLY decodes");
                r.documents.into_iter().next().expect("a reply document")
            }
            _ => match wire::decode(&reply, usize::MAX).expect("a reply decodes").1 {
                Message::Msg(m) => m.body,
                other => panic!("a reply of another kind: {other:?}"),
            },
        };
        assert!(body.contains_key("ok"), "a reply without ok: {body}");
    }
    // The next input starts from an empty database.
    let db = service.database();
    if let Ok(names) = db.list_collections() {
        for (name, _) in names {
            let _ = db.drop_collection(&name);
        }
    }
}
