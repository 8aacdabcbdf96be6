//! `tscoll serve` as a real process: it serves the protocol on the address it prints, and
//! SIGTERM (as SIGINT) stops it gracefully: exit status 0, and the database closed cleanly
//! with every acknowledged measurement in it.
//!
//! Unix only (signals): `main.rs` declares this module under `cfg(unix)`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bson::{DateTime, Document, doc};
use tscoll_engine::{Database, DatabaseOptions};
use tscoll_server::wire::{self, Message, OpMsg};

/// Sends `body` and returns the reply's document.
fn command(s: &mut TcpStream, id: i32, body: Document) -> Document {
    s.write_all(&OpMsg::new(body).encode(id, 0, false).unwrap())
        .unwrap();
    let mut first4 = [0u8; 4];
    s.read_exact(&mut first4).unwrap();
    let len = wire::frame_length(&first4).unwrap();
    let mut bytes = vec![0u8; len];
    bytes[..4].copy_from_slice(&first4);
    s.read_exact(&mut bytes[4..]).unwrap();
    match wire::decode(&bytes, wire::MAX_MESSAGE_BYTES).unwrap().1 {
        Message::Msg(m) => m.body,
        other => panic!("{other:?}"),
    }
}

fn stops_gracefully_on(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .args(["serve", "--db"])
        .arg(dir.path())
        .args(["--bind", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // "tscoll: serving DIR on ADDR: mongosh ..."
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .rsplit_once(" on ")
        .and_then(|(_, rest)| rest.split_once(": mongosh"))
        .map(|(addr, _)| addr.to_owned())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let created = command(
        &mut s,
        1,
        doc! { "create": "m", "timeseries": { "timeField": "t", "metaField": "k" }, "$db": "test" },
    );
    assert_eq!(created.get_f64("ok").unwrap(), 1.0, "{created}");
    let docs: Vec<Document> = (0..1000)
        .map(|i| doc! { "t": DateTime::from_millis(i * 1000), "k": i % 7, "v": i })
        .collect();
    let inserted = command(
        &mut s,
        2,
        doc! { "insert": "m", "documents": docs, "$db": "test" },
    );
    assert_eq!(inserted.get_i32("n").unwrap(), 1000, "{inserted}");
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let start = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "still running after {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    assert!(exit.success(), "{exit:?}: {rest}");
    assert!(rest.contains("stopped; the database is closed"), "{rest}");
    // The client's connection was closed.
    let mut buf = [0u8; 1];
    match s.read(&mut buf) {
        Ok(0) => {}
        Ok(_) => panic!("bytes after the stop"),
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the connection is still open: {e}"
        ),
    }
    let db = Database::open(dir.path(), DatabaseOptions::default()).unwrap();
    assert!(db.log_recovery().is_empty(), "{:?}", db.log_recovery());
    assert_eq!(
        db.collection("test.m").unwrap().count(&doc! {}).unwrap(),
        1000
    );
}

#[test]
fn sigterm_stops_the_server_and_closes_the_database() {
    stops_gracefully_on("-TERM");
}

#[test]
fn sigint_stops_the_server_and_closes_the_database() {
    stops_gracefully_on("-INT");
}
