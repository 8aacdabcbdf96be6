//! Logic of the `wire_decode` fuzz target, shared by `fuzz/fuzz_targets/wire_decode.rs`
//! (cargo-fuzz, nightly) and by `server/tests/fuzz_corpus.rs` (replays the committed corpus
//! on stable with `cargo test`).
//!
//! The input is what a server reads from a connection: messages back to back, each framed by
//! its first 4 bytes (`frame_length_limited`) and decoded (`wire::decode`). Every message that
//! decodes is encoded again (with and without a checksum for an OP_MSG) and decoded again: the
//! result must be the same message, its documents the same bit for bit. No decoded document
//! nests deeper than `MAX_BSON_DEPTH`. The whole input is also decoded as one message under a
//! small limit, and as an OP_REPLY. Nothing may panic.

#![allow(dead_code, unreachable_pub)]

use bson::{Bson, Document};
use tscoll_server::wire::{
    self, CHECKSUM_PRESENT, Message, MsgHeader, OP_COMPRESSED, OP_MSG, OP_QUERY, OP_REPLY, OpMsg,
    OpReply, WireError,
};

/// The limit of the messages of the stream, in bytes: the server's default.
pub const MAX: usize = wire::MAX_MESSAGE_BYTES;
/// The limit the whole input is decoded under as one message, in bytes.
pub const SMALL_MAX: usize = 4096;

/// `wire_decode` target: `data` as a stream of messages, then as one message under
/// [`SMALL_MAX`]. Panics when a decoded message does not survive a round trip.
pub fn wire_decode_target(data: &[u8]) {
    let mut rest = data;
    while let Some(first4) = rest.get(..4) {
        let Ok(len) = wire::frame_length_limited(first4, MAX) else {
            break;
        };
        let Some(bytes) = rest.get(..len) else {
            break;
        };
        rest = &rest[len..];
        check_message(bytes, MAX);
    }
    check_message(data, SMALL_MAX);
}

/// Decodes `bytes` as one message under `max` (as a request, then as an OP_REPLY) and checks
/// what decodes.
fn check_message(bytes: &[u8], max: usize) {
    if let Ok((header, message)) = wire::decode(bytes, max) {
        // A decoded message is framed by its own length, and is refused one byte under it.
        assert_eq!(wire::frame_length_limited(bytes, max), Ok(bytes.len()));
        assert_eq!(header.message_length as usize, bytes.len());
        assert!(matches!(
            wire::decode(bytes, bytes.len() - 1),
            Err(WireError::TooLarge { .. })
        ));
        round_trip(&header, &message);
    }
    if let Ok((header, reply)) = OpReply::decode(bytes, max) {
        assert_eq!(header.op_code, OP_REPLY);
        reply.documents.iter().for_each(assert_depth);
        // An OP_REPLY is an answer, not a request.
        assert_eq!(
            wire::decode(bytes, max),
            Err(WireError::UnknownOpCode(OP_REPLY))
        );
        if let Ok(again) = reply.encode(header.request_id, header.response_to) {
            let (h2, back) = OpReply::decode(&again, MAX).expect("a re-encoded OP_REPLY decodes");
            assert_same_header(&h2, &header, header.response_to, again.len());
            assert_eq!(back.response_flags, reply.response_flags);
            assert_eq!(back.cursor_id, reply.cursor_id);
            assert_eq!(back.starting_from, reply.starting_from);
            assert!(same_docs(&back.documents, &reply.documents));
        }
    }
}

