//! Atomic updates across a crash (SPEC §11.2: "the whole operation is atomic"): a
//! `tscoll update` child process that increments a field of every measurement — unpacking
//! every bucket, removing them and placing every measurement again into new buckets — is
//! killed with SIGKILL at random points, round after round on the same database. After each
//! round the test opens the database with the engine API and checks that the update happened
//! whole or not at all:
//!
//! - every measurement is there exactly once, with its values;
//! - every measurement has the same `gen`: the one before the round, or one more (always one
//!   more when the child finished);
//! - `verify` finds every bucket, control record and index entry consistent.
//!
//! A first round runs to completion and times a whole update; the kills then land at random
//! points of one (opening the database, reading and placing the measurements, the write,
//! closing).
//!
//! `TSCOLL_CRASH_SEED` and `TSCOLL_CRASH_ROUNDS` override the seed and the number of kills.
//!
//! Unix only (SIGKILL): `main.rs` declares this module under `cfg(unix)`.

use std::collections::HashSet;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bson::{DateTime, Document, doc};
use tscoll_engine::{Database, DatabaseOptions, FindOptions, InsertOptions, TimeseriesOptions};

/// Measurements in the collection.
const N: i64 = 20_000;
/// Series (`v % SERIES`).
const SERIES: i64 = 3;
/// Kills in the suite (default).
const ROUNDS: u64 = 12;
/// Seed of the kill delays (default).
const SEED: u64 = 0x7473_636f_6c6c_1102;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// SplitMix64, enough to spread the kill delays.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn setup(dir: &Path) {
    let db = Database::open(dir, DatabaseOptions::default()).expect("open");
    let coll = db
        .create_collection("c", &TimeseriesOptions::new("t").meta_field("m"))
        .expect("create");
    let docs: Vec<Document> = (0..N)
        .map(|v| {
            doc! {
                "t": DateTime::from_millis(1_451_606_400_000 + v * 10_000),
                "m": format!("s{}", v % SERIES),
                "v": v,
                "gen": 0,
            }
        })
        .collect();
    let r = coll
        .insert_many(&docs, &InsertOptions::default())
        .expect("insert");
    assert_eq!(r.inserted, docs.len());
    db.close().expect("close");
}

/// The `gen` every measurement has, after checking the collection whole.
fn check(dir: &Path, round: u64) -> i32 {
    let db = Database::open(dir, DatabaseOptions::default()).expect("reopen");
    let coll = db.collection("c").expect("collection");
    let all = coll.find(&doc! {}, &FindOptions::default()).expect("find");
    assert_eq!(all.len() as i64, N, "round {round}: measurement count");
    let mut ids = HashSet::new();
    let mut values = HashSet::new();
    let mut gens = HashSet::new();
    for d in &all {
        assert!(
            ids.insert(d.get("_id").expect("_id").to_string()),
            "round {round}: duplicate {d}"
        );
        let v = d
            .get_i64("v")
            .unwrap_or_else(|_| i64::from(d.get_i32("v").expect("v")));
        assert_eq!(
            d.get_str("m").expect("m"),
            format!("s{}", v % SERIES),
            "round {round}: {d}"
        );
        assert_eq!(
            d.get_datetime("t").expect("t").timestamp_millis(),
            1_451_606_400_000 + v * 10_000,
            "round {round}: {d}"
        );
        values.insert(v);
        gens.insert(d.get_i32("gen").expect("gen"));
    }
    assert_eq!(values.len() as i64, N, "round {round}: values");
    assert_eq!(
        gens.len(),
        1,
        "round {round}: a partial update: gens {gens:?}"
    );
    let report = db.verify().expect("verify");
    assert!(report.is_ok(), "round {round}: {report:?}");
    db.close().expect("close");
    gens.into_iter().next().unwrap_or(-1)
}

#[test]
fn killed_updates_happen_whole_or_not_at_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    setup(dir.path());
    let mut rng = env_or("TSCOLL_CRASH_SEED", SEED);
    let rounds = env_or("TSCOLL_CRASH_ROUNDS", ROUNDS);
    let mut generation = 0;
    let (mut whole, mut none, mut finished) = (0, 0, 0);
    // Round 0 runs to completion and times a whole run; the kills then land anywhere in one.
    let mut whole_run = Duration::from_millis(500);
    for round in 0..=rounds {
        let kill = round > 0;
        let mut child = Command::new(env!("CARGO_BIN_EXE_tscoll"))
            .arg("update")
            .arg("--db")
            .arg(dir.path())
            .arg("c")
            .args(["--filter", r#"{"v": {"$gte": 0}}"#])
            .args(["--update", r#"{"$inc": {"gen": 1}}"#])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tscoll update");
        let span = u64::try_from(whole_run.as_millis()).unwrap_or(500).max(1);
        let delay = Duration::from_millis(next(&mut rng) % (span + span / 4));
        let started = Instant::now();
        let mut exited = None;
        while started.elapsed() < delay || !kill {
            if let Some(status) = child.try_wait().expect("wait") {
                exited = Some(status);
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let status = match exited {
            Some(s) => s,
            None => {
                child.kill().expect("kill");
                child.wait().expect("wait")
            }
        };
        if round == 0 {
            whole_run = started.elapsed();
        }
        let after = check(dir.path(), round);
        if status.success() {
            assert_eq!(
                after,
                generation + 1,
                "round {round}: a finished update must be stored"
            );
            finished += 1;
        } else {
            assert_eq!(status.signal(), Some(9), "round {round}: {status:?}");
            assert!(
                after == generation || after == generation + 1,
                "round {round}: generation {after} after {generation}"
            );
            if after == generation {
                none += 1;
            } else {
                whole += 1;
            }
        }
        generation = after;
    }
    eprintln!("{rounds} kills: {whole} updates kept whole, {none} not at all; {finished} finished");
    assert!(finished >= 1 && whole + none > 0);
}
