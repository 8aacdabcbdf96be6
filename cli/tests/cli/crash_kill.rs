//! Crash safety (SPEC, `docs/durability.md`): a `tscoll ingest --durability sync
//! --report-acks -` child process, fed measurements through its stdin, is killed with SIGKILL
//! at random points, round after round on the same database. After each kill the test opens the database with the engine API and
//! checks:
//!
//! - every acknowledged measurement is stored, exactly once (R-9.1 across a crash);
//! - nothing is stored that was never sent; of the batch in flight at the kill, measurements
//!   may be present or absent, and what is present once stays present;
//! - every measurement reads back with the values it was sent with;
//! - every bucket decodes, its `control.count` equals its rows and its `control.min`/`max`
//!   match them (a bucket is in its state before or after each commit, R-9.2);
//! - `stats` agrees with the buckets.
//!
//! The next round continues the same series with new measurements, so buckets left open by
//! the killed process are reopened (SPEC §6.8) and continued by the next one. The kill delay
//! varies (20–400 ms) so kills land at startup, during commits and during merges; every other
//! child writes the blobs of buckets leaving memory straight into tables before their control
//! records (`--ingest-min-bytes 0`), so kills land between the two as well. A last round runs
//! to completion and shuts down cleanly.
//!
//! A second suite runs the same at high cardinality ([`MANY_SERIES`]): 1000 series, calls of
//! 500 measurements, and a bucket catalog of 256 KiB (`--catalog-memory`), under which a call
//! archives, closes and stores idle buckets by the thousand (2500 archived, 2500 closed and
//! 2000 reopened in 3000 measurements), so kills land while idle buckets are being stored.
//!
//! `TSCOLL_CRASH_SEED` and `TSCOLL_CRASH_ROUNDS` override the seed and the number of kills.
//!
//! Unix only (SIGKILL): `main.rs` declares this module under `cfg(unix)`.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufWriter, Read, Write};
use std::ops::Range;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};
use tscoll_engine::{
    Accumulator, AggregateSpec, Database, DatabaseOptions, FindOptions, TimeseriesOptions,
};

/// The data and the load of a crash suite.
#[derive(Clone, Copy)]
struct Shape {
    /// Series the measurements are spread over (`_id % series`).
    series: i64,
    /// Time between two consecutive measurements (of any series).
    step_ms: i64,
    /// Measurements per `insert_many` call of the child.
    batch: i64,
    /// More options of the child.
    extra: &'static [&'static str],
    /// Measurements the killed rounds must acknowledge in all, at least, for the suite to
    /// test much (kills not all at startup).
    min_acked: usize,
}

/// Few series: one series gets a measurement every 40 s, so an hour-long bucket (granularity
/// seconds) holds 90 and closes often; calls of 12.
const FEW_SERIES: Shape = Shape {
    series: 4,
    step_ms: 10_000,
    batch: 12,
    extra: &[],
    min_acked: 240,
};

/// Many series: 1000, each with a measurement every 10 s, calls of 500 (a few hundred
/// buckets each), and a bucket catalog of 256 KiB, so idle buckets are archived and closed,
/// and stored, while the child is killed.
const MANY_SERIES: Shape = Shape {
    series: 1000,
    step_ms: 10,
    batch: 500,
    extra: &["--catalog-memory", "262144"],
    min_acked: 2000,
};
/// 2016-01-01T00:00:00Z.
const BASE_MS: i64 = 1_451_606_400_000;
/// `bucketMaxSpanSeconds` of granularity seconds, in ms (SPEC §1.2).
const SPAN_MS: i64 = 3_600_000;
/// `bucketRoundingSeconds` of granularity seconds, in ms (SPEC ).
const ROUNDING_MS: i64 = 60_000;
/// Lines a killed round gets at most; then its stdin stays open and idle until the kill.
/// A bound on the data keeps the checks (which read everything) fast on a fast disk.
const MAX_KILLED_LINES: i64 = 10_000;
/// Lines of the last round, which runs to completion.
const FINAL_LINES: i64 = 600;
/// Kills in the suite (default).
const ROUNDS: usize = 24;
/// Kill delay range, in ms.
const DELAY_MS: Range<u64> = 20..401;
/// Kills at most after the planned ones while the killed rounds have acknowledged too few
/// measurements (a slow machine), each with twice the delays of the one before.
const LATER_KILLS: u32 = 4;
/// Seed of the kill delays (default).
const SEED: u64 = 0x7473_636f_6c6c_0905;