/// Encodes a decoded message again and checks that it decodes to the same message.
fn round_trip(header: &MsgHeader, message: &Message) {
    match message {
        Message::Msg(m) => {
            assert_eq!(header.op_code, OP_MSG);
            assert_depth(&m.body);
            m.sequences
                .iter()
                .flat_map(|s| &s.documents)
                .for_each(assert_depth);
            let had_checksum = m.flags & CHECKSUM_PRESENT != 0;
            for with_checksum in [had_checksum, !had_checksum] {
                let Ok(again) = m.encode(header.request_id, header.response_to, with_checksum)
                else {
                    continue;
                };
                let (h2, back) = wire::decode(&again, MAX).expect("a re-encoded OP_MSG decodes");
                assert_same_header(&h2, header, header.response_to, again.len());
                let Message::Msg(back) = back else {
                    panic!("an OP_MSG decodes to {back:?}");
                };
                let mut expected = m.clone();
                expected.flags = if with_checksum {
                    m.flags | CHECKSUM_PRESENT
                } else {
                    m.flags & !CHECKSUM_PRESENT
                };
                assert!(
                    same_msg(&back, &expected),
                    "OP_MSG round trip: {back:?} != {expected:?}"
                );
                // Encoding is deterministic: the message decoded again encodes to the same bytes.
                let twice = back.encode(header.request_id, header.response_to, with_checksum);
                assert_eq!(twice.ok().as_ref(), Some(&again));
            }
        }
        Message::Query(q) => {
            assert_eq!(header.op_code, OP_QUERY);
            assert_depth(&q.query);
            q.return_fields_selector.iter().for_each(assert_depth);
            if let Ok(again) = q.encode(header.request_id) {
                let (h2, back) = wire::decode(&again, MAX).expect("a re-encoded OP_QUERY decodes");
                // OpQuery::encode writes `responseTo` 0.
                assert_same_header(&h2, header, 0, again.len());
                let Message::Query(back) = back else {
                    panic!("an OP_QUERY decodes to {back:?}");
                };
                assert_eq!(back.flags, q.flags);
                assert_eq!(back.full_collection_name, q.full_collection_name);
                assert_eq!(back.number_to_skip, q.number_to_skip);
                assert_eq!(back.number_to_return, q.number_to_return);
                assert!(same_doc(&back.query, &q.query));
                match (&back.return_fields_selector, &q.return_fields_selector) {
                    (Some(a), Some(b)) => assert!(same_doc(a, b)),
                    (None, None) => {}
                    (a, b) => panic!("OP_QUERY returnFieldsSelector {a:?} != {b:?}"),
                }
            }
        }
        // Not decompressed, and not encodable: only its header is checked.
        Message::Compressed { .. } => assert_eq!(header.op_code, OP_COMPRESSED),
    }
}

/// `back`'s header is `original`'s, with `response_to` and a length of `len` bytes.
fn assert_same_header(back: &MsgHeader, original: &MsgHeader, response_to: i32, len: usize) {
    assert_eq!(back.request_id, original.request_id);
    assert_eq!(back.response_to, response_to);
    assert_eq!(back.op_code, original.op_code);
    assert_eq!(back.message_length as usize, len);
}

/// The same OP_MSG: flags, identifiers and documents bit for bit.
fn same_msg(a: &OpMsg, b: &OpMsg) -> bool {
    a.flags == b.flags
        && same_doc(&a.body, &b.body)
        && a.sequences.len() == b.sequences.len()
        && a.sequences
            .iter()
            .zip(&b.sequences)
            .all(|(x, y)| x.identifier == y.identifier && same_docs(&x.documents, &y.documents))
}

fn same_docs(a: &[Document], b: &[Document]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_doc(x, y))
}

/// The same document bit for bit: the same BSON bytes (`==` would call two NaNs different and
/// `0.0` and `-0.0` equal).
fn same_doc(a: &Document, b: &Document) -> bool {
    match (a.to_vec(), b.to_vec()) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// `doc` nests documents and arrays at most [`wire::MAX_BSON_DEPTH`] levels deep.
fn assert_depth(doc: &Document) {
    fn depth(doc: &Document) -> usize {
        doc.values().map(value_depth).max().unwrap_or(0)
    }
    fn value_depth(v: &Bson) -> usize {
        match v {
            Bson::Document(d) => 1 + depth(d),
            Bson::Array(a) => 1 + a.iter().map(value_depth).max().unwrap_or(0),
            Bson::JavaScriptCodeWithScope(c) => 1 + depth(&c.scope),
            _ => 0,
        }
    }
    assert!(depth(doc) <= wire::MAX_BSON_DEPTH);
}
