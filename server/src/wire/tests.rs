//! Hand-built messages, every error, and property tests.

use bson::{Document, doc};
use proptest::prelude::*;

use super::*;

fn le(v: i32) -> [u8; 4] {
    v.to_le_bytes()
}

/// A message with the header's length set to the bytes' length.
fn message(op_code: i32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&le(16 + body.len() as i32));
    out.extend_from_slice(&le(7));
    out.extend_from_slice(&le(0));
    out.extend_from_slice(&le(op_code));
    out.extend_from_slice(body);
    out
}

fn bson(d: &Document) -> Vec<u8> {
    d.to_vec().unwrap()
}

fn msg_body(flags: u32, sections: &[u8]) -> Vec<u8> {
    let mut b = flags.to_le_bytes().to_vec();
    b.extend_from_slice(sections);
    b
}

fn decode_msg(bytes: &[u8]) -> Result<OpMsg, WireError> {
    match decode(bytes, MAX_MESSAGE_BYTES)? {
        (_, Message::Msg(m)) => Ok(m),
        (_, other) => panic!("not an OP_MSG: {other:?}"),
    }
}

#[test]
fn op_msg_kind0_only() {
    let mut sections = vec![0];
    sections.extend(bson(&doc! {"ping": 1, "$db": "admin"}));
    let bytes = message(OP_MSG, &msg_body(0, &sections));
    let (header, m) = decode(&bytes, MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(header.request_id, 7);
    assert_eq!(header.op_code, OP_MSG);
    assert_eq!(header.message_length as usize, bytes.len());
    let Message::Msg(m) = m else { panic!() };
    assert_eq!(m.body, doc! {"ping": 1, "$db": "admin"});
    assert!(m.sequences.is_empty());
    assert!(!m.more_to_come());
    assert_eq!(
        OpMsg::new(m.body.clone())
            .encode(7, 0, false)
            .expect("encodable"),
        bytes
    );
}

#[test]
fn op_msg_insert_with_documents_sequence() {
    let docs = [doc! {"t": 1, "v": 1.5}, doc! {"t": 2, "v": 2.5}];
    let mut seq = Vec::new();
    seq.extend(b"documents\0");
    for d in &docs {
        seq.extend(bson(d));
    }
    let mut sections = vec![1];
    sections.extend(le(4 + seq.len() as i32));
    sections.extend(&seq);
    sections.push(0);
    sections.extend(bson(&doc! {"insert": "m", "$db": "db"}));
    let bytes = message(OP_MSG, &msg_body(0, &sections));
    let m = decode_msg(&bytes).unwrap();
    assert_eq!(m.body, doc! {"insert": "m", "$db": "db"});
    assert_eq!(
        m.sequences,
        vec![DocumentSequence {
            identifier: "documents".into(),
            documents: docs.to_vec()
        }]
    );
    // Encoding writes the body first; decoding that gives the same message.
    assert_eq!(
        decode_msg(&m.encode(1, 0, false).expect("encodable")).unwrap(),
        m
    );
}

#[test]
fn op_msg_checksum() {
    let m = OpMsg::new(doc! {"hello": 1, "$db": "admin"});
    let bytes = m.encode(3, 0, true).expect("encodable");
    let crc = crc32c::crc32c(&bytes[..bytes.len() - 4]);
    assert_eq!(bytes[bytes.len() - 4..], crc.to_le_bytes());
    let back = decode_msg(&bytes).unwrap();
    assert_eq!(back.flags, CHECKSUM_PRESENT);
    assert_eq!(back.body, m.body);
    // A known CRC-32C value (Castagnoli, not IEEE): "123456789" → 0xE3069283.
    assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn op_msg_wrong_checksum() {
    let mut bytes = OpMsg::new(doc! {"hello": 1})
        .encode(3, 0, true)
        .expect("encodable");
    let n = bytes.len();
    bytes[n - 1] ^= 0xFF;
    assert!(matches!(
        decode_msg(&bytes),
        Err(WireError::BadChecksum { .. })
    ));
    // A changed body byte too.
    let mut bytes = OpMsg::new(doc! {"hello": 1})
        .encode(3, 0, true)
        .expect("encodable");
    bytes[26] ^= 1;
    assert!(matches!(
        decode_msg(&bytes),
        Err(WireError::BadChecksum { .. })
    ));
}

#[test]
fn op_msg_more_to_come_and_optional_bits() {
    let mut m = OpMsg::new(doc! {"insert": "m"});
    m.flags = MORE_TO_COME | EXHAUST_ALLOWED | (1 << 20);
    let back = decode_msg(&m.encode(1, 0, false).expect("encodable")).unwrap();
    assert!(back.more_to_come());
    assert!(back.exhaust_allowed());
    assert_eq!(back.flags, m.flags);
}

#[test]
fn op_query_is_master() {
    let q = OpQuery {
        flags: 4,
        full_collection_name: "admin.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: doc! {"isMaster": 1, "client": {"driver": {"name": "x"}}},
        return_fields_selector: None,
    };
    let mut body = Vec::new();
    body.extend(le(4));
    body.extend(b"admin.$cmd\0");
    body.extend(le(0));
    body.extend(le(-1));
    body.extend(bson(&q.query));
    let bytes = message(OP_QUERY, &body);
    assert_eq!(q.encode(7).expect("encodable"), bytes);
    let (header, m) = decode(&bytes, MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(header.op_code, OP_QUERY);
    assert_eq!(m, Message::Query(q.clone()));
    let with_fields = OpQuery {
        return_fields_selector: Some(doc! {"a": 1}),
        ..q
    };
    let (_, m) = decode(
        &with_fields.encode(2).expect("encodable"),
        MAX_MESSAGE_BYTES,
    )
    .unwrap();
    assert_eq!(m, Message::Query(with_fields));
}

#[test]
fn names_and_keys_holding_nul_are_refused_when_encoding() {
    let unencodable =
        |r: Result<Vec<u8>, WireError>| matches!(r, Err(WireError::Unencodable { .. }));
    let nul_key = OpMsg::new(doc! { "a\0b": 1 });
    assert!(unencodable(nul_key.encode(1, 0, false)));
    let mut nul_identifier = OpMsg::new(doc! { "insert": "c" });
    nul_identifier.sequences.push(DocumentSequence {
        identifier: "docu\0ments".into(),
        documents: vec![doc! { "x": 1 }],
    });
    assert!(unencodable(nul_identifier.encode(1, 0, true)));
    let q = OpQuery {
        flags: 0,
        full_collection_name: "admin\0.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: doc! { "isMaster": 1 },
        return_fields_selector: None,
    };
    assert!(unencodable(q.encode(1)));
    let reply = OpReply::single(doc! { "o\0k": 1 });
    assert!(unencodable(reply.encode(1, 2)));
}

#[test]
fn op_reply() {
    let r = OpReply::single(doc! {"ismaster": true, "maxWireVersion": 17, "ok": 1.0});
    let bytes = r.encode(9, 7).expect("encodable");
    let mut body = Vec::new();
    body.extend(le(0));
    body.extend(0i64.to_le_bytes());
    body.extend(le(0));
    body.extend(le(1));
    body.extend(bson(&r.documents[0]));
    let mut expected = message(OP_REPLY, &body);
    expected[4..8].copy_from_slice(&le(9));
    expected[8..12].copy_from_slice(&le(7));
    assert_eq!(bytes, expected);
    let (header, back) = OpReply::decode(&bytes, MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(header.response_to, 7);
    assert_eq!(back, r);
    // OP_REPLY is not a request.
    assert_eq!(
        decode(&bytes, MAX_MESSAGE_BYTES),
        Err(WireError::UnknownOpCode(OP_REPLY))
    );
    // numberReturned past the documents.
    let mut more = bytes.clone();
    more[32..36].copy_from_slice(&le(1000));
    assert!(matches!(
        OpReply::decode(&more, MAX_MESSAGE_BYTES),
        Err(WireError::TooShort { .. })
    ));
}

#[test]
fn op_compressed_is_recognized() {
    let mut body = Vec::new();
    body.extend(le(OP_MSG));
    body.extend(le(100));
    body.push(3);
    body.extend([1, 2, 3]);
    let (_, m) = decode(&message(OP_COMPRESSED, &body), MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(
        m,
        Message::Compressed {
            original_op_code: OP_MSG,
            uncompressed_size: 100,
            compressor_id: 3
        }
    );
}

#[test]
fn frame_lengths() {
    assert_eq!(frame_length(&le(16)), Ok(16));
    assert_eq!(frame_length(&le(48_000_000)), Ok(48_000_000));
    assert_eq!(
        frame_length(&le(48_000_001)),
        Err(WireError::TooLarge {
            length: 48_000_001,
            limit: MAX_MESSAGE_BYTES
        })
    );
    assert_eq!(frame_length(&le(15)), Err(WireError::LengthBelowHeader(15)));
    assert_eq!(frame_length(&le(-1)), Err(WireError::LengthBelowHeader(-1)));
    assert!(matches!(
        frame_length(&[1, 2, 3]),
        Err(WireError::TooShort { .. })
    ));
    assert_eq!(
        frame_length_limited(&le(1000), 999),
        Err(WireError::TooLarge {
            length: 1000,
            limit: 999
        })
    );
}

fn err(bytes: &[u8]) -> WireError {
    decode(bytes, MAX_MESSAGE_BYTES).unwrap_err()
}

fn kind0(d: &Document) -> Vec<u8> {
    let mut s = vec![0];
    s.extend(bson(d));
    s
}

#[test]
fn every_error() {
    let ping = kind0(&doc! {"ping": 1});
    // Too short: no header, no flag word.
    assert!(matches!(err(&[0; 10]), WireError::TooShort { .. }));
    assert!(matches!(
        err(&message(OP_MSG, &[0, 0])),
        WireError::TooShort { .. }
    ));
    // Length mismatch, both ways.
    let mut bytes = message(OP_MSG, &msg_body(0, &ping));
    bytes.push(0);
    assert!(matches!(err(&bytes), WireError::LengthMismatch { .. }));
    bytes.truncate(bytes.len() - 2);
    assert!(matches!(err(&bytes), WireError::LengthMismatch { .. }));
    // Below the header; too large.
    let mut bytes = message(OP_MSG, &msg_body(0, &ping));
    bytes[..4].copy_from_slice(&le(8));
    assert_eq!(err(&bytes), WireError::LengthBelowHeader(8));
    let bytes = message(OP_MSG, &msg_body(0, &ping));
    assert!(matches!(
        decode(&bytes, 20),
        Err(WireError::TooLarge { limit: 20, .. })
    ));
    // Unknown opcode.
    assert_eq!(err(&message(2010, &[])), WireError::UnknownOpCode(2010));
    // Bad section kind.
    let mut s = ping.clone();
    s.push(2);
    assert_eq!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::BadSectionKind(2)
    );
    // Missing body: no sections, or a sequence only.
    assert_eq!(
        err(&message(OP_MSG, &msg_body(0, &[]))),
        WireError::MissingBody
    );
    let mut seq = vec![1];
    seq.extend(le(6));
    seq.extend(b"d\0");
    assert_eq!(
        err(&message(OP_MSG, &msg_body(0, &seq))),
        WireError::MissingBody
    );
    // Duplicate body.
    let mut s = ping.clone();
    s.extend(&ping);
    assert_eq!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::DuplicateBody
    );
    // Bad checksum is in op_msg_wrong_checksum; a flagged checksum with no room for it:
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(CHECKSUM_PRESENT, &[0, 0]))),
        WireError::TooShort { .. }
    ));
    // Required flag bits.
    assert_eq!(
        err(&message(OP_MSG, &msg_body(1 << 2, &ping))),
        WireError::UnknownRequiredFlags(1 << 2)
    );
    assert_eq!(
        err(&message(OP_MSG, &msg_body(0x8000 | MORE_TO_COME, &ping))),
        WireError::UnknownRequiredFlags(0x8000)
    );
    // A document that does not parse (an unknown element type).
    let mut bad = bson(&doc! {"a": 1});
    bad[4] = 0x7F;
    let mut s = vec![0];
    s.extend(&bad);
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::BadDocument { .. }
    ));
    // A document overrunning its message, or shorter than 5 bytes.
    let mut s = ping.clone();
    s[1..5].copy_from_slice(&le(1000));
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::DocumentOverrun { length: 1000, .. }
    ));
    let mut s = ping.clone();
    s[1..5].copy_from_slice(&le(-4));
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::DocumentOverrun { length: -4, .. }
    ));
    // A document overrunning its sequence (the sequence's size cuts it).
    let d = bson(&doc! {"x": 1});
    let mut s = ping.clone();
    s.push(1);
    s.extend(le(4 + 2 + d.len() as i32 - 1));
    s.extend(b"d\0");
    s.extend(&d);
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::DocumentOverrun { .. }
    ));
    // A sequence size beyond the message, or too small.
    for size in [1000, 3, -1] {
        let mut s = ping.clone();
        s.push(1);
        s.extend(le(size));
        s.extend(b"d\0");
        assert!(matches!(
            err(&message(OP_MSG, &msg_body(0, &s))),
            WireError::BadSequenceSize { .. }
        ));
    }
    // A sequence identifier without NUL.
    let mut s = ping.clone();
    s.push(1);
    s.extend(le(7));
    s.extend(b"abc");
    assert_eq!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::UnterminatedCString("OP_MSG document sequence identifier")
    );
    // An OP_QUERY collection name without NUL, or not UTF-8.
    let mut q = le(0).to_vec();
    q.extend(b"admin.$cmd");
    assert!(matches!(
        err(&message(OP_QUERY, &q)),
        WireError::UnterminatedCString(_)
    ));
    let mut q = le(0).to_vec();
    q.extend(b"\xFF\0");
    assert!(matches!(
        err(&message(OP_QUERY, &q)),
        WireError::BadCString(_)
    ));
    // Trailing bytes after an OP_QUERY's field selector.
    let mut q = OpQuery {
        flags: 0,
        full_collection_name: "a.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: doc! {"hello": 1},
        return_fields_selector: Some(doc! {}),
    }
    .encode(1)
    .expect("encodable");
    q.extend([0, 0]);
    let n = q.len() as i32;
    q[..4].copy_from_slice(&le(n));
    assert!(matches!(
        err(&q),
        WireError::TrailingBytes(_) | WireError::DocumentOverrun { .. }
    ));
    // A document above the limit: a sequence document over 16 MiB (its bytes need not parse,
    // the size is refused first).
    let big = MAX_BSON_OBJECT_BYTES + 1;
    let mut s = ping.clone();
    s.push(1);
    s.extend(le(4 + 2 + big as i32));
    s.extend(b"d\0");
    s.extend(le(big as i32));
    s.resize(s.len() + big - 4, 0);
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::DocumentTooLarge { length, limit: MAX_BSON_OBJECT_BYTES, .. } if length == big
    ));
    // Each error has a message.
    assert!(
        WireError::BadChecksum {
            expected: 1,
            actual: 2
        }
        .to_string()
        .contains("checksum")
    );
}

