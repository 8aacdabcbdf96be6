//! A bounded load test: 32 clients, each with a connection of its own (`maxPoolSize=1`),
//! insert batches of measurements into 4 collections of 2 databases and query between the
//! batches (a find with a sort and a limit, `count_documents`, an `aggregate` with `$group`),
//! for `TSCOLL_LOAD_SECONDS` seconds (default 5). Every client records the measurements the
//! server acknowledged; at the end every acknowledged measurement is stored exactly once, and
//! nothing else is.
//!
//! Each measurement carries `seq = thread × 10⁹ + n` (also its `_id`) and `meta.thread`; the
//! time of measurement `n` of a thread is `BASE + n` seconds, so a thread's newest measurement
//! is its last acknowledged one. The checks:
//!
//! - during the run, each client reads its own writes: its `count_documents` equals what it
//!   had acknowledged, the newest measurement a sorted find returns is its last, and the
//!   `$group` count of its thread equals its count;
//! - `serverStatus.connections.current` reaches at least 32 while the clients run;
//! - at the end, per thread, a `$group` of count, min, max and sum of `seq` matches the
//!   acknowledged set, and a find of every `seq` of the thread returns exactly that set (a
//!   batch whose insert failed is in doubt: each of its measurements may be there once or not
//!   at all; without failures the set is exactly the acknowledged one).
//!
//! The test prints the totals (inserts/s, queries/s) and the peak resident memory of the
//! process (`VmHWM`): the server runs in the test process, so that figure includes the 32
//! clients and their driver runtime. `TSCOLL_LOAD_SECONDS=60 cargo test --release -p
//! tscoll-server --test load -- --nocapture` is the longer run.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use bson::{Bson, DateTime, Document, doc};
use mongodb::options::{TimeseriesGranularity, TimeseriesOptions};
use mongodb::sync::{Client, Collection};
use tscoll_engine::{Database, DatabaseOptions};
use tscoll_server::{Server, ServerOptions};

/// Client threads, each with one connection.
const THREADS: usize = 32;
/// Measurements per `insert_many`.
const BATCH: i64 = 100;
/// `seq` of a thread's first measurement: `thread × SEQ_BASE`.
const SEQ_BASE: i64 = 1_000_000_000;
/// The collections: (database, collection); thread `t` writes to `COLLECTIONS[t % 4]`.
const COLLECTIONS: [(&str, &str); 4] = [
    ("load_a", "m0"),
    ("load_a", "m1"),
    ("load_b", "m0"),
    ("load_b", "m1"),
];
/// 2024-01-01T00:00:00Z.
const BASE_MS: i64 = 1_704_067_200_000;

