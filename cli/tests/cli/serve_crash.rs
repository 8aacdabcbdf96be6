//! `tscoll serve` killed with SIGKILL under load: what it acknowledged with `{w: 1, j: true}`
//! (an fsync'ed write) is there after a restart, exactly once.
//!
//! The test starts `tscoll serve --db DB --bind 127.0.0.1:0` as a child process (the address
//! it chose is read from its first line on stderr), and [`CLIENTS`] client threads of MongoDB's
//! Rust driver, each with its own connection, insert batches of measurements with write
//! concern `{w: 1, j: true}`, recording the ones acknowledged. Each measurement carries `seq =
//! thread × 10⁹ + n` and `meta.thread`. After [`KILL_AFTER`] the server is killed with
//! SIGKILL; the clients stop at their first error (a batch whose insert failed is in doubt).
//! Then `tscoll serve` starts again on the same database, and per thread the set of stored
//! `seq` is read through the driver: every acknowledged measurement once, no measurement
//! twice, nothing that was not sent (of a batch in doubt, a measurement may be there or not).
//! The restarted server then stops on SIGTERM, cleanly.
//!
//! Unix only (SIGKILL): `main.rs` declares this module under `cfg(unix)`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use bson::{DateTime, Document, doc};
use mongodb::sync::{Client, Collection};

use crate::common::Scratch;

/// Client threads, each with one connection.
const CLIENTS: usize = 4;
/// Measurements per `insert_many`.
const BATCH: i64 = 50;
/// `seq` of a thread's first measurement: `thread × SEQ_BASE`.
const SEQ_BASE: i64 = 1_000_000_000;
/// Load before the kill.
const KILL_AFTER: Duration = Duration::from_millis(1500);
/// 2024-01-01T00:00:00Z.
const BASE_MS: i64 = 1_704_067_200_000;

/// A running `tscoll serve` and the address it listens on.
struct Serve {
    child: Child,
    addr: SocketAddr,
    stderr: thread::JoinHandle<String>,
}

/// Starts `tscoll serve --db DB --bind 127.0.0.1:0` and waits for its address.
fn serve(db: &str) -> Serve {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .args(["serve", "--db", db, "--bind", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tscoll serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    lines.read_line(&mut first).expect("read stderr");
    // "tscoll: serving DB on 127.0.0.1:PORT: mongosh ..."
    let addr = first
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split(": ").next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in tscoll serve's first line: {first:?}"));
    let stderr = thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut lines, &mut rest);
        rest
    });
    Serve {
        child,
        addr,
        stderr,
    }
}

fn client(addr: SocketAddr) -> Client {
    Client::with_uri_str(format!(
        "mongodb://{addr}/?directConnection=true&maxPoolSize=1&w=1&journal=true\
         &serverSelectionTimeoutMS=2000&connectTimeoutMS=2000"
    ))
    .expect("client")
}

/// What one client had acknowledged, and the batch in doubt.
struct Acked {
    acked: Vec<i64>,
    in_doubt: Vec<i64>,
}

fn load(addr: SocketAddr, thread: usize, stop: &AtomicBool) -> Acked {
    let coll: Collection<Document> = client(addr).database("crash").collection("m");
    let mut out = Acked {
        acked: Vec::new(),
        in_doubt: Vec::new(),
    };
    let mut next = 0_i64;
    while !stop.load(Ordering::Relaxed) {
        let batch: Vec<Document> = (next..next + BATCH)
            .map(|n| {
                let seq = thread as i64 * SEQ_BASE + n;
                doc! {
                    "t": DateTime::from_millis(BASE_MS + n * 1000),
                    "meta": { "thread": thread as i32 },
                    "seq": seq,
                    "v": n as f64 / 2.0,
                }
            })
            .collect();
        match coll.insert_many(batch).run() {
            Ok(r) => {
                assert_eq!(r.inserted_ids.len(), BATCH as usize);
                out.acked.extend(next..next + BATCH);
            }
            Err(_) => {
                // The server is gone: this batch may or may not have been written.
                out.in_doubt.extend(next..next + BATCH);
                break;
            }
        }
        next += BATCH;
    }
    out
}

#[test]
fn acknowledged_journaled_inserts_survive_kill_9() {
    let scratch = Scratch::new();
    let db = scratch.db();
    let mut server = serve(&db);
    client(server.addr)
        .database("crash")
        .run_command(doc! {
            "create": "m",
            "timeseries": { "timeField": "t", "metaField": "meta", "granularity": "seconds" },
        })
        .run()
        .expect("create the collection");

    let stop = Arc::new(AtomicBool::new(false));
    let addr = server.addr;
    let clients: Vec<_> = (0..CLIENTS)
        .map(|t| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || load(addr, t, &stop))
        })
        .collect();
    thread::sleep(KILL_AFTER);
    server.child.kill().expect("SIGKILL tscoll serve");
    let status = server.child.wait().expect("wait for tscoll serve");
    stop.store(true, Ordering::Relaxed);
    let stderr = server.stderr.join().expect("stderr reader");
    assert_eq!(status.signal(), Some(9), "not killed ({status}): {stderr}");
    let runs: Vec<Acked> = clients
        .into_iter()
        .map(|c| c.join().expect("client thread"))
        .collect();
    let acked: usize = runs.iter().map(|r| r.acked.len()).sum();
    assert!(
        runs.iter().all(|r| !r.acked.is_empty()),
        "a client had no insert acknowledged in {KILL_AFTER:?}"
    );

    // The same database, served again.
    let mut server = serve(&db);
    let coll: Collection<Document> = client(server.addr).database("crash").collection("m");
    let mut stored_total = 0;
    for (thread, run) in runs.iter().enumerate() {
        let base = thread as i64 * SEQ_BASE;
        let mut stored: Vec<i64> = coll
            .find(doc! { "meta.thread": thread as i32 })
            .projection(doc! { "seq": 1, "_id": 0 })
            .run()
            .expect("find")
            .map(|d| d.expect("a document").get_i64("seq").expect("seq") - base)
            .collect();
        stored.sort_unstable();
        let n = stored.len();
        stored.dedup();
        assert_eq!(
            stored.len(),
            n,
            "thread {thread}: a measurement stored twice"
        );
        let missing: Vec<i64> = run
            .acked
            .iter()
            .copied()
            .filter(|s| stored.binary_search(s).is_err())
            .collect();
        assert!(
            missing.is_empty(),
            "thread {thread}: {} acknowledged measurements lost, first {:?}",
            missing.len(),
            missing.first()
        );
        assert!(
            stored
                .iter()
                .all(|s| run.acked.binary_search(s).is_ok() || run.in_doubt.contains(s)),
            "thread {thread}: a measurement that was never sent"
        );
        stored_total += n;
    }
    eprintln!(
        "serve_crash: {acked} measurements acknowledged with j: true before SIGKILL, {} stored \
         after the restart",
        stored_total
    );

    // The restarted server stops cleanly on SIGTERM.
    let pid = server.child.id().to_string();
    let term = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill -TERM");
    assert!(term.success());
    let status = server.child.wait().expect("wait for tscoll serve");
    let stderr = server.stderr.join().expect("stderr reader");
    assert!(
        status.success(),
        "tscoll serve after SIGTERM: {status}: {stderr}"
    );
}