/// A document with `depth` levels of nesting below it: each level is a document `{a: …}`, an
/// array (whose element is the level below's only element) or a code-with-scope's scope, in
/// turn from `kind`.
fn nested(depth: usize, kind: usize) -> Vec<u8> {
    let mut d = bson(&doc! {"x": 1});
    for level in 0..depth {
        let mut e = vec![0; 4];
        match (kind + level) % 3 {
            0 => {
                e.push(0x03);
                e.extend(b"a\0");
                e.extend(&d);
            }
            1 => {
                e.push(0x04);
                e.extend(b"0\0");
                e.extend(&d);
            }
            _ => {
                e.push(0x0F);
                e.extend(b"c\0");
                e.extend(le(4 + 4 + 2 + d.len() as i32));
                e.extend(le(2));
                e.extend(b"f\0");
                e.extend(&d);
            }
        }
        e.push(0);
        let n = e.len() as i32;
        e[..4].copy_from_slice(&le(n));
        d = e;
    }
    d
}

#[test]
fn documents_nested_deeper_than_max_bson_depth_are_refused() {
    let body = |d: &[u8]| message(OP_MSG, &msg_body(0, &[&[0][..], d].concat()));
    for kind in 0..3 {
        // At the limit: decoded.
        let m = decode_msg(&body(&nested(MAX_BSON_DEPTH, kind))).unwrap();
        assert_eq!(m.body.len(), 1);
        // One level more: refused.
        assert_eq!(
            err(&body(&nested(MAX_BSON_DEPTH + 1, kind))),
            WireError::DocumentTooDeep {
                what: "OP_MSG body",
                limit: MAX_BSON_DEPTH
            }
        );
    }
    // In a document sequence, an OP_QUERY and an OP_REPLY too.
    let deep = nested(MAX_BSON_DEPTH + 1, 0);
    let mut s = kind0(&doc! {"insert": "m"});
    s.push(1);
    s.extend(le(4 + 2 + deep.len() as i32));
    s.extend(b"d\0");
    s.extend(&deep);
    assert!(matches!(
        err(&message(OP_MSG, &msg_body(0, &s))),
        WireError::DocumentTooDeep {
            what: "OP_MSG document sequence",
            ..
        }
    ));
    let mut q = le(0).to_vec();
    q.extend(b"admin.$cmd\0");
    q.extend(le(0));
    q.extend(le(-1));
    q.extend(&deep);
    assert!(matches!(
        err(&message(OP_QUERY, &q)),
        WireError::DocumentTooDeep { .. }
    ));
    let mut r = le(0).to_vec();
    r.extend(0i64.to_le_bytes());
    r.extend(le(0));
    r.extend(le(1));
    r.extend(&deep);
    assert!(matches!(
        OpReply::decode(&message(OP_REPLY, &r), MAX_MESSAGE_BYTES),
        Err(WireError::DocumentTooDeep { .. })
    ));
    // 100 000 levels (700 KB) on a thread of 256 KiB of stack: refused, where converting it
    // to a `Document` overflowed the stack and aborted the process.
    let bytes = body(&nested(100_000, 0));
    let decoded = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || decode(&bytes, MAX_MESSAGE_BYTES).err())
        .unwrap()
        .join()
        .unwrap();
    assert!(matches!(decoded, Some(WireError::DocumentTooDeep { .. })));
}