/// SplitMix64: a small seeded generator, enough to spread the kill delays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn range(&mut self, r: Range<u64>) -> u64 {
        r.start + self.next() % (r.end - r.start)
    }
}

fn time_of(id: i64, shape: Shape) -> i64 {
    BASE_MS + id * shape.step_ms
}

fn series_of(id: i64, shape: Shape) -> String {
    format!("s{}", id % shape.series)
}

/// A double with two decimals (written as `12.25`, so it stays a double).
fn value_of(id: i64) -> f64 {
    #[expect(clippy::cast_precision_loss, reason = "small values")]
    let v = (id % 1000) as f64 / 4.0;
    v
}

/// The NDJSON line of measurement `id`: `_id` and `n` are the id (int64).
fn line(id: i64, shape: Shape) -> String {
    format!(
        "{{\"_id\":{{\"$numberLong\":\"{id}\"}},\"ts\":{{\"$date\":{{\"$numberLong\":\"{}\"}}}},\
         \"meta\":{{\"series\":\"{}\"}},\"n\":{{\"$numberLong\":\"{id}\"}},\"v\":{:.2}}}\n",
        time_of(id, shape),
        series_of(id, shape),
        value_of(id)
    )
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the test knows about every measurement sent so far.
#[derive(Default)]
struct Model {
    /// Acknowledged by a child: must be stored.
    acked: HashSet<i64>,
    /// Stored at the previous check: must stay stored.
    present: HashSet<i64>,
    /// First id of every round, in order (the round of an id is found by search).
    round_starts: Vec<i64>,
}

impl Model {
    fn round_of(&self, id: i64) -> usize {
        self.round_starts.partition_point(|&s| s <= id) - 1
    }
}

/// How a child round ended.
struct Outcome {
    /// Killed (`true`) or exited by itself.
    killed: bool,
    /// Acknowledged lines `1..=last_acked` (line numbers of the round's input).
    last_acked: i64,
    /// The child's stderr, for failure messages.
    stderr: String,
}

/// Runs one child ingest of the measurements from id `start` on, fed through its stdin, and
/// kills it after `delay`; without a delay, feeds [`FINAL_LINES`] and lets it finish.
fn run_child(
    db: &Path,
    start: i64,
    delay: Option<Duration>,
    model: &mut Model,
    shape: Shape,
) -> Outcome {
    // Every other child ingests the blobs of buckets leaving memory straight into tables,
    // whatever their size (`--ingest-min-bytes 0`): kills also land between such an
    // ingestion and the control records that make its blobs visible.
    let ingest_min_bytes = if model.round_starts.len().is_multiple_of(2) {
        "0"
    } else {
        "131072"
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
        .arg("ingest")
        .arg("--db")
        .arg(db)
        .arg("m")
        .arg("-")
        .args(["--durability", "sync", "--report-acks"])
        .args(["--batch-size", &shape.batch.to_string()])
        .args(shape.extra)
        // A checkpoint of the write-ahead log every few calls: kills also land inside
        // checkpoints (and the buckets they store).
        .args(["--checkpoint-bytes", "4096"])
        .args(["--ingest-min-bytes", ingest_min_bytes])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tscoll ingest");
    let stdin = child.stdin.take().expect("stdin");
    let killed_round = delay.is_some();
    let limit = if killed_round {
        MAX_KILLED_LINES
    } else {
        FINAL_LINES
    };
    let (child_gone, wait_for_child) = mpsc::channel::<()>();
    // Writes lines until the limit or until the child dies (the pipe breaks). A child to be
    // killed then finds its stdin open and waits; the last child gets its end of input.
    let feed = thread::spawn(move || {
        let mut pipe = BufWriter::new(stdin);
        for id in start..start + limit {
            if pipe.write_all(line(id, shape).as_bytes()).is_err() {
                return;
            }
        }
        if pipe.flush().is_ok() && killed_round {
            let _ = wait_for_child.recv();
        }
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    if let Some(delay) = delay {
        thread::sleep(delay);
        // SIGKILL on Unix; harmless if the child has just exited by itself.
        child.kill().expect("kill the child");
    }
    let status = child.wait().expect("wait for the child");
    drop(child_gone);
    feed.join().expect("stdin feeder");
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    let killed = status.signal() == Some(9);
    assert!(
        killed || status.success(),
        "the child failed by itself ({status}):\n{stderr}"
    );
    // Only whole lines: a line cut by the kill is no acknowledgement.
    let text = String::from_utf8_lossy(&stdout);
    let complete = text.rfind('\n').map_or("", |end| &text[..end]);
    let mut last_acked = 0;
    for ack in complete.lines() {
        let parts: Vec<i64> = ack
            .strip_prefix("ack ")
            .unwrap_or_else(|| panic!("not an acknowledgement: {ack:?}"))
            .split(' ')
            .map(|p| p.parse().expect("a number"))
            .collect();
        let [first, last, inserted] = parts[..] else {
            panic!("bad acknowledgement {ack:?}");
        };
        assert_eq!(
            first,
            last_acked + 1,
            "acknowledgements out of order: {ack}"
        );
        assert_eq!(
            inserted,
            last - first + 1,
            "a rejected line? {ack}\n{stderr}"
        );
        for line_no in first..=last {
            model.acked.insert(start + line_no - 1);
        }
        last_acked = last;
    }
    if !killed {
        assert_eq!(
            last_acked, FINAL_LINES,
            "a clean exit acknowledges every line:\n{stderr}"
        );
    }
    Outcome {
        killed,
        last_acked,
        stderr,
    }
}

fn get_i64(d: &Document, key: &str) -> i64 {
    d.get_i64(key)
        .unwrap_or_else(|_| panic!("{key} is not an int64 in {d}"))
}

fn get_millis(d: &Document, key: &str) -> i64 {
    d.get_datetime(key)
        .unwrap_or_else(|_| panic!("{key} is not a date in {d}"))
        .timestamp_millis()
}

/// Opens the database in this process and checks it against the model; `in_flight` are the
/// ids that may or may not be stored (the batch the child was committing when killed).
/// Returns, per bucket, the ids it holds.
fn check(
    db_dir: &Path,
    model: &mut Model,
    in_flight: &Range<i64>,
    round: usize,
    shape: Shape,
) -> Vec<Vec<i64>> {
    let ctx = format!("round {round}");
    let db = Database::open(db_dir, DatabaseOptions::default())
        .unwrap_or_else(|e| panic!("{ctx}: reopen after the kill: {e}"));
    let coll = db.collection("m").expect("collection m");

    // Every measurement, exactly once, with the values it was sent with.
    let docs = coll
        .find(&doc! {}, &FindOptions::default())
        .unwrap_or_else(|e| panic!("{ctx}: find: {e}"));
    let mut present = HashSet::with_capacity(docs.len());
    for d in &docs {
        let id = get_i64(d, "_id");
        assert!(
            present.insert(id),
            "{ctx}: measurement {id} is stored twice"
        );
        assert_eq!(get_millis(d, "ts"), time_of(id, shape), "{ctx}: ts of {id}");
        assert_eq!(get_i64(d, "n"), id, "{ctx}: n of {id}");
        assert_eq!(d.get_f64("v").ok(), Some(value_of(id)), "{ctx}: v of {id}");
        let meta = d.get_document("meta").expect("meta");
        assert_eq!(
            meta.get_str("series").ok(),
            Some(series_of(id, shape).as_str())
        );
    }
    let mut lost: Vec<i64> = model
        .acked
        .iter()
        .chain(&model.present)
        .filter(|id| !present.contains(id))
        .copied()
        .collect();
    lost.sort_unstable();
    lost.dedup();
    assert!(
        lost.is_empty(),
        "{ctx}: {} acknowledged (or earlier visible) measurements are lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    let mut unexpected: Vec<i64> = present
        .iter()
        .filter(|id| {
            !model.acked.contains(id) && !model.present.contains(id) && !in_flight.contains(id)
        })
        .copied()
        .collect();
    unexpected.sort_unstable();
    assert!(
        unexpected.is_empty(),
        "{ctx}: {} measurements are stored that were never committed, e.g. {:?} \
         (in flight: {in_flight:?})",
        unexpected.len(),
        &unexpected[..unexpected.len().min(10)]
    );

    // Every bucket decodes and its control record matches its rows.
    let buckets = coll
        .buckets()
        .unwrap_or_else(|e| panic!("{ctx}: buckets: {e}"));
    let mut in_buckets = HashSet::with_capacity(present.len());
    let mut per_bucket = Vec::with_capacity(buckets.len());
    for b in &buckets {
        let bid = b.get("_id").cloned().unwrap_or(Bson::Null);
        let control = b.get_document("control").expect("control");
        let count = get_i64(control, "count");
        let data = b.get_document("data").expect("data");
        let column = |name: &str| -> Vec<Bson> {
            data.get_document(name)
                .unwrap_or_else(|_| panic!("{ctx}: bucket {bid} has no {name} column"))
                .values()
                .cloned()
                .collect()
        };
        let (ids, times, ns, vs) = (column("_id"), column("ts"), column("n"), column("v"));
        let rows = times.len();
        assert_eq!(
            usize::try_from(count).ok(),
            Some(rows),
            "{ctx}: bucket {bid}: control.count {count}, {rows} rows"
        );
        for (name, col) in [("_id", &ids), ("n", &ns), ("v", &vs)] {
            assert_eq!(col.len(), rows, "{ctx}: bucket {bid}: column {name}");
        }
        let series = b
            .get_document("meta")
            .ok()
            .and_then(|m| m.get_str("series").ok())
            .unwrap_or_else(|| panic!("{ctx}: bucket {bid} has no meta.series"))
            .to_owned();
        let mut held = Vec::with_capacity(rows);
        for (i, id) in ids.iter().enumerate() {
            let Bson::Int64(id) = *id else {
                panic!("{ctx}: bucket {bid}: _id {id} is not an int64");
            };
            assert!(in_buckets.insert(id), "{ctx}: {id} is in two buckets");
            assert_eq!(
                series,
                series_of(id, shape),
                "{ctx}: {id} in a bucket of {series}"
            );
            assert_eq!(
                times[i].as_datetime().map(|t| t.timestamp_millis()),
                Some(time_of(id, shape))
            );
            assert_eq!(ns[i], Bson::Int64(id), "{ctx}: bucket {bid}: n of {id}");
            held.push(id);
        }
        let (lo, hi) = (held.iter().min(), held.iter().max());
        let (Some(&lo), Some(&hi)) = (lo, hi) else {
            panic!("{ctx}: bucket {bid} is empty");
        };
        let min = control.get_document("min").expect("control.min");
        let max = control.get_document("max").expect("control.max");
        // The rounded time the bucket was opened with.
        assert_eq!(
            get_millis(min, "ts"),
            time_of(lo, shape) - time_of(lo, shape).rem_euclid(ROUNDING_MS),
            "{ctx}: bucket {bid} min.ts"
        );
        assert_eq!(
            get_millis(max, "ts"),
            time_of(hi, shape),
            "{ctx}: bucket {bid} max.ts"
        );
        assert_eq!(get_i64(min, "n"), lo, "{ctx}: bucket {bid} min.n");
        assert_eq!(get_i64(max, "n"), hi, "{ctx}: bucket {bid} max.n");
        assert!(
            time_of(hi, shape) - time_of(lo, shape) < SPAN_MS,
            "{ctx}: bucket {bid} spans more than bucketMaxSpanSeconds"
        );
        per_bucket.push(held);
    }
    assert_eq!(in_buckets, present, "{ctx}: buckets and find disagree");
    let stats = coll.stats().unwrap_or_else(|e| panic!("{ctx}: stats: {e}"));
    assert_eq!(
        stats.bucket_count,
        buckets.len() as u64,
        "{ctx}: bucketCount"
    );
    assert_eq!(
        stats.measurement_count,
        docs.len() as u64,
        "{ctx}: measurements"
    );
    // Control records (min/max and the bucket sums) agree with the data after recovery, and
    // hourly sums answered from them equal the sums of what `find` returns.
    let report = db.verify().unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
    assert!(report.problems.is_empty(), "{ctx}: {:?}", report.problems);
    let hourly = AggregateSpec {
        window_ms: 3_600_000,
        by_series: false,
        outputs: vec![
            ("count".into(), Accumulator::Count),
            ("sum".into(), Accumulator::SumTyped("n".into())),
        ],
    };
    let groups = coll
        .aggregate_windows(&doc! {}, &hourly)
        .unwrap_or_else(|e| panic!("{ctx}: aggregate: {e}"));
    let mut expected: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for d in &docs {
        let e = expected
            .entry(get_millis(d, "ts").div_euclid(3_600_000) * 3_600_000)
            .or_default();
        e.0 += 1;
        e.1 += get_i64(d, "n");
    }
    let got: BTreeMap<i64, (i64, i64)> = groups
        .iter()
        .map(|g| {
            let id = g.get_document("_id").expect("_id");
            (
                get_millis(id, "ts"),
                (get_i64(g, "count"), get_i64(g, "sum")),
            )
        })
        .collect();
    assert_eq!(got, expected, "{ctx}: hourly counts and sums");

    model.present = present;
    drop(coll);
    drop(db);
    per_bucket
}

/// `--report-acks` prints `ack FIRST LAST INSERTED` per `insert_many` call, in input order; a
/// bad line (here line 6, with `--unordered`) is in the range but not in INSERTED.
#[test]
fn report_acks_prints_one_line_per_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("db");
    let run = |args: &[&str], stdin: &[u8]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
            .args(args)
            .arg("--db")
            .arg(&db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tscoll");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin)
            .expect("write stdin");
        child.wait_with_output().expect("wait")
    };
    let created = run(
        &["create", "m", "--time-field", "ts", "--meta-field", "meta"],
        b"",
    );
    assert!(created.status.success(), "{created:?}");
    let mut input = String::new();
    for id in 0..10 {
        input += &if id == 5 {
            "{\"ts\":\n".to_owned()
        } else {
            line(id, FEW_SERIES)
        };
    }
    let out = run(
        &[
            "ingest",
            "m",
            "-",
            "--unordered",
            "--batch-size",
            "4",
            "--report-acks",
        ],
        input.as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a bad line fails the run: {stderr}");
    assert!(stderr.contains("<stdin>:6: malformed JSON"), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ack 1 4 4\nack 5 9 4\nack 10 10 1\n"
    );
}

#[test]
fn killed_ingests_keep_every_acknowledged_measurement_once() {
    killed_ingests(FEW_SERIES, env_or("TSCOLL_CRASH_ROUNDS", ROUNDS));
}

/// The same at high cardinality: calls touch hundreds of buckets and idle buckets are
/// archived, closed and stored under memory pressure while the child is killed.
#[test]
fn killed_ingests_of_many_series_keep_every_acknowledged_measurement_once() {
    killed_ingests(MANY_SERIES, env_or("TSCOLL_CRASH_ROUNDS", ROUNDS) / 3);
}

/// Kills `rounds` children ingesting measurements of `shape`, checking the database after
/// each (see the module docs), then lets a last one finish.
fn killed_ingests(shape: Shape, rounds: usize) {
    let seed = env_or("TSCOLL_CRASH_SEED", SEED);
    let started = Instant::now();
    eprintln!("seed {seed} (TSCOLL_CRASH_SEED), {rounds} kills (TSCOLL_CRASH_ROUNDS)");
    let dir = tempfile::tempdir().expect("tempdir");
    let db_dir = dir.path().join("db");
    {
        let db = Database::open(&db_dir, DatabaseOptions::default()).expect("create database");
        db.create_collection("m", &TimeseriesOptions::new("ts").meta_field("meta"))
            .expect("create collection");
    }
    let mut rng = Rng(seed);
    let mut model = Model::default();
    let mut next_id = 0;
    let mut kills = 0;
    let mut partial_in_flight = 0;
    let mut per_bucket = Vec::new();
    // Kills after the planned ones, on a machine too slow for the planned kills to come after
    // the children's start: each waits twice as long as the one before.
    let mut later = 0u32;
    for round in 0.. {
        let short = model.acked.len() <= shape.min_acked;
        let last = round >= rounds && (!short || later == LATER_KILLS);
        let scale = if round >= rounds && !last {
            later += 1;
            1u64 << later
        } else {
            1
        };
        model.round_starts.push(next_id);
        let delay = (!last).then(|| Duration::from_millis(rng.range(DELAY_MS.clone()) * scale));
        let outcome = run_child(&db_dir, next_id, delay, &mut model, shape);
        // At most one batch is in flight: the one after the last acknowledgement.
        let acked_end = next_id + outcome.last_acked;
        let in_flight = acked_end..acked_end + shape.batch;
        per_bucket = check(&db_dir, &mut model, &in_flight, round, shape);
        let stored = in_flight
            .clone()
            .filter(|id| model.present.contains(id))
            .count();
        if stored != 0 && stored != in_flight.clone().count() {
            partial_in_flight += 1;
        }
        kills += usize::from(outcome.killed);
        assert_eq!(
            outcome.killed, !last,
            "round {round}: the child was not killed, or the last one was\n{}",
            outcome.stderr
        );
        eprintln!(
            "round {round}: {} after {delay:?}, {} lines acknowledged, {}/{} of the batch in \
             flight stored, {} measurements in {} buckets",
            if outcome.killed { "killed" } else { "finished" },
            outcome.last_acked,
            stored,
            in_flight.clone().count(),
            model.present.len(),
            per_bucket.len()
        );
        // Ids after the batch in flight never reached `insert_many`: they are skipped, and the
        // series go on right after the batch in flight.
        next_id = in_flight.end;
        if last {
            break;
        }
    }
    assert_eq!(
        kills,
        rounds + later as usize,
        "every round but the last is killed"
    );
    // The scenario really happened: later processes continued buckets of killed ones.
    let continued = per_bucket
        .iter()
        .filter(|held| {
            let rounds: HashSet<usize> = held.iter().map(|&id| model.round_of(id)).collect();
            rounds.len() > 1
        })
        .count();
    assert!(
        continued > 0,
        "no bucket holds measurements of two rounds: reopening was never exercised"
    );
    let acked = model.acked.len();
    assert!(
        acked > shape.min_acked,
        "only {acked} measurements were acknowledged: kills come too early to test much"
    );
    eprintln!(
        "{kills} kills (seed {seed}), {acked} measurements acknowledged, {} stored, \
         {continued} buckets continued across processes, {partial_in_flight} rounds with a \
         partly stored batch in flight, {:.1} s",
        model.present.len(),
        started.elapsed().as_secs_f64()
    );
}
