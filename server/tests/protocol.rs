//! The connection layer with raw sockets: the legacy handshake, `moreToCome`, malformed and
//! oversized messages (which close that connection only), and the cap on connections.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bson::doc;
use common::Fixture;
use tscoll_server::ServerOptions;
use tscoll_server::wire::{self, MORE_TO_COME, Message, OpMsg, OpQuery, OpReply};

fn connect(f: &Fixture) -> TcpStream {
    let s = TcpStream::connect(f.server.as_ref().unwrap().local_addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Reads one whole message.
fn read_message(s: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut first4 = [0u8; 4];
    s.read_exact(&mut first4)?;
    let len = wire::frame_length(&first4).unwrap();
    let mut bytes = vec![0u8; len];
    bytes[..4].copy_from_slice(&first4);
    s.read_exact(&mut bytes[4..])?;
    Ok(bytes)
}

fn reply_body(bytes: &[u8]) -> bson::Document {
    match wire::decode(bytes, wire::MAX_MESSAGE_BYTES).unwrap().1 {
        Message::Msg(m) => m.body,
        other => panic!("not an OP_MSG: {other:?}"),
    }
}

/// Whether the server has closed `s`: a read sees the end or a reset, not the read timeout
/// (a connection left open without a reply is not closed).
fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 1];
    match s.read(&mut buf) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

#[test]
fn legacy_is_master_over_op_query() {
    let f = Fixture::new();
    let mut s = connect(&f);
    let query = OpQuery {
        flags: 0,
        full_collection_name: "admin.$cmd".into(),
        number_to_skip: 0,
        number_to_return: -1,
        query: doc! { "isMaster": 1, "helloOk": true, "client": { "application": { "name": "mongosh" } } },
        return_fields_selector: None,
    };
    s.write_all(&query.encode(7).unwrap()).unwrap();
    let bytes = read_message(&mut s).unwrap();
    let (header, reply) = OpReply::decode(&bytes, wire::MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(header.response_to, 7);
    let doc = &reply.documents[0];
    assert!(doc.get_bool("ismaster").unwrap());
    assert!(doc.get_bool("helloOk").unwrap());
    assert_eq!(doc.get_i32("maxWireVersion").unwrap(), 25);
    // A query on a collection (not a command) is an error reply, and the connection lives.
    let find = OpQuery {
        full_collection_name: "test.weather".into(),
        query: doc! {},
        ..query
    };
    s.write_all(&find.encode(8).unwrap()).unwrap();
    let bytes = read_message(&mut s).unwrap();
    let (_, reply) = OpReply::decode(&bytes, wire::MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(reply.documents[0].get_i32("code").unwrap(), 73);
}

#[test]
fn more_to_come_gets_no_reply() {
    let f = Fixture::new();
    let mut s = connect(&f);
    let mut end = OpMsg::new(doc! { "endSessions": [], "$db": "admin" });
    end.flags = MORE_TO_COME;
    s.write_all(&end.encode(1, 0, false).unwrap()).unwrap();
    let ping = OpMsg::new(doc! { "ping": 1, "$db": "admin" });
    s.write_all(&ping.encode(2, 0, true).unwrap()).unwrap();
    let bytes = read_message(&mut s).unwrap();
    let (header, _) = wire::decode(&bytes, wire::MAX_MESSAGE_BYTES).unwrap();
    assert_eq!(header.response_to, 2, "the first reply answers the ping");
    assert_eq!(reply_body(&bytes).get_f64("ok").unwrap(), 1.0);
}

#[test]
fn command_errors_keep_the_connection() {
    let f = Fixture::new();
    let mut s = connect(&f);
    for (i, body) in [
        doc! { "noSuchCommand": 1, "$db": "admin" },
        doc! { "ping": 1 },                // no $db
        doc! { "find": 5, "$db": "test" }, // a number for a collection
        doc! { "insert": "c", "documents": 3, "$db": "test" },
        doc! { "getMore": "x", "collection": "c", "$db": "test" },
    ]
    .into_iter()
    .enumerate()
    {
        s.write_all(&OpMsg::new(body.clone()).encode(i as i32, 0, false).unwrap())
            .unwrap();
        let reply = reply_body(&read_message(&mut s).unwrap());
        assert_eq!(reply.get_f64("ok").unwrap(), 0.0, "{body}: {reply}");
        assert!(reply.get_i32("code").unwrap() > 0, "{reply}");
        assert!(!reply.get_str("errmsg").unwrap().is_empty());
    }
    let reply = {
        s.write_all(
            &OpMsg::new(doc! { "noSuch": 1, "$db": "admin" })
                .encode(9, 0, false)
                .unwrap(),
        )
        .unwrap();
        reply_body(&read_message(&mut s).unwrap())
    };
    assert_eq!(reply.get_i32("code").unwrap(), 59);
    assert_eq!(reply.get_str("codeName").unwrap(), "CommandNotFound");
}

#[test]
fn malformed_messages_close_that_connection_only() {
    let f = Fixture::new();
    let garbage: Vec<Vec<u8>> = vec![
        // A length below the header.
        vec![3, 0, 0, 0, 1, 2, 3, 4],
        // A length over the limit.
        [&(100_000_000_i32).to_le_bytes()[..], &[0u8; 12]].concat(),
        // A whole header of an unknown opcode.
        [
            &20_i32.to_le_bytes()[..],
            &[0; 8],
            &999_i32.to_le_bytes(),
            &[0; 4],
        ]
        .concat(),
        // An OP_MSG whose body claims more bytes than the message has.
        {
            let mut m = OpMsg::new(doc! { "ping": 1, "$db": "admin" })
                .encode(1, 0, false)
                .unwrap();
            m[21] = 0xff;
            m
        },
        // An OP_MSG whose body is not valid BSON (an element of unknown type).
        {
            let mut m = OpMsg::new(doc! { "ping": 1, "$db": "admin" })
                .encode(1, 0, false)
                .unwrap();
            m[25] = 0x7f;
            m
        },
    ];
    for bytes in garbage {
        let mut s = connect(&f);
        s.write_all(&bytes).unwrap();
        assert!(closed(&mut s), "{bytes:?}");
    }
    // Others are served as before.
    f.client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .run()
        .unwrap();
}

#[test]
fn connections_beyond_the_cap_are_closed() {
    // A server of its own: the fixture's driver client would take connections.
    let dir = tempfile::tempdir().unwrap();
    let db = tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
        .unwrap();
    let server = tscoll_server::Server::spawn(
        db,
        ServerOptions {
            bind: "127.0.0.1:0".parse().unwrap(),
            max_connections: 2,
            ..ServerOptions::default()
        },
    )
    .unwrap();
    let connect = |_: &()| {
        let s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    };
    let f = ();
    let ping = |s: &mut TcpStream| {
        s.write_all(
            &OpMsg::new(doc! { "ping": 1, "$db": "admin" })
                .encode(1, 0, false)
                .unwrap(),
        )?;
        read_message(s).map(|_| ())
    };
    let mut a = connect(&f);
    let mut b = connect(&f);
    ping(&mut a).unwrap();
    ping(&mut b).unwrap();
    let mut c = connect(&f);
    // Closed at once: the ping gets no reply.
    assert!(ping(&mut c).is_err());
    // Once one closes, a new one is served.
    drop(a);
    std::thread::sleep(Duration::from_millis(300));
    let mut d = connect(&f);
    ping(&mut d).unwrap();
    drop((b, c, d));
    server.stop().unwrap();
}

#[test]
fn beyond_loopback_needs_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let db = tscoll_engine::Database::open(dir.path(), tscoll_engine::DatabaseOptions::default())
        .unwrap();
    let err = tscoll_server::Server::spawn(
        db,
        ServerOptions {
            bind: "0.0.0.0:0".parse().unwrap(),
            ..ServerOptions::default()
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("authentication"), "{err}");
}