fn key() -> impl Strategy<Value = String> {
    "[a-zA-Z_$][a-zA-Z0-9_.]{0,8}"
}

fn value() -> impl Strategy<Value = bson::Bson> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(bson::Bson::Int32),
        any::<i64>().prop_map(bson::Bson::Int64),
        any::<f64>()
            .prop_filter("NaN", |f| !f.is_nan())
            .prop_map(bson::Bson::Double),
        any::<bool>().prop_map(bson::Bson::Boolean),
        "[ -~]{0,12}".prop_map(bson::Bson::String),
        Just(bson::Bson::Null),
        any::<i64>().prop_map(|t| bson::Bson::DateTime(bson::DateTime::from_millis(t))),
    ];
    leaf.prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(bson::Bson::Array),
            prop::collection::vec((key(), inner), 0..4)
                .prop_map(|kv| bson::Bson::Document(kv.into_iter().collect())),
        ]
    })
}

fn document() -> impl Strategy<Value = Document> {
    prop::collection::vec((key(), value()), 0..6).prop_map(|kv| kv.into_iter().collect())
}

fn op_msg() -> impl Strategy<Value = OpMsg> {
    (
        any::<u32>().prop_map(|f| f & !0xFFFC),
        document(),
        prop::collection::vec(
            ("[a-z]{1,10}", prop::collection::vec(document(), 0..4)).prop_map(
                |(identifier, documents)| DocumentSequence {
                    identifier,
                    documents,
                },
            ),
            0..3,
        ),
    )
        .prop_map(|(flags, body, sequences)| OpMsg {
            flags,
            body,
            sequences,
        })
}