fn seconds() -> u64 {
    std::env::var("TSCOLL_LOAD_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// The process's peak resident set (`VmHWM`), in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn measurement(thread: usize, n: i64) -> Document {
    let seq = thread as i64 * SEQ_BASE + n;
    doc! {
        "_id": seq,
        "t": DateTime::from_millis(BASE_MS + n * 1000),
        "meta": { "thread": thread as i32 },
        "seq": seq,
        "v": (n % 1000) as f64 / 4.0,
    }
}

/// What one client did.
#[derive(Default)]
struct ThreadRun {
    /// `n` of every acknowledged measurement, ascending.
    acked: Vec<i64>,
    /// `n` of the measurements of failed inserts (in doubt).
    in_doubt: Vec<i64>,
    /// Successful `insert_many` calls.
    inserts: u64,
    /// Successful queries.
    queries: u64,
    /// Time in `insert_many` calls, and in each kind of query (find with sort and limit,
    /// `count_documents`, `aggregate`).
    insert_time: Duration,
    query_time: [Duration; 3],
    query_count: [u64; 3],
}

fn as_i64(b: &Bson) -> i64 {
    match b {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        Bson::Double(v) => *v as i64,
        other => panic!("not a number: {other:?}"),
    }
}

/// One client: inserts and queries until `stop`.
fn client_thread(
    uri: String,
    thread: usize,
    started: Arc<Barrier>,
    stop: Arc<AtomicBool>,
) -> ThreadRun {
    let client = Client::with_uri_str(uri).unwrap();
    let (db, name) = COLLECTIONS[thread % COLLECTIONS.len()];
    let coll: Collection<Document> = client.database(db).collection(name);
    let mine = doc! { "meta.thread": thread as i32 };
    let mut run = ThreadRun::default();
    let mut next = 0_i64;
    let mut first = true;
    while first || !stop.load(Ordering::Relaxed) {
        let batch: Vec<Document> = (next..next + BATCH)
            .map(|n| measurement(thread, n))
            .collect();
        let t0 = Instant::now();
        let inserted = coll.insert_many(batch).run();
        run.insert_time += t0.elapsed();
        match inserted {
            Ok(r) => {
                assert_eq!(r.inserted_ids.len(), BATCH as usize);
                run.acked.extend(next..next + BATCH);
                run.inserts += 1;
            }
            Err(e) => {
                eprintln!("thread {thread}: insert of {next}.. failed: {e}");
                run.in_doubt.extend(next..next + BATCH);
            }
        }
        next += BATCH;
        if first {
            // Every client holds its connection open before the connections are counted.
            started.wait();
            first = false;
        }
        // Reads of its own writes; with no failed insert, the counts are exact.
        let exact = run.in_doubt.is_empty();
        let acked = run.acked.len() as u64;
        let kind = (run.inserts % 3) as usize;
        let t0 = Instant::now();
        match kind {
            0 => {
                let newest: Vec<Document> = coll
                    .find(mine.clone())
                    .sort(doc! { "t": -1 })
                    .limit(5)
                    .run()
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                assert_eq!(newest.len(), 5.min(acked as usize));
                if exact {
                    let last = *run.acked.last().unwrap();
                    assert_eq!(
                        newest[0].get_i64("seq").unwrap(),
                        thread as i64 * SEQ_BASE + last
                    );
                }
            }
            1 => {
                let n = coll.count_documents(mine.clone()).run().unwrap();
                assert!(n >= acked);
                if exact {
                    assert_eq!(n, acked);
                }
            }
            _ => {
                let groups: Vec<Document> = coll
                    .aggregate(vec![
                        doc! { "$match": { "t": { "$gte": DateTime::from_millis(BASE_MS) } } },
                        doc! { "$group": { "_id": "$meta.thread", "n": { "$sum": 1 } } },
                    ])
                    .run()
                    .unwrap()
                    .collect::<Result<_, _>>()
                    .unwrap();
                let own = groups
                    .iter()
                    .find(|g| g.get("_id") == Some(&Bson::Int32(thread as i32)))
                    .expect("a group for the thread");
                let n = as_i64(own.get("n").unwrap()) as u64;
                assert!(n >= acked);
                if exact {
                    assert_eq!(n, acked);
                }
            }
        }
        run.query_time[kind] += t0.elapsed();
        run.query_count[kind] += 1;
        run.queries += 1;
    }
    run
}

#[test]
fn thirty_two_clients_insert_and_query_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DatabaseOptions::default()).unwrap();
    let options = ServerOptions {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..ServerOptions::default()
    };
    let server = Server::spawn(db, options).unwrap();
    let admin = common::client(&server, "");
    for (db, name) in COLLECTIONS {
        admin
            .database(db)
            .create_collection(name)
            .timeseries(
                TimeseriesOptions::builder()
                    .time_field("t".to_string())
                    .meta_field(Some("meta".to_string()))
                    .granularity(Some(TimeseriesGranularity::Seconds))
                    .build(),
            )
            .run()
            .unwrap();
    }

    let duration = Duration::from_secs(seconds());
    let uri = common::uri(&server, "&maxPoolSize=1");
    let started = Arc::new(Barrier::new(THREADS + 1));
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (uri, started, stop) = (uri.clone(), Arc::clone(&started), Arc::clone(&stop));
            std::thread::Builder::new()
                .name(format!("load-client-{t}"))
                .spawn(move || client_thread(uri, t, started, stop))
                .unwrap()
        })
        .collect();

    // Every client has inserted once: the connections are open.
    started.wait();
    let clock = Instant::now();
    let mut max_connections = 0_i64;
    while clock.elapsed() < duration {
        let status = admin
            .database("admin")
            .run_command(doc! { "serverStatus": 1 })
            .run()
            .unwrap();
        let current = as_i64(
            status
                .get_document("connections")
                .unwrap()
                .get("current")
                .unwrap(),
        );
        max_connections = max_connections.max(current);
        std::thread::sleep(
            Duration::from_millis(200).min(duration.saturating_sub(clock.elapsed())),
        );
    }
    stop.store(true, Ordering::Relaxed);
    let runs: Vec<ThreadRun> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let elapsed = clock.elapsed().as_secs_f64();
    assert!(
        max_connections >= THREADS as i64,
        "serverStatus.connections.current reached only {max_connections}"
    );

    // Every acknowledged measurement exactly once: per thread, the $group figures, then the
    // set of every `seq`.
    let mut groups: BTreeMap<i64, Document> = BTreeMap::new();
    for (db, name) in COLLECTIONS {
        let coll: Collection<Document> = admin.database(db).collection(name);
        for g in coll
            .aggregate(vec![doc! { "$group": {
                "_id": "$meta.thread",
                "n": { "$sum": 1 },
                "min": { "$min": "$seq" },
                "max": { "$max": "$seq" },
                "sum": { "$sum": "$seq" },
            } }])
            .run()
            .unwrap()
        {
            let g = g.unwrap();
            let thread = as_i64(g.get("_id").unwrap());
            assert!(groups.insert(thread, g).is_none());
        }
    }
    assert_eq!(groups.len(), THREADS, "{groups:?}");
    let mut in_doubt_total = 0;
    for (thread, run) in runs.iter().enumerate() {
        let (db, name) = COLLECTIONS[thread % COLLECTIONS.len()];
        let coll: Collection<Document> = admin.database(db).collection(name);
        let base = thread as i64 * SEQ_BASE;
        let mut stored: Vec<i64> = coll
            .find(doc! { "meta.thread": thread as i32 })
            .projection(doc! { "seq": 1, "_id": 0 })
            .batch_size(10_000)
            .run()
            .unwrap()
            .map(|d| d.unwrap().get_i64("seq").unwrap() - base)
            .collect();
        stored.sort_unstable();
        let total = stored.len();
        stored.dedup();
        assert_eq!(stored.len(), total, "thread {thread}: a measurement twice");
        // Stored = acknowledged ∪ (a part of the in-doubt ones).
        let extra: Vec<i64> = stored
            .iter()
            .copied()
            .filter(|n| run.acked.binary_search(n).is_err())
            .collect();
        assert_eq!(
            total - extra.len(),
            run.acked.len(),
            "thread {thread}: acknowledged measurements missing"
        );
        assert!(
            extra.iter().all(|n| run.in_doubt.contains(n)),
            "thread {thread}: measurements that were never sent"
        );
        in_doubt_total += run.in_doubt.len();
        let g = &groups[&(thread as i64)];
        let seqs: Vec<i64> = stored.iter().map(|n| base + n).collect();
        assert_eq!(as_i64(g.get("n").unwrap()), seqs.len() as i64);
        assert_eq!(as_i64(g.get("min").unwrap()), seqs[0]);
        assert_eq!(as_i64(g.get("max").unwrap()), *seqs.last().unwrap());
        assert_eq!(as_i64(g.get("sum").unwrap()), seqs.iter().sum::<i64>());
        if run.in_doubt.is_empty() {
            let n = run.acked.len() as i64;
            assert_eq!(run.acked, (0..n).collect::<Vec<_>>());
            assert_eq!(as_i64(g.get("sum").unwrap()), base * n + n * (n - 1) / 2);
        }
    }

    let queries: u64 = runs.iter().map(|r| r.queries).sum();
    let inserts: u64 = runs.iter().map(|r| r.acked.len() as u64).sum();
    let calls: u64 = runs.iter().map(|r| r.inserts).sum();
    let ms = |d: Duration, n: u64| d.as_secs_f64() * 1000.0 / n.max(1) as f64;
    let insert_time: Duration = runs.iter().map(|r| r.insert_time).sum();
    let query_time: Vec<Duration> = (0..3)
        .map(|k| runs.iter().map(|r| r.query_time[k]).sum())
        .collect();
    let per_kind = |k: usize| runs.iter().map(|r| r.query_count[k]).sum::<u64>();
    println!(
        "load: mean latency: insert_many {:.1} ms; find sort/limit {:.1} ms, count_documents \
         {:.1} ms, aggregate $group {:.1} ms",
        ms(insert_time, calls),
        ms(query_time[0], per_kind(0)),
        ms(query_time[1], per_kind(1)),
        ms(query_time[2], per_kind(2)),
    );
    println!(
        "load: {THREADS} clients for {elapsed:.1} s: {inserts} measurements acknowledged in \
         {calls} insert_many calls of {BATCH} ({:.0} measurements/s, {:.1} calls/s), {queries} \
         queries ({:.1}/s), {in_doubt_total} in doubt; serverStatus.connections.current up to \
         {max_connections}; peak RSS (VmHWM) of the test process, server and clients together: \
         {:.1} MiB",
        inserts as f64 / elapsed,
        calls as f64 / elapsed,
        queries as f64 / elapsed,
        peak_rss_kib() as f64 / 1024.0
    );
    server.stop().unwrap();
}