proptest! {
    /// The one-pass conversion gives what bson's own does, and the document it came from.
    #[test]
    fn raw_documents_convert_as_bson_converts_them(d in document()) {
        let bytes = d.to_vec().unwrap();
        let raw = bson::RawDocument::from_bytes(&bytes).unwrap();
        let ours = super::convert::to_document(raw, "test").unwrap();
        let theirs = Document::try_from(raw).unwrap();
        prop_assert_eq!(ours.to_vec().unwrap(), theirs.to_vec().unwrap());
        prop_assert_eq!(ours, d);
    }

    #[test]
    fn op_msg_round_trip(m in op_msg(), checksum in any::<bool>(), id in any::<i32>(), to in any::<i32>()) {
        let bytes = m.encode(id, to, checksum).expect("encodable");
        let (header, back) = decode(&bytes, MAX_MESSAGE_BYTES).unwrap();
        prop_assert_eq!(header, MsgHeader { message_length: bytes.len() as i32, request_id: id, response_to: to, op_code: OP_MSG });
        let mut expected = m.clone();
        expected.flags = if checksum { m.flags | CHECKSUM_PRESENT } else { m.flags & !CHECKSUM_PRESENT };
        prop_assert_eq!(back, Message::Msg(expected));
        prop_assert_eq!(frame_length(&bytes[..4]), Ok(bytes.len()));
    }

    #[test]
    fn op_query_and_reply_round_trip(q in document(), f in prop::option::of(document()), docs in prop::collection::vec(document(), 0..4), n in any::<i32>()) {
        let query = OpQuery { flags: n, full_collection_name: "admin.$cmd".into(), number_to_skip: n, number_to_return: -1, query: q, return_fields_selector: f };
        let (_, back) = decode(&query.encode(n).expect("encodable"), MAX_MESSAGE_BYTES).unwrap();
        prop_assert_eq!(back, Message::Query(query));
        let reply = OpReply { response_flags: n, cursor_id: i64::from(n) * 3, starting_from: n, documents: docs };
        let (_, back) = OpReply::decode(&reply.encode(n, n).expect("encodable"), MAX_MESSAGE_BYTES).unwrap();
        prop_assert_eq!(back, reply);
    }

    #[test]
    fn decode_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), op in prop::sample::select(vec![OP_MSG, OP_QUERY, OP_COMPRESSED, OP_REPLY, 0])) {
        let _ = decode(&bytes, MAX_MESSAGE_BYTES);
        let _ = OpReply::decode(&bytes, MAX_MESSAGE_BYTES);
        let _ = frame_length(&bytes);
        // With a consistent header, so the bodies are reached.
        let m = message(op, &bytes);
        let _ = decode(&m, MAX_MESSAGE_BYTES);
        let _ = OpReply::decode(&m, MAX_MESSAGE_BYTES);
    }

    #[test]
    fn decode_mutated_messages_never_panics(m in op_msg(), checksum in any::<bool>(), cut in any::<prop::sample::Index>(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4)) {
        let bytes = m.encode(1, 0, checksum).expect("encodable");
        // Truncations, with the header's length kept or fixed up.
        let n = cut.index(bytes.len() + 1);
        let _ = decode(&bytes[..n], MAX_MESSAGE_BYTES);
        if n >= 4 {
            let mut t = bytes[..n].to_vec();
            t[..4].copy_from_slice(&le(n as i32));
            let _ = decode(&t, MAX_MESSAGE_BYTES);
        }
        // Mutations of bytes after the length.
        let mut mutated = bytes.clone();
        for (i, b) in flips {
            let i = 4 + i.index(mutated.len() - 4);
            mutated[i] ^= b;
        }
        let _ = decode(&mutated, MAX_MESSAGE_BYTES);
    }
}
